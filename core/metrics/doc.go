// Package metrics counts what a Strata server does, deterministically:
// counters, gauges and histograms updated on the loop that owns the
// server (no goroutines, no clock of its own: durations are measured by
// the caller with env.Monotonic), read as a consistent snapshot on that
// loop. The production node exports the snapshot through
// prometheus/client_golang; the simulator reads the same registry to
// check a run.
//
// # What it owns
//
// The catalog (catalog.go) is the one table of every metric family: its
// Prometheus name (Kafka's JMX names as the common JMX exporter rules
// render them, e.g. kafka_server_brokertopicmetrics_messagesin_total; a
// strata_ prefix for what Kafka has no name for), kind, labels, buckets,
// help and the Kafka MBean it mirrors. docs/operations.md's metric table
// is checked against it by a test. A Registry holds the series of one
// server.
//
// # Cardinality
//
// Every label's values are bounded by something the operator controls:
// request (the broker's API table), error (Kafka's error codes), topic
// (the topics), topic and partition (the partitions, and per-partition
// families can be turned off: Registry.SetPartitionMetrics and the
// strata.metrics.partition.enable topic config), state (a Raft role).
// Series of a topic or partition that goes away are removed.
//
// # What it must never do
//
// Allocate or look a series up by its labels on a hot path: callers keep
// the *Counter, *Gauge or *Histogram of the series they update (a
// partition keeps its topic's, a request row its API's). A nil Registry,
// and the nil series it hands out, are valid and count nothing: that is
// how metrics are turned off.
package metrics
