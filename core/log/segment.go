package log

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/record"
)

// fileKind names the three files of a segment.
type fileKind int

const (
	kindLog fileKind = iota
	kindIndex
	kindTimeIndex
	numKinds
)

var kindSuffix = [numKinds]string{logSuffix, indexSuffix, timeIndexSuffix}

// segment is one segment of the log: a .log file of whole batches with
// offsets in [base, next), its offset index and its time index. Its
// metadata stays in memory for the life of the Log; its file handles and
// index entries are held only while it is open (the active segment always
// is; others are opened on demand and closed by the open-file budget).
type segment struct {
	base int64
	// next is the offset after the segment's last batch. It is exact for
	// the active segment and for segments recovery scanned or the log
	// wrote; for inactive segments trusted at Open it is the next segment's
	// base offset, an upper bound.
	next int64
	// size is the bytes of whole batches in the .log file.
	size int64
	// maxTs is the largest batch maxTimestamp (record.NoTimestamp if none)
	// and maxTsOffset the last offset of the first batch that reached it.
	maxTs       int64
	maxTsOffset int64
	// firstTs is the maxTimestamp of the segment's first batch, the start
	// of segment.ms (NoTimestamp when the first batch had none or is
	// unknown), and created the wall-clock time the segment was created or
	// opened, used instead when there is no firstTs.
	firstTs int64
	created time.Time
	// bytesSinceIndex counts bytes appended since the last offset index
	// entry (index.interval.bytes).
	bytesSinceIndex int64

	// dirty[k] is set when file k has writes or truncations no Sync was
	// issued for yet; syncing counts Syncs in flight on the segment.
	dirty   [numKinds]bool
	syncing int
	// deleted: the segment left the log (retention, truncation); its
	// handles close once no ReadResult pins them.
	deleted bool

	files   [numKinds]env.File
	offsets *offsetIndex // nil while not loaded
	times   *timeIndex
	// txns is the segment's transaction index (txnindex.go), always in
	// memory; its file handle counts in the open-file budget.
	txns    txnIndex
	pins    int    // unreleased ReadResults on the .log file
	lastUse uint64 // for the least-recently-used choice of the budget
}

func newSegment(base int64, now time.Time) *segment {
	return &segment{
		base: base, next: base,
		maxTs: record.NoTimestamp, maxTsOffset: base,
		firstTs: record.NoTimestamp, created: now,
		offsets: &offsetIndex{}, times: &timeIndex{},
	}
}

func (s *segment) isDirty() bool {
	return s.dirty[kindLog] || s.dirty[kindIndex] || s.dirty[kindTimeIndex] || s.txns.dirty
}

// rel converts an offset of the segment to its relative offset.
func (s *segment) rel(offset int64) int32 { return int32(offset - s.base) }

