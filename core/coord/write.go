package coord

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/replica"
)

// Record is one record of a coordinator's topic: a key and a value, a
// nil Value being a tombstone (compaction drops the key).
type Record struct {
	Key, Value []byte
}

// ErrNotCoordinator is a write's error once its shard was unloaded, or
// its slot replaced (NOT_COORDINATOR).
var ErrNotCoordinator = errors.New("coord: not the coordinator")

// Write appends recs to the slot's partition as one batch (acks=all) and
// runs done on the loop once the ISR has them, or with why not: the
// broker's code of the failure (WriteErrorCode maps it to the
// coordinator's answer), ErrNotCoordinator when the slot no longer runs.
func (s *Slot[S]) Write(recs []Record, done func(error)) {
	if !s.Current() {
		s.rt.e.Post(func() { done(ErrNotCoordinator) })
		return
	}
	payload, err := s.Encode(recs)
	if err != nil {
		s.rt.e.Post(func() { done(err) })
		return
	}
	s.Replica.Produce(payload, -1, s.rt.e.Now(), s.Answer("writing "+s.rt.cfg.Name+" records failed", len(recs), done))
}

// Encode builds one batch of recs (opts: a producer's transactional
// batch), each stamped now.
func (s *Slot[S]) Encode(recs []Record, opts ...record.BuilderOption) ([]byte, error) {
	bld := record.NewBuilder(opts...)
	now := s.rt.e.Now().UnixMilli()
	for _, r := range recs {
		bld.Append(now, r.Key, r.Value)
	}
	return bld.AppendTo(nil)
}

// Answer returns the callback of an append of n records: done(nil) once
// committed, or the broker's code of the failure, logged with failed and
// attrs.
func (s *Slot[S]) Answer(failed string, n int, done func(error), attrs ...any) func(replica.ProduceResult) {
	return func(res replica.ProduceResult) {
		if res.Err != nil {
			s.rt.log.Warn(failed, append([]any{"partition", s.Partition, "records", n, "err", res.Err}, attrs...)...)
			done(s.rt.cfg.ErrorCode(res.Err))
			return
		}
		done(nil)
	}
}

// WriteErrorCode maps a failed write to the code Kafka's coordinators
// answer (a client retries it after finding the coordinator again):
// a partition short of replicas or gone, COORDINATOR_NOT_AVAILABLE; a
// batch too large, UNKNOWN_SERVER_ERROR; anything else, NOT_COORDINATOR.
func WriteErrorCode(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
			return kerr.CoordinatorNotAvailable
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
			return kerr.UnknownServerError
		}
	}
	return kerr.NotCoordinator
}
