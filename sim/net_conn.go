package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/strata-log/strata/core/env"
)

// Errors of the simulated network. Each wraps the env sentinel that callers
// test with errors.Is; the text says which path produced it.
var (
	errSendEnded     = fmt.Errorf("sim/net: send on an ended conn: %w", env.ErrClosed)
	errListenerEnded = fmt.Errorf("sim/net: listener already closed: %w", env.ErrClosed)
	errNetEnded      = fmt.Errorf("sim/net: the process incarnation has ended: %w", env.ErrClosed)
	errPeerReset     = fmt.Errorf("sim/net: connection reset by peer: %w", env.ErrConnReset)
	errPeerCrashed   = fmt.Errorf("sim/net: connection reset, the peer's process died: %w", env.ErrConnReset)
	errPeerRebooted  = fmt.Errorf("sim/net: connection reset, the peer's machine restarted and no longer knows the connection: %w", env.ErrConnReset)
	errFaultReset    = fmt.Errorf("sim/net: connection reset by a network fault: %w", env.ErrConnReset)
	errFrameTooSlow  = fmt.Errorf("sim/net: a request frame arrived slower than the transport's progress rule: %w", env.ErrConnReset)
)

// netEndpoint is env.Net for one incarnation of a process.
type netEndpoint struct {
	n   *Network
	p   *Process
	inc uint64
	h   *host
}

var _ env.Net = (*netEndpoint)(nil)

// alive reports whether the incarnation the endpoint was made for still runs.
// A stale endpoint cannot normally be reached (its callbacks are dropped),
// but a leaked reference must not act on the next incarnation's behalf.
func (ep *netEndpoint) alive() bool { return ep.p.up && ep.p.inc == ep.inc }

// Listen binds addr, whose host must be the process's own name (or empty).
// Port 0 picks the host's next free ephemeral port.
func (ep *netEndpoint) Listen(addr string, accept func(env.Conn)) (env.Listener, error) {
	if !ep.alive() {
		return nil, errNetEnded
	}
	hostName, port, err := splitAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("sim/net: listen %q: %w", addr, err)
	}
	if hostName != "" && hostName != ep.h.name {
		return nil, fmt.Errorf("sim/net: listen %q: host %q can only listen on its own name", addr, ep.h.name)
	}
	if port == 0 {
		if port = ep.h.allocPort(); port == 0 {
			return nil, fmt.Errorf("sim/net: listen %q: no free ephemeral port", addr)
		}
	} else if ep.h.listenerAt(port) != nil {
		return nil, fmt.Errorf("sim/net: listen %q: address in use: %w", addr, env.ErrExist)
	}
	l := &listener{ep: ep, port: port, addr: joinAddr(ep.h.name, port), accept: accept}
	ep.h.listeners = append(ep.h.listeners, l)
	return l, nil
}

// Dial connects to addr.
//
// Each SYN's fate is decided when it is sent, from the state of the links:
//   - a link cut in either direction (the SYN or the SYN-ACK would be
//     lost), or a silent destination (powered off, frozen), loses it; the
//     dialer retransmits after 1 s, 2 s, 4 s, ... and fails after
//     ConnectTimeout with an error wrapping both ErrTimeout and
//     ErrConnRefused ("unreachable");
//   - a clog delays the handshake until it ends, or fails it like a cut if
//     it lasts longer than ConnectTimeout;
//   - otherwise the SYN arrives after one latency; if the destination went
//     silent meanwhile it is lost as above. If the host's process is down
//     after a kill (its kernel lives), or it has no listener on the port,
//     done gets an error wrapping ErrConnRefused one latency later (a RST).
//     Else the listener's accept runs on arrival and done runs one latency
//     later with the new conn. A host no process was ever added for
//     refuses at once.
func (ep *netEndpoint) Dial(addr string, done func(env.Conn, error)) {
	if !ep.alive() {
		return // any callback would be dropped with the incarnation
	}
	n, s := ep.n, ep.n.sim
	n.stats.Dials++
	label := "net:dial " + ep.h.name + ">" + addr
	hostName, port, err := splitAddr(addr)
	if err == nil && (hostName == "" || port == 0) {
		err = errors.New("missing host or port")
	}
	if err != nil {
		n.stats.DialsRefused++
		err = fmt.Errorf("sim/net: dial %q: %w: %w", addr, err, env.ErrConnRefused)
		s.schedule(ep.p, 0, label, func() { done(nil, err) })
		return
	}
	dst := n.byName[hostName]
	if dst == nil || dst.proc == nil {
		// No such machine: there is no link to sample, so refuse after the
		// configured minimum round trip.
		n.stats.DialsRefused++
		err := fmt.Errorf("sim/net: dial %q: no such host: %w", addr, env.ErrConnRefused)
		s.schedule(ep.p, 2*n.link.Latency, label, func() { done(nil, err) })
		return
	}
	fwd, back := n.linkOf(ep.h, dst), n.linkOf(dst, ep.h)
	ep.sendSYN(dst, port, addr, fwd, back, label, done, s.now+n.cfg.ConnectTimeout, synRetransmitFirst)
}

