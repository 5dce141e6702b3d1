package node

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/strata-log/strata/core/env"
)

// Receiving frames. A size prefix is a claim, not a fact: the transport
// never allocates for bytes that have not arrived, and on accepted
// connections it bounds what peers can make it hold and for how long.
//
//  1. socket.request.max.bytes: a size prefix above it closes the
//     connection before anything is allocated for the frame.
//  2. A frame's buffer grows with its bytes as they arrive, doubling, so
//     it holds at most twice what arrived (plus frameInitialBytes); a
//     peer announcing 100 MiB and sending 1 MiB costs about 2 MiB.
//  3. On accepted connections, the bytes of frames received (in part or
//     whole) and not yet handed to the loop count against one budget
//     shared by every accepted connection, queued.max.request.bytes. A
//     reader that needs room the budget does not have waits, reading
//     nothing, so TCP pushes back on its peer. So that frames waiting
//     for room half-way cannot all wait on each other, one frame at a
//     time (the first to find the budget full) may pass it; it gives the
//     overdraft back when it reaches the loop or its connection ends. A
//     frame that has arrived whole in the connection's read buffer (a
//     small request sent at once, as clients do) never waits: it
//     cannot stall, and so stalled frames filling the budget never hold
//     up a Metadata. The
//     broker then counts the frames it holds against the same key
//     (core/broker), so requests hold at most twice
//     queued.max.request.bytes plus one frame.
//  4. On accepted connections, a frame whose first byte has arrived must
//     make progress: at least FrameMinBytesPerSec × FrameReadTimeout of
//     its bytes (or the rest of it, if less) within every
//     FrameReadTimeout, or the connection is closed with a log line. The
//     clock stops while the reader waits for the budget, which is not the
//     peer's doing. Between frames a connection may be silent: idle
//     connections are the listeners' business (connections.max.idle.ms,
//     in core). This is Apache's mod_reqtimeout rule (a timeout extended
//     by a minimum rate); Kafka has none, so a peer trickling a frame one
//     byte a second held a connection for ever.
//
// Dialed connections (to other nodes) keep rules 1 and 2 only: their
// frames are responses to our own requests, bounded by those requests'
// timeouts.

// frameInitialBytes is the most a frame's buffer gets before its bytes
// arrive: what a frame costs, beyond the connection's read buffer, while
// its peer sends nothing.
const frameInitialBytes = 4 << 10

// directReadMinBytes: once this much of a frame has arrived, the reader
// reads the rest straight into the frame's buffer (as much as has
// arrived, up to the size of the buffer so far) instead of through the
// connection's 16 KiB read buffer, so large frames cost few system calls.
const directReadMinBytes = 64 << 10

// errFrameTooSlow is wrapped by the error that closes a connection whose
// frame broke the progress rule.
var errFrameTooSlow = fmt.Errorf("request frame too slow: %w", env.ErrTimeout)

// readBudget is the transport's share of queued.max.request.bytes (rule
// 3 above).
type readBudget struct {
	mu   sync.Mutex
	cond *sync.Cond
	max  int64
	used int64
	// overdraft is the one frame that may pass max, or zero.
	overdraft frameID
	closed    bool
}

// frameID names one frame of one connection: its reader's count.
type frameID struct {
	c   *tcpConn
	seq uint64
}

func newReadBudget(maxBytes int64) *readBudget {
	b := &readBudget{max: maxBytes}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// reserve takes n bytes for frame f, waiting while the budget has no room
// and the overdraft is another frame's. It reports false when f's
// connection ended or the Net closed meanwhile, and whether it waited.
func (b *readBudget) reserve(f frameID, n int) (ok, waited bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		switch {
		case b.closed || f.c.isClosed():
			return false, waited
		case b.used+int64(n) <= b.max || b.overdraft == f:
		case b.overdraft.c == nil:
			b.overdraft = f
		default:
			waited = true
			b.cond.Wait()
			continue
		}
		b.used += int64(n)
		return true, waited
	}
}

// take takes n bytes at once, past max if need be: for a frame that
// has arrived whole (waiting would only keep it where it is).
func (b *readBudget) take(n int) {
	b.mu.Lock()
	b.used += int64(n)
	b.mu.Unlock()
}

