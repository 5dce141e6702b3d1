package producer_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
)

// partition is the partition layer's side of the contract, in miniature: a
// core/log Log, a State and the Snapshots of one directory, driven the way
// doc.go says the partition drives them.
type partition struct {
	r  *rig
	l  *log.Log
	st *producer.State
}

func openPartition(r *rig) *partition {
	r.T.Helper()
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 4096
	l, err := log.Open(r.Env, partDir, cfg)
	require.NoError(r.T, err)
	require.NoError(r.T, r.Wait(func(done func(error)) { l.Flush(l.LogEndOffset(), done) }))
	p := &partition{r: r, l: l}
	// Recovery: drop snapshots past the log, load the newest usable one,
	// replay the log after it.
	require.NoError(r.T, r.Wait(func(done func(error)) { r.snap.DeleteAbove(l.LogEndOffset(), done) }))
	st, _, err := r.snap.Load(l.LogStartOffset(), l.LogEndOffset(), r.Env.Now())
	require.NoError(r.T, err)
	p.st = st
	p.replay(st.EndOffset())
	require.Equal(r.T, l.LogEndOffset(), st.EndOffset())
	return p
}

// replay applies the log from offset to its end.
func (p *partition) replay(from int64) {
	t := p.r.T
	for off := from; off < p.l.LogEndOffset(); {
		res, err := p.l.Read(off, 1<<20, -1)
		require.NoError(t, err)
		buf := make([]byte, res.Size)
		_, err = res.File.ReadAt(buf, res.Position)
		res.Release()
		require.NoError(t, err)
		sp := record.NewSplitter(buf, len(buf)+1, record.CheckStored)
		for sp.Next() {
			require.NoError(t, p.st.Replay(sp.Batch()))
			off = sp.Batch().NextOffset()
		}
		require.NoError(t, sp.Err())
	}
	p.st.AdvanceTo(p.l.LogEndOffset())
}

// produce is the leader's produce path for one batch; it reports whether
// the batch was appended.
func (p *partition) produce(spec batchSpec) bool {
	t := p.r.T
	b := spec.build(t, 0)
	require.NoError(t, b.ValidateForAppend(record.OriginClient))
	info := producer.InfoOf(b)
	res, err := p.st.Check(info)
	if err != nil || res.Duplicate {
		return false
	}
	ai, err := p.l.Append(b.Bytes(), 0)
	require.NoError(t, err)
	p.st.Appended(info, ai.FirstOffset, ai.LastOffset, ai.MaxTimestamp)
	return true
}

func (p *partition) snapshot() {
	p.st.AdvanceTo(p.l.LogEndOffset())
	require.NoError(p.r.T, p.r.write(p.st))
}

func (p *partition) flush() {
	require.NoError(p.r.T, p.r.Wait(func(done func(error)) { p.l.Flush(p.l.LogEndOffset(), done) }))
}

// fromScratch replays the partition's whole log into a fresh state.
func (p *partition) fromScratch() *producer.State {
	q := &partition{r: p.r, l: p.l, st: producer.NewState(producer.DefaultConfig(), p.l.LogStartOffset())}
	q.replay(p.l.LogStartOffset())
	return q.st
}

// recent is a batch timestamp near the simulator's wall clock, so that
// nothing expires when a snapshot is loaded.
var recent = sim.DefaultEpoch.UnixMilli()

// TestRecoveryRebuildsTheState runs the partition's recovery against a
// real core/log after a crash: with everything flushed, the recovered
// state answers like the live one, whatever snapshot it started from.
func TestRecoveryRebuildsTheState(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := newRig(rt, rapid.Uint64().Draw(rt, "seed"))
		p := openPartition(r)
		models := map[int64]*producerModel{}
		nowMs := r.Env.Now().UnixMilli()
		n := rapid.IntRange(1, 60).Draw(rt, "batches")
		snapAt := rapid.IntRange(0, n).Draw(rt, "snapAt")
		for i := 0; i < n; i++ {
			if i == snapAt {
				p.snapshot()
			}
			spec := genBatch(rt, models)
			spec.ts = nowMs + spec.ts%60_000 // recent: nothing expires at the reload
			if p.produce(spec) && spec.pid >= 0 {
				m := models[spec.pid]
				m.epoch = max(m.epoch, spec.epoch)
				m.nextSeq = record.IncrementSequence(spec.seq, int32(spec.records))
				m.sent = append(m.sent, spec)
			}
		}
		p.flush()
		live := p.st
		r.crash()
		q := openPartition(r)
		require.Equal(rt, live.EndOffset(), q.st.EndOffset())
		requireSameAnswers(rt, live, q.st)
		require.Equal(rt, live.Producers(), q.fromScratch().Producers())
	})
}

