package log_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
)

// scrub runs log.Scrub on the test directory and returns what it found.
func (r *rig) scrub() (log.ScrubResult, error) {
	r.t.Helper()
	var res log.ScrubResult
	err := r.wait(func(done func(error)) {
		log.Scrub(r.e, testDir, func(got log.ScrubResult, err error) {
			res = got
			done(err)
		})
	})
	return res, err
}

// markers lists the failure markers in the test directory.
func (r *rig) markers() []string {
	r.t.Helper()
	names, err := r.e.Disk().List(testDir)
	require.NoError(r.t, err)
	var out []string
	for _, n := range names {
		if len(n) > len(".sync-failed-") && n[:len(".sync-failed-")] == ".sync-failed-" {
			out = append(out, n)
		}
	}
	return out
}

// TestScrubCleanLog: a clean log, read on a disk whose reads flip bits, is
// not damaged, and the scrub leaves no marker.
func TestScrubCleanLog(t *testing.T) {
	r, batches := corruptionRig(t)
	r.p.Disk().SetFaults(sim.DiskFaults{BitFlipProbability: 0.05})
	for range 10 {
		res, err := r.scrub()
		require.NoError(t, err)
		require.False(t, res.Damaged, "%v", res.Err)
		require.GreaterOrEqual(t, res.Segments, 3)
		total := int64(0)
		for _, b := range batches {
			total += int64(len(b.bytes))
		}
		require.Equal(t, total, res.Bytes)
	}
	require.Positive(t, r.p.Disk().Stats().BitFlips)
	require.Empty(t, r.markers())
	r.open()
	require.Len(t, readAll(t, r.l), len(batches))
}

// TestScrubDropsDamageBelowRecoveryPoint flips a bit in a batch of an
// older segment, below the recovery point (which Open trusts without a
// CRC check): the scrub finds it, and the next Open drops it and
// everything after it, whole later segments included, so the log holds
// exactly the batches before it.
func TestScrubDropsDamageBelowRecoveryPoint(t *testing.T) {
	for _, which := range []int{0, 2, 5} {
		t.Run(fmt.Sprintf("batch %d", which), func(t *testing.T) {
			r, batches := corruptionRig(t)
			target := batches[which]
			r.openBusy()
			segs := r.l.Segments()
			rp := r.l.RecoveryPoint()
			require.NoError(t, r.l.Close())
			require.Greater(t, rp, target.last, "the damage lies below the recovery point")
			require.Less(t, target.last, segs[len(segs)-2].BaseOffset, "the damage lies in an older segment")
			name, pos := segmentAndPosition(t, segs, batches, target.base)
			flipStored(t, r, name, pos+int64(len(target.bytes))-5) // under the CRC

			// Without the scrub, Open trusts the segment and serves the
			// damaged batch.
			r.open()
			require.Equal(t, batches[len(batches)-1].last+1, r.l.LogEndOffset())
			require.NoError(t, r.l.Close())

			res, err := r.scrub()
			require.NoError(t, err)
			require.True(t, res.Damaged)
			require.Equal(t, target.base, res.Offset)
			require.ErrorIs(t, res.Err, record.ErrCRCMismatch)
			require.Contains(t, res.Err.Error(), name)
			require.Equal(t, []string{fmt.Sprintf(".sync-failed-%d", target.base)}, r.markers())

			r.open()
			require.Equal(t, target.base, r.l.LogEndOffset())
			got := readAll(t, r.l)
			require.Len(t, got, which)
			for i := range got {
				require.Equal(t, batches[i].bytes, got[i].bytes)
			}
			require.NoError(t, r.l.Verify(0, r.l.LogEndOffset()))
			require.Empty(t, r.markers(), "the settled Open removes the marker")
			// The cut is durable: a power loss keeps it.
			r.l = nil
			r.crash()
			res, err = r.scrub()
			require.NoError(t, err)
			require.False(t, res.Damaged, "%v", res.Err)
			r.open()
			require.Equal(t, target.base, r.l.LogEndOffset())
			// The log takes new data where it was cut.
			info, err := r.l.Append(build(batchSpec{records: 1, valueSize: 10, timestamp: 1, seed: 99}), 0)
			require.NoError(t, err)
			require.Equal(t, target.base, info.FirstOffset)
		})
	}
}

// TestScrubAfterPowerLoss: damage in a batch header (under the CRC) is
// found after a power loss rebuilt the page cache from the disk.
func TestScrubAfterPowerLoss(t *testing.T) {
	r, batches := corruptionRig(t)
	target := batches[len(batches)/2]
	r.openBusy()
	segs := r.l.Segments()
	require.NoError(t, r.l.Close())
	name, pos := segmentAndPosition(t, segs, batches, target.base)
	flipStored(t, r, name, pos+record.LogOverhead+10) // in the header, under the CRC
	r.crash()

	res, err := r.scrub()
	require.NoError(t, err)
	require.True(t, res.Damaged)
	require.Equal(t, target.base, res.Offset)
	r.open()
	require.Equal(t, target.base, r.l.LogEndOffset())
}

// TestScrubMarkers: a failure marker that already drops the
// damage is left as it is; one that drops less is replaced, since Open
// obeys the largest.
func TestScrubMarkers(t *testing.T) {
	r, batches := corruptionRig(t)
	target := batches[10]
	r.openBusy()
	segs := r.l.Segments()
	require.NoError(t, r.l.Close())
	name, pos := segmentAndPosition(t, segs, batches, target.base)
	flipStored(t, r, name, pos+int64(len(target.bytes))-5)

	// A marker below the damage: the damage is dropped anyway.
	require.NoError(t, log.MarkFailed(r.e, testDir, batches[4].base))
	res, err := r.scrub()
	require.NoError(t, err)
	require.False(t, res.Damaged, "the scrub stops at the marker's offset")
	require.Equal(t, []string{fmt.Sprintf(".sync-failed-%d", batches[4].base)}, r.markers())

	// A marker above the damage is replaced.
	require.NoError(t, r.e.Disk().Remove(testDir+"/"+r.markers()[0]))
	require.NoError(t, log.MarkFailed(r.e, testDir, batches[20].base))
	res, err = r.scrub()
	require.NoError(t, err)
	require.True(t, res.Damaged)
	require.Equal(t, []string{fmt.Sprintf(".sync-failed-%d", target.base)}, r.markers())
	r.open()
	require.Equal(t, target.base, r.l.LogEndOffset())
}

// TestScrubStopped: a stopped scrub never reports.
func TestScrubStopped(t *testing.T) {
	r, _ := corruptionRig(t)
	called := false
	stop := log.Scrub(r.e, testDir, func(log.ScrubResult, error) { called = true })
	stop()
	r.run(time.Second)
	require.False(t, called)
}

// TestScrubMissingDirectory: no directory, no log, no damage.
func TestScrubMissingDirectory(t *testing.T) {
	r := newRig(t, 5, smallConfig())
	var res log.ScrubResult
	err := r.wait(func(done func(error)) {
		log.Scrub(r.e, "data/none-0", func(got log.ScrubResult, err error) { res = got; done(err) })
	})
	require.NoError(t, err)
	require.False(t, res.Damaged)
	require.Zero(t, res.Segments)
}
