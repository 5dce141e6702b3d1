package controller

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/meta"
)

// everyRequest returns one request of each kind the controller serves,
// naming a topic, a resource or a partition where the kind has them.
func everyRequest() []kmsg.Request {
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	name := "t"
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = &name
	del.Topics = []kmsg.DeleteTopicsRequestTopic{dt}
	delV0 := kmsg.NewPtrDeleteTopicsRequest()
	delV0.TopicNames = []string{"t", "u"}
	alterCfg := kmsg.NewPtrAlterConfigsRequest()
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	alterCfg.Resources = []kmsg.AlterConfigsRequestResource{res}
	return []kmsg.Request{
		registration(1, "a"),
		heartbeatReq(1, 1, 1, false, false),
		createTopicsReq(false, topicSpec{name: "t", partitions: 1, rf: 1}, topicSpec{name: "u", partitions: 1, rf: 1}),
		del, delV0,
		createPartitionsReq(false, growTo("t", 3)),
		alterReq(3, 1, 1, "t", [16]byte{1}, 0, 0, 0, 1),
		kmsg.NewPtrAllocateProducerIDsRequest(),
		incrementalReq(false, kmsg.ConfigResourceTypeTopic, "t", set("retention.ms", "1")),
		alterCfg,
	}
}

// codesOf lists the error codes of a response's topics or resources.
func codesOf[T any](xs []T, code func(T) int16) []int16 {
	var out []int16
	for _, x := range xs {
		out = append(out, code(x))
	}
	return out
}

// errorCodes lists every error code of a response, with a label each.
func errorCodes(resp kmsg.Response) []int16 {
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		return []int16{r.ErrorCode}
	case *kmsg.BrokerHeartbeatResponse:
		return []int16{r.ErrorCode}
	case *kmsg.CreateTopicsResponse:
		return codesOf(r.Topics, func(t kmsg.CreateTopicsResponseTopic) int16 { return t.ErrorCode })
	case *kmsg.DeleteTopicsResponse:
		return codesOf(r.Topics, func(t kmsg.DeleteTopicsResponseTopic) int16 { return t.ErrorCode })
	case *kmsg.CreatePartitionsResponse:
		return codesOf(r.Topics, func(t kmsg.CreatePartitionsResponseTopic) int16 { return t.ErrorCode })
	case *kmsg.AlterPartitionResponse:
		return []int16{r.ErrorCode}
	case *kmsg.AllocateProducerIDsResponse:
		return []int16{r.ErrorCode}
	case *kmsg.IncrementalAlterConfigsResponse:
		return codesOf(r.Resources, func(res kmsg.IncrementalAlterConfigsResponseResource) int16 { return res.ErrorCode })
	case *kmsg.AlterConfigsResponse:
		return codesOf(r.Resources, func(res kmsg.AlterConfigsResponseResource) int16 { return res.ErrorCode })
	}
	return nil
}

func TestNotControllerAnswersEverything(t *testing.T) {
	for _, req := range everyRequest() {
		t.Run(kmsg.NameForKey(req.Key()), func(t *testing.T) {
			c := New(Config{}, rand.New(rand.NewPCG(1, 2)))
			ticket, err := c.Handle(0, req)
			require.NoError(t, err)
			rd := c.Ready()
			require.Empty(t, rd.Proposals)
			require.Len(t, rd.Responses, 1)
			require.Equal(t, ticket, rd.Responses[0].Ticket)
			resp := rd.Responses[0].Msg
			require.Equal(t, req.Key(), resp.Key())
			require.Equal(t, req.GetVersion(), resp.GetVersion())
			codes := errorCodes(resp)
			require.NotEmpty(t, codes)
			for _, code := range codes {
				require.Equal(t, kerr.NotController.Code, code)
			}
			// The response encodes at the request's version.
			require.NotEmpty(t, resp.AppendTo(nil))
		})
	}
}

