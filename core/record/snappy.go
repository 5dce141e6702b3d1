package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/golang/snappy"
)

// Kafka's Java client wraps snappy in the framing of xerial's
// SnappyOutputStream: a 16-byte header (magic, version, compatible version),
// then blocks, each a big-endian int32 length and a raw snappy block.
// librdkafka and older franz-go send one raw snappy block instead. Readers
// tell them apart by the magic, as the Java client does.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// Xerial framing sizes.
const (
	xerialHeaderSize      = 16       // magic, version int32, compatible version int32
	xerialBlockHeaderSize = 4        // big-endian int32 block length
	xerialBlockSize       = 32 << 10 // uncompressed bytes per block, as the Java client writes
	xerialVersion         = 1
	xerialCompatVersion   = 1
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
	out, err := snappy.Decode(slices.Grow(dst, n)[:n], src)
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
		if _, err := snappy.Decode(dst[at:at+n], block); err != nil {
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

// appendXerial appends src compressed in the Java client's xerial framing.
func appendXerial(dst, src []byte) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, xerialVersion)
	dst = binary.BigEndian.AppendUint32(dst, xerialCompatVersion)
	for len(src) > 0 {
		n := min(xerialBlockSize, len(src))
		dst = appendSnappyBlock(dst, src[:n], true)
		src = src[n:]
	}
	return dst
}

// appendSnappyBlock appends src as one raw snappy block, preceded by its
// big-endian length when framed.
func appendSnappyBlock(dst, src []byte, framed bool) []byte {
	header := 0
	if framed {
		header = xerialBlockHeaderSize
	}
	maxLen := snappy.MaxEncodedLen(len(src))
	at := len(dst)
	dst = slices.Grow(dst, header+maxLen)
	block := snappy.Encode(dst[at+header:at+header+maxLen], src)
	if framed {
		binary.BigEndian.PutUint32(dst[at:at+header], uint32(len(block)))
	}
	return dst[:at+header+len(block)]
}
