package record

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the package returns is an *Error whose Kind is
// one of these; test with errors.Is. The Kafka error code each is meant to
// become is named for the broker's error table; this package does not encode
// wire errors itself.
var (
	// ErrCorrupt means the bytes are not a well-formed batch: a length that
	// contradicts the buffer, an unknown magic or codec, an impossible count,
	// a bad CRC, a compressed payload that does not decompress. Meant to
	// become CORRUPT_MESSAGE. Recovery truncates a log at the first one.
	ErrCorrupt = errors.New("record: corrupt batch")

	// ErrTruncated refines ErrCorrupt: the buffer ends inside a batch. It is
	// what a torn tail of a segment or a fetch response cut at max bytes looks
	// like. errors.Is(ErrTruncated, ErrCorrupt) holds.
	ErrTruncated = fmt.Errorf("%w: truncated", ErrCorrupt)

	// ErrCRCMismatch refines ErrCorrupt: the stored CRC32C does not match the
	// bytes from attributes to the end. errors.Is(ErrCRCMismatch, ErrCorrupt)
	// holds.
	ErrCRCMismatch = fmt.Errorf("%w: crc32c mismatch", ErrCorrupt)

	// ErrUnsupportedMagic means the batch is in the message format of magic 0
	// or 1, which Strata does not accept. Meant to become
	// UNSUPPORTED_FOR_MESSAGE_FORMAT.
	ErrUnsupportedMagic = errors.New("record: unsupported message format")

	// ErrBatchTooLarge means a batch is larger than the caller's bound
	// (message.max.bytes) or than the format allows. Meant to become
	// MESSAGE_TOO_LARGE.
	ErrBatchTooLarge = errors.New("record: batch too large")

	// ErrInvalidRecord means the batch is well formed and its CRC holds, but
	// it breaks a rule for what may be appended (a producer batch with no
	// records or with an offset range that disagrees with its count, a
	// client-written control batch, a bad sequence number) or its records do
	// not parse. Meant to become INVALID_RECORD.
	ErrInvalidRecord = errors.New("record: invalid record")

	// ErrDecompressedTooLarge means a compressed batch would decompress to
	// more than the Decompressor's bound: a zip bomb, or a bound set too low.
	// Meant to become CORRUPT_MESSAGE on produce; a reader of stored data
	// should raise its bound rather than drop the batch.
	ErrDecompressedTooLarge = errors.New("record: decompressed batch too large")
)

// Error is the detailed form of every error this package returns.
type Error struct {
	// Kind is the sentinel this error is (ErrCorrupt, ErrTruncated, ...).
	Kind error
	// Pos is the byte position where the problem was found: in the buffer
	// given to ReadBatch or to a Splitter (the whole payload), or in the
	// batch for Batch and RecordReader methods. A record that does not parse
	// inside a compressed batch is the exception: its position counts from
	// the start of the decompressed records.
	Pos int
	// Detail says what was found and what was expected.
	Detail string
	// Cause is the underlying error, such as a codec's, or nil.
	Cause error
}

// Error formats the kind, position, detail and cause.
func (e *Error) Error() string {
	msg := fmt.Sprintf("%v at byte %d: %s", e.Kind, e.Pos, e.Detail)
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap exposes both the sentinel and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

// errAt builds an *Error of the given kind at pos.
func errAt(kind error, pos int, format string, args ...any) *Error {
	return &Error{Kind: kind, Pos: pos, Detail: fmt.Sprintf(format, args...)}
}

// shift moves the position of err by delta when it is an *Error, so that a
// check run on one batch reports positions in the caller's larger buffer.
func shift(err error, delta int) error {
	var e *Error
	if delta != 0 && errors.As(err, &e) {
		moved := *e
		moved.Pos += delta
		return &moved
	}
	return err
}
