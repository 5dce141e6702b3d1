package wire

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
)

// Backoff is how long a Peer waits before it dials again after a failed
// dial or a lost connection: Min after the first failure, doubling up to
// Max, back to Min once a dial succeeds. The zero Backoff never redials.
type Backoff struct {
	Min, Max time.Duration
}

// PeerConfig configures a Peer.
type PeerConfig struct {
	// Addr is the listener the peer dials (host:port).
	Addr string
	// ClientID is the request header's client id.
	ClientID string
	// TLSListener, when set, dials over TLS as a client of that listener
	// (env.SecureNet's DialTLS: the listener's trust store verifies the
	// server, its certificate is presented for mutual TLS). Empty dials
	// in plaintext. A Net without TLS fails every dial.
	TLSListener string
	// MaxInflight bounds the requests awaiting a response on the
	// connection (DefaultMaxInflight when zero); past it Do refuses with
	// ErrTooManyInflight, or resets the connection with ResetWhenFull.
	MaxInflight int
	// ResetWhenFull treats MaxInflight unanswered requests as a stuck
	// connection: the next request is refused and the connection closed
	// (and redialled after the backoff), as the quorum's peers do.
	ResetWhenFull bool
	// MaxQueued bounds the requests waiting for the connection; when one
	// more comes, the oldest is dropped (its done gets ErrQueueFull).
	// Zero: unbounded.
	MaxQueued int
	// Redial keeps the connection up: a failed dial and a lost connection
	// are dialled again after the backoff, and requests queued meanwhile
	// wait for it. Without it (the zero Backoff) the peer dials only when
	// a request needs it, and a failed dial fails the queued requests.
	Redial Backoff
	// Authenticate, if set, runs on each new connection before the peer
	// uses it (SASLLogin: SaslHandshake and SaslAuthenticate); done(nil)
	// makes the peer connected, an error, or no answer within
	// authenticateTimeout, closes the connection and counts as a failed
	// dial.
	Authenticate func(cl *Client, done func(error))
	// OnDialFailed, if set, runs after a dial failed (and, with Redial,
	// after the next dial was scheduled).
	OnDialFailed func(err error)
	// OnConnected, if set, runs once a dial succeeded, after the queued
	// requests were sent.
	OnConnected func()
	// OnLost, if set, runs when the connection ends other than by Close
	// or Reset, after its pending requests failed (and, with Redial,
	// after the next dial was scheduled).
	OnLost func(err error)
	// Logger receives the peer's and its client's warnings; nil discards
	// them.
	Logger *slog.Logger
}

// authenticateTimeout bounds a new connection's Authenticate (Kafka's
// clients bound it by request.timeout.ms).
const authenticateTimeout = 10 * time.Second

// Peer is one kept connection to one Kafka listener, the only dial and
// redial state machine of Strata's links (the quorum's peers, the
// controller forwarder, the brokers' inter-broker clients and the replica
// fetchers): it dials through the Env's network, queues requests while it
// connects, sends them in order once connected, bounds what is queued and
// in flight, and with Redial dials again after a growing backoff. It runs
// on the Env's loop, like everything in core.
type Peer struct {
	e       env.Env
	cfg     PeerConfig
	client  *Client // nil while not connected
	dialing bool
	backoff time.Duration // the last wait before a redial; 0 after a dial succeeds
	queue   []*Call       // waiting for the connection, in the order given
	closed  bool
}

// Call is one request given to a Peer.
type Call struct {
	p       *Peer
	req     kmsg.Request
	timeout time.Duration
	done    func(kmsg.Response, error)
}

// NewPeer makes a peer; it dials on the first Do or Dial.
func NewPeer(e env.Env, cfg PeerConfig) *Peer {
	setDefaults(&cfg.MaxInflight, &cfg.Logger)
	return &Peer{e: e, cfg: cfg}
}

// Addr is the listener the peer dials.
func (p *Peer) Addr() string { return p.cfg.Addr }

// Connected reports whether the peer has a connection that has not ended.
func (p *Peer) Connected() bool { return p.client != nil && !p.client.Closed() }

