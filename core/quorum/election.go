package quorum

// This file is leader election: the pre-vote round (KIP-996), the vote,
// and taking the leadership of an epoch.

import (
	"fmt"
	"slices"
	"time"

	"github.com/strata-log/strata/core/assert"
)

// election tracks a pre-vote round (prospective) or a vote (candidate).
type election struct {
	granted  map[NodeID]bool
	rejected map[NodeID]bool
	// candidacySeq is the state seq of the candidacy: the candidate's own
	// vote counts once that state is durable.
	candidacySeq uint64
	// lost: a majority rejected the candidate (or cannot answer: see
	// unreachable); it waits out a random backoff before trying again.
	lost bool
	// unreachable holds the voters the driver reported unreachable
	// (PeerUnreachable) that have not answered this round: they count as
	// rejecting it in hopeless.
	unreachable map[NodeID]bool
	// stillFollowed holds the voters that rejected this pre-vote round
	// because they follow the leader this node saw resign (leaderGone).
	stillFollowed map[NodeID]bool
	// req is the request of this round, sent again every RequestTimeout to
	// voters that have not answered.
	req     VoteRequest
	retryAt time.Duration
}

func newElection() *election {
	return &election{granted: map[NodeID]bool{}, rejected: map[NodeID]bool{}, unreachable: map[NodeID]bool{}, stillFollowed: map[NodeID]bool{}}
}

func (e *election) record(from NodeID, granted bool) {
	delete(e.unreachable, from)
	if granted {
		delete(e.rejected, from)
		e.granted[from] = true
	} else if !e.granted[from] {
		e.rejected[from] = true
	}
}

// hopeless reports whether so many voters rejected (or are unreachable and
// have not answered) that a majority cannot grant.
func (r *Raft) hopeless(e *election) bool {
	return len(e.rejected)+len(e.unreachable) > len(r.cfg.Voters)-r.majority()
}

// loseIfHopeless ends a round a majority can no longer grant: a
// prospective gives up its pre-vote, a candidate waits out the election
// backoff before trying again.
func (r *Raft) loseIfHopeless() {
	e := r.election
	if !r.hopeless(e) {
		return
	}
	switch {
	case r.role == RoleProspective:
		r.prospectiveLost()
	case r.role == RoleCandidate && !e.lost:
		e.lost = true
		r.electionRetries++
		r.electionDeadline = r.now + r.electionBackoff(r.electionRetries)
	}
}

// Campaign starts an election now, as if the election timeout had fired:
// a pre-vote round first. It does nothing on a leader or a node already
// campaigning.
func (r *Raft) Campaign() error {
	if !r.voter {
		return fmt.Errorf("quorum: observer %s cannot campaign", r.id)
	}
	switch r.role {
	case RoleLeader, RoleProspective, RoleCandidate:
		return nil
	}
	if r.state.Epoch >= MaxEpoch {
		return fmt.Errorf("%w: node %s is at epoch %d", ErrEpochExhausted, r.id, r.state.Epoch)
	}
	r.becomeProspective()
	return nil
}

// becomeProspective starts a pre-vote round in the current epoch (KIP-996).
// A node at MaxEpoch cannot become a candidate (its epoch would pass
// MaxEpoch), so it waits unattached instead, following any leader of
// MaxEpoch that announces itself.
func (r *Raft) becomeProspective() {
	assert.That(r.voter, "quorum: observer %s campaigning", r.id)
	if r.state.Epoch >= MaxEpoch {
		r.enterUnattached()
		return
	}
	r.setRole(RoleProspective)
	r.election = newElection()
	r.election.granted[r.id] = true
	r.electionDeadline = r.now + r.randomElectionTimeout()
	if len(r.election.granted) >= r.majority() {
		r.becomeCandidate()
		return
	}
	r.election.req = VoteRequest{Epoch: r.state.Epoch, CandidateID: r.id, LastEnd: r.log.EndOffset(), PreVote: true}
	r.sendVoteRequests()
}

