package sim_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/sim"
)

func (r *rig) disk() env.Disk { return r.Env.Disk() }

func (r *rig) open(name string) env.File {
	f, err := r.disk().Open(name, true)
	require.NoError(r.T, err)
	return f
}

func (r *rig) write(f env.File, data string) {
	_, err := f.Append([]byte(data))
	require.NoError(r.T, err)
}

func (r *rig) syncDir(dir string) {
	require.NoError(r.T, r.Wait(func(d func(error)) { r.disk().SyncDir(dir, d) }))
}
func (r *rig) sync(f env.File) { require.NoError(r.T, r.Wait(f.Sync)) }

// read returns a file's current content through a fresh handle, or false
// if it does not exist.
func (r *rig) read(name string) (string, bool) {
	f, err := r.disk().Open(name, false)
	if errors.Is(err, env.ErrNotExist) {
		return "", false
	}
	require.NoError(r.T, err)
	defer f.Close()
	buf := make([]byte, f.Size())
	n, err := f.ReadAt(buf, 0)
	require.NoError(r.T, err)
	return string(buf[:n]), true
}

func TestDiskSyncedDataAndEntriesSurviveCrash(t *testing.T) {
	r := newRig(t, 1)
	require.NoError(t, r.disk().MkdirAll("topic-0"))
	r.syncDir("")
	f := r.open("topic-0/00.log")
	r.write(f, "hello ")
	r.write(f, "world")
	r.sync(f)
	r.syncDir("topic-0")
	r.write(f, "unsynced overwrite is never kept")
	require.NoError(t, f.WriteAt([]byte("J"), 0))

	r.Restart()
	got, ok := r.read("topic-0/00.log")
	require.True(t, ok)
	require.True(t, got == "hello world" || len(got) > len("hello world") && got[:11] == "hello world",
		"synced prefix must survive untouched, got %q", got)
	require.Equal(t, []string{"topic-0/00.log"}, r.Proc.Disk().DurableFiles())
}

func TestDiskSyncIsNeverInlineAndRespectsLatency(t *testing.T) {
	r := newRig(t, 2)
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncLatencyMin: 5 * time.Millisecond, SyncLatencyMax: 7 * time.Millisecond})
	f := r.open("a")
	r.write(f, "x")
	start := r.Sim.Now()
	var at time.Duration
	f.Sync(func(err error) { require.NoError(t, err); at = r.Sim.Now() })
	require.Zero(t, at)
	r.Run(20 * time.Millisecond)
	require.GreaterOrEqual(t, at-start, 5*time.Millisecond)
	require.LessOrEqual(t, at-start, 7*time.Millisecond)
}

func TestDiskSyncCoversOnlyEarlierWrites(t *testing.T) {
	r := newRig(t, 3)
	f := r.open("a")
	r.syncDir("")
	r.write(f, "covered")
	var done bool
	f.Sync(func(err error) { require.NoError(t, err); done = true })
	r.write(f, "-not-covered") // completes before the Sync does
	for !done {
		r.Run(time.Millisecond)
	}
	d, ok := r.Proc.Disk().ReadDurable("a")
	require.True(t, ok)
	require.Equal(t, "covered", string(d))
}

func TestDiskOutOfOrderSyncCompletionsNeverRegress(t *testing.T) {
	r := newRig(t, 4)
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncLatencyMin: time.Millisecond, SyncLatencyMax: 20 * time.Millisecond})
	f := r.open("a")
	r.syncDir("")
	want := ""
	for i := 0; i < 50; i++ {
		s := string(rune('a' + i%26))
		r.write(f, s)
		want += s
		f.Sync(func(err error) { require.NoError(t, err) })
	}
	r.Run(50 * time.Millisecond)
	d, _ := r.Proc.Disk().ReadDurable("a")
	require.Equal(t, want, string(d))
}

