package log

import (
	"fmt"
	"math"
	"time"

	"github.com/strata-log/strata/core/record"
)

// Defaults of Config, Kafka's where Kafka has the setting.
const (
	// DefaultSegmentBytes is segment.bytes: 1 GiB.
	DefaultSegmentBytes = 1 << 30
	// DefaultSegmentTime is segment.ms: 7 days.
	DefaultSegmentTime = 7 * 24 * time.Hour
	// DefaultRetentionTime is retention.ms: 7 days.
	DefaultRetentionTime = 7 * 24 * time.Hour
	// DefaultRetentionBytes is retention.bytes: unlimited.
	DefaultRetentionBytes = -1
	// DefaultIndexIntervalBytes is index.interval.bytes: 4 KiB.
	DefaultIndexIntervalBytes = 4096
	// DefaultSegmentIndexBytes is segment.index.bytes: 10 MiB.
	DefaultSegmentIndexBytes = 10 << 20
	// DefaultMessageMaxBytes is message.max.bytes (max.message.bytes on a
	// topic): 1 MiB plus Kafka's 12 bytes of log overhead.
	DefaultMessageMaxBytes = record.DefaultMaxBatchBytes
	// DefaultMaxOpenFiles bounds the file handles one log keeps open: the
	// active segment's three plus the log files (with their loaded
	// indexes) of the 13 inactive segments read most recently. Catch-up
	// readers rarely touch more; each open inactive segment also holds its
	// index entries in memory (up to segment.index.bytes).
	DefaultMaxOpenFiles = 16
	// DefaultFlushCheckpointInterval is Kafka's
	// log.flush.offset.checkpoint.interval.ms: 60 s.
	DefaultFlushCheckpointInterval = 60 * time.Second
	// DefaultRecoveryCheckpointBytes bounds the data a crash makes recovery
	// rescan: the recovery point is checkpointed at the latest after this
	// many appended bytes have become durable. 256 MiB rescan in well under
	// a second.
	DefaultRecoveryCheckpointBytes = 256 << 20
	// DefaultDeleteRetention is delete.retention.ms: 1 day.
	DefaultDeleteRetention = 24 * time.Hour
	// DefaultMinCleanableDirtyRatio is min.cleanable.dirty.ratio: 0.5.
	DefaultMinCleanableDirtyRatio = 0.5
	// DefaultCleanerDedupeBufferBytes is log.cleaner.dedupe.buffer.size:
	// 128 MiB for the offset map of one cleaning.
	DefaultCleanerDedupeBufferBytes = 128 << 20
)

// Bounds of Config.
const (
	// minSegmentBytes is the smallest segment.bytes: one empty batch.
	minSegmentBytes = record.HeaderSize
	// maxSegmentBytes is the largest segment.bytes: index positions are
	// int32, as in Kafka.
	maxSegmentBytes = math.MaxInt32
	// minSegmentIndexBytes fits one time index entry (the larger kind).
	minSegmentIndexBytes = timeIndexEntryBytes
	// minMaxOpenFiles is the active segment's three files plus one
	// inactive segment's log file, so a read of old data always fits.
	minMaxOpenFiles = 4
	// minCleanerDedupeBufferBytes holds a few keys: the cleaner maps at
	// least one batch per cleaning whatever the bound.
	minCleanerDedupeBufferBytes = 1 << 10
)