// sendVoteRequests sends the round's request to every voter that has not
// answered it yet.
func (r *Raft) sendVoteRequests() {
	e := r.election
	for _, v := range r.otherVoters() {
		if !e.granted[v] && !e.rejected[v] {
			r.send(v, e.req)
		}
	}
	e.retryAt = r.now + r.cfg.RequestTimeout
}

// tickElection runs the timers of a prospective or a candidate.
func (r *Raft) tickElection() {
	switch {
	case r.now >= r.electionDeadline && r.role == RoleProspective:
		r.prospectiveLost()
	case r.now >= r.electionDeadline:
		r.becomeProspective()
	case !r.election.lost && r.now >= r.election.retryAt:
		r.sendVoteRequests()
	}
}

func (r *Raft) electionTimerDeadline() time.Duration {
	if r.election.lost {
		return r.electionDeadline
	}
	return min(r.electionDeadline, r.election.retryAt)
}

// prospectiveLost ends a pre-vote round that failed or timed out: back to
// following the known leader, or unattached.
func (r *Raft) prospectiveLost() {
	if l := r.state.LeaderID; l != NoNode && l != r.id && !r.leaderGone {
		r.becomeFollower(r.state.Epoch, l)
		return
	}
	r.enterUnattached()
}

// becomeCandidate bumps the epoch, votes for itself and asks for votes. The
// requests wait until the candidacy is durable.
func (r *Raft) becomeCandidate() {
	r.setState(QuorumState{Epoch: r.state.Epoch + 1, VotedFor: r.id, LeaderID: NoNode})
	r.setRole(RoleCandidate)
	r.election = newElection()
	r.election.candidacySeq = r.stateSeq
	r.electionDeadline = r.now + r.randomElectionTimeout()
	r.election.req = VoteRequest{Epoch: r.state.Epoch, CandidateID: r.id, LastEnd: r.log.EndOffset()}
	r.sendVoteRequests()
	r.maybeWinElection()
}

// maybeWinElection counts the candidate's own vote once durable and becomes
// leader on a majority.
func (r *Raft) maybeWinElection() {
	if r.role != RoleCandidate || r.election.lost || r.durableSeq < r.election.candidacySeq {
		return
	}
	r.election.granted[r.id] = true
	if len(r.election.granted) >= r.majority() {
		r.becomeLeader()
	}
}

// becomeLeader takes the leadership of the current epoch: it appends the
// epoch's leader-change batch (which must commit before anything else of
// the epoch can) and announces itself with BeginQuorumEpoch.
func (r *Raft) becomeLeader() {
	granting := make([]NodeID, 0, len(r.election.granted))
	for id := range r.election.granted { //determinism:unordered sorted below
		granting = append(granting, id)
	}
	slices.Sort(granting)
	r.setState(QuorumState{Epoch: r.state.Epoch, VotedFor: r.state.VotedFor, LeaderID: r.id})
	r.setRole(RoleLeader)
	r.electionRetries = 0
	end := r.log.EndOffset()
	ls := &leaderState{
		epochStartOffset: end.Offset,
		replicas:         map[NodeID]*replicaProgress{},
		parked:           map[NodeID]parkedFetch{},
		beginRetryAt:     r.now + r.cfg.RequestTimeout,
	}
	for _, v := range r.otherVoters() {
		ls.replicas[v] = &replicaProgress{voter: true, endOffset: -1, lastFetch: r.now}
	}
	r.leader = ls
	r.appendBatch(Batch{
		BaseOffset: end.Offset,
		Epoch:      r.state.Epoch,
		Kind:       BatchLeaderChange,
		Records:    [][]byte{encodeLeaderChange(r.id, r.cfg.Voters, granting)},
	})
	for _, v := range r.otherVoters() {
		r.send(v, BeginQuorumEpochRequest{Epoch: r.state.Epoch, LeaderID: r.id})
	}
}

// wouldGrantPreVote: a voter refuses pre-votes while it has a live leader,
// which is what keeps a node rejoining from a partition from disrupting it.
// A leader its driver reported unreachable (PeerUnreachable) is not live.
func (r *Raft) wouldGrantPreVote() bool {
	switch r.role {
	case RoleLeader:
		return false
	case RoleFollower:
		return r.leaderUnreachable || !r.heardFromLeader || r.now-r.lastLeaderContact >= r.cfg.FetchTimeout
	}
	return true
}

