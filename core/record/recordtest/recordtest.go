// Package recordtest builds the produce payloads a broker must refuse: a
// RecordBatch v2 whose CRC holds but whose records do not parse, whose
// offsets skip or run backwards, whose lengths lie, whose compressed
// payload does not decompress, and decompression bombs of every codec. It
// is for tests, fuzz corpora, the simulator's hostile clients and attack
// suites; the broker never uses it.
//
// Every payload is exactly one batch with a valid CRC (record.Assemble),
// so that it passes the checks a damaged frame fails and reaches record
// validation. Like the rest of core it starts no goroutines and reads no
// clock: codecs run with concurrency 1 and the output depends only on the
// arguments.
package recordtest

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/record"
)

// Shape is one malformed produce payload and what validation answers.
type Shape struct {
	// Name says what is wrong, for test names and corpus files.
	Name string
	// Payload is the batch, CRC valid.
	Payload []byte
	// Kind is the record sentinel record.Validator.ValidateProduce
	// answers (record.ErrInvalidRecord for all of these).
	Kind error
	// Record is the index of the record at fault (Produce v8+'s
	// batch_index), or -1 when the fault is the batch's.
	Record int32
}

// Malformed returns every malformed shape, their records stamped at
// timestamp (ms).
func Malformed(timestamp int64) []Shape { return MalformedMarked(timestamp, "") }

// MalformedMarked returns Malformed's shapes with mark before every value
// they hold ("" gives Malformed's bytes), so that a reader can recognise
// any of them: the simulator's hostile client marks what the broker must
// refuse, and fails a run that reads a marked value.
func MalformedMarked(timestamp int64, mark string) []Shape {
	c := record.NewCompressor()
	defer c.Close()
	return MalformedWith(c, timestamp, mark)
}

// MalformedWith is MalformedMarked compressing with comp, which a caller
// that builds the shapes often (the simulator's hostile client, at every
// attack) keeps: a zstd encoder is costly to set up.
func MalformedWith(comp *record.Compressor, timestamp int64, mark string) []Shape {
	compress := func(codec record.Codec, src []byte) []byte {
		out, err := comp.Compress(nil, src, codec)
		assert.That(err == nil, "recordtest: %v", err)
		return out
	}
	v := func(value string) []byte { return []byte(mark + value) }
	good := Record(0, 0, []byte("k"), v("value"))
	shapes := []Shape{
		{"garbage-records", batch(timestamp, record.CodecNone, bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 16), 4), record.ErrInvalidRecord, 0},
		{"key-length-minus-7", batch(timestamp, record.CodecNone, rawRecord(0, 0, -7, nil, int64(len(v("v"))), v("v")), 1), record.ErrInvalidRecord, 0},
		{"offset-deltas-0-then-7", batch(timestamp, record.CodecNone, cat(good, Record(7, 0, []byte("k"), v("v"))), 2), record.ErrInvalidRecord, 1},
		{"offset-deltas-0-then-minus-5", batch(timestamp, record.CodecNone, cat(good, Record(-5, 0, []byte("k"), v("v"))), 2), record.ErrInvalidRecord, 1},
		{"offset-deltas-1-then-2", batch(timestamp, record.CodecNone, cat(Record(1, 0, nil, v("v")), Record(2, 0, nil, v("v"))), 2), record.ErrInvalidRecord, 0},
		{"value-claims-1e9-bytes", batch(timestamp, record.CodecNone, rawRecord(0, 0, 1, []byte("k"), 1_000_000_000, v("abc")), 1), record.ErrInvalidRecord, 0},
		{"fewer-records-than-count", batch(timestamp, record.CodecNone, cat(good, Record(1, 0, []byte("k"), v("value"))), 3), record.ErrInvalidRecord, 2},
		{"bytes-after-last-record", batch(timestamp, record.CodecNone, cat(good, []byte{0, 0, 0}), 1), record.ErrInvalidRecord, -1},
		{"negative-header-count", batch(timestamp, record.CodecNone, withHeaders(-3, nil), 1), record.ErrInvalidRecord, 0},
		{"header-count-1e6", batch(timestamp, record.CodecNone, withHeaders(1_000_000, nil), 1), record.ErrInvalidRecord, 0},
		{"null-header-key", batch(timestamp, record.CodecNone, withHeaders(1, cat(varint(-1), varint(-1))), 1), record.ErrInvalidRecord, 0},
		{"record-length-past-fields", batch(timestamp, record.CodecNone, withLength(good, bodyLength(good)+28), 1), record.ErrInvalidRecord, 0},
		{"record-length-short-of-fields", batch(timestamp, record.CodecNone, withLength(good, 6), 1), record.ErrInvalidRecord, 0},
		{"timestamp-delta-overflows", batch(math.MaxInt64-5, record.CodecNone, Record(0, 10, []byte("k"), v("v")), 1), record.ErrInvalidRecord, 0},
		{"second-record-garbage", batch(timestamp, record.CodecNone, cat(good, []byte{0x40}, bytes.Repeat([]byte{0xff}, 8)), 2), record.ErrInvalidRecord, 1},
		{"zstd-garbage-records", batch(timestamp, record.CodecZstd, compress(record.CodecZstd, bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 16)), 4), record.ErrInvalidRecord, 0},
		{"lz4-key-length-minus-7", batch(timestamp, record.CodecLZ4, compress(record.CodecLZ4, rawRecord(0, 0, -7, nil, int64(len(v("v"))), v("v"))), 1), record.ErrInvalidRecord, 0},
	}
	two := cat(good, Record(1, 1, []byte("k2"), v("v2")))
	for _, c := range []record.Codec{record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		shapes = append(shapes,
			Shape{c.String() + "-does-not-decompress", batch(timestamp, c, []byte("this is not a "+c.String()+" payload, whatever it says"), 1), record.ErrInvalidRecord, -1},
			Shape{c.String() + "-truncated", batch(timestamp, c, truncated(compress(c, bytes.Repeat(two, 200))), 400), record.ErrInvalidRecord, -1},
		)
	}
	return shapes
}

