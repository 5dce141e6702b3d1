package quorum

import (
	"fmt"
	"sort"

	"github.com/strata-log/strata/core/assert"
)

// MemoryLog is a Log in memory, for tests and the simulator. Clone copies it,
// which is how a test keeps the durable image of a node's log.
type MemoryLog struct {
	start      int64
	startEpoch int32   // epoch of the batch ending at start
	batches    []Batch // contiguous from start
	snap       *memSnapshot
	partial    *memSnapshot // being fetched, chunk by chunk
	staged     *memSnapshot // written whole by the state machine
}

type memSnapshot struct {
	id   SnapshotID
	data []byte
}

var _ Log = (*MemoryLog)(nil)

// NewMemoryLog returns an empty log.
func NewMemoryLog() *MemoryLog { return &MemoryLog{} }

// Clone returns a copy that shares no mutable state with l (record data is
// immutable and shared).
func (l *MemoryLog) Clone() *MemoryLog {
	c := &MemoryLog{start: l.start, startEpoch: l.startEpoch, batches: append([]Batch(nil), l.batches...)}
	if l.snap != nil {
		s := *l.snap
		c.snap = &s
	}
	if l.partial != nil {
		p := memSnapshot{id: l.partial.id, data: append([]byte(nil), l.partial.data...)}
		c.partial = &p
	}
	if l.staged != nil {
		s := *l.staged
		c.staged = &s
	}
	return c
}

// StartOffset implements Log.
func (l *MemoryLog) StartOffset() int64 { return l.start }

// EndOffset implements Log.
func (l *MemoryLog) EndOffset() OffsetAndEpoch {
	if n := len(l.batches); n > 0 {
		return l.batches[n-1].End()
	}
	return OffsetAndEpoch{Offset: l.start, Epoch: l.startEpoch}
}

// EndOffsetForEpoch implements Log.
func (l *MemoryLog) EndOffsetForEpoch(epoch int32) (OffsetAndEpoch, bool) {
	// The first batch whose epoch is above epoch; the one before it is the
	// last batch of the largest epoch <= epoch.
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].Epoch > epoch })
	if i > 0 {
		return l.batches[i-1].End(), true
	}
	if l.startEpoch <= epoch {
		return OffsetAndEpoch{Offset: l.start, Epoch: l.startEpoch}, true
	}
	return OffsetAndEpoch{}, false
}

// index returns the index of the batch holding offset, or len(l.batches)
// for the end offset.
func (l *MemoryLog) index(offset int64) int {
	end := l.EndOffset().Offset
	assert.That(offset >= l.start && offset <= end, "MemoryLog: offset %d outside [%d, %d]", offset, l.start, end)
	return sort.Search(len(l.batches), func(i int) bool { return l.batches[i].EndOffset() > offset })
}

// FloorBatchBoundary implements Log.
func (l *MemoryLog) FloorBatchBoundary(offset int64) int64 {
	if i := l.index(offset); i < len(l.batches) {
		return l.batches[i].BaseOffset
	}
	return offset
}

// boundaryIndex returns the index of the batch starting at offset (the
// batch count at the end offset), asserting that offset is a boundary.
func (l *MemoryLog) boundaryIndex(op string, offset int64) int {
	i := l.index(offset)
	if i < len(l.batches) && l.batches[i].BaseOffset != offset {
		assert.Never("MemoryLog.%s: offset %d inside batch %s", op, offset, l.batches[i])
	}
	return i
}

// Batches implements Log.
func (l *MemoryLog) Batches(from int64, maxBytes int) []Batch {
	var out []Batch
	size := 0
	for _, b := range l.batches[l.boundaryIndex("Batches", from):] {
		if len(out) > 0 && size+b.Size() > maxBytes {
			break
		}
		size += b.Size()
		out = append(out, b)
	}
	return out
}

