package node

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/controller"
	"github.com/strata-log/strata/core/group"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/replica"
	"github.com/strata-log/strata/core/txn"
	"github.com/strata-log/strata/core/work"
)

// Config keys of the broker's topic defaults and bounds, named as in
// Kafka. The topic defaults among them (log.segment.bytes, ...) take the
// topic key they set from the table of topic configs (core/config, its
// ServerDefault column), so that mapping lives in one place.
const (
	KeyNumPartitions               = "num.partitions"
	KeyDefaultReplicationFactor    = "default.replication.factor"
	KeyAutoCreateTopicsEnable      = "auto.create.topics.enable"
	KeyLogRetentionMs              = "log.retention.ms"
	KeyLogRetentionMinutes         = "log.retention.minutes"
	KeyLogRetentionHours           = "log.retention.hours"
	KeyLogRollMs                   = "log.roll.ms"
	KeyLogRollHours                = "log.roll.hours"
	KeyLogRetentionCheckIntervalMs = "log.retention.check.interval.ms"
	KeyProducerIDExpirationMs      = "producer.id.expiration.ms"
	KeyReplicaLagTimeMaxMs         = "replica.lag.time.max.ms"
	KeyOffsetsTopicPartitions      = "offsets.topic.num.partitions"
	KeyOffsetsTopicReplication     = "offsets.topic.replication.factor"
	KeyGroupMinSessionTimeoutMs    = "group.min.session.timeout.ms"
	KeyGroupMaxSessionTimeoutMs    = "group.max.session.timeout.ms"
	KeyGroupInitialRebalanceDelay  = "group.initial.rebalance.delay.ms"
	KeyGroupMaxSize                = "group.max.size"
	// The consumer protocol's (KIP-848) group keys.
	KeyConsumerSessionTimeoutMs       = "group.consumer.session.timeout.ms"
	KeyConsumerMinSessionTimeoutMs    = "group.consumer.min.session.timeout.ms"
	KeyConsumerMaxSessionTimeoutMs    = "group.consumer.max.session.timeout.ms"
	KeyConsumerHeartbeatIntervalMs    = "group.consumer.heartbeat.interval.ms"
	KeyConsumerMinHeartbeatIntervalMs = "group.consumer.min.heartbeat.interval.ms"
	KeyConsumerMaxHeartbeatIntervalMs = "group.consumer.max.heartbeat.interval.ms"
	KeyConsumerMaxSize                = "group.consumer.max.size"
	KeyConsumerAssignors              = "group.consumer.assignors"
	KeyConsumerMigrationPolicy        = "group.consumer.migration.policy"
	KeyOffsetsRetentionMinutes        = "offsets.retention.minutes"
	KeyOffsetsRetentionCheckMs        = "offsets.retention.check.interval.ms"
	// The transaction coordinator's keys.
	KeyTxnStatePartitions        = "transaction.state.log.num.partitions"
	KeyTxnStateReplication       = "transaction.state.log.replication.factor"
	KeyTxnMaxTimeoutMs           = "transaction.max.timeout.ms"
	KeyTransactionalIDExpiration = "transactional.id.expiration.ms"
	KeyTxnAbortCheckIntervalMs   = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
	KeyTxnPartitionVerification  = "transaction.partition.verification.enable"
	// KeyTransactionVersion is Strata's own: the transaction.version
	// feature level, which Kafka finalizes with kafka-features.sh.
	KeyTransactionVersion          = "strata.transaction.version"
	KeyBrokerSessionTimeoutMs      = "broker.session.timeout.ms"
	KeyAutoLeaderRebalanceEnable   = "auto.leader.rebalance.enable"
	KeyLeaderImbalanceCheckSeconds = "leader.imbalance.check.interval.seconds"
	KeyQueuedMaxRequestBytes       = "queued.max.request.bytes"
	// The listeners' connection bounds (issue 22): Kafka's keys, and
	// Strata's progress rule of a request frame (node/netread.go).
	KeyConnectionsMaxIdleMs         = "connections.max.idle.ms"
	KeyMaxConnectionsPerIP          = "max.connections.per.ip"
	KeyMaxConnectionsPerIPOverrides = "max.connections.per.ip.overrides"
	KeySocketRequestReadTimeoutMs   = "strata.socket.request.read.timeout.ms"
	KeySocketRequestMinBytesPerSec  = "strata.socket.request.min.bytes.per.sec"
	// KeyFetchSendfile is Strata's own: whether fetched records go out
	// with sendfile(2) (zero copy) or through user space.
	KeyFetchSendfile = "strata.fetch.sendfile.enable"
	// KeyRequestWorkers is Strata's own: the goroutines that run the
	// CPU-heavy part of requests off the event loop (record validation,
	// large answers); 0 means GOMAXPROCS-1 (at least 1). KeyRequestOffload false runs
	// that work on the loop (for measuring what the workers give).
	KeyRequestWorkers                 = "strata.request.workers"
	KeyRequestOffload                 = "strata.request.offload.enable"
	KeyMaxIncrementalFetchSessionSlot = "max.incremental.fetch.session.cache.slots"
)

