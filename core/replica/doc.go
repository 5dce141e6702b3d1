// Package replica is the partitions one broker hosts: their logs on its
// disk, their place in the metadata image, and the Kafka replication
// protocol between their leader and followers (ISR, high watermark,
// leader epochs, acks, min.insync.replicas, eligible leader replicas).
// The Manager runs on the server's loop; like the rest of core it takes
// time, disks and the network only from core/env, so the simulator runs
// it unchanged.
//
// # What it owns
//
//   - Partition lifecycle (partition.go, open.go, dirs.go): open a log
//     (core/log) as the image assigns the partition here, a bounded
//     number at a time; fail it on a log error and reopen it after a
//     growing backoff; reopen it on a topic config change; delete it
//     with its directory when the image drops it.
//   - Produce (produce.go): validate a batch record by record, check
//     it against the idempotent producer state (producers.go,
//     core/producer), append it as leader, and answer by acks: 0 and 1
//     once appended (durable first where the topic fsyncs), all once the
//     high watermark passes it.
//   - Replication, leader side (replication.go): ReplicaFetch answers
//     followers with batches or a diverging epoch, records their log
//     ends and moves the high watermark; isr.go expands and shrinks the
//     ISR through the controller (AlterPartition), one change in flight.
//   - Replication, follower side (fetcher.go): one fetcher per leader
//     copies batches, truncates on a diverging epoch, and follows the
//     leader's high watermark within what it holds durably.
//   - Recovery and damage (recovery.go, damage.go, scrub.go): a leader
//     forgotten as eligible compares logs before it serves; a replica
//     whose log is damaged gives up its places and fetches the range
//     again; the start-up scrub finds damage at rest.
//   - Reads and transactions (read.go, txn.go): Fetch and ListOffsets
//     bounded by the high watermark (and the last stable offset for
//     read_committed), transaction markers, the aborted-transaction
//     index.
//   - Topic configs as the partitions apply them (topicconfig.go): which
//     source's value applies, through core/config's rows.
//
// # What it never does
//
// It decides no leadership and no ISR: the controller does, and the
// partitions follow the image (a leader proposes ISR changes and waits
// for the image to show them). It parses no request frame (core/broker
// does) and holds no client session. It trusts nothing a peer sends:
// a follower's fetch offset, a leader's batches and high watermark are
// checked and refused with Kafka's errors, never asserted.
//
// # Invariants
//
// Each is asserted (core/assert) where it must hold, so that a broken
// one crashes the node or fails the seed instead of corrupting a log:
//
//   - A partition's leader epoch and partition epoch never go back
//     (Partition.update, from the image).
//   - A high watermark never goes back and never passes the log end
//     (core/log's SetHighWatermark); where the topic acknowledges after
//     fsync it never passes what this replica holds durably, leader or
//     follower (Partition.setHighWatermark). The leader's counts the
//     durable log ends of every member of the ISR (and of a pending
//     change's), so a record below it is fsynced on the whole ISR, and
//     acks=all answers only once it passes the batch (completeAcks).
//   - Only the image's leader appends its own batches, to an online log,
//     and never while it resigns an epoch whose tail its reopened log
//     lost (assertLeaderAppend; lostTail says why).
//   - A follower copies batches only from the leader of the epoch it
//     asked in, into the log it asked for (fetcher.apply).
//   - A leader never proposes an ISR without itself, except to resign
//     its epoch or to hand a recovered partition to a longer log
//     (alterISR).
//   - An offset is assigned once (core/log's appends).
//
// The simulator's replicated, groups and txn scenarios check the
// consequences from the clients' side (sim/scenario: acknowledged records
// are never lost, one record per offset, no phantom reads), and
// core/plant's planted bugs prove those checks can fail.
package replica
