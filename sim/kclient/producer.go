package kclient

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/record"
)

// Bounds of a Producer.
const (
	// MaxInflightPerPartition is the most batches of one partition in
	// flight at once, Kafka's bound for idempotent producers
	// (max.in.flight.requests.per.connection <= 5).
	MaxInflightPerPartition = 5
	// DefaultProduceTimeout is the Produce request's timeout field
	// (request.timeout.ms's share on the broker).
	DefaultProduceTimeout = 3 * time.Second
)

// ProducerConfig configures a Producer.
type ProducerConfig struct {
	// Acks is -1 (all), 1 or 0.
	Acks int16
	// Idempotent enables the idempotent producer; it needs Acks -1.
	Idempotent bool
	// Codec compresses every batch.
	Codec record.Codec
	// MaxInflight bounds the batches in flight per partition, 1 to
	// MaxInflightPerPartition (0 means the bound).
	MaxInflight int
	// Values returns record i's value of a batch being built (at its
	// first send and at every rebuild, see BatchInfo.Generation). It
	// must not be nil.
	Values func(b BatchInfo, i int) []byte
	// OnEvent, if set, learns every build and every send's outcome.
	OnEvent func(ProduceEvent)
}

// BatchInfo names one build of a batch.
type BatchInfo struct {
	Topic     string
	Partition int32
	// Number counts the producer's batches from 1, in Produce order.
	Number uint64
	// Generation counts the builds of the batch from 0: an idempotent
	// producer rebuilds only after an epoch bump or a new producer id, a
	// plain one for every retry.
	Generation int
	// ProducerID, ProducerEpoch and BaseSequence are the idempotent
	// producer's fields, -1 without idempotence.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// Records is the number of records.
	Records int
}

// ProduceEventKind says what a ProduceEvent reports.
type ProduceEventKind uint8

const (
	// Built: a batch was built (Values ran); its values may be written by
	// any send of this build from now on.
	Built ProduceEventKind = iota + 1
	// Acked: the broker acknowledged the send: the records are at
	// BaseOffset, BaseOffset+1, ...
	Acked
	// Rejected: the broker answered with an error (Code).
	Rejected
	// Unknown: the send timed out or lost its connection; it may have
	// been written.
	Unknown
	// NotSent: the send never reached the transport.
	NotSent
	// Fired: an acks=0 send was handed to the transport; nothing more
	// will be known of it.
	Fired
)

func (k ProduceEventKind) String() string {
	return [...]string{"?", "built", "acked", "rejected", "unknown", "not-sent", "fired"}[k]
}

// ProduceEvent is one build or one send's outcome.
type ProduceEvent struct {
	Kind  ProduceEventKind
	Batch BatchInfo
	// Values are the batch's record values (shared; do not modify).
	Values [][]byte
	// Send numbers the sends of this build from 1 (0 for Built).
	Send int
	// BaseOffset is the first record's offset (Acked).
	BaseOffset int64
	// Code is the error code (Rejected).
	Code int16
	// Err is the transport error (Unknown, NotSent).
	Err error
}

// pbatch is one batch of a producer.
type pbatch struct {
	info   BatchInfo
	values [][]byte
	raw    []byte
	built  bool
	sends  int
	// inflight: in a request awaiting its answer; sent: sent in the
	// current round (idempotent: since the last resend from the head).
	inflight, sent bool
}

// ppart is one partition's queue of unacknowledged batches, in sequence
// order.
type ppart struct {
	topic     string
	partition int32
	queue     []*pbatch
	inflight  int
	// resend: an idempotent send failed; nothing more is sent until the
	// batches in flight are answered, then every batch is sent again
	// from the head, in order.
	resend   bool
	nextSeq  int32
	failures int
	retryAt  time.Duration
}

