package kraft_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-log/strata/core/kraft"
)

// BenchmarkFailover100kPartitions measures controller failover in the
// simulator with 100,000 partitions in the metadata image: three voters,
// 1000 topics of 100 partitions created through the controller (20 topics
// per CreateTopics), then the leader crashes. It reports
//
//   - failover-sim-ms: simulated time from the crash until a new controller
//     is active and a CreateTopics (after the broker's next heartbeat)
//     succeeds, and failover-wall-ms, the wall time simulating it took;
//   - snapshot-bytes, snapshot-partitions and snapshot-load-wall-ms: the
//     size of the crashed member's latest snapshot, the partitions it
//     holds, and the wall time of its restart's
//     kraft.Start, which loads it; catchup-wall-ms: the wall time until its
//     image converged with the others (replaying the log after the
//     snapshot);
//   - create-wall-s: the wall time of creating the partitions.
//
// Run it with
//
//	go test -run '^$' -bench Failover100kPartitions -benchtime 1x ./core/kraft/
func BenchmarkFailover100kPartitions(b *testing.B) {
	for i := 0; i < b.N; i++ {
		runFailoverBench(b, uint64(i+1), 1000, 100)
	}
}

// failoverSnapshotRecords is the benchmark's snapshot interval in records
// (Config.SnapshotIntervalRecords): the 100k partition records are only
// about 10 MiB of log, below Kafka's 20 MiB byte interval, and with this
// the latest snapshot holds all of them.
const failoverSnapshotRecords = 20_000

func runFailoverBench(b *testing.B, seed uint64, topics, partitions int) {
	b.StopTimer()
	const perRequest = 20
	c := newClusterStopped(b, seed, 3, 0, func(cfg *kraft.Config) { cfg.SnapshotIntervalRecords = failoverSnapshotRecords })
	startDur := make([]time.Duration, 3) // wall time of each member's latest kraft.Start
	// startParts is the partition count of each member's image right
	// after its latest kraft.Start: what its snapshot held.
	startParts := make([]int, 3)
	var startedAt time.Time
	c.started = func(i int, m *kraft.Member) {
		startDur[i] = time.Since(startedAt)
		if m != nil {
			startParts[i] = m.Image().NumPartitions()
		}
	}
	for _, p := range c.procs {
		startedAt = time.Now()
		p.Start()
	}
	leader := c.waitLeader()
	brokerEpoch := c.registerBroker(leader)

	createStart := time.Now()
	for t := 0; t < topics; t += perRequest {
		var names []string
		for k := t; k < min(t+perRequest, topics); k++ {
			names = append(names, fmt.Sprintf("topic-%04d", k))
		}
		c.heartbeat(leader, brokerEpoch)
		c.createTopicBatch(leader, names, int32(partitions))
	}
	createWall := time.Since(createStart)
	c.runUntil(30*time.Second, "converge", func() bool {
		d := c.members[0].Image().Digest()
		return c.members[1].Image().Digest() == d && c.members[2].Image().Digest() == d
	})
	img := c.members[leader].Image()
	count := img.NumPartitions()
	if count != topics*partitions {
		b.Fatalf("%d partitions in the image, want %d", count, topics*partitions)
	}

	// Failover.
	b.StartTimer()
	crashedAt, wallStart := c.s.Now(), time.Now()
	c.procs[leader].Crash()
	next := -1
	c.runUntil(electionBound, "elect a successor", func() bool { next = c.activeController(); return next >= 0 && next != leader })
	activeAt := c.s.Now()
	c.heartbeat(next, brokerEpoch)
	c.createTopicBatch(next, []string{"after-failover"}, 1)
	failoverSim, failoverWall := c.s.Now()-crashedAt, time.Since(wallStart)
	b.StopTimer()

	// Restart the crashed member: it loads its latest snapshot.
	var snapName string
	var snapBytes int
	for _, f := range c.procs[leader].Disk().Files() {
		if strings.HasSuffix(f, ".checkpoint") {
			data, _ := c.procs[leader].Disk().ReadFile(f)
			snapName, snapBytes = f, len(data)
		}
	}
	c.members[leader] = nil
	catchupStart := time.Now()
	startedAt = catchupStart
	c.procs[leader].Start()
	c.runUntil(30*time.Second, "restarted member converges", func() bool {
		m := c.members[leader]
		return m != nil && m.Image().Digest() == c.members[next].Image().Digest()
	})
	catchupWall := time.Since(catchupStart)

	b.ReportMetric(float64(failoverSim.Milliseconds()), "failover-sim-ms")
	b.ReportMetric(float64(failoverWall.Milliseconds()), "failover-wall-ms")
	b.ReportMetric(float64(snapBytes), "snapshot-bytes")
	b.ReportMetric(float64(startParts[leader]), "snapshot-partitions")
	b.ReportMetric(float64(startDur[leader].Microseconds())/1000, "snapshot-load-wall-ms")
	b.ReportMetric(float64(catchupWall.Milliseconds()), "catchup-wall-ms")
	b.ReportMetric(createWall.Seconds(), "create-wall-s")
	b.Logf("seed %d: %d partitions; c%d crashed, c%d active after %v (sim), CreateTopics answered %v after the crash (sim), %v wall; "+
		"snapshot %s of %d bytes (%d partitions) loaded by kraft.Start in %v wall, caught up in %v wall; creating took %v wall",
		seed, count, leader+1, next+1, activeAt-crashedAt, failoverSim, failoverWall,
		snapName, snapBytes, startParts[leader], startDur[leader], catchupWall, createWall)
}
