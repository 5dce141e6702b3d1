package log

import (
	"errors"
	"fmt"
	"math"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/record"
)

// AppendInfo describes what an append wrote.
type AppendInfo struct {
	// FirstOffset and LastOffset are the first and last offsets of the
	// appended batches.
	FirstOffset, LastOffset int64
	// MaxTimestamp is the largest maxTimestamp of the batches, or -1.
	MaxTimestamp int64
	// Batches and Bytes count what was appended.
	Batches int
	Bytes   int64
	// LogStartOffset and LogEndOffset are the log's after the append.
	LogStartOffset, LogEndOffset int64
}

// Append appends a producer's batches (the records of one partition of a
// Produce request: one or more RecordBatch v2, concatenated) as the leader
// of leaderEpoch. Each batch is validated as a leader must before it
// appends (record.Validator.ValidateProduce: CRC, header and producer
// fields, and every record, decompressed within
// record.MaxDecompressedBytes of max.message.bytes) against
// max.message.bytes, and on a compacted topic must have no record without
// a key; then the log assigns offsets by writing each batch's base offset
// and partition leader epoch into the caller's buffer (12 bytes each,
// outside the CRC) and writes the buffer to the active segment with one
// write, without copying it: all of the batches or none (so together they
// must fit in segment.bytes). The caller's buffer thus holds the stored
// bytes afterwards.
//
// It rolls the active segment first when the batches would overflow
// segment.bytes, when segment.ms has passed, or when an index is full. The
// new data is in the page cache only: call Flush to make it durable.
// Invalid input gets an error wrapping a core/record sentinel (such as
// record.ErrInvalidRecord, record.ErrCRCMismatch, record.ErrBatchTooLarge,
// record.ErrDecompressedTooLarge) or ErrInvalidLeaderEpoch, and changes
// nothing. A full disk gets an error wrapping env.ErrNoSpace and leaves the
// log as it was; any other write error fails the log.
func (l *Log) Append(batches []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.appendAsLeader(batches, leaderEpoch, record.OriginClient, nil)
}

// AppendValidated is Append for one batch the caller has already validated
// with record.Validator.ValidateProduce (the partition does, to apply the
// topic's rules to its summary, and so that the validation can run off the
// loop): the log reads none of its records. sum is the validation's
// summary, by which the log applies the compacted topic's key rule; the
// leader epoch and the sizes it checks as Append does.
func (l *Log) AppendValidated(b record.Batch, sum record.ProduceSummary, leaderEpoch int32) (AppendInfo, error) {
	return l.appendAsLeader(b.Bytes(), leaderEpoch, record.OriginClient, &sum)
}

// AppendCoordinator is Append for batches the broker writes itself (group
// and transaction coordinators): control batches such as transaction
// markers are allowed, and the records are read only on a compacted topic,
// for their keys.
func (l *Log) AppendCoordinator(batches []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.appendAsLeader(batches, leaderEpoch, record.OriginCoordinator, nil)
}

// AppendReplicated appends batches a follower fetched from its leader,
// keeping their offsets and leader epochs. Each batch must pass
// ValidateStored (CRC included), fit in segment.bytes, start after the log
// end offset minus one and after the batch before it (gaps are allowed, as
// compacted leader logs have them), and carry a leader epoch no older than
// the latest one (epoch -1, unknown, is allowed). A new epoch enters the
// epoch cache at its first batch's base offset. On a full disk, the batches
// written before the segment that failed stay appended: AppendInfo tells
// how far it got.
func (l *Log) AppendReplicated(batches []byte) (AppendInfo, error) {
	if err := l.mutable(); err != nil {
		return AppendInfo{}, err
	}
	if len(batches) == 0 {
		return AppendInfo{}, fmt.Errorf("log %s: append: %w: no batches", l.dir, record.ErrInvalidRecord)
	}
	l.batches = l.batches[:0]
	sp := record.NewSplitter(batches, int(l.cfg.SegmentBytes), record.CheckStored)
	prevLast := l.LogEndOffset() - 1
	epoch := l.epochs.latestEpoch()
	for sp.Next() {
		b := sp.Batch()
		if b.BaseOffset() <= prevLast {
			return AppendInfo{}, fmt.Errorf("log %s: append at byte %d: %w: batch at offset %d does not follow offset %d",
				l.dir, sp.Pos(), ErrUnexpectedOffset, b.BaseOffset(), prevLast)
		}
		if e := b.PartitionLeaderEpoch(); e >= 0 {
			if e < epoch {
				return AppendInfo{}, fmt.Errorf("log %s: append at byte %d: %w: epoch %d after epoch %d",
					l.dir, sp.Pos(), ErrInvalidLeaderEpoch, e, epoch)
			}
			epoch = e
		}
		prevLast = b.LastOffset()
		l.batches = append(l.batches, b)
	}
	if err := sp.Err(); err != nil {
		return AppendInfo{}, fmt.Errorf("log %s: append: %w", l.dir, err)
	}
	return l.appendBatches(batches, l.batches, -1)
}

