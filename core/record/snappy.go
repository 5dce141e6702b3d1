package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
)

// Kafka's Java client wraps snappy in the framing of xerial's
// SnappyOutputStream: a 16-byte header (magic, version, compatible version),
// then blocks, each a big-endian int32 length and a raw snappy block.
// librdkafka and older franz-go send one raw snappy block instead. Readers
// tell them apart by the magic, as the Java client does.
//
// klauspost/compress does the codec work: xerial.Encode writes the framing
// and s2.EncodeSnappy raw blocks. Decoding stays here, on snappy's strict
// decoder: the library's decoders (s2's, which xerial.Decode* use) also
// accept S2's extensions of the format, which a Java or librdkafka consumer
// cannot read, and they allocate each block's claimed size before any
// bound is checked, where this checks the sum of the claims against
// maxBytes first.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// Xerial framing sizes.
const (
	xerialHeaderSize      = 16       // magic, version int32, compatible version int32
	xerialBlockHeaderSize = 4        // big-endian int32 block length
	xerialBlockSize       = 32 << 10 // uncompressed bytes per block, as the Java client writes
)

// decodeSnappy decompresses a raw or xerial-framed snappy payload into dst,
// which has length 0, checking each block's claimed size against maxBytes
// before allocating.
func decodeSnappy(dst, src []byte, maxBytes int) ([]byte, error) {
	if len(src) >= xerialHeaderSize && bytes.HasPrefix(src, xerialMagic) {
		return decodeXerial(dst, src[xerialHeaderSize:], maxBytes)
	}
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, codecError(CodecSnappy, err)
	}
	if n > maxBytes {
		return nil, tooLarge(CodecSnappy, maxBytes)
	}
	out, err := snappy.DecodeStrict(slices.Grow(dst, n)[:n], src)
	if err != nil {
		return nil, codecError(CodecSnappy, err)
	}
	return out, nil
}

// decodeXerial decodes the blocks after the xerial header. A first pass sums
// the blocks' claimed sizes, touching only their headers, so dst grows once
// and the bound is checked before any allocation.
func decodeXerial(dst, blocks []byte, maxBytes int) ([]byte, error) {
	total := 0
	for rest := blocks; len(rest) > 0; {
		block, next, err := nextXerialBlock(rest)
		if err != nil {
			return nil, err
		}
		n, err := snappy.DecodedLen(block)
		if err != nil {
			return nil, codecError(CodecSnappy, err)
		}
		if n > maxBytes-total {
			return nil, tooLarge(CodecSnappy, maxBytes)
		}
		total += n
		rest = next
	}
	dst = slices.Grow(dst, total)[:total]
	at := 0
	for rest := blocks; len(rest) > 0; {
		block, next, _ := nextXerialBlock(rest)
		n, _ := snappy.DecodedLen(block)
		if _, err := snappy.DecodeStrict(dst[at:at+n], block); err != nil {
			return nil, codecError(CodecSnappy, err)
		}
		at += n
		rest = next
	}
	return dst, nil
}

// nextXerialBlock splits the first block off blocks.
func nextXerialBlock(blocks []byte) (block, rest []byte, err error) {
	if len(blocks) < xerialBlockHeaderSize {
		return nil, nil, codecError(CodecSnappy, errXerialFraming)
	}
	size := binary.BigEndian.Uint32(blocks)
	blocks = blocks[xerialBlockHeaderSize:]
	if uint64(size) > uint64(len(blocks)) {
		return nil, nil, codecError(CodecSnappy, errXerialFraming)
	}
	return blocks[:size], blocks[size:], nil
}

// errXerialFraming is the cause of a block header that does not fit.
var errXerialFraming = errors.New("xerial block length runs past the payload")

// appendXerial appends src compressed in the Java client's xerial framing
// (xerialBlockSize uncompressed bytes per block). xerial.Encode starts the
// framing on an empty dst, so it encodes into dst's spare capacity, grown
// first to the framing's largest size.
func appendXerial(dst, src []byte) []byte {
	blocks := (len(src) + xerialBlockSize - 1) / xerialBlockSize
	maxLen := xerialHeaderSize + blocks*xerialBlockHeaderSize + s2.MaxEncodedLen(min(len(src), xerialBlockSize))*blocks
	at := len(dst)
	dst = slices.Grow(dst, maxLen)
	out := xerial.Encode(dst[at:at], src)
	return append(dst[:at], out...) // a copy onto itself when out is in place
}

// appendSnappyBlock appends src as one raw snappy block, as librdkafka and
// kgo send it.
func appendSnappyBlock(dst, src []byte) []byte {
	maxLen := s2.MaxEncodedLen(len(src))
	at := len(dst)
	dst = slices.Grow(dst, maxLen)
	block := s2.EncodeSnappy(dst[at:at+maxLen], src)
	return dst[:at+len(block)]
}
