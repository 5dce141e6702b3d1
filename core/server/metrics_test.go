package server_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/sim/servertest"
)

// value reads one series of the current incarnation's registry, on the
// loop (the simulator runs one goroutine).
func value(x *servertest.Single, d *metrics.Def, labels ...string) float64 {
	v, _ := x.Metrics.Value(d, labels...)
	return v
}

func TestMetricsCountTheDataPath(t *testing.T) {
	x := servertest.Start(t, 11, nil)
	require.Equal(t, 1.0, value(x, metrics.ControllerActive))
	require.Equal(t, 1.0, value(x, metrics.RaftState, "leader"))
	require.Equal(t, 0.0, value(x, metrics.RaftState, "follower"))
	require.Equal(t, 1.0, value(x, metrics.BrokerRegistrations))
	require.Equal(t, 0.0, value(x, metrics.BrokerFenced))
	require.Equal(t, 1.0, value(x, metrics.ControllerActiveBrokers))
	require.Positive(t, value(x, metrics.RaftHighWatermark))
	require.Positive(t, value(x, metrics.RaftCommitLatency), "committed proposals were timed")
	require.Positive(t, value(x, metrics.ControllerRequests, "BrokerRegistration"))

	x.CreateTopic("events", 2, nil)
	x.WaitServing("events", 2)
	require.Equal(t, 1.0, value(x, metrics.ControllerTopics))
	require.Equal(t, 2.0, value(x, metrics.ControllerPartitions))
	require.Equal(t, 2.0, value(x, metrics.PartitionCount))
	require.Equal(t, 2.0, value(x, metrics.LeaderCount))
	require.Equal(t, 0.0, value(x, metrics.OfflinePartitions))

	flushes := value(x, metrics.LogFlushTime)
	require.Zero(t, value(x, metrics.Requests, "Produce"))
	resp := x.Produce("events", 1, "a", "b", "c")
	require.Equal(t, int16(0), resp.ErrorCode)
	x.Produce("events", 1, "d")
	require.Equal(t, 4.0, value(x, metrics.TopicMessagesIn, "events"))
	require.Equal(t, 2.0, value(x, metrics.TopicProduces, "events"))
	require.Equal(t, 2.0, value(x, metrics.Requests, "Produce"))
	require.Greater(t, value(x, metrics.LogFlushTime), flushes, "each durable produce was flushed")
	for _, d := range []*metrics.Def{metrics.RequestQueueTime, metrics.RequestLocalTime, metrics.RequestRemoteTime,
		metrics.RequestResponseSendTime, metrics.RequestTotalTime, metrics.RequestBytes} {
		require.Equal(t, 2.0, value(x, d, "Produce"), "%s observed each produce", d.Name)
	}
	require.Equal(t, 4.0, value(x, metrics.LogEndOffset, "events", "1"))
	require.Positive(t, value(x, metrics.LogSize, "events", "1"))
	require.Equal(t, 1.0, value(x, metrics.LogSegments, "events", "1"))

	_, values := x.Fetch("events", 1, 0)
	require.Len(t, values, 4)
	require.Equal(t, value(x, metrics.TopicBytesIn, "events"), value(x, metrics.TopicBytesOut, "events"))
	require.Equal(t, 1.0, value(x, metrics.TopicFetches, "events"))

	// Errors by request and Kafka error name; a missing topic gets no
	// series of its own.
	unknown := x.Produce("nope", 0, "x")
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, unknown.ErrorCode)
	require.Equal(t, 1.0, value(x, metrics.RequestErrors, "Produce", "UNKNOWN_TOPIC_OR_PARTITION"))
	_, ok := x.Metrics.Value(metrics.TopicProduces, "nope")
	require.False(t, ok)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "events", 1, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	created := x.Do(req).(*kmsg.CreateTopicsResponse) // the controller's answer is walked for errors
	require.Equal(t, kerr.TopicAlreadyExists.Code, created.Topics[0].ErrorCode)
	require.Equal(t, 1.0, value(x, metrics.RequestErrors, "CreateTopics", "TOPIC_ALREADY_EXISTS"))

	// A new incarnation counts from zero.
	x.Crash()
	x.WaitServing("events", 2)
	require.Zero(t, value(x, metrics.Requests, "Produce"))
	require.Equal(t, 4.0, value(x, metrics.LogEndOffset, "events", "1"), "the log survived; its gauge reads it")
}

func TestPartitionMetricsFollowTheTopicConfig(t *testing.T) {
	x := servertest.Start(t, 12, nil)
	x.CreateTopic("quiet", 1, map[string]string{"strata.metrics.partition.enable": "false"})
	x.WaitServing("quiet", 1)
	_, ok := x.Metrics.Value(metrics.LogEndOffset, "quiet", "0")
	require.False(t, ok, "off for the topic")
	x.Produce("quiet", 0, "a")
	require.Equal(t, 1.0, value(x, metrics.TopicMessagesIn, "quiet"), "per-topic series stay")
}

// histogram is one histogram series' count and sum.
func histogram(x *servertest.Single, d *metrics.Def, labels ...string) (uint64, float64) {
	for _, f := range x.Metrics.Snapshot() {
		if f.Def != d {
			continue
		}
		for _, s := range f.Series {
			if slices.Equal(s.Labels, labels) {
				return s.Count, s.Sum
			}
		}
	}
	return 0, 0
}

// A request answered before its handler returns (a Metadata, a produced
// batch refused on validation) waited on nothing: its remote time is 0,
// and its time is local. Found by the attack suite: such requests were
// timed as if handled at the node's start, so RemoteTimeMs recorded the
// node's uptime for each of them (a mean of 3.5 s for Produce under a
// flood of malformed batches whose requests took 5 ms).
func TestMetricsTimeARequestAnsweredInItsHandler(t *testing.T) {
	x := servertest.Start(t, 13, nil)
	x.CreateTopic("events", 1, nil)
	x.WaitServing("events", 1)
	require.Greater(t, x.ClientEnv().Monotonic(), time.Second, "the node has run a while (its election, the topic)")
	n0, remote0 := histogram(x, metrics.RequestRemoteTime, "Metadata")
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("events")
	req.Topics = append(req.Topics, rt)
	x.Do(req)
	n1, remote1 := histogram(x, metrics.RequestRemoteTime, "Metadata")
	require.Equal(t, n0+1, n1, "the Metadata was timed")
	require.Less(t, remote1-remote0, 1.0, "a Metadata answered in its handler waited %.0f ms on something else", remote1-remote0)
	_, total := histogram(x, metrics.RequestTotalTime, "Metadata")
	_, local := histogram(x, metrics.RequestLocalTime, "Metadata")
	_, queue := histogram(x, metrics.RequestQueueTime, "Metadata")
	_, remote := histogram(x, metrics.RequestRemoteTime, "Metadata")
	_, send := histogram(x, metrics.RequestResponseSendTime, "Metadata")
	require.InDelta(t, total, queue+local+remote+send, 1e-6, "the stages add up to the total")
}
