package producer_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/internal/coretest"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/simtest"
)

// partDir is the partition directory the tests use.
const partDir = "data/topic-0"

// rig is one simulated process (simtest.Rig) whose disk a test drives.
type rig struct {
	*simtest.Rig
	snap *producer.Snapshots
	// wrap, when set, replaces the Env the package sees (fault wrappers).
	wrap func(env.Env) env.Env
}

func newRig(t tb, seed uint64) *rig {
	t.Helper()
	var w io.Writer
	if os.Getenv("STRATA_PRODUCER_TEST_VERBOSE") != "" {
		w = os.Stderr
	}
	r := &rig{Rig: simtest.New(t, sim.Config{Seed: seed, Log: w})}
	d := r.Env.Disk()
	require.NoError(t, d.MkdirAll(partDir))
	for _, dir := range []string{".", "data", partDir} {
		require.NoError(t, r.Wait(func(done func(error)) { d.SyncDir(dir, done) }))
	}
	r.open()
	return r
}

func (r *rig) env() env.Env {
	if r.wrap != nil {
		return r.wrap(r.Env)
	}
	return r.Env
}

func (r *rig) open() {
	r.T.Helper()
	s, err := producer.OpenSnapshots(r.env(), partDir, producer.DefaultConfig())
	require.NoError(r.T, err)
	r.snap = s
}

// crash power-fails the process, starts a new incarnation and reopens the
// snapshots.
func (r *rig) crash() {
	r.Restart()
	r.open()
}

func (r *rig) write(st *producer.State) error {
	return r.Wait(func(done func(error)) { r.snap.Write(st, done) })
}

// slowWrite starts writing st on a disk whose syncs take 20 ms, so that
// the write stays in flight a while; finish runs the simulator until the
// write calls back and returns its error.
func (r *rig) slowWrite(st *producer.State) (finish func() error) {
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncLatencyMin: 20 * time.Millisecond, SyncLatencyMax: 20 * time.Millisecond})
	var err error
	done := false
	r.snap.Write(st, func(e error) { done, err = true, e })
	return func() error {
		for !done {
			r.Run(time.Millisecond)
		}
		return err
	}
}

func (r *rig) load(start, max int64) (*producer.State, producer.LoadReport) {
	r.T.Helper()
	st, rep, err := r.snap.Load(start, max, r.Env.Now())
	require.NoError(r.T, err)
	return st, rep
}

// files lists the page-cache files of the partition directory.
func (r *rig) files() []string { return inPartDir(r.Proc.Disk().Files()) }

// durableFiles lists the durable files of the partition directory.
func (r *rig) durableFiles() []string { return inPartDir(r.Proc.Disk().DurableFiles()) }

// inPartDir returns the names, within the partition directory, of the
// paths that lie in it.
func inPartDir(paths []string) []string {
	var out []string
	for _, f := range paths {
		if name, ok := strings.CutPrefix(f, partDir+"/"); ok {
			out = append(out, name)
		}
	}
	return out
}

func snapName(offset int64) string { return fmt.Sprintf("%020d.snapshot", offset) }

// stateAt returns a state at offset end with one producer per id in ids,
// each with one batch just below end... spread over distinct offsets.
func stateAt(t tb, end int64, ids ...int64) *producer.State {
	st := producer.NewState(producer.DefaultConfig(), end-int64(len(ids)))
	for _, id := range ids {
		appendBatch(t, st, batchSpec{pid: id, epoch: 1, seq: int32(end), records: 1, ts: sim.DefaultEpoch.UnixMilli()})
	}
	require.Equal(t, end, st.EndOffset())
	return st
}

// lastBatches is the state as a snapshot keeps it: each producer's last
// batch.
func lastBatches(st *producer.State) []producer.Producer {
	ps := st.Producers()
	for i := range ps {
		if n := len(ps[i].Batches); n > 1 {
			ps[i].Batches = ps[i].Batches[n-1:]
		}
	}
	return ps
}

