package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strings"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/record"
)

// Open opens (creating if needed) the partition log in dir on e's Disk and
// recovers it. Recovery reads only what the Disk holds, so it is the same
// after a clean Shutdown, a Close, a process crash or a power loss; the
// rules, in order:
//
//  1. Leftovers. A cleaner's swap that reached its commit point (a
//     <base>.log.swap file exists) is completed: the segments it replaces
//     besides base (those based after base and below the end of the swap
//     file's last batch) are deleted, then every <base>.*.swap file is
//     renamed over its final name. Then *.cleaned, *.swap (uncommitted),
//     *.deleted and *.tmp files are deleted, and so are .index and
//     .timeindex files whose .log file is missing. Other files (other
//     packages' state) are left alone. Each step is logged.
//  2. Checkpoints. recovery-checkpoint gives the recovery point R and the
//     log start offset; leader-epoch-checkpoint the epoch cache (none means
//     a new log: R = 0). A checkpoint that does not parse is corruption:
//     they are replaced by rename, never visible half-written.
//  3. Segments wholly below the checkpointed log start offset are deleted
//     unread (retention deleted them, or was about to).
//  4. Segments that end before the one holding R (or ending at R) are
//     trusted: their data and index files were synced before R passed them.
//     Open checks each cheaply: the last offset index entry must point at a
//     batch ending at its offset, and the batch headers after it are walked
//     to the end, which gives the segment's exact next offset. A failed check
//     or a missing index rebuilds the indexes by reading the whole segment,
//     whose batches must then all be valid. Batches at or beyond the next
//     segment's base offset are cut: that segment was created after a
//     truncation whose cut of this file had not reached the disk.
//  5. The epoch checkpoint must match the batches below R (a process that
//     died between a truncation and its checkpoint leaves a stale one in a
//     page cache that holds the truncated log); from the first entry that
//     does not, R is lowered so that the scan rebuilds the epochs.
//  6. The segment holding R keeps its index entries below R (entries are
//     appended in order, so they describe durable batches; it resumes no
//     later than the time index covers) and is read from the last of them;
//     later segments are read whole. Every range is read twice and compared
//     (no transient read flip is taken for damage), every batch is framed
//     and CRC-checked with core/record and must continue the offsets before
//     it, and the indexes and the epoch cache are rebuilt as it goes.
//  7. A bad batch (torn, corrupt, out of order) at or after R is a torn
//     tail: the segment is cut there and every later segment deleted. A
//     segment that ends before the next one starts lost its tail: the later
//     ones are deleted. Either below R is a hard error naming the file and
//     position: data the log made durable is never dropped silently.
//  8. If the log ends before R (a truncation's checkpoint that did not reach
//     the disk), R is lowered to the log end offset. The log start offset is
//     the checkpoint's or the first segment's base, whichever is larger; if
//     it lies beyond the log end, the log starts over, empty, there.
//
// The log Open returns is Busy (changes fail with ErrBusy) until its first
// flush cycle has settled: synced what recovery changed and anything a
// previous incarnation left unsynced in the page cache, in an order that
// keeps a crash meanwhile recoverable to the same result (see flush.go).
// Call Flush(LogEndOffset(), done) and start appending in done. The high
// watermark starts at the log start offset.
//
// An I/O error from the disk (env.ErrIO: a failed read, or a filesystem
// that refuses changes after a failed directory sync) makes Open fail
// with an error wrapping ErrStorageUnavailable: retry after a restart.
// Recovery may stop at any point, as it may crash at any point: every
// change it made before the error is one the next Open redoes or finds
// done, so the retry finishes the job. A filesystem that refuses changes
// refuses the first one, and then nothing has changed at all.
func Open(e env.Env, dir string, cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Log{e: e, disk: e.Disk(), dir: dir, cfg: cfg, logger: e.Logger().With("log", dir)}
	l.fl.recovering = true
	l.fl.hintWritten = -1 // no note written yet
	l.txn.last = -1
	if err := l.recover(); err != nil {
		for _, s := range l.segs {
			l.closeFiles(s)
		}
		if errors.Is(err, env.ErrIO) && !errors.Is(err, ErrCorrupt) {
			l.logger.Warn("cannot recover the log: the disk fails I/O; retry after a restart", "err", err)
			return nil, fmt.Errorf("log: open %s: %w: %w", dir, ErrStorageUnavailable, err)
		}
		return nil, fmt.Errorf("log: open %s: %w", dir, err)
	}
	return l, nil
}

