package log_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/log"
)

// txnConfig is smallConfig with a transaction index.
func txnConfig() log.Config {
	cfg := smallConfig()
	cfg.TxnIndex = true
	return cfg
}

// newTxnRig is a rig whose log keeps a transaction index, completed on the
// empty log.
func newTxnRig(t *testing.T, seed uint64) *rig {
	t.Helper()
	r := newRig(t, seed, txnConfig())
	require.NoError(t, r.l.CompleteAbortedIndex(0))
	return r
}

// openTxn opens the log and completes its (empty or trusted) index, as
// an owner with nothing to replay does.
func (r *rig) openTxn() {
	r.T.Helper()
	r.open()
	require.NoError(r.T, r.l.CompleteAbortedIndex(r.l.LogEndOffset()))
}

// appendMarker appends a batch standing for an ABORT marker of producer
// pid whose transaction began span offsets earlier, and its index entry.
func (r *rig) appendMarker(pid, span int64) log.AbortedTxn {
	r.T.Helper()
	info, err := r.l.Append(build(batchSpec{records: 1, valueSize: 10, timestamp: 1}), 0)
	require.NoError(r.T, err)
	t := log.AbortedTxn{ProducerID: pid, FirstOffset: max(0, info.LastOffset-span), LastOffset: info.LastOffset, LastStableOffset: info.LastOffset}
	require.NoError(r.T, r.l.AppendAbortedTxn(t))
	return t
}

// appendAborted appends n aborted transactions, each a data batch of two
// records and a marker (appendMarker) of producer pid(i) spanning one
// offset, and returns their index entries.
func (r *rig) appendAborted(n int, pid func(i int) int64) []log.AbortedTxn {
	r.T.Helper()
	var out []log.AbortedTxn
	for i := 0; i < n; i++ {
		r.appendData(2)
		out = append(out, r.appendMarker(pid(i), 1))
	}
	return out
}

func (r *rig) appendData(records int) {
	r.T.Helper()
	_, err := r.l.Append(build(batchSpec{records: records, valueSize: 100, timestamp: 1}), 0)
	require.NoError(r.T, err)
}

func allAborted(l *log.Log) []log.AbortedTxn { return l.AbortedTxns(0, math.MaxInt64) }

func txnFiles(t *testing.T, r *rig) map[string]int64 {
	t.Helper()
	names, err := r.Env.Disk().List(testDir)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, n := range names {
		if strings.HasSuffix(n, ".txnindex") {
			data, ok := r.Proc.Disk().ReadFile(testDir + "/" + n)
			require.True(t, ok)
			out[n] = int64(len(data))
		}
	}
	return out
}

func TestTxnIndexAppendReadRollReopen(t *testing.T) {
	r := newRig(t, 1, txnConfig())
	require.NoError(t, r.l.CompleteAbortedIndex(r.l.LogEndOffset()))
	var want []log.AbortedTxn
	for i := 0; i < 40; i++ {
		r.appendData(3)
		want = append(want, r.appendMarker(int64(i%4), 2))
	}
	require.Greater(t, r.l.NumSegments(), 3, "the entries span several segments")
	require.Equal(t, want, allAborted(r.l))

	// Kafka's collectAbortedTransactions: marker at or after from, first
	// batch below upto.
	from, upto := want[10].LastOffset, want[20].FirstOffset+1
	var sub []log.AbortedTxn
	for _, t := range want {
		if t.LastOffset >= from && t.FirstOffset < upto {
			sub = append(sub, t)
		}
	}
	require.Equal(t, sub, r.l.AbortedTxns(from, upto))
	require.Empty(t, r.l.AbortedTxns(r.l.LogEndOffset(), math.MaxInt64))

	// Each segment's file holds the entries of the markers it holds.
	files := txnFiles(t, r)
	total := int64(0)
	for _, seg := range r.l.Segments() {
		n := 0
		for _, t := range want {
			if t.LastOffset >= seg.BaseOffset && t.LastOffset < seg.NextOffset {
				n++
			}
		}
		name := fmt.Sprintf("%020d.txnindex", seg.BaseOffset)
		if n > 0 {
			require.Equal(t, int64(34*n), files[name], name)
		}
		total += files[name]
	}
	require.Equal(t, int64(34*len(want)), total)

	r.shutdown()
	r.open()
	require.Equal(t, r.l.LogEndOffset(), r.l.AbortedIndexEnd(), "a clean shutdown leaves the index complete")
	require.Equal(t, want, allAborted(r.l))
	require.NoError(t, r.l.CompleteAbortedIndex(r.l.LogEndOffset()))
	want = append(want, r.appendMarker(9, 0))
	require.Equal(t, want, allAborted(r.l))
}

