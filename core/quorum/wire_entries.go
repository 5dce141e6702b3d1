package quorum

// This file encodes log entries as Kafka RecordBatch v2 bytes, the form a
// Fetch response carries and a segment stores.

import (
	"bytes"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
)

// EncodeEntries encodes entries as RecordBatch v2 bytes, the form a Fetch
// response carries and a segment stores: one batch per run of entries with
// the same epoch and kind (leader-change entries as LEADER_CHANGE control
// batches), the epoch in each batch's partition leader epoch.
func EncodeEntries(entries []Entry) ([]byte, error) {
	var out []byte
	for i := 0; i < len(entries); {
		first := entries[i]
		opts := []record.BuilderOption{record.WithBaseOffset(first.Offset), record.WithPartitionLeaderEpoch(first.Epoch)}
		if first.Kind == EntryLeaderChange {
			opts = append(opts, record.WithControl())
		}
		b := record.NewBuilder(opts...)
		size := 0
		j := i
		for ; j < len(entries); j++ {
			e := entries[j]
			if e.Epoch != first.Epoch || e.Kind != first.Kind || e.Offset != first.Offset+int64(j-i) ||
				(j > i && size+e.Size() > wireBatchBytes) {
				break
			}
			switch e.Kind {
			case EntryData:
				b.Append(0, nil, e.Data)
			case EntryLeaderChange:
				b.AppendControl(0, record.ControlLeaderChange, e.Data)
			default:
				return nil, wireErr("entry %s of unknown kind %d", e, e.Kind)
			}
			size += e.Size()
		}
		var err error
		if out, err = b.AppendTo(out); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrWire, err)
		}
		i = j
	}
	return out, nil
}

// DecodeEntries is the inverse of EncodeEntries. It validates each batch's
// CRC and accepts only data records and LEADER_CHANGE control records.
func DecodeEntries(batches []byte) ([]Entry, error) {
	var out []Entry
	split := record.NewSplitter(batches, record.MaxBatchSize, record.CheckStored)
	var reader *record.RecordReader
	for split.Next() {
		batch := split.Batch()
		if reader == nil {
			reader = record.NewRecordReader(record.NewDecompressor(record.DefaultMaxDecompressedBytes))
		}
		if err := reader.Reset(batch); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrWire, err)
		}
		control := batch.Attributes().IsControl()
		for reader.Next() {
			rec := reader.Record()
			e := Entry{Offset: rec.Offset, Epoch: batch.PartitionLeaderEpoch(), Kind: EntryData, Data: bytes.Clone(rec.Value)}
			if control {
				t, err := record.ParseControlKey(rec.Key)
				if err != nil {
					return nil, fmt.Errorf("%w: %w", ErrWire, err)
				}
				if t != record.ControlLeaderChange {
					return nil, wireErr("control record %s in the metadata log", t)
				}
				e.Kind = EntryLeaderChange
			}
			out = append(out, e)
		}
		if err := reader.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrWire, err)
		}
	}
	if err := split.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWire, err)
	}
	return out, nil
}

// encodeLeaderChange is the value of a LEADER_CHANGE control record:
// Kafka's LeaderChangeMessage.
func encodeLeaderChange(leader NodeID, voters, granting []NodeID) []byte {
	msg := kmsg.LeaderChangeMessage{LeaderID: int32(leader)}
	for _, v := range voters {
		msg.Voters = append(msg.Voters, kmsg.LeaderChangeMessageVoter{VoterID: int32(v)})
	}
	for _, v := range granting {
		msg.GrantingVoters = append(msg.GrantingVoters, kmsg.LeaderChangeMessageVoter{VoterID: int32(v)})
	}
	return msg.AppendTo(nil)
}

// DecodeLeaderChange reads the value of a leader-change entry.
func DecodeLeaderChange(data []byte) (leader NodeID, voters, granting []NodeID, err error) {
	var msg kmsg.LeaderChangeMessage
	if err := msg.ReadFrom(data); err != nil {
		return NoNode, nil, nil, fmt.Errorf("%w: leader change: %w", ErrWire, err)
	}
	for _, v := range msg.Voters {
		voters = append(voters, NodeID(v.VoterID))
	}
	for _, v := range msg.GrantingVoters {
		granting = append(granting, NodeID(v.VoterID))
	}
	return NodeID(msg.LeaderID), voters, granting, nil
}
