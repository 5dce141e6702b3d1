package node

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-log/strata/core/broker"
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

	// MaxQueuedBytesPerConn also bounds the read-ahead by bytes: a reader
	// with this much of its connection's frames waiting for the loop
	// stops until they are handled (one frame of any size is always let
	// through). Without it, 16 maximum-size produce requests per
	// connection could wait in memory before the broker's own in-flight
	// bound (queued.max.request.bytes) sees them.
	MaxQueuedBytesPerConn = 1 << 20

	// WriteQueueHighWaterBytes: while a connection has more response bytes
	// than this queued for its socket, its reader stops reading requests,
	// like Kafka muting a channel with a response in flight. A client that
	// never reads responses thus stops being read instead of growing our
	// memory. 4 MiB keeps the pipe full on loopback (~2.9 GB/s per stream).
	WriteQueueHighWaterBytes = 4 << 20

	// DefaultFrameReadTimeout and DefaultFrameMinBytesPerSec are the
	// progress rule of a request frame that has begun to arrive
	// (netread.go): at least 20 KiB of it in every 20 s, or the
	// connection is closed. 20 s is Apache's mod_reqtimeout body
	// timeout; Kafka's clients give up on a request after 30 s
	// (request.timeout.ms), so a frame slower than that serves no one.
	DefaultFrameReadTimeout    = 20 * time.Second
	DefaultFrameMinBytesPerSec = 1024

	// DialTimeout bounds an outgoing connection attempt.
	DialTimeout = 10 * time.Second

	// readBufferBytes is the buffered reader per connection: small frames
	// (metadata, heartbeats) cost one syscall per batch, not per frame;
	// larger frames are read past it, straight into their own buffer. It
	// is what an idle connection costs (with two goroutine stacks), so
	// 16 KiB: 1,000 idle connections hold 16 MiB of read buffers.
	readBufferBytes = 16 << 10

	// acceptRetryMin and acceptRetryMax bound the back-off after a failed
	// Accept (EMFILE, ENFILE), so a descriptor shortage does not spin.
	acceptRetryMin = 5 * time.Millisecond
	acceptRetryMax = time.Second
)

// NetConfig bounds a Net (netread.go says how). A zero field means its
// default.
type NetConfig struct {
	// MaxFrameBytes is socket.request.max.bytes: the largest frame a
	// peer may send (DefaultMaxFrameBytes).
	MaxFrameBytes int
	// ReadBudgetBytes is queued.max.request.bytes as the transport
	// applies it: the bytes of frames received on accepted connections,
	// in part or whole, and not yet handed to the loop
	// (DefaultQueuedMaxRequestBytes).
	ReadBudgetBytes int64
	// FrameReadTimeout and FrameMinBytesPerSec are
	// strata.socket.request.read.timeout.ms and
	// strata.socket.request.min.bytes.per.sec: a frame that has begun to
	// arrive on an accepted connection must gain FrameMinBytesPerSec ×
	// FrameReadTimeout bytes (or its rest) in every FrameReadTimeout
	// (DefaultFrameReadTimeout, DefaultFrameMinBytesPerSec).
	FrameReadTimeout    time.Duration
	FrameMinBytesPerSec int
	// TLSHandshakeTimeout bounds a TLS handshake, accepted or dialed
	// (DefaultTLSHandshakeTimeout).
	TLSHandshakeTimeout time.Duration
	// MaxTLSHandshakes bounds the handshakes in progress on one TLS
	// listener (DefaultMaxTLSHandshakes); at the bound it stops
	// accepting until one ends.
	MaxTLSHandshakes int
}

func (c NetConfig) withDefaults() NetConfig {
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.ReadBudgetBytes <= 0 {
		c.ReadBudgetBytes = broker.DefaultMaxInflightRequestBytes
	}
	if c.FrameReadTimeout <= 0 {
		c.FrameReadTimeout = DefaultFrameReadTimeout
	}
	if c.FrameMinBytesPerSec <= 0 {
		c.FrameMinBytesPerSec = DefaultFrameMinBytesPerSec
	}
	if c.TLSHandshakeTimeout <= 0 {
		c.TLSHandshakeTimeout = DefaultTLSHandshakeTimeout
	}
	if c.MaxTLSHandshakes <= 0 {
		c.MaxTLSHandshakes = DefaultMaxTLSHandshakes
	}
	return c
}

