package log_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
)

func TestAppendReadRoundTrip(t *testing.T) {
	r := newRig(t, 1, smallConfig())
	var want [][]byte
	for i := 0; i < 40; i++ {
		b := build(batchSpec{records: 1 + i%4, valueSize: 30 + i*7, timestamp: 1000 + int64(i)*10, seed: byte(i)})
		info, err := r.l.Append(b, 0)
		require.NoError(t, err)
		require.Equal(t, info.LastOffset+1, r.l.LogEndOffset())
		want = append(want, b) // Append stamped the offsets into b
	}
	got := readAll(t, r.l)
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i], got[i].bytes, "batch %d", i)
	}
	require.Greater(t, len(r.l.Segments()), 3)
	require.NoError(t, r.flush())
	require.NoError(t, r.l.Verify(0, r.l.LogEndOffset()))

	r.crash()
	r.open()
	got = readAll(t, r.l)
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i], got[i].bytes, "batch %d", i)
	}
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, log.DefaultConfig().Validate())
	for name, mutate := range map[string]func(*log.Config){
		"segment.bytes":        func(c *log.Config) { c.SegmentBytes = 10 },
		"segment.ms":           func(c *log.Config) { c.SegmentTime = 0 },
		"index.interval.bytes": func(c *log.Config) { c.IndexIntervalBytes = -1 },
		"segment.index.bytes":  func(c *log.Config) { c.SegmentIndexBytes = 4 },
		"max.message.bytes":    func(c *log.Config) { c.MessageMaxBytes = 0 },
		"max open files":       func(c *log.Config) { c.MaxOpenFiles = 3 },
		"log.flush.offset":     func(c *log.Config) { c.FlushCheckpointInterval = 0 },
		"recovery checkpoint":  func(c *log.Config) { c.RecoveryCheckpointBytes = 0 },
	} {
		c := log.DefaultConfig()
		mutate(&c)
		err := c.Validate()
		require.ErrorIs(t, err, log.ErrInvalidConfig, name)
		require.Contains(t, err.Error(), name)
	}
	c := log.DefaultConfig()
	c.SegmentBytes = 1 << 40
	require.ErrorIs(t, c.Validate(), log.ErrInvalidConfig)
}

// TestOnDiskLayout checks file names and the index and checkpoint formats
// against Kafka's.
func TestOnDiskLayout(t *testing.T) {
	cfg := smallConfig()
	cfg.IndexIntervalBytes = 100
	r := newRig(t, 2, cfg)
	for i := 0; i < 30; i++ {
		_, err := r.l.Append(build(batchSpec{records: 2, valueSize: 80, timestamp: 5000 + int64(i), seed: byte(i)}), int32(i/10))
		require.NoError(t, err)
	}
	batches := readAll(t, r.l)
	segs := r.l.Segments()
	r.shutdown()
	files := r.Proc.Disk().Files()
	for _, s := range segs {
		for _, suffix := range []string{".log", ".index", ".timeindex"} {
			require.Contains(t, files, fmt.Sprintf("%s/%020d%s", testDir, s.BaseOffset, suffix))
		}
	}
	require.Contains(t, files, testDir+"/00000000000000000000.log")

	// The offset index of the first segment: (last offset - base, position)
	// of batches, big-endian int32 pairs.
	idx, _ := r.Proc.Disk().ReadFile(testDir + "/00000000000000000000.index")
	require.NotEmpty(t, idx)
	require.Zero(t, len(idx)%8)
	for i := 0; i < len(idx); i += 8 {
		rel, pos := int64(binary.BigEndian.Uint32(idx[i:])), int64(binary.BigEndian.Uint32(idx[i+4:]))
		at := int64(0)
		found := false
		for _, b := range batches {
			if at == pos {
				require.Equal(t, b.last, rel, "entry %d", i/8)
				found = true
				break
			}
			at += int64(len(b.bytes))
		}
		require.True(t, found, "entry (%d, %d) is not at a batch", rel, pos)
	}
	// The time index: (timestamp, offset - base), big-endian int64+int32,
	// ending with the segment's largest timestamp.
	tidx, _ := r.Proc.Disk().ReadFile(testDir + "/00000000000000000000.timeindex")
	require.NotEmpty(t, tidx)
	require.Zero(t, len(tidx)%12)
	lastTs := int64(binary.BigEndian.Uint64(tidx[len(tidx)-12:]))
	require.Equal(t, segs[0].MaxTimestamp, lastTs)

	ck, _ := r.Proc.Disk().ReadFile(testDir + "/recovery-checkpoint")
	require.Equal(t, fmt.Sprintf("0\n2\nrecovery-point %d\nlog-start-offset 0\n", batches[len(batches)-1].last+1), string(ck))
	ep, _ := r.Proc.Disk().ReadFile(testDir + "/leader-epoch-checkpoint")
	require.True(t, strings.HasPrefix(string(ep), "0\n3\n0 0\n"), "%q", ep)
}

