package interop

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/strata-log/strata/internal/proccluster"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The consumer group benchmarks of docs/benchmarks.md: rebalance time of
// ten kgo members over 100 partitions when an eleventh joins (eager,
// cooperative-sticky, KIP-848), a static member's restart, and
// coordinator failover with 10,000 committed offsets to reload. They run
// only with STRATA_GROUP_BENCH_RUNS=N (`make bench-groups RUNS=N`) and
// print the median, min and max of each figure.

const (
	benchGroupMembers    = 10
	benchGroupPartitions = 100
	// benchGroupWait bounds one wait of a benchmark run (a group
	// settling, a failover).
	benchGroupWait = time.Minute
	// benchFetchAttempt bounds one OffsetFetch attempt of the failover
	// benchmark (its resolution: an attempt that reached the dead
	// coordinator ends no later).
	benchFetchAttempt = 100 * time.Millisecond
)

func groupBenchRuns(t *testing.T) int {
	t.Helper()
	return proccluster.BenchRuns(t, "STRATA_GROUP_BENCH_RUNS", "bench-groups")
}

// ownership is who owns which partition of one topic, as the members'
// kgo callbacks tell: assigned adds the member, revoked and lost remove
// it. revokes counts revocations per member.
type ownership struct {
	mu      sync.Mutex
	owners  map[int32]map[string]bool
	revokes map[string]int
}

func newOwnership() *ownership {
	return &ownership{owners: map[int32]map[string]bool{}, revokes: map[string]int{}}
}

func (o *ownership) assigned(member string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if o.owners[p] == nil {
			o.owners[p] = map[string]bool{}
		}
		o.owners[p][member] = true
	}
}

func (o *ownership) removed(member string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(ps) > 0 {
		o.revokes[member]++
	}
	for _, p := range ps {
		delete(o.owners[p], member)
	}
}

// settled reports whether every partition has exactly one owner and
// each of members owns at least one.
func (o *ownership) settled(members ...string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	owns := map[string]int{}
	for p := int32(0); p < benchGroupPartitions; p++ {
		if len(o.owners[p]) != 1 {
			return false
		}
		for m := range o.owners[p] {
			owns[m]++
		}
	}
	for _, m := range members {
		if owns[m] == 0 {
			return false
		}
	}
	return true
}

func (o *ownership) owned(member string) []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []int32
	for p, ms := range o.owners {
		if ms[member] {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func (o *ownership) revoked(member string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.revokes[member]
}

// benchMember is one polling kgo group member.
type benchMember struct {
	name string
	cl   *kgo.Client
	stop chan struct{}
	done chan struct{}
}

// startBenchMember starts a member of group on topic with the group
// options opts (the balancer, an instance id), reporting to own, with
// kgo's defaults otherwise (heartbeats every 3 s, as Kafka's clients).
func startBenchMember(t *testing.T, addrs []string, group, topic, name string, own *ownership, opts ...kgo.Opt) *benchMember {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(addrs...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.assigned(name, m[topic]) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.removed(name, m[topic]) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.removed(name, m[topic]) }),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	m := &benchMember{name: name, cl: cl, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			m.cl.PollFetches(ctx)
			cancel()
		}
	}()
	return m
}

// close stops polling and closes the client (a dynamic member leaves the
// group; a static one does not).
func (m *benchMember) close() {
	close(m.stop)
	<-m.done
	m.cl.Close()
}

// waitUntil waits for cond, failing after benchGroupWait with what and,
// when given, the last reason cond left in why.
func waitUntil(t *testing.T, what string, cond func() bool, why ...*string) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) >= benchGroupWait {
			reason := ""
			if len(why) > 0 {
				reason = ": " + *why[0]
			}
			require.FailNow(t, fmt.Sprintf("%s: not within %v%s", what, benchGroupWait, reason))
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

func summarize(name string, ds []time.Duration) string {
	return fmt.Sprintf("%s: %d runs, %s", name, len(ds), proccluster.Spread(ds))
}

// groupProtocols are the ways a kgo member can share partitions: eager
// (range), cooperative-sticky, and KIP-848's consumer protocol.
var groupProtocols = []struct {
	name string
	opts []kgo.Opt
}{
	{"eager (range)", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
	{"cooperative-sticky", []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}},
	// kgo asks for the server's uniform assignor with a sticky balancer.
	{"KIP-848 (server-side uniform)", []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())}},
}

