package env

import "errors"

// Sentinel errors. Implementations wrap them (fmt.Errorf("...: %w", ...)) with
// the detail; callers test with errors.Is.
var (
	// ErrNotExist: a file, directory or object does not exist.
	ErrNotExist = errors.New("does not exist")
	// ErrExist: a directory entry already exists where it must not.
	ErrExist = errors.New("already exists")
	// ErrNoSpace: the disk is full (ENOSPC).
	ErrNoSpace = errors.New("no space left on device")
	// ErrIO: the device failed the operation (EIO), e.g. a failed fsync.
	ErrIO = errors.New("input/output error")
	// ErrClosed: the conn, listener or file was already closed.
	ErrClosed = errors.New("closed")
	// ErrConnReset: the peer or the network ended the connection.
	ErrConnReset = errors.New("connection reset")
	// ErrConnRefused: nothing listens at the dialed address or it is
	// unreachable.
	ErrConnRefused = errors.New("connection refused")
	// ErrFrameTooLarge: a frame exceeded the maximum frame size.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrTimeout: an operation did not complete within its deadline; its
	// effect is unknown.
	ErrTimeout = errors.New("timed out")
)
