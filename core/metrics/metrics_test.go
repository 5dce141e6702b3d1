package metrics

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCatalogIsSortedUniqueAndWellFormed(t *testing.T) {
	names := make([]string, len(Catalog))
	for i, d := range Catalog {
		names[i] = d.Name
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	require.Equal(t, sorted, names, "the catalog is sorted by name")
	require.Len(t, slices.Compact(sorted), len(names), "names are unique")
	for _, d := range Catalog {
		require.NotEmpty(t, d.Help, d.Name)
		require.Equal(t, d.Kind == CounterKind, strings.HasSuffix(d.Name, "_total"), "%s: counters and only counters end in _total", d.Name)
		require.Equal(t, d.Kind == HistogramKind, d.Buckets != nil, "%s: histograms and only histograms have buckets", d.Name)
		require.True(t, slices.IsSorted(d.Buckets), d.Name)
		require.Equal(t, slices.Contains(d.Labels, "partition"), d.PerPartition, "%s: per-partition families are the ones labelled by partition", d.Name)
		require.True(t, strings.HasPrefix(d.Name, "kafka_") == (d.Kafka != ""), "%s: Kafka's names mirror a Kafka MBean, strata_ names do not", d.Name)
	}
}

func TestRegistry(t *testing.T) {
	r := New()
	c := r.Counter(TopicMessagesIn, "orders")
	c.Add(3)
	r.Counter(TopicMessagesIn, "orders").Inc()
	r.Counter(TopicMessagesIn, "audit").Add(2)
	h := r.Histogram(RequestTotalTime, "Produce")
	for _, v := range []float64{0.3, 0.7, 7, 20000} {
		h.Observe(v)
	}
	size := 10.0
	r.GaugeFunc(LogSize, func() float64 { return size }, "orders", "0")
	size = 42

	snap := r.Snapshot()
	require.Len(t, snap, 3)
	require.Equal(t, LogSize, snap[0].Def, "sorted by name")
	require.Equal(t, 42.0, snap[0].Series[0].Value, "a gauge func is read at the snapshot")
	msgs := snap[2]
	require.Equal(t, TopicMessagesIn, msgs.Def)
	require.Equal(t, []string{"audit"}, msgs.Series[0].Labels, "series sorted by labels")
	require.Equal(t, 2.0, msgs.Series[0].Value)
	require.Equal(t, 4.0, msgs.Series[1].Value)
	tt := snap[1].Series[0]
	require.Equal(t, uint64(4), tt.Count)
	require.InDelta(t, 20008.0, tt.Sum, 1e-9)
	require.Equal(t, uint64(1), tt.Buckets[slices.Index(MillisBuckets, 0.5)], "cumulative: 0.3 is at or below 0.5")
	require.Equal(t, uint64(2), tt.Buckets[slices.Index(MillisBuckets, 1)])
	require.Equal(t, uint64(3), tt.Buckets[len(MillisBuckets)-1], "20 s is only in +Inf")

	r.Remove(TopicMessagesIn, "topic", "orders")
	v, ok := r.Value(TopicMessagesIn, "orders")
	require.False(t, ok, "removed: %v", v)
	c.Inc() // a removed series' holder may still count; nothing breaks

	r.SetPartitionMetrics(false)
	require.Nil(t, r.Gauge(LogEndOffset, "orders", "1"), "per-partition families off")
	require.Panics(t, func() { r.Counter(TopicMessagesIn) }, "wrong label count")
}

func TestNilRegistryCountsNothing(t *testing.T) {
	var r *Registry
	r.Counter(Requests, "Produce").Inc()
	r.Gauge(Connections).Set(3)
	r.Histogram(LogFlushTime).Observe(1)
	r.GaugeFunc(LogSize, func() float64 { return 1 }, "t", "0")
	r.Remove(TopicBytesIn, "topic", "t")
	require.Nil(t, r.Snapshot())
	require.False(t, r.PartitionMetrics())
}

func TestCatalogListsEveryDef(t *testing.T) {
	src, err := os.ReadFile("catalog.go")
	require.NoError(t, err)
	require.Equal(t, strings.Count(string(src), "= &Def{"), len(Catalog), "every Def of catalog.go is in Catalog")
}

// BenchmarkProduceRequestSeries is what the broker adds to one produce
// request with metrics on: the request counter, the size and five stage
// histograms, and a partition's three topic counters (the timestamps are
// the caller's: five env.Monotonic calls).
func BenchmarkProduceRequestSeries(b *testing.B) {
	r := New()
	req := r.Counter(Requests, "Produce")
	var hs []*Histogram
	for _, d := range []*Def{RequestBytes, RequestQueueTime, RequestLocalTime, RequestRemoteTime, RequestResponseSendTime, RequestTotalTime} {
		hs = append(hs, r.Histogram(d, "Produce"))
	}
	bytesIn, msgsIn, produces := r.Counter(TopicBytesIn, "t"), r.Counter(TopicMessagesIn, "t"), r.Counter(TopicProduces, "t")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		req.Inc()
		for j, h := range hs {
			h.Observe(float64((i + j) % 3000))
		}
		produces.Inc()
		bytesIn.Add(1 << 20)
		msgsIn.Add(1000)
	}
}

// BenchmarkSnapshot10kPartitions is one scrape's work on the loop with
// 10,000 partitions' per-partition series (4 gauges each) and 100 topics.
func BenchmarkSnapshot10kPartitions(b *testing.B) {
	r := New()
	for p := range 10_000 {
		topic, part := "topic-"+strconv.Itoa(p%100), strconv.Itoa(p/100)
		for _, d := range []*Def{LogSize, LogSegments, LogStartOffset, LogEndOffset} {
			v := float64(p)
			r.GaugeFunc(d, func() float64 { return v }, topic, part)
		}
	}
	for t := range 100 {
		r.Counter(TopicBytesIn, "topic-"+strconv.Itoa(t)).Add(1)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(r.Snapshot()) != 5 {
			b.Fatal("families")
		}
	}
}
