package scenario

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// txnRegressionSeeds are txn seeds that once failed; each names the bug.
var txnRegressionSeeds = []uint64{
	// Found by the scenario's first sweep, a core bug: the broker
	// created __transaction_state without min.insync.replicas (Kafka's
	// transaction.state.log.min.isr, 2), so its ISR could shrink to the
	// one replica whose disk then dropped a damaged tail; elected alone,
	// it made the others truncate 41 committed coordinator records, an
	// ongoing transaction was forgotten and txn-0's last stable offset
	// never moved again ((s)).
	7,
	// Found by the first 300-seed sweep, a core bug: a Complete write
	// refused by a transient NOT_LEADER_FOR_PARTITION (buggify) with no
	// change of leadership was never retried (the shard waited for an
	// unload that never came): the transaction stayed in PrepareCommit,
	// and its producer's next AddPartitionsToTxn got
	// CONCURRENT_TRANSACTIONS forever ((s)). Seed 195 failed the same way.
	28,
	// A core bug, open for a session (45, 299) and found again after
	// the epoch checkpoint changed the traces (256): a misdirected write
	// put a batch of a later offset at the start of a compacted
	// __transaction_state segment, which the scrub let through (no
	// contiguity rule; it marked the garbage after it), and the
	// producer-state rebuild refused the segment at every reopen, so
	// (g) reported an under-replicated partition after the heal. Fixed:
	// a partition of a broker that registered as damaged, never online
	// in this process, drops a segment its open finds corrupt and
	// fetches it again (then Partition.dropDamagedSegment; now core/replica
	// damage.go, for any replica). 45 and 299 pass
	// without the fix at this commit (their traces changed).
	45, 256, 299,
	// Found after merging KIP-890 part 1 with the epoch checkpoint (the
	// traces changed), a core bug: a new leader of __transaction_state-0
	// loaded its log to the end, an Ongoing record of tx-1 above the high
	// watermark included, and answered a partition leader's verification
	// of tx-1's batch on txn-1 from it; the record was never committed,
	// the next leader (a shorter log) dropped it, and no coordinator ever
	// wrote a marker to txn-1: its last stable offset stayed behind the
	// batch ((s)). A shard now serves once the high watermark reaches the
	// log end it replayed (core/coord replay.go, rule L3).
	43,
	// Found twice, by two changes that moved the traces into the same
	// core bug (the per-segment .txnindex, and the first 300-seed sweep
	// with the ETL workers): n2, a follower of __transaction_state-1,
	// decided to truncate a diverged record and became the leader before
	// the truncation completed; its new shard replayed the record, then
	// waited for the high watermark to reach a log end the reopened,
	// shorter log never had, and answered COORDINATOR_LOAD_IN_PROGRESS
	// for the rest of the run (a transaction never aborted, or etl-1
	// never started again: (s)). A shard whose log is reopened or cut
	// below what it replayed now loads again (core/coord replay.go, rule
	// L2).
	221,
	// Found by the .txnindex change before it was committed: an injected
	// write error on a .txnindex failed a follower's partition while it
	// recorded a replicated ABORT marker, and the follower went on to use
	// the closed log (a nil pointer in replayAppended).
	257,
	// Found by the first sweep of 301–600 with the ETL workers (at
	// commit 0597cbe), a core bug not diagnosed: __transaction_state-0's
	// first leader (n3) found its .log damaged at offset 7, restarted as
	// a replaced disk, fetched 7..9 again and was elected (epoch 3) with
	// a log whose replay knew nothing of etl-2 (whose InitProducerId it
	// had written and answered at 2.2 s): the new shard answered etl-2's
	// EndTxn INVALID_PRODUCER_ID_MAPPING and gave it a new producer id,
	// and no coordinator wrote a marker for etl-2's first transaction,
	// whose batch held txn-out-0's last stable offset at 0 after the heal
	// ((s)). The ETL workers' pacing changed the traces before it was
	// diagnosed and the seed passes since, with or without 221's fix;
	// `git checkout 0597cbe && make sim SCENARIO=txn SEED=386` shows it.
	386,
	// Found when the ETL workers began to produce as franz-go does
	// (kclient's Pipelined: several requests in flight per broker,
	// batches of several partitions per request, partitions joining the
	// transaction as it goes), two core bugs of KIP-890's verification
	// in Produce (core/broker txnverify.go), the first the cause of
	// franz-go's TestTxnEtl failure (issue 22, finding 10). 3: a request
	// held all its batches for the coordinator's answer about one
	// partition new to the transaction, and the producer's next request,
	// handled meanwhile, appended its batch of a partition where the
	// transaction was ongoing first: OUT_OF_ORDER_SEQUENCE_NUMBER for the
	// earlier one ((w) produce order; 183 seeds of 1..300 failed so). 4
	// and 10: a request that both waited on another request's implicit
	// add (transaction.version 2) and asked its own was appended as soon
	// as the first answer came, before the coordinator added its own
	// partition: the commit wrote no marker there and the committed
	// record was never readable ((n) lost write, 4) or the open batch
	// held the last stable offset for good ((s), 10). Fixed: each batch
	// waits for its own partition's verification only.
	3, 4, 10,
	// Open for a session (found when half the seeds began to run
	// transaction.version 2), a core gap: misdirected writes on n2 put a
	// valid batch of offset 261 at position 0 of __transaction_state-0's
	// only segment (a compacted log: no contiguity rule) with zeros after
	// it; after the power loss at 22.5 s the scrub marked only from 262,
	// and Open then found zeros below the recovery point at position
	// 34528. n2 was the partition's last in-sync replica (ISR [2], the
	// LastKnownELR [1 2]: n1, forgotten earlier, had refetched to 363,
	// the high watermark), so Partition.dropDamagedSegment kept the
	// damage, the log never opened and the partition stayed offline
	// ((g) after the heal). Fixed by the damaged replica's way back
	// (core/replica damage.go): n2 gives up its places (the controller
	// keeps it the ISR's last member, recovering, in a new leader epoch),
	// drops the segment, and its recovery hands the leadership to n1's
	// longer log.
	260,
	// Found by the first sweep with latent sector errors on the damaged
	// node's partition .log files (issue 22), a core bug: a page of
	// __transaction_state-1 became unreadable on n3, and the transaction
	// shard's load, which reads the log itself, met it and retried every
	// second for ever; the partition never learned of the damage, so the
	// coordinator stayed loading and tp3's transaction never ended ((s);
	// 102 the same, ListTransactions unanswered). A shard's load now
	// reports damage to its partition (Partition.ReportDamage).
	49, 102,
	// Same sweep, a harness bug: a controller strike (during the damaged
	// replica's AlterPartition) killed n3 before the txn topics were
	// created, CreateTopics answered INVALID_REPLICATION_FACTOR (two
	// active brokers for three replicas) and the txn setup gave up ("failed
	// for good"); it now asks again, as the log admin does.
	135,
	// Fail with ReplicaFetch's verification of what a leader serves
	// removed (issue 22, with .log latent errors; the traces then differ
	// from the first fetch it would have checked). In 65, n1 took
	// txn-out-1 over from a recovering n3 (the longest log: ISR [1], no
	// ELR, the LastKnownELR cleared) and met a latent error 0.2 s later,
	// before any follower fetched in its leadership: no replica known to
	// hold the committed records, so by design the partition waited for
	// an operator ((g) after the heal).
	65, 106,
	// Open until issue 22's damaged-replica path merged (both pass since;
	// the traces moved with it, so they pin the shapes no longer):
	// 6, misdirected writes damaging n3's __transaction_state-1 below its
	// recovery point while in sync, which kept the partition offline ((g));
	// 172, a replica whose log failed while it was the only in-sync
	// replica restarted, cut its log to the failed log's durable offset
	// and was elected with it, and the others truncated committed records
	// to it ((a)). `git checkout 6fcb144 && make sim SCENARIO=txn SEED=172`
	// shows the second.
	6, 172,
	// Failed (t) at 2553f75 (passes since: the traces moved), a core gap:
	// misdirected writes put a valid batch of offset 26 at the start of
	// n2's __consumer_offsets-1 segment (compacted: no contiguity rule)
	// with zeros after it; after a power loss the scrub marked the zeros
	// and kept the batch, so offsets 0 to 25, transaction 1's offset
	// commit among them, were lost without a word, n2 led with the hole,
	// and etl1 rewound to older offsets and transformed a record twice.
	// The scrub now holds every log to its leader-epoch-checkpoint (a gap
	// over an epoch's start is damage; core/log
	// TestScrubFindsAMisdirectedBatchOverAnEpochStart). `git checkout
	// 2553f75 && make sim SCENARIO=txn SEED=284` shows it.
	284,
	// Failed (g) at 28e1304, a core bug in the follower fetcher's
	// per-partition backoff: n3's fetch of __transaction_state-0 was
	// refused (NOT_LEADER: its image was ahead of n2's) and delayed a
	// second; n2 then became leader, the ISR's last member, and a latent
	// error hit its log half a second later, before n3 had fetched in the
	// new leadership: with no follower caught up to hand off to, n2 kept
	// its damage and the partition stayed offline after the heal. A new
	// leadership now clears the delay (Kafka re-adds the partition to its
	// fetcher undelayed). `git checkout 28e1304 && make sim SCENARIO=txn
	// SEED=252` shows it.
	252,
}

