package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/strata-log/strata/core/env"
)

// Disk is a process's simulated disk: a page cache over a durable layer,
// implementing the durability model documented on env.Disk. It belongs to the
// machine, not to an incarnation: it survives crashes, and every incarnation
// gets a fresh handle over it.
//
// # What a crash keeps
//
// A crash (power loss) turns the durable layer into the new page cache:
//
//   - Directories. Every directory keeps its durable entries plus a seeded
//     prefix of its unsynced changes (create, remove, rename, mkdir), in the
//     order they were made (after a failed SyncDir there are none: see
//     below). A rename across directories is one change of
//     both directories and survives in both or in neither, as a journaling
//     filesystem commits it; when the prefix chosen for one directory keeps
//     it, the other directory keeps everything it did before it too. A file
//     or directory no longer reachable from the root is gone, whatever its
//     data's durability: a file whose data was synced but whose create was
//     never dir-synced may vanish, and an undone rename leaves the old name
//     with the file's durable content.
//   - Files. Every file keeps its durable content: the outcome of the
//     writes and truncations covered by successful Syncs, in issue order,
//     minus those covered by a failed Sync. Unsynced writes are lost, with
//     one exception, the torn tail: when every unsynced change of a file is
//     a write at or beyond the end of the one before it (a log's appends;
//     no truncation, no overwrite), with probability tornTailProbability
//     the crash keeps a prefix of them, cut at a 512-byte sector boundary
//     of the file or at the end of one of the writes. Unsynced overwrites of
//     durable bytes and unsynced truncations never survive, so synced bytes
//     are never altered by a crash, and surviving unsynced bytes are always
//     an in-order prefix without holes. Under DiskFaults.PageCrash (the
//     harsh model, FoundationDB's AsyncFileNonDurable) a file instead
//     keeps any 4 KiB page-granular subset of its unsynced changes,
//     overwrites and truncations included, at its durable size or its
//     size after one of them, with holes (zeros) where a page was lost:
//     see crashPages. Bytes no unsynced change touched survive either way.
//
// Handles of the crashed incarnation stop working (their methods fail with
// an error wrapping env.ErrClosed), and Syncs still in flight never call back.
//
// # A failed SyncDir fails the filesystem
//
// A failed directory sync is what a real filesystem cannot shrug off: ext4
// aborts its journal (metadata changes then fail with EROFS) and XFS shuts
// down (EIO). The simulated disk does the same. When a SyncDir fails, every
// directory change of the disk not yet durable is lost (the journal
// transaction that held them aborted), and from then on every change fails
// with an error wrapping env.ErrIO: creating a file, WriteAt, Append,
// Truncate, Rename, Remove and MkdirAll of a missing directory, and every
// Sync and SyncDir, including those already in flight (a failed Sync loses
// the writes it covered, as always). Reads keep working: Open of an existing
// file, ReadAt, Size and List show the page cache, lost changes included.
// The failure belongs to the machine, not to the process: it survives
// Process.Kill (a restarted process finds the filesystem still failed, as
// after a journal abort until the machine reboots) and only a power loss
// (Process.Crash, Process.PowerCycle) clears it, when the page cache is
// rebuilt from what is durable. A failed file Sync does not fail the
// filesystem: its writes are lost (Linux's "fsyncgate") and the disk goes
// on working.
//
// # Faults
//
// SetFaults configures the crash model, sync latency, latency spikes,
// failing syncs (EIO, ENOSPC), failing writes, ENOSPC on directory changes
// and truncations, bit flips on reads, a capacity, and damage at rest
// (latent sector errors, corruption, misdirected writes) limited to the
// files the owner declared survivable (DeclareSurvivable); see
// DiskFaults. ReadAt, WriteAt and Append have no latency: they are
// synchronous in env.Disk, and virtual time cannot pass inside a call.
type Disk struct {
	sim    *Sim
	owner  *Process
	rng    *rand.Rand
	faults DiskFaults

	root    *inode
	nextIno uint64
	// dirSeq orders every directory change of the disk; a SyncDir covers
	// the changes whose seq is at most the value at its call.
	dirSeq uint64
	// pendingDirs lists the directories that got unsynced changes, in the
	// order they first did, so that a crash visits them deterministically.
	pendingDirs []*inode
	// used is the page-cache size of every live file (linked or open), in
	// bytes, which DiskFaults.CapacityBytes bounds.
	used  int64
	stats DiskStats
	// boot counts the machine's restarts (power losses, a replaced disk):
	// BootID.
	boot uint64
	// handles are the file handles the current incarnation opened (closed
	// ones are dropped now and then), so that a process exit can close
	// the ones it left open.
	handles []*fileHandle
	// failed is set by a failed SyncDir (of directory failedBy) and
	// cleared only by a power loss: see the type's documentation.
	failed   bool
	failedBy string
	// survivable names the files whose damage at rest the owner declared
	// it detects and repairs (DeclareSurvivable); nil: none.
	survivable func(name string) bool
	// latentSurvivable narrows latent sector errors to the survivable
	// files it names (DeclareLatentSurvivable); nil: all of them.
	latentSurvivable func(name string) bool
}

