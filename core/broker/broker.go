package broker

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-log/strata/core/connlimit"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/work"
)

// Broker serves Kafka requests on one listener. All its methods and
// callbacks run on the loop that owns its env.Env.
type Broker struct {
	e   env.Env
	cfg Config
	log *slog.Logger
	// listeners are the bound listeners, in configuration order.
	listeners []*listener
	table     protocol.Table
	handlers  map[int16]*apiHandler

	// conns holds the open connections sorted by id (ids only grow, so
	// appending keeps the order). A slice rather than a map so that Close
	// walks connections in accept order and no map iteration can reach the
	// order in which OnClose callbacks run.
	conns      []*conn
	nextConnID uint64
	closed     bool
	// guard admits connections (max.connections, max.connections.per.ip)
	// and closes idle ones (connections.max.idle.ms).
	guard *connlimit.Guard

	// inflightBytes is the size of the request frames received and not
	// yet answered, across connections (Config.MaxInflightRequestBytes);
	// paused lists the connections paused for a bound, oldest first.
	inflightBytes int
	paused        []*conn

	// sessions are the fetch sessions (KIP-227).
	sessions fetchSessions
	// producerIDs hands out idempotent producers' ids.
	producerIDs producerIDs
	// autoCreating holds the topic names whose auto-creation is in
	// flight (autocreate.go); only looked up, never iterated.
	autoCreating map[string]bool

	// groups are the group coordinator's shards (groups.go).
	groups groupCoordinator
	// txns is the transaction coordinator (txn.go).
	txns txnCoordinator
	// coordinatorTopicProblems is, per coordinator topic, why its
	// coordinator last found it unusable ("" when usable), so that a
	// change is logged once (internaltopics.go). Only looked up.
	coordinatorTopicProblems map[string]string
	// verifying are the partitions' verifications this broker has asked
	// the coordinator about and not heard back on, each with the
	// produces waiting behind the ask (txnverify.go). Looked up by key
	// only.
	verifying map[*producer.Verification]*verifyWaiters
	// peerConns are the connections to other brokers (peers.go), made on
	// first use.
	peerConns *peerClients

	// work runs requests' CPU-heavy parts off the loop, fairly between
	// connections (each has its queue).
	work *work.Pool
	// validators are the idle validators of produced batches, one taken
	// by each validation job (costs.go).
	validators []*record.Validator

	// quotas are the client quotas' state (quotas.go).
	quotas brokerQuotas

	// metrics is nil with metrics off.
	metrics *brokerMetrics
}

// New validates cfg, starts listening on cfg.ListenAddr through
// e.Net().Listen and returns the broker. It must be called on e's loop.
func New(e env.Env, cfg Config) (*Broker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Broker{
		e:   e,
		cfg: cfg,
		// The env's logger already names the process (node id in
		// production, process name in the simulator).
		log: e.Logger().With("component", "broker"),
	}
	b.table, b.handlers = apiTable()
	b.work = work.NewPool(e, cfg.Work)
	b.guard = connlimit.New(e, cfg.connLimits(), b.log)
	b.autoCreating = map[string]bool{}
	b.sessions.max, b.sessions.rng = cfg.MaxFetchSessions, e.Rand()
	b.groups.rt, b.txns.rt = b.newGroupRuntime(), b.newTxnRuntime()
	b.initMetrics()
	if err := b.listen(); err != nil {
		return nil, err
	}
	b.log.Info("broker started", "cluster_id", cfg.ClusterID, "inter_broker_listener", b.interBrokerListener())
	return b, nil
}

// Addr is the address the first listener actually bound.
func (b *Broker) Addr() string { return b.listeners[0].ln.Addr() }

// ListenerAddr is the address the named listener bound, "" if there is
// no such listener.
func (b *Broker) ListenerAddr(name string) string {
	for _, l := range b.listeners {
		if l.Name == name {
			return l.ln.Addr()
		}
	}
	return ""
}

// AdvertisedPort is the port reported to clients of the first listener
// in Metadata (the bound port when its advertised port was 0).
func (b *Broker) AdvertisedPort() int32 { return b.listeners[0].AdvertisedPort }

// Table is the protocol table the broker serves.
func (b *Broker) Table() protocol.Table { return b.table }

// ConnectionsFrom is the number of client connections open from host
// (a remote address without its port), as max.connections.per.ip counts
// them.
func (b *Broker) ConnectionsFrom(host string) int { return b.guard.OpenFrom(host) }

// Close stops accepting connections and closes every open one, in the order
// they were accepted. It is idempotent.
func (b *Broker) Close() {
	if b.closed {
		return
	}
	b.closed = true
	b.closeTxns()
	b.closeListeners()
	// Copy: OnClose callbacks run later, but do not rely on that.
	for _, cn := range slices.Clone(b.conns) {
		b.closeConn(cn)
	}
}

// accept registers a new connection's handlers (before returning, as
// env.Net requires).
func (b *Broker) accept(l *listener, c env.Conn) {
	if b.closed {
		c.Close()
		return
	}
	if !b.guard.Admit(c.RemoteAddr()) {
		c.Close()
		return
	}
	if !b.admitConnectionRate(c, connlimit.HostOf(c.RemoteAddr()), func() { b.guard.Release(c.RemoteAddr()) }) {
		return
	}
	if b.metrics != nil {
		b.metrics.connsCreated.Inc()
	}
	cn := &conn{b: b, l: l, id: b.nextConnID, c: c, remote: c.RemoteAddr(), host: connlimit.HostOf(c.RemoteAddr()),
		principal: principal.Anonymous, work: b.work.NewQueue()}
	if !b.startAuthentication(cn) {
		b.guard.Release(cn.remote)
		c.Close()
		return
	}
	if b.cfg.testPrincipal != nil {
		cn.principal = b.cfg.testPrincipal(cn.host)
	}
	b.nextConnID++
	b.conns = append(b.conns, cn)
	cn.idle = b.guard.Watch(c, func() bool { return len(cn.queue) > 0 }, func() { b.closeConn(cn) })
	c.OnFrame(func(frame []byte) { b.onFrame(cn, frame) })
	c.OnClose(func(err error) {
		if b.metrics != nil {
			b.metrics.connsClosed.Inc()
		}
		cn.idle.Stop()
		b.guard.Release(cn.remote)
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

// forget drops a closed connection from b.conns, and its unsent answers.
func (b *Broker) forget(cn *conn) {
	cn.closing = true
	// Heavy work of the conn's requests still runs: a request received
	// is served even if its client hung up (an acks=0 producer may close
	// right after sending, and expects its records appended, as Kafka
	// appends them); its answer is dropped when it comes.
	i, found := slices.BinarySearchFunc(b.conns, cn.id, func(c *conn, id uint64) int {
		return cmp.Compare(c.id, id)
	})
	if found {
		b.conns = slices.Delete(b.conns, i, i+1)
	}
	if cn.paused {
		b.resume(cn)
	}
	b.flush(cn) // drops what is answered; handled requests drop as they answer
	// Requests a barrier held back are never handled now.
	for _, r := range cn.queue[cn.dispatched:] {
		b.inflightBytes -= r.bytes
	}
	clear(cn.queue[cn.dispatched:])
	cn.queue = cn.queue[:cn.dispatched]
}

// closeConn closes a connection once. The list entry goes when OnClose runs.
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
