package kraft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/quorum"
)

// The journal is the stop-gap durable form of the metadata log until it is
// backed by core/log: an append-only file of entries, each
//
//	length uint32 | crc32c uint32 | kind byte | payload
//
// where length counts kind and payload and the CRC covers them. An append
// entry's payload is the batches as RecordBatch v2 bytes
// (quorum.EncodeBatches); a truncate entry's is the offset truncated to.
// Recovery replays the entries into a quorum.MemoryLog and cuts the file at
// the first entry that is incomplete or fails its CRC (a torn tail: the
// disk keeps only a prefix of unsynced appends).
const (
	journalFile         = "metadata.journal"
	journalHeaderBytes  = 9
	journalKindAppend   = 1
	journalKindTruncate = 2
	// journalEntryMaxBytes bounds one entry; larger lengths are corrupt.
	journalEntryMaxBytes = 64 << 20
	// readRetries re-reads an entry whose CRC fails, because the disk may
	// flip bits on read; an entry that stays bad is a torn tail.
	readRetries = 3
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errSnapshotsUnsupported: the journal cannot hold snapshots yet.
var errSnapshotsUnsupported = errors.New("kraft: snapshots are not supported by the journal yet")

// journalLog is the Raft's Log: a MemoryLog whose every mutation is also
// appended to the journal file. Writes reach the page cache synchronously;
// durability comes from sync, which the member calls for Ready.SyncLog.
type journalLog struct {
	*quorum.MemoryLog
	file env.File
	// failed is set when a journal write failed; the member stops.
	failed error
}

var _ quorum.Log = (*journalLog)(nil)

// openJournal opens (creating) the journal and recovers the log from it.
func openJournal(disk env.Disk) (*journalLog, error) {
	f, err := disk.Open(journalFile, true)
	if err != nil {
		return nil, fmt.Errorf("kraft: open journal: %w", err)
	}
	j := &journalLog{MemoryLog: quorum.NewMemoryLog(), file: f}
	valid, err := j.recover()
	if err != nil {
		return nil, err
	}
	if valid < f.Size() {
		if err := f.Truncate(valid); err != nil {
			return nil, fmt.Errorf("kraft: truncate journal torn tail: %w", err)
		}
	}
	return j, nil
}

// recover replays the journal and returns the length of its valid prefix.
func (j *journalLog) recover() (int64, error) {
	size := j.file.Size()
	off := int64(0)
	hdr := make([]byte, journalHeaderBytes)
	for off+journalHeaderBytes <= size {
		body, ok, err := j.readEntry(hdr, off, size)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		kind, payload := body[0], body[1:]
		switch kind {
		case journalKindAppend:
			batches, err := quorum.DecodeBatches(payload)
			if err != nil || len(batches) == 0 || batches[0].BaseOffset != j.MemoryLog.EndOffset().Offset {
				return 0, fmt.Errorf("kraft: journal entry at %d does not continue the log: %v", off, err)
			}
			j.MemoryLog.Append(batches)
		case journalKindTruncate:
			if len(payload) != 8 {
				return 0, fmt.Errorf("kraft: journal truncate entry at %d has %d bytes", off, len(payload))
			}
			to := int64(binary.BigEndian.Uint64(payload))
			if to < j.MemoryLog.StartOffset() || to > j.MemoryLog.EndOffset().Offset || j.MemoryLog.FloorBatchBoundary(to) != to {
				return 0, fmt.Errorf("kraft: journal truncate entry at %d to %d is not a batch boundary", off, to)
			}
			j.MemoryLog.TruncateTo(to)
		default:
			return 0, fmt.Errorf("kraft: journal entry at %d has unknown kind %d", off, kind)
		}
		off += 8 + int64(len(body)) // length and CRC, then kind and payload
	}
	return off, nil
}

// readEntry reads the entry at off; ok is false for a torn tail. It
// returns kind followed by payload.
func (j *journalLog) readEntry(hdr []byte, off, size int64) ([]byte, bool, error) {
	for try := 0; try < readRetries; try++ {
		if _, err := j.file.ReadAt(hdr, off); err != nil {
			return nil, false, fmt.Errorf("kraft: read journal at %d: %w", off, err)
		}
		length := int64(binary.BigEndian.Uint32(hdr[0:4]))
		if length < 1 || length > journalEntryMaxBytes || off+8+length > size {
			continue
		}
		body := make([]byte, length)
		if _, err := j.file.ReadAt(body, off+8); err != nil {
			return nil, false, fmt.Errorf("kraft: read journal at %d: %w", off, err)
		}
		if crc32.Checksum(body, castagnoli) == binary.BigEndian.Uint32(hdr[4:8]) {
			return body, true, nil
		}
	}
	return nil, false, nil
}

func (j *journalLog) write(kind byte, payload []byte) {
	if j.failed != nil {
		return
	}
	entry := make([]byte, 8, journalHeaderBytes+len(payload))
	entry = append(entry, kind)
	entry = append(entry, payload...)
	binary.BigEndian.PutUint32(entry[0:4], uint32(len(entry)-8))
	binary.BigEndian.PutUint32(entry[4:8], crc32.Checksum(entry[8:], castagnoli))
	if _, err := j.file.Append(entry); err != nil {
		// The page cache and the journal now disagree: the member must
		// stop before the Raft acknowledges anything past this point.
		j.failed = fmt.Errorf("kraft: journal append: %w", err)
	}
}

// Append implements quorum.Log.
func (j *journalLog) Append(batches []quorum.Batch) {
	if len(batches) == 0 {
		return
	}
	data, err := quorum.EncodeBatches(batches)
	if err != nil {
		j.failed = fmt.Errorf("kraft: encode batches: %w", err)
	} else {
		j.write(journalKindAppend, data)
	}
	j.MemoryLog.Append(batches)
}

// TruncateTo implements quorum.Log.
func (j *journalLog) TruncateTo(offset int64) {
	if offset == j.MemoryLog.EndOffset().Offset {
		return
	}
	j.write(journalKindTruncate, binary.BigEndian.AppendUint64(nil, uint64(offset)))
	j.MemoryLog.TruncateTo(offset)
}

// TrimPrefix implements quorum.Log. The member never reports a snapshot,
// so the Raft never trims.
func (j *journalLog) TrimPrefix(offset int64) {
	if offset > j.MemoryLog.StartOffset() {
		j.failed = errSnapshotsUnsupported
	}
}

// WriteSnapshotChunk implements quorum.Log.
func (j *journalLog) WriteSnapshotChunk(quorum.SnapshotID, int64, []byte) error {
	return errSnapshotsUnsupported
}

// InstallSnapshot implements quorum.Log.
func (j *journalLog) InstallSnapshot(quorum.SnapshotID) error {
	return errSnapshotsUnsupported
}
