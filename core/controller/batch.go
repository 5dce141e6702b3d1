package controller

import (
	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/meta"
)

// batch is a proposal being built against the speculative image. Records
// are encoded and replayed into a scratch delta as they are added, so the
// controller never proposes a record the image would refuse: a refusal is
// a controller bug and fails an assertion.
type batch struct {
	first   int64
	delta   *meta.Delta
	records []meta.Record
	values  [][]byte
	bytes   int
}

// openBatch starts the next batch on top of the speculative image.
func (c *Controller) openBatch() *batch {
	assert.That(c.leader, "controller: batch opened off the leader")
	return &batch{first: c.nextOffset, delta: c.spec.NewDelta()}
}

// nextOffset is the offset the next record added to b will have.
func (b *batch) nextOffset() int64 { return b.first + int64(len(b.records)) }

// empty reports whether b holds no record.
func (b *batch) empty() bool { return len(b.records) == 0 }

// add appends recs to b as a unit when they fit within the batch bounds,
// and reports whether they did; b is unchanged when they do not.
func (c *Controller) add(b *batch, recs ...meta.Record) bool {
	if len(b.records)+len(recs) > c.cfg.MaxRecordsPerBatch {
		return false
	}
	values := make([][]byte, len(recs))
	size := 0
	for i, r := range recs {
		values[i] = meta.EncodeRecord(nil, r)
		size += len(values[i])
	}
	if b.bytes+size > c.cfg.MaxBatchBytes {
		return false
	}
	for _, r := range recs {
		if err := b.delta.Replay(r); err != nil {
			assert.Never("controller: generated an invalid record: %v", err)
		}
	}
	b.records = append(b.records, recs...)
	b.values = append(b.values, values...)
	b.bytes += size
	return true
}

// addSplit appends recs to *b, sealing *b and opening the next batch first
// when they do not fit. For work that need not be atomic (moving the
// leaderships of a fenced broker), never for a request's own records.
func (c *Controller) addSplit(b **batch, recs ...meta.Record) {
	if c.add(*b, recs...) {
		return
	}
	assert.That(!(*b).empty(), "controller: %d records do not fit in an empty batch", len(recs))
	c.seal(*b)
	*b = c.openBatch()
	assert.That(c.add(*b, recs...), "controller: %d records do not fit in an empty batch", len(recs))
}

// seal turns b into a Proposal: its records go to the pending list and its
// image becomes the speculative image. An empty batch proposes nothing.
func (c *Controller) seal(b *batch) {
	if b.empty() {
		return
	}
	assert.That(b.first == c.nextOffset && b.delta.Base() == c.spec,
		"controller: batch at %d sealed out of order (next offset %d)", b.first, c.nextOffset)
	last := b.nextOffset() - 1
	p := Proposal{Epoch: c.epoch, FirstOffset: b.first, LastOffset: last, Records: b.records, Values: b.values}
	img := b.delta.Apply(meta.Position{Offset: last, Epoch: c.epoch})
	c.pending = append(c.pending, &pendingBatch{proposal: p, image: img})
	c.pendingRecords += len(b.records)
	c.out.Proposals = append(c.out.Proposals, p)
	c.spec = img
	c.nextOffset = last + 1
	c.lastWritten = last
}
