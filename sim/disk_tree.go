package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
)

// inode is a file or a directory. Names live in directory entries, so an
// open handle keeps working after its name is removed or renamed, and a
// crash decides separately whether a file's name and its data survive.
type inode struct {
	ino   uint64
	isDir bool

	// Directory: the entries as seen now, the entries a crash keeps, and
	// the changes between the two in the order they were made.
	entries        map[string]*inode
	durableEntries map[string]*inode
	pending        []*dirChange
	inPendingList  bool

	// File: see disk_file.go.
	data     []byte   // page-cache content
	durable  []byte   // durable content
	unsynced []fileOp // changes not yet durable nor lost, in issue order
	opSeq    uint64   // seq of the file's latest change
	bad      []int64  // unreadable pages (latent sector errors), sorted

	links int // entries naming it in the current view
	opens int // open handles of the current incarnation
}

func (d *Disk) newInode(isDir bool) *inode {
	d.nextIno++
	n := &inode{ino: d.nextIno, isDir: isDir}
	if isDir {
		n.entries = map[string]*inode{}
		n.durableEntries = map[string]*inode{}
	}
	return n
}

// release drops a file's size from the used space once nothing refers to it.
func (d *Disk) release(n *inode) {
	if n.links == 0 && n.opens == 0 && !n.isDir {
		d.used -= int64(len(n.data))
	}
}

// dirChange is one unsynced change of one directory: entries set (to a
// node) or removed (node nil), applied together. A rename across
// directories is two dirChanges with the same seq, linked as partners, that
// become durable together.
type dirChange struct {
	seq     uint64
	dir     *inode
	changes []entryChange
	partner *dirChange
}

type entryChange struct {
	name string
	node *inode // nil removes the entry
}

// record applies a change to a directory's current view and queues it for
// durability.
func (d *Disk) record(c *dirChange) {
	dir := c.dir
	for _, ec := range c.changes {
		if ec.node == nil {
			delete(dir.entries, ec.name)
		} else {
			dir.entries[ec.name] = ec.node
		}
	}
	dir.pending = append(dir.pending, c)
	if !dir.inPendingList {
		dir.inPendingList = true
		d.pendingDirs = append(d.pendingDirs, dir)
	}
}

// change records a change of one directory.
func (d *Disk) change(dir *inode, changes ...entryChange) {
	d.dirSeq++
	d.record(&dirChange{seq: d.dirSeq, dir: dir, changes: changes})
}

// crossRename records a rename between two directories as one change of
// each, linked so that they become durable (or are undone) together.
func (d *Disk) crossRename(from *inode, oldName string, to *inode, newName string, n *inode) {
	d.dirSeq++
	out := &dirChange{seq: d.dirSeq, dir: from, changes: []entryChange{{name: oldName}}}
	in := &dirChange{seq: d.dirSeq, dir: to, changes: []entryChange{{name: newName, node: n}}}
	out.partner, in.partner = in, out
	d.record(out)
	d.record(in)
}

// commitDir makes durable, in order, the pending changes of dir whose seq is
// at most upTo. A cross-directory rename first commits everything its other
// directory did before it, so each directory's durable entries stay a
// prefix of its changes. The recursion ends because every nested call has a
// smaller bound.
func (d *Disk) commitDir(dir *inode, upTo uint64) {
	for len(dir.pending) > 0 && dir.pending[0].seq <= upTo {
		c := dir.pending[0]
		if p := c.partner; p != nil {
			d.commitDir(p.dir, c.seq-1)
			assert.That(len(p.dir.pending) > 0 && p.dir.pending[0] == p,
				"sim disk: rename half %d not at the front of its directory", c.seq)
			p.dir.pending = popFront(p.dir.pending)
			applyDurable(p)
		}
		dir.pending = popFront(dir.pending)
		applyDurable(c)
	}
}

func popFront(q []*dirChange) []*dirChange {
	q[0] = nil
	q = q[1:]
	if len(q) == 0 {
		return nil
	}
	return q
}

func applyDurable(c *dirChange) {
	for _, ec := range c.changes {
		if ec.node == nil {
			delete(c.dir.durableEntries, ec.name)
		} else {
			c.dir.durableEntries[ec.name] = ec.node
		}
	}
}

