package node

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/group"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/quorum"
)

// Config keys, named as in Kafka so operators' server.properties carry over.
const (
	KeyNodeID                = "node.id"
	KeyListeners             = "listeners"
	KeyAdvertisedListeners   = "advertised.listeners"
	KeyLogDirs               = "log.dirs"
	KeyLogDir                = "log.dir" // Kafka's single-directory fallback for log.dirs
	KeySocketRequestMaxBytes = "socket.request.max.bytes"
	KeyMaxConnections        = "max.connections"
	KeyProcessRoles          = "process.roles"
	KeyControllerVoters      = "controller.quorum.voters"
	KeyControllerListeners   = "controller.listener.names"
	KeyElectionTimeoutMs     = "controller.quorum.election.timeout.ms"
	KeyFetchTimeoutMs        = "controller.quorum.fetch.timeout.ms"
)

// minBrokerSessionTimeoutMs bounds broker.session.timeout.ms from below:
// twice the brokers' heartbeat interval (core/server).
const minBrokerSessionTimeoutMs = 4000

// Process roles, the values of process.roles.
const (
	RoleBroker     = "broker"
	RoleController = "controller"
)

// Defaults of `strata serve` with no configuration: a single node on
// loopback with its data under ./data.
const (
	DefaultNodeID = 1
	// DefaultListeners is listeners when not set, for the default
	// combined roles: the client listener and the controller listener.
	// A broker-only node's default is only the first, a controller-only
	// node's only the second.
	DefaultListeners = "PLAINTEXT://" + DefaultBrokerAddr + "," + DefaultControllerListenerName + "://" + DefaultControllerAddr
	// DefaultBrokerAddr is the client (PLAINTEXT) listener's default.
	DefaultBrokerAddr = "127.0.0.1:9092"
	// DefaultControllerVoters makes the node the sole voter of its
	// metadata quorum, on the controller listener 127.0.0.1:9093.
	DefaultControllerVoters       = "1@127.0.0.1:9093"
	DefaultControllerListenerName = "CONTROLLER"
	DefaultControllerAddr         = "127.0.0.1:9093"
	DefaultProcessRoles           = "broker,controller"
	// DefaultElectionTimeoutMs is controller.quorum.election.timeout.ms,
	// Kafka's default (quorum.DefaultElectionTimeout).
	DefaultElectionTimeoutMs = 1000
	// DefaultFetchTimeoutMs is controller.quorum.fetch.timeout.ms,
	// Kafka's default (quorum.DefaultFetchTimeout): how long a follower
	// waits without a successful fetch before it starts an election, so
	// it bounds failover after a leader crashes.
	DefaultFetchTimeoutMs = 2000
	// maxQuorumTimeoutMs bounds both quorum timeouts (one hour): a larger
	// value is a typo, not a choice.
	maxQuorumTimeoutMs = 3_600_000
	// MetadataLogDirName is the metadata quorum's directory under the
	// data directory, named as in Kafka.
	MetadataLogDirName = "__cluster_metadata-0"
	DefaultLogDir      = "./data"
	// DefaultSocketRequestMaxBytes is Kafka's default
	// socket.request.max.bytes, 100 MiB.
	DefaultSocketRequestMaxBytes = DefaultMaxFrameBytes
	// DefaultMaxConnections is max.connections. Kafka's default is
	// unlimited; ours is bounded (see broker.DefaultMaxConnections).
	DefaultMaxConnections = broker.DefaultMaxConnections
)

// ObjectsDirName is the filesystem bucket's directory under the data
// directory, used until an object store is configurable.
const ObjectsDirName = "objects"

// ErrInvalidConfig is wrapped by every configuration error; the message
// names the key.
var ErrInvalidConfig = errors.New("invalid configuration")

