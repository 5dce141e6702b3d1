package kclient

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
)

// A TxnProducer is a transactional producer (transactional.id), one
// transaction at a time, as the Java client's TransactionManager runs
// one:
//
//  1. FindCoordinator (key type 1) for the transactional id; a lost
//     answer, NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE finds it again
//     after a backoff.
//  2. InitProducerId with the transactional id: the coordinator fences
//     the id's previous incarnations and completes or aborts their
//     transaction. CONCURRENT_TRANSACTIONS and
//     COORDINATOR_LOAD_IN_PROGRESS ask again after a backoff.
//  3. Begin: AddPartitionsToTxn (v3) of the transaction's partitions, then
//     one transactional batch per write, idempotent (its sequence kept
//     across resends, so a resend after a lost answer is a duplicate the
//     partition answers without appending), then EndTxn v5 commit or
//     abort. KIP-890 part 2: EndTxn answers the epoch the next
//     transaction runs under; a retried EndTxn keeps the epoch it was
//     first sent with.
//  4. PRODUCER_FENCED, INVALID_PRODUCER_EPOCH from the coordinator, or
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED end the incarnation (Fenced):
//     a newer one owns the id. Any other non-retriable error before the
//     EndTxn makes the transaction abortable: it is aborted (EndTxn
//     abort).
//
// Everything the checkers need is reported (TxnEvent).
type TxnProducer struct {
	c   *Client
	e   env.Env
	cfg TxnProducerConfig

	coordinator int32 // -1: unknown
	pid         int64
	epoch       int16
	state       txnState
	failures    int
	// busy: a request of the producer is in flight.
	busy bool

	cur *txnCur
	// seq is the next sequence per partition under pid and epoch.
	seq map[TopicPartition]int32
}

// TxnMaxVersions is the Config.MaxVersions a TxnProducer's client needs.
func TxnMaxVersions() map[int16]int16 {
	return map[int16]int16{int16(kmsg.AddPartitionsToTxn): 3}
}

type txnState uint8

const (
	txnFinding txnState = iota
	txnIniting
	txnReady
	txnAdding
	txnProducing
	txnOffsetting // AddOffsetsToTxn, TxnOffsetCommit (BeginWithOffsets)
	txnEnding
	txnFenced
	txnClosed
)

// TxnProducerConfig configures a TxnProducer.
type TxnProducerConfig struct {
	TransactionalID string
	// Timeout is transaction.timeout.ms: the coordinator aborts a
	// transaction open longer.
	Timeout time.Duration
	// OnEvent learns every step. It must not be nil.
	OnEvent func(TxnEvent)
	// ImplicitAdds is a client of KIP-890 part 2 (transaction.version
	// 2): it sends no AddPartitionsToTxn or AddOffsetsToTxn, and leaves
	// the adds to its Produce v12+ and TxnOffsetCommit v5 requests, which
	// have the partition leader and the group coordinator add the
	// partition (the brokers must finalize transaction.version 2).
	ImplicitAdds bool
	// Pipelined produces a transaction's writes as franz-go's producer
	// does (txnpipeline.go): several requests in flight per broker, a
	// request carrying batches of several partitions, partitions added
	// as they first appear; a partition's writes are its batches in
	// order. Without it, one write at a time, each in its own request,
	// after every partition is added.
	Pipelined bool
}

// TxnWrite is one batch of a transaction.
type TxnWrite struct {
	Topic     string
	Partition int32
	Values    [][]byte
}

// TxnEventKind says what a TxnEvent reports.
type TxnEventKind uint8

const (
	// TxnInitialized: the producer holds ProducerID and Epoch.
	TxnInitialized TxnEventKind = iota + 1
	// TxnProduced: write Write of transaction Txn was acknowledged at
	// Offset.
	TxnProduced
	// TxnEndSent: the EndTxn (Commit says which) is sent to Coordinator
	// (at every send).
	TxnEndSent
	// TxnEnded: the EndTxn was answered without error: the transaction is
	// committed (Commit) or aborted.
	TxnEnded
	// TxnOffsetsCommitted: the TxnOffsetCommit of the transaction's
	// offsets (BeginWithOffsets) was answered without error by the
	// group's Coordinator: they commit with the transaction.
	TxnOffsetsCommitted
	// TxnFenced: the incarnation is fenced; Txn (if any) has the outcome
	// the coordinator gave it, unknown here: aborted unless its commit
	// was sent (EndSent).
	TxnFenced
	// TxnOutOfOrder (Pipelined): write Write was refused
	// OUT_OF_ORDER_SEQUENCE_NUMBER though every earlier batch of its
	// partition was acknowledged, which a broker keeping the producer's
	// order never answers (Err says where); the transaction aborts.
	TxnOutOfOrder
)

