package log_test

import (
	"bytes"
	"fmt"
	"os"
	"sort"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
)

// mbatch is a batch as the model knows it.
type mbatch struct {
	base, last int64
	epoch      int32
	bytes      []byte
	maxTs      int64
	ts         []int64 // record timestamps, offsets base, base+1, ...
	// aborted is the transaction index entry whose marker this batch
	// stands for (TestCrashRecovery), or nil.
	aborted *log.AbortedTxn
}

func (b mbatch) size() int64 { return int64(len(b.bytes)) }

// newMBatch describes stored batch bytes.
func newMBatch(t tb, stored []byte) mbatch {
	t.Helper()
	bt, err := record.ReadBatch(stored, len(stored))
	require.NoError(t, err)
	m := mbatch{base: bt.BaseOffset(), last: bt.LastOffset(), epoch: bt.PartitionLeaderEpoch(),
		bytes: append([]byte(nil), stored...), maxTs: bt.MaxTimestamp()}
	rr := record.NewRecordReader(record.NewDecompressor(record.DefaultMaxDecompressedBytes))
	require.NoError(t, rr.Reset(bt))
	for rr.Next() {
		m.ts = append(m.ts, rr.Record().Timestamp)
	}
	require.NoError(t, rr.Err())
	return m
}

// model is what a log should hold: the batches physically present (some
// may lie below the log start offset), and what a crash may and may not
// take away.
type model struct {
	batches  []mbatch
	leo      int64
	logStart int64
	hw       int64

	// durableEnd: batches below it survive any crash. alts are older
	// versions of the log (before a truncation) that a crash may bring
	// back until a flush issued after the truncation completes; seq orders
	// truncations and flush calls.
	durableEnd int64
	// knownDurable is what this incarnation of the log must report as
	// durable (DurableOffset): what its own flushes covered.
	knownDurable int64
	alts         []alt
	seq          int
	// logStarts lists the log start offsets a crash may bring back: the
	// durable one and every one set since (pruned as flushes complete).
	logStarts []seqValue
	epochs    []log.LeaderEpochEntry
	// deleted lists batches retention deleted from the front that a crash
	// may bring back (pruned as flushes complete), oldest first.
	deleted []seqBatch
}

type seqBatch struct {
	seq int
	b   mbatch
}

// retained records that retention deleted the batches before first.
func (m *model) retained(first int64) {
	m.seq++
	kept := m.batches[:0:0]
	for _, b := range m.batches {
		if b.base >= first {
			kept = append(kept, b)
		} else {
			m.deleted = append(m.deleted, seqBatch{m.seq, b})
		}
	}
	m.batches = kept
}

// withDeleted returns bs preceded by the deleted batches that could come
// back.
func (m *model) withDeleted(bs []mbatch) []mbatch {
	var out []mbatch
	for _, d := range m.deleted {
		if len(bs) == 0 || d.b.last < bs[0].base {
			out = append(out, d.b)
		}
	}
	return append(out, bs...)
}

type alt struct {
	seq     int
	batches []mbatch
	leo     int64
	// required is what must survive if this version comes back.
	required int64
}

type seqValue struct {
	seq int
	v   int64
}

func newModel() *model {
	return &model{logStarts: []seqValue{{0, 0}}, epochs: []log.LeaderEpochEntry{}}
}

func (m *model) setLogStart(v int64) {
	if v > m.logStart {
		m.epochsFromStart(v)
	}
	m.logStart = v
	m.seq++
	m.logStarts = append(m.logStarts, seqValue{m.seq, v})
}

// pushAlt remembers the current version of the log as one a crash may
// bring back.
func (m *model) pushAlt(required int64) {
	m.seq++
	m.alts = append(m.alts, alt{seq: m.seq, batches: m.batches, leo: m.leo, required: required})
}

// flushIssued returns what a flush issued now covers.
type pendingFlush struct {
	seq      int
	upto     int64
	logStart int64
}

func (m *model) flushIssued() *pendingFlush {
	m.seq++
	return &pendingFlush{seq: m.seq, upto: m.leo, logStart: m.logStart}
}

// flushDone applies a successful flush.
func (m *model) flushDone(p *pendingFlush) {
	m.durableEnd = max(m.durableEnd, min(p.upto, m.leo))
	m.knownDurable = max(m.knownDurable, min(p.upto, m.leo))
	var alts []alt
	for _, a := range m.alts {
		if a.seq > p.seq {
			alts = append(alts, a)
		}
	}
	m.alts = alts
	var deleted []seqBatch
	for _, d := range m.deleted {
		if d.seq > p.seq {
			deleted = append(deleted, d)
		}
	}
	m.deleted = deleted
	starts := []seqValue{{p.seq, p.logStart}}
	for _, s := range m.logStarts {
		if s.seq > p.seq {
			starts = append(starts, s)
		}
	}
	m.logStarts = starts
}

