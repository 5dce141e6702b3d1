package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-log/strata/internal/bench/kfakebaseline"
	"github.com/strata-log/strata/internal/cli"
	"github.com/strata-log/strata/internal/proccluster"
	"github.com/stretchr/testify/require"
)

// benchTestTimeout bounds each bench test.
const benchTestTimeout = 30 * time.Second

// benchTestArgs is a short workload: a few hundred milliseconds a phase.
var benchTestArgs = []string{"--duration", "300ms", "--latency-duration", "300ms", "--latency-rate", "200",
	"--max-produce-bytes", strconv.Itoa(32 << 20), "--fsync-write-bytes", strconv.Itoa(64 << 10)}

// processTestContext builds the strata binary, before the test's clock
// starts, and returns a context bounded by benchTestTimeout that ends
// with the test.
func processTestContext(t *testing.T) context.Context {
	t.Helper()
	proccluster.Binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), benchTestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// benchTestWorkload is benchTestArgs' workload as options: a few hundred
// milliseconds a phase.
func benchTestWorkload() kafkaWorkload {
	return kafkaWorkload{partitions: 6, recordBytes: 1024, duration: 300 * time.Millisecond, maxProduceBytes: 32 << 20,
		latencyDuration: 300 * time.Millisecond, latencyRate: 200}
}

// benchTestOptions runs targets once with benchTestWorkload, in the
// test's temp dir, with this build as the strata binary.
func benchTestOptions(t *testing.T, targets ...string) benchOptions {
	return benchOptions{
		kfake:       kfakebaseline.Start,
		targets:     targets,
		workload:    benchTestWorkload(),
		runs:        1,
		dir:         t.TempDir(),
		nodeCommand: []string{proccluster.Binary(t)},
	}
}

// nodeTestOptions is benchTestOptions for targets that start nodes (and
// the fsync loop) as the tests need: a 64 KiB fsync write, and 20 s for
// a node to be ready.
func nodeTestOptions(t *testing.T, targets ...string) benchOptions {
	o := benchTestOptions(t, targets...)
	o.fsyncWriteBytes = 64 << 10
	o.readyTimeout = 20 * time.Second
	return o
}

// requireUsageErrors requires that the bench command exits with a usage
// error, saying why, on each of argss.
func requireUsageErrors(t *testing.T, argss [][]string) {
	t.Helper()
	for _, args := range argss {
		var out, errOut bytes.Buffer
		require.Equal(t, cli.ExitUsage, Command(context.Background(), args, &out, &errOut, kfakebaseline.Start), "%q", args)
		require.NotEmpty(t, errOut.String(), "%q says why", args)
	}
}

