package log_test

import (
	"fmt"
	"sort"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
)

// kv is a record to build: a nil v is a tombstone.
type kv struct {
	k string
	v []byte
}

func put(k, v string) kv    { return kv{k: k, v: []byte(v)} }
func tombstone(k string) kv { return kv{k: k} }

// keyedBatch builds a producer batch of the given records, timestamps ts,
// ts+1, ..., with the given options.
func keyedBatch(ts int64, kvs []kv, opts ...record.BuilderOption) []byte {
	b := record.NewBuilder(opts...)
	for i, x := range kvs {
		b.Append(ts+int64(i), []byte(x.k), x.v)
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}

// compactConfig is smallConfig for a compacted topic whose cleaner starts
// as soon as anything is dirty.
func compactConfig() log.Config {
	cfg := smallConfig()
	cfg.CleanupPolicy = log.CleanupCompact
	cfg.MinCleanableDirtyRatio = 0
	cfg.CleanerDedupeBufferBytes = 1 << 20
	return cfg
}

// srec is a record as read back from the log.
type srec struct {
	offset     int64
	key        string
	value      []byte
	tomb       bool
	ts         int64
	base, last int64 // of its batch
}

// readRecords reads every record of the log from its start, checking
// batches (whole, CRC-valid, offsets increasing) and records (offsets
// strictly increasing, inside their batch).
func readRecords(t tb, l *log.Log) ([]srec, []storedBatch) {
	t.Helper()
	batches := readAll(t, l)
	rr := record.NewRecordReader(record.NewDecompressor(record.DefaultMaxDecompressedBytes))
	var out []srec
	for _, sb := range batches {
		b, err := record.ReadBatch(sb.bytes, len(sb.bytes))
		require.NoError(t, err)
		require.NoError(t, rr.Reset(b))
		for rr.Next() {
			r := rr.Record()
			if len(out) > 0 {
				require.Greater(t, r.Offset, out[len(out)-1].offset, "record offsets must increase")
			}
			require.True(t, r.Offset >= sb.base && r.Offset <= sb.last)
			out = append(out, srec{offset: r.Offset, key: string(r.Key), value: append([]byte(nil), r.Value...),
				tomb: r.Value == nil, ts: r.Timestamp, base: sb.base, last: sb.last})
		}
		require.NoError(t, rr.Err())
	}
	return out, batches
}

// clean runs CleanStep with the given budget until it reports no more work,
// and returns the number of steps.
func (r *rig) clean(budget int64) int {
	r.T.Helper()
	steps := 0
	for {
		more := false
		err := r.Wait(func(done func(error)) {
			r.l.CleanStep(r.Env.Now(), budget, func(m bool, err error) {
				more = m
				done(err)
			})
		})
		require.NoError(r.T, err)
		steps++
		require.Less(r.T, steps, 100000, "the cleaner does not finish")
		if !more {
			return steps
		}
	}
}

// cleanable makes everything up to the log end cleanable: roll, flush,
// high watermark.
func (r *rig) cleanable() {
	r.T.Helper()
	require.NoError(r.T, r.l.Roll())
	require.NoError(r.T, r.flush())
	r.l.SetHighWatermark(r.l.LogEndOffset())
}

// keyModel is what a compacted log must read as: per key, the latest record
// appended, and every record by offset.
type keyModel struct {
	latest map[string]srec
	all    map[int64]srec
}

func newKeyModel() *keyModel {
	return &keyModel{latest: map[string]srec{}, all: map[int64]srec{}}
}

// appended records what an append of kvs stored from firstOffset on.
func (m *keyModel) appended(firstOffset, ts int64, kvs []kv) {
	for i, x := range kvs {
		r := srec{offset: firstOffset + int64(i), key: x.k, value: x.v, tomb: x.v == nil, ts: ts + int64(i)}
		m.latest[x.k] = r
		m.all[r.offset] = r
	}
}

// check compares the log's records with the model: every record was
// appended as read, every key's latest record is there (a tombstone may be
// gone: tombstonesMayGo), and no key has more than one record below
// uniqueBelow.
func (m *keyModel) check(t tb, got []srec, tombstonesMayGo bool, uniqueBelow int64) {
	t.Helper()
	latest := map[string]srec{}
	seenBelow := map[string]int64{}
	for _, g := range got {
		want, ok := m.all[g.offset]
		require.True(t, ok, "record at %d was never appended", g.offset)
		require.Equal(t, want.key, g.key, "key at %d", g.offset)
		require.Equal(t, want.tomb, g.tomb, "tombstone at %d", g.offset)
		if !want.tomb {
			require.Equal(t, string(want.value), string(g.value), "value at %d", g.offset)
		}
		require.Equal(t, want.ts, g.ts, "timestamp at %d", g.offset)
		latest[g.key] = g
		if g.offset < uniqueBelow {
			prev, dup := seenBelow[g.key]
			require.False(t, dup, "key %q has records at %d and %d below the first dirty offset %d", g.key, prev, g.offset, uniqueBelow)
			seenBelow[g.key] = g.offset
		}
	}
	keys := make([]string, 0, len(m.latest))
	for k := range m.latest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := m.latest[k]
		g, ok := latest[k]
		if !ok {
			require.True(t, want.tomb && tombstonesMayGo, "key %q lost its latest record at %d", k, want.offset)
			continue
		}
		require.Equal(t, want.offset, g.offset, "key %q: latest record", k)
	}
}

func keyName(i int) string { return fmt.Sprintf("key-%03d", i) }
