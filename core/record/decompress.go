package record

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/strata-log/strata/core/assert"
)

// DefaultMaxDecompressedBytes bounds what one batch may decompress to when
// the caller has no better bound: 64 MiB, four times what a producer's
// batch may decompress to at the default max.message.bytes
// (MaxDecompressedBytes). Readers of stored batches use at least this.
const DefaultMaxDecompressedBytes = 64 << 20

// decompressGrowBytes is the first buffer size for codecs whose output size
// is not known up front (lz4, gzip without a trailer to go by); the buffer
// doubles from there and is kept for the next batch.
const decompressGrowBytes = 4 << 10

// Decompressor decompresses batch payloads for all four codecs, keeping one
// decoder per codec for reuse. The zstd decoder runs with concurrency 1 and
// decodes synchronously, so no goroutine ever starts. Every codec's output
// is bounded by maxBytes: a payload that would decompress to more fails
// with ErrDecompressedTooLarge before growing past the bound, and where
// the format states sizes up front (snappy's lengths, zstd's frame and
// block headers, gzip's trailer) before decoding anything.
//
// A Decompressor serves one caller at a time (an event loop, a worker);
// create one per caller, not per batch.
type Decompressor struct {
	maxBytes int

	src     bytes.Reader     // the compressed payload, for the stream codecs
	limited io.LimitedReader // bounds a stream codec's output
	gzip    gzip.Reader      // reused through Reset
	lz4     *lz4.Reader      // created on first use
	zstd    *zstd.Decoder    // created on first use
}

// NewDecompressor returns a Decompressor whose output per batch is at most
// maxDecompressedBytes, which must be positive (DefaultMaxDecompressedBytes
// is a reasonable choice).
func NewDecompressor(maxDecompressedBytes int) *Decompressor {
	assert.That(maxDecompressedBytes > 0, "record.NewDecompressor: bound %d must be positive", maxDecompressedBytes)
	return &Decompressor{maxBytes: maxDecompressedBytes}
}

// Decompress decompresses src, a batch's records section compressed with
// codec, reusing dst's storage: the result holds only the decompressed bytes
// and aliases dst when dst is large enough. Snappy accepts both raw blocks
// (librdkafka, older franz-go) and the xerial framing of the Java client.
// CodecNone copies src.
//
// A payload that does not decompress is ErrCorrupt, with the codec's error
// as Cause; one that exceeds the bound is ErrDecompressedTooLarge. Positions
// in errors are 0.
func (d *Decompressor) Decompress(dst, src []byte, codec Codec) ([]byte, error) {
	dst = dst[:0]
	switch codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		d.src.Reset(src)
		if err := d.gzip.Reset(&d.src); err != nil {
			return nil, codecError(codec, err)
		}
		return d.readBounded(d.gzipPresize(dst, src), &d.gzip, codec)
	case CodecSnappy:
		return decodeSnappy(dst, src, d.maxBytes)
	case CodecLZ4:
		if d.lz4 == nil {
			d.lz4 = lz4.NewReader(nil)
		}
		d.src.Reset(src)
		d.lz4.Reset(&d.src)
		return d.readBounded(dst, d.lz4, codec)
	case CodecZstd:
		return d.decodeZstd(dst, src)
	}
	return nil, errAt(ErrCorrupt, 0, "unknown compression codec %d", int8(codec))
}

// Close releases the zstd decoder's buffers. The Decompressor stays usable;
// the next zstd payload creates a new decoder.
func (d *Decompressor) Close() {
	if d.zstd != nil {
		d.zstd.Close()
		d.zstd = nil
	}
}

