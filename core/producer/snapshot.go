package producer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/strata-log/strata/core/record"
)

// A producer snapshot holds the state for the log below its offset in
// Kafka's format (ProducerSnapshot.json, version 1; written by
// ProducerStateManager.writeSnapshot), all integers big-endian:
//
//	version                    int16   1
//	crc                        uint32  CRC32C of every byte after this field
//	entry count                int32
//	entries, count times, 46 bytes each:
//	  producer id              int64
//	  epoch                    int16
//	  last sequence            int32   of the last batch, or -1
//	  last offset              int64   of the last batch, or -1
//	  offset delta             int32   of the last batch, or 0
//	  timestamp                int64   the producer's LastTimestamp
//	  coordinator epoch        int32
//	  current txn first offset int64   or -1
//
// Only the last batch of each producer is kept, as in Kafka. Strata writes
// the entries sorted by producer id (Kafka in hash map order); readers
// accept any order. Decoding is strict where Kafka is lenient: bytes after
// the last entry, a producer id listed twice or a field no writer
// produces make the file corrupt.
const (
	snapshotVersion       = 1
	snapshotCRCOffset     = 2                         // after the version
	snapshotEntriesOffset = 6                         // after the CRC; the CRC covers from here
	snapshotHeaderBytes   = snapshotEntriesOffset + 4 // with the entry count
	snapshotEntryBytes    = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeSnapshot returns the state in the snapshot format, producers sorted
// by id. It takes O(n log n) time for n producers (the sort) and one
// allocation of the final size.
func (s *State) EncodeSnapshot() []byte {
	ids := s.ids()
	buf := make([]byte, snapshotHeaderBytes, snapshotHeaderBytes+len(ids)*snapshotEntryBytes)
	binary.BigEndian.PutUint16(buf[0:], snapshotVersion)
	binary.BigEndian.PutUint32(buf[snapshotEntriesOffset:], uint32(len(ids)))
	for _, id := range ids {
		e := s.producers[id]
		lastSeq, lastOffset, delta := record.NoSequence, int64(-1), int32(0)
		if m, ok := e.last(); ok {
			lastSeq, lastOffset, delta = m.LastSeq, m.LastOffset, m.OffsetDelta
		}
		buf = appendEntry(buf, id, e.epoch, lastSeq, lastOffset, delta, e.lastTimestamp, e.coordinatorEpoch, e.currentTxnFirstOffset)
	}
	binary.BigEndian.PutUint32(buf[snapshotCRCOffset:], crc32.Checksum(buf[snapshotEntriesOffset:], castagnoli))
	return buf
}

func appendEntry(buf []byte, id int64, epoch int16, lastSeq int32, lastOffset int64, delta int32, timestamp int64, coordinatorEpoch int32, txnFirst int64) []byte {
	buf = binary.BigEndian.AppendUint64(buf, uint64(id))
	buf = binary.BigEndian.AppendUint16(buf, uint16(epoch))
	buf = binary.BigEndian.AppendUint32(buf, uint32(lastSeq))
	buf = binary.BigEndian.AppendUint64(buf, uint64(lastOffset))
	buf = binary.BigEndian.AppendUint32(buf, uint32(delta))
	buf = binary.BigEndian.AppendUint64(buf, uint64(timestamp))
	buf = binary.BigEndian.AppendUint32(buf, uint32(coordinatorEpoch))
	return binary.BigEndian.AppendUint64(buf, uint64(txnFirst))
}

// DecodeSnapshot returns the producers of a snapshot in file order, each
// with at most its last batch. Anything but a whole, well-formed version 1
// snapshot gets an error wrapping ErrCorruptSnapshot, never a panic; the
// work and memory are linear in len(data).
func DecodeSnapshot(data []byte) ([]Producer, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrCorruptSnapshot, fmt.Sprintf(format, args...))
	}
	if len(data) < snapshotHeaderBytes {
		return nil, corrupt("%d bytes, a snapshot has at least %d", len(data), snapshotHeaderBytes)
	}
	if v := int16(binary.BigEndian.Uint16(data)); v != snapshotVersion {
		return nil, corrupt("version %d, want %d", v, snapshotVersion)
	}
	count := int64(int32(binary.BigEndian.Uint32(data[snapshotEntriesOffset:])))
	if count < 0 {
		return nil, corrupt("entry count %d is negative", count)
	}
	if want := snapshotHeaderBytes + count*snapshotEntryBytes; want != int64(len(data)) {
		return nil, corrupt("%d entries take %d bytes, the snapshot has %d", count, want, len(data))
	}
	if stored, computed := binary.BigEndian.Uint32(data[snapshotCRCOffset:]), crc32.Checksum(data[snapshotEntriesOffset:], castagnoli); stored != computed {
		return nil, corrupt("stored crc32c 0x%08x, computed 0x%08x", stored, computed)
	}
	out := make([]Producer, 0, count)
	seen := make(map[int64]struct{}, count)
	for i, p := 0, data[snapshotHeaderBytes:]; i < int(count); i, p = i+1, p[snapshotEntryBytes:] {
		pr := Producer{
			ID:                    int64(binary.BigEndian.Uint64(p[0:])),
			Epoch:                 int16(binary.BigEndian.Uint16(p[8:])),
			CoordinatorEpoch:      int32(binary.BigEndian.Uint32(p[34:])),
			LastTimestamp:         int64(binary.BigEndian.Uint64(p[26:])),
			CurrentTxnFirstOffset: int64(binary.BigEndian.Uint64(p[38:])),
		}
		m := BatchMetadata{
			LastSeq:     int32(binary.BigEndian.Uint32(p[10:])),
			LastOffset:  int64(binary.BigEndian.Uint64(p[14:])),
			OffsetDelta: int32(binary.BigEndian.Uint32(p[22:])),
			Timestamp:   pr.LastTimestamp,
		}
		switch {
		case pr.ID < 0:
			return nil, corrupt("entry %d: producer id %d is negative", i, pr.ID)
		case m.LastOffset < -1:
			return nil, corrupt("entry %d: producer %d: last offset %d", i, pr.ID, m.LastOffset)
		case m.OffsetDelta < 0 || m.LastOffset >= 0 && m.FirstOffset() < 0:
			return nil, corrupt("entry %d: producer %d: offset delta %d before last offset %d", i, pr.ID, m.OffsetDelta, m.LastOffset)
		case pr.CurrentTxnFirstOffset < noTxn:
			return nil, corrupt("entry %d: producer %d: transaction first offset %d", i, pr.ID, pr.CurrentTxnFirstOffset)
		}
		if _, dup := seen[pr.ID]; dup {
			return nil, corrupt("entry %d: producer %d listed twice", i, pr.ID)
		}
		seen[pr.ID] = struct{}{}
		if m.LastOffset >= 0 {
			pr.Batches = []BatchMetadata{m}
		}
		out = append(out, pr)
	}
	return out, nil
}

