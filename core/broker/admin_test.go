package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/meta"
)

// Tests of the admin APIs against a fake metadata member: what needs no
// partitions. Those that do run against a whole server in the simulator
// (server_sim_test.go).

// testImage is an image with brokers 7 (this one, unfenced), 8 (fenced)
// and 9 (unfenced, with a rack), and topics a (3 partitions), b (2, the
// second without a leader and with ELR), c (1, a replica on an
// unregistered broker) and __internal (1), plus configs.
func testImage(t testing.TB) *meta.Image {
	t.Helper()
	d := meta.Empty().NewDelta()
	ep := func(id int32) []meta.Endpoint {
		return []meta.Endpoint{{Name: "PLAINTEXT", Host: fmt.Sprintf("b%d", id), Port: 9092}}
	}
	require.NoError(t, d.Replay(&meta.RegisterBrokerRecord{BrokerID: 7, BrokerEpoch: 1, Endpoints: ep(7)}))
	require.NoError(t, d.Replay(&meta.RegisterBrokerRecord{BrokerID: 8, BrokerEpoch: 2, Endpoints: ep(8), Fenced: true}))
	require.NoError(t, d.Replay(&meta.RegisterBrokerRecord{BrokerID: 9, BrokerEpoch: 3, Endpoints: ep(9), Rack: "r9"}))
	topics := []struct {
		name  string
		parts []meta.PartitionRecord
	}{
		{"a", []meta.PartitionRecord{
			{Partition: 0, Replicas: []int32{7}, ISR: []int32{7}, Leader: 7},
			{Partition: 1, Replicas: []int32{9}, ISR: []int32{9}, Leader: 9},
			{Partition: 2, Replicas: []int32{7}, ISR: []int32{7}, Leader: 7, LeaderEpoch: 4},
		}},
		{"b", []meta.PartitionRecord{
			{Partition: 0, Replicas: []int32{7, 9}, ISR: []int32{7, 9}, Leader: 7},
			{Partition: 1, Replicas: []int32{7, 9}, ISR: []int32{}, Leader: meta.NoLeader, ELR: []int32{7}, LastKnownELR: []int32{9}},
		}},
		{"c", []meta.PartitionRecord{{Partition: 0, Replicas: []int32{7, 42}, ISR: []int32{7}, Leader: 7}}},
		{"__internal", []meta.PartitionRecord{{Partition: 0, Replicas: []int32{7}, ISR: []int32{7}, Leader: 7}}},
	}
	for i, tp := range topics {
		id := meta.UUID{0: byte(i + 1)}
		require.NoError(t, d.Replay(&meta.TopicRecord{Name: tp.name, TopicID: id}))
		for _, p := range tp.parts {
			p.TopicID = id
			require.NoError(t, d.Replay(&p), "%s-%d", tp.name, p.Partition)
		}
	}
	v := func(s string) *string { return &s }
	for _, c := range []meta.ConfigRecord{
		{ResourceType: meta.ConfigResourceTopic, ResourceName: "a", Key: "retention.ms", Value: v("1000")},
		{ResourceType: meta.ConfigResourceBroker, ResourceName: "", Key: "log.segment.bytes", Value: v("4096")},
		{ResourceType: meta.ConfigResourceBroker, ResourceName: "7", Key: "log.retention.bytes", Value: v("999")},
	} {
		require.NoError(t, d.Replay(&c))
	}
	return d.Apply(meta.Position{Offset: 100, Epoch: 1})
}

func newAdminBroker(t *testing.T, mutate ...func(*Config)) (*Broker, *fakeEnv, *fakeMetadata) {
	t.Helper()
	md := &fakeMetadata{img: testImage(t)}
	b, e := newTestBroker(t, append([]func(*Config){func(c *Config) { c.Metadata = md }}, mutate...)...)
	return b, e, md
}

// roundTrip sends req at its version on a fresh connection and decodes
// the answer into a response of the same version.
func roundTrip[R kmsg.Response](t *testing.T, e *fakeEnv, req kmsg.Request) R {
	t.Helper()
	frame, closed := e.exchange(encodeRequest(req, 77))
	require.False(t, closed, "%s v%d closed the connection", kmsg.NameForKey(req.Key()), req.GetVersion())
	require.NotNil(t, frame, "%s v%d: no response", kmsg.NameForKey(req.Key()), req.GetVersion())
	return responseTo[R](t, frame, 77, req)
}

