package kraft_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/meta"
)

// snapCluster is a cluster whose members snapshot every few KiB of
// metadata into small segments, with a hook that runs before a member's
// next start (to damage its files, say).
type snapCluster struct {
	*cluster
	beforeStart []func(e env.Env)
	// started is the image position of each member right after its
	// latest Start returned, before the quorum replayed anything.
	started []meta.Position
}

// smallSnapshots makes snapshots and segment rolls frequent.
func smallSnapshots(c *kraft.Config) {
	c.Quorum.SnapshotIntervalBytes = 4 << 10
	c.LogSegmentBytes = 4 << 10
}

func newSnapCluster(t *testing.T, seed uint64, n, observers int) *snapCluster {
	sc := &snapCluster{
		cluster:     newClusterStopped(t, seed, n, observers, smallSnapshots),
		beforeStart: make([]func(env.Env), n+observers),
		started:     make([]meta.Position, n+observers),
	}
	sc.cluster.beforeStart = func(i int, e env.Env) {
		if h := sc.beforeStart[i]; h != nil {
			sc.beforeStart[i] = nil
			h(e)
		}
	}
	sc.cluster.started = func(i int, m *kraft.Member) {
		if m != nil {
			sc.started[i] = m.Image().Position()
		}
	}
	for _, p := range sc.procs {
		p.Start()
	}
	return sc
}

// snapshotFiles lists the snapshot files on member i's disk, oldest first.
func (c *cluster) snapshotFiles(i int) []string { return c.filesEnding(i, ".checkpoint") }

// filesEnding lists the files on member i's disk whose names end in
// suffix, in name order.
func (c *cluster) filesEnding(i int, suffix string) []string {
	var out []string
	for _, f := range c.procs[i].Disk().Files() {
		if strings.HasSuffix(f, suffix) {
			out = append(out, f)
		}
	}
	return out
}

// snapshotEnd parses the end offset out of a snapshot file name.
func snapshotEnd(t testing.TB, name string) int64 {
	var end int64
	var epoch int32
	if _, err := fmt.Sscanf(name, "%020d-%010d.checkpoint", &end, &epoch); err != nil {
		t.Fatalf("snapshot file %q: %v", name, err)
	}
	return end
}

// segmentFiles lists the .log segment files on member i's disk.
func (c *cluster) segmentFiles(i int) []string { return c.filesEnding(i, ".log") }

func (c *cluster) createTopics(leader int, prefix string, n int) {
	c.t.Helper()
	for k := 0; k < n; k++ {
		c.createTopic(leader, fmt.Sprintf("%s-%03d", prefix, k))
	}
}

// checkTrimmed checks that member i snapshotted and trimmed its log: its
// log starts past 0 at a snapshot it keeps (at most two kept), and its
// first segment is gone.
func (c *cluster) checkTrimmed(i int) {
	c.t.Helper()
	st := c.members[i].Status()
	snaps := c.snapshotFiles(i)
	if len(snaps) == 0 || len(snaps) > 2 {
		c.t.Fatalf("%s keeps snapshots %v, want 1 or 2", c.procs[i].Name(), snaps)
	}
	latest := snapshotEnd(c.t, snaps[len(snaps)-1])
	if st.Quorum.LogStart <= 0 || st.Quorum.LogStart > latest || latest > st.Quorum.HighWatermark {
		c.t.Fatalf("%s: log start %d, latest snapshot ends at %d, high watermark %d", c.procs[i].Name(), st.Quorum.LogStart, latest, st.Quorum.HighWatermark)
	}
	// Every segment wholly below the log start is deleted, and the first
	// segment goes once the log start passed its end.
	segs := c.segmentFiles(i)
	var bases []int64
	for _, name := range segs {
		var base int64
		if _, err := fmt.Sscanf(name, "%020d.log", &base); err != nil {
			c.t.Fatalf("segment file %q: %v", name, err)
		}
		bases = append(bases, base)
	}
	if len(bases) == 0 || bases[0] > st.Quorum.LogStart || (len(bases) > 1 && bases[1] <= st.Quorum.LogStart) {
		c.t.Fatalf("%s: segments %v, log start %d", c.procs[i].Name(), segs, st.Quorum.LogStart)
	}
}

