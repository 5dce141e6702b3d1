package broker

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// fakeMetadata holds submitted requests until the test answers them.
type fakeMetadata struct {
	img     *meta.Image
	pending []func(kmsg.Response, error)
	reqs    []kmsg.Request
}

func (m *fakeMetadata) Image() *meta.Image { return m.img }
func (m *fakeMetadata) Submit(req kmsg.Request, done func(kmsg.Response, error)) {
	m.reqs = append(m.reqs, req)
	m.pending = append(m.pending, done)
}

// createTopicsAnswer is the controller's answer to req for one topic.
func createTopicsAnswer(req *kmsg.CreateTopicsRequest, topic string, code int16) *kmsg.CreateTopicsResponse {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.Topic, rt.ErrorCode = topic, code
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// answerOldest answers the oldest request still pending with resp.
func (m *fakeMetadata) answerOldest(resp kmsg.Response) {
	done := m.pending[0]
	m.pending = m.pending[1:]
	done(resp, nil)
}

func TestControllerRequestsKeepResponseOrder(t *testing.T) {
	md := &fakeMetadata{img: meta.Empty()}
	_, e := newTestBroker(t, func(c *Config) { c.Metadata = md })
	c := e.net.connect()

	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 7
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "t1", 3, 1
	create.Topics = append(create.Topics, ct)
	c.deliver(encodeRequest(create, 1))

	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	c.deliver(encodeRequest(meta, 2))
	require.Empty(t, c.sent, "Metadata waits behind the CreateTopics in flight")
	require.Len(t, md.reqs, 1)

	md.pending[0](createTopicsAnswer(create, "t1", kerr.TopicAlreadyExists.Code), nil)
	e.run()
	require.Len(t, c.sent, 2, "both answered, in order")

	got := responseTo[*kmsg.CreateTopicsResponse](t, c.sent[0], 1, create)
	require.Equal(t, kerr.TopicAlreadyExists.Code, got.Topics[0].ErrorCode)
	mr := responseTo[*kmsg.MetadataResponse](t, c.sent[1], 2, meta)
	require.Equal(t, int32(testNodeID), mr.ControllerID, "no broker is unfenced yet: this one, listed and forwarding")
	require.Len(t, mr.Brokers, 1, "this broker lists itself")
	require.Empty(t, mr.Topics)
}

func TestControllerRequestWithoutQuorumIsNotController(t *testing.T) {
	_, e := newTestBroker(t)
	c := e.net.connect()
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	dt := kmsg.NewDeleteTopicsRequestTopic()
	name := "t1"
	dt.Topic = &name
	del.Topics = append(del.Topics, dt)
	c.deliver(encodeRequest(del, 9))
	require.Len(t, c.sent, 1)
	got := responseTo[*kmsg.DeleteTopicsResponse](t, c.sent[0], 9, del)
	require.Equal(t, kerr.NotController.Code, got.Topics[0].ErrorCode)
}

// imageWithBrokers is an image holding the given registrations, each
// registered with a PLAINTEXT listener on host "b<id>", port 9000+id.
func imageWithBrokers(t *testing.T, regs ...meta.RegisterBrokerRecord) *meta.Image {
	t.Helper()
	d := meta.Empty().NewDelta()
	for i := range regs {
		r := regs[i]
		r.BrokerEpoch = int64(i + 1)
		if r.Endpoints == nil {
			r.Endpoints = []meta.Endpoint{{Name: "PLAINTEXT", Host: fmt.Sprintf("b%d", r.BrokerID), Port: uint16(9000 + r.BrokerID)}}
		}
		require.NoError(t, d.Replay(&r))
	}
	return d.Apply(meta.Position{Offset: int64(len(regs) - 1), Epoch: 1})
}

func metadataFrom(t *testing.T, img *meta.Image, version int16) *kmsg.MetadataResponse {
	t.Helper()
	_, e := newTestBroker(t, func(c *Config) { c.Metadata = &fakeMetadata{img: img} })
	c := e.net.connect()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	resp := roundTripOn[*kmsg.MetadataResponse](t, c, req, 3)
	return resp
}

type listedBroker struct {
	id   int32
	host string
	port int32
	rack string
}

func listed(resp *kmsg.MetadataResponse) []listedBroker {
	var out []listedBroker
	for _, b := range resp.Brokers {
		lb := listedBroker{id: b.NodeID, host: b.Host, port: b.Port}
		if b.Rack != nil {
			lb.rack = *b.Rack
		}
		out = append(out, lb)
	}
	return out
}

func TestMetadataListsUnfencedBrokers(t *testing.T) {
	other := []meta.Endpoint{{Name: "INTERNAL", Host: "internal", Port: 1}}
	img := imageWithBrokers(t,
		meta.RegisterBrokerRecord{BrokerID: 3, Rack: "rack-a"},
		meta.RegisterBrokerRecord{BrokerID: 5, Fenced: true},     // omitted
		meta.RegisterBrokerRecord{BrokerID: 6, Endpoints: other}, // no PLAINTEXT listener: omitted
		meta.RegisterBrokerRecord{BrokerID: testNodeID},          // this broker, from the image
		meta.RegisterBrokerRecord{BrokerID: 9},
	)
	resp := metadataFrom(t, img, 12)
	require.Equal(t, []listedBroker{
		{3, "b3", 9003, "rack-a"},
		{testNodeID, "b7", 9007, ""},
		{9, "b9", 9009, ""},
	}, listed(resp))
	require.Equal(t, int32(testNodeID), resp.ControllerID, "this broker when unfenced")

	// v0 has no controller id and no rack; the list is the same.
	resp = metadataFrom(t, img, 0)
	require.Len(t, resp.Brokers, 3)
}

func TestMetadataControllerIDWhenThisBrokerIsFenced(t *testing.T) {
	img := imageWithBrokers(t,
		meta.RegisterBrokerRecord{BrokerID: 2, Fenced: true},
		meta.RegisterBrokerRecord{BrokerID: testNodeID, Fenced: true},
		meta.RegisterBrokerRecord{BrokerID: 8},
		meta.RegisterBrokerRecord{BrokerID: 4},
	)
	resp := metadataFrom(t, img, 13)
	require.Equal(t, int32(4), resp.ControllerID, "the lowest unfenced broker")
	// This broker lists itself (advertised address) even while fenced.
	require.Equal(t, []listedBroker{
		{4, "b4", 9004, ""},
		{testNodeID, testHost, 40001, ""},
		{8, "b8", 9008, ""},
	}, listed(resp))

	// Nobody unfenced (a broker starting): this broker, which lists
	// itself and forwards, rather than -1, on which sarama's and kafkajs's
	// admin clients fail at once (issue 22, finding 11).
	img = imageWithBrokers(t, meta.RegisterBrokerRecord{BrokerID: 1, Fenced: true})
	for _, v := range []int16{1, 7, 13} {
		resp = metadataFrom(t, img, v)
		require.Equal(t, int32(testNodeID), resp.ControllerID, "v%d", v)
		require.Equal(t, []listedBroker{{testNodeID, testHost, 40001, ""}}, listed(resp))
	}
	resp = metadataFrom(t, meta.Empty(), 13)
	require.Equal(t, int32(testNodeID), resp.ControllerID, "an empty image (not yet caught up)")
	require.Equal(t, []listedBroker{{testNodeID, testHost, 40001, ""}}, listed(resp))
}

func describeQuorumRequest(version int16) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = version
	topic := kmsg.NewDescribeQuorumRequestTopic()
	topic.Topic = "__cluster_metadata"
	topic.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{topic}
	return req
}

