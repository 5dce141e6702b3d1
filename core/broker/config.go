package broker

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/connlimit"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/quota"
	"github.com/strata-log/strata/core/replica"
	"github.com/strata-log/strata/core/work"
)

// Defaults for the bounds in Config.
const (
	// DefaultListenerName names the listener ListenAddr makes, and is the
	// listener brokers reach each other on unless
	// Config.InterBrokerListener names another.
	DefaultListenerName = "PLAINTEXT"

	// DefaultMaxConnections bounds open client connections. Kafka's
	// max.connections defaults to unlimited; a bound keeps one misbehaving
	// client from exhausting file descriptors, and 10000 is far above what a
	// single walking-skeleton node serves.
	DefaultMaxConnections = connlimit.DefaultMaxConnections

	// DefaultConnectionsMaxIdle is connections.max.idle.ms, Kafka's
	// default: a connection with no request in flight and nothing moving
	// for this long is closed.
	DefaultConnectionsMaxIdle = connlimit.DefaultMaxIdle

	// DefaultMaxBufferedResponseBytes bounds the response bytes queued on a
	// connection but not yet handed to the transport. A client that keeps
	// sending requests without reading responses is disconnected once this
	// is exceeded. The production transport (package node) applies TCP
	// back-pressure long before this (it stops reading a connection whose
	// writes are backed up), so this is the backstop for any env.Net that
	// does not. 128 MiB leaves room for one maximum-size (100 MiB) frame.
	DefaultMaxBufferedResponseBytes = 128 << 20

	// DefaultMaxInflightRequestsPerConn bounds the requests of one
	// connection received and not yet answered; at the bound the
	// connection is paused (its socket is not read) until one is
	// answered. Kafka's clients pipeline at most 5 produce requests per
	// connection with idempotence; 32 leaves room for fetches and
	// metadata without letting one connection hold the broker's memory.
	DefaultMaxInflightRequestsPerConn = 32

	// DefaultMaxInflightRequestBytes bounds the bytes of the request
	// frames received and not yet answered across every connection (a
	// producer's batches wait in memory until they are durable). Past
	// it, each connection that delivers a request is paused until the
	// total drops, so a producer flooding faster than the disk takes
	// meets TCP back-pressure instead of growing the heap. Kafka's
	// queued.max.request.bytes (unbounded by default) is the nearest
	// counterpart.
	DefaultMaxInflightRequestBytes = 64 << 20

	// DefaultInlineWorkBelow is the estimated CPU cost under which a
	// request's heavy part (validating a produced batch, encoding a
	// Metadata answer) runs on the loop rather than on a worker: a hop
	// to a worker and back costs a few microseconds of latency, and a
	// job this small holds the loop no longer than handling any request
	// does. Its cost estimates (costs.go) bound what can run inline:
	// a compressed batch is never estimated below it.
	DefaultInlineWorkBelow = 50 * time.Microsecond
)