// txnShape is the txn scenario's shape in its sweeps.
var txnShape = logShape{kind: kindTxn, damageLogs: true}

func runTxnSeed(t *testing.T, seed uint64) *logHarness {
	t.Helper()
	return runLogSeedWith(t, seed, txnShape, logBugs{})
}

func TestTxnRegressionSeeds(t *testing.T) {
	runRegressionSeeds(t, txnShape, txnRegressionSeeds)
}

// txnOpenSeeds fail on a bug found and not fixed yet; TestTxnSeeds
// skips them (and says so), TestTxnOpenSeedsStillFail keeps them honest.
var txnOpenSeeds = []uint64{}

// txnOpenFailures is what each open seed's failure names.
var txnOpenFailures = map[uint64]string{}

// txnSeedsInMakeTest is how many consecutive seeds `make test` runs, in
// txnSeedChunks parallel subtests.
const (
	txnSeedsInMakeTest = 300
	txnSeedChunks      = 4
)

type txnFigures struct {
	committed, aborted, unknown, fenced, crashes, skipped, struck            int
	etlCommitted, etlRewinds, staleSent, staleFenced, graphNodes, graphEdges int
	// hostile sums the hostile client's runs.
	hostile hostileTally
}

// TestTxnSeeds runs seeds 1..txnSeedsInMakeTest in parallel chunks; every
// tenth runs twice and must give the same trace (the determinism check).
// It also requires that the workload did what the scenario promises
// somewhere: committed, aborted and unknown transactions, fenced
// incarnations, aborted batches skipped by read_committed readers,
// coordinator strikes.
func TestTxnSeeds(t *testing.T) {
	t.Parallel()
	n := sweepSeeds(txnSeedsInMakeTest)
	figures := make([]txnFigures, txnSeedChunks)
	skip := func(seed uint64) string {
		if slices.Contains(txnOpenSeeds, seed) {
			return "an open bug (txnOpenSeeds)"
		}
		return ""
	}
	sweepLogSeeds(t, txnShape, n, txnSeedChunks, skip, func(c int, h *logHarness) {
		f := &figures[c]
		f.hostile.add(h)
		x := h.txn
		f.committed += x.committed
		f.aborted += x.aborted
		f.unknown += x.unknown
		f.fenced += x.fenced
		f.crashes += x.crashes
		f.skipped += x.skipped
		if x.strikes.kills+x.strikes.cuts > 0 {
			f.struck++
		}
		f.etlCommitted += x.etl.committed
		f.etlRewinds += x.etl.rewinds
		f.staleSent += x.stale.sent
		f.staleFenced += x.stale.fenced
		f.graphNodes += x.graphNodes
		f.graphEdges += x.graphEdges
	})
	var s txnFigures
	for _, f := range figures {
		s.committed, s.aborted, s.unknown, s.fenced = s.committed+f.committed, s.aborted+f.aborted, s.unknown+f.unknown, s.fenced+f.fenced
		s.crashes, s.skipped, s.struck = s.crashes+f.crashes, s.skipped+f.skipped, s.struck+f.struck
		s.etlCommitted, s.etlRewinds, s.staleSent, s.staleFenced = s.etlCommitted+f.etlCommitted, s.etlRewinds+f.etlRewinds, s.staleSent+f.staleSent, s.staleFenced+f.staleFenced
		s.graphNodes, s.graphEdges = s.graphNodes+f.graphNodes, s.graphEdges+f.graphEdges
		s.hostile.merge(f.hostile)
	}
	require.Positive(t, s.committed, "no transaction committed in any seed")
	exercised(t, s.aborted > 0, "no transaction aborted in any seed")
	exercised(t, s.skipped > 0, "no read_committed reader skipped an aborted batch in any seed")
	exercised(t, s.struck > 0, "no seed struck the coordinator")
	exercised(t, s.etlCommitted > 0, "no ETL transaction committed in any seed")
	exercised(t, s.etlRewinds > 0, "no ETL worker rewound to its committed offsets in any seed")
	exercised(t, s.staleFenced > 0, "no late EndTxn was fenced in any seed")
	exercised(t, s.graphEdges > 0, "the dependency graphs (u) had no edge in any seed")
	exercised(t, s.hostile.counts[hkInternal].refused > 0, "no hostile batch to __consumer_offsets refused with INVALID_TOPIC_EXCEPTION")
	t.Logf("%d seeds: %d transactions committed, %d aborted, %d unknown; %d incarnations fenced, %d producer crashes; %d aborted or control records skipped by read_committed readers; %d seeds struck the coordinator",
		n, s.committed, s.aborted, s.unknown, s.fenced, s.crashes, s.skipped, s.struck)
	t.Logf("ETL: %d transactions committed, %d rewinds to the committed offsets; %d late EndTxns delivered, %d fenced; dependency graphs: %d transactions, %d edges",
		s.etlCommitted, s.etlRewinds, s.staleSent, s.staleFenced, s.graphNodes, s.graphEdges)
	t.Log(s.hostile.String())
}

