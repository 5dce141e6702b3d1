package attack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-log/strata/internal/proccluster"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// What the victim does, and how often.
const (
	// produceInterval is the victim's steady produce rate: 200 records a
	// second, one record a request (no linger), acks=all.
	produceInterval = 5 * time.Millisecond
	// probeInterval is how often the victim asks for Metadata on its
	// connection and GETs /healthz.
	probeInterval = 100 * time.Millisecond
	// freshProbeInterval is how often it asks for Metadata on a new
	// connection (the accept path too).
	freshProbeInterval = 500 * time.Millisecond
	// rssInterval is how often the node's RSS is sampled (VmHWM catches
	// the peaks between samples).
	rssInterval = 50 * time.Millisecond
	// probeTimeout bounds one probe; past responsiveBound it counts as
	// a violation anyway.
	probeTimeout = 5 * time.Second
	// victimAddr is the victim's source address; attackers use others.
	victimAddr = "127.0.0.1"
)

// phaseStats is what the victim saw during one phase.
type phaseStats struct {
	name       string
	start, end time.Time
	// family is the phase's name without its attempt number; p99Bound
	// is what its p99 is held to (0: not held), from base, the p99 of
	// the quiet phase it is compared with.
	family         string
	base, p99Bound time.Duration

	produce     []time.Duration // acks=all latency of each record produced in the phase
	produceErrs []error
	metadata    []time.Duration // Metadata on the victim's connection
	fresh       []time.Duration // Metadata on a new connection, dial included
	healthz     []time.Duration
	probeErrs   []string
	rssMax      int64 // largest sampled VmRSS
	hwm         int64 // VmHWM since the phase began (or since the start, where it cannot be reset)
	lagOver100  int64 // strata_loop_lag_ms observations above 100 ms during the phase
	lagMax      string
	produceNode string // where the node's Produce time went
	note        string // what the attack did, for the report
	// CPU time of the node, of this test process (the attackers) and of
	// the victim's process in the phase, and the machine's load at its
	// end.
	cpu0Node, cpu0Self, cpu0Victim, cpuNode, cpuSelf, cpuVictim time.Duration
	load                                                        string
}

// percentile is the q-quantile (nearest rank) of ds, 0 for none.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*q+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func maxOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Max(ds)
}

// ackedRecord is one record the victim had acknowledged.
type ackedRecord struct {
	partition int32
	offset    int64
	key       string
	value     string
}

// victimValue is the value of the victim's record key.
func victimValue(key string) string {
	return fmt.Sprintf("value of %s %s", key, strings.Repeat("v", 64))
}

// victim is an honest client of the node under attack: a steady acks=all
// producer, Metadata probes on its connection and on new ones, and
// /healthz probes, for the whole run. It runs in a process of its own
// (this test binary again, see victimMain), so that what it measures is
// the node's treatment of it, not this process's scheduler and garbage
// collector, which the attackers keep busy: spinning one core in this
// process took the victim's p99 from 7 ms to 62 ms while the node's own
// Produce time stayed at 4 ms. This process keeps the books per phase and
// samples the node's RSS.
type victim struct {
	t     *testing.T
	node  *proccluster.Node
	topic string

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{}

	mu       sync.Mutex
	phases   []*phaseStats
	cur      *phaseStats
	events   []victimEvent
	badLines []string
	stderr   []string

	base map[string]float64 // the node's metrics at the phase's start
	// lastProduceStart is when the latest answered record began (unix
	// ns).
	lastProduceStart int64
	cancel           context.CancelFunc
	wg               sync.WaitGroup
	done             bool
}

// victimEvent is one line of the victim process: what happened, when it
// began, how long it took.
type victimEvent struct {
	kind  string // p: an acknowledged record; pe: a failed one; m, f, h: probes; e: a failed probe
	start time.Time
	took  time.Duration
	rec   ackedRecord
	msg   string
}

// envVictim carries the victim's target, node address|metrics
// address|topic, to its process.
const envVictim = "STRATA_ATTACK_VICTIM"

