package quorum

import (
	"slices"
	"time"
)

// ReplicaInfo is one replica's line in DescribeQuorum, as seen by the
// leader.
type ReplicaInfo struct {
	ID NodeID
	// LogEndOffset is the replica's last acknowledged fetch offset, -1 when
	// it has not fetched in this epoch.
	LogEndOffset int64
	// LastFetch and LastCaughtUp are monotonic times of the replica's last
	// fetch and of the last fetch that reached the leader's log end; -1 when
	// unknown. For the leader itself both are the current time.
	LastFetch    time.Duration
	LastCaughtUp time.Duration
}

// QuorumInfo answers DescribeQuorum (kafka-metadata-quorum describe
// --status/--replication): the leader, its epoch and high watermark, and
// every voter and known observer with its progress.
type QuorumInfo struct {
	LeaderID      NodeID
	Epoch         int32
	HighWatermark int64
	Voters        []ReplicaInfo
	Observers     []ReplicaInfo
}

// DescribeQuorum reports the quorum as the leader sees it; any other node
// returns a *NotLeaderError.
func (r *Raft) DescribeQuorum() (QuorumInfo, error) {
	if r.role != RoleLeader {
		return QuorumInfo{}, &NotLeaderError{LeaderID: r.leaderHint(), Epoch: r.state.Epoch}
	}
	info := QuorumInfo{LeaderID: r.id, Epoch: r.state.Epoch, HighWatermark: r.highWatermark}
	line := func(id NodeID, p *replicaProgress) ReplicaInfo {
		ri := ReplicaInfo{ID: id, LogEndOffset: p.endOffset, LastFetch: -1, LastCaughtUp: -1}
		if p.endOffset >= 0 {
			ri.LastFetch = p.lastFetch
		}
		if p.caughtUp {
			ri.LastCaughtUp = p.lastCaughtUp
		}
		return ri
	}
	for _, v := range r.cfg.Voters {
		if v == r.id {
			info.Voters = append(info.Voters, ReplicaInfo{ID: v, LogEndOffset: r.log.EndOffset().Offset, LastFetch: r.now, LastCaughtUp: r.now})
			continue
		}
		info.Voters = append(info.Voters, line(v, r.leader.replicas[v]))
	}
	var observers []NodeID
	for id, p := range r.leader.replicas { //determinism:unordered sorted below
		if !p.voter {
			observers = append(observers, id)
		}
	}
	slices.Sort(observers)
	for _, id := range observers {
		info.Observers = append(info.Observers, line(id, r.leader.replicas[id]))
	}
	return info, nil
}
