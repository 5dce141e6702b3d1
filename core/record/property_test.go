package record

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// batchSpec is an arbitrary batch: records plus every header field a
// Builder can set, and what the header should read back as.
type batchSpec struct {
	records        []Record
	codec          Codec
	rawSnappy      bool
	baseOffset     int64
	leaderEpoch    int32
	producerID     int64
	producerEpoch  int16
	baseSequence   int32
	transactional  bool
	control        bool
	logAppendTime  bool
	appendTime     int64
	deleteHorizon  bool
	horizonMs      int64
	lastDeltaExtra int32 // added to the last record's delta via WithLastOffsetDelta
}

func (s *batchSpec) options() []BuilderOption {
	opts := append(codecOptions(s.codec, s.rawSnappy),
		WithBaseOffset(s.baseOffset),
		WithPartitionLeaderEpoch(s.leaderEpoch),
		WithProducer(s.producerID, s.producerEpoch, s.baseSequence))
	if s.transactional {
		opts = append(opts, WithTransactional())
	}
	if s.control {
		opts = append(opts, WithControl())
	}
	if s.logAppendTime {
		opts = append(opts, WithLogAppendTime(s.appendTime))
	}
	if s.deleteHorizon {
		opts = append(opts, WithDeleteHorizon(s.horizonMs))
	}
	if s.lastDeltaExtra > 0 {
		opts = append(opts, WithLastOffsetDelta(s.lastDelta()+s.lastDeltaExtra))
	}
	return opts
}

// lastDelta is the last record's offset delta, or 0 with no records.
func (s *batchSpec) lastDelta() int32 {
	if len(s.records) == 0 {
		return 0
	}
	return s.records[len(s.records)-1].OffsetDelta
}

func genNullableBytes(maxLen int) *rapid.Generator[[]byte] {
	return rapid.Custom(func(t *rapid.T) []byte {
		if rapid.IntRange(0, 4).Draw(t, "null") == 0 {
			return nil
		}
		b := rapid.SliceOfN(rapid.Byte(), 0, maxLen).Draw(t, "bytes")
		if b == nil {
			b = []byte{}
		}
		return b
	})
}

// genTimestamp mostly draws realistic milliseconds, sometimes anything.
var genTimestamp = rapid.OneOf(
	rapid.Int64Range(1_600_000_000_000, 1_900_000_000_000),
	rapid.Just(NoTimestamp),
	rapid.Int64(),
)

func genRecords(t *rapid.T, gaps bool) []Record {
	n := rapid.IntRange(0, 12).Draw(t, "records")
	recs := make([]Record, n)
	delta := int32(0)
	if gaps {
		delta = rapid.Int32Range(0, 3).Draw(t, "firstDelta")
	}
	for i := range recs {
		r := &recs[i]
		r.OffsetDelta = delta
		if gaps {
			delta += rapid.Int32Range(1, 4).Draw(t, "gap")
		} else {
			delta++
		}
		r.Attributes = int8(rapid.IntRange(-128, 127).Draw(t, "attributes"))
		r.Timestamp = genTimestamp.Draw(t, "timestamp")
		r.Key = genNullableBytes(24).Draw(t, "key")
		r.Value = genNullableBytes(200).Draw(t, "value")
		for h := rapid.IntRange(0, 3).Draw(t, "headers"); h > 0; h-- {
			key := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "headerKey")
			r.Headers = append(r.Headers, Header{Key: key, Value: genNullableBytes(16).Draw(t, "headerValue")})
		}
	}
	return recs
}

// genBatchHeader draws what every batch has: a codec, a base offset up to
// maxOffset, a leader epoch from epochs and a producer.
func genBatchHeader(t *rapid.T, maxOffset int64, epochs *rapid.Generator[int32]) batchSpec {
	c := rapid.SampledFrom(allCodecs).Draw(t, "codec")
	return batchSpec{
		codec:         c.codec,
		rawSnappy:     c.rawSnappy,
		baseOffset:    rapid.Int64Range(0, maxOffset).Draw(t, "baseOffset"),
		leaderEpoch:   epochs.Draw(t, "leaderEpoch"),
		producerID:    rapid.Int64Range(-1, 1<<40).Draw(t, "producerID"),
		producerEpoch: rapid.Int16().Draw(t, "producerEpoch"),
		baseSequence:  rapid.Int32().Draw(t, "baseSequence"),
	}
}

func genBatchSpec(t *rapid.T) batchSpec {
	s := genBatchHeader(t, 1<<50, rapid.Int32())
	s.transactional = rapid.Bool().Draw(t, "transactional")
	s.control = rapid.Bool().Draw(t, "control")
	s.logAppendTime = rapid.Bool().Draw(t, "logAppendTime")
	s.appendTime = genTimestamp.Draw(t, "appendTime")
	s.deleteHorizon = rapid.Bool().Draw(t, "deleteHorizon")
	s.horizonMs = genTimestamp.Draw(t, "horizon")
	s.records = genRecords(t, rapid.Bool().Draw(t, "gaps"))
	if rapid.IntRange(0, 3).Draw(t, "extendLast") == 0 {
		s.lastDeltaExtra = rapid.Int32Range(1, 10).Draw(t, "lastDeltaExtra")
	}
	return s
}

func buildSpec(t *rapid.T, s *batchSpec) []byte {
	b := NewBuilder(s.options()...)
	for _, r := range s.records {
		if err := b.AppendRecord(r); err != nil {
			t.Fatalf("append: %v", err)
		}
	}
	raw, err := b.AppendTo(nil)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return raw
}

