package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kraftRegressionSeeds are kraft seeds that once failed, pinned before
// their fix.
var kraftRegressionSeeds = []uint64{}

// kraftKnownFailingSeeds fail because of open bugs in core/kraft or
// core/quorum (see docs/simulation.md, "Pinned so far", status open). The
// tests do NOT run them; fix the bug, then move the seed to
// kraftRegressionSeeds.
var kraftKnownFailingSeeds = []uint64{}

// kraftSeedsInMakeTest is how many consecutive kraft seeds `make test` runs.
const kraftSeedsInMakeTest = 300

func isKnownFailingKRaft(seed uint64) bool {
	for _, s := range kraftKnownFailingSeeds {
		if s == seed {
			return true
		}
	}
	return false
}

func runKRaftSeed(t *testing.T, seed uint64) *kraftHarness {
	t.Helper()
	sum, h := runKRaft(Options{Seed: seed})
	if sum.Err != nil {
		var b strings.Builder
		sum.Print(&b)
		t.Fatalf("kraft seed %d failed:\n%s", seed, b.String())
	}
	return h
}

func TestKRaftRegressionSeeds(t *testing.T) {
	for _, seed := range kraftRegressionSeeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runKRaftSeed(t, seed) })
	}
}

func TestKRaftSeeds(t *testing.T) {
	completed := 0
	for seed := uint64(1); seed <= kraftSeedsInMakeTest; seed++ {
		if isKnownFailingKRaft(seed) {
			continue
		}
		h := runKRaftSeed(t, seed)
		completed += h.client.completed
		t.Logf("seed %d:%s", seed, h.describe())
	}
	// A workload that never completes an operation checks nothing.
	require.Positive(t, completed, "the admin client completed no topic operation in any seed")
}

// TestKRaftDeterminism runs 5 seeds twice each: the same seed must give the
// same trace hash.
func TestKRaftDeterminism(t *testing.T) {
	for seed := uint64(2000); seed < 2005; seed++ {
		a, err := Run("kraft", Options{Seed: seed})
		require.NoError(t, err)
		b, err := Run("kraft", Options{Seed: seed})
		require.NoError(t, err)
		require.Equal(t, a.TraceHash, b.TraceHash, "seed %d gave two traces", seed)
		require.Equal(t, a.Events, b.Events)
		require.Equal(t, a.Faults, b.Faults)
	}
}

func TestKRaftNoFaultsMakesProgress(t *testing.T) {
	sum, h := runKRaft(Options{Seed: 1, NoFaults: true})
	require.NoError(t, sum.Err)
	require.Positive(t, h.client.completed, h.describe())
}

// kraftBugFails runs seeds 1..n with bugs planted and returns the first
// seed whose run fails the linearizability check, or 0.
func kraftBugFails(t *testing.T, bugs kraftBugs, n uint64) uint64 {
	t.Helper()
	for seed := uint64(1); seed <= n; seed++ {
		sum, _ := runKRaftWith(Options{Seed: seed}, bugs)
		if sum.Err != nil {
			require.Contains(t, sum.Err.Error(), "linearizability", "seed %d failed for another reason", seed)
			t.Logf("seed %d: %v", seed, sum.Err)
			return seed
		}
	}
	return 0
}

// TestKRaftLinearizabilityCatchesEarlyAck plants a client that records a
// CreateTopics as successful as soon as it sends it: creating a topic that
// already exists then "succeeds", which no linearization explains.
func TestKRaftLinearizabilityCatchesEarlyAck(t *testing.T) {
	require.NotZero(t, kraftBugFails(t, kraftBugs{ackCreateEarly: true}, 5), "no seed caught the early-ack bug")
}

// TestKRaftLinearizabilityCatchesFollowerReads plants describe reads from a
// follower's image (what a broker's metadata cache gives): a follower
// applies a commit only after the leader answered the client, so a read
// right after a create or delete can miss it.
func TestKRaftLinearizabilityCatchesFollowerReads(t *testing.T) {
	require.NotZero(t, kraftBugFails(t, kraftBugs{followerReads: true}, 20), "no seed caught the follower-read bug")
}
