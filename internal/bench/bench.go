package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/strata-log/strata/node"
)

// Summary is the line `strata help` shows for bench.
const Summary = "measure a Strata node's produce/consume throughput and latency beside kfake and the disk's fsync ceiling"

// Defaults of `strata bench` (docs/benchmarks.md's workload).
const (
	defaultBenchDuration        = 10 * time.Second
	defaultBenchLatencyDuration = 10 * time.Second
	// defaultBenchLatencyRate is phase 3's records per second.
	defaultBenchLatencyRate = 1000
	defaultBenchRecordBytes = 1 << 10
	defaultBenchPartitions  = 6
	// defaultBenchMaxProduceBytes also ends phase 1: kfake keeps every
	// byte in memory, and the node keeps it on disk until the run's
	// topic is deleted.
	defaultBenchMaxProduceBytes = 2 << 30
	defaultBenchRuns            = 1
	// benchRunsMax bounds --runs.
	benchRunsMax = 1000
	// benchNodesMax bounds --nodes.
	benchNodesMax = 7
)

// The bench's targets, in the order each run visits them.
const (
	targetStrata = "strata"
	// targetNoMetrics is a strata node with strata.metrics.enable=false:
	// the same-run baseline of what counting metrics costs.
	targetNoMetrics = "strata-nometrics"
	// targetNoOffload is a strata node with
	// strata.request.offload.enable=false, which validates produced
	// batches on the event loop: the same-run baseline of the workers.
	targetNoOffload = "strata-nooffload"
	targetKfake     = "kfake"
	targetFsync     = "fsync"
	// targetMemory starts a node of its own and reports its memory at
	// rest, with idle connections and under a producer flood.
	targetMemory = "memory"
	// targetIdle starts a cluster of its own and reports each node's CPU
	// and memory doing nothing, without and with --idle-partitions.
	targetIdle = "idle"
)

// benchTargets are every target, in the order a run visits them;
// defaultBenchTargets leaves out the idle target, which takes minutes.
var (
	benchTargets        = []string{targetStrata, targetNoMetrics, targetNoOffload, targetKfake, targetFsync, targetMemory, targetIdle}
	defaultBenchTargets = []string{targetStrata, targetNoMetrics, targetKfake, targetFsync, targetMemory}
)

// benchOptions are `strata bench`'s settings.
type benchOptions struct {
	targets   []string // a subset of benchTargets, in their order
	bootstrap string   // bench this broker as "strata" instead of starting a node
	workload  kafkaWorkload
	// nodes is how many combined nodes the strata targets start; the
	// fsync ceiling runs that many loops in parallel, one per node.
	nodes           int
	idle            idleWorkload
	fsyncWriteBytes int
	runs            int
	nodeArgs        cli.KeyValues // --key=value flags for the node's serve
	readyTimeout    time.Duration // for the node to list a broker and a controller
	dir             string        // where the temp dir goes; "" is the system's
	// nodeCommand runs strata; "serve ..." is appended. Default
	// os.Args[0].
	nodeCommand []string
	// nodeEnv is added to the node's environment (tests use it).
	nodeEnv []string
	// kfake starts the kfake target; nil in a binary built without it.
	kfake Kfake
}

// Kfake starts franz-go's in-memory fake Kafka (kfake) in this process
// with the given number of brokers on 127.0.0.1, for the kfake target,
// and returns their addresses and how to stop them. The production
// strata binary does not link kfake (a test double has no place in a
// server binary): cmd/strata's bench_kfake.go passes one only in a build
// with -tags kfake, as `make bench-strata` builds bin/strata-bench.
type Kfake func(brokers int) (addrs []string, stop func(), err error)

// kfakeMissing says how to get the kfake target.
const kfakeMissing = "this strata binary was built without kfake (the kfake target's baseline): " +
	"build one with `go build -tags kfake -o bin/strata-bench ./cmd/strata`, or run `make bench-strata`"

