package broker

import (
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

func (m *fakeMetadata) Image() *meta.Image      { return m.img }
func (m *fakeMetadata) ActiveController() int32 { return 7 }
func (m *fakeMetadata) Submit(req kmsg.Request, done func(kmsg.Response, error)) {
	m.reqs = append(m.reqs, req)
	m.pending = append(m.pending, done)
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

	resp := create.ResponseKind().(*kmsg.CreateTopicsResponse)
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.Topic, rt.ErrorCode = "t1", kerr.TopicAlreadyExists.Code
	resp.Topics = append(resp.Topics, rt)
	md.pending[0](resp, nil)
	e.run()
	require.Len(t, c.sent, 2, "both answered, in order")

	got := kmsg.NewPtrCreateTopicsResponse()
	got.Version = 7
	decodeResponse(t, c.sent[0], 1, got)
	require.Equal(t, kerr.TopicAlreadyExists.Code, got.Topics[0].ErrorCode)
	mr := kmsg.NewPtrMetadataResponse()
	mr.Version = 12
	decodeResponse(t, c.sent[1], 2, mr)
	require.Equal(t, int32(7), mr.ControllerID)
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
	got := kmsg.NewPtrDeleteTopicsResponse()
	got.Version = 6
	decodeResponse(t, c.sent[0], 9, got)
	require.Equal(t, kerr.NotController.Code, got.Topics[0].ErrorCode)
}