// Defaults of those keys (Kafka's, where Strata does not bound more).
const (
	DefaultNumPartitions            = controller.DefaultNumPartitions
	DefaultReplicationFactor        = controller.DefaultReplicationFactor
	DefaultRetentionCheckIntervalMs = int64(replica.DefaultRetentionCheckInterval / time.Millisecond)
	DefaultProducerIDExpirationMs   = int64(producer.DefaultExpirationTime / time.Millisecond)
	DefaultReplicaLagTimeMaxMs      = int64(replica.DefaultReplicaLagTime / time.Millisecond)

	DefaultOffsetsTopicPartitions        = broker.DefaultOffsetsPartitions
	DefaultOffsetsTopicReplicationFactor = broker.DefaultOffsetsReplicationFactor
	DefaultGroupMinSessionTimeoutMs      = int64(group.DefaultMinSessionTimeout / time.Millisecond)
	DefaultGroupMaxSessionTimeoutMs      = int64(group.DefaultMaxSessionTimeout / time.Millisecond)
	DefaultGroupInitialRebalanceDelayMs  = int64(group.DefaultInitialRebalanceDelay / time.Millisecond)
	DefaultGroupMaxSize                  = int64(math.MaxInt32)
	DefaultConsumerSessionTimeoutMs      = int64(group.DefaultConsumerSessionTimeout / time.Millisecond)
	DefaultConsumerMinSessionTimeoutMs   = int64(45000)
	DefaultConsumerMaxSessionTimeoutMs   = int64(60000)
	DefaultConsumerHeartbeatIntervalMs   = int64(group.DefaultConsumerHeartbeatInterval / time.Millisecond)
	DefaultConsumerMinHeartbeatMs        = int64(5000)
	DefaultConsumerMaxHeartbeatMs        = int64(15000)
	DefaultOffsetsRetentionMinutes       = int64(group.DefaultOffsetsRetention / time.Minute)
	DefaultOffsetsRetentionCheckMs       = int64(group.DefaultRetentionCheck / time.Millisecond)
	DefaultTxnStatePartitions            = broker.DefaultTxnStatePartitions
	DefaultTxnStateReplicationFactor     = broker.DefaultTxnStateReplicationFactor
	DefaultTxnMaxTimeoutMs               = int64(txn.DefaultMaxTimeout / time.Millisecond)
	DefaultTransactionalIDExpirationMs   = int64(txn.DefaultIDExpiration / time.Millisecond)
	DefaultTxnAbortCheckIntervalMs       = int64(txn.DefaultAbortCheckInterval / time.Millisecond)
	DefaultBrokerSessionTimeoutMs        = int64(controller.DefaultSessionTimeout / time.Millisecond)
	// DefaultQueuedMaxRequestBytes is queued.max.request.bytes. Kafka's
	// default is -1 (unbounded); Strata always bounds the request bytes
	// it holds (broker.DefaultMaxInflightRequestBytes, 64 MiB).
	DefaultQueuedMaxRequestBytes = broker.DefaultMaxInflightRequestBytes
	// DefaultConnectionsMaxIdleMs is connections.max.idle.ms, Kafka's
	// default (10 minutes).
	DefaultConnectionsMaxIdleMs = int64(broker.DefaultConnectionsMaxIdle / time.Millisecond)
	// DefaultMaxConnectionsPerIP is max.connections.per.ip, Kafka's
	// default (2147483647: no bound beyond max.connections).
	DefaultMaxConnectionsPerIP = math.MaxInt32
	// DefaultSocketRequestReadTimeoutMs and
	// DefaultSocketRequestMinBytesPerSec are the progress rule of a
	// request frame (DefaultFrameReadTimeout, DefaultFrameMinBytesPerSec).
	DefaultSocketRequestReadTimeoutMs  = int64(DefaultFrameReadTimeout / time.Millisecond)
	DefaultSocketRequestMinBytesPerSec = DefaultFrameMinBytesPerSec
	// DefaultFetchSessionCacheSlots is
	// max.incremental.fetch.session.cache.slots; 0 disables sessions.
	DefaultFetchSessionCacheSlots = broker.DefaultMaxFetchSessions
	// maxPartitionsPerTopic bounds num.partitions, in partitions: one
	// controller batch holds a topic's records.
	maxPartitionsPerTopic = controller.DefaultMaxRecordsPerBatch - 1
	// maxLogRetentionCheckIntervalMs bounds
	// log.retention.check.interval.ms, in milliseconds (one day): a
	// larger value is a typo, not a choice.
	maxLogRetentionCheckIntervalMs = 24 * 3_600_000
)

// configKey is one server.properties key: the only place that names it,
// gives its default, says what it means and parses it. docs/operations.md
// lists every key of configKeys (a test checks both ways).
type configKey struct {
	name string
	// def is the default as DescribeConfigs reports it and the docs show
	// it; "" when there is none or it is derived from other keys.
	def string
	typ kmsg.ConfigType
	// doc is a one-line description (DescribeConfigs' documentation).
	doc string
	// set validates value (trimmed) and applies it to c; its error says
	// what is wanted, and Set wraps it with the key.
	set func(c *Config, value string) error
}

