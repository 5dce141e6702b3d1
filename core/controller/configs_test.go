package controller

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

func TestTopicConfigValidation(t *testing.T) {
	cases := []struct {
		key, value string
		ok         bool
	}{
		{"cleanup.policy", "compact", true},
		{"cleanup.policy", "compact, delete", true},
		{"cleanup.policy", "", false},
		{"cleanup.policy", "shred", false},
		{"compression.type", "zstd", true},
		{"compression.type", "brotli", false},
		{"compression.gzip.level", "-1", true},
		{"compression.gzip.level", "0", false},
		{"compression.gzip.level", "9", true},
		{"compression.zstd.level", "-131072", true},
		{"compression.zstd.level", "23", false},
		{"retention.ms", "-1", true},
		{"retention.ms", "-2", false},
		{"retention.ms", " 100 ", true},
		{"retention.ms", "1e3", false},
		{"retention.bytes", "-5", true},
		{"segment.bytes", "14", false}, // Kafka's minimum: a segment here must hold a batch header
		{"segment.bytes", "60", false},
		{"segment.bytes", "61", true},
		{"segment.index.bytes", "4", false}, // Kafka's minimum: an index here must hold a time index entry
		{"segment.index.bytes", "12", true},
		{"max.message.bytes", "0", false}, // Kafka's minimum: it refuses every batch
		{"max.message.bytes", "61", true},
		{"cleanup.policy", "compact,", false}, // an empty item, as Kafka's ValidList refuses it
		{"cleanup.policy", "compact,,delete", false},
		{"segment.bytes", "2147483648", false},
		{"segment.ms", "0", false},
		{"min.insync.replicas", "1", true},
		{"min.insync.replicas", "0", false},
		{"max.message.bytes", "-1", false},
		{"min.cleanable.dirty.ratio", "0.9", true},
		{"min.cleanable.dirty.ratio", "1.5", false},
		{"min.cleanable.dirty.ratio", "NaN", false},
		{"unclean.leader.election.enable", "TRUE", true},
		{"unclean.leader.election.enable", "yes", false},
		{"message.timestamp.type", "LogAppendTime", true},
		{"message.timestamp.type", "logappendtime", false},
		{"local.retention.ms", "-2", true},
		{"local.retention.ms", "-3", false},
		{"leader.replication.throttled.replicas", "*", true},
		{"leader.replication.throttled.replicas", "0:1,1:2", true},
		{"leader.replication.throttled.replicas", "0-1", false},
	}
	for _, tc := range cases {
		v := tc.value
		_, e := checkTopicConfig(tc.key, &v)
		require.Equal(t, tc.ok, e == nil, "%s=%q: %v", tc.key, tc.value, e)
		if e != nil {
			require.Equal(t, kerr.InvalidConfig, e.err)
			require.Contains(t, e.msg, "Invalid value", "the reason is in the message")
		}
	}
	long := strings.Repeat("1", maxConfigValueBytes+1)
	_, e := checkTopicConfig("retention.ms", &long)
	require.Equal(t, kerr.InvalidConfig, e.err)
}

type configOp struct {
	op    kmsg.IncrementalAlterConfigOp
	key   string
	value *string
}

func set(k, v string) configOp { return configOp{kmsg.IncrementalAlterConfigOpSet, k, &v} }
func del(k string) configOp    { return configOp{kmsg.IncrementalAlterConfigOpDelete, k, nil} }
func appendTo(k, v string) configOp {
	return configOp{kmsg.IncrementalAlterConfigOpAppend, k, &v}
}
func subtract(k, v string) configOp {
	return configOp{kmsg.IncrementalAlterConfigOpSubtract, k, &v}
}

func incrementalReq(validateOnly bool, typ kmsg.ConfigResourceType, name string, ops ...configOp) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	req.ValidateOnly = validateOnly
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = o.op, o.key, o.value
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	return req
}