func TestReadBounds(t *testing.T) {
	r := newRig(t, 3, smallConfig())
	var sizes []int
	for i := 0; i < 10; i++ {
		b := build(batchSpec{records: 2, valueSize: 50, timestamp: int64(i)})
		sizes = append(sizes, len(b))
		_, err := r.l.Append(b, 0)
		require.NoError(t, err)
	}
	// Out of range.
	_, err := r.l.Read(21, 100, -1)
	require.ErrorIs(t, err, log.ErrOffsetOutOfRange)
	_, err = r.l.Read(-1, 100, -1)
	require.ErrorIs(t, err, log.ErrOffsetOutOfRange)
	// At the end: empty.
	res, err := r.l.Read(20, 100, -1)
	require.NoError(t, err)
	require.Zero(t, res.Size)
	// At least one whole batch, even beyond maxBytes.
	res, err = r.l.Read(3, 1, -1)
	require.NoError(t, err)
	require.Equal(t, int64(sizes[1]), res.Size)
	require.Equal(t, int64(2), res.FirstOffset)
	res.Release()
	// Whole batches within maxBytes.
	res, err = r.l.Read(0, sizes[0]+sizes[1]+sizes[2]-1, -1)
	require.NoError(t, err)
	require.Equal(t, int64(sizes[0]+sizes[1]), res.Size)
	res.Release()
	// Bounded by a high watermark.
	r.l.SetHighWatermark(6)
	res, err = r.l.Read(0, 1<<20, r.l.HighWatermark())
	require.NoError(t, err)
	require.Len(t, splitBatches(t, readRegion(t, &res)), 3)
	res, err = r.l.Read(6, 1<<20, r.l.HighWatermark())
	require.NoError(t, err)
	require.Zero(t, res.Size)
}

func TestFlushGroupCommit(t *testing.T) {
	r := newRig(t, 4, smallConfig())
	var order []int
	syncsBefore := r.Proc.Disk().Stats().Syncs
	for i := 0; i < 50; i++ {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 10, timestamp: int64(i)}), 0)
		require.NoError(t, err)
		r.l.Flush(r.l.LogEndOffset(), func(err error) {
			require.NoError(t, err)
			order = append(order, i)
		})
	}
	r.Run(100 * time.Millisecond)
	require.Len(t, order, 50)
	for i := range order {
		require.Equal(t, i, order[i], "callbacks out of order")
	}
	// One cycle for the first flush, one for the 49 that queued behind it
	// (plus the files of a roll, if any).
	require.LessOrEqual(t, r.Proc.Disk().Stats().Syncs-syncsBefore, uint64(10))
	require.Equal(t, r.l.LogEndOffset(), r.l.DurableOffset())
}

