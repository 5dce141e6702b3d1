package interop

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/strata-log/strata/node"
)

// Environment of a child node process (see startProcessNode).
const (
	// envChildConfig names the server.properties file of a child node;
	// when set, the test binary runs that node instead of the tests.
	envChildConfig = "STRATA_INTEROP_NODE_CONFIG"
	// envChildClusterID is the cluster id the child formats its data
	// directory with.
	envChildClusterID = "STRATA_INTEROP_CLUSTER_ID"
)

// TestMain runs the tests or, in a child process started by
// startProcessNode, one Strata node: what `strata serve --config F
// --cluster-id ID` does, without building the strata binary.
func TestMain(m *testing.M) {
	if path := os.Getenv(envChildConfig); path != "" {
		os.Exit(runChildNode(path, os.Getenv(envChildClusterID)))
	}
	os.Exit(m.Run())
}

// runChildNode serves one node until SIGTERM or SIGINT, or until the test
// binary that started it dies (a test killed by its timeout must not leave
// nodes behind; Pdeathsig would follow the forking OS thread, not the
// process).
func runChildNode(path, clusterID string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg := node.DefaultConfig()
	if _, err := node.LoadConfigFile(&cfg, path); err != nil {
		log.Error("bad configuration", "err", err)
		return 1
	}
	cfg.ClusterID = clusterID
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	parent := os.Getppid()
	go func() {
		for os.Getppid() == parent {
			time.Sleep(100 * time.Millisecond)
		}
		fmt.Fprintln(os.Stderr, "the test binary is gone; exiting")
		os.Exit(3)
	}()
	if err := node.Run(ctx, cfg, log); err != nil {
		log.Error("node failed", "err", err)
		return 1
	}
	return 0
}