// Config is a node's configuration.
type Config struct {
	// NodeID is node.id, the id this node has in the cluster. Default 1.
	NodeID int32

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

	// ClusterID, when not empty, is the cluster id a fresh data directory
	// is formatted with, and the one an existing directory must have
	// (Kafka's `kafka-storage format --cluster-id`). Every node of a
	// multi-node cluster needs the same one: the controller refuses a
	// broker's registration from another cluster. Empty means a random
	// id on first start, which suits a single node. It is the --cluster-id
	// flag of `strata serve`, not a server.properties key (Kafka keeps it
	// in meta.properties only).
	ClusterID string

	// LogDir is log.dirs (one directory for now): where the node keeps
	// meta.properties, its logs and, under objects/, its filesystem
	// bucket. Default ./data.
	LogDir string

	// SocketRequestMaxBytes is socket.request.max.bytes, the largest
	// request frame accepted; larger ones close the connection. Default
	// 104857600 (100 MiB).
	SocketRequestMaxBytes int

	// MaxConnections is max.connections, the most client connections
	// served at once; more are closed on accept. Default 10000.
	MaxConnections int

	// MaxConnectionsPerIP is max.connections.per.ip: the most
	// connections from one address on each listener (Kafka's default,
	// 2147483647, bounds nothing); 0 admits only the hosts of
	// MaxConnectionsPerIPOverrides.
	MaxConnectionsPerIP int
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides,
	// host (name or address) to its own bound.
	MaxConnectionsPerIPOverrides map[string]int
	// ConnectionsMaxIdleMs is connections.max.idle.ms: a connection with
	// no request in flight and no bytes moving for this long is closed,
	// on both listeners. Default 600000 (10 minutes).
	ConnectionsMaxIdleMs int64
	// SocketRequestReadTimeoutMs and SocketRequestMinBytesPerSec are
	// strata.socket.request.read.timeout.ms and
	// strata.socket.request.min.bytes.per.sec: the progress rule of a
	// request frame (node/netread.go). Defaults 20000 and 1024.
	SocketRequestReadTimeoutMs  int64
	SocketRequestMinBytesPerSec int

	// ProcessRoles is process.roles: "broker", "controller" or both
	// (combined mode, the default), as in Kafka, normalized to that
	// order. A controller is a voter of the metadata quorum and runs the
	// controller when elected; a broker serves clients and registers with
	// the active controller; a broker-only node follows the metadata log
	// as an observer.
	ProcessRoles []string

	// Voters is controller.quorum.voters (id@host:port, ...). Empty (the
	// default) means this node alone, on its controller listener:
	// 1@127.0.0.1:9093 with the other defaults. A node with the
	// controller role must be one of them, a broker-only node must not.
	Voters []kraft.Voter

	// ElectionTimeoutMs is controller.quorum.election.timeout.ms: how
	// long a voter without a leader waits (randomly, in [T, 2T)) before
	// it starts an election. Default 1000.
	ElectionTimeoutMs int

	// FetchTimeoutMs is controller.quorum.fetch.timeout.ms: how long a
	// voter goes without a successful fetch from its leader before it
	// starts an election. It bounds failover after the leader dies
	// without resigning (a crash, kill -9, a partition). Default 2000.
	FetchTimeoutMs int

	// ControllerListenerName is controller.listener.names (one name).
	// Default CONTROLLER.
	ControllerListenerName string

	// ControllerListener is the controller listener's "host:port" when
	// not empty; otherwise the listeners entry named
	// ControllerListenerName, or 127.0.0.1:9093 when listeners was never
	// set. Only a node with the controller role binds it. Port 0 (for
	// tests) is only usable when the node is the sole voter.
	ControllerListener string

	// NumPartitions is num.partitions: the partition count of a topic
	// created with -1 partitions or auto-created. Default 1.
	NumPartitions int32

	// DefaultReplicationFactor is default.replication.factor: the
	// replication factor of a topic created with -1 or auto-created.
	// Default 1; more is refused by the controller until replication is
	// supported.
	DefaultReplicationFactor int16

	// OffsetsTopicPartitions and OffsetsTopicReplicationFactor are
	// offsets.topic.num.partitions (50) and
	// offsets.topic.replication.factor (3, capped at the brokers
	// registered when __consumer_offsets is created).
	OffsetsTopicPartitions        int32
	OffsetsTopicReplicationFactor int16
	// GroupMinSessionTimeoutMs, GroupMaxSessionTimeoutMs,
	// GroupInitialRebalanceDelayMs and GroupMaxSize are the group
	// coordinator's group.min.session.timeout.ms (6000),
	// group.max.session.timeout.ms (1800000),
	// group.initial.rebalance.delay.ms (3000) and group.max.size.
	GroupMinSessionTimeoutMs     int64
	GroupMaxSessionTimeoutMs     int64
	GroupInitialRebalanceDelayMs int64
	GroupMaxSize                 int64
	// ConsumerSessionTimeoutMs, ConsumerHeartbeatIntervalMs and
	// ConsumerMaxSize are the consumer protocol's (KIP-848)
	// group.consumer.session.timeout.ms (45000),
	// group.consumer.heartbeat.interval.ms (5000) and
	// group.consumer.max.size; the Min/Max fields bound the first two
	// (group.consumer.{min,max}.session.timeout.ms, 45000 and 60000;
	// group.consumer.{min,max}.heartbeat.interval.ms, 5000 and 15000).
	ConsumerSessionTimeoutMs                                       int64
	ConsumerMinSessionTimeoutMs, ConsumerMaxSessionTimeoutMs       int64
	ConsumerHeartbeatIntervalMs                                    int64
	ConsumerMinHeartbeatIntervalMs, ConsumerMaxHeartbeatIntervalMs int64
	ConsumerMaxSize                                                int64
	// ConsumerAssignors is group.consumer.assignors (uniform,range): the
	// server-side assignors members may ask for, the first the default.
	ConsumerAssignors []string
	// ConsumerMigrationPolicy is group.consumer.migration.policy
	// (bidirectional): which online protocol migrations groups may make.
	ConsumerMigrationPolicy group.MigrationPolicy
	// OffsetsRetentionMinutes and OffsetsRetentionCheckIntervalMs are
	// offsets.retention.minutes (10080) and
	// offsets.retention.check.interval.ms (600000).
	OffsetsRetentionMinutes         int64
	OffsetsRetentionCheckIntervalMs int64
	// TxnStatePartitions and TxnStateReplicationFactor are
	// transaction.state.log.num.partitions (50) and
	// transaction.state.log.replication.factor (3, capped at the brokers
	// registered when __transaction_state is created);
	// TxnMaxTimeoutMs, TransactionalIDExpirationMs and
	// TxnAbortCheckIntervalMs are transaction.max.timeout.ms (900000),
	// transactional.id.expiration.ms (604800000) and
	// transaction.abort.timed.out.transaction.cleanup.interval.ms
	// (10000).
	TxnStatePartitions          int32
	TxnStateReplicationFactor   int16
	TxnMaxTimeoutMs             int64
	TransactionalIDExpirationMs int64
	TxnAbortCheckIntervalMs     int64
	// NoTxnPartitionVerification is
	// transaction.partition.verification.enable=false (default true):
	// partition leaders do not ask the transaction coordinator about a
	// producer's first transactional batch (KIP-890 part 1).
	NoTxnPartitionVerification bool
	// TransactionVersion is strata.transaction.version (default 1): the
	// transaction.version feature the brokers finalize, Kafka's
	// `kafka-features.sh --feature transaction.version`. 2 is KIP-890
	// part 2 (clients add partitions through their produces and offset
	// commits, and every EndTxn bumps the epoch); 1 keeps clients on
	// explicit adds. Every broker of a cluster must have the same.
	TransactionVersion int16

	// AutoCreateTopicsEnable is auto.create.topics.enable: a Metadata
	// request for a missing topic creates it. Default true.
	AutoCreateTopicsEnable bool

	// RetentionCheckIntervalMs is log.retention.check.interval.ms.
	// Default 300000 (5 minutes).
	RetentionCheckIntervalMs int64

	// ProducerIDExpirationMs is producer.id.expiration.ms. Default
	// 86400000 (1 day).
	ProducerIDExpirationMs int64

	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms (default 30000) and
	// BrokerSessionTimeoutMs broker.session.timeout.ms (default 9000).
	ReplicaLagTimeMaxMs    int64
	BrokerSessionTimeoutMs int64

	// NoAutoLeaderRebalance is auto.leader.rebalance.enable=false;
	// LeaderImbalanceCheckSeconds is
	// leader.imbalance.check.interval.seconds (0: the default, 300).
	NoAutoLeaderRebalance       bool
	LeaderImbalanceCheckSeconds int64

	// RequestWorkers is strata.request.workers (0: GOMAXPROCS) and
	// NoRequestOffload strata.request.offload.enable=false.
	RequestWorkers   int
	NoRequestOffload bool

	// NoSendfile is strata.fetch.sendfile.enable=false: fetched records
	// are read into user space and written instead of sent with
	// sendfile(2).
	NoSendfile bool

	// QueuedMaxRequestBytes is queued.max.request.bytes: the request
	// bytes held while they are handled, across connections. Default
	// 134217728 (128 MiB).
	QueuedMaxRequestBytes int64

	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots;
	// 0 disables fetch sessions. Default 1000.
	FetchSessionCacheSlots int

	// MetricsListener is metrics.listener: the HTTP address of /metrics,
	// /healthz, /readyz and /debug/pprof; empty turns it off. Default
	// 127.0.0.1:7071.
	MetricsListener string
	// NoMetrics is strata.metrics.enable=false: nothing is counted.
	NoMetrics bool
	// Pprof is strata.debug.pprof.enable: /debug/pprof is served.
	Pprof bool

	// topicDefaults are the topic defaults given by their broker keys
	// (log.segment.bytes...), by topic key; retention and roll keep
	// their units until StaticTopicDefaults derives the topic default.
	topicDefaults map[string]string
	retention     [3]timeSetting // log.retention.ms, .minutes, .hours
	roll          [2]timeSetting // log.roll.ms, .hours

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
}

