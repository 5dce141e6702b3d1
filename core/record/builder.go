package record

import (
	"encoding/binary"
	"math"

	"github.com/strata-log/strata/core/assert"
)

// Builder encodes a RecordBatch v2 from records: for tests, the simulator's
// workload clients and compaction output. The broker's produce path never
// builds batches; it appends what producers sent.
//
// Records are encoded as they are appended; AppendTo compresses them once,
// writes the header and computes the CRC. The output is byte-for-byte what a
// Kafka client writes for the same records and options, up to the
// compressor's output.
//
//	b := record.NewBuilder(record.WithCompression(record.CodecZstd))
//	b.Append(ts, key, value)
//	batch, err := b.AppendTo(nil)
type Builder struct {
	opts       builderOptions
	compressor *Compressor

	records       []byte // encoded, uncompressed
	count         int32
	lastDelta     int32 // offsetDelta of the last record, -1 before the first
	baseTimestamp int64
	maxTimestamp  int64
}

type builderOptions struct {
	baseOffset           int64
	partitionLeaderEpoch int32
	codec                Codec
	rawSnappy            bool
	producerID           int64
	producerEpoch        int16
	baseSequence         int32
	transactional        bool
	control              bool
	logAppendTime        bool
	appendTime           int64
	deleteHorizon        bool
	deleteHorizonMs      int64
	lastOffsetDeltaSet   bool
	lastOffsetDelta      int32
	compressor           *Compressor
}

func defaultBuilderOptions() builderOptions {
	return builderOptions{
		partitionLeaderEpoch: NoPartitionLeaderEpoch,
		producerID:           NoProducerID,
		producerEpoch:        NoProducerEpoch,
		baseSequence:         NoSequence,
	}
}

// BuilderOption configures a Builder.
type BuilderOption func(*builderOptions)

// WithBaseOffset sets the batch's base offset. Default 0, as producers send.
func WithBaseOffset(offset int64) BuilderOption {
	return func(o *builderOptions) { o.baseOffset = offset }
}

// WithPartitionLeaderEpoch sets the partition leader epoch. Default
// NoPartitionLeaderEpoch, as producers send.
func WithPartitionLeaderEpoch(epoch int32) BuilderOption {
	return func(o *builderOptions) { o.partitionLeaderEpoch = epoch }
}

// WithCompression sets the codec. Default CodecNone. Snappy is written in
// the Java client's xerial framing unless WithRawSnappy is also given. A
// batch with no records is written uncompressed whatever the codec, as
// Kafka writes them.
func WithCompression(codec Codec) BuilderOption {
	return func(o *builderOptions) { o.codec = codec }
}

// WithRawSnappy writes snappy as one raw block, as librdkafka does, instead
// of xerial framing.
func WithRawSnappy() BuilderOption {
	return func(o *builderOptions) { o.rawSnappy = true }
}

// WithProducer sets the idempotent producer's id, epoch and the sequence of
// the first record. Default NoProducerID, NoProducerEpoch, NoSequence.
func WithProducer(id int64, epoch int16, baseSequence int32) BuilderOption {
	return func(o *builderOptions) {
		o.producerID, o.producerEpoch, o.baseSequence = id, epoch, baseSequence
	}
}

// WithTransactional sets the transactional flag.
func WithTransactional() BuilderOption {
	return func(o *builderOptions) { o.transactional = true }
}

// WithControl sets the control flag: the records are control records (see
// AppendControl).
func WithControl() BuilderOption {
	return func(o *builderOptions) { o.control = true }
}

// WithLogAppendTime sets the LogAppendTime type and appendTime as the
// batch's maxTimestamp. Default CreateTime, with maxTimestamp the largest
// record timestamp.
func WithLogAppendTime(appendTime int64) BuilderOption {
	return func(o *builderOptions) { o.logAppendTime, o.appendTime = true, appendTime }
}

