package producer

import (
	"fmt"
	"time"
)

// Defaults of Config, named after the Kafka settings they mirror.
const (
	// DefaultExpirationTime is producer.id.expiration.ms: 1 day
	// (86400000 ms). A producer whose last batch is older than this is
	// forgotten by Expire and when a snapshot is loaded.
	DefaultExpirationTime = 24 * time.Hour
	// DefaultExpirationCheckInterval is
	// producer.id.expiration.check.interval.ms: 10 minutes (600000 ms), the
	// period of the owner's timer that calls Expire.
	DefaultExpirationCheckInterval = 10 * time.Minute
)

// Bounds of the package. None is configurable: each is fixed by Kafka's
// protocol or file format, or guards against a damaged file.
const (
	// maxBatchesRetained is how many of its latest batches a producer's
	// entry keeps, in batches: Kafka's ProducerStateEntry
	// NUM_BATCHES_TO_RETAIN, which matches the producer's
	// max.in.flight.requests.per.connection limit for idempotence (5), so a
	// retry of any batch still in flight is recognised as a duplicate.
	maxBatchesRetained = 5
	// maxSnapshotBytes bounds the size of a snapshot file read back, in
	// bytes: 1 GiB, about 23 million producers at snapshotEntryBytes each.
	// A larger file is treated as damaged rather than read into memory.
	maxSnapshotBytes = 1 << 30
	// snapshotReadAttempts bounds the reads of one snapshot file, in reads:
	// env reads may flip a bit, so a snapshot that fails its checks is
	// read again until one read passes or two agree (see Snapshots.read).
	snapshotReadAttempts = 4
)

// Config is one partition's producer state configuration. Zero fields take
// the defaults above.
type Config struct {
	// ExpirationTime is producer.id.expiration.ms: a producer is forgotten
	// once this long has passed since the timestamp of its last batch
	// (see Producer.LastTimestamp). Kafka requires at least 1 ms.
	ExpirationTime time.Duration
	// ExpirationCheckInterval is producer.id.expiration.check.interval.ms:
	// how often the owner should call Expire. The package itself keeps no
	// timer.
	ExpirationCheckInterval time.Duration
}

// DefaultConfig returns the configuration with every default.
func DefaultConfig() Config {
	return Config{
		ExpirationTime:          DefaultExpirationTime,
		ExpirationCheckInterval: DefaultExpirationCheckInterval,
	}
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.ExpirationTime == 0 {
		c.ExpirationTime = DefaultExpirationTime
	}
	if c.ExpirationCheckInterval == 0 {
		c.ExpirationCheckInterval = DefaultExpirationCheckInterval
	}
	return c
}

// Validate reports the first field out of range (after defaults), as an
// error wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.ExpirationTime < time.Millisecond:
		return fmt.Errorf("%w: producer.id.expiration.ms = %v, want at least 1ms", ErrInvalidConfig, c.ExpirationTime)
	case c.ExpirationCheckInterval < time.Millisecond:
		return fmt.Errorf("%w: producer.id.expiration.check.interval.ms = %v, want at least 1ms", ErrInvalidConfig, c.ExpirationCheckInterval)
	}
	return nil
}
