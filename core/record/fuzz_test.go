package record

import (
	"bytes"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/internal/fuzzcorpus"
)

// Bounds for fuzzing: large enough for every seed, small enough that a
// mutated length or a bomb fails fast.
const (
	fuzzMaxBatchBytes        = 1 << 20
	fuzzMaxDecompressedBytes = 256 << 10
)

// fuzzSeed is one corpus entry: a name for its file and the fuzz arguments.
type fuzzSeed = fuzzcorpus.Seed

// seedBatches returns named batches: valid ones of every codec and shape,
// and broken ones of every kind of error.
func seedBatches(t tb) []fuzzSeed {
	var seeds []fuzzSeed
	add := func(name string, raw []byte) { seeds = append(seeds, fuzzSeed{Name: name, Args: []any{raw, false}}) }
	for _, c := range allCodecs {
		opts := append(codecOptions(c.codec, c.rawSnappy), WithProducer(11, 2, 30), WithBaseOffset(100))
		add("valid-"+c.name, build(t, sampleRecords(8), opts...))
	}
	marker := NewBuilder(WithProducer(11, 2, NoSequence), WithTransactional(), WithControl())
	marker.AppendControl(1_700_000_000_000, ControlCommit, EndTxnMarkerValue(4))
	raw, err := marker.AppendTo(nil)
	require.NoError(t, err)
	add("valid-control-marker", raw)
	add("valid-compacted", build(t, []Record{
		{OffsetDelta: 1, Timestamp: 10, Key: []byte("a"), Value: []byte("1")},
		{OffsetDelta: 5, Timestamp: 9, Key: []byte("b"), Value: nil},
	}, WithDeleteHorizon(86_400_000), WithLastOffsetDelta(9), WithCompression(CodecZstd)))
	add("valid-empty", build(t, nil, WithLastOffsetDelta(3), WithProducer(11, 2, 30)))
	add("valid-log-append-time", build(t, sampleRecords(4), WithLogAppendTime(1_800_000_000_000)))

	good := build(t, sampleRecords(8))
	add("broken-crc", flipBit(good, (len(good)-3)*8+1))
	add("broken-truncated", good[:len(good)-9])
	add("broken-magic1", setByte(good, offMagic, 1))
	garbage := uncompressedBatch([]byte{0x10, 0, 0x02, 0x00, 0x01, 0x01, 0x00}, 1, 0)
	add("broken-records-valid-crc", garbage)
	bomb := NewBuilder(WithCompression(CodecZstd))
	bomb.Append(0, nil, make([]byte, fuzzMaxDecompressedBytes*2))
	raw, err = bomb.AppendTo(nil)
	require.NoError(t, err)
	add("broken-zstd-bomb", raw)
	seeds = append(seeds,
		fuzzSeed{Name: "fixcrc-negative-count", Args: []any{withHeader(good, func(h *BatchHeader) { h.RecordCount = -1 }), true}},
		fuzzSeed{Name: "fixcrc-unknown-codec", Args: []any{withHeader(good, func(h *BatchHeader) { h.Attributes = 6 }), true}},
	)
	return seeds
}

// seedRecordSections turns seed batches into FuzzIterateRecords arguments:
// attributes, lastOffsetDelta, recordCount and the records section.
func seedRecordSections(t tb) []fuzzSeed {
	var seeds []fuzzSeed
	for _, s := range seedBatches(t) {
		b, err := ReadBatch(s.Args[0].([]byte), fuzzMaxBatchBytes)
		if err != nil || s.Args[1].(bool) {
			continue
		}
		seeds = append(seeds, fuzzSeed{Name: s.Name, Args: []any{
			int16(b.Attributes()), b.LastOffsetDelta(), b.RecordCount(), append([]byte{}, b.RecordBytes()...),
		}})
	}
	return seeds
}

// seedPayloads returns concatenations of batches, whole and damaged.
func seedPayloads(t tb) []fuzzSeed {
	seg, starts := segment(t)
	last := starts[len(starts)-1]
	return []fuzzSeed{
		{Name: "valid-segment", Args: []any{seg}},
		{Name: "valid-single", Args: []any{seg[:starts[1]]}},
		{Name: "torn-tail", Args: []any{seg[:len(seg)-7]}},
		{Name: "torn-header", Args: []any{seg[:last+30]}},
		{Name: "zero-tail", Args: []any{append(append([]byte{}, seg...), make([]byte, 64)...)}},
		{Name: "crc-in-middle", Args: []any{flipBit(seg, (starts[2]+offRecords+2)*8)}},
		{Name: "magic0-in-middle", Args: []any{setByte(seg, starts[3]+offMagic, 0)}},
	}
}