// synRetransmitFirst is the first SYN retransmission interval; it doubles
// after each attempt, as Linux's does (1 s, 2 s, 4 s, ...).
const synRetransmitFirst = time.Second

// sendSYN makes one connection attempt. A cut link loses the SYN and the
// dialer retransmits with exponential backoff until deadline, so a dial
// started during a partition succeeds at the first retransmission after the
// heal, as a real TCP connect does.
func (ep *netEndpoint) sendSYN(dst *host, port int, addr string, fwd, back *link, label string,
	done func(env.Conn, error), deadline, retry time.Duration) {
	s := ep.n.sim
	now := s.now
	start := now
	holdFwd, cutFwd := fwd.holdUntil()
	holdBack, cutBack := back.holdUntil()
	if hold := max(holdFwd, holdBack); hold > now {
		start = hold
	}
	if cutFwd || cutBack || start >= deadline {
		if !(cutFwd || cutBack) {
			ep.dialTimeout(addr, label, done, deadline)
			return
		}
		ep.synLost(dst, port, addr, fwd, back, label, done, deadline, now, retry)
		return
	}
	// The SYN's arrival is a simulator-level event: it must run even while
	// the destination is down (to refuse) and is dropped by hand if the
	// dialer is gone.
	s.schedule(nil, start-now+fwd.latency(), label, func() {
		ep.handshake(dst, port, addr, fwd, back, label, done, deadline, now, retry)
	})
}

// synLost retransmits a SYN sent at sent that got no answer, retry after
// it, or fails the dial at deadline if that comes first.
func (ep *netEndpoint) synLost(dst *host, port int, addr string, fwd, back *link, label string,
	done func(env.Conn, error), deadline, sent, retry time.Duration) {
	s := ep.n.sim
	next := sent + retry
	if next >= deadline {
		ep.dialTimeout(addr, label, done, deadline)
		return
	}
	s.schedule(ep.p, next-s.now, label+" syn-retry", func() {
		ep.sendSYN(dst, port, addr, fwd, back, label, done, deadline, 2*retry)
	})
}

// dialTimeout fails a dial at deadline: no SYN was answered.
func (ep *netEndpoint) dialTimeout(addr, label string, done func(env.Conn, error), deadline time.Duration) {
	n, s := ep.n, ep.n.sim
	n.stats.DialTimeouts++
	err := fmt.Errorf("sim/net: dial %q: connect timeout after %v, host unreachable: %w (%w)",
		addr, n.cfg.ConnectTimeout, env.ErrTimeout, env.ErrConnRefused)
	s.schedule(ep.p, deadline-s.now, label, func() { done(nil, err) })
}