func (r *Raft) handleVoteRequest(from NodeID, req VoteRequest) {
	respond := func(granted bool, code ErrorCode) {
		r.reply(from, VoteResponse{Error: code, Epoch: r.state.Epoch, LeaderID: r.leaderHint(), Granted: granted, PreVote: req.PreVote})
	}
	if from != req.CandidateID {
		respond(false, ErrInvalidRequest)
		return
	}
	if !r.voter || !r.isVoter(req.CandidateID) {
		respond(false, ErrInconsistentVoterSet)
		return
	}
	if r.epochTooFar(req.Epoch) {
		respond(false, ErrInvalidRequest)
		return
	}
	if req.Epoch < r.state.Epoch {
		respond(false, ErrNone)
		return
	}
	if req.Epoch > r.state.Epoch {
		// A voter ahead of this node's epoch: move to it, even on a
		// pre-vote (Kafka does not). A voter can only be ahead by having
		// taken part in an election this node missed, or by a forged
		// request that moved it (issue 22): either way it cannot rejoin
		// an epoch it left, and its pre-votes are its only messages, so
		// the quorum must come to its epoch (as etcd's leader steps down
		// on a higher term in any message).
		r.becomeUnattached(req.Epoch)
	}
	upToDate := req.LastEnd.Compare(r.log.EndOffset()) >= 0
	if req.PreVote {
		respond(upToDate && r.wouldGrantPreVote(), ErrNone)
		return
	}
	s := r.state
	grant := upToDate && s.LeaderID == NoNode && (s.VotedFor == NoNode || s.VotedFor == req.CandidateID)
	if grant && s.VotedFor == NoNode {
		r.setState(QuorumState{Epoch: s.Epoch, VotedFor: req.CandidateID, LeaderID: NoNode})
		// Granting a vote is like hearing from a candidate that may win:
		// give it an election timeout before campaigning against it.
		r.enterUnattached()
	}
	respond(grant, ErrNone)
}

func (r *Raft) handleVoteResponse(from NodeID, resp VoteResponse) {
	if resp.Error != ErrNone || !r.isVoter(from) {
		return
	}
	if r.observeEpoch(resp.Epoch, resp.LeaderID) || resp.Epoch < r.state.Epoch {
		return
	}
	e := r.election
	switch r.role {
	case RoleProspective:
		if !resp.PreVote {
			return
		}
		if !resp.Granted && resp.LeaderID != NoNode && resp.LeaderID != r.id && r.isVoter(resp.LeaderID) && r.mayFollow(r.state.Epoch, resp.LeaderID) {
			if !(r.leaderGone && resp.LeaderID == r.state.LeaderID) {
				// The voter still follows a live leader of this epoch (one
				// this node has not seen resign).
				r.becomeFollower(r.state.Epoch, resp.LeaderID)
				return
			}
			// This node saw that leader resign, yet the voter follows it.
			// Once a majority of the voters say so (the leader itself
			// answers too), the resignation was not the leader's: an
			// EndQuorumEpoch forged in its name (issue 22), which would
			// otherwise keep this node out until the next election. It
			// follows the leader again; if the leader did resign, its
			// first fetch answer says so and the node leaves it again.
			e.stillFollowed[from] = true
			if len(e.stillFollowed) >= r.majority() {
				r.becomeFollower(r.state.Epoch, resp.LeaderID)
				return
			}
		}
		e.record(from, resp.Granted)
		if len(e.granted) >= r.majority() {
			r.becomeCandidate()
			return
		}
		r.loseIfHopeless()
	case RoleCandidate:
		if resp.PreVote {
			return
		}
		if !resp.Granted && resp.LeaderID != NoNode && resp.LeaderID != r.id && r.isVoter(resp.LeaderID) && r.mayFollow(r.state.Epoch, resp.LeaderID) {
			r.becomeFollower(r.state.Epoch, resp.LeaderID)
			return
		}
		e.record(from, resp.Granted)
		r.maybeWinElection()
		if r.role == RoleCandidate {
			r.loseIfHopeless()
		}
	}
}