// Producer writes batches to partition leaders. It runs on its client's
// loop.
type Producer struct {
	c   *Client
	e   env.Env
	cfg ProducerConfig

	parts []*ppart // sorted by (topic, partition)
	next  uint64   // last batch number given

	// The idempotent producer's id and epoch; pidReady once known.
	pid         int64
	epoch       int16
	pidReady    bool
	pidInflight bool
	pidFailures int
	bumpPending bool
	// restartPending: a new id or epoch waits for the requests in
	// flight to be answered before every partition restarts its
	// sequences under it.
	restartPending bool
	inflightReqs   int

	stats ProducerStats

	compressor *record.Compressor
	drainTimer env.Timer
	drainAt    time.Duration
	closed     bool
}

// NewProducer returns a producer on c.
func NewProducer(c *Client, cfg ProducerConfig) *Producer {
	if cfg.MaxInflight <= 0 || cfg.MaxInflight > MaxInflightPerPartition {
		cfg.MaxInflight = MaxInflightPerPartition
	}
	if cfg.Idempotent && cfg.Acks != -1 {
		panic("kclient: an idempotent producer needs acks=all")
	}
	p := &Producer{c: c, e: c.e, cfg: cfg, pid: -1, epoch: -1}
	if cfg.Codec != record.CodecNone {
		p.compressor = record.NewCompressor()
	}
	c.OnMetadata(p.drain)
	if cfg.Idempotent {
		p.initProducerID()
	}
	return p
}

// Close stops sending; batches not acknowledged are abandoned and
// answers still in flight are reported as they arrive.
func (p *Producer) Close() {
	p.closed = true
	if p.drainTimer != nil {
		p.drainTimer.Stop()
	}
	if p.compressor != nil {
		p.compressor.Close()
	}
}

// Pending is the number of batches not yet acknowledged (for acks=0: not
// yet handed to the transport).
func (p *Producer) Pending() int {
	n := 0
	for _, pp := range p.parts {
		n += len(pp.queue)
	}
	return n
}

// ProducerStats counts what a producer went through.
type ProducerStats struct {
	// EpochBumps and NewIDs count KIP-360 epoch bumps and producer ids
	// obtained after the first.
	EpochBumps, NewIDs int
	// Rebuilds counts batches built again (new values).
	Rebuilds int
}

// Stats returns the producer's counters.
func (p *Producer) Stats() ProducerStats { return p.stats }

// ProducerID is the idempotent producer's id and epoch (-1 before
// InitProducerId answered, and without idempotence).
func (p *Producer) ProducerID() (int64, int16) { return p.pid, p.epoch }

// Produce queues a batch of n records for a partition; it is built when
// first sent.
func (p *Producer) Produce(topic string, partition int32, n int) {
	if p.closed || n <= 0 {
		return
	}
	pp := p.part(topic, partition)
	p.next++
	pp.queue = append(pp.queue, &pbatch{info: BatchInfo{Topic: topic, Partition: partition, Number: p.next, Records: n,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}})
	p.c.AddTopics(topic)
	p.e.Post(p.drain)
}

func (p *Producer) part(topic string, partition int32) *ppart {
	i, found := slices.BinarySearchFunc(p.parts, topic, func(pp *ppart, t string) int {
		return cmp.Or(strings.Compare(pp.topic, t), cmp.Compare(pp.partition, partition))
	})
	if !found {
		p.parts = slices.Insert(p.parts, i, &ppart{topic: topic, partition: partition})
	}
	return p.parts[i]
}

func (p *Producer) event(ev ProduceEvent) {
	if p.cfg.OnEvent != nil {
		p.cfg.OnEvent(ev)
	}
}

// initProducerID asks any broker for a producer id, until it gets one.
func (p *Producer) initProducerID() {
	if p.closed || p.pidInflight {
		return
	}
	p.pidInflight = true
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = 60000
	p.c.DoAny(req, func(r kmsg.Response, err error) {
		p.pidInflight = false
		resp, ok := r.(*kmsg.InitProducerIDResponse)
		if err != nil || !ok || resp.ErrorCode != 0 {
			p.pidFailures++
			code := int16(-1)
			if ok {
				code = resp.ErrorCode
			}
			p.c.log.Debug("InitProducerId failed", "err", err, "code", codeName(code))
			p.e.AfterFunc(p.c.backoff(p.pidFailures), p.initProducerID)
			return
		}
		p.pidFailures = 0
		if p.pid >= 0 {
			p.stats.NewIDs++
		}
		p.pid, p.epoch, p.pidReady = resp.ProducerID, resp.ProducerEpoch, true
		p.c.log.Debug("producer id", "id", p.pid, "epoch", p.epoch)
		p.restartPending = true
		p.afterAnswers()
	})
}

