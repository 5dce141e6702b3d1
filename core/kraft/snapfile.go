package kraft

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/record"
)

// A snapshot file holds the records that recreate the metadata image at a
// snapshot id (meta.EncodeSnapshot), framed as Kafka frames a KRaft
// snapshot: RecordBatch v2 batches with offsets from 0 and the snapshot's
// epoch as partition leader epoch,
//
//	control batch: one SNAPSHOT_HEADER record (SnapshotHeaderRecord v0)
//	data batches:  the metadata records, up to snapshotBatchMaxRecords or
//	               about snapshotBatchMaxBytes each, uncompressed
//	control batch: one SNAPSHOT_FOOTER record (SnapshotFooterRecord v0)
//
// Every batch carries its CRC32C, and the footer proves the file whole: a
// file cut anywhere, or with a flipped bit, does not decode. Its name is
// Kafka's, <end offset, 20 digits>-<epoch, 10 digits>.checkpoint.
const (
	snapshotSuffix = ".checkpoint"
	// snapshotTempSuffix marks a snapshot this member is writing; it is
	// renamed to its final name once synced.
	snapshotTempSuffix = ".checkpoint.tmp"
	// snapshotPartSuffix marks a snapshot being fetched from the leader
	// (FetchSnapshot), renamed once complete, checked and synced.
	snapshotPartSuffix = ".checkpoint.part"

	snapshotOffsetDigits = 20
	snapshotEpochDigits  = 10

	// snapshotBatchMaxRecords and snapshotBatchMaxBytes bound one data
	// batch of a snapshot file.
	snapshotBatchMaxRecords = 10_000
	snapshotBatchMaxBytes   = 1 << 20
)

// snapshotName is the file name of snapshot id.
func snapshotName(id quorum.SnapshotID) string {
	return fmt.Sprintf("%020d-%010d%s", id.EndOffset, id.Epoch, snapshotSuffix)
}

// parseSnapshotName is the inverse of snapshotName; ok is false for any
// other name (temporary and partial files included).
func parseSnapshotName(name string) (quorum.SnapshotID, bool) {
	stem, found := strings.CutSuffix(name, snapshotSuffix)
	if !found || len(stem) != snapshotOffsetDigits+1+snapshotEpochDigits || stem[snapshotOffsetDigits] != '-' {
		return quorum.SnapshotID{}, false
	}
	digits := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return true
	}
	off, epoch := stem[:snapshotOffsetDigits], stem[snapshotOffsetDigits+1:]
	if !digits(off) || !digits(epoch) {
		return quorum.SnapshotID{}, false
	}
	end, err1 := strconv.ParseInt(off, 10, 64)
	ep, err2 := strconv.ParseInt(epoch, 10, 32)
	if err1 != nil || err2 != nil || end <= 0 {
		return quorum.SnapshotID{}, false
	}
	return quorum.SnapshotID{EndOffset: end, Epoch: int32(ep)}, true
}

// snapshotHeaderValue is Kafka's SnapshotHeaderRecord v0: version int16,
// LastContainedLogTimestamp int64 (unknown here: 0), no tagged fields.
func snapshotHeaderValue() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint64(b, 0)
	return append(b, 0)
}

// snapshotFooterValue is Kafka's SnapshotFooterRecord v0: version int16, no
// tagged fields.
func snapshotFooterValue() []byte { return []byte{0, 0, 0} }

// encodeSnapshotFile frames values, a snapshot's record values, as the
// content of the file of snapshot id.
func encodeSnapshotFile(id quorum.SnapshotID, values [][]byte) ([]byte, error) {
	var out []byte
	offset := int64(0)
	control := func(t record.ControlType, value []byte) error {
		b := record.NewBuilder(record.WithBaseOffset(offset), record.WithPartitionLeaderEpoch(id.Epoch), record.WithControl())
		b.AppendControl(0, t, value)
		var err error
		out, err = b.AppendTo(out)
		offset++
		return err
	}
	if err := control(record.ControlSnapshotHeader, snapshotHeaderValue()); err != nil {
		return nil, fmt.Errorf("kraft: encode snapshot %s header: %w", id, err)
	}
	for len(values) > 0 {
		b := record.NewBuilder(record.WithBaseOffset(offset), record.WithPartitionLeaderEpoch(id.Epoch))
		n, size := 0, 0
		for n < len(values) && n < snapshotBatchMaxRecords && (n == 0 || size+len(values[n]) <= snapshotBatchMaxBytes) {
			b.Append(0, nil, values[n])
			size += len(values[n])
			n++
		}
		var err error
		if out, err = b.AppendTo(out); err != nil {
			return nil, fmt.Errorf("kraft: encode snapshot %s: %w", id, err)
		}
		offset += int64(n)
		values = values[n:]
	}
	if err := control(record.ControlSnapshotFooter, snapshotFooterValue()); err != nil {
		return nil, fmt.Errorf("kraft: encode snapshot %s footer: %w", id, err)
	}
	return out, nil
}

// decodeSnapshotFile checks the content of the file of snapshot id and
// returns its record values (copies). Anything but a whole, well-framed
// file of that epoch is an error, never a panic.
func decodeSnapshotFile(id quorum.SnapshotID, data []byte) ([][]byte, error) {
	const (
		wantHeader = iota
		inBody
		afterFooter
	)
	state := wantHeader
	next := int64(0)
	var values [][]byte
	split := record.NewSplitter(data, record.MaxBatchSize, record.CheckStored)
	reader := record.NewRecordReader(record.NewDecompressor(record.DefaultMaxDecompressedBytes))
	for split.Next() {
		b := split.Batch()
		switch {
		case state == afterFooter:
			return nil, fmt.Errorf("snapshot %s: batch at byte %d after the footer", id, split.Pos())
		case b.BaseOffset() != next:
			return nil, fmt.Errorf("snapshot %s: batch at byte %d has base offset %d, want %d", id, split.Pos(), b.BaseOffset(), next)
		case b.PartitionLeaderEpoch() != id.Epoch:
			return nil, fmt.Errorf("snapshot %s: batch at byte %d has epoch %d", id, split.Pos(), b.PartitionLeaderEpoch())
		}
		if err := reader.Reset(b); err != nil {
			return nil, fmt.Errorf("snapshot %s: batch at byte %d: %w", id, split.Pos(), err)
		}
		control := b.Attributes().IsControl()
		for reader.Next() {
			rec := reader.Record()
			if rec.Offset != next {
				return nil, fmt.Errorf("snapshot %s: record at offset %d, want %d", id, rec.Offset, next)
			}
			next++
			if !control {
				if state != inBody {
					return nil, fmt.Errorf("snapshot %s: record at offset %d outside header and footer", id, rec.Offset)
				}
				values = append(values, bytes.Clone(rec.Value))
				continue
			}
			t, err := record.ParseControlKey(rec.Key)
			switch {
			case err != nil:
				return nil, fmt.Errorf("snapshot %s: control record at offset %d: %w", id, rec.Offset, err)
			case t == record.ControlSnapshotHeader && state == wantHeader:
				state = inBody
			case t == record.ControlSnapshotFooter && state == inBody:
				state = afterFooter
			default:
				return nil, fmt.Errorf("snapshot %s: unexpected control record %s at offset %d", id, t, rec.Offset)
			}
		}
		if err := reader.Err(); err != nil {
			return nil, fmt.Errorf("snapshot %s: batch at byte %d: %w", id, split.Pos(), err)
		}
	}
	if err := split.Err(); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	if state != afterFooter {
		return nil, fmt.Errorf("snapshot %s: no footer after %d bytes (cut short)", id, len(data))
	}
	return values, nil
}
