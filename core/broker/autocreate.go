package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// Topic auto-creation (auto.create.topics.enable), as Kafka's
// AutoTopicCreationManager: a Metadata request naming a missing, validly
// named topic makes the broker send a CreateTopics for it to the active
// controller, with this broker's num.partitions and
// default.replication.factor, and answer LEADER_NOT_AVAILABLE at once;
// the client retries its Metadata until the topic is there. One creation
// per name is in flight at a time, however many clients ask.

// maxAutoCreatesInflight bounds the topics this broker has asked the
// controller to create and not heard back about, in topics. Past it a
// missing topic is still answered LEADER_NOT_AVAILABLE, without a
// request: a client naming thousands of topics cannot queue thousands of
// creations, and its retry creates them later.
const maxAutoCreatesInflight = 1000

// autoCreateVersion is the CreateTopics version auto-creation sends: the
// newest the broker's table serves, so the answer reports what it needs.
const autoCreateVersion = 7

// missingTopic is the error code for a named topic the image does not
// have, and adds it to create when it is to be auto-created.
func (b *Broker) missingTopic(name string, allowCreate bool, create *[]string) *kerr.Error {
	switch {
	case !meta.ValidTopicName(name):
		return kerr.InvalidTopicException
	case !allowCreate || b.cfg.AutoTopicCreationDisabled || b.cfg.Metadata == nil:
		return kerr.UnknownTopicOrPartition
	case isInternalTopic(name):
		// Internal topics are created by their owners (the group and
		// transaction coordinators) with their own configuration, never
		// by a client's Metadata.
		return kerr.UnknownTopicOrPartition
	}
	if !b.autoCreating[name] && len(b.autoCreating) < maxAutoCreatesInflight {
		b.autoCreating[name] = true
		*create = append(*create, name)
	}
	return kerr.LeaderNotAvailable
}

// autoCreate sends one CreateTopics for the names and forgets them once
// the controller answered; a failure is logged (the next Metadata tries
// again).
func (b *Broker) autoCreate(names []string) {
	if len(names) == 0 {
		return
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = autoCreateVersion
	req.TimeoutMillis = 30_000
	for _, name := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, -1, -1
		if b.cfg.DefaultNumPartitions > 0 {
			t.NumPartitions = b.cfg.DefaultNumPartitions
		}
		if b.cfg.DefaultReplicationFactor > 0 {
			t.ReplicationFactor = b.cfg.DefaultReplicationFactor
		}
		req.Topics = append(req.Topics, t)
	}
	b.log.Info("auto-creating topics", "topics", names)
	b.cfg.Metadata.Submit(req, func(r kmsg.Response, err error) {
		for _, name := range names {
			delete(b.autoCreating, name)
		}
		resp, ok := r.(*kmsg.CreateTopicsResponse)
		if err != nil || !ok {
			b.log.Warn("auto-creating topics failed", "topics", names, "err", err)
			return
		}
		for _, t := range resp.Topics {
			if t.ErrorCode == 0 || t.ErrorCode == kerr.TopicAlreadyExists.Code {
				continue
			}
			msg := ""
			if t.ErrorMessage != nil {
				msg = *t.ErrorMessage
			}
			b.log.Warn("auto-creating a topic failed", "topic", t.Topic,
				"err", fmt.Sprintf("%v: %s", kerr.ErrorForCode(t.ErrorCode), msg))
		}
	})
}
