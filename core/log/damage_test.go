package log_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
)

// DamagedSegment names the segment to drop for damage found while the log
// is open or at Open: a corrupt batch of a segment file, or a page of one
// the disk cannot read. A stored batch whose CRC matches but whose records
// do not parse is the same on every replica and is not damage; neither is
// an error about another file, or a disk error that is not a read's.
func TestDamagedSegmentClassifiesErrors(t *testing.T) {
	seg := testDir + "/00000000000000000042.log"
	for _, c := range []struct {
		name string
		err  error
		base int64
		ok   bool
	}{
		{"a corrupt batch", &log.CorruptError{File: seg, Position: 7, Err: record.ErrCRCMismatch}, 42, true},
		{"wrapped", fmt.Errorf("log: open: %w", &log.CorruptError{File: seg}), 42, true},
		{"an unreadable page", fmt.Errorf("x: %w: %w", log.ErrStorageUnavailable, &log.ReadError{File: seg, Position: 4096, Err: env.ErrIO}), 42, true},
		{"records that do not parse", &log.CorruptError{File: seg, Err: fmt.Errorf("%w: %w", log.ErrInvalidRecords, record.ErrInvalidRecord)}, 0, false},
		{"an index", &log.CorruptError{File: testDir + "/00000000000000000042.index"}, 0, false},
		{"a checkpoint", &log.CorruptError{File: testDir + "/recovery-checkpoint"}, 0, false},
		{"a closed handle", &log.ReadError{File: seg, Err: env.ErrClosed}, 0, false},
		{"a failed log", log.ErrLogFailed, 0, false},
		{"nil", nil, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, ok := log.DamagedSegment(c.err)
			require.Equal(t, c.ok, ok)
			require.Equal(t, c.base, base)
		})
	}
}

// A leader checks what it serves a follower (ReadResult.Verify): a region
// of intact batches passes; a bit flipped under a batch's CRC, or a page
// the disk can no longer read, is damage naming the segment, where the
// region's plain read would have sent it.
func TestVerifyFindsDamageInARegion(t *testing.T) {
	r, batches := corruptionRig(t)
	r.open()
	segs := r.l.Segments()
	target := batches[len(batches)/2]
	res, err := r.l.Read(target.base, 1<<20, -1)
	require.NoError(t, err)
	_, err = res.Verify(nil)
	require.NoError(t, err, "intact batches pass")
	res.Release()

	name, pos := segmentAndPosition(t, segs, batches, target.base)
	flipStored(t, r, name, pos+int64(len(target.bytes))-3)
	res, err = r.l.Read(target.base, 1<<20, -1)
	require.NoError(t, err, "a read does not check CRCs")
	_, err = res.Verify(nil)
	res.Release()
	require.ErrorIs(t, err, log.ErrCorrupt)
	require.ErrorIs(t, err, record.ErrCRCMismatch)
	base, ok := log.DamagedSegment(err)
	require.True(t, ok)
	require.Equal(t, segs[segmentIndex(segs, target.base)].BaseOffset, base)

	// A latent sector error in the first batch of another segment.
	other := segs[len(segs)-2]
	d := r.Proc.Disk()
	d.DeclareSurvivable(func(n string) bool { return strings.HasSuffix(n, ".log") })
	res, err = r.l.Read(other.BaseOffset, 1<<20, -1)
	require.NoError(t, err)
	d.SetFaults(sim.DiskFaults{LatentErrorProbability: 1})
	_, err = res.Verify(nil)
	d.SetFaults(sim.DiskFaults{})
	res.Release()
	require.ErrorIs(t, err, env.ErrIO)
	var re *log.ReadError
	require.True(t, errors.As(err, &re))
	base, ok = log.DamagedSegment(err)
	require.True(t, ok)
	require.Equal(t, other.BaseOffset, base)
}

// A damage marker at the first segment's base (core/replica drops a
// damaged segment so) empties the log without reading it: a page of it the
// disk cannot read must not stop the open that drops it.
func TestDamageMarkerAtTheBaseOpensUnread(t *testing.T) {
	r, _ := corruptionRig(t)
	seg := fmt.Sprintf("%s/%020d.log", testDir, 0)
	d := r.Proc.Disk()
	d.DeclareSurvivable(func(n string) bool { return strings.HasSuffix(n, ".log") })
	f, err := r.Env.Disk().Open(seg, false)
	require.NoError(t, err)
	d.SetFaults(sim.DiskFaults{LatentErrorProbability: 1})
	_, err = f.ReadAt(make([]byte, 100), 0)
	d.SetFaults(sim.DiskFaults{})
	require.ErrorIs(t, err, env.ErrIO, "page 0 is unreadable now")
	require.NoError(t, f.Close())

	require.NoError(t, log.MarkDamaged(r.Env, testDir, 0))
	r.open()
	require.Equal(t, int64(0), r.l.LogStartOffset())
	require.Equal(t, int64(0), r.l.LogEndOffset(), "everything from the marker is dropped")
	_, err = r.l.Append(build(batchSpec{records: 1, valueSize: 10, timestamp: 1, seed: 1}), 0)
	require.NoError(t, err)
	require.NoError(t, r.flush())
	require.Len(t, readAll(t, r.l), 1, "the truncated file reads again")
}
