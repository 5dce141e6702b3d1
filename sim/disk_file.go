package sim

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/strata-log/strata/core/env"
)

// A file's durability is tracked as a log of its unsynced changes rather
// than as snapshots: every write or truncation gets a per-file seq and is
// queued; a Sync remembers the latest seq at its call and, when it
// completes, replays the queued changes up to it onto the durable content
// and drops them. Each written byte is thus copied a bounded number of times
// whatever the number of Syncs, so a log of several MB synced thousands of
// times stays cheap. A Sync that completes after a later one finds nothing
// left to do, which is right: the later one covered more.

// fileOp is one unsynced change of a file: a write of data at off, or a
// truncation to size.
type fileOp struct {
	seq      uint64
	truncate bool
	off      int64  // write offset, or the new size of a truncation
	data     []byte // the bytes written; owned by the op
}

// apply performs op on buf and returns the result.
func (op *fileOp) apply(buf []byte) []byte {
	if op.truncate {
		if op.off <= int64(len(buf)) {
			return buf[:op.off]
		}
		return growTo(buf, op.off)
	}
	end := op.off + int64(len(op.data))
	buf = growTo(buf, end)
	copy(buf[op.off:end], op.data)
	return buf
}

// growTo extends buf to n bytes, zero-filled; bytes past len(buf) in its
// backing array may be stale (from a truncation), so they are cleared.
func growTo(buf []byte, n int64) []byte {
	if n <= int64(len(buf)) {
		return buf
	}
	if n <= int64(cap(buf)) {
		old := len(buf)
		buf = buf[:n]
		clear(buf[old:])
		return buf
	}
	nb := make([]byte, n, max(n, 2*int64(cap(buf))))
	copy(nb, buf)
	return nb
}

// syncFile makes the file's changes up to seq upTo durable. For a file
// that may get damage at rest (atRest), the medium may store one of the
// writes at the wrong place (DiskFaults.MisdirectProbability) or flip one
// of its bits (CorruptProbability); the page cache keeps the right bytes.
func (d *Disk) syncFile(f *inode, upTo uint64, atRest bool, name string) {
	n := 0
	for n < len(f.unsynced) && f.unsynced[n].seq <= upTo {
		n++
	}
	misdirect, corrupt := -1, -1
	if atRest && n > 0 {
		if d.chance(d.faults.MisdirectProbability) {
			misdirect = d.rng.IntN(n)
		}
		if d.chance(d.faults.CorruptProbability) {
			corrupt = d.rng.IntN(n)
		}
	}
	for i := range n {
		op := &f.unsynced[i]
		if i == misdirect && !op.truncate && len(op.data) > 0 {
			d.misdirect(f, op, name)
		} else {
			f.durable = op.apply(f.durable)
		}
		if i == corrupt && !op.truncate && len(op.data) > 0 {
			if at := op.off + d.rng.Int64N(int64(len(op.data))); at < int64(len(f.durable)) {
				f.durable[at] ^= 1 << d.rng.IntN(8)
				d.stats.Corruptions++
				d.sim.Fault("disk-corrupt", d.owner.name+" "+name+"@"+strconv.FormatInt(at, 10))
			}
		}
		d.stats.BytesSynced += uint64(len(op.data))
	}
	f.unsynced = dropOps(f.unsynced, n)
}

// misdirect stores write op at a wrong, page-aligned place of the file's
// durable extent as it was before the write: the write's own range keeps
// its old bytes (zeros where it extended the file), and the bytes it lands
// on are lost. A file with no durable page yet loses the write.
func (d *Disk) misdirect(f *inode, op *fileOp, name string) {
	extent := int64(len(f.durable))
	end := op.off + int64(len(op.data))
	f.durable = growTo(f.durable, end)
	d.stats.Misdirects++
	if extent == 0 {
		d.sim.Fault("disk-misdirect", d.owner.name+" "+name+"@"+strconv.FormatInt(op.off, 10)+"->lost")
		return
	}
	pages := (extent + pageBytes - 1) / pageBytes
	to := d.rng.Int64N(pages) * pageBytes
	if to == op.off/pageBytes*pageBytes && pages > 1 {
		to = (to + pageBytes) % (pages * pageBytes)
	}
	copy(f.durable[to:extent], op.data)
	d.sim.Fault("disk-misdirect", d.owner.name+" "+name+"@"+strconv.FormatInt(op.off, 10)+"->"+strconv.FormatInt(to, 10))
}

