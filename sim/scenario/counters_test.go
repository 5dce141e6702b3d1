package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// regressionSeeds are seeds that once failed, pinned before their fix.
var regressionSeeds = []uint64{
	36, // liveness: a node never re-learned a peer after the heal (net: see docs/simulation.md)
}

// seedsInMakeTest is how many consecutive seeds `make test` runs; `make
// sim-sweep` runs more.
const seedsInMakeTest = 150

func runSeed(t *testing.T, name string, seed uint64) {
	t.Helper()
	sum, err := Run(name, Options{Seed: seed})
	require.NoError(t, err)
	if sum.Err != nil {
		var b strings.Builder
		sum.Print(&b)
		t.Fatalf("seed %d failed:\n%s", seed, b.String())
	}
}

func TestCountersRegressionSeeds(t *testing.T) {
	for _, seed := range regressionSeeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runSeed(t, "counters", seed) })
	}
}

func TestCountersSeeds(t *testing.T) {
	for seed := uint64(1); seed <= seedsInMakeTest; seed++ {
		runSeed(t, "counters", seed)
	}
}

// TestDeterminism runs 20 seeds of the multi-node scenario twice each: the
// same seed must give the same trace hash, and different seeds different
// ones.
func TestDeterminism(t *testing.T) {
	seen := map[uint64]uint64{}
	for seed := uint64(1000); seed < 1020; seed++ {
		a, err := Run("counters", Options{Seed: seed})
		require.NoError(t, err)
		b, err := Run("counters", Options{Seed: seed})
		require.NoError(t, err)
		require.Equal(t, a.TraceHash, b.TraceHash, "seed %d gave two traces", seed)
		require.Equal(t, a.Events, b.Events)
		require.Equal(t, a.Faults, b.Faults)
		if other, dup := seen[a.TraceHash]; dup {
			t.Fatalf("seeds %d and %d gave the same trace hash %016x", other, seed, a.TraceHash)
		}
		seen[a.TraceHash] = seed
	}
}

// TestChecksCatchAckBeforeSync plants a durability bug and requires the
// scenario's checks to fail on some seed: a check that cannot fail proves
// nothing.
func TestChecksCatchAckBeforeSync(t *testing.T) {
	caught := 0
	for seed := uint64(1); seed <= 20; seed++ {
		sum, err := Run("counters", Options{Seed: seed, bugAckBeforeSync: true})
		require.NoError(t, err)
		if sum.Err != nil {
			require.Contains(t, sum.Err.Error(), "lost acknowledged data")
			caught++
		}
	}
	require.Positive(t, caught, "no seed caught a node acknowledging before fsync")
}

func TestIdleScenarioRunsWithoutFaults(t *testing.T) {
	sum, err := Run("idle", Options{Seed: 1})
	require.NoError(t, err)
	require.NoError(t, sum.Err)
	require.Zero(t, sum.FaultTotal())
	require.Positive(t, sum.Events)
}

func TestUnknownScenario(t *testing.T) {
	_, err := Run("nope", Options{})
	require.ErrorContains(t, err, "unknown scenario")
}

// BenchmarkIdle5Nodes reports how many simulated seconds an idle 5-node
// cluster runs per wall-clock second.
func BenchmarkIdle5Nodes(b *testing.B) {
	benchScenario(b, "idle")
}

// BenchmarkCounters5Nodes is the same for the counters workload under the
// nemesis.
func BenchmarkCounters5Nodes(b *testing.B) {
	benchScenario(b, "counters")
}

func benchScenario(b *testing.B, name string) {
	var simSeconds float64
	var events uint64
	for i := 0; i < b.N; i++ {
		sum, err := Run(name, Options{Seed: uint64(i + 1)})
		if err != nil || sum.Err != nil {
			b.Fatal(err, sum.Err)
		}
		simSeconds += sum.SimTime.Seconds()
		events += sum.Events
	}
	b.ReportMetric(simSeconds/b.Elapsed().Seconds(), "sim-s/wall-s")
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
