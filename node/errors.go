package node

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"

	"github.com/strata-log/strata/core/env"
)

// ErrInvalidPath is wrapped by the error of a Disk or Bucket call whose name
// is absolute, empty where a file is needed, or climbs out of the root with
// "..".
var ErrInvalidPath = errors.New("invalid path")

// osErr maps an error from package os or syscall to the env sentinel that
// describes it, wrapping both: callers test errors.Is(err, env.ErrNoSpace)
// and operators still read the OS's own text (path and errno). Errors with
// no sentinel are returned unchanged.
func osErr(err error) error {
	if err == nil {
		return nil
	}
	var sentinel error
	switch {
	case errors.Is(err, fs.ErrNotExist): // ENOENT
		sentinel = env.ErrNotExist
	case errors.Is(err, fs.ErrExist): // EEXIST, ENOTEMPTY
		sentinel = env.ErrExist
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		sentinel = env.ErrNoSpace
	case errors.Is(err, syscall.EIO), errors.Is(err, syscall.EROFS):
		// EROFS: ext4 after a failed directory fsync (an aborted
		// journal) refuses every change; env.Disk calls that ErrIO.
		sentinel = env.ErrIO
	case errors.Is(err, os.ErrClosed):
		sentinel = env.ErrClosed
	default:
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}

// netErr maps a socket error to the env sentinel that describes it, wrapping
// both like osErr.
func netErr(err error) error {
	if err == nil {
		return nil
	}
	var sentinel error
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		sentinel = env.ErrConnRefused
	case errors.As(err, &ne) && ne.Timeout():
		sentinel = env.ErrTimeout
	case errors.Is(err, net.ErrClosed):
		sentinel = env.ErrClosed
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.ETIMEDOUT):
		sentinel = env.ErrConnReset
	default:
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}
