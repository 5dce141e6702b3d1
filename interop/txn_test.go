package interop

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/node"
)

// TestKgoTransactions: a kgo transactional producer runs six
// transactions over three partitions, committing some and aborting the
// others. A read_committed consumer sees exactly the committed records, a
// read_uncommitted one every record.
func TestKgoTransactions(t *testing.T) {
	n := startNode(t, t.TempDir())
	addr := n.Addr()
	adm := newAdmin(t, addr)
	createTopic(t, adm, "txn", 3, nil)

	cl := newClient(t, []string{addr}, kgo.TransactionalID("tx-kgo"), kgo.DefaultProduceTopic("txn"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(30*time.Second))
	commits := []bool{true, false, true, false, false, true}
	committed := map[string]bool{}
	all := 0
	for i, commit := range commits {
		ctx := ctxFor(t, opTimeout)
		require.NoError(t, cl.BeginTransaction())
		for j := 0; j < 10; j++ {
			v := fmt.Sprintf("txn-%d-%d", i, j)
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: int32(j % 3), Value: []byte(v)}).FirstErr())
			if commit {
				committed[v] = true
			}
			all++
		}
		require.NoError(t, cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)), "transaction %d", i)
	}
	cl.Close()

	// The last transaction committed on every partition: reading
	// committed records until there are as many as were committed reads
	// each partition past every aborted one.
	got := consumeKgo(t, []string{addr}, "txn", atStart(3), len(committed), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]bool{}
	for _, r := range got {
		require.True(t, committed[string(r.Value)], "read_committed returned %q, which was aborted", r.Value)
		require.False(t, seen[string(r.Value)], "read twice: %q", r.Value)
		seen[string(r.Value)] = true
	}
	require.Len(t, seen, len(committed))

	everything := consumeKgo(t, []string{addr}, "txn", atStart(3), all, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	require.Len(t, everything, all, "read_uncommitted returns aborted records too")
}

// etlInstance runs a kgo GroupTransactSession that reads topic src and
// writes each record's value to dst in the transaction that commits its
// offset, until stop says so (checked after each committed transaction)
// or the context ends. If midway, it leaves its last transaction open
// (records produced, not ended) and closes, as a process dying mid-way.
func etlInstance(t *testing.T, addr, src, dst string, stop func(processed int) bool, midway bool) int {
	t.Helper()
	return runETL(t, etlOpts{addrs: []string{addr}, src: src, dst: dst, stop: stop, midway: midway, timeout: 2 * opTimeout})
}

// etlOpts configure runETL: beforeEnd, if set, runs once with the
// records of an open transaction produced and flushed, before its End,
// once processed reaches beforeEndAt.
type etlOpts struct {
	addrs       []string
	src, dst    string
	stop        func(processed int) bool
	midway      bool
	timeout     time.Duration
	beforeEndAt int
	beforeEnd   func()
}

func runETL(t *testing.T, o etlOpts) int {
	t.Helper()
	src, dst, stop, midway := o.src, o.dst, o.stop, o.midway
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(o.addrs...),
		kgo.DialTimeout(5*time.Second),
		kgo.RetryTimeout(opTimeout),
		kgo.TransactionalID("etl"),
		kgo.TransactionTimeout(30*time.Second),
		kgo.ConsumerGroup("etl-group"),
		kgo.ConsumeTopics(src),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.DefaultProduceTopic(dst),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	require.NoError(t, err)
	defer sess.Close()
	ctx := ctxFor(t, o.timeout)
	processed := 0
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := sess.PollRecords(pctx, 25)
		cancel()
		fetches.EachError(func(topic string, p int32, err error) {
			if err != context.DeadlineExceeded && err != context.Canceled {
				t.Logf("fetch %s[%d]: %v", topic, p, err)
			}
		})
		var recs []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		if len(recs) == 0 {
			if stop(processed) {
				return processed
			}
			continue
		}
		require.NoError(t, sess.Begin())
		for _, r := range recs {
			sess.Produce(ctx, &kgo.Record{Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Logf("produce: %v", err)
				}
			})
		}
		if midway && stop(processed) {
			// Records of an open transaction, then gone: the next
			// instance's InitProducerId aborts it.
			require.NoError(t, sess.Client().Flush(ctx))
			return processed
		}
		if o.beforeEnd != nil && processed >= o.beforeEndAt {
			require.NoError(t, sess.Client().Flush(ctx))
			o.beforeEnd()
			o.beforeEnd = nil
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Logf("End: %v", err)
			continue
		}
		if committed {
			processed += len(recs)
		}
		if stop(processed) {
			return processed
		}
	}
	require.NoError(t, ctx.Err(), "the ETL instance ran out of time")
	return processed
}

