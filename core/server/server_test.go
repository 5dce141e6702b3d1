package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/servertest"
)

func TestServerProducesFetchesAndSurvivesPowerLoss(t *testing.T) {
	x := servertest.Start(t, 1, nil)
	x.CreateTopic("events", 2, nil)

	resp := x.Produce("events", 1, "a", "b", "c")
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Equal(t, int64(0), resp.BaseOffset)
	resp = x.Produce("events", 1, "d")
	require.Equal(t, int64(3), resp.BaseOffset)
	p, values := x.Fetch("events", 1, 0)
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(4), p.HighWatermark)
	require.Equal(t, []string{"a", "b", "c", "d"}, values)

	unknown := x.Produce("nope", 0, "x")
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, unknown.ErrorCode)

	// Power loss: every acknowledged record was fsynced.
	x.Crash()
	x.WaitServing("events", 2)
	p, values = x.Fetch("events", 1, 0)
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, []string{"a", "b", "c", "d"}, values)
	resp = x.Produce("events", 1, "e")
	require.Equal(t, int64(4), resp.BaseOffset)
}

func TestProduceTimesOutWhileTheDiskStalls(t *testing.T) {
	x := servertest.Start(t, 3, nil)
	x.CreateTopic("slow", 1, nil)
	x.Node.Disk().SetFaults(sim.DiskFaults{SyncLatencyMin: 3 * time.Second, SyncLatencyMax: 3 * time.Second})
	payload := x.Batch([]record.BuilderOption{record.WithProducer(11, 0, 0)}, "v")
	req := servertest.ProduceRequest("slow", 0, append([]byte(nil), payload...))
	req.TimeoutMillis = 500
	resp := x.Do(req).(*kmsg.ProduceResponse)
	require.Equal(t, kerr.RequestTimedOut.Code, resp.Topics[0].Partitions[0].ErrorCode, "not durable within the timeout")
	x.Node.Disk().SetFaults(sim.DiskFaults{})
	require.NoError(t, x.Sim.RunFor(5*time.Second))
	// The idempotent retry of the same batch is a duplicate of the one
	// that became durable meanwhile.
	req.Topics[0].Partitions[0].Records = append([]byte(nil), payload...)
	resp = x.Do(req).(*kmsg.ProduceResponse)
	require.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(0), resp.Topics[0].Partitions[0].BaseOffset)
	_, values := x.Fetch("slow", 0, 0)
	require.Equal(t, []string{"v"}, values, "written once")
}

func TestRequestsToAPartitionStillOpeningWaitForIt(t *testing.T) {
	x := servertest.Start(t, 4, nil)
	x.Node.Disk().SetFaults(sim.DiskFaults{SyncLatencyMin: time.Second, SyncLatencyMax: time.Second})
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "fresh", 1, 1
	create.Topics = append(create.Topics, ct)
	x.Do(create)
	x.RunUntil("the partition opening", func() bool {
		p, err := x.Server.Partitions().Lookup("fresh", 0)
		return err == nil && p.Log() != nil
	})
	require.False(t, x.Partition("fresh", 0).Online(), "its log is still settling (1 s fsyncs)")
	// Metadata names this broker as the leader, as Kafka's does.
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("fresh")}}
	mp := x.Do(md).(*kmsg.MetadataResponse).Topics[0].Partitions[0]
	require.Equal(t, int16(0), mp.ErrorCode)
	require.Equal(t, int32(1), mp.Leader)
	// A fetch that may not wait is told NOT_LEADER_OR_FOLLOWER, with no
	// high watermark (none is known before the log settles); one that
	// may wait would wait for the log.
	fp, values := x.Fetch("fresh", 0, 0)
	require.Equal(t, kerr.NotLeaderForPartition.Code, fp.ErrorCode)
	require.Equal(t, int64(-1), fp.HighWatermark)
	require.Empty(t, values)
	// A produce waits for the log and succeeds: the client is not turned
	// away by the broker Metadata sent it to.
	resp := x.Produce("fresh", 0, "first")
	require.Equal(t, int16(0), resp.ErrorCode, "%v", kerr.ErrorForCode(resp.ErrorCode))
	require.Equal(t, int64(0), resp.BaseOffset)
	require.True(t, x.Partition("fresh", 0).Online())

	ct.Topic = "fresh2"
	create.Topics = []kmsg.CreateTopicsRequestTopic{ct}
	x.Do(create)
	x.RunUntil("the second partition opening", func() bool {
		p, err := x.Server.Partitions().Lookup("fresh2", 0)
		return err == nil && p.Log() != nil && !p.Online()
	})
	// A fetch that may wait 3 s waits for the log, then for data until
	// its wait ends, and answers without an error.
	wait := kmsg.NewPtrFetchRequest()
	wait.Version, wait.MaxWaitMillis, wait.MinBytes, wait.MaxBytes, wait.SessionEpoch = 11, 3000, 1, 1<<20, -1
	wt := kmsg.NewFetchRequestTopic()
	wt.Topic = "fresh2"
	wp := kmsg.NewFetchRequestTopicPartition()
	wp.PartitionMaxBytes = 1 << 20
	wt.Partitions = append(wt.Partitions, wp)
	wait.Topics = append(wait.Topics, wt)
	got := x.Do(wait).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	require.Equal(t, int16(0), got.ErrorCode)
	require.Equal(t, int64(0), got.HighWatermark)
	require.True(t, x.Partition("fresh2", 0).Online())
}