func TestDiskSyncCompletionDroppedAfterCrash(t *testing.T) {
	r := newRig(t, 5)
	f := r.open("a")
	r.write(f, "data")
	called := false
	f.Sync(func(error) { called = true })
	r.disk().SyncDir("", func(error) { called = true })
	r.Restart()
	r.Run(time.Second)
	require.False(t, called, "a Sync issued before the crash called back")

	// The old handle is dead; its Sync never calls back either.
	f.Sync(func(error) { called = true })
	r.Run(time.Second)
	require.False(t, called)
	_, err := f.Append([]byte("x"))
	require.ErrorIs(t, err, env.ErrClosed)
}

func TestDiskUnsyncedCreateMayVanishWithSyncedData(t *testing.T) {
	vanished, kept := 0, 0
	for seed := uint64(0); seed < 40; seed++ {
		r := newRig(t, seed)
		f := r.open("seg")
		r.write(f, "synced data")
		r.sync(f)
		r.Restart()
		if got, ok := r.read("seg"); ok {
			require.Equal(t, "synced data", got)
			kept++
		} else {
			vanished++
		}
	}
	require.NotZero(t, vanished, "an un-dir-synced create never vanished")
	require.NotZero(t, kept, "an un-dir-synced create never survived")
}

func TestDiskUndoneRenameLeavesOldNameWithDurableContent(t *testing.T) {
	outcomes := map[string]int{}
	for seed := uint64(0); seed < 40; seed++ {
		r := newRig(t, seed)
		require.NoError(t, r.disk().MkdirAll("a"))
		require.NoError(t, r.disk().MkdirAll("b"))
		f := r.open("a/tmp")
		r.write(f, "snapshot")
		r.sync(f)
		r.syncDir("a")
		r.syncDir("")
		require.NoError(t, r.disk().Rename("a/tmp", "b/final"))
		r.Restart()
		oldC, oldOK := r.read("a/tmp")
		newC, newOK := r.read("b/final")
		require.True(t, oldOK != newOK, "rename must survive whole or not at all (seed %d): old=%v new=%v", seed, oldOK, newOK)
		if oldOK {
			require.Equal(t, "snapshot", oldC)
			outcomes["old"]++
		} else {
			require.Equal(t, "snapshot", newC)
			outcomes["new"]++
		}
	}
	require.Len(t, outcomes, 2, "both outcomes of an unsynced rename should occur: %v", outcomes)
}

func TestDiskRenameDurableAfterSyncDirOfDestination(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		r := newRig(t, seed)
		require.NoError(t, r.disk().MkdirAll("a"))
		require.NoError(t, r.disk().MkdirAll("b"))
		r.syncDir("")
		f := r.open("a/x")
		r.write(f, "x")
		r.sync(f)
		r.syncDir("a")
		require.NoError(t, r.disk().Rename("a/x", "b/x"))
		r.syncDir("b")
		require.Equal(t, []string{"b/x"}, r.Proc.Disk().DurableFiles())
		r.Restart()
		_, ok := r.read("b/x")
		require.True(t, ok)
		_, ok = r.read("a/x")
		require.False(t, ok)
	}
}

func TestDiskFailedSyncLosesDataEvenAfterLaterSuccess(t *testing.T) {
	r := newRig(t, 6)
	f := r.open("a")
	r.syncDir("")
	r.write(f, "durable|")
	r.sync(f)

	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncFailProbability: 1})
	r.write(f, "lost")
	err := r.Wait(f.Sync)
	require.ErrorIs(t, err, env.ErrIO)
	got, _ := r.read("a")
	require.Equal(t, "durable|lost", got, "the page cache still shows lost writes")

	r.Proc.Disk().SetFaults(sim.DiskFaults{})
	r.write(f, "|later")
	r.sync(f)
	d, _ := r.Proc.Disk().ReadDurable("a")
	require.Equal(t, "durable|\x00\x00\x00\x00|later", string(d), "lost bytes never became durable")

	r.Restart()
	got, _ = r.read("a")
	require.Equal(t, "durable|\x00\x00\x00\x00|later", got)
	require.Equal(t, uint64(1), r.Proc.Disk().Stats().FailedSyncs)
}

