package kraft

import "github.com/strata-log/strata/core/quorum"

// LogView is a read-only summary of a member's replicated log, for the
// simulator's checkers, tests and debugging. It is a copy taken when
// LogView is called: it does not follow the log afterwards.
type LogView struct {
	// Started reports whether the member's quorum runs; before that (and
	// when the member has no log) the other fields are zero.
	Started bool
	// Role and Epoch are the Raft's role and epoch at the time of the view.
	Role  quorum.Role
	Epoch int32
	// StartOffset is the base offset of the first batch held: 0, or the
	// end of the snapshot the log was trimmed to.
	StartOffset int64
	// EndOffset is the offset the next batch gets, with the epoch of the
	// last batch held.
	EndOffset quorum.OffsetAndEpoch
	// HighWatermark is the Raft's high watermark: every batch below it is
	// committed.
	HighWatermark int64
	// Snapshot is the newest complete snapshot, when HasSnapshot.
	Snapshot    quorum.SnapshotID
	HasSnapshot bool
}

// LogView returns the member's view of its log. It only reads (through the
// quorum.Log interface) and costs a few calls, whatever the log's length.
// Like every method, it must be called on the member's loop.
func (m *Member) LogView() LogView {
	if m.journal == nil {
		return LogView{}
	}
	var log quorum.Log = m.journal
	v := LogView{
		StartOffset: log.StartOffset(),
		EndOffset:   log.EndOffset(),
	}
	v.Snapshot, v.HasSnapshot = log.LatestSnapshot()
	if m.raft != nil {
		st := m.raft.Status()
		v.Started = true
		v.Role, v.Epoch, v.HighWatermark = st.Role, st.State.Epoch, st.HighWatermark
	}
	return v
}

// LogBatches returns the log's whole batches from the batch boundary from,
// in order, up to about maxBytes (at least one batch when from is below
// the end offset). ok is false, and nothing is read, when from is not a
// batch boundary in [StartOffset, EndOffset]: the log changed under a
// caller that remembered an offset. The batches are shared with the log
// and must not be modified.
func (m *Member) LogBatches(from int64, maxBytes int) (batches []quorum.Batch, ok bool) {
	if !m.isLogBoundary(from) {
		return nil, false
	}
	var log quorum.Log = m.journal
	if from == log.EndOffset().Offset {
		return nil, true
	}
	return log.Batches(from, maxBytes), true
}

// LogBatchEndingAt returns the batch of the log that ends at end (its
// EndOffset is end), if the log holds one.
func (m *Member) LogBatchEndingAt(end int64) (quorum.Batch, bool) {
	if m.journal == nil {
		return quorum.Batch{}, false
	}
	var log quorum.Log = m.journal
	if end <= log.StartOffset() || end > log.EndOffset().Offset {
		return quorum.Batch{}, false
	}
	bs := log.Batches(log.FloorBatchBoundary(end-1), 1)
	if len(bs) == 0 || bs[0].EndOffset() != end {
		return quorum.Batch{}, false
	}
	return bs[0], true
}

// isLogBoundary reports whether offset is a batch boundary of the log.
func (m *Member) isLogBoundary(offset int64) bool {
	if m.journal == nil {
		return false
	}
	var log quorum.Log = m.journal
	if offset < log.StartOffset() || offset > log.EndOffset().Offset {
		return false
	}
	return log.FloorBatchBoundary(offset) == offset
}
