package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Phase 4 (--flood-producers N): the small client of phase 3 again, on
// the same topic and schedule, while N other clients flood a topic of
// their own with compressed batches as fast as they go (acks=all,
// linger 5 ms, 1 MiB batches of text values), starting once the flood
// has had a batch acknowledged and benchFloodWarmup more has passed. Its p50 and p99 beside
// phase 3's, run by run, say what one client's flood costs another
// (issue 22: within 2x of the quiet p99).
//
// The flood runs in a process of its own (`strata bench-flood`, which
// the bench starts as its child), as a second client would: in the
// bench's process its compression would compete with the small client
// for the Go scheduler, and the small client's tail would be the
// bench's own.
const (
	// benchFloodWarmup is how long the flood runs before the small
	// client starts, so that it meets the flood at full speed.
	benchFloodWarmup = time.Second
	// benchFloodProducersMax bounds --flood-producers and --producers.
	benchFloodProducersMax = 64
	// benchFloodReportInterval is how often the flood process reports
	// what it has had acknowledged.
	benchFloodReportInterval = 100 * time.Millisecond
	// benchFloodStopTimeout is how long the flood process has to exit
	// once told to stop, before it is killed.
	benchFloodStopTimeout = 10 * time.Second
)

// FloodSummary is the line `strata help` shows for bench-flood.
const FloodSummary = "(run by `strata bench`) flood a topic with compressed batches until stdin closes, reporting progress as JSON lines"

// floodRun is phase 4.
type floodRun struct {
	Producers   int    `json:"producers"`
	Compression string `json:"compression"`
	// Latency is the small client's, during the flood.
	Latency latency `json:"latency"`
	// P50Ratio and P99Ratio are Latency's over phase 3's of the same run.
	P50Ratio float64 `json:"p50_ratio"`
	P99Ratio float64 `json:"p99_ratio"`
	// Flood is what the flood had acknowledged while the small client
	// ran (uncompressed record bytes), and its batches over the phase.
	Flood   throughput     `json:"flood"`
	Batches produceBatches `json:"flood_batches"`
}

// floodProgress is one line of `strata bench-flood`'s output: what its
// producers had acknowledged so far. A line with Error is its last.
type floodProgress struct {
	Records int64          `json:"records"`
	Bytes   int64          `json:"bytes"`
	Batches produceBatches `json:"batches"`
	Error   string         `json:"error,omitempty"`
}

// flood is phase 4: it creates the flood's topic, starts the flood
// process, times the small client on topic once the flood is at speed,
// and stops the flood.
func (w kafkaWorkload) flood(ctx context.Context, seeds []string, topic string, values [][]byte) (floodRun, error) {
	res := floodRun{Producers: w.floodProducers, Compression: w.floodCompression}
	floodTopic := topic + "-flood"
	if err := createBenchTopic(ctx, seeds, floodTopic, w.partitions, max(w.replicationFactor, 1), w.minInsyncReplicas); err != nil {
		return res, err
	}
	defer deleteBenchTopic(seeds, floodTopic)
	fp, err := startFlood(ctx, w.floodCommand, w.floodEnv, []string{
		"--bootstrap-server", strings.Join(seeds, ","), "--topic", floodTopic,
		"--producers", fmt.Sprint(w.floodProducers), "--compression", w.floodCompression,
		"--record-bytes", fmt.Sprint(w.recordBytes), "--producer", w.producerKind(),
		"--raw-batch-bytes", fmt.Sprint(w.rawBatchBytes())})
	if err != nil {
		return res, err
	}
	defer fp.kill()
	if err := fp.waitAcknowledged(ctx); err != nil {
		return res, err
	}
	if err := sleepCtx(ctx, benchFloodWarmup); err != nil {
		return res, err
	}
	before, err := fp.progress()
	if err != nil {
		return res, fmt.Errorf("flood (before the small client started): %w", err)
	}
	start := time.Now()
	lat, _, err := w.latency(ctx, seeds, topic, values)
	elapsed := time.Since(start)
	after, ferr := fp.progress()
	if serr := fp.stop(); ferr == nil {
		ferr = serr
	}
	if err != nil {
		return res, fmt.Errorf("the small client: %w", err)
	}
	if ferr != nil {
		return res, fmt.Errorf("flood: %w", ferr)
	}
	res.Latency = lat
	res.Flood = newThroughput(after.Records-before.Records, after.Bytes-before.Bytes, elapsed)
	res.Batches = after.Batches
	return res, nil
}

// floodProcess is a running `strata bench-flood`.
type floodProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{}
	log    *logTail

	mu     sync.Mutex
	latest floodProgress
	seen   bool
}

