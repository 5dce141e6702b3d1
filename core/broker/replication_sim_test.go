package broker_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/sim/servertest"
)

// simCluster is a servertest cluster whose topics may have three
// replicas, with the broker tests' own helpers.
type simCluster struct {
	*servertest.Cluster
	t *testing.T
}

// newSimCluster starts n nodes; tweak, if not nil, edits each one's
// config further.
func newSimCluster(t *testing.T, seed uint64, n int, tweak func(*server.Config)) *simCluster {
	t.Helper()
	return &simCluster{servertest.StartCluster(t, seed, n, func(c *server.Config) {
		c.Quorum.Controller.MaxReplicationFactor = 3
		if tweak != nil {
			tweak(c)
		}
	}), t}
}

// do sends req to node and fails the test on a transport error.
func (x *simCluster) do(node int, req kmsg.Request) kmsg.Response {
	x.t.Helper()
	resp, err := x.Do(node, req)
	require.NoError(x.t, err)
	return resp
}

// batch builds one batch of values (nil keys) stamped with the client's
// clock.
func (x *simCluster) batch(opts []record.BuilderOption, values ...string) []byte {
	x.t.Helper()
	b := record.NewBuilder(opts...)
	for _, v := range values {
		b.Append(x.ClientEnv().Now().UnixMilli(), nil, []byte(v))
	}
	out, err := b.AppendTo(nil)
	require.NoError(x.t, err)
	return out
}

