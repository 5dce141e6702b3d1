package log

import (
	"fmt"
	"sort"

	"github.com/strata-log/strata/core/record"
)

// What the cleaner does with transactions when the log keeps a transaction
// index (Config.TxnIndex), Kafka's rules (LogCleaner's
// CleanedTransactionMetadata), decided from the index alone:
//
//  1. A transaction is aborted once its entry is in the index with its
//     marker below the cleanable end (below the high watermark and durable:
//     the outcome can no longer be truncated away). Its data batches (the
//     producer's transactional batches in [first offset, marker)) lose all
//     their records. The batch goes entirely, except that it stays as an
//     empty batch, its header kept, when it is the group's last batch or
//     starts a leader epoch (as any batch does), or when the transaction is
//     its producer's newest aborted one in the index: then its batches keep
//     the producer's last sequence and epoch for a replica that replays the
//     log from before them (Kafka keeps each producer's last batch).
//  2. An ABORT marker stays while any batch of its transaction was read by
//     this cleaning (removed or kept empty): a consumer reading from before
//     it must see the marker after the batches it drops. Once a cleaning
//     reads none, the marker gets a delete horizon, now + delete.retention.ms,
//     in its batch header (KIP-534, as tombstones do); a cleaning at or past
//     the horizon removes it with its index entry, unless it is the group's
//     last batch or starts a leader epoch. So a marker lives at least
//     delete.retention.ms after its data went: a consumer that fetched the
//     data's aborted list has that long to reach the marker.
//  3. COMMIT markers and committed transactional records are copied
//     unchanged: committed records are exempt from key compaction (they are
//     not mapped and never removed), so their markers stay too.
//
// A cleaning that removed aborted data is due again at once (its minimum
// horizon is now), so that the next one sets the markers' horizons.

// txnClean is a cleaning's view of the transaction index.
type txnClean struct {
	// aborted are the decided aborted transactions by producer, in marker
	// order; newest the marker offset of each producer's newest entry in
	// the whole index.
	aborted map[int64][]AbortedTxn
	newest  map[int64]int64
	// observed marks the transactions (by marker offset) of which this
	// cleaning read a batch; removed the markers it removed.
	observed map[int64]bool
	removed  map[int64]bool
}

// newTxnClean collects the aborted transactions a cleaning up to end may
// act on; nil for a log without a transaction index.
func (l *Log) newTxnClean(end int64) *txnClean {
	if !l.cfg.TxnIndex {
		return nil
	}
	t := &txnClean{aborted: map[int64][]AbortedTxn{}, newest: map[int64]int64{},
		observed: map[int64]bool{}, removed: map[int64]bool{}}
	for _, s := range l.segs {
		for _, e := range s.txns.entries {
			t.newest[e.ProducerID] = e.LastOffset
			if e.LastOffset < end {
				t.aborted[e.ProducerID] = append(t.aborted[e.ProducerID], e)
			}
		}
	}
	return t
}

// abortedOf returns the decided aborted transaction batch b belongs to.
func (t *txnClean) abortedOf(b record.Batch) (AbortedTxn, bool) {
	list := t.aborted[b.ProducerID()]
	i := sort.Search(len(list), func(i int) bool { return list[i].LastOffset >= b.BaseOffset() })
	if i < len(list) && list[i].FirstOffset <= b.BaseOffset() {
		return list[i], true
	}
	return AbortedTxn{}, false
}

// txnVerdict is what the cleaner does with a transactional batch.
type txnVerdict int

const (
	txnCopy    txnVerdict = iota // unchanged
	txnEmpty                     // keep the header, no records
	txnDrop                      // remove the batch
	txnHorizon                   // a marker: rewrite it with a delete horizon
)

// judgeTxn decides a transactional or control batch; keep says the batch
// must stay in some form (the group's last, or a leader epoch's first).
func (l *Log) judgeTxn(r *cleanRound, b record.Batch, keep bool) (txnVerdict, int64) {
	t := r.txns
	if t == nil {
		return txnCopy, 0
	}
	if !b.Attributes().IsControl() {
		e, ok := t.abortedOf(b)
		if !ok {
			return txnCopy, 0 // committed, or not decided yet
		}
		t.observed[e.LastOffset] = true
		v := txnDrop
		if keep || t.newest[e.ProducerID] == e.LastOffset {
			v = txnEmpty
		}
		if v == txnDrop || b.RecordCount() > 0 {
			r.minHorizon = minHorizon(r.minHorizon, r.nowMs) // removed data: due again
		}
		return v, 0
	}
	e, ok := t.abortedOf(b)
	if !ok || e.LastOffset != b.BaseOffset() || t.observed[e.LastOffset] {
		return txnCopy, 0 // a COMMIT marker, or one whose data was read now
	}
	horizon, has := b.DeleteHorizon()
	switch {
	case !has:
		horizon = r.nowMs + l.cfg.DeleteRetention.Milliseconds()
		r.minHorizon = minHorizon(r.minHorizon, horizon)
		return txnHorizon, horizon
	case r.nowMs >= horizon && !keep:
		t.removed[e.LastOffset] = true
		return txnDrop, 0
	default:
		if r.nowMs < horizon {
			r.minHorizon = minHorizon(r.minHorizon, horizon)
		}
		return txnCopy, 0
	}
}

func minHorizon(a, b int64) int64 {
	if a == record.NoTimestamp || b < a {
		return b
	}
	return a
}

// cleanTxnBatch writes what the verdict keeps of transactional batch b.
func (l *Log) cleanTxnBatch(g *cleanGroup, b record.Batch, v txnVerdict, horizon int64) (int64, error) {
	c := l.clean
	switch v {
	case txnDrop:
		c.stats.BatchesRemoved++
		if !b.Attributes().IsControl() {
			c.stats.RecordsRemoved += int64(b.RecordCount())
		}
		return 0, nil
	case txnEmpty:
		c.stats.RecordsRemoved += int64(b.RecordCount())
		if b.RecordCount() == 0 {
			return l.writeCleaned(g, b.Bytes())
		}
	case txnHorizon:
	default:
		return l.writeCleaned(g, b.Bytes())
	}
	opts := c.rebuildOptions(b, record.WithTransactional())
	bl := c.builder
	if v == txnHorizon {
		opts = append(opts, record.WithControl(), record.WithDeleteHorizon(horizon))
		bl.Reset(opts...)
		rr := c.rr
		if err := rr.Reset(b); err != nil {
			return 0, fmt.Errorf("%w: %w", errRecords, err)
		}
		for rr.Next() {
			if err := copyRecord(bl, rr.Record()); err != nil {
				return 0, err
			}
		}
		if err := rr.Err(); err != nil {
			return 0, fmt.Errorf("%w: %w", errRecords, err)
		}
	} else {
		bl.Reset(opts...)
	}
	out, err := bl.AppendTo(c.out[:0])
	if err != nil {
		return 0, err
	}
	c.out = out
	c.stats.BatchesRewritten++
	return l.writeCleaned(g, out)
}

// cleanedTxns returns the index entries of the group's cleaned segment:
// its sources' entries without the markers this cleaning removed.
func (r *cleanRound) cleanedTxns(g *cleanGroup) []AbortedTxn {
	var out []AbortedTxn
	for _, src := range g.srcs {
		for _, e := range src.seg.txns.entries {
			if r.txns == nil || !r.txns.removed[e.LastOffset] {
				out = append(out, e)
			}
		}
	}
	return out
}