// (a) Snapshots are written at the interval, on every member, and the log
// is trimmed behind them: the log start advances and old segments and
// snapshots are deleted.
func TestSnapshotsTrimLog(t *testing.T) {
	forSeeds(t, func(t *testing.T, seed uint64) {
		c := newSnapCluster(t, seed, 3, 1)
		leader := c.waitLeader()
		c.heartbeat(leader, c.registerBroker(leader))
		c.createTopics(leader, "t", 60)
		c.converge("t-059")
		if err := c.s.RunFor(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		for i := range c.members {
			c.checkTrimmed(i)
			if segs := c.segmentFiles(i); segs[0] == "00000000000000000000.log" {
				t.Fatalf("%s: segments %v: the first was not deleted", c.procs[i].Name(), segs)
			}
			t.Logf("%s: log [%d, %d), snapshots %v, segments %v", c.procs[i].Name(),
				c.members[i].Status().Quorum.LogStart, c.members[i].Status().Quorum.LogEnd.Offset, c.snapshotFiles(i), c.segmentFiles(i))
		}
	})
}

// (b) A restarted member loads its latest snapshot at start and replays
// only the tail after it, to the image the others have.
func TestRestartLoadsSnapshot(t *testing.T) {
	forSeeds(t, func(t *testing.T, seed uint64) {
		c := newSnapCluster(t, seed, 3, 1)
		leader := c.waitLeader()
		brokerEpoch := c.registerBroker(leader)
		c.heartbeat(leader, brokerEpoch)
		c.createTopics(leader, "t", 30)
		c.converge("t-029")
		for _, i := range []int{(leader + 1) % 3, 3} { // a follower voter, the observer
			snaps := c.snapshotFiles(i)
			if len(snaps) == 0 {
				t.Fatalf("%s has no snapshot", c.procs[i].Name())
			}
			c.procs[i].Crash()
			c.createTopic(leader, fmt.Sprintf("during-%d", i))
			snaps = c.snapshotFiles(i) // a crash may undo an unsynced deletion
			latest := snapshotEnd(t, snaps[len(snaps)-1])
			c.members[i] = nil
			c.procs[i].Start()
			c.runUntil(commitBound, "restart", func() bool { return c.members[i] != nil })
			// At start the image is the snapshot's, before any replay.
			if pos := c.started[i]; pos.Offset+1 != latest {
				t.Fatalf("%s started with its image at %s, want the snapshot ending at %d", c.procs[i].Name(), pos, latest)
			}
			c.converge("t-029", fmt.Sprintf("during-%d", i))
		}
		c.createTopic(leader, "after")
		c.converge("after")
	})
}

// (c) A member that was down while the others snapshotted and trimmed
// past its log end catches up by FetchSnapshot and then the tail.
func TestLaggingMemberFetchesSnapshot(t *testing.T) {
	forSeeds(t, func(t *testing.T, seed uint64) {
		c := newSnapCluster(t, seed, 3, 1)
		leader := c.waitLeader()
		c.heartbeat(leader, c.registerBroker(leader))
		c.createTopic(leader, "before")
		c.converge("before")
		lagging := []int{(leader + 1) % 3, 3}
		ends := map[int]int64{}
		for _, i := range lagging {
			ends[i] = c.members[i].Status().Quorum.LogEnd.Offset
			c.procs[i].Crash()
		}
		c.createTopics(leader, "t", 60)
		if err := c.s.RunFor(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		start := c.members[leader].Status().Quorum.LogStart
		for _, i := range lagging {
			if ends[i] >= start {
				t.Fatalf("%s ended at %d, the leader's log starts at %d: no snapshot needed", c.procs[i].Name(), ends[i], start)
			}
			c.procs[i].Start()
		}
		c.converge("before", "t-059")
		for _, i := range lagging {
			st := c.members[i].Status()
			if len(c.snapshotFiles(i)) == 0 || st.Quorum.LogStart < start {
				t.Fatalf("%s caught up with snapshots %v and log start %d (leader's %d)", c.procs[i].Name(), c.snapshotFiles(i), st.Quorum.LogStart, start)
			}
		}
		// The fetched snapshot is durable: a restart starts from it.
		for _, i := range lagging {
			c.procs[i].Restart()
		}
		c.createTopic(leader, "after")
		c.converge("before", "t-059", "after")
	})
}

// (d) Voters and an observer crashed while the log is being written (so
// with unsynced tails, which the simulated disk may keep torn) recover and
// converge, snapshots and trims included.
func TestCrashWithTornTailRecovers(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			c := newSnapCluster(t, seed, 3, 1)
			rng := rand.New(rand.NewPCG(seed, 42))
			leader := c.waitLeader()
			c.heartbeat(leader, c.registerBroker(leader))
			var names []string
			for round := 0; round < 12; round++ {
				// Requests in flight, then a crash a few ms in.
				for k := 0; k < 3; k++ {
					name := fmt.Sprintf("r%02d-%d", round, k)
					names = append(names, name)
					req := kmsg.NewPtrCreateTopicsRequest()
					req.Version = 7
					topic := kmsg.NewCreateTopicsRequestTopic()
					topic.Topic, topic.NumPartitions, topic.ReplicationFactor = name, 3, 1
					req.Topics = []kmsg.CreateTopicsRequestTopic{topic}
					c.members[leader].Submit(req, func(kmsg.Response, error) {})
				}
				victim := []int{(leader + 1) % 3, (leader + 2) % 3, 3}[rng.IntN(3)]
				if err := c.s.RunFor(time.Duration(rng.IntN(4000)) * time.Microsecond); err != nil {
					t.Fatal(err)
				}
				c.procs[victim].Crash()
				if err := c.s.RunFor(time.Duration(rng.IntN(50)) * time.Millisecond); err != nil {
					t.Fatal(err)
				}
				c.procs[victim].Start()
				c.runUntil(commitBound, "restart", func() bool { return c.members[victim] != nil && c.procs[victim].Up() })
			}
			if got := c.activeController(); got != leader {
				t.Fatalf("leader moved from c%d to %d", leader+1, got)
			}
			c.createTopic(leader, "last")
			c.converge("last")
			img := c.members[leader].Image()
			for _, name := range names {
				if _, ok := img.TopicByName(name); !ok {
					t.Fatalf("topic %s lost", name)
				}
			}
			for i := range c.members {
				if err := c.members[i].Status().Err; err != nil {
					t.Fatalf("%s: %v", c.procs[i].Name(), err)
				}
			}
		})
	}
}

