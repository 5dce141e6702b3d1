// Package producer keeps the idempotent producer state of a partition: for
// every producer id, its epoch and its last batches, so that the leader can
// refuse a batch out of sequence or from a fenced producer, and answer a
// retried batch with the offsets it was first appended at instead of
// appending it twice. franz-go and the Java client enable idempotence by
// default, so every partition needs it. It follows Kafka's
// ProducerStateManager, ProducerAppendInfo and ProducerStateEntry,
// including the partition's side of transactions (txn.go): a producer's
// ongoing transaction, the markers that end it, and the last stable
// offset.
//
// # What it owns
//
//   - State: producer id -> Producer (epoch, metadata of its last 5
//     batches, coordinator epoch, last timestamp), for the log below
//     EndOffset. Check applies the produce rules to a client's batch,
//     Appended records a batch the log appended, Replay applies a batch
//     read back from the log (recovery, followers), Expire forgets idle
//     producers (producer.id.expiration.ms).
//   - Transactions: the ongoing ones by first offset, and those whose
//     marker the high watermark has not yet passed. CheckMarker and
//     AppendedMarker are Check and Appended for a coordinator's COMMIT or
//     ABORT marker; ReplayTxn returns the transaction a replayed marker
//     ended; LastStableOffset(hw) bounds read_committed.
//   - Verifications (verify.go, KIP-890 part 1): StartVerification hands
//     out the guard a producer's first transactional batch on the
//     partition must carry once the coordinator has verified it.
//   - The snapshot format: Kafka's producer snapshot, version 1
//     (snapshot.go), byte for byte.
//   - Snapshots: the files <offset, 20 digits>.snapshot in the partition
//     directory, written durably (temp file, Sync, rename, SyncDir), loaded
//     newest first at or below an offset, deleted below the log start and
//     above the log end.
//
// # How the partition uses it
//
//   - Produce (leader): record.ValidateForAppend, then State.Check on the
//     batch. A duplicate is answered with Result.Original's offsets and
//     timestamp and not appended; an error is answered with its Kafka code
//     (each error wraps its kerr value). Otherwise log.Append, then
//     State.Appended with the offsets and max timestamp it assigned, in the
//     same turn of the loop.
//   - Markers (leader, WriteTxnMarkers): State.CheckMarker, then
//     log.AppendCoordinator of record.BuildEndTxnMarker's batch, then
//     State.AppendedMarker in the same turn; an aborted transaction it
//     returns goes to the partition's aborted index.
//   - Follower append: State.ReplayTxn for every batch AppendReplicated
//     wrote (markers included).
//   - High watermark moves (leader or follower): State.HighWatermarkMoved;
//     the partition's last stable offset is State.LastStableOffset(hw).
//   - Recovery, after log.Open: Snapshots.DeleteAbove(log end) (a snapshot
//     can outlive log data a crash lost), Snapshots.Load(log start, log
//     end, now), then State.Replay of every batch from the state's
//     EndOffset to the log end.
//   - Segment roll (Kafka snapshots at every roll, so that a restart
//     replays at most about one segment): after an Append that rolled,
//     State.AdvanceTo(log end) and Snapshots.Write; core/log rolls inside
//     Append, so the owner notices a roll by the active segment's base
//     offset changing. When retention or DeleteRecords moved the log
//     start: Snapshots.DeleteBelow(log start).
//   - Truncation to T (follower divergence): Snapshots.DeleteAbove(T) and
//     log.Truncate(T), then Load(log start, new log end, now) and replay;
//     nothing may be appended before both callbacks report success, or a
//     crash could bring back a snapshot of batches the log no longer holds.
//     For TruncateFullyAndStartAt(O): DeleteAbove(-1) and NewState(cfg, O).
//   - Timer, every Config.ExpirationCheckInterval: State.Expire(now).
//   - Clean shutdown: AdvanceTo(log end) and Write, so that the next start
//     replays nothing.
//
// # What it never does
//
//   - It never starts a goroutine, blocks, or reads a clock or randomness:
//     time comes in as arguments, I/O goes through env.Disk on the owner's
//     loop, and no callback runs inline.
//   - It never lets map order reach an output: Producers, Expire and
//     snapshots list producers sorted by id.
//   - It never panics on input: a damaged or hostile snapshot decodes to an
//     error (and Load skips it); a stored batch with odd producer fields
//     is replayed as Kafka would. Assertions guard only the owner's
//     contract (Appended after a passing Check, offsets that never go
//     backwards).
//   - It never decides durability for the log: the owner orders snapshot
//     writes and deletions against the log's flushes and truncations as
//     described above. It does issue SyncDir on the partition directory,
//     which the log also syncs, so a failed one (ErrDirectoryFailed) is
//     fatal for the directory, as a failed log sync is.
//
// # Invariants
//
//   - A producer is in the ongoing list exactly when its entry has a
//     CurrentTxnFirstOffset, at most once; the list is sorted by it.
//   - A producer keeps at most maxBatchesRetained (5) batches, all of its
//     current epoch, oldest first, with increasing offsets below EndOffset.
//   - EndOffset never decreases; a State is rebuilt (Load, NewState)
//     rather than moved back.
//   - A batch is recorded only if Check accepts it (live) or the log holds
//     it (Replay), and replaying the log rebuilds what Appended recorded:
//     both go through the same bookkeeping, from the batch's offsets, last
//     sequence and max timestamp.
//   - A snapshot named O reflects exactly the batches below O; Load only
//     uses one at or above the log start and at or below the log end.
//
// # Kafka's rules, and where Strata differs
//
// Check's rules are listed on it. Expiration counts from the producer's
// last batch timestamp as stored in the log (Kafka's lastTimestamp: the
// producer's clock under CreateTime), so that replicas, snapshots and
// replay all agree; a producer whose clock runs more than a day behind
// therefore loses its state at the next Expire, as in Kafka. A snapshot
// keeps only the last batch of each producer (Kafka's format), so after a
// restart a retry of one of the four older batches is out of sequence
// rather than a duplicate, as in Kafka. With verification required
// (KIP-890 part 1, verify.go), a transactional batch of a producer with
// no transaction here is accepted only with the producer's current
// Verification, which the broker obtained before asking the coordinator
// and which the producer's next transactional batch or marker clears
// (Kafka's VerificationGuard). A non-transactional batch during its
// producer's transaction is ErrInvalidTxnState, a marker from an older
// coordinator epoch ErrCoordinatorFenced. Control batches that are not
// transaction markers (or whose record does not parse) only move
// EndOffset on replay.
package producer
