package controller

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func reassignReq(topic string, partition int32, replicas []int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = partition, replicas
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func reassignCode(resp kmsg.Response) int16 {
	return resp.(*kmsg.AlterPartitionAssignmentsResponse).Topics[0].Partitions[0].ErrorCode
}

// A reassignment adds the target's new replicas (AddingReplicas), keeps
// the removed ones (RemovingReplicas) until the ISR holds every target
// replica, then makes the target the assignment; a second one while it
// runs is refused, a null target cancels it, bad targets are refused.
func TestPartitionReassignment(t *testing.T) {
	h := newCluster(t, Config{}, 4)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2, 3}}, partitions: -1, rf: -1})
	id := h.topicID("t")

	require.Equal(t, kerr.InvalidReplicaAssignment.Code, reassignCode(h.do(reassignReq("t", 0, []int32{1, 1}))))
	require.Equal(t, kerr.InvalidReplicaAssignment.Code, reassignCode(h.do(reassignReq("t", 0, []int32{1, 9}))))
	require.Equal(t, kerr.InvalidReplicaAssignment.Code, reassignCode(h.do(reassignReq("t", 0, []int32{}))))
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, reassignCode(h.do(reassignReq("t", 5, []int32{1}))))
	require.Equal(t, kerr.NoReassignmentInProgress.Code, reassignCode(h.do(reassignReq("t", 0, nil))))

	require.Zero(t, reassignCode(h.do(reassignReq("t", 0, []int32{1, 2, 4}))))
	h.commitAll()
	p := h.partition("t", 0)
	require.Equal(t, []int32{1, 2, 4, 3}, p.Replicas)
	require.Equal(t, []int32{4}, p.AddingReplicas)
	require.Equal(t, []int32{3}, p.RemovingReplicas)
	require.Equal(t, kerr.ReassignmentInProgress.Code, reassignCode(h.do(reassignReq("t", 0, []int32{1, 2}))))
	list := h.do(kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
	require.Len(t, list.Topics, 1)
	require.Equal(t, []int32{4}, list.Topics[0].Partitions[0].AddingReplicas)

	// The leader adds 4 to the ISR: the reassignment completes.
	resp := h.do(alterReq(2, 1, h.epochs[1], "t", id, 0, p.LeaderEpoch, p.PartitionEpoch, 1, 2, 3, 4)).(*kmsg.AlterPartitionResponse)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	h.commitAll()
	p = h.partition("t", 0)
	require.Equal(t, []int32{1, 2, 4}, p.Replicas)
	require.Equal(t, []int32{1, 2, 4}, p.ISR)
	require.Empty(t, p.AddingReplicas)
	require.Empty(t, p.RemovingReplicas)
	require.Equal(t, int32(1), p.Leader)

	// Cancel: the adding replica leaves again.
	require.Zero(t, reassignCode(h.do(reassignReq("t", 0, []int32{3, 2, 4}))))
	h.commitAll()
	require.Zero(t, reassignCode(h.do(reassignReq("t", 0, nil))))
	h.commitAll()
	p = h.partition("t", 0)
	require.Equal(t, []int32{2, 4, 1}, p.Replicas)
	require.Empty(t, p.AddingReplicas)

	// Only removals complete at once; a removed leader gives way.
	require.Zero(t, reassignCode(h.do(reassignReq("t", 0, []int32{2, 4}))))
	h.commitAll()
	p = h.partition("t", 0)
	require.Equal(t, []int32{2, 4}, p.Replicas)
	require.Equal(t, int32(2), p.Leader)

	// A removal that keeps only a replica out of the ISR waits for it: the
	// ISR is never made up (replicated seed 95).
	p = h.partition("t", 0)
	resp = h.do(alterReq(2, 2, h.epochs[2], "t", id, 0, p.LeaderEpoch, p.PartitionEpoch, 2)).(*kmsg.AlterPartitionResponse)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode) // 4 out of sync
	h.commitAll()
	require.Zero(t, reassignCode(h.do(reassignReq("t", 0, []int32{4}))))
	h.commitAll()
	p = h.partition("t", 0)
	require.Equal(t, []int32{4, 2}, p.Replicas, "in progress: 4 is not in sync")
	require.Equal(t, []int32{2}, p.RemovingReplicas)
	require.Equal(t, int32(2), p.Leader)
	resp = h.do(alterReq(2, 2, h.epochs[2], "t", id, 0, p.LeaderEpoch, p.PartitionEpoch, 2, 4)).(*kmsg.AlterPartitionResponse)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	h.commitAll()
	p = h.partition("t", 0)
	require.Equal(t, []int32{4}, p.Replicas, "complete once 4 is in sync")
	require.Equal(t, []int32{4}, p.ISR)
	require.Equal(t, int32(4), p.Leader)
}
