package record

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// zstdPayloads are zstd payloads as encoders write them: with and without
// a content size, a checksum, a single segment, several frames, a
// skippable frame.
func zstdPayloads(t testing.TB) [][]byte {
	src := bytes.Repeat([]byte("strata zstd frame "), 20_000)
	all, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(64<<10), zstd.WithEncoderCRC(true))
	require.NoError(t, err)
	single, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithSingleSegment(true), zstd.WithEncoderCRC(false))
	require.NoError(t, err)
	var stream bytes.Buffer
	w, err := zstd.NewWriter(&stream, zstd.WithEncoderConcurrency(1))
	require.NoError(t, err)
	_, err = w.Write(src)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	skippable := binary.LittleEndian.AppendUint32(nil, 0x184D2A5A)
	skippable = binary.LittleEndian.AppendUint32(skippable, 3)
	skippable = append(skippable, 1, 2, 3)
	small := all.EncodeAll([]byte("x"), nil)
	return [][]byte{
		all.EncodeAll(src, nil),
		single.EncodeAll(src[:1000], nil),
		stream.Bytes(),
		append(append([]byte{}, small...), all.EncodeAll(src, nil)...),
		append(append([]byte{}, skippable...), small...),
		all.EncodeAll(nil, nil),
		{},
	}
}

func TestZstdSizeBoundCoversWhatDecodes(t *testing.T) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	require.NoError(t, err)
	for i, p := range zstdPayloads(t) {
		out, err := dec.DecodeAll(p, nil)
		require.NoError(t, err, "payload %d", i)
		bound, exceeded, err := zstdSizeBound(p, 1<<30)
		require.NoError(t, err, "payload %d", i)
		require.False(t, exceeded)
		require.GreaterOrEqual(t, bound, uint64(len(out)), "payload %d", i)
		require.LessOrEqual(t, bound, uint64(len(out))+zstdMaxBlockBytes*2, "payload %d: the bound is about the size", i)
		got, err := NewDecompressor(len(out)+1).Decompress(nil, p, CodecZstd)
		require.NoError(t, err, "payload %d", i)
		require.Equal(t, len(out), len(got))
	}
	for _, bad := range [][]byte{{1}, {0x28, 0xb5, 0x2f}, {0x28, 0xb5, 0x2f, 0xfd}, []byte("not zstd at all")} {
		_, _, err := zstdSizeBound(bad, 1<<30)
		require.Error(t, err, "%x", bad)
	}
}

// FuzzZstdSizeBound: the header walk never refuses what the decoder
// accepts, and its bound covers what the decoder produces.
func FuzzZstdSizeBound(f *testing.F) {
	for _, p := range zstdPayloads(f) {
		f.Add(p)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(8<<20))
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, p []byte) {
		bound, exceeded, err := zstdSizeBound(p, 8<<20)
		out, derr := dec.DecodeAll(p, nil)
		if derr != nil {
			return
		}
		require.NoError(t, err, "the decoder took %x", p)
		if !exceeded {
			require.GreaterOrEqual(t, bound, uint64(len(out)))
		}
	})
}
