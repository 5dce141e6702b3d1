package attack

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/internal/proccluster"
)

// quorumForgeryDuration is how long the three voters are attacked.
const quorumForgeryDuration = 3 * time.Second

// waitLeader waits until the broker at addr reports a quorum leader.
func waitLeader(t *testing.T, addr string) (leader, epoch int32) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l, e, err := proccluster.QuorumState(ctx, addr)
		leader, epoch = l, e
		return err == nil && l >= 0
	}, opTimeout, 50*time.Millisecond, "the quorum elected no leader")
	return leader, epoch
}

// TestAttackQuorum is finding 1 on real processes: a forged Vote at the
// largest epoch (with a huge last offset and the right cluster id) used to
// be granted and persisted, and every voter then panicked at every start.
// Three voters get every forgery of forgeries() at their CONTROLLER
// listeners, in the names of their fellow voters, for a few seconds: each
// is refused, the quorum keeps its leader and epoch, acks=all produce
// goes on, and after all three restart on their data the quorum elects
// again and every record is there.
func TestAttackQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three node processes")
	}
	const n = 3
	cluster := proccluster.StartCombined(t, n, "auto.create.topics.enable=false")
	nodes := cluster.Nodes
	for _, p := range nodes {
		p.WaitReady(t)
	}
	leader, epoch := waitLeader(t, nodes[0].BrokerAddr)
	t.Logf("quorum leader %d at epoch %d", leader, epoch)

	ctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
	defer cancel()
	adm := newAdmin(t, nodes[0])
	created, err := adm.CreateTopic(ctx, 3, 3, nil, "replicated")
	require.NoError(t, err)
	require.NoError(t, created.Err)
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.BrokerAddrs()...), kgo.DialTimeout(dialTimeout), kgo.DefaultProduceTopic("replicated"),
		kgo.RecordDeliveryTimeout(opTimeout))
	require.NoError(t, err)
	defer cl.Close()
	produced := 0
	produce := func(k int) {
		var recs []*kgo.Record
		for i := range k {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k-%d", produced+i)), Value: []byte("v")})
		}
		require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
		produced += k
	}
	produce(100)

	// The forgeries, to every voter, while a client asks each broker for
	// Metadata and produces at acks=all.
	r := &run{t: t, seed: 0, good: map[string]map[int32]map[int64]goodRecord{}}
	r.phase = "quorum-forgeries"
	attackCtx, stop := context.WithTimeout(context.Background(), quorumForgeryDuration)
	var sent atomic.Int64
	var seen codes
	var slowest atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		workers(attackCtx, n, func(ctx context.Context, w int) {
			to, peer := int32(w+1), int32((w+1)%n+1)
			e := int32(0)
			for ctx.Err() == nil {
				var err error
				e, err = sendForgeries(r, fromController, nodes[w].CtrlAddr, to, peer, e, cluster.ClusterID, &seen)
				if err != nil {
					r.finding("dial node %d's controller listener: %v", to, err)
					return
				}
				sent.Add(int64(len(forgeries(to, peer))))
			}
		})
	}()
	for attackCtx.Err() == nil {
		for _, p := range nodes {
			start := time.Now()
			c, err := dialFrom(victimAddr, p.BrokerAddr)
			require.NoError(t, err)
			_, err = roundTrip(c, metadataRequest(1, "replicated"), probeTimeout)
			_ = c.Close()
			require.NoError(t, err, "Metadata of node %d during the forgeries", p.ID)
			slowest.Store(max(slowest.Load(), int64(time.Since(start))))
		}
		produce(10)
		time.Sleep(50 * time.Millisecond)
	}
	<-done
	stop()
	require.Empty(t, r.findings, "forgeries that were not refused")
	require.Less(t, time.Duration(slowest.Load()), responsiveBound, "Metadata during the forgeries")
	t.Logf("%d forgeries to 3 voters, answers %s; Metadata at most %v meanwhile; %d records produced at acks=all",
		sent.Load(), seen.String(), time.Duration(slowest.Load()).Round(time.Millisecond), produced)
	for _, p := range nodes {
		p.RequireHealthy(t, "after the forgeries")
	}
	l2, e2 := waitLeader(t, nodes[0].BrokerAddr)
	require.Equal(t, leader, l2, "the forgeries moved the quorum's leader")
	require.Equal(t, epoch, e2, "the forgeries moved the quorum's epoch")

	// A clean restart of every voter: the quorum elects again, at an
	// epoch that has room to grow.
	cl.Close()
	for _, p := range nodes {
		p.Stop(t)
		requireCleanStop(t, p)
	}
	for _, p := range nodes {
		cluster.Restart(p.ID)
	}
	for _, p := range nodes {
		p.WaitReady(t)
		requireCleanStart(t, p)
	}
	l3, e3 := waitLeader(t, nodes[0].BrokerAddr)
	require.Greater(t, e3, epoch, "a new election after the restart")
	require.Less(t, e3, int32(quorum.MaxEpoch/2), "the epoch after the restart")
	t.Logf("after restarting all three: leader %d at epoch %d", l3, e3)

	cl2, err := kgo.NewClient(kgo.SeedBrokers(cluster.BrokerAddrs()...), kgo.DialTimeout(dialTimeout),
		kgo.ConsumeTopics("replicated"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl2.Close()
	got := map[string]bool{}
	for len(got) < produced {
		fs := cl2.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d records after the restart", len(got), produced)
		fs.EachError(func(_ string, _ int32, err error) { require.NoError(t, err) })
		fs.EachRecord(func(rec *kgo.Record) { got[string(rec.Key)] = true })
	}
	require.Len(t, got, produced)
	for _, p := range nodes {
		p.RequireHealthy(t, "after the restart")
	}
}
