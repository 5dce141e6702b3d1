package sim

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
)

func TestNetPauseHoldsFramesUntilResume(t *testing.T) {
	pr := newPair(t, 7, nil)
	pr.sEnd.conn.Pause()
	sendSeqs(t, pr.cEnd.conn, 0, 5)
	pr.run(t, time.Second)
	require.Empty(t, pr.sEnd.frames, "a paused end received frames")
	require.Equal(t, 0, pr.sEnd.closes, "a long pause is not a network stall")
	require.Positive(t, pr.cEnd.conn.Buffered(), "held frames count as buffered at the sender")
	pr.sEnd.conn.Resume()
	pr.run(t, 100*time.Millisecond)
	require.Equal(t, seqs(0, 5), pr.sEnd.frames)
}

func TestNetSendPartsReadsFileRegions(t *testing.T) {
	pr := newPair(t, 8, nil)
	var f env.File
	d := pr.srv.Env().Disk()
	f, err := d.Open("seg", true)
	require.NoError(t, err)
	content := binary.BigEndian.AppendUint64(nil, 42)
	content = append(content, "region-bytes"...)
	require.NoError(t, f.WriteAt(content, 0))
	// The frame: 8 bytes of a file region that track() decodes as a
	// sequence number.
	require.NoError(t, pr.sEnd.conn.SendParts([]env.Part{{File: f, Offset: 0, Length: 8}}))
	require.NoError(t, f.Close(), "the region was read at the call")
	pr.run(t, 100*time.Millisecond)
	require.Equal(t, []uint64{42}, pr.cEnd.frames)

	// A region past the file's end resets the conn rather than sending a
	// short frame.
	g, err := d.Open("seg", false)
	require.NoError(t, err)
	require.NoError(t, pr.sEnd.conn.SendParts([]env.Part{{Bytes: []byte("x")}, {File: g, Offset: 10, Length: 100}}))
	pr.run(t, 100*time.Millisecond)
	require.Equal(t, 1, pr.cEnd.closes)
	require.ErrorIs(t, pr.cEnd.err, env.ErrConnReset)
}