// loseFile forgets the file's changes up to seq upTo: a failed Sync covered
// them, so they never reach the durable layer.
func (d *Disk) loseFile(f *inode, upTo uint64) {
	i := 0
	for i < len(f.unsynced) && f.unsynced[i].seq <= upTo {
		i++
	}
	f.unsynced = dropOps(f.unsynced, i)
}

// dropOps removes the first n ops, releasing their data.
func dropOps(ops []fileOp, n int) []fileOp {
	if n == 0 {
		return ops
	}
	clear(ops[:n])
	if n == len(ops) {
		return ops[:0]
	}
	return ops[n:]
}

// crashFile turns the file's durable content, plus possibly a torn tail of
// its unsynced appends, into both its new durable content and its page
// cache.
func (d *Disk) crashFile(f *inode, name string) {
	content := f.durable
	if d.faults.PageCrash {
		content = d.crashPages(f, name)
	} else if cut, ok := d.tornTail(f); ok {
		for i := range f.unsynced {
			op := &f.unsynced[i]
			if op.off >= cut {
				break
			}
			part := *op
			part.data = op.data[:min(int64(len(op.data)), cut-op.off)]
			content = part.apply(content)
		}
		d.stats.TornTails++
		d.sim.Fault("disk-torn-tail", d.owner.name+" "+name+"@"+strconv.FormatInt(cut, 10))
	}
	f.durable = content
	f.data = append(make([]byte, 0, len(content)), content...)
	f.unsynced = nil
	f.dropBadFrom(int64(len(content)))
}

// crashPages draws what a crash keeps of a file under DiskFaults.PageCrash,
// as FoundationDB's AsyncFileNonDurable does on a kill: the size is one of
// the file's durable size and its sizes after each unsynced change, and
// every 4 KiB page below it holds either its durable content or its
// content after every unsynced change (the page cache minus what failed
// Syncs lost), each zero-filled past its own size. So unsynced writes
// survive in any page-granular subset, out of order, overwrites of
// durable bytes partly, truncations or not, and a lost page past the
// durable size reads as zeros (a hole). Bytes no unsynced change touched
// keep their durable value.
func (d *Disk) crashPages(f *inode, name string) []byte {
	old := f.durable
	if len(f.unsynced) == 0 {
		return old
	}
	cur := append([]byte(nil), old...)
	sizes := []int64{int64(len(old))}
	for i := range f.unsynced {
		cur = f.unsynced[i].apply(cur)
		sizes = append(sizes, int64(len(cur)))
	}
	size := sizes[d.rng.IntN(len(sizes))]
	out := make([]byte, size)
	var oldPage, newPage [pageBytes]byte
	var kept, lost int
	for start := int64(0); start < size; start += pageBytes {
		end := min(start+pageBytes, size)
		o, n := pageOf(oldPage[:end-start], old, start), pageOf(newPage[:end-start], cur, start)
		switch {
		case string(o) == string(n):
			copy(out[start:end], o)
		case d.rng.IntN(2) == 0:
			copy(out[start:end], n)
			kept++
		default:
			copy(out[start:end], o)
			lost++
		}
	}
	d.stats.PageCrashes++
	d.sim.Fault("disk-page-crash", d.owner.name+" "+name+" size="+strconv.FormatInt(size, 10)+
		" kept="+strconv.Itoa(kept)+" lost="+strconv.Itoa(lost))
	return out
}

// pageOf fills dst with buf[start:start+len(dst)], zeros past buf's end.
func pageOf(dst, buf []byte, start int64) []byte {
	n := 0
	if start < int64(len(buf)) {
		n = copy(dst, buf[start:])
	}
	clear(dst[n:])
	return dst
}

// Latent sector errors: f.bad lists the unreadable pages, sorted.

// badIn returns the first unreadable page overlapping [off, end), or -1.
func (f *inode) badIn(off, end int64) int64 {
	for _, pg := range f.bad {
		if pg*pageBytes < end && (pg+1)*pageBytes > off {
			return pg
		}
	}
	return -1
}

// markBad makes page pg unreadable.
func (f *inode) markBad(pg int64) {
	i, found := slices.BinarySearch(f.bad, pg)
	if !found {
		f.bad = slices.Insert(f.bad, i, pg)
	}
}

// repairWritten forgets the unreadable pages a write of [off, end) covers
// whole: the drive remaps a sector that is written.
func (f *inode) repairWritten(off, end int64) {
	f.bad = slices.DeleteFunc(f.bad, func(pg int64) bool { return pg*pageBytes >= off && (pg+1)*pageBytes <= end })
}