func versions(t *testing.T, key kmsg.Key) []int16 {
	t.Helper()
	api, ok := APIs().Lookup(key.Int16())
	require.True(t, ok, "%s not served", key)
	var vs []int16
	for v := api.MinVersion; v <= api.MaxVersion; v++ {
		vs = append(vs, v)
	}
	return vs
}

func TestDescribeClusterEveryVersion(t *testing.T) {
	for _, v := range versions(t, kmsg.DescribeCluster) {
		for _, fenced := range []bool{false, true} {
			_, e, _ := newAdminBroker(t)
			req := kmsg.NewPtrDescribeClusterRequest()
			req.Version, req.IncludeFencedBrokers = v, fenced
			resp := roundTrip[*kmsg.DescribeClusterResponse](t, e, req)
			require.Zero(t, resp.ErrorCode)
			require.Equal(t, testClusterID, resp.ClusterID)
			require.Equal(t, int32(testNodeID), resp.ControllerID)
			var ids []int32
			for _, br := range resp.Brokers {
				ids = append(ids, br.NodeID)
				if v >= 2 {
					require.Equal(t, br.NodeID == 8, br.IsFenced, "v%d broker %d", v, br.NodeID)
				}
				if br.NodeID == 9 {
					require.Equal(t, "b9", br.Host)
					require.Equal(t, "r9", *br.Rack)
				}
			}
			if v >= 2 && fenced {
				require.Equal(t, []int32{7, 8, 9}, ids)
			} else {
				require.Equal(t, []int32{7, 9}, ids, "v%d: fenced brokers only when asked (v2)", v)
			}
		}
	}
	// v1+: a broker does not describe the controllers (KIP-919).
	_, e, _ := newAdminBroker(t)
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.EndpointType = 1, 2
	resp := roundTrip[*kmsg.DescribeClusterResponse](t, e, req)
	require.Equal(t, kerr.UnsupportedEndpointType.Code, resp.ErrorCode)
	require.Equal(t, int8(2), resp.EndpointType)
	require.NotNil(t, resp.ErrorMessage)
	require.Empty(t, resp.Brokers)
}

func describeTopicPartitions(t *testing.T, e *fakeEnv, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	return roundTrip[*kmsg.DescribeTopicPartitionsResponse](t, e, req)
}

// flatten lists a response's partitions as "topic-partition".
func flatten(resp *kmsg.DescribeTopicPartitionsResponse) []string {
	var out []string
	for _, rt := range resp.Topics {
		if len(rt.Partitions) == 0 {
			name := "NONE"
			if rt.ErrorCode != 0 {
				name = kerr.ErrorForCode(rt.ErrorCode).(*kerr.Error).Message
			}
			out = append(out, *rt.Topic+":"+name)
		}
		for _, p := range rt.Partitions {
			out = append(out, fmt.Sprintf("%s-%d", *rt.Topic, p.Partition))
		}
	}
	return out
}

