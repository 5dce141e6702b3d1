package replica

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/plant"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
)

// ProduceResult is what a Produce answers for one partition.
type ProduceResult struct {
	// Err is nil on success; otherwise it wraps a sentinel of this
	// package, core/log, core/record or core/producer.
	Err error
	// BaseOffset is the offset of the batch's first record.
	BaseOffset int64
	// LogAppendTime is the time the broker stamped for LogAppendTime
	// topics, else -1.
	LogAppendTime int64
	// LogStartOffset is the log start offset after the append.
	LogStartOffset int64
	// RecordErrors name the records that made the batch invalid, when
	// Err is about some of them (Produce v8+'s record_errors).
	RecordErrors []RecordError
}

// RecordError is one record that made a batch invalid.
type RecordError struct {
	// Index is the record's position in its batch (batch_index).
	Index int32
	// Message says what is wrong with it.
	Message string
}

// Produce validates the batch of one partition of a Produce request and
// appends it as leader. done runs once, now or later on the loop: for
// acks=1 and acks=all once the batch is durable under the topic's flush
// policy (with flush.messages=1, fsynced; the log group-commits every
// append waiting on one file), for acks=0 at once. The batch's bytes are
// written in place (offsets, leader epoch, maxTimestamp) and must not be
// used by the caller afterwards.
//
// Validation, in order: the partition is led here and online; acks is -1,
// 0 or 1; acks=all has at least min.insync.replicas in-sync replicas; the
// batch is valid (ValidateProduce, run here on the loop: exactly one
// RecordBatch v2 within max.message.bytes, magic 0 and 1 refused, its CRC,
// producer fields and every record); then the topic's rules on the
// records (compacted topics refuse records without keys; CreateTime
// timestamps within message.timestamp.before.max.ms and after.max.ms of
// now, record by record, as Kafka's LogValidator); then the idempotent
// producer's sequence. A CreateTime batch gets the largest record
// timestamp as its maxTimestamp, a LogAppendTime topic's batch now, as in
// Kafka.
func (p *Partition) Produce(payload []byte, acks int16, now time.Time, done func(ProduceResult)) {
	p.produce(produceInput{payload: payload}, acks, now, verifyArg{}, done)
}

// ProduceVerified is Produce for a client's batch when
// transaction.partition.verification.enable is on (KIP-890 part 1): a
// transactional batch of a producer with no transaction ongoing here is
// appended only with v, what StartTxnVerification returned for it, passed
// once the transaction coordinator answered that the partition is in the
// producer's transaction, and only if no marker of the producer came in
// between (INVALID_TXN_STATE otherwise; core/producer verify.go). v is nil
// when no verification was needed (or none succeeded).
func (p *Partition) ProduceVerified(payload []byte, acks int16, now time.Time, v *producer.Verification, done func(ProduceResult)) {
	p.produce(produceInput{payload: payload}, acks, now, verifyArg{required: true, v: v}, done)
}

// ProduceValidated is Produce for a batch validated already, wherever
// ValidateProduce ran (a worker, off the loop): the partition reads none
// of its records and decides by vb's summary. vb.Err, if set, is answered
// after the checks that come before validation.
func (p *Partition) ProduceValidated(vb ValidatedBatch, acks int16, now time.Time, done func(ProduceResult)) {
	p.produce(produceInput{validated: &vb}, acks, now, verifyArg{}, done)
}

// ProduceValidatedVerified is ProduceVerified for a batch validated
// already (see ProduceValidated).
func (p *Partition) ProduceValidatedVerified(vb ValidatedBatch, acks int16, now time.Time, v *producer.Verification, done func(ProduceResult)) {
	p.produce(produceInput{validated: &vb}, acks, now, verifyArg{required: true, v: v}, done)
}

// produceInput is a produce's batch: the request's bytes, validated on the
// loop, or a batch validated already.
type produceInput struct {
	payload   []byte
	validated *ValidatedBatch
}

// verifyArg is ProduceVerified's part of a produce.
type verifyArg struct {
	required bool
	v        *producer.Verification
}