func TestIncrementalAlterConfigs(t *testing.T) {
	topic := kmsg.ConfigResourceTypeTopic
	cases := []struct {
		name         string
		typ          kmsg.ConfigResourceType
		resource     string
		ops          []configOp
		validateOnly bool
		want         *kerr.Error
		records      int
		after        map[string]string
	}{
		{name: "set", ops: []configOp{set("retention.ms", "5")}, records: 1,
			after: map[string]string{"retention.ms": "5", "cleanup.policy": "compact"}},
		{name: "set same value", ops: []configOp{set("cleanup.policy", "compact")}, records: 0,
			after: map[string]string{"cleanup.policy": "compact"}},
		{name: "delete", ops: []configOp{del("cleanup.policy")}, records: 1, after: map[string]string{}},
		{name: "delete unset", ops: []configOp{del("retention.ms")}, records: 0, after: map[string]string{"cleanup.policy": "compact"}},
		{name: "append", ops: []configOp{appendTo("cleanup.policy", "delete")}, records: 1,
			after: map[string]string{"cleanup.policy": "compact,delete"}},
		{name: "append present", ops: []configOp{appendTo("cleanup.policy", "compact")}, records: 0,
			after: map[string]string{"cleanup.policy": "compact"}},
		{name: "append to default", ops: []configOp{appendTo("leader.replication.throttled.replicas", "0:1")}, records: 1,
			after: map[string]string{"cleanup.policy": "compact", "leader.replication.throttled.replicas": "0:1"}},
		{name: "subtract to empty", ops: []configOp{subtract("cleanup.policy", "compact")}, want: kerr.InvalidConfig},
		{name: "append non-list", ops: []configOp{appendTo("retention.ms", "1")}, want: kerr.InvalidConfig},
		{name: "unknown key", ops: []configOp{set("retention.weeks", "1")}, want: kerr.InvalidConfig},
		{name: "invalid value", ops: []configOp{set("retention.ms", "soon")}, want: kerr.InvalidConfig},
		{name: "null set", ops: []configOp{{kmsg.IncrementalAlterConfigOpSet, "retention.ms", nil}}, want: kerr.InvalidRequest},
		{name: "duplicate key", ops: []configOp{set("retention.ms", "1"), del("retention.ms")}, want: kerr.InvalidRequest},
		{name: "unknown op", ops: []configOp{{kmsg.IncrementalAlterConfigOp(9), "retention.ms", nil}}, want: kerr.InvalidRequest},
		{name: "unknown topic", resource: "nope", ops: []configOp{set("retention.ms", "1")}, want: kerr.UnknownTopicOrPartition},
		{name: "broker resource", typ: kmsg.ConfigResourceTypeBroker, resource: "1", ops: []configOp{set("retention.ms", "1")}, want: kerr.InvalidRequest},
		{name: "all or nothing", ops: []configOp{set("retention.ms", "1"), set("segment.ms", "0")}, want: kerr.InvalidConfig,
			after: map[string]string{"cleanup.policy": "compact"}},
		{name: "validate only", validateOnly: true, ops: []configOp{set("retention.ms", "5")}, records: 0,
			after: map[string]string{"cleanup.policy": "compact"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newCluster(t, Config{}, 1)
			h.mustCreate(topicSpec{name: "t", partitions: 1, rf: 1, configs: map[string]string{"cleanup.policy": "compact"}})
			h.takeProposals()
			typ, resource := tc.typ, tc.resource
			if typ == 0 {
				typ = topic
			}
			if resource == "" {
				resource = "t"
			}
			resp := h.do(incrementalReq(tc.validateOnly, typ, resource, tc.ops...)).(*kmsg.IncrementalAlterConfigsResponse)
			require.Len(t, resp.Resources, 1)
			r := resp.Resources[0]
			require.Equal(t, codeOf(tc.want), r.ErrorCode, "%s: %v", errName(r.ErrorCode), r.ErrorMessage)
			require.Equal(t, resource, r.ResourceName)
			n := 0
			for _, p := range h.takeProposals() {
				n += len(p.Records)
			}
			require.Equal(t, tc.records, n)
			if tc.after != nil {
				got := map[string]string{}
				for _, e := range h.c.CommittedImage().Configs(topicResource("t")) {
					got[e.Key] = e.Value
				}
				require.Equal(t, tc.after, got)
			}
		})
	}
}

func TestIncrementalAlterConfigsDuplicateResource(t *testing.T) {
	h := newCluster(t, Config{}, 1)
	h.mustCreate(topicSpec{name: "t", partitions: 1, rf: 1}, topicSpec{name: "u", partitions: 1, rf: 1})
	req := incrementalReq(false, kmsg.ConfigResourceTypeTopic, "t", set("retention.ms", "1"))
	req.Resources = append(req.Resources, req.Resources[0], incrementalReq(false, kmsg.ConfigResourceTypeTopic, "u", set("retention.ms", "2")).Resources[0])
	resp := h.do(req).(*kmsg.IncrementalAlterConfigsResponse)
	require.Equal(t, kerr.InvalidRequest.Code, resp.Resources[0].ErrorCode)
	require.Equal(t, kerr.InvalidRequest.Code, resp.Resources[1].ErrorCode)
	require.Equal(t, int16(0), resp.Resources[2].ErrorCode)
	v, _ := h.c.CommittedImage().ConfigValue(topicResource("u"), "retention.ms")
	require.Equal(t, "2", v)
}

