package node

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-log/strata/core/env"
)

// Bounds of the TCP transport.
const (
	// DefaultMaxFrameBytes is Kafka's socket.request.max.bytes default
	// (100 MiB): the largest frame a peer may send us.
	DefaultMaxFrameBytes = 104857600

	// MaxQueuedFramesPerConn bounds the frames read from one connection
	// but not yet handled by the loop. When it is reached the reader stops
	// reading, and TCP pushes back on the client. Kafka clients pipeline at
	// most 5 produce requests per connection by default; 16 leaves room for
	// that plus metadata and heartbeats without letting one connection
	// flood the loop.
	MaxQueuedFramesPerConn = 16

	// WriteQueueHighWaterBytes: while a connection has more response bytes
	// than this queued for its socket, its reader stops reading requests,
	// like Kafka muting a channel with a response in flight. A client that
	// never reads responses thus stops being read instead of growing our
	// memory. 4 MiB keeps the pipe full on loopback (~2.9 GB/s per stream).
	WriteQueueHighWaterBytes = 4 << 20

	// DialTimeout bounds an outgoing connection attempt.
	DialTimeout = 10 * time.Second

	// readBufferBytes is the buffered reader per connection: small frames
	// (metadata, heartbeats) cost one syscall per batch, not per frame.
	readBufferBytes = 64 << 10

	// frameAllocChunkBytes is how much of a large frame is allocated before
	// its bytes arrive; the buffer then doubles as data comes in, so a
	// peer announcing 100 MiB and sending nothing costs 1 MiB.
	frameAllocChunkBytes = 1 << 20

	// acceptRetryMin and acceptRetryMax bound the back-off after a failed
	// Accept (EMFILE, ENFILE), so a descriptor shortage does not spin.
	acceptRetryMin = 5 * time.Millisecond
	acceptRetryMax = time.Second
)

// Net is env.Net over TCP with Kafka's framing: a 4-byte big-endian size,
// then that many bytes. Each connection has a reader goroutine that posts
// frames to the loop and a writer goroutine that drains queued frames with
// writev.
type Net struct {
	loop          *Loop
	maxFrameBytes int
	log           *slog.Logger

	ctx    context.Context // cancelled by Close: aborts dials
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners map[*tcpListener]struct{}
	conns     map[*tcpConn]struct{}
	wg        sync.WaitGroup // every goroutine this Net started
}

var _ env.Net = (*Net)(nil)

// NewNet returns a Net whose callbacks run on loop. maxFrameBytes <= 0
// means DefaultMaxFrameBytes.
func NewNet(loop *Loop, maxFrameBytes int, log *slog.Logger) *Net {
	if maxFrameBytes <= 0 {
		maxFrameBytes = DefaultMaxFrameBytes
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Net{
		loop:          loop,
		maxFrameBytes: maxFrameBytes,
		log:           log.With("component", "net"),
		ctx:           ctx,
		cancel:        cancel,
		listeners:     make(map[*tcpListener]struct{}),
		conns:         make(map[*tcpConn]struct{}),
	}
}

// Close closes every listener and connection at the socket level and waits
// for all goroutines of this Net to exit. Callbacks it would post are
// dropped if the loop has stopped, which is how Shutdown uses it.
func (n *Net) Close() {
	n.mu.Lock()
	n.closed = true
	listeners := make([]*tcpListener, 0, len(n.listeners))
	for l := range n.listeners {
		listeners = append(listeners, l)
	}
	conns := make([]*tcpConn, 0, len(n.conns))
	for c := range n.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	n.cancel()
	for _, l := range listeners {
		_ = l.Close()
	}
	for _, c := range conns {
		c.fail(fmt.Errorf("node shutting down: %w", env.ErrClosed))
	}
	n.wg.Wait()
}

// goroutine starts f as a goroutine of this Net unless the Net is closed.
func (n *Net) goroutine(f func()) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
	return true
}

// Listen implements env.Net.
func (n *Net) Listen(addr string, accept func(env.Conn)) (env.Listener, error) {
	nl, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, netErr(err)
	}
	l := &tcpListener{net: n, nl: nl, accept: accept}
	n.mu.Lock()
	n.listeners[l] = struct{}{}
	n.mu.Unlock()
	if !n.goroutine(l.acceptLoop) {
		_ = nl.Close()
		return nil, fmt.Errorf("listen %s: %w", addr, env.ErrClosed)
	}
	return l, nil
}

