package quorum

import (
	"fmt"
	"strings"
	"time"
)

// Message is one request or response between two nodes of the quorum. The
// driver sends it as a Kafka frame (see wire.go) and hands received ones to
// Raft.Step.
type Message struct {
	From, To NodeID
	// Ref is the driver's id for a request it received, echoed by the
	// response the Raft produces for it (0 when the driver sets none). The
	// driver matches a response to the connection its request came on by
	// it: the sender id a request claims is not proof of who sent it, and
	// a request forged in a voter's name must not take that voter's
	// answer, nor its own answer go to the voter (issue 22).
	Ref     uint64
	Payload Payload
}

// String formats the message as "from->to payload", the form the datadriven
// scripts print.
func (m Message) String() string { return fmt.Sprintf("%s->%s %s", m.From, m.To, m.Payload) }

// Payload is one of the request and response structs below: VoteRequest,
// VoteResponse, BeginQuorumEpochRequest, BeginQuorumEpochResponse,
// EndQuorumEpochRequest, EndQuorumEpochResponse, FetchRequest,
// FetchResponse, FetchSnapshotRequest, FetchSnapshotResponse.
type Payload interface {
	fmt.Stringer
	isPayload()
}

// IsRequest reports whether p is a request (as opposed to a response).
func IsRequest(p Payload) bool {
	switch p.(type) {
	case VoteRequest, BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest, FetchSnapshotRequest:
		return true
	}
	return false
}

// VoteRequest asks a voter for its vote (Kafka's Vote). A pre-vote carries
// the prospective's current epoch, which it would bump only after winning the
// pre-vote round; a real vote carries the candidate's new epoch.
type VoteRequest struct {
	Epoch       int32
	CandidateID NodeID
	// LastEnd is the candidate's log end: offset of the next batch and
	// epoch of the last. The voter grants only if it is at least its own.
	LastEnd OffsetAndEpoch
	PreVote bool
}

// VoteResponse answers a VoteRequest with the voter's epoch and the leader
// it knows.
type VoteResponse struct {
	Error    ErrorCode
	Epoch    int32
	LeaderID NodeID
	Granted  bool
	// PreVote echoes the request. Kafka's response does not carry it; the
	// driver restores it from the request the response answers.
	PreVote bool
}

// BeginQuorumEpochRequest is a new leader announcing itself to the voters.
type BeginQuorumEpochRequest struct {
	Epoch    int32
	LeaderID NodeID
}

// BeginQuorumEpochResponse acknowledges a BeginQuorumEpochRequest, or
// rejects it with the receiver's newer epoch.
type BeginQuorumEpochResponse struct {
	Error    ErrorCode
	Epoch    int32
	LeaderID NodeID
}

// EndQuorumEpochRequest is a resigning leader asking the voters to elect a
// successor; voters earlier in PreferredSuccessors (ordered by how far their
// logs reach) campaign sooner.
type EndQuorumEpochRequest struct {
	Epoch               int32
	LeaderID            NodeID
	PreferredSuccessors []NodeID
}

// EndQuorumEpochResponse acknowledges an EndQuorumEpochRequest.
type EndQuorumEpochResponse struct {
	Error    ErrorCode
	Epoch    int32
	LeaderID NodeID
}

// FetchRequest is a follower or observer pulling the log from the leader
// (Kafka's Fetch of __cluster_metadata with a replica id). Its FetchOffset is
// also the fetcher's acknowledgement: every batch below it is durable there.
// It is always a batch boundary of the fetcher's log, and so of the
// leader's once validated.
type FetchRequest struct {
	// Epoch is the fetcher's epoch (CurrentLeaderEpoch).
	Epoch     int32
	ReplicaID NodeID
	// FetchOffset and LastFetchedEpoch are the fetcher's log end; the leader
	// checks them against its own log to detect divergence.
	FetchOffset      int64
	LastFetchedEpoch int32
	// HighWatermark is the one the fetcher knows (KIP-1166); the leader
	// answers at once when its own is newer, else may park the fetch.
	HighWatermark int64
	MaxBytes      int32
	// MaxWait is how long the leader may park the fetch when it has nothing
	// new.
	MaxWait time.Duration
}

// FetchResponse answers a FetchRequest. When Error is ErrNone exactly one of
// these holds: DivergingEpoch is set (truncate, then fetch again), Snapshot
// is set (fetch that snapshot first), or Batches continue the fetcher's log
// (possibly none).
type FetchResponse struct {
	Error          ErrorCode
	Epoch          int32
	LeaderID       NodeID
	HighWatermark  int64
	LogStartOffset int64
	// Batches are whole batches: a response never splits one, and holds at
	// least one when the leader has any past the fetch offset, even if it
	// exceeds the fetch's MaxBytes.
	Batches []Batch
	// DivergingEpoch is the largest epoch the leader holds that is not
	// above the fetcher's last fetched epoch, with its end offset.
	DivergingEpoch *OffsetAndEpoch
	// Snapshot is the leader's latest snapshot, when the fetch offset is
	// below the leader's log start.
	Snapshot *SnapshotID
	// FetchEpoch, FetchOffset and LastFetchedEpoch echo the request, so that
	// a response is only ever applied to the log position and epoch it was
	// computed for. Kafka's response does not carry them; the driver
	// restores them from the request the response answers.
	FetchEpoch       int32
	FetchOffset      int64
	LastFetchedEpoch int32
}

