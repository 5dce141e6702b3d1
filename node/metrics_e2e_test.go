package node_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/node"
)

// scrape fetches and parses a node's /metrics with the Prometheus text
// parser: an exposition it refuses fails the test.
func scrape(t *testing.T, n *node.Node) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + n.MetricsAddr() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	p := expfmt.NewTextParser(model.LegacyValidation) // Kafka-style names are legacy-valid
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err, "the exposition parses")
	return fams
}

// sample returns the value of the series of family name whose labels
// include want (a counter's or gauge's value, a histogram's count), and
// whether there is one.
func sample(fams map[string]*dto.MetricFamily, name string, want ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(want); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == want[i] && lp.GetValue() == want[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func httpStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestE2EMetricsMoveWithRequests(t *testing.T) {
	n := startNodeWithProperties(t, t.TempDir(), "num.partitions=2\n")
	base := "http://" + n.MetricsAddr()
	code, body := httpStatus(t, base+"/healthz")
	require.Equal(t, http.StatusOK, code, body)
	code, body = httpStatus(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code, body)
	code, _ = httpStatus(t, base+"/debug/pprof/")
	require.Equal(t, http.StatusNotFound, code, "pprof is off by default")

	before := scrape(t, n)
	for _, d := range metrics.Catalog {
		if len(d.Labels) == 0 && !strings.HasPrefix(d.Name, "strata_raft_elections") && d.Name != metrics.RaftCommitLatency.Name &&
			d.Name != metrics.ControllerEventProcessing.Name && d.Name != metrics.LogFlushTime.Name && d.Name != metrics.LogFlushBytes.Name {
			_, ok := sample(before, d.Name)
			require.True(t, ok, "%s is exported from the start", d.Name)
		}
	}
	v, _ := sample(before, metrics.ControllerActive.Name)
	require.Equal(t, 1.0, v, "the single node is the active controller")
	v, _ = sample(before, metrics.RaftState.Name, "state", "leader")
	require.Equal(t, 1.0, v)
	v, _ = sample(before, metrics.BrokerFenced.Name)
	require.Equal(t, 0.0, v)

	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	const records = 50
	_, err := newAdmin(t, n.Addr()).CreateTopic(ctx, 2, 1, nil, "metered")
	require.NoError(t, err)
	produceN(t, ctx, newProducer(t, n.Addr(), kgo.ProducerBatchCompression(kgo.NoCompression())), "metered", records, 100)
	cl := newProducer(t, n.Addr(), kgo.ConsumeTopics("metered"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < records {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err())
		got += fs.NumRecords()
	}

	after := scrape(t, n)
	v, _ = sample(after, metrics.TopicMessagesIn.Name, "topic", "metered")
	require.Equal(t, float64(records), v, "messages in")
	in, _ := sample(after, metrics.TopicBytesIn.Name, "topic", "metered")
	out, _ := sample(after, metrics.TopicBytesOut.Name, "topic", "metered")
	require.Greater(t, in, float64(records*100), "bytes in cover the values")
	require.Equal(t, in, out, "every byte appended was fetched once")
	for _, api := range []string{"Produce", "Fetch", "Metadata", "ApiVersions"} {
		before, _ := sample(before, metrics.Requests.Name, "request", api)
		now, _ := sample(after, metrics.Requests.Name, "request", api)
		require.Greater(t, now, before, "%s requests counted", api)
	}
	produces, _ := sample(after, metrics.Requests.Name, "request", "Produce")
	for _, d := range []*metrics.Def{metrics.RequestQueueTime, metrics.RequestLocalTime, metrics.RequestRemoteTime,
		metrics.RequestResponseSendTime, metrics.RequestTotalTime} {
		n, _ := sample(after, d.Name, "request", "Produce")
		require.Equal(t, produces, n, "every answered Produce is in %s", d.Name)
	}
	var leo float64
	for _, p := range []string{"0", "1"} {
		v, ok := sample(after, metrics.LogEndOffset.Name, "topic", "metered", "partition", p)
		require.True(t, ok, "partition %s has its log end offset", p)
		leo += v
	}
	require.Equal(t, float64(records), leo)
	flushes, _ := sample(after, metrics.LogFlushTime.Name)
	require.Positive(t, flushes, "the produces were fsynced")
	v, _ = sample(after, metrics.PartitionCount.Name)
	require.Equal(t, 2.0, v)
	v, _ = sample(after, metrics.LeaderCount.Name)
	require.Equal(t, 2.0, v)
	v, _ = sample(after, metrics.Connections.Name)
	require.Positive(t, v)
	_, ok := sample(after, "go_goroutines")
	require.True(t, ok, "the Go runtime's series are exported too")

	// An error is counted by request and Kafka error name.
	adm := newAdmin(t, n.Addr())
	_, err = adm.CreateTopic(ctx, 1, 1, nil, "metered")
	require.Error(t, err) // kadm returns the per-topic error in the response
	require.Eventually(t, func() bool {
		v, _ := sample(scrape(t, n), metrics.RequestErrors.Name, "request", "CreateTopics", "error", "TOPIC_ALREADY_EXISTS")
		return v == 1
	}, 5*time.Second, 50*time.Millisecond)

	// A deleted topic's series go.
	_, err = adm.DeleteTopic(ctx, "metered")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, ok := sample(scrape(t, n), metrics.TopicMessagesIn.Name, "topic", "metered")
		return !ok
	}, 5*time.Second, 50*time.Millisecond)
}

func TestE2EPartitionMetricsSwitches(t *testing.T) {
	// Globally off (the broker default), on again for one topic.
	n := startNodeWithProperties(t, t.TempDir(), "strata.metrics.partition.enable=false\nstrata.debug.pprof.enable=true\n")
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	adm := newAdmin(t, n.Addr())
	_, err := adm.CreateTopic(ctx, 1, 1, nil, "quiet")
	require.NoError(t, err)
	on := "true"
	_, err = adm.CreateTopic(ctx, 1, 1, map[string]*string{"strata.metrics.partition.enable": &on}, "loud")
	require.NoError(t, err)
	produceN(t, ctx, newProducer(t, n.Addr()), "quiet", 3, 10)
	produceN(t, ctx, newProducer(t, n.Addr()), "loud", 3, 10)
	fams := scrape(t, n)
	_, ok := sample(fams, metrics.LogSize.Name, "topic", "quiet")
	require.False(t, ok, "no per-partition series for a topic with them off")
	v, ok := sample(fams, metrics.LogEndOffset.Name, "topic", "loud", "partition", "0")
	require.True(t, ok, "the topic that turned them on has them")
	require.Equal(t, 3.0, v)
	v, _ = sample(fams, metrics.TopicMessagesIn.Name, "topic", "quiet")
	require.Equal(t, 3.0, v, "per-topic series stay")

	code, _ := httpStatus(t, "http://"+n.MetricsAddr()+"/debug/pprof/")
	require.Equal(t, http.StatusOK, code, "pprof when enabled")
}

func TestE2EMetricsOff(t *testing.T) {
	n := startNodeWithProperties(t, t.TempDir(), "strata.metrics.enable=false\n")
	fams := scrape(t, n)
	for name := range fams {
		require.False(t, strings.HasPrefix(name, "kafka_") || strings.HasPrefix(name, "strata_"), "%s exported with metrics off", name)
	}
	_, ok := sample(fams, "go_goroutines")
	require.True(t, ok)
}

func TestE2EMetricsListenerTaken(t *testing.T) {
	first := startNode(t, t.TempDir(), 1)
	cfg := node.DefaultConfig()
	cfg.Listener, cfg.ControllerListener, cfg.LogDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	cfg.MetricsListener = first.MetricsAddr()
	_, err := node.Start(cfg, nil)
	require.ErrorContains(t, err, "metrics.listener")
}
