package producer

import "fmt"

// This file keeps KIP-890 part 1's partition side (Kafka's
// VerificationStateEntry and VerificationGuard): before a producer's first
// transactional batch of a transaction is appended here, the broker asks
// the transaction coordinator whether the producer added this partition to
// its transaction. The question takes a round trip, and while it is out a
// marker may end the transaction; the answer must then not open a new one
// the coordinator does not know (a hanging transaction). So the partition
// hands out a Verification when the question is asked, a transactional
// batch of a producer without a transaction here is appended only with
// the producer's current Verification, and every transactional batch or
// marker of the producer (the transaction started, or ended) clears it: a
// stale answer then carries a Verification that is no longer current and
// the batch is refused.

// Verification is a verification in progress of a producer's first
// transactional batch on the partition. It is a guard compared by
// identity: only the pointer StartVerification returned, while it is
// still the producer's current one, lets such a batch through Check.
type Verification struct {
	producerID int64
	// epoch and lowestSeq are the newest epoch asked about and the lowest
	// first sequence asked about at it (Kafka's
	// maybeUpdateLowestSequenceAndEpoch): while the verification is
	// current, a batch of a higher sequence is refused, retriably
	// (ErrVerificationPending), so that a batch whose verification
	// failed retriably or is still waiting is not overtaken by the next
	// (the producer would then loop on OUT_OF_ORDER_SEQUENCE_NUMBER).
	epoch     int16
	lowestSeq int32
	// tv2: the verification is an implicit add of KIP-890 part 2, whose
	// transactions bump the epoch at every end (Kafka's
	// VerificationStateEntry.supportsEpochBump).
	tv2 bool
	// startedMs is when it was created (the broker's clock): Expire drops
	// one that was never used after producer.id.expiration.ms.
	startedMs int64
}

// StartVerification is called for a client's transactional batch when
// transaction.partition.verification.enable is on, or the batch's
// partition is to be added to its transaction implicitly (tv2: KIP-890
// part 2), before the coordinator is asked (Kafka's
// maybeStartTransactionVerification). It returns nil when the producer
// already has a transaction ongoing here at the batch's epoch (its later
// batches need no verification: the partition's producer state is the
// cache of what the coordinator answered, until the marker ends it);
// otherwise the producer's current Verification, created at nowMs if there
// is none, and updated with epoch and firstSeq. Pass what it returns to
// Check with the batch (BatchInfo.Verification) once the coordinator has
// answered that the partition is in the transaction.
//
// A transaction ongoing here at an older epoch is not the batch's: under
// KIP-890 part 2 every EndTxn bumps the epoch and the producer goes on to
// its next transaction while the markers of the one before are still on
// their way, so the first batch of the next transaction can arrive before
// this partition's marker of the last (Kafka's hasOngoingTransaction
// compares the epoch since KIP-890 part 2; without it that batch would
// join the transaction before and be committed, or aborted, with it).
func (s *State) StartVerification(producerID int64, epoch int16, firstSeq int32, tv2 bool, nowMs int64) *Verification {
	if e, ok := s.producers[producerID]; ok && e.currentTxnFirstOffset != noTxn && e.epoch == epoch {
		return nil
	}
	v := s.verifications[producerID]
	if v == nil {
		v = &Verification{producerID: producerID, epoch: epoch, lowestSeq: firstSeq, tv2: tv2, startedMs: nowMs}
		s.verifications[producerID] = v
		return v
	}
	v.tv2 = v.tv2 || tv2
	switch {
	case epoch == v.epoch && firstSeq < v.lowestSeq:
		v.lowestSeq = firstSeq
	case epoch > v.epoch:
		v.epoch, v.lowestSeq = epoch, firstSeq
	}
	return v
}

// Verifying reports whether producerID has a verification in progress
// (for tests and logs).
func (s *State) Verifying(producerID int64) bool { return s.verifications[producerID] != nil }

// checkVerification is rules 8 and 9 of Check.
func (s *State) checkVerification(b BatchInfo, e *entry) error {
	v := s.verifications[b.ProducerID]
	ongoing := e != nil && e.currentTxnFirstOffset != noTxn
	if b.Transactional && ongoing && b.ProducerEpoch > e.epoch {
		// A later epoch's transaction cannot join the one open here
		// (StartVerification); its batch waits for the marker.
		return fmt.Errorf("%w: producer %d epoch %d: its transaction of epoch %d is still open on this partition",
			ErrInvalidTxnState, b.ProducerID, b.ProducerEpoch, e.epoch)
	}
	if b.VerificationRequired && b.Transactional && !ongoing && (v == nil || b.Verification != v) {
		return fmt.Errorf("%w: producer %d epoch %d: the batch was not verified as part of an ongoing transaction (the partition was not added to it, or it ended)",
			ErrInvalidTxnState, b.ProducerID, b.ProducerEpoch)
	}
	if v != nil && b.FirstSeq > v.lowestSeq {
		return fmt.Errorf("%w: producer %d sent sequence %d while its sequence %d is being verified",
			ErrVerificationPending, b.ProducerID, b.FirstSeq, v.lowestSeq)
	}
	return nil
}

// expireVerifications drops the verifications started at least
// ExpirationTime before nowMs (Kafka's removeExpiredProducers does so).
func (s *State) expireVerifications(nowMs int64) {
	for id, v := range s.verifications { //determinism:unordered only deletes, each decided by its own entry
		if v.startedMs <= nowMs-s.cfg.ExpirationTime.Milliseconds() {
			delete(s.verifications, id)
		}
	}
}