// Dialing reports whether a dial is under way.
func (p *Peer) Dialing() bool { return p.dialing }

// Queued is the number of requests waiting for the connection.
func (p *Peer) Queued() int { return len(p.queue) }

// Dial connects now unless the peer is connected, dialling or closed.
// (A redial waiting out its backoff does not hold a Dial back.)
func (p *Peer) Dial() {
	if p.closed || p.Connected() || p.dialing {
		return
	}
	p.dialing = true
	p.dial(func(conn env.Conn, err error) {
		p.dialing = false
		if p.closed || err != nil {
			if conn != nil {
				conn.Close()
			}
		}
		switch {
		case p.closed:
			p.failQueue(ErrPeerClosed)
		case err != nil:
			if p.cfg.Redial != (Backoff{}) {
				p.redial()
			} else {
				p.failQueue(fmt.Errorf("wire: dial %s: %w", p.cfg.Addr, err))
			}
			if p.cfg.OnDialFailed != nil {
				p.cfg.OnDialFailed(err)
			}
		default:
			p.connected(conn)
		}
	})
}

// dial connects to the peer's address, over TLS with TLSListener, and
// runs Authenticate on the new connection.
func (p *Peer) dial(done func(env.Conn, error)) {
	if p.cfg.Authenticate != nil {
		done = p.authenticateThen(done)
	}
	if p.cfg.TLSListener == "" {
		p.e.Net().Dial(p.cfg.Addr, done)
		return
	}
	sn, ok := p.e.Net().(env.SecureNet)
	if !ok {
		err := fmt.Errorf("listener %s is TLS but this environment has no TLS", p.cfg.TLSListener)
		p.e.Post(func() { done(nil, err) })
		return
	}
	sn.DialTLS(p.cfg.Addr, p.cfg.TLSListener, done)
}

// authenticateThen wraps a dial's done: a new connection is handed on
// once Authenticate succeeded within authenticateTimeout; a failure
// closes it and is handed on as the dial's error.
func (p *Peer) authenticateThen(done func(env.Conn, error)) func(env.Conn, error) {
	return func(conn env.Conn, err error) {
		if err != nil {
			done(conn, err)
			return
		}
		finished := false
		cl := NewClient(conn, ClientConfig{ClientID: p.cfg.ClientID, Logger: p.cfg.Logger})
		timer := p.e.AfterFunc(authenticateTimeout, cl.Close)
		p.cfg.Authenticate(cl, func(err error) {
			if finished {
				return
			}
			finished = true
			timer.Stop()
			if err == nil && cl.Closed() {
				err = ErrConnClosed
			}
			if err != nil {
				cl.Close()
				done(nil, err)
				return
			}
			done(conn, nil)
		})
	}
}

func (p *Peer) connected(conn env.Conn) {
	p.backoff = 0
	maxInflight := p.cfg.MaxInflight
	if p.cfg.ResetWhenFull {
		maxInflight++ // the peer resets first; the client never refuses
	}
	var cl *Client
	cl = NewClient(conn, ClientConfig{
		ClientID:    p.cfg.ClientID,
		MaxInflight: maxInflight,
		Logger:      p.cfg.Logger,
		OnClose:     func(err error) { p.lost(cl, err) },
	})
	p.client = cl
	queued := p.queue
	p.queue = nil
	for _, c := range queued {
		if err := p.send(cl, c); err != nil {
			c.done(nil, err)
		}
	}
	if p.cfg.OnConnected != nil {
		p.cfg.OnConnected()
	}
}

// lost runs when cl's connection ends; a connection the peer closed
// itself (Close, Reset) is no longer p.client and is ignored.
func (p *Peer) lost(cl *Client, err error) {
	if p.client != cl {
		return
	}
	p.client = nil
	if p.closed {
		return
	}
	if p.cfg.Redial != (Backoff{}) {
		p.redial()
	}
	if p.cfg.OnLost != nil {
		p.cfg.OnLost(err)
	}
}

// redial waits the next backoff, then dials.
func (p *Peer) redial() {
	if p.backoff == 0 {
		p.backoff = p.cfg.Redial.Min
	} else {
		p.backoff = min(2*p.backoff, p.cfg.Redial.Max)
	}
	p.e.AfterFunc(p.backoff, p.Dial)
}

