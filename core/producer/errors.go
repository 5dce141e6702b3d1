package producer

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors of the produce path. Each wraps the franz-go kerr error of the
// Kafka error code the broker answers with, so its error table maps every
// one of them with errors.As(err, &*kerr.Error) and tests compare with
// errors.Is against either the sentinel or the kerr value. The errors Check
// returns wrap a sentinel with the producer, epochs and sequences involved.
var (
	// ErrOutOfOrderSequence is OUT_OF_ORDER_SEQUENCE_NUMBER (45): the
	// batch's first sequence does not follow the last one appended for
	// its producer and epoch, or a new epoch does not start at sequence 0.
	// Nothing was appended.
	ErrOutOfOrderSequence = fmt.Errorf("producer: out of order sequence number: %w", kerr.OutOfOrderSequenceNumber)

	// ErrVerificationPending is NOT_ENOUGH_REPLICAS (19), retriable: the
	// batch's transaction is being verified here for an earlier batch of
	// the producer, whose answer it must not overtake (verify.go). Kafka
	// answers OUT_OF_ORDER_SEQUENCE_NUMBER, on which kgo fails the
	// producer id; the earlier batch is only waiting, or failed
	// retriably, so the later one is told to retry.
	ErrVerificationPending = fmt.Errorf("producer: an earlier batch of the producer is being verified: %w", kerr.NotEnoughReplicas)

	// ErrInvalidProducerEpoch is INVALID_PRODUCER_EPOCH (47): the batch's
	// producer epoch is older than the producer's latest, so it comes from
	// a fenced (zombie) incarnation of the producer. Kafka answers this
	// instead of PRODUCER_FENCED on produce since 2.7.
	ErrInvalidProducerEpoch = fmt.Errorf("producer: invalid producer epoch: %w", kerr.InvalidProducerEpoch)

	// ErrInvalidTxnState is INVALID_TXN_STATE (48): a batch that is not
	// transactional from a producer with an ongoing transaction on the
	// partition (Kafka's "Expected transactional write").
	ErrInvalidTxnState = fmt.Errorf("producer: invalid transaction state: %w", kerr.InvalidTxnState)

	// ErrInvalidBatch is INVALID_RECORD (87): Check got producer fields
	// that core/record's ValidateForAppend rejects for a client batch (a
	// negative epoch or sequence with a producer id). It means the caller
	// skipped that validation.
	ErrInvalidBatch = fmt.Errorf("producer: invalid producer fields: %w", kerr.InvalidRecord)
)

// Errors of the snapshot files. None reaches a client.
var (
	// ErrCorruptSnapshot: a snapshot file does not decode (bad version,
	// CRC, length or field). Load skips such a file and deletes it.
	ErrCorruptSnapshot = errors.New("producer: corrupt snapshot")

	// ErrDirectoryFailed: a SyncDir of the partition directory failed.
	// The directory changes it covered may be lost, the log's own among
	// them, even if a later SyncDir succeeds (Linux drops what a failed
	// sync covered): the owner must fail the log and take the directory
	// offline (KAFKA_STORAGE_ERROR), exactly as for a failed log sync.
	ErrDirectoryFailed = errors.New("producer: partition directory sync failed")

	// ErrCanceled: a snapshot write was overtaken by DeleteAbove or
	// DeleteBelow for its offset before it completed; its file is gone.
	ErrCanceled = errors.New("producer: snapshot write canceled")

	// ErrClosed: the Snapshots was closed.
	ErrClosed = errors.New("producer: snapshots closed")

	// ErrInvalidConfig: a Config field is out of range.
	ErrInvalidConfig = errors.New("producer: invalid config")
)

// ErrCoordinatorFenced is TRANSACTION_COORDINATOR_FENCED (52): a
// transaction marker from a coordinator epoch older than the one of the
// producer's last marker. Nothing was appended.
var ErrCoordinatorFenced = fmt.Errorf("producer: transaction coordinator fenced: %w", kerr.TransactionCoordinatorFenced)