// Command is `strata bench` with args after its name; kfake starts the
// kfake target, nil when the binary has none (the target is then left
// out of the defaults, and naming it is an error). It returns the exit
// code.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer, kfake Kfake) int {
	fs, cmd := cli.NewFlagSet("bench", "bench [flags]",
		"Runs one workload against three targets in turn and prints a table with ratios:\n"+
			"  strata  a Strata node the bench starts as a child process (or --bootstrap-server)\n"+
			"  kfake   franz-go's in-memory fake Kafka, in process: no disk, no fsync\n"+
			"  fsync   the disk's ceiling: write + fdatasync in a loop, in the bench's temp dir\n"+
			"The workload on a broker: a topic (RF 1), random records, no compression (see --compression and\n"+
			"--values); phase 1 produces with acks=all, linger 5 ms and 1 MiB batches for --duration, from\n"+
			"--producers clients at once; phase 2 reads it all back; phase 3 produces --latency-rate records/s\n"+
			"with linger 0 for --latency-duration and times each from Produce to acknowledgement; with\n"+
			"--flood-producers N, phase 4 runs phase 3 again while N other clients flood a second topic with\n"+
			"compressed batches. For a node it started, the bench reads the node's CPU time from /proc around\n"+
			"phases 1 and 2. With --runs N it prints medians [min, max].\n"+
			"strata-nometrics is a strata node with metrics off, and strata-nooffload (run only when named) one\n"+
			"that validates produced batches on its event loop instead of its workers: same-run baselines.\n"+
			"With --nodes N the strata targets are clusters of N combined nodes on 127.0.0.1, the topic has\n"+
			"replication factor N and min.insync.replicas N-1, and the fsync ceiling runs N loops at once.\n"+
			"Two more targets start nodes of their own: memory (one node's RSS at rest, with idle\n"+
			"connections, under a flood) and idle (--targets idle: each node's CPU and RSS doing nothing,\n"+
			"without and with --idle-partitions partitions).", stderr)
	targets := fs.String("targets", strings.Join(defaultBenchTargets, ","), "which targets to run, comma-separated, of "+strings.Join(benchTargets, ","))
	bootstrap := fs.String("bootstrap-server", "", "bench the broker at `host:port` as the strata target instead of starting a node (no CPU figures)")
	duration := fs.Duration("duration", defaultBenchDuration, "phase 1 (produce) and the fsync loop run this long")
	latencyDuration := fs.Duration("latency-duration", defaultBenchLatencyDuration, "phase 3 (latency) runs this long")
	latencyRate := fs.Int("latency-rate", defaultBenchLatencyRate, "phase 3's `records` per second")
	recordBytes := fs.Int("record-bytes", defaultBenchRecordBytes, "each record's value, random `bytes`")
	partitions := fs.Int("partitions", defaultBenchPartitions, "the topic's `partitions`")
	nodes := fs.Int("nodes", 1, "start this many combined `nodes` (one quorum) for each strata target; the fsync ceiling runs as many loops in parallel")
	rf := fs.Int("replication-factor", 0, "the topic's replication factor (default: --nodes)")
	minISR := fs.Int("min-insync-replicas", 0, "the topic's min.insync.replicas (default: one less than the replication factor, at least 1)")
	idlePartitions := fs.Int("idle-partitions", defaultIdlePartitions, "the idle target's `partitions` (one topic of --replication-factor)")
	idleDuration := fs.Duration("idle-duration", defaultIdleDuration, "how long the idle target measures CPU, with and without its partitions")
	maxBytes := fs.Int64("max-produce-bytes", defaultBenchMaxProduceBytes, "phase 1 also ends after producing this many `bytes`")
	compression := fs.String("compression", compressionNone, "the producers' `codec`: none, default (kgo's own default: snappy), gzip, snappy, lz4 or zstd; kgo sends a batch compressed only when that makes it smaller")
	values := fs.String("values", "", "the records' values: random (incompressible) or text (words of a 1,024-word vocabulary, about 2.8x with kgo's snappy, 3.2x with zstd); default random without --compression, text with it")
	producers := fs.Int("producers", 1, "phase 1's producer `clients`, each with its own connections")
	producer := fs.String("producer", producerKgo, "phase 1's and the flood's `client`: kgo, or raw (batches compressed once before the phase and sent again and again in hand-built Produce requests, acks=all, 5 in flight per connection: the broker's throughput rather than the client's compression)")
	floodProducers := fs.Int("flood-producers", 0, "add phase 4: phase 3 again while this many `clients` flood a second topic (0: no phase 4)")
	floodCompression := fs.String("flood-compression", defaultFloodCompression, "phase 4's flood `codec` (its values are text)")
	fsyncWrite := fs.Int("fsync-write-bytes", 0, "the fsync loop's write size in `bytes`; 0: the node's group commit measured in phase 1 of the same run (1 MiB without one)")
	runs := fs.Int("runs", defaultBenchRuns, "run every target's phases this many `times`, interleaved, and report medians")
	var nodeArgs cli.KeyValues
	fs.Var(&nodeArgs, "node-arg", "pass `key=value` to the node's 'strata serve' as --key=value, after the bench's own flags so it overrides them (repeatable)")
	readyTimeout := fs.Duration("ready-timeout", defaultBenchReadyTimeout, "how long the node may take to list a broker and a controller")
	dir := fs.String("dir", "", "make the temp dir (node data, fsync files) under this `directory` (default: the system's)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	o := benchOptions{
		bootstrap: *bootstrap,
		workload: kafkaWorkload{partitions: *partitions, recordBytes: *recordBytes, duration: *duration,
			maxProduceBytes: *maxBytes, latencyDuration: *latencyDuration, latencyRate: *latencyRate,
			replicationFactor: *rf, minInsyncReplicas: *minISR,
			compression: *compression, values: *values, producers: *producers, producer: *producer,
			floodProducers: *floodProducers, floodCompression: *floodCompression},
		nodes:           *nodes,
		idle:            idleWorkload{partitions: *idlePartitions, duration: *idleDuration},
		fsyncWriteBytes: *fsyncWrite,
		runs:            *runs,
		nodeArgs:        nodeArgs,
		readyTimeout:    *readyTimeout,
		dir:             *dir,
		nodeCommand:     []string{os.Args[0]},
	}
	o.kfake = kfake
	var err error
	if o.targets, err = parseTargets(*targets); err == nil && kfake == nil && slices.Contains(o.targets, targetKfake) {
		if targetsSet(fs) {
			err = errors.New("--targets kfake: " + kfakeMissing)
		} else {
			o.targets = slices.DeleteFunc(o.targets, func(t string) bool { return t == targetKfake })
			fmt.Fprintf(stderr, "strata bench: the kfake target is left out: %s\n", kfakeMissing)
		}
	}
	if err == nil {
		o.resolveReplication()
		o.resolveValues()
		err = o.validate(fs.NArg())
	}
	if err != nil {
		return cmd.UsageError("%v", err)
	}
	report, err := runBench(ctx, o, stderr)
	if err != nil {
		return cmd.Fail("%v", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return cmd.Fail("%v", err)
		}
	} else {
		report.print(stdout)
	}
	code := cli.ExitOK
	for _, t := range report.Targets {
		if t.Error != "" {
			code = cmd.Fail("%s failed: %s", t.Name, t.Error)
		}
	}
	return code
}