func TestDescribeQuorumIsPassedToTheQuorum(t *testing.T) {
	for _, v := range versions(t, kmsg.DescribeQuorum) {
		md := &fakeMetadata{img: meta.Empty()}
		_, e := newTestBroker(t, func(c *Config) { c.Metadata = md })
		c := e.net.connect()
		req := describeQuorumRequest(v)
		c.deliver(encodeRequest(req, 5))
		require.Empty(t, c.sent, "answered by the quorum, later")
		require.Len(t, md.reqs, 1)
		require.IsType(t, &kmsg.DescribeQuorumRequest{}, md.reqs[0])
		require.Equal(t, v, md.reqs[0].GetVersion(), "passed on at the client's version")

		answer := kmsg.NewPtrDescribeQuorumResponse()
		answer.Version = v
		p := kmsg.NewDescribeQuorumResponseTopicPartition()
		p.LeaderID, p.LeaderEpoch, p.HighWatermark = 2, 5, 42
		topic := kmsg.NewDescribeQuorumResponseTopic()
		topic.Topic, topic.Partitions = "__cluster_metadata", []kmsg.DescribeQuorumResponseTopicPartition{p}
		answer.Topics = []kmsg.DescribeQuorumResponseTopic{topic}
		md.pending[0](answer, nil)
		e.run()

		got := responseTo[*kmsg.DescribeQuorumResponse](t, lastSent(t, c), 5, req)
		require.Len(t, got.Topics, 1)
		require.Equal(t, int32(2), got.Topics[0].Partitions[0].LeaderID)
		require.Equal(t, int64(42), got.Topics[0].Partitions[0].HighWatermark)
	}
}