func TestDescribeTopicPartitions(t *testing.T) {
	_, e, _ := newAdminBroker(t)
	for _, v := range versions(t, kmsg.DescribeTopicPartitions) {
		require.Zero(t, v)
	}

	// Every topic, in name order.
	all := describeTopicPartitions(t, e, 2000, nil)
	require.Equal(t, []string{"__internal-0", "a-0", "a-1", "a-2", "b-0", "b-1", "c-0"}, flatten(all))
	require.Nil(t, all.NextCursor)
	require.True(t, all.Topics[0].IsInternal)
	require.False(t, all.Topics[1].IsInternal)
	require.Equal(t, [16]byte(meta.UUID{0: 1}), all.Topics[1].TopicID)
	b1 := all.Topics[2].Partitions[1]
	require.Equal(t, kerr.LeaderNotAvailable.Code, b1.ErrorCode)
	require.Equal(t, int32(-1), b1.LeaderID)
	require.Equal(t, []int32{7}, b1.EligibleLeaderReplicas)
	require.Equal(t, []int32{9}, b1.LastKnownELR)
	require.Equal(t, int32(4), all.Topics[1].Partitions[2].LeaderEpoch)
	require.Equal(t, []int32{42}, all.Topics[3].Partitions[0].OfflineReplicas, "replica on an unregistered broker")
	require.Equal(t, []int32{}, all.Topics[1].Partitions[0].EligibleLeaderReplicas)

	// Pages of two partitions follow the cursor to the end.
	var pages [][]string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for range 10 {
		resp := describeTopicPartitions(t, e, 2, cursor, "c", "a", "b", "a")
		pages = append(pages, flatten(resp))
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	require.Equal(t, [][]string{{"a-0", "a-1"}, {"a-2", "b-0"}, {"b-1", "c-0"}}, pages)

	// A page that ends with a topic points the cursor at the next one.
	resp := describeTopicPartitions(t, e, 3, nil, "a", "b")
	require.Equal(t, []string{"a-0", "a-1", "a-2"}, flatten(resp))
	require.Equal(t, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "b", Partition: 0}, resp.NextCursor)

	// Unknown names (and huge ones) are UNKNOWN_TOPIC_OR_PARTITION; the
	// limit is bounded; a negative cursor partition is refused.
	huge := strings.Repeat("x", 40_000)
	resp = describeTopicPartitions(t, e, 2000, nil, huge, "nope")
	require.Len(t, resp.Topics, 2)
	require.Equal(t, "nope", *resp.Topics[0].Topic)
	require.Len(t, *resp.Topics[1].Topic, len(huge))
	for _, rt := range resp.Topics {
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, rt.ErrorCode)
	}
	resp = describeTopicPartitions(t, e, 1<<30, nil)
	require.Nil(t, resp.NextCursor)
	resp = describeTopicPartitions(t, e, -5, nil, "a")
	require.Equal(t, []string{"a-0"}, flatten(resp), "a limit below one describes one partition")
	resp = describeTopicPartitions(t, e, 10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a", Partition: -1}, "a")
	require.Equal(t, kerr.InvalidRequest.Code, resp.Topics[0].ErrorCode)
	// A cursor past the partitions of its topic moves on.
	resp = describeTopicPartitions(t, e, 10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a", Partition: 99}, "a", "c")
	require.Equal(t, []string{"a:NONE", "c-0"}, flatten(resp))
}

func TestMetadataMarksInternalTopics(t *testing.T) {
	_, e, _ := newAdminBroker(t)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp := roundTrip[*kmsg.MetadataResponse](t, e, req)
	internal := map[string]bool{}
	for _, rt := range resp.Topics {
		internal[*rt.Topic] = rt.IsInternal
	}
	require.Equal(t, map[string]bool{"__internal": true, "a": false, "b": false, "c": false}, internal)
}

func metadataFor(version int16, allow bool, names ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = version, allow
	for _, n := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func TestMetadataAutoCreate(t *testing.T) {
	codes := func(resp *kmsg.MetadataResponse) map[string]int16 {
		out := map[string]int16{}
		for _, rt := range resp.Topics {
			out[*rt.Topic] = rt.ErrorCode
		}
		return out
	}
	lna, unknown, invalid := kerr.LeaderNotAvailable.Code, kerr.UnknownTopicOrPartition.Code, kerr.InvalidTopicException.Code
	for _, v := range versions(t, kmsg.Metadata) {
		_, e, md := newAdminBroker(t, func(c *Config) { c.DefaultNumPartitions, c.DefaultReplicationFactor = 3, 1 })
		resp := roundTrip[*kmsg.MetadataResponse](t, e, metadataFor(v, true, "new", "a", "bad name", "__consumer_offsets", strings.Repeat("y", 300)))
		require.Equal(t, map[string]int16{"new": lna, "a": 0, "bad name": invalid, "__consumer_offsets": unknown, strings.Repeat("y", 300): invalid},
			codes(resp), "v%d", v)
		require.Len(t, md.reqs, 1, "v%d: one CreateTopics for the missing valid name", v)
		ct := md.reqs[0].(*kmsg.CreateTopicsRequest)
		require.Len(t, ct.Topics, 1)
		require.Equal(t, "new", ct.Topics[0].Topic)
		require.Equal(t, int32(3), ct.Topics[0].NumPartitions)
		require.Equal(t, int16(1), ct.Topics[0].ReplicationFactor)

		// While that creation is in flight, another ask does not send a
		// second one; once it is answered, the next ask may.
		resp = roundTrip[*kmsg.MetadataResponse](t, e, metadataFor(v, true, "new"))
		require.Equal(t, lna, resp.Topics[0].ErrorCode)
		require.Len(t, md.reqs, 1, "v%d: de-duplicated", v)
		md.pending[0](createTopicsAnswer(ct, "new", kerr.InvalidReplicationFactor.Code), nil)
		e.run()
		require.Contains(t, e.logBuf.String(), "auto-creating a topic failed")
		roundTrip[*kmsg.MetadataResponse](t, e, metadataFor(v, true, "new"))
		require.Len(t, md.reqs, 2, "v%d: asked again after the answer", v)

		// Not allowed by the request (v4+): unknown, nothing sent.
		if v >= 4 {
			resp = roundTrip[*kmsg.MetadataResponse](t, e, metadataFor(v, false, "other"))
			require.Equal(t, unknown, resp.Topics[0].ErrorCode, "v%d", v)
			require.Len(t, md.reqs, 2)
		}
	}
	// auto.create.topics.enable=false.
	_, e, md := newAdminBroker(t, func(c *Config) { c.AutoTopicCreationDisabled = true })
	resp := roundTrip[*kmsg.MetadataResponse](t, e, metadataFor(12, true, "new", "bad name"))
	require.Equal(t, map[string]int16{"new": unknown, "bad name": invalid}, codes(resp))
	require.Empty(t, md.reqs)
	// Without defaults, the controller's apply (-1).
	_, e, md = newAdminBroker(t)
	roundTrip[*kmsg.MetadataResponse](t, e, metadataFor(12, true, "x1", "x2", "x1"))
	require.Len(t, md.reqs, 1)
	ct := md.reqs[0].(*kmsg.CreateTopicsRequest)
	require.Len(t, ct.Topics, 2, "one request for both names, each once")
	require.Equal(t, int32(-1), ct.Topics[0].NumPartitions)
	require.Equal(t, int16(-1), ct.Topics[0].ReplicationFactor)
}

func TestMetadataAutoCreateBound(t *testing.T) {
	_, e, md := newAdminBroker(t)
	var names []string
	for i := range maxAutoCreatesInflight + 10 {
		names = append(names, fmt.Sprintf("t%05d", i))
	}
	resp := roundTrip[*kmsg.MetadataResponse](t, e, metadataFor(12, true, names...))
	for _, rt := range resp.Topics {
		require.Equal(t, kerr.LeaderNotAvailable.Code, rt.ErrorCode)
	}
	require.Len(t, md.reqs, 1)
	require.Len(t, md.reqs[0].(*kmsg.CreateTopicsRequest).Topics, maxAutoCreatesInflight)
}

func describeConfigs(version int16, synonyms, docs bool, resources ...kmsg.DescribeConfigsRequestResource) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.IncludeSynonyms, req.IncludeDocumentation, req.Resources = version, synonyms, docs, resources
	return req
}

func resource(typ kmsg.ConfigResourceType, name string, keys ...string) kmsg.DescribeConfigsRequestResource {
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, keys
	return r
}

func configByName(t *testing.T, rr kmsg.DescribeConfigsResponseResource, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	for _, c := range rr.Configs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("%s not in %s %q", name, rr.ResourceType, rr.ResourceName)
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

func TestDescribeConfigsEveryVersion(t *testing.T) {
	static := []StaticConfig{
		{Name: "log.segment.bytes", Value: "2048", Set: true, Default: "1073741824", Type: kmsg.ConfigTypeInt, Doc: "segments"},
		{Name: "log.retention.ms", Default: "", Type: kmsg.ConfigTypeLong, Doc: "retention"},
		{Name: "node.id", Value: "7", Set: true, Default: "1", Type: kmsg.ConfigTypeInt, Doc: "id"},
		{Name: "secret", Value: "hunter2", Set: true, Type: kmsg.ConfigTypePassword, Sensitive: true},
	}
	for _, v := range versions(t, kmsg.DescribeConfigs) {
		for _, extras := range []bool{false, true} {
			_, e, _ := newAdminBroker(t, func(c *Config) { c.StaticConfigs = static })
			req := describeConfigs(v, extras, extras,
				resource(kmsg.ConfigResourceTypeTopic, "a"),
				resource(kmsg.ConfigResourceTypeTopic, "b", "segment.bytes", "no.such.key"),
				resource(kmsg.ConfigResourceTypeTopic, "missing"),
				resource(kmsg.ConfigResourceTypeTopic, "bad/name"),
				resource(kmsg.ConfigResourceTypeBroker, "7"),
				resource(kmsg.ConfigResourceTypeBroker, ""),
				resource(kmsg.ConfigResourceTypeBroker, "8"),
				resource(kmsg.ConfigResourceTypeBroker, "seven"),
				resource(kmsg.ConfigResourceTypeBrokerLogger, "7"),
				resource(kmsg.ConfigResourceType(99), "x"),
			)
			resp := roundTrip[*kmsg.DescribeConfigsResponse](t, e, req)
			require.Len(t, resp.Resources, 10)
			wantCodes := []int16{0, 0, kerr.UnknownTopicOrPartition.Code, kerr.InvalidTopicException.Code, 0, 0,
				kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
			for i, rr := range resp.Resources {
				require.Equal(t, wantCodes[i], rr.ErrorCode, "v%d resource %d %q", v, i, rr.ResourceName)
				require.Equal(t, req.Resources[i].ResourceName, rr.ResourceName)
				require.Equal(t, req.Resources[i].ResourceType, rr.ResourceType)
				if rr.ErrorCode != 0 {
					require.NotNil(t, rr.ErrorMessage)
					require.Empty(t, rr.Configs)
				}
			}

			// Topic a: every table key; its own retention.ms, the
			// cluster's dynamic segment default, this broker's dynamic
			// retention.bytes, the rest defaults.
			a := resp.Resources[0]
			require.Len(t, a.Configs, len(config.TopicRows()))
			ret := configByName(t, a, "retention.ms")
			require.Equal(t, "1000", *ret.Value)
			require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, ret.Source)
			require.False(t, ret.ReadOnly)
			require.False(t, ret.IsSensitive)
			seg := configByName(t, a, "segment.bytes")
			require.Equal(t, "4096", *seg.Value)
			require.Equal(t, kmsg.ConfigSourceDynamicDefaultBrokerConfig, seg.Source)
			rb := configByName(t, a, "retention.bytes")
			require.Equal(t, "999", *rb.Value)
			require.Equal(t, kmsg.ConfigSourceDynamicBrokerConfig, rb.Source)
			def := configByName(t, a, "cleanup.policy")
			require.Equal(t, "delete", *def.Value)
			require.Equal(t, kmsg.ConfigSourceDefaultConfig, def.Source)
			if extras {
				require.Equal(t, []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{
					{Name: "retention.ms", Value: kmsg.StringPtr("1000"), Source: kmsg.ConfigSourceDynamicTopicConfig},
					{Name: "log.retention.ms", Value: kmsg.StringPtr("604800000"), Source: kmsg.ConfigSourceDefaultConfig},
				}, ret.ConfigSynonyms, "v%d", v)
			} else {
				require.Empty(t, ret.ConfigSynonyms)
			}
			if v >= 3 {
				require.Equal(t, kmsg.ConfigTypeLong, ret.ConfigType)
				require.Equal(t, kmsg.ConfigTypeList, def.ConfigType)
				if extras {
					require.NotNil(t, ret.Documentation)
					require.Contains(t, *ret.Documentation, "milliseconds")
				} else {
					require.Nil(t, ret.Documentation)
				}
			}

			// Filtered: known keys only.
			b := resp.Resources[1]
			require.Len(t, b.Configs, 1)
			require.Equal(t, "segment.bytes", b.Configs[0].Name)

			// This broker: static keys, dynamic values over them, and
			// dynamic keys that are not static; all read-only.
			self := resp.Resources[4]
			names := []string{}
			for _, c := range self.Configs {
				names = append(names, c.Name)
				require.True(t, c.ReadOnly, c.Name)
			}
			require.Equal(t, []string{"log.retention.bytes", "log.retention.ms", "log.segment.bytes", "node.id", "secret"}, names)
			ls := configByName(t, self, "log.segment.bytes")
			require.Equal(t, "4096", *ls.Value)
			require.Equal(t, kmsg.ConfigSourceDynamicDefaultBrokerConfig, ls.Source)
			if extras {
				require.Len(t, ls.ConfigSynonyms, 3, "dynamic default, static, default")
				require.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, ls.ConfigSynonyms[1].Source)
				require.Equal(t, "2048", *ls.ConfigSynonyms[1].Value)
			}
			id := configByName(t, self, "node.id")
			require.Equal(t, "7", *id.Value)
			require.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, id.Source)
			lr := configByName(t, self, "log.retention.ms")
			require.Nil(t, lr.Value, "no value: Kafka's null")
			require.Equal(t, kmsg.ConfigSourceDefaultConfig, lr.Source)
			sec := configByName(t, self, "secret")
			require.True(t, sec.IsSensitive)
			require.Nil(t, sec.Value, "a sensitive value is never sent")

			// The cluster default resource: only the dynamic defaults.
			cluster := resp.Resources[5]
			require.Len(t, cluster.Configs, 1)
			require.Equal(t, "log.segment.bytes", cluster.Configs[0].Name)
			require.Equal(t, kmsg.ConfigSourceDynamicDefaultBrokerConfig, cluster.Configs[0].Source)
		}
	}
}