// startFlood starts `<command> bench-flood args...` and waits for its
// first progress line (its clients are made).
func startFlood(ctx context.Context, command, env []string, args []string) (*floodProcess, error) {
	if len(command) == 0 {
		command = []string{os.Args[0]}
	}
	fp := &floodProcess{exited: make(chan struct{}), log: &logTail{max: benchNodeLogLines}}
	fp.cmd = exec.Command(command[0], append(append(command[1:len(command):len(command)], "bench-flood"), args...)...)
	fp.cmd.Env = append(os.Environ(), env...)
	fp.cmd.Stderr = fp.log
	fp.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := fp.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if fp.stdin, err = fp.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := fp.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the flood: %w", err)
	}
	first := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		once := sync.OnceFunc(func() { close(first) })
		for sc.Scan() {
			var p floodProgress
			if json.Unmarshal(sc.Bytes(), &p) != nil {
				continue
			}
			fp.mu.Lock()
			fp.latest, fp.seen = p, true
			fp.mu.Unlock()
			once()
		}
		_ = fp.cmd.Wait()
		close(fp.exited)
	}()
	select {
	case <-first:
		return fp, nil
	case <-fp.exited:
		return nil, fmt.Errorf("the flood exited at start (%v):\n%s", fp.cmd.ProcessState, fp.log)
	case <-ctx.Done():
		fp.kill()
		return nil, ctx.Err()
	case <-time.After(benchAdminTimeout):
		fp.kill()
		return nil, fmt.Errorf("the flood did not start within %v:\n%s", benchAdminTimeout, fp.log)
	}
}

// waitAcknowledged waits until the flood has had a batch acknowledged.
func (fp *floodProcess) waitAcknowledged(ctx context.Context) error {
	deadline := time.Now().Add(benchAdminTimeout)
	for {
		p, err := fp.progress()
		switch {
		case err != nil:
			return fmt.Errorf("flood: %w", err)
		case p.Batches.Batches > 0:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("flood: nothing acknowledged within %v", benchAdminTimeout)
		}
		if err := sleepCtx(ctx, benchFloodReportInterval); err != nil {
			return err
		}
	}
}

// progress is the flood's latest report, or its error.
func (fp *floodProcess) progress() (floodProgress, error) {
	fp.mu.Lock()
	p := fp.latest
	fp.mu.Unlock()
	if p.Error != "" {
		return p, errors.New(p.Error)
	}
	select {
	case <-fp.exited:
		return p, fmt.Errorf("the flood exited early (%v):\n%s", fp.cmd.ProcessState, fp.log)
	default:
	}
	return p, nil
}

// stop closes the flood's stdin, which tells it to stop, and waits.
func (fp *floodProcess) stop() error {
	_ = fp.stdin.Close()
	select {
	case <-fp.exited:
	case <-time.After(benchFloodStopTimeout):
		fp.kill()
		return fmt.Errorf("the flood did not stop within %v and was killed", benchFloodStopTimeout)
	}
	if !fp.cmd.ProcessState.Success() {
		fp.mu.Lock()
		defer fp.mu.Unlock()
		return fmt.Errorf("the flood exited with %v (%s):\n%s", fp.cmd.ProcessState, fp.latest.Error, fp.log)
	}
	return nil
}

// kill ends the flood process at once, if it still runs.
func (fp *floodProcess) kill() {
	select {
	case <-fp.exited:
	default:
		_ = fp.cmd.Process.Kill()
		<-fp.exited
	}
}

