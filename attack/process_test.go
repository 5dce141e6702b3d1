package attack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Bounds of the node processes.
const (
	// buildTimeout bounds building the strata binary (a cold build on a
	// loaded 2-core machine took a minute; a cached one under a second).
	buildTimeout = 5 * time.Minute
	// startTimeout bounds a process's start until it logs "node started".
	startTimeout = 30 * time.Second
	// stopTimeout bounds a clean shutdown after SIGTERM.
	stopTimeout = 30 * time.Second
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// TestMain removes the built binary after the tests.
func TestMain(m *testing.M) {
	if target := os.Getenv(envVictim); target != "" {
		os.Exit(victimMain(target))
	}
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// strataBinary builds cmd/strata from this tree once per test binary and
// returns its path.
func strataBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "strata-attack-bin-")
		if binErr != nil {
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		binPath = filepath.Join(binDir, "strata")
		start := time.Now()
		out, err := exec.CommandContext(ctx, goTool, "build", "-o", binPath, "github.com/strata-log/strata/cmd/strata").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build ./cmd/strata: %w\n%s", err, out)
			return
		}
		t.Logf("built %s in %v", binPath, time.Since(start).Round(time.Millisecond))
	})
	require.NoError(t, binErr)
	return binPath
}

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

func startChild(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	done := make(chan error, 1)
	spawner() <- spawnRequest{cmd: cmd, done: done}
	return <-done
}

// nodeProc is one `strata serve` process with its data directory and
// server.properties; it can be stopped and started again on the same
// data.
type nodeProc struct {
	id    int32
	props string // path of its server.properties

	// Learnt from its "node started" line, at each start.
	addr, ctrlAddr, metricsAddr, clusterID string

	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	logs   []string // every stderr line of every start
	starts int      // index in logs where the current start's lines begin
}

// startedLine matches the fields of "node started" that a test needs.
var startedLine = regexp.MustCompile(`msg="node started".* listener=(\S+) controller_listener=(\S*) .*metrics_listener=(\S*) cluster_id=(\S+)`)

// newNodeProc writes props (key=value lines) to dir/node-ID.properties.
func newNodeProc(t *testing.T, dir string, id int32, props []string) *nodeProc {
	t.Helper()
	p := &nodeProc{id: id, props: filepath.Join(dir, fmt.Sprintf("node-%d.properties", id))}
	require.NoError(t, os.WriteFile(p.props, []byte(strings.Join(props, "\n")+"\n"), 0o644))
	return p
}

// start runs the process with clusterID (a fresh data directory is
// formatted with it) and waits for its "node started" line; the process
// is killed at the end of the test if it still runs.
func (p *nodeProc) start(t *testing.T, clusterID string) {
	t.Helper()
	args := []string{"serve", "--config", p.props}
	if clusterID != "" {
		args = append(args, "--cluster-id", clusterID)
	}
	p.cmd = exec.Command(strataBinary(t), args...)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	p.mu.Lock()
	p.starts = len(p.logs)
	p.mu.Unlock()
	require.NoError(t, startChild(p.cmd))
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
		if p.alive() {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
		if t.Failed() && p.starts == 0 {
			// The whole log, for the investigation; the test's own
			// output keeps the tail.
			f, err := os.CreateTemp("", fmt.Sprintf("strata-attack-node-%d-*.log", p.id))
			if err == nil {
				_, _ = f.WriteString(p.logText())
				_ = f.Close()
				t.Logf("node %d's whole log: %s; its last lines:\n%s", p.id, f.Name(), p.tail(30))
			}
		}
	})
	deadline := time.Now().Add(startTimeout)
	for {
		if m := p.startedMatch(); m != nil {
			p.addr, p.ctrlAddr, p.metricsAddr, p.clusterID = m[1], m[2], m[3], m[4]
			return
		}
		if !p.alive() {
			require.FailNow(t, "node exited during start", "node %d (%v):\n%s", p.id, p.cmd.ProcessState, p.logText())
		}
		require.True(t, time.Now().Before(deadline), "node %d did not start within %v:\n%s", p.id, startTimeout, p.logText())
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *nodeProc) startedMatch() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.logs[p.starts:] {
		if m := startedLine.FindStringSubmatch(l); m != nil {
			return m
		}
	}
	return nil
}

func (p *nodeProc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *nodeProc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits for a clean exit (status 0).
func (p *nodeProc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		require.FailNow(t, "node did not stop", "node %d still runs %v after SIGTERM", p.id, stopTimeout)
	}
	require.True(t, p.cmd.ProcessState.Success(), "node %d exited with %v after SIGTERM:\n%s", p.id, p.cmd.ProcessState, p.tail(40))
}

// currentLogs is the lines of the current (or last) start.
func (p *nodeProc) currentLogs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.logs[p.starts:])
}

func (p *nodeProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs, "\n")
}

// tail is the last n log lines.
func (p *nodeProc) tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs[max(0, len(p.logs)-n):], "\n")
}

// panicLines is the log lines (of every start) that show a panic or a
// fatal runtime error.
func (p *nodeProc) panicLines() []string {
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

// requireHealthy fails the test at once if the process died or logged a
// panic.
func (p *nodeProc) requireHealthy(t *testing.T, when string) {
	t.Helper()
	if !p.alive() {
		require.FailNow(t, "node died", "node %d died %s (%v); last lines:\n%s", p.id, when, p.cmd.ProcessState, p.tail(80))
	}
	if lines := p.panicLines(); len(lines) > 0 {
		require.FailNow(t, "node panicked", "node %d %s:\n%s\nlast lines:\n%s", p.id, when, strings.Join(lines, "\n"), p.tail(80))
	}
}

// memory is a process's resident set and its peak, from
// /proc/PID/status, in bytes.
type memory struct{ rss, hwm int64 }

func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			m.rss = kb << 10
		case "VmHWM:":
			m.hwm = kb << 10
		}
	}
	if m.rss == 0 {
		return m, errors.New("no VmRSS in /proc/PID/status")
	}
	return m, nil
}

// resetPeak resets the process's VmHWM to its current RSS (Linux 4.0+),
// so that the next reading is the peak since now.
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// waitReady waits until the node's /readyz answers 200: its quorum knows
// a leader and its broker is registered and unfenced.
func (p *nodeProc) waitReady(t *testing.T) {
	t.Helper()
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := hc.Get("http://" + p.metricsAddr + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		p.requireHealthy(t, "while starting")
		require.True(t, time.Now().Before(deadline), "node %d not ready within %v:\n%s", p.id, startTimeout, p.tail(40))
		time.Sleep(20 * time.Millisecond)
	}
}
