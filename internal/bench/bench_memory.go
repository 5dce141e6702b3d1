package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The memory target starts a node of its own and reports its resident set
// size (VmRSS) at rest, with benchIdleConns idle connections open, and at
// its peak while benchFloodProducers producers send as fast as they can
// for the bench's duration: more than the disk takes, so the node's
// bounds (socket read-ahead per connection, queued.max.request.bytes
// across them) are what keeps its memory in check.
const (
	// benchIdleConns is how many idle client connections are opened.
	benchIdleConns = 1000
	// benchFloodProducers is how many clients flood the node at once.
	benchFloodProducers = 8
	// benchRSSSampleInterval is how often the flood samples VmRSS.
	benchRSSSampleInterval = 50 * time.Millisecond
)

// memoryRun is one run of the memory target.
type memoryRun struct {
	IdleConns         int     `json:"idle_conns"`
	RSSAtRestMiB      float64 `json:"rss_at_rest_mib"`
	RSSWithConnsMiB   float64 `json:"rss_with_idle_conns_mib"`
	FloodProducers    int     `json:"flood_producers"`
	FloodMiBPerSec    float64 `json:"flood_produce_mib_per_s"`
	RSSFloodPeakMiB   float64 `json:"rss_flood_peak_mib"`
	RSSAfterFloodMiB  float64 `json:"rss_after_flood_mib"`
	FloodAckedRecords int64   `json:"flood_acked_records"`
}

// memoryRun runs the memory phases against node.
func (w kafkaWorkload) memory(ctx context.Context, node *benchNode) (memoryRun, error) {
	res := memoryRun{IdleConns: benchIdleConns, FloodProducers: benchFloodProducers}
	pid := node.cmd.Process.Pid
	var err error
	if res.RSSAtRestMiB, err = rssMiB(pid); err != nil {
		return res, err
	}

	// Idle connections: open them all, give the node a moment to accept,
	// read the RSS, check the node still serves, close them.
	conns := make([]net.Conn, 0, benchIdleConns)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	d := net.Dialer{Timeout: 5 * time.Second}
	for range benchIdleConns {
		c, err := d.DialContext(ctx, "tcp", node.addr)
		if err != nil {
			return res, fmt.Errorf("open idle connection %d: %w", len(conns)+1, err)
		}
		conns = append(conns, c)
	}
	time.Sleep(time.Second)
	if res.RSSWithConnsMiB, err = rssMiB(pid); err != nil {
		return res, err
	}
	topic := fmt.Sprintf("strata-bench-memory-%d", time.Now().UnixNano())
	if err := createBenchTopic(ctx, []string{node.addr}, topic, w.partitions, 1, 0); err != nil {
		return res, fmt.Errorf("with %d idle connections open: %w", benchIdleConns, err)
	}
	defer deleteBenchTopic([]string{node.addr}, topic)
	for _, c := range conns {
		_ = c.Close()
	}
	conns = conns[:0]

	// The flood.
	values, err := randomValues(benchValuePool, w.recordBytes)
	if err != nil {
		return res, err
	}
	fctx, cancel := context.WithTimeout(ctx, w.duration+benchPhaseGrace)
	defer cancel()
	var acked, ackedBytes atomic.Int64
	var failed failure
	var peak atomic.Int64 // KiB
	stop := make(chan struct{})
	var sampler, producers sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		t := time.NewTicker(benchRSSSampleInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if kib, err := rssKiB(pid); err == nil && kib > peak.Load() {
					peak.Store(kib)
				}
			}
		}
	}()
	start := time.Now()
	deadline := start.Add(w.duration)
	for p := range benchFloodProducers {
		producers.Add(1)
		go func() {
			defer producers.Done()
			cl, err := cli.NewKafkaClient([]string{node.addr}, w.producerOpts(topic, benchLinger)...)
			if err != nil {
				failed.set(err)
				return
			}
			defer cl.Close()
			for i := p; time.Now().Before(deadline) && failed.get() == nil && fctx.Err() == nil; i++ {
				v := values[i%len(values)]
				cl.Produce(fctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
					if err != nil {
						failed.set(err)
						return
					}
					acked.Add(1)
					ackedBytes.Add(int64(len(r.Value)))
				})
			}
			if err := cl.Flush(fctx); err != nil {
				failed.set(fmt.Errorf("flush: %w", err))
			}
		}()
	}
	// The producers finish (and flush) first; then the sampler stops.
	producers.Wait()
	close(stop)
	sampler.Wait()
	elapsed := time.Since(start)
	if err := failed.get(); err != nil {
		return res, fmt.Errorf("flood: %s", cli.KafkaError(err, ""))
	}
	res.FloodAckedRecords = acked.Load()
	res.FloodMiBPerSec = float64(ackedBytes.Load()) / (1 << 20) / elapsed.Seconds()
	res.RSSFloodPeakMiB = float64(peak.Load()) / 1024
	if res.RSSAfterFloodMiB, err = rssMiB(pid); err != nil {
		return res, err
	}
	return res, nil
}

// rssMiB reads a process's VmRSS in MiB.
func rssMiB(pid int) (float64, error) {
	kib, err := rssKiB(pid)
	return float64(kib) / 1024, err
}

func rssKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read the node's memory: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			break
		}
		return strconv.ParseInt(f[0], 10, 64)
	}
	return 0, errors.New("no VmRSS in /proc/<pid>/status")
}