// FloodCommand is `strata bench-flood`: --producers clients produce
// text records to --topic as fast as they go, each with its own
// connections, until stdin closes (or reads anything); every
// benchFloodReportInterval it writes a floodProgress line to stdout.
// A failed produce ends it with exit code 1 after a line naming the
// error.
func FloodCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("strata bench-flood", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap-server", "", "the brokers, `host:port,...`")
	topic := fs.String("topic", "", "the `topic` to flood")
	producers := fs.Int("producers", 1, "how many `clients` flood at once")
	compression := fs.String("compression", defaultFloodCompression, "the `codec` (see strata bench --compression)")
	recordBytes := fs.Int("record-bytes", defaultBenchRecordBytes, "each record's text value, in `bytes`")
	producer := fs.String("producer", producerKgo, "the `client`: kgo, or raw (batches compressed once and sent again and again)")
	rawBatchBytes := fs.Int("raw-batch-bytes", benchBatchMaxBytes, "the raw producer's batches hold up to this many `bytes` of records")
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	seeds, err := cli.ParseAddrs(*bootstrap)
	if err == nil {
		_, err = parseCompression(*compression)
	}
	switch {
	case err != nil:
	case *producer != producerKgo && *producer != producerRaw:
		err = fmt.Errorf("--producer must be %s or %s", producerKgo, producerRaw)
	case *topic == "":
		err = errors.New("--topic is required")
	case *producers < 1 || *producers > benchFloodProducersMax:
		err = fmt.Errorf("--producers must be 1 to %d", benchFloodProducersMax)
	case *recordBytes < 1 || *recordBytes > benchBatchMaxBytes/2:
		err = fmt.Errorf("--record-bytes must be 1 to %d", benchBatchMaxBytes/2)
	case *rawBatchBytes < 1 || *rawBatchBytes > benchBatchMaxBytes:
		err = fmt.Errorf("--raw-batch-bytes must be 1 to %d", benchBatchMaxBytes)
	case fs.NArg() > 0:
		err = errors.New("unexpected arguments")
	}
	if err != nil {
		fmt.Fprintf(stderr, "strata bench-flood: %v\n", err)
		return cli.ExitUsage
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // stdin closing (or anything read) is the stop
		_, _ = stdin.Read(make([]byte, 1))
		cancel()
	}()
	values := textValues(benchValuePool, *recordBytes, uint64(time.Now().UnixNano()))
	var f flooder
	if *producer == producerRaw {
		f, err = newRawFlood(ctx, seeds, *topic, *producers, *compression, values, *rawBatchBytes)
	} else {
		f, err = newKgoFlood(seeds, *topic, *producers, *compression)
	}
	if err != nil {
		fmt.Fprintf(stderr, "strata bench-flood: %v\n", err)
		return cli.ExitError
	}
	defer f.close() // fails what is still buffered, after the stop
	var failed failure
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := f.run(ctx, values); err != nil && ctx.Err() == nil {
			failed.set(err)
		}
	}()
	enc := json.NewEncoder(stdout)
	report := func() floodProgress {
		p := f.progress()
		if err := failed.get(); err != nil {
			p.Error = cli.KafkaError(err, "")
		}
		_ = enc.Encode(p)
		return p
	}
	report()
	tick := time.NewTicker(benchFloodReportInterval)
	defer tick.Stop()
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-done: // a failure
			break wait
		case <-tick.C:
			report()
		}
	}
	cancel()
	<-done
	if p := report(); p.Error != "" {
		return cli.ExitError
	}
	return cli.ExitOK
}

// flooder is the flood's clients.
type flooder interface {
	// run floods until ctx ends, returning the first failure.
	run(ctx context.Context, values [][]byte) error
	progress() floodProgress
	close()
}

// kgoFlood is producers kgo clients, each with its own connections.
type kgoFlood struct {
	clients         []*kgo.Client
	stats           batchStats
	records, nbytes atomic.Int64
}

func newKgoFlood(seeds []string, topic string, producers int, compression string) (*kgoFlood, error) {
	f := &kgoFlood{}
	var err error
	f.clients, err = openEach(producers, func() (*kgo.Client, error) {
		return cli.NewKafkaClient(seeds, append(producerOpts(topic, benchLinger, compression), kgo.WithHooks(&f.stats))...)
	}, (*kgo.Client).Close)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (f *kgoFlood) run(ctx context.Context, values [][]byte) error {
	var failed failure
	var wg sync.WaitGroup
	for p, cl := range f.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p * len(values) / len(f.clients); ctx.Err() == nil && failed.get() == nil; i++ {
				// Produce blocks while the client's buffer is full,
				// which paces the flood; ctx's end unblocks it.
				cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, func(r *kgo.Record, err error) {
					switch {
					case err == nil:
						f.records.Add(1)
						f.nbytes.Add(int64(len(r.Value)))
					case ctx.Err() == nil:
						failed.set(err)
					}
				})
			}
		}()
	}
	wg.Wait()
	return failed.get()
}

func (f *kgoFlood) progress() floodProgress {
	return floodProgress{Records: f.records.Load(), Bytes: f.nbytes.Load(), Batches: f.stats.get()}
}

func (f *kgoFlood) close() {
	for _, cl := range f.clients {
		cl.Close()
	}
}

// rawFlood is producers raw producers (bench_raw.go).
type rawFlood struct{ producers []*rawProducer }

func newRawFlood(ctx context.Context, seeds []string, topic string, producers int, compression string, values [][]byte, batchBytes int) (*rawFlood, error) {
	batches, err := buildRawBatches(values, compression, benchRawBatches, batchBytes)
	if err != nil {
		return nil, err
	}
	ps, err := openEach(producers, func() (*rawProducer, error) { return newRawProducer(ctx, seeds, topic, batches) }, (*rawProducer).close)
	if err != nil {
		return nil, err
	}
	return &rawFlood{producers: ps}, nil
}

func (f *rawFlood) run(ctx context.Context, _ [][]byte) error {
	return inParallel(len(f.producers), func(i int) error { return f.producers[i].run(ctx, func() bool { return true }) })
}

func (f *rawFlood) progress() floodProgress {
	var out floodProgress
	for _, p := range f.producers {
		out.Records += p.records.Load()
		out.Bytes += p.valueBytes.Load()
		out.Batches = out.Batches.add(p.stats.get())
	}
	return out
}

func (f *rawFlood) close() {
	for _, p := range f.producers {
		p.close()
	}
}
