package replica

import (
	"fmt"

	"github.com/strata-log/strata/core/log"
)

// Read returns the batches of the partition from the one holding offset,
// as a region of one segment file (at least one whole batch, then whole
// batches within maxBytes), bounded by the high watermark: consumers never
// see what is not durable (see Partition). currentLeaderEpoch is the
// fetch's (KIP-320; -1 skips the check). The caller must Release a
// non-empty result.
func (p *Partition) Read(offset int64, maxBytes int, currentLeaderEpoch int32) (log.ReadResult, error) {
	if err := p.servableAt(currentLeaderEpoch); err != nil {
		return log.ReadResult{FirstOffset: -1}, err
	}
	res, err := p.l.Read(offset, maxBytes, p.l.HighWatermark())
	if err != nil && logFailed(err) {
		p.fail(err)
		err = fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err)
	}
	return res, err
}

// Special timestamps of ListOffsets beyond core/log's (KIP-405, KIP-1005).
const (
	// EarliestLocalTimestamp asks for the first offset stored locally.
	EarliestLocalTimestamp int64 = -4
	// LatestTieredTimestamp asks for the last offset in remote storage.
	LatestTieredTimestamp int64 = -5
)

// OffsetResult is ListOffsets' answer for one partition.
type OffsetResult struct {
	Offset, Timestamp int64
	LeaderEpoch       int32
}

// ListOffset answers ListOffsets for timestamp (a time in ms, or one of
// the special values: log.LatestTimestamp, log.EarliestTimestamp,
// log.MaxTimestamp, EarliestLocalTimestamp, LatestTieredTimestamp). Every
// answer lies at or below the high watermark: a consumer's "latest" is the
// high watermark, as in Kafka (isolation level read_committed gives the
// ListOffsetCommitted is the same bounded by the last stable offset).
func (p *Partition) ListOffset(timestamp int64, currentLeaderEpoch int32) (OffsetResult, error) {
	return p.listOffset(timestamp, currentLeaderEpoch, false)
}

// ListOffsetCommitted is ListOffset for a read_committed consumer
// (isolation level 1): "latest" is the last stable offset, and a
// timestamp search answers only offsets below it (Kafka's
// fetchOffsetForTimestamp with READ_COMMITTED).
func (p *Partition) ListOffsetCommitted(timestamp int64, currentLeaderEpoch int32) (OffsetResult, error) {
	return p.listOffset(timestamp, currentLeaderEpoch, true)
}

func (p *Partition) listOffset(timestamp int64, currentLeaderEpoch int32, readCommitted bool) (OffsetResult, error) {
	none := OffsetResult{Offset: -1, Timestamp: -1, LeaderEpoch: -1}
	if err := p.servableAt(currentLeaderEpoch); err != nil {
		return none, err
	}
	l := p.l
	hw := l.HighWatermark()
	if readCommitted {
		hw = p.LastStableOffset()
	}
	switch timestamp {
	case log.LatestTimestamp:
		if start := p.leaderEpochStart(); l.HighWatermark() < start {
			// A new leader learns how far its predecessor committed
			// only from its followers' fetches: until then its high
			// watermark may be below one a client already saw.
			return none, fmt.Errorf("%w: %s high watermark %d is below the start %d of leader epoch %d", ErrOffsetNotAvailable, p.dir, l.HighWatermark(), start, p.leaderEpoch)
		}
		return OffsetResult{Offset: hw, Timestamp: -1, LeaderEpoch: l.EpochForOffset(hw - 1)}, nil
	case log.EarliestTimestamp, EarliestLocalTimestamp:
		start := l.LogStartOffset()
		return OffsetResult{Offset: start, Timestamp: -1, LeaderEpoch: l.EpochForOffset(start)}, nil
	case LatestTieredTimestamp:
		// Nothing is tiered: Kafka answers -1 without remote storage.
		return none, nil
	}
	if timestamp < 0 && timestamp != log.MaxTimestamp {
		return none, fmt.Errorf("%w: timestamp %d", ErrInvalidListOffsetsTimestamp, timestamp)
	}
	found, err := l.OffsetForTimestamp(timestamp)
	if err != nil {
		if logFailed(err) {
			p.fail(err)
			err = fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err)
		}
		return none, err
	}
	if found.Offset < 0 || found.Offset >= hw {
		return none, nil
	}
	return OffsetResult{Offset: found.Offset, Timestamp: found.Timestamp, LeaderEpoch: found.LeaderEpoch}, nil
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest epoch at or
// below epoch and the offset where it ended (log.EndOffsetForEpoch).
func (p *Partition) EndOffsetForEpoch(epoch, currentLeaderEpoch int32) (int32, int64, error) {
	if err := p.servableAt(currentLeaderEpoch); err != nil {
		return -1, -1, err
	}
	e, off := p.l.EndOffsetForEpoch(epoch)
	return e, off, nil
}

// DeleteRecords moves the log start offset to offset (-1: the high
// watermark), Kafka's DeleteRecords; done runs once the new log start
// offset is durable, with it. An offset past the high watermark is
// OFFSET_OUT_OF_RANGE.
func (p *Partition) DeleteRecords(offset int64, done func(lowWatermark int64, err error)) {
	if err := p.servable(); err != nil {
		p.m.e.Post(func() { done(-1, err) })
		return
	}
	l := p.l
	if offset == -1 {
		offset = l.HighWatermark()
	}
	if offset < 0 {
		err := fmt.Errorf("%w: delete records before %d", log.ErrOffsetOutOfRange, offset)
		p.m.e.Post(func() { done(-1, err) })
		return
	}
	if err := l.DeleteRecordsBefore(offset); err != nil {
		if logFailed(err) {
			p.fail(err)
			err = fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err)
		}
		p.m.e.Post(func() { done(-1, err) })
		return
	}
	l.Flush(l.LogEndOffset(), func(err error) {
		if err != nil {
			if p.l == l {
				p.fail(err)
			}
			done(-1, fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err))
			return
		}
		done(l.LogStartOffset(), nil)
	})
	// Segments wholly below the new start go at the next retention check;
	// apply it now so DeleteRecords frees space promptly.
	if _, err := l.ApplyRetention(p.m.e.Now()); err != nil && logFailed(err) {
		p.fail(err)
	}
}