// withFixedCRC returns a copy of data with the CRC field set to the CRC32C
// of the bytes its batchLength claims, clamped to the buffer.
func withFixedCRC(data []byte) []byte {
	if len(data) < HeaderSize {
		return data
	}
	out := append([]byte{}, data...)
	end := int64(LogOverhead) + int64(Batch{raw: out}.BatchLength())
	end = max(min(end, int64(len(out))), offAttributes)
	writeCRC(out, crc32.Checksum(out[offAttributes:end], castagnoli))
	return out
}

// requireKnownError checks that err is one of ours: an *Error of a sentinel
// kind, never a bare library error or a panic turned into an error.
func requireKnownError(t *testing.T, err error) {
	t.Helper()
	var e *Error
	require.True(t, errors.As(err, &e), "error %v is not an *Error", err)
	known := false
	for _, kind := range []error{ErrCorrupt, ErrUnsupportedMagic, ErrBatchTooLarge, ErrInvalidRecord, ErrDecompressedTooLarge} {
		known = known || errors.Is(e.Kind, kind)
	}
	require.True(t, known, "error %v has unknown kind %v", err, e.Kind)
}

// readAllRecords reads every record of b with r, copying them.
func readAllRecords(r *RecordReader, b Batch) ([]Record, error) {
	if err := r.Reset(b); err != nil {
		return nil, err
	}
	var out []Record
	for r.Next() {
		out = append(out, cloneRecord(r.Record()))
	}
	return out, r.Err()
}

// requireRoundTrip rebuilds a valid batch from what was read out of it and
// checks that the rebuilt batch reads back the same.
func requireRoundTrip(t *testing.T, b Batch, recs []Record, r *RecordReader) {
	t.Helper()
	attrs := b.Attributes()
	opts := []BuilderOption{
		WithBaseOffset(b.BaseOffset()),
		WithPartitionLeaderEpoch(b.PartitionLeaderEpoch()),
		WithCompression(b.Codec()),
		WithProducer(b.ProducerID(), b.ProducerEpoch(), b.BaseSequence()),
		WithLastOffsetDelta(b.LastOffsetDelta()),
	}
	if b.Codec() == CodecSnappy && !bytes.HasPrefix(b.RecordBytes(), xerialMagic) {
		opts = append(opts, WithRawSnappy())
	}
	if attrs.IsTransactional() {
		opts = append(opts, WithTransactional())
	}
	if attrs.IsControl() {
		opts = append(opts, WithControl())
	}
	if attrs.TimestampType() == LogAppendTime {
		opts = append(opts, WithLogAppendTime(b.MaxTimestamp()))
	}
	if attrs.HasDeleteHorizon() {
		opts = append(opts, WithDeleteHorizon(b.BaseTimestamp()))
	}
	builder := NewBuilder(opts...)
	created := make([]int64, len(recs))
	for i, rec := range recs {
		created[i] = b.BaseTimestamp() + rec.TimestampDelta
		in := rec
		in.Timestamp = created[i]
		require.NoError(t, builder.AppendRecord(in))
	}
	raw, err := builder.AppendTo(nil)
	require.NoError(t, err)
	again, err := ReadBatch(raw, MaxBatchSize)
	require.NoError(t, err)
	require.NoError(t, again.ValidateStored())

	require.Equal(t, b.BaseOffset(), again.BaseOffset())
	require.Equal(t, b.PartitionLeaderEpoch(), again.PartitionLeaderEpoch())
	require.Equal(t, b.LastOffsetDelta(), again.LastOffsetDelta())
	require.Equal(t, b.RecordCount(), again.RecordCount())
	require.Equal(t, b.ProducerID(), again.ProducerID())
	require.Equal(t, b.ProducerEpoch(), again.ProducerEpoch())
	require.Equal(t, b.BaseSequence(), again.BaseSequence())
	a2 := again.Attributes()
	require.Equal(t, attrs.IsTransactional(), a2.IsTransactional())
	require.Equal(t, attrs.IsControl(), a2.IsControl())
	require.Equal(t, attrs.HasDeleteHorizon(), a2.HasDeleteHorizon())
	require.Equal(t, attrs.TimestampType(), a2.TimestampType())
	if len(recs) > 0 {
		require.Equal(t, b.Codec(), again.Codec())
	}
	if attrs.TimestampType() == LogAppendTime {
		require.Equal(t, b.MaxTimestamp(), again.MaxTimestamp())
	}

	got, err := readAllRecords(r, again)
	require.NoError(t, err)
	require.Len(t, got, len(recs))
	for i := range recs {
		require.Equal(t, created[i], again.BaseTimestamp()+got[i].TimestampDelta, "record %d create time", i)
		require.Equal(t, recs[i].Timestamp, got[i].Timestamp, "record %d timestamp", i)
		require.Equal(t, recs[i].Offset, got[i].Offset, "record %d offset", i)
	}
	requireSameRecords(t, withCreateTimes(recs, created), withCreateTimes(got, created))
}

