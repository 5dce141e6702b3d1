package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

func electReq(typ int8, topic string, partitions ...int32) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType = 2, typ
	if topic != "" {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = topic, partitions
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func electCodes(resp kmsg.Response) []int16 {
	var out []int16
	for _, t := range resp.(*kmsg.ElectLeadersResponse).Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// ElectLeaders, preferred: the first replica of the assignment leads again
// once it is back in the ISR; not before (PREFERRED_LEADER_NOT_AVAILABLE),
// and not when it leads already (ELECTION_NOT_NEEDED).
func TestElectPreferredLeader(t *testing.T) {
	h := newCluster(t, Config{}, 3)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2, 3}}, partitions: -1, rf: -1})
	require.Equal(t, []int16{kerr.ElectionNotNeeded.Code}, electCodes(h.do(electReq(electPreferred, "t", 0))))

	// Broker 1 is fenced: 2 leads, 1 leaves the ISR.
	h.do(heartbeatReq(1, h.epochs[1], h.committed, true, false))
	h.commitAll()
	p := h.partition("t", 0)
	require.Equal(t, int32(2), p.Leader)
	require.Equal(t, []int16{kerr.PreferredLeaderNotAvailable.Code}, electCodes(h.do(electReq(electPreferred, "t", 0))))

	// 1 is back and in the ISR again: the preferred election moves the
	// leadership to it, with a new leader epoch.
	h.do(heartbeatReq(1, h.epochs[1], h.committed, false, false))
	h.commitAll()
	h.do(alterReq(2, 2, h.epochs[2], "t", h.topicID("t"), 0, p.LeaderEpoch, p.PartitionEpoch, 1, 2, 3))
	h.commitAll()
	epoch := h.partition("t", 0).LeaderEpoch
	require.Equal(t, []int16{0}, electCodes(h.do(electReq(electPreferred, "t", 0))))
	h.commitAll()
	p = h.partition("t", 0)
	require.Equal(t, int32(1), p.Leader)
	require.Greater(t, p.LeaderEpoch, epoch)

	require.Equal(t, []int16{kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code},
		electCodes(h.do(electReq(electPreferred, "nope", 0, 1))))
	require.Equal(t, []int16{kerr.UnknownTopicOrPartition.Code}, electCodes(h.do(electReq(electPreferred, "t", 7))))
	all := h.do(electReq(electPreferred, "")).(*kmsg.ElectLeadersResponse)
	require.Len(t, all.Topics, 1, "a null topic list means every partition")
}

// ElectLeaders, unclean: a leaderless partition whose only ISR member is
// fenced gets an active replica outside the ISR as leader, and the owner is
// told; a partition with a leader needs no election.
func TestElectUncleanLeader(t *testing.T) {
	var told []int32
	h := newCluster(t, Config{OnUncleanElection: func(_ string, _, leader int32) { told = append(told, leader) }}, 2)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2}}, partitions: -1, rf: -1})
	require.Equal(t, []int16{kerr.ElectionNotNeeded.Code}, electCodes(h.do(electReq(electUnclean, "t", 0))))
	h.do(alterReq(3, 1, h.epochs[1], "t", h.topicID("t"), 0, 0, 0, 1)) // 2 leaves the ISR
	h.do(heartbeatReq(1, h.epochs[1], h.committed, true, false))       // then 1 is fenced
	h.commitAll()
	require.Equal(t, meta.NoLeader, h.partition("t", 0).Leader)
	require.Equal(t, []int16{0}, electCodes(h.do(electReq(electUnclean, "t", 0))))
	h.commitAll()
	p := h.partition("t", 0)
	require.Equal(t, int32(2), p.Leader)
	require.Equal(t, []int32{2}, p.ISR)
	require.Equal(t, []int32{2}, told)
}

// auto.leader.rebalance.enable: every leader.imbalance.check.interval the
// active controller hands each partition back to its preferred replica
// once that one is in the ISR and active; disabled, it does not.
func TestAutoLeaderRebalance(t *testing.T) {
	for _, off := range []bool{false, true} {
		h := newCluster(t, Config{LeaderImbalanceCheckInterval: 10 * time.Second, NoAutoLeaderRebalance: off,
			SessionTimeout: time.Hour}, 3)
		h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2, 3}}, partitions: -1, rf: -1})
		h.do(heartbeatReq(1, h.epochs[1], h.committed, true, false)) // fenced: 2 leads
		h.commitAll()
		h.do(heartbeatReq(1, h.epochs[1], h.committed, false, false)) // back
		h.commitAll()
		p := h.partition("t", 0)
		require.Equal(t, int32(2), p.Leader)
		h.do(alterReq(2, 2, h.epochs[2], "t", h.topicID("t"), 0, p.LeaderEpoch, p.PartitionEpoch, 1, 2, 3))
		h.commitAll()
		h.tick(11 * time.Second)
		h.commitAll()
		want := int32(1)
		if off {
			want = 2
		}
		require.Equal(t, want, h.partition("t", 0).Leader, "auto rebalance off=%v", off)
	}
}
