package log

import (
	"encoding/binary"

	"github.com/strata-log/strata/core/record"
)

// core/record reads a batch header only from a buffer that holds the whole
// batch (record.ReadBatch). Navigating a segment (index scans, truncation,
// reads) needs the header alone, so this file decodes the few fields the log
// navigates by from the first bytes of a batch. The layout is RecordBatch
// v2's, as documented in core/record.
const (
	hdrBaseOffset      = 0
	hdrBatchLength     = 8
	hdrLeaderEpoch     = 12
	hdrMagic           = 16
	hdrLastOffsetDelta = 23
	hdrMaxTimestamp    = 35
	// headerReadBytes is what the log reads to navigate: through
	// maxTimestamp.
	headerReadBytes = hdrMaxTimestamp + 8
)

// batchHeader is the part of a batch header the log navigates by. The
// fields outside the CRC (base offset, length, epoch) may be damaged or
// flipped on read; callers cross-check them.
type batchHeader struct {
	baseOffset      int64
	batchLength     int32
	leaderEpoch     int32
	magic           int8
	lastOffsetDelta int32
	maxTimestamp    int64
}

// parseHeader decodes the header at the start of b, which holds at least
// headerReadBytes bytes.
func parseHeader(b []byte) batchHeader {
	return batchHeader{
		baseOffset:      int64(binary.BigEndian.Uint64(b[hdrBaseOffset:])),
		batchLength:     int32(binary.BigEndian.Uint32(b[hdrBatchLength:])),
		leaderEpoch:     int32(binary.BigEndian.Uint32(b[hdrLeaderEpoch:])),
		magic:           int8(b[hdrMagic]),
		lastOffsetDelta: int32(binary.BigEndian.Uint32(b[hdrLastOffsetDelta:])),
		maxTimestamp:    int64(binary.BigEndian.Uint64(b[hdrMaxTimestamp:])),
	}
}

// size is the batch's size in the file.
func (h batchHeader) size() int64 { return record.LogOverhead + int64(h.batchLength) }

// lastOffset is the batch's last offset.
func (h batchHeader) lastOffset() int64 { return h.baseOffset + int64(h.lastOffsetDelta) }

// plausible reports whether the header can start a stored batch that ends
// within remaining bytes: magic 2, a length at least a header's, a
// non-negative base offset and offset range.
func (h batchHeader) plausible(remaining int64) bool {
	return h.magic == record.MagicV2 &&
		h.batchLength >= record.MinBatchLength &&
		h.size() <= remaining &&
		h.baseOffset >= 0 &&
		h.lastOffsetDelta >= 0 &&
		h.lastOffset() >= h.baseOffset
}

// headerOf returns the navigation header of a batch from core/record.
func headerOf(b record.Batch) batchHeader {
	return parseHeader(b.Bytes())
}
