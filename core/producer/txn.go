package producer

import (
	"fmt"
	"slices"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/record"
)

// This file keeps the partition's side of transactions (Kafka's
// ProducerAppendInfo.appendEndTxnMarker and the ongoing and unreplicated
// transactions of ProducerStateManager): a producer's transactional
// batches open its transaction at their first offset, a COMMIT or ABORT
// marker closes it, and the first offset of the oldest transaction not yet
// closed below the high watermark bounds what read_committed consumers
// see.

// Marker is a transaction marker a coordinator asks the partition leader to
// append (one partition of a WriteTxnMarkers request).
type Marker struct {
	// ProducerID and ProducerEpoch are the transaction's producer.
	ProducerID    int64
	ProducerEpoch int16
	// CoordinatorEpoch is the epoch of the coordinator writing it.
	CoordinatorEpoch int32
	// Commit is true for COMMIT, false for ABORT.
	Commit bool
}

// ControlType is the marker's control record type.
func (m Marker) ControlType() record.ControlType {
	if m.Commit {
		return record.ControlCommit
	}
	return record.ControlAbort
}

// CompletedTxn is a transaction a marker ended (Kafka's CompletedTxn, with
// the last stable offset its aborted-transaction index entry records).
type CompletedTxn struct {
	ProducerID int64
	// FirstOffset is the offset of the transaction's first batch.
	FirstOffset int64
	// LastOffset is the offset of its marker.
	LastOffset int64
	// Aborted is true for an ABORT marker.
	Aborted bool
	// LastStableOffset is the last stable offset once the marker is
	// appended, not counting the high watermark (Kafka's
	// lastStableOffset(completedTxn)): the first offset of the oldest
	// transaction of another producer still ongoing, else the offset
	// after the marker. Kafka's .txnindex stores it.
	LastStableOffset int64
}

// CheckMarker decides whether a marker may be appended (Kafka's
// appendEndTxnMarker for AppendOrigin.COORDINATOR). It changes nothing.
// The rules, in order:
//
//  1. A negative producer id or epoch gets ErrInvalidBatch.
//  2. A producer the partition does not know passes: Kafka appends the
//     marker (its transaction may have written nothing here, or its state
//     expired), and it opens an entry for the producer.
//  3. An epoch below the producer's gets ErrInvalidProducerEpoch (Kafka
//     answers this rather than PRODUCER_FENCED since 2.7).
//  4. A coordinator epoch below the one of the producer's last marker gets
//     ErrCoordinatorFenced: a coordinator that lost its transaction log
//     partition to a newer one.
func (s *State) CheckMarker(m Marker) error {
	if m.ProducerID < 0 || m.ProducerEpoch < 0 {
		return fmt.Errorf("%w: marker of producer %d epoch %d", ErrInvalidBatch, m.ProducerID, m.ProducerEpoch)
	}
	e, known := s.producers[m.ProducerID]
	if !known {
		return nil
	}
	if m.ProducerEpoch < e.epoch {
		return fmt.Errorf("%w: marker of producer %d epoch %d, older than its epoch %d", ErrInvalidProducerEpoch, m.ProducerID, m.ProducerEpoch, e.epoch)
	}
	if m.CoordinatorEpoch < e.coordinatorEpoch {
		return fmt.Errorf("%w: marker of producer %d from coordinator epoch %d, its last marker's was %d",
			ErrCoordinatorFenced, m.ProducerID, m.CoordinatorEpoch, e.coordinatorEpoch)
	}
	return nil
}

// AppendedMarker records a marker that passed CheckMarker and that the log
// has just appended at offset with timestamp (ms), in the same turn of the
// loop as the check. It returns the transaction the marker ended; ok is
// false when the producer had none ongoing here (a marker of an empty
// transaction changes neither the last stable offset nor the aborted
// index, as in Kafka).
func (s *State) AppendedMarker(m Marker, offset, timestamp int64) (CompletedTxn, bool) {
	assert.That(offset >= s.end, "producer: marker appended at offset %d, the state ends at %d", offset, s.end)
	assert.That(s.CheckMarker(m) == nil, "producer: appended marker fails CheckMarker: %v", s.CheckMarker(m))
	s.end = offset + 1
	return s.endTxn(m, offset, timestamp)
}

