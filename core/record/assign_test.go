package record

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAssignOffsetsTouchesOnlyTwelveBytes(t *testing.T) {
	for _, c := range allCodecs {
		t.Run(c.name, func(t *testing.T) {
			raw := build(t, sampleRecords(10), codecOptions(c.codec, c.rawSnappy)...)
			before := append([]byte{}, raw...)
			b, err := ReadProduceBatch(raw, DefaultMaxBatchBytes)
			require.NoError(t, err)
			require.NoError(t, b.ValidateForAppend(OriginClient))

			end := b.AssignOffsets(5000, 12)
			require.Equal(t, int64(5010), end)
			require.Equal(t, int64(5000), b.BaseOffset())
			require.Equal(t, int64(5009), b.LastOffset())
			require.Equal(t, int32(12), b.PartitionLeaderEpoch())
			require.NoError(t, b.ValidateStored(), "CRC still holds")
			require.Equal(t, before[offMagic:], raw[offMagic:], "nothing after the leader epoch changed")

			recs := readRecords(t, b)
			for i, r := range recs {
				require.Equal(t, int64(5000+i), r.Offset)
			}
		})
	}
}

func TestSetMaxTimestamp(t *testing.T) {
	for _, size := range []int{0, 1, 10, 3000} {
		raw := build(t, sampleRecords(size), WithLastOffsetDelta(int32(max(size-1, 0))))
		b := mustRead(t, raw)
		records := append([]byte{}, b.RecordBytes()...)

		b.SetMaxTimestamp(LogAppendTime, 1_800_000_000_000)
		require.NoError(t, b.ValidateStored(), "size %d", size)
		require.Equal(t, b.ComputeCRC(), b.CRC())
		require.Equal(t, LogAppendTime, b.Attributes().TimestampType())
		require.Equal(t, int64(1_800_000_000_000), b.MaxTimestamp())
		require.True(t, bytes.Equal(records, b.RecordBytes()))
		for _, r := range readRecords(t, b) {
			require.Equal(t, int64(1_800_000_000_000), r.Timestamp)
		}

		b.SetMaxTimestamp(CreateTime, 7)
		require.NoError(t, b.ValidateStored())
		require.Equal(t, CreateTime, b.Attributes().TimestampType())
		require.Equal(t, int64(7), b.MaxTimestamp())
	}
}

func TestSetMaxTimestampKeepsCorruptionDetectable(t *testing.T) {
	raw := build(t, sampleRecords(20))
	raw[len(raw)-5] ^= 0x10 // damaged in flight, after the CRC was written
	b, err := ReadBatch(raw, DefaultMaxBatchBytes)
	require.NoError(t, err)
	b.SetMaxTimestamp(LogAppendTime, 42)
	require.ErrorIs(t, b.ValidateStored(), ErrCRCMismatch)
}

func TestSetMaxTimestampUnchangedWritesNothing(t *testing.T) {
	raw := build(t, sampleRecords(3))
	raw[len(raw)-1] ^= 1 // corrupt, so a rewrite of the CRC would show
	before := append([]byte{}, raw...)
	b, err := ReadBatch(raw, DefaultMaxBatchBytes)
	require.NoError(t, err)
	b.SetMaxTimestamp(CreateTime, b.MaxTimestamp())
	require.Equal(t, before, raw)
}

func TestPatchCRCMatchesRecompute(t *testing.T) {
	msg := bytes.Repeat([]byte("abcdefghij"), 1000)
	for _, trailing := range []int{0, 1, 7, 100, 9977} {
		prefix := len(msg) - trailing
		old := append([]byte{}, msg...)
		changed := append([]byte{}, msg...)
		for i := 0; i < min(prefix, 22); i++ {
			changed[i] ^= byte(i*31 + 7)
		}
		delta := make([]byte, prefix)
		for i := range delta {
			delta[i] = old[i] ^ changed[i]
		}
		oldCRC := crcOf(append(make([]byte, offAttributes), old...))
		want := crcOf(append(make([]byte, offAttributes), changed...))
		require.Equal(t, want, patchCRC(oldCRC, delta, trailing), "trailing %d", trailing)
	}
}
