package proccluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReplicationProcesses runs three combined nodes as real processes
// with a topic of replication factor 3 and min.insync.replicas 2. A kgo
// producer (acks=all, idempotent) writes while a bounded fault loop
// SIGKILLs the leader of partition 0 and restarts it, twice; afterwards
// every acknowledged record is read back at its acknowledged offset, and
// each restarted node is back in the ISR.
func TestReplicationProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	c := StartCombined(t, 3, "broker.session.timeout.ms=4000", "replica.lag.time.max.ms=5000")
	seeds := c.waitBrokersRegistered()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	require.NoError(t, err)
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	c.createReplicatedTopic(ctx, adm, "replicated", 2)
	leaderOf := func(partition int32) int32 {
		md, err := adm.Metadata(ctx, "replicated")
		if err != nil {
			return -1
		}
		p, ok := md.Topics["replicated"].Partitions[partition]
		if !ok || p.Err != nil {
			return -1
		}
		return p.Leader
	}
	isrOf := func(partition int32) []int32 {
		md, err := adm.Metadata(ctx, "replicated")
		if err != nil {
			return nil
		}
		return md.Topics["replicated"].Partitions[partition].ISR
	}

	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("replicated"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RetryTimeout(time.Minute))
	require.NoError(t, err)
	defer producer.Close()
	type ack struct {
		partition int32
		offset    int64
	}
	acked := map[string]ack{}
	produce := func(n int, tag string) {
		t.Helper()
		for i := range n {
			v := fmt.Sprintf("%s-%d", tag, i)
			r := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(v)})
			rec, err := r.First()
			require.NoError(t, err, "produce %s", v)
			acked[v] = ack{rec.Partition, rec.Offset}
		}
	}
	produce(100, "before")
	for round := 1; round <= 2; round++ {
		var leader int32 = -1
		c.WaitFor(20*time.Second, "partition 0 led", func() bool { leader = leaderOf(0); return leader > 0 })
		victim := c.Node(leader)
		lines := victim.LogLines()
		start := time.Now()
		victim.Kill()
		produce(50, fmt.Sprintf("round%d", round)) // retried until a new leader takes them
		t.Logf("round %d: killed leader %d; 50 acks=all records acknowledged %v later", round, leader, time.Since(start).Round(time.Millisecond))
		if round == 1 {
			// The fenced broker left both ISRs: `strata topic describe
			// --under-replicated` lists both partitions, without it.
			addr := c.Node(1 + leader%3).BrokerAddr
			out := strataOK(t, addr, "topic", "describe", "--under-replicated", "replicated")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			require.Len(t, lines, 2, "both partitions are under-replicated:\n%s", out)
			for _, l := range lines {
				require.Contains(t, l, fmt.Sprintf("Offline: %d", leader), l)
				require.Contains(t, l, "\tElr: \tLastKnownElr: \t", "two of three in sync: no ELR")
				isr := strings.Fields(strings.SplitN(l, "Isr: ", 2)[1])[0]
				require.NotContains(t, isr, fmt.Sprint(leader), l)
			}
			require.Empty(t, strings.TrimSpace(strataOK(t, addr, "topic", "describe", "--under-min-isr", "replicated")), "two of three in sync")
			require.Empty(t, strings.TrimSpace(strataOK(t, addr, "topic", "describe", "--unavailable", "replicated")))
		}
		c.Restart(victim.ID)
		c.WaitFor(clusterStartTimeout, fmt.Sprintf("node %d restarted", leader), func() bool {
			return victim.LoggedSince(lines, "broker registered with the controller")
		})
		c.WaitFor(30*time.Second, fmt.Sprintf("node %d back in the ISR", leader), func() bool {
			return slices.Contains(isrOf(0), leader) && slices.Contains(isrOf(1), leader)
		})
	}
	produce(50, "after")

	// Preferred leader election (ElectLeaders) puts each partition's
	// leadership back on the first replica of its assignment.
	// (PREFERRED_LEADER_NOT_AVAILABLE while the preferred replica is not
	// back in the controller's ISR yet: asked again.)
	c.WaitFor(20*time.Second, "preferred elections done", func() bool {
		results, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"replicated": {0: {}, 1: {}}})
		if err != nil {
			return false
		}
		for _, ps := range results {
			for _, r := range ps {
				if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
					require.ErrorIs(t, r.Err, kerr.PreferredLeaderNotAvailable)
					return false
				}
			}
		}
		return true
	})
	c.WaitFor(10*time.Second, "every partition led by its preferred replica", func() bool {
		md, err := adm.Metadata(ctx, "replicated")
		if err != nil {
			return false
		}
		for _, pd := range md.Topics["replicated"].Partitions {
			if len(pd.Replicas) == 0 || pd.Replicas[0] != pd.Leader {
				return false
			}
		}
		return true
	})
	produce(10, "preferred")

	// Read everything back: each acknowledged record at its offset.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("replicated"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer consumer.Close()
	seen := map[string]ack{}
	for len(seen) < len(acked) {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read back %d of %d records", len(seen), len(acked))
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if prev, dup := seen[v]; dup {
				require.Equal(t, prev, ack{r.Partition, r.Offset}, "%s read at two places", v)
			}
			seen[v] = ack{r.Partition, r.Offset}
		})
	}
	for v, a := range acked {
		require.Equal(t, a, seen[v], "%s read where it was acknowledged", v)
	}
	t.Logf("%d acknowledged records read back at their offsets after two leader kills", len(acked))
}

func kadmString(s string) *string { return &s }

// TestPartitionFailoverProcesses measures partition leader failover with
// real processes: three combined nodes with default timeouts, a topic of
// RF 3 and min.insync.replicas 2, SIGKILL of partition 0's leader, and the
// time until an acks=all produce to that partition succeeds. It runs only
// with STRATA_PARTITION_FAILOVER_RUNS=N (`make bench-partition-failover
// RUNS=N`) and prints the median, min and max.
func TestPartitionFailoverProcesses(t *testing.T) {
	runs := BenchRuns(t, "STRATA_PARTITION_FAILOVER_RUNS", "bench-partition-failover")
	var took []time.Duration
	for run := 1; run <= runs; run++ {
		t.Run(fmt.Sprintf("run-%d", run), func(t *testing.T) {
			c := StartCombined(t, 3)
			seeds := c.waitBrokersRegistered()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("f"),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(time.Minute), kgo.ProducerLinger(0),
				// kgo refreshes metadata at most every 5 s by default;
				// Kafka's Java producer refreshes after retry.backoff.ms
				// (100 ms). The figure is the cluster's, not kgo's wait.
				kgo.MetadataMinAge(100*time.Millisecond))
			require.NoError(t, err)
			defer cl.Close()
			adm := kadm.NewClient(cl)
			c.createReplicatedTopic(ctx, adm, "f", 1)
			for i := range 100 {
				require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(strconv.Itoa(i))}).FirstErr())
			}
			md, err := adm.Metadata(ctx, "f")
			require.NoError(t, err)
			leader := md.Topics["f"].Partitions[0].Leader
			start := time.Now()
			c.Node(leader).Kill()
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("after")}).FirstErr())
			d := time.Since(start)
			took = append(took, d)
			t.Logf("run %d: killed leader %d; an acks=all produce succeeded %v later", run, leader, d.Round(time.Millisecond))
		})
		if t.Failed() {
			return
		}
	}
	msg := fmt.Sprintf("partition leader failover after SIGKILL, %d runs, default timeouts, kgo metadata min age 100 ms: first acks=all produce after %s",
		runs, Spread(took))
	t.Log(msg)
	fmt.Println(msg)
}
