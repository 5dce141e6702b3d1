package broker

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/strata-log/strata/core/env"
)

// fakeEnv is the smallest env.Env the broker can run on: a loop that the
// test drives by hand (run), and an in-memory Net whose conns record what
// the broker sends. Disk and bucket are not used by the broker.
//
// Time stands still unless the test advances it: a timer shorter than
// longTimer fires at the next run, after what is already posted; a longer
// one (connections.max.idle.ms, which would otherwise re-arm and fire
// for ever) waits for advance. Once a test has called advance, every
// timer waits for it (time is the test's now).
type fakeEnv struct {
	pending []func()
	net     *fakeNet
	logBuf  bytes.Buffer
	logger  *slog.Logger
	rnd     *rand.Rand
	now     time.Duration
	later   []fakeLater // in arming order
	clocked bool        // advance was called
}

// longTimer is where fakeEnv's timers start to wait for advance.
const longTimer = time.Minute

type fakeLater struct {
	at time.Duration
	t  *fakeTimer
	f  func()
}

func newFakeEnv() *fakeEnv {
	e := &fakeEnv{rnd: rand.New(rand.NewPCG(1, 2))}
	e.net = &fakeNet{env: e}
	e.logger = slog.New(slog.NewTextHandler(&e.logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return e
}

func (e *fakeEnv) Now() time.Time           { return time.Unix(1_700_000_000, 0) }
func (e *fakeEnv) Monotonic() time.Duration { return e.now }
func (e *fakeEnv) AfterFunc(d time.Duration, f func()) env.Timer {
	t := &fakeTimer{}
	if d >= longTimer || e.clocked {
		e.later = append(e.later, fakeLater{at: e.now + d, t: t, f: f})
		return t
	}
	e.Post(func() {
		if !t.stopped {
			t.fired = true
			f()
		}
	})
	return t
}
func (e *fakeEnv) Post(f func()) { e.pending = append(e.pending, f) }
func (e *fakeEnv) Work(_ time.Duration, job func(), done func()) {
	e.Post(func() {
		job()
		done()
	})
}
func (e *fakeEnv) Rand() *rand.Rand     { return e.rnd }
func (e *fakeEnv) Buggify(string) bool  { return false }
func (e *fakeEnv) Disk() env.Disk       { return nil }
func (e *fakeEnv) Net() env.Net         { return e.net }
func (e *fakeEnv) Bucket() env.Bucket   { return nil }
func (e *fakeEnv) Logger() *slog.Logger { return e.logger }

// run drains posted callbacks, as the loop would between events.
func (e *fakeEnv) run() {
	for len(e.pending) > 0 {
		f := e.pending[0]
		e.pending = e.pending[1:]
		f()
	}
}

// advance moves the clock by d, firing the long timers that fall due
// (earliest first), and runs the loop.
func (e *fakeEnv) advance(d time.Duration) {
	e.clocked = true
	end := e.now + d
	for {
		next := -1
		for i, l := range e.later {
			if l.at <= end && (next < 0 || l.at < e.later[next].at) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		l := e.later[next]
		e.later = append(e.later[:next], e.later[next+1:]...)
		e.now = max(e.now, l.at)
		if !l.t.stopped {
			l.t.fired = true
			l.f()
		}
		e.run()
	}
	e.now = end
	e.run()
}

type fakeTimer struct{ stopped, fired bool }

func (t *fakeTimer) Stop() bool {
	was := !t.stopped && !t.fired
	t.stopped = true
	return was
}

type fakeNet struct {
	env      *fakeEnv
	listener *fakeListener
	nextPort int
}

func (n *fakeNet) Listen(addr string, accept func(env.Conn)) (env.Listener, error) {
	if n.listener != nil {
		return nil, fmt.Errorf("fake net: already listening: %w", env.ErrExist)
	}
	if addr == "127.0.0.1:0" {
		addr = "127.0.0.1:40001" // what a real ":0" bind would report
	}
	n.listener = &fakeListener{addr: addr, accept: accept}
	return n.listener, nil
}

func (n *fakeNet) Dial(addr string, done func(env.Conn, error)) {
	n.env.Post(func() { done(nil, fmt.Errorf("fake net: dial %s: %w", addr, env.ErrConnRefused)) })
}

// connect simulates a client connecting: accept runs as it would on the
// loop, and the returned conn is the broker's end.
func (n *fakeNet) connect() *fakeConn {
	n.nextPort++
	c := &fakeConn{env: n.env, remote: fmt.Sprintf("10.0.0.9:%d", 50000+n.nextPort)}
	n.listener.accept(c)
	return c
}

type fakeListener struct {
	addr   string
	accept func(env.Conn)
	closed bool
}

func (l *fakeListener) Addr() string { return l.addr }
func (l *fakeListener) Close() error {
	if l.closed {
		return fmt.Errorf("fake listener: %w", env.ErrClosed)
	}
	l.closed = true
	return nil
}

type fakeConn struct {
	env      *fakeEnv
	remote   string
	onFrame  func([]byte)
	onClose  func(error)
	sent     [][]byte
	closed   bool
	closeRan int
	// buffered is what Buffered reports, to test the back-pressure
	// backstop.
	buffered int
	// paused is whether the broker paused reading the conn.
	paused bool
}

func (c *fakeConn) OnFrame(f func([]byte)) { c.onFrame = f }
func (c *fakeConn) OnClose(f func(error))  { c.onClose = f }
func (c *fakeConn) Send(frame []byte) error {
	if c.closed {
		return fmt.Errorf("fake conn: %w", env.ErrClosed)
	}
	c.sent = append(c.sent, frame)
	return nil
}
func (c *fakeConn) SendParts(parts []env.Part) error {
	var frame []byte
	for _, p := range parts {
		if p.File == nil {
			frame = append(frame, p.Bytes...)
			continue
		}
		b := make([]byte, p.Length)
		if _, err := p.File.ReadAt(b, p.Offset); err != nil {
			return err
		}
		frame = append(frame, b...)
	}
	return c.Send(frame)
}
func (c *fakeConn) Buffered() int { return c.buffered }
func (c *fakeConn) Pause()        { c.paused = true }
func (c *fakeConn) Resume()       { c.paused = false }
func (c *fakeConn) Close() {
	if c.closed {
		return
	}
	c.closed = true
	c.env.Post(func() {
		c.closeRan++
		if c.onClose != nil { // accept may close before registering handlers
			c.onClose(nil)
		}
	})
}
func (c *fakeConn) LocalAddr() string  { return "127.0.0.1:40001" }
func (c *fakeConn) RemoteAddr() string { return c.remote }

// deliver hands a frame to the broker as the transport would, then drains
// the loop.
func (c *fakeConn) deliver(frame []byte) {
	if c.closed {
		return
	}
	c.onFrame(frame)
	c.env.run()
}

// peerClose simulates the client going away.
func (c *fakeConn) peerClose() {
	if c.closed {
		return
	}
	c.closed = true
	c.closeRan++
	c.onClose(fmt.Errorf("fake conn: peer closed: %w", env.ErrConnReset))
	c.env.run()
}

// exchange delivers one frame on a fresh connection and returns the
// response the broker sent (nil if none) and whether it closed the conn.
func (e *fakeEnv) exchange(frame []byte) (resp []byte, closed bool) {
	c := e.net.connect()
	c.deliver(frame)
	if len(c.sent) > 0 {
		resp = c.sent[len(c.sent)-1]
	}
	return resp, c.closed
}