func TestDescribeConfigsBounds(t *testing.T) {
	_, e, _ := newAdminBroker(t)
	var res []kmsg.DescribeConfigsRequestResource
	for range maxDescribeConfigsResources + 2 {
		res = append(res, resource(kmsg.ConfigResourceTypeTopic, "c", "retention.ms"))
	}
	huge := strings.Repeat("z", 100_000)
	res = append(res, resource(kmsg.ConfigResourceTypeTopic, huge))
	resp := roundTrip[*kmsg.DescribeConfigsResponse](t, e, describeConfigs(4, true, true, res...))
	require.Len(t, resp.Resources, len(res))
	require.Zero(t, resp.Resources[maxDescribeConfigsResources-1].ErrorCode)
	require.Len(t, resp.Resources[maxDescribeConfigsResources-1].Configs, 1)
	last := resp.Resources[len(res)-1]
	require.Equal(t, kerr.InvalidRequest.Code, last.ErrorCode)
	require.Contains(t, *last.ErrorMessage, "at most 10000 resources")
	require.Equal(t, huge, last.ResourceName)

	// A huge name alone: refused with a message of bounded size.
	resp = roundTrip[*kmsg.DescribeConfigsResponse](t, e, describeConfigs(4, false, false, resource(kmsg.ConfigResourceTypeTopic, huge)))
	require.Equal(t, kerr.InvalidTopicException.Code, resp.Resources[0].ErrorCode)
	require.Less(t, len(*resp.Resources[0].ErrorMessage), 400)
}