func TestTxnIndexRejectsBadEntries(t *testing.T) {
	r := newRig(t, 2, txnConfig())
	r.appendData(2)
	// Before the owner completes the index nothing below its end goes in.
	require.Equal(t, int64(0), r.l.AbortedIndexEnd())
	require.NoError(t, r.l.CompleteAbortedIndex(r.l.LogEndOffset()))
	require.ErrorIs(t, r.l.CompleteAbortedIndex(r.l.LogEndOffset()+1), log.ErrInvalidArgument)
	m := r.appendMarker(1, 1)
	for name, bad := range map[string]log.AbortedTxn{
		"not after the last": m,
		"beyond the log end": {ProducerID: 1, FirstOffset: 0, LastOffset: r.l.LogEndOffset()},
		"first after last":   {ProducerID: 1, FirstOffset: m.LastOffset + 1, LastOffset: m.LastOffset},
		"negative producer":  {ProducerID: -1, FirstOffset: 0, LastOffset: m.LastOffset},
	} { //determinism:unordered each case is checked on its own
		require.ErrorIs(t, r.l.AppendAbortedTxn(bad), log.ErrInvalidArgument, name)
	}
	require.Equal(t, []log.AbortedTxn{m}, allAborted(r.l))

	off := newRig(t, 3, smallConfig())
	require.ErrorIs(t, off.l.AppendAbortedTxn(m), log.ErrInvalidArgument, "no index configured")
	require.ErrorIs(t, off.l.CompleteAbortedIndex(0), log.ErrInvalidArgument)
	require.Empty(t, allAborted(off.l))
}

func TestTxnIndexTruncate(t *testing.T) {
	r := newTxnRig(t, 4)
	want := r.appendAborted(30, func(i int) int64 { return int64(i % 3) })
	require.NoError(t, r.flush())
	to := want[17].LastOffset // the marker itself goes
	require.NoError(t, r.Wait(func(done func(error)) { r.l.Truncate(to, done) }))
	require.Equal(t, want[:17], allAborted(r.l))
	sum := int64(0)
	for _, n := range txnFiles(t, r) {
		sum += n
	}
	require.Equal(t, int64(17*34), sum, "the files lose the entries at or past the cut")
	// Appends continue after the cut, and the index with them.
	r.appendData(1)
	want = append(want[:17], r.appendMarker(7, 0))
	require.Equal(t, want, allAborted(r.l))

	r.shutdown()
	r.open()
	require.Equal(t, want, allAborted(r.l))

	require.NoError(t, r.Wait(func(done func(error)) { r.l.TruncateFullyAndStartAt(1000, done) }))
	require.Empty(t, allAborted(r.l))
	require.Empty(t, txnFiles(t, r))
}

// A crash loses the entries the last checkpoint did not vouch for; the
// owner adds them back from its replay.
func TestTxnIndexCrashMidWrite(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := newTxnRig(t, seed)
			want := r.appendAborted(12, func(i int) int64 { return int64(i) })
			require.NoError(t, r.Wait(r.l.Shutdown))
			r.open() // a clean shutdown: complete to the end
			require.NoError(t, r.l.CompleteAbortedIndex(r.l.LogEndOffset()))
			durable := r.l.LogEndOffset()
			want = append(want, r.appendAborted(12, func(i int) int64 { return int64(i) })...)
			r.crash()
			r.open()
			end := r.l.AbortedIndexEnd()
			require.GreaterOrEqual(t, end, durable, "a durable checkpoint's index end survives")
			var below []log.AbortedTxn
			for _, w := range want {
				if w.LastOffset < end {
					below = append(below, w)
				}
			}
			require.Equal(t, below, allAborted(r.l), "exactly the entries below the index end")
			for _, w := range want[len(below):] {
				if w.LastOffset < r.l.LogEndOffset() {
					require.NoError(t, r.l.AppendAbortedTxn(w))
					below = append(below, w)
				}
			}
			require.NoError(t, r.l.CompleteAbortedIndex(r.l.LogEndOffset()))
			require.NoError(t, r.flush())
			require.Equal(t, below, allAborted(r.l))
		})
	}
}

// damageTxnIndex rewrites the .txnindex of the segment based at base.
func damageTxnIndex(t *testing.T, r *rig, base int64, damage func([]byte) []byte) {
	t.Helper()
	d := r.Env.Disk()
	name := fmt.Sprintf("%s/%020d.txnindex", testDir, base)
	f, err := d.Open(name, false)
	require.NoError(t, err)
	buf := make([]byte, f.Size())
	_, err = f.ReadAt(buf, 0)
	require.NoError(t, err)
	buf = damage(buf)
	require.NoError(t, f.Truncate(0))
	require.NoError(t, f.WriteAt(buf, 0))
	require.NoError(t, f.Close())
}