// startVictim starts the victim process on node's topic (which must
// exist), in a first phase named phase.
func startVictim(t *testing.T, node *proccluster.Node, topic, phase string) *victim {
	t.Helper()
	v := &victim{t: t, node: node, topic: topic, exited: make(chan struct{})}
	v.cmd = exec.Command(os.Args[0], "-test.run=^$")
	v.cmd.Env = append(os.Environ(), envVictim+"="+node.BrokerAddr+"|"+node.MetricsAddr+"|"+topic)
	stdout, err := v.cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := v.cmd.StderrPipe()
	require.NoError(t, err)
	v.stdin, err = v.cmd.StdinPipe()
	require.NoError(t, err)
	v.beginPhase(phase)
	require.NoError(t, proccluster.StartChild(v.cmd))
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			v.mu.Lock()
			v.stderr = append(v.stderr, sc.Text())
			v.mu.Unlock()
		}
	}()
	go func() {
		defer close(v.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			ev, ok := parseVictimLine(sc.Text())
			v.mu.Lock()
			if ok {
				v.events = append(v.events, ev)
				v.book(ev)
			} else if sc.Text() != "done" {
				v.badLines = append(v.badLines, sc.Text())
			}
			v.mu.Unlock()
		}
		_ = v.cmd.Wait()
	}()
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	v.wg.Add(1)
	go v.rssLoop(ctx)
	t.Cleanup(func() {
		v.stop()
		if v.alive() {
			_ = v.cmd.Process.Kill()
		}
	})
	return v
}

func (v *victim) alive() bool {
	select {
	case <-v.exited:
		return false
	default:
		return true
	}
}

// parseVictimLine reads one line of victimMain's output.
func parseVictimLine(line string) (victimEvent, bool) {
	f := strings.SplitN(line, " ", 4)
	if len(f) < 3 {
		return victimEvent{}, false
	}
	var ev victimEvent
	ev.kind = f[0]
	var startNs, tookNs int64
	if _, err := fmt.Sscan(f[1], &startNs); err != nil {
		return ev, false
	}
	ev.start = time.Unix(0, startNs)
	rest := ""
	if len(f) == 4 {
		rest = f[3]
	}
	switch ev.kind {
	case "e":
		ev.msg = strings.Join(f[2:], " ")
		return ev, true
	}
	if _, err := fmt.Sscan(f[2], &tookNs); err != nil {
		return ev, false
	}
	ev.took = time.Duration(tookNs)
	switch ev.kind {
	case "p":
		if _, err := fmt.Sscan(rest, &ev.rec.partition, &ev.rec.offset, &ev.rec.key); err != nil {
			return ev, false
		}
		ev.rec.value = victimValue(ev.rec.key)
	case "pe":
		ev.msg = rest
	case "m", "f", "h":
	default:
		return ev, false
	}
	return ev, true
}

// skipFresh tells the victim to stop (or resume) its probes on new
// connections: the idle-sockets phase fills every slot on purpose.
func (v *victim) skipFresh(on bool) {
	n := 0
	if on {
		n = 1
	}
	_, _ = fmt.Fprintf(v.stdin, "skipfresh %d\n", n)
}

// stop ends the victim: its process stops producing, waits for its
// outstanding records and exits; then the events are booked to their
// phases (by when each began).
func (v *victim) stop() {
	if v.done {
		return
	}
	v.done = true
	v.endPhase()
	_ = v.stdin.Close()
	select {
	case <-v.exited:
	case <-time.After(90 * time.Second):
		_ = v.cmd.Process.Kill()
		<-v.exited
	}
	v.cancel()
	v.wg.Wait()
}