// DefaultConfig is the configuration of `strata serve` with no arguments.
func DefaultConfig() Config {
	cfg := Config{
		NodeID:                DefaultNodeID,
		Listener:              DefaultBrokerAddr,
		LogDir:                DefaultLogDir,
		SocketRequestMaxBytes: DefaultSocketRequestMaxBytes,
		MaxConnections:        DefaultMaxConnections,
		MaxConnectionsPerIP:   DefaultMaxConnectionsPerIP,
		ConnectionsMaxIdleMs:  DefaultConnectionsMaxIdleMs,

		SocketRequestReadTimeoutMs:  DefaultSocketRequestReadTimeoutMs,
		SocketRequestMinBytesPerSec: DefaultSocketRequestMinBytesPerSec,
		ControllerListenerName:      DefaultControllerListenerName,
		ElectionTimeoutMs:           DefaultElectionTimeoutMs,
		FetchTimeoutMs:              DefaultFetchTimeoutMs,

		NumPartitions:            DefaultNumPartitions,
		DefaultReplicationFactor: DefaultReplicationFactor,
		AutoCreateTopicsEnable:   true,
		RetentionCheckIntervalMs: DefaultRetentionCheckIntervalMs,

		OffsetsTopicPartitions:          DefaultOffsetsTopicPartitions,
		OffsetsTopicReplicationFactor:   DefaultOffsetsTopicReplicationFactor,
		GroupMinSessionTimeoutMs:        DefaultGroupMinSessionTimeoutMs,
		GroupMaxSessionTimeoutMs:        DefaultGroupMaxSessionTimeoutMs,
		GroupInitialRebalanceDelayMs:    DefaultGroupInitialRebalanceDelayMs,
		GroupMaxSize:                    DefaultGroupMaxSize,
		ConsumerSessionTimeoutMs:        DefaultConsumerSessionTimeoutMs,
		ConsumerMinSessionTimeoutMs:     DefaultConsumerMinSessionTimeoutMs,
		ConsumerMaxSessionTimeoutMs:     DefaultConsumerMaxSessionTimeoutMs,
		ConsumerHeartbeatIntervalMs:     DefaultConsumerHeartbeatIntervalMs,
		ConsumerMinHeartbeatIntervalMs:  DefaultConsumerMinHeartbeatMs,
		ConsumerMaxHeartbeatIntervalMs:  DefaultConsumerMaxHeartbeatMs,
		ConsumerMaxSize:                 DefaultGroupMaxSize,
		ConsumerAssignors:               defaultConsumerAssignors(),
		ConsumerMigrationPolicy:         group.DefaultMigrationPolicy,
		OffsetsRetentionMinutes:         DefaultOffsetsRetentionMinutes,
		OffsetsRetentionCheckIntervalMs: DefaultOffsetsRetentionCheckMs,
		TxnStatePartitions:              DefaultTxnStatePartitions,
		TxnStateReplicationFactor:       DefaultTxnStateReplicationFactor,
		TxnMaxTimeoutMs:                 DefaultTxnMaxTimeoutMs,
		TransactionalIDExpirationMs:     DefaultTransactionalIDExpirationMs,
		TxnAbortCheckIntervalMs:         DefaultTxnAbortCheckIntervalMs,

		ProducerIDExpirationMs: DefaultProducerIDExpirationMs,
		ReplicaLagTimeMaxMs:    DefaultReplicaLagTimeMaxMs,
		BrokerSessionTimeoutMs: DefaultBrokerSessionTimeoutMs,
		QueuedMaxRequestBytes:  DefaultQueuedMaxRequestBytes,
		FetchSessionCacheSlots: DefaultFetchSessionCacheSlots,
		MetricsListener:        DefaultMetricsListener,
	}
	_ = setProcessRoles(&cfg, DefaultProcessRoles)
	return cfg
}