// failSyncDir makes one SyncDir of dir fail, which fails the filesystem.
func (r *rig) failSyncDir(dir string) {
	d := r.Proc.Disk()
	faults := d.Faults()
	d.SetFaults(sim.DiskFaults{SyncDirFailProbability: 1})
	require.ErrorIs(r.T, r.Wait(func(done func(error)) { r.disk().SyncDir(dir, done) }), env.ErrIO)
	d.SetFaults(faults)
	require.True(r.T, d.Failed(), "a failed SyncDir fails the filesystem")
}

// requireRefusesChanges checks that every change, Sync and SyncDir fails
// with env.ErrIO and changes nothing, and that reads still work: a failed
// filesystem (ext4's aborted journal, XFS's shutdown).
func (r *rig) requireRefusesChanges(f env.File, name, content string) {
	t := r.T
	d := r.Proc.Disk()
	files, used := d.Files(), d.Stats().UsedBytes
	_, err := r.disk().Open("new", true)
	require.ErrorIs(t, err, env.ErrIO, "create")
	require.ErrorIs(t, f.WriteAt([]byte("x"), 0), env.ErrIO, "WriteAt")
	_, err = f.Append([]byte("x"))
	require.ErrorIs(t, err, env.ErrIO, "Append")
	require.ErrorIs(t, f.Truncate(0), env.ErrIO, "Truncate")
	require.ErrorIs(t, r.disk().Rename(name, "renamed"), env.ErrIO, "Rename")
	require.ErrorIs(t, r.disk().Remove(name), env.ErrIO, "Remove")
	require.ErrorIs(t, r.disk().MkdirAll("newdir/sub"), env.ErrIO, "MkdirAll")
	require.ErrorIs(t, r.Wait(f.Sync), env.ErrIO, "Sync")
	require.ErrorIs(t, r.Wait(func(done func(error)) { r.disk().SyncDir("", done) }), env.ErrIO, "SyncDir")
	require.Equal(t, files, d.Files(), "a refused change changed the directory")
	require.Equal(t, used, d.Stats().UsedBytes)

	// Reads keep working: the page cache, lost changes included.
	got, ok := r.read(name)
	require.True(t, ok, "Open of an existing file")
	require.Equal(t, content, got)
	buf := make([]byte, len(content))
	n, err := f.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, content, string(buf[:n]))
	require.Equal(t, int64(len(content)), f.Size())
	names, err := r.disk().List("")
	require.NoError(t, err)
	require.Contains(t, names, name)
	require.NoError(t, r.disk().MkdirAll(""), "MkdirAll of an existing directory changes nothing")
}

// TestDiskFailedSyncDirFailsTheFilesystem: after a failed SyncDir every
// change fails with env.ErrIO, even through handles opened before, while
// reads go on showing the page cache; the lost entries never become
// durable.
func TestDiskFailedSyncDirFailsTheFilesystem(t *testing.T) {
	r := newRig(t, 7)
	require.NoError(t, r.disk().MkdirAll("d"))
	r.syncDir("")
	f := r.open("a")
	r.write(f, "synced")
	r.sync(f)
	r.open("d/b") // an unsynced change of another directory
	r.failSyncDir("")
	r.requireRefusesChanges(f, "a", "synced")
	require.Equal(t, []string{"a", "d/b"}, r.Proc.Disk().Files(), "the page cache still shows lost entries")
	require.Empty(t, r.Proc.Disk().DurableFiles(), "lost entries never become durable")
	st := r.Proc.Disk().Stats()
	require.Equal(t, uint64(1), st.FSFailures)
	require.Equal(t, uint64(1), st.FailedSyncs, "only the injected failure counts as one")
	require.NotZero(t, st.Refused)

	r.Restart()
	require.Equal(t, []string{"d/"}, r.mustList(""), "a power loss keeps only durable entries")
	require.Empty(t, r.mustList("d"), "the journal aborted: no unsynced change of any directory survives")
}