// Dial implements env.Net. The connection attempt runs on a helper
// goroutine, bounded by DialTimeout.
func (n *Net) Dial(addr string, done func(env.Conn, error)) {
	started := n.goroutine(func() {
		d := net.Dialer{Timeout: DialTimeout}
		nc, err := d.DialContext(n.ctx, "tcp", addr)
		if err != nil {
			err = fmt.Errorf("dial %s: %w", addr, netErr(err))
			n.loop.Post(func() { done(nil, err) })
			return
		}
		c := n.newConn(nc)
		if c == nil {
			return // Net closed meanwhile; nc is closed
		}
		n.loop.Post(func() {
			done(c, nil)
			c.start()
		})
	})
	if !started {
		err := fmt.Errorf("dial %s: %w", addr, env.ErrClosed)
		n.loop.Post(func() { done(nil, err) })
	}
}

// newConn registers a connection, or closes nc and returns nil when the Net
// is closed.
func (n *Net) newConn(nc net.Conn) *tcpConn {
	c := &tcpConn{net: n, nc: nc, local: nc.LocalAddr().String(), remote: nc.RemoteAddr().String()}
	c.cond = sync.NewCond(&c.mu)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		_ = nc.Close()
		return nil
	}
	n.conns[c] = struct{}{}
	return c
}

func (n *Net) forget(c *tcpConn) {
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
}

// tcpListener is env.Listener over a net.Listener.
type tcpListener struct {
	net    *Net
	nl     net.Listener
	accept func(env.Conn)
	closed atomic.Bool
}

// Addr implements env.Listener.
func (l *tcpListener) Addr() string { return l.nl.Addr().String() }

// Close implements env.Listener. Connections accepted by the kernel but not
// yet handed to the accept callback are closed rather than delivered.
func (l *tcpListener) Close() error {
	if l.closed.Swap(true) {
		return fmt.Errorf("listener %s: %w", l.Addr(), env.ErrClosed)
	}
	l.net.mu.Lock()
	delete(l.net.listeners, l)
	l.net.mu.Unlock()
	return netErr(l.nl.Close())
}

func (l *tcpListener) acceptLoop() {
	retry := acceptRetryMin
	for {
		nc, err := l.nl.Accept()
		if err != nil {
			if l.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors or a similar transient failure: keep
			// the listener, back off.
			l.net.log.Warn("accept failed; retrying", "addr", l.Addr(), "err", err, "retry_in", retry)
			time.Sleep(retry)
			retry = min(2*retry, acceptRetryMax)
			continue
		}
		retry = acceptRetryMin
		c := l.net.newConn(nc)
		if c == nil {
			return
		}
		l.net.loop.Post(func() {
			if l.closed.Load() {
				c.fail(fmt.Errorf("listener closed before accept: %w", env.ErrClosed))
				return
			}
			l.accept(c)
			c.start()
		})
	}
}

// tcpConn is env.Conn over a net.Conn.
//
// onFrame, onClose and ended are owned by the loop. The rest is guarded by
// mu and shared with the reader and writer goroutines.
type tcpConn struct {
	net           *Net
	nc            net.Conn
	local, remote string

	onFrame func([]byte)
	onClose func(error)
	// ended is set on the loop when core may no longer see frames: at a
	// local Close, or when OnClose runs.
	ended bool

	mu       sync.Mutex
	cond     *sync.Cond // signals: out queued, bytes written, frame handled, closed
	closed   bool
	out      [][]byte // size prefixes and frames, in send order
	buffered int      // bytes in out and in the writev in progress
	queued   int      // frames posted to the loop but not handled yet
}

var _ env.Conn = (*tcpConn)(nil)

// start launches the reader and writer; it runs on the loop after the
// handlers were registered, so no frame can arrive before.
func (c *tcpConn) start() {
	c.net.goroutine(c.readLoop)
	c.net.goroutine(c.writeLoop)
}

// OnFrame implements env.Conn.
func (c *tcpConn) OnFrame(f func([]byte)) { c.onFrame = f }

// OnClose implements env.Conn.
func (c *tcpConn) OnClose(f func(error)) { c.onClose = f }

// LocalAddr implements env.Conn.
func (c *tcpConn) LocalAddr() string { return c.local }

// RemoteAddr implements env.Conn.
func (c *tcpConn) RemoteAddr() string { return c.remote }