func TestUnsupportedRequest(t *testing.T) {
	c := New(Config{}, rand.New(rand.NewPCG(1, 2)))
	_, err := c.Handle(0, kmsg.NewPtrMetadataRequest())
	require.True(t, errors.Is(err, ErrUnsupportedRequest))
	require.False(t, Supports(kmsg.NewPtrMetadataRequest()))
	require.False(t, c.HasReady())
}

func TestResignAnswersWaitingRequests(t *testing.T) {
	h := newCluster(t, Config{}, 1)
	t1 := h.handle(createTopicsReq(false, topicSpec{name: "a", partitions: 1, rf: 1}))
	t2 := h.handle(heartbeatReq(1, h.epochs[1], h.committed, false, false))
	_, ok := h.response(t1)
	require.False(t, ok, "no response before the commit")
	_, ok = h.response(t2)
	require.False(t, ok, "a decision that read pending state waits for it")
	h.resign(true)
	for _, tk := range []Ticket{t1, t2} {
		resp, ok := h.response(tk)
		require.True(t, ok)
		for _, code := range errorCodes(resp) {
			require.Equal(t, kerr.NotController.Code, code)
		}
	}
	require.False(t, h.c.IsLeader())
	require.Equal(t, h.c.CommittedImage(), h.c.SpeculativeImage())
	require.Zero(t, h.c.PendingRecords())
	// Resigning twice is harmless.
	h.c.Resign()
	require.False(t, h.c.HasReady())
}

func TestResignDropsUntakenProposals(t *testing.T) {
	h := newCluster(t, Config{}, 1)
	_, err := h.c.Handle(h.now, createTopicsReq(false, topicSpec{name: "a", partitions: 1, rf: 1}))
	require.NoError(t, err)
	h.c.Resign()
	rd := h.c.Ready()
	require.Empty(t, rd.Proposals)
	require.Len(t, rd.Responses, 1)
}