// produceTo sends values as one batch to partition 0 of topic at node and
// returns the partition's answer.
func (x *simCluster) produceTo(node int, topic string, values ...string) kmsg.ProduceResponseTopicPartition {
	x.t.Helper()
	return x.do(node, servertest.ProduceRequest(topic, 0, x.batch(nil, values...))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// fetchAll reads partition 0 of topic at node from the start to its end.
func (x *simCluster) fetchAll(node int, topic string) []string {
	x.t.Helper()
	var values []string
	for off := int64(0); ; {
		p := x.do(node, fetchRequest(11, 0, topic, 0, off)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		require.Zero(x.t, p.ErrorCode, "fetch: %v", kerr.ErrorForCode(p.ErrorCode))
		sp := record.NewSplitter(p.RecordBatches, len(p.RecordBatches)+1, record.CheckStored)
		n := 0
		for sp.Next() {
			rd := record.NewRecordReader(record.NewDecompressor(1 << 20))
			require.NoError(x.t, rd.Reset(sp.Batch()))
			for rd.Next() {
				if rd.Record().Offset >= off {
					values = append(values, string(rd.Record().Value))
					off = rd.Record().Offset + 1
					n++
				}
			}
		}
		require.NoError(x.t, sp.Err())
		if n == 0 {
			return values
		}
	}
}

// replicatedTopic creates topic, one partition of three replicas and
// min.insync.replicas=2, and returns its leader.
func (x *simCluster) replicatedTopic(topic string) int {
	x.t.Helper()
	x.CreateTopic(1, topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	return x.LeaderOf(topic, 0)
}

// partitionNotLedBy is the first of topic's partitions whose leader is
// not node, and its leader.
func (x *simCluster) partitionNotLedBy(node int, topic string, partitions int32) (int32, int) {
	x.t.Helper()
	for p := range partitions {
		if l := x.LeaderOf(topic, p); l != node {
			return p, l
		}
	}
	require.FailNow(x.t, "every partition led by node", "%d", node)
	return -1, 0
}

// RF=3, min.insync.replicas=2: acks=all produces are answered once every
// in-sync replica has them; every replica holds the same records; killing
// the leader elects another from the ISR that holds every acknowledged
// record, producing resumes there, and the old leader, restarted, catches
// up as a follower.
func TestReplicatedPartitionSurvivesItsLeader(t *testing.T) {
	x := newSimCluster(t, 1, 3, nil)
	leader := x.replicatedTopic("r")
	var acked []string
	for i := range 10 {
		v := fmt.Sprintf("v%d", i)
		got := x.produceTo(leader, "r", v)
		require.Zero(t, got.ErrorCode, "produce %d: %v", i, kerr.ErrorForCode(got.ErrorCode))
		require.Equal(t, int64(i), got.BaseOffset)
		acked = append(acked, v)
	}
	for i := 1; i <= 3; i++ {
		p := x.Partition(i, "r", 0)
		require.NotNil(t, p, "node %d hosts a replica", i)
		require.Equal(t, int64(10), p.LogEndOffset(), "node %d's replica has every acknowledged record", i)
	}
	require.Equal(t, acked, x.fetchAll(leader, "r"))
	sessions, _ := x.Metrics[leader-1].Value(metrics.FetchSessions)
	require.Equal(t, float64(2), sessions, "each follower fetches in a session (KIP-227)")

	killedAt := x.Sim.Now()
	x.Kill(leader)
	x.RunUntil("a new leader", func() bool { l := x.LeaderOf("r", 0); return l != 0 && l != leader })
	next := x.LeaderOf("r", 0)
	t.Logf("leader %d killed; %d leads %v later", leader, next, x.Sim.Now()-killedAt)
	require.Less(t, x.Sim.Now()-killedAt, 2*time.Second,
		"a follower's refused redial gets the dead broker fenced at once, not after broker.session.timeout.ms")
	require.Equal(t, acked, x.fetchAll(next, "r"), "the new leader serves every acknowledged record")
	for i := 10; i < 15; i++ {
		v := fmt.Sprintf("v%d", i)
		var got kmsg.ProduceResponseTopicPartition
		x.RunUntil("a produce accepted", func() bool {
			got = x.produceTo(next, "r", v)
			return got.ErrorCode == 0
		})
		require.Equal(t, int64(i), got.BaseOffset)
		acked = append(acked, v)
	}
	require.Equal(t, acked, x.fetchAll(next, "r"))

	isr := func() []int32 {
		ti, _ := x.Servers[next-1].Image().TopicByName("r")
		part, _ := ti.Partition(0)
		return part.ISR
	}
	require.NotContains(t, isr(), int32(leader), "the killed broker was fenced out of the ISR")
	x.Start(leader)
	x.RunUntil("the old leader caught up", func() bool {
		p := x.Partition(leader, "r", 0)
		return p != nil && p.Online() && p.LogEndOffset() == 15
	})
	x.RunUntil("the old leader back in the ISR", func() bool { return len(isr()) == 3 })
	got := x.produceTo(next, "r", "v15")
	require.Zero(t, got.ErrorCode)
	require.NoError(t, x.Sim.RunFor(time.Second))
	require.Equal(t, int64(16), x.Partition(leader, "r", 0).LogEndOffset())
}

// A follower cut off from its leader (but not from the controller) stops
// catching up: after replica.lag.time.max.ms the leader takes it out of
// the ISR through AlterPartition, and acks=all produces complete with the
// rest; once the link heals it catches up and the leader adds it back.
func TestLaggingFollowerLeavesAndRejoinsTheISR(t *testing.T) {
	x := newSimCluster(t, 2, 3, nil)
	x.CreateTopic(1, "r", 6, 3, map[string]string{"min.insync.replicas": "2"})
	ctrl := 0
	for i := 1; i <= 3; i++ {
		if x.Servers[i-1].ActiveController() {
			ctrl = i
		}
	}
	// A partition led away from the controller's node; its follower is
	// the third node.
	part, leader := x.partitionNotLedBy(ctrl, "r", 6)
	follower := 6 - ctrl - leader
	isr := func() []int32 {
		ti, _ := x.Servers[ctrl-1].Image().TopicByName("r")
		p, _ := ti.Partition(part)
		return p.ISR
	}
	require.Len(t, isr(), 3)
	produce := func(v string) kmsg.ProduceResponseTopicPartition {
		return x.do(leader, servertest.ProduceRequest("r", part, x.batch(nil, v))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	require.Zero(t, produce("a").ErrorCode)

	cut := x.Sim.Network().Partition([]string{fmt.Sprintf("n%d", leader)}, []string{fmt.Sprintf("n%d", follower)})
	start := x.Sim.Now()
	require.NoError(t, x.Sim.RunFor(25*time.Second))
	require.Contains(t, isr(), int32(follower), "still in the ISR within replica.lag.time.max.ms")
	x.RunUntil("the follower out of the ISR", func() bool { return !contains(isr(), int32(follower)) })
	waited := x.Sim.Now() - start
	require.GreaterOrEqual(t, waited, 30*time.Second, "not before replica.lag.time.max.ms")
	t.Logf("out of the ISR %v after the cut", waited)
	require.Less(t, waited, 50*time.Second, "within the lag time and one check period")
	require.Zero(t, produce("b").ErrorCode, "acks=all completes with the ISR left")
	metric := func(node int, d *metrics.Def) float64 {
		v, _ := x.Metrics[node-1].Value(d)
		return v
	}
	led := 0.0 // the partitions the leader leads: each shrank
	for p := range int32(6) {
		if x.LeaderOf("r", p) == leader {
			led++
		}
	}
	require.Equal(t, led, metric(leader, metrics.IsrShrinks), "the shrinks counted on the leader")
	require.Equal(t, led, metric(leader, metrics.UnderReplicatedPartitions))

	cut.Heal()
	x.RunUntil("the follower back in the ISR", func() bool { return contains(isr(), int32(follower)) })
	x.RunUntil("every partition's ISR expanded", func() bool { return metric(leader, metrics.IsrExpands) == led })
	x.RunUntil("no under-replicated partition", func() bool { return metric(leader, metrics.UnderReplicatedPartitions) == 0 })
	require.NoError(t, x.Sim.RunFor(time.Second))
	require.Equal(t, x.Partition(leader, "r", part).LogEndOffset(), x.Partition(follower, "r", part).LogEndOffset())
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// A clean shutdown of a leader is a controlled shutdown: the controller
// moves its leaderships to in-sync replicas while it still serves, the
// broker stops only then, and producing resumes on the new leaders at
// once, not after broker.session.timeout.ms.
func TestControlledShutdownMovesLeadershipFirst(t *testing.T) {
	x := newSimCluster(t, 3, 3, nil)
	leader := x.replicatedTopic("r")
	require.Zero(t, x.produceTo(leader, "r", "a").ErrorCode)
	took := x.Stop(leader)
	require.Less(t, took, 5*time.Second, "the shutdown waited for the leadership to move and the others to see it (their heartbeats, every 2 s), not for a session timeout")
	next := 0
	for i := 1; i <= 3; i++ {
		if i != leader && x.Servers[i-1] != nil {
			ti, _ := x.Servers[i-1].Image().TopicByName("r")
			p, _ := ti.Partition(0)
			require.NotEqual(t, int32(leader), p.Leader, "node %d's image: the stopped broker no longer leads", i)
			next = int(p.Leader)
		}
	}
	require.Positive(t, next)
	x.RunUntil("the new leader online", func() bool { return x.LeaderOf("r", 0) == next })
	got := x.produceTo(next, "r", "b")
	require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, []string{"a", "b"}, x.fetchAll(next, "r"))
	t.Logf("controlled shutdown of leader %d took %v; %d leads", leader, took, next)
}

// Reassignment (AlterPartitionReassignments): the new replica catches up
// before the old one leaves; then the assignment is the target, the removed
// broker no longer hosts the partition, and every record is still there.
func TestReassignmentCatchesUpBeforeTheOldReplicaLeaves(t *testing.T) {
	x := newSimCluster(t, 4, 4, nil)
	leader := x.replicatedTopic("r")
	var values []string
	for i := range 20 {
		v := fmt.Sprintf("v%d", i)
		require.Zero(t, x.produceTo(leader, "r", v).ErrorCode)
		values = append(values, v)
	}
	partition := func() meta.Partition {
		ti, _ := x.Servers[leader-1].Image().TopicByName("r")
		p, _ := ti.Partition(0)
		return p
	}
	before := partition().Replicas
	var outside int32
	for id := int32(1); id <= 4; id++ {
		if !contains(before, id) {
			outside = id
		}
	}
	removed := before[len(before)-1]
	if removed == int32(leader) {
		removed = before[len(before)-2]
	}
	var target []int32
	for _, id := range before {
		if id != removed {
			target = append(target, id)
		}
	}
	target = append(target, outside)

	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "r"
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 0, target
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	got := x.do(1, req).(*kmsg.AlterPartitionAssignmentsResponse).Topics[0].Partitions[0]
	require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))

	x.RunUntil("the reassignment complete", func() bool {
		p := partition()
		return slices.Equal(p.Replicas, target) && len(p.AddingReplicas) == 0 && len(p.RemovingReplicas) == 0
	})
	p := partition()
	require.ElementsMatch(t, target, p.ISR, "every target replica in sync")
	require.NotNil(t, x.Partition(int(outside), "r", 0))
	require.Equal(t, int64(20), x.Partition(int(outside), "r", 0).LogEndOffset(), "the new replica caught up")
	x.RunUntil("the removed replica gone", func() bool { return x.Partition(int(removed), "r", 0) == nil })

	list := x.do(1, kmsg.NewPtrListPartitionReassignmentsRequest())
	require.Empty(t, list.(*kmsg.ListPartitionReassignmentsResponse).Topics, "none in progress")

	leader = x.LeaderOf("r", 0)
	require.Zero(t, x.produceTo(leader, "r", "after").ErrorCode)
	require.Equal(t, append(values, "after"), x.fetchAll(leader, "r"))
}
