package log_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/record/recordtest"
)

// plantUnreadable appends, as a follower would from a leader of an older
// build, a batch whose CRC holds but whose records do not parse (issue 22:
// such batches were stored before produce validated records), at the log
// end, its maxTimestamp maxTs. It returns the batch's base offset.
func (r *rig) plantUnreadable(payload []byte, maxTs int64) int64 {
	r.T.Helper()
	raw := append([]byte{}, payload...)
	b, err := record.ReadBatch(raw, len(raw))
	require.NoError(r.T, err)
	base := r.l.LogEndOffset()
	b.SetBaseOffset(base)
	b.SetMaxTimestamp(record.CreateTime, maxTs)
	_, err = r.l.AppendReplicated(raw)
	require.NoError(r.T, err)
	return base
}

// unreadableShapes are the batches plantUnreadable plants: every malformed
// shape whose records a reader cannot parse (a create time that wraps
// reads back), and a zstd bomb past what the log's readers decompress.
func unreadableShapes(ts int64) [][]byte {
	rr := record.NewRecordReader(record.NewDecompressor(record.DefaultMaxDecompressedBytes))
	var out [][]byte
	for _, s := range recordtest.Malformed(ts) {
		b, err := record.ReadBatch(s.Payload, len(s.Payload))
		if err != nil {
			panic(err)
		}
		if err := rr.Reset(b); err == nil {
			for rr.Next() {
			}
			if rr.Err() == nil {
				continue
			}
		}
		out = append(out, s.Payload)
	}
	return append(out, recordtest.ZstdRLEBomb(2<<30, ts))
}

// TestUnreadableBatchesDoNotWedgeReaders: a log holding batches whose
// records do not parse answers ListOffsets by timestamp past them (it
// answered KAFKA_STORAGE_ERROR), and once the topic switches to
// cleanup.policy=compact its cleanings complete, keeping those batches as
// they are and compacting the rest (they stopped compaction for good).
func TestUnreadableBatchesDoNotWedgeReaders(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20 // room for the bomb
	r := newRig(t, 140, cfg)
	const ts = 1_000_000
	var bad, readable []int64
	nextTs := int64(ts)
	for i, payload := range unreadableShapes(ts) {
		kvs := []kv{put(keyName(i%5), "before"), put(keyName(100+i), "unique")}
		info, err := r.l.Append(keyedBatch(nextTs, kvs), 0)
		require.NoError(t, err)
		readable = append(readable, info.FirstOffset)
		bad = append(bad, r.plantUnreadable(payload, nextTs+5))
		nextTs += 10
	}
	last, err := r.l.Append(keyedBatch(nextTs, []kv{put(keyName(0), "latest")}), 0)
	require.NoError(t, err)
	require.NoError(t, r.flush())

	// Each bad batch's header puts its records 5 ms after the readable
	// batch before it: asked for a time in between, the search reads the
	// bad batch, cannot, and answers the next readable record.
	for i := range bad {
		found, err := r.l.OffsetForTimestamp(ts + int64(i)*10 + 3)
		require.NoError(t, err)
		want := last.FirstOffset
		if i+1 < len(readable) {
			want = readable[i+1]
		}
		require.Equal(t, want, found.Offset, "asked past readable batch %d", i)
	}
	found, err := r.l.OffsetForTimestamp(log.MaxTimestamp)
	require.NoError(t, err)
	require.Equal(t, last.FirstOffset, found.Offset)

	// The topic switches to compact.
	r.shutdown()
	r.cfg.CleanupPolicy = log.CleanupCompact
	r.cfg.MinCleanableDirtyRatio = 0
	r.open()
	r.cleanable()
	r.clean(1 << 20)
	info := r.l.CleanerInfo(r.Env.Now())
	require.Equal(t, 1, info.Stats.Cleanings, "the cleaning completes")
	require.Zero(t, info.Stats.Abandoned)
	require.Equal(t, int64(len(bad)), info.Stats.BatchesUnreadable)
	require.Positive(t, info.Stats.RecordsRemoved, "the readable records are compacted")

	stored := map[int64][]byte{}
	for _, sb := range readAll(t, r.l) {
		stored[sb.base] = sb.bytes
	}
	for _, base := range bad {
		require.Contains(t, stored, base, "an unreadable batch is kept")
	}
	require.NoError(t, r.l.Verify(0, r.l.LogEndOffset()))

	// And compaction goes on: more updates, another cleaning.
	_, err = r.l.Append(keyedBatch(nextTs+10, []kv{put(keyName(1), "newer"), put(keyName(2), "newer")}), 0)
	require.NoError(t, err)
	r.cleanable()
	r.clean(1 << 20)
	info = r.l.CleanerInfo(r.Env.Now())
	require.Equal(t, 2, info.Stats.Cleanings)
	require.Zero(t, info.Stats.Abandoned)
}

// TestAppendValidatesEveryRecord: Append refuses every malformed shape and
// every bomb, appending nothing, on a delete-policy log as on a compacted
// one.
func TestAppendValidatesEveryRecord(t *testing.T) {
	for _, cfg := range []log.Config{smallConfig(), compactConfig()} {
		cfg.SegmentBytes = 1 << 20 // room for the bomb
		r := newRig(t, 141, cfg)
		var shapes [][]byte
		for _, s := range recordtest.Malformed(1000) {
			shapes = append(shapes, s.Payload)
		}
		for _, payload := range append(shapes, recordtest.ZstdRLEBomb(2<<30, 1000)) {
			_, err := r.l.Append(append([]byte{}, payload...), 0)
			require.Error(t, err)
			require.True(t, errors.Is(err, record.ErrInvalidRecord) || errors.Is(err, record.ErrDecompressedTooLarge), "%v", err)
		}
		require.Zero(t, r.l.LogEndOffset(), "nothing appended")
		_, err := r.l.Append(keyedBatch(1000, []kv{put("k", "v")}), 0)
		require.NoError(t, err)
	}
}
