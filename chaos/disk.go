package chaos

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// diskSize bounds each node's tmpfs: far above what a campaign writes
// (a tmpfs takes memory only for what its files hold).
const diskSize = "1g"

// disk is one node's filesystem of its own, a tmpfs, so that filling it
// fails that node's writes with ENOSPC and no other's: the node's data
// is in Data, and a full disk is a file beside it (filler) taking all
// the room but the headroom the fault leaves.
type disk struct {
	t    testing.TB
	root string // the mount point
}

// newDisk mounts a tmpfs for one node under the test's temp dir and
// unmounts it in t.Cleanup (after the cluster's processes are killed:
// make the disks before starting the cluster).
func newDisk(t testing.TB) *disk {
	d := &disk{t: t, root: t.TempDir()}
	require.NoError(t, unix.Mount("tmpfs", d.root, "tmpfs", 0, "size="+diskSize), "mount a tmpfs at %s", d.root)
	t.Cleanup(func() {
		if err := unix.Unmount(d.root, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", d.root, err)
		}
	})
	require.NoError(t, os.Mkdir(d.Data(), 0o755))
	return d
}

// Data is the node's log.dirs.
func (d *disk) Data() string { return filepath.Join(d.root, "data") }

func (d *disk) filler() string { return filepath.Join(d.root, "filler") }

// used is what the node's files take on the disk: their allocated
// blocks (sparse files count what they hold).
func (d *disk) used() int64 {
	var n int64
	err := filepath.WalkDir(d.Data(), func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			// A file the node removed between the listing and the stat.
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	})
	require.NoError(d.t, err, "the disk used under %s", d.Data())
	return n
}

// fill leaves room for capacity bytes of the node's files in all: the
// filler takes the free space but capacity less what the node's files
// take. The node writes on meanwhile, so the filler grows in steps, each
// measured anew: the bulk but a margin, then the rest, which is quick
// (the race it leaves is one small step long, and a step that loses it
// is measured again).
func (d *disk) fill(capacity int64) {
	d.empty()
	f, err := os.Create(d.filler())
	require.NoError(d.t, err)
	defer f.Close()
	const margin = 4 << 20
	var size int64
	for _, m := range []int64{margin, 0, 0, 0, 0} {
		var st unix.Statfs_t
		require.NoError(d.t, unix.Statfs(d.root, &st))
		room := max(capacity-d.used(), 0)
		more := (int64(st.Bavail)*st.Bsize - room - m) / st.Bsize * st.Bsize
		if more <= 0 {
			if m == 0 {
				return
			}
			continue
		}
		err := unix.Fallocate(int(f.Fd()), 0, size, more)
		if errors.Is(err, unix.ENOSPC) {
			continue
		}
		require.NoError(d.t, err, "fill %s with %d bytes more", d.root, more)
		size += more
		if m == 0 {
			return
		}
	}
}

// empty gives the filler's room back.
func (d *disk) empty() {
	if err := os.Remove(d.filler()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		require.NoError(d.t, err)
	}
}
