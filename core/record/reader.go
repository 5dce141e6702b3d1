package record

import (
	"fmt"

	"github.com/strata-log/strata/core/assert"
)

// RecordReader iterates the records of one batch at a time, reusing its
// buffers across batches: after warm-up, reading an uncompressed batch
// allocates nothing and a compressed one only grows the decompression
// buffer. Records alias the batch (uncompressed) or the reader's buffer
// (compressed): a Record is valid until the next Next, its bytes until the
// next Reset. It is not safe for concurrent use, like everything in core.
//
//	r := record.NewRecordReader(dec)
//	if err := r.Reset(batch); err != nil { ... }
//	for r.Next() {
//		rec := r.Record()
//		...
//	}
//	if err := r.Err(); err != nil { ... }
//
// Reset does not check the CRC; validate the batch first.
type RecordReader struct {
	dec *Decompressor
	buf []byte // decompressed records, reused

	data    []byte // the records being read: the batch's bytes or buf
	active  bool   // Reset succeeded and Next has not yet returned false
	posBase int    // added to positions in data when reporting errors
	pos     int    // next record's position in data

	remaining     int32 // records the header still promises
	index         int32 // records read so far
	prevDelta     int32 // offsetDelta of the previous record, -1 before the first
	lastDelta     int32 // the batch's lastOffsetDelta
	baseOffset    int64
	baseTimestamp int64
	appendTime    int64 // maxTimestamp when the batch uses LogAppendTime
	logAppendTime bool

	rec     Record
	headers []Header // backing array for rec.Headers, reused
	err     error

	// decompressed counts the bytes Reset has decompressed, for callers
	// that bound their work per step by what it costs (the cleaner).
	decompressed int64
}

// Decompressed is the total of the bytes this reader's Resets have
// decompressed so far (zero for uncompressed batches).
func (r *RecordReader) Decompressed() int64 { return r.decompressed }

// NewRecordReader returns a reader that decompresses with dec, which it
// uses and does not own.
func NewRecordReader(dec *Decompressor) *RecordReader {
	assert.That(dec != nil, "record.NewRecordReader: nil Decompressor")
	return &RecordReader{dec: dec}
}

// Reset prepares the reader for b's records, decompressing them if needed.
// It fails for an unknown codec, a negative record count, a payload that does
// not decompress, or one that decompresses past the Decompressor's bound.
func (r *RecordReader) Reset(b Batch) error {
	r.data, r.pos, r.err, r.active = nil, 0, nil, false
	r.remaining, r.index, r.prevDelta = 0, 0, -1
	r.lastDelta = b.LastOffsetDelta()
	r.baseOffset, r.baseTimestamp = b.BaseOffset(), b.BaseTimestamp()
	r.appendTime = b.MaxTimestamp()
	r.logAppendTime = b.Attributes().TimestampType() == LogAppendTime
	count := b.RecordCount()
	if count < 0 {
		r.err = errAt(ErrCorrupt, offRecordCount, "recordCount %d is negative", count)
		return r.err
	}
	codec := b.Codec()
	if codec == CodecNone {
		r.data, r.posBase = b.RecordBytes(), offRecords
		r.remaining, r.active = count, true
		return nil
	}
	out, err := r.dec.Decompress(r.buf, b.RecordBytes(), codec)
	if err != nil {
		r.err = shift(err, offRecords)
		return r.err
	}
	r.buf, r.data, r.posBase = out, out, 0
	r.remaining, r.active = count, true
	r.decompressed += int64(len(out))
	return nil
}

// Next reads the next record and reports whether there was one. It returns
// false after the last record the header promised, or at a malformed
// record; Err tells which. Trailing bytes after the promised records are an
// error too.
func (r *RecordReader) Next() bool {
	if !r.active {
		return false
	}
	if r.remaining == 0 {
		if r.pos != len(r.data) {
			r.err = errAt(ErrInvalidRecord, r.posBase+r.pos, "%d bytes after the last of %d records", len(r.data)-r.pos, r.index)
		}
		r.active = false
		return false
	}
	if err := r.parse(); err != nil {
		r.err, r.active = err, false
		return false
	}
	r.remaining--
	r.index++
	return true
}

// Record returns the record Next read. It and the slices it holds are
// overwritten by the next call to Next or Reset.
func (r *RecordReader) Record() *Record { return &r.rec }

// Err returns the error that stopped Next or Reset, or nil.
func (r *RecordReader) Err() error { return r.err }

