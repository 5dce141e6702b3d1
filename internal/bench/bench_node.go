package bench

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/internal/cli"
	"github.com/strata-log/strata/node"
)

// Bounds of the bench's Strata child process.
const (
	// defaultBenchReadyTimeout is --ready-timeout: how long the node may
	// take from exec to a Metadata answer that lists a broker and a
	// controller (it elects itself and registers its broker in about a
	// second).
	defaultBenchReadyTimeout = 30 * time.Second
	// benchReadyPollInterval is how often readiness is asked.
	benchReadyPollInterval = 100 * time.Millisecond
	// benchReadyRequestTimeout bounds one readiness Metadata request.
	benchReadyRequestTimeout = time.Second
	// benchNodeStopTimeout is how long the node has to exit after
	// SIGTERM before it is killed.
	benchNodeStopTimeout = 15 * time.Second
	// benchNodeLogLines is how many of the node's last log lines are
	// kept to explain a failure.
	benchNodeLogLines = 20
	// clockTicksPerSecond is USER_HZ, the unit of utime and stime in
	// /proc/<pid>/stat: 100 on every Linux architecture Go supports.
	clockTicksPerSecond = 100
)

// benchNode is a `strata serve` child process with its own data
// directory and free ports on 127.0.0.1.
type benchNode struct {
	cmd         *exec.Cmd
	addr        string // the PLAINTEXT listener
	metricsAddr string // /metrics
	exited      chan struct{}
	log         *logTail
}

// startBenchNode runs `<command> serve` as a single combined node with
// its data under dir, passes each of extraArgs as --key=value after the
// bench's own flags (so a later one overrides), and waits until it is
// ready: its Metadata lists a broker and a controller. command is the
// strata binary and any arguments before "serve"; env is added to the
// child's environment. The child is killed if this process dies.
func startBenchNode(ctx context.Context, command []string, env []string, dir string, extraArgs cli.KeyValues, readyTimeout time.Duration) (*benchNode, error) {
	c, err := startBenchCluster(ctx, command, env, dir, 1, extraArgs, readyTimeout)
	if err != nil {
		return nil, err
	}
	return c.nodes[0], nil
}

// benchCluster is the combined nodes the bench started: a quorum of all
// of them, each also a broker.
type benchCluster struct {
	nodes []*benchNode
}

// startBenchCluster starts n combined nodes as startBenchNode starts one,
// with node ids 1..n, every one a voter, their data under dir/node-<id>
// (dir/strata-node for a single node), and waits until each one's
// Metadata lists all n brokers and a controller.
func startBenchCluster(ctx context.Context, command []string, env []string, dir string, n int, extraArgs cli.KeyValues, readyTimeout time.Duration) (*benchCluster, error) {
	brokerAddrs := make([]string, n)
	ctrlAddrs := make([]string, n)
	metricsAddrs := make([]string, n)
	voters := make([]string, n)
	for i := range n {
		var err error
		if brokerAddrs[i], err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
		if metricsAddrs[i], err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
		if ctrlAddrs[i], err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
		voters[i] = fmt.Sprintf("%d@%s", i+1, ctrlAddrs[i])
	}
	var clusterArgs []string
	if n > 1 {
		// Every node of a cluster formats its directory with one id.
		id, err := node.NewClusterID(crand.Reader)
		if err != nil {
			return nil, err
		}
		clusterArgs = []string{"--cluster-id", id}
	}
	c := &benchCluster{}
	for i := range n {
		data := filepath.Join(dir, "strata-node")
		if n > 1 {
			data = filepath.Join(dir, fmt.Sprintf("node-%d", i+1))
		}
		args := append(command[1:len(command):len(command)], "serve",
			"--log.dirs", data,
			"--listeners", "PLAINTEXT://"+brokerAddrs[i]+",CONTROLLER://"+ctrlAddrs[i],
			"--controller.quorum.voters", strings.Join(voters, ","),
			"--node.id", strconv.Itoa(i+1),
			"--metrics.listener", metricsAddrs[i])
		args = append(args, clusterArgs...)
		for _, kv := range extraArgs {
			args = append(args, "--"+kv.Key+"="+kv.Value)
		}
		nd := &benchNode{addr: brokerAddrs[i], metricsAddr: metricsAddrs[i], exited: make(chan struct{}), log: &logTail{max: benchNodeLogLines}}
		nd.cmd = exec.Command(command[0], args...)
		nd.cmd.Env = append(os.Environ(), env...)
		nd.cmd.Stdout, nd.cmd.Stderr = nd.log, nd.log
		// A bench killed by a signal must not leave the node running.
		nd.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := nd.cmd.Start(); err != nil {
			_ = c.stop()
			return nil, fmt.Errorf("starting node %d: %w", i+1, err)
		}
		go func() {
			_ = nd.cmd.Wait()
			close(nd.exited)
		}()
		c.nodes = append(c.nodes, nd)
	}
	for _, nd := range c.nodes {
		if err := nd.waitReady(ctx, readyTimeout, n); err != nil {
			_ = c.stop()
			return nil, err
		}
	}
	return c, nil
}