func TestSnapshotWriteIsDurableAndLoads(t *testing.T) {
	r := newRig(t, 1)
	st := stateAt(t, 42, 9, 3, 5)
	require.NoError(t, r.write(st))
	require.Equal(t, []int64{42}, r.snap.Offsets())
	require.Contains(t, r.durableFiles(), snapName(42))
	data, ok := r.Proc.Disk().ReadDurable(partDir + "/" + snapName(42))
	require.True(t, ok)
	require.Equal(t, st.EncodeSnapshot(), data)
	require.Equal(t, []string{snapName(42)}, r.files(), "no temp file is left")

	r.crash()
	require.Equal(t, []int64{42}, r.snap.Offsets())
	latest, ok := r.snap.Latest()
	require.True(t, ok)
	require.Equal(t, int64(42), latest)
	got, rep := r.load(0, 100)
	require.Equal(t, int64(42), rep.Snapshot)
	require.Empty(t, rep.Damaged)
	require.Equal(t, int64(42), got.EndOffset())
	require.Equal(t, lastBatches(st), got.Producers())
}

func TestLoadPicksTheNewestSnapshotAtOrBelow(t *testing.T) {
	r := newRig(t, 2)
	for _, off := range []int64{10, 20, 30} {
		require.NoError(t, r.write(stateAt(t, off, off)))
	}
	for _, tc := range []struct {
		start, max, want int64 // want -1: no snapshot, an empty state at start
	}{
		{0, 100, 30}, {0, 30, 30}, {0, 29, 20}, {0, 20, 20}, {0, 19, 10}, {0, 9, -1},
		{20, 25, 20}, {21, 29, -1}, {21, 100, 30}, {30, 30, 30}, {31, 40, -1},
	} {
		st, rep := r.load(tc.start, tc.max)
		require.Equal(t, tc.want, rep.Snapshot, "%+v", tc)
		if tc.want < 0 {
			require.Equal(t, tc.start, st.EndOffset())
			require.Equal(t, 0, st.Len())
			continue
		}
		require.Equal(t, tc.want, st.EndOffset())
		p, ok := st.Producer(tc.want)
		require.True(t, ok, "the snapshot at %d holds producer %d", tc.want, tc.want)
		require.Equal(t, 1, st.Len(), p)
	}
	_, _, err := r.snap.Load(10, 5, r.Env.Now())
	require.Error(t, err)
}

// corruptFile flips a bit of a file in the page cache.
func corruptFile(t tb, e env.Env, name string, at int64) {
	f, err := e.Disk().Open(name, false)
	require.NoError(t, err)
	coretest.FlipBits(t, f, at, 0x04)
	require.NoError(t, f.Close())
}

func TestLoadSkipsAndDeletesDamagedSnapshots(t *testing.T) {
	r := newRig(t, 3)
	older := stateAt(t, 10, 1)
	require.NoError(t, r.write(older))
	require.NoError(t, r.write(stateAt(t, 20, 2)))
	require.NoError(t, r.write(stateAt(t, 30, 3)))
	corruptFile(t, r.Env, partDir+"/"+snapName(30), 17)
	// A snapshot cut short, as a writer that does not rename would leave it.
	f, err := r.Env.Disk().Open(partDir+"/"+snapName(20), false)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(30))
	require.NoError(t, f.Close())

	st, rep := r.load(0, 100)
	require.Equal(t, int64(10), rep.Snapshot)
	require.Len(t, rep.Damaged, 2)
	require.Equal(t, int64(30), rep.Damaged[0].Offset)
	require.Equal(t, int64(20), rep.Damaged[1].Offset)
	for _, d := range rep.Damaged {
		require.ErrorIs(t, d.Err, producer.ErrCorruptSnapshot)
	}
	require.Equal(t, lastBatches(older), st.Producers())
	require.Equal(t, []int64{10}, r.snap.Offsets())
	require.Equal(t, []string{snapName(10)}, r.files())

	// With the last one damaged too, the state starts empty at the log
	// start, and Load still succeeds.
	corruptFile(t, r.Env, partDir+"/"+snapName(10), 5)
	st, rep = r.load(4, 100)
	require.Equal(t, int64(-1), rep.Snapshot)
	require.Len(t, rep.Damaged, 1)
	require.Equal(t, int64(4), st.EndOffset())
	require.Empty(t, r.snap.Offsets())
}