// parse decodes the record at r.pos into r.rec and advances r.pos.
func (r *RecordReader) parse() error {
	start := r.pos
	length, n := readVarint(r.data[start:])
	if n <= 0 {
		return r.fail(start, "record %d: length: %s", r.index, varintProblem(n))
	}
	if length < minRecordBodyBytes || int64(length) > int64(len(r.data)-start-n) {
		return r.fail(start, "record %d: length %d, want %d to %d", r.index, length, minRecordBodyBytes, len(r.data)-start-n)
	}
	bodyPos := start + n
	body := r.data[bodyPos : bodyPos+int(length)]
	d := fieldDecoder{b: body}

	attributes := int8(d.byte())
	timestampDelta := d.varlong("timestampDelta")
	offsetDelta := d.varint("offsetDelta")
	if d.ok() && (offsetDelta <= r.prevDelta || offsetDelta > r.lastDelta) {
		d.failf("offsetDelta %d, want above %d and at most lastOffsetDelta %d", offsetDelta, r.prevDelta, r.lastDelta)
	}
	key := d.nullableBytes("key")
	value := d.nullableBytes("value")
	headerCount := d.varint("headerCount")
	if d.ok() && (headerCount < 0 || int64(headerCount)*minHeaderBytes > int64(len(body)-d.pos)) {
		d.failf("header count %d, %d bytes remain", headerCount, len(body)-d.pos)
	}
	headers := r.headers[:0]
	for i := int32(0); d.ok() && i < headerCount; i++ {
		hkey := d.bytes("header key")
		hvalue := d.nullableBytes("header value")
		headers = append(headers, Header{Key: hkey, Value: hvalue})
	}
	r.headers = headers
	if d.ok() && d.pos != len(body) {
		d.failf("record length %d, fields end at %d", length, d.pos)
	}
	if !d.ok() {
		return r.fail(bodyPos+d.pos, "record %d: %s", r.index, d.problem)
	}

	timestamp := r.baseTimestamp + timestampDelta
	if r.logAppendTime {
		timestamp = r.appendTime
	}
	r.rec = Record{
		Attributes:     attributes,
		TimestampDelta: timestampDelta,
		OffsetDelta:    offsetDelta,
		Key:            key,
		Value:          value,
		Headers:        headers,
		Offset:         r.baseOffset + int64(offsetDelta),
		Timestamp:      timestamp,
	}
	if len(headers) == 0 {
		r.rec.Headers = nil
	}
	r.prevDelta = offsetDelta
	r.pos = bodyPos + int(length)
	return nil
}

// fail records a malformed-record error at pos in r.data.
func (r *RecordReader) fail(pos int, format string, args ...any) error {
	return errAt(ErrInvalidRecord, r.posBase+pos, format, args...)
}

// fieldDecoder reads the fields of one record body, remembering the first
// problem so the parse reads straight through.
type fieldDecoder struct {
	b       []byte
	pos     int
	problem string
}

func (d *fieldDecoder) ok() bool { return d.problem == "" }

func (d *fieldDecoder) failf(format string, args ...any) {
	if d.ok() {
		d.problem = fmt.Sprintf(format, args...)
	}
}

func (d *fieldDecoder) byte() byte {
	if !d.ok() || d.pos >= len(d.b) {
		d.failf("attributes: body ends")
		return 0
	}
	c := d.b[d.pos]
	d.pos++
	return c
}

func (d *fieldDecoder) varint(field string) int32 {
	if !d.ok() {
		return 0
	}
	v, n := readVarint(d.b[d.pos:])
	if n <= 0 {
		d.failf("%s: %s", field, varintProblem(n))
		return 0
	}
	d.pos += n
	return v
}

func (d *fieldDecoder) varlong(field string) int64 {
	if !d.ok() {
		return 0
	}
	v, n := readVarlong(d.b[d.pos:])
	if n <= 0 {
		d.failf("%s: %s", field, varintProblem(n))
		return 0
	}
	d.pos += n
	return v
}

// nullableBytes reads a varint length (-1 for null) and that many bytes.
func (d *fieldDecoder) nullableBytes(field string) []byte {
	l := d.varint(field)
	if !d.ok() || l == -1 {
		return nil
	}
	return d.take(field, l)
}

// bytes reads a varint length, which must not be negative, and that many
// bytes.
func (d *fieldDecoder) bytes(field string) []byte {
	l := d.varint(field)
	if !d.ok() {
		return nil
	}
	return d.take(field, l)
}

func (d *fieldDecoder) take(field string, l int32) []byte {
	if l < 0 || int64(l) > int64(len(d.b)-d.pos) {
		d.failf("%s length %d, %d bytes remain", field, l, len(d.b)-d.pos)
		return nil
	}
	v := d.b[d.pos : d.pos+int(l) : d.pos+int(l)]
	d.pos += int(l)
	return v
}

// varintProblem names what readVarint's n <= 0 means.
func varintProblem(n int) string {
	if n == 0 {
		return "buffer ends inside a varint"
	}
	return "varint too long or out of range"
}