// WithDeleteHorizon sets the delete-horizon flag and stores horizonMs as the
// baseTimestamp record timestamps are relative to, as compaction does
// (KIP-534). Default: no horizon, baseTimestamp is the first record's.
func WithDeleteHorizon(horizonMs int64) BuilderOption {
	return func(o *builderOptions) { o.deleteHorizon, o.deleteHorizonMs = true, horizonMs }
}

// WithLastOffsetDelta sets lastOffsetDelta, which must be at least the last
// record's offset delta: compaction keeps the original batch's last offset
// when it removes the last records, or all of them. Default: the last
// record's offset delta, or 0 for an empty batch.
func WithLastOffsetDelta(delta int32) BuilderOption {
	return func(o *builderOptions) { o.lastOffsetDeltaSet, o.lastOffsetDelta = true, delta }
}

// WithCompressor shares c, so that many Builders keep one set of encoders.
// Default: each Builder creates its own on first use.
func WithCompressor(c *Compressor) BuilderOption {
	return func(o *builderOptions) { o.compressor = c }
}

// NewBuilder returns an empty Builder with the given options.
func NewBuilder(opts ...BuilderOption) *Builder {
	b := &Builder{}
	b.Reset(opts...)
	return b
}

// Reset empties the Builder and sets its options anew from the defaults,
// keeping its buffers and encoders.
func (b *Builder) Reset(opts ...BuilderOption) {
	b.opts = defaultBuilderOptions()
	for _, opt := range opts {
		opt(&b.opts)
	}
	if b.opts.compressor != nil {
		b.compressor = b.opts.compressor
	}
	b.records = b.records[:0]
	b.count, b.lastDelta = 0, -1
	b.baseTimestamp, b.maxTimestamp = NoTimestamp, NoTimestamp
	if b.opts.deleteHorizon {
		b.baseTimestamp = b.opts.deleteHorizonMs
	}
}

// Append adds a record at the next offset delta (0 for the first record)
// with an absolute timestamp in milliseconds. Nil key or value encodes as
// null.
func (b *Builder) Append(timestamp int64, key, value []byte, headers ...Header) {
	assert.That(b.lastDelta < math.MaxInt32, "record.Builder: offset delta overflows")
	b.add(&Record{Key: key, Value: value, Headers: headers, Timestamp: timestamp}, b.lastDelta+1)
}

// AppendRecord adds r with its own OffsetDelta, which must exceed the
// previous record's (gaps are allowed, as in compacted batches), and its
// absolute Timestamp; TimestampDelta and Offset are ignored.
func (b *Builder) AppendRecord(r Record) error {
	if r.OffsetDelta <= b.lastDelta {
		return errAt(ErrInvalidRecord, 0, "offsetDelta %d, want above the previous record's %d", r.OffsetDelta, b.lastDelta)
	}
	b.add(&r, r.OffsetDelta)
	return nil
}

// AppendControl adds a control record of type t with the given value, at the
// next offset delta. Use it with WithControl; for transaction markers the
// value is EndTxnMarkerValue.
func (b *Builder) AppendControl(timestamp int64, t ControlType, value []byte) {
	b.Append(timestamp, ControlKey(t), value)
}

func (b *Builder) add(r *Record, offsetDelta int32) {
	if b.count == 0 && !b.opts.deleteHorizon {
		b.baseTimestamp = r.Timestamp
	}
	if b.count == 0 || r.Timestamp > b.maxTimestamp {
		b.maxTimestamp = r.Timestamp
	}
	b.records = appendRecord(b.records, r, r.Timestamp-b.baseTimestamp, offsetDelta)
	b.count++
	b.lastDelta = offsetDelta
}

// Count returns the number of records appended.
func (b *Builder) Count() int32 { return b.count }

// UncompressedSize returns the size the batch would have uncompressed:
// HeaderSize plus the encoded records.
func (b *Builder) UncompressedSize() int { return HeaderSize + len(b.records) }

