package record

import (
	"math"

	"github.com/strata-log/strata/core/assert"
)

// Origin says who wrote a batch being appended, which decides the rules it
// must follow (Kafka's AppendOrigin).
type Origin uint8

const (
	// OriginClient is a producer's batch from a Produce request.
	OriginClient Origin = iota + 1
	// OriginCoordinator is a batch written by the broker's own group or
	// transaction coordinator, such as a transaction marker, which may be a
	// control batch.
	OriginCoordinator
)

// ValidateStored checks what every batch in a log must satisfy: the checks a
// follower runs on fetched batches and recovery runs on a segment. On top of
// ReadBatch's framing checks it verifies the CRC32C (reading the whole
// batch), a known codec, 0 <= recordCount <= lastOffsetDelta+1, a
// non-negative base offset whose last offset does not overflow, and for
// uncompressed batches enough record bytes for recordCount records.
//
// It accepts what compaction leaves behind: offset gaps and empty batches
// kept for their producer state.
func (b Batch) ValidateStored() error {
	if err := b.validateStructure(ErrCorrupt); err != nil {
		return err
	}
	if base := b.BaseOffset(); base < 0 {
		return errAt(ErrCorrupt, offBaseOffset, "baseOffset %d is negative", base)
	} else if base > math.MaxInt64-int64(b.LastOffsetDelta()) {
		return errAt(ErrCorrupt, offBaseOffset, "baseOffset %d + lastOffsetDelta %d overflows", base, b.LastOffsetDelta())
	}
	return nil
}

// ValidateForAppend checks a batch a leader is about to append, before it
// assigns offsets. It runs every check of ValidateStored except those on the
// base offset, which producers leave for the leader to assign, and then
// Kafka's rules for new batches:
//
//   - recordCount > 0 and lastOffsetDelta == recordCount-1 (a producer batch
//     has no gaps);
//   - maxTimestamp is NoTimestamp or at least baseTimestamp (CreateTime
//     batches: under LogAppendTime it is the broker's append time);
//   - no delete horizon, which only compaction sets;
//   - from OriginClient: no control flag; producerId is NoProducerID or
//     non-negative; a batch with a producer id has a non-negative epoch and
//     baseSequence; a transactional batch has a producer id.
//
// A CRC mismatch is ErrCRCMismatch; every other failure is ErrInvalidRecord.
// It does not read the records; Validator.ValidateProduce does, at the
// cost of decompressing them, and runs this first.
func (b Batch) ValidateForAppend(origin Origin) error {
	if origin != OriginClient && origin != OriginCoordinator {
		assert.Never("record.ValidateForAppend: unknown origin %d", origin)
	}
	// A CRC-valid batch that breaks the format was built wrong, not damaged
	// in transit: INVALID_RECORD, which clients do not retry, rather than
	// CORRUPT_MESSAGE, which they do.
	if err := b.validateStructure(ErrInvalidRecord); err != nil {
		return err
	}
	count, lastDelta := b.RecordCount(), b.LastOffsetDelta()
	if count == 0 {
		return errAt(ErrInvalidRecord, offRecordCount, "recordCount 0, a produced batch needs at least one record")
	}
	if int64(lastDelta) != int64(count)-1 {
		return errAt(ErrInvalidRecord, offLastOffsetDelta, "lastOffsetDelta %d, want recordCount-1 = %d", lastDelta, count-1)
	}
	// Under LogAppendTime the broker's clock stamps maxTimestamp, which
	// then stands for every record and bears no relation to the
	// producer's baseTimestamp (a broker clock behind the producer's
	// stamps one below it, and the topic refused every batch: log seed 3).
	if base, max := b.BaseTimestamp(), b.MaxTimestamp(); max != NoTimestamp && max < base && b.Attributes().TimestampType() == CreateTime {
		return errAt(ErrInvalidRecord, offMaxTimestamp, "maxTimestamp %d is below baseTimestamp %d", max, base)
	}
	attrs := b.Attributes()
	if attrs.HasDeleteHorizon() {
		return errAt(ErrInvalidRecord, offAttributes, "delete horizon flag set; only compaction sets it")
	}
	if origin != OriginClient {
		return nil
	}
	if attrs.IsControl() {
		return errAt(ErrInvalidRecord, offAttributes, "clients may not write control batches")
	}
	pid, epoch, seq := b.ProducerID(), b.ProducerEpoch(), b.BaseSequence()
	switch {
	case pid < NoProducerID:
		return errAt(ErrInvalidRecord, offProducerID, "producerId %d, want %d or non-negative", pid, NoProducerID)
	case pid == NoProducerID && attrs.IsTransactional():
		return errAt(ErrInvalidRecord, offProducerID, "transactional batch without a producer id")
	case pid >= 0 && epoch < 0:
		return errAt(ErrInvalidRecord, offProducerEpoch, "producerEpoch %d for producerId %d, want non-negative", epoch, pid)
	case pid >= 0 && seq < 0:
		return errAt(ErrInvalidRecord, offBaseSequence, "baseSequence %d for producerId %d, want non-negative", seq, pid)
	}
	return nil
}

// validateStructure checks the CRC and the header fields every batch must
// satisfy, whoever wrote it. A CRC mismatch is ErrCRCMismatch; any other
// failure is of the given kind.
func (b Batch) validateStructure(kind error) error {
	if want, got := b.CRC(), b.ComputeCRC(); want != got {
		return errAt(ErrCRCMismatch, offCRC, "stored 0x%08x, computed 0x%08x over %d bytes", want, got, len(b.raw)-offAttributes)
	}
	if codec := b.Codec(); !codec.Known() {
		return errAt(kind, offAttributes, "unknown compression codec %d", int8(codec))
	}
	count, lastDelta := b.RecordCount(), b.LastOffsetDelta()
	if count < 0 {
		return errAt(kind, offRecordCount, "recordCount %d is negative", count)
	}
	if lastDelta < 0 {
		return errAt(kind, offLastOffsetDelta, "lastOffsetDelta %d is negative", lastDelta)
	}
	if int64(count) > int64(lastDelta)+1 {
		return errAt(kind, offRecordCount, "recordCount %d exceeds the offset range lastOffsetDelta+1 = %d", count, int64(lastDelta)+1)
	}
	if b.Codec() == CodecNone {
		if need, have := int64(count)*minRecordBytes, int64(len(b.RecordBytes())); need > have {
			return errAt(kind, offRecordCount, "recordCount %d needs at least %d record bytes, batch has %d", count, need, have)
		}
	}
	return nil
}