// (e) A damaged newest snapshot is deleted at start and the member falls
// back to the older one, replaying the log from there.
func TestDamagedSnapshotFallsBack(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			c := newSnapCluster(t, seed, 3, 1)
			leader := c.waitLeader()
			c.heartbeat(leader, c.registerBroker(leader))
			for _, i := range []int{(leader + 1) % 3, 3} {
				n := 0
				for len(c.snapshotFiles(i)) < 2 {
					c.createTopic(leader, fmt.Sprintf("t%d-%03d", i, n))
					n++
				}
				c.converge()
				c.procs[i].Crash()
				snaps := c.snapshotFiles(i)
				if len(snaps) < 2 {
					t.Fatalf("%s: snapshots %v after the crash", c.procs[i].Name(), snaps)
				}
				newest, older := snaps[len(snaps)-1], snaps[len(snaps)-2]
				original, _ := c.procs[i].Disk().ReadFile(newest)
				c.beforeStart[i] = func(e env.Env) {
					f, err := e.Disk().Open(newest, false)
					if err != nil {
						t.Errorf("open %s: %v", newest, err)
						return
					}
					defer f.Close()
					b := make([]byte, 1)
					mid := f.Size() / 2
					if _, err := f.ReadAt(b, mid); err != nil {
						t.Errorf("read %s: %v", newest, err)
					}
					if err := f.WriteAt([]byte{b[0] ^ 0x10}, mid); err != nil {
						t.Errorf("damage %s: %v", newest, err)
					}
				}
				c.members[i] = nil
				c.procs[i].Start()
				c.runUntil(commitBound, "restart", func() bool { return c.members[i] != nil })
				if pos := c.started[i]; pos.Offset+1 != snapshotEnd(t, older) {
					t.Fatalf("%s started at %s, want the older snapshot %s", c.procs[i].Name(), pos, older)
				}
				// The damaged file was deleted; the member may have written
				// the same snapshot again since (its image is the same at the
				// same position, so the bytes are the original ones).
				if got, ok := c.procs[i].Disk().ReadFile(newest); ok && !bytes.Equal(got, original) {
					t.Fatalf("%s kept the damaged snapshot %s", c.procs[i].Name(), newest)
				}
				c.createTopic(leader, fmt.Sprintf("after-%d", i))
				c.converge(fmt.Sprintf("after-%d", i))
			}
		})
	}
}
