package interop

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/strata-log/strata/internal/proccluster"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupCoordinatorFailover: three node processes, a topic and
// __consumer_offsets at replication factor 3. A kgo group member consumes
// and commits; the group's coordinator is SIGKILLed; the coordinator
// moves to another broker, which replays the group's offsets: the member
// goes on from its commits (no committed record is delivered again), and
// consumes and commits what is produced after the kill.
func TestGroupCoordinatorFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three node processes")
	}
	c := startProcessCluster(t, 3, "group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=3")
	nodes, addrs := c.Nodes, c.BrokerAddrs()
	adm := newAdmin(t, addrs...)
	const topic, group = "f-orders", "f-group"
	ctx := ctxFor(t, 2*opTimeout)
	resp, err := adm.CreateTopic(ctx, 6, 3, nil, topic)
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	waitLeaders(t, adm, topic, 6)
	waitServed(t, adm, topic)

	produce := func(n int) map[int32]int64 {
		cl := newClient(t, addrs, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		pctx := ctxFor(t, 2*opTimeout)
		for i := 0; i < n; i++ {
			require.NoError(t, cl.ProduceSync(pctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr())
		}
		ends, err := kadm.NewClient(cl).ListEndOffsets(pctx, topic)
		require.NoError(t, err)
		out := map[int32]int64{}
		ends.Each(func(e kadm.ListedOffset) { out[e.Partition] = e.Offset })
		return out
	}
	ends := produce(300)

	var mu sync.Mutex
	deliveries := map[int32]map[int64]int{}
	cl := newClient(t, addrs, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(300*time.Millisecond), kgo.FetchMaxWait(200*time.Millisecond))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			pctx, cancel := context.WithTimeout(context.Background(), time.Second)
			fs := cl.PollFetches(pctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) {
				mu.Lock()
				if deliveries[r.Partition] == nil {
					deliveries[r.Partition] = map[int64]int{}
				}
				deliveries[r.Partition][r.Offset]++
				mu.Unlock()
			})
			cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = cl.CommitUncommittedOffsets(cctx)
			ccancel()
		}
	}()
	defer func() { close(stop); <-done }()
	requireCommitted(t, addrs[0], group, topic, ends)

	coord := adm.FindGroupCoordinators(ctx, group)[group]
	require.NoError(t, coord.Err)
	var victim *proccluster.Node
	for _, p := range nodes {
		if p.ID == coord.NodeID {
			victim = p
		}
	}
	require.NotNil(t, victim, "coordinator %d is not one of the nodes", coord.NodeID)
	t.Logf("killing broker %d, the coordinator of %s", victim.ID, group)
	victim.Kill()
	var alive []string
	for _, p := range nodes {
		if p != victim {
			alive = append(alive, p.BrokerAddr)
		}
	}
	after := produce(120)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for p, end := range after {
			for o := int64(0); o < end; o++ {
				if deliveries[p][o] == 0 {
					return false
				}
			}
		}
		return true
	}, 2*rejoinTimeout, 100*time.Millisecond, "the member never consumed what was produced after the kill")
	requireCommitted(t, alive[0], group, topic, after)
	mu.Lock()
	defer mu.Unlock()
	for p, end := range ends {
		for o := int64(0); o < end; o++ {
			require.Equal(t, 1, deliveries[p][o], "%s-%d offset %d, committed before the kill, was delivered again", topic, p, o)
		}
	}
	moved := newAdmin(t, alive...).FindGroupCoordinators(ctxFor(t, opTimeout), group)[group]
	require.NoError(t, moved.Err)
	require.NotEqual(t, victim.ID, moved.NodeID, "the coordinator did not move")
}
