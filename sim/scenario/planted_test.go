//go:build strata_plant

package scenario

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/plant"
	"github.com/strata-log/strata/linearizability"
	"github.com/strata-log/strata/sim"
)

// plantedBugs is the table of bugs planted in core code and the sweep
// that must find each: the scenario, the most seeds it may take (from
// seed 1), and what the failure must name. Every plant.Bugs entry must be
// in it (TestPlantedBugTableIsComplete), so a new plantable bug without a
// sweep that finds it fails the build.
var plantedBugs = []struct {
	bug      plant.Bug
	scenario string
	maxSeeds int
	want     []string // the failure names one of these checks
}{
	// A lost acknowledged record shows as (a), or as (b) when its offset
	// was given to another record before anyone read it; with the page
	// crash model, never-synced segments can also come back with holes
	// the log refuses to open past, which the run sees as (f).
	{plant.LogSkipFsync, "log", 60, []string{"(a)", "(b)", "(f)"}},
	{plant.AckBeforeFsync, "log", 60, []string{"(a)", "(b)"}},
	// The producer state's own invariant (an appended batch must pass
	// its Check) crashes the node before any reader sees the duplicate.
	{plant.AppendDuplicates, "log", 60, []string{"(d)", "invariant violated: producer"}},
	{plant.FetchSkipsAhead, "log", 60, []string{"(e)"}},
	// Replication (issue 11): the replicated scenario finds each.
	{plant.AckBeforeISR, "replicated", 100, []string{"(a)", "(b)"}},
	{plant.HighWatermarkFromLogEnd, "replicated", 100, []string{"(a)", "(b)"}},
	{plant.LeaderOutsideISR, "replicated", 100, []string{"(a)", "(b)"}},
	// A follower holding batches its leader lost, in the epoch the
	// leader appended on in, shows as replicas that differ below the high
	// watermark after the heal, as a reader's lost or reused offset, or
	// as that follower never back in the ISR after the heal (g): its
	// appends of the leader's batches fail for good, since no diverging
	// epoch tells the two histories apart (replicated seed 107's shape;
	// seed 53 once partition .log damage became the default; seed 135,
	// by (b), since a new epoch's first batch is flushed with the epoch
	// checkpoint, which moved every seed's schedule: the bound is 200;
	// seed 139, by (i), once the hostile client's floods shrank; seed
	// 19, by (i), since snappy batches are klauspost's encoding).
	// Not (f): at a2908af seed 6 failed liveness, the drain stuck behind
	// acks=all produces of healthy partitions while the whole fetcher
	// backed off for the broken one; each partition backs off alone now.
	{plant.FollowerKeepsLostTail, "replicated", 200, []string{"(a)", "(b)", "(g)", "(h)", "(i)"}},
	// Groups (issue 12): the groups scenario finds each by its check.
	// A commit from a removed member or an old generation is accepted:
	// (l), or (k) when it moves the offset back.
	{plant.GroupStaleCommit, "groups", 60, []string{"(l)", "(k)"}},
	// A commit answered before the ISR had it is lost when the
	// coordinator fails over: a later OffsetFetch returns less (k).
	{plant.GroupCommitBeforeWrite, "groups", 100, []string{"(k)"}},
	{plant.GroupReplayDropsLastOffset, "groups", 60, []string{"(k)"}},
	{plant.GroupStaleAssignment, "groups", 60, []string{"(j)"}},
	{plant.GroupHeartbeatKeepsNoSession, "groups", 60, []string{"(m)"}},
	// A generation answered but never written is lost at a failover:
	// the next coordinator hands the same generation number out again,
	// with another assignment (j), or takes commits of the generation
	// before (l).
	{plant.GroupSyncBeforeWrite, "groups", 100, []string{"(j)", "(l)", "(k)"}},
	{plant.TxnReadPastLSO, "txn", 60, []string{"(r)", "(p)"}},
	{plant.TxnAbortedNotListed, "txn", 60, []string{"(p)"}},
	{plant.TxnMarkerRetryDropped, "txn", 100, []string{"(s)", "(n)", "(q)"}},
	// KIP-890 part 2 without the epoch bump: the harness's late EndTxn
	// of a finished transaction is accepted and decides the producer's
	// next one (KAFKA-17754's shape).
	{plant.TxnSkipEpochBump, "txn", 30, []string{"(v)"}},
	// Issue 22: a leader that appends batches whose records were never
	// parsed is found by the hostile client's (x): a malformed batch, a
	// bomb or a corrupt one accepted, or a refused value read (the
	// client runs in one seed in two).
	{plant.SkipRecordValidation, "log", 20, []string{"(x)"}},
	// Issue 24: carol's produce to orders, which an ALLOW on every topic
	// and a DENY on orders name, is acknowledged (s1); dave's all-topics
	// Metadata lists the topics he may not describe (s2).
	{plant.AllowIgnoresDeny, "secure", 10, []string{"(s1)"}},
	{plant.MetadataLeaksTopic, "secure", 10, []string{"(s2)"}},
}

