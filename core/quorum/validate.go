package quorum

// This file is the quorum's boundary with the network (issue 22): the
// ranges every value of a quorum message must lie in before it reaches the
// Raft. The controller listener takes requests from anyone who can reach
// it, and a peer's response may be damaged, so no value in a message may
// trip an invariant assertion, wrap an epoch, or get persisted in a state
// a restart cannot use. A request outside them is refused (the driver
// answers it with Kafka's error, see ErrorResponse), a response outside
// them is dropped (the Raft times its request out).

import (
	"fmt"
	"math"
)

// Bounds of the values on the wire.
const (
	// MaxEpoch is the largest epoch a node may hold. A candidacy adds one
	// to the epoch, so an epoch above MaxEpoch is never accepted from the
	// network and a node at MaxEpoch never campaigns (it can still follow
	// a leader of MaxEpoch): the epoch cannot wrap. Kafka has no such
	// bound; its epoch wraps to a negative value.
	MaxEpoch int32 = math.MaxInt32 - 1
	// MaxEpochJump bounds how far one request (Vote, BeginQuorumEpoch,
	// EndQuorumEpoch) can move its receiver's epoch: a request more than
	// this far ahead is refused with INVALID_REQUEST. A legitimate epoch
	// moves by one per election, and a voter that missed more than a
	// million of them still catches up, from the epoch its own requests'
	// responses carry (responses come on the connections it dialed to the
	// configured voters, and are not bounded so). The bound keeps a single
	// forged request from moving a quorum next to MaxEpoch, where it could
	// no longer elect (issue 22, finding 1). Strata's own; Kafka accepts
	// any epoch.
	MaxEpochJump int32 = 1 << 20
	// MaxOffset bounds every offset and byte position on the wire. No log
	// reaches it (a million records a second for 146,000 years), and
	// offset arithmetic (a batch's end, a chunk's end) stays far from
	// overflowing.
	MaxOffset int64 = 1 << 62
	// maxPreferredSuccessors bounds an EndQuorumEpoch's successor list; a
	// voter set is far smaller.
	maxPreferredSuccessors = 1024
)

// RequestError is a quorum request refused at the boundary, before the
// Raft sees it: DecodeRequest returns it, and the driver answers the
// request with ErrorResponse. It wraps ErrWire.
type RequestError struct {
	// Code is Kafka's error for the request.
	Code ErrorCode
	// TopLevel: Kafka answers Code in the response's top-level error code
	// (a cluster id or a topic-partition that does not match), not in the
	// partition's.
	TopLevel bool
	Reason   string
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrWire, e.Code, e.Reason)
}

// Unwrap makes errors.Is(err, ErrWire) hold.
func (e *RequestError) Unwrap() error { return ErrWire }

func invalidRequest(format string, args ...any) *RequestError {
	return &RequestError{Code: ErrInvalidRequest, Reason: fmt.Sprintf(format, args...)}
}

func epochInRange(e int32) bool { return e >= 0 && e <= MaxEpoch }

func offsetInRange(o int64) bool { return o >= 0 && o <= MaxOffset }