// configKeys is the table, in the order docs/operations.md lists them.
var configKeys = []configKey{
	{KeyNodeID, strconv.Itoa(DefaultNodeID), kmsg.ConfigTypeInt, "This node's id in the cluster.", setNodeID},
	{KeyProcessRoles, DefaultProcessRoles, kmsg.ConfigTypeList, "The roles this node runs: broker, controller or both.", setProcessRoles},
	{KeyListeners, DefaultListeners, kmsg.ConfigTypeList, "The client (PLAINTEXT) and controller listeners.", setListeners},
	{KeyControllerVoters, "", kmsg.ConfigTypeList, "The metadata quorum's voters, id@host:port,...", setVoters},
	{KeyControllerListeners, DefaultControllerListenerName, kmsg.ConfigTypeList, "The name of the controller listener in listeners.", setControllerListenerName},
	{KeyElectionTimeoutMs, strconv.Itoa(DefaultElectionTimeoutMs), kmsg.ConfigTypeInt, "How long a voter without a leader waits before an election, in milliseconds.", setElectionTimeout},
	{KeyFetchTimeoutMs, strconv.Itoa(DefaultFetchTimeoutMs), kmsg.ConfigTypeInt, "How long a voter goes without a fetch from its leader before an election, in milliseconds.", setFetchTimeout},
	{KeyAdvertisedListeners, "", kmsg.ConfigTypeString, "The address given to clients in Metadata.", setAdvertisedListeners},
	{KeyLogDirs, DefaultLogDir, kmsg.ConfigTypeString, "The data directory (one).", setLogDir},
	{KeyLogDir, DefaultLogDir, kmsg.ConfigTypeString, "The data directory when log.dirs is not set.", setLogDir},
	{KeySocketRequestMaxBytes, strconv.Itoa(DefaultSocketRequestMaxBytes), kmsg.ConfigTypeInt, "The largest request frame, in bytes.", setSocketRequestMaxBytes},
	{KeyMaxConnections, strconv.Itoa(DefaultMaxConnections), kmsg.ConfigTypeInt, "The most client connections served at once.", setMaxConnections},
	{KeyMaxConnectionsPerIP, strconv.Itoa(DefaultMaxConnectionsPerIP), kmsg.ConfigTypeInt,
		"The most connections from one IP address on each listener; a new one past it is closed at once. 0 admits only the hosts of max.connections.per.ip.overrides.",
		setInt(0, math.MaxInt32, func(c *Config, n int64) { c.MaxConnectionsPerIP = int(n) })},
	{KeyMaxConnectionsPerIPOverrides, "", kmsg.ConfigTypeString,
		"Per-host exceptions to max.connections.per.ip: host:count,... (a host name is resolved at start).", setMaxConnectionsPerIPOverrides},
	{KeyConnectionsMaxIdleMs, strconv.FormatInt(DefaultConnectionsMaxIdleMs, 10), kmsg.ConfigTypeLong,
		"How long a connection with no request in flight and no bytes moving is kept, in milliseconds.",
		setInt(1, math.MaxInt32*int64(1000), func(c *Config, n int64) { c.ConnectionsMaxIdleMs = n })},
	{KeySocketRequestReadTimeoutMs, strconv.FormatInt(DefaultSocketRequestReadTimeoutMs, 10), kmsg.ConfigTypeLong,
		"A request frame that has begun to arrive must gain strata.socket.request.min.bytes.per.sec times this many milliseconds of bytes (or its rest) in every such interval, or its connection is closed.",
		setInt(100, maxTimeoutMs, func(c *Config, n int64) { c.SocketRequestReadTimeoutMs = n })},
	{KeySocketRequestMinBytesPerSec, strconv.Itoa(DefaultSocketRequestMinBytesPerSec), kmsg.ConfigTypeInt,
		"The slowest a request frame may arrive, in bytes per second, measured over strata.socket.request.read.timeout.ms.",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.SocketRequestMinBytesPerSec = int(n) })},
	{KeyQueuedMaxRequestBytes, strconv.Itoa(DefaultQueuedMaxRequestBytes), kmsg.ConfigTypeLong,
		"The request bytes held, across connections, both while they arrive (the readers stop past it) and while they are handled (connections are paused past it).", setQueuedMaxRequestBytes},
	{KeyMaxIncrementalFetchSessionSlot, strconv.Itoa(DefaultFetchSessionCacheSlots), kmsg.ConfigTypeInt,
		"The fetch sessions (KIP-227) kept at once; 0 disables them.", setFetchSessionSlots},
	{KeyNumPartitions, strconv.Itoa(int(DefaultNumPartitions)), kmsg.ConfigTypeInt,
		"The partitions of a topic created with -1 partitions or auto-created.", setNumPartitions},
	{KeyDefaultReplicationFactor, strconv.Itoa(int(DefaultReplicationFactor)), kmsg.ConfigTypeShort,
		"The replication factor of a topic created with -1 or auto-created.", setDefaultReplicationFactor},
	{KeyAutoCreateTopicsEnable, "true", kmsg.ConfigTypeBoolean,
		"Whether a Metadata request for a missing topic creates it.", setAutoCreateTopics},
	{KeyLogRetentionMs, "", kmsg.ConfigTypeLong, "How long records are kept, in milliseconds (-1: forever); wins over .minutes and .hours.", setRetention(0)},
	{KeyLogRetentionMinutes, "", kmsg.ConfigTypeInt, "How long records are kept, in minutes; wins over .hours.", setRetention(1)},
	{KeyLogRetentionHours, "168", kmsg.ConfigTypeInt, "How long records are kept, in hours.", setRetention(2)},
	topicDefault("log.retention.bytes"),
	topicDefault("log.segment.bytes"),
	{KeyLogRollMs, "", kmsg.ConfigTypeLong, "The age at which a segment rolls, in milliseconds; wins over log.roll.hours.", setRoll(0)},
	{KeyLogRollHours, "168", kmsg.ConfigTypeInt, "The age at which a segment rolls, in hours.", setRoll(1)},
	topicDefault("log.cleanup.policy"),
	topicDefault("log.cleaner.delete.retention.ms"),
	topicDefault("log.cleaner.min.compaction.lag.ms"),
	topicDefault("log.cleaner.min.cleanable.ratio"),
	topicDefault("message.max.bytes"),
	topicDefault("log.index.interval.bytes"),
	topicDefault("log.index.size.max.bytes"),
	topicDefault("log.flush.interval.messages"),
	topicDefault("log.flush.interval.ms"),
	topicDefault("log.message.timestamp.type"),
	topicDefault("log.message.timestamp.before.max.ms"),
	topicDefault("log.message.timestamp.after.max.ms"),
	topicDefault("min.insync.replicas"),
	topicDefault("strata.metrics.partition.enable"),
	{KeyLogRetentionCheckIntervalMs, strconv.FormatInt(DefaultRetentionCheckIntervalMs, 10), kmsg.ConfigTypeLong,
		"How often logs are checked for segments to delete and cleanings to start, in milliseconds.", setRetentionCheckInterval},
	{KeyProducerIDExpirationMs, strconv.FormatInt(DefaultProducerIDExpirationMs, 10), kmsg.ConfigTypeInt,
		"How long an idle idempotent producer's state is kept, in milliseconds.", setProducerIDExpiration},
	{KeyOffsetsTopicPartitions, strconv.Itoa(DefaultOffsetsTopicPartitions), kmsg.ConfigTypeInt,
		"The partitions of __consumer_offsets when it is created.", setInt(1, maxPartitionsPerTopic, func(c *Config, n int64) { c.OffsetsTopicPartitions = int32(n) })},
	{KeyOffsetsTopicReplication, strconv.Itoa(DefaultOffsetsTopicReplicationFactor), kmsg.ConfigTypeShort,
		"The replication factor of __consumer_offsets when it is created (capped at the brokers registered then).",
		setInt(1, 1<<14, func(c *Config, n int64) { c.OffsetsTopicReplicationFactor = int16(n) })},
	{KeyGroupMinSessionTimeoutMs, strconv.FormatInt(DefaultGroupMinSessionTimeoutMs, 10), kmsg.ConfigTypeInt,
		"The shortest session timeout a group member may ask for, in milliseconds.",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.GroupMinSessionTimeoutMs = n })},
	{KeyGroupMaxSessionTimeoutMs, strconv.FormatInt(DefaultGroupMaxSessionTimeoutMs, 10), kmsg.ConfigTypeInt,
		"The longest session timeout a group member may ask for, in milliseconds.",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.GroupMaxSessionTimeoutMs = n })},
	{KeyGroupInitialRebalanceDelay, strconv.FormatInt(DefaultGroupInitialRebalanceDelayMs, 10), kmsg.ConfigTypeInt,
		"How long the first rebalance of an empty group waits for more members, in milliseconds.",
		setInt(0, maxTimeoutMs, func(c *Config, n int64) { c.GroupInitialRebalanceDelayMs = n })},
	{KeyOffsetsRetentionMinutes, strconv.FormatInt(DefaultOffsetsRetentionMinutes, 10), kmsg.ConfigTypeInt,
		"How long a group's committed offsets are kept once it is empty (a simple commit's: after it), in minutes.",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.OffsetsRetentionMinutes = n })},
	{KeyOffsetsRetentionCheckMs, strconv.FormatInt(DefaultOffsetsRetentionCheckMs, 10), kmsg.ConfigTypeLong,
		"How often the group coordinator looks for expired offsets, in milliseconds.",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.OffsetsRetentionCheckIntervalMs = n })},
	{KeyTxnStatePartitions, strconv.Itoa(DefaultTxnStatePartitions), kmsg.ConfigTypeInt,
		"The partitions of __transaction_state when it is created.", setInt(1, maxPartitionsPerTopic, func(c *Config, n int64) { c.TxnStatePartitions = int32(n) })},
	{KeyTxnStateReplication, strconv.Itoa(DefaultTxnStateReplicationFactor), kmsg.ConfigTypeShort,
		"The replication factor of __transaction_state when it is created (capped at the brokers registered then).",
		setInt(1, 1<<14, func(c *Config, n int64) { c.TxnStateReplicationFactor = int16(n) })},
	{KeyTxnMaxTimeoutMs, strconv.FormatInt(DefaultTxnMaxTimeoutMs, 10), kmsg.ConfigTypeInt,
		"The longest transaction.timeout.ms a transactional producer may ask for, in milliseconds.",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.TxnMaxTimeoutMs = n })},
	{KeyTransactionalIDExpiration, strconv.FormatInt(DefaultTransactionalIDExpirationMs, 10), kmsg.ConfigTypeInt,
		"How long a transactional id without a transaction in progress is kept after its last update, in milliseconds.",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.TransactionalIDExpirationMs = n })},
	{KeyTxnAbortCheckIntervalMs, strconv.FormatInt(DefaultTxnAbortCheckIntervalMs, 10), kmsg.ConfigTypeInt,
		"How often the transaction coordinator aborts timed-out transactions and removes expired ids, in milliseconds.",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.TxnAbortCheckIntervalMs = n })},
	{KeyTxnPartitionVerification, "true", kmsg.ConfigTypeBoolean,
		"Whether a partition leader asks the transaction coordinator that a producer's first transactional batch there belongs to its transaction (KIP-890 part 1).",
		setTxnPartitionVerification},
	{KeyTransactionVersion, "1", kmsg.ConfigTypeShort,
		"The transaction.version feature the brokers finalize (Kafka sets it with kafka-features.sh): 2 lets clients use KIP-890 part 2 (partitions added through Produce v12+ and TxnOffsetCommit v5+, an epoch bump at every EndTxn), 1 keeps them on AddPartitionsToTxn and AddOffsetsToTxn. The same on every broker.",
		setInt(1, 2, func(c *Config, n int64) { c.TransactionVersion = int16(n) })},
	{KeyGroupMaxSize, strconv.FormatInt(DefaultGroupMaxSize, 10), kmsg.ConfigTypeInt,
		"The most members a group may have.", setInt(1, math.MaxInt32, func(c *Config, n int64) { c.GroupMaxSize = n })},
	{KeyConsumerSessionTimeoutMs, strconv.FormatInt(DefaultConsumerSessionTimeoutMs, 10), kmsg.ConfigTypeInt,
		"How long a consumer-protocol (KIP-848) group member may go without a heartbeat before it is removed, in milliseconds (within the min and max keys).",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.ConsumerSessionTimeoutMs = n })},
	{KeyConsumerMinSessionTimeoutMs, strconv.FormatInt(DefaultConsumerMinSessionTimeoutMs, 10), kmsg.ConfigTypeInt,
		"The lowest group.consumer.session.timeout.ms allowed, in milliseconds.",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.ConsumerMinSessionTimeoutMs = n })},
	{KeyConsumerMaxSessionTimeoutMs, strconv.FormatInt(DefaultConsumerMaxSessionTimeoutMs, 10), kmsg.ConfigTypeInt,
		"The highest group.consumer.session.timeout.ms allowed, in milliseconds.",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.ConsumerMaxSessionTimeoutMs = n })},
	{KeyConsumerHeartbeatIntervalMs, strconv.FormatInt(DefaultConsumerHeartbeatIntervalMs, 10), kmsg.ConfigTypeInt,
		"How often consumer-protocol (KIP-848) group members are told to heartbeat, in milliseconds (within the min and max keys, and below the session timeout).",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.ConsumerHeartbeatIntervalMs = n })},
	{KeyConsumerMinHeartbeatIntervalMs, strconv.FormatInt(DefaultConsumerMinHeartbeatMs, 10), kmsg.ConfigTypeInt,
		"The lowest group.consumer.heartbeat.interval.ms allowed, in milliseconds.",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.ConsumerMinHeartbeatIntervalMs = n })},
	{KeyConsumerMaxHeartbeatIntervalMs, strconv.FormatInt(DefaultConsumerMaxHeartbeatMs, 10), kmsg.ConfigTypeInt,
		"The highest group.consumer.heartbeat.interval.ms allowed, in milliseconds.",
		setInt(1, math.MaxInt32, func(c *Config, n int64) { c.ConsumerMaxHeartbeatIntervalMs = n })},
	{KeyConsumerMaxSize, strconv.FormatInt(DefaultGroupMaxSize, 10), kmsg.ConfigTypeInt,
		"The most members a consumer-protocol (KIP-848) group may have.", setInt(1, math.MaxInt32, func(c *Config, n int64) { c.ConsumerMaxSize = n })},
	{KeyConsumerAssignors, strings.Join(group.Assignors(), ","), kmsg.ConfigTypeList,
		"The server-side assignors consumer-protocol (KIP-848) members may ask for, the first the default: uniform, range.", setConsumerAssignors},
	{KeyConsumerMigrationPolicy, string(group.DefaultMigrationPolicy), kmsg.ConfigTypeString,
		"Whether non-empty groups move between the classic and the consumer protocol online: disabled, upgrade (classic to consumer), downgrade (consumer to classic), bidirectional.", setConsumerMigrationPolicy},
	{KeyReplicaLagTimeMaxMs, strconv.FormatInt(DefaultReplicaLagTimeMaxMs, 10), kmsg.ConfigTypeLong,
		"How long a follower may go without catching up with its leader before it leaves the ISR, in milliseconds.", setMillis(func(c *Config) *int64 { return &c.ReplicaLagTimeMaxMs })},
	{KeyAutoLeaderRebalanceEnable, "true", kmsg.ConfigTypeBoolean,
		"Whether the active controller moves leaderships back to preferred replicas every leader.imbalance.check.interval.seconds.", setAutoLeaderRebalance},
	{KeyLeaderImbalanceCheckSeconds, "300", kmsg.ConfigTypeLong,
		"How often the active controller moves leaderships back to preferred replicas, in seconds.", setLeaderImbalanceCheck},
	{KeyBrokerSessionTimeoutMs, strconv.FormatInt(DefaultBrokerSessionTimeoutMs, 10), kmsg.ConfigTypeInt,
		"How long the controller waits for a broker's heartbeat before it fences the broker, in milliseconds.", setMillis(func(c *Config) *int64 { return &c.BrokerSessionTimeoutMs })},
	{KeyFetchSendfile, "true", kmsg.ConfigTypeBoolean,
		"Strata's own: send fetched records with sendfile (zero copy); false reads them into user space and writes them (for measuring what zero copy saves).", setFetchSendfile},
	{KeyRequestWorkers, "0", kmsg.ConfigTypeInt,
		"Strata's own: the worker goroutines that validate produced batches and encode large answers off the event loop, shared fairly between connections; 0 means one per CPU but one (GOMAXPROCS-1, at least 1), which leaves a CPU to the event loop. One more worker runs only light connections' work.",
		setInt(0, 1024, func(c *Config, n int64) { c.RequestWorkers = int(n) })},
	{KeyRequestOffload, "true", kmsg.ConfigTypeBoolean,
		"Strata's own: run request validation and large answers on the workers; false runs them on the event loop (for measuring what the workers give).", setRequestOffload},
	{KeyMetricsListener, DefaultMetricsListener, kmsg.ConfigTypeString,
		"The HTTP address (host:port) of /metrics, /healthz, /readyz and /debug/pprof; empty turns it off.", setMetricsListener},
	{KeyMetricsEnable, "true", kmsg.ConfigTypeBoolean,
		"Strata's own: count metrics; false counts nothing (for measuring what metrics cost).", setMetricsEnable},
	{KeyPprofEnable, "false", kmsg.ConfigTypeBoolean,
		"Strata's own: serve Go's profiles under /debug/pprof/ on the metrics listener.", setPprofEnable},
}

