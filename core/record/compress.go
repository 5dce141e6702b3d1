package record

import (
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/strata-log/strata/core/assert"
)

// Compressor compresses batch payloads for the Builder, keeping one encoder
// per codec for reuse. The broker never uses it on the produce path: it
// serves tests, the simulator's clients and compaction output. Encoders run
// with concurrency 1 and synchronously, so no goroutine ever starts.
//
// Output matches what Kafka clients send: gzip at the default level, snappy
// in the Java client's xerial framing, lz4 frames with 64 KiB blocks as the
// Java client writes, zstd at the default level with a 64 KiB window as
// franz-go writes (small windows keep consumers' memory low).
type Compressor struct {
	out  sliceWriter
	gzip *gzip.Writer  // created on first use
	lz4  *lz4.Writer   // created on first use
	zstd *zstd.Encoder // created on first use
}

// zstdWindowBytes is the zstd window the Compressor writes with.
const zstdWindowBytes = 64 << 10

// NewCompressor returns a Compressor; encoders are created on first use.
func NewCompressor() *Compressor { return &Compressor{} }

// Compress appends src compressed with codec to dst and returns the result.
// CodecNone appends src unchanged.
func (c *Compressor) Compress(dst, src []byte, codec Codec) ([]byte, error) {
	return c.compress(dst, src, codec, false)
}

// compress is Compress with the choice of raw snappy blocks instead of
// xerial framing.
func (c *Compressor) compress(dst, src []byte, codec Codec, rawSnappy bool) ([]byte, error) {
	switch codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		c.out.b = dst
		if c.gzip == nil {
			w, err := gzip.NewWriterLevel(&c.out, gzip.DefaultCompression)
			assert.That(err == nil, "record: gzip level rejected: %v", err)
			c.gzip = w
		} else {
			c.gzip.Reset(&c.out)
		}
		return c.finishStream(c.gzip, src, codec)
	case CodecSnappy:
		if rawSnappy {
			return appendSnappyBlock(dst, src), nil
		}
		return appendXerial(dst, src), nil
	case CodecLZ4:
		c.out.b = dst
		if c.lz4 == nil {
			c.lz4 = lz4.NewWriter(&c.out)
			err := c.lz4.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1))
			assert.That(err == nil, "record: lz4 options rejected: %v", err)
		} else {
			c.lz4.Reset(&c.out)
		}
		return c.finishStream(c.lz4, src, codec)
	case CodecZstd:
		if c.zstd == nil {
			enc, err := zstd.NewWriter(nil,
				zstd.WithEncoderConcurrency(1),
				zstd.WithWindowSize(zstdWindowBytes),
				zstd.WithZeroFrames(true))
			assert.That(err == nil, "record: zstd encoder options rejected: %v", err)
			c.zstd = enc
		}
		return c.zstd.EncodeAll(src, dst), nil
	}
	return nil, errAt(ErrCorrupt, 0, "unknown compression codec %d", int8(codec))
}

// streamWriter is the part of the gzip and lz4 writers compress uses.
type streamWriter interface {
	Write(p []byte) (int, error)
	Close() error
}

// finishStream writes src through w into c.out and returns c.out's bytes.
func (c *Compressor) finishStream(w streamWriter, src []byte, codec Codec) ([]byte, error) {
	_, err := w.Write(src)
	if err == nil {
		err = w.Close()
	}
	out := c.out.b
	c.out.b = nil
	if err != nil {
		return nil, &Error{Kind: ErrCorrupt, Detail: codec.String() + " compression failed", Cause: err}
	}
	return out, nil
}

// Close releases the zstd encoder's buffers. The Compressor stays usable.
func (c *Compressor) Close() {
	if c.zstd != nil {
		c.zstd.Close()
		c.zstd = nil
	}
}

// sliceWriter is an io.Writer appending to a slice.
type sliceWriter struct{ b []byte }

// Write appends p; it never fails.
func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