// recover runs the recovery rules documented on Open.
func (l *Log) recover() error {
	if err := l.ensureDir(); err != nil {
		return err
	}
	l.markCompacted()
	bases, err := l.cleanLeftovers()
	if err != nil {
		return err
	}
	ckpt, hasCkpt, err := l.readCheckpoint()
	if err != nil {
		return err
	}
	if err := l.readEpochCheckpoint(); err != nil {
		return err
	}
	l.fl.checkpointed = ckpt
	l.fl.epochVersionWritten = l.epochs.version
	trusted, err := l.readFailedMarkers()
	if err != nil {
		return err
	}
	marked := len(l.fl.markers) > 0
	if len(bases) == 0 {
		return l.recoverEmpty(ckpt, hasCkpt)
	}

	now := l.e.Now()
	for i, base := range bases {
		s := &segment{base: base, next: base, maxTs: record.NoTimestamp, maxTsOffset: base, firstTs: record.NoTimestamp, created: now}
		if i+1 < len(bases) {
			s.next = bases[i+1]
		}
		l.segs = append(l.segs, s)
	}
	// Segments wholly below the durable log start offset are gone for any
	// reader: retention deleted them, or was about to (their files go at
	// the next directory sync, and retention stops syncing them). Delete
	// them unread.
	for len(l.segs) > 1 && l.segs[1].base <= ckpt.logStartOffset && hasCkpt {
		s := l.segs[0]
		l.logger.Info("deleting segment", "base", s.base, "reason", "below the log start offset")
		if err := l.unlink(s); err != nil {
			return err
		}
		l.segs = l.segs[1:]
	}
	recoveryPoint := ckpt.recoveryPoint
	if marked {
		if err := l.distrustFrom(trusted); err != nil {
			return err
		}
		if recoveryPoint > trusted {
			l.logger.Warn("lowering the recovery point to the failed log's durable offset",
				"recoveryPoint", recoveryPoint, "durableOffset", trusted)
			recoveryPoint = trusted
		}
	}
	// k is the segment holding the recovery point, or the one that ends
	// there: a segment rolled after the checkpoint ends exactly at the
	// recovery point, and its sealed index files need not be durable yet.
	k := 0
	for i, s := range l.segs {
		if s.base < recoveryPoint {
			k = i
		}
	}
	for i, s := range l.segs[:k] {
		if err := l.checkTrusted(s, l.segs[i+1].base); err != nil {
			return err
		}
	}
	// Epochs that start at or after R are rebuilt from the batches; those
	// below it must match the batches (rule 5).
	l.epochs.truncateFromEnd(recoveryPoint)
	if lowered, err := l.checkEpochs(recoveryPoint, k); err != nil {
		return err
	} else if lowered < recoveryPoint {
		recoveryPoint = lowered
		for k > 0 && l.segs[k].base >= recoveryPoint {
			k--
		}
	}
	// The segments recovery scans keep their rebuilt indexes in memory
	// until the index files are reconciled: the open-file budget must not
	// close them meanwhile.
	for _, s := range l.segs[k:] {
		s.pins++
	}
	for i := k; i < len(l.segs); i++ {
		s := l.segs[i]
		if i > k {
			prev := l.segs[i-1]
			if prev.next < s.base {
				// A segment starts where the one before it ended when it
				// rolled; here the one before lost its tail.
				if prev.next < recoveryPoint {
					return corruptAt(l.path(segmentFile(prev.base, logSuffix)), prev.size, nil,
						"segment ends at offset %d, before the recovery point %d, yet segment %s follows",
						prev.next, recoveryPoint, segmentFile(s.base, logSuffix))
				}
				if err := l.dropFrom(i, "the segment before them lost its unflushed tail"); err != nil {
					return err
				}
				break
			}
		}
		limit := int64(math.MaxInt64)
		if i+1 < len(l.segs) {
			limit = l.segs[i+1].base
		} else if marked {
			limit = trusted
		}
		torn, err := l.recoverSegment(s, recoveryPoint, i == k, limit)
		if err != nil {
			return err
		}
		if torn && i+1 < len(l.segs) {
			if err := l.dropFrom(i+1, "they follow a torn tail"); err != nil {
				return err
			}
			break
		}
	}
	// Scanned segments other than the active one are inactive: they get
	// their final time index entry, and their indexes must be synced
	// before the recovery point passes them.
	for i := k; i < len(l.segs); i++ {
		s := l.segs[i]
		if i < len(l.segs)-1 {
			s.sealTimeIndex()
			s.dirty[kindIndex], s.dirty[kindTimeIndex] = true, true
		}
		if err := l.reconcileIndexFiles(s); err != nil {
			return err
		}
		s.pins--
	}

	leo := l.LogEndOffset()
	if recoveryPoint > leo {
		l.logger.Warn("log ends before its recovery point; lowering it (a truncation's checkpoint was not durable)",
			"recoveryPoint", recoveryPoint, "logEndOffset", leo)
		recoveryPoint = leo
		l.fl.settle = true
	}
	l.logStart = max(ckpt.logStartOffset, l.segs[0].base)
	if !hasCkpt {
		l.logStart = l.segs[0].base
	}
	l.fl.durableOffset = recoveryPoint
	l.readHint(recoveryPoint, leo)
	if l.logStart > leo {
		l.logger.Warn("log start offset beyond the log end; emptying the log", "logStartOffset", l.logStart, "logEndOffset", leo)
		if err := l.startOver(l.logStart); err != nil {
			return err
		}
		l.fl.settle = true
	}
	l.epochs.truncateFromEnd(l.LogEndOffset())
	l.epochs.prune(l.logStart)
	if marked {
		// The cleaner checkpoint must not claim offsets the cut dropped.
		l.cleanerTruncated(l.LogEndOffset())
	}
	if l.cfg.TxnIndex {
		end := l.logStart // no txn-index-end: trust no entry
		if hasCkpt && ckpt.txnIndexEnd >= 0 {
			end = min(ckpt.txnIndexEnd, recoveryPoint)
		}
		names, err := l.disk.List(l.dir)
		if err != nil {
			return fmt.Errorf("list %s: %w", l.dir, err)
		}
		if err := l.loadTxnIndexes(names, end); err != nil {
			return err
		}
	}
	l.hw = l.logStart
	if err := l.openActive(); err != nil {
		return err
	}
	l.startRecovered()
	return nil
}