// active returns the active segment, the last one.
func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// handle returns file k of s, opening it if needed (creating it with
// create), within the open-file budget.
func (l *Log) handle(s *segment, k fileKind, create bool) (env.File, error) {
	l.touch(s)
	if f := s.files[k]; f != nil {
		return f, nil
	}
	name := l.path(segmentFile(s.base, kindSuffix[k]))
	f, err := l.disk.Open(name, false)
	if create && errors.Is(err, env.ErrNotExist) {
		if f, err = l.disk.Open(name, true); err == nil {
			l.dirChanged()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("log: open %s: %w", name, err)
	}
	s.files[k] = f
	l.openFiles++
	l.enforceBudget(s)
	return f, nil
}

func (l *Log) touch(s *segment) {
	l.useTick++
	s.lastUse = l.useTick
}

// closeLogged closes f, logging a failure with msg; a file already closed
// is no failure.
func (l *Log) closeLogged(f env.File, msg string) {
	if err := f.Close(); err != nil && !errors.Is(err, env.ErrClosed) {
		l.logger.Warn(msg, "file", f.Name(), "err", err)
	}
}

// closeFiles closes every handle of s and, unless it is the active
// segment, drops its loaded indexes.
func (l *Log) closeFiles(s *segment) {
	for k, f := range s.files {
		if f != nil {
			l.closeLogged(f, "closing segment file")
			s.files[k] = nil
			l.openFiles--
		}
	}
	l.closeTxnFile(s)
	if s != l.active() || s.deleted {
		s.offsets, s.times = nil, nil
	}
}

// closeCleanIndexes closes the index file handles of s that hold no
// unsynced change. An index handle reopens on demand (handle): the active
// segment's indexes are served from memory, so an idle log needs only its
// .log handle, and a broker with many partitions holds about one file
// handle for each.
func (l *Log) closeCleanIndexes(s *segment) {
	if s.syncing > 0 {
		return
	}
	for _, k := range []fileKind{kindIndex, kindTimeIndex} {
		if f := s.files[k]; f != nil && !s.dirty[k] {
			l.closeLogged(f, "closing segment file")
			s.files[k] = nil
			l.openFiles--
		}
	}
	if !s.txns.dirty {
		l.closeTxnFile(s)
	}
}

// ReleaseIdleFiles closes the file handles the log can do without, if it
// has not touched a segment file since the previous call: every clean
// inactive segment's, the active segment's clean index files. A closed
// handle reopens when next needed. The partition's housekeeping calls it,
// so a log idle for a housekeeping interval keeps one handle open.
func (l *Log) ReleaseIdleFiles() {
	if l.useTick != l.idleMark {
		l.idleMark = l.useTick
		return
	}
	l.releaseCleanFiles()
}

// releaseCleanFiles closes every clean inactive segment's handles and the
// active segment's clean index handles.
func (l *Log) releaseCleanFiles() {
	for _, s := range l.segs {
		if l.evictable(s) {
			l.closeFiles(s)
		}
	}
	if len(l.segs) > 0 {
		l.closeCleanIndexes(l.active())
	}
}

// evictable reports whether the budget may close s now.
func (l *Log) evictable(s *segment) bool {
	return s != l.active() && s.pins == 0 && s.syncing == 0 && !s.isDirty() &&
		(s.files[kindLog] != nil || s.files[kindIndex] != nil || s.files[kindTimeIndex] != nil || s.txns.file != nil)
}

// enforceBudget closes least recently used inactive segments until the log
// is within MaxOpenFiles, never closing keep.
func (l *Log) enforceBudget(keep *segment) {
	for l.openFiles > l.cfg.MaxOpenFiles {
		var victim *segment
		for _, s := range l.segs {
			if s != keep && l.evictable(s) && (victim == nil || s.lastUse < victim.lastUse) {
				victim = s
			}
		}
		if victim == nil {
			return // everything open is pinned, dirty or active
		}
		l.closeFiles(victim)
	}
}

// openForRead makes s readable: its .log handle open and its indexes
// loaded (from its files, or rebuilt by a scan when they are missing or
// inconsistent).
func (l *Log) openForRead(s *segment) error {
	if _, err := l.handle(s, kindLog, false); err != nil {
		return err
	}
	if s.offsets != nil {
		return nil
	}
	return l.loadIndexes(s)
}

// loadIndexes reads the index files of an inactive segment. Index files of
// segments below the recovery point were synced complete, so anything
// wrong with them (missing, partial, out of order, pointing past the log)
// is damage: the indexes are rebuilt from the .log file, whose batches must
// then all be valid.
func (l *Log) loadIndexes(s *segment) error {
	offsets, times, err := l.readIndexFiles(s)
	if err == nil {
		s.offsets, s.times = offsets, times
		return nil
	}
	l.logger.Warn("rebuilding segment indexes", "segment", segmentFile(s.base, logSuffix), "reason", err)
	return l.rebuildIndexes(s)
}

// readIndexFiles reads and checks both index files of s.
func (l *Log) readIndexFiles(s *segment) (*offsetIndex, *timeIndex, error) {
	idx, err := l.readWhole(s, kindIndex)
	if err != nil {
		return nil, nil, err
	}
	entries, err := decodeOffsetIndex(idx, s.size)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", segmentFile(s.base, indexSuffix), err)
	}
	tidx, err := l.readWhole(s, kindTimeIndex)
	if err != nil {
		return nil, nil, err
	}
	tentries, err := decodeTimeIndex(tidx, s.next-s.base)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", segmentFile(s.base, timeIndexSuffix), err)
	}
	return &offsetIndex{entryList[offsetEntry]{entries: entries, written: len(entries)}},
		&timeIndex{entryList[timeEntry]{entries: tentries, written: len(tentries)}}, nil
}

