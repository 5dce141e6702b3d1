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
//	00000000000000012345.log ...    later segments, named by base offset (20 digits)
//	recovery-checkpoint             recovery point and log start offset (Kafka's checkpoint text format)
//	leader-epoch-checkpoint         leader epoch -> start offset (Kafka's file, same format)
//
// A Log appends batches (Append for producers, AppendCoordinator for the
// broker's own control batches, AppendReplicated for followers), assigning
// offsets in place without copying or recompressing record bytes; rolls
// segments (segment.bytes, segment.ms, full indexes); serves reads as file
// regions of whole batches for sendfile (Read); answers ListOffsets
// (OffsetForTimestamp) and OffsetForLeaderEpoch (EndOffsetForEpoch); makes
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
//   - It never decompresses or rewrites records on the produce path; the
//     only bytes it writes into a batch are the base offset and the
//     partition leader epoch, outside the CRC. Only OffsetForTimestamp
//     reads records, to find one inside a batch.
//   - It never drops data it made durable without an error: a bad batch
//     below the recovery point fails Open, naming the file and position.
//   - It never trusts a single read: env reads may flip bits, so recovery,
//     index and checkpoint loads read everything twice and compare, batches
//     are CRC-checked with core/record, and the read path cross-checks every
//     header it navigates by (against the indexes, the segment's offsets and
//     a second read), re-reading before it reports corruption. Read does not
//     CRC-check the regions it serves, as Kafka does not on fetch; Verify does.
//   - It does not compact; see the seam below.
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
// After Open, and during a truncation, the log is Busy: changes fail with
// ErrBusy until what recovery (or the truncation) changed is durable. Flush
// callbacks say when.
//
// # The seam for compaction
//
// A cleaner replaces segment B with a cleaned copy, crash-safely, like
// this: write B.log.cleaned, B.index.cleaned and B.timeindex.cleaned
// (indexes in the formats above, the time index ending with the largest
// timestamp) and sync them; rename each to .swap, the .log last (its rename
// is the commit point), and sync the directory; rename the .swap files over
// B.log, B.index and B.timeindex and sync the directory again; then drop
// the segment's handles and loaded indexes (closeFiles) and reset its
// metadata from the new files (the code that loads trusted segments at Open,
// checkTrusted, does that). Open completes a committed swap and deletes
// uncommitted .cleaned and .swap files (recovery rule 1), so a crash at
// any step leaves the old or the new segment, whole.
//
// Two constraints keep recovery right: a cleaner replaces only segments
// that Open trusts without reading them (those ending before the segment
// holding the recovery point: flush first), because Open reads a gap at the
// end of any other segment as a lost tail; and merging several segments
// into one needs one more recovery rule, deleting the merged segments that
// a committed swap covers, which the cleaner adds with it.
package log