// ConfigKey describes one server.properties key for command lines and
// tools.
type ConfigKey struct {
	Name, Default, Doc string
}

// ConfigKeys lists every server.properties key, in the docs' order.
func ConfigKeys() []ConfigKey {
	out := make([]ConfigKey, len(configKeys))
	for i, k := range configKeys {
		out[i] = ConfigKey{Name: k.name, Default: k.def, Doc: k.doc}
	}
	return out
}

// configKeyIndex finds a row of configKeys by name (only looked up).
var configKeyIndex = func() map[string]*configKey {
	m := make(map[string]*configKey, len(configKeys))
	for i := range configKeys {
		m[configKeys[i].name] = &configKeys[i]
	}
	return m
}()

// topicDefault is the row of a broker key that sets a topic config's
// default: the topic key, default, type and validation come from the
// table of topic configs (core/config: the row whose ServerDefault is
// key), whose valid values are the ones the partitions can apply.
func topicDefault(key string) configKey {
	def, ok := config.TopicRowByServerDefault(key)
	if !ok {
		panic("node: no topic config has the server default " + key) // a table bug, caught by every test
	}
	topicKey := def.Name
	return configKey{name: key, def: def.Default, typ: def.Type, doc: def.Doc + " (the default of the topic config " + topicKey + ")",
		set: func(c *Config, value string) error {
			if err := def.Validate(value); err != nil {
				return err
			}
			c.topicDefaults = maps.Clone(c.topicDefaults)
			if c.topicDefaults == nil {
				c.topicDefaults = map[string]string{}
			}
			c.topicDefaults[topicKey] = value
			return nil
		}}
}

