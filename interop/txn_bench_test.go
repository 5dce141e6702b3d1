package interop

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-log/strata/internal/proccluster"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The exactly-once benchmarks of docs/benchmarks.md (issue 13), each on
// one node process (startTxnBenchNode) with kgo clients in the test, every
// mode of a run beside its baseline and the order of the modes rotated
// from run to run:
//
//   - idempotent produce throughput against non-idempotent produce (acks=all
//     both; without idempotence once with kgo's default of one produce
//     request in flight per broker and once with five, as an idempotent kgo
//     producer has);
//   - consume-transform-produce throughput of a kgo GroupTransactSession
//     committing every 100 ms and every second, against the same pipeline
//     without transactions (a group consumer and a producer, offsets
//     committed after a flush at the same interval);
//   - latency from Produce to a read_committed consumer receiving the
//     record, for one record per transaction (with kgo's default
//     CONCURRENT_TRANSACTIONS backoff and with 1 ms) and for a transaction
//     every 100 ms, against a read_uncommitted consumer of a plain
//     producer.
//
// They run only with STRATA_TXN_BENCH_RUNS=N (`make bench-txn RUNS=N`).

const (
	benchTxnRecordBytes = 1 << 10
	// benchTxnPartitions is the topics' partition count, as `strata
	// bench`'s.
	benchTxnPartitions = 6
	// benchProducePhase is how long one produce mode runs per run.
	benchProducePhase = 5 * time.Second
	// benchProduceBytesMax also ends a produce phase (disk use).
	benchProduceBytesMax = 2 << 30
	// benchCTPInputRecords is the pre-filled input of the
	// consume-transform-produce benchmark (1 KiB records: 1 GiB).
	benchCTPInputRecords = 1 << 20
	// benchCTPPhase bounds one pipeline's run after its first record.
	benchCTPPhase = 5 * time.Second
	// benchLatencyPhase is how long one latency mode produces;
	// benchLatencyWarmup of it is left out of the figures.
	benchLatencyPhase  = 5 * time.Second
	benchLatencyWarmup = 500 * time.Millisecond
	// benchLatencyRate is the records per second of the paced latency
	// modes, as `strata bench`'s phase 3.
	benchLatencyRate = 1000
	// benchTxnWait bounds a phase beyond its own length (the final
	// flush and commit; the consumer catching up).
	benchTxnWait = time.Minute
)

// txnBench is what every exactly-once benchmark starts with: its number of
// runs, its node with an admin client, and the values of its records.
type txnBench struct {
	runs   int
	node   txnBenchNode
	adm    *kadm.Client
	values [][]byte
}

// startTxnBench skips the test unless STRATA_TXN_BENCH_RUNS asks for runs
// (proccluster.BenchRuns), and starts its node.
func startTxnBench(t *testing.T) txnBench {
	t.Helper()
	runs := proccluster.BenchRuns(t, "STRATA_TXN_BENCH_RUNS", "bench-txn")
	n := startTxnBenchNode(t)
	return txnBench{runs: runs, node: n, adm: newAdmin(t, n.addr), values: benchValues(t)}
}

// txnBenchNode is the benchmarks' node: one combined broker+controller
// in a child process, as `strata bench` runs it, so that the clients'
// CPU and garbage collection are not the broker's. With
// STRATA_TXN_BENCH_PPROF=host:port its metrics listener is there with
// /debug/pprof on.
type txnBenchNode struct {
	addr string
	pid  int
}

func startTxnBenchNode(t *testing.T) txnBenchNode {
	t.Helper()
	props := []string{"group.initial.rebalance.delay.ms=0"}
	// STRATA_TXN_BENCH_PROPS adds server.properties lines, comma
	// separated (strata.transaction.version=2, say).
	if extra := os.Getenv("STRATA_TXN_BENCH_PROPS"); extra != "" {
		props = append(props, strings.Split(extra, ",")...)
	}
	if addr := os.Getenv("STRATA_TXN_BENCH_PPROF"); addr != "" {
		props = append(props, "metrics.listener="+addr, "strata.debug.pprof.enable=true")
	}
	p := startProcessCluster(t, 1, props...).Nodes[0]
	return txnBenchNode{addr: p.BrokerAddr, pid: p.Pid()}
}

