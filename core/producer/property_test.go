package producer_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
)

// producerModel is what a generated client knows about itself: its epoch
// and the sequence of its next batch, and its recent batches to retry.
type producerModel struct {
	epoch   int16
	nextSeq int32
	sent    []batchSpec
}

// genBatch draws a client batch: mostly the producer's next one, sometimes
// a retry, a new epoch, a zombie's, a gap or a wrap-around.
func genBatch(t *rapid.T, models map[int64]*producerModel) batchSpec {
	pid := rapid.Int64Range(-1, 4).Draw(t, "pid")
	spec := batchSpec{pid: pid, records: rapid.IntRange(1, 4).Draw(t, "records"), ts: rapid.Int64Range(0, 1<<40).Draw(t, "ts")}
	if pid < 0 {
		spec.noFields = true
		return spec
	}
	m, ok := models[pid]
	if !ok {
		m = &producerModel{nextSeq: rapid.SampledFrom([]int32{0, 7, math.MaxInt32 - 2}).Draw(t, "firstSeq")}
		models[pid] = m
	}
	spec.epoch, spec.seq = m.epoch, m.nextSeq
	switch rapid.IntRange(0, 9).Draw(t, "kind") {
	case 0: // retry one of the recent batches
		if len(m.sent) > 0 {
			return m.sent[rapid.IntRange(0, len(m.sent)-1).Draw(t, "retry")]
		}
	case 1: // a new epoch
		m.epoch++
		spec.epoch, spec.seq = m.epoch, 0
	case 2: // a zombie of an older epoch, or a bogus epoch
		spec.epoch = int16(rapid.IntRange(0, int(m.epoch)+1).Draw(t, "epoch"))
	case 3: // any sequence
		spec.seq = rapid.Int32Range(0, math.MaxInt32).Draw(t, "seq")
	}
	return spec
}

// history is a live run: the state after every batch was offered to
// Check, and the log it built, batch by batch.
type history struct {
	live *producer.State
	log  []record.Batch
	// snapAt is an index into log at which a snapshot was taken, with its
	// bytes and offset.
	snapAt     int
	snapshot   []byte
	snapOffset int64
	// completed are the transactions markers ended, in log order.
	completed []producer.CompletedTxn
}

// marker offers a coordinator's marker for a drawn producer and, when
// CheckMarker passes, appends it to the log.
func (h *history) marker(t *rapid.T, models map[int64]*producerModel) {
	pid := rapid.Int64Range(0, 4).Draw(t, "marker pid")
	epoch := int16(0)
	if m := models[pid]; m != nil {
		epoch = m.epoch + int16(rapid.IntRange(-1, 1).Draw(t, "marker epoch"))
	}
	mk := producer.Marker{ProducerID: pid, ProducerEpoch: max(epoch, 0), CoordinatorEpoch: rapid.Int32Range(0, 3).Draw(t, "coord"), Commit: rapid.Bool().Draw(t, "commit")}
	if h.live.CheckMarker(mk) != nil {
		return
	}
	raw, err := record.BuildEndTxnMarker(mk.ProducerID, mk.ProducerEpoch, mk.ControlType(), mk.CoordinatorEpoch, rapid.Int64Range(0, 1<<40).Draw(t, "marker ts"))
	require.NoError(t, err)
	b, err := record.ReadBatch(raw, len(raw))
	require.NoError(t, err)
	first := h.live.EndOffset()
	b.AssignOffsets(first, 0)
	if done, ok := h.live.AppendedMarker(mk, first, b.MaxTimestamp()); ok {
		h.completed = append(h.completed, done)
	}
	h.log = append(h.log, b)
	if m := models[pid]; m != nil && mk.ProducerEpoch != m.epoch {
		m.epoch, m.nextSeq, m.sent = mk.ProducerEpoch, 0, nil
	}
}

func runLive(t *rapid.T) history { return runHistory(t, false) }

// runHistory is a live run; with txns, batches are sometimes
// transactional and coordinators sometimes write markers, whose ended
// transactions go to h.completed.
func runHistory(t *rapid.T, txns bool) history {
	h := history{live: producer.NewState(producer.DefaultConfig(), 0)}
	models := map[int64]*producerModel{}
	n := rapid.IntRange(1, 80).Draw(t, "batches")
	h.snapAt = rapid.IntRange(0, n).Draw(t, "snapAt")
	for i := 0; i < n; i++ {
		if i == h.snapAt {
			h.snapshot, h.snapOffset = h.live.EncodeSnapshot(), h.live.EndOffset()
		}
		if txns && rapid.IntRange(0, 4).Draw(t, "marker?") == 0 {
			h.marker(t, models)
			continue
		}
		spec := genBatch(t, models)
		if txns && spec.pid >= 0 {
			spec.txn = rapid.Bool().Draw(t, "txn")
		}
		b := spec.build(t, 0)
		info := producer.InfoOf(b)
		res, err := h.live.Check(info)
		if err != nil || res.Duplicate {
			continue
		}
		first := h.live.EndOffset()
		b.AssignOffsets(first, 0)
		h.live.Appended(info, first, b.LastOffset(), b.MaxTimestamp())
		h.log = append(h.log, b)
		if m := models[spec.pid]; m != nil {
			m.epoch = max(m.epoch, spec.epoch)
			m.nextSeq = record.IncrementSequence(b.LastSequence(), 1)
			m.sent = append(m.sent, spec)
			if len(m.sent) > 7 {
				m.sent = m.sent[1:]
			}
		}
	}
	if h.snapshot == nil {
		h.snapshot, h.snapOffset = h.live.EncodeSnapshot(), h.live.EndOffset()
	}
	return h
}