// distrustFrom applies a failure marker (failure.go) before the scan: the
// segments based at or beyond trusted are deleted, newest first, except the
// first; the scan then cuts the last one at trusted.
func (l *Log) distrustFrom(trusted int64) error {
	i := len(l.segs)
	for i > 1 && l.segs[i-1].base >= trusted {
		i--
	}
	if i == len(l.segs) {
		return nil
	}
	later := l.segs[i:]
	reversed := make([]*segment, len(later))
	for j, t := range later {
		reversed[len(later)-1-j] = t
	}
	if err := l.removeSegments(reversed, "beyond the failed log's durable offset"); err != nil {
		return err
	}
	l.segs = l.segs[:i]
	return nil
}

// startRecovered starts the first flush cycle, which settles what the log
// holds now: what this recovery changed, and anything a previous
// incarnation changed in the page cache without syncing (a process that
// died rather than the machine leaves those behind, invisible to recovery).
// Until it has, the log is busy.
func (l *Log) startRecovered() {
	l.fl.lastCheckpoint = l.e.Monotonic()
	l.fl.recovering = false
	l.fl.settle = true
	l.requestBackground()
}

// dropFrom deletes the segments from index i on, newest first, during
// recovery; the log settles before it accepts changes (see flush.go).
func (l *Log) dropFrom(i int, why string) error {
	later := l.segs[i:]
	reversed := make([]*segment, len(later))
	for j, t := range later {
		reversed[len(later)-1-j] = t
		t.pins--
	}
	if err := l.removeSegments(reversed, why); err != nil {
		return err
	}
	l.segs = l.segs[:i]
	l.fl.settle = true
	return nil
}

// recoverEmpty starts a log whose directory holds no segment.
func (l *Log) recoverEmpty(ckpt checkpoint, hasCkpt bool) error {
	start := int64(0)
	if hasCkpt {
		start = ckpt.logStartOffset
	}
	s, err := l.createSegment(start)
	if err != nil {
		return err
	}
	l.segs = []*segment{s}
	l.logStart, l.hw = start, start
	l.fl.durableOffset = start
	l.txn.end = start
	l.epochs.clear()
	if hasCkpt && ckpt.recoveryPoint != start {
		l.fl.settle = true
	}
	l.startRecovered()
	return nil
}

// openActive makes sure the active segment has all three files open and
// its first batch's timestamp known (for segment.ms).
func (l *Log) openActive() error {
	s := l.active()
	for k := range numKinds {
		if _, err := l.handle(s, k, true); err != nil {
			return err
		}
	}
	if s.size > 0 && s.firstTs == record.NoTimestamp {
		h, err := l.readHeaderStable(s, 0)
		if err != nil {
			return err
		}
		s.firstTs = h.maxTimestamp
	}
	return l.writeIndexes(s)
}

