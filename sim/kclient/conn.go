package kclient

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/wire"
)

// connState is where a broker's connection is in its life.
type connState uint8

const (
	connIdle      connState = iota // no connection; the next request dials
	connDialing                    // Dial issued
	connHandshake                  // connected, ApiVersions (then SASL, with Config.SASL) in flight
	connReady                      // versions known; requests go out
)

// broker is one broker the client knows: a seed from the bootstrap list
// (negative id) or a node from Metadata, and its connection.
type broker struct {
	c    *Client
	id   int32
	addr string

	state connState
	conn  *wire.Client
	// gen counts connection attempts; a callback of an older attempt is
	// stale and ignored.
	gen uint64
	// versions are the broker's ApiVersions rows, sorted by key.
	versions []kmsg.ApiVersionsResponseApiKey
	// queue holds the calls waiting for the connection, in order.
	queue []*call
	// failures counts consecutive failed connection attempts; retryAt is
	// the monotonic time before which no dial starts.
	failures  int
	retryAt   time.Duration
	dialTimer env.Timer
}

// call is one request through a broker.
type call struct {
	b          *broker
	req        kmsg.Request
	noResponse bool // acks=0 produce: done runs once it is handed to the transport
	done       func(kmsg.Response, error)
	timer      env.Timer
	sent       bool
	finished   bool
}

// submit queues or sends cl; its timeout counts from now. done runs
// later, never inline.
func (b *broker) submit(cl *call, timeout time.Duration) {
	cl.b = b
	cl.timer = b.c.e.AfterFunc(timeout, func() { b.timedOut(cl) })
	if b.state == connReady {
		if err := b.send(cl); err != nil {
			b.c.e.Post(func() { b.finish(cl, nil, err) })
		}
		return
	}
	b.queue = append(b.queue, cl)
	b.connect()
}

// finish completes cl once.
func (b *broker) finish(cl *call, resp kmsg.Response, err error) {
	if cl.finished {
		return
	}
	cl.finished = true
	if cl.timer != nil {
		cl.timer.Stop()
	}
	cl.done(resp, err)
}

// send hands cl to the connection, at the highest version both sides
// speak; it returns an ErrNotSent error when it cannot.
func (b *broker) send(cl *call) error {
	v, ok := b.version(cl.req)
	if !ok {
		return fmt.Errorf("%w: %s is not supported by broker %d (%s) in a version this client allows", ErrNotSent, kmsg.NameForKey(cl.req.Key()), b.id, b.addr)
	}
	cl.req.SetVersion(v)
	if cl.noResponse {
		if err := b.conn.Send(cl.req); err != nil {
			return fmt.Errorf("%w: %w", ErrNotSent, err)
		}
		cl.sent = true
		b.c.e.Post(func() { b.finish(cl, nil, nil) })
		return nil
	}
	err := b.conn.Do(cl.req, func(resp kmsg.Response, err error) {
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrConnLost, err)
		}
		b.finish(cl, resp, err)
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	cl.sent = true
	return nil
}

// version is the version to send req at: the highest that the broker,
// kmsg and the client's cap allow.
func (b *broker) version(req kmsg.Request) (int16, bool) {
	key := req.Key()
	i, found := slices.BinarySearchFunc(b.versions, key, func(k kmsg.ApiVersionsResponseApiKey, key int16) int { return cmp.Compare(k.ApiKey, key) })
	if !found {
		return 0, false
	}
	row := b.versions[i]
	v := min(row.MaxVersion, req.MaxVersion())
	if maxV, ok := b.c.cfg.MaxVersions[key]; ok {
		v = min(v, maxV)
	}
	if minV, ok := minVersions[key]; ok && v < minV {
		return 0, false
	}
	return v, v >= row.MinVersion
}

// minVersions are the lowest versions the client sends: RecordBatch v2
// (Produce v3, Fetch v4, KIP-896's baseline).
var minVersions = map[int16]int16{
	kmsg.Produce.Int16():     3,
	kmsg.Fetch.Int16():       4,
	kmsg.ListOffsets.Int16(): 1,
	kmsg.Metadata.Int16():    1,
}

