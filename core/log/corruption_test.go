package log_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

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
	f, err := r.e.Disk().Open(name, false)
	require.NoError(t, err)
	b := make([]byte, 1)
	_, err = f.ReadAt(b, pos)
	require.NoError(t, err)
	b[0] ^= 0x04
	require.NoError(t, f.WriteAt(b, pos))
	require.NoError(t, r.wait(f.Sync))
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
	r.openBusy()
	segs := r.l.Segments()
	require.NoError(t, r.l.Close())
	last := batches[len(batches)-1]
	name, pos := segmentAndPosition(t, segs, batches, last.base)
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
	cfg.RecoveryCheckpointBytes = 1 << 30 // no checkpoint but the first
	r := newRig(t, 12, cfg)
	for i := 0; i < 6; i++ {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 100, timestamp: int64(i), seed: byte(i)}), 0)
		require.NoError(t, err)
	}
	require.NoError(t, r.flush()) // durable, but the recovery point stays 0
	require.Equal(t, int64(0), r.l.RecoveryPoint())
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
	r.p.Disk().SetFaults(sim.DiskFaults{BitFlipProbability: 0.05})
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
	require.Positive(t, r.p.Disk().Stats().BitFlips)
}
