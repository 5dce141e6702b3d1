package controller

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createPartitionsReq(validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 3
	req.ValidateOnly = validateOnly
	req.Topics = topics
	return req
}

func growTo(topic string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = topic, count
	if assignment != nil {
		t.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{}
		for _, rs := range assignment {
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = rs
			t.Assignment = append(t.Assignment, a)
		}
	}
	return t
}

func TestCreatePartitions(t *testing.T) {
	cases := []struct {
		name         string
		setup        func(h *harness)
		validateOnly bool
		topics       []kmsg.CreatePartitionsRequestTopic
		want         []*kerr.Error
		counts       map[string]int
	}{
		{name: "grow", topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 5)},
			want: []*kerr.Error{nil}, counts: map[string]int{"t": 5}},
		{name: "same count", topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 2)},
			want: []*kerr.Error{kerr.InvalidPartitions}, counts: map[string]int{"t": 2}},
		{name: "shrink", topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 1)},
			want: []*kerr.Error{kerr.InvalidPartitions}, counts: map[string]int{"t": 2}},
		{name: "unknown topic", topics: []kmsg.CreatePartitionsRequestTopic{growTo("nope", 3)},
			want: []*kerr.Error{kerr.UnknownTopicOrPartition}},
		{name: "manual", topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 4, []int32{3, 1}, []int32{2, 3})},
			want: []*kerr.Error{nil}, counts: map[string]int{"t": 4}},
		{name: "manual count mismatch", topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 4, []int32{3, 1})},
			want: []*kerr.Error{kerr.InvalidReplicaAssignment}, counts: map[string]int{"t": 2}},
		{name: "manual empty", topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 3, []int32{})},
			want: []*kerr.Error{kerr.InvalidReplicaAssignment}},
		{name: "manual wrong rf", topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 3, []int32{1, 2, 3})},
			want: []*kerr.Error{kerr.InvalidReplicaAssignment}},
		{name: "manual unregistered", topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 3, []int32{1, 7})},
			want: []*kerr.Error{kerr.InvalidReplicaAssignment}},
		{name: "manual duplicate", topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 3, []int32{1, 1})},
			want: []*kerr.Error{kerr.InvalidReplicaAssignment}},
		{name: "rf above unfenced", setup: func(h *harness) {
			h.do(heartbeatReq(2, h.epochs[2], h.committed, true, false))
			h.do(heartbeatReq(3, h.epochs[3], h.committed, true, false))
		}, topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 3)}, want: []*kerr.Error{kerr.InvalidReplicationFactor}},
		{name: "duplicate", topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 3), growTo("t", 4)},
			want: []*kerr.Error{kerr.InvalidRequest}, counts: map[string]int{"t": 2}},
		{name: "validate only", validateOnly: true, topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 9)},
			want: []*kerr.Error{nil}, counts: map[string]int{"t": 2}},
		{name: "several", topics: []kmsg.CreatePartitionsRequestTopic{growTo("t", 3), growTo("u", 1), growTo("u2", 2)},
			want: []*kerr.Error{nil, kerr.InvalidPartitions, kerr.UnknownTopicOrPartition}, counts: map[string]int{"t": 3, "u": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newCluster(t, Config{}, 3)
			h.mustCreate(topicSpec{name: "t", partitions: 2, rf: 2}, topicSpec{name: "u", partitions: 1, rf: 1})
			if tc.setup != nil {
				tc.setup(h)
			}
			resp := h.do(createPartitionsReq(tc.validateOnly, tc.topics...)).(*kmsg.CreatePartitionsResponse)
			require.Len(t, resp.Topics, len(tc.want))
			for i, w := range tc.want {
				require.Equal(t, codeOf(w), resp.Topics[i].ErrorCode, "%s: %s", resp.Topics[i].Topic, errName(resp.Topics[i].ErrorCode))
				if w != nil {
					require.NotNil(t, resp.Topics[i].ErrorMessage)
				}
			}
			img := h.c.CommittedImage()
			for name, n := range tc.counts {
				topic, ok := img.TopicByName(name)
				require.True(t, ok)
				require.Equal(t, n, topic.NumPartitions(), name)
				for p := range topic.Partitions() {
					require.Len(t, p.Replicas, map[string]int{"t": 2, "u": 1}[name], "%s-%d keeps the replication factor", name, p.ID)
					require.Equal(t, p.Replicas[0], p.Leader)
				}
			}
		})
	}
}

