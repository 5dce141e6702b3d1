package record

import "math"

// The decompressed size of a producer's batch is bounded, as Kafka's is
// not: a batch of a few KiB can claim gigabytes (a zip bomb), and the
// validation below must hold the decompressed records to parse them.
//
// The bound is decompressionFactor times the topic's max.message.bytes,
// and at least minDecompressedBoundBytes: 16 MiB at Kafka's default
// max.message.bytes (1 MiB). Real data compresses well below 16x at batch
// scale (measured on 1 MiB batches of 1 KiB records: Debian's dpkg.log
// 9.8x with zstd, 9.6x with gzip; botocore's endpoints.json 13.3x zstd,
// 14.1x gzip; dpkg's status file and a package list 3.8-3.9x; snappy and
// lz4 2.3-7.7x), so a batch the producer filled to max.message.bytes
// compressed fits. Only degenerate data goes past it (1 MiB of zeros: 21x
// snappy, 226x lz4, 913x gzip, 4280x zstd). franz-go and librdkafka bound
// a batch before compression (about 1 MB by default), so they never come
// near it; the Java producer sizes batches by an estimate of the
// compressed size and, answered MESSAGE_TOO_LARGE, splits the batch and
// resets its estimate. The floor keeps topics with a small
// max.message.bytes usable by clients whose uncompressed batches are
// larger than that (franz-go's 1 MB batches compressed into a 256 KiB
// max.message.bytes).
const (
	decompressionFactor       = 16
	minDecompressedBoundBytes = 16 << 20
	// maxDecompressedBoundBytes caps the bound of a topic with a huge
	// max.message.bytes at what an int32 length can describe.
	maxDecompressedBoundBytes = math.MaxInt32
)

// MaxDecompressedBytes is the most a producer's compressed batch may
// decompress to on a topic whose max.message.bytes is maxMessageBytes:
// 16 times that, at least 16 MiB and at most 2 GiB. Readers of stored
// batches use at least this (a batch was held to it when it was
// produced).
func MaxDecompressedBytes(maxMessageBytes int) int {
	return int(min(max(int64(maxMessageBytes)*decompressionFactor, minDecompressedBoundBytes), maxDecompressedBoundBytes))
}

// ProduceLimits are the bounds ValidateProduce applies to one batch.
type ProduceLimits struct {
	// MaxDecompressedBytes bounds the batch's records section after
	// decompression (MaxDecompressedBytes of the topic's
	// max.message.bytes); past it the batch is refused with
	// ErrDecompressedTooLarge without decompressing further.
	MaxDecompressedBytes int
}

// LimitsFor returns the limits of a topic whose max.message.bytes is
// maxMessageBytes.
func LimitsFor(maxMessageBytes int) ProduceLimits {
	return ProduceLimits{MaxDecompressedBytes: MaxDecompressedBytes(maxMessageBytes)}
}

// ProduceSummary is what validating a producer's batch learned from its
// records: everything the partition needs to apply the topic's rules
// (message.timestamp.*, cleanup.policy=compact) without reading the
// records again.
type ProduceSummary struct {
	// Records is the number of records, the header's recordCount.
	Records int32
	// DecompressedBytes is the size of the records section decompressed
	// (its size for an uncompressed batch).
	DecompressedBytes int
	// MinTimestamp is the smallest create time (baseTimestamp +
	// timestampDelta) of a record that has one (not NoTimestamp), and
	// MinTimestampRecord the index of the first record with it; NoTimestamp
	// and -1 when no record has one.
	MinTimestamp       int64
	MinTimestampRecord int32
	// MaxTimestamp is the largest create time, at least NoTimestamp, and
	// MaxTimestampRecord the index of the first record with it (-1 when
	// it is NoTimestamp). Kafka's leader writes it into the batch header
	// of a CreateTime topic (LogValidator's setMaxTimestamp).
	MaxTimestamp       int64
	MaxTimestampRecord int32
	// NullKeys counts the records with a null key, which compacted topics
	// refuse; FirstNullKey is the index of the first (-1 when none).
	NullKeys     int32
	FirstNullKey int32
	// InvalidRecord is, when the validation failed at one record, that
	// record's index in the batch (Produce v8+'s batch_index); -1 when
	// the failure is the batch's (its header, its compression, bytes
	// after the last record) or there was none.
	InvalidRecord int32
}