// checkRequest checks the values of a request message: its sender is a
// node id other than its receiver and the one the payload names, its
// epochs and offsets are in range and consistent with each other (as
// KafkaRaftClient checks them, and more). It does not know the voter set
// or the receiver's epoch: the Raft's handlers check those.
func checkRequest(m Message) *RequestError {
	if m.From < 0 || m.To < 0 {
		return invalidRequest("sender %d or receiver %d is not a node id", m.From, m.To)
	}
	if m.From == m.To {
		// A request naming the receiver itself as candidate, leader or
		// replica: no node sends itself a request.
		return invalidRequest("node %s names itself as the sender", m.To)
	}
	switch p := m.Payload.(type) {
	case VoteRequest:
		switch {
		case p.CandidateID != m.From:
			return invalidRequest("candidate %s sent by %s", p.CandidateID, m.From)
		case !epochInRange(p.Epoch):
			return invalidRequest("candidate epoch %d outside [0, %d]", p.Epoch, MaxEpoch)
		case !offsetInRange(p.LastEnd.Offset) || p.LastEnd.Epoch < 0:
			return invalidRequest("last offset %s out of range", p.LastEnd)
		case p.PreVote && p.LastEnd.Epoch > p.Epoch:
			// A prospective's epoch is its current one, at least its log's.
			return invalidRequest("pre-vote in epoch %d with a log ending in epoch %d", p.Epoch, p.LastEnd.Epoch)
		case !p.PreVote && p.LastEnd.Epoch >= p.Epoch:
			// A candidate's epoch is past every epoch of its log.
			return invalidRequest("vote for epoch %d with a log ending in epoch %d", p.Epoch, p.LastEnd.Epoch)
		}
	case BeginQuorumEpochRequest:
		switch {
		case p.LeaderID != m.From:
			return invalidRequest("leader %s sent by %s", p.LeaderID, m.From)
		case !epochInRange(p.Epoch):
			return invalidRequest("leader epoch %d outside [0, %d]", p.Epoch, MaxEpoch)
		}
	case EndQuorumEpochRequest:
		switch {
		case p.LeaderID != m.From:
			return invalidRequest("leader %s sent by %s", p.LeaderID, m.From)
		case !epochInRange(p.Epoch):
			return invalidRequest("leader epoch %d outside [0, %d]", p.Epoch, MaxEpoch)
		case len(p.PreferredSuccessors) > maxPreferredSuccessors:
			return invalidRequest("%d preferred successors", len(p.PreferredSuccessors))
		}
	case FetchRequest:
		switch {
		case p.ReplicaID != m.From:
			return invalidRequest("replica %s sent by %s", p.ReplicaID, m.From)
		case !epochInRange(p.Epoch):
			return invalidRequest("fetch epoch %d outside [0, %d]", p.Epoch, MaxEpoch)
		case !offsetInRange(p.FetchOffset):
			return invalidRequest("fetch offset %d out of range", p.FetchOffset)
		case p.LastFetchedEpoch < 0 || p.LastFetchedEpoch > p.Epoch:
			return invalidRequest("last fetched epoch %d outside [0, %d]", p.LastFetchedEpoch, p.Epoch)
		case p.MaxWait < 0:
			return invalidRequest("negative max wait %v", p.MaxWait)
		}
	case FetchSnapshotRequest:
		switch {
		case p.ReplicaID != m.From:
			return invalidRequest("replica %s sent by %s", p.ReplicaID, m.From)
		case !epochInRange(p.Epoch):
			return invalidRequest("fetch epoch %d outside [0, %d]", p.Epoch, MaxEpoch)
		case !offsetInRange(p.Position):
			return invalidRequest("snapshot position %d out of range", p.Position)
		case !offsetInRange(p.Snapshot.EndOffset) || !epochInRange(p.Snapshot.Epoch):
			return invalidRequest("snapshot id %s out of range", p.Snapshot)
		}
	default:
		return invalidRequest("%T is not a request", m.Payload)
	}
	return nil
}

// checkResponse checks the values of a response from a peer: epochs at
// most MaxEpoch (-1 stands for unknown), leader ids -1 or node ids,
// offsets and positions in range. What they mean against this node's
// state (a leader that is not a voter, a truncation below the high
// watermark) the handlers check.
func checkResponse(p Payload) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidMessage, fmt.Sprintf(format, args...))
	}
	respEpoch := func(e int32) bool { return e >= -1 && e <= MaxEpoch }
	leader := func(id NodeID) bool { return id >= NoNode }
	switch r := p.(type) {
	case VoteResponse:
		if !respEpoch(r.Epoch) || !leader(r.LeaderID) {
			return bad("vote response epoch %d leader %d", r.Epoch, r.LeaderID)
		}
	case BeginQuorumEpochResponse:
		if !respEpoch(r.Epoch) || !leader(r.LeaderID) {
			return bad("begin quorum epoch response epoch %d leader %d", r.Epoch, r.LeaderID)
		}
	case EndQuorumEpochResponse:
		if !respEpoch(r.Epoch) || !leader(r.LeaderID) {
			return bad("end quorum epoch response epoch %d leader %d", r.Epoch, r.LeaderID)
		}
	case FetchResponse:
		switch {
		case !respEpoch(r.Epoch) || !leader(r.LeaderID):
			return bad("fetch response epoch %d leader %d", r.Epoch, r.LeaderID)
		case r.HighWatermark < -1 || r.HighWatermark > MaxOffset || r.LogStartOffset < -1 || r.LogStartOffset > MaxOffset:
			return bad("fetch response high watermark %d log start %d", r.HighWatermark, r.LogStartOffset)
		case r.DivergingEpoch != nil && (!offsetInRange(r.DivergingEpoch.Offset) || !epochInRange(r.DivergingEpoch.Epoch)):
			return bad("diverging epoch %s", *r.DivergingEpoch)
		case r.Snapshot != nil && (!offsetInRange(r.Snapshot.EndOffset) || !epochInRange(r.Snapshot.Epoch)):
			return bad("snapshot id %s", *r.Snapshot)
		}
		for _, b := range r.Batches {
			if !offsetInRange(b.BaseOffset) || !epochInRange(b.Epoch) || int64(len(b.Records)) > MaxOffset-b.BaseOffset {
				return bad("batch at %d of epoch %d with %d records", b.BaseOffset, b.Epoch, len(b.Records))
			}
		}
	case FetchSnapshotResponse:
		switch {
		case !respEpoch(r.Epoch) || !leader(r.LeaderID):
			return bad("fetch snapshot response epoch %d leader %d", r.Epoch, r.LeaderID)
		case r.Error == ErrNone && (!offsetInRange(r.Size) || !offsetInRange(r.Position) || int64(len(r.Data)) > MaxOffset-r.Position):
			return bad("snapshot chunk at %d of %d bytes, size %d", r.Position, len(r.Data), r.Size)
		}
	default:
		return bad("%T is not a response", p)
	}
	return nil
}
