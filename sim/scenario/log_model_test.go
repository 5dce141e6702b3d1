package scenario

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/linearizability"
)

// TestLogModelCatchesViewBugs: the porcupine check (h) sees, in the
// history the harness recorded up to the failure, each bug a planted view
// shows the checker (LogHistory stops the run first, at the read that
// shows it): a record changed, invented or repeated at a second offset is
// a read no order of the appends explains. (Two records swapped, the
// reorder view, is left to (e): the first fetch it swaps holds records
// whose appends are not acknowledged yet, which the model may order
// either way.)
func TestLogModelCatchesViewBugs(t *testing.T) {
	for _, tc := range []struct {
		name string
		bugs logBugs
	}{
		{"change a record", logBugs{changeRecord: true}},
		{"invent a record", logBugs{invent: true}},
		{"duplicate a batch", logBugs{dupBatch: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, h := runLog(Options{Seed: 1}, logShape{}, tc.bugs)
			require.Error(t, sum.Err, "the planted view failed no check")
			res, err := linearizability.CheckLog(&h.model.ops, logModelLimits)
			require.NoError(t, err)
			require.False(t, res.Ok, "the model accepts the history: %v", res)
			t.Logf("%v", res)
		})
	}
}

// TestLogModelPassesCleanRuns: a seed of each scenario without planted
// bugs records a history the model accepts, with appends, reads and
// unknown outcomes in it (acks=0 producers, timeouts).
func TestLogModelPassesCleanRuns(t *testing.T) {
	for _, shape := range []logShape{{}, {kind: kindReplicated}} {
		sum, h := runLog(Options{Seed: 2}, shape, logBugs{})
		require.NoError(t, sum.Err)
		require.True(t, h.model.checked)
		require.NoError(t, h.model.err)
		require.True(t, h.model.result.Ok)
		require.Positive(t, h.model.result.Operations)
		t.Logf("%s seed 2: %v", shape.name(), h.model.result)
	}
}

// logModelPageCacheSeed is a log seed whose page-cache run (Kafka's
// flush.messages=1000, a real broker mode) loses acknowledged records
// that consumers had read, and reuses their offsets: (b) stops the run,
// and the history recorded so far is not linearizable either.
const logModelPageCacheSeed = 7

// TestLogModelCatchesPageCacheLoss: the model sees real lost records, not
// only planted views: in page-cache mode a power loss takes back records
// that were read, and a later read finds another value at their offset.
func TestLogModelCatchesPageCacheLoss(t *testing.T) {
	sum, h := runLog(Options{Seed: logModelPageCacheSeed}, logShape{pageCache: true}, logBugs{})
	require.Error(t, sum.Err)
	require.Contains(t, sum.Err.Error(), "(b)")
	res, err := linearizability.CheckLog(&h.model.ops, logModelLimits)
	require.NoError(t, err)
	require.False(t, res.Ok, "the model accepts a history with a record lost and its offset reused: %v", res)
	t.Logf("log seed %d in page-cache mode: %v; model: %v", logModelPageCacheSeed, sum.Err, res)
}
