package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/internal/top"
)

// The idle target starts a cluster of its own (--nodes), measures what
// each node costs doing nothing, then creates one topic of many
// partitions (--idle-partitions, --replication-factor) and measures again
// once every partition has a leader and a full ISR: the cost of hosting
// partitions no one writes to (followers' fetch sessions, ISR checks,
// housekeeping timers, open files).
const (
	defaultIdlePartitions = 10_000
	idlePartitionsMax     = 100_000
	defaultIdleDuration   = 30 * time.Second
	// idleSettle is how long the cluster rests before a measurement:
	// startup and topic creation work (elections, first fetches, opening
	// logs) is not idle cost.
	idleSettle = 5 * time.Second
	// idleFullISRTimeout bounds the wait for every partition to be led
	// with a full ISR.
	idleFullISRTimeout = 5 * time.Minute
	// idlePartitionsPerRequest is how many partitions one CreateTopics or
	// CreatePartitions adds: the controller writes each request's records
	// as one atomic batch, bounded at 10,000 records.
	idlePartitionsPerRequest = 5_000
)

// idleWorkload is the idle target's settings.
type idleWorkload struct {
	partitions int
	duration   time.Duration
	settle     time.Duration // idleSettle, or less in tests
}

// idleRun is one run of the idle target.
type idleRun struct {
	Nodes      int `json:"nodes"`
	Partitions int `json:"partitions"`
	// Empty and Loaded are each node's cost, in node order, without and
	// with the partitions.
	Empty  []idleNodeCost `json:"empty"`
	Loaded []idleNodeCost `json:"loaded"`
	// FullISRSeconds is the time from CreateTopics until every partition
	// had a leader and a full ISR and every replica's log was open.
	FullISRSeconds float64 `json:"full_isr_seconds"`
}

// idleNodeCost is one node's cost over a measurement.
type idleNodeCost struct {
	// CPUPercent is user+system CPU time over wall time, in percent of
	// one core.
	CPUPercent float64 `json:"cpu_percent"`
	RSSMiB     float64 `json:"rss_mib"`
}

// maxCPU and maxRSS are the busiest node's figures.
func maxCPU(cs []idleNodeCost) float64 {
	return slices.MaxFunc(cs, func(a, b idleNodeCost) int { return cmp.Compare(a.CPUPercent, b.CPUPercent) }).CPUPercent
}

func maxRSS(cs []idleNodeCost) float64 {
	return slices.MaxFunc(cs, func(a, b idleNodeCost) int { return cmp.Compare(a.RSSMiB, b.RSSMiB) }).RSSMiB
}

// run measures c empty, creates the topic, waits for full ISRs, and
// measures again. The topic is left for c's teardown.
func (w idleWorkload) run(ctx context.Context, c *benchCluster, rf, minISR int, progress io.Writer) (idleRun, error) {
	res := idleRun{Nodes: len(c.nodes), Partitions: w.partitions}
	var err error
	if res.Empty, err = w.measure(ctx, c); err != nil {
		return res, err
	}
	topic := fmt.Sprintf("strata-bench-idle-%d", time.Now().UnixNano())
	start := time.Now()
	if err := createBenchTopic(ctx, c.addrs(), topic, min(w.partitions, idlePartitionsPerRequest), rf, minISR); err != nil {
		return res, err
	}
	if err := growTopic(ctx, c.addrs(), topic, w.partitions); err != nil {
		return res, err
	}
	if err := waitFullISRs(ctx, c.addrs(), topic, w.partitions, rf); err != nil {
		return res, err
	}
	if err := waitReplicasOnline(ctx, c, w.partitions*rf); err != nil {
		return res, err
	}
	res.FullISRSeconds = time.Since(start).Seconds()
	fmt.Fprintf(progress, "strata bench: %d partitions (RF %d) online on every replica, with full ISRs, after %.1fs\n", w.partitions, rf, res.FullISRSeconds)
	if res.Loaded, err = w.measure(ctx, c); err != nil {
		return res, err
	}
	return res, nil
}

