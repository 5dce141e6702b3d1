package log

import (
	"fmt"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/record"
)

// A truncation is made durable in an order that keeps every crash
// recoverable without false corruption reports (see flush.go):
//
//  1. the recovery checkpoint is rewritten with a recovery point at or
//     below the new log end (and the leader epoch checkpoint without the
//     epochs cut), synced and renamed into place, and the directory synced;
//  2. then the files change: later segments are deleted newest first (a
//     crash keeps a prefix of the old log, never a hole) and the segment
//     holding the new end is cut;
//  3. then every changed file and the directory are synced, and only then
//     does the callback run. Until it has, the log refuses other changes
//     (ErrBusy), so nothing is appended on top of a cut that might
//     still be undone.
//
// A crash during 1 leaves the old log; during 2 or 3, the old log or the
// new one (recovery cuts what a partial truncation leaves, all of it above
// the already lowered recovery point).

// truncation is a Truncate or TruncateFullyAndStartAt waiting for, or
// running in, a flush cycle.
type truncation struct {
	full bool  // start over empty at to
	to   int64 // Truncate's target, or the new start offset
	end  int64 // the log end offset afterwards
	done func(error)
}

// Truncate removes every batch holding an offset at or beyond to, for a
// follower whose log diverged from its leader's, and calls done once the
// truncation is durable. The log end offset becomes the end of the last
// batch that stays (to itself when to is a batch boundary, as it is for a
// follower; earlier when to falls inside a batch or after a gap), or the
// base offset of its segment if none stays there; that is what recovery
// finds, so it is the same after a restart. The segment holding the new end
// becomes the active one; the indexes, the epoch cache (epochs starting at
// or after the end), the high watermark (lowered to the end: the only way
// it moves backwards) and pending flushes are cut to match.
//
// A to below the log start offset empties the log as
// TruncateFullyAndStartAt(to) does; a to at or beyond the log end offset
// does nothing. Until done runs, other changes fail with ErrBusy;
// reads see the log as it was until the files change, then as truncated.
func (l *Log) Truncate(to int64, done func(error)) {
	if err := l.mutable(); err != nil {
		l.e.Post(func() { done(err) })
		return
	}
	if to >= l.LogEndOffset() {
		l.e.Post(func() { done(nil) })
		return
	}
	t := &truncation{full: to < l.logStart, to: max(to, 0), done: done}
	if !t.full {
		end, err := l.truncationEnd(to)
		if err != nil {
			l.e.Post(func() { done(err) })
			return
		}
		t.end = end
		if end < l.logStart {
			t.full = true // the batch holding the log start offset goes
		}
	}
	if t.full {
		t.end = t.to
	}
	l.startTruncation(t)
}

// TruncateFullyAndStartAt deletes every segment and starts the log over,
// empty, at offset, calling done once that is durable: log start offset,
// log end offset and high watermark all become offset (which may move them
// backwards), and the epoch cache is cleared. A follower does this when
// the leader's log starts beyond its own end. See Truncate for the
// ordering and ErrBusy.
func (l *Log) TruncateFullyAndStartAt(offset int64, done func(error)) {
	if err := l.mutable(); err != nil {
		l.e.Post(func() { done(err) })
		return
	}
	if offset < 0 {
		err := fmt.Errorf("log %s: %w: start offset %d", l.dir, ErrOffsetOutOfRange, offset)
		l.e.Post(func() { done(err) })
		return
	}
	l.startTruncation(&truncation{full: true, to: offset, end: offset, done: done})
}

func (l *Log) startTruncation(t *truncation) {
	l.trunc = t
	l.kick()
}

