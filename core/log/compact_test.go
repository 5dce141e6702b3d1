package log_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
)

// appendKeyed appends one batch and records it in the model.
func (r *rig) appendKeyed(m *keyModel, kvs []kv, opts ...record.BuilderOption) log.AppendInfo {
	r.T.Helper()
	ts := r.Env.Now().UnixMilli()
	info, err := r.l.Append(keyedBatch(ts, kvs, opts...), 0)
	require.NoError(r.T, err)
	if m != nil {
		m.appended(info.FirstOffset, ts, kvs)
	}
	return info
}

// fillKeys appends n batches of 1-4 records over nKeys keys, values
// naming their round.
func (r *rig) fillKeys(m *keyModel, n, nKeys int, seed int) {
	r.T.Helper()
	for i := 0; i < n; i++ {
		var kvs []kv
		for j := 0; j <= (i+seed)%4; j++ {
			k := keyName((i*7 + j*3 + seed) % nKeys)
			kvs = append(kvs, put(k, fmt.Sprintf("%s=%d.%d:%s", k, seed, i, strings.Repeat("v", 40))))
		}
		r.appendKeyed(m, kvs)
	}
}

// newKeyedRig is a rig with compactConfig whose log fillKeys filled (n
// batches over nKeys keys, drawn from fill), with its model.
func newKeyedRig(t *testing.T, seed uint64, n, nKeys, fill int) (*rig, *keyModel) {
	t.Helper()
	r := newRig(t, seed, compactConfig())
	m := newKeyModel()
	r.fillKeys(m, n, nKeys, fill)
	return r, m
}

func TestCompactKeepsLatestPerKey(t *testing.T) {
	r, m := newKeyedRig(t, 101, 120, 15, 0)
	before := len(r.l.Segments())
	require.Greater(t, before, 4)
	r.cleanable()
	r.clean(2048)

	info := r.l.CleanerInfo(r.Env.Now())
	require.Equal(t, r.l.Segments()[len(r.l.Segments())-1].BaseOffset, info.FirstDirtyOffset, "everything below the active segment is clean")
	require.Equal(t, 1, info.Stats.Cleanings)
	got, _ := readRecords(t, r.l)
	m.check(t, got, false, info.FirstDirtyOffset)
	require.Len(t, got, 15, "one record per key")
	require.NoError(t, r.l.Verify(0, r.l.LogEndOffset()))

	// More updates of some keys, a second cleaning: still one per key.
	r.fillKeys(m, 40, 6, 3)
	r.cleanable()
	r.clean(1 << 20)
	info = r.l.CleanerInfo(r.Env.Now())
	got, _ = readRecords(t, r.l)
	m.check(t, got, false, info.FirstDirtyOffset)
	require.Len(t, got, 15)
	require.Less(t, len(r.l.Segments()), before, "segments the first cleaning shrank merge in the second")

	// A power failure after the cleaning changes nothing, and the
	// cleaner checkpoint survives it.
	r.crash()
	r.open()
	got2, _ := readRecords(t, r.l)
	require.Equal(t, got, got2)
	require.Equal(t, info.FirstDirtyOffset, r.l.CleanerInfo(r.Env.Now()).FirstDirtyOffset)
	require.Zero(t, r.clean(1<<20)-1, "nothing left to clean after a restart")
}

func TestCompactOffsetsPreservedAndMonotonic(t *testing.T) {
	r := newRig(t, 102, compactConfig())
	m := newKeyModel()
	var original []storedBatch
	r.fillKeys(m, 150, 9, 1)
	r.cleanable()
	original = readAll(t, r.l)
	r.clean(4096)

	_, got := readRecords(t, r.l)
	byBase := map[int64]storedBatch{}
	for _, b := range original {
		byBase[b.base] = b
	}
	for i, b := range got {
		o, ok := byBase[b.base]
		require.True(t, ok, "batch at %d does not start where an original batch started", b.base)
		require.Equal(t, o.last, b.last, "batch at %d keeps its last offset", b.base)
		if i > 0 {
			require.Greater(t, b.base, got[i-1].last)
		}
	}
	// Segments still tile the offsets: each ends where the next begins.
	segs := r.l.Segments()
	for i := 0; i+1 < len(segs); i++ {
		require.Equal(t, segs[i+1].BaseOffset, segs[i].NextOffset, "segment %d ends where %d begins", segs[i].BaseOffset, segs[i+1].BaseOffset)
	}
	require.Equal(t, original[len(original)-1].last+1, r.l.LogEndOffset())
}

