package coord

import (
	"time"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
)

// Loading, as numbered rules (each shard, from its partition's log start):
//
//  L1. One slice of at most loadSliceBytes is replayed per loop turn, so
//      that a long load does not stall the broker.
//  L2. A log reopened (a new *log.Log) or cut below what was replayed
//      under the load: the shard is unloaded and loaded again from the
//      log there is now (txn seed 221: a truncation decided as a follower
//      completed after this broker became the leader, taking a replayed
//      record with it; the shard waited for a high watermark the shorter
//      log never reaches, and answered COORDINATOR_LOAD_IN_PROGRESS
//      forever).
//  L3. Replayed to the log end, the shard serves only once the high
//      watermark reached it: nothing is served from records the ISR may
//      still lose (txn seed 43: a new leader loaded an Ongoing record
//      above its high watermark, answered a partition's verification from
//      it, and a shorter log elected next dropped the record: no
//      coordinator ever ended the transaction there).
//  L4. A read or a record that fails stops the load: the damage is
//      reported to the partition (a damaged log is dropped and fetched
//      again, core/replica damage.go), the shard stays loading
//      (COORDINATOR_LOAD_IN_PROGRESS) and after loadRetry the load starts
//      over on a new shard.

// loadSliceBytes bounds what one loop turn of a shard's load reads (L1).
const loadSliceBytes = 1 << 20

// loadRetry is the pause before a failed load starts over (L4).
const loadRetry = time.Second

// replay replays the partition's log from offset into the slot's shard,
// one slice per turn, then marks it loaded.
func (rt *Runtime[S]) replay(s *Slot[S], l *log.Log, offset int64, started time.Duration) {
	if rt.cfg.Closed() || !s.Current() {
		return
	}
	end := l.LogEndOffset()
	if s.Replica.Log() != l || end < offset { // L2
		rt.log.Info("the "+rt.cfg.Name+" shard's log changed under its load; loading it again", "partition", s.Partition, "replayed_to", offset, "log_end", end)
		rt.drop(s)
		s.Shard.Unload()
		rt.e.Post(rt.cfg.Resync)
		return
	}
	if offset >= end {
		if hw := s.Replica.HighWatermark(); hw < end { // L3
			if !s.waitingHW {
				s.waitingHW = true
				rt.log.Info(rt.cfg.Name+" shard replayed; waiting for the high watermark to reach the log end", "partition", s.Partition, "high_watermark", hw, "log_end", end)
			}
			s.Replica.Watch(func() { rt.replay(s, l, offset, started) })
			return
		}
		s.Shard.Loaded()
		attrs := []any{"partition", s.Partition}
		if rt.cfg.LoadedAttrs != nil {
			attrs = append(attrs, rt.cfg.LoadedAttrs(s.Shard)...)
		}
		rt.log.Info(rt.cfg.Name+" shard loaded", append(attrs, "log_end", end, "took", rt.e.Monotonic()-started)...)
		return
	}
	next, err := replaySlice(s.Shard, l, offset, end) // L1
	if err != nil {
		// L4
		rt.log.Error("loading "+rt.cfg.Name+" shard failed; retrying", "partition", s.Partition, "offset", offset, "err", err)
		s.Replica.ReportDamage(l, err)
		rt.e.AfterFunc(loadRetry, func() {
			if s.Current() {
				rt.drop(s)
				rt.cfg.Resync()
			}
		})
		return
	}
	rt.e.Post(func() { rt.replay(s, l, next, started) })
}

// replaySlice replays the batches of one read from offset into sh and
// returns the offset after them. A TxnShard gets transactional batches
// through ReplayTxn and transaction markers through TxnEnded.
func replaySlice(sh Shard, l *log.Log, offset, end int64) (int64, error) {
	res, err := l.Read(offset, loadSliceBytes, end)
	if err != nil {
		return offset, err
	}
	defer res.Release()
	if res.Size == 0 {
		return end, nil
	}
	buf, again := make([]byte, res.Size), make([]byte, res.Size)
	if err := log.ReadStable(res.File, buf, again, res.Position); err != nil {
		return offset, err
	}
	sp := record.NewSplitter(buf, len(buf), record.CheckStored)
	rr := record.NewRecordReader(record.NewDecompressor(l.MaxReadDecompressedBytes()))
	tr, _ := sh.(TxnShard)
	for sp.Next() {
		batch := sp.Batch()
		if batch.NextOffset() <= offset {
			continue
		}
		if tr != nil && batch.Attributes().IsControl() && batch.ProducerID() >= 0 {
			if m, ok, err := record.ReadEndTxnMarker(batch); err == nil && ok {
				tr.TxnEnded(batch.ProducerID(), m.Type == record.ControlCommit)
			}
		}
		if !batch.Attributes().IsControl() {
			txn := tr != nil && batch.Attributes().IsTransactional() && batch.ProducerID() >= 0
			if err := rr.Reset(batch); err != nil {
				return offset, err
			}
			for rr.Next() {
				rec := rr.Record()
				if batch.BaseOffset()+int64(rec.OffsetDelta) < offset {
					continue
				}
				var err error
				if txn {
					err = tr.ReplayTxn(batch.ProducerID(), rec.Key, rec.Value)
				} else {
					err = sh.Replay(rec.Key, rec.Value)
				}
				if err != nil {
					return offset, err
				}
			}
			if err := rr.Err(); err != nil {
				return offset, err
			}
		}
		offset = batch.NextOffset()
	}
	if err := sp.Err(); err != nil {
		// A stored batch that fails its checks: damage of this log, named
		// as core/log names it (log.DamagedSegment).
		return offset, &log.CorruptError{File: res.File.Name(), Position: res.Position + int64(sp.ValidBytes()),
			Detail: "a coordinator shard's load", Err: err}
	}
	return offset, nil
}
