// Package txn is the transaction coordinator: Kafka's TransactionCoordinator
// as a pure state machine, one Shard per __transaction_state partition led
// by this broker.
//
// It owns, for each transactional id of its partition, the producer id and
// epoch, the transaction's state (Kafka's: Empty, Ongoing, PrepareCommit,
// PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence), its
// partitions, timeout and timestamps, and the sending of the transaction
// markers once a commit or abort is decided.
//
// It must never: answer a request that changed state before the record of
// the change is committed (Config.Write's done(nil)); change memory when a
// write fails; let map order reach an answer or a record; run a goroutine or
// read a clock other than env's.
//
// Invariants it keeps:
//
//  1. One write at a time per transactional id (Txn.pending); a request
//     meeting a write in flight, or markers being sent, gets
//     CONCURRENT_TRANSACTIONS.
//  2. Memory is what replaying the records gives: a transition is applied
//     only after its record committed, and Replay applies the same records.
//  3. A Prepare state is followed by markers to every partition of the
//     transaction, then by its Complete state; a shard loaded with a
//     transaction in a Prepare state resumes its markers.
//  4. The producer epoch of an id never decreases; a bumped epoch fences
//     every request of the older one.
//
// The coordinator runtime (core/coord) runs a Shard per partition: it
// loads it by replaying the partition, is its write path and unloads it;
// the broker (core/broker txn.go) configures it and sends the markers
// (MarkerSender) over the inter-broker clients.
package txn