// addrs are the nodes' PLAINTEXT listeners, the clients' seeds.
func (c *benchCluster) addrs() []string {
	out := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		out[i] = nd.addr
	}
	return out
}

// stop stops every node (see benchNode.stop), all at once: a node that
// stops alone first moves its leaderships to the others (controlled
// shutdown), which the last ones cannot do.
func (c *benchCluster) stop() error {
	return inParallel(len(c.nodes), func(i int) error {
		if err := c.nodes[i].stop(); err != nil {
			return fmt.Errorf("node %d: %w", i+1, err)
		}
		return nil
	})
}

// cpuSeconds is the nodes' CPU time so far, summed.
func (c *benchCluster) cpuSeconds() (float64, error) {
	var sum float64
	for _, nd := range c.nodes {
		s, err := nd.cpuSeconds()
		if err != nil {
			return 0, err
		}
		sum += s
	}
	return sum, nil
}

// diskCounters are the nodes' disk counters, summed.
func (c *benchCluster) diskCounters(ctx context.Context) (diskCounters, error) {
	var sum diskCounters
	for _, nd := range c.nodes {
		d, err := nd.diskCounters(ctx)
		if err != nil {
			return diskCounters{}, err
		}
		sum.fdatasyncs += d.fdatasyncs
		sum.bytesWritten += d.bytesWritten
	}
	return sum, nil
}

// freeLoopbackAddr is a 127.0.0.1 address that was free a moment ago: the
// controller's port must be known before the node starts.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitReady polls Metadata until it lists brokers brokers and a
// controller, the process exits, ctx ends or timeout passes.
func (n *benchNode) waitReady(ctx context.Context, timeout time.Duration, brokers int) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.DialTimeout(benchReadyRequestTimeout), kgo.ClientID("strata-bench"))
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer cl.Close()
	last := "no answer yet"
	for {
		rctx, rcancel := context.WithTimeout(ctx, benchReadyRequestTimeout)
		// Ready once enough brokers are unfenced: DescribeCluster v2
		// with the fenced ones says which (a starting broker lists
		// itself, fenced, and Metadata names it the controller).
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.IncludeFencedBrokers = 2, true
		resp, err := req.RequestWith(rctx, cl.SeedBrokers()[0])
		rcancel()
		unfenced := 0
		if err == nil {
			for _, b := range resp.Brokers {
				if !b.IsFenced {
					unfenced++
				}
			}
		}
		switch {
		case err != nil:
			last = err.Error()
		case resp.ErrorCode != 0:
			last = fmt.Sprintf("DescribeCluster: %v", kerr.ErrorForCode(resp.ErrorCode))
		case unfenced >= brokers:
			return nil
		default:
			last = fmt.Sprintf("DescribeCluster lists %d unfenced brokers of %d", unfenced, len(resp.Brokers))
		}
		select {
		case <-n.exited:
			return fmt.Errorf("the strata node exited before it was ready (%v); its last log lines:\n%s", n.cmd.ProcessState, n.log)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("the strata node at %s was not ready within %v (%s); its last log lines:\n%s", n.addr, timeout, last, n.log)
			}
			return ctx.Err()
		case <-time.After(benchReadyPollInterval):
		}
	}
}

