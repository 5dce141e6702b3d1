package metrics

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// Kind is a metric family's type.
type Kind uint8

const (
	// CounterKind only grows (Prometheus counter, name ending _total).
	CounterKind Kind = iota
	// GaugeKind goes up and down.
	GaugeKind
	// HistogramKind counts observations into buckets.
	HistogramKind
)

func (k Kind) String() string { return [...]string{"counter", "gauge", "histogram"}[k] }

// Def describes one metric family; the catalog holds every one.
type Def struct {
	Name   string
	Kind   Kind
	Help   string
	Labels []string
	// Buckets are a histogram's upper bounds, ascending (+Inf implied).
	Buckets []float64
	// Kafka is the Kafka MBean the family mirrors, "" for Strata's own.
	Kafka string
	// PerPartition families are the ones labelled by partition: they can
	// be turned off (see the package doc).
	PerPartition bool
}

// Counter is one counter series; a nil Counter counts nothing.
type Counter struct{ v float64 }

// Add adds v (which must not be negative).
func (c *Counter) Add(v float64) {
	if c != nil {
		c.v += v
	}
}

// Inc adds one.
func (c *Counter) Inc() { c.Add(1) }

// Gauge is one gauge series; a nil Gauge records nothing.
type Gauge struct{ v float64 }

// Set sets the value.
func (g *Gauge) Set(v float64) {
	if g != nil {
		g.v = v
	}
}

// Add adds v (negative to subtract).
func (g *Gauge) Add(v float64) {
	if g != nil {
		g.v += v
	}
}

// Histogram is one histogram series; a nil Histogram records nothing.
type Histogram struct {
	bounds []float64
	counts []uint64 // per bucket, the last one +Inf
	sum    float64
	n      uint64
}

// Observe records one value.
func (h *Histogram) Observe(v float64) {
	if h == nil {
		return
	}
	i, _ := slices.BinarySearch(h.bounds, v)
	h.counts[i]++
	h.sum += v
	h.n++
}

// series is one labelled series of a family.
type series struct {
	labels []string
	c      *Counter
	g      *Gauge
	h      *Histogram
	f      func() float64 // a gauge computed at snapshot time
}

// family is a Def's series, sorted by labels.
type family struct {
	def    *Def
	series []*series
}

// Registry holds a server's series. It belongs to one loop. A nil
// Registry is valid: every method does nothing and hands out nil series.
type Registry struct {
	families []*family // sorted by name
	// noPartitions turns off the per-partition families.
	noPartitions bool
}

// New returns an empty registry.
func New() *Registry { return &Registry{} }

// SetPartitionMetrics turns the per-partition families on or off for
// series created from now on (off, such a series is nil).
func (r *Registry) SetPartitionMetrics(on bool) {
	if r != nil {
		r.noPartitions = !on
	}
}

// PartitionMetrics reports whether per-partition series are created.
func (r *Registry) PartitionMetrics() bool { return r != nil && !r.noPartitions }

func (r *Registry) family(d *Def) *family {
	i, found := slices.BinarySearchFunc(r.families, d.Name, func(f *family, name string) int { return strings.Compare(f.def.Name, name) })
	if found {
		return r.families[i]
	}
	f := &family{def: d}
	r.families = slices.Insert(r.families, i, f)
	return f
}