// crashDirectories picks, for every directory with unsynced changes, a
// seeded prefix of them to keep, makes it durable (extending other
// directories' prefixes where a kept rename requires it) and forgets the
// rest.
func (d *Disk) crashDirectories() {
	dirs := d.pendingDirs
	targets := make([]uint64, len(dirs))
	for i, dir := range dirs {
		n := len(dir.pending)
		if n == 0 {
			continue
		}
		// Favour the extremes, which are the interesting outcomes: nothing
		// of the unsynced changes, all of them, or a cut in between.
		var keep int
		switch d.rng.IntN(4) {
		case 0:
			keep = 0
		case 1:
			keep = n
		default:
			keep = d.rng.IntN(n + 1)
		}
		if keep > 0 {
			targets[i] = dir.pending[keep-1].seq
		}
	}
	for i, dir := range dirs {
		d.commitDir(dir, targets[i])
	}
	for _, dir := range dirs {
		if n := len(dir.pending); n > 0 {
			d.stats.DirUndone += uint64(n)
			d.sim.Fault("disk-dir-undo", d.owner.name+" dir#"+strconv.FormatUint(dir.ino, 10)+" "+strconv.Itoa(n))
		}
		dir.pending = nil
		dir.inPendingList = false
	}
	d.pendingDirs = nil
}

// diskHandle is the env.Disk of one incarnation.
type diskHandle struct {
	d   *Disk
	inc uint64
}

var (
	_ env.Disk      = (*diskHandle)(nil)
	_ env.DiskSpace = (*diskHandle)(nil)
)

// Space reports DiskFaults.CapacityBytes and what the live files leave
// of it; a disk without a capacity has no known size.
func (h *diskHandle) Space() (int64, int64, error) {
	c := h.d.faults.CapacityBytes
	if c <= 0 {
		return -1, -1, fmt.Errorf("sim disk %s: no capacity set", h.d.owner.name)
	}
	return c, max(c-h.d.used, 0), nil
}

// BootID names the machine's current boot: the power losses and disk
// replacements it went through.
func (h *diskHandle) BootID() string {
	return h.d.owner.name + "/boot-" + strconv.FormatUint(h.d.boot, 10)
}

// stale reports whether the incarnation that got this handle has ended.
func (h *diskHandle) stale() bool {
	p := h.d.owner
	return !p.up || p.inc != h.inc
}

func (h *diskHandle) staleErr(op, name string) error {
	return fmt.Errorf("sim disk %s: %s %q: handle of a crashed incarnation: %w", h.d.owner.name, op, name, env.ErrClosed)
}

// lookupDir walks the current view to the directory named by parts.
func (d *Disk) lookupDir(op, name string, parts []string) (*inode, error) {
	n := d.root
	for i, part := range parts {
		child := n.entries[part]
		if child == nil {
			return nil, fmt.Errorf("sim disk %s: %s %q: %q: %w", d.owner.name, op, name, strings.Join(parts[:i+1], "/"), env.ErrNotExist)
		}
		if !child.isDir {
			return nil, fmt.Errorf("sim disk %s: %s %q: %q is not a directory: %w", d.owner.name, op, name, strings.Join(parts[:i+1], "/"), env.ErrNotExist)
		}
		n = child
	}
	return n, nil
}

// lookupParent validates a non-root path and returns its parent directory
// and last component.
func (d *Disk) lookupParent(op, name string) (*inode, string, []string, error) {
	parts, err := splitPath(name, false)
	if err != nil {
		return nil, "", nil, err
	}
	dir, err := d.lookupDir(op, name, parts[:len(parts)-1])
	if err != nil {
		return nil, "", nil, err
	}
	return dir, parts[len(parts)-1], parts, nil
}

func (h *diskHandle) Open(name string, create bool) (env.File, error) {
	d := h.d
	if h.stale() {
		return nil, h.staleErr("open", name)
	}
	dir, base, _, err := d.lookupParent("open", name)
	if err != nil {
		return nil, err
	}
	n := dir.entries[base]
	switch {
	case n != nil && n.isDir:
		return nil, fmt.Errorf("sim disk %s: open %q: is a directory: %w", d.owner.name, name, env.ErrExist)
	case n == nil && !create:
		return nil, fmt.Errorf("sim disk %s: open %q: %w", d.owner.name, name, env.ErrNotExist)
	case n == nil:
		if err := d.refuse("create", name); err != nil {
			return nil, err
		}
		if err := d.metadataNoSpace("create", name); err != nil {
			return nil, err
		}
		n = d.newInode(false)
		n.links = 1
		d.change(dir, entryChange{name: base, node: n})
	}
	n.opens++
	fh := &fileHandle{d: d, node: n, name: strings.TrimSuffix(name, "/"), inc: h.inc}
	d.trackHandle(fh)
	return fh, nil
}

func (h *diskHandle) Remove(name string) error {
	d := h.d
	if h.stale() {
		return h.staleErr("remove", name)
	}
	dir, base, _, err := d.lookupParent("remove", name)
	if err != nil {
		return err
	}
	n := dir.entries[base]
	if n == nil {
		return fmt.Errorf("sim disk %s: remove %q: %w", d.owner.name, name, env.ErrNotExist)
	}
	if n.isDir && len(n.entries) > 0 {
		return fmt.Errorf("sim disk %s: remove %q: directory not empty: %w", d.owner.name, name, env.ErrExist)
	}
	if err := d.refuse("remove", name); err != nil {
		return err
	}
	d.change(dir, entryChange{name: base})
	n.links--
	d.release(n)
	return nil
}