func TestOnFlushReportsEveryCycleWithItsBytes(t *testing.T) {
	type flushed struct {
		bytes int64
		took  time.Duration
	}
	var got []flushed
	cfg := smallConfig()
	cfg.OnFlush = flushFunc(func(bytes int64, took time.Duration) { got = append(got, flushed{bytes, took}) })
	r := newRig(t, 7, cfg)
	got = nil // the settle cycle of the open
	var appended int64
	for i := 0; i < 20; i++ {
		info, err := r.l.Append(build(batchSpec{records: 1, valueSize: 10, timestamp: int64(i)}), 0)
		require.NoError(t, err)
		appended += info.Bytes
		r.l.Flush(r.l.LogEndOffset(), func(err error) { require.NoError(t, err) })
	}
	r.Run(100 * time.Millisecond)
	require.GreaterOrEqual(t, len(got), 2, "the first flush and the group behind it")
	var sum int64
	for _, f := range got {
		sum += f.bytes
		require.Positive(t, f.took, "a sync takes simulated time")
	}
	require.Equal(t, appended, sum, "each appended byte is reported by the one cycle that made it durable")
	require.Less(t, len(got), 20, "group commit: fewer cycles than flushes")
}

type flushFunc func(int64, time.Duration)

func (f flushFunc) ObserveFlush(bytes int64, took time.Duration) { f(bytes, took) }

func TestSyncFailureFailsTheLog(t *testing.T) {
	r := newRig(t, 5, smallConfig())
	_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 10}), 0)
	require.NoError(t, err)
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncFailProbability: 1})
	err = r.flush()
	require.ErrorIs(t, err, log.ErrLogFailed)
	_, err = r.l.Append(build(batchSpec{records: 1, valueSize: 10}), 0)
	require.ErrorIs(t, err, log.ErrLogFailed)
	_, err = r.l.Read(0, 100, -1)
	require.ErrorIs(t, err, log.ErrLogFailed)
	require.ErrorIs(t, r.l.Err(), log.ErrLogFailed)
	require.ErrorIs(t, r.flush(), log.ErrLogFailed)
}

func TestBusyUntilSettled(t *testing.T) {
	r := newRig(t, 6, smallConfig())
	_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 10}), 0)
	require.NoError(t, err)
	r.crash()
	r.openBusy()
	require.True(t, r.l.Busy())
	_, err = r.l.Append(build(batchSpec{records: 1, valueSize: 10}), 0)
	require.ErrorIs(t, err, log.ErrBusy)
	require.NoError(t, r.flush())
	require.False(t, r.l.Busy())
	_, err = r.l.Append(build(batchSpec{records: 1, valueSize: 10}), 0)
	require.NoError(t, err)
}

func TestRetention(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1024
	cfg.RetentionTime = time.Minute
	cfg.RetentionBytes = 3000
	r := newRig(t, 7, cfg)
	base := int64(1_700_000_000_000)
	for i := 0; i < 30; i++ {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 200, timestamp: base + int64(i)*1000}), 0)
		require.NoError(t, err)
	}
	segs := r.l.Segments()
	require.Greater(t, len(segs), 5)
	// Nothing below the high watermark: nothing goes.
	n, err := r.l.ApplyRetention(time.UnixMilli(base + 1e9))
	require.NoError(t, err)
	require.Zero(t, n)
	r.l.SetHighWatermark(r.l.LogEndOffset())
	// By size: the log stays at least retention.bytes.
	n, err = r.l.ApplyRetention(time.UnixMilli(base))
	require.NoError(t, err)
	require.Positive(t, n)
	require.GreaterOrEqual(t, r.l.Size(), cfg.RetentionBytes)
	require.Equal(t, r.l.Segments()[0].BaseOffset, r.l.LogStartOffset())
	// By time: everything but the active segment.
	n, err = r.l.ApplyRetention(time.UnixMilli(base + 1e9))
	require.NoError(t, err)
	require.Positive(t, n)
	require.Len(t, r.l.Segments(), 1)
	require.True(t, r.l.Segments()[0].Active)
	// Durable after a flush: a crash does not bring them back.
	start := r.l.LogStartOffset()
	require.NoError(t, r.flush())
	r.crash()
	r.open()
	require.Equal(t, start, r.l.LogStartOffset())
	require.Len(t, r.l.Segments(), 1)
}

