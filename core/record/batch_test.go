package record

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadBatchFraming(t *testing.T) {
	valid := build(t, sampleRecords(3))
	tests := []struct {
		name    string
		buf     []byte
		max     int
		wantErr error
		wantPos int
	}{
		{"valid", valid, DefaultMaxBatchBytes, nil, 0},
		{"valid with trailing bytes", append(append([]byte{}, valid...), 1, 2, 3), DefaultMaxBatchBytes, nil, 0},
		{"empty", nil, DefaultMaxBatchBytes, ErrTruncated, 0},
		{"shorter than log overhead", valid[:11], DefaultMaxBatchBytes, ErrTruncated, 11},
		{"zeros", make([]byte, 100), DefaultMaxBatchBytes, ErrCorrupt, offBatchLength},
		{"ends before magic", valid[:16], DefaultMaxBatchBytes, ErrTruncated, 16},
		{"ends inside header", valid[:40], DefaultMaxBatchBytes, ErrTruncated, 40},
		{"ends inside records", valid[:len(valid)-1], DefaultMaxBatchBytes, ErrTruncated, len(valid) - 1},
		{"magic 0", setByte(valid, offMagic, 0), DefaultMaxBatchBytes, ErrUnsupportedMagic, offMagic},
		{"magic 1", setByte(valid, offMagic, 1), DefaultMaxBatchBytes, ErrUnsupportedMagic, offMagic},
		{"magic 1 short message", setByte(valid[:20], offMagic, 1), DefaultMaxBatchBytes, ErrUnsupportedMagic, offMagic},
		{"magic 3", setByte(valid, offMagic, 3), DefaultMaxBatchBytes, ErrCorrupt, offMagic},
		{"magic -1", setByte(valid, offMagic, 0xff), DefaultMaxBatchBytes, ErrCorrupt, offMagic},
		{"batchLength below minimum", setLength(valid, MinBatchLength-1), DefaultMaxBatchBytes, ErrCorrupt, offBatchLength},
		{"batchLength negative", setLength(valid, -1), DefaultMaxBatchBytes, ErrCorrupt, offBatchLength},
		{"batchLength past buffer", setLength(valid, int32(len(valid))), DefaultMaxBatchBytes, ErrTruncated, len(valid)},
		{"over max", valid, len(valid) - 1, ErrBatchTooLarge, offBatchLength},
		{"exactly max", valid, len(valid), nil, 0},
		{"huge batchLength over max", setLength(valid, math.MaxInt32), DefaultMaxBatchBytes, ErrBatchTooLarge, offBatchLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ReadBatch(tt.buf, tt.max)
			if tt.wantErr == nil {
				require.NoError(t, err)
				require.Equal(t, len(valid), b.Size())
				require.Equal(t, valid, b.Bytes())
				return
			}
			requireErrorAt(t, err, tt.wantErr, tt.wantPos)
		})
	}
}

func TestErrorKinds(t *testing.T) {
	require.ErrorIs(t, ErrTruncated, ErrCorrupt)
	require.ErrorIs(t, ErrCRCMismatch, ErrCorrupt)
	for _, err := range []error{ErrUnsupportedMagic, ErrBatchTooLarge, ErrInvalidRecord, ErrDecompressedTooLarge} {
		require.NotErrorIs(t, err, ErrCorrupt)
	}
	err := error(&Error{Kind: ErrCorrupt, Pos: 7, Detail: "x", Cause: errors.New("inner")})
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), "at byte 7: x: inner")
}

func TestReadProduceBatch(t *testing.T) {
	one := build(t, sampleRecords(2))
	b, err := ReadProduceBatch(one, DefaultMaxBatchBytes)
	require.NoError(t, err)
	require.Equal(t, len(one), b.Size())

	_, err = ReadProduceBatch(nil, DefaultMaxBatchBytes)
	require.ErrorIs(t, err, ErrInvalidRecord)

	two := append(append([]byte{}, one...), one...)
	_, err = ReadProduceBatch(two, DefaultMaxBatchBytes)
	require.ErrorIs(t, err, ErrInvalidRecord)

	_, err = ReadProduceBatch(one[:len(one)-1], DefaultMaxBatchBytes)
	require.ErrorIs(t, err, ErrTruncated)
}