// release gives back n bytes of frame f, and the overdraft with the
// frame's last bytes (done) if f holds it.
func (b *readBudget) release(f frameID, n int, done bool) {
	b.mu.Lock()
	b.used -= int64(n)
	if done && b.overdraft == f {
		b.overdraft = frameID{}
	}
	b.cond.Broadcast()
	b.mu.Unlock()
}

// connEnded gives back the overdraft if a frame of c holds it, and wakes
// c's reader if it waits.
func (b *readBudget) connEnded(c *tcpConn) {
	b.mu.Lock()
	if b.overdraft.c == c {
		b.overdraft = frameID{}
	}
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *readBudget) close() {
	b.mu.Lock()
	b.closed = true
	b.cond.Broadcast()
	b.mu.Unlock()
}

// Used is the bytes reserved now (for tests and metrics).
func (b *readBudget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// memoryReturn gives the memory of abandoned frames back to the OS.
// Frames whose connection ended before they arrived whole are what an
// attack leaves behind (finding 4: the node kept 1 GB after such
// connections closed), and a node that goes quiet afterwards may not
// collect for two minutes; the Go runtime returns freed memory only
// after a collection, gradually. So once freeOSMemoryAfterBytes of such
// frames were dropped, the node collects and returns what is free
// (debug.FreeOSMemory), at most once per freeOSMemoryInterval.
type memoryReturn struct {
	mu        sync.Mutex
	pending   int       // bytes of frames dropped since the last return
	last      time.Time // the last return
	scheduled bool      // a return is due at the end of the interval
}

const (
	freeOSMemoryAfterBytes = 8 << 20
	freeOSMemoryInterval   = 10 * time.Second
)

func (m *memoryReturn) dropped(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending += n
	if m.pending < freeOSMemoryAfterBytes || m.scheduled {
		return
	}
	m.scheduled = true
	wait := max(0, freeOSMemoryInterval-time.Since(m.last))
	time.AfterFunc(wait, func() {
		m.mu.Lock()
		m.pending, m.scheduled, m.last = 0, false, time.Now()
		m.mu.Unlock()
		debug.FreeOSMemory()
	})
}

// frameReader reads one connection's frames (the reader goroutine's
// state).
type frameReader struct {
	c        *tcpConn
	r        *bufio.Reader
	maxFrame int
	// budget is nil on dialed connections.
	budget *readBudget
	seq    uint64
	// held is what the frame being read holds of the budget.
	held int

	// The progress rule (rule 4); timeout 0 turns it off.
	timeout     time.Duration
	windowBytes int       // bytes due in each window
	windowStart time.Time // when the current window began
	windowGot   int       // bytes that arrived in it
	deadline    time.Time // the socket's read deadline; zero when none
}

func newFrameReader(c *tcpConn) *frameReader {
	f := &frameReader{c: c, r: bufio.NewReaderSize(c.nc, readBufferBytes), maxFrame: c.net.cfg.MaxFrameBytes}
	if c.inbound {
		f.budget = c.net.budget
		f.timeout = c.net.cfg.FrameReadTimeout
		f.windowBytes = int(min(int64(c.net.cfg.FrameMinBytesPerSec)*int64(f.timeout/time.Millisecond)/1000, int64(c.net.cfg.MaxFrameBytes)))
		f.windowBytes = max(f.windowBytes, 1)
	}
	return f
}

// next reads the next frame. The caller owns its budget bytes (len of the
// frame) from now on; on an error, the frame's bytes are given back.
func (f *frameReader) next() ([]byte, error) {
	if f.r.Buffered() == 0 {
		f.clearDeadline() // the peer may be silent between frames
	}
	if _, err := f.r.Peek(1); err != nil {
		return nil, f.readErr(err)
	}
	f.seq++
	f.c.receiving.Store(true)
	defer f.c.receiving.Store(false)
	f.startWindow()
	var size [4]byte
	for got := 0; got < len(size); {
		n, err := f.read(size[got:])
		got += n
		if err != nil {
			return nil, err
		}
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || int64(n) > int64(f.maxFrame) {
		return nil, fmt.Errorf("frame of %d bytes from %s exceeds socket.request.max.bytes=%d: %w",
			n, f.c.remote, f.maxFrame, env.ErrFrameTooLarge)
	}
	frame, err := f.body(int(n))
	if err != nil {
		if f.held > 0 {
			f.budget.release(f.id(), f.held, true)
			f.c.net.memory.dropped(f.held)
		}
		f.held = 0
		return nil, err
	}
	f.held = 0
	return frame, nil
}

func (f *frameReader) id() frameID { return frameID{f.c, f.seq} }

// body reads a frame's size bytes as they arrive (rules 2 and 3).
func (f *frameReader) body(size int) ([]byte, error) {
	if size <= f.r.Buffered() {
		// Arrived whole (in the read buffer): it cannot stall, so it
		// never waits for the budget. Small requests, a Metadata among
		// them, get through while stalled frames fill the budget.
		if f.budget != nil {
			f.budget.take(size)
			f.held = size
		}
		buf := make([]byte, size)
		_, err := f.read(buf) // from the buffer: no system call
		return buf, err
	}
	buf := make([]byte, 0, min(size, max(f.r.Buffered(), frameInitialBytes)))
	for len(buf) < size {
		if f.r.Buffered() == 0 && len(buf) < directReadMinBytes {
			if err := f.fill(); err != nil {
				return nil, err
			}
		}
		want := size - len(buf)
		if b := f.r.Buffered(); b > 0 {
			want = min(want, b) // arrived: a copy
		} else if room := cap(buf) - len(buf); room > 0 {
			want = min(want, room) // a direct read into the room left
		} else {
			want = min(want, len(buf)) // a direct read into a doubled buffer
		}
		if err := f.reserve(want); err != nil {
			return nil, err
		}
		buf = growFrame(buf, want, size)
		n, err := f.read(buf[len(buf) : len(buf)+want])
		buf = buf[:len(buf)+n]
		if n < want && f.budget != nil {
			f.held -= want - n
			f.budget.release(f.id(), want-n, false)
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// growFrame makes room for want more bytes in buf, doubling its capacity
// (never past size).
func growFrame(buf []byte, want, size int) []byte {
	if cap(buf)-len(buf) >= want {
		return buf
	}
	nb := make([]byte, len(buf), min(size, max(2*cap(buf), len(buf)+want)))
	copy(nb, buf)
	return nb
}

// reserve takes n bytes of the budget for the frame being read.
func (f *frameReader) reserve(n int) error {
	if f.budget == nil {
		return nil
	}
	ok, waited := f.budget.reserve(f.id(), n)
	if !ok {
		return fmt.Errorf("read from %s: %w", f.c.remote, env.ErrClosed)
	}
	f.held += n
	if waited {
		f.startWindow() // the wait was ours, not the peer's
	}
	return nil
}

// fill waits for at least one byte in the read buffer.
func (f *frameReader) fill() error {
	f.armDeadline()
	if _, err := f.r.Peek(1); err != nil {
		return f.readErr(err)
	}
	return nil
}

// read reads into p under the progress rule.
func (f *frameReader) read(p []byte) (int, error) {
	if f.r.Buffered() == 0 {
		f.armDeadline()
	}
	n, err := f.r.Read(p)
	f.progress(n)
	if err != nil {
		return n, f.readErr(err)
	}
	return n, nil
}

func (f *frameReader) startWindow() {
	if f.timeout > 0 {
		f.windowStart, f.windowGot = time.Now(), 0
	}
}

func (f *frameReader) progress(n int) {
	if f.timeout == 0 {
		return
	}
	f.windowGot += n
	if f.windowGot >= f.windowBytes {
		f.startWindow()
	}
}

// armDeadline sets the socket's read deadline to the end of the current
// window, before a read that may block.
func (f *frameReader) armDeadline() {
	if f.timeout == 0 {
		return
	}
	d := f.windowStart.Add(f.timeout)
	if !d.Equal(f.deadline) {
		_ = f.c.nc.SetReadDeadline(d)
		f.deadline = d
	}
}

func (f *frameReader) clearDeadline() {
	if !f.deadline.IsZero() {
		_ = f.c.nc.SetReadDeadline(time.Time{})
		f.deadline = time.Time{}
	}
}

func (f *frameReader) readErr(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: fewer than %d bytes of a frame from %s arrived in %v (strata.socket.request.min.bytes.per.sec=%d over strata.socket.request.read.timeout.ms=%d)",
			errFrameTooSlow, f.windowBytes, f.c.remote, f.timeout, f.c.net.cfg.FrameMinBytesPerSec, f.timeout.Milliseconds())
	}
	return fmt.Errorf("read from %s: %w", f.c.remote, netErr(err))
}