// Validate checks the configuration as a whole, as Kafka does for
// process.roles: a controller is one of controller.quorum.voters and has the
// controller listener in listeners; a broker-only node is not a voter, has
// no controller listener and needs the voters to find the quorum; a
// controller-only node listens on the controller listener only.
func (c Config) Validate() error {
	switch {
	case c.NodeID < 0:
		return invalid(KeyNodeID, strconv.Itoa(int(c.NodeID)), "want a non-negative 32-bit integer")
	case c.LogDir == "":
		return invalid(KeyLogDirs, "", "want a directory")
	case c.ClusterID != "" && CheckClusterID(c.ClusterID) != nil:
		return fmt.Errorf("%w: %w", ErrInvalidConfig, CheckClusterID(c.ClusterID))
	case c.SocketRequestMaxBytes < 1:
		return invalid(KeySocketRequestMaxBytes, strconv.Itoa(c.SocketRequestMaxBytes), "want a positive number of bytes")
	case c.MaxConnections < 1:
		return invalid(KeyMaxConnections, strconv.Itoa(c.MaxConnections), "want a positive number")
	case c.MaxConnectionsPerIP < 0:
		return invalid(KeyMaxConnectionsPerIP, strconv.Itoa(c.MaxConnectionsPerIP), "want 0 or more")
	case c.MaxConnectionsPerIP == 0 && len(c.MaxConnectionsPerIPOverrides) == 0:
		// Kafka's rule: 0 refuses every host but the overrides'.
		return invalid(KeyMaxConnectionsPerIP, "0", "0 only with "+KeyMaxConnectionsPerIPOverrides+" (it admits no one else)")
	case c.ConnectionsMaxIdleMs < 0:
		return invalid(KeyConnectionsMaxIdleMs, strconv.FormatInt(c.ConnectionsMaxIdleMs, 10), "want a positive number of milliseconds")
	case c.SocketRequestReadTimeoutMs < 0 || c.SocketRequestMinBytesPerSec < 0:
		return invalid(KeySocketRequestReadTimeoutMs, strconv.FormatInt(c.SocketRequestReadTimeoutMs, 10), "want positive values of it and of "+KeySocketRequestMinBytesPerSec)
	case len(c.ProcessRoles) == 0:
		return invalid(KeyProcessRoles, "", "want broker, controller or broker,controller")
	case c.ControllerListenerName == "":
		return invalid(KeyControllerListeners, "", "want a listener name, e.g. CONTROLLER")
	case c.ElectionTimeoutMs < 0 || c.ElectionTimeoutMs > maxQuorumTimeoutMs:
		return invalid(KeyElectionTimeoutMs, strconv.Itoa(c.ElectionTimeoutMs), "want milliseconds, 1 to "+strconv.Itoa(maxQuorumTimeoutMs))
	case c.FetchTimeoutMs < 0 || c.FetchTimeoutMs > maxQuorumTimeoutMs:
		return invalid(KeyFetchTimeoutMs, strconv.Itoa(c.FetchTimeoutMs), "want milliseconds, 1 to "+strconv.Itoa(maxQuorumTimeoutMs))
	case c.NumPartitions < 0 || c.NumPartitions > maxPartitionsPerTopic:
		return invalid(KeyNumPartitions, strconv.Itoa(int(c.NumPartitions)), fmt.Sprintf("want a number of partitions, 1 to %d", maxPartitionsPerTopic))
	case c.DefaultReplicationFactor < 0:
		return invalid(KeyDefaultReplicationFactor, strconv.Itoa(int(c.DefaultReplicationFactor)), "want a replication factor of at least 1")
	case c.RetentionCheckIntervalMs < 0 || c.RetentionCheckIntervalMs > maxLogRetentionCheckIntervalMs:
		return invalid(KeyLogRetentionCheckIntervalMs, strconv.FormatInt(c.RetentionCheckIntervalMs, 10), fmt.Sprintf("want milliseconds, 1 to %d", maxLogRetentionCheckIntervalMs))
	case c.ProducerIDExpirationMs < 0 || c.ProducerIDExpirationMs > math.MaxInt32:
		return invalid(KeyProducerIDExpirationMs, strconv.FormatInt(c.ProducerIDExpirationMs, 10), fmt.Sprintf("want milliseconds, 1 to %d", math.MaxInt32))
	case c.ConsumerSessionTimeoutMs != 0 && (c.ConsumerSessionTimeoutMs < c.ConsumerMinSessionTimeoutMs || c.ConsumerSessionTimeoutMs > c.ConsumerMaxSessionTimeoutMs):
		return invalid(KeyConsumerSessionTimeoutMs, strconv.FormatInt(c.ConsumerSessionTimeoutMs, 10),
			fmt.Sprintf("want %s to %s: %d to %d ms", KeyConsumerMinSessionTimeoutMs, KeyConsumerMaxSessionTimeoutMs, c.ConsumerMinSessionTimeoutMs, c.ConsumerMaxSessionTimeoutMs))
	case c.ConsumerHeartbeatIntervalMs != 0 && (c.ConsumerHeartbeatIntervalMs < c.ConsumerMinHeartbeatIntervalMs || c.ConsumerHeartbeatIntervalMs > c.ConsumerMaxHeartbeatIntervalMs):
		return invalid(KeyConsumerHeartbeatIntervalMs, strconv.FormatInt(c.ConsumerHeartbeatIntervalMs, 10),
			fmt.Sprintf("want %s to %s: %d to %d ms", KeyConsumerMinHeartbeatIntervalMs, KeyConsumerMaxHeartbeatIntervalMs, c.ConsumerMinHeartbeatIntervalMs, c.ConsumerMaxHeartbeatIntervalMs))
	case c.ConsumerHeartbeatIntervalMs != 0 && c.ConsumerSessionTimeoutMs != 0 && c.ConsumerHeartbeatIntervalMs >= c.ConsumerSessionTimeoutMs:
		return invalid(KeyConsumerHeartbeatIntervalMs, strconv.FormatInt(c.ConsumerHeartbeatIntervalMs, 10), "want less than "+KeyConsumerSessionTimeoutMs)
	case c.QueuedMaxRequestBytes < 0:
		return invalid(KeyQueuedMaxRequestBytes, strconv.FormatInt(c.QueuedMaxRequestBytes, 10), "want a positive number of bytes")
	case c.BrokerSessionTimeoutMs != 0 && c.BrokerSessionTimeoutMs < minBrokerSessionTimeoutMs:
		return invalid(KeyBrokerSessionTimeoutMs, strconv.FormatInt(c.BrokerSessionTimeoutMs, 10),
			fmt.Sprintf("want at least %d ms: twice the brokers' 2 s heartbeat interval, or every broker is fenced between heartbeats", minBrokerSessionTimeoutMs))
	case c.FetchSessionCacheSlots < 0:
		return invalid(KeyMaxIncrementalFetchSessionSlot, strconv.Itoa(c.FetchSessionCacheSlots), "want a number of sessions, 0 or more")
	case c.FetchTimeoutMs != 0 && time.Duration(c.FetchTimeoutMs)*time.Millisecond <= quorum.DefaultFetchMaxWait:
		// The leader parks an idle follower's fetch for the fetch max
		// wait; a shorter fetch timeout would have idle followers call
		// elections against a healthy leader.
		return invalid(KeyFetchTimeoutMs, strconv.Itoa(c.FetchTimeoutMs),
			"must exceed the leader's fetch max wait ("+strconv.Itoa(int(quorum.DefaultFetchMaxWait/time.Millisecond))+" ms)")
	}
	if err := c.validateTopicDefaults(); err != nil {
		return err
	}
	for _, name := range c.listenerNames {
		if name != c.ControllerListenerName {
			return invalid(KeyListeners, name, "listener "+name+" is neither PLAINTEXT nor the controller listener ("+
				KeyControllerListeners+"="+c.ControllerListenerName+")")
		}
	}
	roles := strings.Join(c.ProcessRoles, ",")
	voter := false
	for _, v := range c.Voters {
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
		if len(c.Voters) > 0 && !voter {
			return invalid(KeyControllerVoters, votersString(c.Voters),
				"node.id "+strconv.Itoa(int(c.NodeID))+" is not a voter; with process.roles="+roles+" it must be")
		}
	}
	if !c.IsController() {
		switch {
		case len(c.Voters) == 0:
			return invalid(KeyControllerVoters, "", "a broker-only node (process.roles=broker) needs the controller quorum's voters, id@host:port,...")
		case voter:
			return invalid(KeyControllerVoters, votersString(c.Voters),
				"node.id "+strconv.Itoa(int(c.NodeID))+" is a voter, so its process.roles must include controller (it is "+roles+")")
		case c.ControllerListener != "" || c.controllerListeners[c.ControllerListenerName] != "":
			return invalid(KeyListeners, c.listenersString(), "a broker-only node (process.roles=broker) must not have the controller listener "+
				c.ControllerListenerName+" in listeners")
		}
	}
	if !c.IsBroker() {
		if c.listenersSet && c.Listener != "" {
			return invalid(KeyListeners, c.listenersString(), "a controller-only node (process.roles=controller) has only the controller listener "+
				c.ControllerListenerName+"; it serves no clients")
		}
		return nil
	}
	if c.Listener == "" {
		return invalid(KeyListeners, c.listenersString(), "process.roles="+roles+" needs a PLAINTEXT://host:port client listener")
	}
	// As in Kafka, advertised.listeners defaults to listeners, and neither
	// may advertise 0.0.0.0 or ::, which no client can connect to.
	host, _, _ := net.SplitHostPort(c.advertised())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return invalid(KeyAdvertisedListeners, c.advertised(),
			"cannot advertise the non-routable meta-address "+host+"; set advertised.listeners to a routable address")
	}
	return nil
}