// TestDiskFailedSyncDirFailsSyncsInFlight: a Sync issued before the
// filesystem failed and completing after fails too, and its writes are
// lost.
func TestDiskFailedSyncDirFailsSyncsInFlight(t *testing.T) {
	r := newRig(t, 3)
	f := r.durableThenUnsynced("a", "durable|", "in flight")
	d := r.Proc.Disk()
	d.SetFaults(sim.DiskFaults{SyncLatencyMin: 10 * time.Millisecond, SyncLatencyMax: 10 * time.Millisecond})
	var syncErr error
	synced := false
	f.Sync(func(err error) { synced, syncErr = true, err })
	d.SetFaults(sim.DiskFaults{SyncLatencyMin: time.Millisecond, SyncLatencyMax: time.Millisecond, SyncDirFailProbability: 1})
	var dirErr error
	r.disk().SyncDir("", func(err error) { dirErr = err })
	r.Run(20 * time.Millisecond)
	require.ErrorIs(t, dirErr, env.ErrIO)
	require.True(t, synced)
	require.ErrorIs(t, syncErr, env.ErrIO, "a Sync completing after the filesystem failed fails")
	durable, _ := d.ReadDurable("a")
	require.Equal(t, "durable|", string(durable))
}

// TestDiskFailedFilesystemSurvivesKill: a process restart with the machine
// up finds the filesystem still failed, as after a journal abort until the
// machine reboots.
func TestDiskFailedFilesystemSurvivesKill(t *testing.T) {
	r := newRig(t, 8)
	f := r.open("a")
	r.write(f, "page cache")
	r.failSyncDir("")
	r.Proc.Kill()
	r.Proc.Start()
	r.Run(0)
	require.True(t, r.Proc.Disk().Failed(), "a kill does not clear a failed filesystem")
	f, err := r.disk().Open("a", false)
	require.NoError(t, err)
	r.requireRefusesChanges(f, "a", "page cache")
}

// TestDiskPowerCycleClearsFailedFilesystem: a power loss, whether the
// process was up (Crash) or already killed (PowerCycle), rebuilds the page
// cache from what is durable and the filesystem works again.
func TestDiskPowerCycleClearsFailedFilesystem(t *testing.T) {
	for _, how := range []string{"crash", "kill then power cycle", "power cycle"} {
		t.Run(how, func(t *testing.T) {
			r := newRig(t, 9)
			r.durableThenUnsynced("a", "synced", "|lost")
			r.open("b")
			r.failSyncDir("")
			switch how {
			case "crash":
				r.Proc.Crash()
			case "kill then power cycle":
				r.Proc.Kill()
				require.True(t, r.Proc.Disk().Failed())
				r.Proc.PowerCycle()
			default:
				r.Proc.PowerCycle()
			}
			require.False(t, r.Proc.Up(), "a power cycle leaves the process down")
			require.False(t, r.Proc.Disk().Failed())
			r.Proc.Start()
			r.Run(0)
			require.Equal(t, []string{"a"}, r.mustList(""))
			got, _ := r.read("a")
			require.True(t, got == "synced" || got == "synced|lost", "got %q", got)
			g := r.open("c")
			r.write(g, "works again")
			r.sync(g)
			r.syncDir("")
			require.Equal(t, []string{"a", "c"}, r.Proc.Disk().DurableFiles())
		})
	}
}

// TestDiskFailedFileSyncKeepsFilesystemWorking: a failed file Sync loses
// its writes (fsyncgate) but does not fail the filesystem.
func TestDiskFailedFileSyncKeepsFilesystemWorking(t *testing.T) {
	r := newRig(t, 10)
	f := r.open("a")
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncFailProbability: 1})
	r.write(f, "lost")
	require.ErrorIs(t, r.Wait(f.Sync), env.ErrIO)
	r.syncDir("") // SyncFailProbability is about file Syncs only
	r.Proc.Disk().SetFaults(sim.DiskFaults{})
	require.False(t, r.Proc.Disk().Failed())
	r.write(f, "more")
	r.sync(f)
	r.open("b")
	r.syncDir("")
	require.Equal(t, []string{"a", "b"}, r.Proc.Disk().DurableFiles())
}