// Validator validates producers' batches, reusing its decompressor and
// record buffers from one batch to the next. It holds no partition or log
// state: ValidateProduce's answer depends only on the batch and the
// limits, so it may run wherever the caller likes (an event loop, a
// worker) as long as one Validator serves one caller at a time.
type Validator struct {
	dec *Decompressor
	rr  *RecordReader
}

// NewValidator returns a Validator; its buffers grow on first use.
func NewValidator() *Validator {
	dec := NewDecompressor(DefaultMaxDecompressedBytes)
	return &Validator{dec: dec, rr: NewRecordReader(dec)}
}

// ValidateProduce checks a producer's batch as Kafka's LogValidator does
// before a leader appends it, and summarizes its records:
//
//   - everything Batch.ValidateForAppend(OriginClient) checks (CRC,
//     header, producer fields);
//   - the records section decompresses, within limits.MaxDecompressedBytes
//     (ErrDecompressedTooLarge past it, found without decompressing
//     further); a payload that does not decompress is ErrInvalidRecord:
//     its CRC held, so it is what the client sent, and resending it would
//     not help (Kafka answers UNKNOWN_SERVER_ERROR);
//   - every record parses: lengths in range and consistent with the bytes
//     (a key length of -7, a value claiming more bytes than there are),
//     header counts and header keys, the record's length matching its
//     fields;
//   - offset deltas are exactly 0, 1, ..., recordCount-1, and there are
//     recordCount records with no byte after the last;
//   - every create time baseTimestamp+timestampDelta fits in an int64.
//
// Every failure is an *Error: ErrCRCMismatch for a bad CRC (CORRUPT_MESSAGE
// on the wire), ErrDecompressedTooLarge, or ErrInvalidRecord; the summary
// then carries InvalidRecord. The topic's own rules (timestamps against
// the broker's clock, keys on compacted topics, max.message.bytes, which
// ReadProduceBatch checks) are the caller's, from the summary.
func (v *Validator) ValidateProduce(b Batch, limits ProduceLimits) (ProduceSummary, error) {
	sum := ProduceSummary{
		MinTimestamp: NoTimestamp, MinTimestampRecord: -1,
		MaxTimestamp: NoTimestamp, MaxTimestampRecord: -1,
		FirstNullKey: -1, InvalidRecord: -1,
	}
	if err := b.ValidateForAppend(OriginClient); err != nil {
		return sum, err
	}
	if limits.MaxDecompressedBytes <= 0 {
		limits.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	v.dec.maxBytes = limits.MaxDecompressedBytes
	r := v.rr
	if err := r.Reset(b); err != nil {
		return sum, undecompressible(err)
	}
	sum.DecompressedBytes = len(r.data)
	base := b.BaseTimestamp()
	for {
		start := r.pos
		if !r.Next() {
			break
		}
		rec := &r.rec
		i := sum.Records
		if rec.OffsetDelta != i {
			sum.InvalidRecord = i
			return sum, r.fail(start, "record %d has offsetDelta %d, want %d", i, rec.OffsetDelta, i)
		}
		delta := rec.TimestampDelta
		if delta > 0 && base > math.MaxInt64-delta || delta < 0 && base < math.MinInt64-delta {
			sum.InvalidRecord = i
			return sum, r.fail(start, "record %d: timestampDelta %d overflows baseTimestamp %d", i, delta, base)
		}
		if created := base + delta; created != NoTimestamp {
			if sum.MinTimestampRecord < 0 || created < sum.MinTimestamp {
				sum.MinTimestamp, sum.MinTimestampRecord = created, i
			}
			if created > sum.MaxTimestamp {
				sum.MaxTimestamp, sum.MaxTimestampRecord = created, i
			}
		}
		if rec.Key == nil {
			if sum.NullKeys == 0 {
				sum.FirstNullKey = i
			}
			sum.NullKeys++
		}
		sum.Records++
	}
	if err := r.Err(); err != nil {
		if r.remaining > 0 {
			sum.InvalidRecord = r.index // the record that did not parse
		}
		return sum, err
	}
	return sum, nil
}

// Release drops the Validator's buffers and codec state (an idle
// validator need not hold the largest batch it saw); it stays usable.
func (v *Validator) Release() {
	v.dec.Close()
	v.rr.buf = nil
}

// undecompressible turns a decompression failure of a producer's batch
// into ErrInvalidRecord (see ValidateProduce), keeping a bound exceeded as
// ErrDecompressedTooLarge.
func undecompressible(err error) error {
	e, ok := err.(*Error)
	if !ok || e.Kind != ErrCorrupt {
		return err
	}
	moved := *e
	moved.Kind = ErrInvalidRecord
	return &moved
}
