package scenario

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDeterminism runs 20 seeds of the idle cluster twice each: the same
// seed must give the same trace hash, and different seeds different ones
// (the log scenario's seeds run twice in TestLogSeeds, under faults).
func TestDeterminism(t *testing.T) {
	seen := map[uint64]uint64{}
	for seed := uint64(1000); seed < 1020; seed++ {
		a := runTwice(t, "idle", seed)
		if other, dup := seen[a.TraceHash]; dup {
			t.Fatalf("seeds %d and %d gave the same trace hash %016x", other, seed, a.TraceHash)
		}
		seen[a.TraceHash] = seed
	}
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

// TestReplayCarriesEveryOption: the replay command's SIM_ARGS, parsed by
// the flags `strata sim` defines, give back the run's options, and a run
// with defaults needs none.
func TestReplayCarriesEveryOption(t *testing.T) {
	o := Options{Seed: 7, Nodes: 5, Observers: -1, FaultPhase: 3 * time.Second, HealPhase: 1500 * time.Millisecond, NoFaults: true}
	require.Equal(t, "make sim SEED=7 SCENARIO=kraft SIM_ARGS='-nodes 5 -observers -1 -fault 3s -heal 1.5s -no-faults'", ReplayCommand("kraft", o))
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	parsed := BindFlags(fs)
	require.NoError(t, fs.Parse(o.Args()))
	parsed.Seed = o.Seed
	require.Equal(t, o, *parsed)
	require.Equal(t, "make sim SEED=3 SCENARIO=log", ReplayCommand("log", Options{Seed: 3}))

	sum, err := Run("idle", Options{Seed: 2, FaultPhase: time.Second, HealPhase: time.Second})
	require.NoError(t, err)
	require.Equal(t, "make sim SEED=2 SCENARIO=idle SIM_ARGS='-fault 1s -heal 1s'", sum.Replay)
}