// txnKafka17754Seed is a txn seed whose harness delivers EndTxns late,
// during their producer's next transaction (the shape of KAFKA-17754):
// with the epoch bump of KIP-890 part 2 each is fenced. Planted without
// the bump (plant.TxnSkipEpochBump), this seed fails (v). Seed 9's
// brokers finalize transaction.version 2 (it was seed 4 until the seeds
// began to draw it, after which 4 delivered none).
const txnKafka17754Seed = 9

// TestTxnKafka17754: a delayed EndTxn of transaction N must not decide
// transaction N+1 of the same producer; the seed passes, delivered late
// EndTxns during later transactions, and every answered one was fenced.
func TestTxnKafka17754(t *testing.T) {
	h := runTxnSeed(t, txnKafka17754Seed)
	require.Positive(t, h.txn.stale.sent, "seed %d delivered no late EndTxn", txnKafka17754Seed)
	require.Positive(t, h.txn.stale.fenced, "seed %d: no late EndTxn was fenced", txnKafka17754Seed)
	t.Logf("seed %d: %d late EndTxns delivered, %d fenced", txnKafka17754Seed, h.txn.stale.sent, h.txn.stale.fenced)
}

// TestTxnLostWriteCheckFires: readers whose view drops a record of a
// read_committed answer fail (n) once a committed transaction's record
// is passed without being delivered.
func TestTxnLostWriteCheckFires(t *testing.T) {
	shape, bugs := txnShape, logBugs{txn: txnBugs{dropCommitted: true}}
	require.NotZero(t, logBugFails(t, shape, bugs, 1, 20, "(n) lost write"), "no seed caught the dropped record")
}

