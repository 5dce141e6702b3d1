package top

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/internal/cli"
	"github.com/strata-log/strata/internal/proccluster"
	"github.com/strata-log/strata/node"
)

// Expositions of one broker two seconds apart, as a Strata node serves
// them. Between them: orders took 2 MiB in (1 MiB/s) and 4 MiB out,
// audit 2 KiB in; 2,020 messages; 200 Produce and 40 Fetch requests. The
// 200 new Produce observations put 100 at or below 1 ms, 80 in (1, 2.5]
// and 20 in (2.5, 5]; of the 40 new Fetches, 30 are in (250, 500] and 10
// above 500 ms (the +Inf bucket).
const (
	topFixtureA = `# HELP kafka_server_brokertopicmetrics_bytesin_total Bytes of record batches appended from producers.
# TYPE kafka_server_brokertopicmetrics_bytesin_total counter
kafka_server_brokertopicmetrics_bytesin_total{topic="audit"} 5000
kafka_server_brokertopicmetrics_bytesin_total{topic="orders"} 1e+06
# TYPE kafka_server_brokertopicmetrics_bytesout_total counter
kafka_server_brokertopicmetrics_bytesout_total{topic="audit"} 0
kafka_server_brokertopicmetrics_bytesout_total{topic="orders"} 2e+06
# TYPE kafka_server_brokertopicmetrics_messagesin_total counter
kafka_server_brokertopicmetrics_messagesin_total{topic="audit"} 50
kafka_server_brokertopicmetrics_messagesin_total{topic="orders"} 1000
# TYPE kafka_network_requestmetrics_requests_total counter
kafka_network_requestmetrics_requests_total{request="Fetch"} 400
kafka_network_requestmetrics_requests_total{request="Metadata"} 10
kafka_network_requestmetrics_requests_total{request="Produce"} 100
# HELP kafka_network_requestmetrics_totaltimems Time from a request's arrival to its response's handing to the socket, in ms.
# TYPE kafka_network_requestmetrics_totaltimems histogram
kafka_network_requestmetrics_totaltimems_bucket{request="Fetch",le="250"} 100
kafka_network_requestmetrics_totaltimems_bucket{request="Fetch",le="500"} 400
kafka_network_requestmetrics_totaltimems_bucket{request="Fetch",le="+Inf"} 400
kafka_network_requestmetrics_totaltimems_sum{request="Fetch"} 150000
kafka_network_requestmetrics_totaltimems_count{request="Fetch"} 400
kafka_network_requestmetrics_totaltimems_bucket{request="Produce",le="0.5"} 10
kafka_network_requestmetrics_totaltimems_bucket{request="Produce",le="1"} 60
kafka_network_requestmetrics_totaltimems_bucket{request="Produce",le="2.5"} 95
kafka_network_requestmetrics_totaltimems_bucket{request="Produce",le="5"} 100
kafka_network_requestmetrics_totaltimems_bucket{request="Produce",le="+Inf"} 100
kafka_network_requestmetrics_totaltimems_sum{request="Produce"} 130
kafka_network_requestmetrics_totaltimems_count{request="Produce"} 100
# TYPE kafka_server_replicamanager_partitioncount gauge
kafka_server_replicamanager_partitioncount 4
# TYPE kafka_server_replicamanager_leadercount gauge
kafka_server_replicamanager_leadercount 3
# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge
kafka_server_replicamanager_underreplicatedpartitions 1
# TYPE kafka_server_replicamanager_offlinereplicacount gauge
kafka_server_replicamanager_offlinereplicacount 0
# TYPE kafka_server_socketservermetrics_connection_count gauge
kafka_server_socketservermetrics_connection_count 7
`
	// The quorum families of the active controller; appended to A or B.
	topFixtureLeader = `# TYPE kafka_server_raftmetrics_current_state gauge
kafka_server_raftmetrics_current_state{state="follower"} 0
kafka_server_raftmetrics_current_state{state="leader"} 1
# TYPE kafka_server_raftmetrics_current_epoch gauge
kafka_server_raftmetrics_current_epoch 3
# TYPE kafka_server_raftmetrics_high_watermark gauge
kafka_server_raftmetrics_high_watermark 57
# TYPE kafka_controller_kafkacontroller_activecontrollercount gauge
kafka_controller_kafkacontroller_activecontrollercount 1
# TYPE strata_broker_fenced gauge
strata_broker_fenced 0
`
	// topFixtureInvalid is not the text format: a sample without a value.
	topFixtureInvalid = "# TYPE kafka_server_replicamanager_partitioncount gauge\nkafka_server_replicamanager_partitioncount\n"
)

