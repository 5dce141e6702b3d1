package replica

import (
	"errors"
	"fmt"
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
}

// Produce validates the batch of one partition of a Produce request and
// appends it as leader. done runs once, now or later on the loop: for
// acks=1 and acks=all once the batch is durable under the topic's flush
// policy (with flush.messages=1, fsynced; the log group-commits every
// append waiting on one file), for acks=0 at once. The batch's bytes are
// written in place (offsets, leader epoch) and must not be used by the
// caller afterwards.
//
// Validation, in order: the partition is led here and online; acks is -1,
// 0 or 1; acks=all has at least min.insync.replicas in-sync replicas; the
// payload is exactly one RecordBatch v2 within max.message.bytes (magic 0
// and 1 refused) with a valid CRC and producer fields; CreateTime
// timestamps within message.timestamp.before.max.ms and after.max.ms of
// now (checked on the batch's first and largest timestamps, not record by
// record, so as not to decompress); then the log appends it (compacted
// topics refuse records without keys). A LogAppendTime topic stamps now
// into the batch.
func (p *Partition) Produce(payload []byte, acks int16, now time.Time, done func(ProduceResult)) {
	p.produce(payload, acks, now, verifyArg{}, done)
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
	p.produce(payload, acks, now, verifyArg{required: true, v: v}, done)
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

func (p *Partition) produce(payload []byte, acks int16, now time.Time, verify verifyArg, done func(ProduceResult)) {
	res := ProduceResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
	fail := func(err error) {
		res.Err = err
		done(res)
	}
	if err := p.servable(); err != nil {
		if errors.Is(err, ErrOpening) && len(p.held) < maxHeldProduces {
			// Led here and about to serve: wait rather than turn away
			// a client Metadata just sent here.
			p.held = append(p.held, heldProduce{payload: payload, acks: acks, now: now, verify: verify, done: done})
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
	b, err := record.ReadProduceBatch(payload, l.Config().MessageMaxBytes)
	if err == nil {
		err = b.ValidateForAppend(record.OriginClient)
	}
	if err != nil {
		fail(err)
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
	nowMs := now.UnixMilli()
	switch p.cfg.timestampType {
	case record.LogAppendTime:
		b.SetMaxTimestamp(record.LogAppendTime, nowMs)
		res.LogAppendTime = nowMs
	default:
		if err := p.checkTimestamps(b, nowMs); err != nil {
			fail(err)
			return
		}
	}
	info, err := l.AppendValidated(b, p.leaderEpoch) // validated above: one CRC per batch
	switch {
	case err == nil:
	case errors.Is(err, env.ErrNoSpace):
		// Nothing was appended; the log is intact and takes appends
		// again once there is room (core/log). The client retries.
		fail(fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err))
		return
	case logFailed(err):
		p.fail(err)
		fail(fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err))
		return
	default:
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

// checkTimestamps applies message.timestamp.before.max.ms and
// after.max.ms to a CreateTime batch.
func (p *Partition) checkTimestamps(b record.Batch, nowMs int64) error {
	first, max := b.BaseTimestamp(), b.MaxTimestamp()
	if first >= 0 && p.cfg.timestampBeforeMs < nowMs && first < nowMs-p.cfg.timestampBeforeMs {
		return fmt.Errorf("%w: timestamp %d is more than message.timestamp.before.max.ms=%d before the broker's time %d",
			ErrInvalidTimestamp, first, p.cfg.timestampBeforeMs, nowMs)
	}
	if max >= 0 && max-nowMs > p.cfg.timestampAfterMs {
		return fmt.Errorf("%w: timestamp %d is more than message.timestamp.after.max.ms=%d after the broker's time %d",
			ErrInvalidTimestamp, max, p.cfg.timestampAfterMs, nowMs)
	}
	return nil
}
