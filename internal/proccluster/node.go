package proccluster

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Bounds of one node process.
const (
	// StartTimeout bounds a process's start until it logs "node started".
	StartTimeout = 30 * time.Second
	// stopTimeout bounds a clean shutdown after SIGTERM.
	stopTimeout = 30 * time.Second
	// pollInterval is how often a wait looks again.
	pollInterval = 10 * time.Millisecond
	// logInlineLines is the most log lines a failed test prints inline; a
	// longer log goes to a file, and the test prints its tail.
	logInlineLines = 400
)

// spawner starts every child process from one OS thread that lives as
// long as the test binary, so that Pdeathsig (which follows the thread
// that forked, not the process) kills the children when the test binary
// dies, whatever kills it (a test timeout, a panic), and never before.
var spawner = sync.OnceValue(func() chan spawnRequest {
	ch := make(chan spawnRequest)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread stays for good
		for req := range ch {
			req.done <- req.cmd.Start()
		}
	}()
	return ch
})

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// StartChild starts cmd as a child process that dies with the test
// binary (a test's own helper process, say).
func StartChild(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	done := make(chan error, 1)
	spawner() <- spawnRequest{cmd: cmd, done: done}
	return <-done
}

// startedLine matches the fields of the "node started" line a test needs.
var startedLine = regexp.MustCompile(`msg="node started".* listener=(\S*) controller_listener=(\S*) .*metrics_listener=(\S*) cluster_id=(\S+)`)

// Node is one `strata serve` process with its server.properties and data
// directory; it can be killed, paused and started again on the same data.
type Node struct {
	ID    int32
	Roles string // process.roles
	// Props is the path of its server.properties.
	Props string
	// Wrap runs the binary, e.g. ip netns exec NAME; empty: run it as is.
	Wrap []string

	// Learnt from its "node started" line at each start (or fixed in
	// Props beforehand, as a cluster's are); empty for a role it lacks.
	BrokerAddr, CtrlAddr, MetricsAddr, ClusterID string

	netns  *Netns // where it runs, if not in this namespace
	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	logs   []string // every stderr line of every start
	starts int      // index in logs where the current start's lines begin
}

// NewNode writes props (key=value lines) to dir/node-ID.properties.
func NewNode(t testing.TB, dir string, id int32, props []string) *Node {
	t.Helper()
	p := &Node{ID: id, Props: filepath.Join(dir, fmt.Sprintf("node-%d.properties", id))}
	require.NoError(t, os.WriteFile(p.Props, []byte(strings.Join(props, "\n")+"\n"), 0o644))
	return p
}

// Start runs the process (with clusterID: a fresh data directory is
// formatted with it) and waits for its "node started" line.
func (p *Node) Start(t testing.TB, clusterID string) {
	t.Helper()
	p.Spawn(t, clusterID)
	p.WaitStarted(t)
}

// Spawn runs the process and returns at once; its log lines append to
// p's. The process is SIGKILLed at the end of the test if it still runs,
// and the test, if it failed, logs p's log once.
func (p *Node) Spawn(t testing.TB, clusterID string) {
	t.Helper()
	args := []string{"serve", "--config", p.Props}
	if clusterID != "" {
		args = append(args, "--cluster-id", clusterID)
	}
	name := Binary(t)
	if len(p.Wrap) > 0 {
		name, args = p.Wrap[0], append(append(slices.Clone(p.Wrap[1:]), name), args...)
	}
	p.cmd = exec.Command(name, args...)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	p.mu.Lock()
	first := len(p.logs) == 0 && p.exited == nil
	p.starts = len(p.logs)
	p.mu.Unlock()
	require.NoError(t, StartChild(p.cmd))
	cmd, exited := p.cmd, make(chan struct{})
	p.exited = exited
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.logs = append(p.logs, sc.Text())
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		if p.Alive() && p.cmd == cmd {
			p.Kill()
		}
	})
	if first {
		t.Cleanup(func() {
			if t.Failed() {
				p.logForFailure(t)
			}
		})
	}
}

// WaitStarted waits for the current start's "node started" line and
// learns the node's addresses from it.
func (p *Node) WaitStarted(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(StartTimeout)
	for {
		if m := p.startedMatch(); m != nil {
			unquote := func(s string) string { return strings.Trim(s, `"`) }
			p.BrokerAddr, p.CtrlAddr, p.MetricsAddr, p.ClusterID = unquote(m[1]), unquote(m[2]), unquote(m[3]), unquote(m[4])
			return
		}
		if !p.Alive() {
			require.FailNow(t, "node exited during start", "node %d (%v):\n%s", p.ID, p.cmd.ProcessState, p.LogText())
		}
		require.True(t, time.Now().Before(deadline), "node %d did not start within %v:\n%s", p.ID, StartTimeout, p.LogText())
		time.Sleep(pollInterval)
	}
}

