package log_test

import (
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
)

// txnState is what became of a record.
type txnState int

const (
	statePlain txnState = iota // not transactional
	stateOngoing
	stateCommitted
	stateAborted
)

// trec is a record the txn workload appended.
type trec struct {
	offset int64
	key    string
	value  []byte // nil: a tombstone
	pid    int64  // -1 for plain records
	state  txnState
}

// abortInfo is an aborted transaction as the workload knows it.
type abortInfo struct {
	entry log.AbortedTxn
	// dataGoneAt is when a check first found none of its records in the
	// log (the zero time until then).
	dataGoneAt time.Time
	gone       bool
}

// txnWorkload appends plain and transactional batches and markers to a
// compacted log with a transaction index, keeping the model a
// read_committed consumer is checked against.
type txnWorkload struct {
	r       *rig
	recs    []trec
	seqs    map[int64]int32
	ongoing map[int64]int64 // producer -> first offset of its open transaction
	aborts  []*abortInfo
}

func newTxnWorkload(r *rig) *txnWorkload {
	return &txnWorkload{r: r, seqs: map[int64]int32{}, ongoing: map[int64]int64{}}
}

func (w *txnWorkload) plain(kvs ...kv) {
	w.r.T.Helper()
	raw := keyedBatch(w.r.Env.Now().UnixMilli(), kvs)
	info, err := w.r.l.Append(raw, 0)
	require.NoError(w.r.T, err)
	for i, x := range kvs {
		w.recs = append(w.recs, trec{offset: info.FirstOffset + int64(i), key: x.k, value: x.v, pid: -1})
	}
}

func (w *txnWorkload) txn(pid int64, kvs ...kv) {
	w.r.T.Helper()
	raw := keyedBatch(w.r.Env.Now().UnixMilli(), kvs, record.WithProducer(pid, 0, w.seqs[pid]), record.WithTransactional())
	w.seqs[pid] += int32(len(kvs))
	info, err := w.r.l.Append(raw, 0)
	require.NoError(w.r.T, err)
	if _, ok := w.ongoing[pid]; !ok {
		w.ongoing[pid] = info.FirstOffset
	}
	for i, x := range kvs {
		w.recs = append(w.recs, trec{offset: info.FirstOffset + int64(i), key: x.k, value: x.v, pid: pid, state: stateOngoing})
	}
}

// end writes producer pid's marker, with the index entry for an abort.
func (w *txnWorkload) end(pid int64, commit bool) {
	w.r.T.Helper()
	first, ok := w.ongoing[pid]
	require.True(w.r.T, ok, "producer %d has no open transaction", pid)
	ct := record.ControlAbort
	if commit {
		ct = record.ControlCommit
	}
	raw, err := record.BuildEndTxnMarker(pid, 0, ct, 1, w.r.Env.Now().UnixMilli())
	require.NoError(w.r.T, err)
	info, err := w.r.l.AppendCoordinator(raw, 0)
	require.NoError(w.r.T, err)
	delete(w.ongoing, pid)
	state := stateCommitted
	if !commit {
		state = stateAborted
		e := log.AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: info.FirstOffset, LastStableOffset: w.lso()}
		require.NoError(w.r.T, w.r.l.AppendAbortedTxn(e))
		w.aborts = append(w.aborts, &abortInfo{entry: e})
	}
	for i := range w.recs {
		if w.recs[i].pid == pid && w.recs[i].state == stateOngoing {
			w.recs[i].state = state
		}
	}
}

// lso is the first offset of the oldest open transaction, or the log end.
func (w *txnWorkload) lso() int64 {
	lso := w.r.l.LogEndOffset()
	for _, first := range w.ongoing { //determinism:unordered a minimum
		lso = min(lso, first)
	}
	return lso
}

