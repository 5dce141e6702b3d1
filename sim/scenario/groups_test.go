package scenario

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// groupsRegressionSeeds are groups seeds that once failed, each with the
// bug it found (docs/simulation.md, "Pinned so far").
var groupsRegressionSeeds = []uint64{
	// Found by the scenario's first 300-seed sweep, checker bugs: a
	// member starts a reader session at each assignment, and the harness
	// forgot the high watermark the reader had been told at each one, so
	// a new leader's lagging high watermark (Kafka's, and allowed in the
	// replicated scenarios) read as committed records lost ((a)).
	78, 298,
	// Same sweep, a client bug: a restarted member became the leader
	// before its metadata knew the topics and assigned nothing of them;
	// no member ever asked for a rebalance, so orders-0 stayed unowned
	// after the heal ((m)). The leader now waits for the metadata of
	// every subscribed topic before it assigns, as the Java client does.
	224,
}

// groupsSeedsInMakeTest is how many consecutive seeds `make test` runs.
const groupsSeedsInMakeTest = 300

func runGroupsSeed(t *testing.T, seed uint64) *logHarness {
	t.Helper()
	return runLogSeedWith(t, seed, logBugs{replicas: replicatedRF, groups: true})
}

func TestGroupsRegressionSeeds(t *testing.T) {
	for _, seed := range groupsRegressionSeeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runGroupsSeed(t, seed) })
	}
}

// TestGroupsSeeds runs seeds 1..groupsSeedsInMakeTest; every tenth runs
// twice and must give the same trace (the determinism check). It also
// requires that the workload did what the scenario promises somewhere:
// rebalances, acknowledged and refused commits, coordinator strikes.
func TestGroupsSeeds(t *testing.T) {
	var gens, commits, refused, assignments, actions, struck int
	for seed := uint64(1); seed <= groupsSeedsInMakeTest; seed++ {
		h := runGroupsSeed(t, seed)
		g := h.group
		gens += len(g.owners)
		commits += g.commitsAcked
		refused += g.commitsRefused
		assignments += g.assignments
		actions += g.actions
		if g.strikes.kills+g.strikes.cuts > 0 {
			struck++
		}
		if seed%10 == 0 {
			a := h.s.Summarize("groups")
			b, _ := runLog(Options{Seed: seed}, logBugs{replicas: replicatedRF, groups: true})
			require.Equal(t, a.TraceHash, b.TraceHash, "groups seed %d gave two traces", seed)
		}
	}
	require.Positive(t, commits, "no commit acknowledged in any seed")
	require.Positive(t, refused, "no commit refused in any seed (no fencing exercised)")
	require.Positive(t, struck, "no seed struck the coordinator")
	t.Logf("%d seeds: %d generations assigned, %d assignments, %d member actions, %d commits acknowledged, %d refused; %d seeds struck the coordinator",
		groupsSeedsInMakeTest, gens, assignments, actions, commits, refused, struck)
}

func TestGroupsSeedSummary(t *testing.T) {
	h := runGroupsSeed(t, 1)
	t.Log(h.describe())
}