// restartSequences makes every partition start again at sequence 0 under
// the current id and epoch: every unacknowledged batch is rebuilt at its
// next send.
func (p *Producer) restartSequences() {
	for _, pp := range p.parts {
		pp.nextSeq, pp.resend = 0, false
		for _, b := range pp.queue {
			b.built, b.sent = false, false
		}
	}
}

// encodeBatch encodes values as one batch built with opts, every record
// stamped now (e's clock) and the i-th keyed "k<i>".
func encodeBatch(e env.Env, values [][]byte, opts ...record.BuilderOption) []byte {
	rb := record.NewBuilder(opts...)
	ts := e.Now().UnixMilli()
	for i, v := range values {
		rb.Append(ts, []byte(fmt.Sprintf("k%d", i)), v)
	}
	raw, err := rb.AppendTo(nil)
	if err != nil {
		panic(fmt.Sprintf("kclient: building a batch: %v", err))
	}
	return raw
}

// build encodes b for its next send: for an idempotent producer with the
// partition's next sequences, for a plain one afresh for every send.
func (p *Producer) build(pp *ppart, b *pbatch) {
	if b.built {
		return
	}
	if b.values != nil {
		b.info.Generation++
		p.stats.Rebuilds++
	}
	b.sends = 0
	if p.cfg.Idempotent {
		b.info.ProducerID, b.info.ProducerEpoch, b.info.BaseSequence = p.pid, p.epoch, pp.nextSeq
		pp.nextSeq = record.IncrementSequence(pp.nextSeq, int32(b.info.Records))
	}
	b.values = make([][]byte, b.info.Records)
	for i := range b.values {
		b.values[i] = p.cfg.Values(b.info, i)
	}
	opts := []record.BuilderOption{record.WithCompression(p.cfg.Codec)}
	if p.compressor != nil {
		opts = append(opts, record.WithCompressor(p.compressor))
	}
	if p.cfg.Idempotent {
		opts = append(opts, record.WithProducer(b.info.ProducerID, b.info.ProducerEpoch, b.info.BaseSequence))
	}
	b.raw, b.built = encodeBatch(p.e, b.values, opts...), true
	p.event(ProduceEvent{Kind: Built, Batch: b.info, Values: b.values})
}

// scheduleDrain runs drain at monotonic time at (the earliest asked).
func (p *Producer) scheduleDrain(at time.Duration) {
	if p.drainTimer != nil && p.drainAt <= at {
		return
	}
	if p.drainTimer != nil {
		p.drainTimer.Stop()
	}
	p.drainAt = at
	p.drainTimer = p.e.AfterFunc(at-p.e.Monotonic(), func() {
		p.drainTimer = nil
		p.drain()
	})
}

// produceEntry is one partition's batch in a request, with the build
// and send it carries.
type produceEntry struct {
	pp     *ppart
	b      *pbatch
	info   BatchInfo
	values [][]byte
	send   int
}

