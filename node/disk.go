package node

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/strata-log/strata/core/env"
)

// DefaultSyncConcurrency bounds the fdatasync and directory fsync calls in
// flight at once. One device serialises flushes anyway; a few in flight
// let independent files' flushes overlap in the device queue (measured on
// this class of machine: ~1,300-1,900 fsync/s), while package log
// coalesces syncs of one file (group commit) so more would not help.
const DefaultSyncConcurrency = 4

// Disk is env.Disk over real files under a root directory (log.dirs).
// Reads, writes, truncations and directory changes run synchronously on
// the caller's goroutine, the loop: they act on the page cache. Sync and
// SyncDir run fdatasync/fsync on helper goroutines and post their outcome
// to the loop.
type Disk struct {
	root  string
	loop  *Loop
	syncs *offLoop
	stats diskCounters
	boot  string // the boot identifier, read once
}

// diskCounters count what a Disk did, for DiskStats.
type diskCounters struct {
	fileSyncs    atomic.Uint64
	dirSyncs     atomic.Uint64
	bytesWritten atomic.Uint64
}

// DiskStats is what a Disk did since it was made.
type DiskStats struct {
	// FileSyncs counts fdatasync calls that succeeded; DirSyncs the
	// directory fsyncs.
	FileSyncs, DirSyncs uint64
	// BytesWritten counts bytes written to files (WriteAt, Append).
	BytesWritten uint64
}

// Stats returns the disk's counters. It is safe from any goroutine.
func (d *Disk) Stats() DiskStats {
	return DiskStats{FileSyncs: d.stats.fileSyncs.Load(), DirSyncs: d.stats.dirSyncs.Load(), BytesWritten: d.stats.bytesWritten.Load()}
}

var (
	_ env.Disk      = (*Disk)(nil)
	_ env.DiskSpace = (*Disk)(nil)
)

// Space reports the size of the filesystem holding the root and the bytes
// an unprivileged process may still use there (statfs: blocks and
// available blocks, as Kafka's FileStore getTotalSpace and
// getUsableSpace). One statfs call, on the loop: it reads the
// filesystem's superblock counters and does not touch the disk.
func (d *Disk) Space() (int64, int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(d.root, &st); err != nil {
		return -1, -1, fmt.Errorf("statfs %s: %w", d.root, err)
	}
	bs := int64(st.Bsize)
	return int64(st.Blocks) * bs, int64(st.Bavail) * bs, nil
}

