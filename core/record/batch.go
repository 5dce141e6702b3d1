package record

import (
	"encoding/binary"
	"math"

	"github.com/strata-log/strata/core/assert"
)

// Batch is a view of one RecordBatch v2 inside a caller's buffer. It copies
// nothing: accessors decode fields from the bytes on each call, and setters
// write into them, so every copy of a Batch sees the same bytes. The zero
// Batch is not usable; get one from ReadBatch, ReadProduceBatch or a
// Splitter (a Builder's output goes through ReadBatch).
//
// A Batch from ReadBatch has passed framing checks only (lengths and
// magic). Call ValidateStored or ValidateForAppend before trusting the rest.
type Batch struct {
	raw []byte // exactly LogOverhead+batchLength bytes; cap == len
}

// BatchHeader is a decoded copy of a batch header, for logging, tests and
// tools. Its fields are the header's, in wire order, with the meaning of the
// Batch accessors of the same names. The produce and fetch paths read fields
// through those accessors instead.
type BatchHeader struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           Attributes
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// ReadBatch reads the batch at the start of buf and returns a view of
// exactly its bytes; buf may continue past it. It checks framing only:
// batchLength is at least MinBatchLength, the batch fits in buf and in
// maxBatchBytes (LogOverhead included, as message.max.bytes counts it), and
// magic is 2. Magic 0 and 1 get ErrUnsupportedMagic; a buffer that ends
// inside the batch gets ErrTruncated.
//
// maxBatchBytes must be positive; pass DefaultMaxBatchBytes, the topic's
// max.message.bytes, or for stored data a bound such as the segment size.
func ReadBatch(buf []byte, maxBatchBytes int) (Batch, error) {
	if maxBatchBytes <= 0 {
		assert.Never("record.ReadBatch: maxBatchBytes %d must be positive", maxBatchBytes)
	}
	if len(buf) < LogOverhead {
		return Batch{}, errAt(ErrTruncated, len(buf), "only %d bytes remain, a batch needs %d before its length is known", len(buf), LogOverhead)
	}
	batchLength := int32(binary.BigEndian.Uint32(buf[offBatchLength:]))
	// Magic 0 and 1 put their magic byte at the same position but are
	// shorter, so judge the format before the length.
	if len(buf) <= offMagic {
		return Batch{}, errAt(ErrTruncated, len(buf), "only %d bytes remain, the magic byte is at %d", len(buf), offMagic)
	}
	switch magic := int8(buf[offMagic]); magic {
	case MagicV2:
	case 0, 1:
		// Zeros (a preallocated or torn tail) read as magic 0 with length
		// 0: that is damage, not an old client.
		if batchLength < minLegacyMessageSize {
			return Batch{}, errAt(ErrCorrupt, offBatchLength, "magic %d with message size %d, want at least %d", magic, batchLength, minLegacyMessageSize)
		}
		return Batch{}, errAt(ErrUnsupportedMagic, offMagic, "magic %d, only magic %d is supported", magic, MagicV2)
	default:
		return Batch{}, errAt(ErrCorrupt, offMagic, "magic %d, want %d", magic, MagicV2)
	}
	if batchLength < MinBatchLength {
		return Batch{}, errAt(ErrCorrupt, offBatchLength, "batchLength %d, want at least %d", batchLength, MinBatchLength)
	}
	size := int64(LogOverhead) + int64(batchLength)
	if size > int64(maxBatchBytes) {
		return Batch{}, errAt(ErrBatchTooLarge, offBatchLength, "batch of %d bytes, bound is %d", size, maxBatchBytes)
	}
	if size > int64(len(buf)) {
		return Batch{}, errAt(ErrTruncated, len(buf), "batch of %d bytes, only %d remain", size, len(buf))
	}
	return Batch{raw: buf[:size:size]}, nil
}

// ReadProduceBatch reads the records field of one partition in a Produce
// request. Kafka requires it to hold exactly one v2 batch; anything after
// that batch, or an empty payload, is ErrInvalidRecord. Call
// ValidateForAppend on the result.
func ReadProduceBatch(payload []byte, maxBatchBytes int) (Batch, error) {
	if len(payload) == 0 {
		return Batch{}, errAt(ErrInvalidRecord, 0, "produce payload holds no batch")
	}
	b, err := ReadBatch(payload, maxBatchBytes)
	if err != nil {
		return Batch{}, err
	}
	if b.Size() != len(payload) {
		return Batch{}, errAt(ErrInvalidRecord, b.Size(), "produce payload holds %d bytes after its batch, want exactly one batch", len(payload)-b.Size())
	}
	return b, nil
}

// Bytes returns the batch's bytes, aliasing the buffer it was read from.
func (b Batch) Bytes() []byte { return b.raw }