// Config configures one partition log. Field docs name the Kafka topic (or
// broker) configuration each field implements. Start from DefaultConfig;
// the zero Config is not valid.
type Config struct {
	// SegmentBytes is segment.bytes: an append that would grow the active
	// segment past it rolls a new one. At most 2^31-1 (positions in the
	// offset index are int32). Default 1 GiB.
	SegmentBytes int64

	// SegmentTime is segment.ms: an append rolls the active segment when
	// its records are this much newer than the segment's first batch
	// (by record timestamps, as Kafka does), or, for batches without
	// timestamps, when the segment was created this long ago by the wall
	// clock (Env.Now). Default 7 days.
	SegmentTime time.Duration

	// RetentionTime is retention.ms: ApplyRetention deletes inactive
	// segments whose largest record timestamp is older than now minus this.
	// Negative means unlimited. Default 7 days.
	RetentionTime time.Duration

	// RetentionBytes is retention.bytes: ApplyRetention deletes the oldest
	// inactive segments while the log stays at least this large without
	// them. Negative means unlimited. Default -1.
	RetentionBytes int64

	// IndexIntervalBytes is index.interval.bytes: the log adds an offset
	// index entry (and maybe a time index entry) for a batch once more than
	// this many bytes were appended since the last entry. Default 4096.
	IndexIntervalBytes int64

	// SegmentIndexBytes is segment.index.bytes: the largest index file of a
	// segment; the log rolls when an index of the active segment is full.
	// Default 10 MiB.
	SegmentIndexBytes int64

	// MessageMaxBytes is max.message.bytes (message.max.bytes on the
	// broker): the largest batch a producer may append, log overhead
	// included. Replicated batches are bounded only by SegmentBytes, since
	// the leader already applied its limit. Default 1048588.
	MessageMaxBytes int

	// MaxOpenFiles bounds the file handles this log keeps open (Strata's
	// own setting). The active segment's three files always count; files
	// of inactive segments are closed, least recently used first, and
	// reopened on demand. Segments pinned by an unreleased ReadResult or
	// waiting for a Sync are never closed, so the bound can be exceeded
	// for as long as they are. Default 16, at least 4.
	MaxOpenFiles int

	// FlushCheckpointInterval is log.flush.offset.checkpoint.interval.ms:
	// the recovery-point checkpoint is rewritten after a flush when it is
	// at least this old and behind. Default 60 s.
	FlushCheckpointInterval time.Duration

	// RecoveryCheckpointBytes (Strata's own) also rewrites the
	// recovery-point checkpoint after a flush once this many bytes were
	// appended since the last one, bounding what recovery rescans after a
	// crash. Default 256 MiB.
	RecoveryCheckpointBytes int64

	// CleanupPolicy is cleanup.policy: CleanupDelete (the default, and the
	// zero value) applies retention.ms and retention.bytes in
	// ApplyRetention; CleanupCompact runs the cleaner (CleanStep) instead
	// and makes Append reject records without a key; CleanupCompactDelete
	// does both.
	CleanupPolicy CleanupPolicy

	// DeleteRetention is delete.retention.ms: how long the cleaner keeps a
	// tombstone (a record with a null value) after it first cleaned it, so
	// that consumers reading from the start see the delete. Default 1 day.
	DeleteRetention time.Duration

	// MinCompactionLag is min.compaction.lag.ms: the cleaner leaves a
	// segment alone while its largest record timestamp is newer than now
	// minus this. Default 0.
	MinCompactionLag time.Duration

	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio: a cleaning
	// starts once the dirty bytes (not yet cleaned) are at least this
	// fraction of the cleanable bytes, or when tombstones it kept have
	// reached their delete horizon. Default 0.5.
	MinCleanableDirtyRatio float64

	// CleanerDedupeBufferBytes is log.cleaner.dedupe.buffer.size, for the
	// one cleaning of this log in progress: it bounds the offset map (key
	// -> latest offset, full keys, about 48 bytes of overhead each) built
	// over the dirty section. A cleaning whose dirty section does not fit
	// cleans up to where the map filled and leaves the rest for the next.
	// Default 128 MiB.
	CleanerDedupeBufferBytes int64

	// TxnIndex (Strata's own; Kafka always keeps one) keeps a
	// transaction index per segment (.txnindex, txnindex.go): the owner
	// appends aborted transactions (AppendAbortedTxn) and reads them back
	// (AbortedTxns), and the cleaner removes aborted transactions' data
	// and, after delete.retention.ms, their markers. Off, the log writes
	// no entry and the cleaner copies transactional batches unchanged.
	// Default off; core/replica turns it on for every partition.
	TxnIndex bool

	// OnFlush, if set, learns of every completed flush cycle (Strata's
	// own, for metrics). An interface rather than a func so that Configs
	// stay comparable (a pointer compares by identity).
	OnFlush FlushObserver
}

// FlushObserver learns of every completed flush cycle: the bytes appended
// since the previous cycle that this one made durable, and how long it
// took from its start to its completion by Env.Monotonic. ObserveFlush
// runs on the loop, before the cycle's waiters, and must not call back
// into the log.
type FlushObserver interface {
	ObserveFlush(bytes int64, took time.Duration)
}