// appendAsLeader appends batches as the leader. validated is the summary
// of the one batch the caller validated, or nil: then the log validates
// each batch, fully for a client's, the header for a coordinator's.
func (l *Log) appendAsLeader(batches []byte, leaderEpoch int32, origin record.Origin, validated *record.ProduceSummary) (AppendInfo, error) {
	if err := l.mutable(); err != nil {
		return AppendInfo{}, err
	}
	if len(batches) == 0 {
		return AppendInfo{}, fmt.Errorf("log %s: append: %w: no batches", l.dir, record.ErrInvalidRecord)
	}
	if latest := l.epochs.latestEpoch(); leaderEpoch < 0 || leaderEpoch < latest {
		return AppendInfo{}, fmt.Errorf("log %s: append: %w: epoch %d, latest %d", l.dir, ErrInvalidLeaderEpoch, leaderEpoch, latest)
	}
	l.batches = l.batches[:0]
	maxBatch := int(min(int64(l.cfg.MessageMaxBytes), l.cfg.SegmentBytes))
	sp := record.NewSplitter(batches, maxBatch, record.CheckFraming)
	count := int64(0)
	for sp.Next() {
		b := sp.Batch()
		if err := l.validateForLeader(b, origin, validated); err != nil {
			return AppendInfo{}, fmt.Errorf("log %s: append: batch at byte %d: %w", l.dir, sp.Pos(), err)
		}
		count += int64(b.LastOffsetDelta()) + 1
		l.batches = append(l.batches, b)
	}
	if err := sp.Err(); err != nil {
		return AppendInfo{}, fmt.Errorf("log %s: append: %w", l.dir, err)
	}
	next := l.LogEndOffset()
	if next > math.MaxInt64-count {
		return AppendInfo{}, fmt.Errorf("log %s: append: %w: %d offsets after %d overflow", l.dir, record.ErrInvalidRecord, count, next)
	}
	// The batches go into one segment with one write, all or nothing, as
	// Kafka appends a produce request's records.
	if int64(len(batches)) > l.cfg.SegmentBytes || count-1 > maxRelativeOffset {
		return AppendInfo{}, fmt.Errorf("log %s: append: %w: %d bytes in %d batches with %d offsets do not fit in one segment (segment.bytes %d)",
			l.dir, record.ErrBatchTooLarge, len(batches), len(l.batches), count, l.cfg.SegmentBytes)
	}
	for _, b := range l.batches {
		next = b.AssignOffsets(next, leaderEpoch)
	}
	return l.appendBatches(batches, l.batches, leaderEpoch)
}

// validateForLeader applies what appendAsLeader checks of one batch.
func (l *Log) validateForLeader(b record.Batch, origin record.Origin, validated *record.ProduceSummary) error {
	switch {
	case validated != nil:
		return l.checkKeys(*validated)
	case origin == record.OriginClient:
		if l.validator == nil {
			l.validator = record.NewValidator()
		}
		sum, err := l.validator.ValidateProduce(b, record.LimitsFor(l.cfg.MessageMaxBytes))
		if err != nil {
			return err
		}
		return l.checkKeys(sum)
	}
	if err := b.ValidateForAppend(origin); err != nil {
		return err
	}
	return l.checkCoordinatorKeys(b)
}

