package proccluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-log/strata/linearizability"
)

// Bounds of the recorded workload of the real-process fault tests.
const (
	// workloadProduceInterval paces each producer: one record per
	// interval, so a run of about 40 s stays near 3,000 records per
	// producer and the porcupine check stays cheap.
	workloadProduceInterval = 10 * time.Millisecond
	// workloadMaxInflight bounds each producer's unacknowledged records;
	// while a partition has no leader, the producer waits instead of
	// buffering without end.
	workloadMaxInflight = 200
	// workloadFlushTimeout bounds the wait for every produced record's
	// outcome once the cluster is healed.
	workloadFlushTimeout = 60 * time.Second
	// workloadCatchUpTimeout bounds the wait for the concurrent consumers
	// (and the final reader) to reach the high watermark after the heal.
	workloadCatchUpTimeout = 60 * time.Second
	// workloadMaxViolations is how many check violations are kept for the
	// report (Anomalies counts them all).
	workloadMaxViolations = 10
)

// logWorkload runs kgo producers (acks=all, idempotent, one unique value
// per record) and kgo consumers against a topic of a real cluster and
// records everything they observe, from their goroutines, into one
// linearizability.LogHistory (the Jepsen-style checks and anomalies) and
// one LogOps (the porcupine model of a partition log), both behind mu.
//
// What kgo shows and what it hides:
//
//   - kgo batches and retries records internally and does not report
//     individual sends: each record is its own build (its value), with one
//     recorded send whose outcome is the record's promise. An error from
//     the promise cannot be told apart from a send that reached the log
//     (an idempotent retry after a lost answer, say), so every failure is
//     recorded as LogUnknown with the error as detail, never as a definite
//     rejection. Producers retry without limit (kgo's default for
//     produce), so failures come only from the client closing.
//   - Each FetchPartition kgo returns comes from one fetch response, and
//     its HighWatermark is that response's: the records of a fetch are
//     recorded with ReadWithHW.
//   - The call time of a consumer's read is the return of its previous
//     poll (kgo fetches ahead, so the fetch may have been sent earlier);
//     the model has only reads that found a record, which hold at any
//     instant after the append, so a late call time is sound.
type logWorkload struct {
	t          *testing.T
	topic      string
	partitions int32
	seeds      []string
	dialer     func(ctx context.Context, network, host string) (net.Conn, error) // nil: kgo's
	// producerOpts are more options of startProducer's clients.
	producerOpts []kgo.Opt
	begin        time.Time

	mu         sync.Mutex
	history    *linearizability.LogHistory
	ops        linearizability.LogOps
	violations []error
	acked      int
	unknown    int
	// reads records what the consumers read: their sessions (a new one
	// where kgo moves the position, data loss detected), the next offset
	// of each, the fetch errors.
	reads *KgoReads

	ackedBy   map[string]int // by producer
	unknownBy map[string]int // by producer
	ackedIn   []int          // by partition

	// stopProducersFns stop the producers startProducer started;
	// stopConsume ends the consumers' goroutines, counted by consuming.
	stopProducersFns []func()
	stopConsume      chan struct{}
	consuming        sync.WaitGroup
	stopConsuming    sync.Once
	// clients numbers porcupine's clients: producers and readers.
	clients int
}

func newLogWorkload(t *testing.T, topic string, partitions int32, seeds []string) *logWorkload {
	w := &logWorkload{t: t, topic: topic, partitions: partitions, seeds: seeds, begin: time.Now(),
		ackedBy: map[string]int{}, unknownBy: map[string]int{}, ackedIn: make([]int, partitions), stopConsume: make(chan struct{})}
	w.history = linearizability.NewLogHistory(w.now)
	w.reads = NewKgoReads(w.history, topic, int(partitions))
	// A test that failed before verify (a bounded wait, say) still shows
	// what its clients saw. The test's deferred stops have run by now.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		t.Logf("workload when the test failed: %d records produced, %d acknowledged, %d unknown; violations %v; anomalies so far:\n%s",
			w.history.Records(), w.acked, w.unknown, w.violations, w.history.Anomalies())
	})
	return w
}

// now is the history's clock: time since the workload began.
func (w *logWorkload) now() time.Duration { return time.Since(w.begin) }

func (w *logWorkload) part(p int32) linearizability.LogPartition {
	return linearizability.LogPartition{Topic: w.topic, Partition: p}
}

