package node

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
)

func newTestNet(t *testing.T, maxFrameBytes int) (*Net, *Loop) {
	t.Helper()
	l := startLoop(t)
	n := NewNet(l, NetConfig{MaxFrameBytes: maxFrameBytes}, slog.New(slog.DiscardHandler))
	t.Cleanup(n.Close)
	return n, l
}

// closeEvent is one OnClose call.
type closeEvent struct {
	conn env.Conn
	err  error
}

// echoServer listens on 127.0.0.1:0 and echoes every frame back; every
// OnClose is reported on closes.
func echoServer(t *testing.T, n *Net, l *Loop) (env.Listener, chan closeEvent) {
	t.Helper()
	closes := make(chan closeEvent, 16)
	var ln env.Listener
	onLoop(t, l, func() {
		var err error
		ln, err = n.Listen("127.0.0.1:0", func(c env.Conn) {
			c.OnFrame(func(frame []byte) {
				if err := c.Send(frame); err != nil {
					t.Errorf("echo send: %v", err)
				}
			})
			c.OnClose(func(err error) { closes <- closeEvent{c, err} })
		})
		require.NoError(t, err)
	})
	return ln, closes
}

func dialRaw(t testing.TB, addr string) net.Conn {
	t.Helper()
	return dialRawWithin(t, addr, testTimeout)
}

// dialRawWithin opens a plain TCP connection to addr, closed when the
// test ends, whose dial and every read and write must be done within d.
func dialRawWithin(t testing.TB, addr string, d time.Duration) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, d)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(d)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func writeRawFrame(t testing.TB, c net.Conn, frame []byte) {
	t.Helper()
	buf := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
	_, err := c.Write(append(buf, frame...))
	require.NoError(t, err)
}

// requireEcho writes payload as a frame on c and requires it back.
func requireEcho(t *testing.T, c net.Conn, payload string) {
	t.Helper()
	writeRawFrame(t, c, []byte(payload))
	require.Equal(t, []byte(payload), readRawFrame(t, c))
}

func readRawFrame(t testing.TB, c net.Conn) []byte {
	t.Helper()
	var size [4]byte
	_, err := io.ReadFull(c, size[:])
	require.NoError(t, err)
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(c, frame)
	require.NoError(t, err)
	return frame
}

// expectClosedByPeer reads until the server closes the connection.
func expectClosedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	_, err := io.Copy(io.Discard, c) // returns at EOF or reset
	if err != nil {
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "server did not close the connection: %v", err)
	}
}

func TestNetListenPortZeroReportsRealPort(t *testing.T) {
	n, l := newTestNet(t, 0)
	ln, _ := echoServer(t, n, l)
	host, port, err := net.SplitHostPort(ln.Addr())
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host)
	require.NotEqual(t, "0", port)
}

func TestNetFramesRoundTrip(t *testing.T) {
	n, l := newTestNet(t, 8<<20)
	ln, _ := echoServer(t, n, l)
	c := dialRaw(t, ln.Addr())
	big := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16) // > frameAllocChunkBytes
	frames := [][]byte{[]byte("one"), {}, []byte("three"), big}
	// Pipelined: all frames written before any response is read.
	for _, f := range frames {
		writeRawFrame(t, c, f)
	}
	for i, f := range frames {
		require.Equal(t, f, readRawFrame(t, c), "frame %d", i)
	}
}

func TestNetDialAndExchange(t *testing.T) {
	n, l := newTestNet(t, 0)
	ln, _ := echoServer(t, n, l)
	got := make(chan []byte, 1)
	dialed := make(chan env.Conn, 1)
	onLoop(t, l, func() {
		n.Dial(ln.Addr(), func(c env.Conn, err error) {
			require.NoError(t, err)
			c.OnFrame(func(frame []byte) { got <- frame })
			c.OnClose(func(error) {})
			require.NoError(t, c.Send([]byte("ping")))
			dialed <- c
		})
	})
	c := waitFor(t, dialed, "dial")
	require.Equal(t, []byte("ping"), waitFor(t, got, "echo"))
	require.Equal(t, ln.Addr(), c.RemoteAddr())
	require.NotEmpty(t, c.LocalAddr())
}

func TestNetDialRefused(t *testing.T) {
	n, l := newTestNet(t, 0)
	// A port nobody listens on: bind one, then free it.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := probe.Addr().String()
	require.NoError(t, probe.Close())
	result := make(chan error, 1)
	onLoop(t, l, func() {
		n.Dial(addr, func(c env.Conn, err error) {
			require.Nil(t, c)
			result <- err
		})
	})
	require.ErrorIs(t, waitFor(t, result, "dial"), env.ErrConnRefused)
}