// Set applies one key=value. known is false for keys this version does not
// act on (the caller logs them as ignored); err, wrapping
// ErrInvalidConfig, names the key when the value is invalid.
func (c *Config) Set(key, value string) (known bool, err error) {
	value = strings.TrimSpace(value)
	k, ok := configKeyIndex[key]
	if !ok {
		return false, nil
	}
	if err := k.set(c, value); err != nil {
		if errors.Is(err, ErrInvalidConfig) {
			return true, err // already names the key
		}
		return true, invalid(key, value, err.Error())
	}
	c.given = maps.Clone(c.given)
	if c.given == nil {
		c.given = map[string]string{}
	}
	c.given[key] = value
	return true, nil
}

// Setters of the keys that existed before the table; each is the former
// switch case.

func setNodeID(c *Config, value string) error {
	id, err := strconv.ParseInt(value, 10, 32)
	if err != nil || id < 0 {
		return fmt.Errorf("want a non-negative 32-bit integer")
	}
	c.NodeID = int32(id)
	return nil
}

func setListeners(c *Config, value string) error {
	named, err := parseListenerList(KeyListeners, value)
	if err != nil {
		return err
	}
	// Which entries a node needs depends on process.roles and
	// controller.listener.names, which may come later: Validate checks
	// them.
	c.listenersSet = true
	c.Listener, c.ControllerListener = "", ""
	c.listenerNames = nil
	c.controllerListeners = map[string]string{}
	for _, nl := range named {
		if nl.name == "PLAINTEXT" {
			c.Listener = nl.addr
			continue
		}
		c.listenerNames = append(c.listenerNames, nl.name)
		c.controllerListeners[nl.name] = nl.addr
	}
	return nil
}

