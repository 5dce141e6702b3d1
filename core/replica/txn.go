package replica

import (
	"fmt"
	"time"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
)

// This file is the partition's side of transactions: the markers a
// transaction coordinator writes (WriteTxnMarkers), the last stable offset
// and the aborted-transaction index that read_committed fetches use.
//
// The aborted-transaction index is the log's (core/log txnindex.go: a
// .txnindex file per segment, as Kafka's). The partition appends an entry
// in the turn it appends or replicates an ABORT marker (noteAborted), and
// read_committed fetches read the entries back from the log, which keeps
// them in memory (one per aborted transaction; they go with their
// segment). Reads go to the log rather than to a copy here so that there
// is one list, the durable one, which retention, truncation and the
// cleaner keep in step with the segments. Opening a partition loads its
// producer snapshot at or below the index end and replays only the tail
// past it (loadProducerState), instead of reading the whole log.

// AbortedTxn is one entry of the aborted-transaction index (Kafka's
// AbortedTxn, the Fetch response's AbortedTransactions).
type AbortedTxn = log.AbortedTxn

// abortedEntry is the index entry of an aborted transaction.
func abortedEntry(t producer.CompletedTxn) AbortedTxn {
	return AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset, LastOffset: t.LastOffset, LastStableOffset: t.LastStableOffset}
}

// noteAborted adds an ended transaction to the log's aborted index if it
// was aborted, in the turn its marker was appended. The index refuses
// only what breaks its invariants (markers in order, inside the log): the
// partition then fails and reopens, rebuilding the entries from its log.
func (p *Partition) noteAborted(t producer.CompletedTxn) {
	if !t.Aborted || p.l == nil {
		return
	}
	if err := p.l.AppendAbortedTxn(abortedEntry(t)); err != nil {
		p.fail(fmt.Errorf("aborted-transaction index: %w", err))
	}
}

// LastStableOffset is the partition's last stable offset (Kafka's
// UnifiedLog.lastStableOffset): the first offset of the oldest transaction
// not yet decided below the high watermark, bounded by the high
// watermark; -1 when the log is not open.
func (p *Partition) LastStableOffset() int64 {
	if p.l == nil || p.producers == nil {
		return -1
	}
	return p.producers.LastStableOffset(p.l.HighWatermark())
}

// Producers returns the state of the partition's active producers, by
// producer id, as its leader holds it (DescribeProducers).
func (p *Partition) Producers() ([]producer.Producer, error) {
	if err := p.servable(); err != nil {
		return nil, err
	}
	return p.producers.Producers(), nil
}

// OngoingTxns lists the partition's ongoing transactions, oldest first
// (DescribeTransactions, tests).
func (p *Partition) OngoingTxns() []producer.OngoingTxn {
	if p.producers == nil {
		return nil
	}
	return p.producers.OngoingTxns()
}

// CommittedRead is what ReadCommitted answers.
type CommittedRead struct {
	// Read holds the batches (a region to Release when not empty).
	Read log.ReadResult
	// LastStableOffset bounds the batches.
	LastStableOffset int64
	// Aborted are the aborted transactions that may own batches of the
	// read: marker at or after the read's offset, first batch below the
	// last stable offset, in the order of their markers.
	Aborted []AbortedTxn
}

// ReadCommitted is Read for a read_committed consumer (isolation level
// 1): the batches end below the last stable offset, and the aborted
// transactions of the range come with them, so that the consumer drops
// the aborted batches (Kafka's FetchIsolation.TXN_COMMITTED).
func (p *Partition) ReadCommitted(offset int64, maxBytes int, currentLeaderEpoch int32) (CommittedRead, error) {
	res := CommittedRead{Read: log.ReadResult{FirstOffset: -1}, LastStableOffset: -1}
	if err := p.servableAt(currentLeaderEpoch); err != nil {
		return res, err
	}
	l := p.l
	lso := p.LastStableOffset()
	res.LastStableOffset = lso
	read, err := l.Read(offset, maxBytes, lso)
	if err != nil {
		if logFailed(err) {
			p.fail(err)
			err = fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err)
		}
		return res, err
	}
	res.Read = read
	res.Aborted = []AbortedTxn{}
	if read.Size > 0 {
		// The region lies in the segment of its first batch and below
		// the last stable offset.
		res.Aborted = l.AbortedTxns(offset, min(lso, l.SegmentEndFor(read.FirstOffset)))
	}
	return res, nil
}

// WriteTxnMarker appends a coordinator's COMMIT or ABORT marker for a
// producer as leader (one partition of WriteTxnMarkers) and calls done
// once the marker is committed: the high watermark passed it, as Kafka
// appends markers with acks=all. The checks, in order: the partition is
// led here and online; at least min.insync.replicas are in sync; the
// marker passes producer.State.CheckMarker (INVALID_PRODUCER_EPOCH for a
// stale producer epoch, TRANSACTION_COORDINATOR_FENCED for a stale
// coordinator epoch). The marker is stamped with now.
func (p *Partition) WriteTxnMarker(m producer.Marker, now time.Time, done func(error)) {
	if err := p.servable(); err != nil {
		done(err)
		return
	}
	if p.resigning {
		done(fmt.Errorf("%w: %s resigns its leader epoch %d", ErrNotLeader, p.dir, p.leaderEpoch))
		return
	}
	if len(p.isr) < p.cfg.minInsyncReplicas {
		done(fmt.Errorf("%w: %s has %d in-sync replicas, min.insync.replicas is %d", ErrNotEnoughReplicas, p.dir, len(p.isr), p.cfg.minInsyncReplicas))
		return
	}
	if err := p.producers.CheckMarker(m); err != nil {
		done(err)
		return
	}
	raw, err := record.BuildEndTxnMarker(m.ProducerID, m.ProducerEpoch, m.ControlType(), m.CoordinatorEpoch, now.UnixMilli())
	if err != nil {
		done(err)
		return
	}
	l := p.l
	p.assertLeaderAppend()
	info, err := l.AppendCoordinator(raw, p.leaderEpoch)
	if err := p.leaderAppendError(err); err != nil {
		done(err)
		return
	}
	t, ended := p.producers.AppendedMarker(m, info.FirstOffset, info.MaxTimestamp)
	if ended {
		if p.noteAborted(t); p.l != l {
			done(fmt.Errorf("%w: %s: the aborted-transaction index failed", ErrStorage, p.dir))
			return
		}
	}
	if base := l.ActiveSegmentBase(); base != p.segmentBase {
		p.segmentBase = base
		p.snapshotProducers(nil)
	}
	if len(p.followers) > 0 {
		p.wake()
	}
	if !p.cfg.durable() {
		p.advanceHighWatermark()
		p.pageCacheFlush(1)
	}
	res := ProduceResult{BaseOffset: info.FirstOffset, LogAppendTime: -1, LogStartOffset: info.LogStartOffset}
	p.whenDurable(l, info.LastOffset+1, -1, res, func(r ProduceResult) { done(r.Err) })
}

// Producer returns a copy of producer id's state here (the group
// coordinator continues the sequence of its transactional offset batches
// from it), or false.
func (p *Partition) Producer(id int64) (producer.Producer, bool) {
	if p.producers == nil {
		return producer.Producer{}, false
	}
	return p.producers.Producer(id)
}
