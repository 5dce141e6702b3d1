package log

import (
	"fmt"
	"time"

	"github.com/strata-log/strata/core/assert"
)

// DeleteRecordsBefore advances the log start offset to offset (Kafka's
// DeleteRecords): reads below it become out of range, the epoch cache
// forgets what lies before it, and ApplyRetention deletes the segments
// wholly below it. offset may not pass the high watermark
// (ErrOffsetOutOfRange); at or below the current log start offset it does
// nothing. The new log start offset is checkpointed by the next flush
// cycle (one starts now); a Flush issued afterwards calls back once it is
// durable. Until then a crash may bring back the old one, never a later
// one.
func (l *Log) DeleteRecordsBefore(offset int64) error {
	if err := l.mutable(); err != nil {
		return err
	}
	if offset <= l.logStart {
		return nil
	}
	if offset > l.hw {
		return fmt.Errorf("%w: delete records before %d, beyond the high watermark %d of %s", ErrOffsetOutOfRange, offset, l.hw, l.dir)
	}
	l.advanceLogStart(offset)
	return nil
}

func (l *Log) advanceLogStart(offset int64) {
	if offset <= l.logStart {
		return
	}
	assert.NotDecreasing("log start offset", l.logStart, offset)
	assert.That(offset <= l.LogEndOffset(), "log start offset %d beyond the log end %d", offset, l.LogEndOffset())
	l.logStart = offset
	l.fl.metaGen++
	l.requestBackground()
}

// ApplyRetention deletes the oldest segments that retention no longer
// keeps and returns how many it deleted. It walks from the oldest segment
// and stops at the first one that stays; a segment goes if it is not the
// active one, all of its offsets are below the high watermark, and
//
//   - it lies wholly below the log start offset (DeleteRecords), or
//   - retention.ms: its largest record timestamp is more than
//     RetentionTime before now (segments without timestamps never expire
//     by time), or
//   - retention.bytes: the log without it is still at least
//     RetentionBytes large.
//
// The log start offset moves to the first remaining segment if that is
// later. The files are deleted by the next flush cycle (one starts now),
// oldest first, right before it syncs the directory, so a crash keeps a
// suffix of the segments to delete, never a hole; a Flush issued afterwards
// calls back once the deletions are durable. now is the wall
// clock the caller goes by (Env.Now on a timer).
func (l *Log) ApplyRetention(now time.Time) (int, error) {
	if err := l.mutable(); err != nil {
		return 0, err
	}
	size := l.Size()
	nowMs := now.UnixMilli()
	retentionMs := l.cfg.RetentionTime.Milliseconds()
	n := 0
	for ; n < len(l.segs)-1; n++ {
		s, upper := l.segs[n], l.segs[n+1].base
		if upper > l.hw {
			break
		}
		belowStart := upper <= l.logStart
		deletes := l.cfg.CleanupPolicy.Deletes() // not for cleanup.policy=compact
		byTime := deletes && l.cfg.RetentionTime >= 0 && s.maxTs >= 0 && nowMs-s.maxTs > retentionMs
		bySize := deletes && l.cfg.RetentionBytes >= 0 && size-s.size >= l.cfg.RetentionBytes
		if !belowStart && !byTime && !bySize {
			break
		}
		size -= s.size
	}
	if n == 0 {
		return 0, nil
	}
	victims := l.segs[:n]
	l.segs = append([]*segment(nil), l.segs[n:]...)
	for _, s := range victims {
		l.logger.Info("deleting segment", "base", s.base, "reason", "retention")
		l.retire(s)
		l.fl.retained = append(l.fl.retained, s)
	}
	l.fl.metaGen++
	l.advanceLogStart(l.segs[0].base)
	l.requestBackground()
	return n, nil
}
