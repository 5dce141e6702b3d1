package log

import (
	"errors"
	"fmt"
	"io"

	"github.com/strata-log/strata/core/record"
)

// Special timestamps of ListOffsets, as Kafka defines them.
const (
	// LatestTimestamp asks for the log end offset.
	LatestTimestamp int64 = -1
	// EarliestTimestamp asks for the log start offset.
	EarliestTimestamp int64 = -2
	// MaxTimestamp asks for the offset of the record with the largest
	// timestamp (KIP-734).
	MaxTimestamp int64 = -3
)

// maxDecompressedBytes bounds what OffsetForTimestamp decompresses per
// batch to find a record inside it.
const maxDecompressedBytes = record.DefaultMaxDecompressedBytes

// TimestampOffset is the answer to OffsetForTimestamp.
type TimestampOffset struct {
	// Offset is the offset found, or -1 when no record qualifies.
	Offset int64
	// Timestamp is the found record's timestamp, or -1.
	Timestamp int64
	// LeaderEpoch is the epoch of the batch holding it (or, for the
	// latest and earliest offsets, of the epoch cache), or UndefinedEpoch.
	LeaderEpoch int32
}

var notFound = TimestampOffset{Offset: -1, Timestamp: record.NoTimestamp, LeaderEpoch: UndefinedEpoch}

// OffsetForTimestamp answers ListOffsets. LatestTimestamp gives the log end
// offset, EarliestTimestamp the log start offset, MaxTimestamp the first
// record with the log's largest timestamp; a timestamp ts >= 0 gives the
// first record at or after the log start offset whose timestamp is at
// least ts, found through the segments' largest timestamps, the time index
// and the offset index, then by reading the few batches from there (CRC
// checked) and, inside the right batch, its records. Offset is -1 when no
// record qualifies. The caller bounds the answer by the high watermark or
// the last stable offset as the isolation level requires.
func (l *Log) OffsetForTimestamp(ts int64) (TimestampOffset, error) {
	if err := l.usable(); err != nil {
		return notFound, err
	}
	switch {
	case ts == LatestTimestamp:
		leo := l.LogEndOffset()
		return TimestampOffset{Offset: leo, Timestamp: record.NoTimestamp, LeaderEpoch: l.epochs.latestEpoch()}, nil
	case ts == EarliestTimestamp:
		return TimestampOffset{Offset: l.logStart, Timestamp: record.NoTimestamp, LeaderEpoch: l.EpochForOffset(l.logStart)}, nil
	case ts == MaxTimestamp:
		var best *segment
		for _, s := range l.segs {
			if s.next > l.logStart && s.maxTs >= 0 && (best == nil || s.maxTs > best.maxTs) {
				best = s
			}
		}
		if best == nil {
			return notFound, nil
		}
		return l.searchSegment(best, best.maxTs)
	case ts < 0:
		return notFound, fmt.Errorf("log %s: %w: timestamp %d", l.dir, record.ErrInvalidRecord, ts)
	}
	for _, s := range l.segs {
		if s.next <= l.logStart || s.maxTs < ts {
			continue
		}
		found, err := l.searchSegment(s, ts)
		if err != nil || found.Offset >= 0 {
			return found, err
		}
	}
	return notFound, nil
}

// searchSegment finds in s the first record at or after the log start
// offset with a timestamp of at least ts. The index entries it starts from
// are checked against the batches they name; if they disagree (damage at
// rest that loading did not catch), the indexes are rebuilt from the
// batches and the search runs again.
func (l *Log) searchSegment(s *segment, ts int64) (TimestampOffset, error) {
	if err := l.openForRead(s); err != nil {
		return notFound, err
	}
	found, indexed, err := l.searchSegmentOnce(s, ts)
	if err != nil && indexed && (errors.Is(err, errInconsistent) || errors.Is(err, ErrCorrupt)) {
		if l.repairIndexes(s, err) == nil {
			found, _, err = l.searchSegmentOnce(s, ts)
		}
	}
	if errors.Is(err, errInconsistent) {
		err = corruptAt(s.files[kindLog].Name(), 0, err, "batches do not match the indexes")
	}
	return found, err
}

