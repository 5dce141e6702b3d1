package controller

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/meta"
)

func TestCreateTopics(t *testing.T) {
	type want struct {
		topic string
		err   *kerr.Error
	}
	cases := []struct {
		name    string
		cfg     Config
		setup   func(h *harness)
		topics  []topicSpec
		edit    func(req *kmsg.CreateTopicsRequest)
		want    []want
		records int
	}{
		{name: "ok", topics: []topicSpec{{name: "t", partitions: 3, rf: 2}},
			want: []want{{"t", nil}}, records: 4},
		{name: "defaults", topics: []topicSpec{{name: "t", partitions: -1, rf: -1}},
			want: []want{{"t", nil}}, records: 2},
		{name: "configured defaults", cfg: Config{DefaultNumPartitions: 4, DefaultReplicationFactor: 3},
			topics: []topicSpec{{name: "t", partitions: -1, rf: -1}}, want: []want{{"t", nil}}, records: 5},
		{name: "empty name", topics: []topicSpec{{name: "", partitions: 1, rf: 1}},
			want: []want{{"", kerr.InvalidTopicException}}},
		{name: "dot", topics: []topicSpec{{name: ".", partitions: 1, rf: 1}},
			want: []want{{".", kerr.InvalidTopicException}}},
		{name: "dot dot", topics: []topicSpec{{name: "..", partitions: 1, rf: 1}},
			want: []want{{"..", kerr.InvalidTopicException}}},
		{name: "too long", topics: []topicSpec{{name: strings.Repeat("x", 250), partitions: 1, rf: 1}},
			want: []want{{strings.Repeat("x", 250), kerr.InvalidTopicException}}},
		{name: "longest", topics: []topicSpec{{name: strings.Repeat("x", 249), partitions: 1, rf: 1}},
			want: []want{{strings.Repeat("x", 249), nil}}, records: 2},
		{name: "bad char", topics: []topicSpec{{name: "a b", partitions: 1, rf: 1}},
			want: []want{{"a b", kerr.InvalidTopicException}}},
		{name: "metadata topic", topics: []topicSpec{{name: "__cluster_metadata", partitions: 1, rf: 1}},
			want: []want{{"__cluster_metadata", kerr.InvalidTopicException}}},
		{name: "exists", setup: func(h *harness) { h.mustCreate(topicSpec{name: "t", partitions: 1, rf: 1}) },
			topics: []topicSpec{{name: "t", partitions: 1, rf: 1}}, want: []want{{"t", kerr.TopicAlreadyExists}}},
		{name: "collision", setup: func(h *harness) { h.mustCreate(topicSpec{name: "a.b", partitions: 1, rf: 1}) },
			topics: []topicSpec{{name: "a_b", partitions: 1, rf: 1}}, want: []want{{"a_b", kerr.InvalidTopicException}}},
		{name: "collision in request", topics: []topicSpec{{name: "a.b", partitions: 1, rf: 1}, {name: "a_b", partitions: 1, rf: 1}},
			want: []want{{"a.b", nil}, {"a_b", kerr.InvalidTopicException}}, records: 2},
		{name: "zero partitions", topics: []topicSpec{{name: "t", partitions: 0, rf: 1}},
			want: []want{{"t", kerr.InvalidPartitions}}},
		{name: "negative partitions", topics: []topicSpec{{name: "t", partitions: -2, rf: 1}},
			want: []want{{"t", kerr.InvalidPartitions}}},
		{name: "zero rf", topics: []topicSpec{{name: "t", partitions: 1, rf: 0}},
			want: []want{{"t", kerr.InvalidReplicationFactor}}},
		{name: "rf above brokers", topics: []topicSpec{{name: "t", partitions: 1, rf: 4}},
			want: []want{{"t", kerr.InvalidReplicationFactor}}},
		{name: "rf above unfenced brokers", setup: func(h *harness) { h.do(heartbeatReq(3, h.epochs[3], h.committed, true, false)) },
			topics: []topicSpec{{name: "t", partitions: 1, rf: 3}}, want: []want{{"t", kerr.InvalidReplicationFactor}}},
		{name: "manual", topics: []topicSpec{{name: "t", assignment: [][]int32{{1, 2}, {2, 3}}, partitions: -1, rf: -1}},
			want: []want{{"t", nil}}, records: 3},
		{name: "manual with counts", topics: []topicSpec{{name: "t", assignment: [][]int32{{1, 2}}, partitions: 1, rf: -1}},
			want: []want{{"t", kerr.InvalidRequest}}},
		{name: "manual empty list", topics: []topicSpec{{name: "t", assignment: [][]int32{{}}, partitions: -1, rf: -1}},
			want: []want{{"t", kerr.InvalidReplicaAssignment}}},
		{name: "manual duplicate broker", topics: []topicSpec{{name: "t", assignment: [][]int32{{1, 1}}, partitions: -1, rf: -1}},
			want: []want{{"t", kerr.InvalidReplicaAssignment}}},
		{name: "manual unregistered broker", topics: []topicSpec{{name: "t", assignment: [][]int32{{1, 9}}, partitions: -1, rf: -1}},
			want: []want{{"t", kerr.InvalidReplicaAssignment}}},
		{name: "manual inconsistent rf", topics: []topicSpec{{name: "t", assignment: [][]int32{{1, 2}, {3}}, partitions: -1, rf: -1}},
			want: []want{{"t", kerr.InvalidReplicaAssignment}}},
		{name: "manual not consecutive", topics: []topicSpec{{name: "t", partitions: -1, rf: -1}},
			edit: func(req *kmsg.CreateTopicsRequest) {
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = 1, []int32{1}
				req.Topics[0].ReplicaAssignment = append(req.Topics[0].ReplicaAssignment, a)
			},
			want: []want{{"t", kerr.InvalidReplicaAssignment}}},
		{name: "manual twice", topics: []topicSpec{{name: "t", partitions: -1, rf: -1}},
			edit: func(req *kmsg.CreateTopicsRequest) {
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = 0, []int32{1}
				req.Topics[0].ReplicaAssignment = append(req.Topics[0].ReplicaAssignment, a, a)
			},
			want: []want{{"t", kerr.InvalidReplicaAssignment}}},
		{name: "manual all fenced", setup: func(h *harness) { h.do(heartbeatReq(3, h.epochs[3], h.committed, true, false)) },
			topics: []topicSpec{{name: "t", assignment: [][]int32{{3}}, partitions: -1, rf: -1}},
			want:   []want{{"t", kerr.InvalidReplicaAssignment}}},
		{name: "manual some fenced", setup: func(h *harness) { h.do(heartbeatReq(3, h.epochs[3], h.committed, true, false)) },
			topics: []topicSpec{{name: "t", assignment: [][]int32{{3, 1}}, partitions: -1, rf: -1}},
			want:   []want{{"t", nil}}, records: 2},
		{name: "config ok", topics: []topicSpec{{name: "t", partitions: 1, rf: 1, configs: map[string]string{"retention.ms": "1000", "cleanup.policy": "compact,delete"}}},
			want: []want{{"t", nil}}, records: 4},
		{name: "config unknown", topics: []topicSpec{{name: "t", partitions: 1, rf: 1, configs: map[string]string{"retention.weeks": "1"}}},
			want: []want{{"t", kerr.InvalidConfig}}},
		{name: "config invalid", topics: []topicSpec{{name: "t", partitions: 1, rf: 1, configs: map[string]string{"min.insync.replicas": "0"}}},
			want: []want{{"t", kerr.InvalidConfig}}},
		{name: "config null", topics: []topicSpec{{name: "t", partitions: 1, rf: 1}},
			edit: func(req *kmsg.CreateTopicsRequest) {
				cfg := kmsg.NewCreateTopicsRequestTopicConfig()
				cfg.Name = "retention.ms"
				req.Topics[0].Configs = append(req.Topics[0].Configs, cfg)
			},
			want: []want{{"t", kerr.InvalidRequest}}},
		{name: "config duplicate", topics: []topicSpec{{name: "t", partitions: 1, rf: 1, configs: map[string]string{"retention.ms": "1"}}},
			edit: func(req *kmsg.CreateTopicsRequest) {
				req.Topics[0].Configs = append(req.Topics[0].Configs, req.Topics[0].Configs[0])
			},
			want: []want{{"t", kerr.InvalidRequest}}},
		{name: "duplicate names", topics: []topicSpec{{name: "t", partitions: 1, rf: 1}, {name: "u", partitions: 1, rf: 1}, {name: "t", partitions: 2, rf: 1}},
			want: []want{{"t", kerr.InvalidRequest}, {"u", nil}}, records: 2},
		{name: "partitions above batch", cfg: Config{MaxRecordsPerBatch: 10}, topics: []topicSpec{{name: "t", partitions: 11, rf: 1}},
			want: []want{{"t", kerr.PolicyViolation}}},
		{name: "batch full", cfg: Config{MaxRecordsPerBatch: 10}, topics: []topicSpec{{name: "t", partitions: 5, rf: 1}, {name: "u", partitions: 5, rf: 1}, {name: "v", partitions: 3, rf: 1}},
			want: []want{{"t", nil}, {"u", kerr.PolicyViolation}, {"v", nil}}, records: 10},
		{name: "mixed", topics: []topicSpec{{name: "ok", partitions: 1, rf: 1}, {name: "bad!", partitions: 1, rf: 1}},
			want: []want{{"ok", nil}, {"bad!", kerr.InvalidTopicException}}, records: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newCluster(t, tc.cfg, 3)
			if tc.setup != nil {
				tc.setup(h)
			}
			h.takeProposals()
			req := createTopicsReq(false, tc.topics...)
			if tc.edit != nil {
				tc.edit(req)
			}
			resp := h.do(req).(*kmsg.CreateTopicsResponse)
			require.Len(t, resp.Topics, len(tc.want))
			for i, w := range tc.want {
				rt := resp.Topics[i]
				require.Equal(t, w.topic, rt.Topic)
				if w.err == nil {
					require.Equal(t, int16(0), rt.ErrorCode, "%s: %s", rt.Topic, errName(rt.ErrorCode))
					require.False(t, meta.UUID(rt.TopicID).IsZero())
					img, ok := h.c.CommittedImage().TopicByName(rt.Topic)
					require.True(t, ok)
					require.Equal(t, meta.UUID(rt.TopicID), img.ID())
					require.Equal(t, int32(img.NumPartitions()), rt.NumPartitions)
					require.Len(t, rt.Configs, len(config.TopicRows()))
					continue
				}
				require.Equal(t, w.err.Code, rt.ErrorCode, "%s: got %s", rt.Topic, errName(rt.ErrorCode))
				require.NotNil(t, rt.ErrorMessage)
				require.Equal(t, int32(-1), rt.NumPartitions)
			}
			n := 0
			for _, p := range h.takeProposals() {
				n += len(p.Records)
			}
			require.Equal(t, tc.records, n)
		})
	}
}