func TestBenchKfakeAndFsync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), benchTestTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	dir := t.TempDir()
	args := append([]string{"--targets", "fsync,kfake", "--runs", "2", "--json", "--dir", dir}, benchTestArgs...)
	code := Command(ctx, args, &out, &errOut, kfakebaseline.Start)
	require.Equal(t, cli.ExitOK, code, errOut.String())
	require.NoError(t, ctx.Err())

	var report benchReport
	require.NoError(t, json.Unmarshal(out.Bytes(), &report), out.String())
	require.Equal(t, 6, report.Settings.Partitions)
	require.Equal(t, 1024, report.Settings.RecordBytes)
	require.Equal(t, 2, report.Settings.Runs)
	require.Len(t, report.Targets, 2)
	kfake, fsync := report.Targets[0], report.Targets[1]
	require.Equal(t, "kfake", kfake.Name, "targets run in their fixed order")
	require.Equal(t, "fsync", fsync.Name)
	require.Empty(t, kfake.Error)
	require.Empty(t, fsync.Error)

	require.Len(t, kfake.Runs, 2)
	for _, r := range kfake.Runs {
		require.Positive(t, r.Produce.Records)
		require.Equal(t, r.Produce.Records*1024, r.Produce.Bytes)
		require.Positive(t, r.Produce.MiBPerSec)
		require.Positive(t, r.Produce.RecordsPerSec)
		require.True(t, r.Produce.Seconds >= 0.3 || r.Produce.Bytes >= 32<<20, "phase 1 ends at --duration or --max-produce-bytes: %+v", r.Produce)
		require.Equal(t, r.Produce.Records, r.Consume.Records, "phase 2 reads back everything phase 1 wrote")
		require.Equal(t, r.Produce.Bytes, r.Consume.Bytes)
		require.Positive(t, r.Consume.MiBPerSec)
		require.InDelta(t, 60, r.Latency.Records, 1, "300 ms at 200 records/s")
		require.Positive(t, r.Latency.P50Ms)
		require.GreaterOrEqual(t, r.Latency.P99Ms, r.Latency.P50Ms)
		require.GreaterOrEqual(t, r.Latency.P999Ms, r.Latency.P99Ms)
		require.Nil(t, r.CPU, "no CPU figures for an in-process broker")
	}
	require.Len(t, fsync.FsyncRuns, 2)
	for _, r := range fsync.FsyncRuns {
		require.Equal(t, 64<<10, r.WriteBytes)
		require.Positive(t, r.Fsyncs)
		require.Equal(t, r.Fsyncs*64<<10, r.Bytes)
		require.Positive(t, r.MiBPerSec)
		require.Positive(t, r.FsyncsPerS)
		require.Positive(t, r.P50Ms)
		require.GreaterOrEqual(t, r.P99Ms, r.P50Ms)
	}
	for _, target := range report.Targets {
		require.NotEmpty(t, target.Summary)
		for _, s := range target.Summary {
			require.LessOrEqual(t, s.Min, s.Median, s.Metric)
			require.LessOrEqual(t, s.Median, s.Max, s.Metric)
		}
	}
	require.Len(t, kfake.Summary, 7, "no CPU rows")
	require.Len(t, fsync.Summary, 5, "write size, MiB/s, fsyncs/s, p50, p99")
	require.Empty(t, report.Ratios, "every ratio needs the strata target")

	var human bytes.Buffer
	report.print(&human)
	for _, want := range []string{"produce MiB/s", "consume records/s", "produce latency p99.9 ms", "fsync MiB/s", "2 runs: median [min, max]"} {
		require.Contains(t, human.String(), want)
	}
	require.NotContains(t, human.String(), "CPU", "rows nobody has are left out")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "the temp dir is removed")
}

// TestBenchStrataChild starts a node as the bench's child process and
// runs the workload on it. Until the broker serves Produce and Fetch the
// workload fails: that must be a prompt error naming the phase, and the
// node must still be stopped cleanly.
func TestBenchStrataChild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real process")
	}
	ctx := processTestContext(t)
	o := nodeTestOptions(t, targetStrata)
	var progress bytes.Buffer
	report, err := runBench(ctx, o, &progress)
	require.NoError(t, err)
	require.NoError(t, ctx.Err(), "the bench must not hang on a node that cannot serve the workload")
	strata := report.Targets[0]
	require.Contains(t, strata.About, "a strata node started by the bench")
	require.Empty(t, strata.Error)
	require.Len(t, strata.Runs, 1)
	r := strata.Runs[0]
	require.Positive(t, r.Produce.MiBPerSec)
	require.Equal(t, r.Produce.Records, r.Consume.Records)
	require.NotNil(t, r.CPU)
	// CPU time is read in 10 ms ticks: a short phase may read 0.
	require.GreaterOrEqual(t, r.CPU.PerGiBProduced, 0.0)
	require.GreaterOrEqual(t, r.CPU.PerGiBFetched, 0.0)
	require.NotNil(t, r.GroupCommit, "the node's disk counters were read")
	require.Positive(t, r.GroupCommit.Fdatasyncs, "acks=all produced fdatasyncs")
}

