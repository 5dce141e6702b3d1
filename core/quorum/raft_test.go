package quorum

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func newTestRaft(t *testing.T, cfg Config) *Raft {
	t.Helper()
	r, err := New(cfg, NewMemoryLog(), InitialState(), rand.New(rand.NewPCG(1, 2)), 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{ID: 1}, "no voters"},
		{Config{ID: 1, Voters: []NodeID{1, 1}}, "listed twice"},
		{Config{ID: -1, Voters: []NodeID{1}}, "negative"},
		{Config{ID: 1, Voters: []NodeID{1}, RequestTimeout: 100 * time.Millisecond}, "must exceed fetch max wait"},
		{Config{ID: 1, Voters: []NodeID{1}, ElectionTimeout: -1}, "election timeout"},
	} {
		_, err := New(c.cfg, NewMemoryLog(), InitialState(), rand.New(rand.NewPCG(1, 2)), 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
	got, err := Config{ID: 1, Voters: []NodeID{3, 1, 2}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if got.ElectionTimeout != DefaultElectionTimeout || got.FetchTimeout != DefaultFetchTimeout ||
		got.Voters[0] != 1 || got.checkQuorumTimeout() != 3*time.Second {
		t.Fatalf("defaults: %+v", got)
	}
}

func TestNewRejectsInconsistentState(t *testing.T) {
	cfg := Config{ID: 4, Voters: []NodeID{1, 2, 3}}
	rng := rand.New(rand.NewPCG(1, 2))
	if _, err := New(cfg, NewMemoryLog(), QuorumState{Epoch: 3, VotedFor: 4, LeaderID: NoNode}, rng, 0); err == nil {
		t.Error("an observer with a vote was accepted")
	}
	if _, err := New(cfg, NewMemoryLog(), QuorumState{Epoch: 3, VotedFor: NoNode, LeaderID: 9}, rng, 0); err == nil {
		t.Error("a leader outside the voters was accepted")
	}
}

// A single voter elects itself once its candidacy is durable, commits its
// leader-change batch once that is synced, and then commits proposals.
func TestSingleVoter(t *testing.T) {
	r := newTestRaft(t, Config{ID: 1, Voters: []NodeID{1}})
	if err := r.Campaign(); err != nil {
		t.Fatal(err)
	}
	if r.Status().Role != RoleCandidate {
		t.Fatalf("role %s before the candidacy is durable", r.Status().Role)
	}
	rd := r.Ready()
	r.StatePersisted(rd.PersistState.Seq)
	if r.Status().Role != RoleLeader {
		t.Fatalf("role %s after the candidacy is durable", r.Status().Role)
	}
	last, epoch, err := r.Propose([][]byte{[]byte("a"), []byte("b")})
	if err != nil || last != 2 || epoch != 1 {
		t.Fatalf("Propose = %d, %d, %v", last, epoch, err)
	}
	rd = r.Ready()
	if rd.HighWatermark != 0 || len(rd.Committed) != 0 {
		t.Fatalf("committed before the log sync: %+v", rd)
	}
	r.StatePersisted(rd.PersistState.Seq)
	r.LogSynced(rd.SyncLog.Seq)
	rd = r.Ready()
	// One proposal, one batch, applied whole.
	if rd.HighWatermark != 3 || len(rd.Committed) != 2 || len(rd.Committed[1].Records) != 2 || string(rd.Committed[1].Records[1]) != "b" {
		t.Fatalf("after sync: hw %d committed %v", rd.HighWatermark, rd.Committed)
	}
	if r.HasReady() {
		t.Fatalf("Ready left something: %+v", r.Ready())
	}
}

func TestProposeErrors(t *testing.T) {
	r := newTestRaft(t, Config{ID: 1, Voters: []NodeID{1, 2, 3}, MaxBatchBytes: 100, MaxBatchRecords: 3})
	_, _, err := r.Propose([][]byte{[]byte("x")})
	var nl *NotLeaderError
	if !errors.As(err, &nl) || !errors.Is(err, ErrNotLeader) || nl.LeaderID != NoNode {
		t.Fatalf("follower propose: %v", err)
	}
	single := newTestRaft(t, Config{ID: 1, Voters: []NodeID{1}, MaxBatchBytes: 100, MaxBatchRecords: 3})
	single.Campaign()
	single.StatePersisted(single.Ready().PersistState.Seq)
	if _, _, err := single.Propose(nil); !errors.Is(err, ErrEmptyProposal) {
		t.Errorf("empty: %v", err)
	}
	if _, _, err := single.Propose([][]byte{make([]byte, 200)}); !errors.Is(err, ErrProposalTooLarge) {
		t.Errorf("too large: %v", err)
	}
	if _, _, err := single.Propose(make([][]byte, 4)); !errors.Is(err, ErrProposalTooLarge) {
		t.Errorf("too many records: %v", err)
	}
	if _, _, err := single.Propose(make([][]byte, 1)); err != nil {
		t.Errorf("within bounds: %v", err)
	}
}

func TestStepRejectsMisaddressed(t *testing.T) {
	r := newTestRaft(t, Config{ID: 1, Voters: []NodeID{1, 2, 3}})
	for _, m := range []Message{
		{From: 2, To: 3, Payload: BeginQuorumEpochRequest{Epoch: 1, LeaderID: 2}},
		{From: 1, To: 1, Payload: BeginQuorumEpochRequest{Epoch: 1, LeaderID: 1}},
		{From: 2, To: 1, Payload: nil},
	} {
		if err := r.Step(m); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("%v: got %v", m.Payload, err)
		}
	}
	observer := newTestRaft(t, Config{ID: 4, Voters: []NodeID{1, 2, 3}})
	if err := observer.Campaign(); err == nil {
		t.Error("an observer campaigned")
	}
}

// Malformed responses from the network are ignored, never trusted: batches
// that do not continue the log, a snapshot chunk past its size.
func TestFollowerIgnoresMalformedResponses(t *testing.T) {
	r := newTestRaft(t, Config{ID: 2, Voters: []NodeID{1, 2, 3}})
	if err := r.Step(Message{From: 1, To: 2, Payload: BeginQuorumEpochRequest{Epoch: 1, LeaderID: 1}}); err != nil {
		t.Fatal(err)
	}
	r.StatePersisted(r.Ready().PersistState.Seq)
	bad := []FetchResponse{
		{Epoch: 1, LeaderID: 1, HighWatermark: 1, Batches: []Batch{{BaseOffset: 5, Epoch: 1, Records: recs(1)}}},
		{Epoch: 1, LeaderID: 1, HighWatermark: 1, Batches: []Batch{{BaseOffset: 0, Epoch: 2, Records: recs(1)}}},
		{Epoch: 1, LeaderID: 1, HighWatermark: 1, Batches: []Batch{{BaseOffset: 0, Epoch: 1}}},
	}
	for _, resp := range bad {
		if err := r.Step(Message{From: 1, To: 2, Payload: resp}); err != nil {
			t.Fatal(err)
		}
		if s := r.Status(); s.LogEnd.Offset != 0 || s.HighWatermark != 0 {
			t.Fatalf("malformed %v changed the log: %+v", resp, s)
		}
	}
	// A high watermark inside a batch is taken down to the batch's base:
	// a batch commits whole or not at all.
	inside := FetchResponse{Epoch: 1, LeaderID: 1, HighWatermark: 2, Batches: []Batch{
		{BaseOffset: 0, Epoch: 1, Kind: BatchLeaderChange, Records: recs(1)},
		{BaseOffset: 1, Epoch: 1, Records: recs(3)},
	}}
	if err := r.Step(Message{From: 1, To: 2, Payload: inside}); err != nil {
		t.Fatal(err)
	}
	if s := r.Status(); s.LogEnd.Offset != 4 || s.HighWatermark != 1 {
		t.Fatalf("high watermark inside a batch: %+v", s)
	}
}

// A leader answers fetches in whole batches, one however large past the
// fetch's max bytes, and refuses as malformed a fetch offset inside a batch
// (a follower whose log matches ends on a batch boundary).
func TestLeaderFetchesAreWholeBatches(t *testing.T) {
	n := newTestNode(1, Config{Voters: []NodeID{1, 2, 3}}, 1)
	var sent []Message
	step := func(p Payload) {
		t.Helper()
		sent = nil
		if err := n.raft.Step(Message{From: 2, To: 1, Payload: p}); err != nil {
			t.Fatal(err)
		}
		n.drain(true, func(m Message) { sent = append(sent, m) }, nil)
	}
	if err := n.raft.Campaign(); err != nil {
		t.Fatal(err)
	}
	n.drain(true, func(Message) {}, nil)
	step(VoteResponse{Epoch: 0, LeaderID: NoNode, Granted: true, PreVote: true})
	step(VoteResponse{Epoch: 1, LeaderID: NoNode, Granted: true})
	if s := n.raft.Status(); s.Role != RoleLeader {
		t.Fatalf("not elected: %+v", s)
	}
	if last, _, err := n.raft.Propose([][]byte{[]byte("a"), []byte("b"), []byte("c")}); err != nil || last != 3 {
		t.Fatalf("Propose = %d, %v", last, err)
	}
	n.drain(true, func(Message) {}, nil)

	step(FetchRequest{Epoch: 1, ReplicaID: 2, FetchOffset: 2, LastFetchedEpoch: 1, MaxBytes: 1})
	if len(sent) != 1 || sent[0].Payload.(FetchResponse).Error != ErrInvalidRequest {
		t.Fatalf("fetch inside a batch: sent %v", sent)
	}
	step(FetchRequest{Epoch: 1, ReplicaID: 2, FetchOffset: 1, LastFetchedEpoch: 1, MaxBytes: 1})
	if len(sent) != 1 {
		t.Fatalf("fetch at a batch boundary: sent %v", sent)
	}
	if got := sent[0].Payload.(FetchResponse).Batches; len(got) != 1 || got[0].BaseOffset != 1 || len(got[0].Records) != 3 {
		t.Fatalf("fetch at a batch boundary: got %v, want the batch [1, 4) whole", got)
	}
}