func (h *diskHandle) Rename(oldName, newName string) error {
	d := h.d
	if h.stale() {
		return h.staleErr("rename", oldName)
	}
	from, oldBase, oldParts, err := d.lookupParent("rename", oldName)
	if err != nil {
		return err
	}
	to, newBase, newParts, err := d.lookupParent("rename", newName)
	if err != nil {
		return err
	}
	n := from.entries[oldBase]
	if n == nil {
		return fmt.Errorf("sim disk %s: rename %q: %w", d.owner.name, oldName, env.ErrNotExist)
	}
	if strings.Join(oldParts, "/") == strings.Join(newParts, "/") {
		return nil
	}
	if n.isDir && len(newParts) > len(oldParts) && strings.Join(newParts[:len(oldParts)], "/") == strings.Join(oldParts, "/") {
		return fmt.Errorf("sim disk %s: rename %q to %q: would move a directory into itself: %w", d.owner.name, oldName, newName, env.ErrExist)
	}
	old := to.entries[newBase]
	if old != nil {
		switch {
		case old.isDir != n.isDir:
			return fmt.Errorf("sim disk %s: rename %q to %q: target is of another type: %w", d.owner.name, oldName, newName, env.ErrExist)
		case old.isDir && len(old.entries) > 0:
			return fmt.Errorf("sim disk %s: rename %q to %q: target directory not empty: %w", d.owner.name, oldName, newName, env.ErrExist)
		}
	}
	if err := d.refuse("rename", oldName); err != nil {
		return err
	}
	if err := d.metadataNoSpace("rename", oldName); err != nil {
		return err
	}
	if from == to {
		d.change(from, entryChange{name: oldBase}, entryChange{name: newBase, node: n})
	} else {
		d.crossRename(from, oldBase, to, newBase, n)
	}
	if old != nil {
		old.links--
		d.release(old)
	}
	return nil
}

func (h *diskHandle) MkdirAll(dir string) error {
	d := h.d
	if h.stale() {
		return h.staleErr("mkdir", dir)
	}
	parts, err := splitPath(dir, true)
	if err != nil {
		return err
	}
	n := d.root
	for i, part := range parts {
		child := n.entries[part]
		switch {
		case child == nil:
			if err := d.refuse("mkdir", dir); err != nil {
				return err
			}
			if err := d.metadataNoSpace("mkdir", dir); err != nil {
				return err
			}
			child = d.newInode(true)
			child.links = 1
			d.change(n, entryChange{name: part, node: child})
		case !child.isDir:
			return fmt.Errorf("sim disk %s: mkdir %q: %q is a file: %w", d.owner.name, dir, strings.Join(parts[:i+1], "/"), env.ErrExist)
		}
		n = child
	}
	return nil
}

func (h *diskHandle) List(dir string) ([]string, error) {
	d := h.d
	if h.stale() {
		return nil, h.staleErr("list", dir)
	}
	parts, err := splitPath(dir, true)
	if err != nil {
		return nil, err
	}
	n, err := d.lookupDir("list", dir, parts)
	if err != nil {
		return nil, err
	}
	names := sortedNames(n.entries)
	for i, name := range names {
		if n.entries[name].isDir {
			names[i] = name + "/"
		}
	}
	return names, nil
}

func (h *diskHandle) SyncDir(dir string, done func(error)) {
	d := h.d
	if h.stale() {
		return // the incarnation that would get the callback is gone
	}
	d.stats.SyncDirs++
	label := d.owner.label("disk-syncdir")
	parts, err := splitPath(dir, true)
	var n *inode
	if err == nil {
		n, err = d.lookupDir("syncdir", dir, parts)
	}
	if err != nil {
		d.sim.schedule(d.owner, 0, label, func() { done(err) })
		return
	}
	upTo := d.dirSeq
	lat := d.syncLatency("syncdir " + dir)
	fail := d.syncFails(d.faults.SyncDirFailProbability)
	d.sim.schedule(d.owner, lat, label, func() {
		switch {
		case d.failed:
			done(d.refuse("syncdir", dir))
		case fail:
			d.stats.FailedSyncs++
			d.sim.Fault("disk-syncdir-fail", d.owner.name+" "+dir)
			d.failFS(dir)
			done(fmt.Errorf("sim disk %s: syncdir %q: injected failure (the filesystem fails until the machine restarts): %w", d.owner.name, dir, env.ErrIO))
		default:
			d.commitDir(n, upTo)
			done(nil)
		}
	})
}