// ensureDir creates the log directory if it is missing. Whether or not this
// incarnation created it, the directory and its ancestors are synced by the
// first flush cycle: a previous incarnation may have created entries (the
// directory itself, segment files) and closed without syncing them.
func (l *Log) ensureDir() error {
	if _, err := l.disk.List(l.dir); err != nil {
		if !errors.Is(err, env.ErrNotExist) {
			return fmt.Errorf("list %s: %w", l.dir, err)
		}
		if err := l.disk.MkdirAll(l.dir); err != nil {
			return fmt.Errorf("create %s: %w", l.dir, err)
		}
	}
	for d := l.dir; d != "." && d != "" && d != "/"; d = path.Dir(d) {
		l.fl.parentDirs = append(l.fl.parentDirs, path.Dir(d))
	}
	l.dirChanged()
	return nil
}

// cleanLeftovers applies recovery rule 1 and returns the base offsets of
// the segments, sorted.
func (l *Log) cleanLeftovers() ([]int64, error) {
	names, err := l.disk.List(l.dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", l.dir, err)
	}
	// Complete committed swaps first.
	swapped := false
	for _, name := range names {
		base, suffix, ok := parseSegmentFile(name)
		if !ok || suffix != logSuffix+swapSuffix {
			continue
		}
		if err := l.dropSwapCovered(base, names); err != nil {
			return nil, err
		}
		for _, suffix := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix} {
			from := segmentFile(base, suffix+swapSuffix)
			if !contains(names, from) {
				continue
			}
			to := segmentFile(base, suffix)
			l.logger.Info("completing an interrupted segment swap", "from", from, "to", to)
			if err := l.disk.Rename(l.path(from), l.path(to)); err != nil {
				return nil, fmt.Errorf("rename %s: %w", from, err)
			}
			l.dirChanged()
			swapped = true
		}
	}
	if swapped {
		if names, err = l.disk.List(l.dir); err != nil {
			return nil, fmt.Errorf("list %s: %w", l.dir, err)
		}
	}
	var bases []int64
	for _, name := range names {
		if strings.HasSuffix(name, "/") {
			continue
		}
		base, suffix, isSegment := parseSegmentFile(name)
		var why string
		switch {
		case strings.HasSuffix(name, tmpSuffix):
			why = "an unfinished checkpoint"
		case !isSegment:
			continue // checkpoints, and files other packages keep here
		case suffix == logSuffix:
			bases = append(bases, base)
			continue
		case suffix == indexSuffix || suffix == timeIndexSuffix || suffix == txnIndexSuffix:
			if contains(names, segmentFile(base, logSuffix)) {
				continue
			}
			why = "an index without its segment"
		case strings.HasSuffix(suffix, cleanedSuffix):
			why = "an unfinished cleaned segment"
		case strings.HasSuffix(suffix, swapSuffix):
			why = "a swap file whose segment never committed"
		case strings.HasSuffix(suffix, deletedSuffix):
			why = "a segment file marked deleted"
		default:
			continue
		}
		l.logger.Info("deleting a leftover file", "file", name, "reason", why)
		if err := l.disk.Remove(l.path(name)); err != nil {
			return nil, fmt.Errorf("remove %s: %w", name, err)
		}
		l.dirChanged()
	}
	return bases, nil // List is sorted and the names are zero-padded
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func (l *Log) readCheckpoint() (checkpoint, bool, error) {
	name := l.path(checkpointName)
	data, ok, err := readCheckpointFile(l.disk, name)
	if err != nil || !ok {
		return checkpoint{}, false, err
	}
	c, err := parseCheckpoint(data)
	if err != nil {
		return checkpoint{}, false, corruptAt(name, 0, err, "unreadable checkpoint")
	}
	return c, true, nil
}

func (l *Log) readEpochCheckpoint() error {
	name := l.path(epochCheckpointName)
	data, ok, err := readCheckpointFile(l.disk, name)
	if err != nil || !ok {
		return err
	}
	entries, err := parseEpochCheckpoint(data)
	if err != nil {
		return corruptAt(name, 0, err, "unreadable leader epoch checkpoint")
	}
	l.epochs.entries = entries
	return nil
}

// checkTrusted applies recovery rule 4 to a segment wholly below the
// recovery point; limit is the next segment's base offset.
func (l *Log) checkTrusted(s *segment, limit int64) error {
	f, err := l.handle(s, kindLog, false)
	if err != nil {
		return err
	}
	s.size = f.Size()
	s.next = math.MaxInt64 // unknown until the walk
	from, low, err := l.checkTrustedIndexes(s)
	if err == nil {
		s.next, err = l.walkTail(s, from, low)
	}
	if err != nil {
		if !errors.Is(err, errInconsistent) && !errors.Is(err, env.ErrNotExist) {
			return err
		}
		l.logger.Warn("rebuilding the indexes of a segment below the recovery point", "segment", f.Name(), "reason", err)
		if err := l.rebuildIndexes(s); err != nil {
			return err
		}
	}
	if s.next <= limit {
		return nil
	}
	l.logger.Warn("cutting batches beyond the next segment's base (a truncation that did not reach the disk)",
		"segment", f.Name(), "nextOffset", s.next, "nextSegment", limit)
	if err := l.openForRead(s); err != nil {
		return err
	}
	cut, err := l.findCut(s, limit)
	if err != nil {
		return err
	}
	if err := l.cutSegment(s, cut); err != nil {
		return err
	}
	l.fl.settle = true
	s.sealTimeIndex()
	s.dirty[kindIndex], s.dirty[kindTimeIndex] = true, true
	return l.writeIndexes(s)
}

