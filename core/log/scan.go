package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/record"
)

// Bounds of reading stored data.
const (
	// scanChunkBytes is how much recovery and Verify read at a time.
	scanChunkBytes = 1 << 20
	// stableReadAttempts bounds the reads of one range that must agree
	// twice in a row (see readStable).
	stableReadAttempts = 8
)

// errInconsistent is what a navigation step reports when bytes it read do
// not fit what the log knows; callers re-read once before calling it
// corruption, because env reads may flip bits transiently.
var errInconsistent = errors.New("inconsistent with the log")

// readFull reads exactly len(p) bytes at off.
func readFull(f env.File, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("log: read %s: %d of %d bytes at %d: %w", f.Name(), n, len(p), off, io.ErrUnexpectedEOF)
	}
	return &ReadError{File: f.Name(), Position: off, Err: err}
}

// readStable reads len(p) bytes at off until two consecutive reads agree,
// using scratch (as long as p) for the second copy. Env reads may flip a bit
// without an error; two identical reads rule that out for data no checksum
// covers (index files, checkpoints, the header fields of a batch outside its
// CRC). Reads that never agree are an I/O error.
func readStable(f env.File, p, scratch []byte, off int64) error {
	if err := readFull(f, p, off); err != nil {
		return err
	}
	for attempt := 1; attempt < stableReadAttempts; attempt++ {
		if err := readFull(f, scratch, off); err != nil {
			return err
		}
		if bytes.Equal(p, scratch) {
			return nil
		}
		copy(p, scratch)
	}
	return fmt.Errorf("log: read %s: %d reads of %d bytes at %d disagree: %w", f.Name(), stableReadAttempts, len(p), off, env.ErrIO)
}

// ReadStable reads len(p) bytes of f at off into p until two reads agree
// (scratch, as long as p, holds the other), as the log reads what it
// trusts: a read may flip a bit. Reads that never agree are an error
// wrapping env.ErrIO. For callers that read a ReadResult's region
// themselves and must trust what lies outside the batches' CRCs (a base
// offset).
func ReadStable(f env.File, p, scratch []byte, off int64) error {
	return readStable(f, p, scratch, off)
}

// readFileStable returns a file's whole content, read stably.
func readFileStable(f env.File) ([]byte, error) {
	size := f.Size()
	if size == 0 {
		return nil, nil
	}
	p, scratch := make([]byte, size), make([]byte, size)
	if err := readStable(f, p, scratch, 0); err != nil {
		return nil, err
	}
	return p, nil
}

// scanner walks the batches of a segment file from a position, validating
// each one with record's ValidateStored (CRC included). Every range is read
// twice and compared, so a batch it yields or rejects is what the disk
// holds, not a transient read flip; a batch that fails is also read once
// more from scratch before the scanner gives up on it. The batch it returns
// aliases its buffer and is valid until the next call.
type scanner struct {
	f        env.File
	end      int64 // where scanning stops: the file size
	pos      int64 // where the next batch starts
	buf      []byte
	scratch  []byte
	bufStart int64 // file position of buf[0]
	bufLen   int
}

func newScanner(f env.File, start, end int64) *scanner {
	return &scanner{f: f, pos: start, end: end}
}

// next returns the next batch and its position. At the end of the file it
// returns io.EOF. A batch that is torn (cut by the file end) or corrupt
// yields a *CorruptError (errors.Is(err, ErrCorrupt)); record.ErrTruncated in
// its chain marks a torn one. Any other error is an I/O error.
func (s *scanner) next() (record.Batch, int64, error) {
	pos := s.pos
	if pos >= s.end {
		return record.Batch{}, pos, io.EOF
	}
	b, err := s.try()
	if err != nil && errors.Is(err, ErrCorrupt) {
		s.bufLen = 0 // read it all again before deciding
		b, err = s.try()
	}
	return b, pos, err
}

func (s *scanner) try() (record.Batch, error) {
	remaining := s.end - s.pos
	name := s.f.Name()
	if remaining < record.LogOverhead {
		return record.Batch{}, corruptAt(name, s.pos, record.ErrTruncated, "%d bytes left, less than a batch's length fields", remaining)
	}
	if err := s.fill(record.LogOverhead); err != nil {
		return record.Batch{}, err
	}
	at := int(s.pos - s.bufStart)
	length := int32(binary.BigEndian.Uint32(s.buf[at+hdrBatchLength:]))
	if length < record.MinBatchLength {
		return record.Batch{}, corruptAt(name, s.pos, record.ErrCorrupt, "batch length %d is below the minimum %d", length, record.MinBatchLength)
	}
	size := record.LogOverhead + int64(length)
	if size > remaining {
		return record.Batch{}, corruptAt(name, s.pos, record.ErrTruncated, "batch of %d bytes, only %d left in the file", size, remaining)
	}
	if err := s.fill(size); err != nil {
		return record.Batch{}, err
	}
	at = int(s.pos - s.bufStart)
	b, err := record.ReadBatch(s.buf[at:at+int(size)], int(size))
	if err == nil {
		err = b.ValidateStored()
	}
	if err != nil {
		return record.Batch{}, corruptAt(name, s.pos, err, "invalid batch")
	}
	s.pos += size
	return b, nil
}

// fill makes the buffer hold [pos, pos+n), reading a chunk stably.
func (s *scanner) fill(n int64) error {
	if s.pos >= s.bufStart && s.pos+n <= s.bufStart+int64(s.bufLen) {
		return nil
	}
	want := min(max(n, scanChunkBytes), s.end-s.pos)
	if int64(cap(s.buf)) < want {
		s.buf = make([]byte, want)
		s.scratch = make([]byte, want)
	}
	s.buf, s.scratch = s.buf[:want], s.scratch[:want]
	s.bufLen = 0
	if err := readStable(s.f, s.buf, s.scratch, s.pos); err != nil {
		return err
	}
	s.bufStart, s.bufLen = s.pos, int(want)
	return nil
}
