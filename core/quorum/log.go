package quorum

// Log is the replicated log as the Raft reads and writes it: entries with
// their epochs, the leader-epoch cache, and snapshots. Writes are
// synchronous (they reach the page cache); durability is separate and comes
// from the driver's sync, requested through Ready.SyncLog, which must cover
// every write made through the Log before the request was issued, including
// truncations and snapshot installs.
//
// The Raft is the only writer of the log's entries. The state machine reads
// snapshots and may write its own (then calls Raft.SnapshotTaken).
//
// Offsets are dense: entries occupy [StartOffset, EndOffset) with no gaps.
// Epochs never decrease along the log.
type Log interface {
	// StartOffset is the offset of the first entry held: 0, or a snapshot's
	// end offset once the log was trimmed. The log remembers the epoch of
	// the entry just before it (the start epoch; 0 at offset 0).
	StartOffset() int64

	// EndOffset is the offset the next entry will get, with the epoch of the
	// last entry (the start epoch when the log holds no entry).
	EndOffset() OffsetAndEpoch

	// EndOffsetForEpoch answers Kafka's leader-epoch-cache question: the
	// largest epoch E <= epoch held in the log, counting the start epoch as
	// held by the entry before StartOffset, and the end offset of E (the
	// offset just after its last entry). ok is false when every epoch held
	// is above epoch.
	EndOffsetForEpoch(epoch int32) (end OffsetAndEpoch, ok bool)

	// Entries returns copies of entries from offset from, in order, stopping
	// before maxBytes (by Entry.Size) is exceeded but always returning at
	// least one entry when from < EndOffset. StartOffset <= from <=
	// EndOffset.
	Entries(from int64, maxBytes int) []Entry

	// Append adds entries at EndOffset. Their offsets continue the log and
	// their epochs do not decrease.
	Append(entries []Entry)

	// TruncateTo removes every entry at or above offset, which lies in
	// [StartOffset, EndOffset].
	TruncateTo(offset int64)

	// TrimPrefix removes every entry below offset, which lies in
	// [StartOffset, EndOffset] and is covered by the latest snapshot.
	TrimPrefix(offset int64)

	// LatestSnapshot returns the id of the newest complete snapshot.
	LatestSnapshot() (SnapshotID, bool)

	// ReadSnapshot reads up to maxBytes of the snapshot id from position,
	// and returns the snapshot's total size. It fails when id is not held.
	ReadSnapshot(id SnapshotID, position int64, maxBytes int) (data []byte, size int64, err error)

	// WriteSnapshotChunk writes data at position of the snapshot id being
	// fetched. Position 0 starts it over, discarding any other partial
	// snapshot. Chunks arrive in order.
	WriteSnapshotChunk(id SnapshotID, position int64, data []byte) error

	// InstallSnapshot makes snapshot id, complete in the store (written by
	// the state machine, or fetched with WriteSnapshotChunk), the latest. If
	// the log holds the entry at id.EndOffset-1 with epoch id.Epoch (or
	// starts right there with that start epoch), its entries stay as they
	// are; otherwise it is emptied and restarts at id.EndOffset with start
	// epoch id.Epoch.
	InstallSnapshot(id SnapshotID) error
}