func (r *rig) mustList(dir string) []string {
	names, err := r.disk().List(dir)
	require.NoError(r.T, err)
	return names
}

func TestDiskBitFlipOnlyInReturnedBytes(t *testing.T) {
	r := newRig(t, 8)
	f := r.open("a")
	data := bytes.Repeat([]byte{0x55}, 4096)
	require.NoError(t, f.WriteAt(data, 0))
	r.Proc.Disk().SetFaults(sim.DiskFaults{BitFlipProbability: 1})
	buf := make([]byte, len(data))
	n, err := f.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, len(data), n)
	diff := 0
	for i := range buf {
		for x := buf[i] ^ data[i]; x != 0; x &= x - 1 {
			diff++
		}
	}
	require.Equal(t, 1, diff, "exactly one bit flips")
	stored, _ := r.Proc.Disk().ReadFile("a")
	require.Equal(t, data, stored, "the stored data is never altered")
	require.Equal(t, uint64(1), r.Proc.Disk().Stats().BitFlips)
}

func TestDiskNoSpace(t *testing.T) {
	r := newRig(t, 9)
	r.Proc.Disk().SetFaults(sim.DiskFaults{CapacityBytes: 1000})
	f := r.open("a")
	g := r.open("b")
	require.NoError(t, f.WriteAt(make([]byte, 600), 0))
	_, err := g.Append(make([]byte, 401))
	require.ErrorIs(t, err, env.ErrNoSpace)
	require.Zero(t, g.Size(), "nothing of a failed write is visible")
	require.NoError(t, f.WriteAt(make([]byte, 600), 0), "an overwrite needs no space")
	_, err = g.Append(make([]byte, 400))
	require.NoError(t, err)
	require.ErrorIs(t, f.WriteAt([]byte{1}, 600), env.ErrNoSpace)

	// Removing a file frees its space once its last handle closes.
	require.NoError(t, r.disk().Remove("b"))
	require.ErrorIs(t, f.WriteAt([]byte{1}, 600), env.ErrNoSpace)
	require.NoError(t, g.Close())
	require.NoError(t, f.WriteAt([]byte{1}, 600))
	require.Equal(t, int64(601), r.Proc.Disk().Stats().UsedBytes)
}

func TestDiskStallAddsLatency(t *testing.T) {
	r := newRig(t, 10)
	r.Proc.Disk().SetFaults(sim.DiskFaults{StallProbability: 1, StallLatency: 300 * time.Millisecond})
	f := r.open("a")
	start := r.Sim.Now()
	r.sync(f)
	require.GreaterOrEqual(t, r.Sim.Now()-start, 300*time.Millisecond)
	require.Equal(t, uint64(1), r.Proc.Disk().Stats().Stalls)
}

func TestDiskTornTailIsSectorAlignedPrefixOfAppends(t *testing.T) {
	const durable = 700
	torn := 0
	for seed := uint64(0); seed < 60; seed++ {
		r := newRig(t, seed)
		f := r.open("log")
		r.syncDir("")
		require.NoError(t, f.WriteAt(bytes.Repeat([]byte{'d'}, durable), 0))
		r.sync(f)
		// Three unsynced appends with distinct bytes.
		for _, c := range []byte{'x', 'y', 'z'} {
			_, err := f.Append(bytes.Repeat([]byte{c}, 900))
			require.NoError(t, err)
		}
		r.Restart()
		got, ok := r.read("log")
		require.True(t, ok)
		require.GreaterOrEqual(t, len(got), durable)
		require.Equal(t, string(bytes.Repeat([]byte{'d'}, durable)), got[:durable])
		if len(got) == durable {
			continue
		}
		torn++
		ends := map[int]bool{durable + 900: true, durable + 1800: true, durable + 2700: true}
		require.True(t, len(got)%sim.SectorBytes == 0 || ends[len(got)], "cut %d is neither a sector boundary nor a write end", len(got))
		want := string(bytes.Repeat([]byte{'x'}, 900)) + string(bytes.Repeat([]byte{'y'}, 900)) + string(bytes.Repeat([]byte{'z'}, 900))
		require.Equal(t, want[:len(got)-durable], got[durable:], "unsynced bytes survive in order, without holes")
	}
	require.NotZero(t, torn, "no torn tail in 60 crashes")
}