// cpuSeconds is the node process's user+system CPU time so far.
func (n txnBenchNode) cpuSeconds(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.pid))
	require.NoError(t, err)
	// The fields after the command name (which may hold spaces), from
	// field 3 on: utime and stime are fields 14 and 15, in clock ticks
	// of 100 per second on Linux.
	_, rest, ok := strings.Cut(string(b), ") ")
	require.True(t, ok, "/proc/%d/stat: %q", n.pid, b)
	f := strings.Fields(rest)
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	require.NoError(t, errors.Join(err1, err2))
	return (utime + stime) / 100
}

// benchOnly is STRATA_TXN_BENCH_ONLY: when set, only the produce modes
// whose name starts with one of its "|"-separated prefixes run (to
// profile one, or to run more of two).
func benchOnly(name string) bool {
	only := os.Getenv("STRATA_TXN_BENCH_ONLY")
	if only == "" {
		return true
	}
	return slices.ContainsFunc(strings.Split(only, "|"), func(p string) bool { return strings.HasPrefix(name, p) })
}

// benchValues are random 1 KiB values shared by the records.
func benchValues(t *testing.T) [][]byte {
	t.Helper()
	const n = 1024
	buf := make([]byte, n*benchTxnRecordBytes)
	_, err := crand.Read(buf)
	require.NoError(t, err)
	values := make([][]byte, n)
	for i := range values {
		values[i] = buf[i*benchTxnRecordBytes : (i+1)*benchTxnRecordBytes : (i+1)*benchTxnRecordBytes]
	}
	return values
}

// benchProducerOpts are `strata bench`'s phase 1 producer settings:
// acks=all, linger 5 ms, 1 MiB batches, no compression.
func benchProducerOpts(linger time.Duration) []kgo.Opt {
	return []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(linger),
		kgo.ProducerBatchMaxBytes(1 << 20),
		kgo.MaxBufferedRecords(128 << 10),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(benchTxnWait),
	}
}

func newBenchClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTimeout(5 * time.Second), kgo.RetryTimeout(opTimeout)}, opts...)...)
	require.NoError(t, err)
	return cl
}

// produceErrors keeps the first error kgo reports to a produce promise.
type produceErrors struct{ first atomic.Pointer[error] }

// promise is a kgo produce promise that keeps the first error.
func (e *produceErrors) promise(_ *kgo.Record, err error) {
	if err != nil {
		e.first.CompareAndSwap(nil, &err)
	}
}

// failed reports whether a produce has failed.
func (e *produceErrors) failed() bool { return e.first.Load() != nil }

// require fails t with the first error, if there was one.
func (e *produceErrors) require(t *testing.T, msgAndArgs ...any) {
	t.Helper()
	if p := e.first.Load(); p != nil {
		require.NoError(t, *p, msgAndArgs...)
	}
}

func deleteTopics(t *testing.T, adm *kadm.Client, topics ...string) {
	t.Helper()
	_, err := adm.DeleteTopics(ctxFor(t, opTimeout), topics...)
	require.NoError(t, err)
}

// produceThroughput produces values round robin as fast as the client
// goes for d (or benchProduceBytesMax), then flushes, and returns the
// MiB/s of acknowledged values, the flush included, and their bytes.
func produceThroughput(t *testing.T, addr, topic string, values [][]byte, d time.Duration, opts ...kgo.Opt) (float64, int64) {
	t.Helper()
	cl := newBenchClient(t, addr, append(append(benchProducerOpts(5*time.Millisecond), kgo.DefaultProduceTopic(topic)), opts...)...)
	defer cl.Close()
	ctx := ctxFor(t, d+benchTxnWait)
	var ackedBytes atomic.Int64
	var errs produceErrors
	promise := func(r *kgo.Record, err error) {
		errs.promise(r, err)
		if err == nil {
			ackedBytes.Add(int64(len(r.Value)))
		}
	}
	start := time.Now()
	var sent int64
	for i := 0; sent < benchProduceBytesMax && time.Since(start) < d && !errs.failed(); i++ {
		v := values[i%len(values)]
		cl.Produce(ctx, &kgo.Record{Value: v}, promise)
		sent += int64(len(v))
	}
	require.NoError(t, cl.Flush(ctx))
	elapsed := time.Since(start)
	errs.require(t)
	return float64(ackedBytes.Load()) / (1 << 20) / elapsed.Seconds(), ackedBytes.Load()
}