// truncate applies Log.Truncate(to) for to >= logStart; segBase is the
// base offset of the segment holding to.
func (m *model) truncate(to, segBase int64) {
	if to >= m.leo {
		return
	}
	keep := 0
	for keep < len(m.batches) && m.batches[keep].last < to {
		keep++
	}
	end := segBase
	if keep > 0 && m.batches[keep-1].base >= segBase {
		end = m.batches[keep-1].last + 1
	}
	if end < m.logStart {
		m.truncateFully(to)
		return
	}
	m.batches = append([]mbatch(nil), m.batches[:keep]...)
	m.leo = end
	m.epochsFromEnd(end)
	m.hw = min(m.hw, end)
	m.durableEnd = min(m.durableEnd, end)
	m.knownDurable = min(m.knownDurable, end)
}

func (m *model) truncateFully(offset int64) {
	m.batches = nil
	m.epochs = []log.LeaderEpochEntry{}
	m.leo, m.hw = offset, offset
	m.durableEnd = offset
	m.knownDurable = min(m.knownDurable, offset)
	m.setLogStart(offset)
}

// The model's leader epoch cache follows the log's rules.

func (m *model) assignEpoch(epoch int32, start int64) {
	if epoch < 0 {
		return
	}
	if n := len(m.epochs); n > 0 {
		last := m.epochs[n-1]
		if epoch <= last.Epoch {
			return
		}
		if last.StartOffset == start {
			m.epochs = m.epochs[:n-1]
		}
	}
	m.epochs = append(m.epochs, log.LeaderEpochEntry{Epoch: epoch, StartOffset: start})
}

func (m *model) epochsFromEnd(end int64) {
	n := sort.Search(len(m.epochs), func(i int) bool { return m.epochs[i].StartOffset >= end })
	m.epochs = m.epochs[:n]
}

func (m *model) epochsFromStart(start int64) {
	n := sort.Search(len(m.epochs), func(i int) bool { return m.epochs[i].StartOffset > start })
	if n == 0 {
		return
	}
	first := m.epochs[n-1]
	first.StartOffset = start
	m.epochs = append([]log.LeaderEpochEntry{first}, m.epochs[n:]...)
}

func (m *model) latestEpoch() int32 {
	if len(m.epochs) == 0 {
		return log.UndefinedEpoch
	}
	return m.epochs[len(m.epochs)-1].Epoch
}

func (m *model) endOffsetFor(epoch int32) (int32, int64) {
	e := m.epochs
	if epoch == log.UndefinedEpoch {
		return log.UndefinedEpoch, log.UndefinedEpochOffset
	}
	if len(e) > 0 && e[len(e)-1].Epoch == epoch {
		return epoch, m.leo
	}
	higher := sort.Search(len(e), func(i int) bool { return e[i].Epoch > epoch })
	if higher == len(e) {
		return log.UndefinedEpoch, log.UndefinedEpochOffset
	}
	if higher == 0 {
		return epoch, e[0].StartOffset
	}
	return e[higher-1].Epoch, e[higher].StartOffset
}

// checkEpochCache checks that an epoch cache recovered from disk fits the
// batches: increasing entries, and each batch at or after the log start
// offset covered by its own epoch.
func checkEpochCache(t tb, entries []log.LeaderEpochEntry, batches []mbatch, logStart int64) {
	t.Helper()
	for i := 1; i < len(entries); i++ {
		require.Greater(t, entries[i].Epoch, entries[i-1].Epoch)
		require.Greater(t, entries[i].StartOffset, entries[i-1].StartOffset)
	}
	for _, b := range batches {
		if b.epoch < 0 || b.last < logStart {
			continue
		}
		i := sort.Search(len(entries), func(i int) bool { return entries[i].StartOffset > max(b.base, logStart) }) - 1
		require.GreaterOrEqual(t, i, 0, "batch at %d (epoch %d) before every epoch %v", b.base, b.epoch, entries)
		require.Equal(t, b.epoch, entries[i].Epoch, "epoch of the batch at %d in %v", b.base, entries)
	}
}

