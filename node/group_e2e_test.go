package node_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-log/strata/node"
)

// startGroupNode runs a node whose groups rebalance without the initial
// delay.
func startGroupNode(t *testing.T) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.NodeID = 1
	cfg.Listener = "127.0.0.1:0"
	cfg.ControllerListener = "127.0.0.1:0"
	cfg.MetricsListener = "127.0.0.1:0"
	cfg.LogDir = t.TempDir()
	cfg.BrokerListener.Groups.Coordinator.InitialRebalanceDelay = 0
	cfg.BrokerListener.Groups.OffsetsPartitions = 4
	n, err := node.Start(cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { shutdown(t, n) })
	waitActive(t, n)
	return n
}

// groupConsumer consumes topic in group g, recording every record's
// offset by partition, and commits what it polled after each poll.
type groupConsumer struct {
	cl   *kgo.Client
	mu   sync.Mutex
	seen map[int32]map[int64]bool
	done chan struct{}
}

func startGroupConsumer(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *groupConsumer {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	gc := &groupConsumer{cl: cl, seen: map[int32]map[int64]bool{}, done: make(chan struct{})}
	go func() {
		defer close(gc.done)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			fs := cl.PollFetches(ctx)
			cancel()
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				gc.mu.Lock()
				if gc.seen[r.Partition] == nil {
					gc.seen[r.Partition] = map[int64]bool{}
				}
				gc.seen[r.Partition][r.Offset] = true
				gc.mu.Unlock()
			})
			cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = cl.CommitUncommittedOffsets(cctx)
			ccancel()
		}
	}()
	return gc
}

func (gc *groupConsumer) close() {
	gc.cl.Close()
	<-gc.done
}

func (gc *groupConsumer) count() int {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	n := 0
	for _, offs := range gc.seen {
		n += len(offs)
	}
	return n
}

// produceSpread produces n records to topic, acks=all, round-robin over
// its partitions.
func produceSpread(t *testing.T, addr, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}, func(_ *kgo.Record, err error) { require.NoError(t, err) })
	}
	require.NoError(t, cl.Flush(ctx))
}

// Two kgo consumers share a topic's partitions, with cooperative-sticky
// (kgo's default) and with eager range; one closes and the other takes
// over from the committed offsets; every record is consumed, and the
// committed offsets end at the log ends. DescribeGroups, ListGroups and
// DeleteGroups through kadm.
func TestE2EConsumerGroupFranzGo(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
		{"eager range", kgo.RangeBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) { testConsumerGroupFranzGo(t, tc.balancer) })
	}
}

