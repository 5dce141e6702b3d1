package log

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the package returns wraps one of these (or an
// error of core/record or core/env, such as record.ErrInvalidRecord or
// env.ErrNoSpace, which it passes through with context); test with
// errors.Is.
var (
	// ErrOffsetOutOfRange: an offset outside [LogStartOffset, LogEndOffset].
	// Meant to become OFFSET_OUT_OF_RANGE.
	ErrOffsetOutOfRange = errors.New("log: offset out of range")

	// ErrLogFailed: a Sync, SyncDir or write failed, so what the log holds
	// on disk is unknown (after a failed fsync the page cache may show
	// writes that never reach the disk). The log refuses every operation
	// from then on; the node takes the log directory offline (Kafka's
	// KAFKA_STORAGE_ERROR) and a restart recovers from what is durable.
	ErrLogFailed = errors.New("log: failed")

	// ErrStorageUnavailable: Open met an I/O error (env.ErrIO) from the
	// disk while it recovered the log: a read that failed, or a change the
	// disk refused. A filesystem whose directory sync failed refuses every
	// change until the machine restarts (see env.Disk), and recovery must
	// change things (cut a torn tail, rewrite indexes, sync what a previous
	// incarnation left unsynced). Open returns no log and has changed
	// nothing a later Open does not redo, so the owner (a supervisor, the
	// KRaft member, the partition manager) restarts and retries Open
	// later; an operator reboots a machine whose filesystem stays
	// read-only. The error also wraps the disk's error. Damaged data is
	// ErrCorrupt instead, which a retry does not cure.
	ErrStorageUnavailable = errors.New("log: storage unavailable; retry Open after a restart")

	// ErrCorrupt: stored bytes that recovery, a read or Verify must trust
	// are not valid batches: a CRC mismatch, a broken length or an offset
	// that goes backwards, confirmed by a re-read. The error is a
	// *CorruptError naming the file and position. Recovery never drops such
	// data silently: before the recovery point it fails Open.
	ErrCorrupt = errors.New("log: corrupt data")

	// ErrInvalidRecords: a stored batch whose CRC matches holds records
	// that do not parse (a producer's invalid batch the log kept). It
	// refines ErrCorrupt where the cleaner or a timestamp search meets
	// one, and is not damage of the disk: every replica holds the same
	// bytes (DamagedSegment).
	ErrInvalidRecords = errors.New("log: a stored batch holds records that do not parse")

	// ErrClosed: the log was closed (or is shutting down).
	ErrClosed = errors.New("log: closed")

	// ErrInvalidConfig: a Config field is out of its range.
	ErrInvalidConfig = errors.New("log: invalid config")

	// ErrInvalidLeaderEpoch: an append carries a leader epoch below the
	// latest one the log has seen, or a negative one on the leader path.
	// Leader epochs never decrease within a log.
	ErrInvalidLeaderEpoch = errors.New("log: invalid leader epoch")

	// ErrBusy: the log is making a truncation (Truncate,
	// TruncateFullyAndStartAt) or the changes recovery made durable, and
	// accepts no other change until that is done: until the truncation's
	// callback has run, or, after Open, until a Flush issued then calls
	// back. Reads and flushes go on. Busy reports the state.
	ErrBusy = errors.New("log: busy making a truncation or recovery durable")

	// ErrUnexpectedOffset: a replicated batch does not continue the log: its
	// base offset is below the log end offset or below the previous
	// batch's last offset (Kafka's UnexpectedAppendOffsetException).
	ErrUnexpectedOffset = errors.New("log: unexpected append offset")

	// ErrInvalidArgument is returned for a call the log cannot take as
	// asked (an aborted transaction out of order or outside its
	// segment, a transaction index call on a log without one).
	ErrInvalidArgument = errors.New("log: invalid argument")
)

// CorruptError is the detailed form of ErrCorrupt: which file, where, and
// what was wrong.
type CorruptError struct {
	// File is the path of the file on the Disk.
	File string
	// Position is the byte position in the file where the bad batch (or
	// entry) starts.
	Position int64
	// Detail says what was found.
	Detail string
	// Err is the underlying error, often a core/record error such as
	// record.ErrCRCMismatch, or nil.
	Err error
}

// Error formats the file, position, detail and cause.
func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("log: corrupt data in %s at position %d: %s", e.File, e.Position, e.Detail)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes ErrCorrupt and the cause to errors.Is and errors.As.
func (e *CorruptError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCorrupt}
	}
	return []error{ErrCorrupt, e.Err}
}

func corruptAt(file string, pos int64, cause error, format string, args ...any) error {
	return &CorruptError{File: file, Position: pos, Detail: fmt.Sprintf(format, args...), Err: cause}
}

// ReadError is a read of one of the log's files that failed (a page the
// disk cannot read: env.ErrIO in its chain), naming the file and the
// position read.
type ReadError struct {
	File     string
	Position int64
	Err      error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("log: read %s at %d: %v", e.File, e.Position, e.Err)
}

// Unwrap exposes the disk's error.
func (e *ReadError) Unwrap() error { return e.Err }
