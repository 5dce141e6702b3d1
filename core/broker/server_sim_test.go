package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/servertest"
)

// simServer is a whole single-node server in the simulator
// (sim/servertest) with the broker tests' own helpers.
type simServer struct{ *servertest.Single }

func newSimServer(t *testing.T, tweak func(*server.Config)) *simServer {
	t.Helper()
	return &simServer{servertest.Start(t, 1, func(c *server.Config) {
		c.BrokerListener.LogDir = "/var/lib/strata"
		if tweak != nil {
			tweak(c)
		}
	})}
}

// produce appends n records of size bytes each, one batch, acks=all, and
// returns the base offset.
func (h *simServer) produce(topic string, partition int32, n, size int) int64 {
	h.T.Helper()
	b := record.NewBuilder()
	ts := h.ClientEnv().Now().UnixMilli()
	for i := range n {
		b.Append(ts, []byte(fmt.Sprintf("k%d", i)), make([]byte, size))
	}
	batch, err := b.AppendTo(nil)
	require.NoError(h.T, err)
	got := h.Do(servertest.ProduceRequest(topic, partition, batch)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	require.Zero(h.T, got.ErrorCode, "produce: %v", kerr.ErrorForCode(got.ErrorCode))
	return got.BaseOffset
}

func (h *simServer) listOffset(topic string, partition int32, timestamp int64) int64 {
	h.T.Helper()
	got := h.ListOffset(topic, partition, timestamp)
	require.Zero(h.T, got.ErrorCode)
	return got.Offset
}

func describeTopic(h *simServer, version int16, topic string, keys ...string) kmsg.DescribeConfigsResponseResource {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.IncludeSynonyms = version, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, keys
	req.Resources = append(req.Resources, r)
	return h.Do(req).(*kmsg.DescribeConfigsResponse).Resources[0]
}

// TestServerDescribeConfigsIsWhatPartitionsApply: a static default
// (server.properties), a topic's own config and the table default are
// described with their sources, and the partition's log applies exactly
// the described values.
func TestServerDescribeConfigsIsWhatPartitionsApply(t *testing.T) {
	h := newSimServer(t, func(c *server.Config) {
		c.Partitions.StaticTopicDefaults = map[string]string{"segment.bytes": "4096", "retention.bytes": "1000000"}
	})
	h.CreateTopic("t", 1, map[string]string{"retention.ms": "3600000"})
	for _, v := range broker.Versions(t, kmsg.DescribeConfigs) {
		rr := describeTopic(h, v, "t")
		require.Zero(t, rr.ErrorCode)
		seg := broker.ConfigByName(t, rr, "segment.bytes")
		require.Equal(t, "4096", *seg.Value)
		require.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, seg.Source)
		require.Equal(t, "log.segment.bytes", seg.ConfigSynonyms[0].Name)
		require.Equal(t, kmsg.ConfigSourceDefaultConfig, seg.ConfigSynonyms[1].Source)
		ret := broker.ConfigByName(t, rr, "retention.ms")
		require.Equal(t, "3600000", *ret.Value)
		require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, ret.Source)
		require.Equal(t, kmsg.ConfigSourceDefaultConfig, broker.ConfigByName(t, rr, "cleanup.policy").Source)
	}
	lc := h.Partition("t", 0).Log().Config()
	require.Equal(t, int64(4096), lc.SegmentBytes)
	require.Equal(t, int64(1000000), lc.RetentionBytes)
	require.Equal(t, time.Hour, lc.RetentionTime)
	// And segments do roll at the static size.
	for range 12 {
		h.produce("t", 0, 4, 300)
	}
	require.GreaterOrEqual(t, len(h.Partition("t", 0).Log().Segments()), 4, "4 KiB segments roll")
}