// TestLoadNeverReturnsAWrongState reads snapshots through a disk that
// flips bits on half of its reads: every Load returns the state written or
// reports that the reads kept failing, never another state, and never
// deletes the good file.
func TestLoadNeverReturnsAWrongState(t *testing.T) {
	loaded, damaged := 0, 0
	for seed := uint64(1); seed <= 30; seed++ {
		r := newRig(t, seed)
		st := stateAt(t, 50, 1, 2, 3, 4, 5, 6, 7, 8)
		require.NoError(t, r.write(st))
		r.Proc.Disk().SetFaults(sim.DiskFaults{BitFlipProbability: 0.5})
		got, rep := r.load(0, 50)
		switch rep.Snapshot {
		case 50:
			loaded++
			require.Equal(t, lastBatches(st), got.Producers())
		default:
			// Reads that never agree prove nothing: the file is kept.
			damaged++
			require.Equal(t, 0, got.Len())
			require.Len(t, rep.Damaged, 1)
			require.ErrorIs(t, rep.Damaged[0].Err, env.ErrIO)
			require.NotErrorIs(t, rep.Damaged[0].Err, producer.ErrCorruptSnapshot)
			require.Equal(t, []int64{50}, r.snap.Offsets())
		}
	}
	t.Logf("loaded %d, judged damaged %d", loaded, damaged)
	require.Positive(t, loaded)
}

func TestCrashBeforeRenameLeavesNoSnapshot(t *testing.T) {
	r := newRig(t, 4)
	require.NoError(t, r.write(stateAt(t, 10, 1)))
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncLatencyMin: 50 * time.Millisecond, SyncLatencyMax: 50 * time.Millisecond})
	called := false
	r.snap.Write(stateAt(t, 20, 2), func(error) { called = true })
	r.Run(10 * time.Millisecond)
	require.False(t, called)
	require.Contains(t, r.files(), snapName(20)+".1.tmp", "the temp file is written, not yet synced")
	r.crash()
	require.Equal(t, []int64{10}, r.snap.Offsets())
	for _, f := range r.files() {
		require.False(t, strings.HasSuffix(f, ".tmp"), "leftover %s", f)
	}
	_, rep := r.load(0, 100)
	require.Equal(t, int64(10), rep.Snapshot)
}

// TestCrashAnywhereInAWrite crashes a write at a random point: afterwards
// the new snapshot is there whole or not at all, the older one is intact,
// nothing is damaged, and a write that reported success survived.
func TestCrashAnywhereInAWrite(t *testing.T) {
	outcomes := map[string]int{}
	for seed := uint64(1); seed <= 60; seed++ {
		r := newRig(t, seed)
		older, newer := stateAt(t, 10, 1), stateAt(t, 20, 1, 2)
		require.NoError(t, r.write(older))
		r.Proc.Disk().SetFaults(sim.DiskFaults{SyncLatencyMin: 5 * time.Millisecond, SyncLatencyMax: 5 * time.Millisecond})
		var result error
		done := false
		r.snap.Write(newer, func(err error) { done, result = true, err })
		r.Run(time.Duration(seed%13) * time.Millisecond)
		r.crash()
		st, rep := r.load(0, 100)
		require.Empty(t, rep.Damaged, "seed %d", seed)
		switch rep.Snapshot {
		case 20:
			require.Equal(t, lastBatches(newer), st.Producers(), "seed %d", seed)
			outcomes["new"]++
		case 10:
			require.False(t, done && result == nil, "seed %d: the write reported success but is gone", seed)
			require.Equal(t, lastBatches(older), st.Producers(), "seed %d", seed)
			outcomes["old"]++
		default:
			t.Fatalf("seed %d: loaded %d", seed, rep.Snapshot)
		}
		for _, f := range r.files() {
			require.False(t, strings.HasSuffix(f, ".tmp"), "seed %d: leftover %s", seed, f)
		}
	}
	t.Logf("outcomes %v", outcomes)
	require.Positive(t, outcomes["new"])
	require.Positive(t, outcomes["old"])
}

