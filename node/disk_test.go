package node

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
)

func newTestDisk(t *testing.T) (*Disk, *Loop) {
	t.Helper()
	l := startLoop(t)
	d, err := NewDisk(t.TempDir(), l, 0)
	require.NoError(t, err)
	t.Cleanup(d.wait)
	return d, l
}

// syncFile runs f.Sync and waits for its completion on the loop.
func syncFile(t *testing.T, l *Loop, f env.File) error {
	t.Helper()
	done := make(chan error, 1)
	onLoop(t, l, func() { f.Sync(func(err error) { done <- err }) })
	return waitFor(t, done, "sync")
}

func syncDirOf(t *testing.T, l *Loop, d *Disk, dir string) error {
	t.Helper()
	done := make(chan error, 1)
	onLoop(t, l, func() { d.SyncDir(dir, func(err error) { done <- err }) })
	return waitFor(t, done, "syncdir")
}

func TestDiskWriteReadSync(t *testing.T) {
	d, l := newTestDisk(t)
	require.NoError(t, d.MkdirAll("topic-0"))
	f, err := d.Open("topic-0/00000000000000000000.log", true)
	require.NoError(t, err)
	require.Equal(t, "topic-0/00000000000000000000.log", f.Name())
	require.Equal(t, int64(0), f.Size())

	off, err := f.Append([]byte("hello "))
	require.NoError(t, err)
	require.Equal(t, int64(0), off)
	off, err = f.Append([]byte("world"))
	require.NoError(t, err)
	require.Equal(t, int64(6), off)
	require.Equal(t, int64(11), f.Size())

	// A gap reads as zeros.
	require.NoError(t, f.WriteAt([]byte("!"), 13))
	buf := make([]byte, 14)
	n, err := f.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, 14, n)
	require.Equal(t, []byte("hello world\x00\x00!"), buf)

	// Short reads at the end report io.EOF, like io.ReaderAt.
	n, err = f.ReadAt(make([]byte, 10), 10)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, 4, n)

	require.NoError(t, syncFile(t, l, f))
	require.NoError(t, f.Truncate(5))
	require.Equal(t, int64(5), f.Size())
	require.NoError(t, syncFile(t, l, f))
	require.NoError(t, syncDirOf(t, l, d, "topic-0"))
	require.NoError(t, syncDirOf(t, l, d, ""))

	// Data is on the real file.
	got, err := os.ReadFile(filepath.Join(d.Root(), "topic-0", "00000000000000000000.log"))
	require.NoError(t, err)
	require.Equal(t, []byte("hello"), got)

	require.NoError(t, f.Close())
	require.ErrorIs(t, f.Close(), env.ErrClosed)
	require.ErrorIs(t, syncFile(t, l, f), env.ErrClosed)
	_, err = f.Append([]byte("x"))
	require.ErrorIs(t, err, env.ErrClosed)
	_, err = f.ReadAt(buf, 0)
	require.ErrorIs(t, err, env.ErrClosed)
}