// topFixtureB is topFixtureA two seconds later: the counters and the
// connection gauge that moved.
var topFixtureB = strings.NewReplacer(
	`bytesin_total{topic="audit"} 5000`, `bytesin_total{topic="audit"} 7048`,
	`bytesin_total{topic="orders"} 1e+06`, `bytesin_total{topic="orders"} 3.097152e+06`,
	`bytesout_total{topic="orders"} 2e+06`, `bytesout_total{topic="orders"} 6.194304e+06`,
	`messagesin_total{topic="audit"} 50`, `messagesin_total{topic="audit"} 70`,
	`messagesin_total{topic="orders"} 1000`, `messagesin_total{topic="orders"} 3000`,
	`requests_total{request="Fetch"} 400`, `requests_total{request="Fetch"} 440`,
	`requests_total{request="Produce"} 100`, `requests_total{request="Produce"} 300`,
	`{request="Fetch",le="500"} 400`, `{request="Fetch",le="500"} 430`,
	`{request="Fetch",le="+Inf"} 400`, `{request="Fetch",le="+Inf"} 440`,
	`sum{request="Fetch"} 150000`, `sum{request="Fetch"} 170000`,
	`count{request="Fetch"} 400`, `count{request="Fetch"} 440`,
	`{request="Produce",le="1"} 60`, `{request="Produce",le="1"} 160`,
	`{request="Produce",le="2.5"} 95`, `{request="Produce",le="2.5"} 275`,
	`{request="Produce",le="5"} 100`, `{request="Produce",le="5"} 300`,
	`{request="Produce",le="+Inf"} 100`, `{request="Produce",le="+Inf"} 300`,
	`sum{request="Produce"} 130`, `sum{request="Produce"} 420`,
	`count{request="Produce"} 100`, `count{request="Produce"} 300`,
	`connection_count 7`, `connection_count 9`,
).Replace(topFixtureA)

// topFixtureFencedFollower is topFixtureLeader's families as a follower
// that is a fenced broker reports them.
var topFixtureFencedFollower = strings.NewReplacer(
	`{state="follower"} 0`, `{state="follower"} 1`,
	`{state="leader"} 1`, `{state="leader"} 0`,
	`high_watermark 57`, `high_watermark 55`,
	`activecontrollercount 1`, `activecontrollercount 0`,
	`strata_broker_fenced 0`, `strata_broker_fenced 1`,
).Replace(topFixtureLeader)

func parseFixture(t *testing.T, parts ...string) *NodeMetrics {
	t.Helper()
	m, err := ParseExposition(strings.NewReader(strings.Join(parts, "")))
	require.NoError(t, err)
	return m
}

// topFixtureQuorum is leader 1 and follower 2 (voters) with observers 3
// and 4.
func topFixtureQuorum() *cli.QuorumDescription {
	rs := func(id int32, leo int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		r := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		r.ReplicaID, r.LogEndOffset = id, leo
		return r
	}
	d := &cli.QuorumDescription{ClusterID: "c1"}
	d.LeaderID, d.LeaderEpoch, d.HighWatermark = 1, 3, 57
	d.CurrentVoters = append(d.CurrentVoters, rs(1, 57), rs(2, 55))
	d.Observers = append(d.Observers, rs(3, 50), rs(4, 57))
	return d
}

