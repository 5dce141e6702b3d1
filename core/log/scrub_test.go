package log_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
)

// scrub runs log.Scrub on the test directory (a log never compacted) and
// returns what it found.
func (r *rig) scrub() (log.ScrubResult, error) { return r.scrubWith(true) }

// scrubWith scrubs as scrub does, as a log that may have been compacted
// (a .compacted marker) unless contiguous.
func (r *rig) scrubWith(contiguous bool) (log.ScrubResult, error) {
	r.T.Helper()
	marker := testDir + "/.compacted"
	if contiguous {
		if err := r.Env.Disk().Remove(marker); err != nil && !errors.Is(err, env.ErrNotExist) {
			require.NoError(r.T, err)
		}
	} else {
		f, err := r.Env.Disk().Open(marker, true)
		require.NoError(r.T, err)
		require.NoError(r.T, f.Close())
	}
	var res log.ScrubResult
	err := r.Wait(func(done func(error)) {
		log.Scrub(r.Env, testDir, func(got log.ScrubResult, err error) {
			res = got
			done(err)
		})
	})
	return res, err
}

// markers lists the failure markers in the test directory.
func (r *rig) markers() []string {
	r.T.Helper()
	names, err := r.Env.Disk().List(testDir)
	require.NoError(r.T, err)
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, ".sync-failed-") || strings.HasPrefix(n, ".damaged-") {
			out = append(out, n)
		}
	}
	return out
}

// TestScrubCleanLog: a clean log, read on a disk whose reads flip bits, is
// not damaged, and the scrub leaves no marker.
func TestScrubCleanLog(t *testing.T) {
	r, batches := corruptionRig(t)
	r.Proc.Disk().SetFaults(sim.DiskFaults{BitFlipProbability: 0.05})
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
	require.Positive(t, r.Proc.Disk().Stats().BitFlips)
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
			require.Equal(t, []string{fmt.Sprintf(".damaged-%d", target.base)}, r.markers())

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
	name, pos := storedAt(t, r, batches, target.base)
	flipStored(t, r, name, pos+record.LogOverhead+10) // in the header, under the CRC
	r.crash()

	res, err := r.scrub()
	require.NoError(t, err)
	require.True(t, res.Damaged)
	require.Equal(t, target.base, res.Offset)
	r.open()
	require.Equal(t, target.base, r.l.LogEndOffset())
}