// IsBroker reports whether process.roles includes broker.
func (c Config) IsBroker() bool { return slices.Contains(c.ProcessRoles, RoleBroker) }

// IsController reports whether process.roles includes controller.
func (c Config) IsController() bool { return slices.Contains(c.ProcessRoles, RoleController) }

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

// quorumConfig is the Raft's share of the configuration; zero fields take
// core/quorum's defaults.
func (c Config) quorumConfig() quorum.Config {
	return quorum.Config{
		ElectionTimeout: time.Duration(c.ElectionTimeoutMs) * time.Millisecond,
		FetchTimeout:    time.Duration(c.FetchTimeoutMs) * time.Millisecond,
	}
}

// advertised is the effective advertised listener.
func (c Config) advertised() string {
	if c.AdvertisedListener != "" {
		return c.AdvertisedListener
	}
	return c.Listener
}

func invalid(key, value, why string) error {
	return fmt.Errorf("%w: %s=%q: %s", ErrInvalidConfig, key, value, why)
}

func splitList(value string) []string {
	var out []string
	for _, part := range strings.Split(value, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// base is c without the metadata quorum settings, for tests.
func (c Config) base() Config {
	return Config{NodeID: c.NodeID, Listener: c.Listener, AdvertisedListener: c.AdvertisedListener,
		LogDir: c.LogDir, SocketRequestMaxBytes: c.SocketRequestMaxBytes, MaxConnections: c.MaxConnections}
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
	if len(c.Voters) > 0 {
		return c.Voters
	}
	return []kraft.Voter{{ID: quorum.NodeID(c.NodeID), Addr: c.controllerListen()}}
}

type namedListener struct{ name, addr string }

// parseListenerList parses listeners: NAME://host:port entries (a bare
// host:port is PLAINTEXT), each name once.
func parseListenerList(key, value string) ([]namedListener, error) {
	list := splitList(value)
	if len(list) == 0 {
		return nil, invalid(key, value, "want PLAINTEXT://host:port")
	}
	var out []namedListener
	for _, entry := range list {
		name, addr := "PLAINTEXT", entry
		if n, rest, ok := strings.Cut(entry, "://"); ok {
			name, addr = strings.ToUpper(n), rest
		}
		for _, o := range out {
			if o.name == name {
				return nil, invalid(key, value, "listener "+name+" given twice")
			}
		}
		hp, err := parseHostPort(key, value, addr)
		if err != nil {
			return nil, err
		}
		out = append(out, namedListener{name: name, addr: hp})
	}
	return out, nil
}

func parseHostPort(key, value, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", invalid(key, value, err.Error())
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", invalid(key, value, "bad port "+strconv.Quote(port))
	}
	return net.JoinHostPort(host, strconv.FormatUint(p, 10)), nil
}

// parseVoters parses controller.quorum.voters: id@host:port, ...
func parseVoters(key, value string) ([]kraft.Voter, error) {
	list := splitList(value)
	if len(list) == 0 {
		return nil, invalid(key, value, "want id@host:port, e.g. "+DefaultControllerVoters)
	}
	m := map[quorum.NodeID]string{}
	for _, entry := range list {
		idStr, addr, ok := strings.Cut(entry, "@")
		if !ok {
			return nil, invalid(key, value, "entry "+strconv.Quote(entry)+" is not id@host:port")
		}
		id, err := strconv.ParseInt(strings.TrimSpace(idStr), 10, 32)
		if err != nil || id < 0 {
			return nil, invalid(key, value, "entry "+strconv.Quote(entry)+": bad node id")
		}
		if _, dup := m[quorum.NodeID(id)]; dup {
			return nil, invalid(key, value, "voter "+strconv.FormatInt(id, 10)+" listed twice")
		}
		hp, err := parseHostPort(key, value, strings.TrimSpace(addr))
		if err != nil {
			return nil, err
		}
		m[quorum.NodeID(id)] = hp
	}
	return kraft.ParseVoters(m), nil
}

func votersString(vs []kraft.Voter) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(int(v.ID)) + "@" + v.Addr
	}
	return strings.Join(parts, ",")
}

