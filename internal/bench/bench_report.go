package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// benchReport is what `strata bench` prints, as a table or as JSON.
type benchReport struct {
	Settings benchSettings   `json:"settings"`
	Targets  []*targetReport `json:"targets"`
	// Ratios compare medians: strata to kfake, strata to the fsync
	// ceiling. One is left out when a side is missing.
	Ratios []benchRatio `json:"ratios"`
}

// benchSettings records the workload, so a figure can be reproduced.
type benchSettings struct {
	Partitions             int      `json:"partitions"`
	ReplicationFactor      int      `json:"replication_factor"`
	MinInsyncReplicas      int      `json:"min_insync_replicas,omitempty"`
	Nodes                  int      `json:"nodes"`
	RecordBytes            int      `json:"record_bytes"`
	Compression            string   `json:"compression"`
	Values                 string   `json:"values"`
	Producers              int      `json:"producers"`
	FloodProducers         int      `json:"flood_producers,omitempty"`
	FloodCompression       string   `json:"flood_compression,omitempty"`
	Acks                   string   `json:"acks"`
	LingerMs               float64  `json:"linger_ms"`
	BatchMaxBytes          int      `json:"batch_max_bytes"`
	MaxBufferedRecords     int      `json:"max_buffered_records"`
	DurationSeconds        float64  `json:"duration_seconds"`
	MaxProduceBytes        int64    `json:"max_produce_bytes"`
	LatencyDurationSeconds float64  `json:"latency_duration_seconds"`
	LatencyRatePerSec      int      `json:"latency_rate_per_s"`
	FsyncWriteBytes        int      `json:"fsync_write_bytes"`
	Runs                   int      `json:"runs"`
	NodeArgs               []string `json:"node_args,omitempty"`
}

func (o *benchOptions) settings() benchSettings {
	s := benchSettings{
		Partitions:             o.workload.partitions,
		ReplicationFactor:      max(o.workload.replicationFactor, 1),
		MinInsyncReplicas:      o.workload.minInsyncReplicas,
		Nodes:                  o.nodes,
		RecordBytes:            o.workload.recordBytes,
		Compression:            o.workload.compression,
		Values:                 o.workload.values,
		Producers:              max(o.workload.producers, 1),
		Acks:                   "all",
		LingerMs:               float64(benchLinger.Microseconds()) / 1000,
		BatchMaxBytes:          benchBatchMaxBytes,
		MaxBufferedRecords:     benchMaxBufferedRecords,
		DurationSeconds:        o.workload.duration.Seconds(),
		MaxProduceBytes:        o.workload.maxProduceBytes,
		LatencyDurationSeconds: o.workload.latencyDuration.Seconds(),
		LatencyRatePerSec:      o.workload.latencyRate,
		FsyncWriteBytes:        o.fsyncWriteBytes,
		Runs:                   o.runs,
	}
	if s.Compression == "" {
		s.Compression = compressionNone
	}
	if o.workload.floodProducers > 0 {
		s.FloodProducers, s.FloodCompression = o.workload.floodProducers, o.workload.floodCompression
	}
	for _, kv := range o.nodeArgs {
		s.NodeArgs = append(s.NodeArgs, kv.Key+"="+kv.Value)
	}
	return s
}

// targetReport is one target's runs and their summary.
type targetReport struct {
	Name    string `json:"name"`
	About   string `json:"about"`
	Address string `json:"address,omitempty"`
	// Runs are the Kafka workload's runs (strata, kfake).
	Runs []kafkaRun `json:"runs,omitempty"`
	// FsyncRuns are the fsync ceiling's runs.
	FsyncRuns []fsyncRun `json:"fsync_runs,omitempty"`
	// MemoryRuns are the memory target's runs.
	MemoryRuns []memoryRun `json:"memory_runs,omitempty"`
	// IdleRuns are the idle target's runs.
	IdleRuns []idleRun `json:"idle_runs,omitempty"`
	// Summary is each metric over the runs, in benchMetrics' order.
	Summary []metricSummary `json:"summary"`
	// Error is why the target stopped, when it did; Summary covers the
	// runs before it.
	Error string `json:"error,omitempty"`
}