// Bounds and defaults of the simulated disk.
const (
	// sectorBytes is the unit a torn write is cut at: a power loss leaves
	// whole sectors of the file, never part of one.
	sectorBytes = 512
	// pageBytes is the page the page cache writes back, the unit of
	// DiskFaults.PageCrash, latent sector errors and misdirected writes.
	pageBytes = 4096
	// defaultSyncLatencyMin and defaultSyncLatencyMax bound the latency of
	// a Sync or SyncDir when DiskFaults leaves them zero; they bracket the
	// fsync latency measured on the development machine (p50 about 0.5 ms,
	// p99 about 1 ms idle).
	defaultSyncLatencyMin = 300 * time.Microsecond
	defaultSyncLatencyMax = 2 * time.Millisecond
	// defaultStallLatency is the extra latency of a stalled sync when
	// DiskFaults.StallLatency is zero: a noisy neighbour or a journal
	// commit behind a large writeback.
	defaultStallLatency = 100 * time.Millisecond
	// maxFileBytes bounds a file's size; a write or truncation beyond it
	// fails with env.ErrNoSpace instead of allocating the memory.
	maxFileBytes = 1 << 30
	// tornTailProbability is the chance that a crash keeps part of a file's
	// unsynced appended data (when its unsynced changes allow a torn tail).
	tornTailProbability = 0.5
)

