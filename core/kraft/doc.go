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
//     only then reported with StatePersisted), and the metadata log and
//     its snapshots (see "The metadata log and snapshots" below).
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
//     Member.DescribeQuorumResponse give the same answer in process;
//     Member.Submit with a DescribeQuorum request gets the leader's answer,
//     forwarded (what a broker does with a client's DescribeQuorum).
//
// # Voters and observers
//
// A member whose NodeID is in Config.Voters is a voter: it votes, may lead
// and runs the active controller when it does. Any other member is an
// observer (a broker, in KRaft's terms): it dials the voters, fetches the
// metadata log from the leader and applies it to its image like a voter,
// but never votes, never counts toward a majority and never runs the
// controller (Submit forwards to the leader, see below). An observer
// listens only if Config.ListenAddr is set, and then only to serve
// DescribeQuorum (controller requests sent to it answer NOT_CONTROLLER).
//
// # Forwarding to the active controller
//
// Member.Submit takes a controller request (or DescribeQuorum) on any
// member. The member whose controller is active handles it; a follower
// voter or an observer that knows the quorum leader forwards it to the
// leader's controller listener (its address from Config.Voters) as a plain
// Kafka request frame, at the version the caller built, on a connection of
// its own per destination (forward.go), and completes the callback with
// the leader's response. The listener submits what it receives to its own
// controller and never forwards again: one hop, so a request that reaches
// a voter that just lost leadership is answered NOT_CONTROLLER and the
// sender retries once it has learned the new leader. With no leader known
// Submit answers NOT_CONTROLLER at once.
//
// Kafka forwards inside an Envelope (KIP-590), which carries the original
// client's principal and address so that the controller authorizes the
// request as the client's. Strata forwards the raw request: the broker
// authorizes it for the client before forwarding, and the controller
// listener, with an authorizer, checks only that the forwarding node has
// CLUSTER_ACTION (security.go). Moving to Envelope would add Kafka's
// second check for the client's principal.
//
// # Security of the controller listener
//
// Config.Security may run the listener and every dial to a voter over
// TLS (env.SecureNet, by the listener's name), with each accepted
// connection's principal built from its client certificate; with an
// Authorizer, every request but ApiVersions needs CLUSTER_ACTION on the
// cluster (DescribeQuorum: DESCRIBE or CLUSTER_ACTION), by the ACLs of
// the member's image and super.users, or is answered
// CLUSTER_AUTHORIZATION_FAILED before the Raft or the controller sees it.
//
// A forwarded request is always answered:
//
//   - REQUEST_TIMED_OUT after Config.ForwardRequestTimeout (30 s by
//     default, Kafka's request.timeout.ms), as Kafka's broker answers a
//     forwarded request that timed out; it is also the answer at once
//     when maxForwardedInflight requests are already forwarded, as the
//     controller itself answers when too much is uncommitted. The leader
//     is still believed to lead, so the caller retries the same way.
//   - NOT_CONTROLLER when the connection to the leader cannot be made or
//     is lost, when this member learns of another leader (the old one's
//     requests fail at once rather than waiting for a timeout), and when
//     the member shuts down: the caller must find the new controller.
//
// Both errors are retriable, and after a lost connection, a leader change
// or a timeout the outcome is unknown to the caller: the leader may have
// committed the request before its answer was lost. Kafka's requests make
// retries safe enough (a re-created topic answers TOPIC_ALREADY_EXISTS, a
// re-registration with the same incarnation id is idempotent).
//
// The listener refuses what it cannot decode: an unknown API key, a
// version outside what kmsg decodes (the controller serves all of those),
// a malformed header or body closes the connection with a log line, and
// never stops the member. Its connections are bounded as the client
// listener's are (a core/connlimit Guard, Config.ListenerLimits:
// max.connections, max.connections.per.ip, connections.max.idle.ms), each
// listener counting its own.
//
// # Shutdown
//
// Member.Close shuts a member down gracefully: a leader resigns first
// (Raft.Resign sends EndQuorumEpoch, so the most up-to-date voter
// campaigns at once instead of after the 2 s fetch timeout), and Close
// waits until every voter acknowledged it or 500 ms of env time passed;
// then the timer, the controller and every connection stop. Nothing
// durable is touched: a restart recovers as after a crash.
//
// # Failover after a crash
//
// A quorum request unanswered for Config.RequestTimeout (2 s; a Fetch
// also gets the leader's FetchMaxWait) closes its connection, which is
// redialed: after a network partition heals, a connection whose segments
// were dropped would otherwise wait for TCP's retransmission backoff,
// which doubles for as long as the partition lasted (up to two minutes).
//
// A leader that crashes cannot resign. Its followers' connections to it
// close, and the driver redials after ReconnectBackoffMin (50 ms); a
// redial that fails (refused, as when the process died and its host
// refuses the port, or timed out) is reported to the Raft with
// Raft.PeerUnreachable, and a follower whose leader it is campaigns
// within a random quarter of the election timeout instead of after the
// 2 s fetch timeout: a new controller is active in about 150 ms of
// simulated time (TestCrashFailoverIsFast), against about 2 s, and 3-4 s
// when the survivors' fetch timeouts fired together and split the vote.
// A closed connection alone is not reported: a reset that a live leader
// survives is redialed successfully and disturbs nothing
// (TestConnResetDoesNotDisrupt). Kafka has no such hint (its followers
// wait for the fetch timeout); it is Strata's extension, and safety does
// not depend on it, since it only changes when a pre-vote round starts
// or gives up (see core/quorum).
//   - The applied image: every committed batch is decoded record by record
//     and replayed into a meta.Delta, applied whole (a batch is atomic).
//   - The active controller: when the Raft makes this member leader, the
//     controller becomes active once the image holds everything before the
//     new epoch (the epoch's leader-change batch committed); its proposals go
//     to Raft.Propose one batch each, commits are fed back with Committed, and
//     it resigns when the Raft loses leadership.
//
// # The metadata log and snapshots
//
// The member's data directory (the node's __cluster_metadata-0) holds, in
// Kafka's layout, the Raft's log as core/log segments
// (00000000000000000000.log with its indexes and checkpoints; one
// RecordBatch v2 per Raft batch, with its offsets and its epoch as
// partition leader epoch), snapshots named
// <end offset, 20 digits>-<epoch, 10 digits>.checkpoint, and quorum-state.
// metalog.go is the store: the Raft reads a mirror of the log in memory
// (the batches from the log start offset), and every change (append,
// truncation, trim, a snapshot install that empties the log) is made to the
// mirror at once and applied to core/log in order behind it, since core/log
// truncates asynchronously; Ready.SyncLog is a core/log Flush queued after
// them. core/log is the truth: Start rebuilds the mirror from it.
// metadata.log.segment.bytes is Config.LogSegmentBytes (1 GiB).
//
// A snapshot file (snapfile.go) is the image's records
// (meta.EncodeSnapshot) in RecordBatch v2 batches between a
// SNAPSHOT_HEADER and a SNAPSHOT_FOOTER control record, as Kafka frames
// it: CRC-checked, and whole only with its footer. The member writes one
// when the Raft sets Ready.SnapshotDue (Quorum.SnapshotIntervalBytes of
// batches applied since the latest, Kafka's
// metadata.log.max.record.bytes.between.snapshots, 20 MiB by default) or,
// if Config.SnapshotIntervalRecords is set, after that many records: of
// its image at the applied position (committed), with id (applied end
// offset, epoch of the last applied batch); one write at a time, to a
// .checkpoint.tmp file, synced, renamed, directory synced, and only then
// reported with Raft.SnapshotTaken. The Raft then trims the log to the
// previous snapshot (core/log DeleteRecordsBefore, and the segments wholly
// below the log start are deleted); the newest two snapshots are kept and
// older ones deleted once that trim is durable. A follower behind the
// leader's log start fetches the latest snapshot (FetchSnapshot) into a
// .checkpoint.part file, which is checked whole before it is installed,
// then synced and renamed before the log is emptied to restart after it;
// Ready.LoadSnapshot then replaces the image with the snapshot's.
//
// Start loads the newest snapshot that reads back whole and decodes as the
// image; a damaged one is logged and deleted and the next older one used.
// The Raft then replays the committed batches after it. Start fails with
// an error (never a panic) when nothing covers the log start: a log that
// starts past 0 without a readable snapshot at or after its start, or
// batches that do not continue each other.
//
// # Current limitations
//
//   - A snapshot is encoded on the member's loop, synchronously, and
//     loaded likewise (Start: 0.18–0.23 s of wall time for a 4.4 MB
//     snapshot of 100,000 partitions, see BenchmarkFailover100kPartitions),
//     where Kafka writes and loads snapshots off its Raft thread.
//   - The mirror keeps the log from its start offset in memory: about two
//     snapshot intervals of batches.
//   - BeginQuorumEpoch v1's leader endpoints are not filled in.
//   - An observer keeps its own quorum-state file and metadata log as a
//     voter does (it needs the log to rebuild its image on restart).
//
// # What it never does
//
// Like all of core it starts no goroutines and reaches the world only
// through env: every callback runs on the member's loop. It never reports
// a quorum state or a log sync to the Raft before the bytes are durable,
// and a failed fsync or a committed record the image refuses stops the
// member (Status().Err) rather than continuing on state it cannot trust.
package kraft