func TestCompactReadFromAnyOffset(t *testing.T) {
	r, _ := newKeyedRig(t, 103, 100, 5, 2)
	r.cleanable()
	r.clean(1 << 20)
	_, batches := readRecords(t, r.l)
	require.Less(t, len(batches), 100)
	for off := r.l.LogStartOffset(); off < r.l.LogEndOffset(); off++ {
		res, err := r.l.Read(off, 1, -1)
		require.NoError(t, err)
		bs := splitBatches(t, readRegion(t, &res))
		// The first surviving batch that holds offsets at or after off.
		i := sort.Search(len(batches), func(i int) bool { return batches[i].last >= off })
		require.Less(t, i, len(batches))
		require.NotEmpty(t, bs, "read at %d", off)
		require.Equal(t, batches[i].base, bs[0].base, "read at %d", off)
	}
}

func TestCompactTombstonesAfterDeleteRetention(t *testing.T) {
	cfg := compactConfig()
	cfg.DeleteRetention = time.Hour
	r := newRig(t, 104, cfg)
	m := newKeyModel()
	r.appendKeyed(m, []kv{put("a", "1"), put("b", "1"), put("c", "1")})
	r.appendKeyed(m, []kv{tombstone("a"), put("b", "2")})
	r.cleanable()
	r.clean(1 << 20)
	got, _ := readRecords(t, r.l)
	m.check(t, got, false, 0)
	require.Len(t, got, 3, "a's tombstone, b=2, c=1")

	// Before the horizon the tombstone stays, through more cleanings.
	r.Run(30 * time.Minute)
	r.appendKeyed(m, []kv{put("c", "2")})
	r.cleanable()
	r.clean(1 << 20)
	got, _ = readRecords(t, r.l)
	m.check(t, got, false, 0)
	require.True(t, got[0].tomb && got[0].key == "a", "the tombstone is still there")

	// Past the horizon a cleaning is due even with nothing dirty, and the
	// tombstone goes.
	r.Run(31 * time.Minute)
	require.True(t, r.l.CleanerInfo(r.Env.Now()).Due)
	r.clean(1 << 20)
	got, _ = readRecords(t, r.l)
	m.check(t, got, true, 0)
	for _, g := range got {
		require.NotEqual(t, "a", g.key)
	}
	require.EqualValues(t, 1, r.l.CleanerInfo(r.Env.Now()).Stats.TombstonesRemoved)

	// A tombstone that is not its key's latest record goes at once.
	r.appendKeyed(m, []kv{tombstone("b")})
	r.appendKeyed(m, []kv{put("b", "3")})
	r.cleanable()
	r.clean(1 << 20)
	got, _ = readRecords(t, r.l)
	m.check(t, got, true, 0)
	for _, g := range got {
		require.False(t, g.tomb, "no tombstone left")
	}
}

func TestCompactTombstoneRetentionZero(t *testing.T) {
	cfg := compactConfig()
	cfg.DeleteRetention = 0
	r := newRig(t, 105, cfg)
	m := newKeyModel()
	r.appendKeyed(m, []kv{put("a", "1"), put("b", "1")})
	r.appendKeyed(m, []kv{tombstone("a")})
	r.cleanable()
	// The first cleaning sets the horizon to now, which makes a second
	// one due at once, and that one removes the tombstone.
	r.clean(1 << 20)
	require.Equal(t, 2, r.l.CleanerInfo(r.Env.Now()).Stats.Cleanings)
	got, _ := readRecords(t, r.l)
	m.check(t, got, true, 0)
	require.Len(t, got, 1)
	require.Equal(t, "b", got[0].key)
}

