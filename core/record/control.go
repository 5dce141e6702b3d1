package record

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the type of a control record, from its key.
type ControlType int16

// Control record types. Abort and Commit are transaction markers; the rest
// are KRaft's, written to the metadata log.
const (
	ControlAbort          ControlType = 0
	ControlCommit         ControlType = 1
	ControlLeaderChange   ControlType = 2
	ControlSnapshotHeader ControlType = 3
	ControlSnapshotFooter ControlType = 4
	ControlKRaftVersion   ControlType = 5
	ControlKRaftVoters    ControlType = 6
)

// String returns Kafka's name for t.
func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	case ControlLeaderChange:
		return "LEADER_CHANGE"
	case ControlSnapshotHeader:
		return "SNAPSHOT_HEADER"
	case ControlSnapshotFooter:
		return "SNAPSHOT_FOOTER"
	case ControlKRaftVersion:
		return "KRAFT_VERSION"
	case ControlKRaftVoters:
		return "KRAFT_VOTERS"
	}
	return fmt.Sprintf("UNKNOWN(%d)", int16(t))
}

// Control record layouts, in bytes.
const (
	// controlKeySize is a control key: version int16, type int16.
	controlKeySize = 4
	// endTxnMarkerSize is an end-transaction marker value: version int16,
	// coordinatorEpoch int32.
	endTxnMarkerSize = 6
	// controlKeyVersion and endTxnMarkerVersion are the versions written.
	controlKeyVersion   = 0
	endTxnMarkerVersion = 0
)

// ControlKey returns the key of a control record of type t, version 0.
func ControlKey(t ControlType) []byte {
	key := make([]byte, controlKeySize)
	binary.BigEndian.PutUint16(key[0:], controlKeyVersion)
	binary.BigEndian.PutUint16(key[2:], uint16(t))
	return key
}

// ParseControlKey returns the type in a control record's key. Like Kafka it
// accepts versions above 0 (later versions may only append fields) and
// rejects a short key or a negative version with ErrInvalidRecord. A type it
// does not know is returned as is.
func ParseControlKey(key []byte) (ControlType, error) {
	if len(key) < controlKeySize {
		return 0, errAt(ErrInvalidRecord, 0, "control key of %d bytes, want at least %d", len(key), controlKeySize)
	}
	if version := int16(binary.BigEndian.Uint16(key)); version < 0 {
		return 0, errAt(ErrInvalidRecord, 0, "control key version %d is negative", version)
	}
	return ControlType(int16(binary.BigEndian.Uint16(key[2:]))), nil
}

// EndTxnMarkerValue returns the value of a commit or abort marker written by
// a transaction coordinator of the given epoch, version 0.
func EndTxnMarkerValue(coordinatorEpoch int32) []byte {
	value := make([]byte, endTxnMarkerSize)
	binary.BigEndian.PutUint16(value[0:], endTxnMarkerVersion)
	binary.BigEndian.PutUint32(value[2:], uint32(coordinatorEpoch))
	return value
}

// ParseEndTxnMarker returns the coordinator epoch in a commit or abort
// marker's value, with ParseControlKey's leniency about versions.
func ParseEndTxnMarker(value []byte) (coordinatorEpoch int32, err error) {
	if len(value) < endTxnMarkerSize {
		return 0, errAt(ErrInvalidRecord, 0, "end transaction marker of %d bytes, want at least %d", len(value), endTxnMarkerSize)
	}
	if version := int16(binary.BigEndian.Uint16(value)); version < 0 {
		return 0, errAt(ErrInvalidRecord, 0, "end transaction marker version %d is negative", version)
	}
	return int32(binary.BigEndian.Uint32(value[2:])), nil
}

// maxControlRecordsBytes bounds the decompressed records of a control batch
// read by ReadEndTxnMarker, in bytes: a marker batch holds one record of a
// few dozen bytes; Kafka never compresses control batches, so the bound
// only guards against a hostile one.
const maxControlRecordsBytes = 64 << 10

// EndTxnMarker is a transaction marker as a control batch carries it.
type EndTxnMarker struct {
	// Type is ControlCommit or ControlAbort.
	Type ControlType
	// CoordinatorEpoch is the epoch of the coordinator that wrote it.
	CoordinatorEpoch int32
}

// ReadEndTxnMarker returns the transaction marker in a control batch: the
// type in its first record's key and, for COMMIT and ABORT, the coordinator
// epoch in its value (Kafka's EndTransactionMarker.deserialize). ok is false
// for a control batch of another type (KRaft's). A batch that is not a
// control batch, has no record, or whose record does not parse gets an error
// wrapping ErrInvalidRecord or ErrCorrupt, never a panic.
func ReadEndTxnMarker(b Batch) (m EndTxnMarker, ok bool, err error) {
	if !b.Attributes().IsControl() {
		return EndTxnMarker{}, false, errAt(ErrInvalidRecord, offAttributes, "not a control batch")
	}
	dec := NewDecompressor(maxControlRecordsBytes)
	defer dec.Close()
	r := NewRecordReader(dec)
	if err := r.Reset(b); err != nil {
		return EndTxnMarker{}, false, err
	}
	if !r.Next() {
		if err := r.Err(); err != nil {
			return EndTxnMarker{}, false, err
		}
		return EndTxnMarker{}, false, errAt(ErrInvalidRecord, offRecordCount, "control batch without records")
	}
	rec := r.Record()
	t, err := ParseControlKey(rec.Key)
	if err != nil {
		return EndTxnMarker{}, false, err
	}
	if t != ControlCommit && t != ControlAbort {
		return EndTxnMarker{Type: t}, false, nil
	}
	epoch, err := ParseEndTxnMarker(rec.Value)
	if err != nil {
		return EndTxnMarker{}, false, err
	}
	return EndTxnMarker{Type: t, CoordinatorEpoch: epoch}, true, nil
}

// BuildEndTxnMarker returns a control batch holding one COMMIT or ABORT
// marker of producer id and epoch, written by a coordinator of
// coordinatorEpoch at timestamp (ms), as Kafka's
// MemoryRecords.withEndTransactionMarker: transactional, control, no
// sequence, base offset 0 (the log assigns it).
func BuildEndTxnMarker(producerID int64, producerEpoch int16, t ControlType, coordinatorEpoch int32, timestamp int64) ([]byte, error) {
	if t != ControlCommit && t != ControlAbort {
		return nil, fmt.Errorf("%w: marker of type %s", ErrInvalidRecord, t)
	}
	b := NewBuilder(WithProducer(producerID, producerEpoch, NoSequence), WithTransactional(), WithControl())
	b.AppendControl(timestamp, t, EndTxnMarkerValue(coordinatorEpoch))
	return b.AppendTo(nil)
}