func (k TxnEventKind) String() string {
	return [...]string{"?", "initialized", "produced", "end-sent", "ended", "offsets-committed", "fenced", "out-of-order"}[k]
}

// TxnEvent is one step of a TxnProducer.
type TxnEvent struct {
	Kind        TxnEventKind
	Txn         int // the transaction's number, from 1 (0: none)
	ProducerID  int64
	Epoch       int16
	Write       int
	Offset      int64
	Commit      bool
	EndSent     bool // TxnFenced: an EndTxn commit had been sent
	Coordinator int32
	Err         error
}

type txnCur struct {
	n       int
	writes  []TxnWrite
	commit  bool // what the caller asked
	abort   bool // an abortable error: ends with abort
	next    int  // next write to produce
	raw     []byte
	added   bool
	endSent bool // an EndTxn commit was sent
	ending  bool
	endEp   int16 // the epoch of the first EndTxn send
	// pl is the produce phase of a Pipelined transaction.
	pl *txnPipeline
	// offsets (BeginWithOffsets): committed after the writes.
	offsets      *TxnOffsets
	offsetsAdded bool  // AddOffsetsToTxn answered
	groupCoord   int32 // the group's coordinator, -1: unknown
}

// NewTxnProducer starts a transactional producer: it finds its
// coordinator and initializes at once. c must cap AddPartitionsToTxn at
// v3 (Config.MaxVersions; TxnMaxVersions): v4+ is the brokers' batched
// form.
func NewTxnProducer(c *Client, cfg TxnProducerConfig) *TxnProducer {
	cfg.Timeout = orDefault(cfg.Timeout, 10*time.Second)
	p := &TxnProducer{c: c, e: c.Env(), cfg: cfg, coordinator: -1, pid: -1, epoch: -1, seq: map[TopicPartition]int32{}}
	p.find()
	return p
}

// Ready reports whether the producer can Begin a transaction.
func (p *TxnProducer) Ready() bool { return p.state == txnReady && p.cur == nil }

// Fenced reports whether the incarnation ended (fenced).
func (p *TxnProducer) Fenced() bool { return p.state == txnFenced }

// Close stops the producer; a transaction in progress is left to the
// coordinator (its timeout or the next incarnation aborts it).
func (p *TxnProducer) Close() { p.state = txnClosed }

// Begin runs transaction n: writes, then commit or abort. The producer
// must be Ready.
func (p *TxnProducer) Begin(n int, writes []TxnWrite, commit bool) {
	if !p.Ready() {
		panic("kclient: TxnProducer.Begin while not ready")
	}
	p.cur = &txnCur{n: n, writes: writes, commit: commit}
	p.start()
}

// start runs the current transaction from its first step: its adds, or
// with implicit adds its first write.
func (p *TxnProducer) start() {
	if p.cfg.Pipelined {
		p.cur.pl = newTxnPipeline(p.cur.writes)
		p.state = txnProducing
		p.pump()
		return
	}
	if p.cfg.ImplicitAdds {
		p.cur.added = true
		p.state = txnProducing
		p.produce()
		return
	}
	p.state = txnAdding
	p.addPartitions()
}

func (p *TxnProducer) event(ev TxnEvent) {
	if ev.Txn == 0 && p.cur != nil {
		ev.Txn = p.cur.n
	}
	ev.ProducerID, ev.Epoch = p.pid, p.epoch
	p.c.log.Debug("transaction event", "kind", ev.Kind, "txn", ev.Txn, "pid", ev.ProducerID, "epoch", ev.Epoch, "write", ev.Write, "offset", ev.Offset, "commit", ev.Commit, "err", ev.Err)
	p.cfg.OnEvent(ev)
}

// again runs f after the backoff of another failure.
func (p *TxnProducer) again(f func()) {
	p.failures++
	p.e.AfterFunc(p.c.backoff(p.failures), func() {
		if p.state != txnClosed && p.state != txnFenced {
			f()
		}
	})
}

// refind forgets the coordinator and runs then once it is found again.
func (p *TxnProducer) refind(then txnState) {
	p.coordinator = -1
	p.again(func() { p.findThen(then) })
}

func (p *TxnProducer) find() { p.findThen(txnIniting) }