// book adds ev to the phase it began in (v.mu held).
func (v *victim) book(ev victimEvent) {
	if ev.kind == "p" || ev.kind == "pe" {
		v.lastProduceStart = max(v.lastProduceStart, ev.start.UnixNano())
	}
	var ps *phaseStats
	for i := len(v.phases) - 1; i >= 0; i-- {
		p := v.phases[i]
		if !ev.start.Before(p.start) && (p.end.IsZero() || ev.start.Before(p.end)) {
			ps = p
			break
		}
	}
	if ps == nil {
		return
	}
	switch ev.kind {
	case "p":
		ps.produce = append(ps.produce, ev.took)
	case "pe":
		ps.produceErrs = append(ps.produceErrs, errors.New(ev.msg))
	case "m":
		ps.metadata = append(ps.metadata, ev.took)
	case "f":
		ps.fresh = append(ps.fresh, ev.took)
	case "h":
		ps.healthz = append(ps.healthz, ev.took)
	case "e":
		ps.probeErrs = append(ps.probeErrs, ev.msg)
	}
}

// p99 is the victim's acks=all p99 in ps so far.
func (v *victim) p99(ps *phaseStats) time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return percentile(ps.produce, 0.99)
}

// settle waits until every record the victim produced in ps is answered:
// the victim's records of one partition complete in order, so once one
// begun after ps ended is in, all of ps's are (at most settleTimeout).
func (v *victim) settle(ps *phaseStats) {
	deadline := time.Now().Add(settleTimeout)
	for time.Now().Before(deadline) && v.alive() {
		v.mu.Lock()
		done := v.lastProduceStart >= ps.end.UnixNano()
		v.mu.Unlock()
		if done {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settleTimeout bounds settle: the victim's records time out after 60 s,
// and a phase whose records take longer has failed anyway.
const settleTimeout = 30 * time.Second

// requireStopped checks that the victim process ended as it should.
func (v *victim) requireStopped(t *testing.T) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	require.True(t, v.cmd.ProcessState != nil && v.cmd.ProcessState.Success(), "the victim process: %v\n%s", v.cmd.ProcessState, strings.Join(v.stderr, "\n"))
	require.Empty(t, v.badLines, "lines of the victim process that do not parse")
}

// beginPhase ends the current phase (if any) and begins one named name.
func (v *victim) beginPhase(name string) *phaseStats {
	ended := v.endPhase()
	ps := &phaseStats{name: name, start: time.Now(), cpu0Node: cpuTime(v.node.Pid()), cpu0Self: cpuTime(os.Getpid())}
	if v.cmd.Process != nil {
		ps.cpu0Victim = cpuTime(v.cmd.Process.Pid)
	}
	if err := resetPeak(v.node.Pid()); err != nil {
		ps.note = "VmHWM not resettable: " + err.Error()
	}
	v.base = v.scrape()
	v.mu.Lock()
	v.cur = ps
	v.phases = append(v.phases, ps)
	v.mu.Unlock()
	return ended
}

// endPhase closes the current phase's books (but for the victim's
// events, booked at stop) and returns it.
func (v *victim) endPhase() *phaseStats {
	v.mu.Lock()
	ps := v.cur
	v.cur = nil
	v.mu.Unlock()
	if ps == nil {
		return nil
	}
	v.mu.Lock()
	ps.end = time.Now() // book reads it
	v.mu.Unlock()
	ps.cpuNode, ps.cpuSelf = cpuTime(v.node.Pid())-ps.cpu0Node, cpuTime(os.Getpid())-ps.cpu0Self
	if v.cmd.Process != nil {
		ps.cpuVictim = cpuTime(v.cmd.Process.Pid) - ps.cpu0Victim
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		ps.load = strings.Fields(string(b))[0]
	}
	if m, err := readMemory(v.node.Pid()); err == nil {
		ps.hwm = m.hwm
		ps.rssMax = max(ps.rssMax, m.rss)
	}
	if now := v.scrape(); now != nil && v.base != nil {
		d := func(series string) float64 { return now[series] - v.base[series] }
		total := d(`strata_loop_lag_ms_bucket{le="+Inf"}`)
		ps.lagOver100 = int64(total - d(`strata_loop_lag_ms_bucket{le="100"}`))
		// The smallest bucket that holds every observation of the phase.
		for _, le := range lagBuckets {
			if d(`strata_loop_lag_ms_bucket{le="`+le+`"}`) == total {
				ps.lagMax = "≤" + le + " ms"
				break
			}
		}
		// Where the node's Produce time went (the victim's, and the
		// attackers' in phases that produce).
		if n := d(`kafka_network_requestmetrics_totaltimems_count{request="Produce"}`); n > 0 {
			mean := func(m string) float64 { return d(`kafka_network_requestmetrics_`+m+`_sum{request="Produce"}`) / n }
			p99 := "+Inf"
			for _, le := range lagBuckets {
				if d(`kafka_network_requestmetrics_totaltimems_bucket{request="Produce",le="`+le+`"}`) >= 0.99*n {
					p99 = le
					break
				}
			}
			ps.produceNode = fmt.Sprintf("node Produce mean %.1f ms = queue %.1f + local %.1f + remote %.1f + send %.1f, p99 ≤%s ms (%d requests)",
				mean("totaltimems"), mean("requestqueuetimems"), mean("localtimems"), mean("remotetimems"), mean("responsesendtimems"), p99, int(n))
		}
	}
	return ps
}

func (v *victim) rssLoop(ctx context.Context) {
	defer v.wg.Done()
	for ctx.Err() == nil {
		if m, err := readMemory(v.node.Pid()); err == nil {
			v.mu.Lock()
			if v.cur != nil {
				v.cur.rssMax = max(v.cur.rssMax, m.rss)
			}
			v.mu.Unlock()
		}
		sleepCtx(ctx, rssInterval)
	}
}

// ackedRecords is every record the victim had acknowledged.
func (v *victim) ackedRecords() []ackedRecord {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []ackedRecord
	for _, ev := range v.events {
		if ev.kind == "p" {
			out = append(out, ev.rec)
		}
	}
	return out
}

// victimMain is the victim process (TestMain runs it when envVictim is
// set): it produces and probes until its stdin closes, writing one line
// per event to stdout, then waits for its outstanding records and exits.
func victimMain(target string) int {
	parts := strings.Split(target, "|")
	if len(parts) != 3 {
		fmt.Fprintln(os.Stderr, "bad", envVictim, target)
		return 2
	}
	addr, metricsAddr, topic := parts[0], parts[1], parts[2]
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DialTimeout(dialTimeout),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.RecordRetries(1<<30),
		kgo.RecordDeliveryTimeout(60*time.Second),
		kgo.DefaultProduceTopic(topic),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cl.Close()
	out := &lineWriter{w: bufio.NewWriter(os.Stdout)}
	var skipFresh atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			switch sc.Text() {
			case "skipfresh 1":
				skipFresh.Store(true)
			case "skipfresh 0":
				skipFresh.Store(false)
			}
		}
		cancel() // stdin closed: the test is done with us
	}()
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); victimProduce(ctx, cl, out) }()
	go func() { defer wg.Done(); victimMetadata(ctx, addr, topic, out) }()
	go func() { defer wg.Done(); victimFresh(ctx, addr, topic, &skipFresh, out) }()
	go func() { defer wg.Done(); victimHealthz(ctx, metricsAddr, out) }()
	wg.Wait()
	fctx, fcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer fcancel()
	if err := cl.Flush(fctx); err != nil {
		fmt.Fprintln(os.Stderr, "flush:", err)
		return 1
	}
	out.line("done")
	return 0
}