// Append implements Log.
func (l *MemoryLog) Append(batches []Batch) {
	end := l.EndOffset()
	for _, b := range batches {
		assert.That(b.BaseOffset == end.Offset, "MemoryLog.Append: batch %s at %d, want %d", b, b.BaseOffset, end.Offset)
		assert.That(b.Epoch >= end.Epoch, "MemoryLog.Append: epoch %d after %d", b.Epoch, end.Epoch)
		assert.That(len(b.Records) > 0, "MemoryLog.Append: empty batch at %d", b.BaseOffset)
		l.batches = append(l.batches, b)
		end = b.End()
	}
}

// TruncateTo implements Log.
func (l *MemoryLog) TruncateTo(offset int64) {
	n := l.boundaryIndex("TruncateTo", offset)
	// Clip the capacity so a later append never writes into an array that a
	// returned slice still shares.
	l.batches = l.batches[:n:n]
}

// TrimPrefix implements Log.
func (l *MemoryLog) TrimPrefix(offset int64) {
	n := l.boundaryIndex("TrimPrefix", offset)
	assert.That(l.snap != nil && offset <= l.snap.id.EndOffset, "MemoryLog.TrimPrefix: %d not covered by a snapshot", offset)
	if n == 0 {
		return
	}
	l.startEpoch = l.batches[n-1].Epoch
	l.batches = append([]Batch(nil), l.batches[n:]...)
	l.start = offset
}

// LatestSnapshot implements Log.
func (l *MemoryLog) LatestSnapshot() (SnapshotID, bool) {
	if l.snap == nil {
		return SnapshotID{}, false
	}
	return l.snap.id, true
}

// SnapshotData returns the bytes of the latest snapshot.
func (l *MemoryLog) SnapshotData() (SnapshotID, []byte, bool) {
	if l.snap == nil {
		return SnapshotID{}, nil, false
	}
	return l.snap.id, l.snap.data, true
}

// ReadSnapshot implements Log.
func (l *MemoryLog) ReadSnapshot(id SnapshotID, position int64, maxBytes int) ([]byte, int64, error) {
	if l.snap == nil || l.snap.id != id {
		return nil, 0, fmt.Errorf("snapshot %s not held", id)
	}
	size := int64(len(l.snap.data))
	if position < 0 || position > size {
		return nil, size, fmt.Errorf("position %d outside snapshot %s of %d bytes", position, id, size)
	}
	end := min(size, position+int64(maxBytes))
	return l.snap.data[position:end:end], size, nil
}

// SaveSnapshot stores a complete snapshot written by the state machine, as
// the driver would before calling Raft.SnapshotTaken.
func (l *MemoryLog) SaveSnapshot(id SnapshotID, data []byte) {
	l.staged = &memSnapshot{id: id, data: append([]byte(nil), data...)}
}

// WriteSnapshotChunk implements Log.
func (l *MemoryLog) WriteSnapshotChunk(id SnapshotID, position int64, data []byte) error {
	if position == 0 {
		l.partial = &memSnapshot{id: id}
	}
	if l.partial == nil || l.partial.id != id || int64(len(l.partial.data)) != position {
		return fmt.Errorf("chunk at %d of snapshot %s does not continue the partial snapshot", position, id)
	}
	l.partial.data = append(l.partial.data, data...)
	return nil
}

// InstallSnapshot implements Log.
func (l *MemoryLog) InstallSnapshot(id SnapshotID) error {
	if l.snap != nil && id.EndOffset < l.snap.id.EndOffset {
		return fmt.Errorf("snapshot %s is older than %s", id, l.snap.id)
	}
	var complete *memSnapshot
	switch {
	case l.staged != nil && l.staged.id == id:
		complete, l.staged = l.staged, nil
	case l.partial != nil && l.partial.id == id:
		complete, l.partial = l.partial, nil
	default:
		return fmt.Errorf("snapshot %s not written", id)
	}
	end := l.EndOffset().Offset
	keep := false
	switch {
	case id.EndOffset == l.start:
		keep = l.startEpoch == id.Epoch
	case id.EndOffset > l.start && id.EndOffset <= end:
		b := l.batches[l.index(id.EndOffset-1)]
		keep = b.EndOffset() == id.EndOffset && b.Epoch == id.Epoch
	}
	if !keep {
		l.batches, l.start, l.startEpoch = nil, id.EndOffset, id.Epoch
	}
	l.snap = complete
	return nil
}
