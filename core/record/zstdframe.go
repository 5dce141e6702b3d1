package record

import (
	"encoding/binary"
	"errors"
)

// A zstd payload is a sequence of frames (RFC 8878), each a header and
// blocks. The headers alone bound what the payload decompresses to: a
// frame may declare its content size; a raw block holds its bytes as they
// are and an RLE block says how many times its one byte repeats; a
// compressed block regenerates at most Block_Maximum_Size, the smaller of
// the frame's window and 128 KiB. The Decompressor reads that bound before
// decoding, so that a payload whose headers already promise more than its
// limit is refused without decoding a byte, and the output buffer is
// allocated once at the bound instead of growing.
const (
	zstdFrameMagic      = 0xFD2FB528
	zstdSkippableMagic  = 0x184D2A50 // the low 4 bits vary
	zstdSkippableMask   = 0xFFFFFFF0
	zstdMaxBlockBytes   = 128 << 10
	zstdMinWindowBytes  = 1 << 10
	zstdBlockHeaderSize = 3
	zstdChecksumSize    = 4
)

// zstd block types.
const (
	zstdBlockRaw        = 0
	zstdBlockRLE        = 1
	zstdBlockCompressed = 2
)

// errZstdFraming is the cause of a payload whose frame or block headers do
// not fit it.
var errZstdFraming = errors.New("zstd frame or block header runs past the payload")

// zstdSizeBound walks the frames of a zstd payload and returns an upper
// bound on its decompressed size, stopping with exceeded once the sizes
// the headers state exactly (declared content sizes, raw and RLE blocks)
// pass limit. It reads headers only: a payload it accepts may still fail
// to decode. It accepts what klauspost/compress's DecodeAll does: an empty
// payload, skippable frames, frames with or without a content size.
func zstdSizeBound(src []byte, limit uint64) (bound uint64, exceeded bool, err error) {
	var sure uint64
	for len(src) > 0 {
		if len(src) < 4 {
			return 0, false, errZstdFraming
		}
		magic := binary.LittleEndian.Uint32(src)
		if magic&zstdSkippableMask == zstdSkippableMagic {
			if len(src) < 8 || uint64(binary.LittleEndian.Uint32(src[4:])) > uint64(len(src)-8) {
				return 0, false, errZstdFraming
			}
			src = src[8+binary.LittleEndian.Uint32(src[4:]):]
			continue
		}
		if magic != zstdFrameMagic {
			return 0, false, errors.New("not a zstd frame")
		}
		frameSure, frameBound, rest, err := zstdFrameBound(src[4:])
		if err != nil {
			return 0, false, err
		}
		if frameSure > limit-sure {
			return 0, true, nil
		}
		sure += frameSure
		// No overflow: the exact parts stay within limit, and a
		// compressed block adds 128 KiB for at least 3 bytes of payload.
		bound += frameBound
		src = rest
	}
	return bound, false, nil
}

// zstdFrameBound reads one frame after its magic number and returns the
// exactly known part of its size, its bound, and what follows it.
func zstdFrameBound(src []byte) (sure, bound uint64, rest []byte, err error) {
	if len(src) < 1 {
		return 0, 0, nil, errZstdFraming
	}
	fhd := src[0]
	src = src[1:]
	singleSegment := fhd&(1<<5) != 0
	hasChecksum := fhd&(1<<2) != 0
	window := uint64(0)
	if !singleSegment {
		if len(src) < 1 {
			return 0, 0, nil, errZstdFraming
		}
		wd := src[0]
		src = src[1:]
		base := uint64(1) << (10 + wd>>3)
		window = base + base/8*uint64(wd&7)
	}
	dictIDBytes := [4]int{0, 1, 2, 4}[fhd&3]
	fcsBytes := [4]int{0, 2, 4, 8}[fhd>>6]
	if fhd>>6 == 0 && singleSegment {
		fcsBytes = 1
	}
	if len(src) < dictIDBytes+fcsBytes {
		return 0, 0, nil, errZstdFraming
	}
	src = src[dictIDBytes:]
	contentSize, hasContentSize := uint64(0), fcsBytes > 0
	switch fcsBytes {
	case 1:
		contentSize = uint64(src[0])
	case 2:
		contentSize = uint64(binary.LittleEndian.Uint16(src)) + 256
	case 4:
		contentSize = uint64(binary.LittleEndian.Uint32(src))
	case 8:
		contentSize = binary.LittleEndian.Uint64(src)
	}
	src = src[fcsBytes:]
	if singleSegment {
		window = max(contentSize, zstdMinWindowBytes)
	}
	blockMax := min(window, zstdMaxBlockBytes)
	for last := false; !last; {
		if len(src) < zstdBlockHeaderSize {
			return 0, 0, nil, errZstdFraming
		}
		h := uint32(src[0]) | uint32(src[1])<<8 | uint32(src[2])<<16
		src = src[zstdBlockHeaderSize:]
		last = h&1 != 0
		size := uint64(h >> 3)
		stored := size
		switch (h >> 1) & 3 {
		case zstdBlockRaw:
			sure += size
			bound += size
		case zstdBlockRLE:
			sure += size
			bound += size
			stored = 1
		case zstdBlockCompressed:
			bound += blockMax
		default:
			return 0, 0, nil, errors.New("zstd block of the reserved type")
		}
		if stored > uint64(len(src)) {
			return 0, 0, nil, errZstdFraming
		}
		src = src[stored:]
	}
	if hasChecksum {
		if len(src) < zstdChecksumSize {
			return 0, 0, nil, errZstdFraming
		}
		src = src[zstdChecksumSize:]
	}
	if hasContentSize {
		// The decoder fails a frame whose blocks do not add up to its
		// declared size, so the declared size is the bound.
		return contentSize, contentSize, src, nil
	}
	return sure, bound, src, nil
}