// appendBatches writes validated batches, which buf holds back to back
// with their final offsets, to the active segment (rolling as needed), one
// write per segment. leaderEpoch >= 0 is the leader's epoch for all of
// them, which go into one segment together; -1 means each batch's own
// epoch (replication), and the batches may spread over segments.
func (l *Log) appendBatches(buf []byte, batches []record.Batch, leaderEpoch int32) (AppendInfo, error) {
	info := AppendInfo{FirstOffset: batches[0].BaseOffset(), LastOffset: -1, MaxTimestamp: record.NoTimestamp}
	oldEnd := l.LogEndOffset()
	pos := 0 // of batches[i] in buf
	for i := 0; i < len(batches); {
		j := i + 1
		if leaderEpoch >= 0 {
			j = len(batches)
		}
		if err := l.maybeRoll(batches[i:j]); err != nil {
			return l.finishInfo(info), err
		}
		s := l.active()
		size := int64(0)
		for _, b := range batches[i:j] {
			size += int64(b.Size())
		}
		for j < len(batches) && l.fits(s, size+int64(batches[j].Size()), batches[j].LastOffset()) {
			size += int64(batches[j].Size())
			j++
		}
		if err := s.files[kindLog].WriteAt(buf[pos:pos+int(size)], s.size); err != nil {
			err = fmt.Errorf("log %s: append to %s: %w", l.dir, s.files[kindLog].Name(), err)
			if errors.Is(err, env.ErrNoSpace) {
				return l.finishInfo(info), err
			}
			return l.finishInfo(info), l.fail(err)
		}
		for _, b := range batches[i:j] {
			h := headerOf(b)
			assert.That(h.baseOffset >= s.next && h.lastOffset()-s.base <= maxRelativeOffset,
				"offset %d assigned after %d in segment %d", h.baseOffset, s.next, s.base)
			assert.That(leaderEpoch < 0 || h.baseOffset == s.next,
				"leader offsets not contiguous: batch at %d after %d", h.baseOffset, s.next)
			epoch := leaderEpoch
			if epoch < 0 {
				epoch = h.leaderEpoch
			}
			if epoch >= 0 && epoch > l.epochs.latestEpoch() {
				l.epochs.assign(epoch, h.baseOffset)
			}
			s.account(h, s.size, l.cfg.indexPolicy(), false)
			info.LastOffset = h.lastOffset()
			info.MaxTimestamp = max(info.MaxTimestamp, h.maxTimestamp)
			info.Batches++
		}
		s.dirty[kindLog] = true
		l.fl.appendedBytes += size
		info.Bytes += size
		if len(s.offsets.entries)-s.offsets.written >= indexWriteBatchEntries || l.e.Buggify("log/write-index-now") {
			if err := l.writeIndexes(s); err != nil {
				return l.finishInfo(info), err
			}
		}
		pos += int(size)
		i = j
	}
	assert.NotDecreasing("log end offset", oldEnd, l.LogEndOffset())
	return l.finishInfo(info), nil
}

func (l *Log) finishInfo(info AppendInfo) AppendInfo {
	info.LogStartOffset, info.LogEndOffset = l.logStart, l.LogEndOffset()
	return info
}

// fits reports whether batches of size bytes, the last ending at
// lastOffset, can go into s without rolling: within segment.bytes and
// relative offsets, and the indexes not full (a full index takes no more
// entries; the next append rolls).
func (l *Log) fits(s *segment, size, lastOffset int64) bool {
	return s.size+size <= l.cfg.SegmentBytes &&
		lastOffset-s.base <= maxRelativeOffset &&
		!l.cfg.indexPolicy().full(s)
}

// maybeRoll rolls the active segment if the batches cannot go into it
// (Kafka's shouldRoll): segment.bytes, segment.ms (by the batches' largest
// timestamp), a full index, or an offset too far from the segment's base.
func (l *Log) maybeRoll(bs []record.Batch) error {
	s := l.active()
	size, last, maxTs := int64(0), bs[len(bs)-1].LastOffset(), record.NoTimestamp
	for _, b := range bs {
		size += int64(b.Size())
		maxTs = max(maxTs, b.MaxTimestamp())
	}
	if s.size == 0 {
		if last-s.base <= maxRelativeOffset {
			return nil
		}
		// An empty segment whose base is too far below a replicated
		// batch's offsets: start the log over at the batch.
		return l.replaceEmptyActive(bs[0].BaseOffset())
	}
	roll := !l.fits(s, size, last)
	if !roll {
		if s.firstTs >= 0 {
			roll = maxTs-s.firstTs > l.cfg.SegmentTime.Milliseconds()
		} else {
			roll = l.e.Now().Sub(s.created) > l.cfg.SegmentTime
		}
	}
	if !roll {
		return nil
	}
	// A new segment starts where the last one ends, even when a
	// replicated batch leaves a gap: recovery reads a segment that ends
	// before the next one starts as one that lost its tail. Only a gap
	// too large for relative offsets starts the segment at the batch.
	base := s.next
	if last-base > maxRelativeOffset {
		base = bs[0].BaseOffset()
	}
	return l.roll(base)
}

// Roll closes the active segment and starts a new one at the log end
// offset, unless the active segment is empty. Appends roll by themselves;
// this is for tools and tests (and Kafka's log roll API).
func (l *Log) Roll() error {
	if err := l.mutable(); err != nil {
		return err
	}
	if l.active().size == 0 {
		return nil
	}
	return l.roll(l.LogEndOffset())
}

