package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/strata-log/strata/core/env"
)

// The simulated network.
//
// Every process name is a host. A Conn is a pair of ends joined by two pipes,
// one per direction. A pipe is a FIFO of frames, each stamped with the virtual
// time it is due:
//
//	due = max(transmitted + sampled latency, due of the previous item)
//
// so order holds however the latency is sampled. One pump event per pipe,
// owned by the receiving process's incarnation, delivers the head when it is
// due: a crash therefore drops every pending delivery, and a pause holds them
// until the process resumes. The pump decides at delivery time whether the
// link is cut (partition, block) or clogged; a held head stalls the pipe, and
// a stall that outlives the transport timeout resets the conn on both sides,
// as TCP does when its retransmissions go unanswered. Endings (a Close, a
// crash, a reset) travel to the peer as a marker behind the frames, so the
// peer's OnClose follows its last delivered frame and crosses a cut link no
// sooner than a frame would.
//
// Machines fail silently. A power loss (Process.Crash) or a frozen machine
// (Process.Freeze) sends nothing: no RST, no refused dial. A dial's SYN to
// it is lost and retransmitted until the connect timeout; a conn to a
// powered-off machine becomes half-open on the peer's side: nothing more
// arrives, and what the peer sends is never acknowledged, so its TCP
// retransmits (from tcpRTOMin, doubling) until the machine's kernel is
// back and answers a retransmission with a RST (RFC 9293 §3.5.1, half-open
// connections), or until the transport timeout. A peer that sends nothing
// never notices. Only a process kill (Process.Kill: the process dies, its
// kernel lives) resets its conns and refuses dials at once.

// Defaults of NetConfig. The latency range is a same-rack network's one-way
// delay; the timeouts are Kafka's request and connection-setup timeouts
// scaled to what a simulation can afford to wait.
const (
	defaultLinkLatency      = 50 * time.Microsecond  // lower bound of one-way delay
	defaultLinkJitter       = 450 * time.Microsecond // uniform extra, so 50–500 µs
	defaultTailProbability  = 0.001                  // one frame in a thousand is slow
	defaultTailLatency      = 10 * time.Millisecond  // upper bound of the slow frame's extra delay
	defaultTransportTimeout = 15 * time.Second       // a held frame resets its conn after this
	defaultConnectTimeout   = 10 * time.Second       // Kafka's socket.connection.setup.timeout.ms
	defaultMaxFrameBytes    = 100 << 20              // Kafka's socket.request.max.bytes

	// The production transport's progress rule for a request frame that
	// has begun to arrive (node.DefaultFrameReadTimeout,
	// node.DefaultFrameMinBytesPerSec).
	defaultFrameReadTimeout    = 20 * time.Second
	defaultFrameMinBytesPerSec = 1024

	// tcpRTOMin is the first retransmission timeout of data nobody
	// acknowledges (Linux's TCP_RTO_MIN); it doubles after each attempt.
	tcpRTOMin = 200 * time.Millisecond

	// Ports handed out for Listen(":0") and for the local end of a dial,
	// Linux's default ip_local_port_range.
	ephemeralPortFirst = 32768
	ephemeralPortLast  = 60999
)

// LinkConfig is the latency model of one direction of a link.
//
// A frame's one-way delay is Latency, plus a uniform draw from [0, Jitter],
// plus, with probability TailProbability, a uniform draw from
// [0, TailLatency]. With BytesPerSecond set, a frame also occupies its conn's
// direction for len(frame)/BytesPerSecond before its delay starts, so large
// frames queue behind each other.
type LinkConfig struct {
	// Latency is the minimum one-way delay.
	Latency time.Duration
	// Jitter is the maximum extra delay, drawn uniformly per frame.
	Jitter time.Duration
	// TailProbability is the chance that a frame suffers an extra delay of
	// up to TailLatency (a retransmission, a busy switch).
	TailProbability float64
	// TailLatency is the maximum extra delay of a slow frame.
	TailLatency time.Duration
	// BytesPerSecond is the bandwidth of one direction of one conn; zero
	// means unlimited. It is per conn, not per host: the simulator does not
	// model a shared NIC.
	BytesPerSecond int64
}