// TestDiskSyncWhileClosing: Close may run on the loop right after Sync,
// before the helper goroutine ran fdatasync; the Sync must still succeed.
func TestDiskSyncWhileClosing(t *testing.T) {
	d, l := newTestDisk(t)
	for i := range 50 {
		f, err := d.Open("f", true)
		require.NoError(t, err)
		_, err = f.Append([]byte{byte(i)})
		require.NoError(t, err)
		done := make(chan error, 1)
		onLoop(t, l, func() {
			f.Sync(func(err error) { done <- err })
			require.NoError(t, f.Close())
		})
		require.NoError(t, waitFor(t, done, "sync"), "a Sync issued before Close must complete")
	}
	// The descriptor a pending Sync kept open is closed once it reports:
	// no handle leaks (the first round's Syncs are all reported).
	before := openFDs(t)
	f, err := d.Open("g", true)
	require.NoError(t, err)
	_, err = f.Append([]byte("x"))
	require.NoError(t, err)
	done := make(chan error, 2)
	onLoop(t, l, func() {
		f.Sync(func(err error) { done <- err })
		f.Sync(func(err error) { done <- err })
		require.NoError(t, f.Close())
	})
	require.NoError(t, waitFor(t, done, "sync"))
	require.NoError(t, waitFor(t, done, "sync"))
	require.Equal(t, before, openFDs(t), "the file's descriptor is closed after its last Sync")
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

func TestDiskRenameRemoveList(t *testing.T) {
	d, l := newTestDisk(t)
	require.NoError(t, d.MkdirAll("a/b"))
	require.NoError(t, d.MkdirAll("a-b"))
	for _, name := range []string{"a/x.tmp", "z", "a/b/deep"} {
		f, err := d.Open(name, true)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	got, err := d.List("")
	require.NoError(t, err)
	// Sorted with the trailing "/" in place: "a-b/" < "a/" since '-' < '/'.
	require.Equal(t, []string{"a-b/", "a/", "z"}, got)
	got, err = d.List("a")
	require.NoError(t, err)
	require.Equal(t, []string{"b/", "x.tmp"}, got)

	require.NoError(t, d.Rename("a/x.tmp", "a/x"))
	require.NoError(t, syncDirOf(t, l, d, "a"))
	_, err = d.Open("a/x.tmp", false)
	require.ErrorIs(t, err, env.ErrNotExist)
	f, err := d.Open("a/x", false)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	require.NoError(t, d.Remove("a/x"))
	err = d.Remove("a/x")
	require.ErrorIs(t, err, env.ErrNotExist)
	require.ErrorIs(t, d.Remove("a"), env.ErrExist, "removing a non-empty directory")
	require.NoError(t, d.Remove("a/b/deep"))
	require.NoError(t, d.Remove("a/b"))

	_, err = d.List("missing")
	require.ErrorIs(t, err, env.ErrNotExist)
	require.ErrorIs(t, syncDirOf(t, l, d, "missing"), env.ErrNotExist)
}

func TestDiskErrorsKeepOSText(t *testing.T) {
	d, _ := newTestDisk(t)
	_, err := d.Open("nope", false)
	require.ErrorIs(t, err, env.ErrNotExist)
	require.ErrorIs(t, err, os.ErrNotExist, "the OS error stays in the chain")
	require.Contains(t, err.Error(), "no such file or directory")
	require.Contains(t, err.Error(), filepath.Join(d.Root(), "nope"))

	// The parent must exist, even with create.
	_, err = d.Open("no-dir/f", true)
	require.ErrorIs(t, err, env.ErrNotExist)
}

func TestDiskRejectsPathsOutsideTheRoot(t *testing.T) {
	d, l := newTestDisk(t)
	for _, name := range []string{"/etc/passwd", "../x", "a/../../x", "a/..", "", ".", "a\x00b"} {
		_, err := d.Open(name, true)
		require.ErrorIs(t, err, ErrInvalidPath, "Open(%q)", name)
		require.ErrorIs(t, d.Remove(name), ErrInvalidPath, "Remove(%q)", name)
		require.ErrorIs(t, d.Rename("ok", name), ErrInvalidPath, "Rename(ok, %q)", name)
	}
	for _, dir := range []string{"/tmp", "..", "a/../.."} {
		_, err := d.List(dir)
		require.ErrorIs(t, err, ErrInvalidPath, "List(%q)", dir)
		require.ErrorIs(t, d.MkdirAll(dir), ErrInvalidPath, "MkdirAll(%q)", dir)
		require.ErrorIs(t, syncDirOf(t, l, d, dir), ErrInvalidPath, "SyncDir(%q)", dir)
	}
	// Cleaned names are fine.
	require.NoError(t, d.MkdirAll("./x//y/"))
	names, err := d.List("x")
	require.NoError(t, err)
	require.Equal(t, []string{"y/"}, names)
}

// TestDiskNoSpace writes through a symlink to /dev/full, which fails every
// write with ENOSPC: the error must wrap env.ErrNoSpace.
func TestDiskNoSpace(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	d, _ := newTestDisk(t)
	require.NoError(t, os.Symlink("/dev/full", filepath.Join(d.Root(), "full")))
	f, err := d.Open("full", false)
	require.NoError(t, err)
	defer f.Close()
	err = f.WriteAt([]byte("data"), 0)
	require.ErrorIs(t, err, env.ErrNoSpace)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Contains(t, err.Error(), "no space left on device")
}

func TestOSErrMapping(t *testing.T) {
	cases := []struct {
		errno syscall.Errno
		want  error
	}{
		{syscall.ENOENT, env.ErrNotExist},
		{syscall.EEXIST, env.ErrExist},
		{syscall.ENOTEMPTY, env.ErrExist},
		{syscall.ENOSPC, env.ErrNoSpace},
		{syscall.EDQUOT, env.ErrNoSpace},
		{syscall.EIO, env.ErrIO},
		{syscall.EROFS, env.ErrIO},
	}
	for _, tc := range cases {
		err := osErr(&os.PathError{Op: "write", Path: "/data/x", Err: tc.errno})
		require.ErrorIs(t, err, tc.want, "%v", tc.errno)
		require.ErrorIs(t, err, tc.errno)
		require.Contains(t, err.Error(), "write /data/x: "+tc.errno.Error())
	}
	other := errors.New("something else")
	require.Equal(t, other, osErr(other))
	require.NoError(t, osErr(nil))
}