// truncationEnd returns the log end offset Truncate(to) leads to.
func (l *Log) truncationEnd(to int64) (int64, error) {
	s := l.segs[l.segmentFor(to)]
	if err := l.openForRead(s); err != nil {
		return 0, err
	}
	cut, err := l.findCut(s, to)
	if err != nil {
		return 0, err
	}
	if cut == 0 {
		return s.base, nil
	}
	// The end of the batch before the cut: walk from the last index entry
	// before it.
	pos, low := int64(0), s.base
	if i := s.offsets.floorPosition(cut - 1); i >= 0 {
		pos = int64(s.offsets.entries[i].pos)
	}
	end := low
	for pos < cut {
		h, err := l.readHeaderStable(s, pos)
		if err != nil {
			return 0, err
		}
		if !h.plausible(cut-pos) || h.baseOffset < end {
			return 0, corruptAt(s.files[kindLog].Name(), pos, nil, "no valid batch header while truncating")
		}
		end, pos = h.lastOffset()+1, pos+h.size()
	}
	return end, nil
}

// cycleTruncate runs a pending truncation as the first steps of flush cycle
// c (steps 1 and 2 above; step 3 is the cycle's sync and install steps).
func (l *Log) cycleTruncate(c *flushCycle) {
	t := l.trunc
	ck := l.newCheckpoint(min(l.fl.durableOffset, t.end))
	// Entries the owner added since the last checkpoint may not be
	// synced yet: the truncation's checkpoint claims no more than that one.
	ck.txnIndexEnd = min(ck.txnIndexEnd, l.fl.checkpointed.txnIndexEnd)
	epochs := l.epochs.view(l.fl.checkpointed.logStartOffset)
	if t.full {
		ck.logStartOffset = t.to
		epochs.clear()
	} else {
		epochs.truncateFromEnd(t.end)
	}
	l.beginInstall(c, func() {
		l.fl.checkpointed = ck
		l.epochs.prune(ck.logStartOffset)
		var err error
		if t.full {
			err = l.startOver(t.to)
		} else {
			err = l.applyTruncate(t.to)
		}
		if err != nil {
			_ = l.fail(err)
			return
		}
		assert.That(l.LogEndOffset() == t.end, "truncation planned to end at %d, ended at %d", t.end, l.LogEndOffset())
		c.truncation = t
		l.cycleSync(c)
	})
	// The lowered recovery point goes in place first: until it is, the old
	// epoch checkpoint must stay, since it vouches for epochs below the old
	// recovery point.
	l.writeTmp(c, checkpointName, ck.encode())
	l.writeTmp(c, epochCheckpointName, epochs.encode())
	l.end(c)
}

// applyTruncate changes the files and the state for Truncate(to).
func (l *Log) applyTruncate(to int64) error {
	i := l.segmentFor(to)
	s := l.segs[i]
	if err := l.openForRead(s); err != nil {
		return err
	}
	cut, err := l.findCut(s, to)
	if err != nil {
		return err
	}
	oldEnd := l.LogEndOffset()
	later := l.segs[i+1:]
	reversed := make([]*segment, len(later))
	for j, t := range later {
		reversed[len(later)-1-j] = t
	}
	if err := l.removeSegments(reversed, "truncated"); err != nil {
		return err
	}
	l.segs = l.segs[:i+1]
	if err := l.cutSegment(s, cut); err != nil {
		return err
	}
	end := l.LogEndOffset()
	l.logger.Info("truncated log", "from", oldEnd, "to", end)
	l.afterTruncation(end)
	return nil
}

// startOver deletes every segment, newest first, and starts the log empty
// at offset.
func (l *Log) startOver(offset int64) error {
	old := l.segs
	reversed := make([]*segment, len(old))
	for j, t := range old {
		reversed[len(old)-1-j] = t
	}
	if err := l.removeSegments(reversed, "the log starts over"); err != nil {
		return err
	}
	s, err := l.createSegment(offset)
	if err != nil {
		return l.fail(err)
	}
	l.segs = []*segment{s}
	l.logStart = offset
	l.epochs.clear()
	l.logger.Info("log starts over", "offset", offset)
	l.afterTruncation(offset)
	return nil
}