// TestKgoGroupTransactSession: a consume-transform-produce job (kgo's
// GroupTransactSession) copies topic A to topic B, committing its offsets
// in each transaction. It stops mid-way with a transaction open; a second
// instance with the same transactional id fences it, aborts that
// transaction, and goes on from the committed offsets. B read with
// read_committed holds each record of A exactly once.
func TestKgoGroupTransactSession(t *testing.T) {
	n := startNode(t, t.TempDir())
	addr := n.Addr()
	adm := newAdmin(t, addr)
	createTopic(t, adm, "etl-a", 3, nil)
	createTopic(t, adm, "etl-b", 3, nil)
	const total = 300
	prod := newClient(t, []string{addr}, kgo.DefaultProduceTopic("etl-a"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := 0; i < total; i++ {
		require.NoError(t, prod.ProduceSync(ctxFor(t, opTimeout), &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr())
	}

	first := etlInstance(t, addr, "etl-a", "etl-b", func(p int) bool { return p >= 50 }, true)
	require.Less(t, first, total, "the first instance stopped mid-way")
	second := 0
	etlInstance(t, addr, "etl-a", "etl-b", func(p int) bool { second = p; return first+p >= total }, false)
	t.Logf("first instance committed %d records, second %d", first, second)

	got := consumeKgo(t, []string{addr}, "etl-b", atStart(3), total, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	for _, r := range got {
		seen[string(r.Value)]++
	}
	for i := 0; i < total; i++ {
		require.Equal(t, 1, seen[strconv.Itoa(i)], "record %d of etl-a in etl-b", i)
	}
	requireCommitted(t, addr, "etl-group", "etl-a", map[int32]int64{0: total / 3, 1: total / 3, 2: total / 3})
}

// TestConfluentKafkaPythonTransactions: librdkafka's transactional
// Producer (python3-confluent-kafka) commits and aborts transactions; a
// read_committed Consumer reads exactly the committed records, a
// read_uncommitted one every record.
func TestConfluentKafkaPythonTransactions(t *testing.T) {
	python := confluentPython(t)
	n := startNode(t, t.TempDir())
	adm := newAdmin(t, n.Addr())
	createTopic(t, adm, "confluent-txn", 1, nil)

	commits := []bool{true, false, true, false, true}
	var txns []map[string]any
	committed, all := map[string]bool{}, 0
	for i, commit := range commits {
		var values [][]byte
		for j := 0; j < 5; j++ {
			v := fmt.Sprintf("py-%d-%d", i, j)
			values = append(values, []byte(v))
			if commit {
				committed[v] = true
			}
			all++
		}
		txns = append(txns, map[string]any{"commit": commit, "values": values})
	}
	var none struct{}
	runPython(t, python, "transactions", map[string]any{"bootstrap": n.Addr(), "topic": "confluent-txn", "transactional_id": "py-tx", "transactions": txns}, &none)

	read := func(isolation string, count int) []string {
		var resp struct{ Records []pyRecord }
		runPython(t, python, "consume", map[string]any{"bootstrap": n.Addr(), "topic": "confluent-txn",
			"config": map[string]any{"isolation.level": isolation}, "start": map[string]int64{"0": -2}, "count": count}, &resp)
		var out []string
		for _, r := range resp.Records {
			out = append(out, string(r.Value))
		}
		return out
	}
	// The last transaction committed: count committed records read the
	// partition past every aborted one.
	got := read("read_committed", len(committed))
	distinct := map[string]bool{}
	for _, v := range got {
		require.True(t, committed[v], "read_committed returned %q, which was aborted", v)
		distinct[v] = true
	}
	require.Len(t, distinct, len(committed))
	require.Len(t, read("read_uncommitted", all), all)
}

// TestGroupTransactSessionCoordinatorKilled: the ETL job of
// TestKgoGroupTransactSession on three node processes, every topic at
// replication factor 3; mid-transaction (records produced, offsets not yet
// committed) the node coordinating the transactional id is SIGKILLed. The
// job goes on against the new coordinator; etl-b read with read_committed
// holds each record of etl-a exactly once.
func TestGroupTransactSessionCoordinatorKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three node processes")
	}
	nodes := startProcessCluster(t, 3, "group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=3",
		"transaction.state.log.num.partitions=3")
	addrs := brokerAddrs(nodes)
	adm := newAdmin(t, addrs...)
	require.Eventually(t, func() bool {
		for _, p := range nodes {
			md, err := newAdmin(t, p.brokerAddr).BrokerMetadata(ctxFor(t, 2*time.Second))
			if err != nil || len(md.Brokers) != 3 {
				return false
			}
		}
		return true
	}, clusterReadyTimeout, 50*time.Millisecond, "not every broker's Metadata lists the three brokers")
	ctx := ctxFor(t, 2*opTimeout)
	for _, topic := range []string{"etl-a", "etl-b"} {
		resp, err := adm.CreateTopic(ctx, 3, 3, nil, topic)
		require.NoError(t, err)
		require.NoError(t, resp.Err)
		waitLeaders(t, adm, topic, 3)
		waitServed(t, adm, topic)
	}
	const total = 300
	prod := newClient(t, addrs, kgo.DefaultProduceTopic("etl-a"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := 0; i < total; i++ {
		require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr())
	}

	var alive []string
	killed := false
	kill := func() {
		coord := adm.FindTxnCoordinators(ctxFor(t, opTimeout), "etl")["etl"]
		require.NoError(t, coord.Err)
		for _, p := range nodes {
			if p.id == coord.NodeID {
				t.Logf("killing broker %d, the coordinator of the transactional id, mid-transaction", p.id)
				p.kill()
				killed = true
			} else {
				alive = append(alive, p.brokerAddr)
			}
		}
	}
	runETL(t, etlOpts{addrs: addrs, src: "etl-a", dst: "etl-b", timeout: 2 * rejoinTimeout,
		beforeEndAt: 50, beforeEnd: kill,
		stop: func(p int) bool { return p >= total }})
	require.True(t, killed, "the coordinator was never killed")

	got := consumeKgo(t, alive, "etl-b", atStart(3), total, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	for _, r := range got {
		seen[string(r.Value)]++
	}
	for i := 0; i < total; i++ {
		require.Equal(t, 1, seen[strconv.Itoa(i)], "record %d of etl-a in etl-b", i)
	}
}

// TestKafkaGoReadCommitted: kafka-go's Reader with IsolationLevel
// ReadCommitted stops at the last stable offset: it reads a committed
// transaction of a kgo producer, not the open one after it until that
// commits. kafka-go has no transactional producer, and its Reader neither
// drops aborted records (it ignores the AbortedTransactions list) nor
// hides control records: the test skips the markers by their shape (a
// 4-byte key, a 6-byte value) and writes no aborted transaction.
func TestKafkaGoReadCommitted(t *testing.T) {
	n := startNode(t, t.TempDir())
	addr := n.Addr()
	createTopic(t, newAdmin(t, addr), "kgrc", 1, nil)
	cl := newClient(t, []string{addr}, kgo.TransactionalID("tx-kafkago"), kgo.DefaultProduceTopic("kgrc"))
	txn := func(i int, end bool) []string {
		ctx := ctxFor(t, opTimeout)
		require.NoError(t, cl.BeginTransaction())
		var vs []string
		for j := 0; j < 5; j++ {
			v := fmt.Sprintf("t%d-%d", i, j)
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr())
			vs = append(vs, v)
		}
		if end {
			require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
		}
		return vs
	}
	first := txn(0, true)
	second := txn(1, false) // open

	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:        []string{addr},
		Topic:          "kgrc",
		Partition:      0,
		MinBytes:       1,
		MaxBytes:       4 << 20,
		MaxWait:        100 * time.Millisecond,
		IsolationLevel: kafka.ReadCommitted,
	})
	defer func() { require.NoError(t, r.Close()) }()
	read := func(want int, within time.Duration) []string {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		var got []string
		for len(got) < want {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				return got
			}
			if len(m.Key) == 4 && len(m.Value) == 6 {
				continue // a transaction marker
			}
			got = append(got, string(m.Value))
		}
		return got
	}
	require.Equal(t, first, read(len(first), opTimeout))
	require.Empty(t, read(1, 2*time.Second), "the open transaction lies past the last stable offset")
	require.NoError(t, cl.EndTransaction(ctxFor(t, opTimeout), kgo.TryCommit))
	require.Equal(t, second, read(len(second), opTimeout), "committed, it is readable")
	cl.Close()
}