// topFixtureSnapshots are two scrapes of a four-broker cluster, two
// seconds apart: node 1 goes from A to B; node 2 (fenced) serves A twice,
// so it is idle; node 3's second exposition is invalid; node 4 has no
// metrics endpoint.
func topFixtureSnapshots(t *testing.T) (prev, cur *topSnapshot) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(2 * time.Second)
	_, invalid := ParseExposition(strings.NewReader(topFixtureInvalid))
	require.Error(t, invalid)
	base := func(at time.Time) *topSnapshot {
		s := &topSnapshot{At: at, ClusterID: "c1", ControllerID: 1, Quorum: topFixtureQuorum()}
		for id := int32(1); id <= 4; id++ {
			s.Brokers = append(s.Brokers, kadm.BrokerDetail{NodeID: id, Host: fmt.Sprintf("10.0.0.%d", id), Port: 9092})
		}
		s.Topics = []topicMeta{
			{Name: "audit", Partitions: 1},
			{Name: "idle", Partitions: 2, Leaderless: 1},
			{Name: "orders", Partitions: 3, UnderReplicated: 1},
		}
		return s
	}
	noEndpoint := "the broker has no metrics.listener config (set it, or pass --metrics)"
	prev, cur = base(t0), base(t1)
	prev.Nodes = []nodeScrape{
		{ID: 1, Addr: "10.0.0.1:9092", URL: "http://10.0.0.1:9100/metrics", At: t0, Metrics: parseFixture(t, topFixtureA, topFixtureLeader)},
		{ID: 2, Addr: "10.0.0.2:9092", URL: "http://10.0.0.2:9100/metrics", At: t0, Metrics: parseFixture(t, topFixtureA, topFixtureFencedFollower)},
		{ID: 3, Addr: "10.0.0.3:9092", URL: "http://10.0.0.3:9100/metrics", At: t0, Metrics: parseFixture(t, topFixtureA)},
		{ID: 4, Addr: "10.0.0.4:9092", Err: noEndpoint},
	}
	cur.Nodes = []nodeScrape{
		{ID: 1, Addr: "10.0.0.1:9092", URL: "http://10.0.0.1:9100/metrics", At: t1, Metrics: parseFixture(t, topFixtureB, topFixtureLeader)},
		{ID: 2, Addr: "10.0.0.2:9092", URL: "http://10.0.0.2:9100/metrics", At: t1, Metrics: parseFixture(t, topFixtureA, topFixtureFencedFollower)},
		{ID: 3, Addr: "10.0.0.3:9092", URL: "http://10.0.0.3:9100/metrics", Err: "http://10.0.0.3:9100/metrics: " + invalid.Error()},
		{ID: 4, Addr: "10.0.0.4:9092", Err: noEndpoint},
	}
	return prev, cur
}

