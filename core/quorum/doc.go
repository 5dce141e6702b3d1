// Package quorum is Strata's Raft: the consensus core of the KRaft-style
// metadata quorum (KIP-595), with snapshots (KIP-630), pre-vote (KIP-996)
// and check-quorum. Controllers are voters; brokers are observers that
// replicate the log but never vote and never count toward a majority. The
// voter set is static (controller.quorum.voters).
//
// # What it owns
//
// A Raft is one node's view of the quorum as a pure state machine, in the
// style of etcd's raft. It takes inputs — Tick (monotonic time), Step (a
// received request or response), Propose, Campaign, Resign, SnapshotTaken,
// the storage completions StatePersisted and LogSynced, and the transport
// hint PeerUnreachable — and returns
// everything else as effects that the driver drains with Ready: the quorum
// state to persist, a log sync to issue, messages to send, a snapshot to
// load, committed batches to apply, a hint that a snapshot is due, and the
// role and leader when they change. NextDeadline tells the driver when to
// Tick next; the driver Ticks before every other input too, because inputs
// happen at the Raft's clock.
//
// The protocol is KRaft's pull model: a leader never pushes batches.
// Followers and observers Fetch from the leader (fetch offset, last fetched
// epoch); the leader answers with batches, or with a diverging epoch and end
// offset when the follower's log has diverged, or with a snapshot id when
// the follower is behind the log start, in which case the follower pulls the
// snapshot in chunks with FetchSnapshot and then fetches the tail. A fetch
// with nothing new is parked at the leader for up to FetchMaxWait. The
// fetch offset doubles as the follower's acknowledgement, so the leader
// advances the high watermark when a majority of voters has fetched past a
// batch of its own epoch (its leader-change batch, appended when it wins).
// Elections use Vote — a pre-vote round that changes nobody's state, then
// the real vote in a new epoch. BeginQuorumEpoch announces a new leader;
// EndQuorumEpoch asks the voters to elect a successor at once when a leader
// resigns, the most up-to-date first. A leader that has not heard from a
// majority for 1.5 fetch timeouts resigns (check-quorum), and a voter that
// heard from its leader within the fetch timeout refuses pre-votes, so a
// node returning from a partition cannot disrupt a healthy quorum.
//
// A leader's death is learned sooner than the fetch timeout when the
// transport can tell: the driver calls PeerUnreachable when it cannot
// connect to a voter (a crashed process's host refuses the port). A
// follower whose leader that is starts its pre-vote after a random wait
// below a quarter of the election timeout (so the survivors of one crash
// rarely start together and split the vote), and grants pre-votes from
// then on although it heard from its leader recently; a prospective or a
// candidate counts the voter as rejecting until it answers, so a split
// vote with a dead voter ends in the short election backoff rather than
// an election timeout. Kafka has no such input; it is Strata's extension.
// It changes only when a pre-vote round starts or gives up, never what a
// node votes for in an epoch or what a leader commits, so safety does not
// rest on it, and a wrong report costs one refused pre-vote round: while
// the other voters still hear from the leader they refuse it, and the
// follower goes back to following the leader in the same epoch, ignoring
// further reports until it hears from the leader again.
//
// # Batches
//
// The unit of the log is the Batch, as KRaft's is the RecordBatch: one
// Propose call is one batch (a base offset, its records, one epoch), and so
// is a new leader's leader-change record. A batch is appended, replicated,
// committed, truncated, snapshotted and applied whole: the Log returns and
// takes only batch boundaries; a Fetch response carries whole batches (at
// least one, however large, as Kafka sends a batch past the fetch's max
// bytes); a batch is one RecordBatch v2 on the wire; Ready.Committed hands
// out whole batches, which the driver applies atomically. Its size is
// bounded by Config.MaxBatchRecords and Config.MaxBatchBytes (8 MiB, KRaft's
// max batch), and a larger proposal is refused with ErrProposalTooLarge. So
// the controller's atomic decisions (a topic and all its partitions) are
// never committed, lost or applied in part.
//
// # The log
//
// The log is read and written through the Log interface: synchronous
// writes, durability through Ready.SyncLog. MemoryLog implements it for
// tests and the simulator; the driver backs it with core/log. The log keeps
// one snapshot interval of batches behind the latest snapshot (it is
// trimmed to the previous one), so a replica slightly behind catches up
// from the log rather than chasing a snapshot that keeps being replaced.
//
// Messages are plain Go structs (messages.go); wire.go translates them to
// and from the kmsg requests and responses of Kafka's Vote,
// BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot and DescribeQuorum,
// which the driver sends as Kafka frames; wire_batches.go encodes each batch
// as one RecordBatch v2, leader-change batches as LEADER_CHANGE control
// batches.
//
// # What it never does
//
//   - It never performs I/O, reads a clock, starts a goroutine or draws
//     randomness from anywhere but the *rand.Rand it was given; the same
//     inputs give the same outputs, so simulator traces are reproducible.
//   - It never sends a message that depends on quorum state the driver has
//     not made durable: the persist barrier. Every message produced while a
//     quorum-state write is outstanding (a vote, a candidacy, the
//     acknowledgement of a new leader) waits until StatePersisted covers it.
//   - It never acknowledges log batches that are not durable: a follower's
//     next Fetch (whose offset is its acknowledgement) waits for LogSynced,
//     and the leader counts its own log only up to what was synced.
//   - It never trusts the network: a malformed or stale message is an error
//     or is ignored. Only its own broken invariants panic, through
//     core/assert.
//
// # Invariants
//
//   - The epoch never decreases, and a node votes at most once per epoch.
//   - At most one leader per epoch: a node that knows the leader of its
//     epoch never accepts another for it, and a leader that restarts comes
//     back resigned, never leading its old epoch again.
//   - A candidate counts its own vote only once its candidacy is durable.
//   - A leader's log only grows: a leader never truncates.
//   - The high watermark never decreases and never passes the log end; on
//     the leader it passes an offset only once a majority of voters durably
//     holds it and it includes a batch of the current epoch.
//   - Batches are atomic: the high watermark, the applied offset, the
//     durable log end, every replica's fetch offset, every truncation point
//     and every snapshot end sit on a batch boundary (asserted where the
//     Raft derives them; a fetch offset inside a batch is refused as
//     INVALID_REQUEST). A batch is committed, truncated and applied whole.
//   - Committed batches are never truncated: a follower truncates only at
//     or above its high watermark.
//   - Batches are handed out for applying in offset order, each once per
//     incarnation, whole, only once committed and durable locally.
package quorum