func TestDeleteRecords(t *testing.T) {
	r := newRig(t, 8, smallConfig())
	for i := 0; i < 10; i++ {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 10, timestamp: int64(i)}), 0)
		require.NoError(t, err)
	}
	require.ErrorIs(t, r.l.DeleteRecordsBefore(5), log.ErrOffsetOutOfRange, "beyond the high watermark")
	r.l.SetHighWatermark(10)
	require.NoError(t, r.l.DeleteRecordsBefore(5))
	require.Equal(t, int64(5), r.l.LogStartOffset())
	_, err := r.l.Read(4, 100, -1)
	require.ErrorIs(t, err, log.ErrOffsetOutOfRange)
	require.NoError(t, r.l.DeleteRecordsBefore(3)) // no-op
	require.Equal(t, int64(5), r.l.LogStartOffset())
	require.NoError(t, r.flush())
	r.crash()
	r.open()
	require.Equal(t, int64(5), r.l.LogStartOffset())
	got, err := r.l.OffsetForTimestamp(log.EarliestTimestamp)
	require.NoError(t, err)
	require.Equal(t, int64(5), got.Offset)
}

func TestLeaderEpochs(t *testing.T) {
	r := newRig(t, 9, smallConfig())
	appendN := func(n int, epoch int32) {
		for i := 0; i < n; i++ {
			_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 10}), epoch)
			require.NoError(t, err)
		}
	}
	appendN(5, 1) // offsets 0-4
	appendN(5, 3) // 5-9
	appendN(5, 4) // 10-14
	_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 10}), 2)
	require.ErrorIs(t, err, log.ErrInvalidLeaderEpoch)
	for _, c := range []struct {
		ask, epoch int32
		end        int64
	}{
		{0, 0, 0}, // before the first epoch: its start
		{1, 1, 5},
		{2, 1, 5}, // between epochs: the one below, ending where 3 starts
		{3, 3, 10},
		{4, 4, 15}, // the latest: the log end
		{5, log.UndefinedEpoch, log.UndefinedEpochOffset},
	} {
		e, end := r.l.EndOffsetForEpoch(c.ask)
		require.Equal(t, c.epoch, e, "epoch %d", c.ask)
		require.Equal(t, c.end, end, "epoch %d", c.ask)
	}
	// Truncation cuts the cache; a restart keeps it.
	require.NoError(t, r.Wait(func(done func(error)) { r.l.Truncate(7, done) }))
	require.Equal(t, int64(7), r.l.LogEndOffset())
	require.Equal(t, []log.LeaderEpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 5}}, r.l.LeaderEpochs())
	r.crash()
	r.open()
	require.Equal(t, []log.LeaderEpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 5}}, r.l.LeaderEpochs())
	require.Equal(t, int32(3), r.l.EpochForOffset(6))
}

