package record

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/stretchr/testify/require"
)

// payloads returns inputs of the shapes batches have: empty, tiny,
// compressible, incompressible, and larger than one xerial block.
func payloads() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 100<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	return map[string][]byte{
		"empty":          {},
		"one byte":       {42},
		"compressible":   bytes.Repeat([]byte("strata record batch "), 10_000),
		"incompressible": random,
	}
}

func TestCodecRoundTrip(t *testing.T) {
	c := NewCompressor()
	defer c.Close()
	d := NewDecompressor(DefaultMaxDecompressedBytes)
	defer d.Close()
	for name, src := range payloads() {
		for _, codec := range allCodecs {
			t.Run(codec.name+"/"+name, func(t *testing.T) {
				prefix := []byte("prefix")
				out, err := c.compress(append([]byte{}, prefix...), src, codec.codec, codec.rawSnappy)
				require.NoError(t, err)
				require.Equal(t, prefix, out[:len(prefix)], "compress appends")
				got, err := d.Decompress(nil, out[len(prefix):], codec.codec)
				require.NoError(t, err)
				require.True(t, bytes.Equal(src, got), "round trip of %d bytes", len(src))
			})
		}
	}
}

func TestXerialFraming(t *testing.T) {
	src := bytes.Repeat([]byte("0123456789"), 10_000) // 100 KB: four blocks
	framed := appendXerial(nil, src)
	require.Equal(t, xerialMagic, framed[:8])
	require.Equal(t, []byte{0, 0, 0, 1, 0, 0, 0, 1}, framed[8:16])
	blocks := 0
	for rest := framed[xerialHeaderSize:]; len(rest) > 0; blocks++ {
		_, next, err := nextXerialBlock(rest)
		require.NoError(t, err)
		rest = next
	}
	require.Equal(t, 4, blocks)

	d := NewDecompressor(DefaultMaxDecompressedBytes)
	got, err := d.Decompress(nil, framed, CodecSnappy)
	require.NoError(t, err)
	require.Equal(t, src, got)

	// A raw block is told apart from xerial framing by the magic.
	got, err = d.Decompress(nil, snappy.Encode(nil, src), CodecSnappy)
	require.NoError(t, err)
	require.Equal(t, src, got)

	// Header only: zero blocks, empty output.
	got, err = d.Decompress(nil, framed[:xerialHeaderSize], CodecSnappy)
	require.NoError(t, err)
	require.Empty(t, got)

	for _, cut := range []int{xerialHeaderSize + 2, xerialHeaderSize + 10, len(framed) - 1} {
		_, err = d.Decompress(nil, framed[:cut], CodecSnappy)
		require.ErrorIs(t, err, ErrCorrupt, "cut at %d", cut)
	}
}

func TestDecompressBound(t *testing.T) {
	const bound = 1 << 20
	bomb := make([]byte, 10<<20) // zeros compress about a thousandfold
	exact := make([]byte, bound)
	c := NewCompressor()
	for _, codec := range allCodecs[1:] {
		t.Run(codec.name, func(t *testing.T) {
			d := NewDecompressor(bound)
			compressed, err := c.compress(nil, bomb, codec.codec, codec.rawSnappy)
			require.NoError(t, err)
			require.Less(t, len(compressed), 1<<20)
			_, err = d.Decompress(nil, compressed, codec.codec)
			require.ErrorIs(t, err, ErrDecompressedTooLarge)

			compressed, err = c.compress(nil, exact, codec.codec, codec.rawSnappy)
			require.NoError(t, err)
			got, err := d.Decompress(nil, compressed, codec.codec)
			require.NoError(t, err)
			require.Len(t, got, bound)

			_, err = NewDecompressor(bound-1).Decompress(nil, compressed, codec.codec)
			require.ErrorIs(t, err, ErrDecompressedTooLarge)
		})
	}
}

func TestDecompressGarbage(t *testing.T) {
	d := NewDecompressor(DefaultMaxDecompressedBytes)
	garbage := []byte("definitely not a compressed payload, whatever the codec")
	for _, codec := range allCodecs[1:] {
		_, err := d.Decompress(nil, garbage, codec.codec)
		require.ErrorIs(t, err, ErrCorrupt, codec.name)
		_, err = d.Decompress(nil, nil, codec.codec)
		if codec.codec != CodecZstd && codec.codec != CodecLZ4 { // no frames is no output
			require.ErrorIs(t, err, ErrCorrupt, codec.name+" empty")
		}
	}
	_, err := d.Decompress(nil, garbage, Codec(6))
	require.ErrorIs(t, err, ErrCorrupt)

	// A compressed batch that does not decompress is reported at the
	// records' position.
	raw := build(t, sampleRecords(10), WithCompression(CodecGzip))
	bad := withHeader(raw, func(*BatchHeader) {})
	bad[len(bad)-12] ^= 0xff // inside the gzip stream
	writeCRC(bad, crcOf(bad))
	b := mustRead(t, bad)
	err = NewRecordReader(d).Reset(b)
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestCodecsStartNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	src := bytes.Repeat([]byte("goroutine-free "), 100_000) // 1.5 MB, many blocks
	for i := 0; i < 3; i++ {
		c := NewCompressor()
		d := NewDecompressor(DefaultMaxDecompressedBytes)
		for _, codec := range allCodecs {
			out, err := c.compress(nil, src, codec.codec, codec.rawSnappy)
			require.NoError(t, err)
			got, err := d.Decompress(nil, out, codec.codec)
			require.NoError(t, err)
			require.Equal(t, len(src), len(got))
		}
		c.Close()
		d.Close()
	}
	// Other goroutines (the test runner's, a finalizer) may end meanwhile.
	require.LessOrEqual(t, runtime.NumGoroutine(), before)
}

func TestCodecString(t *testing.T) {
	names := []string{"none", "gzip", "snappy", "lz4", "zstd", "codec(5)"}
	for i, want := range names {
		require.Equal(t, want, Codec(i).String())
		require.Equal(t, i < 5, Codec(i).Known())
	}
	require.False(t, Codec(-1).Known())
}

// TestSnappyRefusesS2Extensions: a raw block in S2's format (a superset
// of snappy's that s2.Decode and xerial.Decode accept) is not snappy: a
// Java or librdkafka consumer could not read it back, so it is refused,
// raw and inside xerial framing alike.
func TestSnappyRefusesS2Extensions(t *testing.T) {
	src := bytes.Repeat([]byte("abcdefgh0123456789-"), 4_000) // repeats: S2 encodes them with its repeat codes
	block := s2.Encode(nil, src)
	back, err := s2.Decode(nil, block)
	require.NoError(t, err)
	require.Equal(t, src, back, "the lenient decoder takes it")

	d := NewDecompressor(DefaultMaxDecompressedBytes)
	_, err = d.Decompress(nil, block, CodecSnappy)
	require.ErrorIs(t, err, ErrCorrupt, "a raw S2 block")

	framed := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	framed = binary.BigEndian.AppendUint32(framed, uint32(len(block)))
	framed = append(framed, block...)
	_, err = d.Decompress(nil, framed, CodecSnappy)
	require.ErrorIs(t, err, ErrCorrupt, "an S2 block in xerial framing")
}
