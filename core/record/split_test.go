package record

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// segment concatenates batches of every codec, as a log segment would hold
// them, and returns the bytes and where each batch starts.
func segment(t tb) ([]byte, []int) {
	var buf []byte
	var starts []int
	next := int64(0)
	for i, c := range allCodecs {
		starts = append(starts, len(buf))
		opts := append(codecOptions(c.codec, c.rawSnappy), WithBaseOffset(next), WithPartitionLeaderEpoch(int32(i)))
		recs := sampleRecords(3 + i)
		buf = append(buf, build(t, recs, opts...)...)
		next += int64(len(recs))
	}
	return buf, starts
}

func TestSplitterWholeBuffer(t *testing.T) {
	buf, starts := segment(t)
	for _, check := range []Check{CheckFraming, CheckStored} {
		s := NewSplitter(buf, DefaultMaxBatchBytes, check)
		var got []int
		next := int64(0)
		for s.Next() {
			got = append(got, s.Pos())
			require.Equal(t, next, s.Batch().BaseOffset())
			next = s.Batch().NextOffset()
		}
		require.NoError(t, s.Err())
		require.Equal(t, starts, got)
		require.Equal(t, len(buf), s.ValidBytes())
		require.False(t, s.Next(), "stays done")
	}
}

func TestSplitterTornTail(t *testing.T) {
	buf, starts := segment(t)
	last := starts[len(starts)-1]
	tests := []struct {
		name      string
		buf       []byte
		check     Check
		wantValid int
		wantErr   error
		wantPos   int
	}{
		{"cut inside last batch", buf[:len(buf)-3], CheckFraming, last, ErrTruncated, len(buf) - 3},
		{"cut inside last header", buf[:last+20], CheckFraming, last, ErrTruncated, last + 20},
		{"cut inside length", buf[:last+5], CheckFraming, last, ErrTruncated, last + 5},
		{"zeroed tail", append(append([]byte{}, buf...), make([]byte, 100)...), CheckFraming, len(buf), ErrCorrupt, len(buf) + offBatchLength},
		{"garbage in last batch found by crc", flipBit(buf, (len(buf)-1)*8), CheckStored, last, ErrCRCMismatch, last + offCRC},
		{"garbage in last batch missed by framing", flipBit(buf, (len(buf)-1)*8), CheckFraming, len(buf), nil, 0},
		{"bad second batch", flipBit(buf, (starts[1]+offRecords)*8), CheckStored, starts[1], ErrCRCMismatch, starts[1] + offCRC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSplitter(tt.buf, DefaultMaxBatchBytes, tt.check)
			for s.Next() {
			}
			require.Equal(t, tt.wantValid, s.ValidBytes())
			if tt.wantErr == nil {
				require.NoError(t, s.Err())
				return
			}
			require.ErrorIs(t, s.Err(), tt.wantErr)
			var e *Error
			require.True(t, errors.As(s.Err(), &e))
			require.Equal(t, tt.wantPos, e.Pos, "error %v", s.Err())
		})
	}
}

func TestSplitterMaxBatchBytes(t *testing.T) {
	small := build(t, sampleRecords(1))
	big := build(t, sampleRecords(200))
	buf := append(append([]byte{}, small...), big...)
	s := NewSplitter(buf, len(small), CheckStored)
	require.True(t, s.Next())
	require.False(t, s.Next())
	require.ErrorIs(t, s.Err(), ErrBatchTooLarge)
	require.Equal(t, len(small), s.ValidBytes())
}

func TestSplitterEmpty(t *testing.T) {
	s := NewSplitter(nil, DefaultMaxBatchBytes, CheckStored)
	require.False(t, s.Next())
	require.NoError(t, s.Err())
	require.Zero(t, s.ValidBytes())
}
