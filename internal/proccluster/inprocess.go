package proccluster

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/node"
)

// InProcessTimeout bounds waits on in-process nodes.
const InProcessTimeout = 20 * time.Second

// StartInProcess starts a node in this process (no process boundary: for
// tests of a command against a real node) with its metrics on a free
// port and its log in the test's, and shuts it down at the end of the
// test.
func StartInProcess(t testing.TB, cfg node.Config) *node.Node {
	t.Helper()
	cfg.MetricsListener = "127.0.0.1:0"
	n, err := node.Start(cfg, slog.New(slog.NewTextHandler(logTo{t}, nil)))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), InProcessTimeout)
		defer cancel()
		require.NoError(t, n.Shutdown(ctx))
	})
	return n
}

// logTo sends a node's log lines to the test log.
type logTo struct{ t testing.TB }

func (w logTo) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
