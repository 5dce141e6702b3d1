package replica

import (
	"strconv"
	"time"

	"github.com/strata-log/strata/core/metrics"
)

// TopicMetrics are the per-topic counters of a topic hosted here
// (Kafka's BrokerTopicMetrics): the broker counts a partition's produces
// and fetches into its topic's. A topic's series exist while one of its
// partitions is hosted here, so a client naming topics that do not exist
// creates none. With metrics off every counter is nil and counts nothing.
type TopicMetrics struct {
	BytesIn, MessagesIn, Produces, FailedProduces *metrics.Counter
	BytesOut, Fetches, FailedFetches              *metrics.Counter
	// partitions counts the hosted partitions sharing these series.
	partitions int
}

// managerMetrics are the manager's series.
type managerMetrics struct {
	reg        *metrics.Registry
	flushTime  *metrics.Histogram
	flushBytes *metrics.Histogram
	// topics holds each hosted topic's series; only looked up by name.
	topics map[string]*TopicMetrics
	// isrShrinks and isrExpands count the ISR changes the controller
	// accepted from this broker's leaders.
	isrShrinks, isrExpands *metrics.Counter
	// damagedLogs counts the damage found in logs while running
	// (damage.go).
	damagedLogs *metrics.Counter
}

// ObserveFlush records one flush cycle of any hosted log
// (log.FlushObserver).
func (mm *managerMetrics) ObserveFlush(bytes int64, took time.Duration) {
	mm.flushTime.Observe(float64(took) / float64(time.Millisecond))
	mm.flushBytes.Observe(float64(bytes))
}

// initMetrics registers the manager's gauges, computed from the hosted
// partitions at each snapshot (a walk of the partitions per scrape costs
// less than keeping counts right through every state change).
func (m *Manager) initMetrics() {
	reg := m.cfg.Metrics
	m.metrics = &managerMetrics{reg: reg, topics: map[string]*TopicMetrics{},
		flushTime: reg.Histogram(metrics.LogFlushTime), flushBytes: reg.Histogram(metrics.LogFlushBytes),
		isrShrinks: reg.Counter(metrics.IsrShrinks), isrExpands: reg.Counter(metrics.IsrExpands),
		damagedLogs: reg.Counter(metrics.ReplicaDamagedLogs)}
	if reg == nil {
		return
	}
	m.cfg.flushObserver = m.metrics
	count := func(pred func(p *Partition) bool) func() float64 {
		return func() float64 {
			n := 0
			for _, p := range m.parts {
				if pred(p) {
					n++
				}
			}
			return float64(n)
		}
	}
	reg.GaugeFunc(metrics.PartitionCount, count(func(*Partition) bool { return true }))
	reg.GaugeFunc(metrics.LeaderCount, count((*Partition).IsLeader))
	reg.GaugeFunc(metrics.OfflinePartitions, count(func(p *Partition) bool { return p.state != stateOnline }))
	reg.GaugeFunc(metrics.UnderReplicatedPartitions, count(func(p *Partition) bool {
		return p.IsLeader() && len(p.isr) < len(p.replicas)
	}))
	reg.GaugeFunc(metrics.RecoveringPartitions, count((*Partition).recovering))
	reg.GaugeFunc(metrics.UnderMinISRPartitions, count(func(p *Partition) bool {
		return p.IsLeader() && len(p.isr) < p.cfg.minInsyncReplicas
	}))
	reg.GaugeFunc(metrics.ReplicaMaxLag, func() float64 {
		lag := int64(0)
		for _, p := range m.parts {
			if p.following() {
				lag = max(lag, p.followerLag)
			}
		}
		return float64(lag)
	})
}

// topicMetrics returns the series of topic, creating them for its first
// hosted partition.
func (mm *managerMetrics) topicMetrics(topic string) *TopicMetrics {
	tm := mm.topics[topic]
	if tm == nil {
		r := mm.reg
		tm = &TopicMetrics{
			BytesIn: r.Counter(metrics.TopicBytesIn, topic), MessagesIn: r.Counter(metrics.TopicMessagesIn, topic),
			Produces: r.Counter(metrics.TopicProduces, topic), FailedProduces: r.Counter(metrics.TopicFailedProduces, topic),
			BytesOut: r.Counter(metrics.TopicBytesOut, topic), Fetches: r.Counter(metrics.TopicFetches, topic),
			FailedFetches: r.Counter(metrics.TopicFailedFetches, topic),
		}
		mm.topics[topic] = tm
	}
	tm.partitions++
	return tm
}

// topicFamilies are the families labelled by topic alone.
var topicFamilies = []*metrics.Def{metrics.TopicBytesIn, metrics.TopicMessagesIn, metrics.TopicProduces,
	metrics.TopicFailedProduces, metrics.TopicBytesOut, metrics.TopicFetches, metrics.TopicFailedFetches}

// partitionFamilies are the per-partition families.
var partitionFamilies = []*metrics.Def{metrics.LogSize, metrics.LogSegments, metrics.LogStartOffset, metrics.LogEndOffset}

// releaseTopic drops topic's series when its last hosted partition goes.
func (mm *managerMetrics) releaseTopic(topic string) {
	tm := mm.topics[topic]
	if tm == nil {
		return
	}
	tm.partitions--
	if tm.partitions > 0 {
		return
	}
	delete(mm.topics, topic)
	for _, d := range topicFamilies {
		mm.reg.RemoveSeries(d, topic)
	}
}

// syncPartitionMetrics registers or removes p's per-partition series as
// its topic's strata.metrics.partition.enable (and the registry's global
// switch) say.
func (p *Partition) syncPartitionMetrics() {
	reg := p.m.cfg.Metrics
	want := p.state != stateClosed && p.cfg.partitionMetrics && reg.PartitionMetrics()
	if want == p.partitionSeries {
		return
	}
	p.partitionSeries = want
	id := strconv.Itoa(int(p.id))
	if !want {
		for _, d := range partitionFamilies {
			reg.RemoveSeries(d, p.topic, id)
		}
		return
	}
	logValue := func(f func() int64) func() float64 {
		return func() float64 {
			if p.l == nil {
				return 0
			}
			return float64(f())
		}
	}
	reg.GaugeFunc(metrics.LogSize, logValue(p.Size), p.topic, id)
	reg.GaugeFunc(metrics.LogSegments, func() float64 {
		if p.l == nil {
			return 0
		}
		return float64(p.l.NumSegments())
	}, p.topic, id)
	reg.GaugeFunc(metrics.LogStartOffset, logValue(p.LogStartOffset), p.topic, id)
	reg.GaugeFunc(metrics.LogEndOffset, logValue(p.LogEndOffset), p.topic, id)
}

// Metrics is the partition's topic's series (never nil; its counters are
// nil with metrics off).
func (p *Partition) Metrics() *TopicMetrics { return p.tm }