// Bomb returns a batch whose records section, compressed with codec,
// decompresses to about size bytes: records of zeros (at most 64 MiB each)
// streamed through the codec as a producer would, with no size stated up
// front where the codec lets it be left out (a zstd frame without a content
// size, a gzip trailer whose size is the real one modulo 2^32, an lz4 frame
// without a content size). Snappy states the decompressed length first,
// and its best ratio is about 21; above 256 MiB, Bomb returns a snappy
// block that claims size and holds only its first bytes.
func Bomb(codec record.Codec, size int64, timestamp int64) []byte {
	assert.That(codec != record.CodecNone, "recordtest.Bomb: a bomb needs a codec")
	records, count := bombRecords(size)
	if codec == record.CodecSnappy {
		if size > maxSnappyBombBytes {
			return batch(timestamp, codec, lyingSnappy(size), count)
		}
		var src bytes.Buffer
		_, err := io.Copy(&src, records)
		assert.That(err == nil, "recordtest: %v", err)
		return batch(timestamp, codec, s2.EncodeSnappy(nil, src.Bytes()), count)
	}
	var out bytes.Buffer
	w := streamWriter(codec, &out)
	// Through Write only: lz4's ReadFrom fails on a fresh writer.
	_, err := io.Copy(struct{ io.Writer }{w}, records)
	if err == nil {
		err = w.Close()
	}
	assert.That(err == nil, "recordtest: %s bomb: %v", codec, err)
	return batch(timestamp, codec, out.Bytes(), count)
}

