package kclient

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
)

// A pipelined transaction (TxnProducerConfig.Pipelined) produces its
// writes the way franz-go's producer does rather than one at a time:
//
//   - The writes are the transaction's batches in the order their records
//     were produced; a partition may have several, numbered in that order
//     (its sequences).
//   - Up to MaxInflightPerPartition produce requests are in flight per
//     broker connection (kgo's bound for idempotent producers), each
//     carrying at most one batch per partition: walking the unsent writes
//     of the broker's partitions in order, a request closes at a
//     partition it already carries. So a partition new to the transaction
//     can share a request with the next batch of one already in it, with
//     that partition's later batch in the request after (the shape of
//     franz-go's TestTxnEtl failure, issue 22).
//   - With explicit adds, a request's partitions not yet in the
//     transaction are added (AddPartitionsToTxn, v3) before it is sent,
//     and the broker's next requests wait for that answer (kgo's sink
//     adds them in its drain), while the earlier requests stay in flight.
//   - Only the answer for a partition's first unacknowledged batch counts
//     (kgo's "owner's first batch"): a retriable error rewinds the
//     partition to it, and the later batches in flight are sent again
//     after it, under their sequences. OUT_OF_ORDER_SEQUENCE_NUMBER for
//     that first batch, whose every predecessor was acknowledged, is a
//     broker that did not keep the producer's order: TxnOutOfOrder, then
//     the transaction aborts (kgo fails its producer id).
//   - A non-retriable error makes the transaction abortable: once nothing
//     is in flight it ends with an abort.

// txnPipeline is a pipelined transaction's produce phase.
type txnPipeline struct {
	batches []*txnBatch // one per write, in write order
	// added: the partitions the coordinator added to the transaction
	// (explicit adds).
	added   map[TopicPartition]bool
	brokers map[int32]*txnPipeBroker
	// failed: an abortable error; nothing more is sent, and the
	// transaction aborts once nothing is in flight.
	failed bool
	// waiting: a pump is scheduled after a backoff; finding: the
	// coordinator is being found for an add.
	waiting, finding bool
}

// txnBatch is one write of a pipelined transaction.
type txnBatch struct {
	write    int
	tp       TopicPartition
	raw      []byte // built at its first send (its sequence), resent as it is
	acked    bool
	inflight bool
	// sends counts its sends: an answer to an older send is stale; to
	// is the broker of the last.
	sends int
	to    int32
}

// txnPipeBroker is a pipelined transaction's requests to one broker.
type txnPipeBroker struct {
	inflight int
	adding   bool // an AddPartitionsToTxn for its next request is out
}

func newTxnPipeline(writes []TxnWrite) *txnPipeline {
	pl := &txnPipeline{added: map[TopicPartition]bool{}, brokers: map[int32]*txnPipeBroker{}}
	for i, w := range writes {
		pl.batches = append(pl.batches, &txnBatch{write: i, tp: TopicPartition{Topic: w.Topic, Partition: w.Partition}})
	}
	return pl
}

func (pl *txnPipeline) broker(id int32) *txnPipeBroker {
	br := pl.brokers[id]
	if br == nil {
		br = &txnPipeBroker{}
		pl.brokers[id] = br
	}
	return br
}

// inflight reports whether a produce request or an add is out.
func (pl *txnPipeline) inflight() bool {
	for _, b := range pl.batches {
		if b.inflight {
			return true
		}
	}
	for _, br := range pl.brokers { //determinism:unordered any one decides
		if br.adding {
			return true
		}
	}
	return false
}

// head reports whether b is its partition's first unacknowledged batch.
func (pl *txnPipeline) head(b *txnBatch) bool {
	for _, o := range pl.batches[:b.write] {
		if o.tp == b.tp && !o.acked {
			return false
		}
	}
	return true
}

// rewind makes tp's unacknowledged batches unsent: they go again, in
// order, from the first.
func (pl *txnPipeline) rewind(tp TopicPartition) {
	for _, b := range pl.batches {
		if b.tp == tp && !b.acked {
			b.inflight = false
		}
	}
}

