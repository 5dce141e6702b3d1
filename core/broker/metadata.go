package broker

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// handleMetadata answers Metadata at any version in the protocol table. The
// broker list is this node (the only broker serving clients yet); topics and
// partitions come from the metadata quorum member's image when one is
// configured, and the controller id is the active controller.
//
// Topic auto-creation (AllowAutoTopicCreation, auto.create.topics.enable)
// is not supported yet: there is no topic metadata to create topics in, so
// a requested topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION
// whatever the request asks for, which is what Kafka answers with
// auto-creation disabled.
func (b *Broker) handleMetadata(req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)

	self := kmsg.NewMetadataResponseBroker()
	self.NodeID = b.cfg.NodeID
	self.Host = b.cfg.AdvertisedHost
	self.Port = b.cfg.AdvertisedPort
	self.Rack = nil // broker.rack is not configurable yet
	resp.Brokers = []kmsg.MetadataResponseBroker{self}

	clusterID := b.cfg.ClusterID
	resp.ClusterID = &clusterID      // encoded from v2
	resp.ControllerID = b.cfg.NodeID // encoded from v1
	var img *meta.Image
	if b.cfg.Metadata != nil {
		img = b.cfg.Metadata.Image()
		resp.ControllerID = b.cfg.Metadata.ActiveController()
	}
	// AuthorizedOperations (v8..v10) keeps kmsg's default, INT32_MIN,
	// Kafka's "not provided": there is no authorizer yet.
	resp.ErrorCode = 0 // v13 (KIP-1102): no rebootstrap needed

	// A nil topic list (v1+) or an empty one (v0) asks for all topics.
	resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(req.Topics))
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		if img != nil {
			for ti := range img.Topics() {
				resp.Topics = append(resp.Topics, topicMetadata(ti))
			}
		}
		return resp
	}
	// Kafka answers each distinct topic once; the sets are only used for
	// membership, the response keeps request order.
	seenNames := make(map[string]bool, len(req.Topics))
	seenIDs := make(map[[16]byte]bool)
	for _, rt := range req.Topics {
		t := kmsg.NewMetadataResponseTopic()
		switch {
		case rt.Topic != nil:
			// By name (always before v10; v10+ may also carry an id,
			// which Kafka ignores when a name is given).
			if seenNames[*rt.Topic] {
				continue
			}
			seenNames[*rt.Topic] = true
			if img != nil {
				if ti, ok := img.TopicByName(*rt.Topic); ok {
					resp.Topics = append(resp.Topics, topicMetadata(ti))
					continue
				}
			}
			name := *rt.Topic
			t.Topic = &name
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case req.Version >= 12 && rt.TopicID != [16]byte{}:
			// By id (v12+): Kafka echoes the id with a null name.
			if seenIDs[rt.TopicID] {
				continue
			}
			seenIDs[rt.TopicID] = true
			if img != nil {
				if ti, ok := img.TopicByID(meta.UUID(rt.TopicID)); ok {
					resp.Topics = append(resp.Topics, topicMetadata(ti))
					continue
				}
			}
			t.TopicID = rt.TopicID
			t.ErrorCode = kerr.UnknownTopicID.Code
		default:
			// A null name without a usable id: v10 and v11 do not
			// allow lookups by id, and a zero id names nothing.
			t.TopicID = rt.TopicID
			t.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// topicMetadata describes one topic of the image. A partition without a
// leader gets LEADER_NOT_AVAILABLE with leader -1, as in Kafka.
func topicMetadata(ti *meta.TopicImage) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	name := ti.Name()
	t.Topic = &name
	t.TopicID = ti.ID() // encoded from v10
	t.IsInternal = false
	for p := range ti.Partitions() {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.ID
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch // encoded from v7
		mp.Replicas = slices.Clone(p.Replicas)
		mp.ISR = slices.Clone(p.ISR)
		mp.OfflineReplicas = []int32{}
		if !p.HasLeader() {
			mp.Leader = -1
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		t.Partitions = append(t.Partitions, mp)
	}
	if t.Partitions == nil {
		t.Partitions = []kmsg.MetadataResponseTopicPartition{}
	}
	return t
}
