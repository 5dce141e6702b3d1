package log

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/strata-log/strata/core/env"
)

// ReadResult is the answer to Read: a region of one segment file holding
// whole batches, for the node to send with sendfile (or read with ReadAt).
// The region is not CRC-checked here: a fetch serves stored bytes as Kafka
// does, and consumers (and followers, with ValidateStored) check CRCs;
// Verify and recovery check them on the broker side.
//
// The File stays open until Release, even if retention deletes the
// segment meanwhile (an unlinked file stays readable) or the open-file
// budget would close it. A truncation of the log below the region changes
// its bytes, as in Kafka; replicas never read regions across one.
type ReadResult struct {
	// File is the segment file, or nil when Size is 0.
	File env.File
	// Position and Size delimit the region: whole batches, the first one
	// holding the offset asked for.
	Position, Size int64
	// FirstOffset is the base offset of the region's first batch, or -1.
	FirstOffset int64
	// LogStartOffset, LogEndOffset and HighWatermark are the log's at the
	// time of the read.
	LogStartOffset, LogEndOffset, HighWatermark int64

	l   *Log
	seg *segment
}

// Release unpins the region's file. It is safe to call more than once and
// on an empty result.
func (r *ReadResult) Release() {
	if r.seg == nil {
		return
	}
	s, l := r.seg, r.l
	r.seg, r.File = nil, nil
	s.pins--
	if s.pins == 0 && (s.deleted || l.closed) {
		l.closeFiles(s)
		return
	}
	if !l.closed {
		l.enforceBudget(nil)
	}
}

// Read returns the batches from the one holding offset onwards, as a region
// of one segment: at least that whole batch even if it is larger than
// maxBytes (Kafka's rule, so a consumer always progresses), then whole
// batches while the region stays within maxBytes, all of them ending below
// maxOffset when maxOffset >= 0 (pass the high watermark for consumers, -1
// for no bound). The region ends at the end of a segment; the next Read
// continues in the next one.
//
// An offset outside [LogStartOffset, LogEndOffset] is an error wrapping
// ErrOffsetOutOfRange. An offset at the end (or at or beyond maxOffset)
// gets an empty result. The caller must Release a non-empty result.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64) (ReadResult, error) {
	res := ReadResult{FirstOffset: -1}
	if err := l.usable(); err != nil {
		return res, err
	}
	leo := l.LogEndOffset()
	res.LogStartOffset, res.LogEndOffset, res.HighWatermark = l.logStart, leo, l.hw
	if offset < l.logStart || offset > leo {
		return res, fmt.Errorf("%w: offset %d, %s holds [%d, %d]", ErrOffsetOutOfRange, offset, l.dir, l.logStart, leo)
	}
	bound := leo
	if maxOffset >= 0 {
		bound = min(bound, maxOffset)
	}
	for i := l.segmentFor(offset); i < len(l.segs) && offset < bound; i++ {
		s := l.segs[i]
		if s.base >= bound {
			break
		}
		if err := l.openForRead(s); err != nil {
			return res, err
		}
		var r region
		var err error
		repaired := false
		for attempt := 1; ; attempt++ {
			r, err = l.locate(s, offset, int64(maxBytes), bound)
			if err == nil || !errors.Is(err, errInconsistent) {
				break
			}
			if attempt < stableReadAttempts {
				continue
			}
			if !repaired {
				// The index, not a transient read, disagrees with the
				// batches: damage at rest that loading did not catch.
				repaired = true
				if rerr := l.repairIndexes(s, err); rerr == nil {
					attempt = 0
					continue
				}
			}
			return res, corruptAt(s.files[kindLog].Name(), r.pos, err, "batch headers do not match the index")
		}
		if err != nil {
			return res, err
		}
		if !r.found {
			continue // offset lies past the segment's last batch (a gap)
		}
		if r.size == 0 {
			return res, nil // the batch holding offset ends at or beyond the bound
		}
		s.pins++
		res.File, res.Position, res.Size, res.FirstOffset = s.files[kindLog], r.pos, r.size, r.firstOffset
		res.l, res.seg = l, s
		return res, nil
	}
	return res, nil
}

// segmentFor returns the index of the last segment whose base offset is at
// most offset (0 when offset precedes them all).
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
	return max(i, 0)
}

// region is where a read lands in a segment.
type region struct {
	found       bool  // a batch with lastOffset >= offset exists in the segment
	pos, size   int64 // size 0 when that batch is beyond the bound
	firstOffset int64
}