func TestCompactActiveSegmentUntouched(t *testing.T) {
	r, m := newKeyedRig(t, 106, 60, 4, 0)
	r.cleanable()
	// The active segment gets updates of every key: they supersede the
	// cleaned records but are neither mapped nor cleaned themselves.
	r.fillKeys(m, 6, 4, 1)
	require.NoError(t, r.flush())
	r.l.SetHighWatermark(r.l.LogEndOffset())
	segs := r.l.Segments()
	active := segs[len(segs)-1]
	require.True(t, active.Active)
	name := fmt.Sprintf("%s/%020d.log", testDir, active.BaseOffset)
	before, ok := r.Proc.Disk().ReadFile(name)
	require.True(t, ok)
	r.clean(1 << 20)
	after, _ := r.Proc.Disk().ReadFile(name)
	require.Equal(t, before, after, "the active segment's bytes")
	got, _ := readRecords(t, r.l)
	m.check(t, got, false, active.BaseOffset)
	inActive, want := 0, 0
	for _, g := range got {
		if g.offset >= active.BaseOffset {
			inActive++
		}
	}
	for off := range m.all {
		if off >= active.BaseOffset {
			want++
		}
	}
	require.Equal(t, want, inActive, "every record of the active segment stays")

	// Nothing above the high watermark or the durable offset is cleaned
	// either: roll without flushing or moving the high watermark.
	end := r.l.LogEndOffset()
	require.NoError(t, r.l.Roll())
	r.fillKeys(m, 20, 4, 2)
	require.NoError(t, r.l.Roll())
	require.Equal(t, end, r.l.CleanerInfo(r.Env.Now()).CleanableEnd)
}

func TestCompactDeletePolicyAppliesRetention(t *testing.T) {
	for _, policy := range []log.CleanupPolicy{log.CleanupCompact, log.CleanupCompactDelete} {
		t.Run(policy.String(), func(t *testing.T) {
			cfg := compactConfig()
			cfg.CleanupPolicy = policy
			cfg.RetentionBytes = 4096
			cfg.RetentionTime = time.Hour
			r := newRig(t, 107, cfg)
			r.fillKeys(nil, 150, 200, 0) // distinct keys: cleaning removes little
			r.cleanable()
			r.clean(1 << 20)
			r.Run(2 * time.Hour)
			n, err := r.l.ApplyRetention(r.Env.Now())
			require.NoError(t, err)
			if policy == log.CleanupCompact {
				require.Zero(t, n, "retention.ms and retention.bytes do not apply to compact")
				require.Zero(t, r.l.LogStartOffset())
			} else {
				require.Positive(t, n)
				require.Positive(t, r.l.LogStartOffset())
			}
			require.NoError(t, r.flush())
			r.clean(1 << 20) // cleaning goes on from the new log start
		})
	}
}

func TestCompactRejectsKeylessRecords(t *testing.T) {
	r := newRig(t, 108, compactConfig())
	for _, codec := range []record.Codec{record.CodecNone, record.CodecZstd} {
		b := record.NewBuilder(record.WithCompression(codec))
		b.Append(1, []byte("k"), []byte("v"))
		b.Append(2, nil, []byte("no key"))
		batch, err := b.AppendTo(nil)
		require.NoError(t, err)
		_, err = r.l.Append(batch, 0)
		require.ErrorIs(t, err, record.ErrInvalidRecord)
		require.Contains(t, err.Error(), "compacted topic cannot accept message without key")
		require.Zero(t, r.l.LogEndOffset(), "nothing appended")
	}
	_, err := r.l.Append(keyedBatch(1, []kv{put("k", "v"), tombstone("k")}), 0)
	require.NoError(t, err, "keyed records and tombstones are fine")

	// A delete-policy log takes keyless records.
	cfg := smallConfig()
	r2 := newRig(t, 109, cfg)
	_, err = r2.l.Append(build(batchSpec{records: 1, valueSize: 3}), 0)
	require.NoError(t, err)
	b := record.NewBuilder()
	b.Append(1, nil, []byte("v"))
	batch, _ := b.AppendTo(nil)
	_, err = r2.l.Append(batch, 0)
	require.NoError(t, err)
}