// handshake runs when the SYN, sent at sent, reaches dst.
func (ep *netEndpoint) handshake(dst *host, port int, addr string, fwd, back *link, label string,
	done func(env.Conn, error), deadline, sent, retry time.Duration) {
	n, s := ep.n, ep.n.sim
	if !ep.alive() {
		return // the dialer crashed; its SYN leads nowhere
	}
	if dst.silent(s.now) {
		// Powered off or frozen since the SYN left: nobody answers.
		ep.synLost(dst, port, addr, fwd, back, label, done, deadline, sent, retry)
		return
	}
	var l *listener
	if dst.proc != nil && dst.proc.up {
		l = dst.listenerAt(port)
	}
	if l == nil {
		n.stats.DialsRefused++
		err := fmt.Errorf("sim/net: dial %q: %w", addr, env.ErrConnRefused)
		s.schedule(ep.p, back.latency(), label, func() { done(nil, err) })
		return
	}
	n.stats.ConnsOpened++
	localAddr := joinAddr(ep.h.name, ep.h.allocPort())
	client := &connEnd{n: n, h: ep.h, proc: ep.p, local: localAddr, remote: l.addr}
	server := &connEnd{n: n, h: dst, proc: dst.proc, local: l.addr, remote: localAddr, accepted: true}
	client.peer, server.peer = server, client
	client.in = newPipe(back, client, l.addr+">"+localAddr)
	server.in = newPipe(fwd, server, localAddr+">"+l.addr)
	client.out, server.out = server.in, client.in
	ep.h.addEnd(client)
	dst.addEnd(server)

	s.schedule(dst.proc, 0, "net:accept "+l.addr+"<"+localAddr, func() {
		if l.closed {
			// Closed between the SYN and its turn on the loop: the
			// listener's owner never sees the conn; the dialer is reset.
			server.ready = true
			server.abort(nil, false, errPeerReset)
			return
		}
		l.accept(server)
		server.becomeReady()
	})
	s.schedule(ep.p, back.latency(), label, func() {
		done(client, nil)
		client.becomeReady()
	})
}

// listener is env.Listener.
type listener struct {
	ep     *netEndpoint
	port   int
	addr   string
	accept func(env.Conn)
	closed bool
}

var _ env.Listener = (*listener)(nil)

func (l *listener) Addr() string { return l.addr }

func (l *listener) Close() error {
	if l.closed {
		return errListenerEnded
	}
	l.closed = true
	h := l.ep.h
	for i, other := range h.listeners {
		if other == l {
			h.listeners = append(h.listeners[:i], h.listeners[i+1:]...)
			break
		}
	}
	return nil
}

// connEnd is one side of a conn: env.Conn.
//
// An end becomes ready once the callback that hands it to core (accept or
// Dial's done) has returned; before that nothing is delivered to it, so no
// frame or close can overtake the conn's announcement.
type connEnd struct {
	n      *Network
	h      *host
	proc   *Process
	local  string
	remote string
	peer   *connEnd
	in     *pipe // frames toward this end
	out    *pipe // frames toward the peer (== peer.in)

	onFrame func([]byte)
	onClose func(error)
	// accepted: this end is a listener's (the production transport's
	// progress rule applies to the frames it receives).
	accepted bool

	// halfOpen: the peer's machine lost power (connEnd.vanish). Nothing
	// more arrives; what this end sends is never acknowledged (unacked
	// bytes) and is retransmitted until a RST or the transport timeout
	// ends the conn (retransmitting).
	halfOpen       bool
	retransmitting bool
	unacked        int

	ready    bool
	paused   bool  // Pause: frames wait in the pipe until Resume
	ended    bool  // no more sends, no more deliveries
	closeErr error // why it ended; nil for a local Close
	owesNote bool  // OnClose must run once the end is ready
	noted    bool  // OnClose ran (or was due and had no handler)
	hostIdx  int   // position in h.ends, -1 once removed
}

var (
	_ env.Conn          = (*connEnd)(nil)
	_ env.FrameReceiver = (*connEnd)(nil)
)

func (e *connEnd) OnFrame(f func([]byte)) { e.onFrame = f }
func (e *connEnd) OnClose(f func(error))  { e.onClose = f }
func (e *connEnd) LocalAddr() string      { return e.local }
func (e *connEnd) RemoteAddr() string     { return e.remote }