func TestHeaderAccessors(t *testing.T) {
	raw := build(t, sampleRecords(4),
		WithBaseOffset(1000), WithPartitionLeaderEpoch(7), WithProducer(42, 3, 100),
		WithTransactional(), WithCompression(CodecLZ4))
	b := mustRead(t, raw)
	h := b.Header()
	require.Equal(t, int64(1000), h.BaseOffset)
	require.Equal(t, int32(len(raw)-LogOverhead), h.BatchLength)
	require.Equal(t, int32(7), h.PartitionLeaderEpoch)
	require.Equal(t, int8(MagicV2), h.Magic)
	require.Equal(t, b.ComputeCRC(), h.CRC)
	require.Equal(t, CodecLZ4, h.Attributes.Codec())
	require.True(t, h.Attributes.IsTransactional())
	require.False(t, h.Attributes.IsControl())
	require.False(t, h.Attributes.HasDeleteHorizon())
	require.Equal(t, CreateTime, h.Attributes.TimestampType())
	require.Equal(t, int32(3), h.LastOffsetDelta)
	require.Equal(t, int64(1003), b.LastOffset())
	require.Equal(t, int64(1004), b.NextOffset())
	require.Equal(t, int64(42), h.ProducerID)
	require.Equal(t, int16(3), h.ProducerEpoch)
	require.Equal(t, int32(100), h.BaseSequence)
	require.Equal(t, int32(103), b.LastSequence())
	require.Equal(t, int32(4), h.RecordCount)
	recs := sampleRecords(4)
	require.Equal(t, recs[0].Timestamp, h.BaseTimestamp)
	maxTs := recs[0].Timestamp
	for _, r := range recs {
		maxTs = max(maxTs, r.Timestamp)
	}
	require.Equal(t, maxTs, h.MaxTimestamp)
	_, ok := b.DeleteHorizon()
	require.False(t, ok)
	require.Equal(t, "lz4,CreateTime,transactional", h.Attributes.String())
}

func TestIncrementSequence(t *testing.T) {
	tests := []struct{ seq, inc, want int32 }{
		{0, 0, 0},
		{5, 3, 8},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 3, 1},
		{math.MaxInt32, math.MaxInt32, math.MaxInt32 - 1},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, IncrementSequence(tt.seq, tt.inc), "%d+%d", tt.seq, tt.inc)
	}
}

func TestValidateStored(t *testing.T) {
	valid := build(t, sampleRecords(5), WithBaseOffset(10))
	compacted := build(t, []Record{{OffsetDelta: 1, Timestamp: 5}, {OffsetDelta: 7, Timestamp: 6}}, WithLastOffsetDelta(9))
	empty := build(t, nil, WithLastOffsetDelta(4), WithProducer(1, 0, 0))
	tests := []struct {
		name    string
		raw     []byte
		wantErr error
		wantPos int
	}{
		{"valid", valid, nil, 0},
		{"compacted with gaps", compacted, nil, 0},
		{"empty kept for producer state", empty, nil, 0},
		{"crc flipped", flipBit(valid, offCRC*8), ErrCRCMismatch, offCRC},
		{"record byte flipped", flipBit(valid, (len(valid)-1)*8), ErrCRCMismatch, offCRC},
		{"unknown codec", withHeader(valid, func(h *BatchHeader) { h.Attributes |= 5 }), ErrCorrupt, offAttributes},
		{"negative count", withHeader(valid, func(h *BatchHeader) { h.RecordCount = -1 }), ErrCorrupt, offRecordCount},
		{"negative lastOffsetDelta", withHeader(valid, func(h *BatchHeader) { h.LastOffsetDelta = -1 }), ErrCorrupt, offLastOffsetDelta},
		{"count beyond offset range", withHeader(valid, func(h *BatchHeader) { h.LastOffsetDelta = 3 }), ErrCorrupt, offRecordCount},
		{"count beyond record bytes", withHeader(valid, func(h *BatchHeader) { h.RecordCount, h.LastOffsetDelta = 1000, 1000 }), ErrCorrupt, offRecordCount},
		{"negative base offset", withHeader(valid, func(h *BatchHeader) { h.BaseOffset = -1 }), ErrCorrupt, offBaseOffset},
		{"last offset overflows", withHeader(valid, func(h *BatchHeader) { h.BaseOffset = math.MaxInt64 - 2 }), ErrCorrupt, offBaseOffset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ReadBatch(tt.raw, DefaultMaxBatchBytes)
			require.NoError(t, err)
			err = b.ValidateStored()
			requireErrorAt(t, err, tt.wantErr, tt.wantPos)
		})
	}
}