// DiskFaults configures how a Disk misbehaves. The zero value is a perfect
// disk with the default sync latency (crashes still lose unsynced data).
type DiskFaults struct {
	// SyncLatencyMin and SyncLatencyMax bound the uniformly drawn latency
	// of every Sync and SyncDir. Both zero means 0.3–2 ms. A Max below Min
	// is treated as Min.
	SyncLatencyMin, SyncLatencyMax time.Duration

	// StallProbability is the chance that a Sync or SyncDir stalls: its
	// latency grows by StallLatency (default 100 ms).
	StallProbability float64
	StallLatency     time.Duration

	// SyncFailProbability is the chance that a file Sync reports an error
	// wrapping env.ErrIO. As after a failed fsync on Linux, what it
	// covered and had not yet become durable is lost: reads still see it
	// until a crash, a later successful Sync does not make it durable, and
	// a crash drops it. The filesystem goes on working.
	SyncFailProbability float64

	// SyncDirFailProbability is the chance that a SyncDir reports an error
	// wrapping env.ErrIO. It fails the filesystem until the next power loss
	// (see Disk): every unsynced directory change is lost, and every later
	// change, Sync and SyncDir fails.
	SyncDirFailProbability float64

	// BitFlipProbability is the chance that a ReadAt returning bytes flips
	// one random bit of them. Stored data is never altered.
	BitFlipProbability float64

	// CapacityBytes, when positive, bounds the total size of the live files
	// (linked or open, page-cache sizes). A write that would grow past it
	// fails with env.ErrNoSpace and changes nothing, and so do creating a
	// file or directory and a rename while the disk is full (no block for
	// a new directory entry). Truncations never fail for capacity (they
	// make sparse files); writes and truncations beyond maxFileBytes
	// (1 GiB) always fail with env.ErrNoSpace.
	CapacityBytes int64

	// PageCrash selects the harsh crash model (FoundationDB's
	// AsyncFileNonDurable): a crash keeps any 4 KiB page-granular subset
	// of a file's unsynced changes, overwrites and truncations included,
	// with a size drawn among the file's durable size and its size after
	// each unsynced change, so an unsynced page lost below that size reads
	// as zeros (a hole) or as its old content. Without it a crash keeps
	// at most an in-order, sector-aligned prefix of unsynced appends (a
	// torn tail). See Disk.
	PageCrash bool

	// WriteErrorProbability is the chance that a WriteAt or Append fails
	// with an error wrapping env.ErrIO. Nothing of the write is visible
	// (env.File's writes are all-or-nothing); the filesystem goes on
	// working.
	WriteErrorProbability float64

	// SyncNoSpaceProbability is the chance that a file Sync fails with an
	// error wrapping env.ErrNoSpace: delayed allocation found no free
	// block at writeback. As for a failed Sync, what it covered is lost.
	SyncNoSpaceProbability float64

	// NoSpaceProbability is the chance that creating a file, creating a
	// directory, a Rename or a Truncate fails with an error wrapping
	// env.ErrNoSpace and changes nothing (ext4 may need a new directory
	// block, an extent split or journal credits for any of them).
	NoSpaceProbability float64

	// The at-rest faults below damage only files that the disk's owner
	// declared survivable (Disk.DeclareSurvivable): their loss is one the
	// system must detect and repair. A disk with no declaration never gets
	// them. They are properties of the medium, not of the page cache: they
	// outlive crashes and the fault's end, and only a rewrite repairs them.

	// LatentErrorProbability is the chance that a ReadAt of a survivable
	// file finds a latent sector error: a 4 KiB page of the range becomes
	// unreadable, and this and every later ReadAt covering the page fail
	// with an error wrapping env.ErrIO (nothing read) until a write covers
	// the whole page or a truncation drops it.
	LatentErrorProbability float64

	// CorruptProbability is the chance that a successful Sync of a
	// survivable file stores one bit of what it wrote flipped: the page
	// cache still shows the right bytes, and the damage appears when a
	// power loss rebuilds the page cache from the medium.
	CorruptProbability float64

	// MisdirectProbability is the chance that a successful Sync of a
	// survivable file stores one of the writes it covered at the wrong
	// place: the write's own range keeps its previous durable bytes
	// (zeros past the durable size), and a page-aligned range elsewhere in
	// the file's durable extent gets the write's bytes instead. Like
	// corruption it shows after a power loss.
	MisdirectProbability float64
}

// DiskStats counts what a Disk did, for checkers, tests and run summaries.
type DiskStats struct {
	Syncs         uint64 // File.Sync calls
	SyncDirs      uint64 // SyncDir calls
	FailedSyncs   uint64 // Sync and SyncDir completions with an injected error
	Stalls        uint64 // Syncs and SyncDirs that got a latency spike
	BytesWritten  uint64 // bytes passed to successful WriteAt and Append
	BytesSynced   uint64 // written bytes made durable by successful Syncs
	BitFlips      uint64 // ReadAt calls that returned a flipped bit
	NoSpaceErrors uint64 // writes refused for capacity
	Crashes       uint64 // power losses applied
	TornTails     uint64 // files that kept part of their unsynced data in a crash
	DirUndone     uint64 // unsynced directory changes a crash undid
	FSFailures    uint64 // failed SyncDirs that failed the filesystem
	Refused       uint64 // changes, Syncs and SyncDirs a failed filesystem refused
	PageCrashes   uint64 // files a crash rebuilt page by page (DiskFaults.PageCrash)
	WriteErrors   uint64 // writes failed with env.ErrIO
	LatentErrors  uint64 // pages that became unreadable (latent sector errors)
	ReadErrors    uint64 // ReadAt calls failed by an unreadable page
	Corruptions   uint64 // bits flipped at rest by a Sync
	Misdirects    uint64 // writes a Sync stored at the wrong place
	UsedBytes     int64  // current page-cache size of the live files
}