func TestTopFrameRatesAndP99(t *testing.T) {
	prev, cur := topFixtureSnapshots(t)
	f := buildFrame(prev, cur, 2)
	require.Equal(t, 2*time.Second, f.Window)
	require.Len(t, f.Nodes, 4)

	one := f.Nodes[0]
	require.Equal(t, "leader", one.Role, "the raft state the node reports")
	require.Equal(t, known(4), one.Partitions)
	require.Equal(t, known(9), one.Connections, "a gauge is its latest value")
	require.Equal(t, known(120), one.Requests, "240 requests of any API in 2 s")
	require.Equal(t, known(1<<20+1<<10), one.BytesIn, "summed over topics")
	require.Equal(t, known(2<<20), one.BytesOut)
	require.Equal(t, known(1010), one.MessagesIn)
	// 200 Produce in the window: the 99th percentile is the 198th, in
	// (2.5, 5] where 180 are below: 2.5 + 2.5 × 18/20.
	require.Equal(t, quantileValue{Ms: 4.75, Source: quantileWindow}, one.ProduceP99)
	// 40 Fetch: the 39.6th is above 500 ms, in +Inf: the largest finite
	// bound, as histogram_quantile answers.
	require.Equal(t, quantileValue{Ms: 500, Source: quantileWindow}, one.FetchP99)

	two := f.Nodes[1]
	require.Equal(t, "follower", two.Role)
	require.True(t, two.Fenced)
	require.Equal(t, known(0), two.BytesIn, "nothing moved between its scrapes")
	require.Equal(t, quantileValue{Source: quantileIdle}, two.ProduceP99, "no Produce in the window: no p99, not 0")

	three := f.Nodes[2]
	require.Equal(t, "observer", three.Role, "no metrics: the role DescribeQuorum gives")
	require.Equal(t, brokerRow{ID: 3, Addr: "10.0.0.3:9092", Role: "observer"}, three, "every metric cell unknown")

	require.Equal(t, []topicRow{
		{Name: "orders", Partitions: 3, UnderReplicated: 1, BytesIn: known(1 << 20), BytesOut: known(2 << 20), MessagesIn: known(1000)},
		{Name: "audit", Partitions: 1, BytesIn: known(1 << 10), BytesOut: known(0), MessagesIn: known(10)},
	}, f.Topics, "busiest first, cut at --topics; summed over nodes 1 and 2")
	require.Equal(t, 3, f.TopicsTotal)

	var out bytes.Buffer
	renderFrame(&out, f)
	require.Equal(t, `strata top  2026-03-01 12:00:02  rates and p99 over the last 2.0s
cluster c1  controller 1  brokers 4  topics 3

quorum  leader 1  epoch 3  high watermark 57
NODE  ROLE      LOG-END  LAG  EPOCH  HW
1     leader    57       0    3      57
2     follower  55       2    3      55
3     observer  50       7    -      -
4     observer  57       0    -      -

NODE  ADDRESS        ROLE             PARTITIONS  LEADERS  URP  OFFLINE  CONNS  REQ/S  IN/S    OUT/S   MSG-IN/S  PRODUCE-P99-MS  FETCH-P99-MS
1     10.0.0.1:9092  leader           4           3        1    0        9      120.0  1.0MiB  2.0MiB  1010.0    4.75            500
2     10.0.0.2:9092  follower,fenced  4           3        1    0        7      0.0    0B      0B      0.0       idle            idle
3     10.0.0.3:9092  observer         -           -        -    -        -      -      -       -       -         -               -
4     10.0.0.4:9092  observer         -           -        -    -        -      -      -       -       -         -               -
idle: no such request in the window

topics  2 of 3, by bytes in
TOPIC   PARTITIONS  URP  LEADERLESS  IN/S    OUT/S   MSG-IN/S
orders  3           1    0           1.0MiB  2.0MiB  1000.0
audit   1           0    0           1.0KiB  0B      10.0

notes
  node 3: http://10.0.0.3:9100/metrics: invalid exposition: text format parsing error in line 2: expected float as value, got ""
  node 4: the broker has no metrics.listener config (set it, or pass --metrics)
`, out.String())
}