// readWhole reads index file k of s stably through a short-lived handle
// (or the open one).
func (l *Log) readWhole(s *segment, k fileKind) ([]byte, error) {
	f := s.files[k]
	if f == nil {
		name := l.path(segmentFile(s.base, kindSuffix[k]))
		var err error
		if f, err = l.disk.Open(name, false); err != nil {
			return nil, fmt.Errorf("log: open %s: %w", name, err)
		}
		defer f.Close()
	}
	return readFileStable(f)
}

// repairIndexes rebuilds the indexes of s from its .log file after a
// lookup found them disagreeing with the batches on every read (why):
// damage at rest, a flipped bit or a misdirected write, that loading did
// not catch. The batch headers are walked first, without the indexes: only
// if they lead from the segment's start to its known end and size are the
// indexes to blame; then they are rebuilt (every batch CRC-checked) and
// rewritten. Otherwise the .log file is damaged, which the caller reports.
// Nothing is repaired while the log recovers, settles or truncates.
func (l *Log) repairIndexes(s *segment, why error) error {
	if l.failed != nil || l.trunc != nil || l.fl.settle || l.fl.recovering {
		return why
	}
	next, err := l.walkTail(s, 0, s.base)
	if err != nil {
		return err
	}
	if next != s.next {
		return fmt.Errorf("%w: the batches of %s end at offset %d, the segment at %d", errInconsistent, segmentFile(s.base, logSuffix), next, s.next)
	}
	size := s.size
	l.logger.Warn("rebuilding segment indexes that disagree with its batches", "segment", segmentFile(s.base, logSuffix), "reason", why)
	if err := l.rebuildIndexes(s); err != nil {
		return err
	}
	assert.That(s.next == next && s.size == size, "index rebuild of %s changed the segment: next %d->%d, size %d->%d",
		segmentFile(s.base, logSuffix), next, s.next, size, s.size)
	return nil
}

// rebuildIndexes scans every batch of s to rebuild its indexes in memory
// and rewrites its index files. Any torn or corrupt batch is an error:
// only segments the log trusts are rebuilt this way.
func (l *Log) rebuildIndexes(s *segment) error {
	f, err := l.handle(s, kindLog, false)
	if err != nil {
		return err
	}
	s.resetContent()
	sc := newScanner(f, 0, f.Size())
	for {
		batch, pos, err := sc.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		h := headerOf(batch)
		if err := s.checkFollows(h, pos, f.Name()); err != nil {
			return err
		}
		s.account(h, pos, l.cfg.indexPolicy(), false)
	}
	s.sealTimeIndex()
	return l.rewriteIndexFiles(s)
}

// rewriteIndexFiles replaces the content of both index files of s with its
// in-memory indexes (they are synced by the next flush cycle).
func (l *Log) rewriteIndexFiles(s *segment) error {
	for _, k := range []fileKind{kindIndex, kindTimeIndex} {
		f, err := l.handle(s, k, true)
		if err != nil {
			return err
		}
		if err := f.Truncate(0); err != nil {
			return l.fail(fmt.Errorf("truncate %s: %w", f.Name(), err))
		}
		s.dirty[k] = true
	}
	s.offsets.written, s.times.written = 0, 0
	if err := l.writeIndexes(s); err != nil {
		return err
	}
	l.requestBackground() // sync them, so the segment can close again
	return nil
}

// writeIndexes appends the index entries of s not yet in its files. It does
// not make them dirty: entries of the active segment need no Sync (recovery
// trusts only a prefix of them), and sealing a segment marks its index files
// dirty once.
func (l *Log) writeIndexes(s *segment) error {
	if s.offsets == nil {
		return nil
	}
	if err := l.writeIndex(s, kindIndex, &s.offsets.written, len(s.offsets.entries), offsetIndexEntryBytes, s.offsets.unwritten); err != nil {
		return err
	}
	return l.writeIndex(s, kindTimeIndex, &s.times.written, len(s.times.entries), timeIndexEntryBytes, s.times.unwritten)
}

