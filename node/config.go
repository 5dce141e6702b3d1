package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/sasl"
	"github.com/strata-log/strata/core/server"
)

// minBrokerSessionTimeoutMs bounds broker.session.timeout.ms from below:
// twice the brokers' heartbeat interval (core/server).
const minBrokerSessionTimeoutMs = 4000

// Process roles, the values of process.roles.
const (
	RoleBroker     = server.RoleBroker
	RoleController = server.RoleController
)

// Defaults of `strata serve` with no configuration: a single node on
// loopback with its data under ./data.
const (
	// DefaultListeners is listeners when not set, for the default
	// combined roles: the client listener and the controller listener.
	// A broker-only node's default is only the first, a controller-only
	// node's only the second.
	DefaultListeners = "PLAINTEXT://" + DefaultBrokerAddr + "," + DefaultControllerListenerName + "://" + DefaultControllerAddr
	// DefaultBrokerAddr is the client (PLAINTEXT) listener's default.
	DefaultBrokerAddr             = "127.0.0.1:9092"
	DefaultControllerListenerName = "CONTROLLER"
	DefaultControllerAddr         = "127.0.0.1:9093"
	// MetadataLogDirName is the metadata quorum's directory under the
	// data directory, named as in Kafka.
	MetadataLogDirName = "__cluster_metadata-0"
	DefaultLogDir      = "./data"
)

// ObjectsDirName is the filesystem bucket's directory under the data
// directory, used until an object store is configurable.
const ObjectsDirName = "objects"

// ErrInvalidConfig is wrapped by every configuration error; the message
// names the key.
var ErrInvalidConfig = errors.New("invalid configuration")

// Config is a node's configuration: the server's (core/server.Config,
// set by the broker keys, core/server keys.go) and the production
// process's own (set by node's keys, keys.go): its sockets, data
// directory, workers and operations endpoint.
type Config struct {
	// Config is the server's configuration. Its ClusterID, when not
	// empty, is the cluster id a fresh data directory is formatted with,
	// and the one an existing directory must have (Kafka's
	// `kafka-storage format --cluster-id`); empty means a random id on
	// first start, which suits a single node. It is the --cluster-id flag
	// of `strata serve`, not a server.properties key (Kafka keeps it in
	// meta.properties only). Start fills in what only a running process
	// knows (addresses bound, the data directory, the metrics registry).
	server.Config

	// Listener is the client (PLAINTEXT) listener's address, from
	// listeners ("PLAINTEXT://host:port"; a bare "host:port" is accepted
	// too). An empty host binds every interface; port 0 picks a free
	// port. Only a node with the broker role binds it. Default
	// 127.0.0.1:9092.
	Listener string

	// AdvertisedListener is the address clients are told to use, from
	// advertised.listeners; empty means Listener's. Port 0 means the
	// bound port; an empty host means this machine's hostname.
	AdvertisedListener string

	// LogDir is log.dirs (one directory for now): where the node keeps
	// meta.properties, its logs and, under objects/, its filesystem
	// bucket. Default ./data.
	LogDir string

	// SocketRequestMaxBytes is socket.request.max.bytes, the largest
	// request frame accepted; larger ones close the connection.
	SocketRequestMaxBytes int

	// SocketRequestReadTimeoutMs and SocketRequestMinBytesPerSec are
	// strata.socket.request.read.timeout.ms and
	// strata.socket.request.min.bytes.per.sec: the progress rule of a
	// request frame (node/netread.go).
	SocketRequestReadTimeoutMs  int64
	SocketRequestMinBytesPerSec int

	// ControllerListenerName is controller.listener.names (one name).
	ControllerListenerName string

	// ControllerListener is the controller listener's "host:port" when
	// not empty; otherwise the listeners entry named
	// ControllerListenerName, or 127.0.0.1:9093 when listeners was never
	// set. Only a node with the controller role binds it. Port 0 (for
	// tests) is only usable when the node is the sole voter.
	ControllerListener string

	// The bounds of group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms
	// (group.consumer.{min,max}.session.timeout.ms and
	// group.consumer.{min,max}.heartbeat.interval.ms), checked at start.
	ConsumerMinSessionTimeoutMs, ConsumerMaxSessionTimeoutMs       int64
	ConsumerMinHeartbeatIntervalMs, ConsumerMaxHeartbeatIntervalMs int64

	// RequestWorkers is strata.request.workers (0: GOMAXPROCS-1).
	RequestWorkers int

	// NoSendfile is strata.fetch.sendfile.enable=false: fetched records
	// are read into user space and written instead of sent with
	// sendfile(2).
	NoSendfile bool

	// MetricsListener is metrics.listener: the HTTP address of /metrics,
	// /healthz, /readyz and /debug/pprof; empty turns it off.
	MetricsListener string
	// NoMetrics is strata.metrics.enable=false: nothing is counted.
	NoMetrics bool
	// Pprof is strata.debug.pprof.enable: /debug/pprof is served.
	Pprof bool

	// ProtocolMap is listener.security.protocol.map (nil: Kafka's
	// default, each protocol name mapped to itself).
	ProtocolMap map[string]meta.SecurityProtocol
	// InterBrokerListener is inter.broker.listener.name.
	InterBrokerListener string
	// SASLMechanisms is sasl.enabled.mechanisms, and
	// PrincipalMappingRules ssl.principal.mapping.rules, for every
	// listener without its own (listener.name.<name>.<key>).
	SASLMechanisms        []sasl.Mechanism
	PrincipalMappingRules string
	// InterBrokerMechanism is sasl.mechanism.inter.broker.protocol, and
	// SASLJAASConfig sasl.jaas.config (a secret): how this node logs in
	// to a SASL inter-broker listener (loginjaas.go).
	InterBrokerMechanism sasl.Mechanism
	SASLJAASConfig       string
	// ssl holds the ssl.* keys' values, plain and per listener
	// (tlskeys.go), resolved by TLSConfig.
	ssl sslSettings

	// given holds the keys set by Set (server.properties, flags) with
	// their values, for DescribeConfigs. Copied on write: a Config is a
	// value.
	given map[string]string

	// listenersSet records that listeners was given, so the role-based
	// defaults no longer apply.
	listenersSet bool
	// listenerNames are the names of the listeners entries other than
	// PLAINTEXT, checked against ControllerListenerName by Validate.
	listenerNames []string
	// controllerListeners maps those names to their addresses.
	controllerListeners map[string]string
	// advertisedByName is advertised.listeners by listener name.
	advertisedByName map[string]string
	// listenerOverrides are the listener.name.<name>.<key> values by
	// upper-case listener name, then key. Copied on write.
	listenerOverrides map[string]map[string]string
}