// withCreateTimes returns recs with Timestamp replaced by the create times,
// so that requireSameRecords compares what the Builder was given.
func withCreateTimes(recs []Record, created []int64) []Record {
	out := append([]Record{}, recs...)
	for i := range out {
		out[i].Timestamp = created[i]
	}
	return out
}

func FuzzDecodeBatch(f *testing.F) {
	for _, s := range seedBatches(f) {
		f.Add(s.Args[0].([]byte), s.Args[1].(bool))
	}
	reader := NewRecordReader(NewDecompressor(fuzzMaxDecompressedBytes))
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		if fixCRC {
			// Mutations almost never keep the CRC; fixing it lets the
			// fuzzer reach the checks behind it.
			data = withFixedCRC(data)
		}
		b, err := ReadBatch(data, fuzzMaxBatchBytes)
		if err != nil {
			requireKnownError(t, err)
			return
		}
		require.LessOrEqual(t, b.Size(), len(data))
		require.Equal(t, data[:b.Size()], b.Bytes())
		_ = b.Header()
		if err := b.ValidateForAppend(OriginClient); err != nil {
			requireKnownError(t, err)
		}
		if err := b.ValidateStored(); err != nil {
			requireKnownError(t, err)
			return
		}
		recs, err := readAllRecords(reader, b)
		if err != nil {
			requireKnownError(t, err)
			return
		}
		require.Len(t, recs, int(b.RecordCount()))
		requireRoundTrip(t, b, recs, reader)
	})
}

func FuzzIterateRecords(f *testing.F) {
	for _, s := range seedRecordSections(f) {
		f.Add(s.Args[0].(int16), s.Args[1].(int32), s.Args[2].(int32), s.Args[3].([]byte))
	}
	reader := NewRecordReader(NewDecompressor(fuzzMaxDecompressedBytes))
	f.Fuzz(func(t *testing.T, attributes int16, lastOffsetDelta, recordCount int32, records []byte) {
		if len(records) > fuzzMaxBatchBytes-HeaderSize {
			return
		}
		// A valid CRC around whatever the fuzzer wrote, so that it
		// reaches the decompressors and the record parser.
		raw := uncompressedBatch(records, recordCount, lastOffsetDelta)
		h := Batch{raw: raw}.Header()
		h.Attributes = Attributes(attributes)
		putHeader(raw, h)
		writeCRC(raw, crcOf(raw))

		b, err := ReadBatch(raw, fuzzMaxBatchBytes)
		require.NoError(t, err)
		recs, err := readAllRecords(reader, b)
		if err != nil {
			requireKnownError(t, err)
			return
		}
		require.Len(t, recs, int(recordCount))
		for i := 1; i < len(recs); i++ {
			require.Greater(t, recs[i].OffsetDelta, recs[i-1].OffsetDelta)
		}
		if err := b.ValidateStored(); err != nil {
			requireKnownError(t, err)
			return
		}
		requireRoundTrip(t, b, recs, reader)
	})
}

func FuzzSplitBatches(f *testing.F) {
	for _, s := range seedPayloads(f) {
		f.Add(s.Args[0].([]byte))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, check := range []Check{CheckFraming, CheckStored} {
			s := NewSplitter(data, fuzzMaxBatchBytes, check)
			end := 0
			for s.Next() {
				require.Equal(t, end, s.Pos())
				end += s.Batch().Size()
				require.Equal(t, data[s.Pos():end], s.Batch().Bytes())
				if check == CheckStored {
					require.NoError(t, s.Batch().ValidateStored())
				}
			}
			require.Equal(t, end, s.ValidBytes())
			if s.Err() == nil {
				require.Equal(t, len(data), end)
			} else {
				requireKnownError(t, s.Err())
				require.Less(t, end, len(data))
				var e *Error
				require.True(t, errors.As(s.Err(), &e))
				require.GreaterOrEqual(t, e.Pos, end, "error inside the valid prefix")
			}

			// The valid prefix splits cleanly: recovery's truncation point
			// is stable.
			again := NewSplitter(data[:end], fuzzMaxBatchBytes, check)
			for again.Next() {
			}
			require.NoError(t, again.Err())
			require.Equal(t, end, again.ValidBytes())
		}
	})
}