func TestCreateTopicsPlacementAndState(t *testing.T) {
	h := newCluster(t, Config{}, 5)
	h.mustCreate(topicSpec{name: "t", partitions: 10, rf: 3, configs: map[string]string{"retention.ms": "100"}})
	img := h.c.CommittedImage()
	topic, _ := img.TopicByName("t")
	leaders := map[int32]int{}
	for p := range topic.Partitions() {
		require.Len(t, p.Replicas, 3)
		require.Equal(t, p.Replicas, p.ISR)
		require.Equal(t, p.Replicas[0], p.Leader)
		require.Zero(t, p.LeaderEpoch)
		require.Zero(t, p.PartitionEpoch)
		leaders[p.Leader]++
	}
	// Round robin: 10 partitions over 5 brokers lead 2 each.
	for b := int32(1); b <= 5; b++ {
		require.Equal(t, 2, leaders[b], "broker %d", b)
	}
	v, ok := img.ConfigValue(topicResource("t"), "retention.ms")
	require.True(t, ok)
	require.Equal(t, "100", v)
}

func TestCreateTopicsResponseConfigs(t *testing.T) {
	h := newCluster(t, Config{}, 1)
	resp := h.do(createTopicsReq(false, topicSpec{name: "t", partitions: 1, rf: 1, configs: map[string]string{"retention.ms": "5"}})).(*kmsg.CreateTopicsResponse)
	cfgs := resp.Topics[0].Configs
	require.Len(t, cfgs, len(config.TopicRows()))
	for _, c := range cfgs {
		switch c.Name {
		case "retention.ms":
			require.Equal(t, "5", *c.Value)
			require.Equal(t, int8(kmsg.ConfigSourceDynamicTopicConfig), c.Source)
		case "segment.bytes":
			require.Equal(t, "1073741824", *c.Value)
			require.Equal(t, int8(kmsg.ConfigSourceDefaultConfig), c.Source)
		}
	}
}

