package txn

import (
	"log/slog"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/coord"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/plant"
)

// maxEpoch: an epoch that reached it is not bumped again; the id gets a
// new producer id instead (Kafka: Short.MaxValue - 1).
const maxEpoch = math.MaxInt16 - 1

// Shard coordinates the transactional ids of one __transaction_state
// partition led by this broker. Its methods run on the env's loop.
type Shard struct {
	e   env.Env
	cfg Config
	log *slog.Logger
	// txns by id: looked up only; listings sort the ids.
	txns   map[string]*Txn
	status coord.Status
	check  env.Timer
}

// NewShard returns a shard that is loading: Replay each record of the
// partition up to its high watermark, then call Loaded.
func NewShard(e env.Env, log *slog.Logger, cfg Config) *Shard {
	assert.That(cfg.Write != nil && cfg.AllocateProducerID != nil && cfg.Markers != nil, "txn: a shard needs a Writer, an allocator and a marker sender")
	return &Shard{e: e, cfg: cfg.withDefaults(), log: log, txns: map[string]*Txn{}}
}

// Replay applies one record of the partition while loading, in log order.
func (s *Shard) Replay(key, value []byte) error {
	assert.That(!s.status.Loaded(), "txn: replay after the shard loaded")
	id, st, err := decodeRecord(key, value)
	if err != nil {
		return err
	}
	if st == nil {
		delete(s.txns, id)
		return nil
	}
	t := s.txns[id]
	if t == nil {
		t = &Txn{id: id, persisted: true}
		t.epoch = -1 // nothing known before this record (compaction)
		s.txns[id] = t
	}
	if t.epoch >= 0 && st.producerID == t.producerID && st.epoch > t.epoch && !st.tv2 {
		// A bump replayed: a retry of it may carry the epoch before
		// (Kafka keeps this in memory only; a compacted log loses it).
		st.lastEpoch = t.epoch
	}
	t.txnState = *st
	return nil
}

// Loaded ends the replay: transactions left in a Prepare state get their
// markers sent again, and the shard serves.
func (s *Shard) Loaded() {
	s.status.SetLoaded()
	for _, id := range s.ids() {
		if t := s.txns[id]; t.state.preparing() {
			s.log.Info("resuming transaction markers", "transactional_id", id, "state", t.state, "partitions", len(t.partitions))
			s.sendMarkers(t)
		}
	}
	s.check = s.e.AfterFunc(s.cfg.AbortCheckInterval, s.periodic)
}

// Unload stops the shard: writes and markers in flight are dropped (their
// requests get NOT_COORDINATOR) and every later call answers
// NOT_COORDINATOR.
func (s *Shard) Unload() {
	if !s.status.SetUnloaded() {
		return
	}
	if s.check != nil {
		s.check.Stop()
	}
	for _, id := range s.ids() {
		if m := s.txns[id].markers; m != nil && m.timer != nil {
			m.timer.Stop()
		}
	}
}