// timedOut ends cl as timed out: a queued call was never sent; a sent one
// has an unknown outcome, and its connection is closed (the Java
// client's rule), which makes every other call pending on it unknown too.
func (b *broker) timedOut(cl *call) {
	if cl.finished {
		return
	}
	if !cl.sent {
		if i := slices.Index(b.queue, cl); i >= 0 {
			b.queue = slices.Delete(b.queue, i, i+1)
		}
		b.finish(cl, nil, fmt.Errorf("%w: no connection to broker %d (%s) within the request timeout", ErrNotSent, b.id, b.addr))
		return
	}
	b.finish(cl, nil, fmt.Errorf("%w: %s to broker %d (%s)", ErrTimeout, kmsg.NameForKey(cl.req.Key()), b.id, b.addr))
	b.disconnect("request timed out")
}

// connect starts a connection attempt unless one runs or the backoff
// after failed attempts has not passed.
func (b *broker) connect() {
	if b.state != connIdle || b.c.closed {
		return
	}
	if wait := b.retryAt - b.c.e.Monotonic(); wait > 0 {
		if b.dialTimer == nil {
			b.dialTimer = b.c.e.AfterFunc(wait, func() {
				b.dialTimer = nil
				if len(b.queue) > 0 {
					b.connect()
				}
			})
		}
		return
	}
	b.state = connDialing
	b.gen++
	gen := b.gen
	b.c.e.Net().Dial(b.addr, func(conn env.Conn, err error) {
		if gen != b.gen || b.c.closed {
			if conn != nil {
				conn.OnFrame(func([]byte) {})
				conn.OnClose(func(error) {})
				conn.Close()
			}
			return
		}
		if err != nil {
			b.connectFailed(fmt.Errorf("dial %s: %w", b.addr, err))
			return
		}
		b.handshake(gen, conn)
	})
}

// handshake asks the new connection's ApiVersions; the connection is
// ready once they are known.
func (b *broker) handshake(gen uint64, conn env.Conn) {
	b.conn = wire.NewClient(conn, wire.ClientConfig{
		ClientID: b.c.cfg.ClientID,
		OnClose:  func(err error) { b.lost(gen, err) },
		Logger:   b.c.log,
	})
	b.state = connHandshake
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "strata-sim", "1"
	timer := b.c.e.AfterFunc(b.c.cfg.RequestTimeout, func() {
		if gen == b.gen && b.state == connHandshake {
			b.connectFailed(fmt.Errorf("ApiVersions to %s timed out", b.addr))
		}
	})
	err := b.conn.Do(req, func(r kmsg.Response, err error) {
		timer.Stop()
		if gen != b.gen {
			return
		}
		resp, _ := r.(*kmsg.ApiVersionsResponse)
		switch {
		case err != nil:
			b.connectFailed(fmt.Errorf("ApiVersions to %s: %w", b.addr, err))
			return
		case resp.ErrorCode != 0:
			b.connectFailed(fmt.Errorf("ApiVersions to %s: %s", b.addr, codeName(resp.ErrorCode)))
			return
		}
		b.versions = slices.Clone(resp.ApiKeys)
		slices.SortFunc(b.versions, func(x, y kmsg.ApiVersionsResponseApiKey) int { return cmp.Compare(x.ApiKey, y.ApiKey) })
		if login := b.c.cfg.SASL; login != nil {
			b.authenticate(gen, *login)
			return
		}
		b.ready()
	})
	if err != nil {
		b.connectFailed(fmt.Errorf("ApiVersions to %s: %w", b.addr, err))
	}
}

// authenticate logs the new connection in (Config.SASL) before it is
// ready; a refusal fails the attempt like a refused dial.
func (b *broker) authenticate(gen uint64, login SASL) {
	v, ok := b.version(kmsg.NewPtrSASLAuthenticateRequest())
	if !ok {
		b.connectFailed(fmt.Errorf("%s does not serve SaslAuthenticate", b.addr))
		return
	}
	timer := b.c.e.AfterFunc(b.c.cfg.RequestTimeout, func() {
		if gen == b.gen && b.state == connHandshake {
			b.connectFailed(fmt.Errorf("SASL authentication to %s timed out", b.addr))
		}
	})
	authenticate(b.c.e, b.conn, login, b.c.scramClient(), v, func(lifetime time.Duration, err error) {
		timer.Stop()
		if gen != b.gen {
			return
		}
		if err != nil {
			b.connectFailed(fmt.Errorf("SASL authentication to %s as %s: %w", b.addr, login.User, err))
			return
		}
		b.scheduleReauth(gen, login, v, lifetime)
		b.ready()
	})
}

