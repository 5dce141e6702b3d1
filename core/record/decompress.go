package record

import (
	"bytes"
	"errors"
	"io"
	"slices"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/strata-log/strata/core/assert"
)

// DefaultMaxDecompressedBytes bounds what one batch may decompress to when
// the caller has no better bound: 64 MiB, 64 times DefaultMaxBatchBytes.
const DefaultMaxDecompressedBytes = 64 << 20

// decompressGrowBytes is the first buffer size for codecs whose output size
// is not known up front (gzip, lz4); the buffer doubles from there and is
// kept for the next batch.
const decompressGrowBytes = 4 << 10

// Decompressor decompresses batch payloads for all four codecs, keeping one
// decoder per codec for reuse. The zstd decoder runs with concurrency 1 and
// decodes synchronously, so no goroutine ever starts. Every codec's output
// is bounded by maxBytes: a payload that would decompress to more fails
// with ErrDecompressedTooLarge before growing past the bound.
//
// A Decompressor is for one event loop; create one per loop, not per batch.
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
		return d.readBounded(dst, &d.gzip, codec)
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
		if d.zstd == nil {
			dec, err := zstd.NewReader(nil,
				zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxMemory(uint64(d.maxBytes)))
			assert.That(err == nil, "record: zstd decoder options rejected: %v", err)
			d.zstd = dec
		}
		out, err := d.zstd.DecodeAll(src, dst)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return nil, tooLarge(codec, d.maxBytes)
		}
		if err != nil {
			return nil, codecError(codec, err)
		}
		return out, nil
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

// readBounded reads r to its end into dst, failing once it yields more than
// maxBytes.
func (d *Decompressor) readBounded(dst []byte, r io.Reader, codec Codec) ([]byte, error) {
	d.limited.R, d.limited.N = r, int64(d.maxBytes)+1
	defer func() { d.limited.R = nil }()
	for {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, max(decompressGrowBytes, cap(dst)))
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

// codecError wraps a codec's failure as ErrCorrupt.
func codecError(codec Codec, err error) error {
	return &Error{Kind: ErrCorrupt, Detail: codec.String() + " payload does not decompress", Cause: err}
}

// tooLarge reports output past the bound.
func tooLarge(codec Codec, maxBytes int) error {
	return errAt(ErrDecompressedTooLarge, 0, "%s payload decompresses to more than %d bytes", codec, maxBytes)
}