// defaultConsumerAssignors is group.consumer.assignors' default: every
// assignor, uniform first.
func defaultConsumerAssignors() []string { return group.Assignors() }

func setConsumerAssignors(c *Config, value string) error {
	var names []string
	for _, a := range splitList(value) {
		a = strings.ToLower(a)
		switch {
		case !slices.Contains(group.Assignors(), a):
			return fmt.Errorf("unknown assignor %q; want some of %s", a, strings.Join(group.Assignors(), ", "))
		case slices.Contains(names, a):
			return fmt.Errorf("assignor %q given twice", a)
		}
		names = append(names, a)
	}
	if len(names) == 0 {
		return fmt.Errorf("want at least one of %s", strings.Join(group.Assignors(), ", "))
	}
	c.ConsumerAssignors = names
	return nil
}

func setConsumerMigrationPolicy(c *Config, value string) error {
	p, err := group.ParseMigrationPolicy(value)
	if err != nil {
		return err
	}
	c.ConsumerMigrationPolicy = p
	return nil
}

func setProcessRoles(c *Config, value string) error {
	var broker, ctrl bool
	for _, r := range splitList(value) {
		role := strings.ToLower(r)
		if (role == RoleBroker && broker) || (role == RoleController && ctrl) {
			return fmt.Errorf("role %q given twice", r)
		}
		switch role {
		case RoleBroker:
			broker = true
		case RoleController:
			ctrl = true
		default:
			return fmt.Errorf("unknown role %q; want broker, controller or broker,controller", r)
		}
	}
	if !broker && !ctrl {
		return fmt.Errorf("want broker, controller or broker,controller")
	}
	c.ProcessRoles = nil
	if broker {
		c.ProcessRoles = append(c.ProcessRoles, RoleBroker)
	}
	if ctrl {
		c.ProcessRoles = append(c.ProcessRoles, RoleController)
	}
	return nil
}

var (
	setElectionTimeout = quorumTimeout(func(c *Config, ms int) { c.ElectionTimeoutMs = ms })
	setFetchTimeout    = quorumTimeout(func(c *Config, ms int) { c.FetchTimeoutMs = ms })
)

func quorumTimeout(set func(*Config, int)) func(*Config, string) error {
	return func(c *Config, value string) error {
		ms, err := strconv.ParseInt(value, 10, 32)
		if err != nil || ms < 1 || ms > maxQuorumTimeoutMs {
			return fmt.Errorf("want milliseconds, 1 to %d", maxQuorumTimeoutMs)
		}
		set(c, int(ms))
		return nil
	}
}

func setVoters(c *Config, value string) error {
	voters, err := parseVoters(KeyControllerVoters, value)
	if err != nil {
		return err
	}
	c.Voters = voters
	return nil
}

func setControllerListenerName(c *Config, value string) error {
	names := splitList(value)
	switch {
	case len(names) == 0:
		return fmt.Errorf("want a listener name, e.g. CONTROLLER")
	case len(names) > 1:
		return fmt.Errorf("only one controller listener is supported yet")
	case strings.EqualFold(names[0], "PLAINTEXT"):
		return fmt.Errorf("the controller listener must not be the PLAINTEXT client listener")
	}
	c.ControllerListenerName = strings.ToUpper(names[0])
	return nil
}

func setAdvertisedListeners(c *Config, value string) error {
	l, err := parseListeners(KeyAdvertisedListeners, value)
	if err != nil {
		return err
	}
	c.AdvertisedListener = l
	return nil
}

func setLogDir(c *Config, value string) error {
	dirs := splitList(value)
	switch {
	case len(dirs) == 0:
		return fmt.Errorf("want a directory")
	case len(dirs) > 1:
		return fmt.Errorf("only one log directory is supported yet")
	}
	c.LogDir = dirs[0]
	return nil
}

func setSocketRequestMaxBytes(c *Config, value string) error {
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil || n < 1 || n > math.MaxInt32 {
		return fmt.Errorf("want a positive 32-bit integer (bytes)")
	}
	c.SocketRequestMaxBytes = int(n)
	return nil
}

func setMaxConnections(c *Config, value string) error {
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil || n < 1 {
		return fmt.Errorf("want a positive 32-bit integer")
	}
	c.MaxConnections = int(n)
	return nil
}

// setMaxConnectionsPerIPOverrides parses Kafka's host:count,... list.
// Hosts are kept as given; Start resolves names to addresses.
func setMaxConnectionsPerIPOverrides(c *Config, value string) error {
	overrides := map[string]int{}
	for _, entry := range splitList(value) {
		i := strings.LastIndexByte(entry, ':')
		if i <= 0 {
			return fmt.Errorf("want host:count,... (an entry %q has no host or count)", entry)
		}
		host := strings.TrimSpace(entry[:i])
		n, err := strconv.ParseInt(strings.TrimSpace(entry[i+1:]), 10, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("want host:count,... with a count of 0 or more (entry %q)", entry)
		}
		if _, dup := overrides[host]; dup {
			return fmt.Errorf("host %q listed twice", host)
		}
		overrides[host] = int(n)
	}
	c.MaxConnectionsPerIPOverrides = overrides
	return nil
}