// targetsSet reports whether the command line gave --targets.
func targetsSet(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "targets" })
	return set
}

// parseTargets is --targets in benchTargets' order.
func parseTargets(s string) ([]string, error) {
	var out []string
	for _, t := range cli.SplitAddrs(s) {
		if !slices.Contains(benchTargets, t) {
			return nil, fmt.Errorf("--targets: unknown target %q (want some of %s)", t, strings.Join(benchTargets, ","))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--targets is empty")
	}
	slices.SortFunc(out, func(a, b string) int { return slices.Index(benchTargets, a) - slices.Index(benchTargets, b) })
	return out, nil
}

// freshEachRun is the run of a target that starts its nodes afresh every
// time: start starts them in dir-N for run N, measure measures them and
// they are stopped; record takes the measurement when both went well.
func freshEachRun[N interface{ stop() error }, R any](dir string, start func(ctx context.Context, dir string) (N, error),
	measure func(ctx context.Context, nodes N) (R, error), record func(R)) func(ctx context.Context) error {
	run := 0
	return func(ctx context.Context) error {
		run++
		nodes, err := start(ctx, fmt.Sprintf("%s-%d", dir, run))
		if err != nil {
			return err
		}
		res, err := measure(ctx, nodes)
		if serr := nodes.stop(); err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		record(res)
		return nil
	}
}

// plural is "1 strata node" or "3 strata nodes".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// resolveReplication fills the topic's replication factor and
// min.insync.replicas left at zero: --nodes, and one less (at least 1).
func (o *benchOptions) resolveReplication() {
	w := &o.workload
	if w.replicationFactor == 0 {
		w.replicationFactor = max(o.nodes, 1)
	}
	if w.minInsyncReplicas == 0 && w.replicationFactor > 1 {
		w.minInsyncReplicas = w.replicationFactor - 1
	}
}

// resolveValues fills the values left empty: text when the producers
// compress (random values do not compress, and kgo then sends them
// uncompressed), random otherwise.
func (o *benchOptions) resolveValues() {
	w := &o.workload
	if w.values == "" {
		w.values = valuesRandom
		if w.compression != "" && w.compression != compressionNone {
			w.values = valuesText
		}
	}
	if w.floodCompression == "" {
		w.floodCompression = defaultFloodCompression
	}
}

func (o *benchOptions) validate(extraArgs int) error {
	w := o.workload
	if _, err := parseCompression(w.compression); err != nil {
		return err
	}
	if _, err := parseCompression(w.floodCompression); err != nil {
		return fmt.Errorf("--flood-compression: %w", err)
	}
	switch {
	case w.values != valuesRandom && w.values != valuesText:
		return fmt.Errorf("--values must be %s or %s, got %q", valuesRandom, valuesText, w.values)
	case w.producerKind() != producerKgo && w.producerKind() != producerRaw:
		return fmt.Errorf("--producer must be %s or %s, got %q", producerKgo, producerRaw, w.producer)
	case w.producers < 1 || w.producers > benchFloodProducersMax:
		return fmt.Errorf("--producers must be 1 to %d, got %d", benchFloodProducersMax, w.producers)
	case w.floodProducers < 0 || w.floodProducers > benchFloodProducersMax:
		return fmt.Errorf("--flood-producers must be 0 to %d, got %d", benchFloodProducersMax, w.floodProducers)
	}
	switch {
	case o.nodes < 1 || o.nodes > benchNodesMax:
		return fmt.Errorf("--nodes must be 1 to %d, got %d", benchNodesMax, o.nodes)
	case w.replicationFactor < 1 || (o.bootstrap == "" && w.replicationFactor > o.nodes):
		return fmt.Errorf("--replication-factor must be 1 to --nodes (%d), got %d", o.nodes, w.replicationFactor)
	case w.minInsyncReplicas < 0 || w.minInsyncReplicas > w.replicationFactor:
		return fmt.Errorf("--min-insync-replicas must be 1 to the replication factor (%d), got %d", w.replicationFactor, w.minInsyncReplicas)
	case o.bootstrap != "" && o.nodes > 1:
		return errors.New("--nodes sets how many nodes the bench starts; with --bootstrap-server it starts none")
	case o.idle.partitions < 1 || o.idle.partitions > idlePartitionsMax:
		return fmt.Errorf("--idle-partitions must be 1 to %d, got %d", idlePartitionsMax, o.idle.partitions)
	case o.idle.duration <= 0:
		return errors.New("--idle-duration must be positive")
	case extraArgs > 0:
		return errors.New("unexpected arguments")
	case w.duration <= 0 || w.latencyDuration <= 0:
		return errors.New("--duration and --latency-duration must be positive")
	case w.latencyRate < 1 || w.latencyRate > 1_000_000:
		return fmt.Errorf("--latency-rate must be 1 to 1000000, got %d", w.latencyRate)
	case w.recordBytes < 1 || w.recordBytes > benchBatchMaxBytes/2:
		return fmt.Errorf("--record-bytes must be 1 to %d, got %d", benchBatchMaxBytes/2, w.recordBytes)
	case w.partitions < 1 || w.partitions > 1<<16:
		return fmt.Errorf("--partitions must be 1 to %d, got %d", 1<<16, w.partitions)
	case w.maxProduceBytes < 1:
		return errors.New("--max-produce-bytes must be positive")
	case o.fsyncWriteBytes < 0 || o.fsyncWriteBytes > fsyncFileBytesMax:
		return fmt.Errorf("--fsync-write-bytes must be 0 to %d, got %d", fsyncFileBytesMax, o.fsyncWriteBytes)
	case o.runs < 1 || o.runs > benchRunsMax:
		return fmt.Errorf("--runs must be 1 to %d, got %d", benchRunsMax, o.runs)
	case o.readyTimeout <= 0:
		return errors.New("--ready-timeout must be positive")
	case o.bootstrap != "" && !slices.Contains(o.targets, targetStrata):
		return errors.New("--bootstrap-server names the strata target, which --targets leaves out")
	case o.bootstrap != "" && len(o.nodeArgs) > 0:
		return errors.New("--node-arg configures a node the bench starts; with --bootstrap-server it starts none")
	}
	if o.bootstrap != "" {
		addrs, err := cli.ParseAddrs(o.bootstrap)
		if err != nil {
			return err
		}
		if len(addrs) != 1 {
			return errors.New("--bootstrap-server takes one address")
		}
	}
	return nil
}

// benchTarget is one target, set up: once tells it to run its phases
// one more time, appending the result to its report; teardown, when set,
// releases what the target holds (a node, kfake) and may run early.
type benchTarget struct {
	report   *targetReport
	once     func(ctx context.Context) error
	teardown func()
}

// runBench sets the targets up, runs every target's phases o.runs times
// (a run visits each target in turn, so all see the same machine
// weather), tears them down and reports. A target that fails is reported
// with its error and skipped in later runs; the error returned is for a
// bench that could not run at all.
func runBench(ctx context.Context, o benchOptions, progress io.Writer) (*benchReport, error) {
	dir, err := os.MkdirTemp(o.dir, "strata-bench-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	o.nodes = max(o.nodes, 1)
	o.resolveReplication()
	o.resolveValues()
	o.workload.floodCommand, o.workload.floodEnv = o.nodeCommand, o.nodeEnv
	if o.idle.settle == 0 {
		o.idle.settle = idleSettle
	}
	report := &benchReport{Settings: o.settings()}
	var targets []benchTarget
	defer func() {
		for _, t := range targets {
			t.teardown()
		}
	}()
	for _, name := range o.targets {
		t := &targetReport{Name: name}
		report.Targets = append(report.Targets, t)
		w := o.workload
		var teardown func()
		switch name {
		case targetStrata, targetNoMetrics, targetNoOffload:
			if o.bootstrap != "" {
				if name != targetStrata {
					t.Error = "the " + name + " target starts its own node; it cannot use --bootstrap-server"
					continue
				}
				t.Address, t.About = o.bootstrap, "the broker at "+o.bootstrap+" (--bootstrap-server; no CPU figures)"
				break
			}
			args := o.nodeArgs
			switch name {
			case targetNoMetrics:
				args = append(slices.Clone(args), cli.KeyValue{Key: node.KeyMetricsEnable, Value: "false"})
			case targetNoOffload:
				args = append(slices.Clone(args), cli.KeyValue{Key: node.KeyRequestOffload, Value: "false"})
			}
			fmt.Fprintf(progress, "strata bench: starting %s for the %s target\n", plural(o.nodes, "strata node"), name)
			cluster, err := startBenchCluster(ctx, o.nodeCommand, o.nodeEnv, filepath.Join(dir, name), o.nodes, args, o.readyTimeout)
			if err != nil {
				t.Error = err.Error()
				continue
			}
			teardown = func() {
				if err := cluster.stop(); err != nil {
					t.Error = strings.TrimPrefix(t.Error+"; then ", "; then ") + err.Error()
				}
			}
			t.Address = strings.Join(cluster.addrs(), ",")
			if o.nodes == 1 {
				t.About = fmt.Sprintf("a strata node started by the bench at %s (pid %d)", t.Address, cluster.nodes[0].cmd.Process.Pid)
			} else {
				t.About = fmt.Sprintf("%d combined strata nodes started by the bench at %s (CPU figures are their sum)", o.nodes, t.Address)
			}
			if len(args) > 0 {
				t.About += ", with --node-arg " + args.String()
			}
			w.cpu = cluster.cpuSeconds
			w.disk = cluster.diskCounters
		case targetKfake:
			addrs, stop, err := o.kfake(o.nodes)
			if err != nil {
				t.Error = "kfake: " + err.Error()
				continue
			}
			teardown = stop
			t.Address = strings.Join(addrs, ",")
			t.About = "kfake in process at " + t.Address + " (memory only, no fsync)"
			if o.nodes > 1 {
				t.About = fmt.Sprintf("kfake in process, %d brokers at %s (memory only, no fsync, no replication)", o.nodes, t.Address)
			}
		case targetMemory:
			if o.bootstrap != "" {
				t.Error = "the memory target starts its own node; it cannot use --bootstrap-server"
				continue
			}
			// A fresh node every run: the Go runtime keeps the heap a
			// flood grew, so a reused node's "at rest" would be the
			// previous run's peak.
			t.About = fmt.Sprintf("a strata node of its own, started afresh for every run: RSS at rest, with %d idle connections, and under %d flooding producers", benchIdleConns, benchFloodProducers)
			once := freshEachRun(dir+"/memory", func(ctx context.Context, dir string) (*benchNode, error) {
				fmt.Fprintln(progress, "strata bench: starting a strata node for the memory target")
				return startBenchNode(ctx, o.nodeCommand, o.nodeEnv, dir, o.nodeArgs, o.readyTimeout)
			}, w.memory, func(res memoryRun) {
				t.MemoryRuns = append(t.MemoryRuns, res)
				fmt.Fprintf(progress, "run %d/%d memory: RSS %.0f MiB at rest, %.0f MiB with %d idle connections, peak %.0f MiB under a %.0f MiB/s flood\n",
					len(t.MemoryRuns), o.runs, res.RSSAtRestMiB, res.RSSWithConnsMiB, res.IdleConns, res.RSSFloodPeakMiB, res.FloodMiBPerSec)
			})
			targets = append(targets, benchTarget{report: t, teardown: func() {}, once: once})
			continue
		case targetIdle:
			if o.bootstrap != "" {
				t.Error = "the idle target starts its own nodes; it cannot use --bootstrap-server"
				continue
			}
			t.About = fmt.Sprintf("%s of its own, started afresh for every run: each node's CPU and RSS over %v doing nothing, without and with %d partitions (RF %d); figures of the busiest node",
				plural(o.nodes, "strata node"), o.idle.duration, o.idle.partitions, w.replicationFactor)
			once := freshEachRun(dir+"/idle", func(ctx context.Context, dir string) (*benchCluster, error) {
				fmt.Fprintf(progress, "strata bench: starting %s for the idle target\n", plural(o.nodes, "strata node"))
				return startBenchCluster(ctx, o.nodeCommand, o.nodeEnv, dir, o.nodes, o.nodeArgs, o.readyTimeout)
			}, func(ctx context.Context, c *benchCluster) (idleRun, error) {
				return o.idle.run(ctx, c, w.replicationFactor, w.minInsyncReplicas, progress)
			}, func(res idleRun) {
				t.IdleRuns = append(t.IdleRuns, res)
				fmt.Fprintf(progress, "run %d/%d idle: busiest node %.1f%% CPU, %.0f MiB RSS empty; %.1f%% CPU, %.0f MiB RSS with %d partitions\n",
					len(t.IdleRuns), o.runs, maxCPU(res.Empty), maxRSS(res.Empty), maxCPU(res.Loaded), maxRSS(res.Loaded), res.Partitions)
			})
			targets = append(targets, benchTarget{report: t, teardown: func() {}, once: once})
			continue
		case targetFsync:
			loops := ""
			if o.nodes > 1 {
				loops = fmt.Sprintf("%d loops in parallel (one per node), each: ", o.nodes)
			}
			t.About = fmt.Sprintf("%swrites of the node's group-commit size (%d bytes without one), each followed by fdatasync, in %s", loops, defaultFsyncWriteBytes, dir)
			if o.fsyncWriteBytes > 0 {
				t.About = fmt.Sprintf("%s%d-byte writes, each followed by fdatasync, in %s", loops, o.fsyncWriteBytes, dir)
			}
			targets = append(targets, benchTarget{report: t, teardown: func() {}, once: func(ctx context.Context) error {
				size := o.fsyncWriteBytes
				if size == 0 {
					size = measuredGroupCommit(report)
				}
				res, err := fsyncCeiling(ctx, dir, size, o.workload.duration, o.nodes)
				if err != nil {
					return err
				}
				t.FsyncRuns = append(t.FsyncRuns, res)
				fmt.Fprintf(progress, "run %d/%d fsync: %.1f MiB/s, %.0f fsyncs/s, p50 %.2f ms, p99 %.2f ms\n",
					len(t.FsyncRuns), o.runs, res.MiBPerSec, res.FsyncsPerS, res.P50Ms, res.P99Ms)
				return nil
			}})
			continue
		}
		if teardown == nil {
			teardown = func() {}
		}
		targets = append(targets, benchTarget{report: t, teardown: sync.OnceFunc(teardown), once: func(ctx context.Context) error {
			topic := fmt.Sprintf("strata-bench-%d", time.Now().UnixNano())
			res, err := w.run(ctx, cli.SplitAddrs(t.Address), topic)
			if err != nil {
				return err
			}
			t.Runs = append(t.Runs, res)
			fmt.Fprintf(progress, "run %d/%d %s: produce %.1f MiB/s (%.0f%% of batches compressed, %.2fx), consume %.1f MiB/s, latency p50 %.2f ms p99 %.2f ms p999 %.2f ms\n",
				len(t.Runs), o.runs, name, res.Produce.MiBPerSec, 100*res.Batches.CompressedShare(), res.Batches.Ratio(), res.Consume.MiBPerSec, res.Latency.P50Ms, res.Latency.P99Ms, res.Latency.P999Ms)
			if f := res.Flood; f != nil {
				fmt.Fprintf(progress, "run %d/%d %s under a flood of %.1f MiB/s: latency p50 %.2f ms p99 %.2f ms (%.2fx phase 3's p99)\n",
					len(t.Runs), o.runs, name, f.Flood.MiBPerSec, f.Latency.P50Ms, f.Latency.P99Ms, f.P99Ratio)
			}
			return nil
		}})
	}

	for range o.runs {
		for _, t := range targets {
			if t.report.Error != "" {
				continue
			}
			if err := t.once(ctx); err != nil {
				t.report.Error = err.Error()
				t.teardown() // a failed node's CPU and memory go back to the other targets
			}
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("interrupted: %w", err)
			}
		}
	}
	for _, t := range report.Targets {
		t.summarize()
	}
	report.Ratios = report.ratios()
	return report, nil
}

// measuredGroupCommit is the group-commit size the strata node showed in
// its latest run's phase 1, or defaultFsyncWriteBytes.
func measuredGroupCommit(report *benchReport) int {
	for _, t := range report.Targets {
		if t.Name != targetStrata || len(t.Runs) == 0 {
			continue
		}
		if gc := t.Runs[len(t.Runs)-1].GroupCommit; gc != nil && gc.BytesPerFdatasync > 0 {
			return int(min(gc.BytesPerFdatasync, fsyncFileBytesMax))
		}
	}
	return defaultFsyncWriteBytes
}