// writeIndex appends the entries of one index of s not yet in its file of
// kind: *written of its entries are there, unwritten encodes the others.
func (l *Log) writeIndex(s *segment, kind fileKind, written *int, entries int, entryBytes int64, unwritten func([]byte) []byte) error {
	if *written >= entries {
		return nil
	}
	f, err := l.handle(s, kind, true)
	if err != nil {
		return err
	}
	l.indexBuf = unwritten(l.indexBuf[:0])
	if err := f.WriteAt(l.indexBuf, int64(*written)*entryBytes); err != nil {
		return l.fail(fmt.Errorf("write %s: %w", f.Name(), err))
	}
	*written = entries
	return nil
}

// maxRelativeOffset bounds an offset's distance from its segment's base:
// relative offsets are int32 in both indexes, as in Kafka.
const maxRelativeOffset = math.MaxInt32

// resetContent empties the segment's metadata and indexes before a rebuild.
func (s *segment) resetContent() {
	s.next, s.size = s.base, 0
	s.maxTs, s.maxTsOffset, s.firstTs, s.bytesSinceIndex = record.NoTimestamp, s.base, record.NoTimestamp, 0
	s.offsets, s.times = &offsetIndex{}, &timeIndex{}
}

// checkFollows reports a batch read from disk that cannot come next in s:
// its offsets overlap the segment's previous batch or leave the range
// relative offsets can express.
func (s *segment) checkFollows(h batchHeader, pos int64, file string) error {
	if h.baseOffset < s.next || h.lastOffset()-s.base > maxRelativeOffset || pos != s.size {
		return corruptAt(file, pos, nil, "batch with offsets [%d, %d] cannot follow offset %d in the segment based at %d",
			h.baseOffset, h.lastOffset(), s.next-1, s.base)
	}
	return nil
}

// indexPolicy is what decides index entries: index.interval.bytes and the
// capacity segment.index.bytes gives each index (the time index keeps one
// entry free for the one sealing adds).
type indexPolicy struct {
	interval             int64
	maxOffsets, maxTimes int
}

func (c Config) indexPolicy() indexPolicy {
	return indexPolicy{interval: c.IndexIntervalBytes, maxOffsets: c.maxOffsetIndexEntries(), maxTimes: c.maxTimeIndexEntries() - 1}
}

// full reports whether an index of s has no room left (a reason to roll).
func (p indexPolicy) full(s *segment) bool {
	return len(s.offsets.entries) >= p.maxOffsets || p.maxTimes > 0 && len(s.times.entries) >= p.maxTimes
}

// account adds the batch with header h, stored at pos (where the segment's
// batches end so far), to the segment's metadata and indexes, with Kafka's
// rule: a batch gets an offset index entry (and maybe a time index entry)
// when more than index.interval.bytes were appended since the last entry,
// as long as the index has room. indexed says the batch already has its
// entry (recovery resuming from a trusted entry).
func (s *segment) account(h batchHeader, pos int64, p indexPolicy, indexed bool) {
	if pos == 0 {
		s.firstTs = h.maxTimestamp
	}
	if h.maxTimestamp > s.maxTs {
		s.maxTs, s.maxTsOffset = h.maxTimestamp, h.lastOffset()
	}
	if !indexed && s.bytesSinceIndex > p.interval && len(s.offsets.entries) < p.maxOffsets {
		s.offsets.add(s.rel(h.lastOffset()), int32(pos))
		if len(s.times.entries) < p.maxTimes {
			s.times.maybeAdd(s.maxTs, s.rel(s.maxTsOffset))
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += h.size()
	s.size = pos + h.size()
	s.next = h.lastOffset() + 1
}

// sealTimeIndex adds the final time index entry Kafka writes when a segment
// stops being active, so that the last entry holds the segment's largest
// timestamp.
func (s *segment) sealTimeIndex() {
	s.times.maybeAdd(s.maxTs, s.rel(s.maxTsOffset))
}
