package log

import (
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/record"
)

// # Damage found while the log is open
//
// The start-up scrub (scrub.go) finds damage at rest before a log opens.
// Damage can also show later: a page of a segment becomes unreadable while
// the broker runs (a latent sector error), or a batch the scrub could not
// judge (a misdirected batch with a valid CRC at the start of a compacted
// segment) fails Open's checks or a read's. Such an error names the file
// and position (a *CorruptError, or a *ReadError wrapping env.ErrIO);
// DamagedSegment turns it into the segment to drop, and the log's owner
// decides when it may drop it (core/replica damage.go): MarkDamaged with
// that segment's base makes the next Open drop it and everything after it,
// as for the scrub's damage. The segment rather than the batch: a read
// that fails mid-walk knows where it failed, not where the damage starts
// (a misdirected page holds a valid batch of another offset before the
// garbage), and the segment's base is the one offset known good to start
// from.

// DamagedSegment reports whether err, returned by Open or by a read of an
// open log, shows a segment file's stored bytes damaged: a batch that
// fails its checks (framing, CRC, offsets, confirmed by a re-read), or a
// page of the file the disk cannot read. It returns the base offset of
// that segment. A batch whose CRC matches but whose records do not parse
// (ErrInvalidRecords) is not damage: every replica stores the same bytes.
// Errors naming other files (indexes, which the log rebuilds, and
// checkpoints) are not reported.
func DamagedSegment(err error) (base int64, ok bool) {
	if err == nil || errors.Is(err, ErrInvalidRecords) {
		return 0, false
	}
	var file string
	var ce *CorruptError
	var re *ReadError
	switch {
	case errors.As(err, &ce):
		file = ce.File
	case errors.As(err, &re) && errors.Is(re.Err, env.ErrIO):
		file = re.File
	default:
		return 0, false
	}
	base, suffix, ok := parseSegmentFile(path.Base(file))
	if !ok || suffix != logSuffix {
		return 0, false
	}
	return base, true
}

// Verify checks the batches of a read's region as recovery does (framing,
// CRC, offsets that increase from FirstOffset), for a leader that must not
// send a follower damaged bytes: the follower would refuse them and never
// catch up, and the leader would never learn its log is damaged. It reads
// the region once; only if that read fails a check is the region scanned
// again with stable reads, so that a bit flipped by one read is not taken
// for damage. It returns nil for an empty region, else the first damage
// found (DamagedSegment reports its segment) or another I/O error.
//
// scratch is the caller's buffer for the read (a broker keeps one, not a
// log: a log per partition would each keep a region's worth); Verify
// returns it, grown to the region if it was smaller, for the next call.
func (r *ReadResult) Verify(scratch []byte) ([]byte, error) {
	if r.Size == 0 || r.File == nil {
		return scratch, nil
	}
	if int64(cap(scratch)) < r.Size {
		scratch = make([]byte, r.Size)
	}
	buf := scratch[:r.Size]
	if err := readFull(r.File, buf, r.Position); err == nil && verifyRegion(buf, r.FirstOffset) == nil {
		return scratch, nil
	}
	return scratch, r.scan()
}

// scan checks the region with stable reads (Verify's second look).
func (r *ReadResult) scan() error {
	sc := newScanner(r.File, r.Position, r.Position+r.Size)
	next := r.FirstOffset
	for {
		b, pos, err := sc.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if b.BaseOffset() < next {
			return corruptAt(r.File.Name(), pos, nil, "batch offsets [%d, %d] out of order (expected from %d)",
				b.BaseOffset(), b.LastOffset(), next)
		}
		next = b.LastOffset() + 1
	}
}

// verifyRegion checks the batches of buf (read from a region starting at
// a batch based at first) as Verify does, without naming a position.
func verifyRegion(buf []byte, first int64) error {
	sp := record.NewSplitter(buf, len(buf), record.CheckStored)
	next := first
	for sp.Next() {
		b := sp.Batch()
		if b.BaseOffset() < next {
			return fmt.Errorf("%w: batch offsets [%d, %d] out of order", ErrCorrupt, b.BaseOffset(), b.LastOffset())
		}
		next = b.LastOffset() + 1
	}
	return sp.Err()
}
