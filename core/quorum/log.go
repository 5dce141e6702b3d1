package quorum

// Log is the replicated log as the Raft reads and writes it: batches with
// their epochs, the leader-epoch cache, and snapshots. Writes are
// synchronous (they reach the page cache); durability is separate and comes
// from the driver's sync, requested through Ready.SyncLog, which must cover
// every write made through the Log before the request was issued, including
// truncations and snapshot installs.
//
// The Raft is the only writer of the log's batches. The state machine reads
// snapshots and may write its own (then calls Raft.SnapshotTaken).
//
// Offsets are dense: batches occupy [StartOffset, EndOffset) with no gaps,
// each batch the offsets [BaseOffset, EndOffset()). Epochs never decrease
// along the log. A batch is never split: every offset the Log takes or
// returns as a position (a read's start, a truncation or trim point, a log
// end, an epoch's end, a snapshot's end) is a batch boundary, that is
// StartOffset, EndOffset or a held batch's base offset.
type Log interface {
	// StartOffset is the base offset of the first batch held: 0, or a
	// snapshot's end offset once the log was trimmed. The log remembers the
	// epoch of the batch just before it (the start epoch; 0 at offset 0).
	StartOffset() int64

	// EndOffset is the offset the next batch will get, with the epoch of the
	// last batch (the start epoch when the log holds no batch).
	EndOffset() OffsetAndEpoch

	// EndOffsetForEpoch answers Kafka's leader-epoch-cache question: the
	// largest epoch E <= epoch held in the log, counting the start epoch as
	// held by the batch before StartOffset, and the end offset of E (the
	// end of its last batch). ok is false when every epoch held is above
	// epoch.
	EndOffsetForEpoch(epoch int32) (end OffsetAndEpoch, ok bool)

	// FloorBatchBoundary returns the largest batch boundary at or below
	// offset, which lies in [StartOffset, EndOffset]: offset itself when it
	// is a boundary, else the base offset of the batch holding it.
	FloorBatchBoundary(offset int64) int64

	// Batches returns whole batches from the batch boundary from, in order,
	// stopping before maxBytes (by Batch.Size) is exceeded but always
	// returning at least one batch when from < EndOffset, however large:
	// a batch is never split. StartOffset <= from <= EndOffset.
	Batches(from int64, maxBytes int) []Batch

	// Append adds batches at EndOffset. Each continues the log and holds at
	// least one record; their epochs do not decrease.
	Append(batches []Batch)

	// TruncateTo removes every batch at or above offset, a batch boundary
	// in [StartOffset, EndOffset].
	TruncateTo(offset int64)

	// TrimPrefix removes every batch below offset, a batch boundary in
	// [StartOffset, EndOffset] covered by the latest snapshot.
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
	// the log holds a batch of epoch id.Epoch ending exactly at id.EndOffset
	// (or starts right there with that start epoch), its batches stay as
	// they are; otherwise it is emptied and restarts at id.EndOffset with
	// start epoch id.Epoch.
	InstallSnapshot(id SnapshotID) error
}
