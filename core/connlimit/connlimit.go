package connlimit

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/strata-log/strata/core/env"
)

// Defaults of Config's zero fields.
const (
	// DefaultMaxConnections bounds a listener's open connections. Kafka's
	// max.connections is unbounded by default; a bound keeps one
	// misbehaving client from exhausting file descriptors.
	DefaultMaxConnections = 10000
	// DefaultMaxIdle is connections.max.idle.ms, Kafka's default (10
	// minutes).
	DefaultMaxIdle = 10 * time.Minute
)

// Config bounds one listener's connections. A zero field means its
// default.
type Config struct {
	// MaxConnections is max.connections: the most connections open at
	// once (DefaultMaxConnections).
	MaxConnections int
	// MaxPerHost is max.connections.per.ip: the most connections from
	// one host. Zero means no bound of its own (Kafka's default,
	// 2147483647); a negative value admits only the hosts of
	// PerHostOverrides (Kafka's max.connections.per.ip=0, whose zero is
	// this Config's "unset").
	MaxPerHost int
	// PerHostOverrides is max.connections.per.ip.overrides: a host's own
	// bound, by host as RemoteAddr names it without the port (an IP
	// address in the node, which resolves the names it is given; a
	// machine name in the simulator). Only looked up.
	PerHostOverrides map[string]int
	// MaxIdle is connections.max.idle.ms (DefaultMaxIdle).
	MaxIdle time.Duration
}

// Validate checks cfg; its error names the bound.
func (c Config) Validate() error {
	switch {
	case c.MaxConnections < 0:
		return fmt.Errorf("max connections %d is negative", c.MaxConnections)
	case c.MaxIdle < 0:
		return fmt.Errorf("connections max idle %v is negative", c.MaxIdle)
	case c.MaxPerHost < 0 && len(c.PerHostOverrides) == 0:
		return fmt.Errorf("max connections per ip of 0 admits no one without per-ip overrides")
	}
	for _, host := range slices.Sorted(maps.Keys(c.PerHostOverrides)) {
		if n := c.PerHostOverrides[host]; n < 0 {
			return fmt.Errorf("max connections per ip override %s:%d is negative", host, n)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxIdle == 0 {
		c.MaxIdle = DefaultMaxIdle
	}
	return c
}

// Guard admits one listener's connections and expires the idle ones. Its
// methods run on the listener's loop.
type Guard struct {
	e   env.Env
	cfg Config
	log *slog.Logger
	// open counts the admitted connections; byHost the same by host.
	open   int
	byHost map[string]int
}

// New returns a guard for cfg (checked with Validate by the owner).
// log names the listener.
func New(e env.Env, cfg Config, log *slog.Logger) *Guard {
	return &Guard{e: e, cfg: cfg.withDefaults(), log: log, byHost: map[string]int{}}
}

// MaxIdle is the idle timeout in force.
func (g *Guard) MaxIdle() time.Duration { return g.cfg.MaxIdle }

// Open is the number of admitted connections not yet released.
func (g *Guard) Open() int { return g.open }

// OpenFrom is the number of admitted connections from host (RemoteAddr
// without its port) not yet released.
func (g *Guard) OpenFrom(host string) int { return g.byHost[host] }

// Admit counts a new connection from remote ("host:port") and reports
// true, or logs why it is refused and reports false: the caller then
// closes it at once and never releases it.
func (g *Guard) Admit(remote string) bool {
	host := HostOf(remote)
	if g.open >= g.cfg.MaxConnections {
		g.log.Warn("closing connection: too many connections",
			"remote", remote, "max_connections", g.cfg.MaxConnections)
		return false
	}
	if limit, ok := g.perHost(host); ok && g.byHost[host] >= limit {
		// Kafka logs this at INFO: a client over its share is not a
		// fault of the node.
		g.log.Info("closing connection: too many connections from this address",
			"remote", remote, "open_from_address", g.byHost[host], "max_connections_per_ip", limit)
		return false
	}
	g.open++
	g.byHost[host]++
	return true
}

// perHost is host's bound, if it has one.
func (g *Guard) perHost(host string) (int, bool) {
	if n, ok := g.cfg.PerHostOverrides[host]; ok {
		return n, true
	}
	switch {
	case g.cfg.MaxPerHost > 0:
		return g.cfg.MaxPerHost, true
	case g.cfg.MaxPerHost < 0:
		return 0, true
	}
	return 0, false
}

// Release uncounts a connection Admit admitted, once it closed.
func (g *Guard) Release(remote string) {
	host := HostOf(remote)
	g.open--
	if g.byHost[host]--; g.byHost[host] <= 0 {
		delete(g.byHost, host)
	}
}

// HostOf is remote without its port: "10.0.0.1:5000" is "10.0.0.1",
// "[::1]:5000" is "::1", "n1:9092" is "n1".
func HostOf(remote string) string {
	host := remote
	if i := strings.LastIndexByte(remote, ':'); i >= 0 && !strings.HasSuffix(remote, "]") {
		host = remote[:i]
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// Idle is one connection's idle timer.
type Idle struct {
	g      *Guard
	conn   env.Conn
	busy   func() bool
	expire func()
	// last is the instant (env.Monotonic) of the last touch, and
	// buffered the connection's unsent response bytes then or at the
	// last look since (env.Conn.Buffered).
	last     time.Duration
	buffered int
	timer    env.Timer
	stopped  bool
}

// Watch starts the idle timer of an admitted connection: expire runs
// (once) when conn has been idle for MaxIdle; busy reports whether it has
// a request in flight.
func (g *Guard) Watch(conn env.Conn, busy func() bool, expire func()) *Idle {
	w := &Idle{g: g, conn: conn, busy: busy, expire: expire, last: g.e.Monotonic()}
	w.arm(g.cfg.MaxIdle)
	return w
}

// Touch records activity: a request received or a response sent.
func (w *Idle) Touch() {
	w.last = w.g.e.Monotonic()
	w.buffered = w.conn.Buffered()
}

// Stop cancels the timer; the connection closed.
func (w *Idle) Stop() {
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

func (w *Idle) arm(d time.Duration) {
	w.timer = w.g.e.AfterFunc(d, w.fire)
}

func (w *Idle) fire() {
	w.timer = nil
	if w.stopped {
		return
	}
	now := w.g.e.Monotonic()
	if w.active() {
		w.last = now
	}
	if idle := now - w.last; idle < w.g.cfg.MaxIdle {
		w.arm(w.g.cfg.MaxIdle - idle)
		return
	}
	w.stopped = true
	w.g.log.Debug("closing idle connection", "remote", w.conn.RemoteAddr(), "idle", now-w.last,
		"connections_max_idle_ms", w.g.cfg.MaxIdle.Milliseconds())
	w.expire()
}

// active reports whether the connection is doing anything now: a
// request in flight, response bytes leaving since the last look (bytes
// that wait and do not move are a client that stopped reading: Kafka
// closes it after connections.max.idle.ms too, since its socket shows no
// progress), or a frame partly received.
func (w *Idle) active() bool {
	buffered := w.conn.Buffered()
	moving := buffered > 0 && buffered != w.buffered
	w.buffered = buffered
	if w.busy() || moving {
		return true
	}
	r, ok := w.conn.(env.FrameReceiver)
	return ok && r.ReceivingFrame()
}
