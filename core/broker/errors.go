package broker

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/replica"
)

// errorTable is the one mapping from the core's sentinel errors to Kafka
// error codes. The first row whose sentinel the error wraps wins, so more
// specific sentinels come first. An error no row matches is
// UNKNOWN_SERVER_ERROR (and logged: it is a gap in this table).
var errorTable = []struct {
	err  error
	code *kerr.Error
}{
	// The partition layer.
	{replica.ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
	{replica.ErrNotLeader, kerr.NotLeaderForPartition},
	{replica.ErrStorage, kerr.KafkaStorageError},
	{replica.ErrNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend},
	{replica.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{replica.ErrNotReplica, kerr.NotLeaderForPartition},
	{replica.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{replica.ErrInvalidRequiredAcks, kerr.InvalidRequiredAcks},
	{replica.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{replica.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{replica.ErrOffsetNotAvailable, kerr.OffsetNotAvailable},
	{replica.ErrInvalidListOffsetsTimestamp, kerr.InvalidRequest},
	{replica.ErrClosed, kerr.NotLeaderForPartition},
	// The idempotent producer state.
	{producer.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{producer.ErrVerificationPending, kerr.NotEnoughReplicas},
	{producer.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{producer.ErrInvalidTxnState, kerr.InvalidTxnState},
	{producer.ErrCoordinatorFenced, kerr.TransactionCoordinatorFenced},
	{producer.ErrInvalidBatch, kerr.InvalidRecord},
	// The log.
	{log.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{log.ErrLogFailed, kerr.KafkaStorageError},
	{log.ErrCorrupt, kerr.KafkaStorageError}, // stored data: the broker's disk, not the client
	{log.ErrBusy, kerr.NotLeaderForPartition},
	{log.ErrClosed, kerr.NotLeaderForPartition},
	{log.ErrInvalidLeaderEpoch, kerr.NotLeaderForPartition},
	// A client's batch.
	{record.ErrCorrupt, kerr.CorruptMessage}, // ErrCRCMismatch and ErrTruncated too
	{record.ErrUnsupportedMagic, kerr.UnsupportedForMessageFormat},
	{record.ErrBatchTooLarge, kerr.MessageTooLarge},
	// Past record.MaxDecompressedBytes (16x max.message.bytes): a batch
	// too large once decompressed, which Kafka's Java producer answers by
	// splitting the batch.
	{record.ErrDecompressedTooLarge, kerr.MessageTooLarge},
	{record.ErrInvalidRecord, kerr.InvalidRecord},
	// The disk.
	{env.ErrNoSpace, kerr.KafkaStorageError},
	{env.ErrIO, kerr.KafkaStorageError},
	// The broker itself.
	{errUnknownTopicID, kerr.UnknownTopicID},
	{errTransactionalIDAuthorization, kerr.TransactionalIDAuthorizationFailed},
	{errInvalidRequest, kerr.InvalidRequest},
	{errInvalidTopic, kerr.InvalidTopicException},
	{errRequestTimedOut, kerr.RequestTimedOut},
	{errUnsupportedEndpointType, kerr.UnsupportedEndpointType},
}

// Errors of the broker itself; each stands for one Kafka error code.
var (
	errUnknownTopicID               = errors.New("broker: unknown topic id")
	errTransactionalIDAuthorization = errors.New("broker: transactional id not authorized")
	// errInvalidRequest: a request the broker cannot make sense of (an
	// unknown resource type, another broker's id, a bad cursor).
	errInvalidRequest = errors.New("broker: invalid request")
	// errInvalidTopic: a topic name Kafka's rules refuse.
	errInvalidTopic = errors.New("broker: invalid topic name")
	// errRequestTimedOut: the request's own timeout passed before the
	// operation completed (it may still complete).
	errRequestTimedOut = errors.New("broker: request timed out")
	// errUnsupportedEndpointType: DescribeCluster asked a broker for the
	// controllers' endpoints (KIP-919), which only controllers answer.
	errUnsupportedEndpointType = errors.New("broker: unsupported endpoint type")
)

// errorMessage is err's text for a response's error message, nil for nil.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	msg := err.Error()
	return &msg
}

// quoteName quotes a client-given name for an error message, cut to
// maxNameInMessageBytes so that a huge name does not swell the response.
func quoteName(name string) string {
	if len(name) > maxNameInMessageBytes {
		return strconv.Quote(name[:maxNameInMessageBytes]) + fmt.Sprintf("... (%d bytes)", len(name))
	}
	return strconv.Quote(name)
}

// maxNameInMessageBytes bounds the part of a client-given name quoted in
// an error message, in bytes (Kafka's longest topic name).
const maxNameInMessageBytes = 249

// errorCode maps err to its Kafka error code; nil is nil.
func (b *Broker) errorCode(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	for _, row := range errorTable {
		if errors.Is(err, row.err) {
			return row.code
		}
	}
	// An answer another broker gave (a transaction verification's)
	// carries its code.
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	b.log.Warn("an error without a Kafka error code; answering UNKNOWN_SERVER_ERROR", "err", err)
	return kerr.UnknownServerError
}

// code is errorCode's numeric code (0 for nil).
func (b *Broker) code(err error) int16 {
	if k := b.errorCode(err); k != nil {
		return k.Code
	}
	return 0
}
