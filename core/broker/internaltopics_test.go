package broker

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// TestCreateTopicsRefusesCoordinatorTopics: a client's CreateTopics of
// __consumer_offsets or __transaction_state is refused at the client
// listener with Kafka's INVALID_REQUEST for an internal topic; the other
// topics of the request go to the controller, and the answer keeps the
// request's order (issue 22, finding 8).
func TestCreateTopicsRefusesCoordinatorTopics(t *testing.T) {
	md := &fakeMetadata{img: meta.Empty()}
	_, e := newTestBroker(t, func(c *Config) { c.Metadata = md })
	c := e.net.connect()
	topic := func(name string) kmsg.CreateTopicsRequestTopic {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 1, 1
		ct.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "cleanup.policy", Value: kmsg.StringPtr("compact")}}
		return ct
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 7
	create.Topics = []kmsg.CreateTopicsRequestTopic{topic("a"), topic(OffsetsTopic), topic("b"), topic(TxnStateTopic)}
	c.deliver(encodeRequest(create, 1))
	require.Len(t, md.reqs, 1)
	fwd := md.reqs[0].(*kmsg.CreateTopicsRequest)
	require.Equal(t, int16(7), fwd.Version)
	require.Len(t, fwd.Topics, 2)
	require.Equal(t, "a", fwd.Topics[0].Topic)
	require.Equal(t, "b", fwd.Topics[1].Topic)
	require.Len(t, create.Topics, 4, "the client's request is not changed")

	resp := fwd.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, name := range []string{"a", "b"} {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = name
		resp.Topics = append(resp.Topics, rt)
	}
	md.pending[0](resp, nil)
	e.run()
	require.Len(t, c.sent, 1)
	got := responseTo[*kmsg.CreateTopicsResponse](t, c.sent[0], 1, create)
	var names []string
	for _, rt := range got.Topics {
		names = append(names, rt.Topic)
		if rt.Topic == OffsetsTopic || rt.Topic == TxnStateTopic {
			require.Equal(t, kerr.InvalidRequest.Code, rt.ErrorCode)
			require.Equal(t, "Creation of internal topic "+rt.Topic+" is prohibited.", *rt.ErrorMessage)
		} else {
			require.Zero(t, rt.ErrorCode)
		}
	}
	require.Equal(t, []string{"a", OffsetsTopic, "b", TxnStateTopic}, names)

	// Only coordinator topics: answered without the controller.
	create.Topics = []kmsg.CreateTopicsRequestTopic{topic(OffsetsTopic)}
	c.deliver(encodeRequest(create, 2))
	e.run()
	require.Len(t, md.reqs, 1, "nothing forwarded")
	require.Len(t, c.sent, 2)
	got = responseTo[*kmsg.CreateTopicsResponse](t, c.sent[1], 2, create)
	require.Len(t, got.Topics, 1)
	require.Equal(t, kerr.InvalidRequest.Code, got.Topics[0].ErrorCode)
}

// coordinatorImage is an image with this broker (7) and broker 9, and
// both coordinator topics, with one partition led by 9, whose
// cleanup.policy is policy (none when empty): an image from before the
// controller refused other policies for them.
func coordinatorImage(t *testing.T, policy string) *meta.Image {
	t.Helper()
	d := meta.Empty().NewDelta()
	for _, id := range []int32{7, 9} {
		require.NoError(t, d.Replay(&meta.RegisterBrokerRecord{BrokerID: id, BrokerEpoch: int64(id),
			Endpoints: []meta.Endpoint{{Name: "PLAINTEXT", Host: "b", Port: 9092}}}))
	}
	for i, name := range []string{OffsetsTopic, TxnStateTopic} {
		id := meta.UUID{0: byte(i + 1)}
		require.NoError(t, d.Replay(&meta.TopicRecord{Name: name, TopicID: id}))
		require.NoError(t, d.Replay(&meta.PartitionRecord{TopicID: id, Replicas: []int32{9}, ISR: []int32{9}, Leader: 9}))
		if policy != "" {
			require.NoError(t, d.Replay(&meta.ConfigRecord{ResourceType: meta.ConfigResourceTopic, ResourceName: name,
				Key: "cleanup.policy", Value: kmsg.StringPtr(policy)}))
		}
	}
	return d.Apply(meta.Position{Offset: 10, Epoch: 1})
}

// TestCoordinatorRefusesUnusableTopic: a coordinator's topic that deletes
// old segments is not used: requests for its groups and transactional ids
// get COORDINATOR_NOT_AVAILABLE rather than NOT_COORDINATOR (the
// partition's leader is broker 9), and the broker says why once.
func TestCoordinatorRefusesUnusableTopic(t *testing.T) {
	for _, tc := range []struct {
		policy string
		want   *kerr.Error
	}{
		{"compact", kerr.NotCoordinator},
		{"delete", kerr.CoordinatorNotAvailable},
		{"compact,delete", kerr.CoordinatorNotAvailable},
		{"", kerr.CoordinatorNotAvailable}, // the default policy, delete
	} {
		md := &fakeMetadata{img: coordinatorImage(t, tc.policy)}
		_, e := newTestBroker(t, func(c *Config) { c.Metadata = md })
		for range 2 {
			join := kmsg.NewPtrJoinGroupRequest()
			join.Version, join.Group, join.ProtocolType = 9, "g", "consumer"
			join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
			join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
			require.Equal(t, tc.want.Code, roundTrip[*kmsg.JoinGroupResponse](t, e, join).ErrorCode, "policy %q", tc.policy)

			init := kmsg.NewPtrInitProducerIDRequest()
			init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, kmsg.StringPtr("tx"), 10000
			require.Equal(t, tc.want.Code, roundTrip[*kmsg.InitProducerIDResponse](t, e, init).ErrorCode, "policy %q", tc.policy)
		}
		logged := strings.Count(e.logBuf.String(), "the coordinator's topic is not usable")
		if tc.want == kerr.CoordinatorNotAvailable {
			require.Equal(t, 2, logged, "once per topic, not per request:\n%s", e.logBuf.String())
			require.Contains(t, e.logBuf.String(), "level=ERROR")
		} else {
			require.Zero(t, logged)
		}
	}
}