// TestScrubFindsFlipsOutsideTheCRC: a batch's base offset and partition
// leader epoch lie outside its CRC. A flipped base offset leaves a gap,
// which a log held to contiguous offsets (a topic that is not compacted)
// does not have, and makes the next batch out of order in any log; a
// leader epoch flipped lower than the batch before it is out of order.
func TestScrubFindsFlipsOutsideTheCRC(t *testing.T) {
	t.Run("base offset", func(t *testing.T) {
		r, batches := corruptionRig(t)
		target := batches[4] // base 8: the flip adds 4
		require.Equal(t, int64(8), target.base)
		name, pos := storedAt(t, r, batches, target.base)
		flipStored(t, r, name, pos+7) // the base offset: +4, over the next batch
		// Without the contiguity rule, the batch after it is out of
		// order, and the drop starts where the flipped one should.
		res, err := r.scrubWith(false)
		require.NoError(t, err)
		require.True(t, res.Damaged)
		require.Equal(t, target.base, res.Offset)
		res, err = r.scrub()
		require.NoError(t, err)
		require.True(t, res.Damaged)
		require.Equal(t, target.base, res.Offset)
		require.Contains(t, res.Err.Error(), "gap")
		r.open()
		require.Equal(t, target.base, r.l.LogEndOffset())
	})
	t.Run("first batch past the next segment", func(t *testing.T) {
		// In a compacted log (no contiguity rule), a segment's first
		// batch whose base offset was flipped past the next segment's
		// base is damage, not a truncation leftover (txn seed 45).
		r, batches := corruptionRig(t)
		r.openBusy()
		segs := r.l.Segments()
		require.NoError(t, r.l.Close())
		second := segs[1].BaseOffset
		name, pos := segmentAndPosition(t, segs, batches, second)
		flipStored(t, r, name, pos+6) // the base offset's second byte: +1024
		res, err := r.scrubWith(false)
		require.NoError(t, err)
		require.True(t, res.Damaged)
		require.Equal(t, second, res.Offset)
		require.Contains(t, res.Err.Error(), "past the next segment's base")
	})
	t.Run("leader epoch", func(t *testing.T) {
		r, batches := epochRig(t, false)
		target := batches[9] // epoch 6, after a batch of epoch 6
		name, pos := storedAt(t, r, batches, target.base)
		flipStored(t, r, name, pos+record.LogOverhead+3) // the epoch's low byte: 6 ^ 4 = 2
		res, err := r.scrubWith(false)
		require.NoError(t, err)
		require.True(t, res.Damaged)
		require.Equal(t, target.base, res.Offset)
		require.Contains(t, res.Err.Error(), "leader epoch 2")
	})
	// A leader epoch flipped higher in a log's last batch has no batch
	// after it to be out of order with (replicated seed 3455: 4 to 4096,
	// and the leader could append nothing after it). The epoch
	// checkpoint lists every durable batch's epoch.
	t.Run("last batch's leader epoch, below the recovery point", func(t *testing.T) {
		r, batches := epochRig(t, true)
		last := batches[len(batches)-1]
		r.openBusy()
		require.Greater(t, r.l.RecoveryPoint(), last.base)
		require.NoError(t, r.l.Close())
		name, pos := storedAt(t, r, batches, last.base)
		flipStored(t, r, name, pos+record.LogOverhead+2) // 6 ^ 4<<8 = 1030
		requireScrubDamage(t, r, last.base, "leader epoch 1030")
		r.open()
		require.Equal(t, last.base, r.l.LogEndOffset())
		require.Equal(t, int32(6), r.l.LatestEpoch())
	})
	t.Run("leader epoch of a later listed epoch, in order", func(t *testing.T) {
		// Epoch 5's last batch relabelled 6: the batches around it are
		// of epochs 5 and 6, so only the checkpoint tells.
		r, batches := epochRig(t, true)
		target := batches[7]
		name, pos := storedAt(t, r, batches, target.base)
		writeStored(t, r, name, pos+record.LogOverhead, []byte{0, 0, 0, 6})
		requireScrubDamage(t, r, target.base, "has epoch 5 from offset 4")
	})
	t.Run("a new epoch's batch never made durable", func(t *testing.T) {
		// A batch of epoch 7 reached the disk (by writeback) with no
		// flush cycle covering it, then the power went: the epoch
		// checkpoint does not list 7, and the scrub cannot tell such a
		// batch from damage.
		r, batches := epochRig(t, true)
		last := batches[len(batches)-1]
		name, pos := storedAt(t, r, batches, last.base)
		extra := append([]byte(nil), last.bytes...)
		binary.BigEndian.PutUint64(extra, uint64(last.last+1))
		binary.BigEndian.PutUint32(extra[record.LogOverhead:], 7) // both outside the CRC
		writeStored(t, r, name, pos+int64(len(last.bytes)), extra)
		requireScrubDamage(t, r, last.last+1, "lists no epoch past 6")
	})
	t.Run("a clean log of several epochs", func(t *testing.T) {
		r, batches := epochRig(t, true)
		res, err := r.scrub()
		require.NoError(t, err)
		require.False(t, res.Damaged, "%v", res.Err)
		r.open()
		require.Len(t, readAll(t, r.l), len(batches))
	})
}

