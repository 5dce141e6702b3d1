package log

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/record"
)

// cleanGroup is a group of consecutive inactive segments being rewritten
// into one cleaned segment (see the cleaner's doc in clean.go).
type cleanGroup struct {
	srcs     []cleanSource
	base     int64 // the first segment's base: the cleaned segment's name
	nextBase int64 // the base of the segment after the group
	// epochStarts are the leader epoch start offsets inside the group,
	// sorted: their batches stay (maybe empty).
	epochStarts []int64

	files [numKinds]env.File // the .cleaned files, open until synced
	// txnFile is the .txnindex.cleaned file, with Config.TxnIndex.
	txnFile env.File
	out     *segment // the cleaned segment being built

	src     int   // the source being read
	pos     int64 // where in it
	written bool  // every batch and both index files are written
	synced  bool  // the .cleaned files are synced and closed
}

// cleanSource is a segment of a group with its size and next offset when
// the group started: if either changes, or the segment leaves the log, the
// group is abandoned.
type cleanSource struct {
	seg        *segment
	size, next int64
}

// cleanStep advances the groups of a cleaning whose map is complete.
func (l *Log) cleanStep(r *cleanRound, now time.Time, budget int64, finish, later func(bool, error)) {
	g := r.group
	if g == nil {
		g = l.nextGroup(r)
		if g == nil {
			l.finishCleaning(r, now, finish)
			return
		}
		if err := l.startGroup(g); err != nil {
			l.abandonCleaning(fmt.Sprintf("creating the cleaned segment failed: %v", err))
			later(false, err)
			return
		}
		r.group = g
	}
	if why := l.groupChanged(g); why != "" {
		l.logger.Info("abandoning a group of segments being cleaned", "base", g.base, "reason", why)
		l.dropGroup(g)
		r.group = nil
		later(true, nil)
		return
	}
	if g.synced {
		l.swapStep(r, g, finish, later)
		return
	}
	if !g.written {
		if err := l.writeGroup(r, g, budget); err != nil {
			l.abandonCleaning(fmt.Sprintf("writing the cleaned segment failed: %v", err))
			later(false, err)
			return
		}
		if !g.written {
			later(true, nil)
			return
		}
	}
	l.syncGroup(r, g, finish)
}

// nextGroup picks the next group at or after the cleaning's cursor: as many
// consecutive segments based below the end of the map as fit in
// segment.bytes together (at least one) and in the relative offsets of one
// segment; nil when none is left.
func (l *Log) nextGroup(r *cleanRound) *cleanGroup {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base >= r.cursor })
	last := len(l.segs) - 1 // the active segment
	if i >= last || l.segs[i].base >= r.mapEnd {
		return nil
	}
	g := &cleanGroup{base: l.segs[i].base}
	size := int64(0)
	j := i
	for ; j < last && l.segs[j].base < r.mapEnd; j++ {
		s := l.segs[j]
		if j > i && (size+s.size > l.cfg.SegmentBytes || s.next-1-g.base > maxRelativeOffset) {
			break
		}
		size += s.size
		g.srcs = append(g.srcs, cleanSource{seg: s, size: s.size, next: s.next})
	}
	g.nextBase = l.segs[j].base
	g.epochStarts = l.epochStartsIn(g.base, g.nextBase)
	return g
}

// createCleaned creates (or empties) the group's .cleaned file of the
// kind with suffix. On failure it drops the group and returns the error,
// failing the log unless the disk is full.
func (l *Log) createCleaned(g *cleanGroup, suffix string) (env.File, error) {
	name := l.path(segmentFile(g.base, suffix+cleanedSuffix))
	f, err := l.disk.Open(name, true)
	if err == nil {
		l.dirChanged()
		if f.Size() > 0 {
			err = f.Truncate(0)
		}
	}
	if err == nil {
		return f, nil
	}
	if f != nil {
		_ = f.Close()
	}
	l.dropGroup(g)
	err = fmt.Errorf("log %s: create %s: %w", l.dir, name, err)
	if errors.Is(err, env.ErrNoSpace) {
		return nil, err
	}
	return nil, l.fail(err)
}

