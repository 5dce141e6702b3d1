package quorum

// This file is a leader stepping down: graceful resignation before
// shutdown, check-quorum failure and restart, and the EndQuorumEpoch that
// asks the voters to elect a successor quickly.

import (
	"slices"
	"time"
)

// Resign makes a leader step down gracefully (before shutdown): it stops
// accepting proposals and fetches and sends EndQuorumEpoch so that the most
// up-to-date voter campaigns at once. A no-op on any other role.
func (r *Raft) Resign() {
	if r.role == RoleLeader {
		r.resign()
	}
}

// resign steps the leader down and asks the voters to elect a successor,
// the most up to date first.
func (r *Raft) resign() {
	r.enterResigned(r.preferredSuccessors())
}

// enterResigned takes the resigned role (a leader stepping down, or a leader
// that restarted) and sends EndQuorumEpoch.
func (r *Raft) enterResigned(successors []NodeID) {
	r.setRole(RoleResigned)
	r.resigned = &resignedState{successors: successors, acked: map[NodeID]bool{}}
	r.electionDeadline = r.now + r.randomElectionTimeout()
	r.sendEndQuorumEpoch()
}

type resignedState struct {
	successors []NodeID
	acked      map[NodeID]bool
	retryAt    time.Duration
}

func (r *Raft) sendEndQuorumEpoch() {
	rs := r.resigned
	for _, v := range r.otherVoters() {
		if !rs.acked[v] {
			r.send(v, EndQuorumEpochRequest{Epoch: r.state.Epoch, LeaderID: r.id, PreferredSuccessors: rs.successors})
		}
	}
	rs.retryAt = r.now + r.cfg.RequestTimeout
}

func (r *Raft) tickResigned() {
	if r.now >= r.electionDeadline {
		r.becomeProspective()
		return
	}
	if r.now >= r.resigned.retryAt {
		r.sendEndQuorumEpoch()
	}
}

func (r *Raft) resignedDeadline() time.Duration {
	if len(r.resigned.acked) >= len(r.cfg.Voters)-1 {
		return never
	}
	return r.resigned.retryAt
}

// successorBackoff is how long a voter waits before campaigning after its
// leader resigned, from its position among the preferred successors (its
// index, or the list's length when it is not listed): at once at position
// 0, else RetryBackoff doubled for each further position, capped at
// ElectionBackoffMax (KRaft's strict exponential backoff). An empty list,
// as a restarted leader sends, lets every voter campaign at once.
func (r *Raft) successorBackoff(successors []NodeID) time.Duration {
	pos := slices.Index(successors, r.id)
	if pos < 0 {
		pos = len(successors)
	}
	if pos == 0 {
		return 0
	}
	d := r.cfg.RetryBackoff
	for i := 1; i < pos && d < r.cfg.ElectionBackoffMax; i++ {
		d *= 2
	}
	return min(d, r.cfg.ElectionBackoffMax)
}

func (r *Raft) handleEndQuorumEpoch(from NodeID, req EndQuorumEpochRequest) {
	respond := func(code ErrorCode) {
		r.reply(from, EndQuorumEpochResponse{Error: code, Epoch: r.state.Epoch, LeaderID: r.leaderHint()})
	}
	if !r.acceptLeaderMessage(from, req.LeaderID, req.Epoch, respond) {
		return
	}
	switch {
	case req.Epoch > r.state.Epoch:
		r.becomeUnattached(req.Epoch)
	case r.state.LeaderID == req.LeaderID:
		r.leaderGone = true
		if r.role == RoleFollower {
			r.enterUnattached()
		}
	}
	if r.voter && r.role == RoleUnattached {
		r.electionDeadline = r.now + r.successorBackoff(req.PreferredSuccessors)
	}
	respond(ErrNone)
}

func (r *Raft) handleEndQuorumEpochResponse(from NodeID, resp EndQuorumEpochResponse) {
	if r.observeEpoch(resp.Epoch, resp.LeaderID) {
		return
	}
	if r.role == RoleResigned && resp.Epoch == r.state.Epoch {
		r.resigned.acked[from] = true
	}
}

// preferredSuccessors orders the other voters for EndQuorumEpoch: the
// furthest log end first (ties by id), since it is the likeliest to win.
func (r *Raft) preferredSuccessors() []NodeID {
	out := r.otherVoters()
	if r.leader == nil {
		return out
	}
	slices.SortStableFunc(out, func(a, b NodeID) int {
		ea, eb := r.leader.replicas[a].endOffset, r.leader.replicas[b].endOffset
		switch {
		case ea > eb:
			return -1
		case ea < eb:
			return 1
		}
		return 0
	})
	return out
}
