package replica

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
)

// This file is the partition's side of transactions: the markers a
// transaction coordinator writes (WriteTxnMarkers), the last stable offset
// and the aborted-transaction index that read_committed fetches use.
//
// The aborted index is kept in memory, in the order of the markers, and
// rebuilt when the log opens by replaying the whole log (rebuildAborted):
// Kafka keeps it in a .txnindex file per segment so that a restart reads
// only the segments it recovers; Strata does not write that file yet, so
// opening a partition reads all of its log once more.

// AbortedTxn is one entry of the aborted-transaction index (Kafka's
// AbortedTxn, the Fetch response's AbortedTransactions).
type AbortedTxn struct {
	ProducerID int64
	// FirstOffset is the offset of the transaction's first batch,
	// LastOffset the offset of its ABORT marker.
	FirstOffset, LastOffset int64
	// LastStableOffset is the last stable offset once the marker was
	// appended (producer.CompletedTxn).
	LastStableOffset int64
}

// noteAborted adds an ended transaction to the aborted index if it was
// aborted.
func (p *Partition) noteAborted(t producer.CompletedTxn) {
	if !t.Aborted {
		return
	}
	p.aborted = append(p.aborted, AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset, LastOffset: t.LastOffset, LastStableOffset: t.LastStableOffset})
}

// pruneAborted forgets the aborted transactions whose markers lie below
// the log start (Kafka deletes a segment's .txnindex with the segment).
func (p *Partition) pruneAborted(logStart int64) {
	n := 0
	for n < len(p.aborted) && p.aborted[n].LastOffset < logStart {
		n++
	}
	p.aborted = slices.Delete(p.aborted, 0, n)
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
	if err := p.servable(); err != nil {
		return res, err
	}
	if err := p.checkEpoch(currentLeaderEpoch); err != nil {
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
		res.Aborted = p.abortedIn(offset, min(lso, l.SegmentEndFor(read.FirstOffset)))
	}
	return res, nil
}

// abortedIn lists the aborted transactions with a marker at or after from
// and a first batch below upto (Kafka's collectAbortedTransactions).
func (p *Partition) abortedIn(from, upto int64) []AbortedTxn {
	i, _ := slices.BinarySearchFunc(p.aborted, from, func(t AbortedTxn, from int64) int {
		if t.LastOffset < from {
			return -1
		}
		return 1
	})
	out := []AbortedTxn{}
	for _, t := range p.aborted[i:] {
		if t.FirstOffset < upto {
			out = append(out, t)
		}
	}
	return out
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
	info, err := l.AppendCoordinator(raw, p.leaderEpoch)
	switch {
	case err == nil:
	case errors.Is(err, env.ErrNoSpace):
		done(fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err))
		return
	case logFailed(err):
		p.fail(err)
		done(fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err))
		return
	default:
		done(err)
		return
	}
	t, ended := p.producers.AppendedMarker(m, info.FirstOffset, info.MaxTimestamp)
	if ended {
		p.noteAborted(t)
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

// rebuildAborted rebuilds the aborted index by replaying the whole log
// into a scratch producer state (see the top of this file).
func rebuildAborted(l *log.Log, cfg producer.Config) ([]AbortedTxn, error) {
	var out []AbortedTxn
	st := producer.NewState(cfg, l.LogStartOffset())
	err := scanLog(l, st.EndOffset(), func(b record.Batch) error {
		t, ended, err := st.ReplayTxn(b)
		if ended && t.Aborted {
			out = append(out, AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset, LastOffset: t.LastOffset, LastStableOffset: t.LastStableOffset})
		}
		return err
	})
	return out, err
}