// TestServerAlterConfigsReachPartitions: both alter APIs at every version
// change a live partition's log configuration (the partition reopens its
// log), and DescribeConfigs reports the new values.
func TestServerAlterConfigsReachPartitions(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 1, nil)
	h.produce("t", 0, 3, 10)
	segment := int64(2048)
	for _, v := range broker.Versions(t, kmsg.IncrementalAlterConfigs) {
		segment += 1024
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = v
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "segment.bytes", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(fmt.Sprint(segment))
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		got := h.Do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		require.Zero(t, got.ErrorCode, "v%d", v)
		h.RunUntil("segment.bytes applied", func() bool {
			p := h.Partition("t", 0)
			return p.Online() && p.Log().Config().SegmentBytes == segment
		})
		require.Equal(t, fmt.Sprint(segment), *broker.ConfigByName(t, describeTopic(h, 4, "t", "segment.bytes"), "segment.bytes").Value)
	}
	for _, v := range broker.Versions(t, kmsg.AlterConfigs) {
		retention := time.Duration(v+1) * time.Hour
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version = v
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr(fmt.Sprint(retention.Milliseconds()))
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		got := h.Do(req).(*kmsg.AlterConfigsResponse).Resources[0]
		require.Zero(t, got.ErrorCode, "v%d", v)
		h.RunUntil("retention.ms applied", func() bool {
			p := h.Partition("t", 0)
			return p.Online() && p.Log().Config().RetentionTime == retention
		})
		// AlterConfigs replaces the whole config: segment.bytes is back
		// to its default.
		require.Equal(t, int64(1<<30), h.Partition("t", 0).Log().Config().SegmentBytes)
	}
	// The partition still serves what it had.
	require.Equal(t, int64(0), h.listOffset("t", 0, -2))
	require.Equal(t, int64(3), h.listOffset("t", 0, -1))

	// Bad input: an unknown key, a bad value, an unknown topic, a broker
	// resource: clear errors from the controller.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	for _, rc := range []struct {
		typ        kmsg.ConfigResourceType
		name, k, v string
	}{
		{kmsg.ConfigResourceTypeTopic, "t", "retention.weeks", "1"},
		{kmsg.ConfigResourceTypeTopic, "t2", "retention.ms", "1"},
		{kmsg.ConfigResourceTypeBroker, "1", "log.retention.ms", "1"},
	} {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = rc.typ, rc.name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = rc.k, kmsg.StringPtr(rc.v)
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
	}
	got := h.Do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources
	require.Equal(t, kerr.InvalidConfig.Code, got[0].ErrorCode)
	require.Contains(t, *got[0].ErrorMessage, "retention.weeks")
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, got[1].ErrorCode)
	require.Equal(t, kerr.InvalidRequest.Code, got[2].ErrorCode)
}

// TestServerDeleteRecords: every version moves the log start offset, -1
// means the high watermark, beyond it is OFFSET_OUT_OF_RANGE, and
// ListOffsets' earliest follows.
func TestServerDeleteRecords(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 2, nil)
	h.produce("t", 0, 20, 10)
	deleteRecords := func(v int16, timeout int32, offsets ...int64) []kmsg.DeleteRecordsResponseTopicPartition {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Version, req.TimeoutMillis = v, timeout
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "t"
		for i, o := range offsets {
			rt.Partitions = append(rt.Partitions, kmsg.DeleteRecordsRequestTopicPartition{Partition: int32(i), Offset: o})
		}
		req.Topics = append(req.Topics, rt)
		return h.Do(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions
	}
	want := int64(0)
	for _, v := range broker.Versions(t, kmsg.DeleteRecords) {
		want += 3
		got := deleteRecords(v, 15_000, want, 0)
		require.Zero(t, got[0].ErrorCode, "v%d: %v", v, kerr.ErrorForCode(got[0].ErrorCode))
		require.Equal(t, want, got[0].LowWatermark)
		require.Zero(t, got[1].ErrorCode, "an empty partition: nothing to delete")
		require.Equal(t, int64(0), got[1].LowWatermark)
		require.Equal(t, want, h.listOffset("t", 0, -2))
	}
	got := deleteRecords(2, 0, 25) // beyond the high watermark (20); timeout 0 waits
	require.Equal(t, kerr.OffsetOutOfRange.Code, got[0].ErrorCode)
	require.Equal(t, int64(-1), got[0].LowWatermark)
	got = deleteRecords(2, 15_000, -7)
	require.Equal(t, kerr.OffsetOutOfRange.Code, got[0].ErrorCode)
	got = deleteRecords(2, 15_000, -1, -1, 5) // the third partition does not exist
	require.Zero(t, got[0].ErrorCode)
	require.Equal(t, int64(20), got[0].LowWatermark)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, got[2].ErrorCode)
	require.Equal(t, int64(20), h.listOffset("t", 0, -2))
	require.Equal(t, int64(20), h.listOffset("t", 0, -1))
}

// TestServerOffsetForLeaderEpoch at every version, with KIP-320's checks.
func TestServerOffsetForLeaderEpoch(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 1, nil)
	h.produce("t", 0, 5, 10)
	epoch := h.Partition("t", 0).LeaderEpoch()
	for _, v := range broker.Versions(t, kmsg.OffsetForLeaderEpoch) {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = v, -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "t"
		rt.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{
			{Partition: 0, LeaderEpoch: epoch, CurrentLeaderEpoch: -1},
			{Partition: 0, LeaderEpoch: epoch, CurrentLeaderEpoch: epoch},
			{Partition: 0, LeaderEpoch: epoch + 5, CurrentLeaderEpoch: epoch},
			{Partition: 0, LeaderEpoch: epoch, CurrentLeaderEpoch: epoch + 1},
			{Partition: 3, LeaderEpoch: epoch, CurrentLeaderEpoch: -1},
		}
		req.Topics = append(req.Topics, rt)
		got := h.Do(req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions
		require.Len(t, got, 5)
		for i := range 2 {
			require.Zero(t, got[i].ErrorCode, "v%d", v)
			require.Equal(t, epoch, got[i].LeaderEpoch)
			require.Equal(t, int64(5), got[i].EndOffset, "the latest epoch ends at the log end")
		}
		require.Zero(t, got[2].ErrorCode)
		require.Equal(t, int32(-1), got[2].LeaderEpoch, "an epoch newer than any is undefined, as in Kafka")
		require.Equal(t, int64(-1), got[2].EndOffset)
		require.Equal(t, kerr.UnknownLeaderEpoch.Code, got[3].ErrorCode)
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, got[4].ErrorCode)
	}
}