// benchMode is one mode of a benchmark.
type benchMode struct {
	name string
	opts []kgo.Opt
}

// rotation is the order in which run visits a benchmark's n modes (their
// indexes): starting at a different one each run.
func rotation(n, run int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = (run + i) % n
	}
	return order
}

// TestIdempotentProduceBenchmark: idempotent produce throughput as a
// ratio of non-idempotent produce on the same node, the same topic shape
// (6 partitions, RF 1) and the same records (1 KiB), acks=all in every
// mode. A fresh topic per mode and run.
func TestIdempotentProduceBenchmark(t *testing.T) {
	b := startTxnBench(t)
	runs, n, addr, adm, values := b.runs, b.node, b.node.addr, b.adm, b.values
	modes := []benchMode{
		{name: "idempotent"},
		{name: "non-idempotent, 1 in flight (kgo's default)", opts: []kgo.Opt{kgo.DisableIdempotentWrite()}},
		{name: "non-idempotent, 5 in flight", opts: []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5)}},
	}
	modes = slices.DeleteFunc(modes, func(m benchMode) bool { return !benchOnly(m.name) })
	mibs, cpu := map[string][]float64{}, map[string][]float64{}
	for run := 0; run < runs; run++ {
		for _, i := range rotation(len(modes), run) {
			m := modes[i]
			topic := fmt.Sprintf("idem-%d-%d", run, i)
			createTopic(t, adm, topic, benchTxnPartitions, nil)
			before := n.cpuSeconds(t)
			got, bytes := produceThroughput(t, addr, topic, values, benchProducePhase, m.opts...)
			perGiB := (n.cpuSeconds(t) - before) / (float64(bytes) / (1 << 30))
			deleteTopics(t, adm, topic)
			mibs[m.name] = append(mibs[m.name], got)
			cpu[m.name] = append(cpu[m.name], perGiB)
			t.Logf("run %d/%d %s: %.1f MiB/s, broker %.2f CPU s/GiB", run+1, runs, m.name, got, perGiB)
		}
	}
	var lines []string
	for _, m := range modes {
		lines = append(lines, summarizeFloat(m.name+" produce MiB/s", mibs[m.name], "%.1f"),
			summarizeFloat(m.name+" broker CPU s per GiB", cpu[m.name], "%.2f"))
	}
	if idem := mibs[modes[0].name]; modes[0].opts == nil {
		for _, m := range modes[1:] {
			lines = append(lines, summarizeFloat("ratio idempotent / "+m.name, ratios(idem, mibs[m.name]), "%.3f"))
		}
	}
	printBench(t, lines)
}

// ctpResult is one consume-transform-produce run: records and bytes of
// input whose output and offsets were committed, from the first record
// polled to the last commit.
type ctpResult struct {
	records, bytes int64
	commits        int
	elapsed        time.Duration
}

func (r ctpResult) recordsPerSec() float64 { return float64(r.records) / r.elapsed.Seconds() }
func (r ctpResult) mibPerSec() float64     { return float64(r.bytes) / (1 << 20) / r.elapsed.Seconds() }

