package replica

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/sasl"
)

// Config configures the partitions of one broker.
type Config struct {
	// Listener is the listener followers dial on their leaders
	// (inter.broker.listener.name); empty means PLAINTEXT.
	Listener string
	// ListenerTLS: Listener runs over TLS, and followers dial their
	// leaders with env.SecureNet's DialTLS as clients of it, presenting
	// its certificate (their principal on the leader).
	ListenerTLS bool
	// ListenerLogin, when its Mechanism is set, is how followers log in
	// to their leaders' SASL Listener (its Nonce is filled in from the
	// environment).
	ListenerLogin sasl.ClientConfig

	// NodeID is this broker's node.id: a partition is hosted here when
	// its replicas include it.
	NodeID int32

	// StaticTopicDefaults are the topic config defaults this broker's
	// server.properties sets, by topic key ("retention.ms" for
	// log.retention.ms, log.retention.minutes or log.retention.hours):
	// Kafka's STATIC_BROKER_CONFIG synonyms. A topic's own config wins,
	// then this broker's and then the cluster-wide dynamic default (the
	// image's broker config resources, by the broker key), then these,
	// then the config table's default (see ResolveTopicConfigs).
	StaticTopicDefaults map[string]string

	// LogMaxOpenFilesPerPartition bounds each log's open file handles
	// (log.Config.MaxOpenFiles; zero means log.DefaultMaxOpenFiles).
	LogMaxOpenFilesPerPartition int

	// RetentionCheckInterval is log.retention.check.interval.ms: how often
	// every log is checked for segments to delete (and compacted logs for
	// a cleaning to start). Zero means DefaultRetentionCheckInterval.
	RetentionCheckInterval time.Duration

	// CleanerStepBytes bounds the bytes one cleaner step reads or writes
	// before it yields the loop (DefaultCleanerStepBytes when zero).
	CleanerStepBytes int64

	// Producers configures the idempotent producer state
	// (producer.id.expiration.ms); zero fields take core/producer's
	// defaults.
	Producers producer.Config

	// KeepDirs are directories of the data directory that are not
	// partitions of the image even though their names look like it (the
	// metadata log's __cluster_metadata-0): the sweep never deletes them.
	KeepDirs []string

	// ReopenBackoff is how long a partition whose log failed waits before
	// it reopens the log and recovers what is durable
	// (DefaultReopenBackoff when zero).
	ReopenBackoff time.Duration

	// Metrics is the registry the partitions count into; nil counts
	// nothing.
	Metrics *metrics.Registry

	// ReplicaLagTime is replica.lag.time.max.ms: a follower that has not
	// caught up with the leader's log end for this long leaves the ISR;
	// zero means DefaultReplicaLagTime.
	ReplicaLagTime time.Duration

	// AlterPartition hands an ISR change, this broker leading, to the
	// active controller; done runs on the loop. nil: the ISR never
	// changes from here (tests of one broker).
	AlterPartition func(req *kmsg.AlterPartitionRequest, done func(kmsg.Response, error))
	// AlterPartitionSent, if set, is told on the loop that this broker
	// just handed an ISR change of topic-partition to AlterPartition: an
	// observation for the simulator, whose nemesis strikes the active
	// controller while the change is in flight. It must not call back.
	AlterPartitionSent func(topic string, partition int32)
	// BrokerEpoch is this broker's epoch from its registration, -1
	// before it registered.
	BrokerEpoch func() int64
	// LeaderRefused, if set, is told that a leader broker's listener
	// refused a follower's connection: its process is gone.
	LeaderRefused func(broker int32)

	// flushObserver is set by the manager: every log reports its flushes
	// to the registry's histograms.
	flushObserver log.FlushObserver
}

// Defaults of Config.
const (
	// DefaultRetentionCheckInterval is Kafka's
	// log.retention.check.interval.ms default.
	DefaultRetentionCheckInterval = 5 * time.Minute
	// DefaultCleanerStepBytes keeps a cleaner step to a few milliseconds
	// of loop time.
	DefaultCleanerStepBytes = 4 << 20
	// DefaultReopenBackoff paces the recovery of a failed log: a disk
	// that is full or failing is not hammered.
	DefaultReopenBackoff = time.Second
	// DefaultReplicaLagTime is Kafka's replica.lag.time.max.ms default.
	DefaultReplicaLagTime = 30 * time.Second
)

func (c Config) withDefaults() Config {
	if c.RetentionCheckInterval <= 0 {
		c.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if c.CleanerStepBytes <= 0 {
		c.CleanerStepBytes = DefaultCleanerStepBytes
	}
	if c.ReopenBackoff <= 0 {
		c.ReopenBackoff = DefaultReopenBackoff
	}
	if c.ReplicaLagTime <= 0 {
		c.ReplicaLagTime = DefaultReplicaLagTime
	}
	if c.LogMaxOpenFilesPerPartition <= 0 {
		c.LogMaxOpenFilesPerPartition = log.DefaultMaxOpenFiles
	}
	return c
}

// topicConfig is a topic's effective configuration, parsed.
type topicConfig struct {
	log log.Config
	// flushMessages and flushInterval are flush.messages and flush.ms.
	// With flushMessages 1 (Strata's default) an acknowledged batch is
	// fsynced and consumers see only durable records; otherwise (Kafka's
	// page-cache mode) the leader acknowledges and exposes appended
	// batches at once and fsyncs every flushMessages messages or
	// flushInterval.
	flushMessages int64
	flushInterval time.Duration
	// timestampType is message.timestamp.type.
	timestampType record.TimestampType
	// timestampBefore and timestampAfter are
	// message.timestamp.before.max.ms and after.max.ms; math.MaxInt64
	// is unbounded.
	timestampBeforeMs, timestampAfterMs int64
	// minInsyncReplicas is min.insync.replicas.
	minInsyncReplicas int
	// partitionMetrics is strata.metrics.partition.enable.
	partitionMetrics bool
}

// durable reports whether acknowledgements wait for fsync.
func (tc topicConfig) durable() bool { return tc.flushMessages <= 1 }

// listener is the listener followers dial on their leaders.
func (cfg Config) listener() string {
	if cfg.Listener == "" {
		return "PLAINTEXT"
	}
	return cfg.Listener
}