func TestOffsetForTimestamp(t *testing.T) {
	cfg := smallConfig()
	cfg.IndexIntervalBytes = 50
	r := newRig(t, 10, cfg)
	// Batch i holds offsets 3i..3i+2 with timestamps 100i, 100i+1, 100i+2.
	for i := 0; i < 40; i++ {
		b := record.NewBuilder(record.WithCompression(record.CodecLZ4))
		for j := 0; j < 3; j++ {
			b.Append(int64(100*i+j), nil, make([]byte, 30))
		}
		buf, err := b.AppendTo(nil)
		require.NoError(t, err)
		_, err = r.l.Append(buf, 0)
		require.NoError(t, err)
	}
	for _, c := range []struct{ ts, offset, found int64 }{
		{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, {3, 3, 100}, {150, 6, 200}, {3901, 118, 3901}, {3902, 119, 3902}, {3903, -1, -1},
	} {
		got, err := r.l.OffsetForTimestamp(c.ts)
		require.NoError(t, err)
		require.Equal(t, c.offset, got.Offset, "timestamp %d", c.ts)
		require.Equal(t, c.found, got.Timestamp, "timestamp %d", c.ts)
	}
	got, err := r.l.OffsetForTimestamp(log.MaxTimestamp)
	require.NoError(t, err)
	require.Equal(t, int64(119), got.Offset)
	got, err = r.l.OffsetForTimestamp(log.LatestTimestamp)
	require.NoError(t, err)
	require.Equal(t, int64(120), got.Offset)
}

func TestOpenFileBudget(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 512
	cfg.MaxOpenFiles = 5
	r := newRig(t, 13, cfg)
	for i := 0; i < 60; i++ {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 100, timestamp: int64(i)}), 0)
		require.NoError(t, err)
	}
	require.NoError(t, r.flush())
	require.Greater(t, len(r.l.Segments()), 20)
	require.LessOrEqual(t, r.l.OpenFiles(), cfg.MaxOpenFiles)
	// Reading everything opens and closes segments within the budget...
	readAll(t, r.l)
	require.LessOrEqual(t, r.l.OpenFiles(), cfg.MaxOpenFiles)
	// ...except while a reader pins them.
	var pinned []log.ReadResult
	for off := int64(0); off < 20; off += 4 {
		res, err := r.l.Read(off, 1, -1)
		require.NoError(t, err)
		pinned = append(pinned, res)
	}
	require.Greater(t, r.l.OpenFiles(), cfg.MaxOpenFiles)
	for i := range pinned {
		b, err := record.ReadBatch(readRegion(t, &pinned[i]), 1<<20)
		require.NoError(t, err)
		require.LessOrEqual(t, b.BaseOffset(), int64(4*i))
	}
	require.LessOrEqual(t, r.l.OpenFiles(), cfg.MaxOpenFiles)
}

// TestIdleLogHoldsOneFile: a new or reopened log keeps only its active
// .log handle open (index handles open when entries are written, the
// flushed-offset note never stays open), and ReleaseIdleFiles closes what
// an idle log opened since; the log reads and appends as before.
func TestIdleLogHoldsOneFile(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1024
	r := newRig(t, 15, cfg)
	require.Equal(t, 1, r.l.OpenFiles(), "a new log")
	for i := range 20 {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 100, timestamp: int64(i)}), 0)
		require.NoError(t, err)
	}
	require.NoError(t, r.flush())
	require.Greater(t, len(r.l.Segments()), 1)
	readAll(t, r.l)
	busy := r.l.OpenFiles()
	require.Greater(t, busy, 1, "appends and reads opened index and inactive segment handles")
	r.l.ReleaseIdleFiles()
	require.Equal(t, busy, r.l.OpenFiles(), "used since the last call: nothing released")
	r.l.ReleaseIdleFiles()
	require.Equal(t, 1, r.l.OpenFiles(), "idle for a whole interval: only the active .log")

	// Everything reopens on demand.
	got := readAll(t, r.l)
	require.Len(t, got, 20)
	ts, err := r.l.OffsetForTimestamp(7)
	require.NoError(t, err)
	require.Equal(t, int64(7), ts.Offset)
	for i := 20; i < 30; i++ {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 100, timestamp: int64(i)}), 0)
		require.NoError(t, err)
	}
	require.NoError(t, r.flush())
	r.shutdown()
	r.open()
	require.Equal(t, 1, r.l.OpenFiles(), "a reopened log")
	require.Len(t, readAll(t, r.l), 30)
}

