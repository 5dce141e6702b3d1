package strata_test

import (
	"testing"

	"github.com/strata-log/strata/internal/detguard"
)

// TestDeterminismGuard enforces the deterministic core contract (see
// docs/architecture.md) on every package that runs inside the simulator.
func TestDeterminismGuard(t *testing.T) {
	findings, err := detguard.Check(".", "./core/...", "./sim/...", "./nemesis/...", "./linearizability/...")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Error(f.String())
	}
}