// lineWriter writes whole lines from many goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (l *lineWriter) line(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
	_ = l.w.Flush()
}

func victimProduce(ctx context.Context, cl *kgo.Client, out *lineWriter) {
	tick := time.NewTicker(produceInterval)
	defer tick.Stop()
	for seq := 1; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		key := fmt.Sprintf("victim-%07d", seq)
		start := time.Now()
		// The callback outlives ctx: records in flight at the end are
		// waited for (Flush), and reported.
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(key), Value: []byte(victimValue(key))}, func(r *kgo.Record, err error) {
			took := time.Since(start)
			if err != nil {
				out.line("pe %d %d %s", start.UnixNano(), took, strings.ReplaceAll(err.Error(), "\n", " "))
				return
			}
			out.line("p %d %d %d %d %s", start.UnixNano(), took, r.Partition, r.Offset, key)
		})
	}
}

func probeErr(out *lineWriter, start time.Time, format string, args ...any) {
	out.line("e %d %s", start.UnixNano(), strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " "))
}

// victimMetadata asks for the topic's Metadata on one connection every
// probeInterval, dialing again after an error.
func victimMetadata(ctx context.Context, addr, topic string, out *lineWriter) {
	var conn net.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	for ctx.Err() == nil {
		start := time.Now()
		if conn == nil {
			c, err := dialFrom(victimAddr, addr)
			if err != nil {
				probeErr(out, start, "metadata dial: %v", err)
				sleepCtx(ctx, probeInterval)
				continue
			}
			conn = c
		}
		start = time.Now()
		resp, err := roundTrip(conn, metadataRequest(1, topic), probeTimeout)
		took := time.Since(start)
		if err == nil {
			err = metadataErr(resp.(*kmsg.MetadataResponse), topic)
		}
		if err != nil {
			if ctx.Err() == nil {
				probeErr(out, start, "metadata after %v: %v", took, err)
			}
			_ = conn.Close()
			conn = nil
		} else {
			out.line("m %d %d", start.UnixNano(), took)
		}
		sleepCtx(ctx, probeInterval)
	}
}

