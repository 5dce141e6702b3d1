package broker

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/plant"
	"github.com/strata-log/strata/core/wire"
)

// handleMetadata answers Metadata at any version in the protocol table.
// Brokers, topics and partitions come from the metadata quorum member's
// image when one is configured (see brokerList and controllerID); without
// one the broker list is this node alone, which is also the controller id.
//
// A named topic that does not exist is auto-created when the request
// allows it (AllowAutoTopicCreation from v4; implied before) and
// auto.create.topics.enable is on (see autoCreate): it is answered
// LEADER_NOT_AVAILABLE, Kafka's answer while a topic is being created, so
// the client retries, and the creation goes to the active controller
// without the Metadata request waiting for it. Otherwise it is
// UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for a name
// Kafka's rules refuse.
//
// The loop resolves the names (and starts auto-creations); describing the
// topics and encoding the answer, which for every topic of a large
// cluster takes milliseconds, runs off the loop (request.offload) on the
// immutable image.
func handleMetadata(b *Broker, r *request) {
	plan := b.planMetadata(r, r.body.(*kmsg.MetadataRequest))
	var resp *kmsg.MetadataResponse
	var frame []byte
	r.offload(plan.cost(), func() {
		resp = plan.build()
		frame = wire.EncodeResponse(r.hdr.CorrelationID, resp)
	}, func() { r.respondEncoded(resp, frame) })
}

// metadataPlan is a Metadata answer decided on the loop and built off it:
// everything build reads is immutable (the image, the request) or owned by
// the plan.
type metadataPlan struct {
	req          *kmsg.MetadataRequest
	img          *meta.Image
	listener     string // the listener the request came on
	brokers      []kmsg.MetadataResponseBroker
	clusterID    string
	controllerID int32
	// topics are the answer's topics in order: a topic of img to describe
	// (ti set), or an answer already made (a missing or refused name).
	topics []metadataTopic
	// partitions counts the partitions to describe, for the cost.
	partitions int
	// clusterOps is the cluster's authorized operations (v8-v10).
	clusterOps int32
}

type metadataTopic struct {
	ti     *meta.TopicImage
	answer kmsg.MetadataResponseTopic
	// ops is the topic's authorized operations (v8+), when described.
	ops int32
}

// metadataCostPerPartition is the estimated CPU time of describing and
// encoding one partition of a Metadata answer (a few hundred bytes
// built and encoded): 5,000 partitions, about 10 ms.
const metadataCostPerPartition = 2 * time.Microsecond

func (p *metadataPlan) cost() time.Duration {
	return time.Duration(p.partitions+len(p.topics)) * metadataCostPerPartition
}

// planMetadata resolves a Metadata request's topics on the loop, with
// Kafka's authorization: a topic the principal may not DESCRIBE is left
// out of an all-topics answer and answered TOPIC_AUTHORIZATION_FAILED
// when named (whether it exists or not, so its existence does not leak;
// by id, the id is echoed, as Kafka does not consider ids secret); a
// missing topic that would be auto-created needs CREATE on the cluster
// or the topic, or is answered TOPIC_AUTHORIZATION_FAILED and not
// created.
func (b *Broker) planMetadata(r *request, req *kmsg.MetadataRequest) *metadataPlan {
	var img *meta.Image
	if b.cfg.Metadata != nil {
		img = b.cfg.Metadata.Image()
	}
	listener := r.cn.l.Name
	plan := &metadataPlan{req: req, img: img, listener: listener, brokers: b.brokerList(img, listener),
		clusterID: b.cfg.ClusterID, controllerID: b.controllerID(img, listener), clusterOps: notRequestedOps}
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		plan.clusterOps = 0
		if b.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, clusterName) {
			plan.clusterOps = b.authorizedOps(r, kmsg.ACLResourceTypeCluster, clusterName)
		}
	}
	canDescribe := b.topicAuth(r, kmsg.ACLOperationDescribe)
	describe := func(ti *meta.TopicImage) {
		mt := metadataTopic{ti: ti, ops: notRequestedOps}
		if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
			mt.ops = b.authorizedOps(r, kmsg.ACLResourceTypeTopic, ti.Name())
		}
		plan.topics = append(plan.topics, mt)
		plan.partitions += ti.NumPartitions()
	}
	// A nil topic list (v1+) or an empty one (v0) asks for all topics.
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		if img != nil {
			plan.topics = make([]metadataTopic, 0, img.NumTopics())
			for ti := range img.Topics() {
				if canDescribe(ti.Name()) == nil || plant.Is(plant.MetadataLeaksTopic) {
					describe(ti)
				}
			}
		}
		return plan
	}
	// Kafka answers each distinct topic once; the sets are only used for
	// membership, the response keeps request order.
	seenNames := make(map[string]bool, len(req.Topics))
	seenIDs := make(map[[16]byte]bool)
	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	var create []string
	defer func() { b.autoCreate(create) }()
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
			if err := b.metadataTopicAuth(r, *rt.Topic, canDescribe, allowCreate); err != nil {
				name := *rt.Topic
				t.Topic, t.ErrorCode = &name, err.Code
				plan.topics = append(plan.topics, metadataTopic{answer: t})
				continue
			}
			if img != nil {
				if ti, ok := img.TopicByName(*rt.Topic); ok {
					describe(ti)
					continue
				}
			}
			name := *rt.Topic
			t.Topic = &name
			t.ErrorCode = b.missingTopic(name, allowCreate, &create).Code
		case req.Version >= 12 && rt.TopicID != [16]byte{}:
			// By id (v12+): Kafka echoes the id with a null name.
			if seenIDs[rt.TopicID] {
				continue
			}
			seenIDs[rt.TopicID] = true
			if img != nil {
				if ti, ok := img.TopicByID(meta.UUID(rt.TopicID)); ok {
					if canDescribe(ti.Name()) == nil {
						describe(ti)
						continue
					}
					t.TopicID, t.ErrorCode = rt.TopicID, kerr.TopicAuthorizationFailed.Code
					plan.topics = append(plan.topics, metadataTopic{answer: t})
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
		plan.topics = append(plan.topics, metadataTopic{answer: t})
	}
	return plan
}