// ctpLoop is the pipeline's loop, for either client: poll, produce each
// record's key and value to the output, and every interval end (commit)
// what was produced and polled; it stops once it has committed total
// records or benchCTPPhase has passed since the first record.
func ctpLoop(t *testing.T, total int64, interval time.Duration,
	poll func(context.Context) kgo.Fetches, begin func() error,
	produce func(context.Context, *kgo.Record, func(*kgo.Record, error)),
	end func(context.Context) (bool, error)) ctpResult {
	t.Helper()
	ctx := ctxFor(t, benchCTPPhase+benchTxnWait)
	var res ctpResult
	var errs produceErrors
	var start, intervalStart time.Time
	var open bool
	var inTxn, inTxnBytes int64
	for {
		stopping := !start.IsZero() && (time.Since(start) >= benchCTPPhase || res.records+inTxn >= total)
		if !stopping {
			pctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			fetches := poll(pctx)
			cancel()
			fetches.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					require.NoError(t, err, "fetch %s[%d]", topic, p)
				}
			})
			require.NoError(t, ctx.Err(), "the pipeline ran out of time")
			if fetches.NumRecords() > 0 && !open {
				require.NoError(t, begin())
				open = true
				intervalStart = time.Now()
				if start.IsZero() {
					start = intervalStart
				}
			}
			fetches.EachRecord(func(r *kgo.Record) {
				produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, errs.promise)
				inTxn++
				inTxnBytes += int64(len(r.Value))
			})
		}
		if open && (stopping || time.Since(intervalStart) >= interval) {
			committed, err := end(ctx)
			require.NoError(t, err, "committing")
			errs.require(t, "produce")
			require.True(t, committed, "a transaction was aborted (a rebalance?)")
			res.records += inTxn
			res.bytes += inTxnBytes
			res.commits++
			inTxn, inTxnBytes, open = 0, 0, false
			res.elapsed = time.Since(start)
		}
		if stopping && !open {
			return res
		}
	}
}

// ctpTransactional is the pipeline as a kgo GroupTransactSession.
func ctpTransactional(t *testing.T, addr, in, out, group string, interval time.Duration, total int64) ctpResult {
	t.Helper()
	sess, err := kgo.NewGroupTransactSession(append(benchProducerOpts(5*time.Millisecond),
		etlSessionOpts([]string{addr}, group, group, in, out)...)...)
	require.NoError(t, err)
	defer sess.Close()
	return ctpLoop(t, total, interval,
		func(ctx context.Context) kgo.Fetches { return sess.PollFetches(ctx) },
		sess.Begin, sess.Produce,
		func(ctx context.Context) (bool, error) { return sess.End(ctx, kgo.TryCommit) })
}

// ctpPlain is the same pipeline without transactions: a group consumer
// and an (idempotent) producer on one client; every interval it flushes
// the output, then commits the offsets polled (at least once).
func ctpPlain(t *testing.T, addr, in, out, group string, interval time.Duration, total int64) ctpResult {
	t.Helper()
	cl := newBenchClient(t, addr, append(benchProducerOpts(5*time.Millisecond),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.DisableAutoCommit(),
		kgo.DefaultProduceTopic(out))...)
	defer cl.Close()
	return ctpLoop(t, total, interval, cl.PollFetches, func() error { return nil }, cl.Produce,
		func(ctx context.Context) (bool, error) {
			if err := cl.Flush(ctx); err != nil {
				return false, err
			}
			return true, cl.CommitUncommittedOffsets(ctx)
		})
}