// endTxn applies a marker at offset: the producer's epoch and coordinator
// epoch become the marker's, its transaction ends.
func (s *State) endTxn(m Marker, offset, timestamp int64) (CompletedTxn, bool) {
	s.end = max(s.end, offset+1)
	e, ok := s.producers[m.ProducerID]
	if !ok {
		e = newEntry(m.ProducerEpoch)
		s.producers[m.ProducerID] = e
	}
	if m.ProducerEpoch != e.epoch {
		// A marker may bump the epoch (KIP-890's transactions v2): the
		// batches of the old epoch no longer answer duplicates.
		e.epoch, e.count = m.ProducerEpoch, 0
	}
	e.coordinatorEpoch = m.CoordinatorEpoch
	e.lastTimestamp = timestamp
	// The transaction ended: a verification the coordinator answered
	// before the marker must not open a new one (verify.go). Except the
	// implicit add of the next transaction under KIP-890 part 2, started
	// at the epoch this marker bumped to (Kafka's
	// isV2NextTransactionStarted): the batches of the transaction the
	// marker ends are all of the epoch before, so a verification at the
	// marker's epoch is of a transaction after it, which the coordinator
	// can only have added once this one completed.
	if v := s.verifications[m.ProducerID]; v == nil || !v.tv2 || v.epoch != m.ProducerEpoch {
		delete(s.verifications, m.ProducerID)
	}
	first := e.currentTxnFirstOffset
	if first == noTxn {
		return CompletedTxn{}, false
	}
	e.currentTxnFirstOffset = noTxn
	s.removeOngoing(m.ProducerID)
	done := CompletedTxn{ProducerID: m.ProducerID, FirstOffset: first, LastOffset: offset, Aborted: !m.Commit, LastStableOffset: offset + 1}
	if len(s.ongoing) > 0 {
		done.LastStableOffset = s.ongoing[0].firstOffset
	}
	s.unreplicated = append(s.unreplicated, done)
	return done, true
}

// addOngoing lists producer pid's new transaction from first, keeping
// ongoing sorted by first offset (a new transaction starts at the log end,
// so it goes last except when a restore lists them out of order).
func (s *State) addOngoing(pid, first int64) {
	t := txnStart{producerID: pid, firstOffset: first}
	i := len(s.ongoing)
	for i > 0 && compareTxnStart(s.ongoing[i-1], t) > 0 {
		i--
	}
	s.ongoing = slices.Insert(s.ongoing, i, t)
}

func compareTxnStart(a, b txnStart) int {
	if a.firstOffset != b.firstOffset {
		return int(min(max(a.firstOffset-b.firstOffset, -1), 1))
	}
	return int(min(max(a.producerID-b.producerID, -1), 1))
}

func (s *State) removeOngoing(pid int64) {
	s.ongoing = slices.DeleteFunc(s.ongoing, func(t txnStart) bool { return t.producerID == pid })
}

// OngoingTxn is an ongoing transaction, as OngoingTxns lists it.
type OngoingTxn struct {
	ProducerID, FirstOffset int64
}

// OngoingTxns returns the ongoing transactions, oldest first.
func (s *State) OngoingTxns() []OngoingTxn {
	out := make([]OngoingTxn, 0, len(s.ongoing))
	for _, t := range s.ongoing {
		out = append(out, OngoingTxn{ProducerID: t.producerID, FirstOffset: t.firstOffset})
	}
	return out
}

// LastStableOffset is the partition's last stable offset for high
// watermark hw (Kafka's UnifiedLog.lastStableOffset): the first offset of
// the oldest transaction that is ongoing or whose marker is not yet below
// hw, bounded by hw. Below it every transaction is decided, and
// read_committed consumers read no further. It changes nothing.
func (s *State) LastStableOffset(hw int64) int64 {
	lso := hw
	if len(s.ongoing) > 0 {
		lso = min(lso, s.ongoing[0].firstOffset)
	}
	for _, t := range s.unreplicated {
		if t.LastOffset >= hw {
			lso = min(lso, t.FirstOffset)
		}
	}
	return lso
}

// HighWatermarkMoved forgets the completed transactions whose markers lie
// below hw (Kafka's onHighWatermarkUpdated): they no longer hold the last
// stable offset. The owner calls it whenever the high watermark moves,
// leader or follower, so that the list stays as short as the transactions
// the high watermark has not yet passed.
func (s *State) HighWatermarkMoved(hw int64) {
	n := 0
	for n < len(s.unreplicated) && s.unreplicated[n].LastOffset < hw {
		n++
	}
	s.unreplicated = slices.Delete(s.unreplicated, 0, n)
}

// Unreplicated is how many completed transactions may still hold the last
// stable offset (for tests and metrics).
func (s *State) Unreplicated() int { return len(s.unreplicated) }
