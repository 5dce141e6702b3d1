package log_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
)

// TestCompactLatestPerKeyProperty drives a compacted log with random
// appends of keyed records and tombstones, rolls, flushes, cleanings (whole
// or a few bounded steps), power failures between and during cleaner steps,
// clean restarts and the passing of time, and checks it against a map model
// after every step:
//
//   - every record read is one that was appended (offset, key, value,
//     timestamp), in increasing offsets;
//   - every key's latest record is there, except a tombstone, which may go
//     only once delete.retention.ms has passed since it was appended;
//   - below the first dirty offset F each key has at most one record, the
//     latest below F; after a complete cleaning exactly that record is
//     there unless it is an expired tombstone (compaction keeps exactly
//     the latest value per key of what it cleaned); otherwise a cleaning
//     in progress, or one a crash interrupted after some swaps, may also
//     have removed it for a later record of its key;
//   - after a complete cleaning, F is the cleanable end;
//   - a read from any offset returns the first batch that holds an offset
//     at or after it.
func TestCompactLatestPerKeyProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		newCompactMachine(rt).run(rt)
	})
}

type compactMachine struct {
	r      *rig
	m      *keyModel
	cfg    log.Config
	keys   int
	codecs bool
}

func newCompactMachine(t *rapid.T) *compactMachine {
	cfg := compactConfig()
	cfg.SegmentBytes = rapid.Int64Range(600, 4000).Draw(t, "segmentBytes")
	cfg.IndexIntervalBytes = rapid.Int64Range(0, 800).Draw(t, "indexInterval")
	cfg.SegmentIndexBytes = rapid.SampledFrom([]int64{24, 96, 4096}).Draw(t, "segmentIndexBytes")
	cfg.MaxOpenFiles = rapid.IntRange(4, 10).Draw(t, "maxOpenFiles")
	cfg.DeleteRetention = time.Duration(rapid.Int64Range(0, 2000).Draw(t, "deleteRetentionMs")) * time.Millisecond
	cfg.CleanerDedupeBufferBytes = rapid.SampledFrom([]int64{1024, 1 << 20}).Draw(t, "dedupeBytes")
	cfg.MinCleanableDirtyRatio = rapid.SampledFrom([]float64{0, 0.3}).Draw(t, "dirtyRatio")
	seed := rapid.Uint64().Draw(t, "seed")
	return &compactMachine{
		r: newRig(t, seed, cfg), m: newKeyModel(), cfg: cfg,
		keys:   rapid.IntRange(1, 30).Draw(t, "keys"),
		codecs: rapid.Bool().Draw(t, "codecs"),
	}
}

func (cm *compactMachine) run(t *rapid.T) {
	t.Repeat(map[string]func(*rapid.T){
		"append":       cm.append,
		"roll":         func(t *rapid.T) { require.NoError(t, cm.r.l.Roll()) },
		"flush":        cm.flush,
		"cleanAll":     cm.cleanAll,
		"cleanSome":    cm.cleanSome,
		"crashMidStep": cm.crashMidStep,
		"time":         func(t *rapid.T) { cm.r.Run(time.Duration(rapid.IntRange(0, 1500).Draw(t, "ms")) * time.Millisecond) },
		"reopen":       cm.reopen,
		"":             func(t *rapid.T) { cm.check(t, false) },
	})
}

func (cm *compactMachine) append(t *rapid.T) {
	n := rapid.IntRange(1, 5).Draw(t, "records")
	var kvs []kv
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("k%d", rapid.IntRange(0, cm.keys-1).Draw(t, "key"))
		if rapid.IntRange(0, 4).Draw(t, "tombstone") == 0 {
			kvs = append(kvs, tombstone(k))
		} else {
			kvs = append(kvs, put(k, fmt.Sprintf("%s@%d/%d", k, cm.r.l.LogEndOffset()+int64(i), rapid.IntRange(0, 1<<20).Draw(t, "value"))))
		}
	}
	var opts []record.BuilderOption
	if cm.codecs {
		opts = append(opts, record.WithCompression(rapid.SampledFrom([]record.Codec{
			record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}).Draw(t, "codec")))
	}
	cm.r.appendKeyed(cm.m, kvs, opts...)
}

func (cm *compactMachine) flush(t *rapid.T) {
	require.NoError(t, cm.r.flush())
	cm.r.l.SetHighWatermark(cm.r.l.LogEndOffset())
}

// cleanAll makes everything cleanable and cleans until the cleaner has
// nothing left; then, unless min.cleanable.dirty.ratio held the cleaner
// back, everything below the active segment is clean.
func (cm *compactMachine) cleanAll(t *rapid.T) {
	cm.r.cleanable()
	cm.r.clean(rapid.Int64Range(64, 1<<16).Draw(t, "budget"))
	info := cm.r.l.CleanerInfo(cm.r.Env.Now())
	require.False(t, info.InProgress)
	complete := cm.cfg.MinCleanableDirtyRatio == 0
	if complete {
		require.Equal(t, info.CleanableEnd, info.FirstDirtyOffset, "a complete cleaning leaves nothing dirty")
	}
	cm.check(t, complete)
}

