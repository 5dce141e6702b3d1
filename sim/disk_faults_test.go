package sim_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/sim"
)

// TestDiskPageCrashKeepsPagesOutOfOrderWithHoles: under PageCrash, a crash
// keeps unsynced pages in any subset (a later page without an earlier one,
// the gap reading as zeros), partly keeps an overwrite of durable bytes,
// and never alters a byte no unsynced change touched.
func TestDiskPageCrashKeepsPagesOutOfOrderWithHoles(t *testing.T) {
	const durable = 2 * sim.PageBytes
	var holes, partialOverwrites int
	for seed := uint64(0); seed < 80; seed++ {
		r := newRig(t, seed)
		r.Proc.Disk().SetFaults(sim.DiskFaults{PageCrash: true})
		f := r.open("log")
		r.syncDir("")
		require.NoError(t, f.WriteAt(bytes.Repeat([]byte{'d'}, durable), 0))
		r.sync(f)
		// Overwrite both durable pages, then append three pages.
		require.NoError(t, f.WriteAt(bytes.Repeat([]byte{'o'}, durable), 0))
		for _, c := range []byte{'x', 'y', 'z'} {
			_, err := f.Append(bytes.Repeat([]byte{c}, sim.PageBytes))
			require.NoError(t, err)
		}
		r.Restart()
		got, ok := r.read("log")
		require.True(t, ok)
		require.Contains(t, []int{durable, durable + sim.PageBytes, durable + 2*sim.PageBytes, durable + 3*sim.PageBytes}, len(got),
			"the size is one the file had")
		for pg := 0; pg*sim.PageBytes < len(got); pg++ {
			page := got[pg*sim.PageBytes : (pg+1)*sim.PageBytes]
			var allowed []byte
			switch pg {
			case 0, 1:
				allowed = []byte{'d', 'o'}
			default:
				allowed = []byte{0, "xyz"[pg-2]}
			}
			c := page[0]
			require.Contains(t, allowed, c, "page %d", pg)
			require.Equal(t, strings.Repeat(string(c), sim.PageBytes), page, "page %d is whole", pg)
			if pg >= 2 && c == 0 && pg*sim.PageBytes+sim.PageBytes < len(got) && got[len(got)-1] != 0 {
				holes++
			}
		}
		if len(got) >= durable && got[0] != got[sim.PageBytes] {
			partialOverwrites++
		}
	}
	require.NotZero(t, holes, "no hole before a kept page in 80 crashes")
	require.NotZero(t, partialOverwrites, "no partly kept overwrite in 80 crashes")
}

func TestDiskLatentErrorUntilRewritten(t *testing.T) {
	r := newRig(t, 3)
	d := r.Proc.Disk()
	d.DeclareSurvivable(func(name string) bool { return strings.HasSuffix(name, ".index") })
	idx, log := r.open("0.index"), r.open("0.log")
	for _, f := range []env.File{idx, log} {
		require.NoError(t, f.WriteAt(bytes.Repeat([]byte{1}, 3*sim.PageBytes), 0))
	}
	d.SetFaults(sim.DiskFaults{LatentErrorProbability: 1})
	buf := make([]byte, 10)
	_, err := log.ReadAt(buf, sim.PageBytes)
	require.NoError(t, err, "a file not declared survivable never gets latent errors")
	_, err = idx.ReadAt(buf, sim.PageBytes+5)
	require.ErrorIs(t, err, env.ErrIO)
	d.SetFaults(sim.DiskFaults{})
	_, err = idx.ReadAt(buf, sim.PageBytes+100)
	require.ErrorIs(t, err, env.ErrIO, "the page stays unreadable")
	_, err = idx.ReadAt(buf, 0)
	require.NoError(t, err, "other pages read")

	r.Restart()
	idx = r.open("0.index")
	if idx.Size() > sim.PageBytes {
		_, err = idx.ReadAt(buf, sim.PageBytes)
		require.ErrorIs(t, err, env.ErrIO, "the medium keeps the error across a power loss")
	}
	require.NoError(t, idx.WriteAt(bytes.Repeat([]byte{2}, sim.PageBytes-1), sim.PageBytes))
	_, err = idx.ReadAt(buf, sim.PageBytes)
	require.ErrorIs(t, err, env.ErrIO, "a partial write does not repair the page")
	require.NoError(t, idx.WriteAt(bytes.Repeat([]byte{2}, sim.PageBytes), sim.PageBytes))
	_, err = idx.ReadAt(buf, sim.PageBytes)
	require.NoError(t, err, "a whole-page write repairs it")
	require.Equal(t, uint64(1), d.Stats().LatentErrors)

	d.SetFaults(sim.DiskFaults{LatentErrorProbability: 1})
	_, err = idx.ReadAt(buf, 2*sim.PageBytes)
	require.ErrorIs(t, err, env.ErrIO)
	d.SetFaults(sim.DiskFaults{})
	require.NoError(t, idx.Truncate(2*sim.PageBytes))
	require.NoError(t, idx.Truncate(3*sim.PageBytes))
	_, err = idx.ReadAt(buf, 2*sim.PageBytes)
	require.NoError(t, err, "a truncation below the page drops the error")
}

