package bench

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/internal/cli"
)

// requireSlowBenchTests skips the slow end-to-end bench tests unless
// STRATA_BENCH_SLOW_TESTS=1 (`make bench-hostile` sets it). The raw
// producer's test (phase 1, phase 4 and the flood process) stays in
// `make test`.
func requireSlowBenchTests(t *testing.T) {
	t.Helper()
	if os.Getenv("STRATA_BENCH_SLOW_TESTS") != "1" {
		t.Skip("slow end-to-end bench test: STRATA_BENCH_SLOW_TESTS=1 runs it (make bench-hostile)")
	}
}

// hostileTestOptions is a short run of the compressed workload against
// kfake: two producers, phase 4 with one flooding client in a process of
// its own (the test binary as strata).
func hostileTestOptions(t *testing.T, producer, compression string) benchOptions {
	o := benchTestOptions(t, targetKfake)
	w := &o.workload
	w.compression, w.producer, w.producers = compression, producer, 2
	w.floodProducers, w.rawBatchMaxBytes = 1, 64<<10
	return o
}

// TestBenchCompressedWithFlood: with kgo's default compression the
// bench's text values go out snappy-compressed (random ones would go out
// uncompressed: kgo sends a batch compressed only when it shrinks), and
// phase 4 times the small client while a second process floods zstd.
//
// About 12 s under -race with its flood: outside `make test`'s budget,
// run by `make bench-hostile` (STRATA_BENCH_SLOW_TESTS=1).
func TestBenchCompressedWithFlood(t *testing.T) {
	requireSlowBenchTests(t)
	ctx := processTestContext(t)
	var progress bytes.Buffer
	report, err := runBench(ctx, hostileTestOptions(t, producerKgo, compressionDefault), &progress)
	require.NoError(t, err)
	kfake := report.Targets[0]
	require.Empty(t, kfake.Error, progress.String())
	require.Len(t, kfake.Runs, 1)
	r := kfake.Runs[0]
	require.Equal(t, valuesText, report.Settings.Values, "compression implies compressible values")
	require.Equal(t, 2, report.Settings.Producers)
	require.Positive(t, r.Produce.Records)
	require.Equal(t, r.Produce.Records, r.Consume.Records)
	// A batch of a record or two may not shrink, and goes out as it is.
	require.Greater(t, r.Batches.CompressedShare(), 0.9, "phase 1's batches go out compressed: %+v", r.Batches)
	require.Equal(t, r.Batches.Compressed, r.Batches.Codecs["snappy"], "kgo's default is snappy: %+v", r.Batches)
	require.Greater(t, r.Batches.Ratio(), 1.5)

	require.NotNil(t, r.Flood)
	f := r.Flood
	require.Equal(t, 1, f.Producers)
	require.Equal(t, "zstd", f.Compression)
	require.InDelta(t, 60, f.Latency.Records, 1, "300 ms at 200 records/s")
	require.Positive(t, f.Latency.P99Ms)
	require.InDelta(t, f.Latency.P99Ms/r.Latency.P99Ms, f.P99Ratio, 1e-9)
	// The small client starts once the flood has had a batch
	// acknowledged (how many more before it ends is the machine's).
	require.Positive(t, f.Batches.Codecs["zstd"])
	require.Greater(t, f.Batches.Ratio(), 1.5)

	var human bytes.Buffer
	report.print(&human)
	for _, want := range []string{"compression kgo's default (snappy, else none)", "2 producers at once", "Phase 4:",
		"under a flood: produce latency p99 ms", "phase 1 batches sent compressed %"} {
		require.Contains(t, human.String(), want)
	}
}