// Net is env.Net over TCP with Kafka's framing: a 4-byte big-endian size,
// then that many bytes. Each connection has a reader goroutine that posts
// frames to the loop and a writer goroutine that drains queued frames with
// writev. It is env.SecureNet too: ListenTLS and DialTLS run the same
// connections over crypto/tls (tls.go), with the configuration SetTLS
// registered for the listener's name.
type Net struct {
	loop *Loop
	cfg  NetConfig
	log  *slog.Logger
	// budget bounds the frame bytes read on accepted connections and
	// not yet handed to the loop (netread.go).
	budget *readBudget
	// memory returns abandoned frames' memory to the OS (netread.go).
	memory memoryReturn
	// sendfile: file regions go out with sendfile(2); false sends them
	// through user space with pread and write (for comparison; TLS
	// connections always do). Set before the first conn.
	sendfile bool

	ctx    context.Context // cancelled by Close: aborts dials
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners map[*tcpListener]struct{}
	conns     map[*tcpConn]struct{}
	// tls is each TLS listener's configuration and material, by
	// upper-case listener name (SetTLS).
	tls map[string]*tlsStore
	wg  sync.WaitGroup // every goroutine this Net started
}

var (
	_ env.Net       = (*Net)(nil)
	_ env.SecureNet = (*Net)(nil)
)

// NewNet returns a Net whose callbacks run on loop.
func NewNet(loop *Loop, cfg NetConfig, log *slog.Logger) *Net {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Net{
		loop:      loop,
		cfg:       cfg,
		budget:    newReadBudget(cfg.ReadBudgetBytes),
		log:       log.With("component", "net"),
		sendfile:  true,
		ctx:       ctx,
		cancel:    cancel,
		listeners: make(map[*tcpListener]struct{}),
		conns:     make(map[*tcpConn]struct{}),
		tls:       make(map[string]*tlsStore),
	}
}

// UseSendfile says whether file regions are sent with sendfile(2) (the
// default) or read into user space and written. Call it before any conn
// exists.
func (n *Net) UseSendfile(on bool) { n.sendfile = on }

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
	n.budget.close()
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
	l := &tcpListener{net: n, nl: nl, accept: accept, stop: make(chan struct{})}
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
		c := n.newConn(nc, nil, false)
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

// newConn registers a connection over the socket raw (accepted:
// inbound), through tc when it is TLS, or closes raw and returns nil when
// the Net is closed.
func (n *Net) newConn(raw net.Conn, tc *tls.Conn, inbound bool) *tcpConn {
	c := &tcpConn{net: n, nc: raw, raw: raw, inbound: inbound, local: raw.LocalAddr().String(), remote: raw.RemoteAddr().String()}
	if tc != nil {
		c.nc, c.secure = tc, true
	}
	c.cond = sync.NewCond(&c.mu)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		_ = raw.Close()
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
	// tlsName is the listener name whose TLS configuration (Net.SetTLS)
	// each handshake takes, as registered when it starts; "" for
	// plaintext.
	tlsName string
	// handshakes holds a token per handshake in progress (TLS only).
	handshakes chan struct{}
	// fullLogged is when the accept loop last logged that handshakes
	// were at their bound.
	fullLogged time.Time
	// stop is closed by Close.
	stop   chan struct{}
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
	close(l.stop)
	return netErr(l.nl.Close())
}