// TestDiskLatentErrorsNarrowed: DeclareLatentSurvivable keeps latent
// sector errors off survivable files it does not name; corruption at
// rest still reaches them.
func TestDiskLatentErrorsNarrowed(t *testing.T) {
	r := newRig(t, 9)
	d := r.Proc.Disk()
	d.DeclareSurvivable(func(string) bool { return true })
	d.DeclareLatentSurvivable(func(name string) bool { return strings.HasSuffix(name, ".index") })
	idx, log := r.open("0.index"), r.open("0.log")
	r.syncDir("")
	data := bytes.Repeat([]byte{1}, 3*sim.PageBytes)
	d.SetFaults(sim.DiskFaults{LatentErrorProbability: 1, CorruptProbability: 1})
	for _, f := range []env.File{idx, log} {
		require.NoError(t, f.WriteAt(data, 0))
		r.sync(f)
	}
	buf := make([]byte, 10)
	_, err := log.ReadAt(buf, sim.PageBytes)
	require.NoError(t, err, "no latent errors on a file the narrowing leaves out")
	_, err = idx.ReadAt(buf, sim.PageBytes)
	require.ErrorIs(t, err, env.ErrIO)
	d.SetFaults(sim.DiskFaults{})
	require.Equal(t, uint64(2), d.Stats().Corruptions, "both files still get corruption at rest")
}

func TestDiskWriteErrorWritesNothing(t *testing.T) {
	r := newRig(t, 4)
	f := r.open("a")
	r.write(f, "abc")
	r.Proc.Disk().SetFaults(sim.DiskFaults{WriteErrorProbability: 1})
	_, err := f.Append([]byte("def"))
	require.ErrorIs(t, err, env.ErrIO)
	require.ErrorIs(t, f.WriteAt([]byte("X"), 0), env.ErrIO)
	got, _ := r.read("a")
	require.Equal(t, "abc", got)
	r.Proc.Disk().SetFaults(sim.DiskFaults{})
	r.write(f, "def")
	r.sync(f)
	got, _ = r.read("a")
	require.Equal(t, "abcdef", got, "the filesystem goes on working")
}

func TestDiskSyncNoSpaceLosesCoveredWrites(t *testing.T) {
	r := newRig(t, 5)
	f := r.durableThenUnsynced("a", "durable", " lost")
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncNoSpaceProbability: 1})
	require.ErrorIs(t, r.Wait(f.Sync), env.ErrNoSpace)
	r.Proc.Disk().SetFaults(sim.DiskFaults{})
	r.sync(f)
	got, _ := r.read("a")
	require.Equal(t, "durable lost", got, "the page cache still shows it")
	r.Restart()
	got, _ = r.read("a")
	require.Equal(t, "durable", got, "a later Sync does not make it durable")
}