func TestAppendReplicatedRules(t *testing.T) {
	r := newRig(t, 14, smallConfig())
	batch := func(base int64, epoch int32) []byte {
		b := record.NewBuilder(record.WithBaseOffset(base), record.WithPartitionLeaderEpoch(epoch))
		b.Append(1, nil, []byte("v"))
		b.Append(2, nil, []byte("w"))
		out, err := b.AppendTo(nil)
		require.NoError(t, err)
		return out
	}
	_, err := r.l.AppendReplicated(append(batch(0, 2), batch(2, 2)...))
	require.NoError(t, err)
	_, err = r.l.AppendReplicated(batch(3, 2))
	require.ErrorIs(t, err, log.ErrUnexpectedOffset)
	_, err = r.l.AppendReplicated(batch(4, 1))
	require.ErrorIs(t, err, log.ErrInvalidLeaderEpoch)
	bad := batch(4, 3)
	bad[len(bad)-1] ^= 1
	_, err = r.l.AppendReplicated(bad)
	require.ErrorIs(t, err, record.ErrCRCMismatch)
	info, err := r.l.AppendReplicated(batch(10, 3)) // a gap, as compacted leaders have
	require.NoError(t, err)
	require.Equal(t, int64(10), info.FirstOffset)
	require.Equal(t, int64(12), r.l.LogEndOffset())
	require.Equal(t, []log.LeaderEpochEntry{{Epoch: 2, StartOffset: 0}, {Epoch: 3, StartOffset: 10}}, r.l.LeaderEpochs())
	// Producer rules apply to Append, not to replication.
	_, err = r.l.Append([]byte("not a batch"), 3)
	require.Error(t, err)
	ctrl := record.NewBuilder(record.WithControl())
	ctrl.AppendControl(1, record.ControlCommit, record.EndTxnMarkerValue(0))
	out, err := ctrl.AppendTo(nil)
	require.NoError(t, err)
	_, err = r.l.Append(out, 3)
	require.ErrorIs(t, err, record.ErrInvalidRecord)
	_, err = r.l.AppendCoordinator(out, 3)
	require.NoError(t, err)
}

func TestRollBySegmentTime(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.SegmentTime = time.Second
	r := newRig(t, 15, cfg)
	for _, ts := range []int64{1000, 1500, 2000, 2001, 3100} {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 10, timestamp: ts}), 0)
		require.NoError(t, err)
	}
	// Rolls when a batch is more than segment.ms newer than the segment's
	// first: at 2001 (after 1000) and 3100 (after 2001).
	var bases []int64
	for _, s := range r.l.Segments() {
		bases = append(bases, s.BaseOffset)
	}
	require.Equal(t, []int64{0, 3, 4}, bases)
}

func TestLeftoverFiles(t *testing.T) {
	r := newRig(t, 16, smallConfig())
	for i := 0; i < 5; i++ {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 10, timestamp: int64(i)}), 0)
		require.NoError(t, err)
	}
	r.shutdown()
	d := r.Env.Disk()
	touch := func(name string, data []byte) {
		f, err := d.Open(testDir+"/"+name, true)
		require.NoError(t, err)
		require.NoError(t, f.WriteAt(data, 0))
		require.NoError(t, f.Close())
	}
	touch("00000000000000000007.index", []byte("orphan"))
	touch("00000000000000000000.log.cleaned", []byte("half a cleaned segment"))
	touch("00000000000000000003.log.deleted", []byte("old"))
	touch("recovery-checkpoint.tmp", []byte("0\n"))
	touch("partition.metadata", []byte("someone else's"))
	r.open()
	files := strings.Join(r.Proc.Disk().Files(), " ")
	for _, gone := range []string{"00000000000000000007.index", ".cleaned", ".deleted", ".tmp"} {
		require.NotContains(t, files, gone)
	}
	require.Contains(t, files, "partition.metadata")
	require.Equal(t, int64(5), r.l.LogEndOffset())

	// A committed swap (the .log is a .swap) is completed.
	segs := r.l.Segments()
	require.Len(t, segs, 1)
	r.shutdown()
	data, _ := r.Proc.Disk().ReadFile(testDir + "/00000000000000000000.log")
	first, err := record.ReadBatch(data, len(data))
	require.NoError(t, err)
	touch("00000000000000000000.log.swap", first.Bytes())
	r.open()
	require.Equal(t, int64(1), r.l.LogEndOffset(), "the swapped-in segment holds one batch")
	require.NotContains(t, strings.Join(r.Proc.Disk().Files(), " "), ".swap")
}