// FetchSnapshotRequest pulls one chunk of the leader's snapshot.
type FetchSnapshotRequest struct {
	Epoch     int32
	ReplicaID NodeID
	Snapshot  SnapshotID
	Position  int64
	MaxBytes  int32
}

// FetchSnapshotResponse carries a chunk of a snapshot: Data starts at
// Position of a snapshot of Size bytes.
type FetchSnapshotResponse struct {
	Error    ErrorCode
	Epoch    int32
	LeaderID NodeID
	Snapshot SnapshotID
	Size     int64
	Position int64
	Data     []byte
}

func (VoteRequest) isPayload()              {}
func (VoteResponse) isPayload()             {}
func (BeginQuorumEpochRequest) isPayload()  {}
func (BeginQuorumEpochResponse) isPayload() {}
func (EndQuorumEpochRequest) isPayload()    {}
func (EndQuorumEpochResponse) isPayload()   {}
func (FetchRequest) isPayload()             {}
func (FetchResponse) isPayload()            {}
func (FetchSnapshotRequest) isPayload()     {}
func (FetchSnapshotResponse) isPayload()    {}

func voteName(pre bool) string {
	if pre {
		return "PreVote"
	}
	return "Vote"
}

func errSuffix(e ErrorCode) string {
	if e == ErrNone {
		return ""
	}
	return " " + e.String()
}

func (v VoteRequest) String() string {
	return fmt.Sprintf("%s epoch=%d end=%s", voteName(v.PreVote), v.Epoch, v.LastEnd)
}

func (v VoteResponse) String() string {
	verdict := "rejected"
	if v.Granted {
		verdict = "granted"
	}
	return fmt.Sprintf("%sResponse epoch=%d leader=%s %s%s", voteName(v.PreVote), v.Epoch, v.LeaderID, verdict, errSuffix(v.Error))
}

func (b BeginQuorumEpochRequest) String() string {
	return fmt.Sprintf("BeginQuorumEpoch epoch=%d leader=%s", b.Epoch, b.LeaderID)
}

func (b BeginQuorumEpochResponse) String() string {
	return fmt.Sprintf("BeginQuorumEpochResponse epoch=%d leader=%s%s", b.Epoch, b.LeaderID, errSuffix(b.Error))
}

func (e EndQuorumEpochRequest) String() string {
	return fmt.Sprintf("EndQuorumEpoch epoch=%d leader=%s successors=%v", e.Epoch, e.LeaderID, e.PreferredSuccessors)
}

func (e EndQuorumEpochResponse) String() string {
	return fmt.Sprintf("EndQuorumEpochResponse epoch=%d leader=%s%s", e.Epoch, e.LeaderID, errSuffix(e.Error))
}

func (f FetchRequest) String() string {
	return fmt.Sprintf("Fetch epoch=%d offset=%d lastEpoch=%d hw=%d", f.Epoch, f.FetchOffset, f.LastFetchedEpoch, f.HighWatermark)
}

func (f FetchResponse) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "FetchResponse epoch=%d leader=%s", f.Epoch, f.LeaderID)
	if f.Error != ErrNone {
		b.WriteString(errSuffix(f.Error))
		return b.String()
	}
	fmt.Fprintf(&b, " hw=%d", f.HighWatermark)
	switch {
	case f.DivergingEpoch != nil:
		fmt.Fprintf(&b, " diverging=%s", *f.DivergingEpoch)
	case f.Snapshot != nil:
		fmt.Fprintf(&b, " snapshot=%s", *f.Snapshot)
	default:
		b.WriteString(" batches=[")
		for i, e := range f.Batches {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(e.String())
		}
		b.WriteByte(']')
	}
	return b.String()
}

func (f FetchSnapshotRequest) String() string {
	return fmt.Sprintf("FetchSnapshot epoch=%d snapshot=%s position=%d", f.Epoch, f.Snapshot, f.Position)
}

func (f FetchSnapshotResponse) String() string {
	if f.Error != ErrNone {
		return fmt.Sprintf("FetchSnapshotResponse epoch=%d leader=%s snapshot=%s%s", f.Epoch, f.LeaderID, f.Snapshot, errSuffix(f.Error))
	}
	return fmt.Sprintf("FetchSnapshotResponse epoch=%d snapshot=%s position=%d bytes=%d size=%d", f.Epoch, f.Snapshot, f.Position, len(f.Data), f.Size)
}
