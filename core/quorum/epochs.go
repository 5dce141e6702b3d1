package quorum

// This file holds the transitions between epochs and leaders that are not
// elections: becoming unattached or a follower, learning a newer epoch from
// any peer, and a new leader announcing itself (BeginQuorumEpoch).

import "github.com/strata-log/strata/core/assert"

// enterUnattached takes the unattached role in the current epoch: a voter
// waits a random election timeout, an observer looks for the leader by
// fetching from the voters in turn.
func (r *Raft) enterUnattached() {
	r.setRole(RoleUnattached)
	r.heardFromLeader = false
	if r.voter {
		r.electionDeadline = r.now + r.randomElectionTimeout()
		return
	}
	r.fetcher = &fetcherState{discovering: true}
	r.discoveryNextVoter = r.rng.IntN(len(r.cfg.Voters))
	r.maybeSendFetch()
}

// becomeUnattached moves to a newer epoch whose leader is not known.
func (r *Raft) becomeUnattached(epoch int32) {
	assert.That(epoch > r.state.Epoch, "quorum: unattached at epoch %d from %d", epoch, r.state.Epoch)
	r.setState(QuorumState{Epoch: epoch, VotedFor: NoNode, LeaderID: NoNode})
	r.leaderGone = false
	r.enterUnattached()
}

// becomeFollower follows leader in epoch (at least the current one).
func (r *Raft) becomeFollower(epoch int32, leader NodeID) {
	assert.That(leader != r.id && leader != NoNode, "quorum: node %s following %s", r.id, leader)
	next := QuorumState{Epoch: epoch, VotedFor: NoNode, LeaderID: leader}
	if epoch == r.state.Epoch {
		next.VotedFor = r.state.VotedFor
	}
	r.setState(next)
	r.setRole(RoleFollower)
	r.heardFromLeader, r.leaderGone = false, false
	r.electionRetries = 0
	r.fetcher = &fetcherState{target: leader}
	r.fetchDeadline = r.now + r.cfg.FetchTimeout
	r.maybeSendFetch()
}

// mayFollow reports whether this node may follow leader in epoch as far as
// its own state goes: a newer epoch, or this one when its leader is not
// known or is that leader. An epoch has one leader; a peer that names
// another for an epoch this node knows the leader of is broken or forged,
// and following it would break that invariant.
func (r *Raft) mayFollow(epoch int32, leader NodeID) bool {
	return epoch > r.state.Epoch || r.state.LeaderID == NoNode || r.state.LeaderID == leader
}

// observeEpoch reacts to a peer's newer epoch: follow its leader when named,
// else become unattached in it. It reports whether the epoch moved.
func (r *Raft) observeEpoch(epoch int32, leader NodeID) bool {
	if epoch <= r.state.Epoch {
		return false
	}
	if leader != NoNode && leader != r.id && r.isVoter(leader) {
		r.becomeFollower(epoch, leader)
	} else {
		r.becomeUnattached(epoch)
	}
	return true
}

// epochTooFar reports whether a request's epoch is more than MaxEpochJump
// ahead of this node's: one such request is refused rather than moving
// the node (and, through it, the quorum) most of the way to MaxEpoch.
func (r *Raft) epochTooFar(epoch int32) bool {
	return int64(epoch)-int64(r.state.Epoch) > int64(MaxEpochJump)
}

func (r *Raft) tickUnattached() {
	if r.voter {
		if r.now >= r.electionDeadline {
			r.becomeProspective()
		}
		return
	}
	r.tickFetcher()
}

// acceptLeaderMessage checks a leader's BeginQuorumEpoch or
// EndQuorumEpoch at the boundary: sent by the voter it names as leader,
// in an epoch neither too far ahead nor behind this node's. It answers a
// message that fails with respond and the error, and reports whether the
// message passed.
func (r *Raft) acceptLeaderMessage(from, leader NodeID, epoch int32, respond func(ErrorCode)) bool {
	code := ErrNone
	switch {
	case from != leader || !r.isVoter(leader):
		code = ErrInconsistentVoterSet
	case r.epochTooFar(epoch):
		code = ErrInvalidRequest
	case epoch < r.state.Epoch:
		code = ErrFencedLeaderEpoch
	}
	if code != ErrNone {
		respond(code)
	}
	return code == ErrNone
}

func (r *Raft) handleBeginQuorumEpoch(from NodeID, req BeginQuorumEpochRequest) {
	respond := func(code ErrorCode) {
		r.reply(from, BeginQuorumEpochResponse{Error: code, Epoch: r.state.Epoch, LeaderID: r.leaderHint()})
	}
	if !r.acceptLeaderMessage(from, req.LeaderID, req.Epoch, respond) {
		return
	}
	if !r.mayFollow(req.Epoch, req.LeaderID) {
		// Another leader of this very epoch: an epoch has one leader, so
		// this announcement is forged or broken (issue 22).
		respond(ErrInvalidRequest)
		return
	}
	if req.Epoch > r.state.Epoch || r.role != RoleFollower || r.state.LeaderID != req.LeaderID {
		r.becomeFollower(req.Epoch, req.LeaderID)
	}
	r.markLeaderContact()
	respond(ErrNone)
}

func (r *Raft) handleBeginQuorumEpochResponse(from NodeID, resp BeginQuorumEpochResponse) {
	if r.observeEpoch(resp.Epoch, resp.LeaderID) {
		return
	}
	if r.role == RoleLeader && resp.Error == ErrNone && resp.Epoch == r.state.Epoch {
		if p := r.leader.replicas[from]; p != nil {
			p.acked = true
		}
	}
}
