package quorum

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// A node at MaxEpoch cannot campaign (its candidacy would pass MaxEpoch):
// Campaign says so, its timers keep it unattached instead of wrapping the
// epoch, and it still follows a leader of MaxEpoch.
func TestMaxEpochNeverWraps(t *testing.T) {
	cfg := Config{ID: 2, Voters: []NodeID{1, 2, 3}}
	r, err := New(cfg, NewMemoryLog(), QuorumState{Epoch: MaxEpoch, VotedFor: NoNode, LeaderID: NoNode}, rand.New(rand.NewPCG(1, 2)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Campaign(); !errors.Is(err, ErrEpochExhausted) {
		t.Fatalf("Campaign at MaxEpoch: %v", err)
	}
	for now := time.Duration(0); now < time.Minute; now += 100 * time.Millisecond {
		r.Tick(now)
		rd := r.Ready()
		if rd.PersistState != nil {
			r.StatePersisted(rd.PersistState.Seq)
		}
		if s := r.Status(); s.State.Epoch != MaxEpoch || s.Role != RoleUnattached {
			t.Fatalf("at %v: %+v", now, s)
		}
	}
	if err := r.Step(Message{From: 1, To: 2, Payload: BeginQuorumEpochRequest{Epoch: MaxEpoch, LeaderID: 1}}); err != nil {
		t.Fatal(err)
	}
	if s := r.Status(); s.Role != RoleFollower || s.State.LeaderID != 1 {
		t.Fatalf("after a leader of MaxEpoch announced itself: %+v", s)
	}
}

// A durable state out of range is an error at New, not a panic later.
func TestNewRejectsUnusableState(t *testing.T) {
	cfg := Config{ID: 1, Voters: []NodeID{1, 2, 3}}
	for _, s := range []QuorumState{
		{Epoch: math.MaxInt32, VotedFor: 2, LeaderID: NoNode},
		{Epoch: -1, VotedFor: NoNode, LeaderID: NoNode},
		{Epoch: 3, VotedFor: 9, LeaderID: NoNode},
	} {
		if _, err := New(cfg, NewMemoryLog(), s, rand.New(rand.NewPCG(1, 2)), 0); !errors.Is(err, ErrUnusableState) {
			t.Errorf("%s: got %v, want ErrUnusableState", s, err)
		}
	}
}

// Step refuses, without effect, values no peer may send: a request the
// boundary would have refused, and responses with an epoch past MaxEpoch.
func TestStepRefusesOutOfRange(t *testing.T) {
	r := newTestRaft(t, Config{ID: 1, Voters: []NodeID{1, 2, 3}})
	for _, p := range []Payload{
		VoteRequest{Epoch: math.MaxInt32, CandidateID: 2, LastEnd: OffsetAndEpoch{Offset: 1 << 40, Epoch: 5}},
		VoteRequest{Epoch: 3, CandidateID: 2, LastEnd: OffsetAndEpoch{Offset: -1, Epoch: 1}},
		BeginQuorumEpochRequest{Epoch: math.MaxInt32, LeaderID: 2},
		FetchRequest{Epoch: 0, ReplicaID: 2, FetchOffset: -3},
		VoteResponse{Epoch: math.MaxInt32, LeaderID: 2},
		BeginQuorumEpochResponse{Epoch: math.MaxInt32, LeaderID: NoNode},
		FetchResponse{Epoch: math.MaxInt32, LeaderID: 2},
		FetchResponse{Epoch: 1, LeaderID: -7},
	} {
		if err := r.Step(Message{From: 2, To: 1, Payload: p}); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("%s: got %v, want ErrInvalidMessage", p, err)
		}
	}
	if s := r.Status(); s.State != InitialState() || r.HasReady() && len(r.Ready().Messages) > 0 {
		t.Fatalf("refused messages changed the node: %+v", s)
	}
}

// A pre-vote answer naming a leader that is not a voter is not followed
// (the durable state would name a node outside the voters, and New would
// refuse it at the next start).
func TestVoteResponseNamingANonVoterIsNotFollowed(t *testing.T) {
	r := newTestRaft(t, Config{ID: 1, Voters: []NodeID{1, 2, 3}})
	if err := r.Campaign(); err != nil {
		t.Fatal(err)
	}
	if err := r.Step(Message{From: 2, To: 1, Payload: VoteResponse{Epoch: 0, LeaderID: 9, PreVote: true}}); err != nil {
		t.Fatal(err)
	}
	if s := r.Status(); s.State.LeaderID != NoNode || s.Role == RoleFollower {
		t.Fatalf("followed a non-voter: %+v", s)
	}
}

// A fetch response that would cut a follower's log below its high
// watermark (a diverging epoch, or a snapshot that ends there) is
// dropped: everything committed is in the leader's log, so only a damaged
// or hostile peer says so, and truncating committed batches is an
// invariant violation.
func TestFollowerRefusesCutBelowHighWatermark(t *testing.T) {
	r := newTestRaft(t, Config{ID: 2, Voters: []NodeID{1, 2, 3}})
	if err := r.Step(Message{From: 1, To: 2, Payload: BeginQuorumEpochRequest{Epoch: 1, LeaderID: 1}}); err != nil {
		t.Fatal(err)
	}
	r.StatePersisted(r.Ready().PersistState.Seq)
	fill := FetchResponse{Epoch: 1, LeaderID: 1, HighWatermark: 4, Batches: []Batch{
		{BaseOffset: 0, Epoch: 1, Kind: BatchLeaderChange, Records: recs(1)},
		{BaseOffset: 1, Epoch: 1, Records: recs(3)},
	}}
	if err := r.Step(Message{From: 1, To: 2, Payload: fill}); err != nil {
		t.Fatal(err)
	}
	rd := r.Ready()
	r.LogSynced(rd.SyncLog.Seq)
	if s := r.Status(); s.HighWatermark != 4 {
		t.Fatalf("set-up: %+v", s)
	}
	for _, resp := range []FetchResponse{
		{Epoch: 1, LeaderID: 1, HighWatermark: 4, FetchOffset: 4, LastFetchedEpoch: 1, DivergingEpoch: &OffsetAndEpoch{Offset: 1, Epoch: 1}},
		{Epoch: 1, LeaderID: 1, HighWatermark: 4, FetchOffset: 4, LastFetchedEpoch: 1, DivergingEpoch: &OffsetAndEpoch{Offset: 0, Epoch: 0}},
		{Epoch: 1, LeaderID: 1, HighWatermark: 4, FetchOffset: 4, LastFetchedEpoch: 1, Snapshot: &SnapshotID{EndOffset: 2, Epoch: 1}},
	} {
		if err := r.Step(Message{From: 1, To: 2, Payload: resp}); err != nil {
			t.Fatal(err)
		}
		if s := r.Status(); s.LogEnd.Offset != 4 || s.HighWatermark != 4 || s.Role != RoleFollower {
			t.Fatalf("%s changed the log: %+v", resp, s)
		}
	}
}