// alterReq builds an AlterPartition request for one partition.
func alterReq(version int16, broker int32, epoch int64, topic string, id [16]byte, partition, leaderEpoch, partitionEpoch int32, isr ...int32) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = version
	req.BrokerID, req.BrokerEpoch = broker, epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	p := kmsg.NewAlterPartitionRequestTopicPartition()
	p.Partition, p.LeaderEpoch, p.PartitionEpoch = partition, leaderEpoch, partitionEpoch
	p.NewISR = isr
	for _, b := range isr {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = b, -1
		p.NewEpochISR = append(p.NewEpochISR, e)
	}
	rt.Partitions = append(rt.Partitions, p)
	req.Topics = append(req.Topics, rt)
	return req
}

func TestAlterPartition(t *testing.T) {
	type args struct {
		version                   int16
		broker                    int32
		staleBroker               bool
		topic                     string
		partition                 int32
		leaderEpoch, partitionEps int32
		isr                       []int32
	}
	cases := []struct {
		name     string
		setup    func(h *harness)
		args     args
		topLevel *kerr.Error
		want     *kerr.Error
		isr      []int32
	}{
		{name: "shrink v3", args: args{version: 3, broker: 1, topic: "t", isr: []int32{1, 2}}, isr: []int32{1, 2}},
		{name: "shrink v0 by name", args: args{version: 0, broker: 1, topic: "t", isr: []int32{1}}, isr: []int32{1}},
		{name: "shrink v2 by id", args: args{version: 2, broker: 1, topic: "t", isr: []int32{1, 3}}, isr: []int32{1, 3}},
		{name: "no change", args: args{version: 3, broker: 1, topic: "t", isr: []int32{1, 2, 3}}, isr: []int32{1, 2, 3}},
		{name: "stale broker epoch", args: args{version: 3, broker: 1, staleBroker: true, topic: "t", isr: []int32{1}}, topLevel: kerr.StaleBrokerEpoch},
		{name: "unknown broker", args: args{version: 3, broker: 9, topic: "t", isr: []int32{1}}, topLevel: kerr.StaleBrokerEpoch},
		{name: "unknown topic id", args: args{version: 3, broker: 1, topic: "zz", isr: []int32{1}}, want: kerr.UnknownTopicID},
		{name: "unknown topic name", args: args{version: 1, broker: 1, topic: "zz", isr: []int32{1}}, want: kerr.UnknownTopicOrPartition},
		{name: "unknown partition", args: args{version: 3, broker: 1, topic: "t", partition: 5, isr: []int32{1}}, want: kerr.UnknownTopicOrPartition},
		{name: "not leader", args: args{version: 3, broker: 2, topic: "t", isr: []int32{1, 2}}, want: kerr.InvalidRequest},
		{name: "future leader epoch", args: args{version: 3, broker: 1, topic: "t", leaderEpoch: 1, isr: []int32{1}}, want: kerr.NotController},
		{name: "future partition epoch", args: args{version: 3, broker: 1, topic: "t", partitionEps: 1, isr: []int32{1}}, want: kerr.NotController},
		{name: "stale partition epoch", setup: func(h *harness) {
			h.do(alterReq(3, 1, h.epochs[1], "t", h.topicID("t"), 0, 0, 0, 1, 2))
		}, args: args{version: 3, broker: 1, topic: "t", isr: []int32{1}}, want: kerr.InvalidUpdateVersion, isr: []int32{1, 2}},
		{name: "leader missing, not a resignation", args: args{version: 3, broker: 1, topic: "t", isr: []int32{3}}, want: kerr.InvalidRequest},
		{name: "not a replica", args: args{version: 3, broker: 1, topic: "t", isr: []int32{1, 4}}, want: kerr.InvalidRequest},
		{name: "duplicate member", args: args{version: 3, broker: 1, topic: "t", isr: []int32{1, 1}}, want: kerr.InvalidRequest},
		{name: "fenced member", setup: func(h *harness) {
			h.do(alterReq(3, 1, h.epochs[1], "t", h.topicID("t"), 0, 0, 0, 1, 2))
			h.do(heartbeatReq(3, h.epochs[3], h.committed, true, false))
		}, args: args{version: 3, broker: 1, topic: "t", partitionEps: 1, isr: []int32{1, 2, 3}}, want: kerr.IneligibleReplica, isr: []int32{1, 2}},
		{name: "fenced member v0", setup: func(h *harness) {
			h.do(alterReq(3, 1, h.epochs[1], "t", h.topicID("t"), 0, 0, 0, 1, 2))
			h.do(heartbeatReq(3, h.epochs[3], h.committed, true, false))
		}, args: args{version: 0, broker: 1, topic: "t", partitionEps: 1, isr: []int32{1, 2, 3}}, want: kerr.OperationNotAttempted, isr: []int32{1, 2}},
		{name: "shutting down member", setup: func(h *harness) {
			h.mustCreate(topicSpec{name: "led3", assignment: [][]int32{{3}}, partitions: -1, rf: -1})
			h.do(alterReq(3, 1, h.epochs[1], "t", h.topicID("t"), 0, 0, 0, 1, 2))
			h.do(heartbeatReq(3, h.epochs[3], h.committed, false, true))
		}, args: args{version: 3, broker: 1, topic: "t", partitionEps: 1, isr: []int32{1, 2, 3}}, want: kerr.IneligibleReplica, isr: []int32{1, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newCluster(t, Config{}, 3)
			h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2, 3}}, partitions: -1, rf: -1})
			if tc.setup != nil {
				tc.setup(h)
			}
			a := tc.args
			epoch := h.epochs[a.broker]
			if a.staleBroker {
				epoch += 100
			}
			resp := h.do(alterReq(a.version, a.broker, epoch, a.topic, h.topicID(a.topic), a.partition, a.leaderEpoch, a.partitionEps, a.isr...)).(*kmsg.AlterPartitionResponse)
			require.Equal(t, codeOf(tc.topLevel), resp.ErrorCode, errName(resp.ErrorCode))
			if tc.topLevel != nil {
				return
			}
			p := resp.Topics[0].Partitions[0]
			require.Equal(t, codeOf(tc.want), p.ErrorCode, errName(p.ErrorCode))
			if tc.want == nil {
				part := h.partition("t", 0)
				require.Equal(t, part.ISR, p.ISR)
				require.Equal(t, part.PartitionEpoch, p.PartitionEpoch)
				require.Equal(t, part.LeaderEpoch, p.LeaderEpoch)
				require.Equal(t, part.Leader, p.LeaderID)
			}
			if tc.isr != nil {
				require.Equal(t, tc.isr, h.partition("t", 0).ISR)
			}
		})
	}
}