// StartTxnVerification starts the verification of a client's
// transactional batch of producerID, epoch and first sequence firstSeq
// (the broker then asks the coordinator; Kafka's
// maybeStartTransactionVerification): nil when the producer has a
// transaction ongoing here at epoch, which needs none; tv2 marks an
// implicit add (KIP-890 part 2). It fails as a produce would
// when the partition is not led here and online.
func (p *Partition) StartTxnVerification(producerID int64, epoch int16, firstSeq int32, tv2 bool, now time.Time) (*producer.Verification, error) {
	if err := p.servable(); err != nil {
		return nil, err
	}
	return p.producers.StartVerification(producerID, epoch, firstSeq, tv2, now.UnixMilli()), nil
}

func (p *Partition) produce(in produceInput, acks int16, now time.Time, verify verifyArg, done func(ProduceResult)) {
	res := ProduceResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
	fail := func(err error, recs ...RecordError) {
		res.Err, res.RecordErrors = err, recs
		done(res)
	}
	if err := p.servable(); err != nil {
		if errors.Is(err, ErrOpening) && len(p.held) < maxHeldProduces {
			// Led here and about to serve: wait rather than turn away
			// a client Metadata just sent here.
			p.held = append(p.held, heldProduce{in: in, acks: acks, now: now, verify: verify, done: done})
			return
		}
		fail(err)
		return
	}
	if p.resigning {
		fail(fmt.Errorf("%w: %s lost batches a follower may hold and resigns its leader epoch %d", ErrNotLeader, p.dir, p.leaderEpoch))
		return
	}
	if p.m.e.Buggify("replica/produce-not-leader") {
		// A spurious retriable refusal before anything is appended, as
		// during a leader change: the producer must refresh and retry
		// without losing or duplicating its batch.
		fail(fmt.Errorf("%w: buggify: %s refused a produce", ErrNotLeader, p.dir))
		return
	}
	if acks != -1 && acks != 0 && acks != 1 {
		fail(fmt.Errorf("%w: acks=%d", ErrInvalidRequiredAcks, acks))
		return
	}
	if acks == -1 && len(p.isr) < p.cfg.minInsyncReplicas {
		fail(fmt.Errorf("%w: %s has %d in-sync replicas, min.insync.replicas is %d", ErrNotEnoughReplicas, p.dir, len(p.isr), p.cfg.minInsyncReplicas))
		return
	}
	l := p.l
	vb := in.validated
	if vb == nil {
		checked := ValidateProduce(p.m.validator(), in.payload, p.ProduceLimits())
		vb = &checked
	} else if max := l.Config().MessageMaxBytes; vb.Err == nil && vb.Batch.Size() > max {
		// max.message.bytes went down while the batch was validated.
		vb.Err = fmt.Errorf("%w: batch of %d bytes, max.message.bytes is %d", record.ErrBatchTooLarge, vb.Batch.Size(), max)
	}
	if vb.Err != nil {
		fail(fmt.Errorf("%s: %w", p.dir, vb.Err), vb.recordErrors()...)
		return
	}
	b, sum := vb.Batch, vb.Summary
	nowMs := now.UnixMilli()
	if recs, err := p.checkRecords(sum, nowMs); err != nil {
		fail(err, recs...)
		return
	}
	pinfo := producer.InfoOf(b)
	pinfo.VerificationRequired, pinfo.Verification = verify.required, verify.v
	check, err := p.producers.Check(pinfo)
	if err != nil {
		fail(err)
		return
	}
	if check.Duplicate && !plant.Is(plant.AppendDuplicates) {
		// A retry of a batch already appended: answer with its original
		// offsets, once they are durable, and append nothing.
		orig := check.Original
		res.BaseOffset, res.LogStartOffset = orig.FirstOffset(), l.LogStartOffset()
		if p.cfg.timestampType == record.LogAppendTime {
			res.LogAppendTime = orig.Timestamp
		}
		p.m.log.Debug("duplicate batch answered with its original offsets", "partition", p.dir,
			"producer_id", pinfo.ProducerID, "first_seq", pinfo.FirstSeq, "base_offset", res.BaseOffset)
		p.whenDurable(l, orig.LastOffset+1, acks, res, done)
		return
	}
	switch p.cfg.timestampType {
	case record.LogAppendTime:
		b.SetMaxTimestamp(record.LogAppendTime, nowMs)
		res.LogAppendTime = nowMs
	default:
		// Kafka's LogValidator sets the batch's maxTimestamp to its
		// largest record timestamp (and CreateTime), whatever the
		// producer wrote: the time index and ListOffsets go by it.
		b.SetMaxTimestamp(record.CreateTime, sum.MaxTimestamp)
	}
	p.assertLeaderAppend()
	info, err := l.AppendValidated(b, sum, p.leaderEpoch) // validated above: one pass over the records
	if err := p.leaderAppendError(err); err != nil {
		fail(err)
		return
	}
	p.afterAppend(pinfo, info)
	p.tm.BytesIn.Add(float64(info.Bytes))
	p.tm.MessagesIn.Add(float64(info.LastOffset - info.FirstOffset + 1))
	res.BaseOffset, res.LogStartOffset = info.FirstOffset, info.LogStartOffset
	if len(p.followers) > 0 {
		p.wake() // followers long-polling at the log end
	}
	if !p.cfg.durable() {
		p.advanceHighWatermark()
		p.pageCacheFlush(int64(info.LastOffset - info.FirstOffset + 1))
	}
	p.whenDurable(l, info.LastOffset+1, acks, res, done)
}