// walkTail reads the headers of the batches of s from position from (a
// batch whose base offset is at least low) to the end and returns the
// segment's next offset. Anything but whole batches in increasing order is
// errInconsistent.
func (l *Log) walkTail(s *segment, from, low int64) (int64, error) {
	next := low
	for pos := from; pos < s.size; {
		h, err := l.readHeaderStable(s, pos)
		if err != nil {
			return 0, err
		}
		if !h.plausible(s.size-pos) || h.baseOffset < next || h.lastOffset()-s.base > maxRelativeOffset {
			return 0, fmt.Errorf("%w: no batch at %d of %s after offset %d", errInconsistent, pos, segmentFile(s.base, logSuffix), next)
		}
		next, pos = h.lastOffset()+1, pos+h.size()
	}
	return next, nil
}

// checkTrustedIndexes checks the last entries of both index files of s
// (see recovery rule 4), sets the segment's largest timestamp from the
// time index, and returns the position of the last offset index entry's
// batch and the lowest base offset it may have.
func (l *Log) checkTrustedIndexes(s *segment) (int64, int64, error) {
	from, low := int64(0), s.base
	last, ok, err := l.readLastEntry(s, kindIndex, offsetIndexEntryBytes)
	if err != nil {
		return 0, 0, err
	}
	if ok {
		rel, pos := int32(binary.BigEndian.Uint32(last)), int64(int32(binary.BigEndian.Uint32(last[4:])))
		if rel < 0 || pos < 0 || pos >= s.size {
			return 0, 0, fmt.Errorf("%w: last offset index entry (%d, %d) outside the segment", errInconsistent, rel, pos)
		}
		h, err := l.readHeaderStable(s, pos)
		if err != nil {
			return 0, 0, err
		}
		if !h.plausible(s.size-pos) || h.lastOffset() != s.base+int64(rel) {
			return 0, 0, fmt.Errorf("%w: last offset index entry (%d, %d) does not point at a batch ending at %d",
				errInconsistent, rel, pos, s.base+int64(rel))
		}
		from, low = pos, h.baseOffset
	}
	last, ok, err = l.readLastEntry(s, kindTimeIndex, timeIndexEntryBytes)
	if err != nil {
		return 0, 0, err
	}
	if ok {
		ts, rel := int64(binary.BigEndian.Uint64(last)), int32(binary.BigEndian.Uint32(last[8:]))
		if ts < 0 || rel < 0 {
			return 0, 0, fmt.Errorf("%w: last time index entry (%d, %d) is negative", errInconsistent, ts, rel)
		}
		s.maxTs, s.maxTsOffset = ts, s.base+int64(rel)
	}
	return from, low, nil
}

// readLastEntry reads the last entry of index file k of s stably; ok is
// false for an empty file.
func (l *Log) readLastEntry(s *segment, k fileKind, entryBytes int64) ([]byte, bool, error) {
	name := l.path(segmentFile(s.base, kindSuffix[k]))
	f, err := l.disk.Open(name, false)
	if err != nil {
		return nil, false, fmt.Errorf("open %s: %w", name, err)
	}
	defer f.Close()
	size := f.Size()
	if size%entryBytes != 0 {
		return nil, false, fmt.Errorf("%w: %s has %d bytes, not whole %d-byte entries", errInconsistent, name, size, entryBytes)
	}
	if size == 0 {
		return nil, false, nil
	}
	p, scratch := make([]byte, entryBytes), make([]byte, entryBytes)
	if err := readStable(f, p, scratch, size-entryBytes); err != nil {
		if errors.Is(err, env.ErrIO) {
			// An unreadable index (a latent sector error) is rebuilt
			// from its segment, like an inconsistent one: the segment,
			// not the index, holds the data.
			return nil, false, fmt.Errorf("%w: %s unreadable: %w", errInconsistent, name, err)
		}
		return nil, false, err
	}
	return p, true, nil
}