// TestBenchReplicated runs the bench's cluster form: two combined nodes,
// a topic of replication factor 2, the fsync ceiling as two parallel
// loops, and the idle target's cluster with and without partitions.
func TestBenchReplicated(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ctx := processTestContext(t)
	o := nodeTestOptions(t, targetStrata, targetFsync, targetIdle)
	o.workload.partitions, o.workload.maxProduceBytes = 2, 16<<20
	o.nodes = 2
	o.idle = idleWorkload{partitions: 40, duration: 300 * time.Millisecond, settle: 100 * time.Millisecond}
	var progress bytes.Buffer
	report, err := runBench(ctx, o, &progress)
	require.NoError(t, err)
	require.Equal(t, 2, report.Settings.ReplicationFactor, "RF defaults to --nodes")
	require.Equal(t, 1, report.Settings.MinInsyncReplicas, "min ISR defaults to one less")
	strata, fsync, idle := report.Targets[0], report.Targets[1], report.Targets[2]
	for _, tr := range report.Targets {
		require.Empty(t, tr.Error, "%s failed; progress:\n%s", tr.Name, progress.String())
	}
	require.Contains(t, strata.About, "2 combined strata nodes")
	require.Len(t, strata.Runs, 1)
	r := strata.Runs[0]
	require.Positive(t, r.Produce.Records)
	require.Equal(t, r.Produce.Records, r.Consume.Records)
	require.NotNil(t, r.GroupCommit)
	// Both replicas fsync every acknowledged batch: the two nodes'
	// disks together wrote at least twice what was produced.
	require.GreaterOrEqual(t, int64(r.GroupCommit.BytesWritten), 2*r.Produce.Bytes)

	require.Len(t, fsync.FsyncRuns, 1)
	require.Equal(t, 2, fsync.FsyncRuns[0].Loops)
	perLoop, ok := fsync.median("fsync_mib_per_s_per_loop")
	require.True(t, ok)
	total, _ := fsync.median("fsync_mib_per_s")
	require.InDelta(t, total/2, perLoop, 1e-9)
	require.Contains(t, report.Ratios[len(report.Ratios)-1].Name, "per loop")

	require.Len(t, idle.IdleRuns, 1)
	ir := idle.IdleRuns[0]
	require.Len(t, ir.Empty, 2)
	require.Len(t, ir.Loaded, 2)
	for _, c := range append(ir.Empty, ir.Loaded...) {
		require.Positive(t, c.RSSMiB)
		require.GreaterOrEqual(t, c.CPUPercent, 0.0)
	}
	require.Positive(t, ir.FullISRSeconds)
	require.Contains(t, progress.String(), "40 partitions (RF 2) online on every replica")
}

func TestBenchNodeStartStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real process")
	}
	ctx := processTestContext(t)
	dir := t.TempDir()
	n, err := startBenchNode(ctx, []string{proccluster.Binary(t)}, nil, dir, nil, 20*time.Second)
	require.NoError(t, err)
	cpu, err := n.cpuSeconds()
	require.NoError(t, err)
	require.GreaterOrEqual(t, cpu, 0.0)
	_, err = os.Stat(filepath.Join(dir, "strata-node", "meta.properties"))
	require.NoError(t, err, "the node's data is under the bench's dir")
	require.NoError(t, n.stop(), "SIGTERM stops the node with exit 0")
	require.True(t, n.cmd.ProcessState.Success())
	require.Empty(t, benchNodeChildren(t, dir))
}

func TestBenchNodeNotReady(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real process")
	}
	ctx := processTestContext(t)

	// The node elects itself after the election timeout (at least a
	// second): it cannot be ready within 300 ms.
	dir := t.TempDir()
	start := time.Now()
	_, err := startBenchNode(ctx, []string{proccluster.Binary(t)}, nil, dir, nil, 300*time.Millisecond)
	require.ErrorContains(t, err, "was not ready within 300ms")
	require.ErrorContains(t, err, "its last log lines")
	require.Less(t, time.Since(start), 20*time.Second)
	require.Empty(t, benchNodeChildren(t, dir), "a node that was not ready is stopped")

	// A flag serve does not know: the node exits at once, and the error
	// carries its words.
	dir = t.TempDir()
	_, err = startBenchNode(ctx, []string{proccluster.Binary(t)}, nil, dir, cli.KeyValues{{Key: "no.such.flag", Value: "1"}}, 20*time.Second)
	require.ErrorContains(t, err, "exited before it was ready")
	require.ErrorContains(t, err, "flag provided but not defined: -no.such.flag")
	require.Empty(t, benchNodeChildren(t, dir))

	// Through the command: the strata target fails with that error and
	// the others still run.
	var out, errOut bytes.Buffer
	args := append([]string{"--targets", "strata,fsync", "--ready-timeout", "300ms", "--dir", t.TempDir()}, benchTestArgs...)
	code := Command(ctx, args, &out, &errOut, kfakebaseline.Start)
	require.Equal(t, cli.ExitError, code)
	require.Contains(t, errOut.String(), "strata bench: strata failed: the strata node at 127.0.0.1:")
	require.Contains(t, out.String(), "fsync MiB/s")
}

// benchNodeChildren are this process's live children whose command line
// mentions dir.
func benchNodeChildren(t *testing.T, dir string) []string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	require.NoError(t, err)
	var found []string
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			continue
		}
		for _, pid := range strings.Fields(string(b)) {
			cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
			if err == nil && bytes.Contains(cmdline, []byte(dir)) {
				found = append(found, pid)
			}
		}
	}
	return found
}

