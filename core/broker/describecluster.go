package broker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// endpointTypeBroker is DescribeCluster's endpoint type for brokers
// (KIP-919; 2 asks for the controllers, which only a controller answers).
const endpointTypeBroker = 1

// handleDescribeCluster answers DescribeCluster from the image, as
// Metadata does: the cluster id, the controller id (a live broker, see
// controllerID) and the brokers, the fenced ones too when version 2 asks
// for them.
func handleDescribeCluster(b *Broker, r *request) {
	req := r.body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 {
		resp.EndpointType = req.EndpointType
		if req.EndpointType != endpointTypeBroker {
			err := fmt.Errorf("%w: endpoint type %d; a broker describes brokers (1) only", errUnsupportedEndpointType, req.EndpointType)
			resp.ErrorCode, resp.ErrorMessage = b.code(err), errorMessage(err)
			r.respond(resp)
			return
		}
	}
	img := b.image()
	resp.ClusterID = b.cfg.ClusterID
	resp.ControllerID = b.controllerID(img, r.cn.l.Name)
	if req.IncludeClusterAuthorizedOperations {
		// Kafka reports them only to a principal that may DESCRIBE
		// the cluster (0 to others); unasked, kmsg's INT32_MIN.
		resp.ClusterAuthorizedOperations = 0
		if b.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, clusterName) {
			resp.ClusterAuthorizedOperations = b.authorizedOps(r, kmsg.ACLResourceTypeCluster, clusterName)
		}
	}
	for _, ep := range b.brokerEndpoints(img, r.cn.l.Name, req.Version >= 2 && req.IncludeFencedBrokers) {
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port, db.Rack, db.IsFenced = ep.id, ep.host, ep.port, ep.rack, ep.fenced
		resp.Brokers = append(resp.Brokers, db)
	}
	r.respond(resp)
}

// maxDescribeTopicPartitionsLimit bounds the partitions one
// DescribeTopicPartitions response describes, in partitions: Kafka's
// max.request.partition.size.limit default. A client asking for more gets
// this many and a cursor.
const maxDescribeTopicPartitionsLimit = 2000

// handleDescribeTopicPartitions answers DescribeTopicPartitions (KIP-966):
// the named topics, or every topic when none is named, in name order from
// the cursor, with at most ResponsePartitionLimit partitions (bounded by
// maxDescribeTopicPartitionsLimit); when the limit stops it, NextCursor
// names the first partition not described. Each partition carries its
// leader, epochs, replicas, ISR, eligible leader replicas (ELR) and last
// known ELR from the image.
func handleDescribeTopicPartitions(b *Broker, r *request) {
	req := r.body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	img := b.image()
	if img == nil {
		img = meta.Empty()
	}
	var names []string
	canDescribe := b.topicAuth(r, kmsg.ACLOperationDescribe)
	if len(req.Topics) == 0 {
		for ti := range img.Topics() {
			if canDescribe(ti.Name()) == nil { // the others are left out
				names = append(names, ti.Name())
			}
		}
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	start := int32(0)
	if c := req.Cursor; c != nil {
		if c.Partition < 0 {
			// Kafka refuses the whole request; its response has no
			// top-level error, so every requested topic carries it.
			err := fmt.Errorf("%w: cursor partition %d is negative", errInvalidRequest, c.Partition)
			for _, t := range req.Topics {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				name := t.Topic
				rt.Topic, rt.ErrorCode = &name, b.code(err)
				resp.Topics = append(resp.Topics, rt)
			}
			r.respond(resp)
			return
		}
		i, _ := slices.BinarySearch(names, c.Topic)
		names = names[i:]
		if len(names) > 0 && names[0] == c.Topic {
			start = c.Partition
		}
	}
	remaining := min(max(req.ResponsePartitionLimit, 1), maxDescribeTopicPartitionsLimit)
	for i, name := range names {
		if remaining == 0 {
			// Every partition of the previous topics was described:
			// the next response starts with this topic.
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		if i > 0 {
			start = 0
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		topic := name
		rt.Topic = &topic
		ti, ok := img.TopicByName(name)
		if err := canDescribe(name); err != nil {
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if !ok {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = ti.ID()
		rt.IsInternal = isInternalTopic(name)
		rt.AuthorizedOperations = b.authorizedOps(r, kmsg.ACLResourceTypeTopic, name)
		n := int32(ti.NumPartitions())
		end := n
		if int64(start)+int64(remaining) < int64(n) {
			end = start + remaining
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: end}
		}
		rt.Partitions = make([]kmsg.DescribeTopicPartitionsResponseTopicPartition, 0, max(end-start, 0))
		for id := start; id < end; id++ {
			p, ok := ti.Partition(id)
			if !ok {
				continue
			}
			rt.Partitions = append(rt.Partitions, describePartition(img, p, r.cn.l.Name))
		}
		remaining -= max(end-start, 0)
		resp.Topics = append(resp.Topics, rt)
		if resp.NextCursor != nil {
			break
		}
	}
	r.respond(resp)
}

// describePartition is one partition of DescribeTopicPartitions.
func describePartition(img *meta.Image, p meta.Partition, listener string) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	dp.Partition, dp.LeaderID, dp.LeaderEpoch = p.ID, p.Leader, p.LeaderEpoch
	dp.Replicas = slices.Clone(p.Replicas)
	dp.ISR = slices.Clone(p.ISR)
	dp.EligibleLeaderReplicas = nonNil(slices.Clone(p.ELR))
	dp.LastKnownELR = nonNil(slices.Clone(p.LastKnownELR))
	dp.OfflineReplicas = offlineReplicas(img, p, listener)
	if !p.HasLeader() {
		dp.LeaderID = -1
		dp.ErrorCode = kerr.LeaderNotAvailable.Code
	}
	return dp
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// isInternalTopic reports whether a topic is internal: Kafka's internal
// topics (__consumer_offsets, __transaction_state) and every other name
// starting with "__", which Strata reserves for its own topics.
func isInternalTopic(name string) bool { return strings.HasPrefix(name, "__") }

// offlineReplicas lists the replicas of p that cannot serve, as Kafka's
// KRaft metadata cache does: on a broker that is not registered, is
// fenced, or has no endpoint on the request's listener.
func offlineReplicas(img *meta.Image, p meta.Partition, listener string) []int32 {
	out := []int32{}
	for _, id := range p.Replicas {
		reg, ok := img.Broker(id)
		if !ok || reg.Fenced {
			out = append(out, id)
			continue
		}
		if _, ok := reg.Endpoint(listener); !ok {
			out = append(out, id)
		}
	}
	return out
}
