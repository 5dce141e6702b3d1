package record

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// uncompressedBatch wraps hand-written record bytes in a valid header.
func uncompressedBatch(records []byte, count, lastOffsetDelta int32) []byte {
	raw := make([]byte, HeaderSize, HeaderSize+len(records))
	raw = append(raw, records...)
	putHeader(raw, BatchHeader{
		BatchLength: int32(len(raw) - LogOverhead), Magic: MagicV2,
		LastOffsetDelta: lastOffsetDelta, BaseTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch, BaseSequence: NoSequence,
		PartitionLeaderEpoch: NoPartitionLeaderEpoch, RecordCount: count,
	})
	writeCRC(raw, crcOf(raw))
	return raw
}

// rec encodes one record body from varints and bytes given in order, and
// prefixes its length.
func rec(fields ...any) []byte {
	var body []byte
	for _, f := range fields {
		switch v := f.(type) {
		case int8:
			body = append(body, byte(v))
		case int:
			body = appendVarlong(body, int64(v))
		case string:
			body = append(body, v...)
		case []byte:
			body = append(body, v...)
		}
	}
	return append(appendVarint(nil, int32(len(body))), body...)
}

func TestRecordReaderValid(t *testing.T) {
	// attributes, timestampDelta, offsetDelta, key, value, headers
	r0 := rec(int8(0), 5, 0, -1, 3, "abc", 0)
	r1 := rec(int8(1), -2, 1, 0, -1, 2, 1, "x", -1, 0, 0)
	b := mustRead(t, uncompressedBatch(append(r0, r1...), 2, 1))
	got := readRecords(t, b)
	require.Len(t, got, 2)

	require.Equal(t, int64(1005), got[0].Timestamp)
	require.Equal(t, int64(0), got[0].Offset)
	require.Nil(t, got[0].Key)
	require.Equal(t, []byte("abc"), got[0].Value)
	require.Nil(t, got[0].Headers)

	require.Equal(t, int8(1), got[1].Attributes)
	require.Equal(t, int64(998), got[1].Timestamp)
	require.NotNil(t, got[1].Key)
	require.Empty(t, got[1].Key)
	require.Nil(t, got[1].Value)
	require.Equal(t, []Header{{Key: []byte("x"), Value: nil}, {Key: []byte{}, Value: []byte{}}}, got[1].Headers)
}

func TestRecordReaderMalformed(t *testing.T) {
	good := rec(int8(0), 0, 0, -1, -1, 0)
	tests := []struct {
		name    string
		records []byte
		count   int32
		last    int32
		detail  string
	}{
		{"fewer records than count", good, 2, 1, "record 1: length"},
		{"trailing bytes", append(append([]byte{}, good...), 0), 1, 0, "bytes after the last"},
		{"length too small", append(appendVarint(nil, 5), 0, 0, 0, 0, 0), 1, 0, "length 5"},
		{"length past end", append(appendVarint(nil, 60), good[1:]...), 1, 0, "length 60"},
		{"length varint truncated", []byte{0x80}, 1, 0, "buffer ends"},
		{"length varint too long", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0, 0, 0, 0, 0}, 1, 0, "too long"},
		{"length varint over int32", []byte{0xff, 0xff, 0xff, 0xff, 0x1f, 0, 0, 0, 0, 0, 0}, 1, 0, "out of range"},
		{"key length below -1", rec(int8(0), 0, 0, -2, -1, 0), 1, 0, "key length -2"},
		{"key past body", rec(int8(0), 0, 0, 9, -1, 0), 1, 0, "key length 9"},
		{"value past body", rec(int8(0), 0, 0, -1, 9, 0), 1, 0, "value length 9"},
		{"negative header count", rec(int8(0), 0, 0, -1, -1, -1), 1, 0, "header count -1"},
		{"header count past body", rec(int8(0), 0, 0, -1, -1, 100), 1, 0, "header count 100"},
		{"null header key", rec(int8(0), 0, 0, -1, -1, 1, -1, -1), 1, 0, "header key length -1"},
		{"header value past body", rec(int8(0), 0, 0, -1, -1, 1, 0, 5), 1, 0, "header value length 5"},
		{"field past length", rec(int8(0), 0, 0, -1, -1, 0, "zz"), 1, 0, "fields end at 6"},
		{"offset delta above last", rec(int8(0), 0, 3, -1, -1, 0), 1, 2, "offsetDelta 3"},
		{"offset delta negative", rec(int8(0), 0, -1, -1, -1, 0), 1, 0, "offsetDelta -1"},
		{"offset delta repeated", append(append([]byte{}, good...), good...), 2, 1, "offsetDelta 0, want above 0"},
		{"timestamp varlong too long", append(appendVarint(nil, 16), 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 1, 1, 0), 1, 0, "timestampDelta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := uncompressedBatch(tt.records, tt.count, tt.last)
			b, err := ReadBatch(raw, DefaultMaxBatchBytes)
			require.NoError(t, err)
			r := NewRecordReader(NewDecompressor(DefaultMaxDecompressedBytes))
			require.NoError(t, r.Reset(b))
			for r.Next() {
			}
			err = r.Err()
			require.ErrorIs(t, err, ErrInvalidRecord)
			require.Contains(t, err.Error(), tt.detail)
			var e *Error
			require.True(t, errors.As(err, &e))
			require.GreaterOrEqual(t, e.Pos, offRecords)
			require.LessOrEqual(t, e.Pos, len(raw))
		})
	}
}