// Setters of the topic defaults' companions and the broker's bounds.

func setQueuedMaxRequestBytes(c *Config, value string) error {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 1 || n > math.MaxInt32*int64(16) {
		return fmt.Errorf("want a positive number of bytes up to %d (Kafka's -1, unbounded, is refused: Strata always bounds the request bytes it holds)",
			math.MaxInt32*int64(16))
	}
	c.QueuedMaxRequestBytes = n
	return nil
}

func setFetchSessionSlots(c *Config, value string) error {
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil || n < 0 {
		return fmt.Errorf("want a number of sessions, 0 or more (0 disables fetch sessions)")
	}
	c.FetchSessionCacheSlots = int(n)
	return nil
}

func setNumPartitions(c *Config, value string) error {
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil || n < 1 || n > maxPartitionsPerTopic {
		return fmt.Errorf("want a number of partitions, 1 to %d", maxPartitionsPerTopic)
	}
	c.NumPartitions = int32(n)
	return nil
}

func setDefaultReplicationFactor(c *Config, value string) error {
	n, err := strconv.ParseInt(value, 10, 16)
	if err != nil || n < 1 {
		return fmt.Errorf("want a replication factor of at least 1")
	}
	c.DefaultReplicationFactor = int16(n)
	return nil
}

func setAutoLeaderRebalance(c *Config, value string) error {
	on, err := parseBool(value)
	c.NoAutoLeaderRebalance = err == nil && !on
	return err
}

func setLeaderImbalanceCheck(c *Config, value string) error {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 1 || n > maxTimeoutMs/1000*24 {
		return fmt.Errorf("want seconds, 1 to %d", maxTimeoutMs/1000*24)
	}
	c.LeaderImbalanceCheckSeconds = n
	return nil
}

func setAutoCreateTopics(c *Config, value string) error {
	switch strings.ToLower(value) {
	case "true":
		c.AutoCreateTopicsEnable = true
	case "false":
		c.AutoCreateTopicsEnable = false
	default:
		return fmt.Errorf("want true or false")
	}
	return nil
}

func setTxnPartitionVerification(c *Config, value string) error {
	on, err := parseBool(value)
	if err == nil {
		c.NoTxnPartitionVerification = !on
	}
	return err
}

func setRequestOffload(c *Config, value string) error {
	on, err := parseBool(value)
	if err == nil {
		c.NoRequestOffload = !on
	}
	return err
}

func setFetchSendfile(c *Config, value string) error {
	on, err := parseBool(value)
	if err == nil {
		c.NoSendfile = !on
	}
	return err
}

func setRetentionCheckInterval(c *Config, value string) error {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 1 || n > maxLogRetentionCheckIntervalMs {
		return fmt.Errorf("want milliseconds, 1 to %d", maxLogRetentionCheckIntervalMs)
	}
	c.RetentionCheckIntervalMs = n
	return nil
}

// maxTimeoutMs bounds the timeouts set with setMillis (one hour): a
// larger value is a typo, not a choice.
const maxTimeoutMs = 3_600_000

// setMillis parses a timeout of 1 to maxTimeoutMs milliseconds into the
// field field returns.
func setMillis(field func(c *Config) *int64) func(c *Config, value string) error {
	return func(c *Config, value string) error {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 1 || n > maxTimeoutMs {
			return fmt.Errorf("want milliseconds, 1 to %d", maxTimeoutMs)
		}
		*field(c) = n
		return nil
	}
}

// setInt parses an integer from lo to hi and hands it to set.
func setInt(lo, hi int64, set func(c *Config, n int64)) func(c *Config, value string) error {
	return func(c *Config, value string) error {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("want a number from %d to %d", lo, hi)
		}
		set(c, n)
		return nil
	}
}

func setProducerIDExpiration(c *Config, value string) error {
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil || n < 1 {
		return fmt.Errorf("want milliseconds, 1 to %d", math.MaxInt32)
	}
	c.ProducerIDExpirationMs = n
	return nil
}

// Time keys in several units, as Kafka has them: log.retention.ms wins
// over log.retention.minutes, which wins over log.retention.hours;
// log.roll.ms wins over log.roll.hours. Each is kept as given and the
// topic default (retention.ms, segment.ms) is derived in
// staticTopicDefaults.

// retentionUnits are the units of log.retention.{ms,minutes,hours}, in
// milliseconds, and rollUnits those of log.roll.{ms,hours}.
var (
	retentionUnits = [3]int64{1, 60_000, 3_600_000}
	rollUnits      = [2]int64{1, 3_600_000}
)

// timeSetting is one of those keys' values, if given.
type timeSetting struct {
	value int64
	set   bool
}

func setRetention(unit int) func(*Config, string) error {
	return func(c *Config, value string) error {
		bits := 32
		if unit == 0 {
			bits = 64
		}
		n, err := strconv.ParseInt(value, 10, bits)
		if err != nil {
			return fmt.Errorf("want an integer (a negative value keeps records forever)")
		}
		c.retention[unit] = timeSetting{n, true}
		return nil
	}
}

func setRoll(unit int) func(*Config, string) error {
	return func(c *Config, value string) error {
		bits := 32
		if unit == 0 {
			bits = 64
		}
		n, err := strconv.ParseInt(value, 10, bits)
		if err != nil || n < 1 {
			return fmt.Errorf("want a positive integer")
		}
		c.roll[unit] = timeSetting{n, true}
		return nil
	}
}

// firstTime is the value of the first given setting in milliseconds
// (Kafka's precedence: the finest unit wins), with the key it came from.
func firstTime(settings []timeSetting, units []int64, keys []string) (int64, string, bool) {
	for i, s := range settings {
		if s.set {
			ms := s.value * units[i]
			if s.value < 0 {
				ms = -1 // retention: forever
			}
			return ms, keys[i], true
		}
	}
	return 0, "", false
}

