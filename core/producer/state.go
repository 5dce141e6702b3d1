package producer

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/record"
)

// State is the producer state of one partition: producer id -> Producer,
// for the batches below EndOffset. It is a plain data structure; its owner
// calls it on its loop and it touches no disk (Snapshots does).
type State struct {
	cfg       Config
	producers map[int64]*entry
	// end is the offset after the last batch the state reflects (Kafka's
	// mapEndOffset); snapshots are named by it.
	end int64
	// ongoing are the producers with an ongoing transaction, by its first
	// offset (Kafka's ongoingTxns); a producer is listed at most once, and
	// exactly when its entry's currentTxnFirstOffset is set.
	ongoing []txnStart
	// unreplicated are the transactions whose marker is appended but may
	// lie at or above the high watermark, by the marker's offset (Kafka's
	// unreplicatedTxns): they hold the last stable offset until the high
	// watermark passes their marker (see LastStableOffset).
	unreplicated []CompletedTxn
	// verifications are the producers whose first transactional batch
	// here is being verified with the coordinator (verify.go), at most
	// one per producer id; looked up only.
	verifications map[int64]*Verification
}

// txnStart is an ongoing transaction: its producer and first offset.
type txnStart struct {
	producerID  int64
	firstOffset int64
}

// NewState returns an empty state that reflects the log below endOffset
// (the log start offset of a new or fully truncated log, for instance).
// cfg must be valid.
func NewState(cfg Config, endOffset int64) *State {
	assert.That(cfg.Validate() == nil, "producer.NewState: %v", cfg.Validate())
	assert.That(endOffset >= 0, "producer.NewState: negative end offset %d", endOffset)
	return &State{cfg: cfg.withDefaults(), producers: make(map[int64]*entry), verifications: make(map[int64]*Verification), end: endOffset}
}

// Config returns the state's configuration, defaults applied.
func (s *State) Config() Config { return s.cfg }

// EndOffset is the offset after the last batch the state reflects: a
// snapshot written now is named by it, and recovery replays the log from
// it.
func (s *State) EndOffset() int64 { return s.end }

// Len is the number of producers.
func (s *State) Len() int { return len(s.producers) }

// Producer returns a copy of producer id's state.
func (s *State) Producer(id int64) (Producer, bool) {
	e, ok := s.producers[id]
	if !ok {
		return Producer{}, false
	}
	return e.export(id), true
}

// Producers returns a copy of every producer's state, by producer id (for
// DescribeProducers, logs and tests).
func (s *State) Producers() []Producer {
	ids := s.ids()
	out := make([]Producer, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.producers[id].export(id))
	}
	return out
}

// ids returns the producer ids, sorted.
func (s *State) ids() []int64 {
	return slices.Sorted(maps.Keys(s.producers))
}

// BatchInfo is what Check and Appended need of a producer's batch.
type BatchInfo struct {
	// ProducerID is the batch's producer id, or record.NoProducerID for a
	// producer without idempotence, whose batches skip every rule.
	ProducerID int64
	// ProducerEpoch is the batch's producer epoch.
	ProducerEpoch int16
	// FirstSeq and LastSeq are the sequence numbers of its first and last
	// record (record.Batch's BaseSequence and LastSequence).
	FirstSeq, LastSeq int32
	// Transactional is the batch's transactional flag.
	Transactional bool
	// VerificationRequired is set for a client's batch when
	// transaction.partition.verification.enable is on (KIP-890 part 1),
	// and Verification is what StartVerification returned for it once
	// the coordinator answered that the partition is in the producer's
	// transaction (nil otherwise). See Check's rules 8 and 9.
	VerificationRequired bool
	Verification         *Verification
}

// InfoOf returns the producer fields of a batch.
func InfoOf(b record.Batch) BatchInfo {
	return BatchInfo{
		ProducerID:    b.ProducerID(),
		ProducerEpoch: b.ProducerEpoch(),
		FirstSeq:      b.BaseSequence(),
		LastSeq:       b.LastSequence(),
		Transactional: b.Attributes().IsTransactional(),
	}
}

