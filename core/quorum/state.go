package quorum

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// NodeID identifies a node, as Kafka's node.id.
type NodeID int32

// NoNode stands for "nobody": no vote cast, no leader known. It is Kafka's
// -1 on the wire.
const NoNode NodeID = -1

// String returns the id, or "none" for NoNode.
func (n NodeID) String() string {
	if n == NoNode {
		return "none"
	}
	return strconv.Itoa(int(n))
}

// QuorumState is the durable election state of a node, Kafka's quorum-state
// file: the latest epoch it knows, whom it voted for in that epoch and the
// leader of that epoch if known. The driver persists it when Ready asks and
// hands the last durable value back to New after a restart.
type QuorumState struct {
	// Epoch is the latest leader epoch the node knows of.
	Epoch int32
	// VotedFor is the candidate the node voted for in Epoch, or NoNode.
	VotedFor NodeID
	// LeaderID is the leader of Epoch, or NoNode when not known.
	LeaderID NodeID
}

// InitialState is the quorum state of a node that has never run: epoch 0,
// no vote, no leader.
func InitialState() QuorumState {
	return QuorumState{Epoch: 0, VotedFor: NoNode, LeaderID: NoNode}
}

// CheckState reports whether s, a durable quorum state read back from
// storage, can be resumed by node id of a quorum of voters: its epoch in
// [0, MaxEpoch], its vote and leader voters (or NoNode), no vote on an
// observer. An error wraps ErrUnusableState.
func CheckState(s QuorumState, id NodeID, voters []NodeID) error {
	isVoter := func(n NodeID) bool { return slices.Contains(voters, n) }
	switch {
	case !epochInRange(s.Epoch):
		return fmt.Errorf("%w: %s: epoch outside [0, %d]", ErrUnusableState, s, MaxEpoch)
	case (s.VotedFor != NoNode && !isVoter(s.VotedFor)) || (s.LeaderID != NoNode && !isVoter(s.LeaderID)):
		return fmt.Errorf("%w: %s names a node outside the voters %v", ErrUnusableState, s, voters)
	case !isVoter(id) && s.VotedFor != NoNode:
		return fmt.Errorf("%w: observer %s has a vote (%s)", ErrUnusableState, id, s)
	}
	return nil
}

// String formats the state for logs and test output.
func (s QuorumState) String() string {
	return fmt.Sprintf("epoch=%d voted=%s leader=%s", s.Epoch, s.VotedFor, s.LeaderID)
}

// Role is what a node is doing in its epoch. Unlike QuorumState it is not
// persisted; a restarted node derives it from the durable state.
type Role uint8

// Roles, as KRaft's EpochState implementations.
const (
	// RoleUnattached knows an epoch but follows no leader: it waits for a
	// BeginQuorumEpoch or its election timeout. It may have voted.
	RoleUnattached Role = iota + 1
	// RoleFollower fetches from the leader of its epoch.
	RoleFollower
	// RoleProspective runs a pre-vote round: it asks the voters whether they
	// would vote for it, without changing anybody's epoch (KIP-996).
	RoleProspective
	// RoleCandidate has bumped the epoch, voted for itself and asks for votes.
	RoleCandidate
	// RoleLeader accepts proposals and serves fetches.
	RoleLeader
	// RoleResigned was the leader of its epoch and stepped down, gracefully
	// or because check-quorum failed; it serves nothing and waits for a
	// successor (or its own election timeout).
	RoleResigned
)

