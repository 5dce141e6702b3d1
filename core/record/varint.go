package record

import (
	"encoding/binary"
	"math"
)

// Kafka's record fields use zigzag varints (protobuf's sint32/sint64).
// Kafka rejects encodings longer than these; so do we.
const (
	maxVarintBytes  = 5  // int32
	maxVarlongBytes = 10 // int64
)

// readVarint decodes a zigzag varint that must fit in an int32. It returns
// the value and the bytes consumed, or n <= 0 if b ends first (0) or the
// encoding is too long or too large (-1).
func readVarint(b []byte) (v int32, n int) {
	u, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, n
	}
	if n > maxVarintBytes || u > math.MaxUint32 {
		return 0, -1
	}
	return int32(uint32(u)>>1) ^ -int32(uint32(u)&1), n
}

// readVarlong decodes a zigzag varint into an int64, with readVarint's
// results.
func readVarlong(b []byte) (v int64, n int) {
	u, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, n
	}
	if n > maxVarlongBytes {
		return 0, -1
	}
	return int64(u>>1) ^ -int64(u&1), n
}

// appendVarint appends v as a zigzag varint.
func appendVarint(dst []byte, v int32) []byte {
	return binary.AppendUvarint(dst, uint64(uint32(v<<1)^uint32(v>>31)))
}

// appendVarlong appends v as a zigzag varint.
func appendVarlong(dst []byte, v int64) []byte {
	return binary.AppendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

// varintSize returns the encoded size of v as a zigzag varint.
func varintSize(v int32) int {
	u := uint32(v<<1) ^ uint32(v>>31)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
