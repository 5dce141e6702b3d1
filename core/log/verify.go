package log

import (
	"errors"
	"io"
)

// Verify reads every batch of the segments holding offsets in [from, to)
// (whole segments), checks its framing and CRC with core/record and that
// offsets increase, and returns a *CorruptError (wrapping ErrCorrupt)
// naming the file and position of the first bad one. Reads are repeated
// and compared, so a transient read flip is not reported. It reads the
// data on the loop: run it over a bounded range at a time.
//
// Read does not check CRCs (a fetch sends stored bytes as they are, as
// Kafka does; clients check them); recovery checks every batch it scans.
// Verify is for everything else: scrubbing, tools and tests.
func (l *Log) Verify(from, to int64) error {
	if err := l.usable(); err != nil {
		return err
	}
	for i := l.segmentFor(from); i < len(l.segs) && l.segs[i].base < to; i++ {
		s := l.segs[i]
		if err := l.openForRead(s); err != nil {
			return err
		}
		f := s.files[kindLog]
		sc := newScanner(f, 0, s.size)
		next := s.base
		for {
			b, pos, err := sc.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			if b.BaseOffset() < next || b.LastOffset() >= s.next {
				return corruptAt(f.Name(), pos, nil, "batch offsets [%d, %d] out of order (expected from %d, below %d)",
					b.BaseOffset(), b.LastOffset(), next, s.next)
			}
			next = b.LastOffset() + 1
		}
	}
	return nil
}