func TestPropertyRoundTrip(t *testing.T) {
	dec := NewDecompressor(DefaultMaxDecompressedBytes)
	reader := NewRecordReader(dec)
	rapid.Check(t, func(t *rapid.T) {
		s := genBatchSpec(t)
		raw := buildSpec(t, &s)
		b := mustRead(t, raw)
		require.Equal(t, len(raw), b.Size())

		require.Equal(t, s.baseOffset, b.BaseOffset())
		require.Equal(t, s.leaderEpoch, b.PartitionLeaderEpoch())
		wantCodec := s.codec
		if len(s.records) == 0 {
			wantCodec = CodecNone
		}
		require.Equal(t, wantCodec, b.Codec())
		require.Equal(t, s.producerID, b.ProducerID())
		require.Equal(t, s.producerEpoch, b.ProducerEpoch())
		require.Equal(t, s.baseSequence, b.BaseSequence())
		require.Equal(t, int32(len(s.records)), b.RecordCount())
		require.Equal(t, s.lastDelta()+s.lastDeltaExtra, b.LastOffsetDelta())
		attrs := b.Attributes()
		require.Equal(t, s.transactional, attrs.IsTransactional())
		require.Equal(t, s.control, attrs.IsControl())
		require.Equal(t, s.deleteHorizon, attrs.HasDeleteHorizon())
		require.Equal(t, s.logAppendTime, attrs.TimestampType() == LogAppendTime)
		switch {
		case s.deleteHorizon:
			require.Equal(t, s.horizonMs, b.BaseTimestamp())
		case len(s.records) > 0:
			require.Equal(t, s.records[0].Timestamp, b.BaseTimestamp())
		default:
			require.Equal(t, NoTimestamp, b.BaseTimestamp())
		}
		wantMax := NoTimestamp
		for i, r := range s.records {
			if i == 0 || r.Timestamp > wantMax {
				wantMax = r.Timestamp
			}
		}
		if s.logAppendTime {
			wantMax = s.appendTime
		}
		require.Equal(t, wantMax, b.MaxTimestamp())

		require.NoError(t, reader.Reset(b))
		var got []Record
		for reader.Next() {
			got = append(got, cloneRecord(reader.Record()))
		}
		require.NoError(t, reader.Err())
		want := append([]Record{}, s.records...)
		for i := range want {
			if s.logAppendTime {
				want[i].Timestamp = s.appendTime
			}
			require.Equal(t, s.baseOffset+int64(want[i].OffsetDelta), got[i].Offset)
		}
		requireSameRecords(t, want, got)
	})
}

func TestPropertyBitFlipDetected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genBatchSpec(t)
		raw := buildSpec(t, &s)
		// Every bit from magic to the end: magic and crc by their own
		// checks, [attributes, end) by CRC32C, which catches every
		// single-bit error.
		bit := rapid.IntRange(offMagic*8, len(raw)*8-1).Draw(t, "bit")
		flipped := flipBit(raw, bit)
		b, err := ReadBatch(flipped, MaxBatchSize)
		if err == nil {
			err = b.ValidateStored()
		}
		require.Error(t, err, "flip of bit %d of %d went unnoticed", bit, len(raw)*8)
	})
}

func TestPropertyTruncationDetected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var buf []byte
		var ends []int
		for n := rapid.IntRange(1, 3).Draw(t, "batches"); n > 0; n-- {
			s := genBatchSpec(t)
			buf = append(buf, buildSpec(t, &s)...)
			ends = append(ends, len(buf))
		}
		cut := rapid.IntRange(0, len(buf)-1).Draw(t, "cut")

		_, err := ReadBatch(buf[:min(cut, ends[0]-1)], MaxBatchSize)
		require.ErrorIs(t, err, ErrTruncated)

		s := NewSplitter(buf[:cut], MaxBatchSize, CheckStored)
		yielded := 0
		for s.Next() {
			yielded++
		}
		wantValid, wantYield := 0, 0
		for _, end := range ends {
			if end <= cut {
				wantValid, wantYield = end, wantYield+1
			}
		}
		require.Equal(t, wantYield, yielded)
		require.Equal(t, wantValid, s.ValidBytes())
		if cut == wantValid {
			require.NoError(t, s.Err())
		} else {
			require.ErrorIs(t, s.Err(), ErrTruncated)
		}
	})
}

func TestPropertySetMaxTimestampPatchesCRC(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genBatchSpec(t)
		raw := buildSpec(t, &s)
		b, err := ReadBatch(raw, MaxBatchSize)
		require.NoError(t, err)
		typ := rapid.SampledFrom([]TimestampType{CreateTime, LogAppendTime}).Draw(t, "type")
		ts := genTimestamp.Draw(t, "maxTimestamp")
		b.SetMaxTimestamp(typ, ts)
		require.Equal(t, b.ComputeCRC(), b.CRC())
		require.Equal(t, ts, b.MaxTimestamp())
		require.Equal(t, typ, b.Attributes().TimestampType())
	})
}

func TestPropertyVarints(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v32 := rapid.Int32().Draw(t, "int32")
		enc := appendVarint(nil, v32)
		require.Equal(t, varintSize(v32), len(enc))
		got, n := readVarint(enc)
		require.Equal(t, len(enc), n)
		require.Equal(t, v32, got)

		v64 := rapid.Int64().Draw(t, "int64")
		enc = appendVarlong(nil, v64)
		got64, n := readVarlong(enc)
		require.Equal(t, len(enc), n)
		require.Equal(t, v64, got64)
		_, n = readVarlong(enc[:len(enc)-1])
		require.Equal(t, 0, n, "truncated varint")
	})
}