func TestDiskUnsyncedOverwriteAndTruncateNeverSurvive(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		r := newRig(t, seed)
		f := r.open("a")
		r.syncDir("")
		r.write(f, "0123456789")
		r.sync(f)
		require.NoError(t, f.Truncate(4))
		r.write(f, "abcdefghijklmnop")
		r.Restart()
		got, _ := r.read("a")
		require.Equal(t, "0123456789", got)
	}
}

func TestDiskRemoveKeepsOpenHandleWorking(t *testing.T) {
	r := newRig(t, 11)
	f := r.open("a")
	r.write(f, "abc")
	require.NoError(t, r.disk().Remove("a"))
	_, ok := r.read("a")
	require.False(t, ok)
	r.write(f, "def")
	buf := make([]byte, 6)
	n, err := f.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "abcdef", string(buf[:n]))
	r.sync(f)
	require.NoError(t, f.Close())
	require.ErrorIs(t, f.Close(), env.ErrClosed)
}

func TestDiskReadAtEOF(t *testing.T) {
	r := newRig(t, 12)
	f := r.open("a")
	r.write(f, "abc")
	buf := make([]byte, 5)
	n, err := f.ReadAt(buf, 1)
	require.Equal(t, 2, n)
	require.ErrorIs(t, err, io.EOF)
	n, err = f.ReadAt(buf, 3)
	require.Zero(t, n)
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, f.WriteAt([]byte("z"), 5))
	n, err = f.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "abc\x00\x00", string(buf[:n]), "a gap reads as zeros")
	require.NoError(t, f.Truncate(2))
	require.NoError(t, f.Truncate(4))
	n, _ = f.ReadAt(buf, 0)
	require.Equal(t, "ab\x00\x00", string(buf[:n]), "truncation clears what it drops")
}

func TestDiskDirectoryOperations(t *testing.T) {
	r := newRig(t, 13)
	d := r.disk()
	require.NoError(t, d.MkdirAll("a/b/c"))
	require.NoError(t, d.MkdirAll("a/b"))
	r.open("a/f")
	names, err := d.List("a")
	require.NoError(t, err)
	require.Equal(t, []string{"b/", "f"}, names)
	names, err = d.List("")
	require.NoError(t, err)
	require.Equal(t, []string{"a/"}, names)

	_, err = d.Open("a/b", true)
	require.ErrorIs(t, err, env.ErrExist, "a directory is not a file")
	_, err = d.Open("missing/f", true)
	require.ErrorIs(t, err, env.ErrNotExist)
	_, err = d.Open("a/f/g", true)
	require.ErrorIs(t, err, env.ErrNotExist)
	_, err = d.Open("a/nope", false)
	require.ErrorIs(t, err, env.ErrNotExist)
	require.ErrorIs(t, d.Remove("a/b"), env.ErrExist, "not empty")
	require.ErrorIs(t, d.MkdirAll("a/f/x"), env.ErrExist)
	require.ErrorIs(t, d.Rename("a", "a/b/c/a"), env.ErrExist, "into itself")
	require.ErrorIs(t, d.Rename("a/f", "a/b"), env.ErrExist, "file over directory")
	require.ErrorIs(t, d.Rename("a/nope", "a/x"), env.ErrNotExist)
	require.NoError(t, d.Remove("a/b/c"))
	require.NoError(t, d.Rename("a/f", "a/b/g"))
	names, _ = d.List("a/b/")
	require.Equal(t, []string{"g"}, names)
	_, err = d.List("a/b/g")
	require.ErrorIs(t, err, env.ErrNotExist)
	require.ErrorIs(t, r.Wait(func(done func(error)) { d.SyncDir("zzz", done) }), env.ErrNotExist)

	for _, bad := range []string{"/abs", "a/../b", "./a", "a//b", "..", ""} {
		_, err := d.Open(bad, true)
		require.ErrorIs(t, err, env.ErrNotExist, "path %q", bad)
	}
	require.ErrorIs(t, d.Remove(""), env.ErrNotExist, "the root cannot be removed")
}