func compareLabels(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// get returns the series of d with labels, creating it; nil when r is nil
// or d is a per-partition family that is turned off.
func (r *Registry) get(d *Def, labels []string) *series {
	if r == nil || (d.PerPartition && r.noPartitions) {
		return nil
	}
	if len(labels) != len(d.Labels) {
		panic("metrics: " + d.Name + " takes labels " + strings.Join(d.Labels, ","))
	}
	f := r.family(d)
	i, found := slices.BinarySearchFunc(f.series, labels, func(s *series, l []string) int { return compareLabels(s.labels, l) })
	if found {
		return f.series[i]
	}
	s := &series{labels: slices.Clone(labels)}
	switch d.Kind {
	case CounterKind:
		s.c = &Counter{}
	case GaugeKind:
		s.g = &Gauge{}
	case HistogramKind:
		s.h = &Histogram{bounds: d.Buckets, counts: make([]uint64, len(d.Buckets)+1)}
	}
	f.series = slices.Insert(f.series, i, s)
	return s
}

// Counter returns the counter series of d with the label values.
func (r *Registry) Counter(d *Def, labels ...string) *Counter {
	if s := r.get(d, labels); s != nil {
		return s.c
	}
	return nil
}

// Gauge returns the gauge series of d with the label values.
func (r *Registry) Gauge(d *Def, labels ...string) *Gauge {
	if s := r.get(d, labels); s != nil {
		return s.g
	}
	return nil
}

// Histogram returns the histogram series of d with the label values.
func (r *Registry) Histogram(d *Def, labels ...string) *Histogram {
	if s := r.get(d, labels); s != nil {
		return s.h
	}
	return nil
}

// GaugeFunc makes the gauge series of d with the label values computed by
// f at every snapshot (on the loop): for values the state already holds
// (a log's size, a partition count), which would cost more to track.
func (r *Registry) GaugeFunc(d *Def, f func() float64, labels ...string) {
	if s := r.get(d, labels); s != nil {
		s.f = f
	}
}

// Remove drops every series of d whose label has value: a deleted topic's
// or partition's series.
func (r *Registry) Remove(d *Def, label, value string) {
	if r == nil {
		return
	}
	col := slices.Index(d.Labels, label)
	if col < 0 {
		panic("metrics: " + d.Name + " has no label " + label)
	}
	f := r.family(d)
	f.series = slices.DeleteFunc(f.series, func(s *series) bool { return s.labels[col] == value })
}

// RemoveSeries drops the one series of d with the label values.
func (r *Registry) RemoveSeries(d *Def, labels ...string) {
	if r == nil {
		return
	}
	f := r.family(d)
	f.series = slices.DeleteFunc(f.series, func(s *series) bool { return compareLabels(s.labels, labels) == 0 })
}

// Snapshot is a family's series at one instant.
type Snapshot struct {
	Def    *Def
	Series []SeriesSnapshot
}

// SeriesSnapshot is one series' value: Value for counters and gauges;
// Count, Sum and the cumulative Buckets (per Def.Buckets, without +Inf)
// for histograms.
type SeriesSnapshot struct {
	Labels  []string
	Value   float64
	Count   uint64
	Sum     float64
	Buckets []uint64
}

// Snapshot returns every family with at least one series, sorted by name,
// each with its series sorted by labels. It must run on the loop.
func (r *Registry) Snapshot() []Snapshot {
	if r == nil {
		return nil
	}
	out := make([]Snapshot, 0, len(r.families))
	for _, f := range r.families {
		if len(f.series) == 0 {
			continue
		}
		fs := Snapshot{Def: f.def, Series: make([]SeriesSnapshot, 0, len(f.series))}
		for _, s := range f.series {
			ss := SeriesSnapshot{Labels: s.labels}
			switch {
			case s.f != nil:
				ss.Value = s.f()
			case s.c != nil:
				ss.Value = s.c.v
			case s.g != nil:
				ss.Value = s.g.v
			case s.h != nil:
				ss.Count, ss.Sum = s.h.n, s.h.sum
				ss.Buckets = make([]uint64, len(s.h.bounds))
				var cum uint64
				for i := range s.h.bounds {
					cum += s.h.counts[i]
					ss.Buckets[i] = cum
				}
			}
			if math.IsNaN(ss.Value) {
				ss.Value = 0
			}
			fs.Series = append(fs.Series, ss)
		}
		out = append(out, fs)
	}
	return out
}

// Value returns the current value of one counter or gauge series, and
// whether it exists (for tests and the simulator's checks).
func (r *Registry) Value(d *Def, labels ...string) (float64, bool) {
	if r == nil {
		return 0, false
	}
	f := r.family(d)
	i, found := slices.BinarySearchFunc(f.series, labels, func(s *series, l []string) int { return compareLabels(s.labels, l) })
	if !found {
		return 0, false
	}
	s := f.series[i]
	switch {
	case s.f != nil:
		return s.f(), true
	case s.c != nil:
		return s.c.v, true
	case s.g != nil:
		return s.g.v, true
	case s.h != nil:
		return float64(s.h.n), true
	}
	return 0, false
}
