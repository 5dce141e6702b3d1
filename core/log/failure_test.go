package log_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/sim"
)

// lagConfig keeps the recovery checkpoint far behind the flushes, so that
// flushed data lies beyond the recovery point.
func lagConfig() log.Config {
	cfg := smallConfig()
	cfg.RecoveryCheckpointBytes = 1 << 30
	cfg.FlushCheckpointInterval = time.Hour
	return cfg
}

func (r *rig) appendN(t *testing.T, n int, seed byte) {
	t.Helper()
	for i := 0; i < n; i++ {
		_, err := r.l.Append(build(batchSpec{records: 3, valueSize: 200, timestamp: 1000, seed: seed + byte(i)}), 0)
		require.NoError(t, err)
	}
}

// newFlushedRig is a rig with lagConfig whose log holds batches flushed
// batches.
func newFlushedRig(t *testing.T, seed uint64, batches int) *rig {
	t.Helper()
	r := newRig(t, seed, lagConfig())
	r.appendN(t, batches, 1)
	require.NoError(t, r.flush())
	return r
}

// kill ends the incarnation with the machine up (the page cache stays) and
// starts a new one; the log is not reopened.
func (r *rig) kill() {
	r.Proc.Kill()
	r.l = nil
	r.Proc.Start()
	r.Run(0)
}

func markers(r *rig) []string {
	var out []string
	for _, f := range r.Proc.Disk().Files() {
		if strings.Contains(f, ".sync-failed-") {
			out = append(out, f)
		}
	}
	return out
}

// A failed Sync, then a process kill (the page cache still shows the lost
// writes), a restart, more flushed data and a power loss: Open succeeds and
// holds every batch a successful Flush acknowledged.
func TestSyncFailureKillThenPowerLoss(t *testing.T) {
	r := newFlushedRig(t, 11, 30) // several segments
	r.appendN(t, 2, 60)           // flushed beyond the checkpoint (a roll writes one)
	require.NoError(t, r.flush())
	acked := r.l.LogEndOffset()
	require.Less(t, r.l.RecoveryPoint(), acked, "the test wants flushed data beyond the recovery point")

	r.appendN(t, 10, 100) // rolls start background flushes, which may succeed
	all := readAll(t, r.l)
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncFailProbability: 1})
	require.ErrorIs(t, r.flush(), log.ErrLogFailed)
	r.Proc.Disk().SetFaults(sim.DiskFaults{})
	durable := r.l.DurableOffset()
	require.GreaterOrEqual(t, durable, acked)
	require.Less(t, durable, int64(all[len(all)-1].last+1), "the test wants writes lost to the failed Sync")
	require.Equal(t, []string{testDir + "/.sync-failed-" + itoa(durable)}, markers(r))
	require.False(t, r.Proc.Disk().Failed(), "a failed file Sync leaves the filesystem working")

	r.kill()
	r.open()
	require.Equal(t, durable, r.l.LogEndOffset(), "the unflushed tail beyond the failure goes")
	want := prefixBelow(all, durable)
	require.Equal(t, want, readAll(t, r.l))
	require.Empty(t, markers(r), "the marker goes once the recovery is durable")
	require.Equal(t, durable, r.l.RecoveryPoint())

	r.appendN(t, 10, 200)
	require.NoError(t, r.flush())
	want = readAll(t, r.l)
	end := r.l.LogEndOffset()

	r.crash()
	r.open()
	require.Equal(t, end, r.l.LogEndOffset())
	require.Equal(t, want, readAll(t, r.l))
}

// prefixBelow returns the batches of bs that end below offset end.
func prefixBelow(bs []storedBatch, end int64) []storedBatch {
	n := 0
	for n < len(bs) && bs[n].last < end {
		n++
	}
	return bs[:n]
}

