package attack

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/internal/proccluster"
	"github.com/strata-log/strata/node"
)

// quorumForgeryDuration is how long the three voters are attacked.
const quorumForgeryDuration = 3 * time.Second

// freePort is a free port on 127.0.0.1 (free when asked; the node binds
// it a moment later). Controller listeners need fixed ports: the voters
// name each other by them, before and after a restart.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// quorumState asks a broker (which forwards it) for the metadata quorum's
// leader and epoch.
func quorumState(ctx context.Context, addr string) (leader, epoch int32, err error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(time.Second), kgo.RequestRetries(0))
	if err != nil {
		return -1, -1, err
	}
	defer cl.Close()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, -1, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, -1, fmt.Errorf("DescribeQuorum answered %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, -1, err
	}
	return p.LeaderID, p.LeaderEpoch, nil
}

// waitLeader waits until the broker at addr reports a quorum leader.
func waitLeader(t *testing.T, addr string) (leader, epoch int32) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l, e, err := quorumState(ctx, addr)
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
	clusterID, err := node.NewClusterID(crand.Reader)
	require.NoError(t, err)
	dir := t.TempDir()
	const n = 3
	ctrl := make([]string, n)
	var voters []string
	for i := range ctrl {
		ctrl[i] = freePort(t)
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, ctrl[i]))
	}
	nodes := make([]*proccluster.Node, n)
	for i := range nodes {
		nodes[i] = proccluster.NewNode(t, dir, int32(i+1), []string{
			fmt.Sprintf("node.id=%d", i+1),
			"process.roles=broker,controller",
			"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://" + ctrl[i],
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"log.dirs=" + filepath.Join(dir, fmt.Sprintf("node-%d", i+1)),
			"metrics.listener=127.0.0.1:0",
			"auto.create.topics.enable=false",
		})
	}
	startAll := func() {
		for _, p := range nodes {
			p.Start(t, clusterID)
		}
		for _, p := range nodes {
			p.WaitReady(t)
		}
	}
	startAll()
	addrs := func() []string {
		var out []string
		for _, p := range nodes {
			out = append(out, p.BrokerAddr)
		}
		return out
	}
	leader, epoch := waitLeader(t, nodes[0].BrokerAddr)
	t.Logf("quorum leader %d at epoch %d", leader, epoch)

	ctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
	defer cancel()
	adm := newAdmin(t, nodes[0])
	created, err := adm.CreateTopic(ctx, 3, 3, nil, "replicated")
	require.NoError(t, err)
	require.NoError(t, created.Err)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs()...), kgo.DialTimeout(dialTimeout), kgo.DefaultProduceTopic("replicated"),
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
				e, err = sendForgeries(r, fromController, ctrl[w], to, peer, e, clusterID, &seen)
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
	startAll()
	for _, p := range nodes {
		requireCleanStart(t, p)
	}
	l3, e3 := waitLeader(t, nodes[0].BrokerAddr)
	require.Greater(t, e3, epoch, "a new election after the restart")
	require.Less(t, e3, int32(quorum.MaxEpoch/2), "the epoch after the restart")
	t.Logf("after restarting all three: leader %d at epoch %d", l3, e3)

	cl2, err := kgo.NewClient(kgo.SeedBrokers(addrs()...), kgo.DialTimeout(dialTimeout),
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