// TestAlterConfigsGoToTheController: both alter APIs are passed to the
// metadata quorum with a barrier, at every version.
func TestAlterConfigsGoToTheController(t *testing.T) {
	for _, key := range []kmsg.Key{kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs} {
		for _, v := range versions(t, key) {
			_, e, md := newAdminBroker(t)
			c := e.net.connect()
			req := kmsg.RequestForKey(key.Int16())
			req.SetVersion(v)
			c.deliver(encodeRequest(req, 1))
			c.deliver(encodeRequest(metadataFor(12, false), 2))
			require.Empty(t, c.sent, "%s v%d: the barrier holds the Metadata back", key, v)
			require.Len(t, md.reqs, 1)
			resp := req.ResponseKind()
			resp.SetVersion(v)
			md.pending[0](resp, nil)
			e.run()
			require.Len(t, c.sent, 2)
		}
	}
}

func TestDescribeLogDirsWithoutPartitions(t *testing.T) {
	for _, v := range versions(t, kmsg.DescribeLogDirs) {
		_, e, _ := newAdminBroker(t, func(c *Config) { c.LogDir = "/var/lib/strata" })
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = v
		resp := roundTrip[*kmsg.DescribeLogDirsResponse](t, e, req)
		require.Len(t, resp.Dirs, 1)
		require.Equal(t, "/var/lib/strata", resp.Dirs[0].Dir)
		require.Zero(t, resp.Dirs[0].ErrorCode)
		require.Empty(t, resp.Dirs[0].Topics)
		if v >= 4 {
			require.Equal(t, int64(-1), resp.Dirs[0].TotalBytes, "the fake disk cannot tell")
			require.Equal(t, int64(-1), resp.Dirs[0].UsableBytes)
		}
	}
}

// TestDataAdminAPIsWithoutPartitions: DeleteRecords and
// OffsetForLeaderEpoch on a broker hosting nothing answer per partition.
func TestDataAdminAPIsWithoutPartitions(t *testing.T) {
	for _, v := range versions(t, kmsg.DeleteRecords) {
		_, e, _ := newAdminBroker(t)
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Version = v
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "a"
		rt.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}, {Partition: 7, Offset: 3}}
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.DeleteRecordsResponse](t, e, req)
		require.Len(t, resp.Topics[0].Partitions, 2)
		for _, p := range resp.Topics[0].Partitions {
			require.Equal(t, kerr.UnknownTopicOrPartition.Code, p.ErrorCode, "v%d", v)
			require.Equal(t, int64(-1), p.LowWatermark)
		}
	}
	for _, v := range versions(t, kmsg.OffsetForLeaderEpoch) {
		_, e, _ := newAdminBroker(t)
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = v, -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "a"
		rt.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, LeaderEpoch: 0, CurrentLeaderEpoch: -1}}
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.OffsetForLeaderEpochResponse](t, e, req)
		p := resp.Topics[0].Partitions[0]
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, p.ErrorCode, "v%d", v)
		require.Equal(t, int64(-1), p.EndOffset)
	}
}