func newDisk(s *Sim, owner *Process) *Disk {
	d := &Disk{sim: s, owner: owner, rng: s.Rand("disk/" + owner.name)}
	d.root = d.newInode(true)
	return d
}

// handle returns the env.Disk of the owner's current incarnation. It stops
// working when that incarnation ends.
func (d *Disk) handle() env.Disk { return &diskHandle{d: d, inc: d.owner.inc} }

// SetFaults replaces the disk's fault configuration; it applies to
// operations issued from now on.
func (d *Disk) SetFaults(f DiskFaults) { d.faults = f }

// Faults returns the current fault configuration.
func (d *Disk) Faults() DiskFaults { return d.faults }

// DeclareSurvivable declares which files (by the path an operation names)
// the disk's owner survives losing to damage at rest (latent sector
// errors, corruption, misdirected writes): files it checks and can rebuild
// or fetch again. Only they get those faults. A scenario declares it per
// process, and only for a minority of the replicas of any data, so that a
// correct system can always recover (TigerBeetle's fault atlas). nil
// declares nothing.
func (d *Disk) DeclareSurvivable(f func(name string) bool) { d.survivable = f }

// DeclareLatentSurvivable narrows latent sector errors (a page that
// becomes unreadable while the owner runs) to the survivable files f
// names: an owner may repair damage it finds when it starts (corruption
// and misdirected writes show only after a power loss) and yet not
// survive a read failing while it runs. nil (the default) gives latent
// errors to every survivable file.
func (d *Disk) DeclareLatentSurvivable(f func(name string) bool) { d.latentSurvivable = f }

// Survivable reports whether the disk's owner declared any file
// survivable.
func (d *Disk) Survivable() bool { return d.survivable != nil }

// atRest reports whether file name may get damage at rest.
func (d *Disk) atRest(name string) bool { return d.survivable != nil && d.survivable(name) }

// latentAtRest reports whether file name may get latent sector errors.
func (d *Disk) latentAtRest(name string) bool {
	return d.atRest(name) && (d.latentSurvivable == nil || d.latentSurvivable(name))
}

// Stats returns the disk's counters.
func (d *Disk) Stats() DiskStats {
	st := d.stats
	st.UsedBytes = d.used
	return st
}

// Files lists the paths of the files in the current (page-cache) view,
// sorted.
func (d *Disk) Files() []string { return collectFiles(d.root, false) }

// ReadFile returns a copy of a file's current (page-cache) content.
func (d *Disk) ReadFile(name string) ([]byte, bool) { return d.readFile(name, false) }

// DurableFiles lists the paths of the files that a crash now could not
// remove: those reachable from the root through durable directory entries,
// sorted.
func (d *Disk) DurableFiles() []string { return collectFiles(d.root, true) }

// ReadDurable returns a copy of the durable content of the file reachable
// under name through durable directory entries: what a crash now keeps at
// least (a torn tail may add to it).
func (d *Disk) ReadDurable(name string) ([]byte, bool) { return d.readFile(name, true) }

// readFile is ReadDurable if durable, else ReadFile.
func (d *Disk) readFile(name string, durable bool) ([]byte, bool) {
	n := d.resolve(name, durable)
	if n == nil || n.isDir {
		return nil, false
	}
	if durable {
		return append([]byte{}, n.durable...), true
	}
	return append([]byte{}, n.data...), true
}