// locate finds, in open segment s, the batch holding offset and how many
// whole batches after it fit in maxBytes below bound. Headers it reads are
// cross-checked (against the index, the segment's size and offsets, each
// other); a mismatch is errInconsistent, and Read re-reads once before
// calling it corruption.
func (l *Log) locate(s *segment, offset, maxBytes, bound int64) (region, error) {
	f := s.files[kindLog]
	// Start at the index entry at or below offset: the batch there ends
	// at the entry's offset, every batch before it below it.
	pos, low, wantLast := int64(0), s.base, int64(-1)
	if i := s.offsets.floorOffset(offset - s.base); i >= 0 {
		e := s.offsets.entries[i]
		pos, wantLast = int64(e.pos), s.base+int64(e.rel)
	}
	var h batchHeader
	prevPos := int64(-1)
	for {
		if pos >= s.size {
			return region{pos: pos}, nil
		}
		var err error
		if h, err = l.readHeader(f, s, pos, low, wantLast); err != nil {
			return region{pos: pos}, err
		}
		if h.lastOffset() >= offset {
			break
		}
		low, wantLast = h.lastOffset()+1, -1
		prevPos, pos = pos, pos+h.size()
	}
	// The region starts here: a flipped bit in this header, or in the one
	// before it that made the walk skip the batch holding offset, would
	// serve the wrong batches. Confirm both with a second read.
	if err := l.confirmHeader(s, pos, h); err != nil {
		return region{pos: pos}, err
	}
	if h.baseOffset > offset && prevPos >= 0 {
		prev, err := l.readHeaderStable(s, prevPos)
		if err != nil {
			return region{pos: prevPos}, err
		}
		if prev.lastOffset() >= offset || prevPos+prev.size() != pos {
			return region{pos: prevPos}, fmt.Errorf("%w: batch at %d does not end before offset %d", errInconsistent, prevPos, offset)
		}
	}
	r := region{found: true, pos: pos, firstOffset: h.baseOffset}
	if h.lastOffset() >= bound {
		return r, nil
	}
	end, last := pos+h.size(), h.lastOffset()
	if s.next <= bound && s.size-pos <= maxBytes {
		r.size = s.size - pos // the rest of the segment fits
		return r, nil
	}
	// Jump over whole batches with the index: an entry's position is a
	// batch boundary, and every batch before it ends below its offset.
	j := s.offsets.floorPosition(pos + maxBytes)
	j = min(j, s.offsets.floorOffset(bound-1-s.base))
	wantLast = -1
	if j >= 0 {
		if e := s.offsets.entries[j]; int64(e.pos) > end {
			end, last, wantLast = int64(e.pos), -1, s.base+int64(e.rel)
		}
	}
	for end < s.size {
		lowNext := last + 1
		if last < 0 {
			lowNext = h.lastOffset() + 1
		}
		next, err := l.readHeader(f, s, end, lowNext, wantLast)
		if err != nil {
			return region{pos: end}, err
		}
		wantLast = -1
		if next.lastOffset() >= bound || end+next.size()-pos > maxBytes {
			break
		}
		end, last = end+next.size(), next.lastOffset()
	}
	r.size = end - pos
	return r, nil
}

// confirmHeader reads the header at pos once more and checks it is h.
func (l *Log) confirmHeader(s *segment, pos int64, h batchHeader) error {
	var again [headerReadBytes]byte
	if err := readFull(s.files[kindLog], again[:], pos); err != nil {
		return err
	}
	if parseHeader(again[:]) != h {
		return fmt.Errorf("%w: two reads of the header at %d differ", errInconsistent, pos)
	}
	return nil
}

// readHeader reads the header of the batch at pos of s and checks it: a
// plausible v2 header that fits in the segment, a base offset at least low,
// offsets inside the segment, and the last offset wantLast when an index
// entry says so (wantLast >= 0).
func (l *Log) readHeader(f env.File, s *segment, pos, low, wantLast int64) (batchHeader, error) {
	if s.size-pos < headerReadBytes {
		return batchHeader{}, fmt.Errorf("%w: %d bytes at %d cannot hold a batch", errInconsistent, s.size-pos, pos)
	}
	if err := readFull(f, l.hdr[:], pos); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return batchHeader{}, fmt.Errorf("%w: %w", errInconsistent, err)
		}
		return batchHeader{}, err
	}
	h := parseHeader(l.hdr[:])
	switch {
	case !h.plausible(s.size - pos):
		return h, fmt.Errorf("%w: no batch header at %d", errInconsistent, pos)
	case h.baseOffset < low || h.lastOffset() >= s.next:
		return h, fmt.Errorf("%w: batch at %d holds offsets [%d, %d], expected within [%d, %d)",
			errInconsistent, pos, h.baseOffset, h.lastOffset(), low, s.next)
	case wantLast >= 0 && h.lastOffset() != wantLast:
		return h, fmt.Errorf("%w: batch at %d ends at offset %d, the index says %d", errInconsistent, pos, h.lastOffset(), wantLast)
	}
	return h, nil
}