// readHeaderStable reads the navigation header of the batch at pos of s.
func (l *Log) readHeaderStable(s *segment, pos int64) (batchHeader, error) {
	f, err := l.handle(s, kindLog, false)
	if err != nil {
		return batchHeader{}, err
	}
	var p, scratch [headerReadBytes]byte
	if err := readStable(f, p[:], scratch[:], pos); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return batchHeader{}, fmt.Errorf("%w: no batch header at %d of %s", errInconsistent, pos, f.Name())
		}
		return batchHeader{}, err
	}
	return parseHeader(p[:]), nil
}

// recoverSegment applies recovery rules 6 and 7 to s; first says s holds
// the recovery point, limit is the next segment's base offset (batches at
// or beyond it are cut, as in rule 4). It reports whether it cut a torn
// tail.
func (l *Log) recoverSegment(s *segment, recoveryPoint int64, first bool, limit int64) (bool, error) {
	f, err := l.handle(s, kindLog, false)
	if err != nil {
		return false, err
	}
	fileSize := f.Size()
	start, resumed, err := int64(0), false, error(nil)
	if first {
		start, resumed, err = l.resumePoint(s, recoveryPoint, fileSize)
		if err != nil {
			return false, err
		}
	} else {
		s.resetContent()
	}
	sc := newScanner(f, start, fileSize)
	torn := false
	// A failure marker at this segment's base keeps none of it: it is cut
	// unread, so that a page of it the disk cannot read does not stop the
	// open (core/replica drops damage so).
	for limit > s.base {
		batch, pos, err := sc.next()
		if errors.Is(err, io.EOF) {
			break
		}
		var h batchHeader
		if err == nil {
			h = headerOf(batch)
			err = s.checkFollows(h, pos, f.Name())
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				return false, err
			}
			if s.next < recoveryPoint {
				return false, fmt.Errorf("batch holding offsets below the recovery point %d: %w", recoveryPoint, err)
			}
			l.logger.Warn("truncating a torn tail", "file", f.Name(), "position", pos, "offset", s.next, "reason", err)
			torn = true
			break
		}
		if h.lastOffset() >= limit {
			l.logger.Warn("cutting batches beyond the next segment's base (a truncation that did not reach the disk) or the failed log's durable offset",
				"file", f.Name(), "position", pos, "limit", limit)
			break
		}
		s.account(h, pos, l.cfg.indexPolicy(), resumed && pos == start)
		if epoch := h.leaderEpoch; epoch >= 0 && epoch > l.epochs.latestEpoch() {
			if last, ok := l.epochs.latest(); !ok || h.baseOffset > last.startOffset {
				l.epochs.assign(epoch, h.baseOffset)
			}
		}
	}
	// After a failure (failure.go) the cut is issued even when the page
	// cache already ends there: the failed incarnation may have cut the
	// file in the page cache only, its Sync lost.
	if s.size < fileSize || len(l.fl.markers) > 0 {
		if err := f.Truncate(s.size); err != nil {
			return false, fmt.Errorf("truncate %s to %d: %w", f.Name(), s.size, err)
		}
		s.dirty[kindLog] = true
		l.fl.settle = true
	}
	if s.next > recoveryPoint {
		s.dirty[kindLog] = true
	}
	return torn, nil
}

// resumePoint loads the index entries of the segment holding the recovery
// point that describe batches below it and returns where scanning resumes:
// the position of the last such entry (its batch is rescanned), or 0.
func (l *Log) resumePoint(s *segment, recoveryPoint, fileSize int64) (int64, bool, error) {
	s.resetContent()
	offsets, err := l.readIndexPrefix(s, kindIndex, offsetIndexEntryBytes)
	if err != nil {
		return 0, false, err
	}
	times, err := l.readIndexPrefix(s, kindTimeIndex, timeIndexEntryBytes)
	if err != nil {
		return 0, false, err
	}
	// Keep the longest well-formed prefix of entries below the recovery
	// point.
	s.offsets.entries = offsetIndexPrefix(offsets, s.base, fileSize, recoveryPoint)
	for i := 0; i+timeIndexEntryBytes <= len(times); i += timeIndexEntryBytes {
		ts, rel := int64(binary.BigEndian.Uint64(times[i:])), int32(binary.BigEndian.Uint32(times[i+8:]))
		last, has := s.times.last()
		if ts < 0 || rel < 0 || s.base+int64(rel) >= recoveryPoint || has && (ts <= last.ts || rel < last.rel) {
			break
		}
		s.times.entries = append(s.times.entries, timeEntry{ts: ts, rel: rel})
	}
	// The time index file may have kept fewer entries than the offset
	// index file (they are separate files). The largest timestamp below
	// the resume point is known only up to the moment the last kept time
	// entry was added, which is the first offset entry at or after its
	// offset; resume no later than that. Without any time entry nothing
	// vouches for it: scan the whole segment.
	if t, ok := s.times.last(); !ok {
		s.offsets.entries = s.offsets.entries[:0]
	} else if m := s.offsets.floorOffset(int64(t.rel) - 1); m+1 < len(s.offsets.entries) {
		s.offsets.entries = s.offsets.entries[:m+2]
	}
	// The scan resumes at the batch of the last kept offset entry, which
	// must be where the entry says.
	for {
		e, ok := s.offsets.last()
		if !ok {
			s.times.entries = s.times.entries[:0]
			return 0, false, nil
		}
		h, err := l.readHeaderStable(s, int64(e.pos))
		if err != nil && !errors.Is(err, errInconsistent) {
			return 0, false, err
		}
		if err == nil && h.plausible(fileSize-int64(e.pos)) && h.lastOffset() == s.base+int64(e.rel) {
			s.times.truncateAtOffset(int64(e.rel) + 1)
			if t, ok := s.times.last(); ok {
				s.maxTs, s.maxTsOffset = t.ts, s.base+int64(t.rel)
			}
			s.size, s.next = int64(e.pos), h.baseOffset
			return int64(e.pos), true, nil
		}
		s.offsets.entries = s.offsets.entries[:len(s.offsets.entries)-1]
	}
}