func (l *tcpListener) acceptLoop() {
	retry := acceptRetryMin
	for {
		if l.tlsName != "" && !l.handshakeSlot() {
			return
		}
		nc, err := l.nl.Accept()
		if err != nil {
			if l.tlsName != "" {
				<-l.handshakes
			}
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
		if l.tlsName != "" {
			// The handshake runs on a goroutine of its own, so that a
			// client that never completes it holds up no one; it gives
			// its slot back when it ends.
			if !l.net.goroutine(func() { l.handshake(nc) }) {
				_ = nc.Close()
				return
			}
			continue
		}
		c := l.net.newConn(nc, nil, true)
		if c == nil {
			return
		}
		l.deliver(c, c)
	}
}

// deliver hands an accepted conn (c, or its TLS face) to the accept
// callback on the loop, then starts it.
func (l *tcpListener) deliver(c *tcpConn, face env.Conn) {
	l.net.loop.Post(func() {
		if l.closed.Load() {
			c.fail(fmt.Errorf("listener closed before accept: %w", env.ErrClosed))
			return
		}
		l.accept(face)
		c.start()
	})
}

// tcpConn is env.Conn over a net.Conn.
//
// onFrame, onClose and ended are owned by the loop. The rest is guarded by
// mu and shared with the reader and writer goroutines.
type tcpConn struct {
	net *Net
	// nc is what frames are read from and written to: raw, or a TLS
	// conn over it (secure).
	nc  net.Conn
	raw net.Conn
	// secure: nc is TLS, so file regions cannot go out with sendfile.
	secure        bool
	local, remote string
	// inbound: accepted, not dialed; its frames are requests, held to
	// the budget and the progress rule.
	inbound bool
	// receiving is set while part of a frame has arrived and the rest
	// has not (env.FrameReceiver).
	receiving atomic.Bool

	onFrame func([]byte)
	onClose func(error)
	// ended is set on the loop when core may no longer see frames: at a
	// local Close, or when OnClose runs.
	ended bool

	mu       sync.Mutex
	cond     *sync.Cond // signals: out queued, bytes written, frame handled, closed, resumed
	closed   bool
	out      []outItem // size prefixes, frames and file regions, in send order
	buffered int       // bytes in out and in the write in progress
	queued   int       // frames posted to the loop but not handled yet
	queuedB  int       // their bytes
	paused   bool      // Pause: the reader reads nothing until Resume
}

// outItem is one piece of the outgoing byte stream: bytes, or (fd >= 0) n
// bytes at off of a file the conn holds a duplicate descriptor of, sent
// with sendfile and closed once sent or dropped.
type outItem struct {
	b      []byte
	fd     int
	off, n int64
	name   string // the file's name, for errors
}

func (it outItem) len() int {
	if it.fd >= 0 {
		return int(it.n)
	}
	return len(it.b)
}

// closeFDs closes the descriptors of file items that will not be sent.
func closeFDs(items []outItem) {
	for _, it := range items {
		if it.fd >= 0 {
			_ = unix.Close(it.fd)
		}
	}
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
	return c.queue([]outItem{{b: size, fd: -1}, {b: frame, fd: -1}}, 4+len(frame))
}

// SendParts implements env.Conn. A file region of a node file is queued as
// a duplicate of its descriptor, sent with sendfile (or pread and write
// when the Net's sendfile is off) by the writer; a region of any other
// env.File is read now, on the loop.
func (c *tcpConn) SendParts(parts []env.Part) error {
	var total int64
	for _, p := range parts {
		if p.Len() < 0 {
			return fmt.Errorf("send to %s: negative part length %d", c.remote, p.Len())
		}
		total += p.Len()
	}
	if total > math.MaxInt32 {
		return fmt.Errorf("send %d bytes to %s: %w", total, c.remote, env.ErrFrameTooLarge)
	}
	items := make([]outItem, 0, len(parts)+1)
	size := make([]byte, 4)
	binary.BigEndian.PutUint32(size, uint32(total))
	items = append(items, outItem{b: size, fd: -1})
	for _, p := range parts {
		if p.File == nil {
			items = append(items, outItem{b: p.Bytes, fd: -1})
			continue
		}
		it, err := regionItem(p)
		if err != nil {
			closeFDs(items)
			return fmt.Errorf("send to %s: %w", c.remote, err)
		}
		items = append(items, it)
	}
	return c.queue(items, 4+int(total))
}

// regionItem turns a file part into an out item holding a duplicate
// descriptor, or, for a file that is not a node file, its bytes.
func regionItem(p env.Part) (outItem, error) {
	f := p.File
	for {
		u, ok := f.(interface{ Unwrap() env.File })
		if !ok {
			break
		}
		f = u.Unwrap()
	}
	if f, ok := f.(*file); ok {
		fd, err := f.dupFD()
		if err != nil {
			return outItem{}, err
		}
		return outItem{fd: fd, off: p.Offset, n: p.Length, name: f.name}, nil
	}
	b := make([]byte, p.Length)
	n, err := p.File.ReadAt(b, p.Offset)
	if n < len(b) {
		return outItem{}, fmt.Errorf("read %d bytes at %d of %s: got %d: %w", p.Length, p.Offset, p.File.Name(), n, err)
	}
	return outItem{b: b, fd: -1}, nil
}

// queue appends items to the writer's queue, or closes their descriptors
// when the conn has ended.
func (c *tcpConn) queue(items []outItem, bytes int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		closeFDs(items)
		return fmt.Errorf("send to %s: %w", c.remote, env.ErrClosed)
	}
	c.out = append(c.out, items...)
	c.buffered += bytes
	c.cond.Broadcast()
	return nil
}