// whenDurable answers res once the batch ending before upto is
// acknowledged: for acks=1 once the log is durable up to upto (in durable
// mode every append asks for a flush, the log coalesces them into group
// commits, and the flush also moves the high watermark), for acks=all
// once the high watermark passes it too (every in-sync replica has it
// durably), for acks=0 at once. In page-cache mode acks=1 answers at once
// and acks=all waits for the high watermark, the ISR's log ends.
func (p *Partition) whenDurable(l *log.Log, upto int64, acks int16, res ProduceResult, done func(ProduceResult)) {
	ack := done
	if acks == 0 || plant.Is(plant.AckBeforeFsync) {
		done(res)
		ack = nil
	}
	if !p.cfg.durable() {
		switch {
		case ack == nil:
		case acks == -1:
			p.awaitHighWatermark(upto, res, ack)
		default:
			ack(res)
		}
		return
	}
	l.Flush(upto, func(err error) {
		if err != nil {
			if p.l == l {
				p.fail(err)
			}
			if ack != nil {
				res.Err = fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err)
				ack(res)
			}
			return
		}
		if p.l == l {
			p.advanceHighWatermark()
		}
		switch {
		case ack == nil:
		case acks != -1:
			ack(res)
		case p.l != l:
			// Durable here, but the log was reopened meanwhile: whether
			// the ISR has it is not tracked across; the producer retries
			// and idempotence answers with the original offsets.
			res.Err = fmt.Errorf("%w: %s reopened its log", ErrNotLeader, p.dir)
			ack(res)
		default:
			p.awaitHighWatermark(upto, res, ack)
		}
	})
}

// checkRecords applies the topic's rules to a valid batch's records, by
// its summary, as Kafka's LogValidator does record by record: a compacted
// topic refuses records without a key (INVALID_RECORD), a CreateTime
// topic record timestamps more than message.timestamp.before.max.ms
// before now or message.timestamp.after.max.ms after it
// (INVALID_TIMESTAMP; a record without a timestamp, -1, passes). The
// record errors name the first record without a key, or the earliest and
// the latest record when they are out of range (Kafka lists every
// offending record; the summary keeps the first of each rule, so that
// what a validation hands back stays small).
func (p *Partition) checkRecords(sum record.ProduceSummary, nowMs int64) ([]RecordError, error) {
	if p.l.Config().CleanupPolicy.Compacts() && sum.NullKeys > 0 {
		msg := fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %s", p.dir)
		return []RecordError{{Index: sum.FirstNullKey, Message: msg}},
			fmt.Errorf("%w: %s: %d of %d records have no key, the first is record %d",
				record.ErrInvalidRecord, msg, sum.NullKeys, sum.Records, sum.FirstNullKey)
	}
	if p.cfg.timestampType != record.CreateTime || sum.MinTimestampRecord < 0 {
		return nil, nil
	}
	lo, hi := satSub(nowMs, p.cfg.timestampBeforeMs), satAdd(nowMs, p.cfg.timestampAfterMs)
	var recs []RecordError
	outOfRange := func(i int32, ts int64) {
		recs = append(recs, RecordError{Index: i, Message: fmt.Sprintf(
			"Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]", ts, i, lo, hi)})
	}
	if sum.MinTimestamp < lo {
		outOfRange(sum.MinTimestampRecord, sum.MinTimestamp)
	}
	if sum.MaxTimestamp > hi {
		outOfRange(sum.MaxTimestampRecord, sum.MaxTimestamp)
	}
	if recs == nil {
		return nil, nil
	}
	return recs, fmt.Errorf("%w: one or more records have been rejected due to invalid timestamp: record timestamps run from %d to %d, "+
		"message.timestamp.before.max.ms=%d and after.max.ms=%d allow [%d, %d] at the broker's time %d",
		ErrInvalidTimestamp, sum.MinTimestamp, sum.MaxTimestamp, p.cfg.timestampBeforeMs, p.cfg.timestampAfterMs, lo, hi, nowMs)
}