// String returns the role's name.
func (r Role) String() string {
	switch r {
	case RoleUnattached:
		return "unattached"
	case RoleFollower:
		return "follower"
	case RoleProspective:
		return "prospective"
	case RoleCandidate:
		return "candidate"
	case RoleLeader:
		return "leader"
	case RoleResigned:
		return "resigned"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// OffsetAndEpoch is a position in the log: an offset and the epoch of the
// record just before it. A log's end is the offset of the next batch and the
// epoch of the last one; Vote compares candidates by it and Fetch validates
// followers with it.
type OffsetAndEpoch struct {
	Offset int64
	Epoch  int32
}

// Compare orders positions by epoch, then offset, as Raft's "at least as up
// to date": it returns -1, 0 or +1.
func (p OffsetAndEpoch) Compare(q OffsetAndEpoch) int {
	switch {
	case p.Epoch != q.Epoch:
		if p.Epoch < q.Epoch {
			return -1
		}
		return 1
	case p.Offset < q.Offset:
		return -1
	case p.Offset > q.Offset:
		return 1
	}
	return 0
}

// String formats the position as offset@epoch.
func (p OffsetAndEpoch) String() string { return fmt.Sprintf("%d@%d", p.Offset, p.Epoch) }

// SnapshotID names a snapshot as KIP-630 does: it covers every record below
// EndOffset, and Epoch is the epoch of the record at EndOffset-1. EndOffset
// is always a batch end: a snapshot never covers part of a batch.
type SnapshotID struct {
	EndOffset int64
	Epoch     int32
}

// String formats the id as endOffset@epoch.
func (s SnapshotID) String() string { return fmt.Sprintf("%d@%d", s.EndOffset, s.Epoch) }

// BatchKind says what a batch carries.
type BatchKind uint8

const (
	// BatchData holds the records of one proposal by the state machine
	// (metadata records, opaque to the quorum).
	BatchData BatchKind = iota
	// BatchLeaderChange is the control batch a new leader appends at the
	// start of its epoch: one record, Kafka's LEADER_CHANGE control record.
	// Committing it is what lets the leader commit everything before it.
	BatchLeaderChange
)

// Weights of a batch against byte bounds. They bound its RecordBatch v2
// encoding from above: the batch header, and per record its framing (length,
// attributes, timestamp and offset deltas, key and value lengths, header
// count as varints) plus a control record's 4-byte key.
const (
	batchOverheadBytes  = 61
	recordOverheadBytes = 24
)

// Batch is the unit of the replicated log: the records of one Propose call,
// or a new leader's leader-change record. It is appended, replicated,
// committed, truncated, snapshotted and applied whole, and is one
// RecordBatch v2 on the wire and on disk, as in KRaft. Its records occupy
// the offsets [BaseOffset, EndOffset()); every batch holds at least one.
type Batch struct {
	BaseOffset int64
	Epoch      int32
	Kind       BatchKind
	// Records are the record values; for BatchLeaderChange, one Kafka
	// LeaderChangeMessage. They are immutable once proposed: the log,
	// messages and the state machine share them.
	Records [][]byte
}

// EndOffset is the offset just after the batch's last record: the next
// batch's base offset.
func (b Batch) EndOffset() int64 { return b.BaseOffset + int64(len(b.Records)) }

// End is the log position just after the batch.
func (b Batch) End() OffsetAndEpoch { return OffsetAndEpoch{Offset: b.EndOffset(), Epoch: b.Epoch} }

// Size is the batch's weight against byte bounds: at least its encoded size.
func (b Batch) Size() int {
	size := batchOverheadBytes
	for _, rec := range b.Records {
		size += len(rec) + recordOverheadBytes
	}
	return size
}

// String formats the batch as offset@epoch:record for one record,
// base-last@epoch:[record ...] for several, and offset@epoch:leader-change.
func (b Batch) String() string {
	if b.Kind == BatchLeaderChange {
		return fmt.Sprintf("%d@%d:leader-change", b.BaseOffset, b.Epoch)
	}
	if len(b.Records) == 1 {
		return fmt.Sprintf("%d@%d:%s", b.BaseOffset, b.Epoch, b.Records[0])
	}
	recs := make([]string, len(b.Records))
	for i, rec := range b.Records {
		recs[i] = string(rec)
	}
	return fmt.Sprintf("%d-%d@%d:[%s]", b.BaseOffset, b.EndOffset()-1, b.Epoch, strings.Join(recs, " "))
}
