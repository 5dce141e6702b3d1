package bench

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The bench workload's client settings, the same for every target.
const (
	// benchLinger is the throughput producer's linger.
	benchLinger = 5 * time.Millisecond
	// benchBatchMaxBytes is ProducerBatchMaxBytes, 1 MiB: within the
	// default max.message.bytes (1048588) of Kafka, kfake and Strata.
	benchBatchMaxBytes = 1 << 20
	// benchMaxBufferedRecords keeps the throughput producer busy: with
	// 1 KiB records it is 128 MiB in flight, about a hundred batches.
	benchMaxBufferedRecords = 128 << 10
	// benchValuePool is how many distinct random values the records
	// cycle through; values are shared, not allocated per record.
	benchValuePool = 1024
	// benchPhaseGrace bounds what a phase may take beyond its own
	// duration (the final flush; reading everything back), so that a
	// broker that stops answering is an error, not a hang.
	benchPhaseGrace = 2 * time.Minute
	// benchAdminTimeout bounds creating and deleting the topic,
	// including retries while the controller is not ready.
	benchAdminTimeout = 30 * time.Second
)

// kafkaRun is one run of the Kafka workload against one target.
type kafkaRun struct {
	Topic string `json:"topic"`
	// Compression is the producers' --compression.
	Compression string     `json:"compression"`
	Produce     throughput `json:"produce"`
	Consume     throughput `json:"consume"`
	Latency     latency    `json:"latency"`
	// Batches are phase 1's batches as kgo sent them (codec, sizes).
	Batches produceBatches `json:"produce_batches"`
	// LatencyBatches are phase 3's.
	LatencyBatches produceBatches `json:"latency_batches"`
	// Flood is phase 4, when --flood-producers asks for it.
	Flood *floodRun `json:"flood,omitempty"`
	// CPU is the broker process's CPU use, for a node the bench started.
	CPU *brokerCPU `json:"broker_cpu,omitempty"`
	// GroupCommit is the node's disk activity during phase 1, for a
	// node the bench started.
	GroupCommit *groupCommit `json:"group_commit,omitempty"`
}

// groupCommit is what the node's disk did while phase 1 produced.
type groupCommit struct {
	Fdatasyncs   uint64 `json:"fdatasyncs"`
	BytesWritten uint64 `json:"bytes_written"`
	// BytesPerFdatasync is the average group commit: the write size the
	// fsync ceiling should use to compare like with like.
	BytesPerFdatasync int64 `json:"bytes_per_fdatasync"`
}

// throughput is what a phase moved: records and bytes of values.
type throughput struct {
	Records       int64   `json:"records"`
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	MiBPerSec     float64 `json:"mib_per_s"`
	RecordsPerSec float64 `json:"records_per_s"`
}

func newThroughput(records, bytes int64, elapsed time.Duration) throughput {
	s := elapsed.Seconds()
	return throughput{Records: records, Bytes: bytes, Seconds: s,
		MiBPerSec: float64(bytes) / (1 << 20) / s, RecordsPerSec: float64(records) / s}
}

