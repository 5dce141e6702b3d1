package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/internal/proccluster"
	"github.com/strata-log/strata/node"
)

// TestKgoTransactions: a kgo transactional producer runs six
// transactions over three partitions, committing some and aborting the
// others. A read_committed consumer sees exactly the committed records, a
// read_uncommitted one every record.
func TestKgoTransactions(t *testing.T) {
	forEachTxnVersion(t, testKgoTransactions)
}

// forEachTxnVersion runs test on a node of each transaction.version (1,
// the default: kgo adds partitions itself; 2: KIP-890 part 2, kgo leaves
// the adds to the brokers and every EndTxn bumps the epoch).
func forEachTxnVersion(t *testing.T, test func(t *testing.T, n *testNode)) {
	for _, v := range []string{"1", "2"} {
		t.Run("transaction.version="+v, func(t *testing.T) {
			test(t, startNodeWith(t, t.TempDir(), func(c *node.Config) {
				known, err := c.Set("strata.transaction.version", v)
				require.True(t, known)
				require.NoError(t, err)
			}))
		})
	}
}

func testKgoTransactions(t *testing.T, n *testNode) {
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

	requireReadCommitted(t, addr, "txn", 3, committed, all)
}

// requireReadCommitted reads topic's partitions after transactions of
// all records, the last of which committed on every partition: reading
// committed records until there are as many as were committed reads each
// partition past every aborted one, and must read each committed value
// once and no other; read_uncommitted reads all, aborted ones too.
func requireReadCommitted(t *testing.T, addr, topic string, partitions int32, committed map[string]bool, all int) {
	t.Helper()
	got := consumeKgo(t, []string{addr}, topic, atStart(partitions), len(committed), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]bool{}
	for _, r := range got {
		require.True(t, committed[string(r.Value)], "read_committed returned %q, which was aborted", r.Value)
		require.False(t, seen[string(r.Value)], "read twice: %q", r.Value)
		seen[string(r.Value)] = true
	}
	require.Len(t, seen, len(committed))

	everything := consumeKgo(t, []string{addr}, topic, atStart(partitions), all, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
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

// etlSessionOpts are the options of a consume-transform-produce
// GroupTransactSession of addrs: transactional id txnID in group, reading
// src read_committed (with stable offsets) and writing dst.
func etlSessionOpts(addrs []string, txnID, group, src, dst string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(addrs...),
		kgo.DialTimeout(5 * time.Second),
		kgo.RetryTimeout(opTimeout),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(30 * time.Second),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(src),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.DefaultProduceTopic(dst),
	}
}

// etlOpts configure runETL: each of faults runs once, in order, with the
// records of an open transaction produced and flushed, before its End,
// once processed reaches its at.
type etlOpts struct {
	addrs    []string
	src, dst string
	stop     func(processed int) bool
	midway   bool
	timeout  time.Duration
	faults   []etlFault
}

type etlFault struct {
	at int
	do func()
}

// runETL runs the job until stop says so. An End that fails ends the
// instance, as kgo's documentation says no End error is retryable: the
// job goes on in a new instance (its InitProducerId fences the old one
// and aborts what it left open), as a restarted process would.
func runETL(t *testing.T, o etlOpts) int {
	t.Helper()
	src, dst, stop, midway := o.src, o.dst, o.stop, o.midway
	newSession := func() *kgo.GroupTransactSession {
		sess, err := kgo.NewGroupTransactSession(append(etlSessionOpts(o.addrs, "etl", "etl-group", src, dst),
			kgo.FetchMaxWait(200*time.Millisecond))...)
		require.NoError(t, err)
		return sess
	}
	sess := newSession()
	defer func() { sess.Close() }()
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
		if len(o.faults) > 0 && processed >= o.faults[0].at {
			require.NoError(t, sess.Client().Flush(ctx))
			o.faults[0].do()
			o.faults = o.faults[1:]
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Logf("End: %v; going on in a new instance", err)
			sess.Close()
			sess = newSession()
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
	forEachTxnVersion(t, testKgoGroupTransactSession)
}

func testKgoGroupTransactSession(t *testing.T, n *testNode) {
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

// txnFaults drives the faults of the transactional tests on a process
// cluster of three nodes, every topic at replication factor 3 and
// min.insync.replicas 2, so that one node may be down at a time.
type txnFaults struct {
	t *testing.T
	c *proccluster.Cluster
	// down is the node killed last, -1 if none.
	down int32
}

func startTxnCluster(t *testing.T, extraProps ...string) *txnFaults {
	t.Helper()
	c := startProcessCluster(t, 3, append([]string{"group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=3",
		"transaction.state.log.num.partitions=3", "min.insync.replicas=2"}, extraProps...)...)
	return &txnFaults{t: t, c: c, down: -1}
}

// addrs are the brokers' addresses, the down node's left out.
func (f *txnFaults) addrs() []string { return f.c.BrokerAddrs(f.down) }

func (f *txnFaults) createTopic(topic string, partitions int32) {
	adm := newAdmin(f.t, f.addrs()...)
	resp, err := adm.CreateTopic(ctxFor(f.t, opTimeout), partitions, 3, nil, topic)
	require.NoError(f.t, err)
	require.NoError(f.t, resp.Err)
	waitLeaders(f.t, adm, topic, partitions)
	waitServed(f.t, adm, topic)
}

// kill SIGKILLs node id, restarting the node killed before first and
// waiting until every partition of topics has its three replicas in sync
// again, so that one node down leaves min.insync.replicas.
func (f *txnFaults) kill(id int32, why string, topics ...string) {
	t := f.t
	if f.down >= 0 {
		t.Logf("restarting broker %d", f.down)
		f.c.Restart(f.down)
		f.down = -1
		f.waitFullISR(topics...)
	}
	t.Logf("killing broker %d, %s", id, why)
	f.c.Node(id).Kill()
	f.down = id
}

func (f *txnFaults) waitFullISR(topics ...string) {
	adm := newAdmin(f.t, f.addrs()...)
	var last string
	require.Eventually(f.t, func() bool {
		tds, err := adm.ListTopics(ctxFor(f.t, 2*time.Second), topics...)
		if err != nil {
			last = err.Error()
			return false
		}
		for _, topic := range topics {
			td := tds[topic]
			if td.Err != nil {
				last = fmt.Sprintf("%s: %v", topic, td.Err)
				return false
			}
			for _, pd := range td.Partitions {
				if pd.Err != nil || len(pd.ISR) != 3 {
					last = fmt.Sprintf("%s[%d]: ISR %v, error %v", topic, pd.Partition, pd.ISR, pd.Err)
					return false
				}
			}
		}
		return true
	}, rejoinTimeout, 100*time.Millisecond, "the restarted broker did not rejoin every ISR of %v: %s", topics, &last)
}

// coordinator is the node coordinating transactional id tid.
func (f *txnFaults) coordinator(tid string) int32 {
	coord := newAdmin(f.t, f.addrs()...).FindTxnCoordinators(ctxFor(f.t, opTimeout), tid)[tid]
	require.NoError(f.t, coord.Err)
	return coord.NodeID
}

// leader is the leader of partition 0 of topic.
func (f *txnFaults) leader(topic string) int32 {
	tds, err := newAdmin(f.t, f.addrs()...).ListTopics(ctxFor(f.t, opTimeout), topic)
	require.NoError(f.t, err)
	require.NoError(f.t, tds[topic].Err)
	return tds[topic].Partitions[0].Leader
}

// TestGroupTransactSessionCoordinatorKilled: the ETL job of
// TestKgoGroupTransactSession on three node processes (txnFaults).
// Mid-transaction (records produced, offsets not yet committed) the node
// coordinating the transactional id is SIGKILLed; the job goes on against
// the new coordinator. Later the killed node restarts and, again
// mid-transaction, the leader of an output partition the open transaction
// wrote to is SIGKILLed: its marker, and the next transactions' writes, go
// to the partition's new leader. etl-b read with read_committed holds each
// record of etl-a exactly once.
func TestGroupTransactSessionCoordinatorKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three node processes")
	}
	f := startTxnCluster(t)
	f.createTopic("etl-a", 3)
	f.createTopic("etl-b", 3)
	const total = 400
	prod := newClient(t, f.addrs(), kgo.DefaultProduceTopic("etl-a"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := 0; i < total; i++ {
		require.NoError(t, prod.ProduceSync(ctxFor(t, opTimeout), &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr())
	}
	prod.Close()

	topics := []string{"etl-a", "etl-b", "__consumer_offsets", "__transaction_state"}
	faults := 0
	runETL(t, etlOpts{addrs: f.addrs(), src: "etl-a", dst: "etl-b", timeout: 3 * rejoinTimeout,
		faults: []etlFault{
			{at: 50, do: func() {
				f.kill(f.coordinator("etl"), "the coordinator of the transactional id, mid-transaction", topics...)
				faults++
			}},
			{at: 200, do: func() {
				f.kill(f.leader("etl-b"), "the leader of etl-b[0], mid-transaction", topics...)
				faults++
			}},
		},
		stop: func(p int) bool { return p >= total }})
	require.Equal(t, 2, faults, "not every fault ran")

	got := consumeKgo(t, f.addrs(), "etl-b", atStart(3), total, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	requireEachOnce(t, got, total)
}

// requireEachOnce checks that recs hold the values 0..total-1 once each,
// naming where each extra copy was read.
func requireEachOnce(t *testing.T, recs []rec, total int) {
	t.Helper()
	at := map[string][]string{}
	for _, r := range recs {
		v := string(r.Value)
		at[v] = append(at[v], fmt.Sprintf("%d@%d", r.Partition, r.Offset))
	}
	for i := 0; i < total; i++ {
		v := strconv.Itoa(i)
		require.Len(t, at[v], 1, "record %d of the input in the output, read at partition@offset %v", i, at[v])
	}
}

// TestConfluentKafkaPythonTransactionsUnderFaults: librdkafka's
// transactional Producer (python3-confluent-kafka) on three node processes
// (txnFaults) runs twelve transactions, committing two in three. With the
// records of transaction 3 delivered and before its commit, the
// transactional id's coordinator is SIGKILLed; before transaction 8's
// commit, the killed node restarts and the partition's leader is
// SIGKILLed. A commit the client cannot finish is aborted (librdkafka's
// txn_requires_abort); the script reports each transaction's outcome.
// read_committed then reads each record of the committed transactions
// exactly once and none of the others.
func TestConfluentKafkaPythonTransactionsUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three node processes")
	}
	python := confluentPython(t)
	f := startTxnCluster(t)
	const topic, tid = "py-eos", "py-eos-tx"
	f.createTopic(topic, 1)
	topics := []string{topic, "__transaction_state"}

	var txns []map[string]any
	for i := 0; i < 12; i++ {
		var values [][]byte
		for j := 0; j < 20; j++ {
			values = append(values, []byte(fmt.Sprintf("py-%d-%d", i, j)))
		}
		txns = append(txns, map[string]any{"commit": i%3 != 2, "values": values})
	}
	dir := t.TempDir()
	faults := map[int]func(){
		3: func() {
			f.kill(f.coordinator(tid), "the coordinator of the transactional id, before a commit", topics...)
		},
		8: func() { f.kill(f.leader(topic), "the partition's leader, before a commit", topics...) },
	}
	in, err := json.Marshal(map[string]any{"bootstrap": strings.Join(f.addrs(), ","), "topic": topic, "transactional_id": tid,
		"transactions": txns, "pause_at": []int{3, 8}, "pause_dir": dir, "timeout": 2 * rejoinTimeout.Seconds()})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 4*rejoinTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join("testdata", "confluent_interop.py"), "transactions")
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for _, at := range []int{3, 8} {
		paused := filepath.Join(dir, fmt.Sprintf("paused-%d", at))
		for {
			if _, err := os.Stat(paused); err == nil {
				break
			}
			select {
			case err := <-done:
				require.FailNow(t, "the script ended before its pause", "pause %d: %v; stderr:\n%s", at, err, stderr.String())
			case <-time.After(pollInterval):
			}
		}
		faults[at]()
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("resume-%d", at)), nil, 0o644))
	}
	require.NoError(t, <-done, "confluent_interop.py transactions; stderr:\n%s", stderr.String())
	var resp struct{ Outcomes []string }
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &resp), "output:\n%s", stdout.String())
	require.Len(t, resp.Outcomes, len(txns))
	t.Logf("outcomes: %v", resp.Outcomes)

	committed := map[string]bool{}
	for i, o := range resp.Outcomes {
		require.Contains(t, []string{"committed", "aborted"}, o)
		if !txns[i]["commit"].(bool) {
			require.Equal(t, "aborted", o, "transaction %d was to abort", i)
		}
		if o == "committed" {
			for _, v := range txns[i]["values"].([][]byte) {
				committed[string(v)] = true
			}
		}
	}
	require.NotEmpty(t, committed)
	got := consumeKgo(t, f.addrs(), topic, atStart(1), len(committed), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	for _, r := range got {
		v := string(r.Value)
		require.True(t, committed[v], "read_committed returned %q, of a transaction that did not commit", v)
		seen[v]++
		require.Equal(t, 1, seen[v], "read_committed returned %q twice", v)
	}
	require.Len(t, seen, len(committed))
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
			// Produce v11: a client of KIP-890 part 1 only, which adds
			// its partitions itself (from v12 under transaction.version
			// 2 the leader would add it: TestImplicitAdds in core/broker).
			v11 := kversion.Stable()
			v11.SetMaxKeyVersion(int16(kmsg.Produce), 11)
			cl := newClient(t, []string{addr}, kgo.MaxVersions(v11))
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
			// Produce v11 takes TRANSACTION_ABORTABLE.
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