func TestDescribeQuorumErrors(t *testing.T) {
	// Without a quorum: NOT_CONTROLLER at the top level.
	_, e := newTestBroker(t)
	c := e.net.connect()
	got := roundTripOn[*kmsg.DescribeQuorumResponse](t, c, describeQuorumRequest(2), 6)
	require.Equal(t, kerr.NotController.Code, got.ErrorCode)

	// A failed submit: UNKNOWN_SERVER_ERROR, the connection stays open.
	md := &fakeMetadata{img: meta.Empty()}
	_, e = newTestBroker(t, func(c *Config) { c.Metadata = md })
	c = e.net.connect()
	req := describeQuorumRequest(1)
	c.deliver(encodeRequest(req, 7))
	md.pending[0](nil, fmt.Errorf("boom"))
	e.run()
	got = responseTo[*kmsg.DescribeQuorumResponse](t, lastSent(t, c), 7, req)
	require.Equal(t, kerr.UnknownServerError.Code, got.ErrorCode)
	require.False(t, c.closed)
}

func TestInflightBoundsPauseAndResumeTheConnection(t *testing.T) {
	md := &fakeMetadata{img: meta.Empty()}
	b, e := newTestBroker(t, func(c *Config) {
		c.Metadata = md
		c.MaxInflightRequestsPerConn = 3
	})
	c := e.net.connect()
	other := e.net.connect()
	dq := func(corr int32) []byte { return encodeRequest(describeQuorumRequest(2), corr) }
	// A barrier request holds the ones behind it: three queued pause the
	// connection.
	c.deliver(dq(1))
	c.deliver(dq(2))
	require.False(t, c.paused)
	c.deliver(dq(3))
	require.True(t, c.paused, "at MaxInflightRequestsPerConn the conn is paused")
	require.False(t, other.paused, "other connections are not")
	// Answers drain the queue in order and resume the conn.
	for i := 0; i < 3; i++ {
		require.NotEmpty(t, md.pending)
		md.answerOldest(describeQuorumRequest(2).ResponseKind())
		e.run()
	}
	require.False(t, c.paused)
	require.Len(t, c.sent, 3)
	require.Zero(t, b.inflightBytes, "every answered request left the budget")

	// The byte budget pauses whichever connection delivers past it.
	b.cfg.MaxInflightRequestBytes = 10
	c.deliver(dq(4))
	require.True(t, c.paused)
	other.deliver(dq(5))
	require.True(t, other.paused)
	for len(md.pending) > 0 {
		md.answerOldest(describeQuorumRequest(2).ResponseKind())
		e.run()
	}
	require.False(t, c.paused)
	require.False(t, other.paused)
}

func TestMetadataListsOfflineReplicas(t *testing.T) {
	img := imageWithBrokers(t,
		meta.RegisterBrokerRecord{BrokerID: 3},
		meta.RegisterBrokerRecord{BrokerID: 5, Fenced: true},
	)
	d := img.NewDelta()
	id := meta.UUID{1}
	require.NoError(t, d.Replay(&meta.TopicRecord{Name: "t", TopicID: id}))
	require.NoError(t, d.Replay(&meta.PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{3}, ISR: []int32{3}, Leader: 3}))
	require.NoError(t, d.Replay(&meta.PartitionRecord{TopicID: id, Partition: 1, Replicas: []int32{5}, ISR: []int32{5}, Leader: meta.NoLeader}))
	require.NoError(t, d.Replay(&meta.PartitionRecord{TopicID: id, Partition: 2, Replicas: []int32{9}, ISR: []int32{9}, Leader: meta.NoLeader}))
	img = d.Apply(meta.Position{Offset: 10, Epoch: 1})
	resp := metadataFrom(t, img, 12)
	require.Len(t, resp.Topics, 1)
	parts := resp.Topics[0].Partitions
	require.Empty(t, parts[0].OfflineReplicas)
	require.Equal(t, []int32{5}, parts[1].OfflineReplicas, "a fenced broker's replica is offline")
	require.Equal(t, []int32{9}, parts[2].OfflineReplicas, "so is an unregistered one's")
	require.Equal(t, kerr.LeaderNotAvailable.Code, parts[1].ErrorCode)
}
