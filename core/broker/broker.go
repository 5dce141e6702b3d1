package broker

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-log/strata/core/env"
)

// Broker serves Kafka requests on one listener. All its methods and
// callbacks run on the loop that owns its env.Env.
type Broker struct {
	cfg      Config
	log      *slog.Logger
	listener env.Listener

	// conns holds the open connections sorted by id (ids only grow, so
	// appending keeps the order). A slice rather than a map so that Close
	// walks connections in accept order and no map iteration can reach the
	// order in which OnClose callbacks run.
	conns      []*conn
	nextConnID uint64
	closed     bool
}

// conn is the broker's view of one client connection.
type conn struct {
	id     uint64
	c      env.Conn
	remote string
	// closing is set once the broker decided to close the connection, so
	// that frames the transport still delivers before OnClose are ignored.
	closing bool
	// busy is set while a request is with the metadata quorum; frames
	// received meanwhile wait in queued (at most maxQueuedFrames), so
	// responses stay in request order.
	busy   bool
	queued [][]byte
}

// maxQueuedFrames bounds the frames a connection may send while one of its
// requests is with the metadata quorum; past it the connection is closed.
const maxQueuedFrames = 64

// New validates cfg, starts listening on cfg.ListenAddr through
// e.Net().Listen and returns the broker. It must be called on e's loop.
func New(e env.Env, cfg Config) (*Broker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Broker{
		cfg: cfg,
		// The env's logger already names the process (node id in
		// production, process name in the simulator).
		log: e.Logger().With("component", "broker"),
	}
	ln, err := e.Net().Listen(cfg.ListenAddr, b.accept)
	if err != nil {
		return nil, fmt.Errorf("broker: listen on %s: %w", cfg.ListenAddr, err)
	}
	b.listener = ln
	if b.cfg.AdvertisedPort == 0 {
		port, err := portOf(ln.Addr())
		if err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("broker: advertised port from listener: %w", err)
		}
		b.cfg.AdvertisedPort = port
	}
	b.log.Info("broker listening", "addr", ln.Addr(),
		"advertised", joinHostPort(b.cfg.AdvertisedHost, b.cfg.AdvertisedPort),
		"cluster_id", cfg.ClusterID)
	return b, nil
}

// Addr is the address the listener actually bound.
func (b *Broker) Addr() string { return b.listener.Addr() }

// AdvertisedPort is the port reported to clients in Metadata (the bound
// port when Config.AdvertisedPort was 0).
func (b *Broker) AdvertisedPort() int32 { return b.cfg.AdvertisedPort }

// Close stops accepting connections and closes every open one, in the order
// they were accepted. It is idempotent.
func (b *Broker) Close() {
	if b.closed {
		return
	}
	b.closed = true
	if err := b.listener.Close(); err != nil {
		b.log.Warn("closing listener", "err", err)
	}
	// Copy: OnClose callbacks run later, but do not rely on that.
	for _, cn := range slices.Clone(b.conns) {
		b.closeConn(cn)
	}
}

// accept registers a new connection's handlers (before returning, as
// env.Net requires).
func (b *Broker) accept(c env.Conn) {
	if b.closed {
		c.Close()
		return
	}
	if len(b.conns) >= b.cfg.MaxConnections {
		b.log.Warn("closing connection: too many connections",
			"remote", c.RemoteAddr(), "max_connections", b.cfg.MaxConnections)
		c.Close()
		return
	}
	cn := &conn{id: b.nextConnID, c: c, remote: c.RemoteAddr()}
	b.nextConnID++
	b.conns = append(b.conns, cn)
	c.OnFrame(func(frame []byte) { b.onFrame(cn, frame) })
	c.OnClose(func(err error) {
		b.forget(cn)
		if errors.Is(err, env.ErrFrameTooLarge) {
			// The transport refused the frame before we saw it; this
			// is a client bug (or an attack) worth an operator's eye,
			// like a malformed request.
			b.log.Warn("connection closed: request frame too large", "remote", cn.remote, "err", err)
			return
		}
		b.log.Debug("connection closed", "remote", cn.remote, "err", err)
	})
	b.log.Debug("connection accepted", "remote", cn.remote)
}

// onFrame handles one request frame. Handling is synchronous, so the
// response is sent before the next frame of this connection is looked at:
// that is what keeps responses in request order and bounds the requests in
// flight per connection to one.
func (b *Broker) onFrame(cn *conn, frame []byte) {
	if cn.closing {
		return
	}
	if cn.busy {
		if len(cn.queued) >= maxQueuedFrames {
			b.log.Warn("closing connection: too many pipelined requests", "remote", cn.remote)
			b.closeConn(cn)
			return
		}
		cn.queued = append(cn.queued, frame)
		return
	}
	cn.busy = true
	replied := false
	sync := true
	ferr := b.handleFrameAsync(frame, func(resp []byte) {
		replied = true
		b.send(cn, resp)
		if !sync {
			b.resume(cn)
		}
	})
	sync = false
	if ferr != nil {
		b.log.Warn("closing connection: bad request",
			"remote", cn.remote,
			"api_key", ferr.key,
			"api_name", ferr.apiName(),
			"api_version", ferr.version,
			"correlation_id", ferr.correlationID,
			"reason", ferr.reason)
		b.closeConn(cn)
		return
	}
	if replied {
		cn.busy = false
	}
}

// resume handles the frames queued while a request was in flight.
func (b *Broker) resume(cn *conn) {
	cn.busy = false
	for len(cn.queued) > 0 && !cn.busy && !cn.closing {
		f := cn.queued[0]
		cn.queued = cn.queued[1:]
		b.onFrame(cn, f)
	}
}

// send sends one response frame and applies the buffered-bytes bound.
func (b *Broker) send(cn *conn, resp []byte) {
	if cn.closing || b.closed {
		return
	}
	if err := cn.c.Send(resp); err != nil {
		// The conn ended under us; its OnClose does the bookkeeping.
		b.log.Debug("response not sent", "remote", cn.remote, "err", err)
		return
	}
	if buffered := cn.c.Buffered(); buffered > b.cfg.MaxBufferedResponseBytes {
		b.log.Warn("closing connection: client is not reading responses",
			"remote", cn.remote, "buffered_bytes", buffered,
			"max_buffered_response_bytes", b.cfg.MaxBufferedResponseBytes)
		b.closeConn(cn)
	}
}

// forget drops a closed connection from b.conns.
func (b *Broker) forget(cn *conn) {
	i, found := slices.BinarySearchFunc(b.conns, cn.id, func(c *conn, id uint64) int {
		return cmp.Compare(c.id, id)
	})
	if found {
		b.conns = slices.Delete(b.conns, i, i+1)
	}
}

// closeConn closes a connection once. The map entry goes when OnClose runs.
func (b *Broker) closeConn(cn *conn) {
	if cn.closing {
		return
	}
	cn.closing = true
	cn.c.Close()
}

// joinHostPort is net.JoinHostPort without package net.
func joinHostPort(host string, port int32) string {
	if strings.IndexByte(host, ':') >= 0 {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(port))
}

// portOf returns the port of a "host:port" address without using package
// net (which core must not import).
func portOf(addr string) (int32, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return 0, fmt.Errorf("address %q has no port", addr)
	}
	port, err := strconv.ParseUint(addr[i+1:], 10, 16)
	if err != nil {
		return 0, fmt.Errorf("address %q: bad port: %w", addr, err)
	}
	return int32(port), nil
}
