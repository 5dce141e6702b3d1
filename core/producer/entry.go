package producer

import (
	"math"

	"github.com/strata-log/strata/core/record"
)

// BatchMetadata describes one appended batch of a producer (Kafka's
// BatchMetadata). The first sequence and offset are derived: a producer
// batch has as many sequence numbers as offsets.
type BatchMetadata struct {
	// LastSeq is the sequence number of the batch's last record, or
	// record.NoSequence for a batch without sequences.
	LastSeq int32
	// LastOffset is the offset of the batch's last record.
	LastOffset int64
	// OffsetDelta is LastOffset minus the batch's first offset (its
	// lastOffsetDelta), at least 0.
	OffsetDelta int32
	// Timestamp is the batch's max timestamp in milliseconds as the log
	// stores it: the producer's clock for CreateTime, the broker's append
	// time for LogAppendTime. A duplicate answers with it.
	Timestamp int64
}

// FirstSeq is the sequence number of the batch's first record, wrapping
// below 0 to math.MaxInt32 as producers number records, or
// record.NoSequence.
func (m BatchMetadata) FirstSeq() int32 {
	if m.LastSeq == record.NoSequence {
		return record.NoSequence
	}
	return decrementSequence(m.LastSeq, m.OffsetDelta)
}

// FirstOffset is the offset of the batch's first record.
func (m BatchMetadata) FirstOffset() int64 { return m.LastOffset - int64(m.OffsetDelta) }

// Producer is a copy of one producer's state in a partition (Kafka's
// ProducerStateEntry), as Producers lists it and a snapshot stores it.
type Producer struct {
	// ID is the producer id, at least 0.
	ID int64
	// Epoch is the latest producer epoch appended.
	Epoch int16
	// Batches are the metadata of the producer's latest batches of Epoch,
	// oldest first, at most maxBatchesRetained (5). A snapshot keeps only
	// the last one, as Kafka's does; it may be empty for a producer loaded
	// from a Kafka snapshot that only wrote transaction markers.
	Batches []BatchMetadata
	// CoordinatorEpoch is the epoch of the transaction coordinator that
	// wrote the producer's last transaction marker, or -1.
	CoordinatorEpoch int32
	// LastTimestamp is the producer's last update as the log records it:
	// the max timestamp of its last batch (Kafka's lastTimestamp).
	// Expiration counts from it.
	LastTimestamp int64
	// CurrentTxnFirstOffset is the first offset of the producer's ongoing
	// transaction, or -1; a producer with one never expires (Kafka's
	// rule).
	CurrentTxnFirstOffset int64
}

// LastSeq is the last sequence number appended, or record.NoSequence when
// Batches is empty.
func (p Producer) LastSeq() int32 {
	if len(p.Batches) == 0 {
		return record.NoSequence
	}
	return p.Batches[len(p.Batches)-1].LastSeq
}

// LastOffset is the offset of the producer's last record, or -1 when
// Batches is empty.
func (p Producer) LastOffset() int64 {
	if len(p.Batches) == 0 {
		return -1
	}
	return p.Batches[len(p.Batches)-1].LastOffset
}

// entry is a producer's state in the table. The batch metadata is a fixed
// array, oldest first, so that an append allocates nothing.
type entry struct {
	epoch                 int16
	batches               [maxBatchesRetained]BatchMetadata
	count                 int // batches in use, at most maxBatchesRetained
	coordinatorEpoch      int32
	lastTimestamp         int64
	currentTxnFirstOffset int64
}

// noTxn is CurrentTxnFirstOffset without an ongoing transaction.
const noTxn int64 = -1

func newEntry(epoch int16) *entry {
	return &entry{epoch: epoch, coordinatorEpoch: -1, lastTimestamp: record.NoTimestamp, currentTxnFirstOffset: noTxn}
}

// last returns the latest batch, ok false when there is none.
func (e *entry) last() (BatchMetadata, bool) {
	if e.count == 0 {
		return BatchMetadata{}, false
	}
	return e.batches[e.count-1], true
}

// lastSeq is the entry's last sequence, or NoSequence without batches.
func (e *entry) lastSeq() int32 {
	if m, ok := e.last(); ok {
		return m.LastSeq
	}
	return record.NoSequence
}

// addBatch records a batch of epoch (Kafka's ProducerStateEntry.addBatch):
// a different epoch starts the batch history over; the oldest batch goes
// once maxBatchesRetained are kept.
func (e *entry) addBatch(epoch int16, m BatchMetadata) {
	if epoch != e.epoch {
		e.epoch = epoch
		e.count = 0
	}
	if e.count == maxBatchesRetained {
		copy(e.batches[:], e.batches[1:])
		e.count--
	}
	e.batches[e.count] = m
	e.count++
	e.lastTimestamp = m.Timestamp
}

// duplicateOf returns the retained batch with exactly the sequence range
// [firstSeq, lastSeq], if any (Kafka's batchWithSequenceRange).
func (e *entry) duplicateOf(firstSeq, lastSeq int32) (BatchMetadata, bool) {
	for _, m := range e.batches[:e.count] {
		if m.FirstSeq() == firstSeq && m.LastSeq == lastSeq {
			return m, true
		}
	}
	return BatchMetadata{}, false
}

func (e *entry) export(id int64) Producer {
	return Producer{
		ID:                    id,
		Epoch:                 e.epoch,
		Batches:               append([]BatchMetadata(nil), e.batches[:e.count]...),
		CoordinatorEpoch:      e.coordinatorEpoch,
		LastTimestamp:         e.lastTimestamp,
		CurrentTxnFirstOffset: e.currentTxnFirstOffset,
	}
}

// inSequence reports whether next follows last, wrapping from
// math.MaxInt32 to 0 (Kafka's ProducerAppendInfo.inSequence).
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// decrementSequence is the inverse of record.IncrementSequence: seq moved
// back by decrement, wrapping below 0 to math.MaxInt32.
func decrementSequence(seq, decrement int32) int32 {
	prev := int64(seq) - int64(decrement)
	if prev < 0 {
		prev += math.MaxInt32 + 1
	}
	return int32(prev)
}