// NetConfig configures the simulated network. Use DefaultNetConfig and change
// what a scenario needs; Configure fills zero fields with their defaults.
type NetConfig struct {
	// Link is the latency model of every link without an override. The
	// zero LinkConfig means the default (50–500 µs); ask for 1 ns to get a
	// near-instant network.
	Link LinkConfig
	// TransportTimeout is how long a frame may be held by a partition, a
	// block or a clog before its conn is reset on both sides (TCP giving up
	// on retransmissions; Kafka's request timeout). Default 15 s.
	TransportTimeout time.Duration
	// ConnectTimeout is how long a dial across a cut link waits before it
	// fails. Default 10 s.
	ConnectTimeout time.Duration
	// MaxFrameBytes is the largest frame a receiver accepts; a larger one
	// closes the conn with ErrFrameTooLarge. Default 100 MiB.
	MaxFrameBytes int
	// FrameReadTimeout and FrameMinBytesPerSec are the production
	// transport's progress rule for a request frame that has begun to
	// arrive on an accepted conn (node.NetConfig's fields of the same
	// names): it must gain FrameMinBytesPerSec x FrameReadTimeout bytes,
	// or its rest, in every FrameReadTimeout, or the receiver closes the
	// conn. Only a frame on a link with BytesPerSecond set arrives over
	// time (a partly received frame, env.FrameReceiver); every other
	// frame arrives whole. Defaults 20 s and 1024 B/s, the node's.
	FrameReadTimeout    time.Duration
	FrameMinBytesPerSec int
}

// DefaultNetConfig is the configuration a new simulator starts with.
func DefaultNetConfig() NetConfig {
	return NetConfig{
		Link: LinkConfig{
			Latency:         defaultLinkLatency,
			Jitter:          defaultLinkJitter,
			TailProbability: defaultTailProbability,
			TailLatency:     defaultTailLatency,
		},
		TransportTimeout: defaultTransportTimeout,
		ConnectTimeout:   defaultConnectTimeout,
		MaxFrameBytes:    defaultMaxFrameBytes,

		FrameReadTimeout:    defaultFrameReadTimeout,
		FrameMinBytesPerSec: defaultFrameMinBytesPerSec,
	}
}

// NetStats counts what the network did, for the run summary.
type NetStats struct {
	Dials             uint64 // Dial calls
	DialsRefused      uint64 // dials refused: no listener, host down or unknown, bad address
	DialTimeouts      uint64 // dials that failed after ConnectTimeout
	ConnsOpened       uint64 // conns established
	FramesSent        uint64 // successful Send calls
	FramesDelivered   uint64 // frames handed to a receiver
	FramesDropped     uint64 // frames discarded by a close, a reset or a crash
	BytesDelivered    uint64 // bytes of delivered frames
	Closes            uint64 // conn ends closed locally (Close)
	Resets            uint64 // conn ends ended with an error (reset, timeout, too large)
	TransportTimeouts uint64 // conns reset because a frame was held too long
	SlowFrames        uint64 // conns closed by the receiver: a frame arrived slower than the progress rule
}

// String formats the counters on one line for the summary.
func (st NetStats) String() string {
	return fmt.Sprintf("dials=%d refused=%d dial-timeouts=%d conns=%d frames sent=%d delivered=%d dropped=%d bytes=%d closes=%d resets=%d transport-timeouts=%d slow-frames=%d",
		st.Dials, st.DialsRefused, st.DialTimeouts, st.ConnsOpened, st.FramesSent, st.FramesDelivered,
		st.FramesDropped, st.BytesDelivered, st.Closes, st.Resets, st.TransportTimeouts, st.SlowFrames)
}

// Network is the simulated network all processes share: hosts are process
// names, conns are framed, ordered, reliable streams (see core/env.Net), and
// faults (partitions, one-way blocks, clogs, resets, slow links) are injected
// through its exported methods.
type Network struct {
	sim   *Sim
	cfg   NetConfig  // as configured; Heal returns to it
	link  LinkConfig // current default link model (SetLatency changes it)
	stats NetStats

	hosts  []*host          // by idx, in order of first mention
	byName map[string]*host // lookups only, never iterated

	// stalled lists the pipes whose head is held by a cut or a clog, in the
	// order they stalled, so that lifting a fault can restart them.
	stalled []*pipe

	// cuts are the cuts in force, in the order they were made; each link
	// counts the cuts covering it.
	cuts []*Cut

	errTimeout error // built once per configuration, shared by every reset
}

func newNetwork(s *Sim) *Network {
	n := &Network{sim: s, byName: make(map[string]*host)}
	n.Configure(DefaultNetConfig())
	return n
}