// pump sends what can be sent, and ends the produce phase once every
// batch is acknowledged (or the transaction failed) and nothing is out.
func (p *TxnProducer) pump() {
	cur := p.cur
	if p.state != txnProducing || cur == nil || cur.pl == nil {
		return
	}
	pl := cur.pl
	if pl.waiting {
		return // a retry waits out its backoff; that pump comes
	}
	done := true
	for _, b := range pl.batches {
		done = done && b.acked
	}
	if done || pl.failed {
		if pl.inflight() {
			return // the answers pump again
		}
		if pl.failed {
			cur.abort = true
			p.startEnd()
			return
		}
		p.afterWrites()
		return
	}
	var leaders []int32 // the leaders of unsent batches, in write order
	unknown := false
	for _, b := range pl.batches {
		if b.acked || b.inflight {
			continue
		}
		leader, _, ok := p.c.Leader(b.tp.Topic, b.tp.Partition)
		if !ok {
			unknown = true
			continue
		}
		if !containsInt32(leaders, leader) {
			leaders = append(leaders, leader)
		}
	}
	for _, leader := range leaders {
		br := pl.broker(leader)
		for br.inflight < MaxInflightPerPartition && !br.adding {
			req := p.nextRequest(leader)
			if len(req) == 0 {
				break
			}
			if need := p.notAdded(req); len(need) > 0 {
				p.addThenPump(leader, need)
				break
			}
			p.sendBatches(leader, req)
		}
	}
	if unknown {
		p.c.RefreshMetadata()
		p.pumpLater()
	}
}

// pumpLater pumps again after a backoff (once, however often asked).
func (p *TxnProducer) pumpLater() {
	pl := p.cur.pl
	if pl.waiting {
		return
	}
	pl.waiting = true
	cur := p.cur
	p.again(func() {
		if p.cur == cur {
			pl.waiting = false
			p.pump()
		}
	})
}

// nextRequest is the next request to leader: its partitions' unsent
// batches in write order, one per partition, up to the first partition
// that repeats. A batch goes only behind earlier batches of its
// partition that are acknowledged or in flight to the same broker (after
// a leader change it waits for the answers of those sent to the old
// one).
func (p *TxnProducer) nextRequest(leader int32) []*txnBatch {
	pl := p.cur.pl
	var req []*txnBatch
	for _, b := range pl.batches {
		if b.acked {
			continue
		}
		l, _, ok := p.c.Leader(b.tp.Topic, b.tp.Partition)
		if !ok || l != leader || b.inflight {
			continue
		}
		behind := false
		for _, o := range pl.batches[:b.write] {
			behind = behind || o.tp == b.tp && o.inflight && o.to != leader
		}
		if behind {
			continue
		}
		for _, o := range req {
			if o.tp == b.tp {
				return req
			}
		}
		req = append(req, b)
	}
	return req
}

// notAdded is the partitions of req not yet in the transaction, with
// explicit adds (none with implicit adds: the produce adds them).
func (p *TxnProducer) notAdded(req []*txnBatch) []TopicPartition {
	if p.cfg.ImplicitAdds {
		return nil
	}
	var need []TopicPartition
	for _, b := range req {
		if !p.cur.pl.added[b.tp] {
			need = append(need, b.tp)
		}
	}
	return need
}

// addThenPump adds parts to the transaction (AddPartitionsToTxn v3),
// holding leader's next requests until the answer.
func (p *TxnProducer) addThenPump(leader int32, parts []TopicPartition) {
	cur := p.cur
	pl, br := cur.pl, cur.pl.broker(leader)
	if p.coordinator < 0 {
		if !pl.finding {
			pl.finding = true
			p.findThen(txnProducing)
		}
		return
	}
	br.adding = true
	p.c.Do(p.coordinator, p.addPartitionsRequest(parts), 0, func(r kmsg.Response, err error) {
		if p.state != txnProducing || p.cur != cur {
			return
		}
		br.adding = false
		resp, ok := r.(*kmsg.AddPartitionsToTxnResponse)
		if err != nil || !ok {
			p.coordinator = -1
			p.pumpLater()
			return
		}
		switch code := addPartitionsCode(resp); code {
		case 0:
			p.failures = 0
			for _, tp := range parts {
				pl.added[tp] = true
			}
			p.pump()
		case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
			p.coordinator = -1
			p.pumpLater()
		case kerr.CoordinatorLoadInProgress.Code, kerr.ConcurrentTransactions.Code, kerr.RequestTimedOut.Code:
			p.pumpLater()
		case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code, kerr.TransactionalIDAuthorizationFailed.Code:
			p.fence(fmt.Errorf("coordinator: %s", codeName(code)))
		default:
			pl.failed = true
			p.pump()
		}
	})
}