func TestCreateTopicsValidateOnly(t *testing.T) {
	h := newCluster(t, Config{}, 3)
	h.takeProposals()
	resp := h.do(createTopicsReq(true, topicSpec{name: "t", partitions: 3, rf: 3}, topicSpec{name: "bad", partitions: 1, rf: 9})).(*kmsg.CreateTopicsResponse)
	require.Equal(t, int16(0), resp.Topics[0].ErrorCode)
	require.Equal(t, int32(3), resp.Topics[0].NumPartitions)
	require.Equal(t, kerr.InvalidReplicationFactor.Code, resp.Topics[1].ErrorCode)
	require.Empty(t, h.takeProposals())
	_, ok := h.c.SpeculativeImage().TopicByName("t")
	require.False(t, ok)
	// Creating it for real afterwards works (validate-only reserved nothing).
	h.mustCreate(topicSpec{name: "t", partitions: 3, rf: 3})
}

func TestCreateTopicsDeterministic(t *testing.T) {
	run := func() []Proposal {
		h := newCluster(t, Config{}, 4)
		h.takeProposals()
		h.mustCreate(topicSpec{name: "a", partitions: 7, rf: 3}, topicSpec{name: "b", partitions: 3, rf: 2})
		return h.takeProposals()
	}
	require.Equal(t, run(), run())
}