// TestGroupRebalanceBenchmark: a node, a topic of 100 partitions, ten
// members; the time from an eleventh member's start until every
// partition has exactly one owner again and the new member owns some,
// per protocol. Then a static member's restart: ten static members, one
// closed (a static member does not leave) and restarted with its
// instance id; the time from its restart until it owns its partitions
// again, with no other member revoking anything (no rebalance).
func TestGroupRebalanceBenchmark(t *testing.T) {
	runs := groupBenchRuns(t)
	n := startNode(t, t.TempDir())
	addrs := []string{n.Addr()}
	adm := newAdmin(t, addrs...)
	const topic = "bench-groups"
	createTopic(t, adm, topic, benchGroupPartitions, nil)

	var lines []string
	for pi, proto := range groupProtocols {
		t.Run(proto.name, func(t *testing.T) {
			var took []time.Duration
			for run := range runs {
				group := fmt.Sprintf("rebalance-%d-%d", pi, run)
				own := newOwnership()
				var members []*benchMember
				var names []string
				for i := range benchGroupMembers {
					name := fmt.Sprintf("m%d", i)
					members = append(members, startBenchMember(t, addrs, group, topic, name, own, proto.opts...))
					names = append(names, name)
				}
				waitUntil(t, proto.name+": ten members settled", func() bool { return own.settled(names...) })
				start := time.Now()
				members = append(members, startBenchMember(t, addrs, group, topic, "new", own, proto.opts...))
				waitUntil(t, proto.name+": the new member's rebalance", func() bool { return own.settled(append(names, "new")...) })
				took = append(took, time.Since(start))
				for _, m := range members {
					m.close()
				}
			}
			lines = append(lines, summarize(fmt.Sprintf("rebalance of %d members over %d partitions when one joins, %s", benchGroupMembers, benchGroupPartitions, proto.name), took))
		})
	}

	t.Run("static restart", func(t *testing.T) {
		var took []time.Duration
		for run := range runs {
			group := fmt.Sprintf("static-%d", run)
			own := newOwnership()
			var members []*benchMember
			var names []string
			for i := range benchGroupMembers {
				name := fmt.Sprintf("s%d", i)
				members = append(members, startBenchMember(t, addrs, group, topic, name, own,
					kgo.InstanceID(name), kgo.Balancers(kgo.CooperativeStickyBalancer())))
				names = append(names, name)
			}
			waitUntil(t, "ten static members settled", func() bool { return own.settled(names...) })
			before := own.owned("s0")
			revokesBefore := map[string]int{}
			for _, nm := range names[1:] {
				revokesBefore[nm] = own.revoked(nm)
			}
			members[0].close()
			own.removed("s0", before) // closed: kgo revokes nothing for a closing static member
			start := time.Now()
			members[0] = startBenchMember(t, addrs, group, topic, "s0", own,
				kgo.InstanceID("s0"), kgo.Balancers(kgo.CooperativeStickyBalancer()))
			waitUntil(t, "the static member's restart", func() bool { return slices.Equal(own.owned("s0"), before) && own.settled(names...) })
			took = append(took, time.Since(start))
			for _, nm := range names[1:] {
				require.Equal(t, revokesBefore[nm], own.revoked(nm), "%s revoked partitions: the static restart rebalanced", nm)
			}
			for _, m := range members {
				m.close()
			}
		}
		lines = append(lines, summarize(fmt.Sprintf("static member restart within the session timeout, %d members, cooperative-sticky: it owns its partitions again (no rebalance)", benchGroupMembers), took))
	})
	for _, l := range lines {
		t.Log(l)
		fmt.Println(l)
	}
}