func TestTopFirstFrameAndRestart(t *testing.T) {
	prev, cur := topFixtureSnapshots(t)

	// The first frame: no rates; p99 from the cumulative buckets, marked.
	f := buildFrame(nil, prev, defaultTopTopics)
	one := f.Nodes[0]
	require.Equal(t, metricValue{}, one.BytesIn)
	// 100 Produce since start: the 99th is in (2.5, 5] above 95: 2.5 + 2.5 × 4/5.
	require.Equal(t, quantileValue{Ms: 4.5, Source: quantileSinceStart}, one.ProduceP99)
	// 400 Fetch: the 396th is in (250, 500] above 100: 250 + 250 × 296/300.
	require.InDelta(t, 250+250*296.0/300, one.FetchP99.Ms, 1e-9)
	var out bytes.Buffer
	renderFrame(&out, f)
	require.Contains(t, out.String(), "first scrape: rates from the next frame, p99 since each node started\n")
	require.Regexp(t, `(?m)^1 +10\.0\.0\.1:9092 +leader +4 +3 +1 +0 +7 +- +- +- +- +4\.50\* +497\*$`, out.String())
	require.Contains(t, out.String(), "* p99 since the node started")
	require.Regexp(t, `(?m)^idle +2 +0 +1 +- +- +-$`, out.String(), "topic rates need two scrapes")

	// Node 1 restarts between the scrapes (B, then A): each counter that
	// went down counts from zero, and the histogram cannot be subtracted.
	cur.Nodes[0].Metrics, prev.Nodes[0].Metrics = prev.Nodes[0].Metrics, cur.Nodes[0].Metrics
	f = buildFrame(prev, cur, defaultTopTopics)
	one = f.Nodes[0]
	require.Equal(t, known(510.0/2), one.Requests, "A's 510 requests since the restart, in 2 s")
	require.Equal(t, quantileValue{Ms: 4.5, Source: quantileSinceStart}, one.ProduceP99)

	// A node scraped from another URL than before has no window either.
	prev, cur = topFixtureSnapshots(t)
	cur.Nodes[0].URL = "http://10.0.0.9:9100/metrics"
	require.Equal(t, metricValue{}, buildFrame(prev, cur, 1).Nodes[0].BytesIn)

	// A frame whose gathering failed says only that.
	out.Reset()
	renderFrame(&out, buildFrame(prev, &topSnapshot{At: cur.At, Err: "metadata: refused"}, 1))
	require.Equal(t, "strata top  2026-03-01 12:00:02  no answer from the cluster: metadata: refused\n", out.String())
}

func TestTopQuantile(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name   string
		counts []float64 // cumulative, for bounds 1, 2, 4, +Inf
		q      float64
		want   float64
		ok     bool
	}{
		{"empty", []float64{0, 0, 0, 0}, 0.99, 0, false},
		{"in the first bucket, from 0", []float64{100, 100, 100, 100}, 0.5, 0.5, true},
		{"interpolated", []float64{0, 50, 100, 100}, 0.75, 3, true},
		{"reaching a bound exactly", []float64{0, 50, 100, 100}, 0.5, 2, true},
		{"in +Inf: the largest finite bound", []float64{0, 0, 90, 100}, 0.99, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := buckets{bounds: []float64{1, 2, 4, inf}, counts: tc.counts}.quantile(tc.q)
			require.Equal(t, tc.ok, ok)
			require.InDelta(t, tc.want, got, 1e-12)
		})
	}

	later := buckets{bounds: []float64{1, 2, inf}, counts: []float64{5, 8, 9}}
	d, ok := later.since(buckets{bounds: []float64{1, 2, inf}, counts: []float64{4, 4, 4}})
	require.True(t, ok)
	require.Equal(t, []float64{1, 4, 5}, d.counts)
	_, ok = later.since(buckets{bounds: []float64{1, 2, inf}, counts: []float64{6, 6, 6}})
	require.False(t, ok, "a count went down: the node restarted")
	_, ok = later.since(buckets{bounds: []float64{1, inf}, counts: []float64{1, 1}})
	require.False(t, ok, "other bounds")

	require.Equal(t, 5.0, counterRate(10, 20, 2*time.Second))
	require.Equal(t, 1.5, counterRate(10, 3, 2*time.Second), "a reset counts from zero")
}

func TestTopParseExposition(t *testing.T) {
	m := parseFixture(t, topFixtureA, topFixtureLeader)
	v, ok := m.Gauge(metrics.PartitionCount)
	require.True(t, ok)
	require.Equal(t, 4.0, v)
	require.Equal(t, "leader", m.raftState)
	require.Equal(t, 510.0, m.requests)
	require.Equal(t, topicCounters{bytesIn: 1e6, bytesOut: 2e6, messagesIn: 1000}, m.topics["orders"])
	require.Equal(t, []float64{0.5, 1, 2.5, 5}, m.latency[produceAPI].bounds[:4])
	require.Equal(t, []float64{10, 60, 95, 100, 100}, m.latency[produceAPI].counts)
	require.NotContains(t, m.latency, "Metadata", "only Produce and Fetch are kept")

	// Families that are missing leave their cells unknown.
	empty := parseFixture(t, "")
	_, ok = empty.Gauge(metrics.PartitionCount)
	require.False(t, ok)

	_, err := ParseExposition(strings.NewReader(topFixtureInvalid))
	require.ErrorContains(t, err, "invalid exposition")
}

