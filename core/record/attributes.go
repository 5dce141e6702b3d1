package record

import "fmt"

// Attributes is the int16 attributes field of a batch header. Bits 7-15 are
// unassigned; Kafka ignores them and so does this package.
type Attributes int16

// Attribute bits.
const (
	attrCodecMask        Attributes = 0x07 // bits 0-2
	attrLogAppendTime    Attributes = 0x08 // bit 3
	attrTransactional    Attributes = 0x10 // bit 4
	attrControl          Attributes = 0x20 // bit 5
	attrHasDeleteHorizon Attributes = 0x40 // bit 6
)

// Codec returns the compression codec of the batch's records (bits 0-2).
func (a Attributes) Codec() Codec { return Codec(a & attrCodecMask) }

// TimestampType returns CreateTime or LogAppendTime (bit 3).
func (a Attributes) TimestampType() TimestampType {
	if a&attrLogAppendTime != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// IsTransactional reports whether the batch belongs to a transaction (bit 4).
func (a Attributes) IsTransactional() bool { return a&attrTransactional != 0 }

// IsControl reports whether the batch holds control records such as
// transaction markers (bit 5).
func (a Attributes) IsControl() bool { return a&attrControl != 0 }

// HasDeleteHorizon reports whether compaction stored a delete horizon in the
// batch's baseTimestamp (bit 6, KIP-534).
func (a Attributes) HasDeleteHorizon() bool { return a&attrHasDeleteHorizon != 0 }

// String lists the codec and the flags that are set.
func (a Attributes) String() string {
	s := a.Codec().String() + "," + a.TimestampType().String()
	if a.IsTransactional() {
		s += ",transactional"
	}
	if a.IsControl() {
		s += ",control"
	}
	if a.HasDeleteHorizon() {
		s += ",deleteHorizon"
	}
	return s
}

// TimestampType says what a batch's timestamps mean.
type TimestampType int8

const (
	// CreateTime: record timestamps are what the producer set.
	CreateTime TimestampType = 0
	// LogAppendTime: the broker stamped the batch's maxTimestamp on append,
	// and every record's timestamp reads as that value.
	LogAppendTime TimestampType = 1
)

// String returns Kafka's name for the type.
func (t TimestampType) String() string {
	if t == LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// Codec is a compression codec id, as stored in attribute bits 0-2.
type Codec int8

// The codecs of RecordBatch v2. Ids 5-7 are unassigned and rejected.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// Known reports whether c is one of the five assigned codecs.
func (c Codec) Known() bool { return c >= CodecNone && c <= CodecZstd }

// String returns Kafka's compression.type name for c.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}