func TestTxnIndexDamagedFile(t *testing.T) {
	cases := map[string]struct {
		damage func([]byte) []byte
		// lowers: Open empties the file and the index end falls to the
		// segment's base; otherwise to after its last whole entry.
		lowers bool
	}{
		"bad version":      {damage: func(b []byte) []byte { b[34] = 7; return b }, lowers: true},
		"marker outside":   {damage: func(b []byte) []byte { binary.BigEndian.PutUint64(b[18:], 1); return b }, lowers: true},
		"out of order":     {damage: func(b []byte) []byte { copy(b[34:68], b[0:34]); return b }, lowers: true},
		"first after last": {damage: func(b []byte) []byte { binary.BigEndian.PutUint64(b[10:], 1<<40); return b }, lowers: true},
		"short (torn)":     {damage: func(b []byte) []byte { return b[:len(b)-5] }},
		"garbage tail":     {damage: func(b []byte) []byte { return append(b, 0xff, 0xff, 0xff) }},
	}
	for name, c := range cases { //determinism:unordered subtests are independent
		t.Run(name, func(t *testing.T) {
			r := newTxnRig(t, 7)
			want := r.appendAborted(30, func(i int) int64 { return int64(i) })
			segs := r.l.Segments()
			require.GreaterOrEqual(t, len(segs), 3)
			victim := segs[1]
			r.shutdown()
			damageTxnIndex(t, r, victim.BaseOffset, c.damage)
			r.open() // never a panic, never a failed Open
			end := r.l.AbortedIndexEnd()
			if c.lowers {
				require.Equal(t, victim.BaseOffset, end, "the index end falls to the damaged segment")
			} else {
				// A torn entry: the end falls to just after the last whole one.
				require.GreaterOrEqual(t, end, victim.BaseOffset)
				require.LessOrEqual(t, end, victim.NextOffset)
			}
			var below, rest []log.AbortedTxn
			for _, w := range want {
				if w.LastOffset < end {
					below = append(below, w)
				} else {
					rest = append(rest, w)
				}
			}
			got := allAborted(r.l)
			require.Equal(t, below, got)
			for _, w := range rest {
				require.NoError(t, r.l.AppendAbortedTxn(w))
			}
			require.NoError(t, r.l.CompleteAbortedIndex(r.l.LogEndOffset()))
			require.Equal(t, want, allAborted(r.l))
			r.shutdown()
			r.open()
			require.Equal(t, want, allAborted(r.l), "rebuilt durably")
		})
	}
}

// A checkpoint without txn-index-end (a log that kept no index) trusts no
// entry: the owner replays everything.
func TestTxnIndexTurnedOnLater(t *testing.T) {
	r := newRig(t, 8, smallConfig())
	for i := 0; i < 20; i++ {
		r.appendData(3)
	}
	r.shutdown()
	r.cfg = txnConfig()
	r.open()
	require.Equal(t, r.l.LogStartOffset(), r.l.AbortedIndexEnd())
	require.NoError(t, r.l.AppendAbortedTxn(log.AbortedTxn{ProducerID: 1, FirstOffset: 3, LastOffset: 10, LastStableOffset: 3}))
	require.NoError(t, r.l.CompleteAbortedIndex(r.l.LogEndOffset()))
	require.NoError(t, r.flush())
	r.shutdown()
	r.open()
	require.Equal(t, r.l.LogEndOffset(), r.l.AbortedIndexEnd())
	require.Len(t, allAborted(r.l), 1)
}

// Retention deletes a segment's index with it.
func TestTxnIndexRetention(t *testing.T) {
	r := newTxnRig(t, 9)
	want := r.appendAborted(30, func(i int) int64 { return int64(i) })
	require.NoError(t, r.flush())
	r.l.SetHighWatermark(r.l.LogEndOffset())
	segs := r.l.Segments()
	require.NoError(t, r.l.DeleteRecordsBefore(segs[2].BaseOffset))
	_, err := r.l.ApplyRetention(r.Env.Now())
	require.NoError(t, err)
	require.NoError(t, r.flush())
	var kept []log.AbortedTxn
	for _, w := range want {
		if w.LastOffset >= segs[2].BaseOffset {
			kept = append(kept, w)
		}
	}
	require.Equal(t, kept, r.l.AbortedTxns(r.l.LogStartOffset(), math.MaxInt64))
	for name := range txnFiles(t, r) { //determinism:unordered only checks each name
		require.NotEqual(t, fmt.Sprintf("%020d.txnindex", segs[0].BaseOffset), name)
	}
}
