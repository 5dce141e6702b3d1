package quorum

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/strata-log/strata/core/assert"
)

// never is a deadline that does not come.
const never = time.Duration(math.MaxInt64)

// Raft is one node of the quorum as a pure state machine. It is not safe for
// concurrent use; the driver calls it from the event loop that owns it.
//
// Inputs: Tick, Step, Propose, Campaign, Resign, SnapshotTaken,
// StatePersisted, LogSynced, PeerUnreachable. Outputs: Ready. Queries: Status,
// DescribeQuorum, NextDeadline.
//
// Time: the Raft's clock is the time of the last Tick, and every input is
// taken to happen then (a fetch's arrival, a vote's grant). The driver calls
// Tick(now) before each other input, not only at NextDeadline, so that
// timeouts run from when things actually happened.
type Raft struct {
	cfg   Config
	id    NodeID
	voter bool
	rng   *rand.Rand
	log   Log
	now   time.Duration

	state QuorumState
	role  Role

	// Durability of the quorum state. Every change of state bumps stateSeq;
	// a message is withheld in gated until the state current when it was
	// produced is durable.
	stateSeq       uint64
	durableSeq     uint64
	persistPending bool
	gated          []gatedMessage
	outbox         []Message

	// Durability of the log: the log below durableEnd is on stable storage.
	syncSeq     uint64
	syncPending bool
	syncs       []pendingSync
	durableEnd  int64

	highWatermark int64
	// applied is the offset below which batches were handed out in Ready;
	// always a batch end.
	applied           int64
	loadSnapshot      bool
	appliedSinceSnap  int64
	snapshotRequested bool
	softStateChanged  bool
	lastLeaderContact time.Duration
	heardFromLeader   bool
	// leaderGone: the leader of this epoch resigned (EndQuorumEpoch, or it
	// answered a fetch as a non-leader); it is never followed again.
	leaderGone bool
	// leaderUnreachable: the driver reported the leader of the current
	// state unreachable (PeerUnreachable) and it has not been heard from
	// since; cleared when the epoch or the leader changes.
	leaderUnreachable bool
	// electionRetries counts elections lost in a row, for the backoff.
	electionRetries    int
	electionDeadline   time.Duration
	fetchDeadline      time.Duration
	discoveryNextVoter int

	// stepRef is the Ref of the request Step is handling: its answer
	// (reply) echoes it.
	stepRef uint64

	// Role-specific state; at most one is non-nil.
	election *election
	leader   *leaderState
	fetcher  *fetcherState
	resigned *resignedState
}

// Status is a node's view of itself, for tests, metrics and debugging.
type Status struct {
	ID            NodeID
	Voter         bool
	Role          Role
	State         QuorumState
	HighWatermark int64
	Applied       int64
	LogStart      int64
	LogEnd        OffsetAndEpoch
	DurableEnd    int64
}

// New returns the Raft of node cfg.ID over log, resuming from durable, the
// last quorum state the driver persisted (InitialState for a new node). The
// log is taken as durable as it is: the driver recovers it before calling
// New. rng is the node's seeded randomness (election timeouts); now is its
// monotonic clock.
func New(cfg Config, log Log, durable QuorumState, rng *rand.Rand, now time.Duration) (*Raft, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil || rng == nil {
		return nil, fmt.Errorf("quorum: New needs a log and a rand")
	}
	r := &Raft{
		cfg:   cfg,
		id:    cfg.ID,
		voter: slices.Contains(cfg.Voters, cfg.ID),
		rng:   rng,
		log:   log,
		now:   now,
		state: durable,
	}
	if err := CheckState(durable, cfg.ID, cfg.Voters); err != nil {
		return nil, err
	}
	if end := log.EndOffset(); !epochInRange(end.Epoch) || !offsetInRange(end.Offset) {
		return nil, fmt.Errorf("%w: log end %s out of range", ErrUnusableState, end)
	}
	end := log.EndOffset()
	r.durableEnd = end.Offset
	r.highWatermark = log.StartOffset()
	if snap, ok := log.LatestSnapshot(); ok {
		// A snapshot holds only committed batches.
		r.highWatermark = max(r.highWatermark, min(snap.EndOffset, end.Offset))
		r.loadSnapshot = true
		if b := log.FloorBatchBoundary(r.highWatermark); b != r.highWatermark {
			return nil, fmt.Errorf("quorum: snapshot %s ends inside the log's batch at %d", snap, b)
		}
	} else if log.StartOffset() != 0 {
		return nil, fmt.Errorf("quorum: log starts at %d without a snapshot", log.StartOffset())
	}
	if durable.Epoch < end.Epoch {
		// The log holds an epoch the durable state does not know: as KRaft,
		// resume unattached in the log's epoch.
		r.setState(QuorumState{Epoch: end.Epoch, VotedFor: NoNode, LeaderID: NoNode})
	}
	switch {
	case r.state.LeaderID == r.id:
		// A leader that restarts never leads its epoch again: it lost its
		// volatile state, and batches it had not synced may be gone.
		r.enterResigned(nil)
	case r.state.LeaderID != NoNode:
		r.becomeFollower(r.state.Epoch, r.state.LeaderID)
	default:
		r.enterUnattached()
	}
	r.softStateChanged = true
	return r, nil
}