func TestWriteFailures(t *testing.T) {
	t.Run("sync", func(t *testing.T) {
		r := newRig(t, 5)
		r.Proc.Disk().SetFaults(sim.DiskFaults{SyncFailProbability: 1})
		err := r.write(stateAt(t, 20, 1))
		require.ErrorIs(t, err, env.ErrIO)
		require.NotErrorIs(t, err, producer.ErrDirectoryFailed)
		require.Empty(t, r.snap.Offsets())
		require.Empty(t, r.files())
	})
	t.Run("no space", func(t *testing.T) {
		r := newRig(t, 6)
		r.Proc.Disk().SetFaults(sim.DiskFaults{CapacityBytes: 20})
		err := r.write(stateAt(t, 20, 1))
		require.ErrorIs(t, err, env.ErrNoSpace)
		require.Empty(t, r.snap.Offsets())
		require.Empty(t, r.files())
		// Space back: the same snapshot is written.
		r.Proc.Disk().SetFaults(sim.DiskFaults{})
		require.NoError(t, r.write(stateAt(t, 20, 1)))
		require.Equal(t, []int64{20}, r.snap.Offsets())
	})
	t.Run("directory sync", func(t *testing.T) {
		r := newRig(t, 7)
		r.wrap = func(e env.Env) env.Env { return failSyncDirEnv{e} }
		r.open()
		err := r.write(stateAt(t, 20, 1))
		require.ErrorIs(t, err, producer.ErrDirectoryFailed)
		require.ErrorIs(t, err, env.ErrIO)
		err = r.Wait(func(done func(error)) { r.snap.DeleteAbove(5, done) })
		require.ErrorIs(t, err, producer.ErrDirectoryFailed)
	})
}

// failSyncDirEnv is an Env whose directory syncs all fail.
type failSyncDirEnv struct{ env.Env }

func (e failSyncDirEnv) Disk() env.Disk { return failSyncDirDisk{e.Env.Disk()} }

type failSyncDirDisk struct{ env.Disk }

func (d failSyncDirDisk) SyncDir(dir string, done func(error)) {
	d.Disk.SyncDir(dir, func(error) { done(fmt.Errorf("injected: %w", env.ErrIO)) })
}

func TestDeleteAboveCancelsWritesAndIsDurable(t *testing.T) {
	r := newRig(t, 8)
	for _, off := range []int64{10, 30, 40} {
		require.NoError(t, r.write(stateAt(t, off, 1)))
	}
	finish := r.slowWrite(stateAt(t, 50, 2))
	require.NoError(t, r.Wait(func(done func(error)) { r.snap.DeleteAbove(30, done) }))
	require.Equal(t, []int64{10, 30}, r.snap.Offsets())
	require.ElementsMatch(t, []string{snapName(10), snapName(30)}, r.durableFiles())
	require.ErrorIs(t, finish(), producer.ErrCanceled)
	require.Equal(t, []string{snapName(10), snapName(30)}, r.files(), "the canceled write left nothing")

	// A new write at the canceled offset is independent of the old one.
	r.snap.Write(stateAt(t, 50, 2), func(error) {})
	require.NoError(t, r.Wait(func(done func(error)) { r.snap.DeleteAbove(-1, done) }))
	require.Empty(t, r.snap.Offsets())
	require.NoError(t, r.write(stateAt(t, 50, 3)))
	require.Equal(t, []int64{50}, r.snap.Offsets())
	require.Equal(t, []string{snapName(50)}, r.files())
}

func TestDeleteAboveAfterRenameCancelsTheWrite(t *testing.T) {
	r := newRig(t, 9)
	finish := r.slowWrite(stateAt(t, 50, 2))
	r.Run(25 * time.Millisecond) // synced and renamed; the directory sync is in flight
	require.Equal(t, []int64{50}, r.snap.Offsets())
	require.NoError(t, r.Wait(func(done func(error)) { r.snap.DeleteAbove(49, done) }))
	require.ErrorIs(t, finish(), producer.ErrCanceled)
	require.Empty(t, r.files())
	r.crash()
	require.Empty(t, r.snap.Offsets())
}

