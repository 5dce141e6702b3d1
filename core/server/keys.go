package server

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/controller"
	"github.com/strata-log/strata/core/group"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/quota"
	"github.com/strata-log/strata/core/replica"
	"github.com/strata-log/strata/core/txn"
)

// The broker keys: one row per server.properties key that sets a field of
// Config, named as in Kafka. The row is the only place that names the key,
// gives its default, bounds and parses its value, documents it and says
// which field it sets; server.properties (node), the flags of `strata
// serve`, DescribeConfigs (broker.StaticConfig) and docs/operations.md
// read the rows. The keys of the production process alone (listeners,
// sockets, workers, metrics endpoint) are node's rows, Key[node.Config].

// Names of the keys that code outside the rows reads (in an error
// message, a cross-key check).
const (
	KeyNodeID                       = "node.id"
	KeyProcessRoles                 = "process.roles"
	KeyControllerVoters             = "controller.quorum.voters"
	KeyElectionTimeoutMs            = "controller.quorum.election.timeout.ms"
	KeyFetchTimeoutMs               = "controller.quorum.fetch.timeout.ms"
	KeyMaxConnections               = "max.connections"
	KeyMaxConnectionsPerIP          = "max.connections.per.ip"
	KeyMaxConnectionsPerIPOverrides = "max.connections.per.ip.overrides"
	KeyConnectionsMaxIdleMs         = "connections.max.idle.ms"
	KeyQueuedMaxRequestBytes        = "queued.max.request.bytes"
	KeyBrokerSessionTimeoutMs       = "broker.session.timeout.ms"
	KeyConsumerSessionTimeoutMs     = "group.consumer.session.timeout.ms"
	KeyConsumerHeartbeatIntervalMs  = "group.consumer.heartbeat.interval.ms"
	KeyReplicaLagTimeMaxMs          = "replica.lag.time.max.ms"
	KeyGroupMinSessionTimeoutMs     = "group.min.session.timeout.ms"
	KeyGroupInitialRebalanceDelayMs = "group.initial.rebalance.delay.ms"
	KeyOffsetsTopicPartitions       = "offsets.topic.num.partitions"
	KeyTxnStatePartitions           = "transaction.state.log.num.partitions"
	KeyTxnAbortCheckIntervalMs      = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
	KeyTransactionVersion           = "strata.transaction.version"
	KeyRequestOffload               = "strata.request.offload.enable"
	KeyLogRetentionMs               = config.ServerKeyLogRetentionMs
	KeyLogRetentionMinutes          = "log.retention.minutes"
	KeyLogRetentionHours            = "log.retention.hours"
	KeyLogRollMs                    = config.ServerKeyLogRollMs
	KeyLogRollHours                 = "log.roll.hours"
)

// Process roles, the values of process.roles.
const (
	RoleBroker     = "broker"
	RoleController = "controller"
)

// Bounds of broker keys that Kafka does not state.
const (
	// MaxTimeoutMs bounds the timeouts of the keys in milliseconds (one
	// hour): a larger value is a typo, not a choice.
	MaxTimeoutMs = 3_600_000
	// maxPartitionsPerTopic bounds num.partitions and the internal
	// topics' partitions, in partitions: one controller batch holds a
	// topic's records.
	maxPartitionsPerTopic = controller.DefaultMaxRecordsPerBatch - 1
	// maxLogRetentionCheckIntervalMs bounds
	// log.retention.check.interval.ms, in milliseconds (one day).
	maxLogRetentionCheckIntervalMs = 24 * 3_600_000
	// maxInternalReplicationFactor bounds the internal topics'
	// replication factors.
	maxInternalReplicationFactor = 1 << 14
	// maxQueuedRequestBytes bounds queued.max.request.bytes (Kafka's -1,
	// unbounded, is refused: Strata always bounds the request bytes it
	// holds).
	maxQueuedRequestBytes = math.MaxInt32 * int64(16)
)

// Key is a broker key: a row that sets a field of Config.
type Key = config.Key[Config]