func TestAlterConfigsReplaces(t *testing.T) {
	h := newCluster(t, Config{}, 1)
	h.mustCreate(topicSpec{name: "t", partitions: 1, rf: 1, configs: map[string]string{"cleanup.policy": "compact", "retention.ms": "5"}})
	mk := func(typ kmsg.ConfigResourceType, name string, kv ...string) *kmsg.AlterConfigsRequest {
		req := kmsg.NewPtrAlterConfigsRequest()
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = typ, name
		for i := 0; i < len(kv); i += 2 {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			v := kv[i+1]
			c.Name, c.Value = kv[i], &v
			res.Configs = append(res.Configs, c)
		}
		req.Resources = append(req.Resources, res)
		return req
	}
	resp := h.do(mk(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "7", "segment.ms", "100")).(*kmsg.AlterConfigsResponse)
	require.Equal(t, int16(0), resp.Resources[0].ErrorCode)
	require.Equal(t, []meta.ConfigEntry{{Key: "retention.ms", Value: "7"}, {Key: "segment.ms", Value: "100"}},
		h.c.CommittedImage().Configs(topicResource("t")))

	for _, tc := range []struct {
		req  *kmsg.AlterConfigsRequest
		want *kerr.Error
	}{
		{mk(kmsg.ConfigResourceTypeTopic, "t", "bogus", "1"), kerr.InvalidConfig},
		{mk(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "x"), kerr.InvalidConfig},
		{mk(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "1", "retention.ms", "2"), kerr.InvalidRequest},
		{mk(kmsg.ConfigResourceTypeTopic, "zz", "retention.ms", "1"), kerr.UnknownTopicOrPartition},
		{mk(kmsg.ConfigResourceTypeBroker, "", "retention.ms", "1"), kerr.InvalidRequest},
	} {
		resp := h.do(tc.req).(*kmsg.AlterConfigsResponse)
		require.Equal(t, tc.want.Code, resp.Resources[0].ErrorCode, errName(resp.Resources[0].ErrorCode))
	}
	// Nothing listed: every key is deleted.
	h.do(mk(kmsg.ConfigResourceTypeTopic, "t"))
	require.Empty(t, h.c.CommittedImage().Configs(topicResource("t")))
}

func TestAllocateProducerIDs(t *testing.T) {
	h := newCluster(t, Config{}, 2)
	req := func(broker int32, epoch int64) *kmsg.AllocateProducerIDsRequest {
		r := kmsg.NewPtrAllocateProducerIDsRequest()
		r.BrokerID, r.BrokerEpoch = broker, epoch
		return r
	}
	for i, b := range []int32{1, 2, 1} {
		resp := h.do(req(b, h.epochs[b])).(*kmsg.AllocateProducerIDsResponse)
		require.Equal(t, int16(0), resp.ErrorCode)
		require.Equal(t, int64(i*ProducerIDBlockSize), resp.ProducerIDStart)
		require.Equal(t, int32(ProducerIDBlockSize), resp.ProducerIDLen)
	}
	require.Equal(t, int64(3*ProducerIDBlockSize), h.c.CommittedImage().ProducerIDs().NextProducerID)
	// Two requests before a commit get distinct blocks.
	t1, t2 := h.handle(req(1, h.epochs[1])), h.handle(req(2, h.epochs[2]))
	h.commitAll()
	r1, _ := h.response(t1)
	r2, _ := h.response(t2)
	require.Equal(t, int64(3000), r1.(*kmsg.AllocateProducerIDsResponse).ProducerIDStart)
	require.Equal(t, int64(4000), r2.(*kmsg.AllocateProducerIDsResponse).ProducerIDStart)

	resp := h.do(req(1, h.epochs[1]+5)).(*kmsg.AllocateProducerIDsResponse)
	require.Equal(t, kerr.StaleBrokerEpoch.Code, resp.ErrorCode)
	resp = h.do(req(7, 1)).(*kmsg.AllocateProducerIDsResponse)
	require.Equal(t, kerr.StaleBrokerEpoch.Code, resp.ErrorCode)
}
