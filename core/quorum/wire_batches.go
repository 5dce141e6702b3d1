package quorum

// This file encodes log batches as Kafka RecordBatch v2 bytes, the form a
// Fetch response carries and a segment stores: one Batch is one RecordBatch.

import (
	"bytes"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
)

// maxWireBatchBytes bounds Config.MaxBatchBytes: a batch must fit a
// RecordBatch's int32 length and a Fetch response with room to spare.
const maxWireBatchBytes = 1 << 30

// EncodeBatches encodes batches as RecordBatch v2 bytes, the form a Fetch
// response carries and a segment stores: one RecordBatch per Batch, so a
// batch stays a unit on the wire and on disk (leader-change batches as
// LEADER_CHANGE control batches), the epoch in each batch's partition
// leader epoch.
func EncodeBatches(batches []Batch) ([]byte, error) {
	var out []byte
	for _, bt := range batches {
		if len(bt.Records) == 0 {
			return nil, wireErr("empty batch at %d", bt.BaseOffset)
		}
		opts := []record.BuilderOption{record.WithBaseOffset(bt.BaseOffset), record.WithPartitionLeaderEpoch(bt.Epoch)}
		if bt.Kind == BatchLeaderChange {
			opts = append(opts, record.WithControl())
		}
		b := record.NewBuilder(opts...)
		for _, rec := range bt.Records {
			switch bt.Kind {
			case BatchData:
				b.Append(0, nil, rec)
			case BatchLeaderChange:
				b.AppendControl(0, record.ControlLeaderChange, rec)
			default:
				return nil, wireErr("batch %s of unknown kind %d", bt, bt.Kind)
			}
		}
		var err error
		if out, err = b.AppendTo(out); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrWire, err)
		}
	}
	return out, nil
}

// DecodeBatches is the inverse of EncodeBatches. It validates each batch's
// CRC, requires its records to fill its offsets densely, and accepts only
// data batches and LEADER_CHANGE control batches.
func DecodeBatches(data []byte) ([]Batch, error) {
	var out []Batch
	split := record.NewSplitter(data, record.MaxBatchSize, record.CheckStored)
	var reader *record.RecordReader
	for split.Next() {
		batch := split.Batch()
		if reader == nil {
			reader = record.NewRecordReader(record.NewDecompressor(record.DefaultMaxDecompressedBytes))
		}
		if err := reader.Reset(batch); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrWire, err)
		}
		if n := batch.RecordCount(); n <= 0 || batch.LastOffsetDelta() != n-1 {
			return nil, wireErr("batch at %d holds %d records for last offset delta %d", batch.BaseOffset(), n, batch.LastOffsetDelta())
		}
		bt := Batch{BaseOffset: batch.BaseOffset(), Epoch: batch.PartitionLeaderEpoch(), Kind: BatchData}
		if batch.Attributes().IsControl() {
			bt.Kind = BatchLeaderChange
		}
		for reader.Next() {
			rec := reader.Record()
			if rec.Offset != bt.EndOffset() {
				return nil, wireErr("record at %d in batch %d, want %d", rec.Offset, bt.BaseOffset, bt.EndOffset())
			}
			if bt.Kind == BatchLeaderChange {
				t, err := record.ParseControlKey(rec.Key)
				if err != nil {
					return nil, fmt.Errorf("%w: %w", ErrWire, err)
				}
				if t != record.ControlLeaderChange {
					return nil, wireErr("control record %s in the metadata log", t)
				}
			}
			bt.Records = append(bt.Records, bytes.Clone(rec.Value))
		}
		if err := reader.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrWire, err)
		}
		out = append(out, bt)
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

// DecodeLeaderChange reads the record of a leader-change batch.
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