// DefaultConfig returns Kafka's defaults (and Strata's for its own
// settings).
func DefaultConfig() Config {
	return Config{
		SegmentBytes:            DefaultSegmentBytes,
		SegmentTime:             DefaultSegmentTime,
		RetentionTime:           DefaultRetentionTime,
		RetentionBytes:          DefaultRetentionBytes,
		IndexIntervalBytes:      DefaultIndexIntervalBytes,
		SegmentIndexBytes:       DefaultSegmentIndexBytes,
		MessageMaxBytes:         DefaultMessageMaxBytes,
		MaxOpenFiles:            DefaultMaxOpenFiles,
		FlushCheckpointInterval: DefaultFlushCheckpointInterval,
		RecoveryCheckpointBytes: DefaultRecoveryCheckpointBytes,

		CleanupPolicy:            CleanupDelete,
		DeleteRetention:          DefaultDeleteRetention,
		MinCleanableDirtyRatio:   DefaultMinCleanableDirtyRatio,
		CleanerDedupeBufferBytes: DefaultCleanerDedupeBufferBytes,
	}
}

// Validate reports the first field out of range, as an error wrapping
// ErrInvalidConfig that names the Kafka setting.
func (c Config) Validate() error {
	bad := func(name string, v any, want string) error {
		return fmt.Errorf("%w: %s = %v, want %s", ErrInvalidConfig, name, v, want)
	}
	switch {
	case c.SegmentBytes < minSegmentBytes || c.SegmentBytes > maxSegmentBytes:
		return bad("segment.bytes", c.SegmentBytes, fmt.Sprintf("%d..%d", minSegmentBytes, maxSegmentBytes))
	case c.SegmentTime < time.Millisecond:
		return bad("segment.ms", c.SegmentTime, "at least 1ms")
	case c.IndexIntervalBytes < 0:
		return bad("index.interval.bytes", c.IndexIntervalBytes, "at least 0")
	case c.SegmentIndexBytes < minSegmentIndexBytes || c.SegmentIndexBytes > math.MaxInt32:
		return bad("segment.index.bytes", c.SegmentIndexBytes, fmt.Sprintf("%d..%d", minSegmentIndexBytes, math.MaxInt32))
	case c.MessageMaxBytes < record.HeaderSize:
		return bad("max.message.bytes", c.MessageMaxBytes, fmt.Sprintf("at least %d (one batch header)", record.HeaderSize))
	case c.MaxOpenFiles < minMaxOpenFiles:
		return bad("max open files", c.MaxOpenFiles, fmt.Sprintf("at least %d", minMaxOpenFiles))
	case c.FlushCheckpointInterval <= 0:
		return bad("log.flush.offset.checkpoint.interval.ms", c.FlushCheckpointInterval, "positive")
	case c.RecoveryCheckpointBytes <= 0:
		return bad("recovery checkpoint bytes", c.RecoveryCheckpointBytes, "positive")
	case !c.CleanupPolicy.valid():
		return bad("cleanup.policy", c.CleanupPolicy, "delete, compact or compact,delete")
	case c.DeleteRetention < 0:
		return bad("delete.retention.ms", c.DeleteRetention, "at least 0")
	case c.MinCompactionLag < 0:
		return bad("min.compaction.lag.ms", c.MinCompactionLag, "at least 0")
	case !(c.MinCleanableDirtyRatio >= 0 && c.MinCleanableDirtyRatio <= 1):
		return bad("min.cleanable.dirty.ratio", c.MinCleanableDirtyRatio, "0..1")
	case c.CleanupPolicy.Compacts() && c.CleanerDedupeBufferBytes < minCleanerDedupeBufferBytes:
		return bad("log.cleaner.dedupe.buffer.size", c.CleanerDedupeBufferBytes, fmt.Sprintf("at least %d", minCleanerDedupeBufferBytes))
	}
	return nil
}

// maxOffsetIndexEntries and maxTimeIndexEntries are the entries a full index
// holds (Kafka's maxEntries).
func (c Config) maxOffsetIndexEntries() int { return int(c.SegmentIndexBytes / offsetIndexEntryBytes) }
func (c Config) maxTimeIndexEntries() int   { return int(c.SegmentIndexBytes / timeIndexEntryBytes) }