func testConsumerGroupFranzGo(t *testing.T, balancer kgo.GroupBalancer) {
	n := startGroupNode(t)
	adm := newAdmin(t, n.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := adm.CreateTopic(ctx, 6, 1, nil, "orders")
	require.NoError(t, err)
	produceSpread(t, n.Addr(), "orders", 600)

	a := startGroupConsumer(t, n.Addr(), "g", "orders", kgo.Balancers(balancer))
	b := startGroupConsumer(t, n.Addr(), "g", "orders", kgo.Balancers(balancer))
	require.Eventually(t, func() bool { return a.count()+b.count() >= 600 }, 30*time.Second, 50*time.Millisecond,
		"consumed %d + %d of 600", a.count(), b.count())
	// Both members own some of the partitions, and none is owned twice.
	require.Eventually(t, func() bool {
		dg, err := adm.DescribeGroups(ctx, "g")
		if err != nil {
			return false
		}
		g := dg["g"]
		if g.State != "Stable" || len(g.Members) != 2 {
			return false
		}
		owned := map[int32]int{}
		for _, m := range g.Members {
			ca, ok := m.Assigned.AsConsumer()
			if !ok || len(ca.Topics) != 1 || len(ca.Topics[0].Partitions) == 0 {
				return false
			}
			for _, p := range ca.Topics[0].Partitions {
				owned[p]++
			}
		}
		for p := int32(0); p < 6; p++ {
			if owned[p] != 1 {
				return false
			}
		}
		return true
	}, 20*time.Second, 50*time.Millisecond, "the group never had both members stable with the partitions shared out")

	// b leaves; a takes its partitions, from the committed offsets.
	b.close()
	produceSpread(t, n.Addr(), "orders", 120)
	require.Eventually(t, func() bool {
		dg, err := adm.DescribeGroups(ctx, "g")
		if err != nil || dg["g"].State != "Stable" || len(dg["g"].Members) != 1 {
			return false
		}
		ca, ok := dg["g"].Members[0].Assigned.AsConsumer()
		return ok && len(ca.Topics) == 1 && len(ca.Topics[0].Partitions) == 6
	}, 30*time.Second, 50*time.Millisecond, "a never got every partition after b left")
	require.Eventually(t, func() bool { return a.count()+b.count() >= 720 }, 30*time.Second, 50*time.Millisecond,
		"consumed %d + %d of 720", a.count(), b.count())
	ends, err := adm.ListEndOffsets(ctx, "orders")
	require.NoError(t, err)
	require.NoError(t, ends.Error())
	require.Eventually(t, func() bool {
		offs, err := adm.FetchOffsets(ctx, "g")
		if err != nil {
			return false
		}
		ok := true
		ends.Each(func(e kadm.ListedOffset) {
			o, found := offs.Lookup("orders", e.Partition)
			ok = ok && found && o.At == e.Offset
		})
		return ok
	}, 20*time.Second, 100*time.Millisecond, "the committed offsets never reached the log ends")
	// Every record was consumed by someone.
	total := map[int32]map[int64]bool{}
	for _, c := range []*groupConsumer{a, b} {
		c.mu.Lock()
		for p, offs := range c.seen {
			if total[p] == nil {
				total[p] = map[int64]bool{}
			}
			for o := range offs {
				total[p][o] = true
			}
		}
		c.mu.Unlock()
	}
	ends.Each(func(e kadm.ListedOffset) {
		for o := int64(0); o < e.Offset; o++ {
			require.True(t, total[e.Partition][o], "orders-%d offset %d never consumed", e.Partition, o)
		}
	})
	lg, err := adm.ListGroups(ctx)
	require.NoError(t, err)
	require.Contains(t, lg.Groups(), "g")

	// A group with a member cannot be deleted; once empty it can.
	dels, err := adm.DeleteGroups(ctx, "g")
	require.NoError(t, err)
	require.Error(t, dels["g"].Err, "deleted a group with a member")
	a.close()
	require.Eventually(t, func() bool {
		dels, err := adm.DeleteGroups(ctx, "g")
		return err == nil && dels["g"].Err == nil
	}, 20*time.Second, 100*time.Millisecond)
	offs, err := adm.FetchOffsets(ctx, "g")
	require.NoError(t, err)
	require.Empty(t, offs.Sorted(), "the deleted group's offsets remain")
}

// A group's committed offsets and membership survive a restart of the
// broker: the new coordinator replays __consumer_offsets.
func TestE2EGroupOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	start := func() *node.Node {
		cfg := node.DefaultConfig()
		cfg.NodeID = 1
		cfg.Listener = "127.0.0.1:0"
		cfg.ControllerListener = "127.0.0.1:0"
		cfg.MetricsListener = "127.0.0.1:0"
		cfg.LogDir = dir
		cfg.BrokerListener.Groups.Coordinator.InitialRebalanceDelay = 0
		n, err := node.Start(cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
		require.NoError(t, err)
		waitActive(t, n)
		return n
	}
	n := start()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := newAdmin(t, n.Addr())
	_, err := adm.CreateTopic(ctx, 2, 1, nil, "t")
	require.NoError(t, err)
	commits := kadm.Offsets{}
	commits.Add(kadm.Offset{Topic: "t", Partition: 0, At: 7, LeaderEpoch: -1})
	commits.Add(kadm.Offset{Topic: "t", Partition: 1, At: 9, LeaderEpoch: -1})
	var resp kadm.OffsetResponses
	require.Eventually(t, func() bool {
		resp, err = adm.CommitOffsets(ctx, "simple", commits)
		return err == nil && resp.Ok()
	}, 20*time.Second, 100*time.Millisecond, "commit: %v %v", err, resp)
	shutdown(t, n)

	n = start()
	t.Cleanup(func() { shutdown(t, n) })
	adm = newAdmin(t, n.Addr())
	require.Eventually(t, func() bool {
		offs, err := adm.FetchOffsets(ctx, "simple")
		if err != nil {
			return false
		}
		o0, ok0 := offs.Lookup("t", 0)
		o1, ok1 := offs.Lookup("t", 1)
		return ok0 && ok1 && o0.At == 7 && o1.At == 9
	}, 20*time.Second, 100*time.Millisecond, "the committed offsets did not survive the restart")
}

// Clients cannot write to __consumer_offsets: only the coordinator does,
// and a foreign record would stop its replay.
func TestE2EOffsetsTopicRefusesClientProduce(t *testing.T) {
	n := startGroupNode(t)
	adm := newAdmin(t, n.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A commit creates the topic.
	commits := kadm.Offsets{}
	_, err := adm.CreateTopic(ctx, 1, 1, nil, "t")
	require.NoError(t, err)
	commits.Add(kadm.Offset{Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1})
	require.Eventually(t, func() bool {
		resp, err := adm.CommitOffsets(ctx, "g", commits)
		return err == nil && resp.Ok()
	}, 20*time.Second, 100*time.Millisecond)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.RecordRetries(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	res := cl.ProduceSync(ctx, &kgo.Record{Topic: "__consumer_offsets", Partition: 0, Key: []byte{9}, Value: []byte("x")})
	require.ErrorIs(t, res.FirstErr(), kerr.InvalidTopicException)
}