// startGroup creates the group's .cleaned files (emptying leftovers of an
// abandoned attempt) and its output segment.
func (l *Log) startGroup(g *cleanGroup) error {
	for k := range numKinds {
		f, err := l.createCleaned(g, kindSuffix[k])
		if err != nil {
			return err
		}
		g.files[k] = f
	}
	if l.cfg.TxnIndex {
		f, err := l.createCleaned(g, txnIndexSuffix)
		if err != nil {
			return err
		}
		g.txnFile = f
	}
	g.out = newSegment(g.base, l.e.Now())
	return nil
}

// groupChanged says why the group's segments are no longer those it
// started with, or "" if they are.
func (l *Log) groupChanged(g *cleanGroup) string {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base >= g.base })
	for k, src := range g.srcs {
		switch {
		case src.seg.deleted:
			return fmt.Sprintf("segment %d was deleted", src.seg.base)
		case i+k >= len(l.segs)-1 || l.segs[i+k] != src.seg:
			return fmt.Sprintf("segment %d moved", src.seg.base)
		case src.seg.size != src.size || src.seg.next != src.next:
			return fmt.Sprintf("segment %d changed", src.seg.base)
		}
	}
	return ""
}

// dropGroup abandons a group: it closes and deletes its .cleaned files.
// Failing to delete one is only logged: Open deletes leftovers, and the next
// attempt at the same base empties them.
func (l *Log) dropGroup(g *cleanGroup) {
	g.closeFiles(l)
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		name := l.path(segmentFile(g.base, suffix+cleanedSuffix))
		if err := l.disk.Remove(name); err != nil {
			if !errors.Is(err, env.ErrNotExist) {
				l.logger.Warn("deleting an abandoned cleaned file", "file", name, "err", err)
			}
			continue
		}
		l.dirChanged()
	}
}

func (g *cleanGroup) closeFiles(l *Log) {
	for k, f := range g.files {
		if f != nil {
			l.closeLogged(f, "closing a cleaned file")
			g.files[k] = nil
		}
	}
	if f := g.txnFile; f != nil {
		l.closeLogged(f, "closing a cleaned file")
		g.txnFile = nil
	}
}

// writeGroup cleans about budget bytes of the group's batches into its
// .cleaned log file (at least one batch), and once the last is written,
// writes the index files.
func (l *Log) writeGroup(r *cleanRound, g *cleanGroup, budget int64) error {
	c := l.clean
	used := int64(0)
	for used < budget && g.src < len(g.srcs) {
		src := g.srcs[g.src]
		f, err := l.handle(src.seg, kindLog, false)
		if err != nil {
			return err
		}
		sc := c.scanner(f, g.pos, src.size)
		for used < budget {
			decompressed := c.rr.Decompressed()
			b, pos, err := sc.next()
			if errors.Is(err, io.EOF) {
				g.src, g.pos = g.src+1, 0
				break
			}
			if err != nil {
				return err
			}
			last := g.src == len(g.srcs)-1 && pos+int64(b.Size()) == src.size
			n, err := l.cleanBatch(r, g, b, last)
			if errors.Is(err, errRecords) {
				// Its CRC holds but its records do not parse (a build
				// that did not validate records appended it): kept as it
				// is, none of its records removed, rather than stop the
				// log's compaction for good (Kafka marks such a log
				// uncleanable).
				l.logger.Warn("the cleaner keeps a batch whose records do not parse as it is",
					"file", f.Name(), "position", pos, "baseOffset", b.BaseOffset(), "err", err)
				c.stats.BatchesUnreadable++
				n, err = l.writeCleaned(g, b.Bytes())
			}
			if err != nil {
				return err
			}
			used += max(int64(b.Size()), c.rr.Decompressed()-decompressed) + n
			c.stats.BytesRead += int64(b.Size())
			c.stats.BytesWritten += n
			g.pos = pos + int64(b.Size())
		}
	}
	if g.src < len(g.srcs) {
		return nil
	}
	return l.finishGroupOutput(r, g)
}