// cleanSome runs a few steps, which may leave a cleaning half done.
func (cm *compactMachine) cleanSome(t *rapid.T) {
	cm.r.l.SetHighWatermark(cm.r.l.LogEndOffset())
	steps := rapid.IntRange(1, 6).Draw(t, "steps")
	budget := rapid.Int64Range(64, 4096).Draw(t, "budget")
	for i := 0; i < steps; i++ {
		more := false
		require.NoError(t, cm.r.Wait(func(done func(error)) {
			cm.r.l.CleanStep(cm.r.Env.Now(), budget, func(m bool, err error) { more = m; done(err) })
		}))
		if !more {
			break
		}
	}
}

// crashMidStep flushes (so that the model loses nothing), starts a cleaner
// step and loses power a moment later, maybe inside its syncs or swap.
func (cm *compactMachine) crashMidStep(t *rapid.T) {
	cm.flush(t)
	for i := rapid.IntRange(0, 8).Draw(t, "stepsBefore"); i > 0; i-- {
		more := false
		require.NoError(t, cm.r.Wait(func(done func(error)) {
			cm.r.l.CleanStep(cm.r.Env.Now(), 512, func(m bool, err error) { more = m; done(err) })
		}))
		if !more {
			break
		}
	}
	cm.r.l.CleanStep(cm.r.Env.Now(), rapid.Int64Range(64, 8192).Draw(t, "budget"), func(bool, error) {})
	cm.r.Run(time.Duration(rapid.IntRange(0, 3000).Draw(t, "us")) * time.Microsecond)
	cm.r.crash()
	cm.r.open()
	cm.check(t, false)
}

func (cm *compactMachine) reopen(t *rapid.T) {
	cm.r.shutdown()
	cm.r.open()
}

// check compares the log with the model (see the test's doc).
func (cm *compactMachine) check(t *rapid.T, complete bool) {
	l, now := cm.r.l, cm.r.Env.Now().UnixMilli()
	got, batches := readRecords(t, l)
	expired := func(r srec) bool { return r.tomb && now-r.ts >= cm.cfg.DeleteRetention.Milliseconds() }
	latest := map[string]srec{}
	for _, g := range got {
		want, ok := cm.m.all[g.offset]
		require.True(t, ok, "record at %d was never appended", g.offset)
		require.Equal(t, want.key, g.key)
		require.Equal(t, want.tomb, g.tomb)
		require.Equal(t, string(want.value), string(g.value))
		require.Equal(t, want.ts, g.ts)
		latest[g.key] = g
	}
	keys := make([]string, 0, len(cm.m.latest))
	for k := range cm.m.latest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := cm.m.latest[k]
		g, ok := latest[k]
		if !ok {
			require.True(t, expired(want), "key %s lost its latest record at %d", k, want.offset)
			continue
		}
		require.Equal(t, want.offset, g.offset, "key %s: latest record", k)
	}
	// Below F: exactly the latest record per key below F, minus expired
	// tombstones.
	f := l.CleanerInfo(cm.r.Env.Now()).FirstDirtyOffset
	below := map[string]srec{}
	for off := int64(0); off < f; off++ {
		if r, ok := cm.m.all[off]; ok {
			below[r.key] = r
		}
	}
	kept := map[string]bool{}
	for _, g := range got {
		if g.offset >= f {
			break
		}
		require.False(t, kept[g.key], "key %s twice below the first dirty offset %d", g.key, f)
		kept[g.key] = true
		require.Equal(t, below[g.key].offset, g.offset, "key %s below %d: not its latest record there", g.key, f)
	}
	for k, r := range below { //determinism:unordered a test's check; order does not matter
		if kept[k] || expired(r) {
			continue
		}
		require.False(t, complete, "key %s: its latest record below %d (offset %d) is gone after a complete cleaning", k, f, r.offset)
		// The key's latest record is later (and there, or an expired
		// tombstone: checked above).
		require.Greater(t, cm.m.latest[k].offset, r.offset, "key %s: its latest record below %d (offset %d) is gone, and it has no later one", k, f, r.offset)
	}
	if complete {
		segs := l.Segments()
		require.Equal(t, segs[len(segs)-1].BaseOffset, f)
	}
	// Reads from offsets around every surviving batch.
	for _, b := range batches {
		for _, off := range []int64{b.base, b.last, b.base - 1} {
			if off < l.LogStartOffset() || off >= l.LogEndOffset() {
				continue
			}
			res, err := l.Read(off, 1, -1)
			require.NoError(t, err)
			bs := splitBatches(t, readRegion(t, &res))
			i := sort.Search(len(batches), func(i int) bool { return batches[i].last >= off })
			require.NotEmpty(t, bs)
			require.Equal(t, batches[i].base, bs[0].base, "read at %d", off)
		}
	}
}