// DefaultConfig is the configuration of `strata serve` with no arguments:
// every key's default (the rows'), but listeners, whose default depends
// on process.roles.
func DefaultConfig() Config {
	cfg := Config{Config: server.DefaultConfig(), Listener: DefaultBrokerAddr}
	for _, k := range nodeKeys {
		if k.Default == "" || k.Name == KeyListeners {
			continue
		}
		if _, err := nodeKeys.Apply(&cfg, k.Name, k.Default); err != nil {
			panic("node: the default of " + k.Name + " does not parse: " + err.Error()) // a table bug, caught by every test
		}
	}
	return cfg
}

// Validate checks the configuration as a whole, as Kafka does for
// process.roles: a controller is one of controller.quorum.voters and has the
// controller listener in listeners; a broker-only node is not a voter, has
// no controller listener and needs the voters to find the quorum; a
// controller-only node listens on the controller listener only.
func (c Config) Validate() error {
	if err := c.ValidateKeys(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	groups := c.BrokerListener.Groups.Coordinator
	session, heartbeat := groups.ConsumerSessionTimeout.Milliseconds(), groups.ConsumerHeartbeatInterval.Milliseconds()
	fetchTimeout := c.Quorum.Quorum.FetchTimeout
	switch {
	case c.NodeID < 0:
		return invalid(KeyNodeID, strconv.Itoa(int(c.NodeID)), "want a non-negative 32-bit integer")
	case c.LogDir == "":
		return invalid(KeyLogDirs, "", "want a directory")
	case c.ClusterID != "" && CheckClusterID(c.ClusterID) != nil:
		return fmt.Errorf("%w: %w", ErrInvalidConfig, CheckClusterID(c.ClusterID))
	case c.SocketRequestMaxBytes < 1:
		return invalid(KeySocketRequestMaxBytes, strconv.Itoa(c.SocketRequestMaxBytes), "want a positive number of bytes")
	case c.BrokerListener.MaxConnections < 1:
		return invalid(server.KeyMaxConnections, strconv.Itoa(c.BrokerListener.MaxConnections), "want a positive number")
	case c.BrokerListener.MaxConnectionsPerIP < 0 && len(c.BrokerListener.MaxConnectionsPerIPOverrides) == 0:
		// Kafka's rule: 0 refuses every host but the overrides'.
		return invalid(server.KeyMaxConnectionsPerIP, "0", "0 only with "+server.KeyMaxConnectionsPerIPOverrides+" (it admits no one else)")
	case c.SocketRequestReadTimeoutMs < 0 || c.SocketRequestMinBytesPerSec < 0:
		return invalid(KeySocketRequestReadTimeoutMs, strconv.FormatInt(c.SocketRequestReadTimeoutMs, 10), "want positive values of it and of "+KeySocketRequestMinBytesPerSec)
	case !c.Broker && !c.Controller:
		return invalid(KeyProcessRoles, "", "want broker, controller or broker,controller")
	case c.ControllerListenerName == "":
		return invalid(KeyControllerListeners, "", "want a listener name, e.g. CONTROLLER")
	case session != 0 && (session < c.ConsumerMinSessionTimeoutMs || session > c.ConsumerMaxSessionTimeoutMs):
		return invalid(server.KeyConsumerSessionTimeoutMs, strconv.FormatInt(session, 10),
			fmt.Sprintf("want %s to %s: %d to %d ms", KeyConsumerMinSessionTimeoutMs, KeyConsumerMaxSessionTimeoutMs, c.ConsumerMinSessionTimeoutMs, c.ConsumerMaxSessionTimeoutMs))
	case heartbeat != 0 && (heartbeat < c.ConsumerMinHeartbeatIntervalMs || heartbeat > c.ConsumerMaxHeartbeatIntervalMs):
		return invalid(server.KeyConsumerHeartbeatIntervalMs, strconv.FormatInt(heartbeat, 10),
			fmt.Sprintf("want %s to %s: %d to %d ms", KeyConsumerMinHeartbeatIntervalMs, KeyConsumerMaxHeartbeatIntervalMs, c.ConsumerMinHeartbeatIntervalMs, c.ConsumerMaxHeartbeatIntervalMs))
	case heartbeat != 0 && session != 0 && heartbeat >= session:
		return invalid(server.KeyConsumerHeartbeatIntervalMs, strconv.FormatInt(heartbeat, 10), "want less than "+server.KeyConsumerSessionTimeoutMs)
	case c.Quorum.Controller.SessionTimeout != 0 && c.Quorum.Controller.SessionTimeout < minBrokerSessionTimeoutMs*time.Millisecond:
		return invalid(server.KeyBrokerSessionTimeoutMs, strconv.FormatInt(c.Quorum.Controller.SessionTimeout.Milliseconds(), 10),
			fmt.Sprintf("want at least %d ms: twice the brokers' 2 s heartbeat interval, or every broker is fenced between heartbeats", minBrokerSessionTimeoutMs))
	case fetchTimeout != 0 && fetchTimeout <= quorum.DefaultFetchMaxWait:
		// The leader parks an idle follower's fetch for the fetch max
		// wait; a shorter fetch timeout would have idle followers call
		// elections against a healthy leader.
		return invalid(server.KeyFetchTimeoutMs, strconv.FormatInt(fetchTimeout.Milliseconds(), 10),
			"must exceed the leader's fetch max wait ("+strconv.Itoa(int(quorum.DefaultFetchMaxWait/time.Millisecond))+" ms)")
	}
	roles := strings.Join(c.Roles(), ",")
	voter := false
	for _, v := range c.Quorum.Voters {
		if v.ID == quorum.NodeID(c.NodeID) {
			voter = true
		}
	}
	if c.IsController() {
		if c.controllerListen() == "" {
			return invalid(KeyListeners, c.listenersString(), "process.roles="+roles+" needs the controller listener "+
				c.ControllerListenerName+"://host:port in listeners (named by "+KeyControllerListeners+"), e.g. "+
				c.ControllerListenerName+"://"+DefaultControllerAddr)
		}
		if len(c.Quorum.Voters) > 0 && !voter {
			return invalid(KeyControllerVoters, votersString(c.Quorum.Voters),
				"node.id "+strconv.Itoa(int(c.NodeID))+" is not a voter; with process.roles="+roles+" it must be")
		}
	}
	if !c.IsController() {
		switch {
		case len(c.Quorum.Voters) == 0:
			return invalid(KeyControllerVoters, "", "a broker-only node (process.roles=broker) needs the controller quorum's voters, id@host:port,...")
		case voter:
			return invalid(KeyControllerVoters, votersString(c.Quorum.Voters),
				"node.id "+strconv.Itoa(int(c.NodeID))+" is a voter, so its process.roles must include controller (it is "+roles+")")
		case c.ControllerListener != "" || c.controllerListeners[c.ControllerListenerName] != "":
			return invalid(KeyListeners, c.listenersString(), "a broker-only node (process.roles=broker) must not have the controller listener "+
				c.ControllerListenerName+" in listeners")
		}
	}
	if _, err := c.controllerSecurity(); err != nil {
		return err
	}
	clients, err := c.clientListeners()
	if err != nil {
		return err
	}
	if !c.IsBroker() {
		if c.listenersSet && len(clients) > 0 {
			return invalid(KeyListeners, c.listenersString(), "a controller-only node (process.roles=controller) has only the controller listener "+
				c.ControllerListenerName+"; it serves no clients")
		}
		return nil
	}
	if len(clients) == 0 {
		return invalid(KeyListeners, c.listenersString(), "process.roles="+roles+" needs a client listener, e.g. PLAINTEXT://host:port")
	}
	// As in Kafka, advertised.listeners defaults to listeners, and neither
	// may advertise 0.0.0.0 or ::, which no client can connect to
	// (resolveAdvertised).
	for name := range c.advertisedByName {
		if !slices.ContainsFunc(clients, func(l clientListener) bool { return l.name == name }) {
			return invalid(KeyAdvertisedListeners, name, "advertises a listener that is not a client listener in listeners")
		}
	}
	ls, inter, err := c.brokerListeners()
	if err != nil {
		return err
	}
	_, err = c.interBrokerLogin(ls, inter)
	return err
}

// IsBroker reports whether process.roles includes broker.
func (c Config) IsBroker() bool { return c.Broker }

// IsController reports whether process.roles includes controller.
func (c Config) IsController() bool { return c.Controller }

// listenersString is the effective listeners, for error messages.
func (c Config) listenersString() string {
	var parts []string
	if c.Listener != "" {
		parts = append(parts, "PLAINTEXT://"+c.Listener)
	}
	if c.ControllerListener != "" {
		parts = append(parts, c.ControllerListenerName+"://"+c.ControllerListener)
	}
	for _, name := range c.listenerNames {
		parts = append(parts, name+"://"+c.controllerListeners[name])
	}
	return strings.Join(parts, ",")
}

func invalid(key, value, why string) error {
	return fmt.Errorf("%w: %s=%q: %s", ErrInvalidConfig, key, value, why)
}

// controllerListen is the address the controller listener binds:
// ControllerListener, else the listeners entry named by
// controller.listener.names, else (listeners never set) the default
// 127.0.0.1:9093; empty when listeners has no such entry.
func (c Config) controllerListen() string {
	if c.ControllerListener != "" {
		return c.ControllerListener
	}
	if a, ok := c.controllerListeners[c.ControllerListenerName]; ok {
		return a
	}
	if !c.listenersSet {
		return DefaultControllerAddr
	}
	return ""
}

// voters is the effective controller.quorum.voters.
func (c Config) voters() []kraft.Voter {
	if len(c.Quorum.Voters) > 0 {
		return c.Quorum.Voters
	}
	return []kraft.Voter{{ID: quorum.NodeID(c.NodeID), Addr: c.controllerListen()}}
}

type namedListener struct{ name, addr string }

// parseListenerList parses listeners: NAME://host:port entries (a bare
// host:port is PLAINTEXT), each name once.
func parseListenerList(value string) (any, error) {
	list := config.SplitListLoose(value)
	if len(list) == 0 {
		return nil, errors.New("want PLAINTEXT://host:port")
	}
	var out []namedListener
	for _, entry := range list {
		name, addr := "PLAINTEXT", entry
		if n, rest, ok := strings.Cut(entry, "://"); ok {
			name, addr = strings.ToUpper(n), rest
		}
		for _, o := range out {
			if o.name == name {
				return nil, errors.New("listener " + name + " given twice")
			}
		}
		hp, err := parseHostPort(addr)
		if err != nil {
			return nil, err
		}
		out = append(out, namedListener{name: name, addr: hp})
	}
	return out, nil
}

func parseHostPort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", errors.New("bad port " + strconv.Quote(port))
	}
	return net.JoinHostPort(host, strconv.FormatUint(p, 10)), nil
}

func votersString(vs []kraft.Voter) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(int(v.ID)) + "@" + v.Addr
	}
	return strings.Join(parts, ",")
}

// LoadConfigFile applies a server.properties file on top of cfg. It
// returns the keys it did not act on, in file order, for the caller to log
// as ignored; unknown keys are not fatal, invalid values of known keys
// are.
func LoadConfigFile(cfg *Config, path string) (ignored []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	props, err := config.ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	for _, p := range props {
		known, err := cfg.Set(p.Key, p.Value)
		if err != nil {
			return nil, fmt.Errorf("config file %s line %d: %w", path, p.Line, err)
		}
		if !known {
			ignored = append(ignored, p.Key)
		}
	}
	return ignored, nil
}