func TestNetOversizedFrameClosesConnAndListenerKeepsAccepting(t *testing.T) {
	const maxFrame = 1 << 20
	n, l := newTestNet(t, maxFrame)
	ln, closes := echoServer(t, n, l)
	for _, size := range []uint32{200 << 20, maxFrame + 1, 0x80000000 /* negative as int32 */} {
		c := dialRaw(t, ln.Addr())
		_, err := c.Write(binary.BigEndian.AppendUint32(nil, size))
		require.NoError(t, err)
		ev := waitFor(t, closes, "OnClose")
		require.ErrorIs(t, ev.err, env.ErrFrameTooLarge, "size %d", size)
		expectClosedByPeer(t, c)

		// The listener still serves.
		c2 := dialRaw(t, ln.Addr())
		requireEcho(t, c2, "still here")
		require.NoError(t, c2.Close())
		ev = waitFor(t, closes, "OnClose of the good conn")
		require.ErrorIs(t, ev.err, env.ErrConnReset)
	}
	// A frame of exactly the maximum is fine.
	c := dialRaw(t, ln.Addr())
	frame := make([]byte, maxFrame)
	writeRawFrame(t, c, frame)
	require.Len(t, readRawFrame(t, c), maxFrame)
}

func TestNetOnCloseOnceAfterLocalClose(t *testing.T) {
	n, l := newTestNet(t, 0)
	var calls atomic.Int32
	closes := make(chan error, 4)
	accepted := make(chan env.Conn, 1)
	var ln env.Listener
	onLoop(t, l, func() {
		var err error
		ln, err = n.Listen("127.0.0.1:0", func(c env.Conn) {
			c.OnFrame(func([]byte) {})
			c.OnClose(func(err error) { calls.Add(1); closes <- err })
			accepted <- c
		})
		require.NoError(t, err)
	})
	raw := dialRaw(t, ln.Addr())
	c := waitFor(t, accepted, "accept")
	onLoop(t, l, func() {
		c.Close()
		c.Close() // idempotent
		require.ErrorIs(t, c.Send([]byte("x")), env.ErrClosed)
		require.Zero(t, calls.Load(), "OnClose ran inline")
	})
	require.NoError(t, waitFor(t, closes, "OnClose"), "local Close reports nil")
	expectClosedByPeer(t, raw)
	time.Sleep(10 * time.Millisecond)
	onLoop(t, l, func() {})
	require.Equal(t, int32(1), calls.Load())
}

func TestNetOnCloseOnceAfterPeerClose(t *testing.T) {
	n, l := newTestNet(t, 0)
	ln, closes := echoServer(t, n, l)
	raw := dialRaw(t, ln.Addr())
	requireEcho(t, raw, "hi")
	require.NoError(t, raw.Close())
	ev := waitFor(t, closes, "OnClose")
	require.ErrorIs(t, ev.err, env.ErrConnReset)
	onLoop(t, l, func() {
		require.ErrorIs(t, ev.conn.Send([]byte("late")), env.ErrClosed)
		ev.conn.Close() // no second OnClose
	})
	time.Sleep(10 * time.Millisecond)
	onLoop(t, l, func() {})
	require.Empty(t, closes)
}

func TestNetListenerClose(t *testing.T) {
	n, l := newTestNet(t, 0)
	ln, _ := echoServer(t, n, l)
	established := dialRaw(t, ln.Addr())
	requireEcho(t, established, "a")
	onLoop(t, l, func() {
		require.NoError(t, ln.Close())
		require.ErrorIs(t, ln.Close(), env.ErrClosed)
	})
	_, err := net.DialTimeout("tcp", ln.Addr(), time.Second)
	require.Error(t, err, "closed listener still accepts")
	// Established conns are unaffected.
	requireEcho(t, established, "b")
}

// TestNetBackPressure: while the loop does not handle a conn's frames, the
// reader stops after MaxQueuedFramesPerConn of them.
func TestNetBackPressure(t *testing.T) {
	n, l := newTestNet(t, 0)
	ln, _ := echoServer(t, n, l)
	raw := dialRaw(t, ln.Addr())
	requireEcho(t, raw, "warm-up")

	release := make(chan struct{})
	l.Post(func() { <-release }) // block the loop
	for range 4 * MaxQueuedFramesPerConn {
		writeRawFrame(t, raw, []byte("x"))
	}
	time.Sleep(50 * time.Millisecond)
	var maxQueued int
	n.mu.Lock()
	for c := range n.conns {
		c.mu.Lock()
		maxQueued = max(maxQueued, c.queued)
		c.mu.Unlock()
	}
	n.mu.Unlock()
	require.Equal(t, MaxQueuedFramesPerConn, maxQueued)
	close(release)
	for range 4 * MaxQueuedFramesPerConn {
		require.Equal(t, []byte("x"), readRawFrame(t, raw))
	}
}

