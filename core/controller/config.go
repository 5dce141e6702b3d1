package controller

import (
	"math"
	"time"

	"github.com/strata-log/strata/core/meta"
)

// Defaults of Config, named after the Kafka settings they mirror.
const (
	// DefaultSessionTimeout is broker.session.timeout.ms: a broker that
	// has not heartbeated for this long is fenced.
	DefaultSessionTimeout = 9 * time.Second
	// DefaultLeaderImbalanceCheckInterval is
	// leader.imbalance.check.interval.seconds' default.
	DefaultLeaderImbalanceCheckInterval = 300 * time.Second
	// DefaultNumPartitions is num.partitions: the partition count of a
	// CreateTopics entry that asks for -1.
	DefaultNumPartitions int32 = 1
	// DefaultReplicationFactor is default.replication.factor: the
	// replication factor of a CreateTopics entry that asks for -1.
	DefaultReplicationFactor int16 = 1
	// DefaultMaxRecordsPerBatch bounds the records of one proposal, as
	// Kafka's MAX_RECORDS_PER_USER_OP bounds one controller operation.
	DefaultMaxRecordsPerBatch = 10_000
	// DefaultMaxBatchBytes bounds the encoded record values of one
	// proposal, in bytes. With DefaultMaxRecordsPerBatch it stays below the
	// quorum's default proposal bound (8 MiB including a 16-byte overhead
	// per record).
	DefaultMaxBatchBytes = 4 << 20
	// DefaultMaxReplicationFactor bounds the replicas of a new partition:
	// no bound but the active brokers, as in Kafka, since partitions
	// replicate (issue 11). It was 1 until then, so that a topic the
	// brokers could not keep replicated was refused rather than created
	// under-replicated.
	DefaultMaxReplicationFactor = math.MaxInt16
	// DefaultMaxPendingRecords bounds the records proposed but not yet
	// committed. Past it the controller refuses new writes with
	// REQUEST_TIMED_OUT (retriable) until commits catch up, instead of
	// growing without bound while the quorum cannot commit.
	DefaultMaxPendingRecords = 100_000
)

// ProducerIDBlockSize is the number of producer ids AllocateProducerIDs
// hands out at once (Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const ProducerIDBlockSize = 1000

// Config is the controller's configuration. The zero value of a field
// selects its default.
type Config struct {
	// ClusterID is the cluster's id; a BrokerRegistration naming another
	// cluster gets INCONSISTENT_CLUSTER_ID. Empty skips the check.
	ClusterID string
	// SessionTimeout is broker.session.timeout.ms (DefaultSessionTimeout).
	SessionTimeout time.Duration
	// DefaultNumPartitions is num.partitions (DefaultNumPartitions).
	DefaultNumPartitions int32
	// DefaultReplicationFactor is default.replication.factor
	// (DefaultReplicationFactor).
	DefaultReplicationFactor int16
	// MaxReplicationFactor bounds the replication factor of a new topic
	// or partition, in replicas (DefaultMaxReplicationFactor). A
	// CreateTopics (or an auto-creation) asking for more, by count, by
	// default.replication.factor or by a manual assignment, and a
	// CreatePartitions adding partitions to a topic with more replicas,
	// get INVALID_REPLICATION_FACTOR naming the bound.
	MaxReplicationFactor int
	// TopicDeletionDisabled is delete.topic.enable=false: DeleteTopics
	// answers TOPIC_DELETION_DISABLED.
	TopicDeletionDisabled bool
	// UncleanLeaderElection is the cluster-wide
	// unclean.leader.election.enable, used for topics that do not set it
	// and when the cluster config resource does not either.
	UncleanLeaderElection bool
	// NoAutoLeaderRebalance is auto.leader.rebalance.enable=false; by
	// default, every LeaderImbalanceCheckInterval the active controller
	// gives each partition led by another replica back to its preferred
	// replica (the first of its assignment) when that one is in the ISR
	// and active, as a preferred ElectLeaders would.
	NoAutoLeaderRebalance bool
	// LeaderImbalanceCheckInterval is
	// leader.imbalance.check.interval.seconds
	// (DefaultLeaderImbalanceCheckInterval).
	LeaderImbalanceCheckInterval time.Duration
	// OnUncleanElection, if set, is told of every leader this controller
	// elects from outside the ISR (the owner counts and logs them).
	OnUncleanElection func(topic string, partition, leader int32)
	// MaxRecordsPerBatch bounds the records of one proposal
	// (DefaultMaxRecordsPerBatch).
	MaxRecordsPerBatch int
	// MaxBatchBytes bounds the encoded bytes of one proposal
	// (DefaultMaxBatchBytes). Keep it below the quorum's proposal bound.
	MaxBatchBytes int
	// MaxPendingRecords bounds the records proposed and not yet committed
	// (DefaultMaxPendingRecords).
	MaxPendingRecords int
	// BootstrapRecords are written by the first active controller of a
	// new cluster, before anything else, when the metadata log holds no
	// state yet: Kafka's bootstrap.checkpoint, here the KIP-900 SCRAM
	// credentials of `strata storage format --add-scram`. The owner
	// checks that they replay on the empty image; nil writes nothing.
	BootstrapRecords []meta.Record
}

// withDefaults fills the zero fields of c with their defaults.
func (c Config) withDefaults() Config {
	if c.LeaderImbalanceCheckInterval <= 0 {
		c.LeaderImbalanceCheckInterval = DefaultLeaderImbalanceCheckInterval
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.DefaultNumPartitions <= 0 {
		c.DefaultNumPartitions = DefaultNumPartitions
	}
	if c.DefaultReplicationFactor <= 0 {
		c.DefaultReplicationFactor = DefaultReplicationFactor
	}
	if c.MaxReplicationFactor <= 0 {
		c.MaxReplicationFactor = DefaultMaxReplicationFactor
	}
	if c.MaxRecordsPerBatch <= 0 {
		c.MaxRecordsPerBatch = DefaultMaxRecordsPerBatch
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.MaxPendingRecords <= 0 {
		c.MaxPendingRecords = DefaultMaxPendingRecords
	}
	return c
}
