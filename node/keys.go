package node

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/core/work"
)

// The production process's own keys: one row per server.properties key
// that sets a field of node's Config rather than of the server's (its
// sockets, data directory, workers and operations endpoint). The broker
// keys are core/server's rows (keys.go there); Set, the flags of `strata
// serve`, DescribeConfigs and docs/operations.md read both tables.

// Names of the keys that code outside the rows reads.
const (
	KeyListeners                   = "listeners"
	KeyAdvertisedListeners         = "advertised.listeners"
	KeyLogDirs                     = "log.dirs"
	KeySocketRequestMaxBytes       = "socket.request.max.bytes"
	KeyControllerListeners         = "controller.listener.names"
	KeySocketRequestReadTimeoutMs  = "strata.socket.request.read.timeout.ms"
	KeySocketRequestMinBytesPerSec = "strata.socket.request.min.bytes.per.sec"
	// KeyMetricsListener is the address of the HTTP listener serving
	// /metrics, /healthz, /readyz and /debug/pprof ("host:port"; empty
	// turns the listener off; port 0 picks a free one).
	KeyMetricsListener = "metrics.listener"
	// KeyMetricsEnable is Strata's own: false counts nothing (the
	// registry is nil; /metrics then has only the Go runtime's and the
	// process's series). For measuring what counting costs.
	KeyMetricsEnable                  = "strata.metrics.enable"
	KeyConsumerMinSessionTimeoutMs    = "group.consumer.min.session.timeout.ms"
	KeyConsumerMaxSessionTimeoutMs    = "group.consumer.max.session.timeout.ms"
	KeyConsumerMinHeartbeatIntervalMs = "group.consumer.min.heartbeat.interval.ms"
	KeyConsumerMaxHeartbeatIntervalMs = "group.consumer.max.heartbeat.interval.ms"

	// The broker keys node reads by name (core/server's rows).
	KeyNodeID           = server.KeyNodeID
	KeyProcessRoles     = server.KeyProcessRoles
	KeyControllerVoters = server.KeyControllerVoters
	KeyRequestOffload   = server.KeyRequestOffload
)

// Defaults of node's keys that code outside the rows reads.
const (
	DefaultProcessRoles = RoleBroker + "," + RoleController
	// DefaultMetricsListener is metrics.listener's default: loopback
	// only, so that `make run` is scrapable and nothing is exposed.
	DefaultMetricsListener = "127.0.0.1:7071"
)

