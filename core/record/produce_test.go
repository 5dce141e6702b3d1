package record_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/record/recordtest"
)

// testTimestamp is where test records are stamped.
const testTimestamp = 1_700_000_000_000

// codecs lists the compression codecs, snappy in both framings.
var codecs = []struct {
	name string
	opts []record.BuilderOption
}{
	{"none", nil},
	{"gzip", []record.BuilderOption{record.WithCompression(record.CodecGzip)}},
	{"snappy-xerial", []record.BuilderOption{record.WithCompression(record.CodecSnappy)}},
	{"snappy-raw", []record.BuilderOption{record.WithCompression(record.CodecSnappy), record.WithRawSnappy()}},
	{"lz4", []record.BuilderOption{record.WithCompression(record.CodecLZ4)}},
	{"zstd", []record.BuilderOption{record.WithCompression(record.CodecZstd)}},
}

// testRecords are n records whose keys are sometimes null and whose
// timestamps go up and down.
func testRecords(n int) []record.Record {
	recs := make([]record.Record, n)
	for i := range recs {
		r := &recs[i]
		r.OffsetDelta = int32(i)
		r.Timestamp = testTimestamp + int64(i%7)*13 - 20
		if i%5 != 3 {
			r.Key = []byte{'k', byte('0' + i%10)}
		}
		r.Value = bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%40)
		if i%3 == 0 {
			r.Headers = []record.Header{{Key: []byte("h"), Value: []byte{byte(i)}}}
		}
	}
	return recs
}

func buildBatch(t testing.TB, recs []record.Record, opts ...record.BuilderOption) record.Batch {
	t.Helper()
	b := record.NewBuilder(opts...)
	for _, r := range recs {
		require.NoError(t, b.AppendRecord(r))
	}
	raw, err := b.AppendTo(nil)
	require.NoError(t, err)
	return readBatch(t, raw)
}

func readBatch(t testing.TB, raw []byte) record.Batch {
	t.Helper()
	b, err := record.ReadBatch(raw, record.MaxBatchSize)
	require.NoError(t, err)
	return b
}

var defaultLimits = record.LimitsFor(record.DefaultMaxBatchBytes)

func TestValidateProduceSummary(t *testing.T) {
	recs := testRecords(20)
	want := record.ProduceSummary{Records: 20, MinTimestampRecord: -1, MaxTimestampRecord: -1, FirstNullKey: -1, InvalidRecord: -1}
	for i, r := range recs {
		if want.MinTimestampRecord < 0 || r.Timestamp < want.MinTimestamp {
			want.MinTimestamp, want.MinTimestampRecord = r.Timestamp, int32(i)
		}
		if want.MaxTimestampRecord < 0 || r.Timestamp > want.MaxTimestamp {
			want.MaxTimestamp, want.MaxTimestampRecord = r.Timestamp, int32(i)
		}
		if r.Key == nil {
			if want.NullKeys == 0 {
				want.FirstNullKey = int32(i)
			}
			want.NullKeys++
		}
	}
	require.Equal(t, int32(3), want.FirstNullKey)
	require.Equal(t, int32(6), want.MaxTimestampRecord)
	v := record.NewValidator()
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			b := buildBatch(t, recs, c.opts...)
			got, err := v.ValidateProduce(b, defaultLimits)
			require.NoError(t, err)
			require.Positive(t, got.DecompressedBytes)
			got.DecompressedBytes = 0
			require.Equal(t, want, got)
		})
	}
}

// TestValidateProduceMalformed: every malformed shape of issue 22 (a CRC
// that holds around records that do not) is refused, with the record at
// fault named.
func TestValidateProduceMalformed(t *testing.T) {
	v := record.NewValidator()
	for _, s := range recordtest.Malformed(testTimestamp) {
		t.Run(s.Name, func(t *testing.T) {
			b, err := record.ReadProduceBatch(s.Payload, record.DefaultMaxBatchBytes)
			require.NoError(t, err, "the framing holds")
			require.NoError(t, b.ValidateStored(), "and so does the CRC")
			sum, err := v.ValidateProduce(b, defaultLimits)
			require.ErrorIs(t, err, s.Kind)
			require.NotErrorIs(t, err, record.ErrCorrupt, "INVALID_RECORD, not the retriable CORRUPT_MESSAGE")
			var e *record.Error
			require.True(t, errors.As(err, &e), "%v is an *Error", err)
			require.Equal(t, s.Record, sum.InvalidRecord, "%v", err)
		})
	}
	// The validator is not left in a state that refuses the next batch.
	_, err := v.ValidateProduce(buildBatch(t, testRecords(5), record.WithCompression(record.CodecZstd)), defaultLimits)
	require.NoError(t, err)
}

func TestValidateProduceHeaderRules(t *testing.T) {
	v := record.NewValidator()
	raw := append([]byte{}, buildBatch(t, testRecords(3)).Bytes()...)
	raw[len(raw)-1] ^= 1
	_, err := v.ValidateProduce(readBatch(t, raw), defaultLimits)
	require.ErrorIs(t, err, record.ErrCRCMismatch)

	control := buildBatch(t, nil, record.WithControl(), record.WithProducer(1, 0, record.NoSequence), record.WithTransactional())
	_, err = v.ValidateProduce(control, defaultLimits)
	require.ErrorIs(t, err, record.ErrInvalidRecord)

	gap := buildBatch(t, []record.Record{{OffsetDelta: 0}, {OffsetDelta: 2}})
	sum, err := v.ValidateProduce(gap, defaultLimits)
	require.ErrorIs(t, err, record.ErrInvalidRecord)
	require.Equal(t, int32(-1), sum.InvalidRecord, "the header's lastOffsetDelta disagrees with its count")
}