// ZstdRLEBomb returns the smallest zstd bomb: RLE blocks, four bytes for
// each 128 KiB of zeros, in one frame that states no content size (2 GiB
// is 64 KiB). Its block headers alone say how large it is.
func ZstdRLEBomb(size int64, timestamp int64) []byte {
	const blockBytes = 128 << 10
	payload := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	// Frame header: no content size, not single segment, no checksum, no
	// dictionary; window descriptor 2^17 (128 KiB).
	payload = append(payload, 0x00, 7<<3)
	for left := size; left > 0; left -= blockBytes {
		n := min(left, blockBytes)
		last := uint32(0)
		if left <= blockBytes {
			last = 1
		}
		h := last | 1<<1 | uint32(n)<<3 // an RLE block of n bytes
		payload = append(payload, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	// The records section would be records of zeros; count one record so
	// that the header is plausible.
	return batch(timestamp, record.CodecZstd, payload, 1)
}

// maxSnappyBombBytes is the largest snappy bomb Bomb encodes for real.
const maxSnappyBombBytes = 256 << 20

// bombRecordBytes is the value size of each record of a bomb.
const bombRecordBytes = 64 << 20

// bombRecords returns a reader of the encoding of records of zeros that
// sum to about size bytes, and their count.
func bombRecords(size int64) (io.Reader, int32) {
	var readers []io.Reader
	count := int32(0)
	for left := size; left > 0; left -= bombRecordBytes {
		n := min(left, bombRecordBytes)
		body := append([]byte{0}, varint(0)...) // attributes, timestampDelta
		body = append(body, varint(int64(count))...)
		body = append(body, varint(-1)...) // null key
		body = append(body, varint(n)...)
		length := int64(len(body)) + n + 1 // the header count after the value
		prefix := append(varint(length), body...)
		readers = append(readers, bytes.NewReader(prefix), &zeros{n: n}, bytes.NewReader([]byte{0}))
		count++
	}
	return io.MultiReader(readers...), count
}

// lyingSnappy is a raw snappy block whose length claims size bytes and
// whose body is one literal of 60 zeros.
func lyingSnappy(size int64) []byte {
	out := binary.AppendUvarint(nil, uint64(size))
	out = append(out, 59<<2) // a literal of 60 bytes
	return append(out, make([]byte, 60)...)
}

// streamWriter compresses into w as a producer's streaming compressor
// would, with concurrency 1.
func streamWriter(codec record.Codec, w io.Writer) io.WriteCloser {
	switch codec {
	case record.CodecGzip:
		g, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
		assert.That(err == nil, "recordtest: %v", err)
		return g
	case record.CodecLZ4:
		l := lz4.NewWriter(w)
		err := l.Apply(lz4.ConcurrencyOption(1))
		assert.That(err == nil, "recordtest: %v", err)
		return l
	case record.CodecZstd:
		z, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
		assert.That(err == nil, "recordtest: %v", err)
		return z
	}
	assert.Never("recordtest: no stream writer for %s", codec)
	return nil
}

// truncated returns the first half of p.
func truncated(p []byte) []byte { return p[:len(p)/2] }

// batch assembles a producer's batch of count records (lastOffsetDelta
// count-1, as producers write) around records.
func batch(timestamp int64, codec record.Codec, records []byte, count int32) []byte {
	return record.Assemble(record.BatchHeader{
		PartitionLeaderEpoch: record.NoPartitionLeaderEpoch,
		Attributes:           record.Attributes(codec),
		LastOffsetDelta:      count - 1,
		BaseTimestamp:        timestamp,
		MaxTimestamp:         timestamp,
		ProducerID:           record.NoProducerID,
		ProducerEpoch:        record.NoProducerEpoch,
		BaseSequence:         record.NoSequence,
		RecordCount:          count,
	}, records)
}

// Record encodes one well-formed record: its length, attributes 0, the
// deltas, key and value (nil for null), no headers.
func Record(offsetDelta int32, timestampDelta int64, key, value []byte) []byte {
	return rawRecord(offsetDelta, timestampDelta, nullableLen(key), key, nullableLen(value), value)
}

// rawRecord encodes a record whose key and value lengths are given, true
// or not, with the bytes that follow each.
func rawRecord(offsetDelta int32, timestampDelta int64, keyLen int64, key []byte, valueLen int64, value []byte) []byte {
	body := []byte{0}
	body = append(body, varint(timestampDelta)...)
	body = append(body, varint(int64(offsetDelta))...)
	body = append(body, varint(keyLen)...)
	body = append(body, key...)
	body = append(body, varint(valueLen)...)
	body = append(body, value...)
	body = append(body, varint(0)...)
	return append(varint(int64(len(body))), body...)
}

// withHeaders encodes a record with a null key and value, a header count
// and header bytes as given.
func withHeaders(count int64, headers []byte) []byte {
	body := []byte{0}
	body = append(body, varint(0)...)
	body = append(body, varint(0)...)
	body = append(body, varint(-1)...)
	body = append(body, varint(-1)...)
	body = append(body, varint(count)...)
	body = append(body, headers...)
	return append(varint(int64(len(body))), body...)
}

// bodyLength is the length an encoded record's prefix states.
func bodyLength(rec []byte) int64 {
	n, _ := binary.Varint(rec)
	return n
}

// withLength replaces the length prefix of an encoded record.
func withLength(rec []byte, length int64) []byte {
	_, n := binary.Varint(rec)
	return append(varint(length), rec[n:]...)
}

func nullableLen(b []byte) int64 {
	if b == nil {
		return -1
	}
	return int64(len(b))
}

// varint encodes v as Kafka's zigzag varint.
func varint(v int64) []byte { return binary.AppendVarint(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// zeros reads n zero bytes.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), z.n))
	clear(p[:k])
	z.n -= int64(k)
	return k, nil
}
