package proccluster

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cliTimeout bounds one strata command a system test runs.
const cliTimeout = 20 * time.Second

func TestMain(m *testing.M) { os.Exit(RunTests(m)) }

// runStrata runs the strata binary with args, as an operator would, and
// returns its exit code, stdout and stderr.
func runStrata(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, Binary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "strata %q did not finish within %v", args, cliTimeout)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err, "strata %q", args)
	return 0, out.String(), errOut.String()
}

// strataOK runs a client command of the strata binary against the broker
// at addr, requires exit code 0 and returns its stdout.
func strataOK(t *testing.T, addr string, args ...string) string {
	t.Helper()
	code, out, errOut := runStrata(t, append(args, "--bootstrap-server", addr)...)
	require.Equal(t, 0, code, "strata %q: %s", args, errOut)
	return out
}

func TestMedianAndSpread(t *testing.T) {
	require.Equal(t, 2.0, Median([]float64{9, 1, 2}))
	require.Equal(t, 2.5, Median([]float64{9, 1, 2, 3}))
	ds := []time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond, 10 * time.Millisecond}
	require.Equal(t, "median 3ms, min 1ms, max 10ms", Spread(ds), "2.5 ms, to the millisecond")
	require.Equal(t, 3*time.Millisecond, ds[0], "the input is left in its order")
}