// Size returns the batch's size in bytes, LogOverhead+BatchLength.
func (b Batch) Size() int { return len(b.raw) }

// BaseOffset returns the offset of the batch's first record (offsetDelta 0).
func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b.raw[offBaseOffset:])) }

// BatchLength returns the byte count after the batchLength field.
func (b Batch) BatchLength() int32 { return int32(binary.BigEndian.Uint32(b.raw[offBatchLength:])) }

// PartitionLeaderEpoch returns the leader epoch the leader stamped on append.
func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b.raw[offPartitionLeaderEpoch:]))
}

// Magic returns the magic byte; always MagicV2 for a Batch.
func (b Batch) Magic() int8 { return int8(b.raw[offMagic]) }

// CRC returns the stored CRC32C of [attributes, end).
func (b Batch) CRC() uint32 { return binary.BigEndian.Uint32(b.raw[offCRC:]) }

// Attributes returns the attributes field.
func (b Batch) Attributes() Attributes {
	return Attributes(int16(binary.BigEndian.Uint16(b.raw[offAttributes:])))
}

// Codec returns the compression codec of the records.
func (b Batch) Codec() Codec { return b.Attributes().Codec() }

// LastOffsetDelta returns the offset delta of the batch's last offset, which
// compaction keeps even when it removes the last record.
func (b Batch) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(b.raw[offLastOffsetDelta:]))
}

// LastOffset returns BaseOffset+LastOffsetDelta.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// NextOffset returns the offset after the batch, LastOffset+1.
func (b Batch) NextOffset() int64 { return b.LastOffset() + 1 }

// BaseTimestamp returns the timestamp record deltas are relative to: the
// first record's timestamp, or the delete horizon when HasDeleteHorizon.
func (b Batch) BaseTimestamp() int64 { return int64(binary.BigEndian.Uint64(b.raw[offBaseTimestamp:])) }

// MaxTimestamp returns the largest record timestamp, or the append time for
// LogAppendTime batches.
func (b Batch) MaxTimestamp() int64 { return int64(binary.BigEndian.Uint64(b.raw[offMaxTimestamp:])) }

// DeleteHorizon returns the delete horizon in milliseconds and true when
// compaction set one (KIP-534), or NoTimestamp and false.
func (b Batch) DeleteHorizon() (int64, bool) {
	if !b.Attributes().HasDeleteHorizon() {
		return NoTimestamp, false
	}
	return b.BaseTimestamp(), true
}

// ProducerID returns the producer id, or NoProducerID.
func (b Batch) ProducerID() int64 { return int64(binary.BigEndian.Uint64(b.raw[offProducerID:])) }

// ProducerEpoch returns the producer epoch, or NoProducerEpoch.
func (b Batch) ProducerEpoch() int16 { return int16(binary.BigEndian.Uint16(b.raw[offProducerEpoch:])) }

// BaseSequence returns the sequence number of the first record, or
// NoSequence.
func (b Batch) BaseSequence() int32 { return int32(binary.BigEndian.Uint32(b.raw[offBaseSequence:])) }

// LastSequence returns the sequence number of the batch's last offset,
// wrapping past math.MaxInt32 to 0 as Kafka producers do, or NoSequence.
func (b Batch) LastSequence() int32 {
	base := b.BaseSequence()
	if base == NoSequence {
		return NoSequence
	}
	return IncrementSequence(base, b.LastOffsetDelta())
}

// IncrementSequence returns seq advanced by increment, wrapping past
// math.MaxInt32 to 0 the way Kafka producers number records.
func IncrementSequence(seq, increment int32) int32 {
	next := int64(seq) + int64(increment)
	if next > math.MaxInt32 {
		next -= math.MaxInt32 + 1
	}
	return int32(next)
}

// RecordCount returns the number of records the header claims.
func (b Batch) RecordCount() int32 { return int32(binary.BigEndian.Uint32(b.raw[offRecordCount:])) }

// RecordBytes returns the records section, compressed when Codec is not
// CodecNone, aliasing the batch.
func (b Batch) RecordBytes() []byte { return b.raw[offRecords:] }

// Header returns a decoded copy of the header fields.
func (b Batch) Header() BatchHeader {
	return BatchHeader{
		BaseOffset:           b.BaseOffset(),
		BatchLength:          b.BatchLength(),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Magic:                b.Magic(),
		CRC:                  b.CRC(),
		Attributes:           b.Attributes(),
		LastOffsetDelta:      b.LastOffsetDelta(),
		BaseTimestamp:        b.BaseTimestamp(),
		MaxTimestamp:         b.MaxTimestamp(),
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
		RecordCount:          b.RecordCount(),
	}
}
