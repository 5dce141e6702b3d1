package controller

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// damagedReq is the AlterPartition of a replica whose log of a partition
// is damaged: LeaderRecoveryState RECOVERING, an empty ISR.
func damagedReq(h *harness, broker int32, topic string) *kmsg.AlterPartitionRequest {
	p := h.partition(topic, 0)
	req := alterReq(2, broker, h.epochs[broker], topic, h.topicID(topic), 0, p.LeaderEpoch, p.PartitionEpoch)
	req.Topics[0].Partitions[0].NewISR = []int32{}
	req.Topics[0].Partitions[0].LeaderRecoveryState = leaderRecoveryRecovering
	return req
}

// A damaged last in-sync replica leads on with what it holds only when
// someone accepted the loss, and that is counted as an unclean election:
// at once on a topic that allows unclean election, or by an operator's
// ElectLeaders of type unclean; never while another member of the
// LastKnownELR may hold the committed records (the recovery compares
// logs), and never silently.
func TestDamagedLastReplicaLeadsOnOnlyUncleanly(t *testing.T) {
	var told []string
	h := newCluster(t, Config{OnUncleanElection: func(topic string, _, leader int32) { told = append(told, topic) }}, 2)
	for _, spec := range []topicSpec{
		{name: "waits", assignment: [][]int32{{1, 2}}, partitions: -1, rf: -1},
		{name: "unclean", assignment: [][]int32{{1, 2}}, partitions: -1, rf: -1,
			configs: map[string]string{"unclean.leader.election.enable": "true"}},
	} {
		h.mustCreate(spec)
		p := h.partition(spec.name, 0)
		h.do(alterReq(2, 1, h.epochs[1], spec.name, h.topicID(spec.name), 0, p.LeaderEpoch, p.PartitionEpoch, 1))
		h.commitAll()
	}

	for _, topic := range []string{"waits", "unclean"} {
		resp := h.do(damagedReq(h, 1, topic)).(*kmsg.AlterPartitionResponse)
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
		h.commitAll()
	}
	waits, unclean := h.partition("waits", 0), h.partition("unclean", 0)
	require.Equal(t, []int32{1}, waits.LastKnownELR, "waits for an operator")
	require.True(t, recovering(&waits))
	require.Equal(t, int32(1), waits.LeaderEpoch, "a new leader epoch: its log will end before its followers'")
	require.Empty(t, unclean.LastKnownELR)
	require.Equal(t, int32(1), unclean.Leader)
	require.Equal(t, []string{"unclean"}, told, "the topic's unclean election, counted")

	require.Equal(t, []int16{0}, electCodes(h.do(electReq(electUnclean, "waits", 0))))
	h.commitAll()
	waits = h.partition("waits", 0)
	require.Empty(t, waits.LastKnownELR, "the operator accepted the loss")
	require.Equal(t, []string{"unclean", "waits"}, told)
}
