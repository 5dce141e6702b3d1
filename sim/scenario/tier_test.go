package scenario

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/sim"
)

// shortSeeds is how many consecutive seeds each sweep runs under -short
// (make check, the fast tier): every scenario's first seeds, in seconds;
// make test runs the full sweeps, and make sim-sweep more.
const shortSeeds = 20

// sweepSeeds is how many consecutive seeds a sweep of n runs: n, or
// shortSeeds under -short.
func sweepSeeds(n uint64) uint64 {
	if testing.Short() {
		return min(n, shortSeeds)
	}
	return n
}

// exercised requires that a sweep did what its scenario promises
// somewhere (a strike, a refused commit, every hostile kind): a figure
// over hundreds of seeds, which the short tier's few seeds need not
// reach, so under -short a miss is logged instead.
func exercised(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if testing.Short() {
		t.Logf("not exercised in the short tier's %d seeds (make test requires it): %s", shortSeeds, what)
		return
	}
	t.Fatal(what)
}

// requirePassed fails t with the summary of a run that failed.
func requirePassed(t *testing.T, sum sim.Summary) {
	t.Helper()
	if sum.Err != nil {
		var b strings.Builder
		sum.Print(&b)
		t.Fatalf("%s seed %d failed:\n%s", sum.Scenario, sum.Seed, b.String())
	}
}

// runTwice runs seed of the named scenario twice, requires the two runs
// to agree (requireSameRun) and returns the first's summary.
func runTwice(t *testing.T, scenario string, seed uint64) sim.Summary {
	t.Helper()
	a, err := Run(scenario, Options{Seed: seed})
	require.NoError(t, err)
	b, err := Run(scenario, Options{Seed: seed})
	require.NoError(t, err)
	requireSameRun(t, a, b)
	return a
}

// requireSameRun requires two runs of one seed to agree on the trace
// hash, the events and the faults (the determinism check).
func requireSameRun(t *testing.T, a, b sim.Summary) {
	t.Helper()
	require.Equal(t, a.TraceHash, b.TraceHash, "%s seed %d gave two traces", b.Scenario, b.Seed)
	require.Equal(t, a.Events, b.Events, "%s seed %d", b.Scenario, b.Seed)
	require.Equal(t, a.Faults, b.Faults, "%s seed %d", b.Scenario, b.Seed)
}
