// Package kraft runs one member of the KRaft metadata quorum on an env.Env:
// it is the driver that wires the pure state machines of core/quorum (the
// Raft) and core/controller (the active controller) to time, disk and
// network, and keeps the metadata image (core/meta) that the committed log
// builds.
//
// # What it owns
//
//   - The Raft's clock: it Ticks the Raft before every input and at
//     Raft.NextDeadline from an env timer.
//   - The Raft's durable state: the quorum state in the file quorum-state
//     (written to a temporary file, synced, renamed, directory synced, and
//     only then reported with StatePersisted), and the metadata log in the
//     journal file metadata.journal (see journal.go).
//   - The quorum's network: it listens on the member's controller address,
//     dials every other voter, sends quorum messages as Kafka request frames
//     (kmsg Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot with
//     a request header), matches responses by correlation id, and answers the
//     requests it receives with the responses the Raft produces.
//   - DescribeQuorum: a kmsg DescribeQuorumRequest on the listener is
//     answered at once from Raft.DescribeQuorum with quorum's
//     DescribeQuorumResponse (leader, epoch, high watermark, voters and
//     observers with their log end offsets; fetch and caught-up times turned
//     from monotonic to wall clock as env.Now()-(env.Monotonic()-t)). A
//     member that does not lead answers NOT_LEADER_OR_FOLLOWER naming the
//     leader it knows, as Kafka does. Member.DescribeQuorum and
//     Member.DescribeQuorumResponse give the same answer in process.
//
// # Voters and observers
//
// A member whose NodeID is in Config.Voters is a voter: it votes, may lead
// and runs the active controller when it does. Any other member is an
// observer (a broker, in KRaft's terms): it dials the voters, fetches the
// metadata log from the leader and applies it to its image like a voter,
// but never votes, never counts toward a majority and never runs the
// controller (Submit answers NOT_CONTROLLER). An observer listens only if
// Config.ListenAddr is set, and then only to serve DescribeQuorum.
//
// # Shutdown
//
// Member.Close shuts a member down gracefully: a leader resigns first
// (Raft.Resign sends EndQuorumEpoch, so the most up-to-date voter
// campaigns at once instead of after the 2 s fetch timeout), and Close
// waits until every voter acknowledged it or 500 ms of env time passed;
// then the timer, the controller and every connection stop. Nothing
// durable is touched: a restart recovers as after a crash.
//   - The applied image: every committed batch is decoded record by record
//     and replayed into a meta.Delta, applied whole (a batch is atomic).
//   - The active controller: when the Raft makes this member leader, the
//     controller becomes active once the image holds everything before the
//     new epoch (the epoch's leader-change batch committed); its proposals go
//     to Raft.Propose one batch each, commits are fed back with Committed, and
//     it resigns when the Raft loses leadership.
//
// # Current limitations (first step of issue 4, item 4)
//
//   - The log is a quorum.MemoryLog rebuilt at start from an append-only
//     journal of CRC-checked records (appends and truncations), synced before
//     LogSynced. It is not core/log yet; the real log backing comes next.
//     The journal is never compacted and snapshots are not supported: the
//     member ignores Ready.SnapshotDue and fails on a snapshot install.
//     MemoryLog alone was not an option: a restarted voter would forget
//     batches it had acknowledged by fetching past them, and a majority
//     could then elect a leader without a committed batch.
//   - The image is rebuilt on restart by replaying the committed log from
//     offset 0 (as the Raft hands committed batches out again once per
//     incarnation).
//   - BeginQuorumEpoch v1's leader endpoints are not filled in.
//   - An observer keeps its own quorum-state file and journal as a voter
//     does (it needs the log to rebuild its image on restart).
//
// # What it never does
//
// Like all of core it starts no goroutines and reaches the world only
// through env: every callback runs on the member's loop. It never reports
// a quorum state or a log sync to the Raft before the bytes are durable,
// and a failed fsync or a committed record the image refuses stops the
// member (Status().Err) rather than continuing on state it cannot trust.
package kraft
