package quorum

import (
	"errors"
	"fmt"
)

// ErrorCode is a Kafka error code carried in a response. Only the codes the
// quorum protocol uses appear here; their values are Kafka's (see kerr).
type ErrorCode int16

// Error codes of the quorum RPCs.
const (
	ErrNone ErrorCode = 0
	// ErrUnknownTopicOrPartition: a FetchSnapshot of a partition that is
	// not the metadata partition.
	ErrUnknownTopicOrPartition ErrorCode = 3
	// ErrNotLeaderOrFollower: the receiver is not the leader (for Fetch and
	// FetchSnapshot); the response names the leader it knows, if any.
	ErrNotLeaderOrFollower ErrorCode = 6
	// ErrInvalidRequest: the request is malformed (a replica id that does
	// not match the sender, a negative offset).
	ErrInvalidRequest ErrorCode = 42
	// ErrFencedLeaderEpoch: the request's epoch is older than the
	// receiver's; the response carries the newer epoch and its leader.
	ErrFencedLeaderEpoch ErrorCode = 74
	// ErrUnknownLeaderEpoch: the request's epoch is newer than the
	// receiver's.
	ErrUnknownLeaderEpoch ErrorCode = 75
	// ErrUnsupportedVersion: a KRaft Fetch older than MinFetchVersion.
	ErrUnsupportedVersion ErrorCode = 35
	// ErrInconsistentVoterSet: a voter-only request from or to a node that
	// is not a voter.
	ErrInconsistentVoterSet ErrorCode = 94
	// ErrSnapshotNotFound: the leader no longer has the requested snapshot.
	ErrSnapshotNotFound ErrorCode = 98
	// ErrPositionOutOfRange: a FetchSnapshot position past the snapshot's
	// size.
	ErrPositionOutOfRange ErrorCode = 99
	// ErrInconsistentClusterID: a request naming another cluster id.
	ErrInconsistentClusterID ErrorCode = 104
	// ErrInvalidVoterKey: a Vote or BeginQuorumEpoch addressed to another
	// voter id than the receiver's.
	ErrInvalidVoterKey ErrorCode = 125
)

// String returns Kafka's name for the code.
func (c ErrorCode) String() string {
	switch c {
	case ErrNone:
		return "NONE"
	case ErrUnknownTopicOrPartition:
		return "UNKNOWN_TOPIC_OR_PARTITION"
	case ErrNotLeaderOrFollower:
		return "NOT_LEADER_OR_FOLLOWER"
	case ErrUnsupportedVersion:
		return "UNSUPPORTED_VERSION"
	case ErrInvalidRequest:
		return "INVALID_REQUEST"
	case ErrFencedLeaderEpoch:
		return "FENCED_LEADER_EPOCH"
	case ErrUnknownLeaderEpoch:
		return "UNKNOWN_LEADER_EPOCH"
	case ErrInconsistentVoterSet:
		return "INCONSISTENT_VOTER_SET"
	case ErrSnapshotNotFound:
		return "SNAPSHOT_NOT_FOUND"
	case ErrPositionOutOfRange:
		return "POSITION_OUT_OF_RANGE"
	case ErrInconsistentClusterID:
		return "INCONSISTENT_CLUSTER_ID"
	case ErrInvalidVoterKey:
		return "INVALID_VOTER_KEY"
	}
	return fmt.Sprintf("ERROR(%d)", int16(c))
}

// Errors returned by Raft's inputs. Compare with errors.Is.
var (
	// ErrNotLeader: Propose or DescribeQuorum on a node that is not the
	// leader. The error is a *NotLeaderError naming the leader if known.
	ErrNotLeader = errors.New("quorum: not the leader")
	// ErrProposalTooLarge: a proposal that does not fit one batch, above
	// Config.MaxBatchRecords records or Config.MaxBatchBytes bytes.
	ErrProposalTooLarge = errors.New("quorum: proposal too large")
	// ErrEmptyProposal: Propose with no records.
	ErrEmptyProposal = errors.New("quorum: empty proposal")
	// ErrInvalidMessage: Step got a message that is not addressed to this
	// node or is malformed. The message was ignored.
	ErrInvalidMessage = errors.New("quorum: invalid message")
	// ErrInvalidSnapshot: SnapshotTaken with an id the log does not back.
	ErrInvalidSnapshot = errors.New("quorum: invalid snapshot")
	// ErrEpochExhausted: Campaign on a node at MaxEpoch, whose candidacy
	// would take an epoch past it.
	ErrEpochExhausted = errors.New("quorum: epoch exhausted")
	// ErrUnusableState: New with a durable quorum state that is out of
	// range (an epoch above MaxEpoch) or contradicts the configuration (a
	// vote or leader outside the voters, a vote on an observer).
	ErrUnusableState = errors.New("quorum: unusable durable state")
)

// NotLeaderError is the ErrNotLeader returned to a caller that must retry
// elsewhere: Kafka's NOT_CONTROLLER with the controller's identity.
type NotLeaderError struct {
	// LeaderID is the leader this node knows for Epoch, or NoNode.
	LeaderID NodeID
	// Epoch is this node's current epoch.
	Epoch int32
}

func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("quorum: not the leader (leader %s, epoch %d)", e.LeaderID, e.Epoch)
}

// Unwrap makes errors.Is(err, ErrNotLeader) hold.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }
