package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/config"
)

// The coordinators' internal topics hold group offsets and transaction
// states, so they must stay compacted (a topic that deletes old segments
// loses them by retention) and keep their partition count (a group or
// transactional id lives in partition hash % count, and would move away
// from its state). Their brokers create them (core/broker
// createCoordinatorTopic) compacted, and refuse a client's CreateTopics
// of them at the client listener; the controller refuses, for whoever
// sends it (the controller listener has no authentication yet), a
// creation that is not compacted, a config change that would make them
// not compacted, and CreatePartitions. Kafka checks none of this.
const (
	offsetsTopicName  = "__consumer_offsets"
	txnStateTopicName = "__transaction_state"
)

// isCoordinatorTopic reports whether name is a coordinator's topic.
func isCoordinatorTopic(name string) bool {
	return name == offsetsTopicName || name == txnStateTopicName
}

// checkCoordinatorTopicPolicy refuses a topic-level cleanup.policy of a
// coordinator's topic that is not compact alone; set is false when the
// topic would have none (the cluster's default would apply).
func checkCoordinatorTopicPolicy(topic string, value string, set bool) *apiError {
	if !isCoordinatorTopic(topic) {
		return nil
	}
	if set {
		row, _ := config.TopicRow(config.TopicCleanupPolicy)
		if v, err := row.Parse(value); err == nil && slices.Contains(v.List(), "compact") && !slices.Contains(v.List(), "delete") {
			return nil
		}
	}
	return errorf(kerr.InvalidConfig, "The internal topic %s must have cleanup.policy=compact: its coordinator's state would be deleted by retention.", topic)
}