// TestServerDescribeLogDirs: the data directory with every hosted
// partition's size, at every version; the volume's size when the disk
// knows it.
func TestServerDescribeLogDirs(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("a", 2, nil)
	h.CreateTopic("b", 1, nil)
	h.produce("a", 1, 10, 100)
	h.Node.Disk().SetFaults(sim.DiskFaults{CapacityBytes: 1 << 30})
	for _, v := range broker.Versions(t, kmsg.DescribeLogDirs) {
		for _, filter := range []bool{false, true} {
			req := kmsg.NewPtrDescribeLogDirsRequest()
			req.Version = v
			if filter {
				req.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: "a", Partitions: []int32{1, 7}}, {Topic: "zz", Partitions: []int32{0}}}
			}
			resp := h.Do(req).(*kmsg.DescribeLogDirsResponse)
			require.Len(t, resp.Dirs, 1)
			d := resp.Dirs[0]
			require.Zero(t, d.ErrorCode)
			require.Equal(t, "/var/lib/strata", d.Dir)
			var got []string
			for _, dt := range d.Topics {
				for _, p := range dt.Partitions {
					got = append(got, fmt.Sprintf("%s-%d", dt.Topic, p.Partition))
					require.Equal(t, int64(0), p.OffsetLag)
					require.False(t, p.IsFuture)
					require.Equal(t, h.Partition(dt.Topic, p.Partition).Size(), p.Size)
					if dt.Topic == "a" && p.Partition == 1 {
						require.Greater(t, p.Size, int64(1000))
					}
				}
			}
			if filter {
				require.Equal(t, []string{"a-1"}, got)
			} else {
				require.Equal(t, []string{"a-0", "a-1", "b-0"}, got)
			}
			if v >= 4 {
				require.Equal(t, int64(1<<30), d.TotalBytes)
				require.Greater(t, d.UsableBytes, int64(0))
				require.Less(t, d.UsableBytes, d.TotalBytes)
			}
		}
	}
}

// TestServerAutoCreateAndReplicationFactor: a Metadata request creates a
// missing topic with num.partitions; replication factors above the one
// broker are refused with a message saying why, both in CreateTopics and
// in auto-creation (default.replication.factor).
func TestServerAutoCreateAndReplicationFactor(t *testing.T) {
	h := newSimServer(t, func(c *server.Config) { c.BrokerListener.DefaultNumPartitions = 3 })
	md := kmsg.NewPtrMetadataRequest()
	md.Version, md.AllowAutoTopicCreation = 12, true
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("auto")}}
	first := h.Do(md).(*kmsg.MetadataResponse)
	require.Equal(t, kerr.LeaderNotAvailable.Code, first.Topics[0].ErrorCode)
	h.RunUntil("auto created", func() bool {
		got := h.Do(md).(*kmsg.MetadataResponse).Topics[0]
		return got.ErrorCode == 0 && len(got.Partitions) == 3
	})
	h.WaitServing("auto", 3)
	require.Equal(t, int64(0), h.produce("auto", 2, 1, 1))

	for _, rf := range []int16{2, 3} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 7
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = fmt.Sprintf("rf%d", rf), 1, rf
		req.Topics = append(req.Topics, ct)
		got := h.Do(req).(*kmsg.CreateTopicsResponse).Topics[0]
		require.Equal(t, kerr.InvalidReplicationFactor.Code, got.ErrorCode)
		require.Contains(t, *got.ErrorMessage, "only 1 broker(s) are registered and unfenced")
	}

	h2 := newSimServer(t, func(c *server.Config) { c.BrokerListener.DefaultReplicationFactor = 3 })
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("wide")}}
	for range 5 {
		got := h2.Do(md).(*kmsg.MetadataResponse).Topics[0]
		require.Equal(t, kerr.LeaderNotAvailable.Code, got.ErrorCode, "the creation keeps failing")
		require.NoError(t, h2.Sim.RunFor(100*time.Millisecond))
	}
	_, ok := h2.Server.Image().TopicByName("wide")
	require.False(t, ok)
}
