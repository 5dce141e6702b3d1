// Package controller is the active KRaft controller's logic as a
// deterministic state machine: it decides broker registration, heartbeats
// and fencing, controlled shutdown, topic and partition creation and
// deletion, replica placement, leader and ISR elections, AlterPartition,
// topic config changes and producer id blocks, and writes every decision as
// core/meta records. It knows nothing of the Raft, the network or the
// clock; a driver wires it to core/quorum and to Kafka frames.
//
// # Inputs and outputs
//
// A Controller takes:
//
//   - Handle(now, request): the Kafka requests the controller serves, as
//     kmsg types so the broker can pass them through (BrokerRegistration,
//     BrokerHeartbeat, CreateTopics, DeleteTopics, CreatePartitions,
//     AlterPartition, AllocateProducerIDs, IncrementalAlterConfigs,
//     AlterConfigs, ElectLeaders, AlterPartitionAssignments,
//     ListPartitionReassignments, and the security APIs CreateAcls,
//     DeleteAcls, AlterUserScramCredentials and AlterClientQuotas, decided
//     as Kafka's AclControlManager, ScramControlManager and
//     ClientQuotaControlManager do in security.go; authorization is the
//     broker's, before it forwards); it returns a Ticket;
//   - Tick(now): the monotonic clock, which fences brokers whose session
//     (broker.session.timeout.ms) expired;
//   - BecomeLeader(now, epoch, committedImage, nextOffset), Resign() and
//     Committed(position, records): the quorum's leadership and commit
//     events.
//
// Ready drains its outputs: Proposals, each an atomic batch of records with
// the offsets it must land at, to propose through the quorum in order; and
// Responses, each for a Ticket, to deliver to the requester.
//
// # Speculative state
//
// Like Kafka's QuorumController (whose timeline structures it replaces with
// immutable images), the active controller decides against a speculative
// image: the committed image plus every batch it has proposed and not yet
// seen committed. Two quick CreateTopics of one name cannot both succeed,
// an AlterPartition is checked against the partition epoch the previous one
// produced, and a broker epoch is the offset its RegisterBrokerRecord will
// have, known before it is proposed. A response is released only when the
// committed offset reaches the records the decision wrote, or, for a
// decision that wrote nothing, the records proposed before it (it may have
// read them). On Resign every waiting request gets NOT_CONTROLLER and the
// state falls back to the committed image; a new leader starts from the
// committed image it is given.
//
// A batch commits whole: core/quorum replicates, commits and truncates each
// proposal as one RecordBatch. The controller does not rely on it alone: a
// new leader that inherits an image breaking the election invariants (an
// unfence without its elections, a controlled shutdown without its moves)
// first proposes the partition changes that restore them.
//
// # Kafka's rules it follows
//
// Registration with incarnation ids (a retry of the same incarnation is
// idempotent; a new incarnation replaces a registration whose session is
// gone, else DUPLICATE_BROKER_REGISTRATION; the broker epoch is the
// record's offset; a new registration is fenced). Heartbeats with Kafka's
// BrokerControlState transitions, unfencing a broker once its metadata
// offset reaches its registration's. Fencing moves leadership to the first
// active ISR member in replica order and takes the broker out of ISRs,
// except as the last member; with no active ISR member the partition has no
// leader unless the topic allows unclean election. Controlled shutdown
// moves leaderships away and lets the broker stop once every active broker
// has replicated that. Topic names, partition counts, replication factors,
// manual assignments and configs are validated per topic with Kafka's
// error codes; placement is Kafka's rack-unaware round robin from a seeded
// starting offset; topic ids are seeded random UUIDs. The topic configs the
// controller accepts, with types, defaults and ranges, are the rows of
// core/config, which the partitions apply too; the coordinators' internal
// topics keep a compact-only policy and their partitions (internal.go);
// Kafka error codes come from kerr.
//
// # Strata's own AlterPartition shapes
//
// Beyond Kafka's ISR changes, AlterPartition carries three requests
// Kafka's controller refuses: a leader's ISR without itself resigns its
// leader epoch (partitions.go, resignLeader: its log lost a tail a
// follower may hold); a recovering leader's ISR of another LastKnownELR
// member hands the leadership to that longer log (handOffRecovery); and
// any replica's LeaderRecoveryState RECOVERING with an empty ISR gives up
// its places in a partition whose log it found damaged (damage.go).
//
// # Invariants
//
// Asserted at state transitions (core/assert), and checked by the property
// test over random histories:
//
//   - every record the controller proposes replays onto the speculative
//     image (it is validated by a scratch meta.Delta before it is
//     proposed), so the committed log never holds a record an image
//     refuses;
//   - proposals are contiguous in offsets and the committed records on the
//     leader are exactly its proposals, in order;
//   - a partition's leader is in its ISR, which is a non-empty subset of its
//     replicas, or it has no leader; no partition is led by a fenced or
//     shutting-down broker; a leaderless partition has no active ISR member
//     (at batch boundaries);
//   - leader and partition epochs never decrease; broker epochs and the
//     next producer id only grow;
//   - replaying the committed records onto an empty image gives the
//     controller's committed image.
//
// # Bounds
//
// A batch holds at most MaxRecordsPerBatch records and MaxBatchBytes
// encoded bytes; a request whose topic does not fit gets POLICY_VIOLATION
// for that topic, and maintenance work (moving a fenced broker's
// leaderships) spreads over several batches, the fence record last. At most
// MaxPendingRecords records wait for commit; past that, requests other than
// heartbeats get REQUEST_TIMED_OUT.
//
// # What it never does
//
// It starts no goroutines, reads no clock (time comes in as a monotonic
// duration), draws randomness only from the *rand.Rand it was given, does
// no I/O, and lets no map order reach a decision. It never answers a
// request before the records it depends on are committed, and never panics
// on a request: bad input gets a Kafka error code.
package controller