// decodeZstd decodes a zstd payload into dst. The frame and block headers
// bound the output first (zstdframe.go): past maxBytes by what they state
// exactly, the payload is refused undecoded; otherwise the output buffer
// is sized once at the bound (at most maxBytes) and the decoder may not
// grow it (WithDecodeAllCapLimit), so a bomb of compressed blocks stops
// at maxBytes having allocated it once.
func (d *Decompressor) decodeZstd(dst, src []byte) ([]byte, error) {
	bound, exceeded, err := zstdSizeBound(src, uint64(d.maxBytes))
	if err != nil {
		return nil, codecError(CodecZstd, err)
	}
	if exceeded {
		return nil, tooLarge(CodecZstd, d.maxBytes)
	}
	if d.zstd == nil {
		dec, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecodeAllCapLimit(true),
			zstd.WithDecoderMaxMemory(zstdMaxMemory))
		assert.That(err == nil, "record: zstd decoder options rejected: %v", err)
		d.zstd = dec
	}
	n := int(min(bound, uint64(d.maxBytes)))
	if cap(dst) < n {
		dst = make([]byte, 0, n)
	}
	out, err := d.zstd.DecodeAll(src, dst[:0:n])
	if err != nil && bound > uint64(d.maxBytes) && len(out) > d.maxBytes-zstdMaxBlockBytes {
		// The output stopped within a block of maxBytes, out of room:
		// the decoder says so in several ways.
		return nil, tooLarge(CodecZstd, d.maxBytes)
	}
	if err != nil {
		return nil, codecError(CodecZstd, err)
	}
	if len(out) > 0 && cap(dst) > 0 && &out[0] == &dst[:1][0] {
		return dst[:len(out)], nil // keep dst's whole capacity for the next batch
	}
	return out, nil
}

// zstdMaxMemory is the zstd decoder's own bound, unused: the capacity of
// the output buffer bounds each call.
const zstdMaxMemory = 1 << 62

// gzipPresize sizes dst for a gzip payload from its trailer's ISIZE, the
// last member's decompressed size modulo 2^32: a well-formed
// single-member payload, what every client sends, then decompresses into
// one allocation instead of a doubling buffer. The hint is not trusted
// further: past maxBytes it is ignored (a payload cut short ends in
// arbitrary bytes), and a lying one costs at most maxBytes of capacity.
func (d *Decompressor) gzipPresize(dst, src []byte) []byte {
	if len(src) < gzipMinBytes {
		return dst
	}
	isize := uint64(binary.LittleEndian.Uint32(src[len(src)-4:]))
	if want := isize + 1; want <= uint64(d.maxBytes) && uint64(cap(dst)) < want { // +1: room to read the end without growing
		return make([]byte, 0, want)
	}
	return dst
}

// gzipMinBytes is the smallest gzip member: a 10-byte header, an empty
// deflate block and the 8-byte trailer.
const gzipMinBytes = 20

// readBounded reads r to its end into dst, failing once it yields more than
// maxBytes. The buffer doubles as it fills, up to maxBytes+1.
func (d *Decompressor) readBounded(dst []byte, r io.Reader, codec Codec) ([]byte, error) {
	d.limited.R, d.limited.N = r, int64(d.maxBytes)+1
	defer func() { d.limited.R = nil }()
	for {
		if len(dst) == cap(dst) {
			dst = d.grow(dst)
		}
		n, err := d.limited.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > d.maxBytes {
			return nil, tooLarge(codec, d.maxBytes)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return nil, codecError(codec, err)
		}
	}
}

// grow returns a full buffer's contents in one twice as large, or of
// maxBytes+1 once that is less than half as large again: a bomb costs
// about twice maxBytes of allocations in all (the doublings below it and
// the last buffer), not a near-copy of the last buffer for a few bytes.
func (d *Decompressor) grow(dst []byte) []byte {
	limit := d.maxBytes + 1
	size := max(decompressGrowBytes, 2*cap(dst))
	if size+size/2 > limit {
		size = max(limit, cap(dst)+1)
	}
	next := make([]byte, len(dst), size)
	copy(next, dst)
	return next
}

// codecError wraps a codec's failure as ErrCorrupt.
func codecError(codec Codec, err error) error {
	return &Error{Kind: ErrCorrupt, Detail: codec.String() + " payload does not decompress", Cause: err}
}

// tooLarge reports output past the bound.
func tooLarge(codec Codec, maxBytes int) error {
	return errAt(ErrDecompressedTooLarge, 0, "%s payload decompresses to more than %d bytes", codec, maxBytes)
}