// Failed reports whether the filesystem has failed: a SyncDir failed since
// the last power loss, and until the next one every change, Sync and
// SyncDir fails with an error wrapping env.ErrIO (see the type's
// documentation). No process restart cures it; an operator reboots the
// machine (Process.PowerCycle).
func (d *Disk) Failed() bool { return d.failed }

// failFS fails the filesystem after a failed SyncDir of dir: the journal
// transaction holding every unsynced directory change aborted, so none of
// them will ever be durable (they stay visible until a power loss), and
// nothing changes from now on.
func (d *Disk) failFS(dir string) {
	d.failed, d.failedBy = true, dir
	d.stats.FSFailures++
	for _, n := range d.pendingDirs {
		clear(n.pending)
		n.pending = nil
		n.inPendingList = false
	}
	d.pendingDirs = nil
}

// refuse returns the error of an operation that a failed filesystem
// refuses, or nil when the filesystem works.
func (d *Disk) refuse(op, name string) error {
	if !d.failed {
		return nil
	}
	d.stats.Refused++
	return fmt.Errorf("sim disk %s: %s %q: the filesystem failed (a failed directory sync of %q aborted its journal) and refuses changes until the machine restarts: %w",
		d.owner.name, op, name, d.failedBy, env.ErrIO)
}

// processExit is the end of an incarnation that leaves the machine up (a
// SIGKILL, an OOM kill): the OS closes the handles it left open and keeps
// the page cache, so nothing written is lost; what was not synced is
// still not durable, and a later power loss can lose it. A failed
// filesystem stays failed.
func (d *Disk) processExit() {
	for _, h := range d.handles {
		if !h.closed {
			h.closed = true
			h.node.opens--
			d.release(h.node)
		}
	}
	d.handles = nil
}

// trackHandle remembers an open handle for processExit, dropping closed
// ones once they are the majority so the list stays bounded by the open
// handles.
func (d *Disk) trackHandle(h *fileHandle) {
	if len(d.handles) >= 64 && len(d.handles)%64 == 0 {
		open := d.handles[:0]
		for _, o := range d.handles {
			if !o.closed {
				open = append(open, o)
			}
		}
		clear(d.handles[len(open):])
		d.handles = open
	}
	d.handles = append(d.handles, h)
}

// crash applies a power loss: see the type's documentation for what stays.
// The machine comes back with a working filesystem.
func (d *Disk) crash() {
	d.stats.Crashes++
	d.boot++
	d.handles = nil
	d.failed, d.failedBy = false, ""
	d.crashDirectories()

	// Rebuild the page cache from what is reachable through durable
	// entries. Sorted traversal keeps the torn-tail draws deterministic.
	d.used = 0
	seen := map[*inode]bool{d.root: true}
	var walk func(dir *inode, path string)
	walk = func(dir *inode, path string) {
		dir.entries = make(map[string]*inode, len(dir.durableEntries))
		for _, name := range sortedNames(dir.durableEntries) {
			child := dir.durableEntries[name]
			if seen[child] {
				// Only possible for a cycle of directories left by
				// independent prefixes; keep the first link.
				continue
			}
			seen[child] = true
			dir.entries[name] = child
			child.links, child.opens = 1, 0
			if child.isDir {
				walk(child, path+name+"/")
				continue
			}
			d.crashFile(child, path+name)
			d.used += int64(len(child.data))
		}
	}
	walk(d.root, "")
}

// syncLatency draws the latency of one Sync or SyncDir, stall included.
func (d *Disk) syncLatency(what string) time.Duration {
	lat := drawLatency(d.rng, d.faults.SyncLatencyMin, d.faults.SyncLatencyMax, defaultSyncLatencyMin, defaultSyncLatencyMax)
	if p := d.faults.StallProbability; p > 0 && d.rng.Float64() < p {
		stall := d.faults.StallLatency
		if stall <= 0 {
			stall = defaultStallLatency
		}
		lat += stall
		d.stats.Stalls++
		d.sim.Fault("disk-stall", d.owner.name+" "+what)
	}
	return lat
}