// offsetIndexPrefix decodes the longest well-formed prefix of an offset
// index file whose entries point into a log of fileSize bytes and describe
// batches below the offset below.
func offsetIndexPrefix(data []byte, base, fileSize, below int64) []offsetEntry {
	var out []offsetEntry
	for i := 0; i+offsetIndexEntryBytes <= len(data); i += offsetIndexEntryBytes {
		rel, pos := int32(binary.BigEndian.Uint32(data[i:])), int32(binary.BigEndian.Uint32(data[i+4:]))
		n := len(out)
		if rel < 0 || pos <= 0 || int64(pos) >= fileSize || base+int64(rel) >= below ||
			n > 0 && (rel <= out[n-1].rel || pos <= out[n-1].pos) {
			break
		}
		out = append(out, offsetEntry{rel: rel, pos: pos})
	}
	return out
}

// checkEpochs applies recovery rule 5. The epoch cache below the recovery
// point is trusted only if it matches the batches: after a power loss it
// always does (the flush cycle orders its writes), but a process that died
// between a truncation and the checkpoint that records it leaves the page
// cache holding the truncated, rewritten log beside the old checkpoints.
// Stale entries are a suffix (they start at or after the truncation point),
// so entries are checked from the last one back; the first that matches
// (the batch at its start offset carries its epoch) vouches for the ones
// before it. If any did not match, the recovery point is lowered to the
// start of the last matching epoch (0 if none), so that the scan rebuilds
// the rest from the batches, and the returned value says so.
func (l *Log) checkEpochs(recoveryPoint int64, k int) (int64, error) {
	entries := l.epochs.entries
	valid := len(entries)
	for valid > 0 {
		ok, err := l.epochMatches(entries[valid-1], valid == 1, recoveryPoint, k)
		if err != nil {
			return 0, err
		}
		if ok {
			break
		}
		valid--
	}
	if valid == len(entries) {
		return recoveryPoint, nil
	}
	lowered := int64(0)
	if valid > 0 {
		lowered = entries[valid-1].startOffset
	}
	l.logger.Warn("leader epoch checkpoint does not match the log; rescanning from an earlier offset",
		"recoveryPoint", recoveryPoint, "rescanFrom", lowered, "staleEntries", len(entries)-valid)
	l.epochs.truncateFromEnd(lowered)
	l.fl.settle = true
	return lowered, nil
}

