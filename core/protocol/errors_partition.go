package protocol

import "github.com/twmb/franz-go/pkg/kmsg"

// partitionErrors answer the requests a partition's leader serves:
// produce, offsets, record deletion and the followers' epoch queries. Each
// answers every partition it names.
var partitionErrors = map[kmsg.Key]errorAnswer{
	kmsg.Produce: answer(func(r *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, f failure) {
		resp.Topics = each(r.Topics, func(t kmsg.ProduceRequestTopic) kmsg.ProduceResponseTopic {
			return kmsg.ProduceResponseTopic{Topic: t.Topic, TopicID: t.TopicID, Partitions: each(t.Partitions, f.producePartition)}
		})
	}),
	kmsg.ListOffsets: answer(func(r *kmsg.ListOffsetsRequest, resp *kmsg.ListOffsetsResponse, f failure) {
		resp.Topics = each(r.Topics, func(t kmsg.ListOffsetsRequestTopic) kmsg.ListOffsetsResponseTopic {
			return kmsg.ListOffsetsResponseTopic{Topic: t.Topic, Partitions: each(t.Partitions, f.listOffsetsPartition)}
		})
	}),
	kmsg.DeleteRecords: answer(func(r *kmsg.DeleteRecordsRequest, resp *kmsg.DeleteRecordsResponse, f failure) {
		resp.Topics = each(r.Topics, func(t kmsg.DeleteRecordsRequestTopic) kmsg.DeleteRecordsResponseTopic {
			return kmsg.DeleteRecordsResponseTopic{Topic: t.Topic, Partitions: each(t.Partitions, f.deleteRecordsPartition)}
		})
	}),
	kmsg.OffsetForLeaderEpoch: answer(func(r *kmsg.OffsetForLeaderEpochRequest, resp *kmsg.OffsetForLeaderEpochResponse, f failure) {
		resp.Topics = each(r.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) kmsg.OffsetForLeaderEpochResponseTopic {
			return kmsg.OffsetForLeaderEpochResponseTopic{Topic: t.Topic, Partitions: each(t.Partitions, f.epochEndPartition)}
		})
	}),
}

func (f failure) producePartition(p kmsg.ProduceRequestTopicPartition) kmsg.ProduceResponseTopicPartition {
	rp := kmsg.NewProduceResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, f.code, f.message()
	rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
	return rp
}

func (f failure) listOffsetsPartition(p kmsg.ListOffsetsRequestTopicPartition) kmsg.ListOffsetsResponseTopicPartition {
	rp := kmsg.NewListOffsetsResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.Timestamp, rp.Offset = p.Partition, f.code, -1, -1
	return rp
}

func (f failure) deleteRecordsPartition(p kmsg.DeleteRecordsRequestTopicPartition) kmsg.DeleteRecordsResponseTopicPartition {
	rp := kmsg.NewDeleteRecordsResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, f.code, -1
	return rp
}

func (f failure) epochEndPartition(p kmsg.OffsetForLeaderEpochRequestTopicPartition) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, f.code, -1, -1
	return rp
}
