package scenario

import "testing"

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
