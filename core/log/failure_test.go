package log_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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

// kill ends the incarnation with the machine up (the page cache stays) and
// starts a new one; the log is not reopened.
func (r *rig) kill() {
	r.p.Kill()
	r.l = nil
	r.p.Start()
	r.run(0)
}

func markers(r *rig) []string {
	var out []string
	for _, f := range r.p.Disk().Files() {
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
	r := newRig(t, 11, lagConfig())
	r.appendN(t, 30, 1) // several segments
	require.NoError(t, r.flush())
	r.appendN(t, 2, 60) // flushed beyond the checkpoint (a roll writes one)
	require.NoError(t, r.flush())
	acked := r.l.LogEndOffset()
	require.Less(t, r.l.RecoveryPoint(), acked, "the test wants flushed data beyond the recovery point")
	want := readAll(t, r.l)

	r.appendN(t, 10, 100)
	r.p.Disk().SetFaults(sim.DiskFaults{SyncFailProbability: 1})
	require.ErrorIs(t, r.flush(), log.ErrLogFailed)
	r.p.Disk().SetFaults(sim.DiskFaults{})
	require.Equal(t, []string{testDir + "/.sync-failed-" + itoa(acked)}, markers(r))

	r.kill()
	r.open()
	require.Equal(t, acked, r.l.LogEndOffset(), "the unflushed tail beyond the failure goes")
	require.Equal(t, want, readAll(t, r.l))
	require.Empty(t, markers(r), "the marker goes once the recovery is durable")
	require.Equal(t, acked, r.l.RecoveryPoint())

	r.appendN(t, 10, 200)
	require.NoError(t, r.flush())
	want = readAll(t, r.l)
	end := r.l.LogEndOffset()

	r.crash()
	r.open()
	require.Equal(t, end, r.l.LogEndOffset())
	require.Equal(t, want, readAll(t, r.l))
}

// A kill without a failure keeps what the page cache holds, flushed or
// not.
func TestKillKeepsPageCache(t *testing.T) {
	r := newRig(t, 12, lagConfig())
	r.appendN(t, 20, 1)
	require.NoError(t, r.flush())
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
	r := newRig(t, 13, lagConfig())
	r.appendN(t, 30, 1)
	require.NoError(t, r.flush())
	r.appendN(t, 2, 60)
	require.NoError(t, r.flush())
	acked := r.l.LogEndOffset()
	want := readAll(t, r.l)
	require.Less(t, r.l.RecoveryPoint(), acked)
	r.appendN(t, 5, 100) // not flushed

	r.kill()
	r.p.Disk().SetFaults(sim.DiskFaults{SyncFailProbability: 1})
	r.openBusy()
	require.ErrorIs(t, r.flush(), log.ErrLogFailed)
	r.p.Disk().SetFaults(sim.DiskFaults{})
	require.Equal(t, []string{testDir + "/.sync-failed-" + itoa(acked)}, markers(r))

	r.kill()
	r.open()
	require.Equal(t, acked, r.l.LogEndOffset())
	require.Equal(t, want, readAll(t, r.l))
	r.crash()
	r.open()
	require.Equal(t, want, readAll(t, r.l))
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