func TestValidateForAppend(t *testing.T) {
	plain := build(t, sampleRecords(3))
	idempotent := build(t, sampleRecords(3), WithProducer(7, 1, 0))
	txn := build(t, sampleRecords(3), WithProducer(7, 1, 5), WithTransactional())
	marker := NewBuilder(WithProducer(7, 1, NoSequence), WithTransactional(), WithControl())
	marker.AppendControl(10, ControlCommit, EndTxnMarkerValue(3))
	markerRaw, err := marker.AppendTo(nil)
	require.NoError(t, err)

	tests := []struct {
		name    string
		raw     []byte
		origin  Origin
		wantErr error
		wantPos int
	}{
		{"plain", plain, OriginClient, nil, 0},
		{"idempotent", idempotent, OriginClient, nil, 0},
		{"transactional", txn, OriginClient, nil, 0},
		{"client base offset ignored", withHeader(plain, func(h *BatchHeader) { h.BaseOffset = -5 }), OriginClient, nil, 0},
		{"marker from coordinator", markerRaw, OriginCoordinator, nil, 0},
		{"marker from client", markerRaw, OriginClient, ErrInvalidRecord, offAttributes},
		{"crc", flipBit(plain, (len(plain)-2)*8+3), OriginClient, ErrCRCMismatch, offCRC},
		{"empty", build(t, nil), OriginClient, ErrInvalidRecord, offRecordCount},
		{"gap", build(t, []Record{{OffsetDelta: 0}, {OffsetDelta: 2}}), OriginClient, ErrInvalidRecord, offLastOffsetDelta},
		{"count short of range", withHeader(plain, func(h *BatchHeader) { h.LastOffsetDelta = 5 }), OriginClient, ErrInvalidRecord, offLastOffsetDelta},
		{"negative count", withHeader(plain, func(h *BatchHeader) { h.RecordCount = -3 }), OriginClient, ErrInvalidRecord, offRecordCount},
		{"unknown codec", withHeader(plain, func(h *BatchHeader) { h.Attributes |= 7 }), OriginClient, ErrInvalidRecord, offAttributes},
		{"max below base", withHeader(plain, func(h *BatchHeader) { h.MaxTimestamp = h.BaseTimestamp - 1 }), OriginClient, ErrInvalidRecord, offMaxTimestamp},
		{"log append time below base", withHeader(plain, func(h *BatchHeader) {
			h.MaxTimestamp = h.BaseTimestamp - 60_000
			h.Attributes |= attrLogAppendTime
		}), OriginClient, nil, 0},
		{"no max timestamp", withHeader(plain, func(h *BatchHeader) { h.MaxTimestamp = NoTimestamp }), OriginClient, nil, 0},
		{"delete horizon", withHeader(plain, func(h *BatchHeader) { h.Attributes |= attrHasDeleteHorizon }), OriginCoordinator, ErrInvalidRecord, offAttributes},
		{"producer id -2", withHeader(plain, func(h *BatchHeader) { h.ProducerID = -2 }), OriginClient, ErrInvalidRecord, offProducerID},
		{"transactional without producer", withHeader(plain, func(h *BatchHeader) { h.Attributes |= attrTransactional }), OriginClient, ErrInvalidRecord, offProducerID},
		{"negative epoch", withHeader(idempotent, func(h *BatchHeader) { h.ProducerEpoch = -1 }), OriginClient, ErrInvalidRecord, offProducerEpoch},
		{"negative sequence", withHeader(idempotent, func(h *BatchHeader) { h.BaseSequence = -1 }), OriginClient, ErrInvalidRecord, offBaseSequence},
		{"sequence without producer is ignored", withHeader(plain, func(h *BatchHeader) { h.BaseSequence = 9 }), OriginClient, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ReadBatch(tt.raw, DefaultMaxBatchBytes)
			require.NoError(t, err)
			err = b.ValidateForAppend(tt.origin)
			requireErrorAt(t, err, tt.wantErr, tt.wantPos)
		})
	}
}

// requireErrorAt requires err to be want (nil: no error) and, if not nil,
// an *Error at byte pos of the batch.
func requireErrorAt(t *testing.T, err, want error, pos int) {
	t.Helper()
	if want == nil {
		require.NoError(t, err)
		return
	}
	require.ErrorIs(t, err, want)
	var e *Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, pos, e.Pos, "error %v", err)
}

func TestBoundsArePositive(t *testing.T) {
	require.Panics(t, func() { _, _ = ReadBatch(nil, 0) })
	require.Panics(t, func() { NewSplitter(nil, 0, CheckStored) })
	require.Panics(t, func() { NewDecompressor(0) })
	b := mustRead(t, build(t, sampleRecords(1)))
	require.Panics(t, func() { _ = b.ValidateForAppend(0) })
}

func setByte(raw []byte, pos int, v byte) []byte {
	out := append([]byte{}, raw...)
	out[pos] = v
	return out
}

func setLength(raw []byte, length int32) []byte {
	out := append([]byte{}, raw...)
	out[offBatchLength] = byte(uint32(length) >> 24)
	out[offBatchLength+1] = byte(uint32(length) >> 16)
	out[offBatchLength+2] = byte(uint32(length) >> 8)
	out[offBatchLength+3] = byte(uint32(length))
	return out
}

func flipBit(raw []byte, bit int) []byte {
	out := append([]byte{}, raw...)
	out[bit/8] ^= 1 << (bit % 8)
	return out
}