// sendBatches sends one produce request of batches to leader.
func (p *TxnProducer) sendBatches(leader int32, batches []*txnBatch) {
	cur := p.cur
	pl, br := cur.pl, cur.pl.broker(leader)
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = kmsg.StringPtr(p.cfg.TransactionalID)
	req.Acks, req.TimeoutMillis = -1, int32(DefaultProduceTimeout/time.Millisecond)
	sends := make([]int, len(batches))
	at := make([][2]int, len(batches)) // each batch's topic and partition index in the request
	for i, b := range batches {
		if b.raw == nil {
			b.raw = p.buildBatch(b.tp, cur.writes[b.write].Values)
		}
		b.inflight, b.to = true, leader
		b.sends++
		sends[i] = b.sends
		ti := -1
		for j := range req.Topics {
			if req.Topics[j].Topic == b.tp.Topic {
				ti = j
			}
		}
		if ti < 0 {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = b.tp.Topic
			if t, ok := p.c.Topic(b.tp.Topic); ok {
				rt.TopicID = t.ID
			}
			req.Topics = append(req.Topics, rt)
			ti = len(req.Topics) - 1
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = b.tp.Partition, b.raw
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, rp)
		at[i] = [2]int{ti, len(req.Topics[ti].Partitions) - 1}
	}
	br.inflight++
	p.c.Do(leader, req, 0, func(r kmsg.Response, err error) {
		if p.state != txnProducing || p.cur != cur {
			return
		}
		br.inflight--
		resp, ok := r.(*kmsg.ProduceResponse)
		retry := false
		for i, b := range batches {
			if !b.inflight || b.sends != sends[i] {
				continue // rewound since: it goes again
			}
			b.inflight = false
			if err != nil || !ok {
				pl.rewind(b.tp)
				retry = true
				continue
			}
			code, offset, found := produceAnswer(resp, at[i], b.tp.Partition)
			if !found {
				pl.rewind(b.tp)
				retry = true
				continue
			}
			if !pl.head(b) {
				continue // an earlier batch was rewound: this one goes again after it
			}
			if p.batchAnswered(b, code, offset) {
				retry = true
			}
			if p.state != txnProducing {
				return // fenced
			}
		}
		if retry {
			p.c.RefreshMetadata()
			p.pumpLater()
			return
		}
		p.pump()
	})
}

// batchAnswered applies the answer for a partition's first
// unacknowledged batch; it reports whether the partition must be sent
// again after a backoff.
func (p *TxnProducer) batchAnswered(b *txnBatch, code int16, offset int64) (retry bool) {
	pl := p.cur.pl
	if code != 0 {
		p.c.log.Debug("transactional produce refused", "topic", b.tp.Topic, "partition", b.tp.Partition, "code", codeName(code))
	}
	switch {
	case code == 0 || code == kerr.DuplicateSequenceNumber.Code:
		p.failures = 0
		b.acked, b.raw = true, nil
		p.event(TxnEvent{Kind: TxnProduced, Write: b.write, Offset: offset})
	case code == kerr.ProducerFenced.Code || code == kerr.InvalidProducerEpoch.Code:
		p.fence(fmt.Errorf("produce: %s", codeName(code)))
	case refreshesMetadata(code) || code == kerr.NotEnoughReplicasAfterAppend.Code || code == kerr.RequestTimedOut.Code ||
		code == kerr.ConcurrentTransactions.Code:
		pl.rewind(b.tp)
		return true
	case code == kerr.OutOfOrderSequenceNumber.Code:
		p.event(TxnEvent{Kind: TxnOutOfOrder, Write: b.write,
			Err: fmt.Errorf("%s-%d: OUT_OF_ORDER_SEQUENCE_NUMBER for write %d, its partition's first unacknowledged batch (every earlier batch of the partition was acknowledged)", b.tp.Topic, b.tp.Partition, b.write)})
		pl.failed = true
	default:
		pl.failed = true
	}
	return false
}

// produceAnswer is the answer at index at (topic, partition) of a
// produce response, which answers in request order (from v13 topics
// are named by id only).
func produceAnswer(resp *kmsg.ProduceResponse, at [2]int, partition int32) (code int16, offset int64, found bool) {
	if at[0] >= len(resp.Topics) || at[1] >= len(resp.Topics[at[0]].Partitions) {
		return 0, 0, false
	}
	rp := resp.Topics[at[0]].Partitions[at[1]]
	return rp.ErrorCode, rp.BaseOffset, rp.Partition == partition
}

// buildBatch builds a transactional batch of values for tp at the
// partition's next sequence.
func (p *TxnProducer) buildBatch(tp TopicPartition, values [][]byte) []byte {
	seq := p.seq[tp]
	raw := encodeBatch(p.e, values, record.WithProducer(p.pid, p.epoch, seq), record.WithTransactional())
	p.seq[tp] = record.IncrementSequence(seq, int32(len(values)))
	return raw
}

func containsInt32(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
