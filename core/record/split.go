package record

import "github.com/strata-log/strata/core/assert"

// Check says how much of each batch a Splitter verifies before yielding it.
type Check uint8

const (
	// CheckFraming verifies lengths and magic only (ReadBatch): for bytes
	// whose CRC the caller checks itself or already trusts.
	CheckFraming Check = iota + 1
	// CheckStored also runs ValidateStored on each batch, reading all of its
	// bytes: for recovery of a segment and for batches fetched from a peer.
	CheckStored
)

// Splitter walks a concatenation of batches (a segment, a fetch response, a
// replicated chunk) without copying, yielding one Batch at a time. It stops
// at the end of the buffer or at the first batch that fails its Check, and
// then reports how many leading bytes were whole batches: recovery truncates
// a torn tail there, and a consumer ignores a batch a fetch cut short.
//
//	s := record.NewSplitter(buf, maxBatchBytes, record.CheckStored)
//	for s.Next() {
//		use(s.Batch())
//	}
//	if err := s.Err(); err != nil {
//		truncateTo(s.ValidBytes())
//	}
type Splitter struct {
	buf           []byte
	maxBatchBytes int
	check         Check
	pos           int // start of the batch Next will read
	batchPos      int // start of the batch Batch returns
	batch         Batch
	err           error
}

// NewSplitter returns a Splitter over buf. maxBatchBytes bounds each batch
// as in ReadBatch and must be positive.
func NewSplitter(buf []byte, maxBatchBytes int, check Check) Splitter {
	assert.That(maxBatchBytes > 0, "record.NewSplitter: maxBatchBytes %d must be positive", maxBatchBytes)
	assert.That(check == CheckFraming || check == CheckStored, "record.NewSplitter: unknown check %d", check)
	return Splitter{buf: buf, maxBatchBytes: maxBatchBytes, check: check}
}

// Next advances to the next batch and reports whether there is one. It
// returns false at the end of the buffer (Err is nil) or at a batch that
// fails its check (Err says why).
func (s *Splitter) Next() bool {
	if s.err != nil || s.pos >= len(s.buf) {
		return false
	}
	b, err := ReadBatch(s.buf[s.pos:], s.maxBatchBytes)
	if err == nil && s.check == CheckStored {
		err = b.ValidateStored()
	}
	if err != nil {
		s.err = shift(err, s.pos)
		return false
	}
	s.batch, s.batchPos = b, s.pos
	s.pos += b.Size()
	return true
}

// Batch returns the batch Next moved to.
func (s *Splitter) Batch() Batch { return s.batch }

// Pos returns the position in the buffer where the current batch starts.
func (s *Splitter) Pos() int { return s.batchPos }

// ValidBytes returns how many leading bytes of the buffer are batches Next
// has yielded: after a failure, where the first bad batch starts.
func (s *Splitter) ValidBytes() int { return s.pos }

// Err returns nil if the buffer ended exactly after a batch, or the error of
// the batch that stopped the Splitter. ErrTruncated means the buffer ends
// inside a batch.
func (s *Splitter) Err() error { return s.err }