// drain sends what can be sent: per partition the next unsent batch
// while fewer than MaxInflight are in flight, one batch per partition per
// request, one request per leader at a time per round.
func (p *Producer) drain() {
	if p.closed || (p.cfg.Idempotent && (!p.pidReady || p.bumpPending || p.restartPending)) {
		return
	}
	now := p.e.Monotonic()
	for round := 0; round < p.cfg.MaxInflight; round++ {
		var leaders []int32
		var groups [][]produceEntry
		for _, pp := range p.parts {
			b := p.nextBatch(pp, now)
			if b == nil {
				continue
			}
			leader, _, ok := p.c.Leader(pp.topic, pp.partition)
			if !ok {
				p.c.RefreshMetadata()
				continue
			}
			i, found := slices.BinarySearch(leaders, leader)
			if !found {
				leaders = slices.Insert(leaders, i, leader)
				groups = slices.Insert(groups, i, nil)
			}
			groups[i] = append(groups[i], produceEntry{pp: pp, b: b})
		}
		if len(leaders) == 0 {
			return
		}
		for i, leader := range leaders {
			p.send(leader, groups[i])
		}
	}
}

// nextBatch returns the batch pp sends next, or nil.
func (p *Producer) nextBatch(pp *ppart, now time.Duration) *pbatch {
	if pp.resend || pp.inflight >= p.cfg.MaxInflight {
		return nil
	}
	if pp.retryAt > now {
		p.scheduleDrain(pp.retryAt)
		return nil
	}
	for _, b := range pp.queue {
		if !b.sent {
			return b
		}
	}
	return nil
}

// send sends one Produce request to leader.
func (p *Producer) send(leader int32, entries []produceEntry) {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = p.cfg.Acks
	req.TimeoutMillis = int32(DefaultProduceTimeout / time.Millisecond)
	for i := range entries {
		en := &entries[i]
		p.build(en.pp, en.b)
		en.b.sent, en.b.inflight = true, true
		en.b.sends++
		en.pp.inflight++
		en.info, en.values, en.send = en.b.info, en.b.values, en.b.sends
		t, _ := p.c.Topic(en.pp.topic)
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != en.pp.topic {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic, rt.TopicID = en.pp.topic, t.ID
			req.Topics = append(req.Topics, rt)
			n++
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = en.pp.partition, en.b.raw
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
	}
	p.inflightReqs++
	if p.cfg.Acks == 0 {
		p.c.sendNoResponse(leader, req, func(err error) { p.answered(leader, entries, nil, err) })
		return
	}
	p.c.Do(leader, req, 0, func(r kmsg.Response, err error) {
		resp, _ := r.(*kmsg.ProduceResponse)
		if err == nil && resp == nil {
			err = fmt.Errorf("%w: unexpected response %T", ErrConnLost, r)
		}
		p.answered(leader, entries, resp, err)
	})
}

// answered handles a request's outcome, per batch.
func (p *Producer) answered(leader int32, entries []produceEntry, resp *kmsg.ProduceResponse, err error) {
	p.inflightReqs--
	if resp != nil {
		for _, b := range resp.Brokers {
			p.c.learnBroker(b.NodeID, b.Host, b.Port)
		}
	}
	for _, en := range entries {
		en.pp.inflight--
		en.b.inflight = false
		ev := ProduceEvent{Batch: en.info, Values: en.values, Send: en.send, BaseOffset: -1}
		switch {
		case err != nil:
			ev.Kind, ev.Err = NotSent, err
			if OutcomeUnknown(err) {
				ev.Kind = Unknown
			}
			p.event(ev)
			p.retry(en, false)
			p.c.RefreshMetadata()
		case p.cfg.Acks == 0:
			ev.Kind = Fired
			p.event(ev)
			p.remove(en)
		default:
			p.answer(en, ev, p.findResult(resp, en.pp))
		}
	}
	p.afterAnswers()
}

// findResult returns the response's result for pp's batch, or nil.
func (p *Producer) findResult(resp *kmsg.ProduceResponse, pp *ppart) *kmsg.ProduceResponseTopicPartition {
	t, _ := p.c.Topic(pp.topic)
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		if resp.Version >= 13 && rt.TopicID != t.ID || resp.Version < 13 && rt.Topic != pp.topic {
			continue
		}
		for j := range rt.Partitions {
			if rt.Partitions[j].Partition == pp.partition {
				return &rt.Partitions[j]
			}
		}
	}
	return nil
}