// Configure replaces the network's configuration. Zero fields take their
// defaults. It affects frames sent and dials made afterwards; it is setup,
// not a fault, and Heal returns to it.
func (n *Network) Configure(cfg NetConfig) {
	def := DefaultNetConfig()
	if cfg.Link == (LinkConfig{}) {
		cfg.Link = def.Link
	}
	if cfg.TransportTimeout <= 0 {
		cfg.TransportTimeout = def.TransportTimeout
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = def.ConnectTimeout
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = def.MaxFrameBytes
	}
	if cfg.FrameReadTimeout <= 0 {
		cfg.FrameReadTimeout = def.FrameReadTimeout
	}
	if cfg.FrameMinBytesPerSec <= 0 {
		cfg.FrameMinBytesPerSec = def.FrameMinBytesPerSec
	}
	n.cfg = cfg
	n.link = cfg.Link
	n.errTimeout = fmt.Errorf("sim/net: transport timeout, a frame was held longer than %v: %w (%w)",
		cfg.TransportTimeout, env.ErrConnReset, env.ErrTimeout)
}

// Config is the configuration set by Configure (with defaults filled in).
func (n *Network) Config() NetConfig { return n.cfg }

// Stats returns the network's counters.
func (n *Network) Stats() NetStats { return n.stats }

// OpenConns is the number of conn ends that have not ended, over all hosts.
func (n *Network) OpenConns() int {
	total := 0
	for _, h := range n.hosts {
		total += len(h.ends)
	}
	return total
}

// endpoint returns the env.Net of p's current incarnation.
func (n *Network) endpoint(p *Process) env.Net {
	h := n.host(p.name)
	h.proc = p
	return &netEndpoint{n: n, p: p, inc: p.inc, h: h}
}

// processUp is called by the kernel when p starts an incarnation: the
// machine is on (again). Listeners and conns of the previous incarnation
// were already removed by processDown, so there is nothing to reset.
func (n *Network) processUp(p *Process) {
	h := n.host(p.name)
	h.proc = p
	h.off = false
	if h.frozenUntil > n.sim.now {
		// Powered off while frozen and booted again: no longer frozen.
		h.frozenUntil = 0
		n.kickStalled()
	}
}

// processDown ends every conn of p's ended incarnation: p's side gets no
// callback (its incarnation is gone) and frames to and from p that were not
// yet delivered are dropped. p's listeners disappear.
//
// With powerLoss unset (a process kill) the machine's kernel closes the
// sockets: each peer gets a reset after a latency (held, like any frame, by
// a cut link), and dials to the host are refused. With powerLoss set the
// machine is off until the process starts again: it sends nothing, so each
// peer's end is left half-open (see connEnd.vanish) and dials to it time
// out.
func (n *Network) processDown(p *Process, powerLoss bool) {
	h := n.host(p.name)
	for _, l := range h.listeners {
		l.closed = true
	}
	h.listeners = nil
	if powerLoss {
		h.off = true
	}
	ends := append([]*connEnd(nil), h.ends...)
	for _, e := range ends {
		if powerLoss {
			e.vanish()
		} else {
			e.abort(nil, false, errPeerCrashed)
		}
	}
}

// powerOff marks a host whose process is already down as powered off until
// its next start (a power cycle of a machine whose process was killed).
func (n *Network) powerOff(p *Process) { n.host(p.name).off = true }

// freeze makes host silent until until (a frozen machine): frames to it
// are held (the transport timeout runs), SYNs to it are lost. Frames
// already queued toward it stall now, since its own pumps are held by the
// process's pause and cannot notice.
func (n *Network) freeze(p *Process, until time.Duration) {
	h := n.host(p.name)
	h.frozenUntil = max(h.frozenUntil, until)
	now := n.sim.now
	for _, e := range h.ends {
		if !e.ended && e.in.pending() {
			e.in.stall(now)
		}
	}
	n.sim.At(until, "net:thaw "+h.name, n.kickStalled)
}

// host returns the named host, creating it on first mention (a fault may
// name a process before it exists).
func (n *Network) host(name string) *host {
	if h := n.byName[name]; h != nil {
		return h
	}
	h := &host{name: name, idx: len(n.hosts), nextPort: ephemeralPortFirst}
	n.hosts = append(n.hosts, h)
	n.byName[name] = h
	return h
}

