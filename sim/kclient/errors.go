package kclient

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Request outcomes other than an answer. Callbacks get them wrapped with
// the detail; test with errors.Is.
var (
	// ErrNotSent: the request never reached the transport (no connection,
	// a refused dial, an unsupported version, the client closed); it had
	// no effect.
	ErrNotSent = errors.New("kclient: request not sent")
	// ErrTimeout: the request was sent and no answer came within its
	// timeout; it may have taken effect.
	ErrTimeout = errors.New("kclient: request timed out")
	// ErrConnLost: the request was sent and its connection ended before
	// the answer; it may have taken effect.
	ErrConnLost = errors.New("kclient: connection lost before the answer")
)

// OutcomeUnknown reports whether err leaves a request's outcome unknown: it was
// sent and may or may not have taken effect.
func OutcomeUnknown(err error) bool {
	return errors.Is(err, ErrTimeout) || errors.Is(err, ErrConnLost)
}

// refreshesMetadata reports whether an error code means the client's
// view of the partition's leader is stale.
func refreshesMetadata(code int16) bool {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.LeaderNotAvailable.Code,
		kerr.FencedLeaderEpoch.Code, kerr.UnknownLeaderEpoch.Code, kerr.UnknownTopicID.Code,
		kerr.KafkaStorageError.Code, kerr.NotEnoughReplicas.Code:
		return true
	}
	return false
}

// codeName is an error code's Kafka name, for events and logs.
func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e := kerr.TypedErrorForCode(code); e != nil {
		return e.Message
	}
	return "UNKNOWN_CODE"
}
