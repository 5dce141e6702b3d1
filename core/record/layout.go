package record

import "math"

// Sizes of the RecordBatch v2 format, in bytes.
const (
	// HeaderSize is the size of a batch header, baseOffset through
	// recordCount; the records follow it.
	HeaderSize = 61
	// LogOverhead is the size of the baseOffset and batchLength fields,
	// which batchLength does not count: a batch occupies
	// LogOverhead+batchLength bytes.
	LogOverhead = 12
	// MinBatchLength is the smallest valid batchLength: a header with no
	// record bytes.
	MinBatchLength = HeaderSize - LogOverhead
	// MaxBatchSize is the largest batch the format can describe
	// (batchLength is an int32).
	MaxBatchSize = LogOverhead + math.MaxInt32
	// DefaultMaxBatchBytes is Kafka's default message.max.bytes, the usual
	// bound for a produced batch (LogOverhead included).
	DefaultMaxBatchBytes = 1048588
	// MagicV2 is the magic byte of the only message format this package
	// reads.
	MagicV2 = 2

	// minRecordBytes is the smallest encoded record: a one-byte length and
	// a six-byte body (attributes, timestampDelta, offsetDelta, key length,
	// value length, header count).
	minRecordBytes = 7
	// minRecordBodyBytes is minRecordBytes without the length varint.
	minRecordBodyBytes = 6
	// minLegacyMessageSize is the smallest messageSize of a magic 0
	// message (crc, magic, attributes, key length, value length); magic 1
	// adds a timestamp.
	minLegacyMessageSize = 14
	// minHeaderBytes is the smallest encoded record header: key length and
	// value length.
	minHeaderBytes = 2
)

// Field values Kafka uses to mean "none".
const (
	// NoProducerID is the producerId of a batch from a producer that is
	// neither idempotent nor transactional.
	NoProducerID int64 = -1
	// NoProducerEpoch is the producerEpoch that goes with NoProducerID.
	NoProducerEpoch int16 = -1
	// NoSequence is the baseSequence of a batch without a producer id, and
	// of control batches.
	NoSequence int32 = -1
	// NoTimestamp is the timestamp of a record or batch that has none.
	NoTimestamp int64 = -1
	// NoPartitionLeaderEpoch is the partitionLeaderEpoch producers send;
	// the leader overwrites it on append.
	NoPartitionLeaderEpoch int32 = -1
)

// Byte offsets of the header fields within a batch.
const (
	offBaseOffset           = 0
	offBatchLength          = 8
	offPartitionLeaderEpoch = 12
	offMagic                = 16
	offCRC                  = 17
	offAttributes           = 21 // the CRC covers [offAttributes, end)
	offLastOffsetDelta      = 23
	offBaseTimestamp        = 27
	offMaxTimestamp         = 35
	offProducerID           = 43
	offProducerEpoch        = 51
	offBaseSequence         = 53
	offRecordCount          = 57
	offRecords              = HeaderSize
)