func TestTopMetricsEndpoints(t *testing.T) {
	for _, tc := range []struct{ listener, brokerHost, want string }{
		{"10.0.0.5:9100", "broker.example", "http://10.0.0.5:9100/metrics"},
		{":9100", "broker.example", "http://broker.example:9100/metrics"},
		{"0.0.0.0:9100", "10.1.2.3", "http://10.1.2.3:9100/metrics"},
		{"[::]:9100", "10.1.2.3", "http://10.1.2.3:9100/metrics"},
		{"0.0.0.0:9100", "::1", "http://[::1]:9100/metrics"},
		{"http://0.0.0.0:9100/prom", "b", "http://b:9100/prom"},
		{"https://m.example/", "b", "https://m.example/metrics"},
	} {
		got, err := metricsListenerURL(tc.listener, tc.brokerHost)
		require.NoError(t, err, tc.listener)
		require.Equal(t, tc.want, got, "%s advertised as %s", tc.listener, tc.brokerHost)
	}
	_, err := metricsListenerURL("9100", "b")
	require.ErrorContains(t, err, `metrics.listener "9100"`)

	eps, err := parseMetricsFlag("127.0.0.1:9100, 3=h:9101,https://m.example:8443/x")
	require.NoError(t, err)
	require.Equal(t, []metricsEndpoint{
		{node: -1, url: "http://127.0.0.1:9100/metrics"},
		{node: 3, url: "http://h:9101/metrics"},
		{node: -1, url: "https://m.example:8443/x"},
	}, eps)
	for _, bad := range []string{"nohost", "ftp://h:1", "x=h:1", "-1=h:1", "1=h:1,1=h:2", ":9100", "http://", "h:port"} {
		_, err := parseMetricsFlag(bad)
		require.Error(t, err, bad)
	}

	// Numbered endpoints go to their node, the others to the remaining
	// brokers in id order; one too many is a note.
	urls, notes := assignEndpoints(eps, []int32{3, 2, 1})
	require.Equal(t, map[int32]string{1: "http://127.0.0.1:9100/metrics", 2: "https://m.example:8443/x", 3: "http://h:9101/metrics"}, urls)
	require.Empty(t, notes)
	urls, notes = assignEndpoints(eps, []int32{3})
	require.Equal(t, map[int32]string{3: "http://h:9101/metrics"}, urls)
	require.Len(t, notes, 2)
	require.Contains(t, notes[0], "more endpoints than brokers")
}

func TestTopScrape(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, expositionAccept, r.Header.Get("Accept"))
		fmt.Fprint(w, topFixtureA)
	})
	mux.HandleFunc("/invalid", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, topFixtureInvalid) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	g := newTopGatherer(nil, "", nil, time.Second)
	nodes := []nodeScrape{
		{ID: 1, URL: srv.URL + "/metrics"},
		{ID: 2, URL: srv.URL + "/invalid"},
		{ID: 3, URL: srv.URL + "/missing"},
		{ID: 4, URL: "http://" + proccluster.FreePort(t) + "/metrics"},
		{ID: 5, Err: "no endpoint"},
	}
	g.scrapeAll(context.Background(), nodes)
	require.NotNil(t, nodes[0].Metrics)
	require.False(t, nodes[0].At.IsZero())
	require.Empty(t, nodes[0].Err)
	require.Contains(t, nodes[1].Err, "invalid exposition")
	require.Contains(t, nodes[2].Err, "answered 404 Not Found")
	require.Regexp(t, `^http://127\.0\.0\.1:\d+/metrics: dial tcp .*connection refused`, nodes[3].Err)
	require.Equal(t, "no endpoint", nodes[4].Err)
	for _, n := range nodes[1:] {
		require.Nil(t, n.Metrics)
	}
}