// build makes the answer. It touches nothing but the plan, so it may run
// off the loop.
func (p *metadataPlan) build() *kmsg.MetadataResponse {
	resp := p.req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers = p.brokers
	clusterID := p.clusterID
	resp.ClusterID = &clusterID              // encoded from v2
	resp.ControllerID = p.controllerID       // encoded from v1
	resp.AuthorizedOperations = p.clusterOps // v8..v10
	resp.ErrorCode = 0                       // v13 (KIP-1102): no rebootstrap needed
	resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(p.topics))
	for _, t := range p.topics {
		if t.ti == nil {
			resp.Topics = append(resp.Topics, t.answer)
			continue
		}
		mt := topicMetadata(p.img, t.ti, p.listener)
		mt.AuthorizedOperations = t.ops
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

// metadataTopicAuth decides a topic named in a Metadata request: nil, or
// TOPIC_AUTHORIZATION_FAILED without DESCRIBE, or when the topic is
// missing, would be auto-created, and the principal may not CREATE it
// (on the cluster or the topic).
func (b *Broker) metadataTopicAuth(r *request, name string, canDescribe func(string) error, allowCreate bool) *kerr.Error {
	if b.cfg.Authorizer == nil {
		return nil
	}
	if canDescribe(name) != nil {
		return kerr.TopicAuthorizationFailed
	}
	if !allowCreate || b.cfg.AutoTopicCreationDisabled || b.cfg.Metadata == nil {
		return nil
	}
	if _, ok := b.cfg.Metadata.Image().TopicByName(name); ok {
		return nil
	}
	if b.authorized(r, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, clusterName) ||
		b.authorized(r, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, name) {
		return nil
	}
	return kerr.TopicAuthorizationFailed
}

// brokerList is Metadata's broker list on a listener (see
// brokerEndpoints).
func (b *Broker) brokerList(img *meta.Image, listener string) []kmsg.MetadataResponseBroker {
	eps := b.brokerEndpoints(img, listener, false)
	out := make([]kmsg.MetadataResponseBroker, len(eps))
	for i, ep := range eps {
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = ep.id, ep.host, ep.port, ep.rack
		out[i] = mb
	}
	return out
}

// brokerEndpoint is one broker as Metadata and DescribeCluster list it
// and a NOT_LEADER_OR_FOLLOWER answer names it.
type brokerEndpoint struct {
	id     int32
	host   string
	port   int32
	rack   *string
	fenced bool
}

// endpointOf is reg's endpoint on the named listener, false if it has
// none. Metadata and the answers that name brokers give the endpoints of
// the listener the request came on, as Kafka does.
func endpointOf(reg meta.BrokerRegistration, listener string) (brokerEndpoint, bool) {
	ep, ok := reg.Endpoint(listener)
	if !ok {
		return brokerEndpoint{}, false
	}
	be := brokerEndpoint{id: reg.ID, host: ep.Host, port: int32(ep.Port), fenced: reg.Fenced}
	if reg.Rack != "" {
		rack := reg.Rack
		be.rack = &rack
	}
	return be, true
}

// brokerEndpoints lists every registered broker of img that is unfenced
// (or, with fenced, also the fenced ones) and has an endpoint on listener,
// endpoint, in id order, as Kafka lists its alive brokers (a fenced
// broker leads nothing and is omitted). This broker is always listed,
// from its own configuration when it is not (yet) unfenced in img: it is
// answering, and during startup it serves clients before its
// registration is unfenced (Kafka opens its client listeners only once
// caught up), so omitting it would leave a client that bootstrapped here
// without any broker. With no image the list is this broker alone.
func (b *Broker) brokerEndpoints(img *meta.Image, listener string, fenced bool) []brokerEndpoint {
	self := brokerEndpoint{id: b.cfg.NodeID, fenced: true}
	if l := b.listenerNamed(listener); l != nil {
		self.host, self.port = l.AdvertisedHost, l.AdvertisedPort
	}
	// self.rack: broker.rack is not configurable yet
	if img == nil {
		return []brokerEndpoint{self}
	}
	brokers := make([]brokerEndpoint, 0, img.NumBrokers()+1)
	selfListed := false
	for reg := range img.Brokers() { // ascending id
		if reg.Fenced && !fenced && reg.ID != b.cfg.NodeID {
			continue
		}
		be, ok := endpointOf(reg, listener)
		if !ok {
			continue
		}
		if !selfListed && reg.ID > b.cfg.NodeID {
			brokers = append(brokers, self)
			selfListed = true
		}
		if reg.ID == b.cfg.NodeID && reg.Fenced && !fenced {
			brokers = append(brokers, self) // listed from its configuration
			selfListed = true
			continue
		}
		brokers = append(brokers, be)
		selfListed = selfListed || reg.ID == b.cfg.NodeID
	}
	if !selfListed {
		brokers = append(brokers, self)
	}
	return brokers
}

// controllerID is Metadata's controller id. As in KRaft Kafka it names a
// live broker, not the active controller: controllers need not be brokers
// (split roles), and every broker forwards the controller's requests
// (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
// IncrementalAlterConfigs, ElectLeaders, AlterPartitionReassignments,
// ListPartitionReassignments) to the active controller and answers
// DescribeConfigs and DescribeCluster itself. Kafka picks a random
// unfenced broker; Strata picks deterministically (core answers the same
// for the same image):
//
//  1. this broker when it is registered and unfenced, so that a client's
//     admin requests land here and are forwarded;
//  2. else the lowest unfenced broker id with a client listener;
//  3. else this broker: no broker is unfenced, which is how a broker
//     starts (it serves clients before its registration is unfenced:
//     the start-up scrub, the first election), and it is listed in the
//     brokers of the answer anyway (brokerEndpoints). Kafka never meets
//     this case, as it opens its listeners only once unfenced. The
//     previous answer, -1, made sarama's NewClusterAdmin and kafkajs's
//     admin fail at once ("controller is not available", "Broker -1 not
//     found") instead of retrying (issue 22); a request forwarded before
//     there is an active controller gets NOT_CONTROLLER, which both
//     retry with fresh metadata.
//
// Without an image it is this broker.
func (b *Broker) controllerID(img *meta.Image, listener string) int32 {
	if img == nil {
		return b.cfg.NodeID
	}
	if reg, ok := img.Broker(b.cfg.NodeID); ok && !reg.Fenced {
		return b.cfg.NodeID
	}
	for reg := range img.Brokers() { // ascending id
		if _, ok := reg.Endpoint(listener); ok && !reg.Fenced {
			return reg.ID
		}
	}
	return b.cfg.NodeID
}

// topicMetadata describes one topic of the image. A partition without a
// leader gets LEADER_NOT_AVAILABLE with leader -1, as in Kafka.
func topicMetadata(img *meta.Image, ti *meta.TopicImage, listener string) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	name := ti.Name()
	t.Topic = &name
	t.TopicID = ti.ID() // encoded from v10
	t.IsInternal = isInternalTopic(name)
	for p := range ti.Partitions() {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.ID
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch // encoded from v7
		mp.Replicas = slices.Clone(p.Replicas)
		mp.ISR = slices.Clone(p.ISR)
		mp.OfflineReplicas = offlineReplicas(img, p, listener) // encoded from v5
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