func TestPlantedBugTableIsComplete(t *testing.T) {
	for _, b := range plant.Bugs {
		require.True(t, slices.ContainsFunc(plantedBugs, func(p struct {
			bug      plant.Bug
			scenario string
			maxSeeds int
			want     []string
		}) bool {
			return p.bug == b
		}), "planted bug %s has no sweep that finds it", b)
	}
}

// TestPlantedBugsAreFound plants each bug in core code and runs the
// standard sweep of its scenario from seed 1 until a seed fails: each must
// be found within its bound, by the check it breaks. The seeds each took
// are logged (docs/simulation.md reports them).
func TestPlantedBugsAreFound(t *testing.T) {
	for _, tc := range plantedBugs {
		t.Run(tc.bug.String(), func(t *testing.T) {
			restore := plant.Set(tc.bug)
			defer restore()
			seed := firstFailure(t, 1, uint64(tc.maxSeeds), func(seed uint64) sim.Summary {
				sum, err := Run(tc.scenario, Options{Seed: seed})
				require.NoError(t, err)
				return sum
			}, tc.want...)
			require.NotZero(t, seed, "%s: %d seeds of %s did not find it", tc.bug, tc.maxSeeds, tc.scenario)
			t.Logf("%s: found by %s seed %d (%d seeds)", tc.bug, tc.scenario, seed, seed)
			t.Logf("%s: the porcupine model on that seed's history: %s", tc.bug, plantedModelVerdict(tc.scenario, seed))
		})
	}
}

// plantedModelVerdict runs a log or replicated seed again and checks the
// history it recorded up to its failure against the partition-log model
// (h), to report whether the model alone would have caught the bug too.
func plantedModelVerdict(scenario string, seed uint64) string {
	var shape logShape
	switch scenario {
	case "log":
	case "replicated":
		shape.kind = kindReplicated
	case "groups":
		shape.kind = kindGroups
	default:
		return "not recorded (" + scenario + ")"
	}
	_, h := runLog(Options{Seed: seed}, shape, logBugs{})
	res, err := linearizability.CheckLog(&h.model.ops, logModelLimits)
	if err != nil {
		return "no verdict: " + err.Error()
	}
	return res.String()
}

// TestPlantedSkipRecordValidationIsReadBack: with the hostile client
// judging no answer, the batches a leader appends without parsing their
// records are found by the readers: a value of a batch that had to be
// refused read back (x), or records that do not parse (c).
func TestPlantedSkipRecordValidationIsReadBack(t *testing.T) {
	restore := plant.Set(plant.SkipRecordValidation)
	defer restore()
	seed := firstFailure(t, 1, 20, func(seed uint64) sim.Summary {
		sum, _ := runLog(Options{Seed: seed}, logShape{}, logBugs{hostileBlind: true})
		return sum
	}, "had to refuse", "(c)")
	require.NotZero(t, seed, "20 log seeds did not read back what the planted leader appended")
	t.Logf("found by log seed %d", seed)
}

// TestPlantedKafka17754: the pinned KAFKA-17754 seed (TestTxnKafka17754)
// fails (v) once the coordinator skips the epoch bump of KIP-890 part 2.
func TestPlantedKafka17754(t *testing.T) {
	restore := plant.Set(plant.TxnSkipEpochBump)
	defer restore()
	sum, err := Run("txn", Options{Seed: txnKafka17754Seed})
	require.NoError(t, err)
	require.Error(t, sum.Err, "txn seed %d passes with %s planted", txnKafka17754Seed, plant.TxnSkipEpochBump)
	require.Contains(t, sum.Err.Error(), "(v) stale EndTxn")
}