// nodeKeys is node's table, in the order docs/operations.md lists them.
var nodeKeys = slices.Concat(config.Keys[Config]{
	{Row: row(KeyListeners, kmsg.ConfigTypeList, DefaultListeners, "The client (PLAINTEXT) and controller listeners.",
		config.Custom("NAME://host:port,...", parseListenerList)),
		Set: setListeners},
	{Row: row(KeyControllerListeners, kmsg.ConfigTypeList, DefaultControllerListenerName, "The name of the controller listener in listeners.",
		config.Custom("one listener name other than PLAINTEXT", parseControllerListenerName)),
		Set: func(c *Config, v config.Value) { c.ControllerListenerName = v.Parsed().(string) }},
	{Row: row(KeyAdvertisedListeners, kmsg.ConfigTypeString, "", "The addresses given to clients in Metadata, per listener.",
		config.Custom("NAME://host:port,...", parseAdvertisedListeners)),
		Set: func(c *Config, v config.Value) {
			c.advertisedByName = v.Parsed().(map[string]string)
			c.AdvertisedListener = c.advertisedByName["PLAINTEXT"]
		}},
	{Row: row(KeyLogDirs, kmsg.ConfigTypeString, DefaultLogDir, "The data directory (one).", config.Custom("one directory", parseLogDir)),
		Set: setLogDir},
	{Row: row("log.dir", kmsg.ConfigTypeString, DefaultLogDir, "The data directory when log.dirs is not set.", config.Custom("one directory", parseLogDir)),
		Set: setLogDir},
	{Row: row(KeySocketRequestMaxBytes, kmsg.ConfigTypeInt, strconv.Itoa(DefaultMaxFrameBytes), "The largest request frame, in bytes.",
		config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { c.SocketRequestMaxBytes = int(v.Int()) }},
	{Row: row(KeySocketRequestReadTimeoutMs, kmsg.ConfigTypeLong, strconv.FormatInt(DefaultFrameReadTimeout.Milliseconds(), 10),
		"A request frame that has begun to arrive must gain strata.socket.request.min.bytes.per.sec times this many milliseconds of bytes (or its rest) in every such interval, or its connection is closed.",
		config.LongIn(100, server.MaxTimeoutMs)),
		Set: func(c *Config, v config.Value) { c.SocketRequestReadTimeoutMs = v.Int() }},
	{Row: row(KeySocketRequestMinBytesPerSec, kmsg.ConfigTypeInt, strconv.Itoa(DefaultFrameMinBytesPerSec),
		"The slowest a request frame may arrive, in bytes per second, measured over strata.socket.request.read.timeout.ms.",
		config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { c.SocketRequestMinBytesPerSec = int(v.Int()) }},
	consumerBound(KeyConsumerMinSessionTimeoutMs, "45000", "The lowest group.consumer.session.timeout.ms allowed, in milliseconds.",
		func(c *Config) *int64 { return &c.ConsumerMinSessionTimeoutMs }),
	consumerBound(KeyConsumerMaxSessionTimeoutMs, "60000", "The highest group.consumer.session.timeout.ms allowed, in milliseconds.",
		func(c *Config) *int64 { return &c.ConsumerMaxSessionTimeoutMs }),
	consumerBound(KeyConsumerMinHeartbeatIntervalMs, "5000", "The lowest group.consumer.heartbeat.interval.ms allowed, in milliseconds.",
		func(c *Config) *int64 { return &c.ConsumerMinHeartbeatIntervalMs }),
	consumerBound(KeyConsumerMaxHeartbeatIntervalMs, "15000", "The highest group.consumer.heartbeat.interval.ms allowed, in milliseconds.",
		func(c *Config) *int64 { return &c.ConsumerMaxHeartbeatIntervalMs }),
	{Row: row("strata.fetch.sendfile.enable", kmsg.ConfigTypeBoolean, "true",
		"Strata's own: send fetched records with sendfile (zero copy); false reads them into user space and writes them (for measuring what zero copy saves).",
		config.Boolean()),
		Set: func(c *Config, v config.Value) { c.NoSendfile = !v.Bool() }},
	{Row: row("strata.request.workers", kmsg.ConfigTypeInt, "0",
		"Strata's own: the worker goroutines that validate produced batches and encode large answers off the event loop, shared fairly between connections; 0 means one per CPU but one (GOMAXPROCS-1, at least 1), which leaves a CPU to the event loop. One more worker runs only light connections' work.",
		config.IntIn(0, 1024)),
		Set: func(c *Config, v config.Value) { c.RequestWorkers = int(v.Int()) }},
	{Row: row(KeyMetricsListener, kmsg.ConfigTypeString, DefaultMetricsListener,
		"The HTTP address (host:port) of /metrics, /healthz, /readyz and /debug/pprof; empty turns it off.",
		config.Custom("host:port, or empty", parseMetricsListener)),
		Set: func(c *Config, v config.Value) { c.MetricsListener = v.String() }},
	{Row: row(KeyMetricsEnable, kmsg.ConfigTypeBoolean, "true",
		"Strata's own: count metrics; false counts nothing (for measuring what metrics cost).", config.Boolean()),
		Set: func(c *Config, v config.Value) { c.NoMetrics = !v.Bool() }},
	{Row: row("strata.debug.pprof.enable", kmsg.ConfigTypeBoolean, "false",
		"Strata's own: serve Go's profiles under /debug/pprof/ on the metrics listener.", config.Boolean()),
		Set: func(c *Config, v config.Value) { c.Pprof = v.Bool() }},
}, listenerKeys(), sslKeys())

// row is one of node's rows.
func row(name string, typ kmsg.ConfigType, def, doc string, check config.Check) config.Row {
	return config.Row{Name: name, Type: typ, Default: def, Doc: doc, Check: check}
}

// consumerBound is the row of a bound of a consumer-protocol group key,
// in milliseconds, checked at start (Validate).
func consumerBound(name, def, doc string, field func(*Config) *int64) config.Key[Config] {
	return config.Key[Config]{Row: row(name, kmsg.ConfigTypeInt, def, doc, config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { *field(c) = v.Int() }}
}

// ConfigKey describes one server.properties key for command lines and
// tools.
type ConfigKey struct {
	Name, Default, Doc string
}

// ConfigKeys lists every server.properties key: the broker keys
// (core/server) and node's own.
func ConfigKeys() []ConfigKey {
	out := make([]ConfigKey, 0, len(server.Keys())+len(nodeKeys))
	for _, k := range allRows() {
		out = append(out, ConfigKey{Name: k.Name, Default: k.Default, Doc: k.Doc})
	}
	return out
}

// allRows is every key's row: the broker keys', then node's.
func allRows() []*config.Row {
	var out []*config.Row
	for i := range server.Keys() {
		out = append(out, &server.Keys()[i].Row)
	}
	for i := range nodeKeys {
		out = append(out, &nodeKeys[i].Row)
	}
	return out
}

// Set applies one key=value. known is false for keys this version does not
// act on (the caller logs them as ignored); err, wrapping
// ErrInvalidConfig, names the key when the value is invalid.
func (c *Config) Set(key, value string) (known bool, err error) {
	value = strings.TrimSpace(value)
	if known, err := c.setListenerKey(key, value); known {
		return true, err
	}
	known, err = nodeKeys.Apply(c, key, value)
	if !known {
		known, err = c.setListenerOverride(key, value)
	}
	if !known {
		known, err = server.Keys().Apply(&c.Config, key, value)
	}
	switch {
	case !known:
		return false, nil
	case err != nil:
		return true, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c.given = maps.Clone(c.given)
	if c.given == nil {
		c.given = map[string]string{}
	}
	c.given[key] = value
	return true, nil
}

// brokerStaticConfigs is every key with its value, as DescribeConfigs
// reports them for this broker.
func (c Config) brokerStaticConfigs() []broker.StaticConfig {
	rows := allRows()
	out := make([]broker.StaticConfig, 0, len(rows))
	for _, r := range rows {
		v, set := c.given[r.Name]
		out = append(out, broker.StaticConfig{Name: r.Name, Value: v, Set: set, Default: r.Default, Type: r.Type, Doc: r.Doc,
			Sensitive: sensitive(r)})
	}
	return slices.Clip(out)
}

// sensitive reports whether a key's value is hidden from DescribeConfigs
// and logs: Kafka's PASSWORD keys (ssl.key.password and the like).
func sensitive(r *config.Row) bool { return r.Type == kmsg.ConfigTypePassword }

// Parsers and setters of node's keys with a structure of their own.

func setListeners(c *Config, v config.Value) {
	// Which entries a node needs depends on process.roles and
	// controller.listener.names, which may come later: Validate checks
	// them.
	c.listenersSet = true
	c.Listener, c.ControllerListener = "", ""
	c.listenerNames = nil
	c.controllerListeners = map[string]string{}
	for _, nl := range v.Parsed().([]namedListener) {
		if nl.name == "PLAINTEXT" {
			c.Listener = nl.addr
			continue
		}
		c.listenerNames = append(c.listenerNames, nl.name)
		c.controllerListeners[nl.name] = nl.addr
	}
}

// single is the one item of a list value that takes one for now; want
// says what is wanted when there is none, onlyOne when there are more.
func single(value, want, onlyOne string) (string, error) {
	list := config.SplitListLoose(value)
	switch {
	case len(list) == 0:
		return "", errors.New(want)
	case len(list) > 1:
		return "", errors.New(onlyOne)
	}
	return list[0], nil
}

func parseControllerListenerName(value string) (any, error) {
	name, err := single(value, "want a listener name, e.g. CONTROLLER", "only one controller listener is supported yet")
	if err == nil && strings.EqualFold(name, "PLAINTEXT") {
		err = errors.New("the controller listener must not be the PLAINTEXT client listener")
	}
	return strings.ToUpper(name), err
}

func parseLogDir(value string) (any, error) {
	return single(value, "want a directory", "only one log directory is supported yet")
}

func setLogDir(c *Config, v config.Value) { c.LogDir = v.Parsed().(string) }

func parseMetricsListener(value string) (any, error) {
	if value != "" {
		if _, _, err := net.SplitHostPort(value); err != nil {
			return nil, fmt.Errorf("want host:port (or empty to turn the listener off): %v", err)
		}
	}
	return value, nil
}

// workConfig bounds the broker's off-loop work: as many jobs at once as
// the node has workers (with strata.request.offload.enable=false every job
// runs inline: work.Config.InlineBelow, a broker key).
func (c Config) workConfig() work.Config {
	w := c.BrokerListener.Work
	w.Limit, w.Spare = c.requestWorkers(), lightRequestWorkers
	return w
}

// lightRequestWorkers is how many worker goroutines the node keeps
// beyond strata.request.workers for light connections (work.Config.Spare):
// a client whose requests are small and far between is validated at once
// even while every other worker decompresses bombs.
const lightRequestWorkers = 1

// requestWorkers is strata.request.workers with 0 resolved.
func (c Config) requestWorkers() int {
	if c.RequestWorkers > 0 {
		return c.RequestWorkers
	}
	// One CPU is the loop's: with a worker on every CPU, each of the
	// loop's wake-ups waits for a worker's time slice (10 ms in Go's
	// scheduler) while heavy work runs, several per request (the attack
	// suite's bombs phase: victim p50 57-85 ms with two workers on two
	// CPUs, 25 ms with one).
	return max(1, runtime.GOMAXPROCS(0)-1)
}