// TestScrubFindsAMisdirectedBatchOverAnEpochStart: a misdirected write
// puts a valid batch of a later offset where a leader epoch's first batch
// was, with zeros after it. A compacted log has no contiguity rule to see
// the gap, but every epoch the checkpoint lists starts at a batch, so the
// drop starts where the missing one should have been, not at the zeros
// after the misdirected batch, which would keep it and lose the offsets
// before it without a word (txn seed 284 at 2553f75: __consumer_offsets
// offsets 0 to 25, a committed transaction's offsets among them).
func TestScrubFindsAMisdirectedBatchOverAnEpochStart(t *testing.T) {
	for _, tc := range []struct {
		name          string
		over, misdir  int // the batch overwritten, the batch written there
		wantEnd       int64
		wantRemaining int
	}{
		{"at the first segment's start", 0, 2, 0, 0},
		{"at a later epoch's start", 4, 6, 4, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, batches := epochRig(t, true)
			over, misdir := batches[tc.over], batches[tc.misdir]
			require.Less(t, misdir.base, batches[len(batches)-1].base, "a later batch of the log")
			name, pos := storedAt(t, r, batches, over.base)
			// The misdirected batch, then zeros over the rest of the
			// batches it landed on.
			n := 0
			for _, b := range batches[tc.over:tc.misdir] {
				n += len(b.bytes)
			}
			require.Greater(t, n, len(misdir.bytes))
			data := append(append([]byte(nil), misdir.bytes...), make([]byte, n-len(misdir.bytes))...)
			writeStored(t, r, name, pos, data)

			requireScrubDamage(t, r, over.base, "where no batch starts")
			r.open()
			require.Equal(t, tc.wantEnd, r.l.LogEndOffset())
			got := readAll(t, r.l)
			require.Len(t, got, tc.wantRemaining)
			for i := range got {
				require.Equal(t, batches[i].bytes, got[i].bytes)
			}
		})
	}
}

// TestScrubPassesACleanedLogOfSeveralEpochs: the cleaner leaves gaps in a
// compacted log, before and after leader epoch starts, but keeps every
// epoch's first batch, so the scrub finds nothing.
func TestScrubPassesACleanedLogOfSeveralEpochs(t *testing.T) {
	r := newRig(t, 13, compactConfig())
	ts := r.Env.Now().UnixMilli()
	for i := 0; i < 120; i++ {
		k := keyName(i % 5)
		_, err := r.l.Append(keyedBatch(ts+int64(i), []kv{put(k, fmt.Sprintf("%s=%d:%s", k, i, strings.Repeat("v", 40)))}), int32(3+i/17))
		require.NoError(t, err)
		require.NoError(t, r.flush())
	}
	r.cleanable()
	r.clean(1 << 20)
	batches := readAll(t, r.l)
	gaps := 0
	for i := 1; i < len(batches); i++ {
		if batches[i].base != batches[i-1].last+1 {
			gaps++
		}
	}
	require.Positive(t, gaps, "the cleaning left gaps")
	r.shutdown()
	res, err := r.scrubWith(false)
	require.NoError(t, err)
	require.False(t, res.Damaged, "%v", res.Err)
	r.open()
	require.Len(t, readAll(t, r.l), len(batches))
}

// storedAt is the segment file and position of the batch holding offset
// in the (closed) test log.
func storedAt(t *testing.T, r *rig, batches []storedBatch, offset int64) (string, int64) {
	r.openBusy()
	segs := r.l.Segments()
	require.NoError(t, r.l.Close())
	return segmentAndPosition(t, segs, batches, offset)
}

// requireScrubDamage scrubs the log as one that may be compacted and
// requires damage from offset at, for a reason containing why.
func requireScrubDamage(t *testing.T, r *rig, at int64, why string) {
	res, err := r.scrubWith(false)
	require.NoError(t, err)
	require.True(t, res.Damaged)
	require.Equal(t, at, res.Offset)
	require.Contains(t, res.Err.Error(), why)
}

// writeStored overwrites stored bytes at pos of the named file, durably.
func writeStored(t *testing.T, r *rig, name string, pos int64, b []byte) {
	f, err := r.Env.Disk().Open(name, false)
	require.NoError(t, err)
	require.NoError(t, f.WriteAt(b, pos))
	require.NoError(t, r.Wait(f.Sync))
	require.NoError(t, f.Close())
}

// epochRig is a shut-down log of 12 one-record batches over small
// segments, in leader epochs 4, 5 and 6 (four batches each). With
// flushEach it is flushed after each: every batch lies below the recovery
// point.
func epochRig(t *testing.T, flushEach bool) (*rig, []storedBatch) {
	cfg := smallConfig()
	cfg.SegmentBytes = 2048
	r := newRig(t, 12, cfg)
	for i := 0; i < 12; i++ {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 40, timestamp: 1_700_000_000_000 + int64(i), seed: byte(i)}), int32(4+i/4))
		require.NoError(t, err)
		if flushEach {
			require.NoError(t, r.flush())
		}
	}
	batches := readAll(t, r.l)
	r.shutdown()
	return r, batches
}

