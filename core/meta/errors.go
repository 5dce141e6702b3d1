package meta

import (
	"errors"
	"fmt"
)

// Sentinel errors. Decoding errors wrap ErrCorrupt, ErrUnknownRecordType or
// ErrUnsupportedVersion; replay errors are a *ReplayError wrapping
// ErrInvalidRecord or one of its refinements. Compare with errors.Is.
var (
	// ErrCorrupt means the bytes are not a well-formed record value: a
	// truncated field, a length larger than what remains, a bool that is
	// neither 0 nor 1, trailing bytes after the body.
	ErrCorrupt = errors.New("meta: corrupt record")

	// ErrUnknownRecordType means the frame names a record type this build
	// does not know: a record written by newer software.
	ErrUnknownRecordType = errors.New("meta: unknown record type")

	// ErrUnsupportedVersion means the frame version or the record version is
	// newer than this build reads. A node that meets one must stop replaying:
	// skipping the record would leave its image silently different from its
	// peers'. Feature levels exist so that writers never get ahead of readers.
	ErrUnsupportedVersion = errors.New("meta: unsupported record version")

	// ErrFieldNotInVersion means EncodeRecordVersion was asked for a version
	// that cannot carry a field the record sets (an ELR in PartitionRecord
	// version 0). Encoding it anyway would silently drop state.
	ErrFieldNotInVersion = errors.New("meta: field not representable in record version")

	// ErrInvalidRecord means a record is well formed but replaying it onto
	// the image would break one of the image's invariants (see the package
	// documentation). The active controller never writes such a record, so
	// a quorum driver replaying the committed log treats this error as a
	// fatal invariant violation; the controller itself may use a Delta to
	// check a record before it proposes it.
	ErrInvalidRecord = errors.New("meta: invalid record")

	// ErrUnknownTopic refines ErrInvalidRecord: the record names a topic id
	// (or, for a topic config, a topic name) that the image does not hold.
	ErrUnknownTopic = fmt.Errorf("%w: unknown topic", ErrInvalidRecord)

	// ErrUnknownPartition refines ErrInvalidRecord: a PartitionChangeRecord
	// names a partition its topic does not have.
	ErrUnknownPartition = fmt.Errorf("%w: unknown partition", ErrInvalidRecord)

	// ErrUnknownBroker refines ErrInvalidRecord: the record names a broker id
	// that is not registered.
	ErrUnknownBroker = fmt.Errorf("%w: unknown broker", ErrInvalidRecord)

	// ErrBrokerEpochMismatch refines ErrInvalidRecord: a record about a
	// registered broker carries an epoch other than its registration's.
	ErrBrokerEpochMismatch = fmt.Errorf("%w: broker epoch mismatch", ErrInvalidRecord)

	// ErrDuplicateTopic refines ErrInvalidRecord: a TopicRecord reuses a
	// name or an id the image already holds.
	ErrDuplicateTopic = fmt.Errorf("%w: duplicate topic", ErrInvalidRecord)

	// ErrEpochBackwards refines ErrInvalidRecord: a broker epoch, leader
	// epoch, partition epoch or next producer id would not move forwards.
	ErrEpochBackwards = fmt.Errorf("%w: epoch moved backwards", ErrInvalidRecord)

	// ErrInvalidPartition refines ErrInvalidRecord: the partition state a
	// record produces breaks a replica-set invariant (ISR not a subset of
	// the replicas, a leader outside the ISR, a duplicate replica, ...).
	ErrInvalidPartition = fmt.Errorf("%w: invalid partition state", ErrInvalidRecord)
)

// ReplayError is the error Delta.Replay returns: the record that could not be
// replayed and why. Err wraps ErrInvalidRecord or one of its refinements.
type ReplayError struct {
	// Record is the record that was refused; the delta is unchanged by it.
	Record Record
	// Err says which invariant the record would break.
	Err error
}

// Error names the record and the broken invariant.
func (e *ReplayError) Error() string {
	return fmt.Sprintf("meta: cannot replay %v: %v", e.Record, e.Err)
}

// Unwrap exposes the sentinel to errors.Is.
func (e *ReplayError) Unwrap() error { return e.Err }

// invalid builds an error of the given refinement of ErrInvalidRecord.
func invalid(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))
}

// corrupt builds an ErrCorrupt error.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}
