package protocol

import "github.com/twmb/franz-go/pkg/kmsg"

// clusterErrors answer the requests of the cluster's metadata: broker
// registration and heartbeats, topics, partitions, configs, the quorum and
// reassignments (the controller's requests, answered by the active
// controller or forwarded to it).
var clusterErrors = map[kmsg.Key]errorAnswer{
	kmsg.BrokerRegistration: answer(func(_ *kmsg.BrokerRegistrationRequest, resp *kmsg.BrokerRegistrationResponse, f failure) {
		resp.ErrorCode, resp.BrokerEpoch = f.code, -1
	}),
	kmsg.BrokerHeartbeat: answer(func(_ *kmsg.BrokerHeartbeatRequest, resp *kmsg.BrokerHeartbeatResponse, f failure) {
		resp.ErrorCode = f.code
	}),
	kmsg.CreateTopics: answer(func(r *kmsg.CreateTopicsRequest, resp *kmsg.CreateTopicsResponse, f failure) {
		resp.Topics = each(r.Topics, func(t kmsg.CreateTopicsRequestTopic) kmsg.CreateTopicsResponseTopic {
			return CreateTopicsError(t.Topic, f.err, f.msg)
		})
	}),
	kmsg.DeleteTopics: answer(func(r *kmsg.DeleteTopicsRequest, resp *kmsg.DeleteTopicsResponse, f failure) {
		resp.Topics = each(DeleteTopicsEntries(r), func(t kmsg.DeleteTopicsRequestTopic) kmsg.DeleteTopicsResponseTopic {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = t.Topic, t.TopicID, f.code, f.message()
			return rt
		})
	}),
	kmsg.CreatePartitions: answer(func(r *kmsg.CreatePartitionsRequest, resp *kmsg.CreatePartitionsResponse, f failure) {
		resp.Topics = each(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) kmsg.CreatePartitionsResponseTopic {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, f.code, f.message()
			return rt
		})
	}),
	kmsg.AlterPartition: answer(func(_ *kmsg.AlterPartitionRequest, resp *kmsg.AlterPartitionResponse, f failure) {
		resp.ErrorCode = f.code
	}),
	kmsg.AllocateProducerIDs: answer(func(_ *kmsg.AllocateProducerIDsRequest, resp *kmsg.AllocateProducerIDsResponse, f failure) {
		resp.ErrorCode = f.code
	}),
	kmsg.IncrementalAlterConfigs: answer(func(r *kmsg.IncrementalAlterConfigsRequest, resp *kmsg.IncrementalAlterConfigsResponse, f failure) {
		resp.Resources = each(r.Resources, func(res kmsg.IncrementalAlterConfigsRequestResource) kmsg.IncrementalAlterConfigsResponseResource {
			return AlterConfigsError(res.ResourceType, res.ResourceName, f.err, f.msg)
		})
	}),
	kmsg.AlterConfigs: answer(func(r *kmsg.AlterConfigsRequest, resp *kmsg.AlterConfigsResponse, f failure) {
		resp.Resources = each(r.Resources, func(res kmsg.AlterConfigsRequestResource) kmsg.AlterConfigsResponseResource {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, f.code, f.message()
			return rr
		})
	}),
	// DescribeQuorum's message is encoded from v2.
	kmsg.DescribeQuorum: answer(func(_ *kmsg.DescribeQuorumRequest, resp *kmsg.DescribeQuorumResponse, f failure) {
		resp.ErrorCode, resp.ErrorMessage = f.code, f.message()
	}),
	kmsg.AlterPartitionAssignments: answer(func(r *kmsg.AlterPartitionAssignmentsRequest, resp *kmsg.AlterPartitionAssignmentsResponse, f failure) {
		resp.ErrorCode, resp.ErrorMessage = f.code, f.message()
		resp.Topics = each(r.Topics, func(t kmsg.AlterPartitionAssignmentsRequestTopic) kmsg.AlterPartitionAssignmentsResponseTopic {
			return kmsg.AlterPartitionAssignmentsResponseTopic{Topic: t.Topic, Partitions: each(t.Partitions, f.reassignedPartition)}
		})
	}),
	kmsg.ListPartitionReassignments: answer(func(_ *kmsg.ListPartitionReassignmentsRequest, resp *kmsg.ListPartitionReassignmentsResponse, f failure) {
		resp.ErrorCode, resp.ErrorMessage = f.code, f.message()
	}),
	kmsg.ElectLeaders: answer(func(r *kmsg.ElectLeadersRequest, resp *kmsg.ElectLeadersResponse, f failure) {
		if r.Version >= 1 {
			resp.ErrorCode = f.code // the whole request
		}
		resp.Topics = each(r.Topics, func(t kmsg.ElectLeadersRequestTopic) kmsg.ElectLeadersResponseTopic {
			return kmsg.ElectLeadersResponseTopic{Topic: t.Topic, Partitions: each(t.Partitions, f.electedPartition)}
		})
	}),
}

func (f failure) reassignedPartition(p kmsg.AlterPartitionAssignmentsRequestTopicPartition) kmsg.AlterPartitionAssignmentsResponseTopicPartition {
	rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, f.code, f.message()
	return rp
}

func (f failure) electedPartition(p int32) kmsg.ElectLeadersResponseTopicPartition {
	rp := kmsg.NewElectLeadersResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, f.code, f.message()
	return rp
}