// ID returns this node's id.
func (r *Raft) ID() NodeID { return r.id }

// Status returns the node's current view of itself.
func (r *Raft) Status() Status {
	return Status{
		ID:            r.id,
		Voter:         r.voter,
		Role:          r.role,
		State:         r.state,
		HighWatermark: r.highWatermark,
		Applied:       r.applied,
		LogStart:      r.log.StartOffset(),
		LogEnd:        r.log.EndOffset(),
		DurableEnd:    r.durableEnd,
	}
}

// Leader returns the leader this node follows (itself when leading) and its
// epoch; NoNode while there is none.
func (r *Raft) Leader() (NodeID, int32) { return r.leaderHint(), r.state.Epoch }

// leaderHint is the leader worth naming to others: the leader of the epoch
// while it is live as far as this node knows.
func (r *Raft) leaderHint() NodeID {
	if r.role == RoleLeader || r.role == RoleFollower {
		return r.state.LeaderID
	}
	return NoNode
}

// Tick tells the Raft the monotonic time; timeouts fire from it. The driver
// calls it at NextDeadline (or more often).
func (r *Raft) Tick(now time.Duration) {
	assert.That(now >= r.now, "quorum: time went backwards: %v -> %v", r.now, now)
	r.now = now
	switch r.role {
	case RoleLeader:
		r.tickLeader()
	case RoleFollower:
		r.tickFollower()
	case RoleUnattached:
		r.tickUnattached()
	case RoleProspective, RoleCandidate:
		r.tickElection()
	case RoleResigned:
		r.tickResigned()
	}
}

// NextDeadline is the earliest time at which Tick has something to do.
func (r *Raft) NextDeadline() time.Duration {
	switch r.role {
	case RoleLeader:
		return r.leaderDeadline()
	case RoleFollower:
		return min(r.fetchDeadline, r.fetcherDeadline())
	case RoleUnattached:
		if r.voter {
			return r.electionDeadline
		}
		return r.fetcherDeadline()
	case RoleProspective, RoleCandidate:
		return r.electionTimerDeadline()
	case RoleResigned:
		return min(r.electionDeadline, r.resignedDeadline())
	}
	return never
}

// Step hands the Raft a message received from a peer, request or response.
// It returns an error wrapping ErrInvalidMessage (and ignores the message)
// when the message is not addressed to this node, is not a quorum payload,
// or carries values out of range (see validate.go): DecodeRequest and
// DecodeResponse refuse those first, so that the driver can answer them.
func (r *Raft) Step(m Message) error {
	if m.To != r.id || m.From == r.id || m.From < 0 {
		return fmt.Errorf("%w: %s at node %s", ErrInvalidMessage, m, r.id)
	}
	if m.Payload == nil {
		return fmt.Errorf("%w: no payload", ErrInvalidMessage)
	}
	if IsRequest(m.Payload) {
		if rerr := checkRequest(m); rerr != nil {
			return fmt.Errorf("%w: %s", ErrInvalidMessage, rerr.Reason)
		}
		r.stepRef = m.Ref
		defer func() { r.stepRef = 0 }()
	} else if err := checkResponse(m.Payload); err != nil {
		return err
	}
	switch p := m.Payload.(type) {
	case VoteRequest:
		r.handleVoteRequest(m.From, p)
	case VoteResponse:
		r.handleVoteResponse(m.From, p)
	case BeginQuorumEpochRequest:
		r.handleBeginQuorumEpoch(m.From, p)
	case BeginQuorumEpochResponse:
		r.handleBeginQuorumEpochResponse(m.From, p)
	case EndQuorumEpochRequest:
		r.handleEndQuorumEpoch(m.From, p)
	case EndQuorumEpochResponse:
		r.handleEndQuorumEpochResponse(m.From, p)
	case FetchRequest:
		r.handleFetchRequest(m.From, p)
	case FetchResponse:
		r.handleFetchResponse(m.From, p)
	case FetchSnapshotRequest:
		r.handleFetchSnapshotRequest(m.From, p)
	case FetchSnapshotResponse:
		r.handleFetchSnapshotResponse(m.From, p)
	default:
		return fmt.Errorf("%w: unknown payload %T", ErrInvalidMessage, m.Payload)
	}
	return nil
}

