// Package log is Strata's partition log: the storage engine every
// partition (topic data, the metadata log, __consumer_offsets,
// __transaction_state) keeps its records in. It is written against core/env
// only, so that the simulator can crash it anywhere.
//
// # What it owns
//
// One directory per partition on an env.Disk, in Kafka's layout:
//
//	00000000000000000000.log        RecordBatch v2 bytes as produced, offsets assigned
//	00000000000000000000.index      sparse offset index: big-endian int32 (batch last offset - base), int32 position
//	00000000000000000000.timeindex  time index: big-endian int64 largest timestamp so far, int32 its offset - base
//	00000000000000000000.txnindex   transaction index (Config.TxnIndex): Kafka's 34-byte aborted transactions whose
//	                                ABORT marker the segment holds, created with the first (txnindex.go)
//	00000000000000012345.log ...    later segments, named by base offset (20 digits)
//	recovery-checkpoint             recovery point, log start offset and, with a transaction index, the index
//	                                end (Kafka's checkpoint text format)
//	leader-epoch-checkpoint         leader epoch -> start offset (Kafka's file, same format)
//	cleaner-checkpoint              compacted topics: the cleaner's first dirty offset (same format)
//	.sync-failed-<D>                empty failure marker: the log failed with durable offset D (failure.go)
//	.damaged-<D>                    empty damage marker: the next Open drops offset D and after (scrub.go, damage.go)
//	.flushed-offset                 the durable offset, noted in the page cache only (failure.go)
//
// A Log appends batches (Append for producers, AppendCoordinator for the
// broker's own control batches, AppendReplicated for followers), assigning
// offsets in place without copying or recompressing record bytes; rolls
// segments (segment.bytes, segment.ms, full indexes); serves reads as file
// regions of whole batches for sendfile (Read); answers ListOffsets
// (OffsetForTimestamp) and OffsetForLeaderEpoch (EndOffsetForEpoch); keeps
// the aborted-transaction index its owner writes (AppendAbortedTxn,
// AbortedTxns, AbortedIndexEnd, CompleteAbortedIndex: txnindex.go); makes
// data durable with group-committed flushes (Flush, flush.go); recovers on
// Open (recover.go); truncates diverged followers (Truncate,
// TruncateFullyAndStartAt); advances the log start offset (DeleteRecordsBefore,
// ApplyRetention by retention.ms and retention.bytes); and keeps an
// open-file budget (MaxOpenFiles). Configuration names follow Kafka's topic
// configs (Config).
//
// # What it never does
//
//   - It never starts a goroutine, blocks, or reads time or randomness
//     other than through its Env: it is core code and runs on its Env's
//     loop. Every method must be called on that loop.
//   - It never calls a callback inline: Flush, Shutdown and Truncate
//     complete on a later turn of the loop.
//   - It never rewrites records on the produce path; the only bytes it
//     writes into a batch are the base offset and the partition leader
//     epoch, outside the CRC. AppendValidated reads no record: the caller
//     validated the batch (record.Validator) and the log applies the
//     compacted topic's key rule to the summary. Records are otherwise
//     read by Append (which validates every record of a producer's
//     batch, as the partition does), by OffsetForTimestamp (to find one
//     inside a batch), by AppendCoordinator on a compacted topic (keys)
//     and by the cleaner, which also rewrites batches, off the produce
//     path.
//   - It never wedges on a stored batch whose records do not parse (a
//     build that did not validate records could append one; its CRC
//     holds): the time search goes past it, the cleaner maps none of its
//     keys and keeps it as it is. Readers decompress up to
//     MaxReadDecompressedBytes per batch.
//   - It never drops data it made durable without an error: a bad batch
//     below the recovery point fails Open, naming the file and position.
//   - It never trusts a single read: env reads may flip bits, so recovery,
//     index and checkpoint loads read everything twice and compare, batches
//     are CRC-checked with core/record, and the read path cross-checks every
//     header it navigates by (against the indexes, the segment's offsets and
//     a second read), re-reading before it reports corruption. Read does not
//     CRC-check the regions it serves, as Kafka does not on fetch; Verify
//     and ReadResult.Verify do. Damage found while the log is open names
//     its segment (DamagedSegment); the owner decides when to drop it
//     (MarkDamaged, damage.go).
//   - It compacts only in bounded steps that its caller drives (CleanStep);
//     see Compaction below.
//
// # Invariants (asserted with core/assert)
//
//   - Offsets are assigned once and contiguously on the leader path; every
//     batch starts after the previous one ends; the log end offset only
//     grows, except through truncation.
//   - The high watermark never moves backwards except through truncation,
//     and never passes the log end offset; the log start offset never moves
//     backwards except through TruncateFullyAndStartAt.
//   - Leader epochs in the epoch cache strictly increase, and so do their
//     start offsets.
//   - Index entries strictly increase in offset and position (time index:
//     in timestamp, and never decrease in offset).
//   - A flush callback fires only once everything it covers is durable, in
//     call order; at most one Sync per file is in flight.
//
// # Durability and failure
//
// Appends land in the page cache (synchronous env I/O); Flush makes them
// durable. flush.go describes the flush cycle and the orders of syncs,
// renames and directory syncs that keep every crash recoverable, and
// truncate.go why a truncation is durable before the log takes new data.
// A failed Sync, SyncDir or write fails the log: every later call returns an
// error wrapping ErrLogFailed, because after a failed fsync the page cache
// may show data that never reaches the disk. The node then takes the log
// directory offline (Kafka's KAFKA_STORAGE_ERROR) and a restart recovers
// from what is durable. A full disk (env.ErrNoSpace) on append is not a
// failure: the append changed nothing and returns the error.
//
// A restart with the machine up (a supervisor restarting the process) would
// read those lost writes from the page cache as valid data, and its own
// syncs would not write them. So a failing log first creates a failure
// marker, .sync-failed-<D> with D its durable offset, in the same turn of
// the loop that learns of the failed Sync; the next Open drops everything
// at or beyond D (no Flush ever acknowledged it), makes the cut durable
// with fresh index files, checkpoints and only then removes the marker,
// staying Busy until it has. Without a marker (a plain kill) the page
// cache is trusted as before. A failed SyncDir fails the whole filesystem
// until the machine restarts (env.Disk), so no later incarnation can build
// on the page cache's view and the restart drops it. failure.go has the
// design, the ordering argument and its limits.
//
// Open needs a disk that takes changes: recovery cuts, rewrites and syncs.
// An I/O error while it recovers (env.ErrIO: a failed read, or a filesystem
// failed by a directory sync) makes Open return an error wrapping
// ErrStorageUnavailable, and the owner retries Open after a restart (a
// failed filesystem needs the machine restarted).
//
// After Open, and during a truncation, the log is Busy: changes fail with
// ErrBusy until what recovery (or the truncation) changed is durable. Flush
// callbacks say when.
//
// # Compaction
//
// For cleanup.policy=compact (and compact,delete) the cleaner (clean.go)
// keeps the latest record of each key, in bounded steps on the loop
// (CleanStep), Kafka's way: an offset map over the dirty section, then
// groups of inactive segments rewritten into one new segment each, offsets
// kept, tombstones removed after delete.retention.ms (the batch delete
// horizon, KIP-534), progress kept in cleaner-checkpoint. A cleaned group
// is written as B.log.cleaned, B.index.cleaned and B.timeindex.cleaned
// (and B.txnindex.cleaned with a transaction index), synced, and swapped
// in with renames (.cleaned to .swap, the .log last as
// the commit point; the other segments of the group deleted; .swap over the
// final names) in one turn of the loop, then the directory is synced by a
// flush cycle. Open completes a committed swap, deleting the segments it
// covers, and deletes uncommitted .cleaned and .swap files (recovery rule
// 1), so a crash at any step leaves the old segments or the cleaned one,
// whole. A cleaned segment ends exactly where its group ended (its last
// batch stays, maybe empty), so that recovery never reads its end as a
// lost tail. With a transaction index, the cleaner stops at the last
// stable offset (SetLastStableOffset), removes aborted transactions' data
// and, delete.retention.ms after their data went, their ABORT markers
// (clean_txn.go); committed transactional records are exempt from key
// compaction. It cleans nothing until the owner has completed the index.
package log