func (p *Node) startedMatch() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.logs[p.starts:] {
		if m := startedLine.FindStringSubmatch(l); m != nil {
			return m
		}
	}
	return nil
}

// Alive reports whether the current process has not exited.
func (p *Node) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Exited is closed when the current process has exited.
func (p *Node) Exited() <-chan struct{} { return p.exited }

// ProcessState is the current process's exit state (nil while it runs).
func (p *Node) ProcessState() *os.ProcessState { return p.cmd.ProcessState }

// Pid is the current process's.
func (p *Node) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL (kill -9: a crash, no shutdown) and waits until the
// process is gone.
func (p *Node) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Signal sends sig to the current process and returns at once.
func (p *Node) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Pause sends SIGSTOP: the node is a silent host, its connections open
// and unanswered, until Resume.
func (p *Node) Pause() error { return p.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume sends SIGCONT to a paused node.
func (p *Node) Resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// Stop sends SIGTERM and waits for a clean exit (status 0).
func (p *Node) Stop(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		require.FailNow(t, "node did not stop", "node %d still runs %v after SIGTERM", p.ID, stopTimeout)
	}
	require.True(t, p.cmd.ProcessState.Success(), "node %d exited with %v after SIGTERM:\n%s", p.ID, p.cmd.ProcessState, p.Tail(40))
}

// WaitReady waits until the node's /readyz answers 200: its quorum knows
// a leader and its broker is registered and unfenced.
func (p *Node) WaitReady(t testing.TB) {
	t.Helper()
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(StartTimeout)
	for {
		resp, err := hc.Get("http://" + p.MetricsAddr + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		p.RequireHealthy(t, "while starting")
		require.True(t, time.Now().Before(deadline), "node %d not ready within %v:\n%s", p.ID, StartTimeout, p.Tail(40))
		time.Sleep(20 * time.Millisecond)
	}
}

// Logged reports whether a line of any start contains substr.
func (p *Node) Logged(substr string) bool { return p.LoggedSince(0, substr) }

// LoggedSince reports whether a line after the first n contains substr.
func (p *Node) LoggedSince(n int, substr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.logs[min(n, len(p.logs)):], func(l string) bool { return strings.Contains(l, substr) })
}

// LogLines is how many lines every start has logged.
func (p *Node) LogLines() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.logs)
}

// CurrentLogs is the lines of the current (or last) start.
func (p *Node) CurrentLogs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.logs[p.starts:])
}

// LogText is every start's log.
func (p *Node) LogText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs, "\n")
}

// Tail is the last n log lines.
func (p *Node) Tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs[max(0, len(p.logs)-n):], "\n")
}

// logForFailure logs p's whole log, or its tail and a file with the rest
// when it is long (a hostile-input node's log is).
func (p *Node) logForFailure(t testing.TB) {
	if p.LogLines() <= logInlineLines {
		t.Logf("node %d (%s) log:\n%s", p.ID, p.Roles, p.LogText())
		return
	}
	f, err := os.CreateTemp("", fmt.Sprintf("strata-node-%d-*.log", p.ID))
	if err != nil {
		t.Logf("node %d's last lines:\n%s", p.ID, p.Tail(logInlineLines))
		return
	}
	_, _ = f.WriteString(p.LogText())
	_ = f.Close()
	t.Logf("node %d's whole log: %s; its last lines:\n%s", p.ID, f.Name(), p.Tail(logInlineLines))
}

// PanicLines is the log lines (of every start) that show a panic, a fatal
// runtime error or a failed assertion.
func (p *Node) PanicLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.logs {
		if strings.HasPrefix(l, "panic:") || strings.Contains(l, "fatal error:") || strings.HasPrefix(l, "goroutine ") ||
			strings.Contains(l, "assertion failed") {
			out = append(out, l)
		}
	}
	return out
}

// RequireHealthy fails the test at once if the process died or logged a
// panic.
func (p *Node) RequireHealthy(t testing.TB, when string) {
	t.Helper()
	if !p.Alive() {
		require.FailNow(t, "node died", "node %d died %s (%v); last lines:\n%s", p.ID, when, p.cmd.ProcessState, p.Tail(80))
	}
	if lines := p.PanicLines(); len(lines) > 0 {
		require.FailNow(t, "node panicked", "node %d %s:\n%s\nlast lines:\n%s", p.ID, when, strings.Join(lines, "\n"), p.Tail(80))
	}
}