// searchSegmentOnce is one search of s; indexed reports whether it started
// from an index entry (whose damage a rebuild would repair).
func (l *Log) searchSegmentOnce(s *segment, ts int64) (TimestampOffset, bool, error) {
	from, seek := max(l.logStart, s.base), max(l.logStart, s.base)
	// Every batch before the time index entry's batch has a smaller
	// timestamp than the entry's, which is at most ts: start reading at
	// that batch (Kafka's lookup). The entry is the segment's running
	// largest timestamp and the offset that reached it, so the batch
	// holding that offset has exactly that largest timestamp.
	timeAt, timeTs := int64(-1), int64(0)
	if i := s.times.floor(ts); i >= 0 {
		e := s.times.entries[i]
		if at := s.base + int64(e.rel); at >= seek {
			seek, timeAt, timeTs = at, at, e.ts
		}
	}
	start, wantLast := int64(0), int64(-1)
	if i := s.offsets.floorOffset(seek - s.base); i >= 0 {
		e := s.offsets.entries[i]
		start, wantLast = int64(e.pos), s.base+int64(e.rel)
	}
	indexed := timeAt >= 0 || wantLast >= 0
	sc := newScanner(s.files[kindLog], start, s.size)
	for first := true; ; first = false {
		b, pos, err := sc.next()
		if errors.Is(err, io.EOF) {
			if timeAt >= 0 {
				return notFound, indexed, fmt.Errorf("%w: no batch holds offset %d of a time index entry", errInconsistent, timeAt)
			}
			return notFound, indexed, nil
		}
		if err != nil {
			return notFound, indexed, err
		}
		if first && wantLast >= 0 && b.LastOffset() != wantLast {
			return notFound, indexed, fmt.Errorf("%w: the batch at %d ends at offset %d, the index says %d", errInconsistent, pos, b.LastOffset(), wantLast)
		}
		if timeAt >= 0 && b.BaseOffset() <= timeAt {
			if b.LastOffset() >= timeAt && b.MaxTimestamp() != timeTs {
				return notFound, indexed, fmt.Errorf("%w: the batch at %d has largest timestamp %d, the time index says %d", errInconsistent, pos, b.MaxTimestamp(), timeTs)
			}
			if b.LastOffset() >= timeAt {
				timeAt = -1 // checked
			}
		}
		if timeAt >= 0 && b.BaseOffset() > timeAt {
			return notFound, indexed, fmt.Errorf("%w: no batch holds offset %d of a time index entry", errInconsistent, timeAt)
		}
		if b.LastOffset() < from || b.MaxTimestamp() < ts {
			continue
		}
		found, ok, err := l.searchBatch(b, from, ts)
		if err != nil {
			return notFound, indexed, corruptAt(s.files[kindLog].Name(), pos, fmt.Errorf("%w: %w", ErrInvalidRecords, err), "records do not parse")
		}
		if ok {
			return found, indexed, nil
		}
	}
}

// searchBatch finds in b the first record at or after from with a
// timestamp of at least ts.
func (l *Log) searchBatch(b record.Batch, from, ts int64) (TimestampOffset, bool, error) {
	if l.records == nil {
		l.dec = record.NewDecompressor(maxDecompressedBytes)
		l.records = record.NewRecordReader(l.dec)
	}
	if err := l.records.Reset(b); err != nil {
		return notFound, false, err
	}
	for l.records.Next() {
		r := l.records.Record()
		if r.Offset >= from && r.Timestamp >= ts {
			return TimestampOffset{Offset: r.Offset, Timestamp: r.Timestamp, LeaderEpoch: b.PartitionLeaderEpoch()}, true, nil
		}
	}
	return notFound, false, l.records.Err()
}
