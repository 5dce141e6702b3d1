package log

import (
	"fmt"
	"log/slog"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/record"
)

// Log is one partition's log in a directory of an env.Disk. It belongs to
// the event loop of the Env it was opened with: every method must run on
// that loop, and every callback it takes runs there later, never inline.
type Log struct {
	e      env.Env
	disk   env.Disk
	dir    string
	cfg    Config
	logger *slog.Logger

	// segs are the segments by base offset; the last is the active one.
	// There is always at least one.
	segs []*segment
	// logStart is the log start offset: reads below it are out of range.
	logStart int64
	// hw is the high watermark, set by the replication layer.
	hw     int64
	epochs epochCache

	fl flushState

	openFiles int
	useTick   uint64
	// idleMark is useTick at the last ReleaseIdleFiles.
	idleMark uint64

	// failed is set, wrapping ErrLogFailed, once durability is unknown.
	failed  error
	closed  bool
	closing bool // Shutdown in progress: no more changes
	// trunc is the truncation in progress (see truncate.go).
	trunc *truncation
	// clean is the log cleaner's state (clean.go), nil until first used.
	clean *cleanState
	// txn is where the transaction index is known complete (txnindex.go).
	txn txnState

	// Scratch space, reused across calls.
	hdr       [headerReadBytes]byte
	indexBuf  []byte
	batches   []record.Batch
	dec       *record.Decompressor
	records   *record.RecordReader
	validator *record.Validator // Append's, for producers' batches
}

// Dir is the log's directory on its Disk.
func (l *Log) Dir() string { return l.dir }

// Config is the configuration the log was opened with.
func (l *Log) Config() Config { return l.cfg }

// LogStartOffset is the first offset a read may ask for.
func (l *Log) LogStartOffset() int64 { return l.logStart }

// LogEndOffset is the offset the next appended record gets (LEO).
func (l *Log) LogEndOffset() int64 { return l.active().next }

// ActiveSegmentBase is the base offset of the active segment: it changes
// when the log rolls (the owner snapshots its producer state then).
func (l *Log) ActiveSegmentBase() int64 { return l.active().base }

// HighWatermark is the high watermark last set (the log start offset after
// Open, until the replication layer sets it).
func (l *Log) HighWatermark() int64 { return l.hw }

// SetHighWatermark moves the high watermark to hw. The replication layer
// owns its value; the log keeps it for reads (Read's maxOffset), retention
// (only segments below it are deleted) and DeleteRecordsBefore. It never
// moves backwards (only Truncate lowers it) and never passes the log end
// offset: both are invariants, asserted.
func (l *Log) SetHighWatermark(hw int64) {
	assert.NotDecreasing("high watermark", l.hw, hw)
	assert.That(hw <= l.LogEndOffset(), "high watermark %d beyond log end offset %d", hw, l.LogEndOffset())
	l.hw = hw
}

// DurableOffset is the offset below which every batch is known durable in
// this incarnation: covered by a successful flush, or at or below the
// recovery point Open found.
func (l *Log) DurableOffset() int64 { return l.fl.durableOffset }

// RecoveryPoint is the recovery point in the checkpoint file as last made
// durable: where the next Open would start scanning.
func (l *Log) RecoveryPoint() int64 { return l.fl.checkpointed.recoveryPoint }

// LatestEpoch is the latest leader epoch that appended to the log, or
// UndefinedEpoch.
func (l *Log) LatestEpoch() int32 { return l.epochs.latestEpoch() }

// EndOffsetForEpoch answers OffsetForLeaderEpoch: for the latest epoch it
// is the log end offset; for an older one the start offset of the first
// newer epoch, returned with the largest epoch at or below the one asked
// for (a follower truncates to it); for an epoch newer than any,
// (UndefinedEpoch, UndefinedEpochOffset).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return l.epochs.view(l.logStart).endOffsetFor(epoch, l.LogEndOffset())
}

// EpochForOffset returns the leader epoch that wrote offset, as the epoch
// cache knows it, or UndefinedEpoch.
func (l *Log) EpochForOffset(offset int64) int32 {
	return l.epochs.view(l.logStart).epochFor(offset)
}

