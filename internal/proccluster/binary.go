package proccluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// buildTimeout bounds building the strata binary (a cold build on a
// loaded 2-core machine took a minute, with the race detector more; a
// cached one a second or two).
const buildTimeout = 5 * time.Minute

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// RunTests runs m's tests and removes the strata binary Binary built;
// call it from TestMain: os.Exit(proccluster.RunTests(m)).
func RunTests(m *testing.M) int {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	return code
}

// Binary builds cmd/strata from this tree once per test binary, with
// the race detector when the test binary has it (make test runs the
// system tests under -race, and the nodes' goroutines are what it should
// watch), and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "strata-proccluster-bin-")
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
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		start := time.Now()
		out, err := exec.CommandContext(ctx, goTool, append(args, "github.com/strata-log/strata/cmd/strata")...).CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go %v ./cmd/strata: %w\n%s", args, err, out)
			return
		}
		t.Logf("built %s (race detector %v) in %v", binPath, raceEnabled, time.Since(start).Round(time.Millisecond))
	})
	require.NoError(t, binErr)
	return binPath
}

// StatusField is the value of field name in the summary that `strata
// quorum status` prints (name, a colon, spaces, the value); the test
// fails without one.
func StatusField(t testing.TB, out, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `:\s+(.*)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "%s in:\n%s", name, out)
	return m[1]
}