// cliTestTimeout bounds one run of the command.
const cliTestTimeout = 20 * time.Second

// runTopCommand runs `strata top` in process with args until it exits or
// interrupt ends (its Ctrl-C), bounded by cliTestTimeout, and returns its
// exit code, stdout and stderr.
func runTopCommand(t *testing.T, interrupt context.Context, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(interrupt, cliTestTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	code := Command(ctx, args, &out, &errOut)
	if interrupt.Err() == nil {
		require.NoError(t, ctx.Err(), "strata top %q did not finish within %v", args, cliTestTimeout)
	}
	return code, out.String(), errOut.String()
}

// topRow is the fields of out's line starting with prefix.
func topRow(t *testing.T, out, prefix string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.Fields(line)
		}
	}
	require.Failf(t, "no line", "starting with %q in:\n%s", prefix, out)
	return nil
}

// fixtureServer serves A+leader on odd requests and B+leader on even
// ones: the two scrapes of --once.
func fixtureServer(t *testing.T) *httptest.Server {
	var scrapes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if scrapes.Add(1)%2 == 1 {
			fmt.Fprint(w, topFixtureA+topFixtureLeader)
		} else {
			fmt.Fprint(w, topFixtureB+topFixtureLeader)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTopAgainstNode runs `strata top` against a real node for its Kafka
// side (Metadata, DescribeQuorum, DescribeConfigs), with the metrics of
// an httptest server until the node serves its own.
func TestTopAgainstNode(t *testing.T) {
	cfg := node.DefaultConfig()
	cfg.Listener, cfg.ControllerListener, cfg.LogDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	n := proccluster.StartInProcess(t, cfg)
	require.Eventually(t, n.ActiveController, proccluster.InProcessTimeout, 10*time.Millisecond)
	ctx := context.Background()
	cl, err := cli.NewKafkaClient([]string{n.Addr()})
	require.NoError(t, err)
	defer cl.Close()
	_, err = kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "orders")
	require.NoError(t, err)

	t.Run("once with --metrics", func(t *testing.T) {
		srv := fixtureServer(t)
		start := time.Now()
		code, out, errOut := runTopCommand(t, ctx, "--once", "--interval", "200ms", "--bootstrap-server", n.Addr(), "--metrics", srv.URL)
		require.Equal(t, cli.ExitOK, code, errOut)
		require.Less(t, time.Since(start), 5*time.Second)
		require.NotContains(t, out, clearScreen, "--once is for scripts")
		require.Contains(t, out, fmt.Sprintf("cluster %s  controller 1  brokers 1  topics 1\n", n.ClusterID()))
		require.Regexp(t, `(?m)^quorum  leader 1  epoch [1-9]\d*  high watermark [1-9]\d*$`, out)
		member := topRow(t, out, "1     leader")
		require.Equal(t, []string{"0", "3", "57"}, member[3:], "lag 0; epoch and high watermark from the fixture")

		row := topRow(t, out, "1     "+n.AdvertisedAddr())
		require.Equal(t, []string{"leader", "4", "3", "1", "0", "9"}, row[2:8], "role and gauges from the second exposition")
		require.Regexp(t, `^\d+\.\d$`, row[8], "requests/s")
		require.Regexp(t, `MiB$`, row[9], "about 2 MiB in over the window")
		require.Equal(t, []string{"4.75", "500"}, row[12:], "the p99 of the histograms' difference")

		topic := topRow(t, out, "orders")
		require.Equal(t, []string{"3", "0", "0"}, topic[1:4], "partitions, URP and leaderless from Metadata")
		require.Regexp(t, `MiB$`, topic[4])
		require.NotContains(t, out, "notes")
	})

	t.Run("discovery through DescribeConfigs", func(t *testing.T) {
		code, out, errOut := runTopCommand(t, ctx, "--once", "--interval", "100ms", "--bootstrap-server", n.Addr())
		require.Equal(t, cli.ExitOK, code, errOut)
		// The node reports its bound metrics.listener, and its real
		// /metrics fills the row.
		require.NotContains(t, out, "notes", out)
		row := topRow(t, out, "1     "+n.AdvertisedAddr())
		require.Equal(t, []string{"leader", "3", "3", "0", "0"}, row[2:7], "role, partitions, leaders, URP, offline from the node's own metrics: %s", out)
	})

	t.Run("invalid exposition", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, topFixtureInvalid) }))
		defer srv.Close()
		code, out, errOut := runTopCommand(t, ctx, "--once", "--interval", "100ms", "--bootstrap-server", n.Addr(), "--metrics", "1="+srv.URL)
		require.Equal(t, cli.ExitOK, code, errOut)
		require.Contains(t, out, "node 1: "+srv.URL+"/metrics: invalid exposition")
		require.Equal(t, []string{"-", "-"}, topRow(t, out, "1     "+n.AdvertisedAddr())[12:])
	})

	t.Run("live frames", func(t *testing.T) {
		srv := fixtureServer(t)
		code, out, errOut := runTopCommand(t, ctx, "--iterations", "2", "--interval", "100ms", "--bootstrap-server", n.Addr(), "--metrics", srv.URL)
		require.Equal(t, cli.ExitOK, code, errOut)
		frames := strings.Split(out, clearScreen)
		require.Len(t, frames, 3, "two frames, each after a clear")
		require.Contains(t, frames[1], "first scrape:")
		require.Contains(t, frames[1], "4.50*", "the first frame's p99 is since start")
		require.Contains(t, frames[2], "rates and p99 over the last")

		// Until Ctrl-C, which is a clean exit.
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		code, out, errOut = runTopCommand(t, ctx, "--interval", "100ms", "--bootstrap-server", n.Addr(), "--metrics", srv.URL)
		require.Equal(t, cli.ExitOK, code, errOut)
		require.GreaterOrEqual(t, strings.Count(out, clearScreen), 2)
	})
}

func TestTopBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"extra"},
		{"--metrics", "nohost"},
		{"--metrics", "ftp://h:1"},
		{"--metrics", "1=a:1,1=b:2"},
		{"--interval", "1ms"},
		{"--once", "--iterations", "2"},
		{"--iterations", "-1"},
		{"--topics", "-1"},
		{"--timeout", "0s"},
		{"--bootstrap-server", "noport"},
	} {
		code, _, errOut := runTopCommand(t, context.Background(), args...)
		require.Equal(t, cli.ExitUsage, code, "%q", args)
		require.True(t, strings.HasPrefix(errOut, "strata top: ") || strings.Contains(errOut, "flag"), "%q: %s", args, errOut)
	}
	code, _, errOut := runTopCommand(t, context.Background(), "--metrics", "ftp://h:1")
	require.Equal(t, cli.ExitUsage, code)
	require.Contains(t, errOut, `bad --metrics entry "ftp://h:1"`)

	// Nothing listens: a clear error, refused at once or (a loaded
	// machine) when --timeout passes; not a hang.
	addr := proccluster.FreePort(t)
	start := time.Now()
	code, out, errOut := runTopCommand(t, context.Background(), "--once", "--timeout", "1s", "--interval", "100ms", "--bootstrap-server", addr)
	require.Equal(t, cli.ExitError, code)
	require.Empty(t, out)
	require.Regexp(t, regexp.MustCompile(`^strata top: (metadata from `+regexp.QuoteMeta(addr)+`: .*connection refused|no Metadata answer from `+regexp.QuoteMeta(addr)+` within 1s: )`), errOut)
	require.Less(t, time.Since(start), 5*time.Second)
}