// ReceivingFrame implements env.FrameReceiver: part of a frame has
// arrived and the rest has not. Only a frame on a link with a bandwidth
// (LinkConfig.BytesPerSecond) arrives over time, from the start of its
// transmission to its due time; every other frame arrives whole.
func (e *connEnd) ReceivingFrame() bool {
	if e.ended || !e.in.pending() {
		return false
	}
	it := &e.in.queue[e.in.head]
	now := e.n.sim.now
	return it.kind == itemFrame && it.tx > 0 && it.txStart <= now && now < it.due
}

// Buffered approximates "queued but not handed to the transport" by the
// bytes this end sent that the peer has not received yet, including those on
// the wire and those held by a fault. It only over-estimates, which is the
// safe side for back-pressure.
func (e *connEnd) Buffered() int {
	if e.ended {
		return 0
	}
	return e.out.bytes + e.unacked
}

// Send queues frame toward the peer. A frame over MaxFrameBytes is not
// refused here: like a real socket, the sender only learns of it when the
// receiver closes the conn (with ErrFrameTooLarge on its side and a reset on
// this one).
func (e *connEnd) Send(frame []byte) error {
	if e.ended {
		return errSendEnded
	}
	n := e.n
	n.stats.FramesSent++
	pp := e.out
	if pp.recv.ended {
		// The peer is gone: its reset is on its way here, or its machine
		// lost power and the frame is never acknowledged.
		n.stats.FramesDropped++
		if e.halfOpen {
			e.unacked += len(frame)
			e.retransmit()
		}
		return nil
	}
	kind := itemFrame
	if len(frame) > n.cfg.MaxFrameBytes {
		kind = itemTooLarge
	}
	pp.enqueue(pipeItem{frame: frame, kind: kind})
	return nil
}

// SendParts sends one frame made of parts. File regions are read at once,
// through the file's ReadAt (so the disk's read faults apply, as they would
// to the page cache a real sendfile reads); a region that cannot be read
// whole resets the conn, as a short sendfile breaks the promised frame.
func (e *connEnd) SendParts(parts []env.Part) error {
	if e.ended {
		return errSendEnded
	}
	var total int64
	for _, p := range parts {
		if p.Len() < 0 {
			return fmt.Errorf("sim/net: send: negative part length %d", p.Len())
		}
		total += p.Len()
	}
	frame := make([]byte, 0, total)
	for _, p := range parts {
		if p.File == nil {
			frame = append(frame, p.Bytes...)
			continue
		}
		start := len(frame)
		frame = frame[:start+int(p.Length)]
		if n, err := p.File.ReadAt(frame[start:], p.Offset); n < int(p.Length) {
			e.n.stats.Resets++
			e.abort(fmt.Errorf("sim/net: send: read %d bytes at %d of %s: got %d: %v: %w",
				p.Length, p.Offset, p.File.Name(), n, err, env.ErrConnReset), true, errPeerReset)
			return nil
		}
	}
	return e.Send(frame)
}

// Pause holds received frames in the pipe until Resume (the receive
// window closes); the sender's Buffered grows meanwhile.
func (e *connEnd) Pause() { e.paused = true }

// Resume delivers the held frames again.
func (e *connEnd) Resume() {
	if !e.paused {
		return
	}
	e.paused = false
	if !e.ended && e.ready && e.in.pending() {
		e.in.arm(e.n.sim.now)
	}
}

// Close ends the conn: undelivered frames in both directions are dropped,
// OnClose(nil) runs on the next step, and the peer gets a reset after a
// latency.
func (e *connEnd) Close() {
	if e.ended {
		return
	}
	e.n.stats.Closes++
	e.abort(nil, true, errPeerReset)
}

// abort ends this end with localErr (notifying it if notify) and sends the
// peer a reset carrying peerErr, behind nothing: the frames this end sent
// and the peer has not received are dropped.
func (e *connEnd) abort(localErr error, notify bool, peerErr error) {
	if e.ended {
		return
	}
	e.finish(localErr, notify)
	if pp := e.out; !pp.recv.ended {
		pp.drop()
		pp.enqueue(pipeItem{kind: itemReset, err: peerErr})
	}
}