func TestDeleteBelow(t *testing.T) {
	r := newRig(t, 10)
	for _, off := range []int64{10, 20, 30} {
		require.NoError(t, r.write(stateAt(t, off, 1)))
	}
	require.NoError(t, r.snap.DeleteBelow(20))
	require.Equal(t, []int64{20, 30}, r.snap.Offsets())
	require.Equal(t, []string{snapName(20), snapName(30)}, r.files())
	require.NoError(t, r.snap.DeleteBelow(100))
	require.Empty(t, r.snap.Offsets())
	require.Empty(t, r.files())
}

func TestWriteAtAnOffsetOnce(t *testing.T) {
	r := newRig(t, 11)
	st := stateAt(t, 42, 1)
	var errs []error
	r.snap.Write(st, func(err error) { errs = append(errs, err) })
	require.NoError(t, r.Wait(func(done func(error)) { r.snap.Write(st, done) }))
	r.Run(time.Millisecond)
	require.Equal(t, []error{nil}, errs)
	syncs := r.Proc.Disk().Stats().Syncs
	require.NoError(t, r.write(st))
	require.Equal(t, syncs, r.Proc.Disk().Stats().Syncs, "an existing snapshot is not rewritten")
	require.Equal(t, []string{snapName(42)}, r.files())
}

func TestOpenSnapshotsListsOnlySnapshots(t *testing.T) {
	r := newRig(t, 12)
	d := r.Env.Disk()
	for _, name := range []string{
		"00000000000000000000.log", "00000000000000000000.index", "leader-epoch-checkpoint",
		snapName(5), snapName(7) + ".3.tmp", snapName(9) + ".tmp", "garbage.snapshot", "0000000000000000001.snapshot",
		"99999999999999999999.snapshot", // beyond int64
	} {
		f, err := d.Open(partDir+"/"+name, true)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	r.open()
	require.Equal(t, []int64{5}, r.snap.Offsets())
	require.NotContains(t, r.files(), snapName(7)+".3.tmp")
	require.Contains(t, r.files(), snapName(9)+".tmp", "not one of ours: left to core/log")
	require.Contains(t, r.files(), "00000000000000000000.log")

	_, err := producer.OpenSnapshots(r.Env, "data/missing", producer.DefaultConfig())
	require.ErrorIs(t, err, env.ErrNotExist)
	_, err = producer.OpenSnapshots(r.Env, partDir, producer.Config{ExpirationTime: -1})
	require.ErrorIs(t, err, producer.ErrInvalidConfig)
}

func TestClose(t *testing.T) {
	r := newRig(t, 13)
	finish := r.slowWrite(stateAt(t, 50, 2))
	r.snap.Close()
	require.ErrorIs(t, finish(), producer.ErrClosed)
	require.Empty(t, r.files())
	require.ErrorIs(t, r.write(stateAt(t, 60, 1)), producer.ErrClosed)
	require.ErrorIs(t, r.Wait(func(done func(error)) { r.snap.DeleteAbove(0, done) }), producer.ErrClosed)
	require.ErrorIs(t, r.snap.DeleteBelow(0), producer.ErrClosed)
	_, _, err := r.snap.Load(0, 100, r.Env.Now())
	require.ErrorIs(t, err, producer.ErrClosed)
}

func TestExpiredProducersAreDroppedOnLoad(t *testing.T) {
	r := newRig(t, 14)
	st := producer.NewState(producer.Config{ExpirationTime: time.Hour}, 0)
	now := r.Env.Now().UnixMilli()
	appendBatch(t, st, batchSpec{pid: 1, epoch: 0, seq: 0, records: 1, ts: now - 2*time.Hour.Milliseconds()})
	appendBatch(t, st, batchSpec{pid: 2, epoch: 0, seq: 0, records: 1, ts: now})
	s, err := producer.OpenSnapshots(r.Env, partDir, producer.Config{ExpirationTime: time.Hour})
	require.NoError(t, err)
	require.NoError(t, r.Wait(func(done func(error)) { s.Write(st, done) }))
	got, _, err := s.Load(0, 10, r.Env.Now())
	require.NoError(t, err)
	ids := []int64{}
	for _, p := range got.Producers() {
		ids = append(ids, p.ID)
	}
	require.Equal(t, []int64{2}, ids)
	require.Equal(t, time.Hour, got.Config().ExpirationTime)
}
