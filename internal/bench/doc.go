// Package bench is `strata bench`: throughput and latency of a Strata node
// measured beside a baseline in the same run (figures in
// docs/benchmarks.md). The kfake baseline is linked only with the kfake
// build tag (internal/bench/kfakebaseline, bin/strata-bench), so the
// production binary does not carry it.
package bench