// scheduleReauth logs connection gen in again before its session
// lifetime ends (KIP-368), at 85% to 95% of it as the Java client does;
// requests go on meanwhile. A refused re-authentication closes the
// connection (its pending calls end ErrConnLost).
func (b *broker) scheduleReauth(gen uint64, login SASL, version int16, lifetime time.Duration) {
	if lifetime <= 0 {
		return
	}
	at := time.Duration(float64(lifetime) * (0.85 + 0.1*b.c.e.Rand().Float64()))
	b.c.e.AfterFunc(at, func() {
		if gen != b.gen || b.state != connReady || b.c.closed {
			return
		}
		b.c.log.Debug("re-authenticating", "broker", b.id, "lifetime", lifetime)
		authenticate(b.c.e, b.conn, login, b.c.scramClient(), version, func(lifetime time.Duration, err error) {
			if gen != b.gen {
				return
			}
			if err != nil {
				b.disconnect(fmt.Sprintf("re-authentication refused: %v", err))
				return
			}
			b.scheduleReauth(gen, login, version, lifetime)
		})
	})
}

// ready sends the queued calls on the connection, now ready.
func (b *broker) ready() {
	b.state = connReady
	b.failures = 0
	queue := b.queue
	b.queue = nil
	for _, cl := range queue {
		if cl.finished {
			continue
		}
		if err := b.send(cl); err != nil {
			b.finish(cl, nil, err)
		}
	}
}

// connectFailed ends a connection attempt: the queued calls fail as not
// sent (their callers reroute, usually after a metadata refresh) and the
// next attempt waits a backoff.
func (b *broker) connectFailed(err error) {
	b.c.log.Debug("connection attempt failed", "broker", b.id, "err", err)
	b.failures++
	b.retryAt = b.c.e.Monotonic() + b.c.backoff(b.failures)
	b.drop()
	queue := b.queue
	b.queue = nil
	for _, cl := range queue {
		b.finish(cl, nil, fmt.Errorf("%w: %w", ErrNotSent, err))
	}
	b.c.connectionFailed(b)
}

// lost handles the end of connection gen (the pending calls already got
// ErrConnLost from wire.Client).
func (b *broker) lost(gen uint64, err error) {
	if gen != b.gen {
		return
	}
	if b.state == connHandshake {
		b.connectFailed(fmt.Errorf("connection to %s closed during the handshake: %w", b.addr, err))
		return
	}
	b.c.log.Debug("connection lost", "broker", b.id, "err", err)
	b.conn, b.state = nil, connIdle
	b.gen++
	if len(b.queue) > 0 {
		b.connect()
	}
}

// disconnect closes the current connection at once: its pending calls
// end as ErrConnLost (unknown).
func (b *broker) disconnect(why string) {
	if b.state == connIdle {
		return
	}
	b.c.log.Debug("disconnecting", "broker", b.id, "reason", why)
	b.drop()
	if len(b.queue) > 0 {
		b.connect()
	}
}

// drop forgets the current connection (closing it) and makes the broker
// idle; callbacks of the old connection are stale from now on.
func (b *broker) drop() {
	conn := b.conn
	b.conn, b.state = nil, connIdle
	b.gen++
	if conn != nil {
		conn.Close()
	}
}

// close fails everything queued and closes the connection.
func (b *broker) close() {
	if b.dialTimer != nil {
		b.dialTimer.Stop()
		b.dialTimer = nil
	}
	queue := b.queue
	b.queue = nil
	for _, cl := range queue {
		cl := cl
		b.c.e.Post(func() { b.finish(cl, nil, fmt.Errorf("%w: client closed", ErrNotSent)) })
	}
	b.drop()
}