func TestPendingBound(t *testing.T) {
	h := newCluster(t, Config{MaxPendingRecords: 3}, 1)
	h.handle(createTopicsReq(false, topicSpec{name: "a", partitions: 2, rf: 1}))
	require.Equal(t, 3, h.c.PendingRecords())
	tk := h.handle(createTopicsReq(false, topicSpec{name: "b", partitions: 1, rf: 1}))
	resp, ok := h.response(tk)
	require.True(t, ok, "refused at once")
	require.Equal(t, kerr.RequestTimedOut.Code, resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	// Heartbeats still go through, and Tick does not fence over the bound.
	tk = h.handle(heartbeatReq(1, h.epochs[1], h.committed, false, false))
	h.tick(time.Hour)
	require.Empty(t, h.takeProposalsAfterSetup())
	h.commitAll()
	resp, _ = h.response(tk)
	require.Equal(t, int16(0), resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode)
	require.Zero(t, h.c.PendingRecords())
}

func TestResponsesWaitForCommit(t *testing.T) {
	h := newCluster(t, Config{}, 1)
	t1 := h.handle(createTopicsReq(false, topicSpec{name: "a", partitions: 2, rf: 1}))
	first := h.committed + 1
	// A failed create that read the pending topic waits for it too.
	t2 := h.handle(createTopicsReq(false, topicSpec{name: "a", partitions: 1, rf: 1}))
	h.commit(first + 1)
	_, ok := h.response(t1)
	require.False(t, ok, "the batch is committed only in part")
	require.Equal(t, first-1, h.c.CommittedImage().Position().Offset)
	h.commit(first + 2)
	_, ok = h.response(t1)
	require.True(t, ok)
	resp, ok := h.response(t2)
	require.True(t, ok)
	require.Equal(t, kerr.TopicAlreadyExists.Code, resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	// With nothing pending, a response is ready at once.
	t3 := h.handle(createTopicsReq(false, topicSpec{name: "a", partitions: 1, rf: 1}))
	_, ok = h.response(t3)
	require.True(t, ok)
}

func TestProposalValuesEncodeRecords(t *testing.T) {
	h := newCluster(t, Config{}, 3)
	h.mustCreate(topicSpec{name: "a", partitions: 4, rf: 3, configs: map[string]string{"retention.ms": "9"}})
	for _, p := range h.takeProposals() {
		require.Equal(t, p.LastOffset-p.FirstOffset+1, int64(len(p.Records)))
		for i, r := range p.Records {
			require.Equal(t, meta.EncodeRecord(nil, r), p.Values[i])
		}
	}
}

func TestFencingSplitsLargeWork(t *testing.T) {
	h := newCluster(t, Config{MaxRecordsPerBatch: 4}, 2)
	for _, name := range []string{"a", "b", "c"} {
		h.mustCreate(topicSpec{name: name, partitions: 3, rf: 2})
	}
	h.takeProposals()
	h.do(heartbeatReq(1, h.epochs[1], h.committed, true, false))
	ps := h.takeProposals()
	require.Greater(t, len(ps), 1, "9 partition changes and a fence do not fit one batch of 4")
	for i, p := range ps {
		require.LessOrEqual(t, len(p.Records), 4)
		for j, r := range p.Records {
			_, fence := r.(*meta.FenceBrokerRecord)
			require.Equal(t, i == len(ps)-1 && j == len(p.Records)-1, fence, "the fence record comes last")
		}
	}
	for topic := range h.c.CommittedImage().Topics() {
		for p := range topic.Partitions() {
			require.Equal(t, int32(2), p.Leader)
			require.Equal(t, []int32{2}, p.ISR)
		}
	}
}

func TestFollowerCommitted(t *testing.T) {
	c := New(Config{}, rand.New(rand.NewPCG(1, 2)))
	rec := &meta.RegisterBrokerRecord{BrokerID: 1, IncarnationID: meta.UUID{1}, BrokerEpoch: 1, Fenced: true}
	require.NoError(t, c.Committed(meta.Position{Offset: 0, Epoch: 1}, nil))
	require.Equal(t, int64(0), c.CommittedImage().Position().Offset)
	require.NoError(t, c.Committed(meta.Position{Offset: 1, Epoch: 1}, []meta.Record{rec}))
	_, ok := c.CommittedImage().Broker(1)
	require.True(t, ok)
	// An invalid committed record is an error and changes nothing.
	before := c.CommittedImage()
	err := c.Committed(meta.Position{Offset: 2, Epoch: 1}, []meta.Record{&meta.FenceBrokerRecord{BrokerID: 9, BrokerEpoch: 1}})
	require.ErrorIs(t, err, meta.ErrUnknownBroker)
	require.Same(t, before, c.CommittedImage())

	img := meta.Empty()
	c.LoadImage(img)
	require.Same(t, img, c.CommittedImage())
}

func TestTimeMustNotGoBackwards(t *testing.T) {
	c := New(Config{}, rand.New(rand.NewPCG(1, 2)))
	c.Tick(5 * time.Second)
	require.PanicsWithValue(t, assert.Violation{Msg: "controller monotonic time moved backwards: 5000000000 -> 1000000000"}, func() {
		c.Tick(time.Second)
	})
}

func TestLeaderCommitMismatchIsAViolation(t *testing.T) {
	h := newCluster(t, Config{}, 1)
	h.handle(createTopicsReq(false, topicSpec{name: "a", partitions: 1, rf: 1}))
	next := h.committed + 1
	require.Panics(t, func() {
		_ = h.c.Committed(meta.Position{Offset: next, Epoch: h.epoch}, []meta.Record{&meta.NoOpRecord{}})
	})
}

func TestErrorResponseCoversEveryKind(t *testing.T) {
	for _, req := range everyRequest() {
		resp := ErrorResponse(req, kerr.PolicyViolation, "no")
		codes := errorCodes(resp)
		require.NotEmpty(t, codes, "%T", req)
		for _, c := range codes {
			require.Equal(t, kerr.PolicyViolation.Code, c)
		}
	}
	// Per-item responses echo the request's items.
	resp := ErrorResponse(everyRequest()[4], kerr.PolicyViolation, "no").(*kmsg.DeleteTopicsResponse)
	require.Equal(t, "t", *resp.Topics[0].Topic)
	require.Equal(t, "u", *resp.Topics[1].Topic)
}