// answer handles one batch's result.
func (p *Producer) answer(en produceEntry, ev ProduceEvent, rp *kmsg.ProduceResponseTopicPartition) {
	if rp == nil {
		ev.Kind, ev.Err = Unknown, fmt.Errorf("%w: the response lacks %s-%d", ErrConnLost, en.pp.topic, en.pp.partition)
		p.event(ev)
		p.retry(en, false)
		return
	}
	if rp.ErrorCode == 0 {
		ev.Kind, ev.BaseOffset = Acked, rp.BaseOffset
		p.event(ev)
		en.pp.failures = 0
		p.remove(en)
		return
	}
	ev.Kind, ev.Code = Rejected, rp.ErrorCode
	p.event(ev)
	code := rp.ErrorCode
	p.c.log.Debug("produce rejected", "topic", en.pp.topic, "partition", en.pp.partition, "batch", en.info.Number,
		"seq", en.info.BaseSequence, "epoch", en.info.ProducerEpoch, "code", codeName(code), "message", deref(rp.ErrorMessage))
	if code == kerr.NotLeaderForPartition.Code && !p.c.leaderHint(en.pp.topic, en.pp.partition, rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch) {
		p.c.RefreshMetadata()
	} else if code != kerr.NotLeaderForPartition.Code && refreshesMetadata(code) {
		p.c.RefreshMetadata()
	}
	switch {
	case p.cfg.Idempotent && (code == kerr.OutOfOrderSequenceNumber.Code || code == kerr.UnknownProducerID.Code):
		if len(en.pp.queue) > 0 && en.pp.queue[0] == en.b {
			// The oldest unacknowledged batch does not follow what the
			// partition holds of this producer: the sequence can only
			// restart under a new epoch (KIP-360).
			p.c.log.Debug("bumping the producer epoch", "topic", en.pp.topic, "partition", en.pp.partition, "code", codeName(code))
			p.bumpPending = true
			p.retry(en, true)
			return
		}
		p.retry(en, false) // an earlier batch failed and is being retried
	case p.cfg.Idempotent && (code == kerr.InvalidProducerEpoch.Code || code == kerr.ProducerFenced.Code):
		p.pidReady = false
		p.retry(en, true)
		p.initProducerID()
	default:
		// Retriable or not, the batch is tried again: there is no
		// delivery timeout (see the package doc).
		p.retry(en, false)
	}
}

// retry schedules en's batch to be sent again after a backoff.
// Idempotent: the partition resends everything from the head once
// nothing of it is in flight (quiet: no backoff, the rebuild is coming).
func (p *Producer) retry(en produceEntry, quiet bool) {
	pp := en.pp
	if !quiet {
		pp.failures++
		pp.retryAt = p.e.Monotonic() + p.c.backoff(pp.failures)
	}
	if p.cfg.Idempotent {
		pp.resend = true
		return
	}
	en.b.sent, en.b.built = false, false
}

// remove drops an acknowledged (or fired) batch.
func (p *Producer) remove(en produceEntry) {
	if i := slices.Index(en.pp.queue, en.b); i >= 0 {
		en.pp.queue = slices.Delete(en.pp.queue, i, i+1)
	}
}

// afterAnswers restarts rounds and epochs once nothing is in flight.
func (p *Producer) afterAnswers() {
	for _, pp := range p.parts {
		if pp.resend && pp.inflight == 0 {
			pp.resend = false
			for _, b := range pp.queue {
				b.sent = false
			}
		}
	}
	if p.inflightReqs == 0 && p.pidReady {
		switch {
		case p.bumpPending && p.epoch == math.MaxInt16:
			p.bumpPending, p.pidReady = false, false
			p.initProducerID()
		case p.bumpPending:
			p.bumpPending = false
			p.epoch++
			p.stats.EpochBumps++
			p.c.log.Debug("producer epoch bumped", "id", p.pid, "epoch", p.epoch)
			p.restartSequences()
		case p.restartPending:
			p.restartPending = false
			p.restartSequences()
		}
	}
	p.drain()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