// dropBadFrom forgets the unreadable pages that start at or past size.
func (f *inode) dropBadFrom(size int64) {
	f.bad = slices.DeleteFunc(f.bad, func(pg int64) bool { return pg*pageBytes >= size })
}

// tornTail decides whether a crash keeps part of the file's unsynced data
// and where the kept data ends. A torn tail is possible only when the
// unsynced changes are appends in order: writes, each at or beyond the end
// of the previous one, the first at or beyond the durable size. The cut is
// drawn uniformly among the 512-byte file boundaries strictly inside one
// of the writes and the writes' ends.
func (d *Disk) tornTail(f *inode) (int64, bool) {
	if len(f.unsynced) == 0 {
		return 0, false
	}
	prevEnd := int64(len(f.durable))
	var cuts int64
	for i := range f.unsynced {
		op := &f.unsynced[i]
		if op.truncate || op.off < prevEnd {
			return 0, false
		}
		end := op.off + int64(len(op.data))
		cuts += sectorsInside(op.off, end) + 1
		prevEnd = end
	}
	if d.rng.Float64() >= tornTailProbability {
		return 0, false
	}
	pick := d.rng.Int64N(cuts)
	for i := range f.unsynced {
		op := &f.unsynced[i]
		end := op.off + int64(len(op.data))
		inside := sectorsInside(op.off, end)
		if pick < inside {
			return (op.off/sectorBytes + 1 + pick) * sectorBytes, true
		}
		if pick == inside {
			return end, true
		}
		pick -= inside + 1
	}
	panic("unreachable: torn-tail pick out of range")
}

// sectorsInside counts the sector boundaries b with off < b < end.
func sectorsInside(off, end int64) int64 {
	first := off/sectorBytes + 1
	last := (end - 1) / sectorBytes
	if last < first {
		return 0
	}
	return last - first + 1
}

// fileHandle is an env.File of one incarnation.
type fileHandle struct {
	d      *Disk
	node   *inode
	name   string
	inc    uint64
	closed bool
}

var _ env.File = (*fileHandle)(nil)

// errInvalid is wrapped by errors for arguments no file operation accepts,
// like a negative offset (EINVAL).
var errInvalid = errors.New("invalid argument")

func (h *fileHandle) check(op string) error {
	p := h.d.owner
	if !p.up || p.inc != h.inc {
		return fmt.Errorf("sim disk %s: %s %q: handle of a crashed incarnation: %w", p.name, op, h.name, env.ErrClosed)
	}
	if h.closed {
		return fmt.Errorf("sim disk %s: %s %q: %w", p.name, op, h.name, env.ErrClosed)
	}
	return nil
}

func (h *fileHandle) Name() string { return h.name }

func (h *fileHandle) Size() int64 { return int64(len(h.node.data)) }