func TestNetCloseStopsEverything(t *testing.T) {
	l := startLoop(t)
	n := NewNet(l, NetConfig{}, slog.New(slog.DiscardHandler))
	ln, closes := echoServer(t, n, l)
	raw := dialRaw(t, ln.Addr())
	requireEcho(t, raw, "a")
	done := make(chan struct{})
	go func() { n.Close(); close(done) }()
	waitFor(t, done, "Net.Close")
	expectClosedByPeer(t, raw)
	require.ErrorIs(t, waitFor(t, closes, "OnClose").err, env.ErrClosed)
	result := make(chan error, 1)
	onLoop(t, l, func() { n.Dial(ln.Addr(), func(_ env.Conn, err error) { result <- err }) })
	require.ErrorIs(t, waitFor(t, result, "dial after close"), env.ErrClosed)
}

// TestNetReadBudgetOverdraftAvoidsDeadlock: four connections each send 40
// KiB of a 64 KiB frame against a 64 KiB read budget, then the rest. Every
// reader would wait for room half-way for ever; the one frame allowed past
// the budget breaks the wait, every frame arrives, and the budget is whole
// again afterwards.
func TestNetReadBudgetOverdraftAvoidsDeadlock(t *testing.T) {
	l := startLoop(t)
	n := NewNet(l, NetConfig{ReadBudgetBytes: 64 << 10}, slog.New(slog.DiscardHandler))
	t.Cleanup(n.Close)
	ln, _ := echoServer(t, n, l)
	const frameBytes, firstPart = 64 << 10, 40 << 10
	frame := bytes.Repeat([]byte("budget!!"), frameBytes/8)
	conns := make([]net.Conn, 4)
	for i := range conns {
		conns[i] = dialRaw(t, ln.Addr())
		_, err := conns[i].Write(append(binary.BigEndian.AppendUint32(nil, frameBytes), frame[:firstPart]...))
		require.NoError(t, err)
	}
	time.Sleep(100 * time.Millisecond)
	require.LessOrEqual(t, n.budget.Used(), int64(64<<10+frameBytes), "the budget and one overdraft frame")
	for _, c := range conns {
		_, err := c.Write(frame[firstPart:])
		require.NoError(t, err)
	}
	for i, c := range conns {
		require.Equal(t, frame, readRawFrame(t, c), "conn %d", i)
	}
	require.Eventually(t, func() bool { return n.budget.Used() == 0 }, testTimeout, 10*time.Millisecond)
}

// TestNetSlowFrameClosesConn: a frame that stalls half-way, or trickles
// below the minimum rate, closes its connection within the window, gives
// its bytes back to the budget, and a silent connection between frames is
// left alone (idleness is the listeners' business).
func TestNetSlowFrameClosesConn(t *testing.T) {
	l := startLoop(t)
	n := NewNet(l, NetConfig{FrameReadTimeout: 300 * time.Millisecond, FrameMinBytesPerSec: 1000}, slog.New(slog.DiscardHandler))
	t.Cleanup(n.Close)
	ln, closes := echoServer(t, n, l)

	stalled := dialRaw(t, ln.Addr())
	_, err := stalled.Write(append(binary.BigEndian.AppendUint32(nil, 1<<20), make([]byte, 100<<10)...))
	require.NoError(t, err)
	start := time.Now()
	ev := waitFor(t, closes, "OnClose of the stalled frame")
	require.ErrorIs(t, ev.err, errFrameTooSlow)
	require.ErrorIs(t, ev.err, env.ErrTimeout)
	require.Less(t, time.Since(start), 2*time.Second)
	require.Eventually(t, func() bool { return n.budget.Used() == 0 }, testTimeout, 10*time.Millisecond)

	trickler := dialRaw(t, ln.Addr())
	start = time.Now()
	go func() {
		for _, b := range binary.BigEndian.AppendUint32(nil, 50) {
			if _, err := trickler.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond) // 10 bytes a second
		}
	}()
	ev = waitFor(t, closes, "OnClose of the trickler")
	require.ErrorIs(t, ev.err, errFrameTooSlow, "a size prefix is part of its frame")
	require.Less(t, time.Since(start), 2*time.Second)

	quiet := dialRaw(t, ln.Addr())
	requireEcho(t, quiet, "one")
	time.Sleep(time.Second) // silent between frames
	requireEcho(t, quiet, "two")
}