// epochMatches reports whether the batch holding e's start offset carries
// epoch e and starts there. The first entry's start is the log start
// offset, which may lie inside a batch or in a segment retention deleted:
// the first batch at or after it must carry the epoch.
func (l *Log) epochMatches(e epochEntry, first bool, recoveryPoint int64, k int) (bool, error) {
	if first {
		e.startOffset = max(e.startOffset, l.segs[0].base)
		if e.startOffset >= recoveryPoint {
			// Nothing durable to compare it with (a failure marker at
			// the first segment's base lowered the recovery point there):
			// reading the segment could only meet a page the open must
			// not need.
			return true, nil
		}
	}
	i := l.segmentFor(e.startOffset)
	s := l.segs[i]
	f, err := l.handle(s, kindLog, false)
	if err != nil {
		return false, err
	}
	size := f.Size()
	var entries []offsetEntry
	if i < k {
		// A trusted segment: its index is complete.
		if err := l.openForRead(s); err != nil {
			return false, err
		}
		entries = s.offsets.entries
	} else {
		data, err := l.readIndexPrefix(s, kindIndex, offsetIndexEntryBytes)
		if err != nil {
			return false, err
		}
		entries = offsetIndexPrefix(data, s.base, size, recoveryPoint)
	}
	x := offsetIndex{entryList[offsetEntry]{entries: entries}}
	pos := int64(0)
	if j := x.floorOffset(e.startOffset - s.base); j >= 0 {
		pos = int64(entries[j].pos)
	}
	for pos < size {
		h, err := l.readHeaderStable(s, pos)
		if errors.Is(err, errInconsistent) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !h.plausible(size - pos) {
			return false, nil
		}
		if h.lastOffset() >= e.startOffset {
			return h.leaderEpoch == e.epoch && (h.baseOffset == e.startOffset || first), nil
		}
		pos += h.size()
	}
	return false, nil
}

// readIndexPrefix reads index file k of s stably, or nothing when it is
// missing.
func (l *Log) readIndexPrefix(s *segment, k fileKind, entryBytes int) ([]byte, error) {
	f, err := l.handle(s, k, true)
	if err != nil {
		return nil, err
	}
	data, err := readFileStable(f)
	if errors.Is(err, env.ErrIO) {
		// Unreadable (a latent sector error): no entries, so recovery
		// scans the segment from its start; reconcileIndexFiles then
		// rewrites the file whole, which clears the bad sectors.
		l.logger.Warn("index file unreadable; rescanning its segment", "file", f.Name(), "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return data[:len(data)/entryBytes*entryBytes], nil
}

// reconcileIndexFiles makes the index files of s hold exactly its
// in-memory entries after recovery: each file keeps the longest prefix of
// entries it already holds correctly, is cut there and gets the rest
// appended. A cut file is dirty, so the flush cycle syncs it before the
// recovery point moves past it (an unsynced cut could come back after a
// crash with stale entries).
func (l *Log) reconcileIndexFiles(s *segment) error {
	for _, k := range []fileKind{kindIndex, kindTimeIndex} {
		f, err := l.handle(s, k, true)
		if err != nil {
			return err
		}
		data, err := readFileStable(f)
		unreadable := errors.Is(err, env.ErrIO)
		if unreadable {
			// Rewritten whole below, over the unreadable sectors.
			l.logger.Warn("index file unreadable; rewriting it", "file", f.Name(), "err", err)
			data, err = nil, nil
		}
		if err != nil {
			return err
		}
		var want []byte
		entryBytes := offsetIndexEntryBytes
		if k == kindIndex {
			s.offsets.written = 0
			want = s.offsets.unwritten(nil)
		} else {
			entryBytes = timeIndexEntryBytes
			s.times.written = 0
			want = s.times.unwritten(nil)
		}
		common := 0
		for common < len(data) && common < len(want) && data[common] == want[common] {
			common++
		}
		if len(l.fl.markers) > 0 {
			// After a failure (failure.go) the page cache may show
			// entries that never reach the disk: rewrite the file whole.
			common = 0
		}
		kept := common / entryBytes
		if len(data) > kept*entryBytes || len(l.fl.markers) > 0 || unreadable {
			if err := f.Truncate(int64(kept * entryBytes)); err != nil {
				return fmt.Errorf("truncate %s: %w", f.Name(), err)
			}
			s.dirty[k] = true
		}
		if k == kindIndex {
			s.offsets.written = kept
		} else {
			s.times.written = kept
		}
	}
	return l.writeIndexes(s)
}

// markCompacted creates the log's .compacted marker when its policy
// compacts (see compactedMarkerName), before the cleaner or a leader's
// cleaned segments can leave gaps: the directory sync that makes a
// cleaned segment or a replicated batch's new segment durable makes the
// marker durable too. A marker that cannot be created is logged: the
// scrub may then take a gap for damage, and the replica fetches again.
func (l *Log) markCompacted() {
	if !l.cfg.CleanupPolicy.Compacts() {
		return
	}
	name := path.Join(l.dir, compactedMarkerName)
	if f, err := l.disk.Open(name, false); err == nil {
		_ = f.Close()
		return
	}
	f, err := l.disk.Open(name, true)
	if err != nil {
		l.logger.Warn("cannot create the compacted marker", "file", name, "err", err)
		return
	}
	_ = f.Close()
	l.disk.SyncDir(l.dir, func(err error) {
		if err != nil {
			l.logger.Warn("cannot make the compacted marker durable", "file", name, "err", err)
		}
	})
}