// Send implements env.Conn: it queues the frame for the writer and never
// blocks.
func (c *tcpConn) Send(frame []byte) error {
	if len(frame) > math.MaxInt32 {
		return fmt.Errorf("send %d bytes to %s: %w", len(frame), c.remote, env.ErrFrameTooLarge)
	}
	size := make([]byte, 4)
	binary.BigEndian.PutUint32(size, uint32(len(frame)))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("send to %s: %w", c.remote, env.ErrClosed)
	}
	c.out = append(c.out, size, frame)
	c.buffered += 4 + len(frame)
	c.cond.Broadcast()
	return nil
}

// Buffered implements env.Conn.
func (c *tcpConn) Buffered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buffered
}

// Close implements env.Conn. Frames already read but not yet handled are
// dropped; OnClose(nil) runs later on the loop.
func (c *tcpConn) Close() {
	c.ended = true
	c.end(nil)
}

// fail ends the connection from a helper goroutine (or from Net.Close).
func (c *tcpConn) fail(err error) { c.end(err) }

// end closes the socket once and posts OnClose exactly once.
func (c *tcpConn) end(err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.out = nil
	c.buffered = 0
	c.cond.Broadcast()
	c.mu.Unlock()
	_ = c.nc.Close()
	c.net.forget(c)
	// Posted after every frame the reader already posted, so OnClose
	// follows the last frame delivered.
	c.net.loop.Post(func() {
		c.ended = true
		if c.onClose != nil {
			c.onClose(err)
		}
	})
}

// deliver runs on the loop for each frame read.
func (c *tcpConn) deliver(frame []byte) {
	if !c.ended && c.onFrame != nil {
		c.onFrame(frame)
	}
	c.mu.Lock()
	c.queued--
	c.cond.Broadcast()
	c.mu.Unlock()
}

func (c *tcpConn) readLoop() {
	r := bufio.NewReaderSize(c.nc, readBufferBytes)
	var size [4]byte
	for {
		// Back-pressure: stop reading while the loop has enough of this
		// conn's frames or the client is not reading our responses.
		c.mu.Lock()
		for !c.closed && (c.queued >= MaxQueuedFramesPerConn || c.buffered > WriteQueueHighWaterBytes) {
			c.cond.Wait()
		}
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return
		}

		if _, err := io.ReadFull(r, size[:]); err != nil {
			c.fail(fmt.Errorf("read from %s: %w", c.remote, netErr(err)))
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 0 || int64(n) > int64(c.net.maxFrameBytes) {
			c.fail(fmt.Errorf("frame of %d bytes from %s exceeds socket.request.max.bytes=%d: %w",
				n, c.remote, c.net.maxFrameBytes, env.ErrFrameTooLarge))
			return
		}
		frame, err := readFrame(r, int(n))
		if err != nil {
			c.fail(fmt.Errorf("read from %s: %w", c.remote, netErr(err)))
			return
		}
		c.mu.Lock()
		c.queued++
		c.mu.Unlock()
		c.net.loop.Post(func() { c.deliver(frame) })
	}
}

// readFrame reads exactly size bytes, allocating as they arrive rather
// than trusting the size prefix up front.
func readFrame(r io.Reader, size int) ([]byte, error) {
	if size <= frameAllocChunkBytes {
		buf := make([]byte, size)
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	buf := make([]byte, 0, frameAllocChunkBytes)
	for len(buf) < size {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*cap(buf), size))
			copy(grown, buf)
			buf = grown
		}
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

func (c *tcpConn) writeLoop() {
	var batch net.Buffers
	for {
		c.mu.Lock()
		for !c.closed && len(c.out) == 0 {
			c.cond.Wait()
		}
		if c.closed {
			c.mu.Unlock()
			return
		}
		batch, c.out = c.out, batch[:0]
		c.mu.Unlock()

		bytes := 0
		for _, b := range batch {
			bytes += len(b)
		}
		// WriteTo consumes batch (it reslices it); keep the backing
		// array for reuse.
		pending := batch
		_, err := pending.WriteTo(c.nc) // writev
		clear(batch)
		batch = batch[:0]

		c.mu.Lock()
		if !c.closed {
			c.buffered -= bytes
		}
		c.cond.Broadcast()
		c.mu.Unlock()
		if err != nil {
			c.fail(fmt.Errorf("write to %s: %w", c.remote, netErr(err)))
			return
		}
	}
}
