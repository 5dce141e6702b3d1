package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-log/strata/internal/proccluster"
	"github.com/strata-log/strata/linearizability"
)

// Bounds of the campaign's workload.
const (
	// produceInterval paces the producer: one record per interval.
	produceInterval = 5 * time.Millisecond
	// maxInflight bounds the producer's unacknowledged records: while a
	// partition has no leader the producer waits instead of buffering.
	maxInflight = 500
	// flushTimeout bounds the wait for every record's outcome after the
	// heal.
	flushTimeout = 60 * time.Second
	// keptViolations is how many check violations the report keeps
	// (Anomalies counts them all).
	keptViolations = 10
)

// workload is one idempotent acks=all kgo producer writing unique values
// round-robin to the partitions of a topic (manual partitioner: each
// record's partition is known, and recorded, before its send) and one
// kgo consumer tailing every partition, both recording into one
// linearizability.LogHistory behind mu (kgo's callbacks run on its own
// goroutines).
//
// kgo retries inside: a record's promise is its one recorded send. A
// failed promise cannot be told from a send that reached the log (an
// idempotent retry whose answer was lost), so it is recorded LogUnknown,
// never rejected.
type workload struct {
	topic      string
	partitions int32
	seeds      []string
	begin      time.Time

	mu         sync.Mutex
	history    *linearizability.LogHistory
	violations []error
	acked      int
	unknown    int
	reads      *proccluster.KgoReads
	sendErrs   map[string]int // the errors of the unknown outcomes

	stopProduce, produced chan struct{}
	stopConsume           context.CancelFunc
	consumed              chan struct{}
}

func newWorkload(topic string, partitions int32, seeds []string) *workload {
	w := &workload{topic: topic, partitions: partitions, seeds: seeds, begin: time.Now(),
		sendErrs: map[string]int{}}
	w.history = linearizability.NewLogHistory(func() time.Duration { return time.Since(w.begin) })
	w.reads = proccluster.NewKgoReads(w.history, topic, int(partitions))
	return w
}

func (w *workload) part(p int32) linearizability.LogPartition {
	return linearizability.LogPartition{Topic: w.topic, Partition: p}
}

// opts are every client's options.
func (w *workload) opts(more ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(w.seeds...), kgo.DialTimeout(time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond)}, more...)
}

// keep keeps a violation (w.mu held).
func (w *workload) keep(err error) {
	if err != nil && len(w.violations) < keptViolations {
		w.violations = append(w.violations, err)
	}
}

// producer is an idempotent acks=all client with the manual partitioner.
// It retries unknown-topic errors without end (kgo gives up after 4 by
// default): the topic exists, and under a dense schedule of kills and
// cuts the nodes answer UNKNOWN_TOPIC_OR_PARTITION and UNKNOWN_TOPIC_ID
// often enough (seed 36: 2,088 of 8,069 records failed with them, and
// most of the rest of the 5,747 with NOT_LEADER_FOR_PARTITION behind
// them) that kgo would fail most records, and check little.
func (w *workload) producer() (*kgo.Client, error) {
	return kgo.NewClient(w.opts(kgo.DefaultProduceTopic(w.topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.ProduceRequestTimeout(3*time.Second),
		kgo.UnknownTopicRetries(-1))...)
}

// send records value's build as Produced, sends it to partition p and
// records its outcome; done (if not nil) gets the error.
func (w *workload) send(cl *kgo.Client, name string, p int32, value string, done func(error)) {
	lp := w.part(p)
	w.mu.Lock()
	w.keep(w.history.Produced(lp, value, []string{value}))
	w.mu.Unlock()
	cl.Produce(context.Background(), &kgo.Record{Partition: p, Value: []byte(value)}, func(r *kgo.Record, err error) {
		w.mu.Lock()
		a := linearizability.LogAttempt{Producer: name, Partition: lp, Build: value, Send: 1}
		if err != nil {
			a.Outcome, a.Detail = linearizability.LogUnknown, err.Error()
			w.unknown++
			w.sendErrs[err.Error()]++
		} else {
			a.Outcome, a.Offset = linearizability.LogAcked, r.Offset
			w.acked++
		}
		w.keep(w.history.Attempt(a, []string{value}))
		w.mu.Unlock()
		if done != nil {
			done(err)
		}
	})
}

// startProducer writes "p-<n>" to partition n mod partitions every
// produceInterval until stopProducer.
func (w *workload) startProducer() error {
	cl, err := w.producer()
	if err != nil {
		return err
	}
	w.stopProduce, w.produced = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.produced)
		defer cl.Close() // fails what is still pending: recorded unknown
		inflight := make(chan struct{}, maxInflight)
		tick := time.NewTicker(produceInterval)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-w.stopProduce:
				ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
				_ = cl.Flush(ctx)
				cancel()
				return
			case <-tick.C:
			}
			select {
			case <-w.stopProduce:
				n--
				continue
			case inflight <- struct{}{}:
			}
			w.send(cl, "p", int32(n)%w.partitions, fmt.Sprintf("p-%d", n), func(error) { <-inflight })
		}
	}()
	return nil
}