func TestDiskCrashIsDeterministic(t *testing.T) {
	outcome := func() []string {
		r := newRig(t, 99)
		var out []string
		for round := 0; round < 5; round++ {
			for i, name := range []string{"a", "b", "c"} {
				f := r.open(name)
				for j := 0; j <= i+round; j++ {
					r.write(f, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
				}
				f.Sync(func(error) {})
			}
			r.disk().SyncDir("", func(error) {})
			r.Run(time.Duration(round) * 300 * time.Microsecond)
			r.Restart()
			for _, name := range r.Proc.Disk().Files() {
				c, _ := r.Proc.Disk().ReadFile(name)
				out = append(out, name, string(c))
			}
		}
		return out
	}
	require.Equal(t, outcome(), outcome())
}

// TestDiskLongLogIsCheap appends an 8 MiB log in 4 KiB writes with a Sync
// after each (2048 syncs): the write log must keep this linear.
func TestDiskLongLogIsCheap(t *testing.T) {
	r := newRig(t, 14)
	f := r.open("log")
	chunk := bytes.Repeat([]byte{7}, 4096)
	for i := 0; i < 2048; i++ {
		_, err := f.Append(chunk)
		require.NoError(t, err)
		f.Sync(func(err error) { require.NoError(t, err) })
		if i%16 == 0 {
			r.Run(time.Millisecond)
		}
	}
	r.Run(10 * time.Millisecond)
	st := r.Proc.Disk().Stats()
	require.Equal(t, uint64(8<<20), st.BytesSynced)
	require.Equal(t, uint64(2048), st.Syncs)
}

// TestDiskKillKeepsPageCache: a process kill (the machine stays up) keeps
// every write, synced or not, and closes the handles the incarnation left
// open (an unlinked open file's space is freed); unsynced data is still
// not durable, so a later power loss can lose it.
func TestDiskKillKeepsPageCache(t *testing.T) {
	r := newRig(t, 1)
	f := r.open("a.log")
	r.write(f, "synced ")
	r.sync(f)
	r.syncDir("")
	r.write(f, "unsynced")
	g := r.open("gone.tmp")
	r.write(g, "0123456789")
	require.NoError(t, r.disk().Remove("gone.tmp")) // unlinked while open
	usedBefore := r.Proc.Disk().Stats().UsedBytes

	r.Proc.Kill()
	r.Proc.Start()
	r.Run(0)
	got, ok := r.read("a.log")
	require.True(t, ok)
	require.Equal(t, "synced unsynced", got, "a kill loses nothing written")
	require.Equal(t, usedBefore-10, r.Proc.Disk().Stats().UsedBytes, "the unlinked file's space is freed once its handle is closed")
	_, err := f.ReadAt(make([]byte, 1), 0)
	require.ErrorIs(t, err, env.ErrClosed, "a handle of the killed incarnation is dead")

	r.Restart() // now a power loss: the unsynced tail may go
	got, ok = r.read("a.log")
	require.True(t, ok)
	require.True(t, len(got) >= len("synced ") && got[:7] == "synced ", "the synced prefix survives, got %q", got)
}