// consumed reads the log below the last stable offset as a read_committed
// Kafka consumer does (Fetcher.nextFetchedRecord): the aborted list from
// the index; a producer's data is dropped from the first offset of one of
// its aborted transactions until its ABORT marker; control batches are
// never delivered. It returns the delivered records in order, and the
// offsets of the ABORT and COMMIT markers it read.
func (w *txnWorkload) consumed(t tb) (got []trec, markers map[int64]bool) {
	t.Helper()
	l := w.r.l
	lso := w.lso()
	aborted := l.AbortedTxns(l.LogStartOffset(), lso)
	sort.SliceStable(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	skipping := map[int64]bool{}
	markers = map[int64]bool{}
	rr := record.NewRecordReader(record.NewDecompressor(record.DefaultMaxDecompressedBytes))
	for _, sb := range readAll(t, l) {
		if sb.base >= lso {
			break
		}
		b, err := record.ReadBatch(sb.bytes, len(sb.bytes))
		require.NoError(t, err)
		for len(aborted) > 0 && aborted[0].FirstOffset <= b.LastOffset() {
			skipping[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		a := b.Attributes()
		if a.IsControl() {
			m, ok, err := record.ReadEndTxnMarker(b)
			require.NoError(t, err)
			require.True(t, ok)
			if m.Type == record.ControlAbort {
				delete(skipping, b.ProducerID())
			}
			markers[b.BaseOffset()] = true
			continue
		}
		if a.IsTransactional() && skipping[b.ProducerID()] {
			continue
		}
		require.NoError(t, rr.Reset(b))
		for rr.Next() {
			rec := rr.Record()
			pid := int64(-1)
			if a.IsTransactional() {
				pid = b.ProducerID()
			}
			got = append(got, trec{offset: rec.Offset, key: string(rec.Key), value: append([]byte(nil), rec.Value...), pid: pid})
			if rec.Value == nil {
				got[len(got)-1].value = nil
			}
		}
		require.NoError(t, rr.Err())
	}
	return got, markers
}

// check compares what a read_committed consumer reads with the model:
// nothing aborted or undecided is delivered, every delivered record was
// appended with that offset, key and value, and the latest delivered
// value of each key is the latest committed (or plain) one below the last
// stable offset (a key whose latest is a tombstone may be gone). Then the
// markers: an ABORT marker stays until delete.retention.ms after a check
// first found its data gone.
func (w *txnWorkload) check(t tb, retention time.Duration) {
	t.Helper()
	got, markers := w.consumed(t)
	byOffset := map[int64]trec{}
	for _, r := range w.recs {
		byOffset[r.offset] = r
	}
	lso := w.lso()
	latestGot := map[string]trec{}
	for _, g := range got {
		want, ok := byOffset[g.offset]
		require.True(t, ok, "delivered a record at %d that was never appended", g.offset)
		require.Equal(t, want.key, g.key, "offset %d", g.offset)
		require.Equal(t, want.value, g.value, "offset %d", g.offset)
		require.True(t, want.state == statePlain || want.state == stateCommitted,
			"delivered record %d of state %d (aborted or undecided)", g.offset, want.state)
		latestGot[g.key] = g
	}
	latestWant := map[string]trec{}
	for _, r := range w.recs {
		if r.offset < lso && (r.state == statePlain || r.state == stateCommitted) {
			latestWant[r.key] = r
		}
	}
	for k, want := range latestWant { //determinism:unordered each key is checked on its own
		g, ok := latestGot[k]
		if want.value == nil {
			require.True(t, !ok || g.offset == want.offset, "key %s: its tombstone at %d is its latest, got %v", k, want.offset, g)
			continue
		}
		require.True(t, ok, "key %s: its latest committed value at %d is gone", k, want.offset)
		require.Equal(t, want.offset, g.offset, "key %s: the latest committed value", k)
	}
	for k := range latestGot { //determinism:unordered membership only
		_, ok := latestWant[k]
		require.True(t, ok, "key %s delivered but never committed", k)
	}
	w.track(t, retention, markers)
}

// track notes when the data of each aborted transaction is first found
// gone, and checks that no ABORT marker went within delete.retention.ms
// of that (markers: the markers below the last stable offset).
func (w *txnWorkload) track(t tb, retention time.Duration, markers map[int64]bool) {
	t.Helper()
	lso := w.lso()
	data := map[int64]int{} // marker offset -> records of the transaction left
	for _, sb := range readAll(t, w.r.l) {
		b, err := record.ReadBatch(sb.bytes, len(sb.bytes))
		require.NoError(t, err)
		if b.Attributes().IsControl() {
			markers[b.BaseOffset()] = true
			continue
		}
		if !b.Attributes().IsTransactional() {
			continue
		}
		for _, a := range w.aborts {
			e := a.entry
			if b.ProducerID() == e.ProducerID && b.BaseOffset() >= e.FirstOffset && b.BaseOffset() < e.LastOffset {
				data[e.LastOffset] += int(b.RecordCount())
			}
		}
	}
	now := w.r.Env.Now()
	for _, a := range w.aborts {
		if a.entry.LastOffset < w.r.l.LogStartOffset() {
			continue
		}
		if !a.gone || now.Before(a.dataGoneAt.Add(retention)) {
			require.True(t, markers[a.entry.LastOffset] || a.entry.LastOffset >= lso,
				"the ABORT marker at %d went within delete.retention.ms (%v) of its data (gone: %v at %v, now %v)",
				a.entry.LastOffset, retention, a.gone, a.dataGoneAt, now)
		}
		if !a.gone && data[a.entry.LastOffset] == 0 {
			a.gone, a.dataGoneAt = true, now
		}
	}
}

// clean makes the log cleanable up to the last stable offset, as the
// partition does, and cleans until the cleaner has nothing left.
// It tracks the aborted transactions' data after every step (track).
func (w *txnWorkload) clean(budget int64) {
	r := w.r
	r.T.Helper()
	r.cleanable()
	r.l.SetLastStableOffset(w.lso())
	for steps := 0; ; steps++ {
		require.Less(r.T, steps, 100000, "the cleaner does not finish")
		more := false
		require.NoError(r.T, r.Wait(func(done func(error)) {
			r.l.CleanStep(r.Env.Now(), budget, func(m bool, err error) {
				more = m
				done(err)
			})
		}))
		w.track(r.T, r.cfg.DeleteRetention, map[int64]bool{})
		if !more {
			return
		}
	}
}

// txnCompactConfig is compactConfig with a transaction index.
func txnCompactConfig() log.Config {
	cfg := compactConfig()
	cfg.TxnIndex = true
	cfg.DeleteRetention = time.Second
	return cfg
}

// TestCleanerTransactions: two producers' transactions interleaved with
// plain records, one committing and one aborting over the same keys; a
// cleaning removes the aborted records (keeping an empty batch of the
// producer's newest aborted transaction), keeps the committed ones and
// every marker; read back as a read_committed consumer, nothing changes.
// Then the markers of aborted transactions without data go, once
// delete.retention.ms has passed since a cleaning found their data gone.
func TestCleanerTransactions(t *testing.T) {
	r := newRig(t, 11, txnCompactConfig())
	require.NoError(t, r.l.CompleteAbortedIndex(0))
	w := newTxnWorkload(r)
	w.plain(put("a", "a0"), put("b", "b0"))
	w.txn(1, put("a", "a1-committed"))
	w.txn(2, put("a", "a2-aborted"), put("c", "c2-aborted"))
	w.plain(put("d", "d0"))
	w.txn(1, put("b", "b1-committed"))
	w.txn(2, put("b", "b2-aborted"))
	w.end(2, false)
	w.end(1, true)
	w.txn(2, put("c", "c2-aborted-again"))
	w.end(2, false)
	w.txn(3, put("e", "e3-aborted"))
	w.end(3, false)
	w.plain(put("d", "d1"))
	w.check(t, time.Second)
	before, _ := w.consumed(t)

	w.clean(1 << 20)
	w.check(t, time.Second)
	after, markers := w.consumed(t)
	require.Equal(t, len(before)-1, len(after), "only d0, superseded by d1, goes from what a consumer sees")
	stats := r.l.CleanerInfo(r.Env.Now()).Stats
	require.Equal(t, int64(5+1), stats.RecordsRemoved, "the 5 aborted records and d0")
	for _, a := range w.aborts {
		require.True(t, markers[a.entry.LastOffset], "markers stay in the first cleaning")
	}
	require.Len(t, r.l.AbortedTxns(0, math.MaxInt64), 3)

	// The first aborted transaction of producer 2 is not its newest: its
	// batches went whole, so its marker gets a horizon at the next
	// cleaning and goes once it passes. The newest aborted transactions
	// of producers 2 and 3 keep an empty batch, and so their markers.
	w.clean(1 << 20)
	r.Run(500 * time.Millisecond)
	w.clean(1 << 20)
	w.check(t, time.Second)
	_, markers = w.consumed(t)
	require.True(t, markers[w.aborts[0].entry.LastOffset], "within delete.retention.ms")
	r.Run(600 * time.Millisecond)
	w.clean(1 << 20)
	w.check(t, time.Second)
	_, markers = w.consumed(t)
	require.False(t, markers[w.aborts[0].entry.LastOffset], "gone after delete.retention.ms")
	require.True(t, markers[w.aborts[1].entry.LastOffset])
	require.True(t, markers[w.aborts[2].entry.LastOffset])
	require.Equal(t, []log.AbortedTxn{w.aborts[1].entry, w.aborts[2].entry}, r.l.AbortedTxns(0, math.MaxInt64),
		"the removed marker's entry went with it")

	// All of it survives a restart, and the cleaned segments' indexes
	// are trusted again.
	r.shutdown()
	r.open()
	require.Equal(t, r.l.LogEndOffset(), r.l.AbortedIndexEnd())
	require.NoError(t, r.l.CompleteAbortedIndex(r.l.LogEndOffset()))
	require.Equal(t, []log.AbortedTxn{w.aborts[1].entry, w.aborts[2].entry}, r.l.AbortedTxns(0, math.MaxInt64))
	w.check(t, time.Second)
}

// The cleaner leaves a log alone until its owner completed the index.
func TestCleanerWaitsForTheIndex(t *testing.T) {
	r := newRig(t, 12, txnCompactConfig())
	w := newTxnWorkload(r)
	w.plain(put("a", "a0"))
	w.plain(put("a", "a1"))
	r.cleanable()
	require.Equal(t, 1, r.clean(1<<20), "one step that does nothing")
	require.Zero(t, r.l.CleanerInfo(r.Env.Now()).Stats.Cleanings)
	require.NoError(t, r.l.CompleteAbortedIndex(r.l.LogEndOffset()))
	w.clean(1 << 20)
	require.Equal(t, 1, r.l.CleanerInfo(r.Env.Now()).Stats.Cleanings)
}

// TestCleanerTransactionsProperty: random plain and transactional
// appends, commits and aborts, rolls, cleanings, passing time and
// restarts. After every step a read_committed consumer sees the latest
// committed value of each key (compaction never changes it) and no
// aborted or undecided record, and no ABORT marker goes within
// delete.retention.ms of its data. Tombstones go only to keys no
// transaction writes: committed transactional records are exempt from
// compaction, so a tombstone removed past its horizon would let an older
// committed transactional value of its key show again (a documented limit).
func TestCleanerTransactionsProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := txnCompactConfig()
		cfg.SegmentBytes = rapid.Int64Range(600, 4000).Draw(rt, "segmentBytes")
		cfg.DeleteRetention = time.Duration(rapid.Int64Range(0, 2000).Draw(rt, "deleteRetentionMs")) * time.Millisecond
		cfg.MinCleanableDirtyRatio = rapid.SampledFrom([]float64{0, 0.3}).Draw(rt, "dirtyRatio")
		r := newRig(rt, rapid.Uint64().Draw(rt, "seed"), cfg)
		require.NoError(rt, r.l.CompleteAbortedIndex(0))
		w := newTxnWorkload(r)
		keys := rapid.IntRange(2, 12).Draw(rt, "keys")
		producers := rapid.IntRange(1, 4).Draw(rt, "producers")
		key := func(t *rapid.T, txn bool) string {
			k := rapid.IntRange(0, keys-1).Draw(t, "key")
			if txn {
				k &^= 1 // transactions write even keys only
			}
			return fmt.Sprintf("k%d", k)
		}
		value := func(t *rapid.T, k string) []byte {
			return []byte(fmt.Sprintf("%s@%d/%d", k, r.l.LogEndOffset(), rapid.IntRange(0, 1<<20).Draw(t, "v")))
		}
		rt.Repeat(map[string]func(*rapid.T){
			"plain": func(t *rapid.T) {
				k := key(t, false)
				if k[len(k)-1]%2 == 1 && rapid.IntRange(0, 3).Draw(t, "tombstone") == 0 {
					w.plain(tombstone(k))
					return
				}
				w.plain(kv{k: k, v: value(t, k)})
			},
			"txn": func(t *rapid.T) {
				pid := int64(rapid.IntRange(1, producers).Draw(t, "pid"))
				var kvs []kv
				for i := rapid.IntRange(1, 3).Draw(t, "records"); i > 0; i-- {
					k := key(t, true)
					kvs = append(kvs, kv{k: k, v: value(t, k)})
				}
				w.txn(pid, kvs...)
			},
			"end": func(t *rapid.T) {
				pid := int64(rapid.IntRange(1, producers).Draw(t, "pid"))
				if _, ok := w.ongoing[pid]; ok {
					w.end(pid, rapid.Bool().Draw(t, "commit"))
				}
			},
			"roll": func(t *rapid.T) { require.NoError(t, r.l.Roll()) },
			"clean": func(t *rapid.T) {
				w.clean(rapid.Int64Range(64, 1<<16).Draw(t, "budget"))
			},
			"time": func(t *rapid.T) {
				r.Run(time.Duration(rapid.IntRange(0, 1500).Draw(t, "ms")) * time.Millisecond)
			},
			"reopen": func(t *rapid.T) {
				r.shutdown()
				r.open()
				require.NoError(t, r.l.CompleteAbortedIndex(r.l.LogEndOffset()))
			},
			"": func(t *rapid.T) { w.check(t, cfg.DeleteRetention) },
		})
	})
}
