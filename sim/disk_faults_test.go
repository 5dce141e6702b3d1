package sim

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
)

// TestDiskPageCrashKeepsPagesOutOfOrderWithHoles: under PageCrash, a crash
// keeps unsynced pages in any subset (a later page without an earlier one,
// the gap reading as zeros), partly keeps an overwrite of durable bytes,
// and never alters a byte no unsynced change touched.
func TestDiskPageCrashKeepsPagesOutOfOrderWithHoles(t *testing.T) {
	const durable = 2 * pageBytes
	var holes, partialOverwrites int
	for seed := uint64(0); seed < 80; seed++ {
		r := newDiskRig(t, seed)
		r.p.Disk().SetFaults(DiskFaults{PageCrash: true})
		f := r.open("log")
		r.syncDir("")
		require.NoError(t, f.WriteAt(bytes.Repeat([]byte{'d'}, durable), 0))
		r.sync(f)
		// Overwrite both durable pages, then append three pages.
		require.NoError(t, f.WriteAt(bytes.Repeat([]byte{'o'}, durable), 0))
		for _, c := range []byte{'x', 'y', 'z'} {
			_, err := f.Append(bytes.Repeat([]byte{c}, pageBytes))
			require.NoError(t, err)
		}
		r.restart()
		got, ok := r.read("log")
		require.True(t, ok)
		require.Contains(t, []int{durable, durable + pageBytes, durable + 2*pageBytes, durable + 3*pageBytes}, len(got),
			"the size is one the file had")
		for pg := 0; pg*pageBytes < len(got); pg++ {
			page := got[pg*pageBytes : (pg+1)*pageBytes]
			var allowed []byte
			switch pg {
			case 0, 1:
				allowed = []byte{'d', 'o'}
			default:
				allowed = []byte{0, "xyz"[pg-2]}
			}
			c := page[0]
			require.Contains(t, allowed, c, "page %d", pg)
			require.Equal(t, strings.Repeat(string(c), pageBytes), page, "page %d is whole", pg)
			if pg >= 2 && c == 0 && pg*pageBytes+pageBytes < len(got) && got[len(got)-1] != 0 {
				holes++
			}
		}
		if len(got) >= durable && got[0] != got[pageBytes] {
			partialOverwrites++
		}
	}
	require.NotZero(t, holes, "no hole before a kept page in 80 crashes")
	require.NotZero(t, partialOverwrites, "no partly kept overwrite in 80 crashes")
}

func TestDiskLatentErrorUntilRewritten(t *testing.T) {
	r := newDiskRig(t, 3)
	d := r.p.Disk()
	d.DeclareSurvivable(func(name string) bool { return strings.HasSuffix(name, ".index") })
	idx, log := r.open("0.index"), r.open("0.log")
	for _, f := range []env.File{idx, log} {
		require.NoError(t, f.WriteAt(bytes.Repeat([]byte{1}, 3*pageBytes), 0))
	}
	d.SetFaults(DiskFaults{LatentErrorProbability: 1})
	buf := make([]byte, 10)
	_, err := log.ReadAt(buf, pageBytes)
	require.NoError(t, err, "a file not declared survivable never gets latent errors")
	_, err = idx.ReadAt(buf, pageBytes+5)
	require.ErrorIs(t, err, env.ErrIO)
	d.SetFaults(DiskFaults{})
	_, err = idx.ReadAt(buf, pageBytes+100)
	require.ErrorIs(t, err, env.ErrIO, "the page stays unreadable")
	_, err = idx.ReadAt(buf, 0)
	require.NoError(t, err, "other pages read")

	r.restart()
	idx = r.open("0.index")
	if idx.Size() > pageBytes {
		_, err = idx.ReadAt(buf, pageBytes)
		require.ErrorIs(t, err, env.ErrIO, "the medium keeps the error across a power loss")
	}
	require.NoError(t, idx.WriteAt(bytes.Repeat([]byte{2}, pageBytes-1), pageBytes))
	_, err = idx.ReadAt(buf, pageBytes)
	require.ErrorIs(t, err, env.ErrIO, "a partial write does not repair the page")
	require.NoError(t, idx.WriteAt(bytes.Repeat([]byte{2}, pageBytes), pageBytes))
	_, err = idx.ReadAt(buf, pageBytes)
	require.NoError(t, err, "a whole-page write repairs it")
	require.Equal(t, uint64(1), d.Stats().LatentErrors)

	d.SetFaults(DiskFaults{LatentErrorProbability: 1})
	_, err = idx.ReadAt(buf, 2*pageBytes)
	require.ErrorIs(t, err, env.ErrIO)
	d.SetFaults(DiskFaults{})
	require.NoError(t, idx.Truncate(2*pageBytes))
	require.NoError(t, idx.Truncate(3*pageBytes))
	_, err = idx.ReadAt(buf, 2*pageBytes)
	require.NoError(t, err, "a truncation below the page drops the error")
}

