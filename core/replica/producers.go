package replica

import (
	"errors"
	"fmt"
	"time"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
)

// This file keeps a partition's idempotent producer state (core/producer):
// loaded from the newest snapshot and the log's tail when the log opens,
// checked and updated by every produce, snapshotted at each segment roll
// and at a clean shutdown, expired on the housekeeping timer.

// replayReadBytes bounds one read of the log while replaying its tail
// into the producer state.
const replayReadBytes = 1 << 20

// loadProducers opens the partition's producer snapshots, drops those
// past the log end, loads the newest at or below the log's
// aborted-transaction index end and replays the log after it, adding the
// aborted transactions it meets past that end to the index; then the
// partition goes online.
func (p *Partition) loadProducers(l *log.Log) {
	snaps, err := producer.OpenSnapshots(p.m.e, p.dir, p.m.cfg.Producers)
	if err != nil {
		p.fail(fmt.Errorf("producer snapshots: %w", err))
		return
	}
	p.snaps = snaps
	snaps.DeleteAbove(l.LogEndOffset(), func(err error) {
		if p.l != l || p.state != stateOpening {
			return
		}
		if err != nil {
			p.fail(fmt.Errorf("producer snapshots: %w", err))
			return
		}
		st, err := loadProducerState(l, snaps, p.m.e.Now())
		if err != nil {
			p.fail(fmt.Errorf("producer state: %w", err))
			return
		}
		p.producers = st
		p.segmentBase = l.ActiveSegmentBase()
		p.goOnline(l)
	})
}

// loadProducerState loads the newest producer snapshot at or below the
// log's aborted-transaction index end and replays the log from there to
// its end (replayLog), then completes the index. A snapshot past the index
// end is not a replay start: the aborted transactions between the index
// end and it would be missing from the index (see core/log txnindex.go;
// this is what orders a durable snapshot against the index entries below
// it). After a clean shutdown both are at the log end and nothing is
// replayed; after a crash, the tail since the last checkpoint.
func loadProducerState(l *log.Log, snaps *producer.Snapshots, now time.Time) (*producer.State, error) {
	indexEnd := l.AbortedIndexEnd()
	st, _, err := snaps.Load(l.LogStartOffset(), max(l.LogStartOffset(), min(l.LogEndOffset(), indexEnd)), now)
	if err != nil {
		return nil, err
	}
	if err := replayLog(l, st, indexEnd); err != nil {
		return nil, err
	}
	if err := l.CompleteAbortedIndex(l.LogEndOffset()); err != nil {
		return nil, err
	}
	return st, nil
}

// replayLog applies the log's batches from the state's end offset to the
// log end, adding the aborted transactions whose markers lie at or past
// indexEnd to the log's index.
func replayLog(l *log.Log, st *producer.State, indexEnd int64) error {
	offset := max(st.EndOffset(), l.LogStartOffset())
	st.AdvanceTo(offset)
	err := scanLog(l, offset, func(b record.Batch) error {
		t, ended, err := st.ReplayTxn(b)
		if err != nil {
			return err
		}
		if ended && t.Aborted && t.LastOffset >= indexEnd {
			return l.AppendAbortedTxn(abortedEntry(t))
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.AdvanceTo(l.LogEndOffset())
	return nil
}

// scanLog calls apply for each of the log's batches from offset to the
// log end. A batch's base offset lies outside its CRC, so a region is read
// until two reads agree (a read may flip a bit) and each batch must lie
// within the log; a region that never reads the same twice fails the scan
// (the partition reopens later).
func scanLog(l *log.Log, offset int64, apply func(record.Batch) error) error {
	var buf, again []byte
	for offset < l.LogEndOffset() {
		res, err := l.Read(offset, replayReadBytes, -1)
		if err != nil {
			return err
		}
		if res.Size == 0 {
			break // nothing readable before the end
		}
		if int64(cap(buf)) < res.Size {
			buf, again = make([]byte, res.Size), make([]byte, res.Size)
		}
		buf, again = buf[:res.Size], again[:res.Size]
		err = log.ReadStable(res.File, buf, again, res.Position)
		res.Release()
		if err != nil {
			return fmt.Errorf("%s: %w", l.Dir(), err)
		}
		sp := record.NewSplitter(buf, len(buf), record.CheckStored)
		for sp.Next() {
			b := sp.Batch()
			if b.NextOffset() <= offset || b.NextOffset() > l.LogEndOffset() {
				return fmt.Errorf("%s: batch [%d, %d) read at offset %d lies outside the log's [%d, %d)",
					l.Dir(), b.BaseOffset(), b.NextOffset(), offset, l.LogStartOffset(), l.LogEndOffset())
			}
			if err := apply(b); err != nil {
				return err
			}
			offset = b.NextOffset()
		}
		if err := sp.Err(); err != nil {
			return err
		}
	}
	return nil
}

// snapshotProducers writes the producer state as of the log end (after a
// roll, and at a clean shutdown); done may be nil.
func (p *Partition) snapshotProducers(done func(error)) {
	l, st, snaps := p.l, p.producers, p.snaps
	if l == nil || st == nil || snaps == nil {
		if done != nil {
			p.m.e.Post(func() { done(nil) })
		}
		return
	}
	st.AdvanceTo(l.LogEndOffset())
	snaps.Write(st, func(err error) {
		if err != nil && !errors.Is(err, producer.ErrCanceled) && !errors.Is(err, producer.ErrClosed) {
			p.log.Warn("producer snapshot", "err", err)
			if errors.Is(err, producer.ErrDirectoryFailed) && p.l == l {
				// A failed directory sync of the partition's directory
				// is the log's failure too (a second issuer of its
				// directory syncs).
				p.fail(err)
			}
		}
		if done != nil {
			done(err)
		}
	})
}

// afterAppend records an appended batch in the producer state and takes a
// snapshot when the append rolled the log.
func (p *Partition) afterAppend(info producer.BatchInfo, a log.AppendInfo) {
	p.producers.Appended(info, a.FirstOffset, a.LastOffset, a.MaxTimestamp)
	if base := p.l.ActiveSegmentBase(); base != p.segmentBase {
		p.segmentBase = base
		p.snapshotProducers(nil)
	}
}

// expireProducers forgets idle producers and snapshots below the log
// start (housekeeping).
func (p *Partition) expireProducers() {
	if p.producers == nil || p.l == nil {
		return
	}
	p.producers.Expire(p.m.e.Now())
	if err := p.snaps.DeleteBelow(p.l.LogStartOffset()); err != nil {
		p.log.Warn("delete old producer snapshots", "err", err)
	}
}