// stopProducer stops the producer and waits, within flushTimeout, for
// every record's outcome.
func (w *workload) stopProducer() {
	if w.stopProduce == nil {
		return
	}
	select {
	case <-w.stopProduce:
	default:
		close(w.stopProduce)
	}
	<-w.produced
}

// probe sends one record to each partition with a fresh producer and
// reports the partitions whose record was not acknowledged within d (the
// liveness check after the heal).
func (w *workload) probe(round int, d time.Duration) ([]int32, error) {
	cl, err := w.producer()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	errs := make(chan struct {
		p   int32
		err error
	}, w.partitions)
	for p := range w.partitions {
		w.send(cl, "probe", p, fmt.Sprintf("probe-%d-%d", round, p), func(err error) {
			errs <- struct {
				p   int32
				err error
			}{p, err}
		})
	}
	var failed []int32
	timeout := time.After(d)
	for range w.partitions {
		select {
		case e := <-errs:
			if e.err != nil {
				failed = append(failed, e.p)
			}
		case <-timeout:
			return []int32{-1}, fmt.Errorf("no answer within %v", d)
		}
	}
	return failed, nil
}

// startSessions starts reader's session of every partition at 0.
func (w *workload) startSessions(reader string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reads.Start(reader)
}

// reader is a client consuming every partition from offset 0.
func (w *workload) reader() (*kgo.Client, error) {
	offsets := map[int32]kgo.Offset{}
	for p := range w.partitions {
		offsets[p] = kgo.NewOffset().At(0)
	}
	return kgo.NewClient(w.opts(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond))...)
}

// startConsumer tails every partition as reader "c" until stopConsumer.
func (w *workload) startConsumer() error {
	w.startSessions("c")
	cl, err := w.reader()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.stopConsume, w.consumed = cancel, make(chan struct{})
	go func() {
		defer close(w.consumed)
		defer cl.Close()
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachPartition(func(fp kgo.FetchTopicPartition) { w.recordFetch("c", fp, nil) })
		}
	}()
	return nil
}

func (w *workload) stopConsumer() {
	if w.stopConsume != nil {
		w.stopConsume()
		<-w.consumed
	}
}

// recordFetch records one partition of one fetch response of reader;
// each record read is also passed to also.
func (w *workload) recordFetch(reader string, fp kgo.FetchTopicPartition, also func(linearizability.LogRecord)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	recs, err := w.reads.Fetch(reader, fp)
	if also != nil {
		for _, r := range recs {
			also(r)
		}
	}
	w.keep(err)
}

// readUpTo reports whether reader read every partition up to ends.
func (w *workload) readUpTo(reader string, ends []int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reads.ReadUpTo(reader, ends)
}

// endOffsets are the partitions' high watermarks, each above the
// partition's acknowledged offsets (KgoReads.CoverAcked).
func (w *workload) endOffsets(ctx context.Context, adm *kadm.Client) ([]int64, error) {
	ends, err := proccluster.ListEnds(ctx, adm, w.topic, int(w.partitions))
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return ends, w.reads.CoverAcked(ends)
}

// finalRead reads every partition from 0 up to ends with a fresh reader
// "final" and records it as each partition's final read.
func (w *workload) finalRead(ctx context.Context, ends []int64) error {
	w.startSessions("final")
	cl, err := w.reader()
	if err != nil {
		return err
	}
	defer cl.Close()
	got := make([][]linearizability.LogRecord, w.partitions)
	for !w.readUpTo("final", ends) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("the final read did not reach the high watermarks %v: %w", ends, ctx.Err())
		}
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			w.recordFetch("final", fp, func(r linearizability.LogRecord) {
				if r.Offset < ends[fp.Partition] {
					got[fp.Partition] = append(got[fp.Partition], r)
				}
			})
		})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for p := range w.partitions {
		w.history.FinalRead(w.part(p), 0, ends[p], got[p])
	}
	return nil
}

// verdict runs the checks on the history: the violations found on the
// way, CheckDurable and the anomaly report; it returns what failed, and
// the figures.
func (w *workload) verdict() (failures []string, figures string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.violations {
		failures = append(failures, v.Error())
	}
	if err := w.history.CheckDurable(); err != nil {
		failures = append(failures, err.Error())
	}
	if r := w.history.Anomalies(); !r.Empty() {
		failures = append(failures, "anomalies:\n"+r.String())
	}
	figures = fmt.Sprintf("%d records produced, %d acknowledged, %d unknown outcomes %v over %d partitions; consumer fetch errors %v",
		w.history.Records(), w.acked, w.unknown, w.sendErrs, w.partitions, w.reads.FetchErrs)
	return failures, figures
}
