package txn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config is a shard's configuration: the broker's transaction settings
// (Kafka's key names in server.properties) and the shard's effects.
type Config struct {
	// MaxTimeout is transaction.max.timeout.ms (15 min): an
	// InitProducerId asking for a longer transaction.timeout.ms gets
	// INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms (7 days): an id
	// without a transaction in progress that was not updated this long is
	// forgotten (tombstoned).
	IDExpiration time.Duration
	// AbortCheckInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s):
	// how often transactions past their timeout are aborted and expired ids
	// removed.
	AbortCheckInterval time.Duration
	// MarkerRetryBackoff is the first pause before markers are sent again
	// to partitions that failed them; it doubles up to
	// MarkerRetryBackoffMax (Kafka: retry.backoff.ms, 100 ms).
	MarkerRetryBackoff, MarkerRetryBackoffMax time.Duration
	// CoordinatorEpoch is the leader epoch of the shard's
	// __transaction_state partition, carried in the markers so partitions
	// refuse markers of a deposed coordinator.
	CoordinatorEpoch int32

	// Write appends records to the shard's partition and runs done once
	// they are committed, or with why not.
	Write func(recs []Record, done func(error))
	// AllocateProducerID hands out a new producer id (the broker's
	// blocks from the controller), or the error code to answer.
	AllocateProducerID func(done func(id int64, err *kerr.Error))
	// Markers sends transaction markers to partition leaders.
	Markers MarkerSender
	// PartitionExists reports whether the metadata image has the
	// partition; AddPartitionsToTxn refuses others with
	// UNKNOWN_TOPIC_OR_PARTITION. Nil: every partition exists.
	PartitionExists func(topic string, partition int32) bool
}

// Defaults are Kafka's.
const (
	DefaultMaxTimeout            = 15 * time.Minute
	DefaultIDExpiration          = 7 * 24 * time.Hour
	DefaultAbortCheckInterval    = 10 * time.Second
	DefaultMarkerRetryBackoff    = 100 * time.Millisecond
	DefaultMarkerRetryBackoffMax = 5 * time.Second
)

func (c Config) withDefaults() Config {
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.IDExpiration <= 0 {
		c.IDExpiration = DefaultIDExpiration
	}
	if c.AbortCheckInterval <= 0 {
		c.AbortCheckInterval = DefaultAbortCheckInterval
	}
	if c.MarkerRetryBackoff <= 0 {
		c.MarkerRetryBackoff = DefaultMarkerRetryBackoff
	}
	if c.MarkerRetryBackoffMax < c.MarkerRetryBackoff {
		c.MarkerRetryBackoffMax = max(DefaultMarkerRetryBackoffMax, c.MarkerRetryBackoff)
	}
	if c.PartitionExists == nil {
		c.PartitionExists = func(string, int32) bool { return true }
	}
	return c
}