// setState changes the quorum state, checking the election invariants, and
// schedules its persistence.
func (r *Raft) setState(next QuorumState) {
	prev := r.state
	assert.NotDecreasing("quorum epoch", prev.Epoch, next.Epoch)
	assert.That(next.Epoch <= MaxEpoch, "quorum: node %s at epoch %d, past MaxEpoch %d", r.id, next.Epoch, MaxEpoch)
	if next.Epoch == prev.Epoch {
		assert.That(prev.VotedFor == NoNode || prev.VotedFor == next.VotedFor,
			"quorum: node %s votes twice in epoch %d: %s then %s", r.id, next.Epoch, prev.VotedFor, next.VotedFor)
		assert.That(prev.LeaderID == NoNode || prev.LeaderID == next.LeaderID,
			"quorum: node %s sees two leaders in epoch %d: %s then %s", r.id, next.Epoch, prev.LeaderID, next.LeaderID)
	}
	if next == prev {
		return
	}
	if next.Epoch != prev.Epoch || next.LeaderID != prev.LeaderID {
		r.leaderUnreachable = false
	}
	r.state = next
	r.stateSeq++
	r.persistPending = true
	r.softStateChanged = true
}

// setRole switches role, dropping the previous role's volatile state. A
// leader stepping down answers the fetches it parked with
// NOT_LEADER_OR_FOLLOWER, naming the new leader when known, so that its
// followers move on at once instead of after a request timeout.
func (r *Raft) setRole(role Role) {
	if r.role != role {
		r.softStateChanged = true
	}
	var parked map[NodeID]parkedFetch
	if r.leader != nil && role != RoleLeader {
		parked = r.leader.parked
	}
	r.role = role
	r.election, r.leader, r.fetcher, r.resigned = nil, nil, nil, nil
	ids := make([]NodeID, 0, len(parked))
	for id := range parked { //determinism:unordered sorted below
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		req := parked[id].req
		r.sendRef(id, parked[id].ref, FetchResponse{
			Error: ErrNotLeaderOrFollower, Epoch: r.state.Epoch, LeaderID: r.leaderHint(),
			HighWatermark: -1, LogStartOffset: -1,
			FetchEpoch: req.Epoch, FetchOffset: req.FetchOffset, LastFetchedEpoch: req.LastFetchedEpoch,
		})
	}
}

func (r *Raft) isVoter(id NodeID) bool {
	_, found := slices.BinarySearch(r.cfg.Voters, id)
	return found
}

// otherVoters are the voters except this node, in id order.
func (r *Raft) otherVoters() []NodeID {
	out := make([]NodeID, 0, len(r.cfg.Voters))
	for _, v := range r.cfg.Voters {
		if v != r.id {
			out = append(out, v)
		}
	}
	return out
}

func (r *Raft) majority() int { return len(r.cfg.Voters)/2 + 1 }

// randomElectionTimeout draws from [ElectionTimeout, 2*ElectionTimeout).
func (r *Raft) randomElectionTimeout() time.Duration {
	t := r.cfg.ElectionTimeout
	return t + time.Duration(r.rng.Int64N(int64(t)))
}

// electionBackoff draws the wait after the retries-th lost election in a
// row, as KRaft's binary exponential backoff: uniform in [0, RetryBackoff *
// 2^retries), capped at ElectionBackoffMax. Split votes among nodes that
// timed out together resolve within a few tens of milliseconds.
func (r *Raft) electionBackoff(retries int) time.Duration {
	bound := r.cfg.RetryBackoff << min(retries, maxBackoffShift)
	if bound <= 0 || bound > r.cfg.ElectionBackoffMax {
		bound = r.cfg.ElectionBackoffMax
	}
	return time.Duration(r.rng.Int64N(int64(bound)))
}

// maxBackoffShift bounds the exponent of electionBackoff against overflow.
const maxBackoffShift = 20

func (r *Raft) markLeaderContact() {
	r.heardFromLeader = true
	r.leaderUnreachable = false
	r.lastLeaderContact = r.now
	r.fetchDeadline = r.now + r.cfg.FetchTimeout
}