// Do sends req, dialling first if the peer is not connected (req waits
// in the queue meanwhile, and is sent once connected, in the order given).
// done runs once with the response, decoded at req's version, or with an
// error: the connection ended first (ErrConnClosed), the request was
// dropped from a full queue (ErrQueueFull), the dial failed (without
// Redial), or the peer was closed (ErrPeerClosed). It runs later on the
// loop, or inside a call that fails it (a later Do dropping it from the
// queue, Close, Reset), never inside its own Do.
//
// A timeout above zero bounds the wait for the answer once sent: an
// unanswered request closes the connection (so that after a partition
// heals a connection whose segments were lost does not wait for TCP's
// retransmission backoff, minutes).
//
// Do returns an error, and never calls done, when req cannot be sent on
// the connected peer: it was closed, or MaxInflight requests await their
// answers.
func (p *Peer) Do(req kmsg.Request, timeout time.Duration, done func(kmsg.Response, error)) (*Call, error) {
	if p.closed {
		return nil, ErrPeerClosed
	}
	c := &Call{p: p, req: req, timeout: timeout, done: done}
	if p.Connected() {
		return c, p.send(p.client, c)
	}
	if p.cfg.MaxQueued > 0 && len(p.queue) == p.cfg.MaxQueued {
		oldest := p.queue[0]
		p.queue = p.queue[1:]
		oldest.done(nil, ErrQueueFull)
	}
	p.queue = append(p.queue, c)
	p.Dial()
	return c, nil
}

// send sends c on cl, with its timeout.
func (p *Peer) send(cl *Client, c *Call) error {
	if p.cfg.ResetWhenFull && cl.Inflight() >= p.cfg.MaxInflight {
		p.cfg.Logger.Warn("too many requests in flight, resetting connection", "peer", p.cfg.Addr)
		cl.Close()
		return fmt.Errorf("%w: %d", ErrTooManyInflight, p.cfg.MaxInflight)
	}
	var timer env.Timer
	if c.timeout > 0 {
		timer = p.e.AfterFunc(c.timeout, func() {
			timer = nil
			if !cl.Closed() {
				p.cfg.Logger.Info("request unanswered, reconnecting", "peer", p.cfg.Addr, "api", kmsg.NameForKey(c.req.Key()), "timeout", c.timeout)
				cl.Close()
			}
		})
	}
	err := cl.Do(c.req, func(resp kmsg.Response, err error) {
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		c.done(resp, err)
	})
	if err != nil && timer != nil {
		timer.Stop()
		timer = nil
	}
	return err
}

// Cancel forgets c if it still waits for the connection: it is not sent
// and its done does not run. A request already sent is not recalled.
func (c *Call) Cancel() {
	if c == nil {
		return
	}
	if i := slices.Index(c.p.queue, c); i >= 0 {
		c.p.queue = slices.Delete(c.p.queue, i, i+1)
	}
}

// failQueue fails every queued request with err, in order.
func (p *Peer) failQueue(err error) {
	queued := p.queue
	p.queue = nil
	for _, c := range queued {
		c.done(nil, err)
	}
}

// Reset ends the connection now and fails the queued requests with
// ErrPeerClosed, without OnLost or a redial; the peer stays usable (the
// next Do or Dial connects again). A dial under way goes on.
func (p *Peer) Reset() {
	cl := p.client
	p.client = nil
	p.failQueue(ErrPeerClosed)
	if cl != nil {
		cl.Close() // its pending requests fail with ErrConnClosed
	}
}

// Close ends the peer for good: the connection is closed (its pending
// requests fail with ErrConnClosed), a dial under way is closed when it
// completes and the queued requests fail then, with ErrPeerClosed, and
// nothing is dialled again.
func (p *Peer) Close() {
	if p.closed {
		return
	}
	p.closed = true
	if cl := p.client; cl != nil {
		p.client = nil
		cl.Close()
	}
	if !p.dialing {
		p.failQueue(ErrPeerClosed)
	}
}