// vanish ends this end as its machine loses power: it sends nothing, so its
// peer's end stays open, half-open. Frames this end sent that the peer has
// not received are lost with the machine; frames the peer sent that this
// end had not received are unacknowledged, so the peer retransmits them.
func (e *connEnd) vanish() {
	if e.ended {
		return
	}
	unacked := e.in.bytes
	pending := e.in.pending()
	e.finish(nil, false)
	peer := e.peer
	if pp := e.out; !pp.recv.ended {
		pp.drop()
		peer.halfOpen = true
		if pending {
			peer.unacked += unacked
			peer.retransmit()
		}
	}
}

// retransmit starts this half-open end's retransmissions of the data its
// vanished peer never acknowledged: the first at once, then after
// tcpRTOMin, doubling. A retransmission that reaches the peer's machine
// powered on again is answered with a RST (the new kernel knows no such
// connection; RFC 9293 §3.5.1); after TransportTimeout without an answer
// the end gives up with a timeout. Cuts and clogs lose retransmissions like
// any segment.
func (e *connEnd) retransmit() {
	if e.retransmitting || e.ended {
		return
	}
	e.retransmitting = true
	e.retransmitAt(e.n.sim.now, 0)
}

func (e *connEnd) retransmitAt(start, wait time.Duration) {
	n := e.n
	n.sim.schedule(nil, wait, "net:retransmit "+e.local+">"+e.remote, func() {
		if e.ended {
			return
		}
		now := n.sim.now
		if now-start >= n.cfg.TransportTimeout {
			n.stats.TransportTimeouts++
			e.finish(n.errTimeout, true)
			return
		}
		fwd, back := n.linkOf(e.h, e.peer.h), n.linkOf(e.peer.h, e.h)
		untilFwd, cutFwd := fwd.holdUntil()
		untilBack, cutBack := back.holdUntil()
		if !cutFwd && !cutBack && untilFwd <= now && untilBack <= now {
			n.sim.schedule(nil, fwd.latency()+back.latency(), "net:rst "+e.remote+">"+e.local, func() {
				e.finish(errPeerRebooted, true)
			})
			return
		}
		next := max(tcpRTOMin, 2*wait)
		next = min(next, start+n.cfg.TransportTimeout-now)
		e.retransmitAt(start, next)
	})
}

// finish ends this end: nothing more is delivered to it and, when notify is
// set, OnClose(err) runs once the end is ready.
func (e *connEnd) finish(err error, notify bool) {
	if e.ended {
		return
	}
	e.ended = true
	e.closeErr = err
	if err != nil {
		e.n.stats.Resets++
	}
	e.in.drop()
	if ev := e.in.ev; ev != nil {
		e.n.sim.cancel(ev)
		e.in.ev = nil
	}
	e.h.removeEnd(e)
	if notify {
		e.owesNote = true
		if e.ready {
			e.scheduleNote()
		}
	}
}

// becomeReady runs right after accept or done returned.
func (e *connEnd) becomeReady() {
	e.ready = true
	if e.owesNote {
		e.scheduleNote()
	} else if !e.ended && e.in.pending() {
		e.in.arm(e.n.sim.now)
	}
}

func (e *connEnd) scheduleNote() {
	e.n.sim.schedule(e.proc, 0, "net:close "+e.local+"<"+e.remote, e.note)
}

func (e *connEnd) note() {
	if e.noted {
		return
	}
	e.noted = true
	if e.onClose != nil {
		e.onClose(e.closeErr)
	}
}

// itemKind says what a pipe item carries.
type itemKind uint8

const (
	itemFrame    itemKind = iota // a frame to deliver
	itemTooLarge                 // a frame over MaxFrameBytes: the receiver closes
	itemReset                    // the sender's end has ended: the receiver is reset
)