func TestCompactCompressedBatchesKeepTheirCodec(t *testing.T) {
	r := newRig(t, 110, compactConfig())
	m := newKeyModel()
	codecs := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}
	for i := 0; i < 60; i++ {
		kvs := []kv{put(keyName(i%7), fmt.Sprintf("v%d", i)), put(keyName(100+i), "unique"), put(keyName((i+3)%7), fmt.Sprintf("w%d", i))}
		r.appendKeyed(m, kvs, record.WithCompression(codecs[i%len(codecs)]))
	}
	r.cleanable()
	original := map[int64]record.Codec{}
	for _, b := range readAll(t, r.l) {
		bt, _ := record.ReadBatch(b.bytes, len(b.bytes))
		original[b.base] = bt.Codec()
	}
	r.clean(1 << 20)
	got, batches := readRecords(t, r.l)
	m.check(t, got, false, 0)
	rewritten := 0
	for _, b := range batches {
		bt, _ := record.ReadBatch(b.bytes, len(b.bytes))
		require.Equal(t, original[b.base], bt.Codec(), "batch at %d", b.base)
		if bt.RecordCount() < 3 {
			rewritten++
		}
	}
	require.Positive(t, rewritten)
	require.Positive(t, r.l.CleanerInfo(r.Env.Now()).Stats.BatchesRewritten)
}

func TestCompactKeepsTransactionalControlAndProducerBatches(t *testing.T) {
	r := newRig(t, 111, compactConfig())
	txn := keyedBatch(10, []kv{put("a", "txn")}, record.WithProducer(7, 0, 0), record.WithTransactional())
	_, err := r.l.Append(txn, 0)
	require.NoError(t, err)
	cb := record.NewBuilder(record.WithControl(), record.WithProducer(7, 0, 1), record.WithTransactional())
	cb.AppendControl(11, record.ControlCommit, record.EndTxnMarkerValue(0))
	marker, err := cb.AppendTo(nil)
	require.NoError(t, err)
	_, err = r.l.AppendCoordinator(marker, 0)
	require.NoError(t, err)
	idem := keyedBatch(12, []kv{put("b", "idempotent")}, record.WithProducer(8, 0, 0))
	_, err = r.l.Append(idem, 0)
	require.NoError(t, err)
	// A later leader epoch starts with a batch whose record is superseded.
	_, err = r.l.Append(keyedBatch(13, []kv{put("c", "old")}), 1)
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		_, err = r.l.Append(keyedBatch(14, []kv{put("a", "plain"), put("b", "plain"), put("c", "new")}), 1)
		require.NoError(t, err)
	}
	r.cleanable()
	r.clean(1 << 20)
	_, batches := readRecords(t, r.l)
	require.Equal(t, txn, batches[0].bytes, "a transactional batch is never rewritten")
	require.Equal(t, marker[12:], batches[1].bytes[12:], "a control batch is never rewritten")
	bt, _ := record.ReadBatch(batches[2].bytes, len(batches[2].bytes))
	require.Equal(t, int64(8), bt.ProducerID(), "an idempotent producer's batch stays, empty")
	require.Zero(t, bt.RecordCount())
	bt, _ = record.ReadBatch(batches[3].bytes, len(batches[3].bytes))
	require.Equal(t, int32(1), bt.PartitionLeaderEpoch(), "the batch starting epoch 1 stays, empty")
	require.Zero(t, bt.RecordCount())
	require.Equal(t, []log.LeaderEpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 3}}, r.l.LeaderEpochs())

	// Recovery finds the epochs where the cache says (no rescan).
	r.crash()
	r.open()
	require.Equal(t, []log.LeaderEpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 3}}, r.l.LeaderEpochs())
}

func TestCompactTruncationLowersTheCheckpoint(t *testing.T) {
	r, _ := newKeyedRig(t, 112, 80, 5, 0)
	r.cleanable()
	r.clean(1 << 20)
	f := r.l.CleanerInfo(r.Env.Now()).FirstDirtyOffset
	require.Positive(t, f)

	// A truncation below the checkpoint lowers it in memory at once.
	to := f / 2
	require.NoError(t, r.Wait(func(done func(error)) { r.l.Truncate(to, done) }))
	require.LessOrEqual(t, r.l.CleanerInfo(r.Env.Now()).FirstDirtyOffset, r.l.LogEndOffset())

	// After a crash that kept the old checkpoint file, new appends of a
	// later epoch make the cleaner distrust it.
	r.crash()
	r.open()
	cp, _ := r.Proc.Disk().ReadFile(testDir + "/cleaner-checkpoint")
	require.Contains(t, string(cp), fmt.Sprintf("first-dirty-offset %d", f), "the test needs the old checkpoint on disk")
	for r.l.LogEndOffset() < f+10 {
		_, err := r.l.Append(keyedBatch(1, []kv{put("x", "after")}), 3)
		require.NoError(t, err)
	}
	require.Equal(t, r.l.LogStartOffset(), r.l.CleanerInfo(r.Env.Now()).FirstDirtyOffset)
}

