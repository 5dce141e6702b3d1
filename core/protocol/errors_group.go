package protocol

import "github.com/twmb/franz-go/pkg/kmsg"

// groupErrors answer the consumer group requests (the classic protocol,
// KIP-848's heartbeat and the offsets), served by a group's coordinator.
var groupErrors = map[kmsg.Key]errorAnswer{
	kmsg.JoinGroup: answer(func(_ *kmsg.JoinGroupRequest, resp *kmsg.JoinGroupResponse, f failure) {
		resp.ErrorCode, resp.Generation = f.code, -1
	}),
	kmsg.SyncGroup: answer(func(_ *kmsg.SyncGroupRequest, resp *kmsg.SyncGroupResponse, f failure) { resp.ErrorCode = f.code }),
	kmsg.ConsumerGroupHeartbeat: answer(func(_ *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse, f failure) {
		resp.ErrorCode, resp.ErrorMessage = f.code, f.message()
	}),
	kmsg.Heartbeat: answer(func(_ *kmsg.HeartbeatRequest, resp *kmsg.HeartbeatResponse, f failure) { resp.ErrorCode = f.code }),
	kmsg.OffsetCommit: answer(func(r *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, f failure) {
		resp.Topics = each(r.Topics, func(t kmsg.OffsetCommitRequestTopic) kmsg.OffsetCommitResponseTopic {
			return kmsg.OffsetCommitResponseTopic{Topic: t.Topic, Partitions: each(t.Partitions, f.committedPartition)}
		})
	}),
	kmsg.LeaveGroup:   answer(func(_ *kmsg.LeaveGroupRequest, resp *kmsg.LeaveGroupResponse, f failure) { resp.ErrorCode = f.code }),
	kmsg.OffsetDelete: answer(func(_ *kmsg.OffsetDeleteRequest, resp *kmsg.OffsetDeleteResponse, f failure) { resp.ErrorCode = f.code }),
}

func (f failure) committedPartition(p kmsg.OffsetCommitRequestTopicPartition) kmsg.OffsetCommitResponseTopicPartition {
	rp := kmsg.NewOffsetCommitResponseTopicPartition()
	rp.Partition, rp.ErrorCode = p.Partition, f.code
	return rp
}
