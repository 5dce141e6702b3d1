package quorum

import (
	"fmt"
	"strconv"
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
// entry just before it. A log's end is the offset of the next entry and the
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

// SnapshotID names a snapshot as KIP-630 does: it covers every entry below
// EndOffset, and Epoch is the epoch of the entry at EndOffset-1.
type SnapshotID struct {
	EndOffset int64
	Epoch     int32
}

// String formats the id as endOffset@epoch.
func (s SnapshotID) String() string { return fmt.Sprintf("%d@%d", s.EndOffset, s.Epoch) }

// EntryKind says what an entry carries.
type EntryKind uint8

const (
	// EntryData is a record proposed by the state machine (a metadata
	// record, opaque to the quorum).
	EntryData EntryKind = iota
	// EntryLeaderChange is the control entry a new leader appends at the
	// start of its epoch (Kafka's LEADER_CHANGE control record). Committing
	// it is what lets the leader commit everything before it.
	EntryLeaderChange
)

// entryOverheadBytes is what an entry costs beyond its data when sizing
// fetch responses and applies: offset, epoch and record framing, roughly a
// RecordBatch v2 record's overhead.
const entryOverheadBytes = 16

// Entry is one record of the replicated log.
type Entry struct {
	Offset int64
	Epoch  int32
	Kind   EntryKind
	// Data is the record's value; for EntryLeaderChange, Kafka's encoded
	// LeaderChangeMessage. It is immutable once proposed: the log and
	// messages share it.
	Data []byte
}

// Size is the entry's weight against byte bounds.
func (e Entry) Size() int { return len(e.Data) + entryOverheadBytes }

// String formats the entry as offset@epoch:data (or "leader-change").
func (e Entry) String() string {
	if e.Kind == EntryLeaderChange {
		return fmt.Sprintf("%d@%d:leader-change", e.Offset, e.Epoch)
	}
	return fmt.Sprintf("%d@%d:%s", e.Offset, e.Epoch, e.Data)
}