// TestCompactSwapCrashPrefixes builds every state a crash can leave of a
// swap (a prefix of its directory changes) and checks that Open reads the
// old segments before the commit point and the cleaned one from it on.
func TestCompactSwapCrashPrefixes(t *testing.T) {
	cfg := compactConfig()
	r := newRig(t, 113, cfg)
	m := newKeyModel()
	r.fillKeys(m, 60, 6, 0)
	r.cleanable()
	r.clean(1 << 20) // shrinks the segments, so that the next cleaning merges them
	r.fillKeys(m, 30, 12, 1)
	r.cleanable()
	files := func() map[string][]byte {
		out := map[string][]byte{}
		for _, name := range r.Proc.Disk().Files() {
			if strings.HasPrefix(name, testDir+"/") {
				data, _ := r.Proc.Disk().ReadFile(name)
				out[strings.TrimPrefix(name, testDir+"/")] = data
			}
		}
		return out
	}
	oldSegs := r.l.Segments()
	oldRecords, _ := readRecords(t, r.l)
	r.l.Close()
	old := files()
	r.open()
	r.l.SetHighWatermark(r.l.LogEndOffset())
	r.clean(1 << 20)
	newRecords, _ := readRecords(t, r.l)
	newSegs := r.l.Segments()
	r.l.Close()
	cleaned := files()

	// The group: the old segments the first new one replaced.
	first := newSegs[0]
	var covered []int64
	for _, s := range oldSegs {
		if s.BaseOffset > first.BaseOffset && s.BaseOffset < first.NextOffset {
			covered = append(covered, s.BaseOffset)
		}
	}
	require.NotEmpty(t, covered, "the test needs a merge")
	seg := func(base int64, suffix string) string { return fmt.Sprintf("%020d%s", base, suffix) }
	B := first.BaseOffset
	type op struct{ from, to string } // to "" removes
	var ops []op
	for _, s := range []string{".index", ".timeindex", ".log"} {
		ops = append(ops, op{seg(B, s+".cleaned"), seg(B, s+".swap")})
	}
	for _, c := range covered {
		for _, s := range []string{".log", ".index", ".timeindex"} {
			ops = append(ops, op{from: seg(c, s)})
		}
	}
	for _, s := range []string{".index", ".timeindex", ".log"} {
		ops = append(ops, op{seg(B, s+".swap"), seg(B, s)})
	}
	d := r.Env.Disk()
	write := func(name string, data []byte) {
		f, err := d.Open(testDir+"/"+name, true)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(0))
		require.NoError(t, f.WriteAt(data, 0))
		require.NoError(t, f.Close())
	}
	for n := 0; n <= len(ops); n++ {
		// The state before the swap: the old files plus the cleaned ones.
		for name := range files() {
			require.NoError(t, d.Remove(testDir+"/"+name))
		}
		for name, data := range old {
			write(name, data)
		}
		for _, s := range []string{".log", ".index", ".timeindex"} {
			write(seg(B, s+".cleaned"), cleaned[seg(B, s)])
		}
		for _, o := range ops[:n] {
			if o.to == "" {
				require.NoError(t, d.Remove(testDir+"/"+o.from))
			} else {
				require.NoError(t, d.Rename(testDir+"/"+o.from, testDir+"/"+o.to))
			}
		}
		r.open()
		got, _ := readRecords(t, r.l)
		if n < 3 {
			require.Equal(t, oldRecords, got, "prefix %d: before the commit point the old segments stay", n)
		} else {
			// The group's records are the cleaned ones, the rest (other
			// groups of the cleaning) the old ones.
			var want []srec
			for _, x := range newRecords {
				if x.offset < first.NextOffset {
					want = append(want, x)
				}
			}
			for _, x := range oldRecords {
				if x.offset >= first.NextOffset {
					want = append(want, x)
				}
			}
			require.Equal(t, want, got, "prefix %d: from the commit point the swap completes", n)
			require.Equal(t, first, r.l.Segments()[0], "prefix %d", n)
			require.Equal(t, first.NextOffset, r.l.Segments()[1].BaseOffset, "prefix %d", n)
		}
		for name := range files() {
			require.False(t, strings.HasSuffix(name, ".cleaned") || strings.HasSuffix(name, ".swap"), "prefix %d left %s", n, name)
		}
		r.l.Close()
	}
}