// measure rests w.settle, then reads every node's CPU time over
// w.duration and its RSS at the end.
func (w idleWorkload) measure(ctx context.Context, c *benchCluster) ([]idleNodeCost, error) {
	if err := sleepCtx(ctx, w.settle); err != nil {
		return nil, err
	}
	before := make([]float64, len(c.nodes))
	for i, nd := range c.nodes {
		var err error
		if before[i], err = nd.cpuSeconds(); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if err := sleepCtx(ctx, w.duration); err != nil {
		return nil, err
	}
	elapsed := time.Since(start).Seconds()
	out := make([]idleNodeCost, len(c.nodes))
	for i, nd := range c.nodes {
		cpu, err := nd.cpuSeconds()
		if err != nil {
			return nil, err
		}
		rss, err := rssMiB(nd.cmd.Process.Pid)
		if err != nil {
			return nil, err
		}
		out[i] = idleNodeCost{CPUPercent: 100 * (cpu - before[i]) / elapsed, RSSMiB: rss}
	}
	return out, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// growTopic adds partitions to topic, idlePartitionsPerRequest at a time,
// until it has partitions.
func growTopic(ctx context.Context, seeds []string, topic string, partitions int) error {
	if partitions <= idlePartitionsPerRequest {
		return nil
	}
	return withAdmin(ctx, seeds, benchAdminTimeout, func(ctx context.Context, adm *kadm.Client) error {
		for have := idlePartitionsPerRequest; have < partitions; {
			to := min(have+idlePartitionsPerRequest, partitions)
			resp, err := adm.UpdatePartitions(ctx, to, topic)
			if err == nil {
				err = resp.Error()
			}
			switch {
			case err == nil:
				have = to
			case errors.Is(err, kerr.InvalidPartitions) && ctx.Err() == nil:
				// A retry of a request that did land: the topic has them.
				have = to
			case !kerr.IsRetriable(err) || ctx.Err() != nil:
				return fmt.Errorf("growing %s to %d partitions: %w", topic, to, err)
			default:
				time.Sleep(benchReadyPollInterval)
			}
		}
		return nil
	})
}

// waitFullISRs polls Metadata until each of the topic's partitions has a
// leader and rf replicas in its ISR.
func waitFullISRs(ctx context.Context, seeds []string, topic string, partitions, rf int) error {
	return withAdmin(ctx, seeds, idleFullISRTimeout, func(ctx context.Context, adm *kadm.Client) error {
		last := "no answer yet"
		for {
			md, err := adm.Metadata(ctx, topic)
			if err == nil {
				full := 0
				for _, p := range md.Topics[topic].Partitions {
					if p.Err == nil && p.Leader >= 0 && len(p.ISR) == rf {
						full++
					}
				}
				if full == partitions {
					return nil
				}
				last = fmt.Sprintf("%d of %d partitions led with full ISRs", full, partitions)
			} else {
				last = err.Error()
			}
			if err := sleepCtx(ctx, time.Second); err != nil {
				return fmt.Errorf("waiting for full ISRs on %s (%s): %w", topic, last, err)
			}
		}
	})
}

// waitReplicasOnline polls every node's /metrics until the nodes host
// replicas replicas together, none offline (failed or still opening) and
// none under-replicated.
func waitReplicasOnline(ctx context.Context, c *benchCluster, replicas int) error {
	ctx, cancel := context.WithTimeout(ctx, idleFullISRTimeout)
	defer cancel()
	last := "no answer yet"
	for {
		hosted, ready := 0, true
		for _, nd := range c.nodes {
			m, err := scrapeNode(ctx, nd.metricsAddr)
			if err != nil {
				last, ready = err.Error(), false
				break
			}
			n, _ := m.Gauge(metrics.PartitionCount)
			offline, _ := m.Gauge(metrics.OfflinePartitions)
			under, _ := m.Gauge(metrics.UnderReplicatedPartitions)
			hosted += int(n)
			if offline > 0 || under > 0 {
				last, ready = fmt.Sprintf("%s: %v replicas offline or opening, %v partitions under-replicated", nd.addr, offline, under), false
			}
		}
		if ready && hosted == replicas {
			return nil
		}
		if ready {
			last = fmt.Sprintf("the nodes host %d replicas of %d", hosted, replicas)
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return fmt.Errorf("waiting for every replica to be online (%s): %w", last, err)
		}
	}
}

// scrapeNode reads a node's /metrics.
func scrapeNode(ctx context.Context, addr string) (*top.NodeMetrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/metrics: %s", addr, resp.Status)
	}
	return top.ParseExposition(resp.Body)
}