func TestAlterPartitionEpochs(t *testing.T) {
	h := newCluster(t, Config{}, 3)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2, 3}}, partitions: -1, rf: -1})
	id := h.topicID("t")
	// Each accepted change bumps the partition epoch by one and leaves the
	// leader epoch; a rejected one changes nothing.
	for i, isr := range [][]int32{{1, 2}, {1}, {1, 3}, {1, 2, 3}} {
		resp := h.do(alterReq(3, 1, h.epochs[1], "t", id, 0, 0, int32(i), isr...)).(*kmsg.AlterPartitionResponse)
		p := resp.Topics[0].Partitions[0]
		require.Equal(t, int16(0), p.ErrorCode, errName(p.ErrorCode))
		require.Equal(t, int32(i+1), p.PartitionEpoch)
		require.Zero(t, p.LeaderEpoch)
	}
	// The same partition twice in one request: the second is refused.
	req := alterReq(3, 1, h.epochs[1], "t", id, 0, 0, 4, 1, 2)
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, req.Topics[0].Partitions[0])
	resp := h.do(req).(*kmsg.AlterPartitionResponse)
	require.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.InvalidRequest.Code, resp.Topics[0].Partitions[1].ErrorCode)
	// A leader recovery state of RECOVERING with an ISR is refused (a
	// damaged replica's request, damage.go, has an empty one).
	req = alterReq(3, 1, h.epochs[1], "t", id, 0, 0, 5, 1)
	req.Topics[0].Partitions[0].LeaderRecoveryState = 1
	resp = h.do(req).(*kmsg.AlterPartitionResponse)
	require.Equal(t, kerr.InvalidRequest.Code, resp.Topics[0].Partitions[0].ErrorCode)
}

// topicID returns a topic's id from the speculative image (zero if none).
func (h *harness) topicID(name string) [16]byte {
	if t, ok := h.c.SpeculativeImage().TopicByName(name); ok {
		return t.ID()
	}
	return [16]byte{}
}

func TestDuplicateID(t *testing.T) {
	long := make([]int32, 100)
	for i := range long {
		long[i] = int32(i * 7)
	}
	_, dup := duplicateID(long)
	require.False(t, dup)
	long[99] = 14
	id, dup := duplicateID(long)
	require.True(t, dup)
	require.Equal(t, int32(14), id)
	_, dup = duplicateID([]int32{3, 1, 2})
	require.False(t, dup)
	id, dup = duplicateID([]int32{3, 1, 3})
	require.True(t, dup)
	require.Equal(t, int32(3), id)
}