// errRecords marks a batch whose records do not parse (its CRC matched).
var errRecords = errors.New("records do not parse")

// cleanBatch writes what stays of batch b into the group's output and
// returns the bytes written; last says b is the group's last batch.
func (l *Log) cleanBatch(r *cleanRound, g *cleanGroup, b record.Batch, last bool) (int64, error) {
	c := l.clean
	a := b.Attributes()
	if a.IsControl() || a.IsTransactional() {
		v, horizon := l.judgeTxn(r, b, last || containsOffset(g.epochStarts, b.BaseOffset()))
		return l.cleanTxnBatch(g, b, v, horizon)
	}
	if b.BaseOffset() >= r.mapEnd {
		return l.writeCleaned(g, b.Bytes())
	}
	horizon, hasHorizon := b.DeleteHorizon()
	rr := c.rr
	if err := rr.Reset(b); err != nil {
		return 0, fmt.Errorf("%w: %w", errRecords, err)
	}
	c.keep = c.keep[:0]
	kept, tombstones, expired := 0, 0, 0
	for rr.Next() {
		rec := rr.Record()
		keep := true
		switch {
		case rec.Key == nil:
			keep = false // Kafka drops keyless records from a compacted log
		default:
			if latest, ok := r.offsets[string(rec.Key)]; ok && latest > rec.Offset {
				keep = false
			} else if rec.Value == nil && hasHorizon && r.nowMs >= horizon {
				keep = false
				expired++
			}
		}
		if keep {
			kept++
			if rec.Value == nil {
				tombstones++
			}
		}
		c.keep = append(c.keep, keep)
	}
	if err := rr.Err(); err != nil {
		return 0, fmt.Errorf("%w: %w", errRecords, err)
	}
	removed := len(c.keep) - kept
	c.stats.RecordsRemoved += int64(removed)
	c.stats.TombstonesRemoved += int64(expired)
	if kept == 0 && !last && b.ProducerID() < 0 && !containsOffset(g.epochStarts, b.BaseOffset()) {
		c.stats.BatchesRemoved++
		return 0, nil
	}
	if tombstones > 0 {
		if !hasHorizon {
			horizon = r.nowMs + l.cfg.DeleteRetention.Milliseconds()
		}
		r.minHorizon = minHorizon(r.minHorizon, horizon)
	}
	if removed == 0 && (tombstones == 0 || hasHorizon) {
		return l.writeCleaned(g, b.Bytes())
	}
	// Rebuild the batch from the records it keeps.
	opts := c.rebuildOptions(b)
	if tombstones > 0 || hasHorizon {
		opts = append(opts, record.WithDeleteHorizon(horizon))
	}
	bl := c.builder
	bl.Reset(opts...)
	if err := rr.Reset(b); err != nil {
		return 0, fmt.Errorf("%w: %w", errRecords, err)
	}
	for i := 0; rr.Next(); i++ {
		if !c.keep[i] {
			continue
		}
		if err := copyRecord(bl, rr.Record()); err != nil {
			return 0, err
		}
	}
	if err := rr.Err(); err != nil {
		return 0, fmt.Errorf("%w: %w", errRecords, err)
	}
	out, err := bl.AppendTo(c.out[:0])
	if err != nil {
		return 0, err
	}
	c.out = out
	nb, err := record.ReadBatch(out, len(out))
	assert.That(err == nil && nb.BaseOffset() == b.BaseOffset() && nb.LastOffset() == b.LastOffset(),
		"cleaned batch at %d..%d rebuilt as %d..%d (%v)", b.BaseOffset(), b.LastOffset(), nb.BaseOffset(), nb.LastOffset(), err)
	c.stats.BatchesRewritten++
	return l.writeCleaned(g, out)
}