// TestDiskLatentErrorsNarrowed: DeclareLatentSurvivable keeps latent
// sector errors off survivable files it does not name; corruption at
// rest still reaches them.
func TestDiskLatentErrorsNarrowed(t *testing.T) {
	r := newDiskRig(t, 9)
	d := r.p.Disk()
	d.DeclareSurvivable(func(string) bool { return true })
	d.DeclareLatentSurvivable(func(name string) bool { return strings.HasSuffix(name, ".index") })
	idx, log := r.open("0.index"), r.open("0.log")
	r.syncDir("")
	data := bytes.Repeat([]byte{1}, 3*pageBytes)
	d.SetFaults(DiskFaults{LatentErrorProbability: 1, CorruptProbability: 1})
	for _, f := range []env.File{idx, log} {
		require.NoError(t, f.WriteAt(data, 0))
		r.sync(f)
	}
	buf := make([]byte, 10)
	_, err := log.ReadAt(buf, pageBytes)
	require.NoError(t, err, "no latent errors on a file the narrowing leaves out")
	_, err = idx.ReadAt(buf, pageBytes)
	require.ErrorIs(t, err, env.ErrIO)
	d.SetFaults(DiskFaults{})
	require.Equal(t, uint64(2), d.Stats().Corruptions, "both files still get corruption at rest")
}

func TestDiskWriteErrorWritesNothing(t *testing.T) {
	r := newDiskRig(t, 4)
	f := r.open("a")
	r.write(f, "abc")
	r.p.Disk().SetFaults(DiskFaults{WriteErrorProbability: 1})
	_, err := f.Append([]byte("def"))
	require.ErrorIs(t, err, env.ErrIO)
	require.ErrorIs(t, f.WriteAt([]byte("X"), 0), env.ErrIO)
	got, _ := r.read("a")
	require.Equal(t, "abc", got)
	r.p.Disk().SetFaults(DiskFaults{})
	r.write(f, "def")
	r.sync(f)
	got, _ = r.read("a")
	require.Equal(t, "abcdef", got, "the filesystem goes on working")
}

func TestDiskSyncNoSpaceLosesCoveredWrites(t *testing.T) {
	r := newDiskRig(t, 5)
	f := r.open("a")
	r.syncDir("")
	r.write(f, "durable")
	r.sync(f)
	r.write(f, " lost")
	r.p.Disk().SetFaults(DiskFaults{SyncNoSpaceProbability: 1})
	require.ErrorIs(t, r.wait(f.Sync), env.ErrNoSpace)
	r.p.Disk().SetFaults(DiskFaults{})
	r.sync(f)
	got, _ := r.read("a")
	require.Equal(t, "durable lost", got, "the page cache still shows it")
	r.restart()
	got, _ = r.read("a")
	require.Equal(t, "durable", got, "a later Sync does not make it durable")
}

func TestDiskMetadataNoSpace(t *testing.T) {
	r := newDiskRig(t, 6)
	d := r.p.Disk()
	f := r.open("a")
	r.write(f, "0123456789")
	d.SetFaults(DiskFaults{NoSpaceProbability: 1})
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
	d.SetFaults(DiskFaults{CapacityBytes: 10})
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
	r := newDiskRig(t, 7)
	d := r.p.Disk()
	d.DeclareSurvivable(func(name string) bool { return name == "s" })
	s, u := r.open("s"), r.open("u")
	r.syncDir("")
	data := bytes.Repeat([]byte{0x55}, 3000)
	d.SetFaults(DiskFaults{CorruptProbability: 1})
	for _, f := range []env.File{s, u} {
		require.NoError(t, f.WriteAt(data, 0))
		r.sync(f)
	}
	d.SetFaults(DiskFaults{})
	got, _ := r.read("s")
	require.Equal(t, string(data), got, "the page cache is right")
	r.restart()
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
	r := newDiskRig(t, 8)
	d := r.p.Disk()
	d.DeclareSurvivable(func(string) bool { return true })
	f := r.open("s")
	r.syncDir("")
	require.NoError(t, f.WriteAt(bytes.Repeat([]byte{'a'}, 4*pageBytes), 0))
	r.sync(f)
	d.SetFaults(DiskFaults{MisdirectProbability: 1})
	require.NoError(t, f.WriteAt(bytes.Repeat([]byte{'b'}, pageBytes), 2*pageBytes))
	r.sync(f)
	d.SetFaults(DiskFaults{})
	r.restart()
	got, _ := r.read("s")
	require.Len(t, got, 4*pageBytes)
	require.Equal(t, strings.Repeat("a", pageBytes), got[2*pageBytes:3*pageBytes], "the intended page kept its old bytes")
	require.Equal(t, pageBytes, strings.Count(got, "b"), "the write landed whole elsewhere")
	require.Equal(t, uint64(1), d.Stats().Misdirects)
}
