package log_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/internal/coretest"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
)

// corruptionRig is a log with a few segments of known batches, shut down
// cleanly (so the recovery point is the log end offset).
func corruptionRig(t *testing.T) (*rig, []storedBatch) {
	cfg := smallConfig()
	cfg.SegmentBytes = 2048
	r := newRig(t, 11, cfg)
	for i := 0; i < 30; i++ {
		_, err := r.l.Append(build(batchSpec{records: 2, valueSize: 60, timestamp: 1_700_000_000_000 + int64(i), seed: byte(i)}), 0)
		require.NoError(t, err)
	}
	require.GreaterOrEqual(t, len(r.l.Segments()), 3)
	batches := readAll(t, r.l)
	r.shutdown()
	return r, batches
}

// flipStored flips one bit of a stored byte of file name at pos by writing
// through the Disk and syncing, so the damage is durable.
func flipStored(t *testing.T, r *rig, name string, pos int64) {
	f, err := r.Env.Disk().Open(name, false)
	require.NoError(t, err)
	coretest.FlipBits(t, f, pos, 0x04)
	require.NoError(t, r.Wait(f.Sync))
	require.NoError(t, f.Close())
}

// segmentAndPosition finds the segment file and position of the batch
// holding offset.
func segmentAndPosition(t *testing.T, segs []log.SegmentInfo, batches []storedBatch, offset int64) (string, int64) {
	i := segmentIndex(segs, offset)
	pos := int64(0)
	for _, b := range batches {
		if b.base >= segs[i].BaseOffset && b.last < offset {
			pos += int64(len(b.bytes))
		}
	}
	return fmt.Sprintf("%s/%020d.log", testDir, segs[i].BaseOffset), pos
}

// TestCorruptionBeforeRecoveryPoint flips a bit inside a synced batch that
// recovery reads (the last batch, below the recovery point after a clean
// shutdown): Open must fail with the file and position, never drop it.
func TestCorruptionBeforeRecoveryPoint(t *testing.T) {
	r, batches := corruptionRig(t)
	last := batches[len(batches)-1]
	name, pos := storedAt(t, r, batches, last.base)
	flipStored(t, r, name, pos+int64(len(last.bytes))-3) // inside the records, under the CRC

	err := r.tryOpen()
	require.ErrorIs(t, err, log.ErrCorrupt)
	require.ErrorIs(t, err, record.ErrCRCMismatch)
	var ce *log.CorruptError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, name, ce.File)
	require.Equal(t, pos, ce.Position)
	require.Contains(t, err.Error(), name)
	require.Contains(t, err.Error(), fmt.Sprintf("position %d", pos))
}

// TestCorruptionInTrustedSegment flips a bit in an older segment, which
// Open trusts without reading (as Kafka does): Verify finds it with the
// file and position, and a consumer of Read's region detects it by CRC.
func TestCorruptionInTrustedSegment(t *testing.T) {
	r, batches := corruptionRig(t)
	target := batches[2]
	r.openBusy()
	segs := r.l.Segments()
	require.NoError(t, r.l.Close())
	name, pos := segmentAndPosition(t, segs, batches, target.base)
	flipStored(t, r, name, pos+int64(len(target.bytes))-5)

	r.open()
	err := r.l.Verify(0, r.l.LogEndOffset())
	require.ErrorIs(t, err, log.ErrCorrupt)
	var ce *log.CorruptError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, name, ce.File)
	require.Equal(t, pos, ce.Position)

	// Read serves the stored bytes (for sendfile); the CRC exposes them.
	res, err := r.l.Read(target.base, 1, -1)
	require.NoError(t, err)
	buf := readRegion(t, &res)
	b, err := record.ReadBatch(buf, len(buf))
	require.NoError(t, err)
	require.Equal(t, target.base, b.BaseOffset())
	require.ErrorIs(t, b.ValidateStored(), record.ErrCRCMismatch)

	// The rest of the log is untouched.
	require.NoError(t, r.l.Verify(segs[1].BaseOffset, r.l.LogEndOffset()))
}

// TestCorruptionAfterRecoveryPoint: a damaged batch that no flush covered
// is a torn tail; recovery truncates the log before it.
func TestCorruptionAfterRecoveryPoint(t *testing.T) {
	cfg := smallConfig()
	cfg.RecoveryCheckpointBytes = 1 << 30 // no checkpoint but the first epoch's
	r := newRig(t, 12, cfg)
	for i := 0; i < 6; i++ {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 100, timestamp: int64(i), seed: byte(i)}), 0)
		require.NoError(t, err)
		if i == 0 {
			// The flush that makes epoch 0's first batch durable writes
			// the checkpoints (the scrub checks epochs against them).
			require.NoError(t, r.flush())
			require.Equal(t, int64(1), r.l.RecoveryPoint())
		}
	}
	require.NoError(t, r.flush()) // durable, but the recovery point stays 1
	require.Equal(t, int64(1), r.l.RecoveryPoint())
	batches := readAll(t, r.l)
	segs := r.l.Segments()
	require.NoError(t, r.l.Close())
	name, pos := segmentAndPosition(t, segs, batches, 4)
	flipStored(t, r, name, pos+40)

	r.open()
	require.Equal(t, int64(4), r.l.LogEndOffset(), "truncated before the damaged batch")
	require.Len(t, readAll(t, r.l), 4)
}