// writeCleaned appends one batch to the group's cleaned log file and
// accounts it in the output segment's metadata and indexes.
func (l *Log) writeCleaned(g *cleanGroup, p []byte) (int64, error) {
	out := g.out
	h := parseHeader(p)
	if h.baseOffset < out.next || h.lastOffset()-out.base > maxRelativeOffset {
		return 0, fmt.Errorf("%w: batch with offsets [%d, %d] cannot follow offset %d in the segment based at %d",
			ErrCorrupt, h.baseOffset, h.lastOffset(), out.next-1, out.base)
	}
	if out.size+int64(len(p)) > maxSegmentBytes {
		return 0, fmt.Errorf("%w: the cleaned segment %d would exceed %d bytes", record.ErrBatchTooLarge, out.base, maxSegmentBytes)
	}
	f := g.files[kindLog]
	if err := f.WriteAt(p, out.size); err != nil {
		err = fmt.Errorf("log %s: write %s: %w", l.dir, f.Name(), err)
		if errors.Is(err, env.ErrNoSpace) {
			return 0, err
		}
		return 0, l.fail(err)
	}
	out.account(h, out.size, l.cfg.indexPolicy(), false)
	return int64(len(p)), nil
}

// finishGroupOutput writes the cleaned segment's index files once its last
// batch is written.
func (l *Log) finishGroupOutput(r *cleanRound, g *cleanGroup) error {
	out := g.out
	lastSrc := g.srcs[len(g.srcs)-1]
	assert.That(out.size > 0 && out.next == lastSrc.next,
		"cleaned segment %d ends at %d (%d bytes), its last source %d at %d", out.base, out.next, out.size, lastSrc.seg.base, lastSrc.next)
	out.sealTimeIndex()
	for _, k := range []fileKind{kindIndex, kindTimeIndex} {
		var p []byte
		if k == kindIndex {
			p = out.offsets.unwritten(nil)
		} else {
			p = out.times.unwritten(nil)
		}
		f := g.files[k]
		if err := f.WriteAt(p, 0); err != nil {
			err = fmt.Errorf("log %s: write %s: %w", l.dir, f.Name(), err)
			if errors.Is(err, env.ErrNoSpace) {
				return err
			}
			return l.fail(err)
		}
	}
	out.offsets.written, out.times.written = len(out.offsets.entries), len(out.times.entries)
	if g.txnFile != nil {
		out.txns.entries = r.cleanedTxns(g)
		var p []byte
		for _, t := range out.txns.entries {
			p = encodeAbortedTxn(p, t)
		}
		if err := g.txnFile.WriteAt(p, 0); err != nil {
			err = fmt.Errorf("log %s: write %s: %w", l.dir, g.txnFile.Name(), err)
			if errors.Is(err, env.ErrNoSpace) {
				return err
			}
			return l.fail(err)
		}
		out.txns.written = len(out.txns.entries)
	}
	g.written = true
	return nil
}

// syncGroup syncs the group's three .cleaned files and closes them; the
// step calls back once all are durable. A failed Sync fails the log at
// once, as in the flush cycle (see op).
func (l *Log) syncGroup(r *cleanRound, g *cleanGroup, finish func(bool, error)) {
	files := g.files[:]
	if g.txnFile != nil {
		files = append(files[:numKinds:numKinds], g.txnFile)
	}
	pending := len(files)
	for _, f := range files {
		f.Sync(func(err error) {
			if err != nil {
				_ = l.failUnlessClosed(fmt.Errorf("sync %s: %w", f.Name(), err))
			}
			pending--
			if pending > 0 {
				return
			}
			if err := l.usable(); err != nil {
				finish(false, err)
				return
			}
			g.closeFiles(l)
			g.synced = true
			finish(true, nil)
		})
	}
}

