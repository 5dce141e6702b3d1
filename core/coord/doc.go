// Package coord is the coordinator runtime (the shape of Kafka's
// coordinator-common CoordinatorRuntime, far smaller): it runs a state
// machine, a Shard, per partition of a coordinator's internal topic that
// this broker leads, keeps each in step with its partition, and is the
// one write path of every shard. The group coordinator (core/group,
// __consumer_offsets) and the transaction coordinator (core/txn,
// __transaction_state) plug into it; the share coordinator (KIP-932,
// __share_group_state) will too.
//
// # What it owns
//
//   - Which shards run (Runtime.Sync, after every metadata image and when
//     a watched partition changes): one Slot per partition led here in the
//     image's leader epoch with its log online; a slot whose leadership,
//     epoch or log went is unloaded (Shard.Unload; requests then get
//     NOT_COORDINATOR).
//   - Loading, by the numbered rules at the top of replay.go: the
//     partition's log is replayed into the shard a slice per loop turn
//     (COORDINATOR_LOAD_IN_PROGRESS meanwhile), transactional batches and
//     markers apart for a TxnShard; a log reopened or cut under the load
//     loads the shard again; the shard serves (Shard.Loaded) only once the
//     high watermark reached the log end it replayed; a failed read is
//     reported as damage and the load starts over.
//   - The write path (Slot.Write): a shard's records appended as one batch
//     with acks=all, answered once the ISR has them, ErrNotCoordinator
//     once the slot no longer runs; and the mapping of a failed write to
//     the coordinator's answer (WriteErrorCode).
//   - A shard's life (Status): loading, serving, unloaded, the code a
//     request gets in each, and the guard that turns a write finished
//     after the unload into ErrNotCoordinator.
//   - Which partition a key belongs to (PartitionFor: Kafka's
//     abs(hashCode) % partitions, so Kafka's tools agree).
//
// # What it never does
//
//   - It never decodes a record or decides a request: what a record means
//     and what a request gets is the shard's (core/group, core/txn), and
//     the requests' handlers are core/broker's.
//   - It never answers before the write is committed, and never applies a
//     shard's change itself: the shard applies it in its write's done.
//   - Like the rest of core, it never starts a goroutine or reads a clock
//     other than its env.Env's, and its methods run on that env's loop; no
//     map reaches a decision (slots are kept sorted by partition).
//
// # Invariants
//
//  1. At most one slot per partition, and a slot runs only while its
//     partition is led here in the epoch it was loaded in (Sync).
//  2. A shard replays records only before Loaded (the shards assert it),
//     in log order, and serves only once the ISR has all it replayed.
//  3. A write of a slot that no longer runs, or that finished after its
//     shard unloaded, is answered NOT_COORDINATOR: a deposed coordinator
//     never tells a client its change is in.
package coord