// Restore returns the state for the log below offset made of producers (a
// decoded snapshot named by offset), without those that have expired at
// now (Kafka drops them when it loads a snapshot). A producer with a batch
// or transaction at or beyond offset, more than 5 batches, batches out of
// order, or listed twice, gets an error wrapping ErrCorruptSnapshot.
func Restore(cfg Config, offset int64, producers []Producer, now time.Time) (*State, error) {
	if offset < 0 {
		return nil, fmt.Errorf("%w: snapshot at negative offset %d", ErrCorruptSnapshot, offset)
	}
	s := NewState(cfg, offset)
	for _, p := range producers {
		if err := validateRestored(p, offset); err != nil {
			return nil, fmt.Errorf("%w: snapshot at offset %d: producer %d: %w", ErrCorruptSnapshot, offset, p.ID, err)
		}
		if _, dup := s.producers[p.ID]; dup {
			return nil, fmt.Errorf("%w: snapshot at offset %d: producer %d listed twice", ErrCorruptSnapshot, offset, p.ID)
		}
		e := newEntry(p.Epoch)
		copy(e.batches[:], p.Batches)
		e.count = len(p.Batches)
		e.coordinatorEpoch = p.CoordinatorEpoch
		e.lastTimestamp = p.LastTimestamp
		e.currentTxnFirstOffset = p.CurrentTxnFirstOffset
		if !s.expired(e, now) {
			s.producers[p.ID] = e
			if e.currentTxnFirstOffset != noTxn {
				s.addOngoing(p.ID, e.currentTxnFirstOffset)
			}
		}
	}
	return s, nil
}

func validateRestored(p Producer, offset int64) error {
	switch {
	case p.ID < 0:
		return errors.New("negative producer id")
	case len(p.Batches) > maxBatchesRetained:
		return fmt.Errorf("%d batches, at most %d are kept", len(p.Batches), maxBatchesRetained)
	case p.CurrentTxnFirstOffset < noTxn || p.CurrentTxnFirstOffset >= offset:
		return fmt.Errorf("transaction first offset %d outside [-1, %d)", p.CurrentTxnFirstOffset, offset)
	}
	prev := int64(-1)
	for _, m := range p.Batches {
		if m.OffsetDelta < 0 || m.FirstOffset() <= prev || m.LastOffset >= offset {
			return fmt.Errorf("batch at offsets %d..%d after offset %d, snapshot at %d", m.FirstOffset(), m.LastOffset, prev, offset)
		}
		prev = m.LastOffset
	}
	return nil
}