// Config is what a broker needs to know about itself.
type Config struct {
	// NodeID is this node's id (Kafka's node.id), reported in Metadata as
	// a broker, and as the controller id while registered and unfenced.
	NodeID int32

	// ClusterID is the cluster's id (Kafka's 22-character base64url form),
	// reported in Metadata v2+.
	ClusterID string

	// ListenAddr is the "host:port" the broker listens on through
	// env.Net().Listen; port 0 picks a free port. It, AdvertisedHost and
	// AdvertisedPort make one PLAINTEXT listener when Listeners is empty.
	ListenAddr string

	// AdvertisedHost and AdvertisedPort are the address clients are told
	// to connect to (Kafka's advertised.listeners). AdvertisedPort 0 means
	// "the port actually bound", which makes ":0" listeners usable in
	// tests. AdvertisedHost must not be empty: resolving a hostname is the
	// runtime's job, not the core's.
	AdvertisedHost string
	AdvertisedPort int32

	// Listeners are the broker's listeners, when it has more than the
	// one ListenAddr makes or a secured one; ListenAddr and the
	// advertised address are then ignored.
	Listeners []Listener
	// InterBrokerListener is inter.broker.listener.name: the listener
	// brokers reach each other on (replication, transaction markers).
	// Empty means the first listener.
	InterBrokerListener string
	// Security is what the SASL listeners share.
	Security SecurityConfig

	// MaxConnections bounds open client connections; further connections
	// are closed at once with a log line. Zero means
	// DefaultMaxConnections.
	MaxConnections int

	// MaxConnectionsPerIP and MaxConnectionsPerIPOverrides are
	// max.connections.per.ip and its overrides (connlimit.Config's
	// MaxPerHost and PerHostOverrides: zero bounds nothing, negative
	// admits only the overrides' hosts); a connection past them is
	// closed at once with a log line. ConnectionsMaxIdle is
	// connections.max.idle.ms (zero: DefaultConnectionsMaxIdle).
	MaxConnectionsPerIP          int
	MaxConnectionsPerIPOverrides map[string]int
	ConnectionsMaxIdle           time.Duration

	// MaxBufferedResponseBytes bounds a connection's unsent response
	// bytes (env.Conn.Buffered) before the broker disconnects it. Zero
	// means DefaultMaxBufferedResponseBytes.
	MaxBufferedResponseBytes int

	// MaxInflightRequestsPerConn and MaxInflightRequestBytes bound what
	// requests hold while they are handled (see the defaults). Zero
	// means the default.
	MaxInflightRequestsPerConn int
	MaxInflightRequestBytes    int

	// MaxFetchSessions is max.incremental.fetch.session.cache.slots
	// (DefaultMaxFetchSessions when zero; negative disables sessions).
	MaxFetchSessions int

	// LogDir is the data directory (log.dirs) as DescribeLogDirs reports
	// it: the node gives its absolute path.
	LogDir string

	// StaticConfigs are this broker's configuration keys
	// (server.properties and the command line) as DescribeConfigs
	// reports them for this broker's resource, in any order.
	StaticConfigs []StaticConfig

	// AutoTopicCreationDisabled is auto.create.topics.enable=false
	// (Kafka's default is true): a Metadata request never creates a
	// missing topic.
	AutoTopicCreationDisabled bool
	// DefaultNumPartitions and DefaultReplicationFactor are
	// num.partitions and default.replication.factor: the partition count
	// and replication factor of an auto-created topic. Zero leaves them
	// to the active controller's defaults (-1 in the CreateTopics).
	DefaultNumPartitions     int32
	DefaultReplicationFactor int16

	// Metadata is the metadata quorum member this broker reads brokers
	// and topics from and passes CreateTopics, DeleteTopics,
	// CreatePartitions and DescribeQuorum to. Nil means no quorum:
	// Metadata lists this broker alone and no topics, and those requests
	// get NOT_CONTROLLER.
	Metadata Metadata

	// BrokerEpoch reports this broker's epoch from its registration, or
	// -1 while unregistered (AllocateProducerIds names it). Nil: never
	// registered.
	BrokerEpoch func() int64

	// Partitions are the partitions this broker hosts. Nil means none:
	// data requests answer UNKNOWN_TOPIC_OR_PARTITION or
	// NOT_LEADER_OR_FOLLOWER as the image says.
	Partitions *replica.Manager

	// Groups configures the group coordinator (groups.go).
	Groups GroupConfig

	// Txns configures the transaction coordinator (txn.go).
	Txns TxnConfig

	// Work bounds the CPU-heavy work of requests that runs off the loop
	// (record validation, large response encoding; see package
	// core/work): Limit is the jobs run at once (the node gives its
	// worker count, GOMAXPROCS), PerQueue those of one connection,
	// InlineBelow the estimated cost under which a job runs on the loop
	// (zero: DefaultInlineWorkBelow; negative: none, every job goes to a
	// worker). Zero Limit and PerQueue mean work.Config's defaults.
	Work work.Config

	// Metrics is the registry the broker counts into; nil counts
	// nothing (and the request path takes no timestamps).
	Metrics *metrics.Registry

	// Authorizer, when not nil, authorizes every request by the ACLs of
	// the metadata image (Kafka's authorizer.class.name set to its
	// StandardAuthorizer); the Policy holds super.users and
	// allow.everyone.if.no.acl.found. Nil authorizes nothing: every
	// request is allowed, as in Kafka without an authorizer.
	Authorizer *acl.Policy

	// Quotas are the broker-wide settings of client quotas
	// (quota.window.num, quota.window.size.seconds and the controller
	// mutation windows); the quotas themselves are ClientQuotaRecords of
	// the metadata image (quotas.go).
	Quotas quota.Config

	// testPrincipal, when set (by tests only, through export_test.go),
	// is the principal of each new connection, by its host: the SASL
	// and TLS handshakes that set principals are not wired yet.
	testPrincipal func(host string) principal.Principal
	// testACLs, when set (by tests only), replaces the image's ACLs.
	testACLs func() acl.Index
}