func TestCompactParseCleanupPolicy(t *testing.T) {
	for s, want := range map[string]log.CleanupPolicy{
		"delete": log.CleanupDelete, "compact": log.CleanupCompact,
		"compact,delete": log.CleanupCompactDelete, "delete, compact": log.CleanupCompactDelete,
	} {
		got, err := log.ParseCleanupPolicy(s)
		require.NoError(t, err, s)
		require.Equal(t, want, got, s)
	}
	_, err := log.ParseCleanupPolicy("compacted")
	require.ErrorIs(t, err, log.ErrInvalidConfig)
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 1.5
	require.ErrorIs(t, cfg.Validate(), log.ErrInvalidConfig)
	cfg = compactConfig()
	cfg.DeleteRetention = -time.Second
	require.ErrorIs(t, cfg.Validate(), log.ErrInvalidConfig)
}

func TestCompactStepsAreBounded(t *testing.T) {
	r, m := newKeyedRig(t, 114, 200, 10, 0)
	r.cleanable()
	steps := r.clean(512)
	require.Greater(t, steps, 20, "a small budget takes many steps")
	got, _ := readRecords(t, r.l)
	m.check(t, got, false, r.l.CleanerInfo(r.Env.Now()).FirstDirtyOffset)
}

func TestCompactSmallOffsetMap(t *testing.T) {
	cfg := compactConfig()
	cfg.CleanerDedupeBufferBytes = 1024 // a dozen keys
	r := newRig(t, 115, cfg)
	m := newKeyModel()
	r.fillKeys(m, 200, 60, 0)
	r.cleanable()
	r.clean(1 << 20)
	info := r.l.CleanerInfo(r.Env.Now())
	require.Greater(t, info.Stats.Cleanings, 1, "the map fills: several cleanings")
	got, _ := readRecords(t, r.l)
	m.check(t, got, false, info.FirstDirtyOffset)
	require.Len(t, got, 60)
}

func TestCompactDoesNothingForDeletePolicy(t *testing.T) {
	r := newRig(t, 116, smallConfig())
	r.fillKeys(nil, 50, 3, 0)
	r.cleanable()
	before := readAll(t, r.l)
	require.Equal(t, 1, r.clean(1<<20))
	require.Equal(t, before, readAll(t, r.l))
}

// TestCompactStepBudgetCountsDecompressedBytes: a cleaner step's budget
// bounds the loop's work, so a compressed batch counts what it
// decompresses to, not its few stored bytes: 40 batches of 4 zstd records
// of 16 KiB (about 100 stored bytes each, 64 KiB decompressed) take many
// 256 KiB steps, where counting stored bytes would map them all in one.
func TestCompactStepBudgetCountsDecompressedBytes(t *testing.T) {
	r := newRig(t, 131, compactConfig())
	value := strings.Repeat("a", 16<<10)
	for i := range 40 {
		var kvs []kv
		for j := range 4 {
			kvs = append(kvs, put(keyName((i*4+j)%10), value))
		}
		r.appendKeyed(nil, kvs, record.WithCompression(record.CodecZstd))
	}
	r.cleanable()
	const budget = 256 << 10
	steps := r.clean(budget)
	decompressed := 40 * 4 * (16 << 10)
	require.GreaterOrEqual(t, steps, decompressed/budget/2,
		"%d steps for %d decompressed bytes at a %d-byte budget", steps, decompressed, budget)
	got, _ := readRecords(t, r.l)
	require.Len(t, got, 10, "one record per key")
}