type pipeItem struct {
	frame []byte
	due   time.Duration
	kind  itemKind
	err   error // for itemReset
	// txStart is when the frame's transmission began and tx how long it
	// took (zero on a link without a bandwidth: the frame arrives whole).
	txStart, tx time.Duration
}

// pipe is one direction of a conn: a FIFO of items toward recv.
type pipe struct {
	n     *Network
	link  *link
	recv  *connEnd
	queue []pipeItem
	head  int // queue[head:] is pending
	bytes int // frame bytes pending
	// enqueued and taken count the items enqueued and those that left
	// the queue (delivered or dropped), so that an item can be named by
	// its number.
	enqueued, taken uint64

	lastDue time.Duration // due time of the last item enqueued
	txFree  time.Duration // when the direction finishes transmitting (bandwidth)

	ev     *event // the pump event, if scheduled
	pumpFn func() // pp.pump, bound once so that arming allocates no closure
	route  string // "from-addr>to-addr", for labels
	label  string // trace label of every delivery on this pipe, built once

	stalledSince time.Duration // when the head was first held; -1 if not held
	inStalled    bool          // listed in Network.stalled
}

func newPipe(l *link, recv *connEnd, route string) *pipe {
	pp := &pipe{n: l.n, link: l, recv: recv, route: route, label: "net:" + route, stalledSince: -1}
	pp.pumpFn = pp.pump
	return pp
}

func (pp *pipe) pending() bool { return pp.head < len(pp.queue) }

// enqueue stamps it with its due time and appends it.
func (pp *pipe) enqueue(it pipeItem) {
	now := pp.n.sim.now
	start := max(now, pp.txFree)
	it.txStart, it.tx = start, pp.link.transmitTime(len(it.frame))
	pp.txFree = start + it.tx
	it.due = max(pp.txFree+pp.link.latency(), pp.lastDue)
	pp.lastDue = it.due
	wasEmpty := !pp.pending()
	pp.queue = append(pp.queue, it)
	pp.bytes += len(it.frame)
	pp.enqueued++
	if it.kind == itemFrame && it.tx > 0 {
		pp.watchProgress(it, pp.enqueued)
	}
	if wasEmpty {
		pp.arm(it.due)
		if pp.recv.h.frozenUntil > now {
			// The receiver's pump is held by its freeze: the
			// sender's retransmissions go unanswered from now.
			pp.stall(now)
		}
	}
}

// drop discards every pending item.
func (pp *pipe) drop() {
	for i := pp.head; i < len(pp.queue); i++ {
		if pp.queue[i].kind != itemReset {
			pp.n.stats.FramesDropped++
		}
		pp.queue[i] = pipeItem{}
	}
	pp.taken += uint64(len(pp.queue) - pp.head)
	pp.queue = pp.queue[:0]
	pp.head = 0
	pp.bytes = 0
}

// watchProgress applies the production transport's progress rule
// (NetConfig.FrameReadTimeout, FrameMinBytesPerSec) to frame number seq
// of this pipe, which arrives over time, toward an accepted conn's end
// (the node applies the rule to requests, not to responses). Its bytes
// arrive at a constant rate from its transmission's start, so the rule
// fails in the first window or never: when the frame takes longer than
// the window and arrives slower than the minimum rate, the receiver
// closes the conn at the window's end, unless the frame left the queue
// before.
func (pp *pipe) watchProgress(it pipeItem, seq uint64) {
	n := pp.n
	if !pp.recv.accepted {
		return
	}
	window, minRate := n.cfg.FrameReadTimeout, int64(n.cfg.FrameMinBytesPerSec)
	if it.tx <= window || int64(len(it.frame))*int64(time.Second) >= minRate*int64(it.tx) {
		return
	}
	r := pp.recv
	n.sim.schedule(r.proc, it.txStart+window-n.sim.now, "net:slow-frame "+pp.route, func() {
		if r.ended || pp.taken >= seq {
			return
		}
		n.stats.SlowFrames++
		r.abort(fmt.Errorf("%w: %s: %d bytes in %v", errFrameTooSlow, r.local, len(it.frame), it.tx), true, errPeerReset)
	})
}