// roll seals the active segment and creates a new active one at base.
// The sealed segment's index files get their final entries and are marked
// dirty: they must be synced before the recovery point passes the segment,
// which the background cycle started here does.
func (l *Log) roll(base int64) error {
	old := l.active()
	assert.That(base >= old.next, "roll at offset %d below the log end %d", base, old.next)
	old.sealTimeIndex()
	if err := l.writeIndexes(old); err != nil {
		return err
	}
	old.dirty[kindIndex], old.dirty[kindTimeIndex] = true, true
	s, err := l.createSegment(base)
	if err != nil {
		return l.fail(err)
	}
	l.segs = append(l.segs, s)
	l.logger.Debug("rolled segment", "base", base, "previous", old.base, "previousBytes", old.size)
	l.fl.forceCheckpoint = true
	l.requestBackground()
	l.enforceBudget(s)
	return nil
}

// createSegment creates the three files of a new segment at base. A file
// already there (left by an interrupted truncation) is emptied.
func (l *Log) createSegment(base int64) (*segment, error) {
	// A retired segment of the same name is reused, not deleted later.
	kept := l.fl.retained[:0]
	for _, r := range l.fl.retained {
		if r.base != base {
			kept = append(kept, r)
		}
	}
	l.fl.retained = kept
	s := newSegment(base, l.e.Now())
	for k := range numKinds {
		f, err := l.handle(s, k, true)
		if err != nil {
			for _, f := range s.files {
				if f != nil {
					_ = f.Close()
					l.openFiles--
				}
			}
			return nil, err
		}
		if f.Size() > 0 {
			l.logger.Warn("emptying a stale segment file", "file", f.Name(), "bytes", f.Size())
			if err := f.Truncate(0); err != nil {
				return nil, fmt.Errorf("truncate %s: %w", f.Name(), err)
			}
			s.dirty[k] = true
		}
	}
	// A stale transaction index goes too: the new segment has no entries.
	name := l.path(segmentFile(base, txnIndexSuffix))
	if err := l.disk.Remove(name); err != nil && !errors.Is(err, env.ErrNotExist) {
		return nil, fmt.Errorf("remove %s: %w", name, err)
	} else if err == nil {
		l.logger.Warn("deleting a stale transaction index", "file", name)
		l.dirChanged()
	}
	l.closeCleanIndexes(s)
	return s, nil
}

// replaceEmptyActive replaces the empty active segment with one at base.
func (l *Log) replaceEmptyActive(base int64) error {
	old := l.active()
	if err := l.removeSegments([]*segment{old}, "replaced by a segment at a later offset"); err != nil {
		return err
	}
	s, err := l.createSegment(base)
	if err != nil {
		return l.fail(err)
	}
	l.segs[len(l.segs)-1] = s
	return nil
}

// removeSegments deletes the files of segs, in the order given (see
// Truncate and ApplyRetention for why the order matters), .log file first.
// The caller takes them out of l.segs. Handles pinned by a ReadResult stay
// open until released.
func (l *Log) removeSegments(segs []*segment, why string) error {
	for _, s := range segs {
		l.logger.Info("deleting segment", "base", s.base, "reason", why)
		l.retire(s)
		if err := l.unlink(s); err != nil {
			return err
		}
	}
	return nil
}

// retire takes s out of service: its handles close once no ReadResult pins
// them, and nothing syncs it any more.
func (l *Log) retire(s *segment) {
	s.deleted = true
	s.dirty = [numKinds]bool{}
	s.txns.dirty = false
	if s.pins == 0 {
		l.closeFiles(s)
	}
}

// unlink deletes the files of a retired segment, .log file first.
func (l *Log) unlink(s *segment) error {
	for k := range numKinds {
		name := l.path(segmentFile(s.base, kindSuffix[k]))
		if err := l.disk.Remove(name); err != nil && !errors.Is(err, env.ErrNotExist) {
			return l.fail(fmt.Errorf("remove %s: %w", name, err))
		}
		l.dirChanged()
	}
	name := l.path(segmentFile(s.base, txnIndexSuffix))
	if err := l.disk.Remove(name); err != nil && !errors.Is(err, env.ErrNotExist) {
		return l.fail(fmt.Errorf("remove %s: %w", name, err))
	} else if err == nil {
		l.dirChanged()
	}
	return nil
}

// unlinkRetained deletes the files of the segments retention retired, in
// order, right before the flush cycle syncs the directory. Deleting them
// there rather than when retention ran keeps the deletions in one
// directory sync with nothing else in between: were that sync to fail, the
// filesystem may drop the deletions it covered yet keep later ones, and a
// deletion that outlived an earlier one would leave a hole in the log.
func (l *Log) unlinkRetained() error {
	segs := l.fl.retained
	l.fl.retained = nil
	for _, s := range segs {
		if err := l.unlink(s); err != nil {
			return err
		}
	}
	return nil
}
