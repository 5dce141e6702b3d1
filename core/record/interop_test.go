package record

import (
	"bytes"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"
)

// These tests hold our encoding to franz-go's: kmsg.RecordBatch and
// kmsg.Record for the framing, kgo's default compressor and decompressor for
// the codecs. kgo's batch building is internal, so the franz-go side of a
// batch is assembled here from those public pieces, the way kgo does.

func kgoCodec(c Codec) kgo.CompressionCodec {
	switch c {
	case CodecGzip:
		return kgo.GzipCompression()
	case CodecSnappy:
		return kgo.SnappyCompression()
	case CodecLZ4:
		return kgo.Lz4Compression()
	case CodecZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// kmsgRecords encodes records with kmsg.Record, relative to firstTimestamp.
func kmsgRecords(t tb, recs []Record, firstTimestamp int64) []byte {
	t.Helper()
	var out []byte
	for _, r := range recs {
		kr := kmsg.Record{
			Attributes:       r.Attributes,
			TimestampDelta64: r.Timestamp - firstTimestamp,
			OffsetDelta:      r.OffsetDelta,
			Key:              r.Key,
			Value:            r.Value,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: string(h.Key), Value: h.Value})
		}
		// kmsg writes Length as given: measure the body first.
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		out = kr.AppendTo(out)
	}
	return out
}