// arm makes sure the pump runs at or before at. A pump that runs early just
// re-arms, so keeping an earlier pending event is always correct.
func (pp *pipe) arm(at time.Duration) {
	s := pp.n.sim
	if ev := pp.ev; ev != nil && ev.index >= 0 {
		if ev.at <= at {
			return
		}
		s.cancel(ev)
	}
	pp.ev = s.schedule(pp.recv.proc, at-s.now, pp.label, pp.pumpFn)
}

// pump delivers the head item if it is due and its link lets it through,
// then arms itself for the next. It is idempotent: a stale pump event (one
// a pause held back after it was replaced) finds nothing to do or does what
// the current one would have done.
func (pp *pipe) pump() {
	if ev := pp.ev; ev != nil && ev.index < 0 {
		pp.ev = nil // this is it, or it already ran
	}
	r := pp.recv
	if r.ended || !r.ready || !pp.pending() {
		return
	}
	if r.paused && pp.queue[pp.head].kind == itemFrame {
		return // Resume re-arms
	}
	n, now := pp.n, pp.n.sim.now
	it := pp.queue[pp.head]
	if it.due > now {
		pp.arm(it.due)
		return
	}
	if until, cut := pp.link.holdUntil(); cut || until > now {
		pp.stall(now)
		if !cut {
			pp.arm(until)
		}
		return
	}
	pp.stalledSince = -1
	pp.queue[pp.head] = pipeItem{}
	pp.head++
	pp.taken++
	pp.bytes -= len(it.frame)
	if !pp.pending() {
		pp.queue = pp.queue[:0]
		pp.head = 0
	}
	switch it.kind {
	case itemFrame:
		n.stats.FramesDelivered++
		n.stats.BytesDelivered += uint64(len(it.frame))
		if r.onFrame != nil {
			r.onFrame(it.frame)
		}
	case itemTooLarge:
		n.stats.FramesDropped++
		r.abort(fmt.Errorf("sim/net: %s: received a frame of %d bytes, the maximum is %d: %w",
			r.local, len(it.frame), n.cfg.MaxFrameBytes, env.ErrFrameTooLarge), true, errPeerReset)
	case itemReset:
		r.finish(it.err, true)
	}
	if !r.ended && pp.pending() {
		pp.arm(max(pp.queue[pp.head].due, now))
	}
}

// stall records that the head is held by the network and starts the
// transport timeout the first time.
func (pp *pipe) stall(now time.Duration) {
	n := pp.n
	if !pp.inStalled {
		pp.inStalled = true
		n.stalled = append(n.stalled, pp)
	}
	if pp.stalledSince >= 0 {
		return
	}
	pp.stalledSince = now
	since := now
	n.sim.schedule(nil, n.cfg.TransportTimeout, "net:timeout "+pp.route, func() {
		pp.transportTimeout(since)
	})
}

// transportTimeout resets the conn on both sides if the stall that began at
// since still holds the same head: both TCP stacks give up.
func (pp *pipe) transportTimeout(since time.Duration) {
	if pp.stalledSince != since || pp.recv.ended {
		return
	}
	if until, cut := pp.link.holdUntil(); !cut && until <= pp.n.sim.now {
		// Lifted, and the pump has not run yet (its receiver may be
		// paused): this stall is over; a new one starts a new timeout.
		pp.stalledSince = -1
		return
	}
	n := pp.n
	n.stats.TransportTimeouts++
	r := pp.recv
	r.finish(n.errTimeout, true)
	r.peer.finish(n.errTimeout, true)
}

// splitAddr parses "host:port"; the host may be empty.
func splitAddr(addr string) (host string, port int, err error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("address %q has no port", addr)
	}
	port, err = strconv.Atoi(addr[i+1:])
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("address %q has an invalid port", addr)
	}
	return addr[:i], port, nil
}

func joinAddr(host string, port int) string { return host + ":" + strconv.Itoa(port) }