// TestOpenToleratesReadFlips opens and reads a clean log many times on a
// disk whose reads flip bits often: re-reads must keep every transient
// flip from looking like corruption.
func TestOpenToleratesReadFlips(t *testing.T) {
	r, batches := corruptionRig(t)
	r.Proc.Disk().SetFaults(sim.DiskFaults{BitFlipProbability: 0.05})
	for i := 0; i < 30; i++ {
		r.openBusy()
		require.NoError(t, r.flush())
		got, err := readAllFlaky(r.l)
		require.NoError(t, err)
		require.Len(t, got, len(batches))
		for j := range got {
			require.Equal(t, batches[j].bytes, got[j].bytes)
		}
		require.NoError(t, r.l.Verify(0, r.l.LogEndOffset()))
		r.crash()
	}
	require.Positive(t, r.Proc.Disk().Stats().BitFlips)
}

// Damage at rest in index files that loading cannot see (a plausible
// entry pointing at the wrong batch, a time index entry with the wrong
// timestamp: sim.DiskFaults.CorruptProbability and MisdirectProbability
// on files declared survivable) is found when a lookup's entry disagrees
// with the batch it names on every read: the segment's indexes are
// rebuilt from its batches and the lookup answers right.
func TestDamagedIndexEntriesAreRepairedOnLookup(t *testing.T) {
	for _, readsFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("reads first %v", readsFirst), func(t *testing.T) { damagedIndexLookups(t, readsFirst) })
	}
}

func damagedIndexLookups(t *testing.T, readsFirst bool) {
	r := newRig(t, 23, smallConfig())
	for i := range 60 {
		_, err := r.l.Append(build(batchSpec{records: 2, valueSize: 40, timestamp: int64(i) * 10, seed: byte(i)}), 0)
		require.NoError(t, err)
	}
	require.NoError(t, r.flush())
	require.Greater(t, len(r.l.Segments()), 2)
	want := readAll(t, r.l)
	answers := func() []log.TimestampOffset {
		var out []log.TimestampOffset
		for ts := int64(0); ts <= 600; ts += 3 {
			got, err := r.l.OffsetForTimestamp(ts)
			require.NoError(t, err, "timestamp %d", ts)
			out = append(out, got)
		}
		return out
	}
	wantTimes := answers()
	firstOf := func(off int64) int64 {
		res, err := r.l.Read(off, 1, -1)
		require.NoError(t, err, "offset %d", off)
		defer res.Release()
		return res.FirstOffset
	}
	var wantFirst []int64
	for off := int64(0); off < r.l.LogEndOffset(); off++ {
		wantFirst = append(wantFirst, firstOf(off))
	}
	r.shutdown()

	// Damage entry 1 of the first segment's indexes (not the last
	// entries, which Open checks): the offset index entry names the first
	// offset of its batch instead of the last; the time index entry's
	// timestamp is one less, still in order.
	d := r.Env.Disk()
	decrementIndexEntry(t, d, testDir+"/00000000000000000000.index", 8, 4)
	decrementIndexEntry(t, d, testDir+"/00000000000000000000.timeindex", 12, 8)

	r.open()
	reads := func() {
		for off, first := range wantFirst {
			require.Equal(t, first, firstOf(int64(off)), "the batch holding offset %d", off)
		}
		require.Equal(t, want, readAll(t, r.l))
	}
	if readsFirst {
		reads()
	}
	require.Equal(t, wantTimes, answers(), "every timestamp lookup answers as before the damage")
	reads()
}

// decrementIndexEntry lowers by one the first field (a 4-byte relative
// offset or an 8-byte timestamp) of entry 1 of an index file of at least
// three entries of entrySize bytes.
func decrementIndexEntry(t *testing.T, d env.Disk, name string, entrySize, fieldSize int) {
	t.Helper()
	f, err := d.Open(name, false)
	require.NoError(t, err)
	require.GreaterOrEqual(t, f.Size(), int64(3*entrySize))
	e := make([]byte, entrySize)
	_, err = f.ReadAt(e, int64(entrySize))
	require.NoError(t, err)
	if fieldSize == 4 {
		binary.BigEndian.PutUint32(e, binary.BigEndian.Uint32(e)-1)
	} else {
		binary.BigEndian.PutUint64(e, binary.BigEndian.Uint64(e)-1)
	}
	require.NoError(t, f.WriteAt(e, int64(entrySize)))
	require.NoError(t, f.Close())
}