// linkOf returns the directed link from -> to, creating it on first use.
func (n *Network) linkOf(from, to *host) *link {
	if to.idx >= len(from.links) {
		grown := make([]*link, len(n.hosts))
		copy(grown, from.links)
		from.links = grown
	}
	l := from.links[to.idx]
	if l == nil {
		// A stream per directed link: a new host or conn elsewhere never
		// changes the latencies this link draws.
		l = &link{n: n, from: from, to: to, rng: n.sim.Rand("net/" + from.name + ">" + to.name)}
		from.links[to.idx] = l
	}
	return l
}

// kickStalled restarts the pumps of stalled pipes after a fault was lifted;
// each pump re-examines its link and stalls again if it is still held.
func (n *Network) kickStalled() {
	stalled := n.stalled
	n.stalled = nil
	for _, pp := range stalled {
		pp.inStalled = false
		if !pp.recv.ended {
			pp.arm(n.sim.now)
		}
	}
}

// host is a process name's network state. It outlives incarnations.
type host struct {
	name      string
	idx       int
	proc      *Process    // nil while only named by a fault
	listeners []*listener // of the current incarnation; few, so a slice
	ends      []*connEnd  // live conn ends of the current incarnation
	nextPort  int         // next ephemeral port to try
	clogUntil time.Duration
	links     []*link // outgoing, by destination idx; nil until used

	off         bool          // powered off (a power loss until the next start): silent
	frozenUntil time.Duration // the machine is frozen until then: silent
}

// silent reports whether the machine answers nothing now: powered off or
// frozen. A silent host loses every SYN and acknowledges no data.
func (h *host) silent(now time.Duration) bool { return h.off || h.frozenUntil > now }

// allocPort picks the next free ephemeral port, round-robin like Linux, so
// that the choice depends only on the host's history.
func (h *host) allocPort() int {
	for range ephemeralPortLast - ephemeralPortFirst + 1 {
		port := h.nextPort
		h.nextPort++
		if h.nextPort > ephemeralPortLast {
			h.nextPort = ephemeralPortFirst
		}
		if h.listenerAt(port) == nil {
			return port
		}
	}
	return 0
}

func (h *host) listenerAt(port int) *listener {
	for _, l := range h.listeners {
		if l.port == port {
			return l
		}
	}
	return nil
}

func (h *host) addEnd(e *connEnd) {
	e.hostIdx = len(h.ends)
	h.ends = append(h.ends, e)
}

func (h *host) removeEnd(e *connEnd) {
	i := e.hostIdx
	if i < 0 {
		return
	}
	last := len(h.ends) - 1
	h.ends[i] = h.ends[last]
	h.ends[i].hostIdx = i
	h.ends[last] = nil
	h.ends = h.ends[:last]
	e.hostIdx = -1
}

// link is one direction between two hosts: its faults, latency override and
// random stream. Every conn between the two hosts shares it.
type link struct {
	n         *Network
	from, to  *host
	rng       *rand.Rand
	cuts      int           // cuts in force (partitions, blocks): frames are held
	clogUntil time.Duration // frames are held until then
	override  *LinkConfig   // SetLinkLatency; nil means the network default
}

// holdUntil reports until when traffic on the link is held: forever (with
// cut set) while it is partitioned or blocked or its destination is silent
// (powered off or frozen; a thaw kicks the stalled pipes), else until the
// latest clog of the link or either host ends (in the past when nothing
// holds it).
func (l *link) holdUntil() (until time.Duration, cut bool) {
	if l.cuts > 0 || l.to.silent(l.n.sim.now) {
		return 0, true
	}
	until = l.clogUntil
	until = max(until, l.from.clogUntil, l.to.clogUntil)
	return until, false
}

// latency samples one frame's one-way delay.
func (l *link) latency() time.Duration {
	cfg := &l.n.link
	if l.override != nil {
		cfg = l.override
	}
	d := cfg.Latency
	if cfg.Jitter > 0 {
		d += time.Duration(l.rng.Int64N(int64(cfg.Jitter) + 1))
	}
	if cfg.TailProbability > 0 && l.rng.Float64() < cfg.TailProbability && cfg.TailLatency > 0 {
		d += time.Duration(l.rng.Int64N(int64(cfg.TailLatency) + 1))
	}
	return d
}

// transmitTime is how long a frame of size bytes occupies a conn direction.
func (l *link) transmitTime(size int) time.Duration {
	bps := l.n.link.BytesPerSecond
	if l.override != nil {
		bps = l.override.BytesPerSecond
	}
	if bps <= 0 || size == 0 {
		return 0
	}
	return time.Duration(int64(size) * int64(time.Second) / bps)
}