// TestSnapshotBeyondTheRecoveredLogIsDropped: a snapshot is durable but
// the log data below its offset was not flushed and a crash lost it. The
// snapshot describes batches the log no longer has; recovery must not use
// it, and must delete it before the log grows past it again.
func TestSnapshotBeyondTheRecoveredLogIsDropped(t *testing.T) {
	r := newRig(t, 21)
	p := openPartition(r)
	require.True(t, p.produce(batchSpec{pid: 1, epoch: 0, seq: 0, records: 3, ts: recent + 10}))
	p.flush()
	p.snapshot() // at 3, covered by the flush
	require.True(t, p.produce(batchSpec{pid: 1, epoch: 0, seq: 3, records: 2, ts: recent + 20}))
	require.True(t, p.produce(batchSpec{pid: 2, epoch: 0, seq: 0, records: 1, ts: recent + 20}))
	p.snapshot() // at 6, but offsets 3..5 are only in the page cache
	require.Equal(t, []int64{3, 6}, r.snap.Offsets())
	r.crash()

	q := openPartition(r)
	require.Equal(t, int64(3), q.l.LogEndOffset(), "the unflushed batches are gone")
	require.Equal(t, []int64{3}, r.snap.Offsets(), "the snapshot past the log end is deleted")
	require.Equal(t, q.fromScratch().Producers(), q.st.Producers())
	// Producer 1 may continue at 3 (its batch at 3..4 was never
	// acknowledged), and producer 2 is unknown.
	require.True(t, q.produce(batchSpec{pid: 1, epoch: 0, seq: 3, records: 2, ts: recent + 30}))
	_, known := q.st.Producer(2)
	require.False(t, known)
}

// TestTruncationReloads follows a follower's truncation: snapshots above
// the truncation point go, and the state is reloaded and replayed.
func TestTruncationReloads(t *testing.T) {
	r := newRig(t, 22)
	p := openPartition(r)
	for i := range 4 {
		require.True(t, p.produce(batchSpec{pid: 1, epoch: 0, seq: int32(2 * i), records: 2, ts: recent + 10}))
		p.flush()
		p.snapshot()
	}
	require.Equal(t, []int64{2, 4, 6, 8}, r.snap.Offsets())
	require.NoError(t, r.Wait(func(done func(error)) { r.snap.DeleteAbove(5, done) }))
	require.NoError(t, r.Wait(func(done func(error)) { p.l.Truncate(5, done) }))
	// The log cuts at a batch boundary at or below 5.
	end := p.l.LogEndOffset()
	require.Equal(t, int64(4), end)
	st, rep, err := r.snap.Load(p.l.LogStartOffset(), end, r.Env.Now())
	require.NoError(t, err)
	require.Equal(t, int64(4), rep.Snapshot)
	p.st = st
	p.replay(st.EndOffset())
	requireSameAnswers(t, p.fromScratch(), p.st) // the snapshot kept only the last batch
	pr, _ := p.st.Producer(1)
	require.Equal(t, int32(3), pr.LastSeq())
	require.True(t, p.produce(batchSpec{pid: 1, epoch: 0, seq: 4, records: 1, ts: recent + 10}))
}

// requireSameAnswers checks that two states answer every producer's next
// batch, a retry of its last and a neighbouring epoch alike.
func requireSameAnswers(t require.TestingT, want, got *producer.State) {
	ws, gs := want.Producers(), got.Producers()
	require.Equal(t, len(ws), len(gs))
	for i, w := range ws {
		g := gs[i]
		require.Equal(t, w.ID, g.ID)
		require.Equal(t, w.Epoch, g.Epoch)
		require.Equal(t, w.LastOffset(), g.LastOffset())
		require.Equal(t, w.LastTimestamp, g.LastTimestamp)
		requireSameChecks(t, want, got, w, 1)
	}
}

// requireSameChecks requires two states to answer alike the batches of
// producer p that tell states apart: the next n records, a duplicate of
// its last batch, and fenced and newer epochs.
func requireSameChecks(t require.TestingT, want, got *producer.State, p producer.Producer, n int32) {
	last := p.Batches[len(p.Batches)-1]
	for _, info := range []producer.BatchInfo{
		{ProducerID: p.ID, ProducerEpoch: p.Epoch, FirstSeq: record.IncrementSequence(p.LastSeq(), 1), LastSeq: record.IncrementSequence(p.LastSeq(), n)},
		{ProducerID: p.ID, ProducerEpoch: p.Epoch, FirstSeq: last.FirstSeq(), LastSeq: last.LastSeq},
		{ProducerID: p.ID, ProducerEpoch: p.Epoch + 1, FirstSeq: 0, LastSeq: 0},
		{ProducerID: p.ID, ProducerEpoch: p.Epoch - 1, FirstSeq: 0, LastSeq: 0},
	} {
		r1, e1 := want.Check(info)
		r2, e2 := got.Check(info)
		require.Equal(t, r1, r2, "%+v", info)
		require.Equal(t, e1, e2, "%+v", info)
	}
}
