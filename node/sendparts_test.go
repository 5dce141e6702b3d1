package node

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
)

// partsServer answers every frame with a frame made of a header, a region
// of file and a trailer, through SendParts.
func partsServer(t *testing.T, n *Net, l *Loop, f env.File, off, length int64) env.Listener {
	t.Helper()
	var ln env.Listener
	onLoop(t, l, func() {
		var err error
		ln, err = n.Listen("127.0.0.1:0", func(c env.Conn) {
			c.OnFrame(func([]byte) {
				parts := []env.Part{
					{Bytes: []byte("head:")},
					{File: f, Offset: off, Length: length},
					{Bytes: []byte(":tail")},
				}
				if err := c.SendParts(parts); err != nil {
					t.Errorf("SendParts: %v", err)
				}
			})
		})
		require.NoError(t, err)
	})
	return ln
}

func testFile(t testing.TB, l *Loop, content []byte) env.File {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "seg.log"), content, 0o644))
	d, err := NewDisk(dir, l, 0)
	require.NoError(t, err)
	var f env.File
	onLoop(t, l, func() {
		f, err = d.Open("seg.log", false)
		require.NoError(t, err)
	})
	return f
}

func TestNetSendPartsSendsFileRegions(t *testing.T) {
	for _, sendfile := range []bool{true, false} {
		t.Run(fmt.Sprintf("sendfile=%v", sendfile), func(t *testing.T) {
			l := startLoop(t)
			n := NewNet(l, NetConfig{}, slog.New(slog.DiscardHandler))
			n.UseSendfile(sendfile)
			t.Cleanup(n.Close)
			content := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuv"), (3<<20)/32)
			f := testFile(t, l, content)
			// A region larger than the pread buffer and the socket buffer.
			off, length := int64(1000), int64(len(content)-5000)
			ln := partsServer(t, n, l, f, off, length)
			c := dialRaw(t, ln.Addr())
			want := append(append([]byte("head:"), content[off:off+length]...), ":tail"...)
			for i := 0; i < 3; i++ { // pipelined requests reuse the conn
				writeRawFrame(t, c, []byte("req"))
			}
			for i := 0; i < 3; i++ {
				require.Equal(t, want, readRawFrame(t, c), "response %d", i)
			}
		})
	}
}

func TestNetSendPartsFileClosedAfterCallStillSends(t *testing.T) {
	n, l := newTestNet(t, 0)
	content := []byte("the region outlives the handle")
	f := testFile(t, l, content)
	var ln env.Listener
	onLoop(t, l, func() {
		var err error
		ln, err = n.Listen("127.0.0.1:0", func(c env.Conn) {
			c.OnFrame(func([]byte) {
				require.NoError(t, c.SendParts([]env.Part{{File: f, Offset: 4, Length: 6}}))
				// The conn holds its own reference: closing (and even
				// unlinking) the file does not spoil the frame.
				require.NoError(t, f.Close())
			})
		})
		require.NoError(t, err)
	})
	c := dialRaw(t, ln.Addr())
	writeRawFrame(t, c, []byte("x"))
	require.Equal(t, []byte("region"), readRawFrame(t, c))
}

func TestNetSendPartsShortFileResetsConn(t *testing.T) {
	n, l := newTestNet(t, 0)
	f := testFile(t, l, []byte("short"))
	ln := partsServer(t, n, l, f, 0, 100) // promises more than the file has
	c := dialRaw(t, ln.Addr())
	writeRawFrame(t, c, []byte("x"))
	expectClosedByPeer(t, c)
}

func TestNetPauseStopsReading(t *testing.T) {
	n, l := newTestNet(t, 0)
	got := make(chan []byte, 64)
	conns := make(chan env.Conn, 1)
	var ln env.Listener
	onLoop(t, l, func() {
		var err error
		ln, err = n.Listen("127.0.0.1:0", func(c env.Conn) {
			c.Pause()
			conns <- c
			c.OnFrame(func(f []byte) { got <- f })
		})
		require.NoError(t, err)
	})
	c := dialRaw(t, ln.Addr())
	for i := 0; i < 5; i++ {
		writeRawFrame(t, c, []byte{byte(i)})
	}
	select {
	case f := <-got:
		t.Fatalf("a paused conn delivered frame %v", f)
	case <-time.After(100 * time.Millisecond):
	}
	conn := <-conns
	onLoop(t, l, conn.Resume)
	for i := 0; i < 5; i++ {
		select {
		case f := <-got:
			require.Equal(t, []byte{byte(i)}, f)
		case <-time.After(testTimeout):
			t.Fatalf("frame %d not delivered after Resume", i)
		}
	}
}