// keys is the table, in the order docs/operations.md lists them.
var keys = slices.Concat(config.Keys[Config]{
	{Row: row(KeyNodeID, kmsg.ConfigTypeInt, "1", "This node's id in the cluster.", config.IntIn(0, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { c.NodeID = int32(v.Int()) }},
	{Row: row(KeyProcessRoles, kmsg.ConfigTypeList, RoleBroker+","+RoleController, "The roles this node runs: broker, controller or both.",
		config.Custom("broker, controller or broker,controller", parseRoles)),
		Set: func(c *Config, v config.Value) {
			roles := v.Parsed().([2]bool)
			c.Broker, c.Controller = roles[0], roles[1]
		}},
	{Row: row(KeyControllerVoters, kmsg.ConfigTypeList, "", "The metadata quorum's voters, id@host:port,...",
		config.Custom("id@host:port,...", parseVoters)),
		Set: func(c *Config, v config.Value) { c.Quorum.Voters = v.Parsed().([]kraft.Voter) }},
	{Row: row(KeyElectionTimeoutMs, kmsg.ConfigTypeInt, ms(quorum.DefaultElectionTimeout),
		"How long a voter without a leader waits before an election, in milliseconds.", config.IntIn(1, MaxTimeoutMs)),
		Set: func(c *Config, v config.Value) { c.Quorum.Quorum.ElectionTimeout = millis(v) }},
	{Row: row(KeyFetchTimeoutMs, kmsg.ConfigTypeInt, ms(quorum.DefaultFetchTimeout),
		"How long a voter goes without a fetch from its leader before an election, in milliseconds.", config.IntIn(1, MaxTimeoutMs)),
		Set: func(c *Config, v config.Value) { c.Quorum.Quorum.FetchTimeout = millis(v) }},
	{Row: row(KeyMaxConnections, kmsg.ConfigTypeInt, strconv.Itoa(broker.DefaultMaxConnections),
		"The most client connections served at once.", config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.MaxConnections = int(v.Int()) }},
	{Row: row(KeyMaxConnectionsPerIP, kmsg.ConfigTypeInt, strconv.Itoa(math.MaxInt32),
		"The most connections from one IP address on each listener; a new one past it is closed at once. 0 admits only the hosts of max.connections.per.ip.overrides.",
		config.IntIn(0, math.MaxInt32)),
		Set: func(c *Config, v config.Value) {
			switch n := int(v.Int()); n {
			case 0:
				c.BrokerListener.MaxConnectionsPerIP = -1 // Kafka's 0: only the overrides' hosts
			case math.MaxInt32:
				c.BrokerListener.MaxConnectionsPerIP = 0 // Kafka's default: no bound
			default:
				c.BrokerListener.MaxConnectionsPerIP = n
			}
		}},
	{Row: row(KeyMaxConnectionsPerIPOverrides, kmsg.ConfigTypeString, "",
		"Per-host exceptions to max.connections.per.ip: host:count,... (a host name is resolved at start).",
		config.Custom("host:count,...", parsePerHostOverrides)),
		Set: func(c *Config, v config.Value) {
			c.BrokerListener.MaxConnectionsPerIPOverrides = v.Parsed().(map[string]int)
		}},
	{Row: row(KeyConnectionsMaxIdleMs, kmsg.ConfigTypeLong, ms(broker.DefaultConnectionsMaxIdle),
		"How long a connection with no request in flight and no bytes moving is kept, in milliseconds.",
		config.LongIn(1, math.MaxInt32*int64(1000))),
		Set: func(c *Config, v config.Value) { c.BrokerListener.ConnectionsMaxIdle = millis(v) }},
	{Row: row(KeyQueuedMaxRequestBytes, kmsg.ConfigTypeLong, strconv.Itoa(broker.DefaultMaxInflightRequestBytes),
		"The request bytes held, across connections, both while they arrive (the readers stop past it) and while they are handled (connections are paused past it); Kafka's -1 (unbounded) is refused.",
		config.LongIn(1, maxQueuedRequestBytes)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.MaxInflightRequestBytes = int(v.Int()) }},
	{Row: row("max.incremental.fetch.session.cache.slots", kmsg.ConfigTypeInt, strconv.Itoa(broker.DefaultMaxFetchSessions),
		"The fetch sessions (KIP-227) kept at once; 0 disables them.", config.IntIn(0, math.MaxInt32)),
		Set: func(c *Config, v config.Value) {
			c.BrokerListener.MaxFetchSessions = int(v.Int())
			if v.Int() == 0 {
				c.BrokerListener.MaxFetchSessions = -1 // Kafka's 0: no sessions; broker.Config's 0 is the default
			}
		}},
	{Row: row("quota.window.num", kmsg.ConfigTypeInt, strconv.Itoa(quota.DefaultWindowNum),
		"The samples kept in memory for client quotas (producer_byte_rate, consumer_byte_rate, request_percentage, connection_creation_rate).",
		config.IntIn(1, maxQuotaWindowNum)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.Quotas.WindowNum = int(v.Int()) }},
	{Row: row("quota.window.size.seconds", kmsg.ConfigTypeInt, strconv.Itoa(int(quota.DefaultWindowSize/time.Second)),
		"The time span of each sample of client quotas, in seconds.", config.IntIn(1, maxQuotaWindowSeconds)),
		Set: func(c *Config, v config.Value) {
			c.BrokerListener.Quotas.WindowSize = time.Duration(v.Int()) * time.Second
		}},
	{Row: row("controller.quota.window.num", kmsg.ConfigTypeInt, strconv.Itoa(quota.DefaultWindowNum),
		"The samples of controller_mutation_rate: with controller.quota.window.size.seconds, the burst of partition mutations a client may make at once.",
		config.IntIn(1, maxQuotaWindowNum)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.Quotas.ControllerWindowNum = int(v.Int()) }},
	{Row: row("controller.quota.window.size.seconds", kmsg.ConfigTypeInt, strconv.Itoa(int(quota.DefaultWindowSize/time.Second)),
		"The time span of each sample of controller_mutation_rate, in seconds.", config.IntIn(1, maxQuotaWindowSeconds)),
		Set: func(c *Config, v config.Value) {
			c.BrokerListener.Quotas.ControllerWindowSize = time.Duration(v.Int()) * time.Second
		}},
	{Row: row("num.partitions", kmsg.ConfigTypeInt, strconv.Itoa(int(controller.DefaultNumPartitions)),
		"The partitions of a topic created with -1 partitions or auto-created.", config.IntIn(1, maxPartitionsPerTopic)),
		Set: func(c *Config, v config.Value) {
			c.Quorum.Controller.DefaultNumPartitions = int32(v.Int())
			c.BrokerListener.DefaultNumPartitions = int32(v.Int())
		}},
	{Row: row("default.replication.factor", kmsg.ConfigTypeShort, strconv.Itoa(int(controller.DefaultReplicationFactor)),
		"The replication factor of a topic created with -1 or auto-created.", config.ShortIn(1, math.MaxInt16)),
		Set: func(c *Config, v config.Value) {
			c.Quorum.Controller.DefaultReplicationFactor = int16(v.Int())
			c.BrokerListener.DefaultReplicationFactor = int16(v.Int())
		}},
	{Row: row("auto.create.topics.enable", kmsg.ConfigTypeBoolean, "true",
		"Whether a Metadata request for a missing topic creates it.", config.Boolean()),
		Set: func(c *Config, v config.Value) { c.BrokerListener.AutoTopicCreationDisabled = !v.Bool() }},
	{Row: row(KeyLogRetentionMs, kmsg.ConfigTypeLong, "",
		"How long records are kept, in milliseconds (-1: forever); wins over .minutes and .hours.", config.AnyLong()),
		Set: setTime(retentionMs)},
	{Row: row(KeyLogRetentionMinutes, kmsg.ConfigTypeInt, "",
		"How long records are kept, in minutes; wins over .hours.", config.AnyInt()),
		Set: setTime(retentionMinutes)},
	{Row: row(KeyLogRetentionHours, kmsg.ConfigTypeInt, "168",
		"How long records are kept, in hours.", config.AnyInt()),
		Set: setTime(retentionHours)},
	{Row: row(KeyLogRollMs, kmsg.ConfigTypeLong, "",
		"The age at which a segment rolls, in milliseconds; wins over log.roll.hours.", config.LongIn(1, math.MaxInt64)),
		Set: setTime(rollMs)},
	{Row: row(KeyLogRollHours, kmsg.ConfigTypeInt, "168",
		"The age at which a segment rolls, in hours.", config.IntIn(1, math.MaxInt32)),
		Set: setTime(rollHours)},
}, topicDefaultKeys(), config.Keys[Config]{
	{Row: row("log.retention.check.interval.ms", kmsg.ConfigTypeLong, ms(replica.DefaultRetentionCheckInterval),
		"How often logs are checked for segments to delete and cleanings to start, in milliseconds.", config.LongIn(1, maxLogRetentionCheckIntervalMs)),
		Set: func(c *Config, v config.Value) { c.Partitions.RetentionCheckInterval = millis(v) }},
	{Row: row("producer.id.expiration.ms", kmsg.ConfigTypeInt, ms(producer.DefaultExpirationTime),
		"How long an idle idempotent producer's state is kept, in milliseconds.", config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { c.Partitions.Producers.ExpirationTime = millis(v) }},
}, internalTopicKeys(KeyOffsetsTopicPartitions, "offsets.topic.replication.factor", "__consumer_offsets",
	broker.DefaultOffsetsPartitions, broker.DefaultOffsetsReplicationFactor,
	func(c *Config) (*int32, *int16) {
		return &c.BrokerListener.Groups.OffsetsPartitions, &c.BrokerListener.Groups.OffsetsReplicationFactor
	}), config.Keys[Config]{
	{Row: row(KeyGroupMinSessionTimeoutMs, kmsg.ConfigTypeInt, ms(group.DefaultMinSessionTimeout),
		"The shortest session timeout a group member may ask for, in milliseconds.", config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.Groups.Coordinator.MinSessionTimeout = millis(v) }},
	{Row: row("group.max.session.timeout.ms", kmsg.ConfigTypeInt, ms(group.DefaultMaxSessionTimeout),
		"The longest session timeout a group member may ask for, in milliseconds.", config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.Groups.Coordinator.MaxSessionTimeout = millis(v) }},
	{Row: row(KeyGroupInitialRebalanceDelayMs, kmsg.ConfigTypeInt, ms(group.DefaultInitialRebalanceDelay),
		"How long the first rebalance of an empty group waits for more members, in milliseconds.", config.IntIn(0, MaxTimeoutMs)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.Groups.Coordinator.InitialRebalanceDelay = millis(v) }},
	{Row: row("offsets.retention.minutes", kmsg.ConfigTypeInt, strconv.Itoa(int(group.DefaultOffsetsRetention/time.Minute)),
		"How long a group's committed offsets are kept once it is empty (a simple commit's: after it), in minutes.", config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) {
			c.BrokerListener.Groups.Coordinator.OffsetsRetention = time.Duration(v.Int()) * time.Minute
		}},
	{Row: row("offsets.retention.check.interval.ms", kmsg.ConfigTypeLong, ms(group.DefaultRetentionCheck),
		"How often the group coordinator looks for expired offsets, in milliseconds.", config.LongIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) {
			c.BrokerListener.Groups.Coordinator.RetentionCheckInterval = millis(v)
		}},
}, internalTopicKeys(KeyTxnStatePartitions, "transaction.state.log.replication.factor", "__transaction_state",
	broker.DefaultTxnStatePartitions, broker.DefaultTxnStateReplicationFactor,
	func(c *Config) (*int32, *int16) {
		return &c.BrokerListener.Txns.StatePartitions, &c.BrokerListener.Txns.StateReplicationFactor
	}), config.Keys[Config]{
	{Row: row("transaction.max.timeout.ms", kmsg.ConfigTypeInt, ms(txn.DefaultMaxTimeout),
		"The longest transaction.timeout.ms a transactional producer may ask for, in milliseconds.", config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.Txns.Coordinator.MaxTimeout = millis(v) }},
	{Row: row("transactional.id.expiration.ms", kmsg.ConfigTypeInt, ms(txn.DefaultIDExpiration),
		"How long a transactional id without a transaction in progress is kept after its last update, in milliseconds.", config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.Txns.Coordinator.IDExpiration = millis(v) }},
	{Row: row(KeyTxnAbortCheckIntervalMs, kmsg.ConfigTypeInt, ms(txn.DefaultAbortCheckInterval),
		"How often the transaction coordinator aborts timed-out transactions and removes expired ids, in milliseconds.", config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.Txns.Coordinator.AbortCheckInterval = millis(v) }},
	{Row: row("transaction.partition.verification.enable", kmsg.ConfigTypeBoolean, "true",
		"Whether a partition leader asks the transaction coordinator that a producer's first transactional batch there belongs to its transaction (KIP-890 part 1).",
		config.Boolean()),
		Set: func(c *Config, v config.Value) { c.BrokerListener.Txns.NoPartitionVerification = !v.Bool() }},
	{Row: row(KeyTransactionVersion, kmsg.ConfigTypeShort, strconv.Itoa(broker.DefaultTransactionVersion),
		"The transaction.version feature the brokers finalize (Kafka sets it with kafka-features.sh): 2 lets clients use KIP-890 part 2 (partitions added through Produce v12+ and TxnOffsetCommit v5+, an epoch bump at every EndTxn), 1 keeps them on AddPartitionsToTxn and AddOffsetsToTxn. The same on every broker.",
		config.ShortIn(1, 2)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.Txns.TransactionVersion = int16(v.Int()) }},
	{Row: row("group.max.size", kmsg.ConfigTypeInt, strconv.Itoa(math.MaxInt32),
		"The most members a group may have.", config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.Groups.Coordinator.MaxSize = int(v.Int()) }},
	{Row: row(KeyConsumerSessionTimeoutMs, kmsg.ConfigTypeInt, ms(group.DefaultConsumerSessionTimeout),
		"How long a consumer-protocol (KIP-848) group member may go without a heartbeat before it is removed, in milliseconds (within the min and max keys).",
		config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) {
			c.BrokerListener.Groups.Coordinator.ConsumerSessionTimeout = millis(v)
		}},
	{Row: row(KeyConsumerHeartbeatIntervalMs, kmsg.ConfigTypeInt, ms(group.DefaultConsumerHeartbeatInterval),
		"How often consumer-protocol (KIP-848) group members are told to heartbeat, in milliseconds (within the min and max keys, and below the session timeout).",
		config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) {
			c.BrokerListener.Groups.Coordinator.ConsumerHeartbeatInterval = millis(v)
		}},
	{Row: row("group.consumer.max.size", kmsg.ConfigTypeInt, strconv.Itoa(math.MaxInt32),
		"The most members a consumer-protocol (KIP-848) group may have.", config.IntIn(1, math.MaxInt32)),
		Set: func(c *Config, v config.Value) { c.BrokerListener.Groups.Coordinator.ConsumerMaxSize = int(v.Int()) }},
	{Row: row("group.consumer.assignors", kmsg.ConfigTypeList, strings.Join(group.Assignors(), ","),
		"The server-side assignors consumer-protocol (KIP-848) members may ask for, the first the default: uniform, range.",
		config.Custom("some of "+strings.Join(group.Assignors(), ", "), parseAssignors)),
		Set: func(c *Config, v config.Value) {
			c.BrokerListener.Groups.Coordinator.ConsumerAssignors = v.Parsed().([]string)
		}},
	{Row: row("group.consumer.migration.policy", kmsg.ConfigTypeString, string(group.DefaultMigrationPolicy),
		"Whether non-empty groups move between the classic and the consumer protocol online: disabled, upgrade (classic to consumer), downgrade (consumer to classic), bidirectional.",
		config.Custom("disabled, upgrade, downgrade or bidirectional", func(v string) (any, error) { return group.ParseMigrationPolicy(v) })),
		Set: func(c *Config, v config.Value) {
			c.BrokerListener.Groups.Coordinator.MigrationPolicy = v.Parsed().(group.MigrationPolicy)
		}},
	{Row: row(KeyReplicaLagTimeMaxMs, kmsg.ConfigTypeLong, ms(replica.DefaultReplicaLagTime),
		"How long a follower may go without catching up with its leader before it leaves the ISR, in milliseconds.", config.LongIn(1, MaxTimeoutMs)),
		Set: func(c *Config, v config.Value) { c.Partitions.ReplicaLagTime = millis(v) }},
	{Row: row("auto.leader.rebalance.enable", kmsg.ConfigTypeBoolean, "true",
		"Whether the active controller moves leaderships back to preferred replicas every leader.imbalance.check.interval.seconds.", config.Boolean()),
		Set: func(c *Config, v config.Value) { c.Quorum.Controller.NoAutoLeaderRebalance = !v.Bool() }},
	{Row: row("leader.imbalance.check.interval.seconds", kmsg.ConfigTypeLong, strconv.Itoa(int(controller.DefaultLeaderImbalanceCheckInterval/time.Second)),
		"How often the active controller moves leaderships back to preferred replicas, in seconds.", config.LongIn(1, MaxTimeoutMs/1000*24)),
		Set: func(c *Config, v config.Value) {
			c.Quorum.Controller.LeaderImbalanceCheckInterval = time.Duration(v.Int()) * time.Second
		}},
	{Row: row(KeyBrokerSessionTimeoutMs, kmsg.ConfigTypeInt, ms(controller.DefaultSessionTimeout),
		"How long the controller waits for a broker's heartbeat before it fences the broker, in milliseconds.", config.IntIn(1, MaxTimeoutMs)),
		Set: func(c *Config, v config.Value) { c.Quorum.Controller.SessionTimeout = millis(v) }},
	{Row: row(KeyRequestOffload, kmsg.ConfigTypeBoolean, "true",
		"Strata's own: run request validation and large answers on the workers; false runs them on the event loop (for measuring what the workers give).",
		config.Boolean()),
		Set: func(c *Config, v config.Value) {
			c.BrokerListener.Work.InlineBelow = 0 // the broker's default
			if !v.Bool() {
				c.BrokerListener.Work.InlineBelow = math.MaxInt64
			}
		}},
}, securityKeys())

// Keys returns every broker key, in the order docs/operations.md lists
// them. The rows are shared: callers do not modify them.
func Keys() config.Keys[Config] { return keys }

// Set parses value for key and sets the field of c it names. known is
// false for a key that is not a broker key; err names the key and wraps
// ErrInvalidConfig.
func (c *Config) Set(key, value string) (known bool, err error) {
	known, err = keys.Apply(c, key, value)
	if err != nil {
		return true, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return known, nil
}

// ParseProperties is the broker keys of server.properties text applied
// on top of c, in order (a later key wins). A key that is not a broker
// key is an error: the simulator's text names only broker keys.
func (c Config) ParseProperties(text string) (Config, error) {
	props, err := config.ParseProperties(strings.NewReader(text))
	if err != nil {
		return c, err
	}
	for _, p := range props {
		known, err := c.Set(p.Key, p.Value)
		switch {
		case err != nil:
			return c, fmt.Errorf("line %d: %w", p.Line, err)
		case !known:
			return c, fmt.Errorf("%w: line %d: %s is not a broker key", ErrInvalidConfig, p.Line, p.Key)
		}
	}
	return c, c.ValidateKeys()
}

// ValidateKeys checks what the rows cannot check alone: a time key's
// value in its unit must be a valid topic default once in milliseconds
// (log.retention.hours=1e9 is not).
func (c Config) ValidateKeys() error {
	for _, d := range timeKeys {
		t, ok := c.times.first(d.topicKey)
		if !ok {
			continue
		}
		row, _ := config.TopicRow(d.topicKey)
		if err := row.Validate(strconv.FormatInt(t.ms(), 10)); err != nil {
			return fmt.Errorf("%w: %s=%q: %d ms for %s: %w", ErrInvalidConfig, t.key, strconv.FormatInt(t.value, 10), t.ms(), d.topicKey, err)
		}
	}
	return nil
}

// row is a broker key's row (broker keys set no topic default).
func row(name string, typ kmsg.ConfigType, def, doc string, check config.Check) config.Row {
	return config.Row{Name: name, Type: typ, Default: def, Doc: doc, Check: check}
}

// Bounds of the quota window keys: Kafka takes any positive int; these
// keep a window's samples and span (and the token bucket's burst) in
// reason.
const (
	maxQuotaWindowNum     = 1000
	maxQuotaWindowSeconds = 3600
)

// ms is a default duration in milliseconds, as its key gives it.
func ms(d time.Duration) string { return strconv.FormatInt(int64(d/time.Millisecond), 10) }

// millis is a value in milliseconds as a duration.
func millis(v config.Value) time.Duration { return time.Duration(v.Int()) * time.Millisecond }

// topicDefaultKeys are the rows of the broker keys that set a topic
// config's cluster default (log.segment.bytes sets segment.bytes): the
// key, default, type and check are the topic row's (core/config), whose
// valid values are the ones the partitions can apply.
func topicDefaultKeys() config.Keys[Config] {
	var out config.Keys[Config]
	for _, t := range config.ServerPropertyRows() {
		r := *t
		r.Name, r.ServerDefault = t.ServerDefault, ""
		r.Doc = t.Doc + " (the default of the topic config " + t.Name + ")"
		topicKey := t.Name
		out = append(out, Key{Row: r, Set: func(c *Config, v config.Value) { c.setTopicDefault(topicKey, v.String()) }})
	}
	return out
}

// internalTopicKeys are the rows of an internal topic's partitions and
// replication factor when it is created (the factor capped at the brokers
// registered then); fields gives the two fields they set.
func internalTopicKeys(partitionsKey, factorKey, topic string, partitions, factor int, fields func(*Config) (*int32, *int16)) config.Keys[Config] {
	return config.Keys[Config]{
		{Row: row(partitionsKey, kmsg.ConfigTypeInt, strconv.Itoa(partitions), "The partitions of "+topic+" when it is created.",
			config.IntIn(1, maxPartitionsPerTopic)),
			Set: func(c *Config, v config.Value) { p, _ := fields(c); *p = int32(v.Int()) }},
		{Row: row(factorKey, kmsg.ConfigTypeShort, strconv.Itoa(factor),
			"The replication factor of "+topic+" when it is created (capped at the brokers registered then).",
			config.ShortIn(1, maxInternalReplicationFactor)),
			Set: func(c *Config, v config.Value) { _, f := fields(c); *f = int16(v.Int()) }},
	}
}

// setTopicDefault sets a static topic default, copying the map on write:
// a Config is a value.
func (c *Config) setTopicDefault(topicKey, value string) {
	c.Partitions.StaticTopicDefaults = maps.Clone(c.Partitions.StaticTopicDefaults)
	if c.Partitions.StaticTopicDefaults == nil {
		c.Partitions.StaticTopicDefaults = map[string]string{}
	}
	c.Partitions.StaticTopicDefaults[topicKey] = value
}

// Time keys in several units, as Kafka has them: log.retention.ms wins
// over log.retention.minutes, which wins over log.retention.hours;
// log.roll.ms wins over log.roll.hours, whatever the order they are set
// in. Each is kept as given (Config.times) and the topic default
// (retention.ms, segment.ms) is derived from the finest one set.

// timeUnit is one of those keys.
type timeUnit int

const (
	retentionMs timeUnit = iota
	retentionMinutes
	retentionHours
	rollMs
	rollHours
	timeUnits
)

// timeKey is one of those keys: the topic key it sets, in its unit.
type timeKey struct {
	key, topicKey string
	unitMs        int64
}

// timeKeys are the units' keys, finest first within each topic key.
var timeKeys = [timeUnits]timeKey{
	{KeyLogRetentionMs, "retention.ms", 1},
	{KeyLogRetentionMinutes, "retention.ms", 60_000},
	{KeyLogRetentionHours, "retention.ms", 3_600_000},
	{KeyLogRollMs, "segment.ms", 1},
	{KeyLogRollHours, "segment.ms", 3_600_000},
}

// timeSettings are the time keys set, by unit.
type timeSettings [timeUnits]struct {
	value int64
	set   bool
}

// timeSetting is the time key that wins for a topic key.
type timeSetting struct {
	key           string
	value, unitMs int64
}

// ms is the setting in milliseconds; a negative retention is forever.
func (t timeSetting) ms() int64 {
	if t.value < 0 {
		return -1
	}
	return t.value * t.unitMs
}

// first is the finest time key set for topicKey.
func (s timeSettings) first(topicKey string) (timeSetting, bool) {
	for u, k := range timeKeys {
		if k.topicKey == topicKey && s[u].set {
			return timeSetting{key: k.key, value: s[u].value, unitMs: k.unitMs}, true
		}
	}
	return timeSetting{}, false
}

func setTime(u timeUnit) func(*Config, config.Value) {
	return func(c *Config, v config.Value) {
		c.times[u].value, c.times[u].set = v.Int(), true
		topicKey := timeKeys[u].topicKey
		t, _ := c.times.first(topicKey)
		c.setTopicDefault(topicKey, strconv.FormatInt(t.ms(), 10))
	}
}

// Parsers of the keys with a structure of their own. Their errors say
// what is wanted; the row's caller names the key.

func parseRoles(value string) (any, error) {
	var roles [2]bool // broker, controller
	for _, r := range config.SplitListLoose(value) {
		i := slices.Index([]string{RoleBroker, RoleController}, strings.ToLower(r))
		switch {
		case i < 0:
			return nil, fmt.Errorf("unknown role %q; want broker, controller or broker,controller", r)
		case roles[i]:
			return nil, fmt.Errorf("role %q given twice", r)
		}
		roles[i] = true
	}
	if !roles[0] && !roles[1] {
		return nil, fmt.Errorf("want broker, controller or broker,controller")
	}
	return roles, nil
}

// Roles is process.roles: "broker", "controller" or both, in that order.
func (c Config) Roles() []string {
	var out []string
	if c.Broker {
		out = append(out, RoleBroker)
	}
	if c.Controller {
		out = append(out, RoleController)
	}
	return out
}

// parseVoters parses controller.quorum.voters: id@host:port, ...
func parseVoters(value string) (any, error) {
	list := config.SplitListLoose(value)
	if len(list) == 0 {
		return nil, fmt.Errorf("want id@host:port, e.g. 1@127.0.0.1:9093")
	}
	m := map[quorum.NodeID]string{}
	for _, entry := range list {
		idStr, addr, ok := strings.Cut(entry, "@")
		if !ok {
			return nil, fmt.Errorf("entry %q is not id@host:port", entry)
		}
		id, err := strconv.ParseInt(strings.TrimSpace(idStr), 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("entry %q: bad node id", entry)
		}
		if _, dup := m[quorum.NodeID(id)]; dup {
			return nil, fmt.Errorf("voter %d listed twice", id)
		}
		hp, err := ParseHostPort(strings.TrimSpace(addr))
		if err != nil {
			return nil, err
		}
		m[quorum.NodeID(id)] = hp
	}
	return kraft.ParseVoters(m), nil
}

// ParseHostPort checks a "host:port" address (an IPv6 host in brackets)
// and returns it with the port in canonical form.
func ParseHostPort(addr string) (string, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", fmt.Errorf("address %s: missing port in address", addr)
	}
	host, port := addr[:i], addr[i+1:]
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	} else if strings.ContainsAny(host, ":[]") {
		return "", fmt.Errorf("address %s: too many colons in address", addr)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", fmt.Errorf("bad port %q", port)
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.FormatUint(p, 10), nil
	}
	return host + ":" + strconv.FormatUint(p, 10), nil
}

// parsePerHostOverrides parses Kafka's host:count,... list. Hosts are
// kept as given; the node resolves names to addresses at start.
func parsePerHostOverrides(value string) (any, error) {
	overrides := map[string]int{}
	for _, entry := range config.SplitListLoose(value) {
		i := strings.LastIndexByte(entry, ':')
		if i <= 0 {
			return nil, fmt.Errorf("want host:count,... (an entry %q has no host or count)", entry)
		}
		host := strings.TrimSpace(entry[:i])
		n, err := strconv.ParseInt(strings.TrimSpace(entry[i+1:]), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("want host:count,... with a count of 0 or more (entry %q)", entry)
		}
		if _, dup := overrides[host]; dup {
			return nil, fmt.Errorf("host %q listed twice", host)
		}
		overrides[host] = int(n)
	}
	return overrides, nil
}

func parseAssignors(value string) (any, error) {
	var names []string
	for _, a := range config.SplitListLoose(value) {
		a = strings.ToLower(a)
		switch {
		case !slices.Contains(group.Assignors(), a):
			return nil, fmt.Errorf("unknown assignor %q; want some of %s", a, strings.Join(group.Assignors(), ", "))
		case slices.Contains(names, a):
			return nil, fmt.Errorf("assignor %q given twice", a)
		}
		names = append(names, a)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("want at least one of %s", strings.Join(group.Assignors(), ", "))
	}
	return names, nil
}

// DefaultConfig is every broker key at its default: the server that an
// empty server.properties configures. The keys that set a topic config's
// cluster default (log.segment.bytes, log.retention.hours, ...) stay
// unset: their defaults are the topic rows', which the partitions apply
// as defaults, not as static broker values (DescribeConfigs' source).
func DefaultConfig() Config {
	var c Config
	for _, k := range keys {
		if k.Default == "" || setsTopicDefault(k.Name) {
			continue
		}
		if _, err := keys.Apply(&c, k.Name, k.Default); err != nil {
			panic("server: the default of " + k.Name + " does not parse: " + err.Error()) // a table bug, caught by every test
		}
	}
	return c
}

// setsTopicDefault reports whether the broker key sets a topic config's
// cluster default.
func setsTopicDefault(key string) bool {
	if _, ok := config.TopicRowByServerDefault(key); ok {
		return true
	}
	return slices.ContainsFunc(timeKeys[:], func(t timeKey) bool { return t.key == key })
}
