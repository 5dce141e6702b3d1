package record

// Record is one record of a batch, in the varint-based v2 encoding: a length,
// attributes, timestampDelta, offsetDelta, key, value and headers.
//
// A RecordReader fills every field, with Key, Value and Headers aliasing its
// buffers. A Builder reads Attributes, Timestamp, OffsetDelta, Key, Value and
// Headers, and derives TimestampDelta and Offset.
type Record struct {
	// Attributes is the record-level attributes byte; Kafka defines no bits.
	Attributes int8
	// TimestampDelta is the timestamp relative to the batch's
	// baseTimestamp, as encoded.
	TimestampDelta int64
	// OffsetDelta is the offset relative to the batch's baseOffset, as
	// encoded.
	OffsetDelta int32
	// Key is nil for a null key; a non-nil empty slice is an empty key.
	Key []byte
	// Value is nil for a null value (a tombstone on a compacted topic).
	Value []byte
	// Headers are the record's headers, in order.
	Headers []Header

	// Offset is the record's absolute offset, baseOffset+OffsetDelta.
	Offset int64
	// Timestamp is the record's absolute timestamp: baseTimestamp +
	// TimestampDelta, or the batch's maxTimestamp under LogAppendTime.
	Timestamp int64
}

// Header is a record header. Kafka's header key is a non-null string; it is
// kept as bytes here so reading allocates nothing.
type Header struct {
	// Key is the header key; never null on the wire, nil encodes as empty.
	Key []byte
	// Value is nil for a null value.
	Value []byte
}

// appendRecord appends r's encoding with the given deltas.
func appendRecord(dst []byte, r *Record, timestampDelta int64, offsetDelta int32) []byte {
	// The length prefix counts the body; encode the body after a
	// placeholder of the largest varint size, then move it back.
	start := len(dst)
	dst = append(dst, make([]byte, maxVarintBytes)...)
	bodyStart := len(dst)
	dst = append(dst, byte(r.Attributes))
	dst = appendVarlong(dst, timestampDelta)
	dst = appendVarint(dst, offsetDelta)
	dst = appendNullableBytes(dst, r.Key)
	dst = appendNullableBytes(dst, r.Value)
	dst = appendVarint(dst, int32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		dst = appendVarint(dst, int32(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendNullableBytes(dst, h.Value)
	}
	bodyLen := len(dst) - bodyStart
	lenBytes := varintSize(int32(bodyLen))
	appendVarint(dst[start:start], int32(bodyLen))
	copy(dst[start+lenBytes:], dst[bodyStart:])
	return dst[:start+lenBytes+bodyLen]
}

// appendNullableBytes appends a varint length (-1 for nil) and the bytes.
func appendNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return appendVarint(dst, -1)
	}
	dst = appendVarint(dst, int32(len(b)))
	return append(dst, b...)
}
