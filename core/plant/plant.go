// Package plant holds the durability, ordering and authorization bugs that tests plant in
// core code to prove that the simulator's sweeps find them (issue 10,
// item 7). In a normal build Is is a constant false, so the planted code
// is dead and compiled away: production binaries cannot plant anything.
// Built with the strata_plant tag (only the planted-bug tests are), a
// test may Set one bug at a time.
package plant

// Bug is one plantable bug.
type Bug uint8

// The bugs.
const (
	None Bug = iota
	// LogSkipFsync: the log's flush reports its files synced without
	// syncing them (core/log).
	LogSkipFsync
	// AckBeforeFsync: a partition acknowledges acks=1/all produces
	// before their batches are fsynced (core/replica).
	AckBeforeFsync
	// AppendDuplicates: a partition appends an idempotent producer's
	// retried batch again instead of answering it as a duplicate
	// (core/replica).
	AppendDuplicates
	// FetchSkipsAhead: the broker reads a partition from one past the
	// fetch offset (core/broker), so a consumer can miss a record.
	FetchSkipsAhead
	// AckBeforeISR: a leader answers acks=all once its own log has the
	// batch durably, without waiting for the ISR (core/replica).
	AckBeforeISR
	// HighWatermarkFromLogEnd: a leader moves the high watermark to its
	// log end, durable or not, ignoring the followers (core/replica).
	HighWatermarkFromLogEnd
	// LeaderOutsideISR: the controller elects any active replica, in the
	// ISR or not (core/controller).
	LeaderOutsideISR
	// FollowerKeepsLostTail: a leader whose log reopened without its
	// unfsynced tail lets a follower that fetched that tail keep it
	// (core/replica).
	FollowerKeepsLostTail
	// GroupStaleCommit: the group coordinator accepts an OffsetCommit
	// from any member id and generation, current or not (core/group).
	GroupStaleCommit
	// GroupCommitBeforeWrite: the group coordinator answers an
	// OffsetCommit before its records are committed (core/group).
	GroupCommitBeforeWrite
	// GroupReplayDropsLastOffset: a coordinator loading its partition
	// drops the last offset record it replayed (core/group).
	GroupReplayDropsLastOffset
	// GroupStaleAssignment: a member whose assignment in a new
	// generation is smaller than its previous one keeps the previous one
	// (core/group), so two members own a partition in a generation.
	GroupStaleAssignment
	// GroupHeartbeatKeepsNoSession: a heartbeat does not restart the
	// member's session timer (core/group).
	GroupHeartbeatKeepsNoSession
	// GroupSyncBeforeWrite: the group coordinator answers the SyncGroups
	// of a new generation before the group record with its assignment
	// is committed (core/group).
	GroupSyncBeforeWrite
	// TxnReadPastLSO: the broker serves a read_committed fetch as a
	// read_uncommitted one, up to the high watermark (core/broker).
	TxnReadPastLSO
	// TxnAbortedNotListed: a read_committed fetch answers no aborted
	// transactions (core/broker), so the consumer delivers their batches.
	TxnAbortedNotListed
	// TxnMarkerRetryDropped: the coordinator takes a failed marker as
	// written, so a transaction completes without every partition's
	// marker (core/txn).
	TxnMarkerRetryDropped
	// TxnSkipEpochBump: the coordinator ends a KIP-890 part 2
	// transaction (EndTxn v5+) without bumping the producer epoch
	// (core/txn), so an EndTxn of a finished transaction, delivered
	// late, decides the producer's next one (KAFKA-17754).
	TxnSkipEpochBump
	// SkipRecordValidation: a leader appends a producer's batch after its
	// header checks (CRC, counts, producer fields) without decompressing
	// or parsing its records (core/replica), as Strata did on
	// delete-policy topics before issue 22: garbage records, skipping
	// offset deltas and decompression bombs are stored.
	SkipRecordValidation
	// AllowIgnoresDeny: the authorizer allows a request that an ALLOW
	// binding matches even when a DENY binding matches it too (core/acl),
	// so DENY no longer wins over ALLOW.
	AllowIgnoresDeny
	// MetadataLeaksTopic: an all-topics Metadata answer lists every topic,
	// those the principal may not DESCRIBE too (core/broker).
	MetadataLeaksTopic
)

func (b Bug) String() string {
	return [...]string{"none", "log-skip-fsync", "ack-before-fsync", "append-duplicates", "fetch-skips-ahead",
		"ack-before-isr", "high-watermark-from-log-end", "leader-outside-isr",
		"follower-keeps-lost-tail", "group-stale-commit", "group-commit-before-write", "group-replay-drops-last-offset",
		"group-stale-assignment", "group-heartbeat-keeps-no-session", "group-sync-before-write",
		"txn-read-past-lso", "txn-aborted-not-listed", "txn-marker-retry-dropped",
		"txn-skip-epoch-bump", "skip-record-validation", "allow-ignores-deny", "metadata-leaks-topic"}[b]
}

// Bugs lists every plantable bug (the planted-bug test's table must cover
// each).
var Bugs = []Bug{LogSkipFsync, AckBeforeFsync, AppendDuplicates, FetchSkipsAhead, AckBeforeISR, HighWatermarkFromLogEnd, LeaderOutsideISR, FollowerKeepsLostTail,
	GroupStaleCommit, GroupCommitBeforeWrite, GroupReplayDropsLastOffset, GroupStaleAssignment, GroupHeartbeatKeepsNoSession,
	GroupSyncBeforeWrite, TxnReadPastLSO, TxnAbortedNotListed, TxnMarkerRetryDropped, TxnSkipEpochBump, SkipRecordValidation,
	AllowIgnoresDeny, MetadataLeaksTopic}