// stop sends SIGTERM and waits for the exit, killing the process after
// benchNodeStopTimeout. An exit other than a clean 0 is an error.
func (n *benchNode) stop() error {
	select {
	case <-n.exited:
	default:
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.exited:
		case <-time.After(benchNodeStopTimeout):
			_ = n.cmd.Process.Kill()
			<-n.exited
			return fmt.Errorf("the strata node did not stop within %v of SIGTERM and was killed; its last log lines:\n%s", benchNodeStopTimeout, n.log)
		}
	}
	if !n.cmd.ProcessState.Success() {
		return fmt.Errorf("the strata node exited with %v; its last log lines:\n%s", n.cmd.ProcessState, n.log)
	}
	return nil
}

// cpuSeconds is the node's user plus system CPU time so far, all threads,
// from /proc/<pid>/stat.
func (n *benchNode) cpuSeconds() (float64, error) {
	return processCPUSeconds(n.cmd.Process.Pid)
}

// processCPUSeconds reads utime and stime (fields 14 and 15) of
// /proc/<pid>/stat.
func processCPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading CPU time: %w", err)
	}
	return parseProcStatCPU(b)
}

// parseProcStatCPU is utime+stime of a /proc/<pid>/stat line in seconds.
// The command name (field 2) is in parentheses and may hold spaces and
// parentheses itself, so fields are counted from the last ')'.
func parseProcStatCPU(stat []byte) (float64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	fields := strings.Fields(string(stat[i+1:])) // fields[0] is field 3, state
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	u, err1 := strconv.ParseUint(fields[utime], 10, 64)
	s, err2 := strconv.ParseUint(fields[stime], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("malformed /proc stat: %w", err)
	}
	return float64(u+s) / clockTicksPerSecond, nil
}

// logTail keeps the last max lines written to it.
type logTail struct {
	max int

	mu      sync.Mutex
	partial []byte
	lines   []string
	// matches counts the lines seen containing each watched substring,
	// and lastMatch keeps the latest such line (watch registers one).
	matches   map[string]int
	lastMatch map[string]string
}

// count returns how many lines containing substr were seen since watch.
func (l *logTail) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.matches[substr]
}

// last returns the latest line containing substr.
func (l *logTail) last(substr string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastMatch[substr]
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.add(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	// A line longer than a page is cut rather than grown without bound.
	if len(l.partial) > logTailLineBytesMax {
		l.add(string(l.partial))
		l.partial = l.partial[:0]
	}
	return len(p), nil
}

// watchedLogLines are the node log lines the bench reads figures from.
var watchedLogLines = []string{"disk stats"}

// logTailLineBytesMax bounds one kept line.
const logTailLineBytesMax = 4096

func (l *logTail) add(line string) {
	for _, w := range watchedLogLines {
		if strings.Contains(line, w) {
			if l.matches == nil {
				l.matches, l.lastMatch = map[string]int{}, map[string]string{}
			}
			l.matches[w]++
			l.lastMatch[w] = line
		}
	}
	l.lines = append(l.lines, line)
	if len(l.lines) > l.max {
		l.lines = l.lines[len(l.lines)-l.max:]
	}
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 && len(l.partial) == 0 {
		return "  (nothing logged)"
	}
	out := make([]string, 0, len(l.lines)+1)
	for _, line := range l.lines {
		out = append(out, "  "+line)
	}
	if len(l.partial) > 0 {
		out = append(out, "  "+string(l.partial))
	}
	return strings.Join(out, "\n")
}

// diskCounters asks the node for its disk counters (SIGUSR1 makes `strata
// serve` log a "disk stats" line) and reads them from its log.
func (n *benchNode) diskCounters(ctx context.Context) (diskCounters, error) {
	seen := n.log.count("disk stats")
	if err := n.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return diskCounters{}, fmt.Errorf("ask the node for disk stats: %w", err)
	}
	deadline := time.Now().Add(benchReadyRequestTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if n.log.count("disk stats") > seen {
			line := n.log.last("disk stats")
			var c diskCounters
			for _, f := range strings.Fields(line) {
				k, v, ok := strings.Cut(f, "=")
				if !ok {
					continue
				}
				switch k {
				case "fdatasyncs":
					c.fdatasyncs, _ = strconv.ParseUint(v, 10, 64)
				case "bytes_written":
					c.bytesWritten, _ = strconv.ParseUint(v, 10, 64)
				}
			}
			return c, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return diskCounters{}, fmt.Errorf("the node logged no disk stats within %v", benchReadyRequestTimeout)
}