// checkLog compares the log with the model.
func (m *model) checkLog(t tb, l *log.Log, cfg log.Config) {
	t.Helper()
	require.Equal(t, m.leo, l.LogEndOffset(), "log end offset")
	require.Equal(t, m.logStart, l.LogStartOffset(), "log start offset")
	require.Equal(t, m.hw, l.HighWatermark(), "high watermark")
	require.GreaterOrEqual(t, l.DurableOffset(), min(m.knownDurable, m.leo), "durable offset")
	segs := l.Segments()
	require.NotEmpty(t, segs)
	require.True(t, segs[len(segs)-1].Active)
	require.Equal(t, m.leo, segs[len(segs)-1].NextOffset, "active segment's next offset")
	// The segments hold exactly the model's batches, in order.
	bi := 0
	for si, s := range segs {
		upper := int64(-1)
		if si+1 < len(segs) {
			upper = segs[si+1].BaseOffset
		}
		var size int64
		for bi < len(m.batches) && (upper < 0 || m.batches[bi].base < upper) {
			require.GreaterOrEqual(t, m.batches[bi].base, s.BaseOffset, "batch %d below its segment", m.batches[bi].base)
			size += m.batches[bi].size()
			bi++
		}
		require.Equal(t, size, s.Size, "size of segment %d", s.BaseOffset)
		if s.Size > cfg.SegmentBytes {
			require.Fail(t, "segment too large", "segment %d holds %d bytes", s.BaseOffset, s.Size)
		}
	}
	require.Equal(t, len(m.batches), bi, "batches beyond the segments")
	if len(m.batches) > 0 {
		require.GreaterOrEqual(t, m.logStart, segs[0].BaseOffset)
	}
	require.Equal(t, m.epochs, nonNil(l.LeaderEpochs()), "leader epoch cache")
	require.Equal(t, m.latestEpoch(), l.LatestEpoch(), "latest epoch")
}

// segmentIndex returns the index of the segment holding offset.
func segmentIndex(segs []log.SegmentInfo, offset int64) int {
	return sort.Search(len(segs), func(i int) bool { return segs[i].BaseOffset > offset }) - 1
}

// checkRead checks one Read against the model.
func (m *model) checkRead(t tb, l *log.Log, offset int64, maxBytes int, maxOffset int64) {
	t.Helper()
	res, err := l.Read(offset, maxBytes, maxOffset)
	if offset < m.logStart || offset > m.leo {
		require.ErrorIs(t, err, log.ErrOffsetOutOfRange)
		return
	}
	require.NoError(t, err)
	got := splitBatches(t, readRegion(t, &res))
	bound := m.leo
	if maxOffset >= 0 {
		bound = min(bound, maxOffset)
	}
	first := sort.Search(len(m.batches), func(i int) bool { return m.batches[i].last >= offset })
	if offset >= bound || first == len(m.batches) || m.batches[first].last >= bound {
		require.Empty(t, got, "read at %d (bound %d) should be empty", offset, bound)
		return
	}
	require.NotEmpty(t, got, "read at %d returned nothing", offset)
	var size int64
	for i, g := range got {
		want := m.batches[first+i]
		require.Equal(t, want.bytes, g.bytes, "batch %d of the read at %d", i, offset)
		require.Less(t, want.last, bound)
		size += want.size()
	}
	if len(got) > 1 {
		require.LessOrEqual(t, size, int64(maxBytes), "read beyond maxBytes")
	}
	// Maximal: the next batch would break a bound or lies in another
	// segment.
	next := first + len(got)
	if next < len(m.batches) {
		nb := m.batches[next]
		segs := l.Segments()
		sameSegment := segmentIndex(segs, nb.base) == segmentIndex(segs, m.batches[first].base)
		if nb.last < bound && size+nb.size() <= int64(maxBytes) && sameSegment {
			require.Fail(t, "read stopped early", "read at %d max %d returned %d batches (%d bytes); batch at %d (%d bytes) fits",
				offset, maxBytes, len(got), size, nb.base, nb.size())
		}
	}
}

// checkTimestamp checks OffsetForTimestamp(ts) against the model.
func (m *model) checkTimestamp(t tb, l *log.Log, ts int64) {
	t.Helper()
	got, err := l.OffsetForTimestamp(ts)
	require.NoError(t, err)
	switch ts {
	case log.LatestTimestamp:
		require.Equal(t, m.leo, got.Offset)
		return
	case log.EarliestTimestamp:
		require.Equal(t, m.logStart, got.Offset)
		return
	}
	want := int64(-1)
	wantTs := int64(-1)
	var wantEpoch int32 = log.UndefinedEpoch
	for _, b := range m.batches {
		for i, rts := range b.ts {
			if off := b.base + int64(i); off >= m.logStart && rts >= ts && want < 0 {
				want, wantTs, wantEpoch = off, rts, b.epoch
			}
		}
	}
	require.Equal(t, want, got.Offset, "offset for timestamp %d", ts)
	if want >= 0 {
		require.Equal(t, wantTs, got.Timestamp)
		require.Equal(t, wantEpoch, got.LeaderEpoch)
	}
}