func (h *fileHandle) ReadAt(p []byte, off int64) (int, error) {
	if err := h.check("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("sim disk: read %q at %d: %w", h.name, off, errInvalid)
	}
	f := h.node
	if off >= int64(len(f.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	d := h.d
	end := min(off+int64(len(p)), int64(len(f.data)))
	if pg := f.badIn(off, end); pg >= 0 {
		d.stats.ReadErrors++
		return 0, fmt.Errorf("sim disk %s: read %q at %d: latent sector error in page %d: %w", d.owner.name, h.name, off, pg, env.ErrIO)
	}
	if end > off && d.latentAtRest(h.name) && d.chance(d.faults.LatentErrorProbability) {
		pg := (off + d.rng.Int64N(end-off)) / pageBytes
		f.markBad(pg)
		d.stats.LatentErrors++
		d.stats.ReadErrors++
		d.sim.Fault("disk-latent-error", d.owner.name+" "+h.name+" page "+strconv.FormatInt(pg, 10))
		return 0, fmt.Errorf("sim disk %s: read %q at %d: latent sector error in page %d: %w", d.owner.name, h.name, off, pg, env.ErrIO)
	}
	n := copy(p, f.data[off:])
	if pr := d.faults.BitFlipProbability; pr > 0 && n > 0 && d.rng.Float64() < pr {
		bit := d.rng.IntN(n * 8)
		p[bit/8] ^= 1 << (bit % 8)
		d.stats.BitFlips++
		d.sim.Fault("disk-bitflip", d.owner.name+" "+h.name+"@"+strconv.FormatInt(off+int64(bit/8), 10))
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *fileHandle) WriteAt(p []byte, off int64) error {
	if err := h.check("write"); err != nil {
		return err
	}
	if off < 0 {
		return fmt.Errorf("sim disk: write %q at %d: %w", h.name, off, errInvalid)
	}
	return h.d.write(h, p, off)
}

func (h *fileHandle) Append(p []byte) (int64, error) {
	if err := h.check("append"); err != nil {
		return 0, err
	}
	off := int64(len(h.node.data))
	if err := h.d.write(h, p, off); err != nil {
		return 0, err
	}
	return off, nil
}

// write is the all-or-nothing write behind WriteAt and Append.
func (d *Disk) write(h *fileHandle, p []byte, off int64) error {
	if err := d.refuse("write", h.name); err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	f := h.node
	end := off + int64(len(p))
	if end > maxFileBytes {
		return d.noSpace("write", h.name, "beyond the maximum file size")
	}
	grow := max(0, end-int64(len(f.data)))
	if c := d.faults.CapacityBytes; c > 0 && grow > 0 && d.used+grow > c {
		return d.noSpace("write", h.name, "disk full")
	}
	if d.chance(d.faults.WriteErrorProbability) {
		d.stats.WriteErrors++
		d.sim.Fault("disk-write-error", d.owner.name+" "+h.name+"@"+strconv.FormatInt(off, 10))
		return fmt.Errorf("sim disk %s: write %q at %d: injected I/O error (nothing written): %w", d.owner.name, h.name, off, env.ErrIO)
	}
	f.repairWritten(off, end)
	f.data = growTo(f.data, end)
	copy(f.data[off:end], p)
	d.used += grow
	f.opSeq++
	f.unsynced = append(f.unsynced, fileOp{seq: f.opSeq, off: off, data: append([]byte(nil), p...)})
	d.stats.BytesWritten += uint64(len(p))
	return nil
}

func (h *fileHandle) Truncate(size int64) error {
	if err := h.check("truncate"); err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("sim disk: truncate %q to %d: %w", h.name, size, errInvalid)
	}
	d := h.d
	if err := d.refuse("truncate", h.name); err != nil {
		return err
	}
	if size > maxFileBytes {
		return d.noSpace("truncate", h.name, "beyond the maximum file size")
	}
	if d.chance(d.faults.NoSpaceProbability) {
		return d.noSpace("truncate", h.name, "injected: no block for the extent change")
	}
	f := h.node
	f.dropBadFrom(size)
	d.used += size - int64(len(f.data))
	f.opSeq++
	op := fileOp{seq: f.opSeq, truncate: true, off: size}
	f.data = op.apply(f.data)
	f.unsynced = append(f.unsynced, op)
	return nil
}

func (h *fileHandle) Sync(done func(error)) {
	d := h.d
	p := d.owner
	if !p.up || p.inc != h.inc {
		return // the incarnation that would get the callback is gone
	}
	label := p.label("disk-sync")
	if h.closed {
		err := h.check("sync")
		d.sim.schedule(p, 0, label, func() { done(err) })
		return
	}
	d.stats.Syncs++
	f, name := h.node, h.name
	upTo := f.opSeq
	lat := d.syncLatency("sync " + name)
	fail := d.syncFails(d.faults.SyncFailProbability)
	noSpace := !fail && d.chance(d.faults.SyncNoSpaceProbability)
	atRest := d.atRest(name)
	d.sim.schedule(p, lat, label, func() {
		switch {
		case d.failed:
			// The filesystem failed while this Sync was in flight (or
			// before): what it covered never reaches the disk.
			d.loseFile(f, upTo)
			done(d.refuse("sync", name))
		case fail:
			d.stats.FailedSyncs++
			d.sim.Fault("disk-sync-fail", p.name+" "+name)
			d.loseFile(f, upTo)
			done(fmt.Errorf("sim disk %s: sync %q: injected failure: %w", p.name, name, env.ErrIO))
		case noSpace:
			// Delayed allocation: the blocks are allocated at writeback,
			// which finds none. The writeback error is the same as an
			// EIO's for what the Sync covered: lost.
			d.stats.FailedSyncs++
			d.stats.NoSpaceErrors++
			d.sim.Fault("disk-sync-nospace", p.name+" "+name)
			d.loseFile(f, upTo)
			done(fmt.Errorf("sim disk %s: sync %q: no block at writeback (delayed allocation): %w", p.name, name, env.ErrNoSpace))
		default:
			d.syncFile(f, upTo, atRest, name)
			done(nil)
		}
	})
}

func (h *fileHandle) Close() error {
	if err := h.check("close"); err != nil {
		return err
	}
	h.closed = true
	h.node.opens--
	h.d.release(h.node)
	return nil
}