// opts are the client options every client of the workload shares.
func (w *logWorkload) opts(more ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(w.seeds...), kgo.DialTimeout(time.Second),
		// kgo refreshes metadata at most every 5 s by default; a leader
		// that moved is found sooner (Kafka's Java client: 100 ms).
		kgo.MetadataMinAge(100 * time.Millisecond)}
	if w.dialer != nil {
		opts = append(opts, kgo.Dialer(w.dialer))
	}
	return append(opts, more...)
}

// check keeps a violation a recording returned (with w.mu held).
func (w *logWorkload) check(err error) {
	if err != nil && len(w.violations) < workloadMaxViolations {
		w.violations = append(w.violations, err)
	}
}

// startProducer starts a producer goroutine named name: records with
// values "<name>-<n>" to partition n mod partitions, one every
// workloadProduceInterval, at most workloadMaxInflight unacknowledged,
// until stopProducers.
func (w *logWorkload) startProducer(name string) {
	all := make([]int32, w.partitions)
	for p := range all {
		all[p] = int32(p)
	}
	w.stopProducersFns = append(w.stopProducersFns, w.startProducerTo(name, all, workloadProduceInterval, w.producerOpts...))
}

// startProducerTo starts a producer as startProducer does, to the
// partitions parts in turn, one record every interval, with more client
// options; the function it
// returns stops it and waits, within workloadFlushTimeout, for every
// record's outcome.
func (w *logWorkload) startProducerTo(name string, parts []int32, interval time.Duration, more ...kgo.Opt) (stop func()) {
	cl, err := kgo.NewClient(w.opts(append([]kgo.Opt{kgo.DefaultProduceTopic(w.topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0)}, more...)...)...)
	require.NoError(w.t, err)
	client := w.clients
	w.clients++
	stopc, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer cl.Close() // fails what is still pending: recorded as unknown
		inflight := make(chan struct{}, workloadMaxInflight)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stopc:
				ctx, cancel := context.WithTimeout(context.Background(), workloadFlushTimeout)
				_ = cl.Flush(ctx)
				cancel()
				return
			case <-tick.C:
			}
			select {
			case <-stopc:
				n-- // not produced; the stop case above flushes
				continue
			case inflight <- struct{}{}:
			}
			v := fmt.Sprintf("%s-%d", name, n)
			lp := w.part(parts[n%len(parts)])
			w.mu.Lock()
			w.check(w.history.Produced(lp, v, []string{v}))
			op := w.ops.Append(client, lp, v, w.now())
			w.mu.Unlock()
			cl.Produce(context.Background(), &kgo.Record{Partition: lp.Partition, Value: []byte(v)}, func(r *kgo.Record, err error) {
				<-inflight
				w.mu.Lock()
				defer w.mu.Unlock()
				a := linearizability.LogAttempt{Producer: name, Partition: lp, Build: v, Send: 1}
				if err != nil {
					a.Outcome, a.Detail = linearizability.LogUnknown, err.Error()
					w.unknown++
					w.unknownBy[name]++
					w.ops.Fail(op)
				} else {
					a.Outcome, a.Offset = linearizability.LogAcked, r.Offset
					w.acked++
					w.ackedBy[name]++
					w.ackedIn[lp.Partition]++
					w.ops.Appended(op, r.Offset, w.now())
				}
				w.check(w.history.Attempt(a, []string{v}))
			})
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(stopc) })
		<-done
	}
}

// ackedInPartitions is how many records were acknowledged in each
// partition so far.
func (w *logWorkload) ackedInPartitions() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ackedIn)
}

// producerOutcomes is how many of producer's records were acknowledged
// and how many ended unknown.
func (w *logWorkload) producerOutcomes(producer string) (acked, unknown int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ackedBy[producer], w.unknownBy[producer]
}

// startConsumer starts a consumer goroutine named name reading every
// partition from offset 0 until stopConsumers.
func (w *logWorkload) startConsumer(name string) {
	w.mu.Lock()
	w.reads.Start(name)
	w.mu.Unlock()
	offsets := map[int32]kgo.Offset{}
	for p := range w.partitions {
		offsets[p] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(w.opts(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond))...)
	require.NoError(w.t, err)
	client := w.clients
	w.clients++
	ctx, cancel := context.WithCancel(context.Background())
	w.consuming.Add(2)
	go func() {
		defer w.consuming.Done()
		<-w.stopConsume
		cancel()
	}()
	go func() {
		defer w.consuming.Done()
		defer cl.Close()
		for ctx.Err() == nil {
			call := w.now()
			fs := cl.PollFetches(ctx)
			fs.EachPartition(func(fp kgo.FetchTopicPartition) { w.recordFetch(name, client, fp, call) })
		}
	}()
}