// A failed Sync fails the log, and leaves its marker, in the turn of the
// loop that reports it, while the other Syncs of its flush cycle are still
// in flight: a kill at that moment must not let the next incarnation trust
// a page cache that shows the lost writes (the log used to fail only once
// the whole step had reported; seed 63 of TestCrashRecovery).
func TestFailedSyncMarksTheLogAtOnce(t *testing.T) {
	r := newFlushedRig(t, 14, 20)
	durable := r.l.DurableOffset()
	d := r.Proc.Disk()
	d.SetFaults(sim.DiskFaults{SyncFailProbability: 1, SyncLatencyMin: 100 * time.Microsecond, SyncLatencyMax: 5 * time.Millisecond})
	syncs := d.Stats().Syncs
	r.appendN(t, 12, 100) // rolls: a flush cycle syncs several files
	require.GreaterOrEqual(t, d.Stats().Syncs-syncs, uint64(2), "the test wants several Syncs in one step")
	for d.Stats().FailedSyncs == 0 {
		r.Run(10 * time.Microsecond)
	}
	require.Equal(t, uint64(1), d.Stats().FailedSyncs, "the other Syncs are still in flight")
	require.ErrorIs(t, r.l.Err(), log.ErrLogFailed)
	require.Equal(t, []string{testDir + "/.sync-failed-" + itoa(durable)}, markers(r))

	d.SetFaults(sim.DiskFaults{})
	r.kill()
	r.open()
	require.Equal(t, durable, r.l.LogEndOffset())
}

// A kill without a failure keeps what the page cache holds, flushed or
// not.
func TestKillKeepsPageCache(t *testing.T) {
	r := newFlushedRig(t, 12, 20)
	r.appendN(t, 5, 50) // not flushed
	want, end := readAll(t, r.l), r.l.LogEndOffset()
	r.kill()
	r.open()
	require.Equal(t, end, r.l.LogEndOffset())
	require.Equal(t, want, readAll(t, r.l))
	require.Empty(t, markers(r))
}

// A kill without a failure, then a Sync failure while the next incarnation
// settles, then another kill: the data the first incarnation flushed beyond
// its recovery point stays (the flushed-offset hint vouches for it), the
// rest goes, and a power loss keeps it.
func TestSettleFailureAfterKillKeepsFlushedData(t *testing.T) {
	r := newFlushedRig(t, 13, 30)
	acked, want := r.flushPastRecoveryPoint(t)
	r.appendN(t, 5, 100) // not flushed

	r.kill()
	r.failSettleThenRecover(t, acked, want)
	r.crash()
	r.open()
	require.Equal(t, want, readAll(t, r.l))
}

// openAndFailSettle opens the log on a disk whose syncs all fail: the
// settle fails the log, which leaves the marker of a failure at acked.
func (r *rig) openAndFailSettle(t *testing.T, acked int64) {
	t.Helper()
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncFailProbability: 1})
	r.openBusy()
	require.ErrorIs(t, r.flush(), log.ErrLogFailed)
	r.Proc.Disk().SetFaults(sim.DiskFaults{})
	require.Equal(t, []string{testDir + "/.sync-failed-" + itoa(acked)}, markers(r))
}

// failSettleThenRecover opens the log with a failing settle
// (openAndFailSettle), kills the process and opens the log again, which
// must hold what the flushes acknowledged: want, up to acked.
func (r *rig) failSettleThenRecover(t *testing.T, acked int64, want []storedBatch) {
	t.Helper()
	r.openAndFailSettle(t, acked)
	r.kill()
	r.open()
	require.Equal(t, acked, r.l.LogEndOffset())
	require.Equal(t, want, readAll(t, r.l))
}