// satSub and satAdd are a-b and a+b for b >= 0, saturating instead of
// wrapping.
func satSub(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ValidatedBatch is a producer's batch for one partition and what
// validating it found: the batch, viewed in the request's bytes, and its
// summary, or why it is invalid.
type ValidatedBatch struct {
	Batch   record.Batch
	Summary record.ProduceSummary
	// Err is why the batch is invalid (a core/record sentinel), nil when
	// it is valid.
	Err error
}

// recordErrors names the record at fault of an invalid batch, if one is.
func (vb *ValidatedBatch) recordErrors() []RecordError {
	if vb.Summary.InvalidRecord < 0 {
		return nil
	}
	msg := vb.Err.Error()
	var e *record.Error
	if errors.As(vb.Err, &e) {
		msg = e.Detail
	}
	return []RecordError{{Index: vb.Summary.InvalidRecord, Message: msg}}
}

// ProduceLimits is what validating a batch for a partition takes from
// its configuration (Partition.ProduceLimits, read on the loop), so that
// ValidateProduce needs nothing else.
type ProduceLimits struct {
	// MaxMessageBytes is max.message.bytes, the largest batch.
	MaxMessageBytes int
	// Records bounds the records' validation (decompressed size).
	Records record.ProduceLimits
}

// ProduceLimits returns the limits a batch for the partition is validated
// with.
func (p *Partition) ProduceLimits() ProduceLimits {
	mmb := record.DefaultMaxBatchBytes
	if p.l != nil {
		mmb = p.l.Config().MessageMaxBytes
	}
	return ProduceLimits{MaxMessageBytes: mmb, Records: record.LimitsFor(mmb)}
}

// ValidateProduce validates payload, the records of one partition in a
// Produce request, with v: exactly one RecordBatch v2 within
// limits.MaxMessageBytes, then everything record.Validator.ValidateProduce
// checks. It reads no partition or log state and changes nothing but v's
// buffers, so it may run off the loop (one v per worker); the partition's
// rules are applied to the result by ProduceValidated.
func ValidateProduce(v *record.Validator, payload []byte, limits ProduceLimits) ValidatedBatch {
	b, err := record.ReadProduceBatch(payload, limits.MaxMessageBytes)
	if err != nil {
		return ValidatedBatch{Summary: record.ProduceSummary{InvalidRecord: -1, FirstNullKey: -1, MinTimestampRecord: -1, MaxTimestampRecord: -1}, Err: err}
	}
	if plant.Is(plant.SkipRecordValidation) {
		return skipRecordValidation(b)
	}
	sum, err := v.ValidateProduce(b, limits.Records)
	return ValidatedBatch{Batch: b, Summary: sum, Err: err}
}

// skipRecordValidation is the planted SkipRecordValidation: the header's
// checks only, and a summary taken from the header as if every record
// parsed.
func skipRecordValidation(b record.Batch) ValidatedBatch {
	sum := record.ProduceSummary{Records: b.RecordCount(), DecompressedBytes: len(b.RecordBytes()),
		MinTimestamp: b.BaseTimestamp(), MaxTimestamp: b.MaxTimestamp(), FirstNullKey: -1, InvalidRecord: -1}
	if err := b.ValidateForAppend(record.OriginClient); err != nil {
		return ValidatedBatch{Summary: record.ProduceSummary{InvalidRecord: -1, FirstNullKey: -1, MinTimestampRecord: -1, MaxTimestampRecord: -1}, Err: err}
	}
	return ValidatedBatch{Batch: b, Summary: sum}
}

// leaderAppendError is the error a request gets for the error of an
// append of this broker's own batches (nil for none): a full disk appended
// nothing and the log, intact, takes appends again once there is room
// (core/log), so the client retries; a failed log fails the partition.
// Both are ErrStorage; any other error is the request's as it is.
func (p *Partition) leaderAppendError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, env.ErrNoSpace):
		return fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err)
	case logFailed(err):
		p.fail(err)
		return fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err)
	}
	return err
}
