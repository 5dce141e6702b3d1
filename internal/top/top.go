// Package top is `strata top`: a live view of one running cluster, for
// operators. top.go holds the command and its loop; each frame is three
// steps:
//
//  1. gather (top_gather.go, the only step that does I/O): Metadata and
//     DescribeQuorum through the brokers, and every node's Prometheus
//     exposition (read by top_exposition.go), into a topSnapshot;
//  2. build (buildFrame in top_frame.go, pure): the frame's rows from this
//     snapshot and the one before it, since a rate or an interval's
//     percentile needs two scrapes of a node;
//  3. render (renderFrame in top_frame.go, pure): text, one section after
//     another.
//
// What one node or one request fails to give is "-" in its cells and a
// note under the tables. Only a cluster that answers no Metadata stops the
// command (for its first frame, or the frame of --once) or blanks a frame.
package top

import (
	"bytes"
	"context"
	"io"
	"strings"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/strata-log/strata/node"
)

// Defaults and bounds of `strata top`.
const (
	// defaultTopInterval is --interval: the time between two scrapes, over
	// which a frame's rates and percentiles are computed.
	defaultTopInterval = 2 * time.Second
	// minTopInterval bounds --interval from below, so that a typo does not
	// turn the view into a load test of the cluster.
	minTopInterval = 100 * time.Millisecond
	// defaultTopTopics is --topics: the topic rows shown, busiest first.
	defaultTopTopics = 20
	// defaultTopTimeout is --timeout: the bound of one frame's gathering.
	// The first frame must get a Metadata answer within it.
	defaultTopTimeout = 10 * time.Second
	// topScrapeTimeout bounds one /metrics request.
	topScrapeTimeout = 5 * time.Second
	// maxExpositionBytes bounds one /metrics answer, in bytes; a larger one
	// is that node's error. Only the per-partition families of a node with
	// tens of thousands of partitions come near it.
	maxExpositionBytes = 64 << 20
	// topQuantile is the latency percentile shown.
	topQuantile = 0.99
	// metricsListenerConfig is the broker config naming the node's metrics
	// listener (host:port), read with DescribeConfigs when --metrics is not
	// given.
	metricsListenerConfig = node.KeyMetricsListener
	// metricsPath is the path of the exposition on a metrics listener.
	metricsPath = "/metrics"
	// expositionAccept asks for the text format, version 0.0.4, which
	// expfmt's TextParser reads (not OpenMetrics nor protobuf).
	expositionAccept = "text/plain;version=0.0.4"
	// clearScreen moves the cursor home and clears the terminal (ANSI).
	clearScreen = "\x1b[H\x1b[2J"
)

// topOptions are the flags that shape the frames.
type topOptions struct {
	interval time.Duration
	// once waits one interval, draws one frame without clearing the
	// screen, and stops.
	once bool
	// iterations stops after this many frames; 0 runs until ctx ends.
	iterations int
	// topics is the number of topic rows; 0 hides the table.
	topics int
}

// Summary is the line `strata help` shows for top.
const Summary = "a live view of a running cluster: quorum, brokers and busiest topics, with rates and p99 latencies"

// Command is `strata top` with args after its name; it returns the exit code.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, cmd := cli.NewFlagSet("top", "top [flags]",
		"A live view of one cluster, redrawn every --interval until Ctrl-C: the metadata quorum, a row\n"+
			"per broker (partitions, connections, requests, bytes and messages per second, produce and\n"+
			"fetch p99 latency) and the busiest topics. Broker metrics are scraped from each node's\n"+
			"Prometheus endpoint: --metrics, or else the broker's metrics.listener config (DescribeConfigs).", stderr)
	bootstrap := cli.BootstrapFlag(fs)
	commandConfig := cli.CommandConfigFlag(fs)
	metricsFlag := fs.String("metrics", "", "the nodes' Prometheus endpoints, `[id=]host:port|url[,...]`; without id= they go to the brokers in id order (default: each broker's metrics.listener)")
	interval := fs.Duration("interval", defaultTopInterval, "time between frames, over which rates and p99 are computed")
	once := fs.Bool("once", false, "print one frame after one interval (two scrapes, so rates are real), without clearing the screen, and exit")
	iterations := fs.Int("iterations", 0, "stop after this many frames; 0 runs until Ctrl-C")
	topics := fs.Int("topics", defaultTopTopics, "topic rows shown, busiest (bytes in) first; 0 hides the table")
	timeout := fs.Duration("timeout", defaultTopTimeout, "bound of one frame's gathering; the first frame must reach the cluster within it")
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return cmd.UsageError("unexpected arguments %q", fs.Args())
	case *interval < minTopInterval:
		return cmd.UsageError("--interval must be at least %v, got %v", minTopInterval, *interval)
	case *iterations < 0:
		return cmd.UsageError("--iterations must be 0 (until Ctrl-C) or more, got %d", *iterations)
	case *once && *iterations > 0:
		return cmd.UsageError("give at most one of --once and --iterations")
	case *topics < 0:
		return cmd.UsageError("--topics must be 0 or more, got %d", *topics)
	case *timeout <= 0:
		return cmd.UsageError("--timeout must be positive")
	}
	explicit, err := parseMetricsFlag(*metricsFlag)
	if err != nil {
		return cmd.UsageError("%v", err)
	}
	addrs, err := cli.ParseAddrs(*bootstrap)
	if err != nil {
		return cmd.UsageError("%v", err)
	}
	security, err := cli.LoadClientSecurity(*commandConfig)
	if err != nil {
		return cmd.UsageError("%v", err)
	}
	cl, err := cli.NewKafkaClient(addrs, security...)
	if err != nil {
		return cmd.Fail("%v", err)
	}
	defer cl.Close()
	g := newTopGatherer(cl, strings.Join(addrs, ","), explicit, *timeout)
	defer g.web.CloseIdleConnections()
	opts := topOptions{interval: *interval, once: *once, iterations: *iterations, topics: *topics}
	if opts.once {
		opts.iterations = 1
	}
	if err := runTop(ctx, g, opts, stdout); err != nil {
		return cmd.Fail("%v", err)
	}
	return cli.ExitOK
}

// runTop draws frames until opts says stop or ctx ends (Ctrl-C, a clean
// exit). The live view draws its first scrape at once (no rates yet);
// --once waits for the second. It fails when the first scrape, or the
// frame's scrape of --once, gets no Metadata; a later failure is a frame
// that says so, and the next frame's rates span the gap.
func runTop(ctx context.Context, g *topGatherer, opts topOptions, w io.Writer) error {
	prev, err := g.gather(ctx)
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil:
		return err
	}
	frames := 0
	draw := func(prev, cur *topSnapshot) error {
		var b bytes.Buffer
		if !opts.once {
			b.WriteString(clearScreen)
		}
		renderFrame(&b, buildFrame(prev, cur, opts.topics))
		frames++
		_, err := w.Write(b.Bytes())
		return err
	}
	if !opts.once {
		if err := draw(nil, prev); err != nil {
			return err
		}
	}
	ticker := time.NewTicker(opts.interval)
	defer ticker.Stop()
	for opts.iterations == 0 || frames < opts.iterations {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		cur, err := g.gather(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && opts.once:
			return err
		case err != nil:
			cur = &topSnapshot{At: time.Now(), Err: err.Error()}
		}
		if err := draw(prev, cur); err != nil {
			return err
		}
		if cur.Err == "" {
			prev = cur
		}
	}
	return nil
}