// StaticConfig is one key of a broker's own configuration.
type StaticConfig struct {
	// Name is the key, as in Kafka's server.properties.
	Name string
	// Value is the value given (in server.properties or on the command
	// line) when Set; Default is the key's default. Either may be ""
	// for no value (Kafka's null).
	Value, Default string
	Set            bool
	// Type and Doc are DescribeConfigs' config type and documentation.
	Type kmsg.ConfigType
	Doc  string
	// Sensitive hides the value (Kafka's passwords).
	Sensitive bool
}

// Metadata is what the broker needs of the metadata quorum member
// (kraft.Member implements it). Its methods are called on the broker's
// loop; Submit's done must run later on the same loop.
type Metadata interface {
	// Image is the metadata image applied so far.
	Image() *meta.Image
	// Submit hands a controller request, or DescribeQuorum, to the
	// active controller (forwarding it to the quorum leader when the
	// member's own controller is not active) and calls done with the
	// response at the request's version.
	Submit(req kmsg.Request, done func(kmsg.Response, error))
}

// errInvalidConfig is wrapped by every Config validation error.
var errInvalidConfig = errors.New("invalid broker config")

// withDefaults validates cfg and fills in zero-valued bounds.
func (cfg Config) withDefaults() (Config, error) {
	switch {
	case cfg.NodeID < 0:
		return cfg, fmt.Errorf("%w: node id %d is negative", errInvalidConfig, cfg.NodeID)
	case cfg.ClusterID == "":
		return cfg, fmt.Errorf("%w: empty cluster id", errInvalidConfig)
	case cfg.MaxConnections < 0:
		return cfg, fmt.Errorf("%w: negative max connections %d", errInvalidConfig, cfg.MaxConnections)
	case cfg.MaxBufferedResponseBytes < 0:
		return cfg, fmt.Errorf("%w: negative max buffered response bytes %d", errInvalidConfig, cfg.MaxBufferedResponseBytes)
	case cfg.DefaultNumPartitions < 0 || cfg.DefaultReplicationFactor < 0:
		return cfg, fmt.Errorf("%w: negative auto-creation defaults (%d partitions, replication factor %d)", errInvalidConfig,
			cfg.DefaultNumPartitions, cfg.DefaultReplicationFactor)
	case cfg.MaxInflightRequestsPerConn < 0 || cfg.MaxInflightRequestBytes < 0:
		return cfg, fmt.Errorf("%w: negative in-flight request bounds", errInvalidConfig)
	}
	if err := cfg.validateListeners(); err != nil {
		return cfg, err
	}
	if err := cfg.Quotas.Validate(); err != nil {
		return cfg, fmt.Errorf("%w: %w", errInvalidConfig, err)
	}
	if err := cfg.connLimits().Validate(); err != nil {
		return cfg, fmt.Errorf("%w: %w", errInvalidConfig, err)
	}
	if cfg.MaxInflightRequestsPerConn == 0 {
		cfg.MaxInflightRequestsPerConn = DefaultMaxInflightRequestsPerConn
	}
	if cfg.MaxFetchSessions == 0 {
		cfg.MaxFetchSessions = DefaultMaxFetchSessions
	}
	if cfg.MaxInflightRequestBytes == 0 {
		cfg.MaxInflightRequestBytes = DefaultMaxInflightRequestBytes
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxBufferedResponseBytes == 0 {
		cfg.MaxBufferedResponseBytes = DefaultMaxBufferedResponseBytes
	}
	if cfg.ConnectionsMaxIdle == 0 {
		cfg.ConnectionsMaxIdle = DefaultConnectionsMaxIdle
	}
	switch {
	case cfg.Work.InlineBelow == 0:
		cfg.Work.InlineBelow = DefaultInlineWorkBelow
	case cfg.Work.InlineBelow < 0:
		cfg.Work.InlineBelow = 0 // every job goes to a worker
	}
	return cfg, nil
}

// connLimits is the listener's share of cfg for its connlimit.Guard.
func (cfg Config) connLimits() connlimit.Config {
	return connlimit.Config{
		MaxConnections:   cfg.MaxConnections,
		MaxPerHost:       cfg.MaxConnectionsPerIP,
		PerHostOverrides: cfg.MaxConnectionsPerIPOverrides,
		MaxIdle:          cfg.ConnectionsMaxIdle,
	}
}