func TestMaxDecompressedBytes(t *testing.T) {
	require.Equal(t, 16*record.DefaultMaxBatchBytes, record.MaxDecompressedBytes(record.DefaultMaxBatchBytes))
	require.Equal(t, 16<<20, record.MaxDecompressedBytes(1000), "the floor")
	require.Equal(t, 160<<20, record.MaxDecompressedBytes(10<<20))
	require.Equal(t, math.MaxInt32, record.MaxDecompressedBytes(math.MaxInt32), "the ceiling")
}

// TestValidateProduceBoundIsExact: a batch that decompresses to the limit
// passes, one byte more does not, whatever the codec.
func TestValidateProduceBoundIsExact(t *testing.T) {
	v := record.NewValidator()
	for _, c := range codecs[1:] {
		t.Run(c.name, func(t *testing.T) {
			b := buildBatch(t, []record.Record{{Value: bytes.Repeat([]byte("strata "), 20_000)}}, c.opts...)
			sum, err := v.ValidateProduce(b, record.ProduceLimits{MaxDecompressedBytes: 1 << 20})
			require.NoError(t, err)
			size := sum.DecompressedBytes
			_, err = v.ValidateProduce(b, record.ProduceLimits{MaxDecompressedBytes: size})
			require.NoError(t, err)
			_, err = v.ValidateProduce(b, record.ProduceLimits{MaxDecompressedBytes: size - 1})
			require.ErrorIs(t, err, record.ErrDecompressedTooLarge)
		})
	}
}

// bomb is one decompression bomb and the most its refusal may allocate.
type bomb struct {
	name     string
	payload  []byte
	maxAlloc uint64
}

// bombs builds the bombs of every codec: what each expands to, the way an
// attacker builds it. The largest takes a few seconds to compress.
func bombs(t testing.TB) []bomb {
	t.Helper()
	limit := uint64(defaultLimits.MaxDecompressedBytes)
	// A bomb found by its headers allocates nothing of its size; one found
	// by decoding allocates the limit once (zstd) or doubles up to it
	// (gzip, lz4), about twice the limit in all, plus the codec's own
	// buffers (lz4's are two 4 MiB blocks).
	const headersOnly = 1 << 20
	streamed := 2*limit + 9<<20
	var out []bomb
	for _, size := range []int64{64 << 20, 2 << 30} {
		name := fmt.Sprintf("%dMiB", size>>20)
		out = append(out,
			bomb{"zstd-stream-" + name, recordtest.Bomb(record.CodecZstd, size, testTimestamp), streamed},
			bomb{"zstd-rle-" + name, recordtest.ZstdRLEBomb(size, testTimestamp), headersOnly},
			bomb{"gzip-" + name, recordtest.Bomb(record.CodecGzip, size, testTimestamp), streamed},
			bomb{"lz4-" + name, recordtest.Bomb(record.CodecLZ4, size, testTimestamp), streamed},
			bomb{"snappy-" + name, recordtest.Bomb(record.CodecSnappy, size, testTimestamp), headersOnly},
		)
	}
	// franz-go's zstd states the content size: refused from the header.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	require.NoError(t, err)
	rec := append([]byte{}, recordtest.Record(0, 0, nil, nil)...)
	big := make([]byte, 64<<20)
	payload := enc.EncodeAll(append(rec, big...), nil)
	out = append(out, bomb{"zstd-declared-64MiB", record.Assemble(record.BatchHeader{
		Attributes: record.Attributes(record.CodecZstd), BaseTimestamp: testTimestamp, MaxTimestamp: testTimestamp,
		ProducerID: record.NoProducerID, ProducerEpoch: record.NoProducerEpoch, BaseSequence: record.NoSequence, RecordCount: 1,
	}, payload), headersOnly})
	return out
}

// TestValidateProduceRefusesBombsWithinTheirBound: a bomb of every codec,
// to 64 MiB and to 2 GiB (the sizes issue 22 found stored), is refused as
// ErrDecompressedTooLarge at the default limit (16 MiB), allocating at
// most about twice the limit however large the bomb, and nothing of its
// size when its headers give it away.
func TestValidateProduceRefusesBombsWithinTheirBound(t *testing.T) {
	for _, bm := range bombs(t) {
		t.Run(bm.name, func(t *testing.T) {
			require.Less(t, len(bm.payload), 9<<20, "the bomb fits a produce request")
			b := readBatch(t, bm.payload)
			v := record.NewValidator() // a fresh one: its first batch pays for the codec too
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := v.ValidateProduce(b, defaultLimits)
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, record.ErrDecompressedTooLarge)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: %d-byte batch refused, %.1f MiB allocated", bm.name, len(bm.payload), float64(allocated)/(1<<20))
			require.LessOrEqual(t, allocated, bm.maxAlloc, "allocated %d bytes", allocated)
		})
	}
}

// TestValidateProduceWarmAllocatesNothing: a warm validator reads an
// uncompressed batch without allocating.
func TestValidateProduceWarmAllocatesNothing(t *testing.T) {
	v := record.NewValidator()
	b := buildBatch(t, testRecords(50))
	run := func() {
		if _, err := v.ValidateProduce(b, defaultLimits); err != nil {
			t.Fatal(err)
		}
	}
	run()
	require.Zero(t, testing.AllocsPerRun(20, run))
}