// ids lists the ids, sorted.
func (s *Shard) ids() []string {
	out := make([]string, 0, len(s.txns))
	for id := range s.txns {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// lookup returns the persisted txn of id, or the code for why not.
func (s *Shard) lookup(id string, producerID int64) (*Txn, *kerr.Error) {
	if err := s.status.Err(); err != nil {
		return nil, err
	}
	t := s.txns[id]
	switch {
	case t == nil || !t.persisted:
		return nil, kerr.InvalidProducerIDMapping
	case t.producerID != producerID && t.nextProducerID == producerID && producerID >= 0:
		return nil, kerr.ConcurrentTransactions // the id moves to it once the markers are written
	case t.producerID != producerID:
		return nil, kerr.InvalidProducerIDMapping
	case t.pending:
		return nil, kerr.ConcurrentTransactions
	}
	return t, nil
}

// epochError is the code of a request whose epoch is not the id's:
// PRODUCER_FENCED either way, as Kafka (a client cannot legitimately be
// ahead; the broker answers clients older than KIP-588 with
// INVALID_PRODUCER_EPOCH instead).
func epochError(t *Txn, epoch int16) *kerr.Error {
	if epoch != t.epoch {
		return kerr.ProducerFenced
	}
	return nil
}

// transition writes next as t's state and applies it once committed; done
// gets nil or the coordinator error to answer.
func (s *Shard) transition(t *Txn, next txnState, done func(*kerr.Error)) {
	assert.That(!t.pending, "txn: two writes of one transactional id")
	t.pending = true
	s.write([]Record{next.record(t.id)}, func(err error) {
		t.pending = false
		if err != nil {
			s.log.Warn("writing transaction state failed", "transactional_id", t.id, "state", next.state, "err", err)
			done(coord.WriteErrorCode(err))
			return
		}
		assert.That(next.producerID != t.producerID || next.epoch >= t.epoch || !t.persisted, "txn: producer epoch went backwards")
		t.txnState, t.persisted = next, true
		done(nil)
	})
}

// write appends recs; done gets coord.ErrNotCoordinator once the shard
// was unloaded, even if the write succeeded.
func (s *Shard) write(recs []Record, done func(error)) {
	s.cfg.Write(recs, s.status.Guard(done))
}

func (s *Shard) nowMs() int64 { return s.e.Now().UnixMilli() }

// InitProducerID answers an InitProducerId with a transactional id:
// a new id gets a producer id; a known one gets its epoch bumped (a new
// producer id once the epoch is exhausted), which fences the previous
// incarnation. An ongoing transaction of the previous incarnation is
// aborted first (the answer is CONCURRENT_TRANSACTIONS until its markers
// are written); expectedID/expectedEpoch (KIP-360, -1 for none) let a
// producer bump its own epoch, or retry a bump that was answered.
func (s *Shard) InitProducerID(id string, timeoutMs int32, expectedID int64, expectedEpoch int16, done func(producerID int64, epoch int16, err *kerr.Error)) {
	fail := func(err *kerr.Error) { done(-1, -1, err) }
	if err := s.status.Err(); err != nil {
		fail(err)
		return
	}
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > s.cfg.MaxTimeout {
		fail(kerr.InvalidTransactionTimeout)
		return
	}
	t := s.txns[id]
	if t == nil {
		s.initNew(id, timeoutMs, done)
		return
	}
	if t.pending || t.fencing || t.state.preparing() {
		fail(kerr.ConcurrentTransactions)
		return
	}
	if expectedID >= 0 {
		switch {
		case expectedID == t.producerID && expectedEpoch == t.lastEpoch && t.state != StateOngoing && t.lastEpoch >= 0:
			done(t.producerID, t.epoch, nil) // a retry of the bump that was answered
			return
		case expectedID == t.prevProducerID && t.producerID != expectedID && expectedEpoch >= maxEpoch && t.epoch == 0 && t.state != StateOngoing:
			done(t.producerID, t.epoch, nil) // a retry across the producer id change
			return
		case expectedID != t.producerID || expectedEpoch != t.epoch:
			fail(kerr.ProducerFenced)
			return
		}
	}
	now := s.nowMs()
	if t.state == StateOngoing {
		// Abort what the previous incarnation left, fencing it.
		next := t.txnState
		next.state, next.updateMs = StatePrepareAbort, now
		if t.epoch < maxEpoch {
			next.lastEpoch, next.epoch = t.epoch, t.epoch+1
		}
		t.fencing = true
		s.transition(t, next, func(err *kerr.Error) {
			t.fencing = false
			if err != nil {
				fail(err)
				return
			}
			s.log.Info("aborting the transaction of a fenced producer", "transactional_id", id, "producer_id", t.producerID, "epoch", t.epoch)
			s.sendMarkers(t)
			fail(kerr.ConcurrentTransactions)
		})
		return
	}
	next := t.txnState
	next.state, next.partitions, next.timeoutMs, next.updateMs, next.startMs, next.tv2 = StateEmpty, nil, timeoutMs, now, -1, false
	bump := func(next txnState) {
		s.transition(t, next, func(err *kerr.Error) {
			if err != nil {
				fail(err)
				return
			}
			done(t.producerID, t.epoch, nil)
		})
	}
	if t.epoch < maxEpoch {
		next.lastEpoch, next.epoch = t.epoch, t.epoch+1
		bump(next)
		return
	}
	s.allocate(t, fail, func(pid int64) {
		next.prevProducerID, next.producerID, next.nextProducerID, next.epoch, next.lastEpoch = t.producerID, pid, -1, 0, -1
		bump(next)
	})
}

// allocate asks for a producer id for t, which is pending meanwhile (no
// other write of its id starts); got runs with the id, or fail with why
// not (NOT_COORDINATOR once the shard unloaded).
func (s *Shard) allocate(t *Txn, fail func(*kerr.Error), got func(pid int64)) {
	t.pending = true
	s.cfg.AllocateProducerID(func(pid int64, err *kerr.Error) {
		t.pending = false
		if s.status.Unloaded() {
			err = kerr.NotCoordinator
		}
		if err != nil {
			fail(err)
			return
		}
		got(pid)
	})
}

// initNew gives a new transactional id its producer id.
func (s *Shard) initNew(id string, timeoutMs int32, done func(int64, int16, *kerr.Error)) {
	t := &Txn{id: id, pending: true}
	t.epoch, t.lastEpoch, t.producerID, t.prevProducerID, t.nextProducerID = -1, -1, -1, -1, -1
	s.txns[id] = t
	forget := func(err *kerr.Error) {
		if s.txns[id] == t && !t.persisted {
			delete(s.txns, id)
		}
		done(-1, -1, err)
	}
	s.allocate(t, forget, func(pid int64) {
		next := txnState{producerID: pid, prevProducerID: -1, nextProducerID: -1, epoch: 0, lastEpoch: -1, timeoutMs: timeoutMs,
			state: StateEmpty, startMs: -1, updateMs: s.nowMs()}
		s.transition(t, next, func(err *kerr.Error) {
			if err != nil {
				forget(err)
				return
			}
			s.log.Debug("new transactional id", "transactional_id", id, "producer_id", pid)
			done(pid, 0, nil)
		})
	})
}

// AddPartitions answers AddPartitionsToTxn (and AddOffsetsToTxn, whose
// partition is the group's of __consumer_offsets) for one transactional
// id: the partitions join the transaction, which starts if none is
// ongoing. verifyOnly (KIP-890 part 1, sent by a partition leader before
// it appends a transactional batch) changes nothing and answers, per
// partition, whether it is in the ongoing transaction (verify). done gets
// one code per partition, in the order given.
func (s *Shard) AddPartitions(id string, producerID int64, epoch int16, parts []TopicPartition, verifyOnly bool, done func([]*kerr.Error)) {
	all := func(err *kerr.Error) {
		out := make([]*kerr.Error, len(parts))
		for i := range out {
			out[i] = err
		}
		done(out)
	}
	if id == "" {
		all(kerr.InvalidRequest)
		return
	}
	if verifyOnly {
		s.verify(id, producerID, epoch, parts, done)
		return
	}
	t, err := s.lookup(id, producerID)
	if err == nil {
		err = epochError(t, epoch)
	}
	if err != nil {
		all(err)
		return
	}
	if t.fencing || t.state.preparing() {
		all(kerr.ConcurrentTransactions)
		return
	}
	if t.state == StateDead || t.state == StatePrepareEpochFence {
		all(kerr.InvalidTxnState)
		return
	}
	// Unknown partitions fail the request; the others were not tried.
	var unknown []int
	for i, tp := range parts {
		if !s.cfg.PartitionExists(tp.Topic, tp.Partition) {
			unknown = append(unknown, i)
		}
	}
	if len(unknown) > 0 {
		out := make([]*kerr.Error, len(parts))
		for i := range out {
			out[i] = kerr.OperationNotAttempted
		}
		for _, i := range unknown {
			out[i] = kerr.UnknownTopicOrPartition
		}
		done(out)
		return
	}
	next := t.txnState
	if t.state != StateOngoing {
		next.partitions, next.startMs = nil, s.nowMs()
	} else {
		next.partitions = slices.Clone(t.partitions)
	}
	added := false
	for _, tp := range parts {
		if i, found := slices.BinarySearchFunc(next.partitions, tp, compareTP); !found {
			next.partitions = slices.Insert(next.partitions, i, tp)
			added = true
		}
	}
	if !added && t.state == StateOngoing {
		all(nil) // nothing new: no write (Kafka's shortcut)
		return
	}
	next.state, next.updateMs = StateOngoing, s.nowMs()
	s.transition(t, next, all)
}

// verify answers KIP-890 part 1's verifyOnly: whether each partition is in
// the transaction as committed (a write in flight is not waited for: the
// partition leader's append is checked again), TRANSACTION_ABORTABLE for
// one that is not (Kafka's answer since KIP-1050), CONCURRENT_TRANSACTIONS
// while a commit or abort completes.
func (s *Shard) verify(id string, producerID int64, epoch int16, parts []TopicPartition, done func([]*kerr.Error)) {
	out := make([]*kerr.Error, len(parts))
	var err *kerr.Error
	t := s.txns[id]
	switch {
	case s.status.Err() != nil:
		err = s.status.Err()
	case t == nil || !t.persisted || t.producerID != producerID:
		err = kerr.InvalidProducerIDMapping
	case t.epoch != epoch:
		err = kerr.ProducerFenced
	case t.state.preparing():
		err = kerr.ConcurrentTransactions
	}
	for i, tp := range parts {
		switch {
		case err != nil:
			out[i] = err
		case t.state != StateOngoing || !t.has(tp):
			out[i] = kerr.TransactionAbortable
		}
	}
	done(out)
}

func (t *Txn) has(tp TopicPartition) bool {
	_, found := slices.BinarySearchFunc(t.partitions, tp, compareTP)
	return found
}

// EndTxn answers EndTxn: an ongoing transaction is prepared (committed or
// aborted), the answer given once the Prepare state is written, and the
// markers sent after. tv2 is EndTxn v5+ (KIP-890 part 2): the epoch is
// bumped by every end and the answer carries it; a retry of an answered
// end carries the epoch before the bump and gets the same answer again,
// while an end with that older epoch meeting a later transaction is
// fenced (it must not decide a transaction it never saw: KAFKA-17754).
func (s *Shard) EndTxn(id string, producerID int64, epoch int16, commit, tv2 bool, done func(producerID int64, epoch int16, err *kerr.Error)) {
	fail := func(err *kerr.Error) { done(-1, -1, err) }
	if err := s.status.Err(); err != nil {
		fail(err)
		return
	}
	t := s.txns[id]
	// rotated: a retry of the end that exhausted the epoch and moved the
	// id to a new producer id (answered with the new id, epoch 0).
	rotated := tv2 && t != nil && t.persisted && t.tv2 && t.state.complete() &&
		producerID == t.prevProducerID && producerID != t.producerID && t.epoch == 0 && epoch >= maxEpoch
	if !rotated {
		var err *kerr.Error
		if t, err = s.lookup(id, producerID); err != nil {
			fail(err)
			return
		}
	} else if t.pending {
		fail(kerr.ConcurrentTransactions)
		return
	}
	if t.fencing {
		fail(kerr.ProducerFenced)
		return
	}
	want, got := StatePrepareAbort, StateCompleteAbort
	if commit {
		want, got = StatePrepareCommit, StateCompleteCommit
	}
	// retry: the end this request repeats was decided with this epoch.
	retry := rotated || tv2 && t.tv2 && (t.state.preparing() || t.state.complete()) && t.lastEpoch >= 0 && epoch == t.lastEpoch && t.epoch == epoch+1
	if !retry {
		if err := epochError(t, epoch); err != nil {
			fail(err)
			return
		}
	}
	// emptyAbort: KIP-890 part 2 lets a client abort with no transaction
	// open (Kafka's coordinator takes Empty, CompleteCommit and
	// CompleteAbort to PrepareAbort with no partitions for it), bumping
	// the epoch. kgo does so when a transaction's produces all failed,
	// since the partition leaders may have added partitions it never
	// heard back about, which must not join its next transaction.
	emptyAbort := tv2 && !commit && !retry && (t.state == StateEmpty || t.state.complete())
	open := t.state == StateOngoing || emptyAbort
	switch {
	case open && tv2 && t.epoch >= maxEpoch:
		// KIP-890 part 2 with the epoch exhausted: the markers go out
		// with the last epoch, and the Complete state moves the id to a
		// new producer id (Kafka's NextProducerId), which the answer
		// gives now.
		s.allocate(t, fail, func(pid int64) {
			next := t.txnState
			next.state, next.updateMs, next.tv2, next.nextProducerID = want, s.nowMs(), true, pid
			if emptyAbort {
				next.partitions, next.startMs = nil, s.nowMs()
			}
			if t.epoch < math.MaxInt16 {
				next.lastEpoch, next.epoch = t.epoch, t.epoch+1
			}
			s.prepare(t, next, fail, func() { done(pid, 0, nil) })
		})
	case open:
		next := t.txnState
		next.state, next.updateMs, next.tv2 = want, s.nowMs(), tv2
		if emptyAbort {
			next.partitions, next.startMs = nil, s.nowMs()
		}
		if tv2 && !plant.Is(plant.TxnSkipEpochBump) {
			next.lastEpoch, next.epoch = t.epoch, t.epoch+1
		}
		s.prepare(t, next, fail, func() { done(t.producerID, t.epoch, nil) })
	case t.state == want && (retry || !tv2):
		fail(kerr.ConcurrentTransactions)
	case t.state == got && (retry || !tv2):
		done(t.producerID, t.epoch, nil)
	default:
		fail(kerr.InvalidTxnState)
	}
}

// prepare writes a Prepare state, then answers and sends the markers.
func (s *Shard) prepare(t *Txn, next txnState, fail func(*kerr.Error), answer func()) {
	s.transition(t, next, func(err *kerr.Error) {
		if err != nil {
			fail(err)
			return
		}
		s.sendMarkers(t)
		answer()
	})
}

// periodic aborts the transactions past their timeout, with a bumped epoch
// that fences their producer, and forgets ids idle past
// transactional.id.expiration.ms.
func (s *Shard) periodic() {
	if s.status.Unloaded() {
		return
	}
	defer func() { s.check = s.e.AfterFunc(s.cfg.AbortCheckInterval, s.periodic) }()
	now := s.nowMs()
	for _, id := range s.ids() {
		t := s.txns[id]
		if t.pending || t.fencing || !t.persisted {
			continue
		}
		switch {
		case t.state == StateOngoing && t.startMs+int64(t.timeoutMs) <= now:
			next := t.txnState
			next.state, next.updateMs = StatePrepareAbort, now
			if t.epoch < maxEpoch {
				next.lastEpoch, next.epoch = t.epoch, t.epoch+1
			}
			s.log.Info("aborting a timed out transaction", "transactional_id", id, "producer_id", t.producerID, "epoch", t.epoch)
			s.transition(t, next, func(err *kerr.Error) {
				if err == nil {
					s.sendMarkers(t)
				}
			})
		case (t.state == StateEmpty || t.state.complete()) && t.updateMs+s.cfg.IDExpiration.Milliseconds() <= now:
			s.expire(t)
		}
	}
}

// expire tombstones an idle id.
func (s *Shard) expire(t *Txn) {
	t.pending = true
	s.write([]Record{{Key: encodeKey(t.id)}}, func(err error) {
		t.pending = false
		if err != nil {
			return
		}
		if s.txns[t.id] == t {
			delete(s.txns, t.id)
			s.log.Info("transactional id expired", "transactional_id", t.id)
		}
	})
}

// Describe returns an id's summary (DescribeTransactions), or its error:
// TRANSACTIONAL_ID_NOT_FOUND for an id this shard does not know.
func (s *Shard) Describe(id string) (Summary, *kerr.Error) {
	if err := s.status.Err(); err != nil {
		return Summary{}, err
	}
	t := s.txns[id]
	if t == nil || !t.persisted {
		return Summary{}, kerr.TransactionalIDNotFound
	}
	return t.summary(), nil
}

// Filter selects transactions for ListTransactions (Kafka's filters; zero
// values select everything).
type Filter struct {
	States      []State
	ProducerIDs []int64
	// MinDuration selects transactions running at least this long.
	MinDuration time.Duration
}

// List returns the summaries of the ids selected by f, sorted by id, or
// the shard's error (loading, unloaded).
func (s *Shard) List(f Filter) ([]Summary, *kerr.Error) {
	if err := s.status.Err(); err != nil {
		return nil, err
	}
	now := s.nowMs()
	var out []Summary
	for _, id := range s.ids() {
		t := s.txns[id]
		if !t.persisted {
			continue
		}
		sum := t.summary()
		switch {
		case len(f.States) > 0 && !slices.Contains(f.States, sum.State):
		case len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, sum.ProducerID):
		case f.MinDuration > 0 && (sum.StartTimestamp < 0 || now-sum.StartTimestamp < f.MinDuration.Milliseconds()):
		default:
			out = append(out, sum)
		}
	}
	return out, nil
}
