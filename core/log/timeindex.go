package log

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/record"
)

// timeIndexEntryBytes is the size of a time index entry in Kafka's layout:
// a timestamp in milliseconds (int64) and an offset relative to the
// segment's base (int32), big-endian.
const timeIndexEntryBytes = 12

// timeEntry says that the largest timestamp of the segment's batches up to
// and including the batch whose last offset is base+rel is ts, and that the
// batch reaching it first ends at base+rel (Kafka's maxTimestampSoFar and
// offsetOfMaxTimestampSoFar at the moment the entry was added). Entries
// strictly increase in ts and never decrease in rel.
type timeEntry struct {
	ts  int64
	rel int32
}

// timeIndex is a segment's time index; see offsetIndex for how it mirrors
// its file.
type timeIndex struct {
	entryList[timeEntry]
}

// maybeAdd appends (ts, rel) if ts exceeds the last entry's timestamp (or,
// for the first entry, is a timestamp at all), as Kafka's maybeAppend.
func (x *timeIndex) maybeAdd(ts int64, rel int32) {
	last, ok := x.last()
	if ok && ts <= last.ts || !ok && ts <= record.NoTimestamp {
		return
	}
	assert.That(!ok || rel >= last.rel, "time index offset %d below the previous entry's %d", rel, last.rel)
	x.entries = append(x.entries, timeEntry{ts: ts, rel: rel})
}

// floor returns the index of the entry with the largest ts <= ts, or -1.
func (x *timeIndex) floor(ts int64) int {
	return sort.Search(len(x.entries), func(i int) bool { return x.entries[i].ts > ts }) - 1
}

// truncateAtOffset drops the entries whose offset is rel or more.
func (x *timeIndex) truncateAtOffset(rel int64) {
	x.truncate(sort.Search(len(x.entries), func(i int) bool { return int64(x.entries[i].rel) >= rel }))
}

// appendTo appends e's encoding in the .timeindex file.
func (e timeEntry) appendTo(b []byte) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(b, uint64(e.ts)), uint32(e.rel))
}

// decodeTimeIndex parses a .timeindex file; maxRel bounds the relative
// offsets (exclusive).
func decodeTimeIndex(buf []byte, maxRel int64) ([]timeEntry, error) {
	parse := func(b []byte) timeEntry {
		return timeEntry{ts: int64(binary.BigEndian.Uint64(b)), rel: int32(binary.BigEndian.Uint32(b[8:]))}
	}
	return decodeEntries(buf, timeIndexEntryBytes, parse, func(i int, e timeEntry, prev *timeEntry) error {
		switch {
		case e.rel < 0 || int64(e.rel) >= maxRel:
			return fmt.Errorf("entry %d has offset %d outside the segment's %d", i, e.rel, maxRel)
		case e.ts < 0:
			return fmt.Errorf("entry %d has timestamp %d", i, e.ts)
		case prev != nil && (e.ts <= prev.ts || e.rel < prev.rel):
			return fmt.Errorf("entry %d (%d, %d) does not follow (%d, %d)", i, e.ts, e.rel, prev.ts, prev.rel)
		}
		return nil
	})
}
