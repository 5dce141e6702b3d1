package node

// The node's HTTP endpoints for operations: /metrics (the server's
// core/metrics registry, exported through prometheus/client_golang with
// the Go runtime's and the process's collectors), /healthz and /readyz
// for probes, and /debug/pprof when enabled. They listen on
// metrics.listener.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/metrics"
)

// Bounds of the endpoints.
const (
	// probeTimeout bounds /healthz's and /readyz's wait for the loop: a
	// loop that does not run a callback within it is reported unhealthy.
	probeTimeout = 2 * time.Second
	// scrapeTimeout bounds a /metrics scrape's wait for the loop.
	scrapeTimeout = 10 * time.Second
)

// opsServer is the node's HTTP listener for operations.
type opsServer struct {
	ln  net.Listener
	srv *http.Server
}

// listenOps binds metrics.listener (before the server starts, so that a
// taken port fails the start and DescribeConfigs can report the bound
// address); serveOps starts serving once the node is up.
func listenOps(addr string) (*opsServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyMetricsListener, err)
	}
	return &opsServer{ln: ln}, nil
}

// MetricsAddr is the address the metrics listener bound, "" when it is
// off.
func (n *Node) MetricsAddr() string {
	if n.ops == nil {
		return ""
	}
	return n.ops.ln.Addr().String()
}

// reportMetricsAddr makes DescribeConfigs report the bound metrics
// address (with port 0 configured, the port picked), so that tools such
// as `strata top` find the endpoint from the broker.
func (n *Node) reportMetricsAddr(static []broker.StaticConfig) {
	for i := range static {
		if static[i].Name == KeyMetricsListener && n.ops != nil {
			static[i].Value, static[i].Set = n.MetricsAddr(), true
		}
	}
}

// serveOps serves the endpoints on the bound listener.
func (n *Node) serveOps() {
	if n.ops == nil {
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if n.metrics != nil {
		reg.MustRegister(newCollector(n))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := n.callWithin(r.Context(), probeTimeout, func() {}); err != nil {
			http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		var why string
		if err := n.callWithin(r.Context(), probeTimeout, func() { why = n.srv.NotReady() }); err != nil {
			why = err.Error()
		}
		if why != "" {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if n.cfg.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	n.ops.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(n.log.Handler(), slog.LevelDebug)}
	go func() {
		if err := n.ops.srv.Serve(n.ops.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("metrics listener stopped", "err", err)
		}
	}()
	n.log.Info("metrics listener", "addr", n.MetricsAddr(), "pprof", n.cfg.Pprof, "metrics", n.metrics != nil)
}

// closeOps stops the endpoints (before the server, so that no scrape
// waits on a stopping loop).
func (n *Node) closeOps(ctx context.Context) {
	if n.ops == nil {
		return
	}
	if n.ops.srv == nil {
		_ = n.ops.ln.Close()
		return
	}
	if err := n.ops.srv.Shutdown(ctx); err != nil {
		_ = n.ops.srv.Close()
	}
}

// callWithin runs f on the loop, waiting at most d (or until ctx ends).
func (n *Node) callWithin(ctx context.Context, d time.Duration, f func()) error {
	done := make(chan error, 1)
	go func() { done <- n.loop.Call(f) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("the node's loop did not answer within %v", d)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// collector exports the registry's snapshot, taken on the loop.
type collector struct {
	n *Node
	// descs holds a descriptor per family of the catalog; built once,
	// only read afterwards.
	descs map[*metrics.Def]*prometheus.Desc
}

func newCollector(n *Node) *collector {
	c := &collector{n: n, descs: map[*metrics.Def]*prometheus.Desc{}}
	for _, d := range metrics.Catalog {
		c.descs[d] = prometheus.NewDesc(d.Name, d.Help, d.Labels, nil)
	}
	return c
}

// Describe sends nothing: the collector is unchecked (its series come and
// go with topics and partitions).
func (c *collector) Describe(chan<- *prometheus.Desc) {}

// Collect takes a snapshot on the loop and sends it.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	var snap []metrics.Snapshot
	if err := c.n.callWithin(context.Background(), scrapeTimeout, func() { snap = c.n.metrics.Snapshot() }); err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewDesc("strata_scrape_error", "The snapshot failed.", nil, nil), err)
		return
	}
	for _, f := range snap {
		desc := c.descs[f.Def]
		if desc == nil {
			desc = prometheus.NewDesc(f.Def.Name, f.Def.Help, f.Def.Labels, nil)
		}
		for _, s := range f.Series {
			var m prometheus.Metric
			var err error
			switch f.Def.Kind {
			case metrics.CounterKind:
				m, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, s.Value, s.Labels...)
			case metrics.GaugeKind:
				m, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, s.Value, s.Labels...)
			case metrics.HistogramKind:
				buckets := make(map[float64]uint64, len(s.Buckets))
				for i, b := range f.Def.Buckets {
					buckets[b] = s.Buckets[i]
				}
				m, err = prometheus.NewConstHistogram(desc, s.Count, s.Sum, buckets, s.Labels...)
			}
			if err != nil {
				m = prometheus.NewInvalidMetric(desc, err)
			}
			ch <- m
		}
	}
}