// Result is the outcome of a Check that returned no error.
type Result struct {
	// Duplicate is set when the batch was appended before: the broker
	// answers success with Original's offsets and timestamp and appends
	// nothing (nor calls Appended).
	Duplicate bool
	// Original is the earlier batch, when Duplicate.
	Original BatchMetadata
}

// Check decides whether a client's batch may be appended, before the log
// assigns it offsets (Kafka's duplicate check and ProducerAppendInfo
// validation for AppendOrigin.CLIENT). The batch must have passed
// core/record's ValidateForAppend(OriginClient). Check changes nothing; the
// rules, in order:
//
//  1. A batch without a producer id (record.NoProducerID) is not
//     idempotent: it passes.
//  2. A batch whose epoch is the producer's and whose sequence range
//     equals one of its last 5 batches is a duplicate: Result.Duplicate,
//     with the original batch.
//  3. An epoch below the producer's gets ErrInvalidProducerEpoch.
//  4. An unknown producer passes at any sequence (Kafka 2.5 on, KIP-360:
//     its state may have expired or been deleted with the log), and so
//     does one replayed from a stored batch without an epoch.
//  5. A new epoch must start at sequence 0, else ErrOutOfOrderSequence.
//  6. Within the epoch, the first sequence must follow the last one
//     appended (math.MaxInt32 is followed by 0), else
//     ErrOutOfOrderSequence. A producer without batches (loaded from a
//     Kafka snapshot that held only a transaction marker, or whose epoch a
//     marker bumped) must start at 0.
//  7. A batch that is not transactional from a producer with an ongoing
//     transaction gets ErrInvalidTxnState (Kafka's "Expected transactional
//     write"). A transactional batch starts the producer's transaction at
//     its first offset, or continues it.
//  8. With VerificationRequired, a transactional batch of a producer with
//     no transaction ongoing here needs the producer's current
//     Verification (BatchInfo.Verification), else ErrInvalidTxnState:
//     the coordinator did not say the partition is in the transaction,
//     or a marker ended the transaction since it said so (Kafka's
//     "Record was not part of an ongoing transaction").
//  9. While a producer has a Verification, a batch whose first sequence
//     is above the lowest one being verified gets ErrOutOfOrderSequence.
//
// Rules 8 and 9 come before rule 4: they apply to unknown producers too.
func (s *State) Check(b BatchInfo) (Result, error) {
	if b.ProducerID == record.NoProducerID {
		return Result{}, nil
	}
	if b.ProducerID < 0 || b.ProducerEpoch < 0 || b.FirstSeq < 0 || b.LastSeq < 0 {
		return Result{}, fmt.Errorf("%w: producer %d epoch %d sequences %d..%d", ErrInvalidBatch, b.ProducerID, b.ProducerEpoch, b.FirstSeq, b.LastSeq)
	}
	e, known := s.producers[b.ProducerID]
	if known && b.ProducerEpoch == e.epoch {
		if m, dup := e.duplicateOf(b.FirstSeq, b.LastSeq); dup {
			return Result{Duplicate: true, Original: m}, nil
		}
	}
	var ke *entry
	if known {
		ke = e
	}
	if err := s.checkVerification(b, ke); err != nil {
		return Result{}, err
	}
	if !known {
		return Result{}, nil
	}
	if err := checkTxn(b, e); err != nil {
		return Result{}, err
	}
	if e.epoch == record.NoProducerEpoch {
		return Result{}, nil
	}
	if b.ProducerEpoch < e.epoch {
		return Result{}, fmt.Errorf("%w: producer %d epoch %d is older than its epoch %d", ErrInvalidProducerEpoch, b.ProducerID, b.ProducerEpoch, e.epoch)
	}
	if b.ProducerEpoch != e.epoch {
		if b.FirstSeq != 0 {
			return Result{}, fmt.Errorf("%w: producer %d starts epoch %d (after %d) at sequence %d, want 0",
				ErrOutOfOrderSequence, b.ProducerID, b.ProducerEpoch, e.epoch, b.FirstSeq)
		}
		return Result{}, nil
	}
	if last := e.lastSeq(); !inSequence(last, b.FirstSeq) {
		return Result{}, fmt.Errorf("%w: producer %d epoch %d sent sequence %d, the last appended is %d",
			ErrOutOfOrderSequence, b.ProducerID, b.ProducerEpoch, b.FirstSeq, last)
	}
	return Result{}, nil
}