// flushPastRecoveryPoint appends and flushes two more batches, which
// stay above the recovery point, and returns the flushed end and the
// log's batches.
func (r *rig) flushPastRecoveryPoint(t *testing.T) (acked int64, want []storedBatch) {
	t.Helper()
	r.appendN(t, 2, 60)
	require.NoError(t, r.flush())
	acked, want = r.l.LogEndOffset(), readAll(t, r.l)
	require.Less(t, r.l.RecoveryPoint(), acked)
	return acked, want
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// diskSnapshot is every file of the page cache with its content.
func diskSnapshot(d *sim.Disk) map[string]string {
	out := map[string]string{}
	for _, name := range d.Files() {
		b, _ := d.ReadFile(name)
		out[name] = string(b)
	}
	return out
}

// A failed file Sync marks the log failed, then the marker's own SyncDir
// fails, which fails the filesystem (sim.Disk: ext4 aborts its journal).
// A process restart finds the marker in the page cache but cannot obey it:
// Open fails with ErrStorageUnavailable and changes nothing, as often as
// it is retried, until the machine power-cycles; then Open recovers what
// the flushes acknowledged.
func TestOpenOnFailedFilesystemRetriesLater(t *testing.T) {
	r := newFlushedRig(t, 15, 20)
	acked := r.l.LogEndOffset()
	want := readAll(t, r.l)
	_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 10, seed: 99}), 0)
	require.NoError(t, err)
	d := r.Proc.Disk()
	d.SetFaults(sim.DiskFaults{SyncFailProbability: 1, SyncDirFailProbability: 1})
	require.ErrorIs(t, r.flush(), log.ErrLogFailed)
	r.Run(10 * time.Millisecond) // the marker's SyncDir fails too
	d.SetFaults(sim.DiskFaults{})
	require.True(t, d.Failed())
	require.Equal(t, []string{testDir + "/.sync-failed-" + itoa(acked)}, markers(r), "the marker is in the page cache")

	before := diskSnapshot(d)
	for range 2 {
		r.kill()
		err := r.tryOpen()
		require.ErrorIs(t, err, log.ErrStorageUnavailable)
		require.ErrorIs(t, err, env.ErrIO)
		require.Nil(t, r.l)
		require.Equal(t, before, diskSnapshot(d), "a failed Open changes nothing")
	}

	r.Proc.PowerCycle()
	r.Proc.Start()
	r.Run(0)
	r.open()
	require.Equal(t, acked, r.l.LogEndOffset())
	require.Equal(t, want, readAll(t, r.l))
}

// A power loss under the page crash model keeps the flushed-offset hint's
// size but not its page: the note reads as zeros (a hole), which is what a
// journaling filesystem leaves when the size change of the note's sparse
// sizing commits without its never-synced data. Everything the log reads
// after a power loss is durable, so a Sync failure while it settles must
// keep it all: the zero note used to count as no vouching at all, and the
// failure marker dropped every batch past the recovery point, acknowledged
// ones included (log seed 194).
func TestSettleFailureAfterPowerLossWithZeroedHintKeepsData(t *testing.T) {
	r := newFlushedRig(t, 17, 30)
	acked, want := r.flushPastRecoveryPoint(t)

	r.crash()
	hint := testDir + "/.flushed-offset"
	f, err := r.Env.Disk().Open(hint, true)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(0))
	require.NoError(t, f.Truncate(22)) // the size survived, the page did not
	require.NoError(t, f.Close())

	r.failSettleThenRecover(t, acked, want)
}

// A note a previous machine restart left on the disk outlives the next
// one: the kernel writes dirty pages back on its own, so a restart may keep
// any version of the never-synced note, an old one included. Everything
// the log reads after a restart is durable, so a Sync failure while it
// settles must keep it all; an old note taken at its word dropped the
// batches flushed after it, acknowledged ones included (kraft5 seed 1541:
// a Raft voter lost committed entries). The note carries the boot it was
// written in, and a note of another boot counts as the log end.
func TestSettleFailureAfterRestartWithOldNoteKeepsData(t *testing.T) {
	r := newFlushedRig(t, 19, 30)
	hint := testDir + "/.flushed-offset"
	old, ok := r.Proc.Disk().ReadFile(hint)
	require.True(t, ok)
	require.Contains(t, string(old), itoa(r.l.LogEndOffset()))

	acked, want := r.flushPastRecoveryPoint(t)

	r.crash()
	f, err := r.Env.Disk().Open(hint, true)
	require.NoError(t, err)
	require.NoError(t, f.WriteAt(old, 0)) // the old note, as a restart may leave it
	require.NoError(t, f.Close())

	r.failSettleThenRecover(t, acked, want)
}

// Within one boot the note is read from the page cache as last written, so
// it is taken at its word even if it is lower than the log end: after a
// kill, what lies beyond it may be only in the page cache.
func TestHintOfThisBootIsTakenAtItsWord(t *testing.T) {
	r := newFlushedRig(t, 21, 10)
	acked := r.l.LogEndOffset()
	want := readAll(t, r.l)
	r.appendN(t, 5, 50) // never flushed

	r.kill()
	r.failSettleThenRecover(t, acked, want)
}
