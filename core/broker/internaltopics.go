package broker

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/replica"
)

// The coordinators' internal topics. Only the coordinators create them
// (createCoordinatorTopic, with their own partition count and
// cleanup.policy=compact), and a coordinator uses its topic only while it
// is compacted and nothing else (coordinatorTopicProblem): group offsets
// and transaction states on a topic that deletes old segments would be
// lost by retention.
//
// Kafka lets a client create __consumer_offsets and __transaction_state
// with any shape (it refuses only __cluster_metadata), and its
// coordinators then use what they find. Strata refuses a client's
// creation of either name at the client listener (handleCreateTopics),
// answering as Kafka answers for __cluster_metadata; the controller also
// refuses a creation of either that is not compacted and every config
// change or CreatePartitions that would change their shape
// (core/controller internal.go), which covers a request that reaches the
// controller listener directly.

// isCoordinatorTopic reports whether name is a coordinator's topic.
func isCoordinatorTopic(name string) bool { return name == OffsetsTopic || name == TxnStateTopic }

// handleCreateTopics refuses a client's creation of a coordinator's topic
// with INVALID_REQUEST and passes the other topics of the request to the
// active controller (handleController); the answer lists the topics in
// the request's order.
//
// A topic the principal may not CREATE (on the cluster or the topic) is
// refused too, TOPIC_AUTHORIZATION_FAILED, whether or not it exists.
func handleCreateTopics(b *Broker, r *request) {
	req := r.body.(*kmsg.CreateTopicsRequest)
	canCreate := b.createTopicAuth(r)
	refusing := func(name string) bool { return isCoordinatorTopic(name) || canCreate(name) != nil }
	if !slices.ContainsFunc(req.Topics, func(t kmsg.CreateTopicsRequestTopic) bool { return refusing(t.Topic) }) {
		handleController(b, r)
		return
	}
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	refused := func(name string) kmsg.CreateTopicsResponseTopic {
		if !isCoordinatorTopic(name) {
			return protocol.CreateTopicsError(name, kerr.TopicAuthorizationFailed, "Authorization failed.")
		}
		return protocol.CreateTopicsError(name, kerr.InvalidRequest, "Creation of internal topic "+name+" is prohibited.")
	}
	rest := *req
	rest.Topics = slices.DeleteFunc(slices.Clone(req.Topics), func(t kmsg.CreateTopicsRequestTopic) bool { return refusing(t.Topic) })
	if len(rest.Topics) == 0 || b.cfg.Metadata == nil {
		for _, t := range req.Topics {
			if refusing(t.Topic) {
				resp.Topics = append(resp.Topics, refused(t.Topic))
			} else {
				resp.Topics = append(resp.Topics, protocol.CreateTopicsError(t.Topic, kerr.NotController, "This node has no metadata quorum."))
			}
		}
		r.respond(resp)
		return
	}
	b.cfg.Metadata.Submit(&rest, func(cr kmsg.Response, err error) {
		answered, ok := cr.(*kmsg.CreateTopicsResponse)
		if err != nil || !ok || answered.GetVersion() != req.Version {
			b.log.Warn("controller request failed", "api_name", r.hdr.APIName(), "err", err)
			r.respond(protocol.ErrorResponse(r.body, kerr.UnknownServerError, "The controller failed the request."))
			return
		}
		resp.ThrottleMillis = answered.ThrottleMillis
		// The controller answers a name listed twice once; every other
		// name once, in the request's order.
		next := 0
		for _, t := range req.Topics {
			if refusing(t.Topic) {
				if !slices.ContainsFunc(resp.Topics, func(rt kmsg.CreateTopicsResponseTopic) bool { return rt.Topic == t.Topic }) {
					resp.Topics = append(resp.Topics, refused(t.Topic))
				}
				continue
			}
			if next < len(answered.Topics) && answered.Topics[next].Topic == t.Topic {
				resp.Topics = append(resp.Topics, answered.Topics[next])
				next++
			}
		}
		resp.Topics = append(resp.Topics, answered.Topics[next:]...)
		if b.cfg.Authorizer != nil {
			b.hideCreatedConfigs(r, resp)
		}
		r.respond(resp)
	})
}

// coordinatorTopicProblem says why a coordinator cannot use its topic as
// the partitions here apply its config, or "" when it can: the topic's
// cleanup.policy must be compact alone. A changed answer is logged once
// (ERROR when the topic becomes unusable, INFO when it is usable again).
func (b *Broker) coordinatorTopicProblem(img *meta.Image, topic string) string {
	var v config.Value
	var tv replica.TopicConfigValue
	if b.cfg.Partitions != nil {
		v, tv, _ = b.cfg.Partitions.ResolveTopicConfig(img, topic, config.TopicCleanupPolicy)
	} else {
		v, tv, _ = replica.Config{NodeID: b.cfg.NodeID}.ResolveTopicConfig(img, topic, config.TopicCleanupPolicy)
	}
	problem := ""
	if slices.Contains(v.List(), "delete") || !slices.Contains(v.List(), "compact") {
		problem = "its cleanup.policy is " + v.String() + " (" + tv.Effective.Source.String() + "), not compact: retention would delete the coordinator's state"
	}
	if b.coordinatorTopicProblems == nil {
		b.coordinatorTopicProblems = map[string]string{}
	}
	if last := b.coordinatorTopicProblems[topic]; last != problem {
		b.coordinatorTopicProblems[topic] = problem
		if problem != "" {
			b.log.Error("the coordinator's topic is not usable; its coordinator answers COORDINATOR_NOT_AVAILABLE", "topic", topic, "reason", problem)
		} else {
			b.log.Info("the coordinator's topic is usable again", "topic", topic)
		}
	}
	return problem
}