// metricSummary is one metric's median, min and max over the runs.
type metricSummary struct {
	Metric string  `json:"metric"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// benchRatio is one ratio of medians.
type benchRatio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// benchMetric is one figure the report summarizes: its name (JSON), its
// label (table), its format, and how to read it from a run.
type benchMetric struct {
	name, label, format string
	kafka               func(*kafkaRun) (float64, bool)
	fsync               func(*fsyncRun) (float64, bool)
	memory              func(*memoryRun) float64
	idle                func(*idleRun) float64
}

// benchMetrics are the report's rows, in order.
var benchMetrics = []benchMetric{
	{name: "produce_mib_per_s", label: "produce MiB/s", format: "%.1f", kafka: func(r *kafkaRun) (float64, bool) { return r.Produce.MiBPerSec, true }},
	{name: "produce_records_per_s", label: "produce records/s", format: "%.0f", kafka: func(r *kafkaRun) (float64, bool) { return r.Produce.RecordsPerSec, true }},
	{name: "consume_mib_per_s", label: "consume MiB/s", format: "%.1f", kafka: func(r *kafkaRun) (float64, bool) { return r.Consume.MiBPerSec, true }},
	{name: "consume_records_per_s", label: "consume records/s", format: "%.0f", kafka: func(r *kafkaRun) (float64, bool) { return r.Consume.RecordsPerSec, true }},
	{name: "latency_p50_ms", label: "produce latency p50 ms", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) { return r.Latency.P50Ms, true }},
	{name: "latency_p99_ms", label: "produce latency p99 ms", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) { return r.Latency.P99Ms, true }},
	{name: "latency_p999_ms", label: "produce latency p99.9 ms", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) { return r.Latency.P999Ms, true }},
	{name: "produce_compressed_share", label: "phase 1 batches sent compressed %", format: "%.1f", kafka: func(r *kafkaRun) (float64, bool) {
		return 100 * r.Batches.CompressedShare(), compresses(r.Compression)
	}},
	{name: "produce_compression_ratio", label: "phase 1 record bytes / bytes sent", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) {
		return r.Batches.Ratio(), compresses(r.Compression)
	}},
	{name: "latency_compressed_share", label: "phase 3 batches sent compressed %", format: "%.1f", kafka: func(r *kafkaRun) (float64, bool) {
		return 100 * r.LatencyBatches.CompressedShare(), compresses(r.Compression)
	}},
	{name: "flood_latency_p50_ms", label: "under a flood: produce latency p50 ms", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) {
		return floodFigure(r, func(f *floodRun) float64 { return f.Latency.P50Ms })
	}},
	{name: "flood_latency_p99_ms", label: "under a flood: produce latency p99 ms", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) {
		return floodFigure(r, func(f *floodRun) float64 { return f.Latency.P99Ms })
	}},
	{name: "flood_latency_p999_ms", label: "under a flood: produce latency p99.9 ms", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) {
		return floodFigure(r, func(f *floodRun) float64 { return f.Latency.P999Ms })
	}},
	{name: "flood_p50_ratio", label: "under a flood: p50 / phase 3 p50, run by run", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) {
		return floodFigure(r, func(f *floodRun) float64 { return f.P50Ratio })
	}},
	{name: "flood_p99_ratio", label: "under a flood: p99 / phase 3 p99, run by run", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) {
		return floodFigure(r, func(f *floodRun) float64 { return f.P99Ratio })
	}},
	{name: "flooder_mib_per_s", label: "under a flood: the flood's MiB/s", format: "%.1f", kafka: func(r *kafkaRun) (float64, bool) {
		return floodFigure(r, func(f *floodRun) float64 { return f.Flood.MiBPerSec })
	}},
	{name: "flooder_compression_ratio", label: "under a flood: the flood's record bytes / bytes sent", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) {
		return floodFigure(r, func(f *floodRun) float64 { return f.Batches.Ratio() })
	}},
	{name: "cpu_seconds_per_gib_produced", label: "broker CPU s per GiB produced", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) {
		if r.CPU == nil {
			return 0, false
		}
		return r.CPU.PerGiBProduced, true
	}},
	{name: "cpu_cores_producing", label: "broker CPU cores while producing", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) {
		if r.CPU == nil {
			return 0, false
		}
		return r.CPU.ProduceCores, true
	}},
	{name: "cpu_seconds_per_gib_fetched", label: "broker CPU s per GiB fetched", format: "%.2f", kafka: func(r *kafkaRun) (float64, bool) {
		if r.CPU == nil {
			return 0, false
		}
		return r.CPU.PerGiBFetched, true
	}},
	{name: "rss_at_rest_mib", label: "node RSS at rest MiB", format: "%.0f", memory: func(r *memoryRun) float64 { return r.RSSAtRestMiB }},
	{name: "rss_idle_conns_mib", label: "node RSS with 1000 idle conns MiB", format: "%.0f", memory: func(r *memoryRun) float64 { return r.RSSWithConnsMiB }},
	{name: "rss_flood_peak_mib", label: "node RSS peak under flood MiB", format: "%.0f", memory: func(r *memoryRun) float64 { return r.RSSFloodPeakMiB }},
	{name: "flood_mib_per_s", label: "flood produce MiB/s", format: "%.1f", memory: func(r *memoryRun) float64 { return r.FloodMiBPerSec }},
	{name: "idle_cpu_percent_empty", label: "idle CPU % (busiest node, no partitions)", format: "%.2f", idle: func(r *idleRun) float64 { return maxCPU(r.Empty) }},
	{name: "idle_rss_mib_empty", label: "idle RSS MiB (busiest node, no partitions)", format: "%.0f", idle: func(r *idleRun) float64 { return maxRSS(r.Empty) }},
	{name: "idle_cpu_percent", label: "idle CPU % (busiest node, with the partitions)", format: "%.2f", idle: func(r *idleRun) float64 { return maxCPU(r.Loaded) }},
	{name: "idle_rss_mib", label: "idle RSS MiB (busiest node, with the partitions)", format: "%.0f", idle: func(r *idleRun) float64 { return maxRSS(r.Loaded) }},
	{name: "idle_full_isr_seconds", label: "seconds from CreateTopics to full ISRs", format: "%.1f", idle: func(r *idleRun) float64 { return r.FullISRSeconds }},
	{name: "group_commit_bytes", label: "bytes per fdatasync (group commit)", format: "%.0f", kafka: func(r *kafkaRun) (float64, bool) {
		if r.GroupCommit == nil || r.GroupCommit.Fdatasyncs == 0 {
			return 0, false
		}
		return float64(r.GroupCommit.BytesPerFdatasync), true
	}},
	{name: "fsync_write_bytes", label: "fsync write bytes", format: "%.0f", fsync: func(r *fsyncRun) (float64, bool) { return float64(r.WriteBytes), true }},
	{name: "fsync_loops", label: "fsync loops in parallel", format: "%.0f", fsync: func(r *fsyncRun) (float64, bool) { return float64(r.Loops), r.Loops > 1 }},
	{name: "fsync_mib_per_s", label: "fsync MiB/s", format: "%.1f", fsync: func(r *fsyncRun) (float64, bool) { return r.MiBPerSec, true }},
	// Each loop stands for one node's log: with replication every node
	// writes every byte, so one loop's share is the cluster's ceiling.
	{name: "fsync_mib_per_s_per_loop", label: "fsync MiB/s per loop", format: "%.1f", fsync: func(r *fsyncRun) (float64, bool) { return r.MiBPerSec / float64(r.Loops), r.Loops > 1 }},
	{name: "fsyncs_per_s", label: "fsyncs/s", format: "%.0f", fsync: func(r *fsyncRun) (float64, bool) { return r.FsyncsPerS, true }},
	{name: "fsync_p50_ms", label: "fsync p50 ms", format: "%.2f", fsync: func(r *fsyncRun) (float64, bool) { return r.P50Ms, true }},
	{name: "fsync_p99_ms", label: "fsync p99 ms", format: "%.2f", fsync: func(r *fsyncRun) (float64, bool) { return r.P99Ms, true }},
}

// compresses is whether the producers were asked to compress.
func compresses(codec string) bool { return codec != "" && codec != compressionNone }

// floodFigure reads a figure of phase 4, when the run had one.
func floodFigure(r *kafkaRun, f func(*floodRun) float64) (float64, bool) {
	if r.Flood == nil {
		return 0, false
	}
	return f(r.Flood), true
}

// summarize fills Summary from the runs.
func (t *targetReport) summarize() {
	t.Summary = nil
	for _, m := range benchMetrics {
		var vs []float64
		switch {
		case m.kafka != nil:
			for i := range t.Runs {
				if v, ok := m.kafka(&t.Runs[i]); ok {
					vs = append(vs, v)
				}
			}
		case m.fsync != nil:
			for i := range t.FsyncRuns {
				if v, ok := m.fsync(&t.FsyncRuns[i]); ok {
					vs = append(vs, v)
				}
			}
		case m.memory != nil:
			for i := range t.MemoryRuns {
				vs = append(vs, m.memory(&t.MemoryRuns[i]))
			}
		case m.idle != nil:
			for i := range t.IdleRuns {
				vs = append(vs, m.idle(&t.IdleRuns[i]))
			}
		}
		if len(vs) > 0 {
			t.Summary = append(t.Summary, summarizeValues(m.name, vs))
		}
	}
}

// summarizeValues is the median (the mean of the middle two for an even
// count), min and max.
func summarizeValues(name string, vs []float64) metricSummary {
	s := slices.Clone(vs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return metricSummary{Metric: name, Median: med, Min: s[0], Max: s[len(s)-1]}
}

// median is a target's median of a metric, if it has one.
func (t *targetReport) median(metric string) (float64, bool) {
	for _, s := range t.Summary {
		if s.Metric == metric {
			return s.Median, true
		}
	}
	return 0, false
}

func (r *benchReport) target(name string) *targetReport {
	for _, t := range r.Targets {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// ratios compares strata's medians with kfake's and with the fsync
// ceiling's.
func (r *benchReport) ratios() []benchRatio {
	var out []benchRatio
	add := func(name string, a *targetReport, am string, b *targetReport, bm string) {
		if a == nil || b == nil {
			return
		}
		x, ok1 := a.median(am)
		y, ok2 := b.median(bm)
		if ok1 && ok2 && y != 0 {
			out = append(out, benchRatio{name, x / y})
		}
	}
	strata, kfake, fsync := r.target(targetStrata), r.target(targetKfake), r.target(targetFsync)
	add("strata/kfake produce MiB/s", strata, "produce_mib_per_s", kfake, "produce_mib_per_s")
	add("strata/kfake consume MiB/s", strata, "consume_mib_per_s", kfake, "consume_mib_per_s")
	add("strata/kfake produce latency p99", strata, "latency_p99_ms", kfake, "latency_p99_ms")
	if r.Settings.Nodes > 1 {
		// Every node writes every byte (RF = nodes by default): the
		// ceiling is one loop's share of the disk.
		add("strata produce MiB/s / fsync ceiling MiB/s per loop", strata, "produce_mib_per_s", fsync, "fsync_mib_per_s_per_loop")
	} else {
		add("strata produce MiB/s / fsync ceiling MiB/s", strata, "produce_mib_per_s", fsync, "fsync_mib_per_s")
	}
	nometrics := r.target(targetNoMetrics)
	add("strata/strata-nometrics produce MiB/s", strata, "produce_mib_per_s", nometrics, "produce_mib_per_s")
	add("strata/strata-nometrics consume MiB/s", strata, "consume_mib_per_s", nometrics, "consume_mib_per_s")
	add("strata/strata-nometrics produce latency p99", strata, "latency_p99_ms", nometrics, "latency_p99_ms")
	nooffload := r.target(targetNoOffload)
	add("strata/strata-nooffload produce MiB/s", strata, "produce_mib_per_s", nooffload, "produce_mib_per_s")
	add("strata/strata-nooffload broker CPU s per GiB produced", strata, "cpu_seconds_per_gib_produced", nooffload, "cpu_seconds_per_gib_produced")
	add("strata/strata-nooffload produce latency p50", strata, "latency_p50_ms", nooffload, "latency_p50_ms")
	add("strata/strata-nooffload produce latency p99", strata, "latency_p99_ms", nooffload, "latency_p99_ms")
	add("strata/strata-nooffload produce latency p99 under a flood", strata, "flood_latency_p99_ms", nooffload, "flood_latency_p99_ms")
	return out
}

// print writes the human report: the settings, what each target is, a
// table with a row per metric and a column per target, and the ratios.
// A target's error goes to stderr, from benchCommand.
func (r *benchReport) print(w io.Writer) {
	s := r.Settings
	if s.Nodes > 1 {
		fmt.Fprintf(w, "Nodes: %d combined nodes per strata target; min.insync.replicas %d.\n", s.Nodes, s.MinInsyncReplicas)
	}
	compression := "no compression"
	if compresses(s.Compression) {
		compression = "compression " + describeCompression(s.Compression)
	}
	producers := ""
	if s.Producers > 1 {
		producers = fmt.Sprintf(", %d producers at once", s.Producers)
	}
	fmt.Fprintf(w, "Workload: %d partitions, RF %d, %d-byte %s records, %s; phase 1 acks=all, linger %g ms,\n"+
		"%d-byte batches, for %gs (or %d bytes)%s; phase 2 reads it all back; phase 3 %d records/s, linger 0, for %gs.\n",
		s.Partitions, s.ReplicationFactor, s.RecordBytes, s.Values, compression, s.LingerMs, s.BatchMaxBytes, s.DurationSeconds, s.MaxProduceBytes,
		producers, s.LatencyRatePerSec, s.LatencyDurationSeconds)
	if s.FloodProducers > 0 {
		fmt.Fprintf(w, "Phase 4: phase 3 again while %d clients flood a second topic with %s batches of text records (acks=all,\n"+
			"linger %g ms, %d-byte batches), from %v before it until it ends.\n", s.FloodProducers, s.FloodCompression, s.LingerMs, s.BatchMaxBytes, benchFloodWarmup)
	}
	if s.Runs > 1 {
		fmt.Fprintf(w, "%d runs: median [min, max].\n", s.Runs)
	}
	fmt.Fprintln(w)
	for _, t := range r.Targets {
		fmt.Fprintf(w, "%-7s %s\n", t.Name+":", t.About)
	}
	fmt.Fprintln(w)

	var rows []string
	for _, m := range benchMetrics {
		row := []string{m.label}
		shown := false
		for _, t := range r.Targets {
			cell := "-"
			for _, sm := range t.Summary {
				if sm.Metric != m.name {
					continue
				}
				shown = true
				cell = fmt.Sprintf(m.format, sm.Median)
				if s.Runs > 1 {
					cell += fmt.Sprintf(" ["+m.format+", "+m.format+"]", sm.Min, sm.Max)
				}
			}
			row = append(row, cell)
		}
		if shown {
			rows = append(rows, strings.Join(row, "\t"))
		}
	}
	if len(rows) > 0 {
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		header := []string{"metric"}
		for _, t := range r.Targets {
			name := t.Name
			if t.Error != "" {
				name += " (failed)"
			}
			header = append(header, name)
		}
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, row := range rows {
			fmt.Fprintln(tw, row)
		}
		_ = tw.Flush()
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintln(w)
		for _, ratio := range r.Ratios {
			fmt.Fprintf(w, "%s: %.3f\n", ratio.Name, ratio.Value)
		}
	}
}
