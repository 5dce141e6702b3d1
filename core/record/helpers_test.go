package record

import (
	"bytes"

	"github.com/stretchr/testify/require"
)

// tb is what the helpers need from *testing.T, *testing.B and *rapid.T
// (which is not a testing.TB).
type tb interface {
	require.TestingT
	Helper()
}

// allCodecs lists every codec, with snappy in both framings.
var allCodecs = []struct {
	name      string
	codec     Codec
	rawSnappy bool
}{
	{"none", CodecNone, false},
	{"gzip", CodecGzip, false},
	{"snappy-xerial", CodecSnappy, false},
	{"snappy-raw", CodecSnappy, true},
	{"lz4", CodecLZ4, false},
	{"zstd", CodecZstd, false},
}

// codecOptions returns the builder options for one entry of allCodecs.
func codecOptions(codec Codec, rawSnappy bool) []BuilderOption {
	opts := []BuilderOption{WithCompression(codec)}
	if rawSnappy {
		opts = append(opts, WithRawSnappy())
	}
	return opts
}

// sampleRecords returns n records with keys, values and headers that vary,
// some null.
func sampleRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		r.OffsetDelta = int32(i)
		r.Timestamp = 1_700_000_000_000 + int64(i%7)*13 - 20
		if i%5 != 3 {
			r.Key = []byte{'k', byte('0' + i%10)}
		}
		if i%11 != 4 {
			r.Value = bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%40)
		}
		if i%3 == 0 {
			r.Headers = []Header{{Key: []byte("h"), Value: []byte{byte(i)}}, {Key: []byte("nil"), Value: nil}}
		}
	}
	return recs
}

// build encodes recs with opts and returns the batch bytes.
func build(t tb, recs []Record, opts ...BuilderOption) []byte {
	t.Helper()
	b := NewBuilder(opts...)
	for _, r := range recs {
		require.NoError(t, b.AppendRecord(r))
	}
	raw, err := b.AppendTo(nil)
	require.NoError(t, err)
	return raw
}

// mustRead reads and validates one stored batch.
func mustRead(t tb, raw []byte) Batch {
	t.Helper()
	b, err := ReadBatch(raw, MaxBatchSize)
	require.NoError(t, err)
	require.NoError(t, b.ValidateStored())
	return b
}

// readRecords returns deep copies of the records of b.
func readRecords(t tb, b Batch) []Record {
	t.Helper()
	r := NewRecordReader(NewDecompressor(DefaultMaxDecompressedBytes))
	require.NoError(t, r.Reset(b))
	var out []Record
	for r.Next() {
		out = append(out, cloneRecord(r.Record()))
	}
	require.NoError(t, r.Err())
	return out
}

func cloneRecord(r *Record) Record {
	c := *r
	c.Key = cloneBytes(r.Key)
	c.Value = cloneBytes(r.Value)
	c.Headers = nil
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, Header{Key: cloneBytes(h.Key), Value: cloneBytes(h.Value)})
	}
	return c
}

// cloneBytes copies b, keeping nil and empty apart.
func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// requireSameRecords compares what a reader returns with what was built:
// offsets, timestamps, keys, values, headers, attributes; nil and empty
// differ for keys and values (header keys cannot be null).
func requireSameRecords(t tb, want, got []Record) {
	t.Helper()
	require.Equal(t, len(want), len(got), "record count")
	for i := range want {
		w, g := &want[i], &got[i]
		require.Equal(t, w.OffsetDelta, g.OffsetDelta, "record %d offsetDelta", i)
		require.Equal(t, w.Timestamp, g.Timestamp, "record %d timestamp", i)
		require.Equal(t, w.Attributes, g.Attributes, "record %d attributes", i)
		requireSameNullable(t, w.Key, g.Key, "record %d key", i)
		requireSameNullable(t, w.Value, g.Value, "record %d value", i)
		require.Equal(t, len(w.Headers), len(g.Headers), "record %d header count", i)
		for j := range w.Headers {
			require.True(t, bytes.Equal(w.Headers[j].Key, g.Headers[j].Key), "record %d header %d key", i, j)
			requireSameNullable(t, w.Headers[j].Value, g.Headers[j].Value, "record %d header %d value", i, j)
		}
	}
}

func requireSameNullable(t tb, want, got []byte, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, want == nil, got == nil, msgAndArgs...)
	require.True(t, bytes.Equal(want, got), msgAndArgs...)
}

// withHeader returns a copy of raw with the header fields changed by edit and
// the CRC recomputed, so a test reaches the check it means to.
func withHeader(raw []byte, edit func(h *BatchHeader)) []byte {
	out := append([]byte{}, raw...)
	b := Batch{raw: out}
	h := b.Header()
	edit(&h)
	putHeader(out, h)
	writeCRC(out, crcOf(out))
	return out
}