// TestTxnPartitionVerification: KIP-890 part 1 on a real node, with raw
// requests (a client would never send them: it adds partitions first). A
// transactional batch to a partition the producer did not add to its
// transaction is refused and not appended; once added it is accepted.
// With transaction.partition.verification.enable=false (set as
// server.properties would) the same stray batch is appended.
func TestTxnPartitionVerification(t *testing.T) {
	for _, verify := range []bool{true, false} {
		t.Run(fmt.Sprintf("enable=%v", verify), func(t *testing.T) {
			n := startNodeWith(t, t.TempDir(), func(c *node.Config) {
				known, err := c.Set("transaction.partition.verification.enable", strconv.FormatBool(verify))
				require.True(t, known)
				require.NoError(t, err)
			})
			addr := n.Addr()
			adm := newAdmin(t, addr)
			createTopic(t, adm, "verify", 1, nil)
			cl := newClient(t, []string{addr})
			ctx := ctxFor(t, opTimeout)
			topics, err := adm.ListTopics(ctx, "verify")
			require.NoError(t, err)
			topicID := topics["verify"].ID // Produce v13 names topics by id

			var init *kmsg.InitProducerIDResponse
			require.Eventually(t, func() bool {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("tx-verify"), 30_000
				resp, err := req.RequestWith(ctx, cl)
				init = resp
				return err == nil && resp.ErrorCode == 0
			}, opTimeout, pollInterval, "InitProducerId")

			produce := func(seq int32, v string) int16 {
				t.Helper()
				b := record.NewBuilder(record.WithProducer(init.ProducerID, init.ProducerEpoch, seq), record.WithTransactional())
				b.Append(time.Now().UnixMilli(), nil, []byte(v))
				raw, err := b.AppendTo(nil)
				require.NoError(t, err)
				req := kmsg.NewPtrProduceRequest()
				req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr("tx-verify"), -1, 10_000
				req.Topics = []kmsg.ProduceRequestTopic{{Topic: "verify", TopicID: topicID, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: raw}}}}
				resp, err := req.RequestWith(ctx, cl)
				require.NoError(t, err)
				return resp.Topics[0].Partitions[0].ErrorCode
			}
			code := produce(0, "stray")
			ends, err := adm.ListEndOffsets(ctx, "verify")
			require.NoError(t, err)
			end, _ := ends.Lookup("verify", 0)
			if !verify {
				require.Zero(t, code, "%v", kerr.ErrorForCode(code))
				require.Equal(t, int64(1), end.Offset, "appended without asking")
				return
			}
			// kgo asks for the newest Produce version, which takes
			// TRANSACTION_ABORTABLE.
			require.Equal(t, kerr.TransactionAbortable.Code, code, "%v", kerr.ErrorForCode(code))
			require.Equal(t, int64(0), end.Offset, "nothing appended")

			add := kmsg.NewPtrAddPartitionsToTxnRequest()
			add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx-verify", init.ProducerID, init.ProducerEpoch
			add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "verify", Partitions: []int32{0}}}
			addResp, err := add.RequestWith(ctx, cl)
			require.NoError(t, err)
			require.Zero(t, addResp.Topics[0].Partitions[0].ErrorCode)
			require.Zero(t, produce(0, "added"))
		})
	}
}