// parseListeners parses advertised.listeners and returns the one
// "host:port" it names. Only a single PLAINTEXT listener is supported yet
// (no TLS or SASL).
func parseListeners(key, value string) (string, error) {
	list := splitList(value)
	switch {
	case len(list) == 0:
		return "", invalid(key, value, "want PLAINTEXT://host:port")
	case len(list) > 1:
		return "", invalid(key, value, "only one listener is supported yet")
	}
	addr := list[0]
	if name, rest, ok := strings.Cut(addr, "://"); ok {
		if !strings.EqualFold(name, "PLAINTEXT") {
			return "", invalid(key, value, "only the PLAINTEXT listener is supported yet, not "+name)
		}
		addr = rest
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", invalid(key, value, err.Error())
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", invalid(key, value, "bad port "+strconv.Quote(port))
	}
	return net.JoinHostPort(host, strconv.FormatUint(p, 10)), nil
}

// Property is one key=value of a properties file, with the line it
// started on (for error messages).
type Property struct {
	Key, Value string
	Line       int
}

// ParseProperties reads Java-properties text as Kafka's server.properties
// uses it: one key=value (or key:value, or key value) per line; lines
// starting with # or ! are comments; surrounding whitespace is trimmed; a
// line ending in an odd number of backslashes continues on the next line;
// \t \n \r \f \uXXXX and \<char> escapes are decoded. Properties come back
// in file order (a later duplicate wins when applied in order).
func ParseProperties(r io.Reader) ([]Property, error) {
	var props []Property
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxPropertiesLineBytes)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		start := lineNo
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continues(line) && sc.Scan() {
			lineNo++
			line = line[:len(line)-1] + strings.TrimLeft(sc.Text(), " \t\f")
		}
		if continues(line) {
			line = line[:len(line)-1] // continuation at EOF: drop the backslash
		}
		key, value := splitProperty(line)
		k, err := unescape(key)
		if err != nil {
			return nil, fmt.Errorf("line %d: key %q: %w", start, key, err)
		}
		v, err := unescape(value)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", start, k, err)
		}
		props = append(props, Property{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v), Line: start})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", lineNo+1, err)
	}
	return props, nil
}

// maxPropertiesLineBytes bounds one physical line of a properties file.
const maxPropertiesLineBytes = 1 << 20

// continues reports whether line ends in an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits at the first unescaped '=', ':' or whitespace; an
// '=' or ':' after whitespace separators is part of the separator.
func splitProperty(line string) (key, value string) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i >= len(line) {
		return line, ""
	}
	key = line[:i]
	rest := strings.TrimLeft(line[i:], " \t\f")
	if line[i] == '=' || line[i] == ':' {
		rest = strings.TrimLeft(line[i+1:], " \t\f")
	} else if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if len(s)-(i+1) < 4 {
				return "", fmt.Errorf("malformed \\u escape %q", s[i-1:])
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\u escape %q", s[i-1:i+5])
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
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
	props, err := ParseProperties(f)
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
