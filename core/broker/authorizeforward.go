package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/protocol"
)

// Authorization of the requests passed to the controller: the broker
// decides each topic or config resource before forwarding, takes the
// refused ones out of the request and adds their errors to the
// controller's answer (Kafka's KRaft controller authorizes a forwarded
// request again, with the principal the Envelope carries; that second
// check is for when the controller listener authenticates).

// forwardRefused is the part of a controller request the broker refused.
type forwardRefused struct {
	// rest is the request to forward (nil: nothing left to forward).
	rest kmsg.Request
	// add adds the refused entries to a response of the request's kind.
	add func(kmsg.Response)
}

// authorizeForward decides r's entries before handleController forwards
// it, or returns nil when every entry is allowed (or the kind has no
// entries to decide).
func (b *Broker) authorizeForward(r *request) *forwardRefused {
	if b.cfg.Authorizer == nil {
		return nil
	}
	switch req := r.body.(type) {
	case *kmsg.CreateTopicsRequest:
		// Refused topics are handleCreateTopics's; the created ones'
		// configs are hidden from a principal without DESCRIBE_CONFIGS.
		return &forwardRefused{rest: req, add: func(resp kmsg.Response) {
			b.hideCreatedConfigs(r, resp.(*kmsg.CreateTopicsResponse))
		}}
	case *kmsg.DeleteTopicsRequest:
		return b.authorizeDeleteTopics(r, req)
	case *kmsg.CreatePartitionsRequest:
		kept, refused := splitTopics(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) string { return t.Topic },
			b.topicAuth(r, kmsg.ACLOperationAlter))
		if refused == nil {
			return nil
		}
		rest := *req
		rest.Topics = kept
		return &forwardRefused{rest: restUnlessEmpty(&rest, len(kept)), add: func(resp kmsg.Response) {
			out := resp.(*kmsg.CreatePartitionsResponse)
			for _, t := range refused {
				rt := kmsg.NewCreatePartitionsResponseTopic()
				rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
				rt.ErrorMessage = kmsg.StringPtr("The topic authorization is failed.")
				out.Topics = append(out.Topics, rt)
			}
		}}
	case *kmsg.AlterConfigsRequest:
		kept, refused, errs := splitBy(req.Resources, func(res kmsg.AlterConfigsRequestResource) *kerr.Error {
			return b.configResourceAuth(r, kmsg.ACLOperationAlterConfigs, res.ResourceType, res.ResourceName)
		})
		if refused == nil {
			return nil
		}
		rest := *req
		rest.Resources = kept
		return &forwardRefused{rest: restUnlessEmpty(&rest, len(kept)), add: func(resp kmsg.Response) {
			out := resp.(*kmsg.AlterConfigsResponse)
			for i, res := range refused {
				rr := kmsg.NewAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
				rr.ErrorCode = errs[i].Code
				out.Resources = append(out.Resources, rr)
			}
		}}
	case *kmsg.IncrementalAlterConfigsRequest:
		kept, refused, errs := splitBy(req.Resources, func(res kmsg.IncrementalAlterConfigsRequestResource) *kerr.Error {
			return b.configResourceAuth(r, kmsg.ACLOperationAlterConfigs, res.ResourceType, res.ResourceName)
		})
		if refused == nil {
			return nil
		}
		rest := *req
		rest.Resources = kept
		return &forwardRefused{rest: restUnlessEmpty(&rest, len(kept)), add: func(resp kmsg.Response) {
			out := resp.(*kmsg.IncrementalAlterConfigsResponse)
			for i, res := range refused {
				rr := protocol.AlterConfigsError(res.ResourceType, res.ResourceName, errs[i], "")
				rr.ErrorMessage = nil
				out.Resources = append(out.Resources, rr)
			}
		}}
	}
	return nil
}

// restUnlessEmpty is rest, or nil when it has no entries left.
func restUnlessEmpty(rest kmsg.Request, n int) kmsg.Request {
	if n == 0 {
		return nil
	}
	return rest
}