// checkTxn is rule 7 of Check.
func checkTxn(b BatchInfo, e *entry) error {
	if !b.Transactional && e.currentTxnFirstOffset != noTxn {
		return fmt.Errorf("%w: producer %d epoch %d wrote a non-transactional batch during its transaction from offset %d",
			ErrInvalidTxnState, b.ProducerID, b.ProducerEpoch, e.currentTxnFirstOffset)
	}
	return nil
}

// Appended records a batch that passed Check (not as a duplicate) and that
// the log has just appended at [firstOffset, lastOffset] with max timestamp
// maxTimestamp (log.AppendInfo's values for the batch). Call it in the same
// turn of the loop as Check and the append, so that nothing else reaches
// the state in between. A batch without a producer id only moves
// EndOffset.
//
// It asserts what the caller guarantees: offsets never go backwards, the
// batch still passes Check, and its offsets span as many numbers as its
// sequences.
func (s *State) Appended(b BatchInfo, firstOffset, lastOffset, maxTimestamp int64) {
	assert.That(firstOffset >= s.end && lastOffset >= firstOffset && lastOffset < math.MaxInt64,
		"producer: batch appended at offsets %d..%d, the state ends at %d", firstOffset, lastOffset, s.end)
	assert.That(lastOffset-firstOffset <= math.MaxInt32, "producer: batch of %d offsets", lastOffset-firstOffset+1)
	if b.ProducerID == record.NoProducerID {
		s.end = lastOffset + 1
		return
	}
	res, err := s.Check(b)
	assert.That(err == nil && !res.Duplicate, "producer: appended batch of producer %d epoch %d sequences %d..%d fails Check: duplicate %v, %v",
		b.ProducerID, b.ProducerEpoch, b.FirstSeq, b.LastSeq, res.Duplicate, err)
	delta := int32(lastOffset - firstOffset)
	assert.That(record.IncrementSequence(b.FirstSeq, delta) == b.LastSeq,
		"producer: batch of producer %d has sequences %d..%d but offsets %d..%d", b.ProducerID, b.FirstSeq, b.LastSeq, firstOffset, lastOffset)
	s.apply(b.ProducerID, b.ProducerEpoch, b.Transactional, BatchMetadata{LastSeq: b.LastSeq, LastOffset: lastOffset, OffsetDelta: delta, Timestamp: maxTimestamp})
}

// Replay applies a batch read back from the log: at recovery, from the
// snapshot's offset to the log end, and on a follower for every batch it
// appends (Kafka's loadFromLog and AppendOrigin.REPLICATION). It enforces
// no producer rule, since the log already holds the batch, and uses the
// batch's stored producer fields, offsets and max timestamp, so that
// replaying what Appended and AppendedMarker recorded rebuilds the same
// state: transactional batches start or continue their producer's
// transaction, and a COMMIT or ABORT marker ends it. When the batch is a
// marker that ended a transaction, ReplayTxn returns it.
//
// A batch that ends below EndOffset is already reflected and is skipped,
// so replay may start at any batch boundary at or below EndOffset. Control
// batches that are not transaction markers (or whose record does not
// parse: a stored batch is replayed, not judged) only move EndOffset. The
// batch should have passed ValidateStored; header fields that no stored
// batch can have (a negative offset or offset delta) get an error
// wrapping record.ErrCorrupt and change nothing.
func (s *State) Replay(b record.Batch) error {
	_, _, err := s.ReplayTxn(b)
	return err
}