// TestTransactBenchmark: consume-transform-produce throughput at commit
// intervals of 100 ms and 1 s, transactional and not. Each run fills a
// fresh input topic (1 GiB of 1 KiB records over 6 partitions); every
// pipeline of the run reads it from the start in a group of its own and
// writes an output topic of its own.
func TestTransactBenchmark(t *testing.T) {
	b := startTxnBench(t)
	runs, addr, adm, values := b.runs, b.node.addr, b.adm, b.values
	type pipeline struct {
		name     string
		interval time.Duration
		run      func(t *testing.T, addr, in, out, group string, interval time.Duration, total int64) ctpResult
	}
	pipelines := []pipeline{
		{"transactional, commit every 100ms", 100 * time.Millisecond, ctpTransactional},
		{"plain, commit every 100ms", 100 * time.Millisecond, ctpPlain},
		{"transactional, commit every 1s", time.Second, ctpTransactional},
		{"plain, commit every 1s", time.Second, ctpPlain},
	}
	results := map[string][]ctpResult{}
	for run := 0; run < runs; run++ {
		in := fmt.Sprintf("ctp-in-%d", run)
		createTopic(t, adm, in, benchTxnPartitions, nil)
		fill := newBenchClient(t, addr, append(benchProducerOpts(5*time.Millisecond), kgo.DefaultProduceTopic(in))...)
		ctx := ctxFor(t, benchTxnWait)
		var errs produceErrors
		for i := 0; i < benchCTPInputRecords && !errs.failed(); i++ {
			fill.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: values[i%len(values)]}, errs.promise)
		}
		require.NoError(t, fill.Flush(ctx))
		fill.Close()
		errs.require(t, "filling the input")
		for _, i := range rotation(len(pipelines), run) {
			p := pipelines[i]
			out := fmt.Sprintf("ctp-out-%d-%d", run, i)
			createTopic(t, adm, out, benchTxnPartitions, nil)
			res := p.run(t, addr, in, out, fmt.Sprintf("ctp-%d-%d", run, i), p.interval, benchCTPInputRecords)
			deleteTopics(t, adm, out)
			results[p.name] = append(results[p.name], res)
			t.Logf("run %d/%d %s: %d records in %d commits, %v: %.0f records/s, %.1f MiB/s",
				run+1, runs, p.name, res.records, res.commits, res.elapsed.Round(time.Millisecond), res.recordsPerSec(), res.mibPerSec())
		}
		deleteTopics(t, adm, in)
	}
	var lines []string
	for _, p := range pipelines {
		var rps, mib, commits []float64
		for _, r := range results[p.name] {
			rps = append(rps, r.recordsPerSec())
			mib = append(mib, r.mibPerSec())
			commits = append(commits, float64(r.commits)/r.elapsed.Seconds())
		}
		lines = append(lines, summarizeFloat("consume-transform-produce "+p.name+" records/s", rps, "%.0f"),
			summarizeFloat("consume-transform-produce "+p.name+" MiB/s", mib, "%.1f"),
			summarizeFloat("consume-transform-produce "+p.name+" commits/s", commits, "%.2f"))
	}
	for i := 0; i < len(pipelines); i += 2 {
		txn, plain := results[pipelines[i].name], results[pipelines[i+1].name]
		var txnRate, plainRate []float64
		for j := range txn {
			txnRate = append(txnRate, txn[j].recordsPerSec())
			plainRate = append(plainRate, plain[j].recordsPerSec())
		}
		lines = append(lines, summarizeFloat("consume-transform-produce ratio "+pipelines[i].name+" / "+pipelines[i+1].name, ratios(txnRate, plainRate), "%.3f"))
	}
	printBench(t, lines)
}

// sendTimes are the times just before each record's Produce, by its key.
type sendTimes struct {
	mu    sync.Mutex
	times []time.Time
}

func (s *sendTimes) add(at time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.times = append(s.times, at)
	return len(s.times) - 1
}

func (s *sendTimes) get(i int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.times[i]
}

func (s *sendTimes) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.times)
}

// latencyConsumer reads partition 0 of topic from the start with
// isolation until stop is closed and it has read want() records, and
// returns, for each record sent after warmup from, the time from just
// before its Produce to its arrival at the consumer.
func latencyConsumer(t *testing.T, addr, topic string, isolation kgo.IsolationLevel, sent *sendTimes, from time.Time,
	stop <-chan struct{}) (<-chan []time.Duration, <-chan error) {
	t.Helper()
	cl := newBenchClient(t, addr, kgo.FetchIsolationLevel(isolation),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	out, errc := make(chan []time.Duration, 1), make(chan error, 1)
	go func() {
		defer cl.Close()
		var lat []time.Duration
		read := 0
		stopped := false
		ctx, cancel := context.WithTimeout(context.Background(), benchLatencyPhase+benchTxnWait)
		defer cancel()
		for !stopped || read < sent.len() {
			select {
			case <-stop:
				stopped = true
			default:
			}
			pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
			fetches := cl.PollFetches(pctx)
			pcancel()
			now := time.Now()
			if ctx.Err() != nil {
				errc <- fmt.Errorf("read %d of %d records: %w", read, sent.len(), ctx.Err())
				return
			}
			var ferr error
			fetches.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					ferr = err
				}
			})
			if ferr != nil {
				errc <- ferr
				return
			}
			fetches.EachRecord(func(r *kgo.Record) {
				read++
				i, err := strconv.Atoi(string(r.Key))
				if err != nil {
					ferr = err
					return
				}
				if at := sent.get(i); !at.Before(from) {
					lat = append(lat, now.Sub(at))
				}
			})
			if ferr != nil {
				errc <- ferr
				return
			}
		}
		out <- lat
	}()
	return out, errc
}