// recordFetch records one partition of one fetch response.
func (w *logWorkload) recordFetch(reader string, client int, fp kgo.FetchTopicPartition, call time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	recs, err := w.reads.Fetch(reader, fp)
	w.check(err)
	if len(recs) > 0 {
		w.ops.Fetched(client, w.part(fp.Partition), recs[0].Offset, call, w.now(), recs)
	}
}

// stopProducers stops the producers startProducer started and waits,
// within workloadFlushTimeout, for every record's outcome.
func (w *logWorkload) stopProducers() {
	for _, stop := range w.stopProducersFns {
		stop()
	}
}

// stopConsumers stops the concurrent consumers.
func (w *logWorkload) stopConsumers() {
	w.stopConsuming.Do(func() { close(w.stopConsume) })
	w.consuming.Wait()
}

// caughtUp reports whether every consumer read up to ends.
func (w *logWorkload) caughtUp(ends []int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reads.AllReadUpTo(ends)
}

// drain stops the producers (again, if they were: stopping is
// idempotent), lists the partitions' end offsets, waits until the
// consumers have read up to them, stops the consumers and reads every
// partition once more from its start (finalRead); it returns the end
// offsets.
func (w *logWorkload) drain(c *Cluster, adm *kadm.Client) []int64 {
	w.stopProducers()
	var ends []int64
	WaitForNoError(c.t, clusterStartTimeout, "the end offsets listed", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		if ends, err = ListEnds(ctx, adm, w.topic, int(w.partitions)); err != nil {
			return err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.reads.CoverAcked(ends)
	})
	c.WaitFor(workloadCatchUpTimeout, fmt.Sprintf("the consumers read up to the high watermarks %v", ends), func() bool { return w.caughtUp(ends) })
	w.stopConsumers()
	w.finalRead(ends)
	return ends
}

// finalRead reads every partition from offset 0 up to ends (the high
// watermarks after the producers stopped) as the reader "final", in one
// session per partition, and records it as the final read.
func (w *logWorkload) finalRead(ends []int64) {
	t := w.t
	cl, err := kgo.NewClient(w.opts(kgo.ConsumeTopics(w.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	require.NoError(t, err)
	defer cl.Close()
	client := w.clients
	w.clients++
	got := make([][]linearizability.LogRecord, w.partitions)
	w.mu.Lock()
	w.reads.Start("final")
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), workloadCatchUpTimeout)
	defer cancel()
	done := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.reads.ReadUpTo("final", ends)
	}
	for !done() {
		call := w.now()
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "the final read did not reach the high watermarks %v within %v", ends, workloadCatchUpTimeout)
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			w.recordFetch("final", client, fp, call)
			for _, r := range fp.Records {
				if r.Offset < ends[fp.Partition] {
					got[fp.Partition] = append(got[fp.Partition], linearizability.LogRecord{Offset: r.Offset, Value: string(r.Value)})
				}
			}
		})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for p := range w.partitions {
		w.history.FinalRead(w.part(p), 0, ends[p], got[p])
	}
}

// verify runs every check on the recorded history: the violations
// recorded on the way, durability of every acknowledged record at its
// offset (CheckDurable), an empty anomaly report and porcupine's
// partition-log model. It logs the figures.
func (w *logWorkload) verify() {
	t := w.t
	w.mu.Lock()
	defer w.mu.Unlock()
	report := w.history.Anomalies()
	durable := w.history.CheckDurable()
	errs := slices.Clone(w.violations)
	if durable != nil {
		errs = append(errs, durable)
	}
	if !report.Empty() || len(errs) > 0 {
		t.Errorf("the history is not clean:\nviolations: %v\nanomalies:\n%s", errs, report)
	}
	require.Positive(t, w.acked, "no record was acknowledged")
	// porcupine's partition-log model over the same observations.
	started := time.Now()
	res, err := linearizability.CheckLog(&w.ops, linearizability.Limits{MaxOperations: 200_000, MaxUnknownPerPartition: 64})
	require.NoError(t, err)
	require.True(t, res.Ok, "porcupine: the partition-log model rejects the history: %v", res)
	t.Logf("workload: %d records produced, %d acknowledged, %d unknown outcomes; %d partitions; fetch errors seen by consumers: %v",
		w.history.Records(), w.acked, w.unknown, w.partitions, w.reads.FetchErrs)
	t.Logf("checks: LogHistory violations %d, CheckDurable %v, anomaly report empty %v; porcupine %v in %v",
		len(w.violations), durable, report.Empty(), res, time.Since(started).Round(time.Millisecond))
}
