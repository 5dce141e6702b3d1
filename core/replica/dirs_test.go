package replica

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
)

// flippyFile is a file whose first reads each flip one bit of what they
// return, as the simulated disk's read faults do; the data stays intact.
type flippyFile struct {
	env.File // nil: only Name, Size and ReadAt are used
	data     []byte
	flips    int // reads left that flip a bit
	reads    int
}

func (f *flippyFile) Name() string { return "t-0/partition.metadata" }
func (f *flippyFile) Size() int64  { return int64(len(f.data)) }
func (f *flippyFile) ReadAt(p []byte, off int64) (int, error) {
	n := copy(p, f.data[off:])
	if f.flips > 0 {
		f.flips--
		p[len("version: 0\ntopic_id: ")+f.reads%4] ^= 1 << (f.reads % 8)
	}
	f.reads++
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestConfirmReadOutlastsBitFlips: a partition.metadata read that differs
// from the expected one is believed only once two reads agree (log seed
// 917: one flipped bit of the topic id had the broker delete the
// partition's directory, acknowledged records and all, as an older
// topic's).
func TestConfirmReadOutlastsBitFlips(t *testing.T) {
	content := []byte("version: 0\ntopic_id: noEtIJGmQsSTunsZ-P2WjA\n")
	for flips := 0; flips < maxConfirmReads-2; flips++ {
		f := &flippyFile{data: content, flips: flips + 1}
		first, err := readAll(f)
		require.NoError(t, err)
		require.NotEqual(t, content, first)
		got, err := confirmRead(f, first)
		require.NoError(t, err)
		require.Equal(t, string(content), string(got), "%d flipped reads", flips+1)
		id, ok := parsePartitionMetadata(got)
		require.True(t, ok)
		require.Equal(t, "noEtIJGmQsSTunsZ-P2WjA", id.String())
	}
	// Reads that never agree are an I/O error, never a verdict.
	f := &flippyFile{data: content, flips: 100}
	first, err := readAll(f)
	require.NoError(t, err)
	_, err = confirmRead(f, first)
	require.ErrorIs(t, err, env.ErrIO)
}