// checkEpochs compares OffsetForLeaderEpoch answers with the model's.
func (m *model) checkEpochs(t tb, l *log.Log) {
	t.Helper()
	maxEpoch := int32(0)
	for _, b := range m.batches {
		maxEpoch = max(maxEpoch, b.epoch)
	}
	for e := int32(-1); e <= maxEpoch+1; e++ {
		we, wo := m.endOffsetFor(e)
		ge, gotOff := l.EndOffsetForEpoch(e)
		require.Equal(t, [2]int64{int64(we), wo}, [2]int64{int64(ge), gotOff}, "end offset for epoch %d", e)
	}
}

// adoptRecovered checks a log recovered after a crash against what the
// model allows, then makes it the model's truth. After a power failure
// what recovery finds is durable, so the model forgets older versions;
// after a close (reopened is true) the page cache still holds changes a
// later power failure may undo, so it keeps them.
func (m *model) adoptRecovered(t tb, l *log.Log, reopened bool) {
	t.Helper()
	recStart := l.LogStartOffset()
	lo, hi := m.logStarts[0].v, m.logStarts[0].v
	for _, s := range m.logStarts {
		lo, hi = min(lo, s.v), max(hi, s.v)
	}
	require.GreaterOrEqual(t, recStart, lo, "log start offset went below what was durable")
	require.LessOrEqual(t, recStart, hi, "log start offset beyond anything set")
	got := readAll(t, l)
	recEnd := l.LogEndOffset()
	candidates := append([]alt{{batches: m.batches, leo: m.leo, required: m.durableEnd}}, m.alts...)
	segs := l.Segments()
	var kept []mbatch
	found := false
	for i := range candidates {
		c := &candidates[i]
		// A prefix of this version, with everything durable in it, and
		// the segments hold its batches (also those below the log start).
		c.batches = m.withDeleted(c.batches)
		if !isPrefixFrom(got, c.batches, recStart) || recEnd > c.leo || recEnd < min(c.required, c.leo) {
			continue
		}
		kept = nil
		for _, b := range c.batches {
			if b.base >= segs[0].BaseOffset && b.last < recEnd {
				kept = append(kept, b)
			}
		}
		if segmentsHold(segs, kept) {
			found = true
			break
		}
	}
	require.True(t, found, "recovered log (%d batches from %d, end %d, segments %v) is no prefix of any version of the log "+
		"(current: end %d, durable %d; %d older versions)", len(got), recStart, recEnd, segs, m.leo, m.durableEnd, len(m.alts))
	m.batches = kept
	m.leo = l.LogEndOffset()
	m.hw = recStart
	m.durableEnd = min(m.durableEnd, m.leo)
	m.knownDurable = 0
	if reopened {
		if recStart != m.logStart {
			m.logStart = recStart
			m.seq++
			m.logStarts = append(m.logStarts, seqValue{m.seq, recStart})
		}
	} else {
		m.logStart = recStart
		m.alts = nil
		m.deleted = nil
		m.seq++
		m.logStarts = []seqValue{{m.seq, recStart}}
	}
	if os.Getenv("STRATA_LOG_TEST_VERBOSE") != "" {
		fmt.Fprintln(os.Stderr, "adopted:", describe(m.batches), "end", m.leo, "start", m.logStart, "epochs", l.LeaderEpochs(), "segments", l.Segments())
	}
	checkEpochCache(t, l.LeaderEpochs(), m.batches, m.logStart)
	m.epochs = nonNil(l.LeaderEpochs())
}

func nonNil(e []log.LeaderEpochEntry) []log.LeaderEpochEntry {
	if e == nil {
		return []log.LeaderEpochEntry{}
	}
	return e
}

// segmentsHold reports whether the segments hold exactly bs.
func segmentsHold(segs []log.SegmentInfo, bs []mbatch) bool {
	bi := 0
	for si, s := range segs {
		var size int64
		for bi < len(bs) && (si+1 == len(segs) || bs[bi].base < segs[si+1].BaseOffset) {
			if bs[bi].base < s.BaseOffset {
				return false
			}
			size += bs[bi].size()
			bi++
		}
		if size != s.Size {
			return false
		}
	}
	return bi == len(bs)
}

// isPrefixFrom reports whether got equals the batches of want that end at
// or after from, up to len(got).
func isPrefixFrom(got []storedBatch, want []mbatch, from int64) bool {
	i := 0
	for i < len(want) && want[i].last < from {
		i++
	}
	if len(want)-i < len(got) {
		return false
	}
	for j, g := range got {
		if !bytes.Equal(g.bytes, want[i+j].bytes) {
			return false
		}
	}
	return true
}

func describe(bs []mbatch) string {
	var b bytes.Buffer
	for _, x := range bs {
		fmt.Fprintf(&b, "[%d,%d]e%d ", x.base, x.last, x.epoch)
	}
	return b.String()
}