func TestDeleteTopics(t *testing.T) {
	name := func(s string) kmsg.DeleteTopicsRequestTopic {
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = &s
		return dt
	}
	byID := func(id meta.UUID) kmsg.DeleteTopicsRequestTopic {
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.TopicID = id
		return dt
	}
	cases := []struct {
		name    string
		cfg     Config
		entries func(ids map[string]meta.UUID) []kmsg.DeleteTopicsRequestTopic
		want    []*kerr.Error
		gone    []string
	}{
		{name: "by name", entries: func(map[string]meta.UUID) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{name("a")}
		},
			want: []*kerr.Error{nil}, gone: []string{"a"}},
		{name: "by id", entries: func(ids map[string]meta.UUID) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{byID(ids["b"])}
		}, want: []*kerr.Error{nil}, gone: []string{"b"}},
		{name: "unknown name", entries: func(map[string]meta.UUID) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{name("zz")}
		},
			want: []*kerr.Error{kerr.UnknownTopicOrPartition}},
		{name: "unknown id", entries: func(map[string]meta.UUID) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{byID(meta.UUID{1, 2, 3})}
		}, want: []*kerr.Error{kerr.UnknownTopicID}},
		{name: "name and id", entries: func(ids map[string]meta.UUID) []kmsg.DeleteTopicsRequestTopic {
			dt := name("a")
			dt.TopicID = ids["a"]
			return []kmsg.DeleteTopicsRequestTopic{dt}
		}, want: []*kerr.Error{kerr.InvalidRequest}},
		{name: "neither", entries: func(map[string]meta.UUID) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{kmsg.NewDeleteTopicsRequestTopic()}
		}, want: []*kerr.Error{kerr.InvalidRequest}},
		{name: "duplicate name", entries: func(map[string]meta.UUID) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{name("a"), name("a")}
		}, want: []*kerr.Error{kerr.InvalidRequest, kerr.InvalidRequest}},
		{name: "name then id of same topic", entries: func(ids map[string]meta.UUID) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{name("a"), byID(ids["a"])}
		}, want: []*kerr.Error{nil, kerr.UnknownTopicID}, gone: []string{"a"}},
		{name: "disabled", cfg: Config{TopicDeletionDisabled: true}, entries: func(map[string]meta.UUID) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{name("a")}
		}, want: []*kerr.Error{kerr.TopicDeletionDisabled}},
		{name: "several", entries: func(ids map[string]meta.UUID) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{name("a"), byID(ids["b"]), name("c")}
		}, want: []*kerr.Error{nil, nil, kerr.UnknownTopicOrPartition}, gone: []string{"a", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newCluster(t, tc.cfg, 1)
			h.mustCreate(topicSpec{name: "a", partitions: 2, rf: 1, configs: map[string]string{"retention.ms": "1"}}, topicSpec{name: "b", partitions: 1, rf: 1})
			ids := map[string]meta.UUID{}
			for tp := range h.c.CommittedImage().Topics() {
				ids[tp.Name()] = tp.ID()
			}
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.Version = 6
			req.Topics = tc.entries(ids)
			resp := h.do(req).(*kmsg.DeleteTopicsResponse)
			require.Len(t, resp.Topics, len(tc.want))
			for i, w := range tc.want {
				require.Equal(t, codeOf(w), resp.Topics[i].ErrorCode, "entry %d: %s", i, errName(resp.Topics[i].ErrorCode))
				if w == nil {
					require.NotNil(t, resp.Topics[i].Topic)
					require.Equal(t, ids[*resp.Topics[i].Topic], meta.UUID(resp.Topics[i].TopicID))
				}
			}
			img := h.c.CommittedImage()
			for _, g := range tc.gone {
				_, ok := img.TopicByName(g)
				require.False(t, ok, "%s still exists", g)
				require.Empty(t, img.Configs(topicResource(g)))
			}
			require.Equal(t, 2-len(tc.gone), img.NumTopics())
		})
	}
}