func TestBenchUsage(t *testing.T) {
	requireUsageErrors(t, [][]string{
		{"extra"},
		{"--no-such-flag"},
		{"--targets", "strata,redpanda"},
		{"--targets", ""},
		{"--duration", "0s"},
		{"--latency-rate", "0"},
		{"--record-bytes", "0"},
		{"--partitions", "0"},
		{"--runs", "0"},
		{"--fsync-write-bytes", "-1"},
		{"--targets", "kfake", "--bootstrap-server", "127.0.0.1:9092"},
		{"--bootstrap-server", "127.0.0.1:9092", "--node-arg", "a=b"},
		{"--bootstrap-server", "no-port"},
		{"--node-arg", "novalue"},
	})
	var out, errOut bytes.Buffer
	require.Equal(t, cli.ExitOK, Command(context.Background(), []string{"-h"}, &out, &errOut, kfakebaseline.Start))
	require.Contains(t, errOut.String(), "fdatasync")
}

func TestParseProcStatCPU(t *testing.T) {
	// utime 250 and stime 50 ticks; the command name holds a space and
	// a parenthesis.
	stat := "4242 (strata (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 0 0\n"
	s, err := parseProcStatCPU([]byte(stat))
	require.NoError(t, err)
	require.InDelta(t, 3.0, s, 1e-9)
	_, err = parseProcStatCPU([]byte("4242 (strata) S 1"))
	require.Error(t, err)

	self, err := processCPUSeconds(os.Getpid())
	require.NoError(t, err)
	require.GreaterOrEqual(t, self, 0.0)
}

func TestSummaries(t *testing.T) {
	require.Equal(t, metricSummary{Metric: "m", Median: 2, Min: 1, Max: 9}, summarizeValues("m", []float64{9, 1, 2}))
	require.Equal(t, metricSummary{Metric: "m", Median: 2.5, Min: 1, Max: 9}, summarizeValues("m", []float64{9, 1, 2, 3}))

	ds := make([]time.Duration, 1000)
	for i := range ds {
		ds[i] = time.Duration(1000-i) * time.Millisecond
	}
	require.Equal(t, 500.0, percentileMs(ds, 0.5))
	require.Equal(t, 990.0, percentileMs(ds, 0.99))
	require.Equal(t, 999.0, percentileMs(ds, 0.999))
	require.Equal(t, 0.0, percentileMs(nil, 0.5))

	report := &benchReport{Targets: []*targetReport{
		{Name: targetStrata, Summary: []metricSummary{{Metric: "produce_mib_per_s", Median: 50}, {Metric: "latency_p99_ms", Median: 4}}},
		{Name: targetKfake, Summary: []metricSummary{{Metric: "produce_mib_per_s", Median: 200}, {Metric: "latency_p99_ms", Median: 1}}},
		{Name: targetFsync, Summary: []metricSummary{{Metric: "fsync_mib_per_s", Median: 100}}},
	}}
	require.Equal(t, []benchRatio{
		{"strata/kfake produce MiB/s", 0.25},
		{"strata/kfake produce latency p99", 4},
		{"strata produce MiB/s / fsync ceiling MiB/s", 0.5},
	}, report.ratios())
}

// TestBenchWithoutKfake: a strata binary built without kfake (the
// production one) leaves the kfake target out of the defaults, saying
// how to get it, and refuses it when named.
func TestBenchWithoutKfake(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, cli.ExitUsage, Command(context.Background(), []string{"--targets", "kfake,fsync"}, &out, &errOut, nil))
	require.Contains(t, errOut.String(), "--targets kfake: this strata binary was built without kfake")
	require.Contains(t, errOut.String(), "make bench-strata")

	ctx, cancel := context.WithTimeout(context.Background(), benchTestTimeout)
	defer cancel()
	out.Reset()
	errOut.Reset()
	args := append([]string{"--targets", "fsync", "--json", "--dir", t.TempDir()}, benchTestArgs...)
	require.Equal(t, cli.ExitOK, Command(ctx, args, &out, &errOut, nil), errOut.String())
	require.NotContains(t, errOut.String(), "kfake target is left out", "named targets without kfake need no note")

	// The defaults: targetsSet tells them from a named kfake.
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("targets", strings.Join(defaultBenchTargets, ","), "")
	require.NoError(t, fs.Parse(nil))
	require.False(t, targetsSet(fs))
	require.NoError(t, fs.Parse([]string{"--targets", "fsync"}))
	require.True(t, targetsSet(fs))
}

func TestMain(m *testing.M) { os.Exit(proccluster.RunTests(m)) }
