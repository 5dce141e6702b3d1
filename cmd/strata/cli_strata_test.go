package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/node"
)

// TestCLIStrata runs the client commands against an in-process Strata
// node, as TestCLIKfake does against kfake: topic describe and alter
// --config go through DescribeConfigs and IncrementalAlterConfigs.
func TestCLIStrata(t *testing.T) {
	cfg := node.DefaultConfig()
	cfg.Listener, cfg.ControllerListener, cfg.LogDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	cfg.MetricsListener = "127.0.0.1:0"
	n, err := node.Start(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	require.Eventually(t, n.ActiveController, 15*time.Second, 10*time.Millisecond)
	testCLI(t, n.Addr())
}
