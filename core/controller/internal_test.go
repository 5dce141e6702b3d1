package controller

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCoordinatorTopicShape: the coordinators' topics are created
// compacted only, keep a compact-only cleanup.policy through every config
// change, and keep their partitions (issue 22, finding 8: a client created
// __consumer_offsets with one partition and the delete policy, and the
// coordinators used it).
func TestCoordinatorTopicShape(t *testing.T) {
	h := newCluster(t, Config{}, 1)
	create := func(name string, configs map[string]string) int16 {
		resp := h.do(createTopicsReq(false, topicSpec{name: name, partitions: 1, rf: 1, configs: configs})).(*kmsg.CreateTopicsResponse)
		require.Len(t, resp.Topics, 1)
		return resp.Topics[0].ErrorCode
	}
	for _, name := range []string{offsetsTopicName, txnStateTopicName} {
		require.Equal(t, kerr.InvalidConfig.Code, create(name, nil), "%s with the default policy (delete)", name)
		require.Equal(t, kerr.InvalidConfig.Code, create(name, map[string]string{"cleanup.policy": "delete"}), name)
		require.Equal(t, kerr.InvalidConfig.Code, create(name, map[string]string{"cleanup.policy": "compact,delete"}), name)
		_, exists := h.c.CommittedImage().TopicByName(name)
		require.False(t, exists, "%s was created", name)
	}
	// The coordinators' own request, as core/broker createCoordinatorTopic
	// sends it.
	require.Equal(t, int16(0), create(offsetsTopicName, map[string]string{"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}))
	// An ordinary topic may have any policy.
	require.Equal(t, int16(0), create("t", map[string]string{"cleanup.policy": "delete"}))

	incremental := func(name string, ops ...configOp) int16 {
		resp := h.do(incrementalReq(false, kmsg.ConfigResourceTypeTopic, name, ops...)).(*kmsg.IncrementalAlterConfigsResponse)
		return resp.Resources[0].ErrorCode
	}
	require.Equal(t, kerr.InvalidConfig.Code, incremental(offsetsTopicName, set("cleanup.policy", "delete")))
	require.Equal(t, kerr.InvalidConfig.Code, incremental(offsetsTopicName, del("cleanup.policy")))
	require.Equal(t, kerr.InvalidConfig.Code, incremental(offsetsTopicName, appendTo("cleanup.policy", "delete")))
	require.Equal(t, int16(0), incremental(offsetsTopicName, set("retention.ms", "1000"), set("cleanup.policy", "compact")))
	require.Equal(t, int16(0), incremental("t", del("cleanup.policy")))
	v, _ := h.c.CommittedImage().ConfigValue(topicResource(offsetsTopicName), "cleanup.policy")
	require.Equal(t, "compact", v)

	legacy := func(name string, kv ...string) int16 {
		req := kmsg.NewPtrAlterConfigsRequest()
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, name
		for i := 0; i < len(kv); i += 2 {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
			res.Configs = append(res.Configs, c)
		}
		req.Resources = append(req.Resources, res)
		return h.do(req).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode
	}
	require.Equal(t, kerr.InvalidConfig.Code, legacy(offsetsTopicName, "retention.ms", "5"), "the whole config replaced, without its policy")
	require.Equal(t, int16(0), legacy(offsetsTopicName, "retention.ms", "5", "cleanup.policy", "compact"))

	resp := h.do(createPartitionsReq(false, growTo(offsetsTopicName, 3), growTo("t", 2))).(*kmsg.CreatePartitionsResponse)
	require.Equal(t, kerr.InvalidRequest.Code, resp.Topics[0].ErrorCode)
	require.Contains(t, *resp.Topics[0].ErrorMessage, "keeps its partitions")
	require.Equal(t, int16(0), resp.Topics[1].ErrorCode)
	ti, _ := h.c.CommittedImage().TopicByName(offsetsTopicName)
	require.Equal(t, 1, ti.NumPartitions())
}