// victimFresh asks for Metadata on a new connection every
// freshProbeInterval, dial included (but while skipFresh).
func victimFresh(ctx context.Context, addr, topic string, skip *atomic.Bool, out *lineWriter) {
	for ctx.Err() == nil {
		sleepCtx(ctx, freshProbeInterval)
		if skip.Load() || ctx.Err() != nil {
			continue
		}
		start := time.Now()
		c, err := dialFrom(victimAddr, addr)
		if err != nil {
			probeErr(out, start, "fresh dial: %v", err)
			continue
		}
		resp, err := roundTrip(c, metadataRequest(1, topic), probeTimeout)
		took := time.Since(start)
		_ = c.Close()
		if err == nil {
			err = metadataErr(resp.(*kmsg.MetadataResponse), topic)
		}
		if err != nil {
			if ctx.Err() == nil && !skip.Load() {
				probeErr(out, start, "fresh metadata after %v: %v", took, err)
			}
			continue
		}
		out.line("f %d %d", start.UnixNano(), took)
	}
}

func metadataErr(resp *kmsg.MetadataResponse, topic string) error {
	if len(resp.Topics) != 1 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != topic {
		return fmt.Errorf("metadata answered %d topics", len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return err
	}
	if len(resp.Brokers) == 0 {
		return fmt.Errorf("metadata lists no broker")
	}
	return nil
}

func victimHealthz(ctx context.Context, metricsAddr string, out *lineWriter) {
	hc := &http.Client{Timeout: probeTimeout}
	url := "http://" + metricsAddr + "/healthz"
	for ctx.Err() == nil {
		start := time.Now()
		resp, err := hc.Get(url)
		took := time.Since(start)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				probeErr(out, start, "healthz after %v: %v", took, err)
			}
		} else {
			out.line("h %d %d", start.UnixNano(), took)
		}
		sleepCtx(ctx, probeInterval)
	}
}

// scrape is the node's /metrics as series (name and labels) → value, or
// nil when it cannot be read.
func (v *victim) scrape() map[string]float64 {
	hc := &http.Client{Timeout: probeTimeout}
	resp, err := hc.Get("http://" + v.node.MetricsAddr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		var n float64
		if _, err := fmt.Sscan(line[i+1:], &n); err == nil {
			out[line[:i]] = n
		}
	}
	return out
}

// lagBuckets are the bounds of the node's millisecond histograms
// (core/metrics MillisBuckets), smallest first, as /metrics writes them.
var lagBuckets = []string{"0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "25", "50", "100", "250", "500", "1000", "2500", "5000", "10000", "+Inf"}

// cpuTime is a process's user and system CPU time so far (0 if unknown).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces), from state on.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	var utime, stime int64
	_, _ = fmt.Sscan(f[11], &utime)
	_, _ = fmt.Sscan(f[12], &stime)
	const clockTicks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / clockTicks
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