// LeaderEpochEntry is one entry of the leader epoch cache: leader epoch
// Epoch wrote its first batch at StartOffset (or the log start offset, if
// that is later).
type LeaderEpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// LeaderEpochs returns the leader epoch cache, oldest epoch first.
func (l *Log) LeaderEpochs() []LeaderEpochEntry {
	v := l.epochs.view(l.logStart)
	out := make([]LeaderEpochEntry, len(v.entries))
	for i, e := range v.entries {
		out[i] = LeaderEpochEntry{Epoch: e.epoch, StartOffset: e.startOffset}
	}
	return out
}

// Busy reports whether the log refuses changes with ErrBusy: a truncation
// is in progress, or Open's recovery changed the disk and those changes are
// not durable yet (a Flush issued now calls back once they are).
func (l *Log) Busy() bool { return l.trunc != nil || l.fl.settle }

// Err returns the error that failed the log, or nil.
func (l *Log) Err() error { return l.failed }

// SegmentInfo describes one segment (for DescribeLogDirs, tools and tests).
type SegmentInfo struct {
	// BaseOffset is the offset in the segment's file name.
	BaseOffset int64
	// NextOffset is the offset after the segment's last batch (for
	// inactive segments whose files Open trusted, the next segment's base
	// offset).
	NextOffset int64
	// Size is the segment file's size in bytes.
	Size int64
	// MaxTimestamp is the largest batch timestamp, or -1.
	MaxTimestamp int64
	// Active marks the segment appends go to.
	Active bool
}

// Segments lists the segments in offset order.
func (l *Log) Segments() []SegmentInfo {
	out := make([]SegmentInfo, len(l.segs))
	for i, s := range l.segs {
		out[i] = SegmentInfo{BaseOffset: s.base, NextOffset: s.next, Size: s.size, MaxTimestamp: s.maxTs, Active: i == len(l.segs)-1}
	}
	return out
}

// SegmentEndFor is where the segment holding offset ends: the next
// segment's base offset, or the log end offset for the active segment. A
// Read's region lies within one segment, so this bounds the offsets it
// returns (Kafka's upper bound for a fetch's aborted transactions).
func (l *Log) SegmentEndFor(offset int64) int64 {
	i := l.segmentFor(offset)
	if i+1 < len(l.segs) {
		return l.segs[i+1].base
	}
	return l.LogEndOffset()
}

// NumSegments is the number of segments, the active one included.
func (l *Log) NumSegments() int { return len(l.segs) }

// OpenFiles is how many file handles the log holds open now (see
// Config.MaxOpenFiles).
func (l *Log) OpenFiles() int { return l.openFiles }

// Size is the total size of the segment files in bytes.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// usable reports why the log cannot be used, if it cannot.
func (l *Log) usable() error {
	if l.closed {
		return fmt.Errorf("%w: %s", ErrClosed, l.dir)
	}
	return l.failed
}

// mutable reports why the log cannot change, if it cannot.
func (l *Log) mutable() error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.closing {
		return fmt.Errorf("%w: %s is shutting down", ErrClosed, l.dir)
	}
	if l.Busy() {
		return fmt.Errorf("%w: %s", ErrBusy, l.dir)
	}
	return nil
}

// fail marks the log failed (once), leaves a failure marker for the next
// Open (failure.go) and returns the error. Pending flush callbacks get it.
func (l *Log) fail(cause error) error {
	if l.failed == nil {
		l.failed = fmt.Errorf("%w: %s: %w", ErrLogFailed, l.dir, cause)
		l.logger.Error("log failed; it takes no more writes until it is opened again", "dir", l.dir, "err", cause)
		l.markFailed()
		l.failWaiters(l.failed)
	}
	return l.failed
}

// Close releases every file handle without waiting for durability: data not
// yet flushed stays in the page cache, subject to the Disk's durability
// model, and the checkpoints keep their last durable values, so the next
// Open may rescan more. Pending Flush callbacks get ErrClosed. Use Shutdown
// for a clean close. Closing twice is a no-op.
func (l *Log) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	l.failWaiters(fmt.Errorf("%w: %s", ErrClosed, l.dir))
	l.closeCleaner()
	for _, s := range l.segs {
		if s.pins == 0 {
			l.closeFiles(s)
		}
	}
	return nil
}