// AppendTo compresses the records, appends the finished batch to dst and
// returns the result; dst may already hold batches. The Builder keeps its
// records, so AppendTo can run again. It fails if the batch would exceed
// MaxBatchSize or WithLastOffsetDelta is below the last record's delta.
func (b *Builder) AppendTo(dst []byte) ([]byte, error) {
	o := &b.opts
	lastDelta := max(b.lastDelta, 0)
	if o.lastOffsetDeltaSet {
		if o.lastOffsetDelta < b.lastDelta || o.lastOffsetDelta < 0 {
			return dst, errAt(ErrInvalidRecord, 0, "lastOffsetDelta %d, want at least the last record's %d and non-negative", o.lastOffsetDelta, b.lastDelta)
		}
		lastDelta = o.lastOffsetDelta
	}
	codec := o.codec
	if b.count == 0 {
		// Like Kafka's empty batches (compaction keeps them for producer
		// state), write no compressed stream at all: some readers reject an
		// empty one.
		codec = CodecNone
	}
	attrs := Attributes(codec) & attrCodecMask
	if o.logAppendTime {
		attrs |= attrLogAppendTime
	}
	if o.transactional {
		attrs |= attrTransactional
	}
	if o.control {
		attrs |= attrControl
	}
	if o.deleteHorizon {
		attrs |= attrHasDeleteHorizon
	}
	maxTimestamp := b.maxTimestamp
	if o.logAppendTime {
		maxTimestamp = o.appendTime
	}

	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	if b.compressor == nil && codec != CodecNone {
		b.compressor = NewCompressor()
	}
	var err error
	if codec == CodecNone {
		dst = append(dst, b.records...)
	} else if dst, err = b.compressor.compress(dst, b.records, codec, o.rawSnappy); err != nil {
		return dst[:start], err
	}
	size := len(dst) - start
	if size > MaxBatchSize {
		return dst[:start], errAt(ErrBatchTooLarge, 0, "batch of %d bytes, the format allows %d", size, MaxBatchSize)
	}
	raw := dst[start:]
	putHeader(raw, BatchHeader{
		BaseOffset:           o.baseOffset,
		BatchLength:          int32(size - LogOverhead),
		PartitionLeaderEpoch: o.partitionLeaderEpoch,
		Magic:                MagicV2,
		Attributes:           attrs,
		LastOffsetDelta:      lastDelta,
		BaseTimestamp:        b.baseTimestamp,
		MaxTimestamp:         maxTimestamp,
		ProducerID:           o.producerID,
		ProducerEpoch:        o.producerEpoch,
		BaseSequence:         o.baseSequence,
		RecordCount:          b.count,
	})
	writeCRC(raw, crcOf(raw))
	return dst, nil
}

// Assemble returns a batch of h's header fields around records, a records
// section taken as it is (compressed with h's codec or not, well formed or
// not), with batchLength, magic and the CRC computed: for tests and the
// simulator's hostile clients, which need batches that pass the CRC check
// and fail what comes after it. The broker never assembles batches.
func Assemble(h BatchHeader, records []byte) []byte {
	raw := make([]byte, HeaderSize, HeaderSize+len(records))
	raw = append(raw, records...)
	h.BatchLength = int32(len(raw) - LogOverhead)
	h.Magic = MagicV2
	putHeader(raw, h)
	writeCRC(raw, crcOf(raw))
	return raw
}

// putHeader writes h into the first HeaderSize bytes of raw, CRC included
// as given.
func putHeader(raw []byte, h BatchHeader) {
	be := binary.BigEndian
	be.PutUint64(raw[offBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(raw[offBatchLength:], uint32(h.BatchLength))
	be.PutUint32(raw[offPartitionLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	raw[offMagic] = byte(h.Magic)
	be.PutUint32(raw[offCRC:], h.CRC)
	be.PutUint16(raw[offAttributes:], uint16(h.Attributes))
	be.PutUint32(raw[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(raw[offBaseTimestamp:], uint64(h.BaseTimestamp))
	be.PutUint64(raw[offMaxTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint64(raw[offProducerID:], uint64(h.ProducerID))
	be.PutUint16(raw[offProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(raw[offBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(raw[offRecordCount:], uint32(h.RecordCount))
}