// latencyMode produces to topic for benchLatencyPhase: paced at
// benchLatencyRate records/s (txnEvery > 0: in a transaction committed
// every txnEvery; 0: without transactions), or, with perTxn, one record
// per transaction, each begun once the previous committed.
type latencyMode struct {
	name        string
	txnEvery    time.Duration
	perTxn      bool
	transaction bool
	opts        []kgo.Opt // more producer options
}

// concurrentTxnRetries counts kgo's debug lines about a request it
// retries after CONCURRENT_TRANSACTIONS (the coordinator still finishing
// the previous transaction); kgo backs off 20 ms by default before each.
type concurrentTxnRetries struct{ n atomic.Int64 }

func (c *concurrentTxnRetries) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (c *concurrentTxnRetries) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if strings.Contains(msg, "CONCURRENT_TRANSACTIONS") {
		c.n.Add(1)
	}
}

// runLatencyMode runs m on a fresh topic and returns the latencies of
// the records past the warmup and, for a transactional producer, how
// many requests kgo retried after CONCURRENT_TRANSACTIONS.
func runLatencyMode(t *testing.T, addr, topic string, m latencyMode, values [][]byte) ([]time.Duration, int64) {
	t.Helper()
	opts := append(benchProducerOpts(0), kgo.DefaultProduceTopic(topic))
	isolation := kgo.ReadUncommitted()
	retries := &concurrentTxnRetries{}
	if m.transaction {
		opts = append(opts, kgo.TransactionalID(topic), kgo.TransactionTimeout(30*time.Second), kgo.WithLogger(retries))
		isolation = kgo.ReadCommitted()
	}
	opts = append(opts, m.opts...)
	cl := newBenchClient(t, addr, opts...)
	defer cl.Close()
	ctx := ctxFor(t, benchLatencyPhase+benchTxnWait)
	var errs produceErrors
	sent := &sendTimes{}
	stop := make(chan struct{})
	start := time.Now()
	lats, errc := latencyConsumer(t, addr, topic, isolation, sent, start.Add(benchLatencyWarmup), stop)
	produce := func(i int) {
		at := time.Now()
		key := strconv.Itoa(sent.add(at))
		cl.Produce(ctx, &kgo.Record{Key: []byte(key), Value: values[i%len(values)]}, errs.promise)
	}
	interval := time.Second / benchLatencyRate
	var txnStart time.Time
	for i := 0; time.Since(start) < benchLatencyPhase && !errs.failed(); i++ {
		if m.perTxn {
			require.NoError(t, cl.BeginTransaction())
			produce(i)
			require.NoError(t, cl.Flush(ctx)) // EndTransaction does not flush
			require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
			continue
		}
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		if m.transaction && txnStart.IsZero() {
			require.NoError(t, cl.BeginTransaction())
			txnStart = time.Now()
		}
		produce(i)
		if m.transaction && time.Since(txnStart) >= m.txnEvery {
			require.NoError(t, cl.Flush(ctx))
			require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
			txnStart = time.Time{}
		}
	}
	require.NoError(t, cl.Flush(ctx))
	if !txnStart.IsZero() {
		require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
	}
	errs.require(t, "produce")
	close(stop)
	select {
	case lat := <-lats:
		return lat, retries.n.Load()
	case err := <-errc:
		require.NoError(t, err, "the consumer")
	}
	return nil, 0
}