// kmsgBatch builds a batch the franz-go way from records and our spec.
func kmsgBatch(t tb, s *batchSpec) []byte {
	t.Helper()
	first := NoTimestamp
	maxTs := NoTimestamp
	for i, r := range s.records {
		if i == 0 {
			first = r.Timestamp
		}
		if i == 0 || r.Timestamp > maxTs {
			maxTs = r.Timestamp
		}
	}
	records := kmsgRecords(t, s.records, first)
	codec := CodecNone
	if s.codec != CodecNone && len(s.records) > 0 {
		comp, err := kgo.DefaultCompressor(kgoCodec(s.codec))
		require.NoError(t, err)
		var buf bytes.Buffer
		out, used := comp.Compress(&buf, records)
		require.Equal(t, kgo.CompressionCodecType(s.codec), used)
		records = append([]byte{}, out...)
		codec = s.codec
	}
	lastDelta := int32(0)
	if n := len(s.records); n > 0 {
		lastDelta = s.records[n-1].OffsetDelta
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          s.baseOffset,
		Length:               int32(MinBatchLength + len(records)),
		PartitionLeaderEpoch: s.leaderEpoch,
		Magic:                MagicV2,
		Attributes:           int16(codec),
		LastOffsetDelta:      lastDelta,
		FirstTimestamp:       first,
		MaxTimestamp:         maxTs,
		ProducerID:           s.producerID,
		ProducerEpoch:        s.producerEpoch,
		FirstSequence:        s.baseSequence,
		NumRecords:           int32(len(s.records)),
		Records:              records,
	}
	raw := rb.AppendTo(nil)
	rb.CRC = int32(crc32.Checksum(raw[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return rb.AppendTo(nil)
}

// readWithKmsg decodes our batch with kmsg and kgo and returns its header
// and records.
func readWithKmsg(t tb, raw []byte) (kmsg.RecordBatch, []kmsg.Record) {
	t.Helper()
	var rb kmsg.RecordBatch
	require.NoError(t, rb.ReadFrom(raw))
	data, err := kgo.DefaultDecompressor().Decompress(rb.Records, kgo.CompressionCodecType(rb.Attributes&0x07))
	require.NoError(t, err)
	var recs []kmsg.Record
	for len(data) > 0 {
		length, n := readVarint(data)
		require.Greater(t, n, 0)
		var kr kmsg.Record
		require.NoError(t, kr.ReadFrom(data[:n+int(length)]))
		require.Equal(t, length, kr.Length)
		recs = append(recs, kr)
		data = data[n+int(length):]
	}
	return rb, recs
}

// genProducerSpec draws batches a producer could send: no gaps, no
// delete horizon, no control flag, CreateTime.
func genProducerSpec(t *rapid.T) batchSpec {
	s := genBatchHeader(t, 1<<40, rapid.Int32Range(-1, 1000))
	s.records = genRecords(t, false)
	return s
}

func TestInteropOursDecodedByFranzGo(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genProducerSpec(t)
		raw := buildSpec(t, &s)
		rb, recs := readWithKmsg(t, raw)

		require.Equal(t, s.baseOffset, rb.FirstOffset)
		require.Equal(t, int32(len(raw)-LogOverhead), rb.Length)
		require.Equal(t, s.leaderEpoch, rb.PartitionLeaderEpoch)
		require.Equal(t, int8(MagicV2), rb.Magic)
		require.Equal(t, int32(mustRead(t, raw).ComputeCRC()), rb.CRC)
		if len(s.records) > 0 {
			require.Equal(t, int16(s.codec), rb.Attributes)
		} else {
			require.Equal(t, int16(CodecNone), rb.Attributes)
		}
		require.Equal(t, s.producerID, rb.ProducerID)
		require.Equal(t, s.producerEpoch, rb.ProducerEpoch)
		require.Equal(t, s.baseSequence, rb.FirstSequence)
		require.Equal(t, int32(len(s.records)), rb.NumRecords)
		require.Len(t, recs, len(s.records))
		for i, want := range s.records {
			got := recs[i]
			require.Equal(t, want.OffsetDelta, got.OffsetDelta)
			require.Equal(t, want.Timestamp, rb.FirstTimestamp+got.TimestampDelta64)
			require.Equal(t, want.Attributes, got.Attributes)
			// kbin reads a zero-length byte slice as an empty one and a
			// negative length as nil, as we do.
			requireSameNullable(t, want.Key, got.Key)
			requireSameNullable(t, want.Value, got.Value)
			require.Len(t, got.Headers, len(want.Headers))
			for j, h := range want.Headers {
				require.Equal(t, string(h.Key), got.Headers[j].Key)
				requireSameNullable(t, h.Value, got.Headers[j].Value)
			}
		}
	})
}

func TestInteropFranzGoDecodedByUs(t *testing.T) {
	dec := NewDecompressor(DefaultMaxDecompressedBytes)
	rapid.Check(t, func(t *rapid.T) {
		s := genProducerSpec(t)
		b := mustRead(t, kmsgBatch(t, &s))
		if len(s.records) > 0 && (s.producerID == NoProducerID || (s.producerEpoch >= 0 && s.baseSequence >= 0)) {
			require.NoError(t, b.ValidateForAppend(OriginClient))
		}
		r := NewRecordReader(dec)
		require.NoError(t, r.Reset(b))
		var got []Record
		for r.Next() {
			got = append(got, cloneRecord(r.Record()))
		}
		require.NoError(t, r.Err())
		requireSameRecords(t, s.records, got)
	})
}

// TestInteropByteIdentical checks that for uncompressed batches our Builder
// and franz-go's pieces write the same bytes, and that for compressed ones
// the records inside decompress to the same bytes.
func TestInteropByteIdentical(t *testing.T) {
	dec := NewDecompressor(DefaultMaxDecompressedBytes)
	rapid.Check(t, func(t *rapid.T) {
		s := genProducerSpec(t)
		ours := buildSpec(t, &s)
		theirs := kmsgBatch(t, &s)
		if s.codec == CodecNone || len(s.records) == 0 {
			require.Equal(t, theirs, ours)
			return
		}
		a, b := mustRead(t, ours), mustRead(t, theirs)
		require.Equal(t, a.Header().BaseTimestamp, b.Header().BaseTimestamp)
		ra, err := dec.Decompress(nil, a.RecordBytes(), a.Codec())
		require.NoError(t, err)
		rb, err := dec.Decompress(nil, b.RecordBytes(), b.Codec())
		require.NoError(t, err)
		require.Equal(t, rb, ra)
	})
}