func TestShutdownRecoversFast(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.RecoveryCheckpointBytes = 1 << 30
	r := newRig(t, 17, cfg)
	for i := 0; i < 200; i++ {
		_, err := r.l.Append(build(batchSpec{records: 1, valueSize: 100, timestamp: int64(i)}), 0)
		require.NoError(t, err)
	}
	r.shutdown()
	require.ErrorIs(t, errors.Join(log.ErrClosed), log.ErrClosed)
	r.openBusy()
	require.Equal(t, int64(200), r.l.RecoveryPoint())
	require.Equal(t, int64(200), r.l.LogEndOffset())
}

// TestAppendValidatedIsAppendWithoutTheValidationPass: a batch the caller
// validated appends as Append would (offsets, epoch, bytes), and the
// checks other than the batch's own still apply.
func TestAppendValidatedIsAppendWithoutTheValidationPass(t *testing.T) {
	r := newRig(t, 2, smallConfig())
	raw := build(batchSpec{records: 3, valueSize: 20, timestamp: 1000, seed: 1})
	b, err := record.ReadProduceBatch(raw, 1<<20)
	require.NoError(t, err)
	sum, err := record.NewValidator().ValidateProduce(b, record.LimitsFor(1<<20))
	require.NoError(t, err)
	info, err := r.l.AppendValidated(b, sum, 4)
	require.NoError(t, err)
	require.Equal(t, int64(0), info.FirstOffset)
	require.Equal(t, int64(2), info.LastOffset)
	require.Equal(t, int32(4), r.l.LatestEpoch())
	got := readAll(t, r.l)
	require.Len(t, got, 1)
	require.Equal(t, raw, got[0].bytes, "stored as Append stores it")
	_, err = r.l.AppendValidated(b, sum, 3)
	require.ErrorIs(t, err, log.ErrInvalidLeaderEpoch, "an older epoch is still refused")
}

// TestUnreadableIndexesAreRebuiltFromTheSegments: latent sector errors on
// every read of the index files (EIO until rewritten) must not keep the
// log from opening: recovery rebuilds the indexes from the segments (the
// data is there) and rewrites them, and every record reads back (issue
// 10: a latent error on an index file had bricked the partition).
func TestUnreadableIndexesAreRebuiltFromTheSegments(t *testing.T) {
	r := newRig(t, 8, smallConfig())
	var batches [][]byte
	for i := 0; i < 60; i++ {
		b := build(batchSpec{records: 2, valueSize: 40, timestamp: int64(i) * 10, seed: byte(i)})
		batches = append(batches, append([]byte(nil), b...))
		_, err := r.l.Append(b, 0)
		require.NoError(t, err)
	}
	require.NoError(t, r.flush())
	require.Greater(t, len(r.l.Segments()), 2, "several segments, each with indexes")
	want := readAll(t, r.l)
	r.shutdown()

	d := r.Proc.Disk()
	d.DeclareSurvivable(func(name string) bool {
		return strings.HasSuffix(name, ".index") || strings.HasSuffix(name, ".timeindex")
	})
	d.SetFaults(sim.DiskFaults{LatentErrorProbability: 1})
	r.crash() // a power cycle: recovery cannot rely on the clean shutdown's page cache
	r.open()
	d.SetFaults(sim.DiskFaults{})
	require.Equal(t, want, readAll(t, r.l), "every record is back")
	res, err := r.l.Read(61, 1<<20, -1)
	require.NoError(t, err, "an index lookup in the middle works")
	require.Equal(t, int64(60), res.FirstOffset, "the batch holding offset 61")
	res.Release()
}