// TestBenchRawProducer: the raw producer's prebuilt zstd batches are
// acknowledged and read back record for record, in phase 1 and as the
// flood.
func TestBenchRawProducer(t *testing.T) {
	ctx := processTestContext(t)
	var progress bytes.Buffer
	report, err := runBench(ctx, hostileTestOptions(t, producerRaw, "zstd"), &progress)
	require.NoError(t, err, progress.String())
	kfake := report.Targets[0]
	require.Empty(t, kfake.Error, progress.String())
	r := kfake.Runs[0]
	require.Positive(t, r.Produce.Records)
	require.Equal(t, r.Produce.Records, r.Consume.Records, "phase 2 reads back every record the raw batches held")
	require.Equal(t, r.Produce.Bytes, r.Consume.Bytes)
	require.Equal(t, map[string]int64{"zstd": r.Batches.Batches}, r.Batches.Codecs)
	require.Greater(t, r.Batches.Ratio(), 2.0)
	require.NotNil(t, r.Flood)
	require.Positive(t, r.Flood.Batches.Codecs["zstd"])
}

// TestRawBatches: every prebuilt batch passes the broker's own
// validation, holds at most benchBatchMaxBytes of records, and counts
// its records and value bytes right; text values compress.
func TestRawBatches(t *testing.T) {
	values := textValues(64, 1024, 1)
	require.Len(t, values, 64)
	require.Equal(t, values, textValues(64, 1024, 1), "seeded")
	for _, compression := range []string{compressionNone, compressionDefault, "gzip", "lz4", "zstd"} {
		batches, err := buildRawBatches(values, compression, 3, 48<<10)
		require.NoError(t, err)
		require.Len(t, batches, 3)
		v := record.NewValidator()
		var sent, records int64
		for _, b := range batches {
			require.Equal(t, rawCodec(compression), b.codec)
			require.LessOrEqual(t, b.recordsBytes+record.HeaderSize, int64(48<<10))
			require.Greater(t, b.recordsBytes+record.HeaderSize, int64(46<<10), "filled")
			require.Equal(t, b.records*1024, b.valueBytes)
			batch, err := record.ReadProduceBatch(b.raw, len(b.raw))
			require.NoError(t, err)
			sum, err := v.ValidateProduce(batch, record.LimitsFor(benchBatchMaxBytes))
			require.NoError(t, err, compression)
			require.EqualValues(t, b.records, sum.Records)
			sent += int64(len(b.raw))
			records += int64(sum.DecompressedBytes)
		}
		// Over the batches (snappy's skip heuristic gives one of these
		// three batches only 1.3x).
		if compression != compressionNone {
			require.Less(t, float64(sent), 0.7*float64(records), "%s: text compresses", compression)
		}
	}
}

func TestBenchHostileUsage(t *testing.T) {
	requireUsageErrors(t, [][]string{
		{"--compression", "brotli"},
		{"--flood-compression", "brotli"},
		{"--values", "zeros"},
		{"--producers", "0"},
		{"--producer", "librdkafka"},
		{"--flood-producers", "-1"},
	})
	var out, errOut bytes.Buffer
	require.Equal(t, cli.ExitUsage, FloodCommand(context.Background(), []string{"--bootstrap-server", "127.0.0.1:1"}, bytes.NewReader(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "--topic")
}

// TestBenchStrataNoOffloadRaw runs the raw zstd producer and flood on a
// node with validation on its event loop (the strata-nooffload target):
// the node validates and takes every prebuilt batch, and the node's
// CPU figures include the cores it used.
//
// Outside `make test`'s budget like TestBenchCompressedWithFlood.
func TestBenchStrataNoOffloadRaw(t *testing.T) {
	requireSlowBenchTests(t)
	ctx := processTestContext(t)
	o := hostileTestOptions(t, producerRaw, "zstd")
	o.targets = []string{targetNoOffload}
	o.readyTimeout = 20 * time.Second
	var progress bytes.Buffer
	report, err := runBench(ctx, o, &progress)
	require.NoError(t, err)
	target := report.Targets[0]
	require.Empty(t, target.Error, progress.String())
	require.Contains(t, target.About, "strata.request.offload.enable=false")
	r := target.Runs[0]
	require.Positive(t, r.Produce.Records)
	require.Equal(t, r.Produce.Records, r.Consume.Records)
	require.NotNil(t, r.CPU)
	require.GreaterOrEqual(t, r.CPU.ProduceCores, 0.0)
	require.NotNil(t, r.Flood)
	require.Positive(t, r.Flood.Batches.Batches)
}
