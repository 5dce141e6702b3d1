package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOffsetForLeaderEpoch answers each partition from its Partition
// (replica.Partition.EndOffsetForEpoch): the largest leader epoch at or
// below the one asked for and the offset where it ended (the log end for
// the latest epoch), or -1 and -1 for an epoch newer than any. The
// current leader epoch (KIP-320; -1 skips it) fences a client that is
// behind (FENCED_LEADER_EPOCH) or ahead (UNKNOWN_LEADER_EPOCH) of this
// broker. Consumers send replica id -1 (v3+); follower requests (a
// broker's id) get the same answer, from the leader: there are no
// followers before replication lands.
func handleOffsetForLeaderEpoch(b *Broker, r *request) {
	req := r.body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, 0, len(req.Topics))
	canDescribe := b.topicAuth(r, kmsg.ACLOperationDescribe)
	if b.authorized(r, kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, clusterName) {
		canDescribe = func(string) error { return nil } // a follower's
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, 0, len(t.Partitions))
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			part, err := b.lookup(t.Topic, canDescribe(t.Topic), p.Partition)
			if err == nil {
				rp.LeaderEpoch, rp.EndOffset, err = part.EndOffsetForEpoch(p.LeaderEpoch, p.CurrentLeaderEpoch)
			}
			if err != nil {
				rp.LeaderEpoch, rp.EndOffset = -1, -1
			}
			rp.ErrorCode = b.code(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	r.respond(resp)
}