func TestRecordReaderLogAppendTime(t *testing.T) {
	raw := build(t, sampleRecords(3), WithLogAppendTime(99))
	got := readRecords(t, mustRead(t, raw))
	for _, r := range got {
		require.Equal(t, int64(99), r.Timestamp)
	}
	// The deltas still hold the create times.
	recs := sampleRecords(3)
	require.Equal(t, recs[2].Timestamp-recs[0].Timestamp, got[2].TimestampDelta)
}

func TestRecordReaderDeleteHorizon(t *testing.T) {
	recs := []Record{{OffsetDelta: 2, Timestamp: 500, Key: []byte("k")}, {OffsetDelta: 4, Timestamp: 400, Key: []byte("k")}}
	raw := build(t, recs, WithDeleteHorizon(10_000), WithLastOffsetDelta(6), WithBaseOffset(100))
	b := mustRead(t, raw)
	horizon, ok := b.DeleteHorizon()
	require.True(t, ok)
	require.Equal(t, int64(10_000), horizon)
	got := readRecords(t, b)
	requireSameRecords(t, recs, got)
	require.Equal(t, int64(102), got[0].Offset)
	require.Equal(t, int64(104), got[1].Offset)
	require.Equal(t, int64(106), b.LastOffset())
}

func TestRecordReaderReuseAllocatesNothing(t *testing.T) {
	raw := build(t, sampleRecords(50))
	b := mustRead(t, raw)
	r := NewRecordReader(NewDecompressor(DefaultMaxDecompressedBytes))
	read := func() {
		require.NoError(t, r.Reset(b))
		for r.Next() {
		}
		require.NoError(t, r.Err())
	}
	read()
	require.Zero(t, testing.AllocsPerRun(20, read))
}

func TestControlRecords(t *testing.T) {
	for _, typ := range []ControlType{ControlAbort, ControlCommit, ControlLeaderChange, ControlKRaftVoters, 99} {
		got, err := ParseControlKey(ControlKey(typ))
		require.NoError(t, err)
		require.Equal(t, typ, got)
	}
	require.Equal(t, "COMMIT", ControlCommit.String())
	require.Equal(t, "UNKNOWN(99)", ControlType(99).String())

	_, err := ParseControlKey([]byte{0, 0, 0})
	require.ErrorIs(t, err, ErrInvalidRecord)
	_, err = ParseControlKey([]byte{0xff, 0xff, 0, 1})
	require.ErrorIs(t, err, ErrInvalidRecord)
	typ, err := ParseControlKey([]byte{0, 1, 0, 0, 9}) // a later version with more fields
	require.NoError(t, err)
	require.Equal(t, ControlAbort, typ)

	epoch, err := ParseEndTxnMarker(EndTxnMarkerValue(-7))
	require.NoError(t, err)
	require.Equal(t, int32(-7), epoch)
	_, err = ParseEndTxnMarker([]byte{0, 0, 0, 0, 1})
	require.ErrorIs(t, err, ErrInvalidRecord)

	// A marker batch as a transaction coordinator writes it.
	b := NewBuilder(WithProducer(5, 2, NoSequence), WithTransactional(), WithControl(), WithBaseOffset(40))
	b.AppendControl(123, ControlAbort, EndTxnMarkerValue(8))
	raw, err := b.AppendTo(nil)
	require.NoError(t, err)
	batch := mustRead(t, raw)
	require.True(t, batch.Attributes().IsControl())
	recs := readRecords(t, batch)
	require.Len(t, recs, 1)
	typ, err = ParseControlKey(recs[0].Key)
	require.NoError(t, err)
	require.Equal(t, ControlAbort, typ)
	epoch, err = ParseEndTxnMarker(recs[0].Value)
	require.NoError(t, err)
	require.Equal(t, int32(8), epoch)
}
