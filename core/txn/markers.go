package txn

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/plant"
)

// Markers is one transaction's markers to write: a commit or abort marker
// of the producer at this epoch in each partition.
type Markers struct {
	TransactionalID  string
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	// TransactionVersion is WriteTxnMarkers v2's field: 2 for a
	// transaction ended with KIP-890 part 2, else 0.
	TransactionVersion int8
	Partitions         []TopicPartition
}

// MarkerResult is one partition's answer to its marker.
type MarkerResult struct {
	TopicPartition
	Err *kerr.Error
}

// MarkerSender sends markers to the leaders of their partitions (the
// broker: WriteTxnMarkers, API 27, over its inter-broker clients, grouped by
// the leader in the current metadata image). done runs on the loop once,
// with a result for some or all of the partitions; a partition without
// one (a lost request, a partition without a leader) is sent again, as is
// one whose error is retriable. A partition of a deleted topic is answered
// with UNKNOWN_TOPIC_ID, which ends its marker. TRANSACTION_COORDINATOR_FENCED
// stops the transaction's markers: a newer coordinator resumes them.
type MarkerSender interface {
	SendMarkers(m Markers, done func([]MarkerResult))
}

// markerRound is the markers of one Prepare state in flight.
type markerRound struct {
	remaining []TopicPartition
	backoff   time.Duration
	timer     env.Timer
}

// markerDone reports whether a partition's answer ends its marker. As in
// Kafka's TransactionMarkerRequestCompletionHandler, a partition that
// knows a newer epoch or no longer knows the producer has its marker (or
// never needs it), and a deleted topic needs none; everything else is
// sent again.
func markerDone(err *kerr.Error) bool {
	switch err {
	case nil, kerr.InvalidProducerEpoch, kerr.ProducerFenced, kerr.UnknownProducerID,
		kerr.UnsupportedForMessageFormat, kerr.UnknownTopicID:
		return true
	}
	return false
}

// sendMarkers starts the markers of t's Prepare state. A Prepare state
// without markers in flight (t.markers nil) is one whose coordinator was
// deposed; requests meeting it get CONCURRENT_TRANSACTIONS until the shard
// is unloaded.
func (s *Shard) sendMarkers(t *Txn) {
	m := &markerRound{remaining: slices.Clone(t.partitions), backoff: s.cfg.MarkerRetryBackoff}
	t.markers = m
	s.sendRound(t, m)
}

func (s *Shard) sendRound(t *Txn, m *markerRound) {
	if s.status.Unloaded() || t.markers != m {
		return
	}
	if len(m.remaining) == 0 {
		s.complete(t, m)
		return
	}
	req := Markers{
		TransactionalID: t.id, ProducerID: t.producerID, ProducerEpoch: t.epoch,
		Commit: t.state == StatePrepareCommit, CoordinatorEpoch: s.cfg.CoordinatorEpoch,
		Partitions: slices.Clone(m.remaining),
	}
	if t.tv2 {
		req.TransactionVersion = 2
	}
	answered := false
	s.cfg.Markers.SendMarkers(req, func(results []MarkerResult) {
		if answered || s.status.Unloaded() || t.markers != m {
			return
		}
		answered = true
		for _, r := range results {
			if r.Err == kerr.TransactionCoordinatorFenced {
				// A partition has seen a newer coordinator epoch: this
				// shard is deposed (its unload follows with the
				// image), and the new coordinator resumes the markers
				// from the log. Stop, as Kafka does.
				s.log.Info("transaction markers stopped: a newer coordinator exists", "transactional_id", t.id, "partition", r.TopicPartition)
				t.markers = nil
				return
			}
		}
		for _, r := range results {
			if !markerDone(r.Err) && !plant.Is(plant.TxnMarkerRetryDropped) {
				s.log.Debug("transaction marker failed; retrying", "transactional_id", t.id, "partition", r.TopicPartition, "err", r.Err)
				continue
			}
			if i, found := slices.BinarySearchFunc(m.remaining, r.TopicPartition, compareTP); found {
				m.remaining = slices.Delete(m.remaining, i, i+1)
			}
		}
		if len(m.remaining) == 0 {
			s.complete(t, m)
			return
		}
		s.retryRound(t, m)
	})
}

// retryRound sends the remaining markers again after the backoff, which
// doubles up to its bound.
func (s *Shard) retryRound(t *Txn, m *markerRound) {
	d := m.backoff
	m.backoff = min(2*m.backoff, s.cfg.MarkerRetryBackoffMax)
	m.timer = s.e.AfterFunc(d, func() { s.sendRound(t, m) })
}

// complete writes the Complete state once every marker is written; a
// failed write is tried again while the shard is the coordinator.
func (s *Shard) complete(t *Txn, m *markerRound) {
	next := t.txnState
	next.state = StateCompleteAbort
	if t.state == StatePrepareCommit {
		next.state = StateCompleteCommit
	}
	next.partitions, next.updateMs = nil, s.nowMs()
	if t.nextProducerID >= 0 {
		next.prevProducerID, next.producerID, next.nextProducerID = t.producerID, t.nextProducerID, -1
		next.lastEpoch, next.epoch = -1, 0
	}
	s.transition(t, next, func(err *kerr.Error) {
		if err != nil {
			// A refused write (NOT_LEADER_FOR_PARTITION maps to
			// NotCoordinator) is retried while the shard stays loaded:
			// a refusal the broker's image never follows with an unload
			// (a transient one) would otherwise leave the transaction
			// prepared forever. A real loss of the partition unloads the
			// shard, which ends the retries.
			if !s.status.Unloaded() {
				s.retryRoundComplete(t, m)
			}
			return
		}
		t.markers = nil
		s.log.Debug("transaction completed", "transactional_id", t.id, "state", t.state)
	})
}

func (s *Shard) retryRoundComplete(t *Txn, m *markerRound) {
	d := m.backoff
	m.backoff = min(2*m.backoff, s.cfg.MarkerRetryBackoffMax)
	m.timer = s.e.AfterFunc(d, func() {
		if !s.status.Unloaded() && t.markers == m && !t.pending {
			s.complete(t, m)
		}
	})
}