// syncFails draws whether a Sync or SyncDir fails with probability p
// (DiskFaults.SyncFailProbability or SyncDirFailProbability).
func (d *Disk) syncFails(p float64) bool {
	return p > 0 && d.rng.Float64() < p
}

// chance draws an event of probability p; p <= 0 draws nothing, so a
// disk without the fault consumes no randomness for it.
func (d *Disk) chance(p float64) bool { return p > 0 && d.rng.Float64() < p }

// metadataNoSpace returns the error of a create, mkdir or rename that finds
// no space: the disk is full (CapacityBytes), or DiskFaults.NoSpaceProbability
// drew it; nil otherwise.
func (d *Disk) metadataNoSpace(op, name string) error {
	if c := d.faults.CapacityBytes; c > 0 && d.used >= c {
		return d.noSpace(op, name, "disk full")
	}
	if d.chance(d.faults.NoSpaceProbability) {
		return d.noSpace(op, name, "injected: no block for the change")
	}
	return nil
}

func (d *Disk) noSpace(op, name string, detail string) error {
	d.stats.NoSpaceErrors++
	d.sim.Fault("disk-nospace", d.owner.name+" "+name)
	return fmt.Errorf("sim disk %s: %s %q: %s: %w", d.owner.name, op, name, detail, env.ErrNoSpace)
}

// sortedNames returns the keys of a directory map in lexical order, so that
// no map order reaches a decision.
func sortedNames(m map[string]*inode) []string {
	names := make([]string, 0, len(m))
	for name := range m { // sorted below
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// collectFiles lists file paths under root through current or durable
// entries.
func collectFiles(root *inode, durable bool) []string {
	var out []string
	seen := map[*inode]bool{root: true}
	var walk func(dir *inode, path string)
	walk = func(dir *inode, path string) {
		m := dir.entries
		if durable {
			m = dir.durableEntries
		}
		for _, name := range sortedNames(m) {
			child := m[name]
			if seen[child] {
				continue
			}
			seen[child] = true
			if child.isDir {
				walk(child, path+name+"/")
			} else {
				out = append(out, path+name)
			}
		}
	}
	walk(root, "")
	return out
}

// resolve finds name through current or durable entries, or returns nil.
func (d *Disk) resolve(name string, durable bool) *inode {
	parts, err := splitPath(name, true)
	if err != nil {
		return nil
	}
	n := d.root
	for _, part := range parts {
		if !n.isDir {
			return nil
		}
		m := n.entries
		if durable {
			m = n.durableEntries
		}
		if n = m[part]; n == nil {
			return nil
		}
	}
	return n
}

// splitPath validates a disk path and splits it into components. A single
// trailing slash is accepted (List reports directories that way). With
// allowRoot, "" and "." name the root (no components).
func splitPath(name string, allowRoot bool) ([]string, error) {
	clean := strings.TrimSuffix(name, "/")
	if clean == "" || clean == "." {
		if allowRoot {
			return nil, nil
		}
		return nil, invalidPath(name, "names the root directory")
	}
	if strings.HasPrefix(clean, "/") {
		return nil, invalidPath(name, "is absolute")
	}
	parts := strings.Split(clean, "/")
	for _, p := range parts {
		switch p {
		case "":
			return nil, invalidPath(name, "has an empty component")
		case ".", "..":
			return nil, invalidPath(name, "has a "+p+" component")
		}
	}
	return parts, nil
}

// invalidPath is the error for a malformed path. It wraps env.ErrNotExist:
// no entry of the disk can have such a name.
func invalidPath(name, why string) error {
	return fmt.Errorf("sim disk: invalid path %q (%s): %w", name, why, env.ErrNotExist)
}