// NewDisk returns a Disk rooted at root, creating the directory if needed.
// syncConcurrency <= 0 means DefaultSyncConcurrency.
func NewDisk(root string, loop *Loop, syncConcurrency int) (*Disk, error) {
	if syncConcurrency <= 0 {
		syncConcurrency = DefaultSyncConcurrency
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("disk root %q: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("disk root: %w", osErr(err))
	}
	return &Disk{root: abs, loop: loop, syncs: newOffLoop(syncConcurrency), boot: readBootID()}, nil
}

// bootIDFile is where Linux keeps a random identifier drawn at each boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// readBootID returns the machine's boot identifier, or "" where the system
// has none (not Linux, /proc not mounted): package log then trusts its
// page-cache notes less (see env.Disk.BootID).
func readBootID() string {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// BootID identifies the machine's current boot (env.Disk).
func (d *Disk) BootID() string { return d.boot }

// Root is the absolute path of the disk's root directory.
func (d *Disk) Root() string { return d.root }

// wait returns once every Sync and SyncDir job has finished (their
// completions may have been dropped by a stopped loop).
func (d *Disk) wait() { d.syncs.Wait() }

// cleanName validates a slash-separated name relative to a root and returns
// it cleaned. The root itself ("" or ".") is allowed only where a directory
// is meant.
func cleanName(name string, rootOK bool) (string, error) {
	switch {
	case name == "" || name == ".":
		if rootOK {
			return ".", nil
		}
		return "", fmt.Errorf("%w: %q names the root, not a file", ErrInvalidPath, name)
	case strings.HasPrefix(name, "/"):
		return "", fmt.Errorf("%w: %q is absolute", ErrInvalidPath, name)
	case strings.IndexByte(name, 0) >= 0:
		return "", fmt.Errorf("%w: %q contains NUL", ErrInvalidPath, name)
	}
	if slices.Contains(strings.Split(name, "/"), "..") {
		return "", fmt.Errorf("%w: %q contains \"..\"", ErrInvalidPath, name)
	}
	clean := path.Clean(name)
	if clean == "." && !rootOK {
		return "", fmt.Errorf("%w: %q names the root, not a file", ErrInvalidPath, name)
	}
	return clean, nil
}

func (d *Disk) abs(name string, rootOK bool) (string, string, error) {
	clean, err := cleanName(name, rootOK)
	if err != nil {
		return "", "", err
	}
	return clean, filepath.Join(d.root, filepath.FromSlash(clean)), nil
}

// Open implements env.Disk.
func (d *Disk) Open(name string, create bool) (env.File, error) {
	clean, p, err := d.abs(name, false)
	if err != nil {
		return nil, fmt.Errorf("disk open: %w", err)
	}
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(p, flags, 0o644)
	if err != nil {
		return nil, osErr(err)
	}
	return &file{disk: d, name: clean, f: f}, nil
}

// Remove implements env.Disk.
func (d *Disk) Remove(name string) error {
	_, p, err := d.abs(name, false)
	if err != nil {
		return fmt.Errorf("disk remove: %w", err)
	}
	return osErr(os.Remove(p))
}

// Rename implements env.Disk.
func (d *Disk) Rename(oldName, newName string) error {
	_, oldPath, err := d.abs(oldName, false)
	if err != nil {
		return fmt.Errorf("disk rename: %w", err)
	}
	_, newPath, err := d.abs(newName, false)
	if err != nil {
		return fmt.Errorf("disk rename: %w", err)
	}
	return osErr(os.Rename(oldPath, newPath))
}

// MkdirAll implements env.Disk.
func (d *Disk) MkdirAll(dir string) error {
	_, p, err := d.abs(dir, true)
	if err != nil {
		return fmt.Errorf("disk mkdir: %w", err)
	}
	return osErr(os.MkdirAll(p, 0o755))
}

// List implements env.Disk.
func (d *Disk) List(dir string) ([]string, error) {
	_, p, err := d.abs(dir, true)
	if err != nil {
		return nil, fmt.Errorf("disk list: %w", err)
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, osErr(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		names = append(names, name)
	}
	// Sort again: the trailing "/" can change the order ReadDir gave
	// ("a-b" sorts before "a/").
	slices.Sort(names)
	return names, nil
}

// SyncDir implements env.Disk: it fsyncs the directory on a helper
// goroutine and posts the outcome to the loop.
func (d *Disk) SyncDir(dir string, done func(error)) {
	_, p, err := d.abs(dir, true)
	if err != nil {
		err = fmt.Errorf("disk syncdir: %w", err)
		d.loop.Post(func() { done(err) })
		return
	}
	d.syncs.Go(func() {
		err := syncDir(p)
		if err == nil {
			d.stats.dirSyncs.Add(1)
		}
		d.loop.Post(func() { done(err) })
	})
}

func syncDir(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return osErr(err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return osErr(err)
}

// file is env.File over an *os.File. It is used from the loop only; Sync's
// helper goroutine only calls fdatasync on its descriptor, which stays
// open until the Sync reports.
type file struct {
	disk   *Disk
	name   string
	f      *os.File
	closed bool
	// syncing counts the Syncs not yet reported; while there are any, the
	// descriptor stays open for them.
	syncing int
	// size is the last size observed, returned by Size if fstat fails.
	size int64
}

var _ env.File = (*file)(nil)

// Name implements env.File.
func (f *file) Name() string { return f.name }

// Size implements env.File. It asks the kernel (fstat) rather than caching,
// so that two handles on one file agree.
func (f *file) Size() int64 {
	if fi, err := f.f.Stat(); err == nil {
		f.size = fi.Size()
	}
	return f.size
}

// ReadAt implements env.File.
func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, f.errClosed()
	}
	n, err := f.f.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) {
		err = osErr(err)
	}
	return n, err
}

// WriteAt implements env.File. All-or-nothing: when a write that extended
// the file fails part-way (ENOSPC), the extension is truncated away. An
// overwrite of existing bytes cannot be undone that way; it fails only
// when the device does (EIO, which core treats as fatal for the file),
// because its blocks are already allocated on the filesystems we run on.
func (f *file) WriteAt(p []byte, off int64) error {
	if f.closed {
		return f.errClosed()
	}
	before := f.Size()
	_, err := f.f.WriteAt(p, off)
	if err == nil {
		f.disk.stats.bytesWritten.Add(uint64(len(p)))
	}
	if err != nil {
		if off+int64(len(p)) > before {
			_ = f.f.Truncate(before) // best effort; the write error is what matters
		}
		return osErr(err)
	}
	return nil
}

// Append implements env.File: a WriteAt at the current size.
func (f *file) Append(p []byte) (int64, error) {
	if f.closed {
		return 0, f.errClosed()
	}
	off := f.Size()
	return off, f.WriteAt(p, off)
}

// Truncate implements env.File.
func (f *file) Truncate(size int64) error {
	if f.closed {
		return f.errClosed()
	}
	return osErr(f.f.Truncate(size))
}

// Sync implements env.File with fdatasync on a helper goroutine: data and
// size become durable, other metadata (mtime) need not. The helper syncs
// the file's own descriptor, and a Close on the loop while a Sync is
// pending only marks the file closed: the last pending Sync closes the
// descriptor when it reports. So a Close right after Sync neither races
// the fdatasync nor cancels it (writes made before Sync are covered
// either way, as env.File promises), and a queued Sync holds no
// descriptor of its own: a broker that writes thousands of checkpoints at
// once (a mass leadership change) needs no second handle for each.
func (f *file) Sync(done func(error)) {
	loop := f.disk.loop
	if f.closed {
		err := f.errClosed()
		loop.Post(func() { done(err) })
		return
	}
	fd := int(f.f.Fd())
	name := f.f.Name()
	counters := &f.disk.stats
	f.syncing++
	f.disk.syncs.Go(func() {
		err := fdatasync(fd, name)
		if err == nil {
			counters.fileSyncs.Add(1)
		}
		loop.Post(func() {
			f.syncing--
			if f.closed && f.syncing == 0 {
				if cerr := f.f.Close(); cerr != nil && err == nil {
					err = osErr(cerr)
				}
			}
			done(err)
		})
	})
}

// dupFD returns a close-on-exec duplicate of the file's descriptor.
func (f *file) dupFD() (int, error) {
	rc, err := f.f.SyscallConn()
	if err != nil {
		return -1, osErr(err)
	}
	dup := -1
	var dupErr error
	if err := rc.Control(func(fd uintptr) {
		dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, osErr(err)
	}
	if dupErr != nil {
		return -1, osErr(&os.PathError{Op: "dup", Path: f.f.Name(), Err: dupErr})
	}
	return dup, nil
}

// fdatasync flushes fd's data (and size) to stable storage, retrying on
// EINTR.
func fdatasync(fd int, name string) error {
	for {
		err := unix.Fdatasync(fd)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINTR) {
			return osErr(&os.PathError{Op: "fdatasync", Path: name, Err: err})
		}
	}
}

// Close implements env.File. A Sync issued before it still completes.
func (f *file) Close() error {
	if f.closed {
		return f.errClosed()
	}
	f.closed = true
	if f.syncing > 0 {
		return nil // the last pending Sync closes the descriptor
	}
	return osErr(f.f.Close())
}

func (f *file) errClosed() error {
	return fmt.Errorf("file %s: %w", f.name, env.ErrClosed)
}

// mkdirAll creates an OS directory and its parents, mapping errors.
func mkdirAll(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return osErr(err)
	}
	return nil
}
