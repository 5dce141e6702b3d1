package quorum

// This file is the transport's hint that a voter cannot be reached, which
// lets the survivors of a crashed leader elect a successor in tens of
// milliseconds instead of waiting out the fetch timeout. It is Strata's
// extension: KRaft learns of a dead leader only from the fetch timeout.

import "time"

// unreachableJitterDiv bounds the wait of a follower told that its leader
// is unreachable: uniform in [0, ElectionTimeout/unreachableJitterDiv), so
// the survivors of one crash, told at the same moment, rarely start their
// pre-votes within a round trip of each other (250 ms with the defaults).
const unreachableJitterDiv = 4

// PeerUnreachable tells the Raft that the driver could not reach voter id:
// its transport failed to connect to it (connection refused, as when the
// process died and its host refuses the port; or a connect timeout). It is
// a hint about timing only; nothing it changes bears on safety, since it
// only lets pre-vote rounds start or give up sooner:
//
//   - A follower (or an observer) whose leader is id marks the leader
//     unreachable and pulls its fetch deadline in to a random time within
//     ElectionTimeout/4, at which it starts a pre-vote as on a fetch
//     timeout (an observer looks for the leader). While marked, it grants
//     pre-votes although it heard from its leader within the fetch timeout,
//     so the other survivors, told the same, can elect one of them. The
//     mark is cleared when the leader is heard from again (a fetch
//     answered, BeginQuorumEpoch) and when the epoch or the leader changes;
//     a report while marked changes nothing, so the deadline only ever
//     moves earlier and a follower that cannot reach a leader the others
//     still follow runs one early pre-vote, which they refuse, and then
//     waits out the fetch timeout as before.
//   - A prospective or a candidate counts id, until it answers, as
//     rejecting the round when deciding whether a majority can still grant:
//     two survivors that split the vote after their leader crashed back off
//     the short exponential election backoff instead of waiting out an
//     election timeout for the dead leader's answer.
//   - A leader, and any other node, ignores it.
func (r *Raft) PeerUnreachable(id NodeID) {
	if id == r.id || !r.isVoter(id) || r.role == RoleLeader {
		return
	}
	if id == r.state.LeaderID && !r.leaderUnreachable {
		r.leaderUnreachable = true
		if r.role == RoleFollower {
			r.fetchDeadline = min(r.fetchDeadline, r.now+r.unreachableJitter())
		}
	}
	if e := r.election; e != nil && !e.lost && !e.granted[id] && !e.rejected[id] && !e.unreachable[id] {
		e.unreachable[id] = true
		r.loseIfHopeless()
	}
}

// unreachableJitter draws the wait before a follower whose leader is
// unreachable campaigns.
func (r *Raft) unreachableJitter() time.Duration {
	bound := r.cfg.ElectionTimeout / unreachableJitterDiv
	if bound <= 0 {
		return 0
	}
	return time.Duration(r.rng.Int64N(int64(bound)))
}