// configResourceAuth is the refusal of op (DESCRIBE_CONFIGS or
// ALTER_CONFIGS) on a config resource, as Kafka maps it: a topic's
// (TOPIC_AUTHORIZATION_FAILED), a broker's or broker logger's on the
// cluster (CLUSTER_AUTHORIZATION_FAILED), a group's
// (GROUP_AUTHORIZATION_FAILED); nil when allowed or for another type,
// which the handler or controller refuses.
func (b *Broker) configResourceAuth(r *request, op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) *kerr.Error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !b.authorized(r, op, kmsg.ACLResourceTypeTopic, name) {
			return kerr.TopicAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !b.authorized(r, op, kmsg.ACLResourceTypeCluster, clusterName) {
			return kerr.ClusterAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !b.authorized(r, op, kmsg.ACLResourceTypeGroup, name) {
			return kerr.GroupAuthorizationFailed
		}
	}
	return nil
}

// authorizeDeleteTopics decides each topic of a DeleteTopics: DELETE on
// it (TOPIC_AUTHORIZATION_FAILED). A topic named by an id the image
// knows also needs DESCRIBE, or its name is not returned; an unknown id
// goes to the controller, which answers UNKNOWN_TOPIC_ID (Kafka does not
// consider ids secret, but a name is).
func (b *Broker) authorizeDeleteTopics(r *request, req *kmsg.DeleteTopicsRequest) *forwardRefused {
	if b.authorized(r, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeCluster, clusterName) {
		return nil // DELETE on the cluster allows every topic (ControllerApis.deleteTopics)
	}
	canDelete, canDescribe := b.topicAuth(r, kmsg.ACLOperationDelete), b.topicAuth(r, kmsg.ACLOperationDescribe)
	img := b.image()
	var kept []kmsg.DeleteTopicsRequestTopic
	var refused []kmsg.DeleteTopicsResponseTopic
	for _, t := range protocol.DeleteTopicsEntries(req) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.TopicID, rt.ErrorCode = t.TopicID, kerr.TopicAuthorizationFailed.Code
		name := ""
		switch {
		case t.Topic != nil:
			name = *t.Topic
		case img != nil:
			ti, ok := img.TopicByID(meta.UUID(t.TopicID))
			if !ok {
				kept = append(kept, t)
				continue
			}
			name = ti.Name()
			if canDescribe(name) != nil {
				refused = append(refused, rt) // by id, without its name
				continue
			}
		default:
			kept = append(kept, t)
			continue
		}
		if canDelete(name) == nil {
			kept = append(kept, t)
			continue
		}
		rt.Topic = &name
		refused = append(refused, rt)
	}
	if refused == nil {
		return nil
	}
	rest := *req
	if req.Version >= 6 {
		rest.Topics = kept
	} else {
		rest.TopicNames = make([]string, 0, len(kept))
		for _, t := range kept {
			rest.TopicNames = append(rest.TopicNames, *t.Topic)
		}
	}
	return &forwardRefused{rest: restUnlessEmpty(&rest, len(kept)), add: func(resp kmsg.Response) {
		out := resp.(*kmsg.DeleteTopicsResponse)
		out.Topics = append(out.Topics, refused...)
	}}
}

// hideCreatedConfigs answers the topics a CreateTopics created without
// their configs, partition count and replication factor when the
// principal may not DESCRIBE_CONFIGS them: TOPIC_AUTHORIZATION_FAILED in
// the config error field (v5+), as Kafka's controller does.
func (b *Broker) hideCreatedConfigs(r *request, resp *kmsg.CreateTopicsResponse) {
	can := b.topicAuth(r, kmsg.ACLOperationDescribeConfigs)
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		if rt.ErrorCode != 0 || can(rt.Topic) == nil {
			continue
		}
		rt.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
		rt.Configs, rt.NumPartitions, rt.ReplicationFactor = nil, -1, -1
	}
}