func TestDeleteTopicsVersion0(t *testing.T) {
	h := newCluster(t, Config{}, 1)
	h.mustCreate(topicSpec{name: "a", partitions: 1, rf: 1})
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 1
	req.TopicNames = []string{"a", "b"}
	resp := h.do(req).(*kmsg.DeleteTopicsResponse)
	require.Len(t, resp.Topics, 2)
	require.Equal(t, "a", *resp.Topics[0].Topic)
	require.Equal(t, int16(0), resp.Topics[0].ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[1].ErrorCode)
	require.Zero(t, h.c.CommittedImage().NumTopics())
}

func TestNewTopicIDs(t *testing.T) {
	h := newCluster(t, Config{}, 1)
	seen := map[meta.UUID]bool{}
	for range 2000 {
		id := h.c.newTopicID(nil)
		require.False(t, seen[id])
		require.False(t, strings.HasPrefix(id.String(), "-"))
		require.Equal(t, byte(0x40), id[6]&0xf0, "version 4")
		seen[id] = true
	}
}

// TestMaxReplicationFactor: with a bound configured, every way of asking
// for more replicas is refused with INVALID_REPLICATION_FACTOR and a
// message naming the bound; by default only the brokers bound it.
func TestMaxReplicationFactor(t *testing.T) {
	one := Config{MaxReplicationFactor: 1}
	cases := []struct {
		name string
		cfg  Config
		req  kmsg.Request
		want *kerr.Error
		msg  string
	}{
		{"rf 1", one, createTopicsReq(false, topicSpec{name: "t", partitions: 1, rf: 1}), nil, ""},
		{"rf 3", one, createTopicsReq(false, topicSpec{name: "t", partitions: 1, rf: 3}), kerr.InvalidReplicationFactor, "above this controller's bound"},
		{"rf 3 validate only", one, createTopicsReq(true, topicSpec{name: "t", partitions: 1, rf: 3}), kerr.InvalidReplicationFactor, "above this controller's bound"},
		{"default rf 2", Config{MaxReplicationFactor: 1, DefaultReplicationFactor: 2}, createTopicsReq(false, topicSpec{name: "t", partitions: 1, rf: -1}), kerr.InvalidReplicationFactor, "above this controller's bound"},
		{"manual 2 replicas", one, createTopicsReq(false, topicSpec{name: "t", assignment: [][]int32{{1, 2}}, partitions: -1, rf: -1}), kerr.InvalidReplicationFactor, "above this controller's bound"},
		{"manual 1 replica", one, createTopicsReq(false, topicSpec{name: "t", assignment: [][]int32{{2}}, partitions: -1, rf: -1}), nil, ""},
		{"default: rf 3 of 3 brokers", Config{MaxReplicationFactor: DefaultMaxReplicationFactor}, createTopicsReq(false, topicSpec{name: "t", partitions: 1, rf: 3}), nil, ""},
		{"default: rf 9 above the brokers", Config{MaxReplicationFactor: DefaultMaxReplicationFactor}, createTopicsReq(false, topicSpec{name: "t", partitions: 1, rf: 9}), kerr.InvalidReplicationFactor, "only 3 broker(s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newCluster(t, tc.cfg, 3)
			rt := h.do(tc.req).(*kmsg.CreateTopicsResponse).Topics[0]
			if tc.want == nil {
				require.Zero(t, rt.ErrorCode, errName(rt.ErrorCode))
				return
			}
			require.Equal(t, tc.want.Code, rt.ErrorCode, errName(rt.ErrorCode))
			require.Contains(t, *rt.ErrorMessage, tc.msg)
		})
	}

	// CreatePartitions: by count for a topic with more replicas (one
	// created before the bound, or by a lifted controller), and by a
	// manual assignment.
	h := newCluster(t, Config{MaxReplicationFactor: 3}, 3)
	h.mustCreate(topicSpec{name: "wide", partitions: 1, rf: 2}, topicSpec{name: "narrow", partitions: 1, rf: 1})
	h.c.cfg.MaxReplicationFactor = 1
	grow := func(topic string, assignment ...[]int32) kmsg.CreatePartitionsResponseTopic {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version = 3
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, 2
		for _, a := range assignment {
			ra := kmsg.NewCreatePartitionsRequestTopicAssignment()
			ra.Replicas = a
			rt.Assignment = append(rt.Assignment, ra)
		}
		req.Topics = append(req.Topics, rt)
		return h.do(req).(*kmsg.CreatePartitionsResponse).Topics[0]
	}
	got := grow("wide")
	require.Equal(t, kerr.InvalidReplicationFactor.Code, got.ErrorCode, errName(got.ErrorCode))
	require.Contains(t, *got.ErrorMessage, "above this controller's bound")
	got = grow("narrow", []int32{1, 2})
	require.Equal(t, kerr.InvalidReplicationFactor.Code, got.ErrorCode, errName(got.ErrorCode))
	got = grow("narrow")
	require.Zero(t, got.ErrorCode, errName(got.ErrorCode))
}