// Pause implements env.Conn: the reader stops before its next frame.
func (c *tcpConn) Pause() {
	c.mu.Lock()
	c.paused = true
	c.mu.Unlock()
}

// Resume implements env.Conn.
func (c *tcpConn) Resume() {
	c.mu.Lock()
	c.paused = false
	c.cond.Broadcast()
	c.mu.Unlock()
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
	closeFDs(c.out)
	c.out = nil
	c.buffered = 0
	c.cond.Broadcast()
	c.mu.Unlock()
	// The socket, not the TLS conn: tls.Conn.Close sends close_notify,
	// which may wait up to 5 s for room in the socket buffer, and end
	// runs on the loop. The framing says where every frame ends, so a
	// peer loses nothing without the alert.
	_ = c.raw.Close()
	c.net.forget(c)
	c.net.budget.connEnded(c)
	// Posted after every frame the reader already posted, so OnClose
	// follows the last frame delivered.
	c.net.loop.Post(func() {
		c.ended = true
		if c.onClose != nil {
			c.onClose(err)
		}
	})
}

// ReceivingFrame implements env.FrameReceiver.
func (c *tcpConn) ReceivingFrame() bool { return c.receiving.Load() }

var _ env.FrameReceiver = (*tcpConn)(nil)

// isClosed reports whether the conn ended.
func (c *tcpConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// deliver runs on the loop for each frame read; id is the frame's, for
// the budget.
func (c *tcpConn) deliver(frame []byte, id frameID) {
	size := len(frame)
	if c.inbound {
		c.net.budget.release(id, size, true)
	}
	if !c.ended && c.onFrame != nil {
		c.onFrame(frame)
	}
	c.mu.Lock()
	c.queued--
	c.queuedB -= size
	c.cond.Broadcast()
	c.mu.Unlock()
}

func (c *tcpConn) readLoop() {
	f := newFrameReader(c)
	for {
		// Back-pressure: stop reading while the loop has enough of this
		// conn's frames or the client is not reading our responses.
		c.mu.Lock()
		for !c.closed && (c.paused || c.queued >= MaxQueuedFramesPerConn || (c.queued > 0 && c.queuedB >= MaxQueuedBytesPerConn) || c.buffered > WriteQueueHighWaterBytes) {
			c.cond.Wait()
		}
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return
		}

		frame, err := f.next()
		if err != nil {
			if errors.Is(err, errFrameTooSlow) {
				c.net.log.Warn("closing connection: request frame too slow", "remote", c.remote, "err", err)
			}
			c.fail(err)
			return
		}
		id := f.id()
		c.mu.Lock()
		c.queued++
		c.queuedB += len(frame)
		c.mu.Unlock()
		c.net.loop.Post(func() { c.deliver(frame, id) })
	}
}

func (c *tcpConn) writeLoop() {
	var batch []outItem
	w := writer{c: c}
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
		for _, it := range batch {
			bytes += it.len()
		}
		err := w.write(batch)
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

// writer writes out items to a conn's socket: runs of byte items with one
// writev, file regions with sendfile at explicit offsets (so concurrent
// readers of one segment never share a file position), or with pread and
// write when the Net's sendfile is off or the conn is TLS. It closes every
// file descriptor of the items it is given, sent or not.
type writer struct {
	c    *tcpConn
	bufs net.Buffers
}

// readWriteChunkBytes is the pread buffer of the read+write path.
const readWriteChunkBytes = 256 << 10

// tlsPackBytes is the buffer small byte items of a TLS conn are packed
// into: a full TLS record.
const tlsPackBytes = 16 << 10

var (
	// readWriteBufs are the pread buffers of the read+write path, held
	// only while a region is sent (an idle conn holds none).
	readWriteBufs = sync.Pool{New: func() any { b := make([]byte, readWriteChunkBytes); return &b }}
	// tlsPackers are the TLS conns' packing writers, held only while a
	// batch is written.
	tlsPackers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, tlsPackBytes) }}
)

