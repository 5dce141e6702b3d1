package scenario

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// replicated5RegressionSeeds are replicated5 seeds that once failed, each
// with the bug it found (docs/simulation.md, "Pinned so far").
var replicated5RegressionSeeds = []uint64{
	// Found with replicated seed 479 (which see), the same shape: (i) a
	// follower kept, in one leader epoch, batches its leader had lost and
	// appended over; the leader now resigns the epoch.
	282,
}

// replicated5SeedsInMakeTest is how many consecutive seeds `make test`
// runs: with replicated's 300, the replication campaigns run 500 seeds
// over 3- and 5-broker clusters.
const replicated5SeedsInMakeTest = 200

// replicated5Shape is the replicated5 scenario's shape in its sweeps.
var replicated5Shape = logShape{kind: kindReplicated5, damageLogs: true}

func TestReplicated5RegressionSeeds(t *testing.T) {
	runRegressionSeeds(t, replicated5Shape, replicated5RegressionSeeds)
}

// TestReplicated5Seeds runs seeds 1..replicated5SeedsInMakeTest; every
// tenth runs twice and must give the same trace (the determinism check).
// Across them the nemesis must have taken two nodes down at once, and
// every run's history must have been checked against the model (h).
func TestReplicated5Seeds(t *testing.T) {
	t.Parallel()
	acked, twoDown, modelChecked, struck := 0, 0, 0, 0
	n := sweepSeeds(replicated5SeedsInMakeTest)
	sweepLogSeeds(t, replicated5Shape, n, 1, nil, func(_ int, h *logHarness) {
		acked += h.hist.Acked()
		if h.maxDown >= 2 {
			twoDown++
		}
		if h.model.checked && h.model.err == nil {
			modelChecked++
		}
		if h.strikes.kills+h.strikes.cuts > 0 {
			struck++
		}
	})
	require.Positive(t, acked, "no record acknowledged in any seed")
	exercised(t, twoDown > 0, "no seed had two nodes down at once")
	t.Logf("%d seeds: %d records acknowledged, %d with two or more nodes down at once, %d checked by the model, %d struck the controller during an ISR change",
		n, acked, twoDown, modelChecked, struck)
}
