package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/replica"
)

// handleListOffsets answers each partition from its Partition
// (replica.Partition.ListOffset, or ListOffsetCommitted for isolation
// level read_committed, v2+): earliest, latest (the high watermark, or
// the last stable offset for read_committed),
// the first offset at or after a timestamp, the max-timestamp record
// (KIP-734), earliest-local (KIP-405) and the tiered special values,
// which without remote storage answer -1.
func handleListOffsets(b *Broker, r *request) {
	req := r.body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	canDescribe := b.topicAuth(r, kmsg.ACLOperationDescribe)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			part, err := b.lookup(t.Topic, canDescribe(t.Topic), p.Partition)
			if err == nil {
				var res replica.OffsetResult
				res, err = listOffset(part, p.Timestamp, p.CurrentLeaderEpoch, req.IsolationLevel == 1)
				rp.Offset, rp.Timestamp, rp.LeaderEpoch = res.Offset, res.Timestamp, res.LeaderEpoch
			}
			rp.ErrorCode = b.code(err)
			if req.Version == 0 && err == nil && rp.Offset >= 0 {
				rp.OldStyleOffsets = []int64{rp.Offset}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	r.respond(resp)
}

// earliestPendingUploadTimestamp is ListOffsets v11's -6 (KIP-1023): the
// earliest offset not yet uploaded to remote storage; nothing is tiered.
const earliestPendingUploadTimestamp = -6

func listOffset(p *replica.Partition, timestamp int64, currentLeaderEpoch int32, readCommitted bool) (replica.OffsetResult, error) {
	if timestamp == earliestPendingUploadTimestamp {
		timestamp = replica.LatestTieredTimestamp
	}
	if readCommitted {
		return p.ListOffsetCommitted(timestamp, currentLeaderEpoch)
	}
	return p.ListOffset(timestamp, currentLeaderEpoch)
}
