package top

// What `strata top` reads from a node's Prometheus exposition, and the
// arithmetic over two of them: counter rates and histogram quantiles.

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/strata-log/strata/core/metrics"
)

// The APIs whose latency a broker row shows.
const (
	produceAPI = "Produce"
	fetchAPI   = "Fetch"
)

// topGauges are the gauges a frame reads from each node.
var topGauges = []*metrics.Def{
	metrics.PartitionCount, metrics.LeaderCount, metrics.UnderReplicatedPartitions,
	metrics.OfflinePartitions, metrics.Connections, metrics.ControllerActive,
	metrics.BrokerFenced, metrics.RaftEpoch, metrics.RaftHighWatermark,
}

// NodeMetrics is what a frame reads from one node's exposition.
type NodeMetrics struct {
	// gauges are the topGauges the node exports, each summed over its
	// series (they have one).
	gauges map[*metrics.Def]float64
	// raftState is the state whose current_state series is 1, "" if none.
	raftState string
	// topics are the per-topic counters, by topic.
	topics map[string]topicCounters
	// requests is requests_total summed over every API.
	requests float64
	// latency are the total-time histograms of produceAPI and fetchAPI.
	latency map[string]buckets
}

// topicCounters are one topic's counters on one node.
type topicCounters struct{ bytesIn, bytesOut, messagesIn float64 }

func (m *NodeMetrics) Gauge(d *metrics.Def) (float64, bool) {
	if m == nil {
		return 0, false
	}
	v, ok := m.gauges[d]
	return v, ok
}

// ParseExposition reads the Prometheus text format.
func ParseExposition(r io.Reader) (*NodeMetrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("invalid exposition: %w", err)
	}
	m := &NodeMetrics{gauges: map[*metrics.Def]float64{}, topics: map[string]topicCounters{}, latency: map[string]buckets{}}
	for _, d := range topGauges {
		if mf := families[d.Name]; mf != nil {
			var sum float64
			for _, s := range mf.GetMetric() {
				sum += sampleValue(s)
			}
			m.gauges[d] = sum
		}
	}
	for _, s := range families[metrics.RaftState.Name].GetMetric() {
		if sampleValue(s) == 1 {
			m.raftState = labelValue(s, "state")
		}
	}
	for _, c := range []struct {
		def *metrics.Def
		add func(*topicCounters, float64)
	}{
		{metrics.TopicBytesIn, func(t *topicCounters, v float64) { t.bytesIn += v }},
		{metrics.TopicBytesOut, func(t *topicCounters, v float64) { t.bytesOut += v }},
		{metrics.TopicMessagesIn, func(t *topicCounters, v float64) { t.messagesIn += v }},
	} {
		for _, s := range families[c.def.Name].GetMetric() {
			topic := labelValue(s, "topic")
			t := m.topics[topic]
			c.add(&t, sampleValue(s))
			m.topics[topic] = t
		}
	}
	for _, s := range families[metrics.Requests.Name].GetMetric() {
		m.requests += sampleValue(s)
	}
	for _, s := range families[metrics.RequestTotalTime.Name].GetMetric() {
		api := labelValue(s, "request")
		if h := s.GetHistogram(); h != nil && (api == produceAPI || api == fetchAPI) {
			m.latency[api] = bucketsOf(h)
		}
	}
	return m, nil
}

func sampleValue(s *dto.Metric) float64 {
	switch {
	case s.GetGauge() != nil:
		return s.GetGauge().GetValue()
	case s.GetCounter() != nil:
		return s.GetCounter().GetValue()
	case s.GetUntyped() != nil:
		return s.GetUntyped().GetValue()
	}
	return 0
}

func labelValue(s *dto.Metric, name string) string {
	for _, l := range s.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// buckets are a histogram's cumulative counts by upper bound, ascending,
// the last bound +Inf.
type buckets struct {
	bounds []float64
	counts []float64
}

func bucketsOf(h *dto.Histogram) buckets {
	bs := slices.SortedFunc(slices.Values(h.GetBucket()), func(a, b *dto.Bucket) int {
		return cmp.Compare(a.GetUpperBound(), b.GetUpperBound())
	})
	count := func(n uint64, f float64) float64 {
		if f != 0 {
			return f
		}
		return float64(n)
	}
	var out buckets
	for _, b := range bs {
		out.bounds = append(out.bounds, b.GetUpperBound())
		out.counts = append(out.counts, count(b.GetCumulativeCount(), b.GetCumulativeCountFloat()))
	}
	if len(out.bounds) == 0 || !math.IsInf(out.bounds[len(out.bounds)-1], 1) {
		out.bounds = append(out.bounds, math.Inf(1))
		out.counts = append(out.counts, count(h.GetSampleCount(), h.GetSampleCountFloat()))
	}
	return out
}

// since is the histogram of the observations made after earlier, and
// true; or b itself and false when earlier cannot be subtracted: other
// bounds, or a smaller count somewhere (the node restarted).
func (b buckets) since(earlier buckets) (buckets, bool) {
	if !slices.Equal(b.bounds, earlier.bounds) {
		return b, false
	}
	d := buckets{bounds: b.bounds, counts: make([]float64, len(b.counts))}
	for i := range b.counts {
		if d.counts[i] = b.counts[i] - earlier.counts[i]; d.counts[i] < 0 {
			return b, false
		}
	}
	return d, true
}

// quantile is the q-quantile as Prometheus's histogram_quantile computes
// it: the bucket where the cumulative count reaches q of the total, and a
// linear interpolation within it (from 0 for the first bucket); in the
// +Inf bucket, the largest finite bound. False when b counts nothing.
func (b buckets) quantile(q float64) (float64, bool) {
	n := len(b.counts)
	if n == 0 || b.counts[n-1] <= 0 {
		return 0, false
	}
	rank := q * b.counts[n-1]
	i, _ := slices.BinarySearch(b.counts, rank) // the first count >= rank
	if math.IsInf(b.bounds[i], 1) {
		if i == 0 {
			return 0, false
		}
		return b.bounds[i-1], true
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = b.bounds[i-1], b.counts[i-1]
	} else if b.bounds[0] <= 0 {
		return b.bounds[0], true
	}
	return lower + (b.bounds[i]-lower)*(rank-below)/(b.counts[i]-below), true
}

// counterRate is a counter's rate per second between two readings; a
// smaller reading means the node restarted and counted again from zero.
func counterRate(earlier, later float64, elapsed time.Duration) float64 {
	d := later - earlier
	if d < 0 {
		d = later
	}
	return d / elapsed.Seconds()
}
