package sim

import (
	"errors"
	"fmt"
	"io"
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

// syncFile makes the file's changes up to seq upTo durable.
func (d *Disk) syncFile(f *inode, upTo uint64) {
	i := 0
	for ; i < len(f.unsynced) && f.unsynced[i].seq <= upTo; i++ {
		op := &f.unsynced[i]
		f.durable = op.apply(f.durable)
		d.stats.BytesSynced += uint64(len(op.data))
	}
	f.unsynced = dropOps(f.unsynced, i)
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
	if cut, ok := d.tornTail(f); ok {
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
	n := copy(p, f.data[off:])
	d := h.d
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
	f := h.node
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
		default:
			d.syncFile(f, upTo)
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