// findThen finds the coordinator, then resumes in state then.
func (p *TxnProducer) findThen(then txnState) {
	prev := p.state
	if prev != txnAdding && prev != txnProducing && prev != txnOffsetting && prev != txnEnding {
		p.state = txnFinding
	}
	p.c.DoAny(findCoordinatorRequest(1, p.cfg.TransactionalID), func(r kmsg.Response, err error) {
		if p.state == txnClosed {
			return
		}
		c, ok := coordinatorIn(r, err)
		if !ok || c.ErrorCode != 0 || c.NodeID < 0 {
			p.again(func() { p.findThen(then) })
			return
		}
		p.c.learnBroker(c.NodeID, c.Host, c.Port)
		p.coordinator = c.NodeID
		p.failures = 0
		switch then {
		case txnIniting:
			p.init()
		case txnAdding:
			p.addPartitions()
		case txnProducing:
			if p.cur != nil && p.cur.pl != nil {
				p.cur.pl.finding = false
				p.pump()
			}
		case txnOffsetting:
			p.sendOffsets()
		case txnEnding:
			p.endTxn()
		}
	})
}

// coordinatorError handles an error code from the coordinator; it
// reports whether the caller retries (resume in state then).
func (p *TxnProducer) coordinatorError(code int16, then txnState, retry func()) {
	p.c.log.Debug("transaction coordinator error", "state", p.state, "code", codeName(code))
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
		p.refind(then)
	case kerr.CoordinatorLoadInProgress.Code, kerr.ConcurrentTransactions.Code, kerr.RequestTimedOut.Code, -1:
		p.again(retry)
	case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code, kerr.TransactionalIDAuthorizationFailed.Code:
		p.fence(fmt.Errorf("coordinator: %s", codeName(code)))
	default:
		// Not retriable: abort (or, while ending, report as fenced: the
		// outcome is the coordinator's).
		if p.state == txnEnding {
			p.fence(fmt.Errorf("EndTxn: %s", codeName(code)))
			return
		}
		p.cur.abort = true
		p.startEnd()
	}
}

func (p *TxnProducer) fence(err error) {
	p.state = txnFenced
	ev := TxnEvent{Kind: TxnFenced, Err: err}
	if p.cur != nil {
		ev.EndSent = p.cur.endSent
	}
	p.event(ev)
	p.cur = nil
}

func (p *TxnProducer) init() {
	p.state = txnIniting
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr(p.cfg.TransactionalID)
	req.TransactionTimeoutMillis = int32(p.cfg.Timeout / time.Millisecond)
	req.ProducerID, req.ProducerEpoch = -1, -1
	code := func(resp *kmsg.InitProducerIDResponse) int16 { return resp.ErrorCode }
	askCoordinator(p, txnIniting, req, code, p.init, func(resp *kmsg.InitProducerIDResponse) {
		p.setEpoch(resp.ProducerID, resp.ProducerEpoch)
		p.state = txnReady
		p.event(TxnEvent{Kind: TxnInitialized, Coordinator: p.coordinator})
	})
}

// addPartitionsRequest is the AddPartitionsToTxn (v3) adding parts to
// the transaction, by topic in the order the topics first appear.
func (p *TxnProducer) addPartitionsRequest(parts []TopicPartition) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.cfg.TransactionalID, p.pid, p.epoch
	for _, tp := range parts {
		i := -1
		for j := range req.Topics {
			if req.Topics[j].Topic == tp.Topic {
				i = j
			}
		}
		if i < 0 {
			t := kmsg.NewAddPartitionsToTxnRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, tp.Partition)
	}
	return req
}

// addPartitionsCode is an AddPartitionsToTxn answer's error: the
// top-level one, else the first partition's.
func addPartitionsCode(resp *kmsg.AddPartitionsToTxnResponse) int16 {
	code := resp.ErrorCode
	for _, t := range resp.Topics {
		for _, pr := range t.Partitions {
			if pr.ErrorCode != 0 && code == 0 {
				code = pr.ErrorCode
			}
		}
	}
	return code
}

// askCoordinator sends req to the transaction coordinator in state s and
// hands its answer to done, unless the producer has left s or the
// transaction meanwhile, or it failed: a lost request or answer finds the
// coordinator again, and an error code (what code reads of the answer)
// goes to coordinatorError, which may retry.
func askCoordinator[R kmsg.Response](p *TxnProducer, s txnState, req kmsg.Request, code func(R) int16, retry func(), done func(R)) {
	cur := p.cur
	p.c.Do(p.coordinator, req, 0, func(r kmsg.Response, err error) {
		if p.state != s || p.cur != cur {
			return
		}
		resp, ok := r.(R)
		if err != nil || !ok {
			p.refind(s)
			return
		}
		if c := code(resp); c != 0 {
			p.coordinatorError(c, s, retry)
			return
		}
		p.failures = 0
		done(resp)
	})
}

// setEpoch takes a new producer id or epoch: sequences start again.
func (p *TxnProducer) setEpoch(pid int64, epoch int16) {
	if pid != p.pid || epoch != p.epoch {
		clear(p.seq)
	}
	p.pid, p.epoch = pid, epoch
}