// TestTxnDuplicateCheckFires: readers that see a record again at a later
// offset fail (o).
func TestTxnDuplicateCheckFires(t *testing.T) {
	shape, bugs := txnShape, logBugs{txn: txnBugs{repeatRecord: true}}
	require.NotZero(t, logBugFails(t, shape, bugs, 1, 20, "(o) duplicate"), "no seed caught the repeated record")
}

// TestTxnETLCheckFires: with __consumer_offsets at the broker's default
// min.insync.replicas (1), an acknowledged TxnOffsetCommit is lost on a
// failover in some seed and the ETL worker transforms its input again:
// (t) reports the duplicate (seed 26 at this commit; other seeds may
// fail otherwise, e.g. (s), and are not counted).
func TestTxnETLCheckFires(t *testing.T) {
	shape, bugs := txnShape, logBugs{txn: txnBugs{offsetsDefaultISR: true}}
	found := 0
	for seed := uint64(1); seed <= 20 && found == 0; seed++ {
		sum, _ := runLog(Options{Seed: seed}, shape, bugs)
		if sum.Err != nil && strings.Contains(sum.Err.Error(), "(t) ETL exactly-once") {
			t.Logf("seed %d: %v", seed, sum.Err)
			found++
		}
	}
	require.NotZero(t, found, "no seed of 1..20 failed (t) with __consumer_offsets at min.insync.replicas 1")
}

// TestTxnCycleCheckFires: a graph with a wr edge reversed has a cycle,
// which (u) reports as G1c.
func TestTxnCycleCheckFires(t *testing.T) {
	shape, bugs := txnShape, logBugs{txn: txnBugs{reverseEdge: true}}
	require.NotZero(t, logBugFails(t, shape, bugs, 1, 20, "(u) G1c"), "no seed caught the reversed edge")
}

// TestTxnOpenSeedsStillFail: the open seeds fail as their bug says; once
// one passes, its bug is fixed and it moves to txnRegressionSeeds.
func TestTxnOpenSeedsStillFail(t *testing.T) {
	for _, seed := range txnOpenSeeds {
		sum, _ := runLog(Options{Seed: seed}, txnShape, logBugs{})
		require.Error(t, sum.Err, "txn seed %d passes: move it to txnRegressionSeeds", seed)
		want, ok := txnOpenFailures[seed]
		require.True(t, ok, "txn seed %d: no failure named in txnOpenFailures", seed)
		require.Contains(t, sum.Err.Error(), want, "txn seed %d fails for another reason", seed)
	}
}