// TestGroupCoordinatorFailoverBenchmark: three node processes,
// __consumer_offsets with one partition (every group on one coordinator)
// at replication factor 3, and committed offsets of one group (the
// baseline) or of 100 groups over a topic of 100 partitions (10,000
// offsets); the coordinator is SIGKILLed, and the time until an
// OffsetFetch of the last group committed answers every offset it
// committed, from the new coordinator. The killed node restarts between
// runs.
func TestGroupCoordinatorFailoverBenchmark(t *testing.T) {
	runs := groupBenchRuns(t)
	c := startProcessCluster(t, 3, "group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=1")
	nodes, addrs := c.Nodes, c.BrokerAddrs()
	adm := newAdmin(t, addrs...)
	const topic = "bench-offsets"
	ctx := ctxFor(t, 10*benchGroupWait)
	resp, err := adm.CreateTopic(ctx, benchGroupPartitions, 3, nil, topic)
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	waitLeaders(t, adm, topic, benchGroupPartitions)

	commit := func(groups int, base int64) (string, kadm.Offsets) {
		var last string
		var want kadm.Offsets
		for g := range groups {
			group := fmt.Sprintf("offsets-%d-%d", groups, g)
			offs := kadm.Offsets{}
			for p := int32(0); p < benchGroupPartitions; p++ {
				offs.Add(kadm.Offset{Topic: topic, Partition: p, At: base + int64(g) + int64(p), LeaderEpoch: -1})
			}
			committed, err := adm.CommitOffsets(ctx, group, offs)
			require.NoError(t, err)
			require.NoError(t, committed.Error())
			last, want = group, offs
		}
		return last, want
	}
	var lines []string
	for _, groups := range []int{1, benchGroupPartitions} {
		var took []time.Duration
		for run := range runs {
			group, want := commit(groups, int64(1000*run))
			coord := adm.FindGroupCoordinators(ctx, group)[group]
			require.NoError(t, coord.Err)
			victim := nodes[coord.NodeID-1]
			var alive []string
			for _, p := range nodes {
				if p != victim {
					alive = append(alive, p.BrokerAddr)
				}
			}
			start := time.Now()
			victim.Kill()
			var why string
			waitUntil(t, "the offsets from the new coordinator", func() bool {
				// A new client per attempt: kgo keeps a coordinator it
				// cannot dial cached (the figure is the cluster's).
				fctx, cancel := context.WithTimeout(ctx, benchFetchAttempt)
				defer cancel()
				cl, err := kgo.NewClient(kgo.SeedBrokers(alive...), kgo.DialTimeout(benchFetchAttempt))
				require.NoError(t, err)
				defer cl.Close()
				got, err := kadm.NewClient(cl).FetchOffsets(fctx, group)
				if err == nil {
					err = got.Error()
				}
				if err != nil {
					why = err.Error()
					return false
				}
				n := 0
				for _, o := range want.Sorted() {
					r, ok := got.Lookup(o.Topic, o.Partition)
					if !ok || r.At != o.At {
						why = fmt.Sprintf("%s-%d at %d, not %d (found %v)", o.Topic, o.Partition, r.At, o.At, ok)
						return false
					}
					n++
				}
				return n == benchGroupPartitions
			}, &why)
			took = append(took, time.Since(start))
			moved := newAdmin(t, alive...).FindGroupCoordinators(ctx, group)[group]
			require.NoError(t, moved.Err)
			require.NotEqual(t, victim.ID, moved.NodeID, "the coordinator did not move")
			t.Logf("%d offsets: killed coordinator %d, offsets back from %d after %v", groups*benchGroupPartitions, victim.ID, moved.NodeID, took[len(took)-1].Round(time.Millisecond))
			c.Restart(victim.ID)
			require.Eventually(t, func() bool {
				md, err := newAdmin(t, victim.BrokerAddr).BrokerMetadata(ctxFor(t, 2*time.Second))
				return err == nil && len(md.Brokers) == 3
			}, rejoinTimeout, 50*time.Millisecond, "node %d did not rejoin", victim.ID)
		}
		lines = append(lines, summarize(fmt.Sprintf("coordinator failover (SIGKILL) with %d committed offsets to reload, until an OffsetFetch answers them all", groups*benchGroupPartitions), took))
	}
	for _, l := range lines {
		t.Log(l)
		fmt.Println(l)
	}
}