func (w *writer) write(items []outItem) error {
	defer closeFDs(items)
	if w.c.secure {
		return w.writeTLS(items)
	}
	for i := 0; i < len(items); {
		if items[i].fd < 0 {
			j := i
			for j < len(items) && items[j].fd < 0 {
				w.bufs = append(w.bufs, items[j].b)
				j++
			}
			pending := w.bufs
			_, err := pending.WriteTo(w.c.nc) // writev; consumes pending
			clear(w.bufs)
			w.bufs = w.bufs[:0]
			if err != nil {
				return err
			}
			i = j
			continue
		}
		var err error
		if w.c.net.sendfile {
			err = w.sendfile(items[i])
		} else {
			err = readWrite(w.c.nc, items[i])
		}
		if err != nil {
			return err
		}
		i++
	}
	return nil
}

// sendfile sends a file region with sendfile(2), waiting on the poller
// while the socket buffer is full.
func (w *writer) sendfile(it outItem) error {
	tc, ok := w.c.nc.(syscallConn)
	if !ok {
		return readWrite(w.c.nc, it)
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	off, left := it.off, it.n
	var serr error
	werr := rc.Write(func(sock uintptr) bool {
		for left > 0 {
			n, err := unix.Sendfile(int(sock), it.fd, &off, int(min(left, 1<<30)))
			if n > 0 {
				left -= int64(n)
			}
			switch {
			case errors.Is(err, unix.EAGAIN):
				return false // wait until writable
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				serr = &os.PathError{Op: "sendfile", Path: it.name, Err: err}
				return true
			case n == 0:
				serr = fmt.Errorf("sendfile %s: the file ends before offset %d (%d bytes promised): %w", it.name, off, left, io.ErrUnexpectedEOF)
				return true
			}
		}
		return true
	})
	return errors.Join(werr, serr)
}

// writeTLS writes items through a TLS conn. Byte items are packed into
// records of up to tlsPackBytes, so that a 4-byte size prefix is not a
// record (and a system call) of its own; file regions are read into user
// space and written, since their bytes must be encrypted (sendfile would
// send them in the clear).
func (w *writer) writeTLS(items []outItem) error {
	bw := tlsPackers.Get().(*bufio.Writer)
	bw.Reset(w.c.nc)
	defer func() {
		bw.Reset(nil)
		tlsPackers.Put(bw)
	}()
	for _, it := range items {
		var err error
		if it.fd < 0 {
			_, err = bw.Write(it.b)
		} else {
			err = readWrite(bw, it)
		}
		if err != nil {
			return err
		}
	}
	return bw.Flush()
}

// readWrite sends a file region through user space: pread into a buffer,
// then write to dst, as a broker without zero-copy (TLS) must.
func readWrite(dst io.Writer, it outItem) error {
	bp := readWriteBufs.Get().(*[]byte)
	defer readWriteBufs.Put(bp)
	buf := *bp
	off, left := it.off, it.n
	for left > 0 {
		chunk := buf[:min(left, int64(len(buf)))]
		n, err := unix.Pread(it.fd, chunk, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "pread", Path: it.name, Err: err}
		}
		if n == 0 {
			return fmt.Errorf("pread %s: the file ends before offset %d (%d bytes promised): %w", it.name, off, left, io.ErrUnexpectedEOF)
		}
		if _, err := dst.Write(chunk[:n]); err != nil {
			return err
		}
		off += int64(n)
		left -= int64(n)
	}
	return nil
}

// syscallConn is the part of *net.TCPConn that sendfile needs.
type syscallConn interface {
	SyscallConn() (syscall.RawConn, error)
}