// ReplayTxn is Replay, returning the transaction the batch ended, if it is
// a marker that ended one (for the owner's aborted-transaction index).
func (s *State) ReplayTxn(b record.Batch) (done CompletedTxn, ok bool, err error) {
	base, delta := b.BaseOffset(), b.LastOffsetDelta()
	if base < 0 || delta < 0 || base > math.MaxInt64-int64(delta)-1 {
		return CompletedTxn{}, false, fmt.Errorf("producer: replay: %w: batch at offset %d with lastOffsetDelta %d", record.ErrCorrupt, base, delta)
	}
	last := b.LastOffset()
	if last < s.end {
		return CompletedTxn{}, false, nil
	}
	s.end = last + 1
	pid := b.ProducerID()
	if pid < 0 {
		return CompletedTxn{}, false, nil
	}
	if b.Attributes().IsControl() {
		m, isMarker, err := record.ReadEndTxnMarker(b)
		if err != nil || !isMarker {
			return CompletedTxn{}, false, nil
		}
		done, ok := s.endTxn(Marker{ProducerID: pid, ProducerEpoch: b.ProducerEpoch(), CoordinatorEpoch: m.CoordinatorEpoch,
			Commit: m.Type == record.ControlCommit}, last, b.MaxTimestamp())
		return done, ok, nil
	}
	s.apply(pid, b.ProducerEpoch(), b.Attributes().IsTransactional(),
		BatchMetadata{LastSeq: b.LastSequence(), LastOffset: last, OffsetDelta: delta, Timestamp: b.MaxTimestamp()})
	return CompletedTxn{}, false, nil
}

// apply records a batch of producer pid (Kafka's ProducerAppendInfo
// appendDataBatch followed by ProducerStateManager.update).
func (s *State) apply(pid int64, epoch int16, transactional bool, m BatchMetadata) {
	e, ok := s.producers[pid]
	if !ok {
		e = newEntry(epoch)
		s.producers[pid] = e
	}
	e.addBatch(epoch, m)
	if transactional {
		// The transaction is started here now: its later batches need
		// no verification, and an earlier one's answer is spent.
		delete(s.verifications, pid)
	}
	if transactional && e.currentTxnFirstOffset == noTxn {
		e.currentTxnFirstOffset = m.FirstOffset()
		s.addOngoing(pid, m.FirstOffset())
	}
	s.end = max(s.end, m.LastOffset+1)
}

// AdvanceTo records that the log below offset holds nothing more for the
// state than it reflects (Kafka's updateMapEndOffset): batches the owner
// did not pass, such as those of a log that never saw an idempotent
// producer, or the start of a new segment. A snapshot written next is
// named by offset. Offsets never go backwards.
func (s *State) AdvanceTo(offset int64) {
	assert.NotDecreasing("producer state end offset", s.end, offset)
	s.end = offset
}

// Expire forgets every producer whose last batch is at least
// Config.ExpirationTime older than now (Kafka's removeExpiredProducers),
// except one with an ongoing transaction, and returns the ids it removed,
// sorted. It also drops the verifications started at least that long ago
// (by the broker's clock) that were never used.
func (s *State) Expire(now time.Time) []int64 {
	s.expireVerifications(now.UnixMilli())
	var expired []int64
	for _, id := range s.ids() {
		if s.expired(s.producers[id], now) {
			expired = append(expired, id)
			delete(s.producers, id)
		}
	}
	return expired
}

// expired is Kafka's isProducerExpired.
func (s *State) expired(e *entry, now time.Time) bool {
	return e.currentTxnFirstOffset == noTxn && e.lastTimestamp <= now.UnixMilli()-s.cfg.ExpirationTime.Milliseconds()
}
