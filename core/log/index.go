package log

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/strata-log/strata/core/assert"
)

// offsetIndexEntryBytes is the size of an offset index entry in Kafka's
// layout: the offset relative to the segment's base (int32) and the byte
// position in the segment file (int32), big-endian.
const offsetIndexEntryBytes = 8

// offsetEntry maps a batch to where it starts: rel is the batch's last
// offset minus the segment's base offset (as Kafka indexes it), pos the
// position of the batch's first byte. A lookup for offset o starts at the
// entry with the largest rel <= o-base: every batch before that position
// ends below o, so the batch holding o is at or after it.
type offsetEntry struct {
	rel int32
	pos int32
}

// offsetIndex is a segment's sparse offset index, held in memory while the
// segment is open, and mirrored in its .index file: the first written
// entries are in the file, the rest are still to be appended (index
// writes are batched; see Log.writeIndexes).
type offsetIndex struct {
	entryList[offsetEntry]
}

// entryList is the entries of an index in memory; the first written of
// them are in its file.
type entryList[E interface{ appendTo([]byte) []byte }] struct {
	entries []E
	written int
}

// last returns the last entry, if any.
func (x *entryList[E]) last() (E, bool) {
	if len(x.entries) == 0 {
		var none E
		return none, false
	}
	return x.entries[len(x.entries)-1], true
}

// truncate keeps the first n entries.
func (x *entryList[E]) truncate(n int) {
	x.entries = x.entries[:n]
	x.written = min(x.written, n)
}

// unwritten encodes the entries not yet in the file.
func (x *entryList[E]) unwritten(dst []byte) []byte {
	for _, e := range x.entries[x.written:] {
		dst = e.appendTo(dst)
	}
	return dst
}

// add appends an entry. Entries strictly increase in both fields.
func (x *offsetIndex) add(rel, pos int32) {
	if n := len(x.entries); n > 0 {
		last := x.entries[n-1]
		assert.That(rel > last.rel && pos > last.pos,
			"offset index entry (%d, %d) does not follow (%d, %d)", rel, pos, last.rel, last.pos)
	}
	x.entries = append(x.entries, offsetEntry{rel: rel, pos: pos})
}

// floorOffset returns the index of the entry with the largest rel <= rel,
// or -1.
func (x *offsetIndex) floorOffset(rel int64) int {
	return sort.Search(len(x.entries), func(i int) bool { return int64(x.entries[i].rel) > rel }) - 1
}

// floorPosition returns the index of the entry with the largest pos <= pos,
// or -1.
func (x *offsetIndex) floorPosition(pos int64) int {
	return sort.Search(len(x.entries), func(i int) bool { return int64(x.entries[i].pos) > pos }) - 1
}

// truncateAtPosition drops the entries of batches at or after pos.
func (x *offsetIndex) truncateAtPosition(pos int64) {
	x.truncate(x.floorPosition(pos-1) + 1)
}

// appendTo appends e's encoding in the .index file.
func (e offsetEntry) appendTo(b []byte) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(b, uint32(e.rel)), uint32(e.pos))
}

// decodeOffsetIndex parses an .index file of a segment whose log holds
// size bytes. It returns an error when the content cannot be a valid
// index: a partial entry, entries that do not strictly increase, or a
// position beyond the log.
func decodeOffsetIndex(buf []byte, size int64) ([]offsetEntry, error) {
	parse := func(b []byte) offsetEntry {
		return offsetEntry{rel: int32(binary.BigEndian.Uint32(b)), pos: int32(binary.BigEndian.Uint32(b[4:]))}
	}
	return decodeEntries(buf, offsetIndexEntryBytes, parse, func(i int, e offsetEntry, prev *offsetEntry) error {
		switch {
		case e.rel < 0 || e.pos < 0:
			return fmt.Errorf("entry %d (%d, %d) is negative", i, e.rel, e.pos)
		case int64(e.pos) >= size:
			return fmt.Errorf("entry %d points at position %d, the log holds %d bytes", i, e.pos, size)
		case prev != nil && (e.rel <= prev.rel || e.pos <= prev.pos):
			return fmt.Errorf("entry %d (%d, %d) does not follow (%d, %d)", i, e.rel, e.pos, prev.rel, prev.pos)
		}
		return nil
	})
}

// decodeEntries parses buf as index entries of entryBytes bytes each,
// which check accepts one by one (prev is the entry before, nil for the
// first); a partial entry is an error.
func decodeEntries[E any](buf []byte, entryBytes int, parse func([]byte) E, check func(i int, e E, prev *E) error) ([]E, error) {
	if len(buf)%entryBytes != 0 {
		return nil, fmt.Errorf("size %d is not a multiple of %d", len(buf), entryBytes)
	}
	entries := make([]E, 0, len(buf)/entryBytes)
	for i := 0; i < len(buf); i += entryBytes {
		e := parse(buf[i:])
		var prev *E
		if n := len(entries); n > 0 {
			prev = &entries[n-1]
		}
		if err := check(len(entries), e, prev); err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, nil
}