// TestReplayEqualsLiveAppends: replaying the log a live run built, from
// its start, rebuilds exactly the live state.
func TestReplayEqualsLiveAppends(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := runLive(t)
		replayed := producer.NewState(producer.DefaultConfig(), 0)
		for _, b := range h.log {
			require.NoError(t, replayed.Replay(b))
		}
		require.Equal(t, h.live.Producers(), replayed.Producers())
		require.Equal(t, h.live.EndOffset(), replayed.EndOffset())
		require.Equal(t, h.live.EncodeSnapshot(), replayed.EncodeSnapshot())
		// Replaying again changes nothing: replay is idempotent.
		for _, b := range h.log {
			require.NoError(t, replayed.Replay(b))
		}
		require.Equal(t, h.live.Producers(), replayed.Producers())
	})
}

// TestTxnReplayEqualsLive: with transactional batches and markers,
// replaying the log from its start rebuilds the live state, its ongoing
// transactions and last stable offset, and ends the same transactions;
// restoring the run's snapshot and replaying after it gives the same
// ongoing transactions and producers (transactions included).
func TestTxnReplayEqualsLive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := runHistory(t, true)
		replayed := producer.NewState(producer.DefaultConfig(), 0)
		var completed []producer.CompletedTxn
		for _, b := range h.log {
			done, ok, err := replayed.ReplayTxn(b)
			require.NoError(t, err)
			if ok {
				completed = append(completed, done)
			}
		}
		require.Equal(t, h.completed, completed)
		require.Equal(t, h.live.Producers(), replayed.Producers())
		require.Equal(t, h.live.OngoingTxns(), replayed.OngoingTxns())
		require.Equal(t, h.live.EncodeSnapshot(), replayed.EncodeSnapshot())
		end := h.live.EndOffset()
		hw := rapid.Int64Range(0, end).Draw(t, "hw")
		require.Equal(t, h.live.LastStableOffset(hw), replayed.LastStableOffset(hw))
		for _, tx := range h.live.OngoingTxns() {
			require.LessOrEqual(t, h.live.LastStableOffset(end), tx.FirstOffset)
		}

		ps, err := producer.DecodeSnapshot(h.snapshot)
		require.NoError(t, err)
		st, err := producer.Restore(producer.DefaultConfig(), h.snapOffset, ps, time.UnixMilli(0))
		require.NoError(t, err)
		for _, b := range h.log {
			require.NoError(t, st.Replay(b))
		}
		require.Equal(t, h.live.OngoingTxns(), st.OngoingTxns())
		live, got := h.live.Producers(), st.Producers()
		require.Equal(t, len(live), len(got))
		for i := range live {
			require.Equal(t, live[i].CurrentTxnFirstOffset, got[i].CurrentTxnFirstOffset, "producer %d", live[i].ID)
			require.Equal(t, live[i].CoordinatorEpoch, got[i].CoordinatorEpoch, "producer %d", live[i].ID)
			require.Equal(t, live[i].Epoch, got[i].Epoch, "producer %d", live[i].ID)
		}
	})
}

// TestSnapshotPlusReplayAgreesWithLive: restoring a snapshot taken during
// the run and replaying the log after it gives every producer the live
// epoch, last batch and timestamp; its batches are a suffix of the live
// ones or the other way round (a snapshot keeps one batch per producer);
// and it answers every producer's next batch, and a retry of its last, as
// the live state does.
func TestSnapshotPlusReplayAgreesWithLive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := runLive(t)
		ps, err := producer.DecodeSnapshot(h.snapshot)
		require.NoError(t, err)
		st, err := producer.Restore(producer.DefaultConfig(), h.snapOffset, ps, time.UnixMilli(0))
		require.NoError(t, err)
		for _, b := range h.log {
			require.NoError(t, st.Replay(b)) // those below the snapshot are skipped
		}
		require.Equal(t, h.live.EndOffset(), st.EndOffset())
		live, got := h.live.Producers(), st.Producers()
		require.Equal(t, len(live), len(got))
		for i := range live {
			l, g := live[i], got[i]
			require.Equal(t, l.ID, g.ID)
			require.Equal(t, l.Epoch, g.Epoch)
			require.Equal(t, l.LastSeq(), g.LastSeq())
			require.Equal(t, l.LastOffset(), g.LastOffset())
			require.Equal(t, l.LastTimestamp, g.LastTimestamp)
			short, long := g.Batches, l.Batches
			if len(short) > len(long) {
				short, long = long, short
			}
			require.Equal(t, short, long[len(long)-len(short):], "producer %d", l.ID)
			requireSameChecks(t, h.live, st, l, 2)
		}
	})
}

// TestLiveInvariants checks the state's invariants after random runs: at
// most 5 batches per producer, of increasing offsets below the end offset,
// and producers listed in id order.
func TestLiveInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := runLive(t)
		ps := h.live.Producers()
		require.True(t, slices.IsSortedFunc(ps, func(a, b producer.Producer) int { return int(a.ID - b.ID) }))
		for _, p := range ps {
			require.LessOrEqual(t, len(p.Batches), 5)
			require.NotEmpty(t, p.Batches)
			prev := int64(-1)
			for _, m := range p.Batches {
				require.Greater(t, m.FirstOffset(), prev)
				require.Less(t, m.LastOffset, h.live.EndOffset())
				require.Equal(t, record.IncrementSequence(m.FirstSeq(), m.OffsetDelta), m.LastSeq)
				prev = m.LastOffset
			}
		}
	})
}