func (p *TxnProducer) addPartitions() {
	if p.coordinator < 0 {
		p.findThen(txnAdding)
		return
	}
	cur := p.cur
	parts := make([]TopicPartition, len(cur.writes))
	for i, w := range cur.writes {
		parts[i] = TopicPartition{w.Topic, w.Partition}
	}
	code := func(resp *kmsg.AddPartitionsToTxnResponse) int16 {
		if len(resp.Topics) == 0 && resp.ErrorCode == 0 {
			return kerr.UnsupportedVersion.Code // v4+: the client must cap AddPartitionsToTxn at v3
		}
		return addPartitionsCode(resp)
	}
	askCoordinator(p, txnAdding, p.addPartitionsRequest(parts), code, p.addPartitions, func(*kmsg.AddPartitionsToTxnResponse) {
		cur.added = true
		p.state = txnProducing
		p.produce()
	})
}

// afterWrites goes on once the transaction's writes are done: its
// offsets, if it commits some, then the EndTxn.
func (p *TxnProducer) afterWrites() {
	if p.cur.offsets != nil {
		p.sendOffsets()
		return
	}
	p.startEnd()
}

// produce sends the current write (built once, resent as it is).
func (p *TxnProducer) produce() {
	cur := p.cur
	if cur.next >= len(cur.writes) {
		p.afterWrites()
		return
	}
	w := cur.writes[cur.next]
	tp := TopicPartition{Topic: w.Topic, Partition: w.Partition}
	if cur.raw == nil {
		cur.raw = p.buildBatch(tp, w.Values)
	}
	leader, _, ok := p.c.Leader(w.Topic, w.Partition)
	if !ok {
		p.c.RefreshMetadata()
		p.again(p.produce)
		return
	}
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = kmsg.StringPtr(p.cfg.TransactionalID)
	req.Acks, req.TimeoutMillis = -1, int32(DefaultProduceTimeout/time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = w.Topic
	if t, ok := p.c.Topic(w.Topic); ok {
		rt.TopicID = t.ID
	}
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = w.Partition, cur.raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	write := cur.next
	p.c.Do(leader, req, 0, func(r kmsg.Response, err error) {
		if p.state != txnProducing || p.cur != cur || cur.next != write {
			return
		}
		resp, ok := r.(*kmsg.ProduceResponse)
		if err != nil || !ok || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			p.c.RefreshMetadata()
			p.again(p.produce)
			return
		}
		pr := resp.Topics[0].Partitions[0]
		if pr.ErrorCode != 0 {
			p.c.log.Debug("transactional produce refused", "topic", w.Topic, "partition", w.Partition, "code", codeName(pr.ErrorCode))
		}
		switch code := pr.ErrorCode; {
		case code == 0 || code == kerr.DuplicateSequenceNumber.Code:
			p.failures = 0
			p.event(TxnEvent{Kind: TxnProduced, Write: write, Offset: pr.BaseOffset})
			cur.next++
			cur.raw = nil
			p.produce()
		case code == kerr.ProducerFenced.Code || code == kerr.InvalidProducerEpoch.Code:
			p.fence(fmt.Errorf("produce: %s", codeName(code)))
		case refreshesMetadata(code) || code == kerr.NotEnoughReplicasAfterAppend.Code || code == kerr.RequestTimedOut.Code || code == kerr.ConcurrentTransactions.Code ||
			code == kerr.NotEnoughReplicas.Code:
			// NOT_ENOUGH_REPLICAS: the ISR is short, or the leader could
			// not have the coordinator verify (or add) the partition
			// yet; nothing was appended, as the Java client retries.
			p.c.RefreshMetadata()
			p.again(p.produce)
		default:
			// OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_TXN_STATE, ...: abortable.
			cur.abort = true
			p.startEnd()
		}
	})
}

func (p *TxnProducer) startEnd() {
	p.state = txnEnding
	p.endTxn()
}

func (p *TxnProducer) endTxn() {
	cur := p.cur
	if p.coordinator < 0 {
		p.findThen(txnEnding)
		return
	}
	commit := cur.commit && !cur.abort
	if !cur.ending {
		cur.ending, cur.endEp = true, p.epoch
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 5
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.cfg.TransactionalID, p.pid, cur.endEp, commit
	if commit {
		cur.endSent = true
	}
	p.event(TxnEvent{Kind: TxnEndSent, Commit: commit, Coordinator: p.coordinator})
	code := func(resp *kmsg.EndTxnResponse) int16 { return resp.ErrorCode }
	askCoordinator(p, txnEnding, req, code, p.endTxn, func(resp *kmsg.EndTxnResponse) {
		p.event(TxnEvent{Kind: TxnEnded, Commit: commit})
		if resp.ProducerID >= 0 {
			p.setEpoch(resp.ProducerID, resp.ProducerEpoch)
		}
		p.cur = nil
		p.state = txnReady
	})
}
