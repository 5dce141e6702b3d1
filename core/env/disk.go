package env

// Disk is a process's storage root, the equivalent of its data directory
// (log.dirs). Names are slash-separated paths relative to the root ("a/b"),
// never absolute and never containing "..".
//
// # Durability model
//
// Disk behaves like a Linux filesystem with a page cache:
//
//   - Data written with File.WriteAt/File.Append is visible to reads at once
//     but durable only after a File.Sync that was called after the write
//     completes successfully. File.Sync also makes the file's size durable
//     (fdatasync semantics), including truncations.
//   - Directory changes (creating, removing and renaming entries) are visible
//     at once but durable only after a SyncDir of the directory that holds
//     the entry (of both directories, for a rename across directories)
//     completes successfully. Until then a crash may undo any suffix of the
//     unsynced changes of that directory, in order: a crash never applies a
//     later change of a directory without the earlier ones.
//   - A crash (a power loss) may keep any part of what is not durable: the
//     kernel writes dirty pages back on its own, in any order, so unsynced
//     writes may survive as any page-granular subset (holes, overwrites
//     partly applied), and an older version of a page may be what the disk
//     holds. Synced bytes are never lost or altered by a crash. (The
//     simulator's gentler default keeps only a prefix of the last unsynced
//     write, cut at a 512-byte boundary; its PageCrash model is this one.)
//     So a never-synced note read after a restart proves nothing: BootID
//     tells whether it was read from the page cache, as last written.
//   - When a file's Sync reports an error, the writes it covered must be
//     treated as lost: as on Linux after a failed fsync, the page cache may
//     still show them, but they will not reach the disk even if a later Sync
//     succeeds, and a crash removes them. Writes made after the failed
//     Sync may still survive a crash, so the lost range can come back as a
//     hole (zeros) before them: the prefix rule above no longer holds for
//     that file, and recovery must validate everything past its last
//     successful Sync. The filesystem goes on working (PostgreSQL's
//     "fsyncgate"). Core treats a failed Sync as fatal for that file (Kafka
//     takes the log directory offline).
//   - When SyncDir reports an error, the filesystem has failed, as ext4
//     does when a directory fsync fails (it aborts its journal; metadata
//     changes then fail with EROFS) and XFS (it shuts down; EIO). Every
//     directory change not yet durable is lost, in every directory (the
//     page cache may still show it until the machine restarts), and from
//     then on every change fails with an error wrapping ErrIO: creating a
//     file, WriteAt, Append, Truncate, Rename, Remove and creating a
//     directory, and so do every Sync and SyncDir, including those already
//     in flight. Reads keep working: Open of an existing file, ReadAt, Size
//     and List. The failure outlives the process: a restarted process with
//     the machine up finds the filesystem still failed, and only a machine
//     restart (which, like a crash, drops the page cache) clears it. An
//     owner that cannot start on such a disk must wait for that restart.
//   - Reads may return corrupted bytes (a flipped bit) without an error;
//     callers that need integrity check a checksum (RecordBatch CRC32C).
//   - A write may fail with an error wrapping ErrNoSpace; nothing of a
//     failed write is visible afterwards.
//
// All methods except Sync and SyncDir complete synchronously: they act on the
// page cache, which is how a Kafka broker treats writes and index reads.
// Sync and SyncDir complete later, on the loop, after their (real or
// simulated) latency.
type Disk interface {
	// Open opens the named file for reading and writing. With create set,
	// a missing file is created empty (a directory change of its parent);
	// otherwise a missing file yields an error wrapping ErrNotExist. The
	// parent directory must exist.
	Open(name string, create bool) (File, error)

	// Remove deletes a file or an empty directory. Open handles keep working
	// until closed, as on Unix.
	Remove(name string) error

	// Rename atomically replaces newName with oldName. Before the parent
	// directories are synced a crash may leave either name.
	Rename(oldName, newName string) error

	// MkdirAll creates a directory and any missing parents. The new entries
	// are durable once the parents are synced with SyncDir.
	MkdirAll(dir string) error

	// List returns the names of the entries of a directory, sorted
	// lexically. Subdirectories are listed with a trailing "/".
	List(dir string) ([]string, error)

	// SyncDir makes the directory's entries durable and calls done on the
	// loop with the outcome. Use "" or "." for the root. An error means the
	// filesystem failed until the machine restarts (see the durability
	// model above).
	SyncDir(dir string, done func(error))

	// BootID identifies the lifetime of the page cache: it changes
	// whenever the machine restarts (a power loss, a reboot), which drops
	// the page cache, and never while the machine stays up, whatever the
	// processes do. So a note written in the page cache and read back
	// with the same BootID was read from the page cache as last written;
	// with another one, from the disk, where only durable bytes are. ""
	// means it cannot be known (Linux: /proc/sys/kernel/random/boot_id).
	BootID() string
}

// File is an open file of a Disk. A File must not be used after Close.
type File interface {
	// Name is the file's path relative to the disk root.
	Name() string

	// Size is the current (page-cache) size in bytes.
	Size() int64

	// ReadAt reads len(p) bytes at off. It returns the number of bytes read
	// and io.EOF when fewer are available, like io.ReaderAt.
	ReadAt(p []byte, off int64) (int, error)

	// WriteAt writes p at off, extending the file if needed; a gap beyond
	// the current size reads as zeros. It is all-or-nothing: on error
	// nothing of p is visible.
	WriteAt(p []byte, off int64) error

	// Append writes p at the current end and returns the offset it was
	// written at. All-or-nothing like WriteAt.
	Append(p []byte) (int64, error)

	// Truncate sets the file's size, dropping bytes past it or extending it
	// with zeros. It is durable after a following Sync.
	Truncate(size int64) error

	// Sync makes every write and truncation that completed before the call
	// durable, then calls done on the loop with the outcome. Writes issued
	// after the call are not covered even if they complete before done
	// runs. Concurrent Syncs are allowed; callers that want group commit
	// coalesce them (package log does).
	Sync(done func(error))

	// Close releases the handle. Unsynced data stays in the page cache and
	// is still subject to the durability model.
	Close() error
}

// DiskSpace is implemented by a Disk that can report the capacity of the
// volume it lives on (DescribeLogDirs' total and usable bytes). It is
// optional: callers type-assert and report "unknown" (-1) without it.
type DiskSpace interface {
	// Space returns the volume's total bytes and the bytes still usable
	// by this process, or an error when they cannot be known.
	Space() (totalBytes, usableBytes int64, err error)
}