// latency is phase 3: produce latency at a fixed rate.
type latency struct {
	RatePerSec int     `json:"rate_per_s"`
	Records    int     `json:"records"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	P999Ms     float64 `json:"p999_ms"`
}

// brokerCPU is the broker's user+system CPU seconds during phases 1 and 2.
type brokerCPU struct {
	ProduceSeconds float64 `json:"produce_seconds"`
	FetchSeconds   float64 `json:"fetch_seconds"`
	PerGiBProduced float64 `json:"seconds_per_gib_produced"`
	PerGiBFetched  float64 `json:"seconds_per_gib_fetched"`
	// ProduceCores is ProduceSeconds over phase 1's wall time: above 1,
	// the broker used more than one core at once.
	ProduceCores float64 `json:"produce_cores"`
}

// kafkaWorkload is the workload's settings.
type kafkaWorkload struct {
	partitions int
	// replicationFactor and minInsyncReplicas are the topic's; zero is
	// 1 and the broker's default.
	replicationFactor int
	minInsyncReplicas int
	recordBytes       int
	duration          time.Duration // phase 1
	maxProduceBytes   int64         // phase 1 also ends here
	latencyDuration   time.Duration // phase 3
	latencyRate       int           // records per second in phase 3
	// compression is the producers' --compression (a codec, or
	// compressionDefault for kgo's own default); "" is none.
	compression string
	// values is valuesRandom or valuesText; "" is random.
	values string
	// producers is how many clients phase 1 runs at once, each with its
	// own connections; 0 is 1.
	producers int
	// producer is producerKgo (or "") or producerRaw, for phase 1 and
	// the flood: see bench_raw.go.
	producer string
	// rawBatchMaxBytes bounds the raw producer's batches uncompressed;
	// 0 is benchBatchMaxBytes (tests make them smaller).
	rawBatchMaxBytes int
	// floodProducers, when positive, adds phase 4: phase 3 again while
	// that many clients flood a second topic with floodCompression
	// batches of text values.
	floodProducers   int
	floodCompression string
	// floodCommand runs strata (`bench-flood ...` is appended) and
	// floodEnv is added to its environment: the bench's nodeCommand and
	// nodeEnv.
	floodCommand, floodEnv []string
	// cpu, when set, reads the broker's CPU seconds.
	cpu func() (float64, error)
	// disk, when set, reads the node's disk counters.
	disk func(context.Context) (diskCounters, error)
}

// diskCounters are a node's cumulative disk counters.
type diskCounters struct{ fdatasyncs, bytesWritten uint64 }

// run creates a topic on the brokers at seeds, runs the three phases and
// deletes the topic.
func (w kafkaWorkload) run(ctx context.Context, seeds []string, topic string) (kafkaRun, error) {
	res := kafkaRun{Topic: topic, Compression: w.compression}
	values, err := benchValues(w.values, benchValuePool, w.recordBytes)
	if err != nil {
		return res, err
	}
	if err := requireDataPath(ctx, seeds); err != nil {
		return res, err
	}
	if err := createBenchTopic(ctx, seeds, topic, w.partitions, max(w.replicationFactor, 1), w.minInsyncReplicas); err != nil {
		return res, err
	}
	defer deleteBenchTopic(seeds, topic)

	cpu := [3]float64{}
	readCPU := func(i int) error {
		if w.cpu == nil {
			return nil
		}
		var err error
		cpu[i], err = w.cpu()
		return err
	}
	var disk [2]diskCounters
	readDisk := func(i int) error {
		if w.disk == nil {
			return nil
		}
		var err error
		disk[i], err = w.disk(ctx)
		return err
	}
	if err := errors.Join(readCPU(0), readDisk(0)); err != nil {
		return res, err
	}
	produce := w.produce
	if w.producer == producerRaw {
		produce = w.produceRaw
	}
	if res.Produce, res.Batches, err = produce(ctx, seeds, topic, values); err != nil {
		return res, fmt.Errorf("phase 1 (produce): %w", err)
	}
	if err := errors.Join(readCPU(1), readDisk(1)); err != nil {
		return res, err
	}
	if w.disk != nil {
		gc := &groupCommit{Fdatasyncs: disk[1].fdatasyncs - disk[0].fdatasyncs, BytesWritten: disk[1].bytesWritten - disk[0].bytesWritten}
		if gc.Fdatasyncs > 0 {
			gc.BytesPerFdatasync = int64(gc.BytesWritten / gc.Fdatasyncs)
		}
		res.GroupCommit = gc
	}
	if res.Consume, err = w.consume(ctx, seeds, topic); err != nil {
		return res, fmt.Errorf("phase 2 (consume): %w", err)
	}
	if err := readCPU(2); err != nil {
		return res, err
	}
	if w.cpu != nil {
		res.CPU = &brokerCPU{ProduceSeconds: cpu[1] - cpu[0], FetchSeconds: cpu[2] - cpu[1]}
		res.CPU.PerGiBProduced = res.CPU.ProduceSeconds / (float64(res.Produce.Bytes) / (1 << 30))
		res.CPU.PerGiBFetched = res.CPU.FetchSeconds / (float64(res.Consume.Bytes) / (1 << 30))
		res.CPU.ProduceCores = res.CPU.ProduceSeconds / res.Produce.Seconds
	}
	if res.Latency, res.LatencyBatches, err = w.latency(ctx, seeds, topic, values); err != nil {
		return res, fmt.Errorf("phase 3 (latency): %w", err)
	}
	if w.floodProducers > 0 {
		flood, err := w.flood(ctx, seeds, topic, values)
		if err != nil {
			return res, fmt.Errorf("phase 4 (latency under a flood): %w", err)
		}
		if res.Latency.P99Ms > 0 {
			flood.P99Ratio = flood.Latency.P99Ms / res.Latency.P99Ms
			flood.P50Ratio = flood.Latency.P50Ms / res.Latency.P50Ms
		}
		res.Flood = &flood
	}
	return res, nil
}

func randomValues(n, size int) ([][]byte, error) {
	buf := make([]byte, n*size)
	if _, err := crand.Read(buf); err != nil {
		return nil, fmt.Errorf("random values: %w", err)
	}
	values := make([][]byte, n)
	for i := range values {
		values[i] = buf[i*size : (i+1)*size : (i+1)*size]
	}
	return values, nil
}

// withAdmin runs fn with an admin client of the brokers at seeds and ctx
// bounded by timeout (none when zero), then closes the client.
func withAdmin(ctx context.Context, seeds []string, timeout time.Duration, fn func(context.Context, *kadm.Client) error) error {
	cl, err := cli.NewKafkaClient(seeds)
	if err != nil {
		return err
	}
	defer cl.Close()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return fn(ctx, kadm.NewClient(cl))
}

// requireDataPath checks that the broker offers what the workload sends.
func requireDataPath(ctx context.Context, seeds []string) error {
	return withAdmin(ctx, seeds, benchAdminTimeout, func(ctx context.Context, adm *kadm.Client) error {
		return cli.RequireAPIs(ctx, adm, kmsg.Produce, kmsg.InitProducerID, kmsg.Fetch, kmsg.ListOffsets)
	})
}

// createBenchTopic creates topic with rf replicas and, when minISR > 0,
// that min.insync.replicas, retrying while the broker answers with a
// retriable error (no active controller yet).
func createBenchTopic(ctx context.Context, seeds []string, topic string, partitions, rf, minISR int) error {
	var configs map[string]*string
	if minISR > 0 {
		v := strconv.Itoa(minISR)
		configs = map[string]*string{"min.insync.replicas": &v}
	}
	return withAdmin(ctx, seeds, benchAdminTimeout, func(ctx context.Context, adm *kadm.Client) error {
		for {
			resp, err := adm.CreateTopic(ctx, int32(partitions), int16(rf), configs, topic)
			if err == nil {
				return nil
			}
			if !kerr.IsRetriable(err) || ctx.Err() != nil {
				return fmt.Errorf("creating topic %s: %s", topic, cli.KafkaError(err, resp.ErrMessage))
			}
			time.Sleep(benchReadyPollInterval)
		}
	})
}

// deleteBenchTopic deletes topic, best effort: a broker that holds on to
// the data only costs disk until the temp dir goes.
func deleteBenchTopic(seeds []string, topic string) {
	_ = withAdmin(context.Background(), seeds, benchAdminTimeout, func(ctx context.Context, adm *kadm.Client) error {
		_, err := adm.DeleteTopics(ctx, topic)
		return err
	})
}

// rawBatchBytes is rawBatchMaxBytes, benchBatchMaxBytes when unset.
func (w kafkaWorkload) rawBatchBytes() int {
	if w.rawBatchMaxBytes > 0 {
		return w.rawBatchMaxBytes
	}
	return benchBatchMaxBytes
}

// producerKind is producer, kgo when unset.
func (w kafkaWorkload) producerKind() string {
	if w.producer == "" {
		return producerKgo
	}
	return w.producer
}

// producerOpts are the producer settings of phases 1 and 3 (and of the
// memory target's flood), with the workload's compression.
func (w kafkaWorkload) producerOpts(topic string, linger time.Duration) []kgo.Opt {
	return producerOpts(topic, linger, w.compression)
}

// producerOpts are the bench's producer settings with compression codec
// (see compressionOpts; "" is none).
func producerOpts(topic string, linger time.Duration, codec string) []kgo.Opt {
	return append([]kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(linger),
		kgo.ProducerBatchMaxBytes(benchBatchMaxBytes),
		kgo.MaxBufferedRecords(benchMaxBufferedRecords),
		kgo.RecordDeliveryTimeout(benchPhaseGrace),
	}, compressionOpts(codec)...)
}

// inParallel runs fn(0) to fn(n-1) at once and joins their errors.
func inParallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// openEach opens n with open; when one fails, it closes those it opened
// and returns the error.
func openEach[T any](n int, open func() (T, error), close func(T)) ([]T, error) {
	var out []T
	for range n {
		t, err := open()
		if err != nil {
			for _, o := range out {
				close(o)
			}
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// failure keeps the first error of a phase's promises.
type failure struct {
	once sync.Once
	err  atomic.Pointer[error]
}

func (f *failure) set(err error) { f.once.Do(func() { f.err.Store(&err) }) }

func (f *failure) get() error {
	if p := f.err.Load(); p != nil {
		return *p
	}
	return nil
}

// produce is phase 1: w.producers clients produce as fast as they go for
// duration (or until maxProduceBytes, shared), then flush; the time
// includes the flush.
func (w kafkaWorkload) produce(ctx context.Context, seeds []string, topic string, values [][]byte) (throughput, produceBatches, error) {
	ctx, cancel := context.WithTimeout(ctx, w.duration+benchPhaseGrace)
	defer cancel()
	var stats batchStats
	clients := make([]*kgo.Client, max(w.producers, 1))
	for i := range clients {
		cl, err := cli.NewKafkaClient(seeds, append(w.producerOpts(topic, benchLinger), kgo.WithHooks(&stats))...)
		if err != nil {
			return throughput{}, produceBatches{}, err
		}
		defer cl.Close()
		clients[i] = cl
	}
	var acked, ackedBytes, sent atomic.Int64
	var failed failure
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			failed.set(err)
			return
		}
		acked.Add(1)
		ackedBytes.Add(int64(len(r.Value)))
	}
	start := time.Now()
	deadline := start.Add(w.duration)
	var wg sync.WaitGroup
	for p, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p * len(values) / len(clients); sent.Load() < w.maxProduceBytes && time.Now().Before(deadline); i++ {
				if failed.get() != nil || ctx.Err() != nil {
					break
				}
				v := values[i%len(values)]
				cl.Produce(ctx, &kgo.Record{Value: v}, promise)
				sent.Add(int64(len(v)))
			}
			if err := cl.Flush(ctx); err != nil {
				failed.set(fmt.Errorf("flush: %w", err))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := failed.get(); err != nil {
		return throughput{}, produceBatches{}, fmt.Errorf("%s (%d records acknowledged before it)", cli.KafkaError(err, ""), acked.Load())
	}
	return newThroughput(acked.Load(), ackedBytes.Load(), elapsed), stats.get(), nil
}

// consume is phase 2: read every partition from its start to the end
// offset it had after phase 1.
func (w kafkaWorkload) consume(ctx context.Context, seeds []string, topic string) (throughput, error) {
	ctx, cancel := context.WithTimeout(ctx, benchPhaseGrace)
	defer cancel()
	ends, err := endOffsets(ctx, seeds, topic)
	if err != nil {
		return throughput{}, err
	}
	starts := map[int32]kgo.Offset{}
	for p := range ends {
		starts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := cli.NewKafkaClient(seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}))
	if err != nil {
		return throughput{}, err
	}
	defer cl.Close()
	var records, bytes int64
	pending := 0
	for _, end := range ends {
		if end > 0 {
			pending++
		}
	}
	start := time.Now()
	for pending > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return throughput{}, fmt.Errorf("read %d records in %v, and the end is not reached: %w", records, time.Since(start).Round(time.Millisecond), ctx.Err())
		}
		if err := fetches.Err(); err != nil {
			return throughput{}, fmt.Errorf("fetch: %s", cli.KafkaError(err, ""))
		}
		fetches.EachRecord(func(r *kgo.Record) {
			records++
			bytes += int64(len(r.Value))
			if r.Offset+1 == ends[r.Partition] {
				pending--
			}
		})
	}
	return newThroughput(records, bytes, time.Since(start)), nil
}

// endOffsets is each partition's end offset.
func endOffsets(ctx context.Context, seeds []string, topic string) (map[int32]int64, error) {
	ends := map[int32]int64{}
	err := withAdmin(ctx, seeds, 0, func(ctx context.Context, adm *kadm.Client) error {
		listed, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = listed.Error()
		}
		if err != nil {
			return fmt.Errorf("listing end offsets: %s", cli.KafkaError(err, ""))
		}
		listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ends, nil
}

// latency is phase 3: records at a fixed rate, linger 0, each timed from
// the Produce call to its promise. The schedule is fixed in advance, so
// a slow acknowledgement does not delay the next send (no coordinated
// omission while the client keeps up).
func (w kafkaWorkload) latency(ctx context.Context, seeds []string, topic string, values [][]byte) (latency, produceBatches, error) {
	res := latency{RatePerSec: w.latencyRate}
	var stats batchStats
	cl, err := cli.NewKafkaClient(seeds, append(w.producerOpts(topic, 0), kgo.WithHooks(&stats))...)
	if err != nil {
		return res, produceBatches{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, w.latencyDuration+benchPhaseGrace)
	defer cancel()
	var (
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, int(w.latencyDuration.Seconds()*float64(w.latencyRate))+1)
		failed    failure
	)
	interval := time.Duration(float64(time.Second) / float64(w.latencyRate))
	start := time.Now()
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.Sub(start) >= w.latencyDuration || failed.get() != nil || ctx.Err() != nil {
			break
		}
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.set(err)
				return
			}
			d := time.Since(sent)
			mu.Lock()
			latencies = append(latencies, d)
			mu.Unlock()
		})
	}
	if err := cl.Flush(ctx); err != nil {
		failed.set(fmt.Errorf("flush: %w", err))
	}
	if err := failed.get(); err != nil {
		return res, produceBatches{}, errors.New(cli.KafkaError(err, ""))
	}
	mu.Lock()
	defer mu.Unlock()
	res.Records = len(latencies)
	res.P50Ms = percentileMs(latencies, 0.50)
	res.P99Ms = percentileMs(latencies, 0.99)
	res.P999Ms = percentileMs(latencies, 0.999)
	return res, stats.get(), nil
}

// percentileMs is the q-quantile of ds in milliseconds (nearest rank), or
// 0 for none.
func percentileMs(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := max(1, int(math.Ceil(q*float64(len(s)))))
	return float64(s[rank-1]) / float64(time.Millisecond)
}
