package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReplicaFetchFromAnUnknownBroker: on the wire, a follower fetch whose
// replica id is not one of the partition's replicas gets Kafka's answers
// from the leader: UNKNOWN_LEADER_EPOCH with the leader's epoch (v9+),
// NOT_LEADER_OR_FOLLOWER without one, and then no current leader (which
// would be the leader itself); the partition still serves a consumer and
// a producer afterwards (issue 22, finding 8).
func TestReplicaFetchFromAnUnknownBroker(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 1, nil)
	h.WaitServing("t", 1)
	require.Zero(t, h.Produce("t", 0, "a", "b").ErrorCode)
	epoch := h.Partition("t", 0).LeaderEpoch()

	fetch := func(version int16, replica, currentEpoch int32) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = version, 0, 1<<20, -1
		req.ReplicaID = replica
		req.ReplicaState.ID, req.ReplicaState.Epoch = replica, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		ti, ok := h.Server.Image().TopicByName("t")
		require.True(t, ok)
		rt.TopicID = ti.ID()
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = 1000, 1<<20, currentEpoch, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return h.Do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	}
	for _, id := range []int32{2, 42} {
		for _, v := range []int16{11, 12, 15, 16} {
			p := fetch(v, id, epoch)
			require.Equal(t, kerr.UnknownLeaderEpoch.Code, p.ErrorCode, "replica %d v%d with the leader's epoch: %v", id, v, kerr.ErrorForCode(p.ErrorCode))
			p = fetch(v, id, -1)
			require.Equal(t, kerr.NotLeaderForPartition.Code, p.ErrorCode, "replica %d v%d without an epoch", id, v)
			require.Equal(t, int32(-1), p.CurrentLeader.LeaderID, "v%d: no current leader named (it would be this broker)", v)
		}
	}
	require.True(t, h.Partition("t", 0).IsLeader())
	require.Equal(t, epoch, h.Partition("t", 0).LeaderEpoch())
	require.Zero(t, h.Produce("t", 0, "c").ErrorCode)
	p, values := h.Fetch("t", 0, 0)
	require.Zero(t, p.ErrorCode)
	require.Equal(t, []string{"a", "b", "c"}, values)
}