func TestDiskMetadataNoSpace(t *testing.T) {
	r := newRig(t, 6)
	d := r.Proc.Disk()
	f := r.open("a")
	r.write(f, "0123456789")
	d.SetFaults(sim.DiskFaults{NoSpaceProbability: 1})
	_, err := r.disk().Open("b", true)
	require.ErrorIs(t, err, env.ErrNoSpace)
	require.ErrorIs(t, r.disk().MkdirAll("dir"), env.ErrNoSpace)
	require.ErrorIs(t, r.disk().Rename("a", "c"), env.ErrNoSpace)
	require.ErrorIs(t, f.Truncate(3), env.ErrNoSpace)
	require.Equal(t, []string{"a"}, r.mustList(""), "nothing changed")
	require.Equal(t, int64(10), f.Size())
	g, err := r.disk().Open("a", true)
	require.NoError(t, err, "opening an existing file needs no block")
	require.NoError(t, g.Close())
	require.NoError(t, r.disk().Remove("a"), "a removal frees space, never needs it")

	// A full disk refuses new entries too.
	d.SetFaults(sim.DiskFaults{CapacityBytes: 10})
	_, err = r.disk().Open("b", true)
	require.ErrorIs(t, err, env.ErrNoSpace, "the removed file is still open")
	require.NoError(t, f.Close())
	_, err = r.disk().Open("b", true)
	require.NoError(t, err)
}

// TestDiskCorruptionAtRestShowsAfterPowerLoss: a corrupting Sync leaves the
// page cache right; the flipped bit appears once a power loss rebuilds it
// from the medium, and only in a file declared survivable.
func TestDiskCorruptionAtRestShowsAfterPowerLoss(t *testing.T) {
	r := newRig(t, 7)
	d := r.Proc.Disk()
	d.DeclareSurvivable(func(name string) bool { return name == "s" })
	s, u := r.open("s"), r.open("u")
	r.syncDir("")
	data := bytes.Repeat([]byte{0x55}, 3000)
	d.SetFaults(sim.DiskFaults{CorruptProbability: 1})
	for _, f := range []env.File{s, u} {
		require.NoError(t, f.WriteAt(data, 0))
		r.sync(f)
	}
	d.SetFaults(sim.DiskFaults{})
	got, _ := r.read("s")
	require.Equal(t, string(data), got, "the page cache is right")
	r.Restart()
	got, _ = r.read("u")
	require.Equal(t, string(data), got, "a file not declared survivable is never damaged")
	got, _ = r.read("s")
	diff := 0
	for i := range got {
		for x := got[i] ^ data[i]; x != 0; x &= x - 1 {
			diff++
		}
	}
	require.Equal(t, 1, diff, "one bit flipped at rest")
	require.Equal(t, uint64(1), d.Stats().Corruptions)
}

// TestDiskMisdirectedWrite: a misdirected write leaves its own range as it
// was and lands on another page of the file.
func TestDiskMisdirectedWrite(t *testing.T) {
	r := newRig(t, 8)
	d := r.Proc.Disk()
	d.DeclareSurvivable(func(string) bool { return true })
	f := r.open("s")
	r.syncDir("")
	require.NoError(t, f.WriteAt(bytes.Repeat([]byte{'a'}, 4*sim.PageBytes), 0))
	r.sync(f)
	d.SetFaults(sim.DiskFaults{MisdirectProbability: 1})
	require.NoError(t, f.WriteAt(bytes.Repeat([]byte{'b'}, sim.PageBytes), 2*sim.PageBytes))
	r.sync(f)
	d.SetFaults(sim.DiskFaults{})
	r.Restart()
	got, _ := r.read("s")
	require.Len(t, got, 4*sim.PageBytes)
	require.Equal(t, strings.Repeat("a", sim.PageBytes), got[2*sim.PageBytes:3*sim.PageBytes], "the intended page kept its old bytes")
	require.Equal(t, sim.PageBytes, strings.Count(got, "b"), "the write landed whole elsewhere")
	require.Equal(t, uint64(1), d.Stats().Misdirects)
}