// afterTruncation adjusts what depends on the log end offset.
func (l *Log) afterTruncation(end int64) {
	assert.That(l.LogEndOffset() == end, "truncation to %d left the log end at %d", end, l.LogEndOffset())
	l.epochs.truncateFromEnd(end)
	l.cleanerTruncated(end)
	l.txnTruncated(end)
	l.hw = max(min(l.hw, end), l.logStart)
	l.fl.durableOffset = min(l.fl.durableOffset, end)
	l.writeHint()
	l.fl.metaGen++
	for i := range l.fl.waiters {
		l.fl.waiters[i].upto = min(l.fl.waiters[i].upto, end)
	}
}

// findCut returns the position of the first batch of s whose last offset is
// at least to (or the segment's size).
func (l *Log) findCut(s *segment, to int64) (int64, error) {
	pos, low := int64(0), s.base
	if i := s.offsets.floorOffset(to - s.base); i >= 0 {
		pos = int64(s.offsets.entries[i].pos)
	}
	for pos < s.size {
		h, err := l.readHeaderStable(s, pos)
		if err != nil {
			return 0, err
		}
		if !h.plausible(s.size-pos) || h.baseOffset < low || h.lastOffset() >= s.next {
			return 0, corruptAt(s.files[kindLog].Name(), pos, nil, "no valid batch header while looking for offset %d", to)
		}
		if h.lastOffset() >= to {
			return pos, nil
		}
		low = h.lastOffset() + 1
		pos += h.size()
	}
	return s.size, nil
}

// cutSegment truncates s at byte cut and makes it the active segment.
func (l *Log) cutSegment(s *segment, cut int64) error {
	for _, k := range []fileKind{kindLog, kindIndex, kindTimeIndex} {
		if _, err := l.handle(s, k, true); err != nil {
			return l.fail(err)
		}
	}
	if cut < s.size {
		if err := s.files[kindLog].Truncate(cut); err != nil {
			return l.fail(fmt.Errorf("truncate %s: %w", s.files[kindLog].Name(), err))
		}
		s.dirty[kindLog] = true
	}
	// Keep the index entries of the batches that stay, and the time
	// entries up to the last kept offset entry; then recompute the
	// metadata from there by reading the few headers up to the cut.
	s.offsets.truncateAtPosition(cut)
	resume, indexed := int64(0), false
	if e, ok := s.offsets.last(); ok {
		resume, indexed = int64(e.pos), true
		s.times.truncateAtOffset(int64(e.rel) + 1)
	} else {
		s.times.truncateAtOffset(0)
	}
	s.size, s.next, s.bytesSinceIndex = resume, s.base, 0
	s.maxTs, s.maxTsOffset = record.NoTimestamp, s.base
	if t, ok := s.times.last(); ok {
		s.maxTs, s.maxTsOffset = t.ts, s.base+int64(t.rel)
	}
	if resume == 0 {
		s.firstTs, s.created = record.NoTimestamp, l.e.Now()
	}
	for pos := resume; pos < cut; {
		h, err := l.readHeaderStable(s, pos)
		if err != nil {
			return err
		}
		if !h.plausible(cut-pos) || h.baseOffset < s.next {
			return corruptAt(s.files[kindLog].Name(), pos, nil, "no valid batch header while truncating")
		}
		if pos == resume && indexed {
			s.next = h.baseOffset
		}
		s.account(h, pos, l.cfg.indexPolicy(), pos == resume && indexed)
		pos += h.size()
	}
	assert.That(s.size == cut, "recomputed segment size %d, cut at %d", s.size, cut)
	if err := l.truncateTxns(s, s.next); err != nil {
		return err
	}
	// The index files lose the entries past what stays.
	for _, k := range []fileKind{kindIndex, kindTimeIndex} {
		f, err := l.handle(s, k, true)
		if err != nil {
			return l.fail(err)
		}
		keep, entryBytes := int64(s.offsets.written), int64(offsetIndexEntryBytes)
		if k == kindTimeIndex {
			keep, entryBytes = int64(s.times.written), timeIndexEntryBytes
		}
		if f.Size() > keep*entryBytes {
			if err := f.Truncate(keep * entryBytes); err != nil {
				return l.fail(fmt.Errorf("truncate %s: %w", f.Name(), err))
			}
			s.dirty[k] = true
		}
	}
	return l.writeIndexes(s)
}