// TestScrubMarkers: a failure marker that already drops the
// damage is left as it is; one that drops less is replaced, since Open
// obeys the largest; and a damage marker left by a scrub counts as damage
// until an Open settles it (replicated seed 7).
func TestScrubMarkers(t *testing.T) {
	r, batches := corruptionRig(t)
	target := batches[10]
	name, pos := storedAt(t, r, batches, target.base)
	flipStored(t, r, name, pos+int64(len(target.bytes))-5)

	// A marker below the damage: the damage is dropped anyway.
	require.NoError(t, log.MarkFailed(r.Env, testDir, batches[4].base))
	res, err := r.scrub()
	require.NoError(t, err)
	require.False(t, res.Damaged, "the scrub stops at the marker's offset; a failed Sync's marker drops nothing durable")
	require.Equal(t, []string{fmt.Sprintf(".sync-failed-%d", batches[4].base)}, r.markers(), "no new marker")

	// A marker above the damage is replaced.
	require.NoError(t, r.Env.Disk().Remove(testDir+"/"+r.markers()[0]))
	require.NoError(t, log.MarkFailed(r.Env, testDir, batches[20].base))
	res, err = r.scrub()
	require.NoError(t, err)
	require.True(t, res.Damaged)
	require.Equal(t, []string{fmt.Sprintf(".damaged-%d", target.base)}, r.markers())
	// A start that dies before the log opens leaves the damage marker;
	// the next scrub still reports the damage (replicated seed 7).
	res, err = r.scrub()
	require.NoError(t, err)
	require.True(t, res.Damaged, "a damage marker not settled by an Open is damage")
	require.Equal(t, target.base, res.Offset)
	require.Equal(t, []string{fmt.Sprintf(".damaged-%d", target.base)}, r.markers())
	r.open()
	require.Equal(t, target.base, r.l.LogEndOffset())
	require.Empty(t, r.markers(), "the settled Open removes the marker")
}

// TestScrubStopped: a stopped scrub never reports.
func TestScrubStopped(t *testing.T) {
	r, _ := corruptionRig(t)
	called := false
	stop := log.Scrub(r.Env, testDir, func(log.ScrubResult, error) { called = true })
	stop()
	r.Run(time.Second)
	require.False(t, called)
}

// TestScrubMissingDirectory: no directory, no log, no damage.
func TestScrubMissingDirectory(t *testing.T) {
	r := newRig(t, 5, smallConfig())
	var res log.ScrubResult
	err := r.Wait(func(done func(error)) {
		log.Scrub(r.Env, "data/none-0", func(got log.ScrubResult, err error) { res = got; done(err) })
	})
	require.NoError(t, err)
	require.False(t, res.Damaged)
	require.Zero(t, res.Segments)
}

// TestFlushMakesEachNewEpochCheckable: a flush that makes a new epoch's
// first batch durable also makes durable the epoch checkpoint listing it
// and a recovery point past it, so a power loss right after the flush
// leaves a log the scrub vouches for, whatever the checkpoint interval.
func TestFlushMakesEachNewEpochCheckable(t *testing.T) {
	cfg := smallConfig()
	cfg.RecoveryCheckpointBytes = 1 << 30
	cfg.FlushCheckpointInterval = time.Hour
	r := newRig(t, 12, cfg)
	for i, epoch := range []int32{4, 4, 5, 7, 7} {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 40, timestamp: 1_700_000_000_000 + int64(i), seed: byte(i)}), epoch)
		require.NoError(t, err)
		require.NoError(t, r.flush())
	}
	require.Equal(t, int64(4), r.l.RecoveryPoint(), "the last flush, in epoch 7 already listed, moved no recovery point")
	r.l = nil
	r.crash()
	res, err := r.scrub()
	require.NoError(t, err)
	require.False(t, res.Damaged, "%v", res.Err)
	r.open()
	require.Equal(t, int64(5), r.l.LogEndOffset())
	require.Equal(t, int32(7), r.l.LatestEpoch())
}