// TestTxnLatencyBenchmark: latency from just before Produce to a
// consumer receiving the record: read_committed behind a transactional
// producer (one record per transaction, back to back; and 1,000 records/s
// in a transaction committed every 100 ms), against read_uncommitted
// behind a plain producer at 1,000 records/s. Linger 0, 1 KiB records,
// one partition, a fresh topic per mode and run.
func TestTxnLatencyBenchmark(t *testing.T) {
	b := startTxnBench(t)
	runs, addr, adm, values := b.runs, b.node.addr, b.adm, b.values
	modes := []latencyMode{
		{name: "read_uncommitted, plain producer at 1000 records/s (baseline)"},
		{name: "read_committed, one record per transaction", transaction: true, perTxn: true},
		{name: "read_committed, one record per transaction, kgo ConcurrentTransactionsBackoff 1ms", transaction: true, perTxn: true,
			opts: []kgo.Opt{kgo.ConcurrentTransactionsBackoff(time.Millisecond)}},
		{name: "read_committed, 1000 records/s, a commit every 100ms", transaction: true, txnEvery: 100 * time.Millisecond},
	}
	p50, p99, count, retries := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	for run := 0; run < runs; run++ {
		for _, i := range rotation(len(modes), run) {
			m := modes[i]
			topic := fmt.Sprintf("lat-%d-%d", run, i)
			createTopic(t, adm, topic, 1, nil)
			lat, retried := runLatencyMode(t, addr, topic, m, values)
			deleteTopics(t, adm, topic)
			require.NotEmpty(t, lat, m.name)
			p50[m.name] = append(p50[m.name], quantileMs(lat, 0.50))
			p99[m.name] = append(p99[m.name], quantileMs(lat, 0.99))
			count[m.name] = append(count[m.name], float64(len(lat)))
			retries[m.name] = append(retries[m.name], float64(retried))
			t.Logf("run %d/%d %s: %d records, p50 %.2f ms, p99 %.2f ms, %d CONCURRENT_TRANSACTIONS retries", run+1, runs, m.name, len(lat),
				p50[m.name][run], p99[m.name][run], retried)
		}
	}
	var lines []string
	for _, m := range modes {
		lines = append(lines, summarizeFloat("latency "+m.name+" p50 ms", p50[m.name], "%.2f"),
			summarizeFloat("latency "+m.name+" p99 ms", p99[m.name], "%.2f"),
			summarizeFloat("latency "+m.name+" records timed", count[m.name], "%.0f"))
		if m.transaction {
			lines = append(lines, summarizeFloat("latency "+m.name+" kgo retries after CONCURRENT_TRANSACTIONS", retries[m.name], "%.0f"))
		}
	}
	base := modes[0].name
	for _, m := range modes[1:] {
		lines = append(lines, summarizeFloat("latency ratio p50 "+m.name+" / baseline", ratios(p50[m.name], p50[base]), "%.2f"),
			summarizeFloat("latency ratio p99 "+m.name+" / baseline", ratios(p99[m.name], p99[base]), "%.2f"))
	}
	printBench(t, lines)
}

// quantileMs is the q-quantile of ds (nearest rank) in milliseconds.
func quantileMs(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := max(1, int(math.Ceil(q*float64(len(s)))))
	return float64(s[rank-1]) / float64(time.Millisecond)
}

// ratios is a[i]/b[i] for each run i.
func ratios(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] / b[i]
	}
	return out
}

// summarizeFloat is "name: N runs, median M [min, max] (runs: ...)" with
// the figures in format.
func summarizeFloat(name string, xs []float64, format string) string {
	each := make([]string, len(xs))
	for i, x := range xs {
		each[i] = fmt.Sprintf(format, x)
	}
	return fmt.Sprintf("%s: %d runs, median "+format+" ["+format+", "+format+"] (runs: %s)",
		name, len(xs), proccluster.Median(xs), slices.Min(xs), slices.Max(xs), strings.Join(each, ", "))
}

func printBench(t *testing.T, lines []string) {
	t.Helper()
	for _, l := range lines {
		t.Log(l)
		fmt.Println(l)
	}
}