// swapStep swaps a synced group in (see the cleaner's doc), then waits for
// the directory to be synced before calling back.
func (l *Log) swapStep(r *cleanRound, g *cleanGroup, finish, later func(bool, error)) {
	c := l.clean
	if err := l.swapIn(g); err != nil {
		later(false, err) // the log failed
		return
	}
	r.group, r.cursor = nil, g.nextBase
	c.stats.Swaps++
	c.stats.SegmentsCleaned += len(g.srcs)
	l.logger.Debug("swapped in a cleaned segment", "base", g.base, "segments", len(g.srcs), "bytes", g.out.size)
	l.syncDirChanges(func(err error) { finish(err == nil, err) })
}

// syncDirChanges calls done once the directory changes made so far are
// durable. The flush cycle syncs the directory: the log has one issuer of
// directory syncs, so that what a successful one covers and what a failed
// one fails (the log, and the filesystem: see env.Disk) is decided in one
// place, in order (the compaction crash sweeps found a recovery checkpoint
// on the disk without the segment it covered when the cleaner issued its
// own). Flush(0) waits for nothing else than what flush cycles always sync.
func (l *Log) syncDirChanges(done func(error)) {
	l.Flush(0, done)
}

// swapIn replaces the group's segments with its cleaned segment, on disk
// and in memory, in one turn of the loop. Any failure fails the log, whose
// disk then holds a prefix of the sequence, which Open completes or rolls
// back.
func (l *Log) swapIn(g *cleanGroup) error {
	rename := func(from, to string) error {
		if err := l.disk.Rename(l.path(from), l.path(to)); err != nil {
			return l.fail(fmt.Errorf("rename %s to %s: %w", from, to, err))
		}
		l.dirChanged()
		return nil
	}
	order := []string{indexSuffix, timeIndexSuffix, logSuffix} // the .log last: commit point, then done
	if l.cfg.TxnIndex {
		order = []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix}
	}
	for _, k := range order {
		if err := rename(segmentFile(g.base, k+cleanedSuffix), segmentFile(g.base, k+swapSuffix)); err != nil {
			return err
		}
	}
	for _, src := range g.srcs[1:] {
		l.retire(src.seg)
		if err := l.unlink(src.seg); err != nil {
			return err
		}
	}
	for _, k := range order {
		if err := rename(segmentFile(g.base, k+swapSuffix), segmentFile(g.base, k)); err != nil {
			return err
		}
	}
	first := g.srcs[0].seg
	l.retire(first)
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base >= g.base })
	assert.That(l.segs[i] == first, "swapping segment %d: not in the log", g.base)
	segs := make([]*segment, 0, len(l.segs)-len(g.srcs)+1)
	segs = append(segs, l.segs[:i]...)
	segs = append(segs, g.out)
	segs = append(segs, l.segs[i+len(g.srcs):]...)
	l.segs = segs
	l.enforceBudget(nil)
	return nil
}

// rebuildOptions are the options that rebuild batch b from the records
// the cleaner keeps: b's offsets, leader epoch, codec, producer and
// timestamp type, compressed with the cleaner's compressor, then extra.
func (c *cleanState) rebuildOptions(b record.Batch, extra ...record.BuilderOption) []record.BuilderOption {
	opts := []record.BuilderOption{
		record.WithBaseOffset(b.BaseOffset()),
		record.WithPartitionLeaderEpoch(b.PartitionLeaderEpoch()),
		record.WithCompression(b.Codec()),
		record.WithProducer(b.ProducerID(), b.ProducerEpoch(), b.BaseSequence()),
		record.WithLastOffsetDelta(b.LastOffsetDelta()),
		record.WithCompressor(c.comp),
	}
	if b.Attributes().TimestampType() == record.LogAppendTime {
		opts = append(opts, record.WithLogAppendTime(b.MaxTimestamp()))
	}
	return append(opts, extra...)
}

// copyRecord appends a record read from a stored batch to bl as it is
// (its offset delta, timestamp, key, value and headers).
func copyRecord(bl *record.Builder, rec *record.Record) error {
	return bl.AppendRecord(record.Record{
		Attributes: rec.Attributes, OffsetDelta: rec.OffsetDelta, Timestamp: rec.Timestamp,
		Key: rec.Key, Value: rec.Value, Headers: rec.Headers,
	})
}