// StaticTopicDefaults are the topic config defaults server.properties
// sets, by topic key (replica.Config.StaticTopicDefaults): every topic
// default key given, and retention.ms and segment.ms from the keys of
// either unit.
func (c Config) StaticTopicDefaults() map[string]string {
	out := maps.Clone(c.topicDefaults)
	if out == nil {
		out = map[string]string{}
	}
	if ms, _, ok := firstTime(c.retention[:], retentionUnits[:], []string{KeyLogRetentionMs, KeyLogRetentionMinutes, KeyLogRetentionHours}); ok {
		out["retention.ms"] = strconv.FormatInt(ms, 10)
	}
	if ms, _, ok := firstTime(c.roll[:], rollUnits[:], []string{KeyLogRollMs, KeyLogRollHours}); ok {
		out["segment.ms"] = strconv.FormatInt(ms, 10)
	}
	return out
}

// validateTopicDefaults checks the derived topic defaults (a value in
// hours may be out of range once in milliseconds).
func (c Config) validateTopicDefaults() error {
	checks := []struct {
		topicKey string
		settings []timeSetting
		units    []int64
		keys     []string
	}{
		{"retention.ms", c.retention[:], retentionUnits[:], []string{KeyLogRetentionMs, KeyLogRetentionMinutes, KeyLogRetentionHours}},
		{"segment.ms", c.roll[:], rollUnits[:], []string{KeyLogRollMs, KeyLogRollHours}},
	}
	for _, ch := range checks {
		ms, key, ok := firstTime(ch.settings, ch.units, ch.keys)
		if !ok {
			continue
		}
		row, _ := config.TopicRow(ch.topicKey)
		if err := row.Validate(strconv.FormatInt(ms, 10)); err != nil {
			return invalid(key, c.given[key], fmt.Sprintf("%d ms for %s: %v", ms, ch.topicKey, err))
		}
	}
	return nil
}

// brokerStaticConfigs is every key of the table with its value, as
// DescribeConfigs reports them for this broker.
func (c Config) brokerStaticConfigs() []broker.StaticConfig {
	out := make([]broker.StaticConfig, 0, len(configKeys))
	for _, k := range configKeys {
		v, set := c.given[k.name]
		out = append(out, broker.StaticConfig{Name: k.name, Value: v, Set: set, Default: k.def, Type: k.typ, Doc: k.doc})
	}
	return slices.Clip(out)
}

// brokerConfig is the broker's share of the configuration (without the
// advertised address, which Start resolves); dataDir is the absolute
// data directory.
func (c Config) brokerConfig(dataDir string) broker.Config {
	sessions := c.FetchSessionCacheSlots
	if sessions == 0 {
		sessions = -1 // Kafka's 0: no sessions; broker.Config's 0 is the default
	}
	return broker.Config{
		ListenAddr:                c.Listener,
		MaxConnections:            c.MaxConnections,
		MaxInflightRequestBytes:   int(c.QueuedMaxRequestBytes),
		MaxFetchSessions:          sessions,
		LogDir:                    dataDir,
		StaticConfigs:             c.brokerStaticConfigs(),
		AutoTopicCreationDisabled: !c.AutoCreateTopicsEnable,
		Work:                      c.workConfig(),
		DefaultNumPartitions:      c.NumPartitions,
		DefaultReplicationFactor:  c.DefaultReplicationFactor,
		Groups: broker.GroupConfig{
			OffsetsPartitions:        c.OffsetsTopicPartitions,
			OffsetsReplicationFactor: c.OffsetsTopicReplicationFactor,
			Coordinator: group.Config{
				MinSessionTimeout:         time.Duration(c.GroupMinSessionTimeoutMs) * time.Millisecond,
				MaxSessionTimeout:         time.Duration(c.GroupMaxSessionTimeoutMs) * time.Millisecond,
				InitialRebalanceDelay:     time.Duration(c.GroupInitialRebalanceDelayMs) * time.Millisecond,
				MaxSize:                   int(c.GroupMaxSize),
				OffsetsRetention:          time.Duration(c.OffsetsRetentionMinutes) * time.Minute,
				RetentionCheckInterval:    time.Duration(c.OffsetsRetentionCheckIntervalMs) * time.Millisecond,
				ConsumerSessionTimeout:    time.Duration(c.ConsumerSessionTimeoutMs) * time.Millisecond,
				ConsumerHeartbeatInterval: time.Duration(c.ConsumerHeartbeatIntervalMs) * time.Millisecond,
				ConsumerMaxSize:           int(c.ConsumerMaxSize),
				ConsumerAssignors:         c.ConsumerAssignors,
				MigrationPolicy:           c.ConsumerMigrationPolicy,
			},
		},
		Txns: broker.TxnConfig{
			StatePartitions:         c.TxnStatePartitions,
			StateReplicationFactor:  c.TxnStateReplicationFactor,
			NoPartitionVerification: c.NoTxnPartitionVerification,
			TransactionVersion:      c.TransactionVersion,
			Coordinator: txn.Config{
				MaxTimeout:         time.Duration(c.TxnMaxTimeoutMs) * time.Millisecond,
				IDExpiration:       time.Duration(c.TransactionalIDExpirationMs) * time.Millisecond,
				AbortCheckInterval: time.Duration(c.TxnAbortCheckIntervalMs) * time.Millisecond,
			},
		},
	}
}

// workConfig bounds the broker's off-loop work: as many jobs at once as
// the node has workers, or, with offload off, every job inline.
func (c Config) workConfig() work.Config {
	w := work.Config{Limit: c.requestWorkers(), Spare: lightRequestWorkers}
	if c.NoRequestOffload {
		w.InlineBelow = math.MaxInt64
	}
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

// partitionsConfig is the partitions' share of the configuration.
func (c Config) partitionsConfig() replica.Config {
	return replica.Config{
		StaticTopicDefaults:    c.StaticTopicDefaults(),
		RetentionCheckInterval: time.Duration(c.RetentionCheckIntervalMs) * time.Millisecond,
		Producers:              producer.Config{ExpirationTime: time.Duration(c.ProducerIDExpirationMs) * time.Millisecond},
		ReplicaLagTime:         time.Duration(c.ReplicaLagTimeMaxMs) * time.Millisecond,
	}
}
