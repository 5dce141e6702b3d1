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
	startEpoch int32   // epoch of the entry at start-1
	entries    []Entry // entries[i].Offset == start+i
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

// Clone returns a copy that shares no mutable state with l (entry data is
// immutable and shared).
func (l *MemoryLog) Clone() *MemoryLog {
	c := &MemoryLog{start: l.start, startEpoch: l.startEpoch, entries: append([]Entry(nil), l.entries...)}
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
	if n := len(l.entries); n > 0 {
		return OffsetAndEpoch{Offset: l.entries[n-1].Offset + 1, Epoch: l.entries[n-1].Epoch}
	}
	return OffsetAndEpoch{Offset: l.start, Epoch: l.startEpoch}
}

// EndOffsetForEpoch implements Log.
func (l *MemoryLog) EndOffsetForEpoch(epoch int32) (OffsetAndEpoch, bool) {
	// The first entry whose epoch is above epoch; the one before it is the
	// last entry of the largest epoch <= epoch.
	i := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].Epoch > epoch })
	if i > 0 {
		e := l.entries[i-1]
		return OffsetAndEpoch{Offset: e.Offset + 1, Epoch: e.Epoch}, true
	}
	if l.startEpoch <= epoch {
		return OffsetAndEpoch{Offset: l.start, Epoch: l.startEpoch}, true
	}
	return OffsetAndEpoch{}, false
}

// Entries implements Log.
func (l *MemoryLog) Entries(from int64, maxBytes int) []Entry {
	end := l.EndOffset().Offset
	assert.That(from >= l.start && from <= end, "MemoryLog.Entries: from %d outside [%d, %d]", from, l.start, end)
	var out []Entry
	size := 0
	for _, e := range l.entries[from-l.start:] {
		if len(out) > 0 && size+e.Size() > maxBytes {
			break
		}
		size += e.Size()
		out = append(out, e)
	}
	return out
}

// Append implements Log.
func (l *MemoryLog) Append(entries []Entry) {
	end := l.EndOffset()
	for _, e := range entries {
		assert.That(e.Offset == end.Offset, "MemoryLog.Append: offset %d, want %d", e.Offset, end.Offset)
		assert.That(e.Epoch >= end.Epoch, "MemoryLog.Append: epoch %d after %d", e.Epoch, end.Epoch)
		l.entries = append(l.entries, e)
		end = OffsetAndEpoch{Offset: e.Offset + 1, Epoch: e.Epoch}
	}
}

// TruncateTo implements Log.
func (l *MemoryLog) TruncateTo(offset int64) {
	end := l.EndOffset().Offset
	assert.That(offset >= l.start && offset <= end, "MemoryLog.TruncateTo: %d outside [%d, %d]", offset, l.start, end)
	n := int(offset - l.start)
	// Clip the capacity so a later append never writes into an array that a
	// returned slice still shares.
	l.entries = l.entries[:n:n]
}

// TrimPrefix implements Log.
func (l *MemoryLog) TrimPrefix(offset int64) {
	end := l.EndOffset().Offset
	assert.That(offset >= l.start && offset <= end, "MemoryLog.TrimPrefix: %d outside [%d, %d]", offset, l.start, end)
	assert.That(l.snap != nil && offset <= l.snap.id.EndOffset, "MemoryLog.TrimPrefix: %d not covered by a snapshot", offset)
	if offset == l.start {
		return
	}
	l.startEpoch = l.entries[offset-1-l.start].Epoch
	l.entries = append([]Entry(nil), l.entries[offset-l.start:]...)
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
	last := id.EndOffset - 1
	end := l.EndOffset().Offset
	keep := false
	switch {
	case last >= l.start && last < end:
		keep = l.entries[last-l.start].Epoch == id.Epoch
	case last == l.start-1:
		keep = l.startEpoch == id.Epoch
	}
	if !keep {
		l.entries, l.start, l.startEpoch = nil, id.EndOffset, id.Epoch
	}
	l.snap = complete
	return nil
}
