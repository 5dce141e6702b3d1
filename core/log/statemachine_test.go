package log_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
)

// TestLogStateMachine drives a log on the simulator's disk with random
// operations (appends as leader and follower, reads, rolls, retention,
// delete-records, truncation, flushes, clean reopens, shutdowns and power
// failures at any point of a flush) and checks it against an in-memory
// model after every step.
func TestLogStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		newLogMachine(rt).run(rt)
	})
}

type logMachine struct {
	r       *rig
	m       *model
	cfg     log.Config
	clock   int64 // record timestamps, ms
	epoch   int32
	pending []*pendingFlush
}

func newLogMachine(t *rapid.T) *logMachine {
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = rapid.Int64Range(600, 6000).Draw(t, "segmentBytes")
	cfg.IndexIntervalBytes = rapid.Int64Range(0, 800).Draw(t, "indexInterval")
	cfg.SegmentIndexBytes = rapid.SampledFrom([]int64{12, 24, 96, 4096}).Draw(t, "segmentIndexBytes")
	cfg.SegmentTime = time.Duration(rapid.Int64Range(50, 100000).Draw(t, "segmentMs")) * time.Millisecond
	cfg.RetentionTime = time.Duration(rapid.Int64Range(-1, 3000).Draw(t, "retentionMs")) * time.Millisecond
	cfg.RetentionBytes = rapid.Int64Range(-1, 20000).Draw(t, "retentionBytes")
	cfg.MaxOpenFiles = rapid.IntRange(4, 12).Draw(t, "maxOpenFiles")
	cfg.RecoveryCheckpointBytes = rapid.Int64Range(1, 20000).Draw(t, "checkpointBytes")
	seed := rapid.Uint64().Draw(t, "seed")
	return &logMachine{r: newRig(t, seed, cfg), m: newModel(), cfg: cfg, clock: 1_700_000_000_000}
}

func (lm *logMachine) run(t *rapid.T) {
	t.Repeat(map[string]func(*rapid.T){
		"append":         lm.append,
		"appendFollower": lm.appendFollower,
		"read":           lm.read,
		"roll":           lm.roll,
		"retention":      lm.retention,
		"deleteRecords":  lm.deleteRecords,
		"setHW":          lm.setHW,
		"truncate":       lm.truncate,
		"truncateFully":  lm.truncateFully,
		"flush":          lm.flush,
		"flushAsync":     lm.flushAsync,
		"tick":           lm.tick,
		"reopen":         lm.reopen,
		"shutdown":       lm.shutdown,
		"crash":          lm.crash,
		"timestamp":      lm.timestamp,
		"": func(t *rapid.T) {
			lm.m.checkLog(t, lm.r.l, lm.cfg)
		},
	})
}

// ready waits, if the log is busy settling what recovery changed, until
// it has settled (checking that changes are refused meanwhile). Crashes
// and reads do not wait, so recovery is also tested mid-settle.
func (lm *logMachine) ready(t *rapid.T) {
	if !lm.r.l.Busy() {
		return
	}
	require.ErrorIs(t, lm.r.l.Roll(), log.ErrBusy)
	lm.flush(t)
	require.False(t, lm.r.l.Busy())
}

// runSim advances the simulator, applying flush completions to the model.
func (lm *logMachine) runSim(t *rapid.T, d time.Duration) {
	require.NoError(t, lm.r.Sim.RunFor(d))
}

func (lm *logMachine) flushCallback(t *rapid.T, p *pendingFlush) func(error) {
	lm.pending = append(lm.pending, p)
	l := lm.r.l
	return func(err error) {
		if l != lm.r.l {
			if err != nil {
				require.ErrorIs(t, err, log.ErrClosed, "a flush of a closed log")
			}
			return
		}
		require.NoError(t, err, "flush failed")
		require.Equal(t, p, lm.pending[0], "flush callbacks out of order")
		lm.pending = lm.pending[1:]
		lm.m.flushDone(p)
	}
}

func (lm *logMachine) nextBatch(t *rapid.T, opts ...record.BuilderOption) []byte {
	lm.clock += rapid.Int64Range(-30, 100).Draw(t, "clockStep")
	n := rapid.IntRange(1, 5).Draw(t, "records")
	size := rapid.IntRange(0, 300).Draw(t, "valueSize")
	b := record.NewBuilder(opts...)
	for i := 0; i < n; i++ {
		b.Append(lm.clock+int64(rapid.IntRange(-5, 5).Draw(t, "tsJitter")), []byte{byte(i)}, make([]byte, size))
	}
	out, err := b.AppendTo(nil)
	require.NoError(t, err)
	return out
}

func (lm *logMachine) append(t *rapid.T) {
	lm.ready(t)
	if rapid.IntRange(0, 9).Draw(t, "bumpEpoch") == 0 {
		lm.epoch += int32(rapid.IntRange(1, 2).Draw(t, "epochStep"))
	}
	var buf []byte
	var sizes []int
	for n := rapid.IntRange(1, 3).Draw(t, "batches"); n > 0; n-- {
		b := lm.nextBatch(t)
		sizes = append(sizes, len(b))
		buf = append(buf, b...)
	}
	leo := lm.m.leo
	info, err := lm.r.l.Append(buf, lm.epoch)
	if int64(len(buf)) > lm.cfg.SegmentBytes { // a produce request goes into one segment
		require.ErrorIs(t, err, record.ErrBatchTooLarge)
		return
	}
	if lm.tooLarge(sizes) {
		require.ErrorIs(t, err, record.ErrBatchTooLarge)
		return
	}
	require.NoError(t, err)
	require.Equal(t, leo, info.FirstOffset)
	lm.m.assignEpoch(lm.epoch, leo)
	lm.addStored(t, buf, sizes)
	require.Equal(t, lm.m.leo-1, info.LastOffset)
}

// tooLarge reports whether a batch cannot fit in a segment.
func (lm *logMachine) tooLarge(sizes []int) bool {
	for _, n := range sizes {
		if int64(n) > lm.cfg.SegmentBytes {
			return true
		}
	}
	return false
}

// addStored adds appended batches (with their offsets now in buf) to the
// model.
func (lm *logMachine) addStored(t *rapid.T, buf []byte, sizes []int) {
	pos := 0
	for _, n := range sizes {
		b := newMBatch(t, buf[pos:pos+n])
		lm.m.batches = append(lm.m.batches, b)
		lm.m.leo = b.last + 1
		pos += n
	}
}

func (lm *logMachine) appendFollower(t *rapid.T) {
	lm.ready(t)
	epoch := max(lm.epoch, lm.r.l.LatestEpoch())
	if rapid.Bool().Draw(t, "newEpoch") {
		epoch++
	}
	lm.epoch = epoch
	var buf []byte
	var sizes []int
	next := lm.m.leo
	for n := rapid.IntRange(1, 4).Draw(t, "batches"); n > 0; n-- {
		next += int64(rapid.SampledFrom([]int{0, 0, 0, 1, 3}).Draw(t, "gap"))
		b := lm.nextBatch(t, record.WithBaseOffset(next), record.WithPartitionLeaderEpoch(epoch))
		bt, err := record.ReadBatch(b, len(b))
		require.NoError(t, err)
		next = bt.NextOffset()
		sizes = append(sizes, len(b))
		buf = append(buf, b...)
	}
	_, err := lm.r.l.AppendReplicated(buf)
	if lm.tooLarge(sizes) {
		require.ErrorIs(t, err, record.ErrBatchTooLarge)
		return
	}
	require.NoError(t, err)
	lm.addStored(t, buf, sizes)
	for _, b := range lm.m.batches[len(lm.m.batches)-len(sizes):] {
		lm.m.assignEpoch(b.epoch, b.base)
	}
}

func (lm *logMachine) read(t *rapid.T) {
	m := lm.m
	offset := rapid.Int64Range(max(0, m.logStart-2), m.leo+2).Draw(t, "offset")
	maxBytes := rapid.IntRange(0, 3000).Draw(t, "maxBytes")
	maxOffset := rapid.SampledFrom([]int64{-1, m.hw, max(0, m.leo-1), offset + 2}).Draw(t, "maxOffset")
	m.checkRead(t, lm.r.l, offset, maxBytes, maxOffset)
}

func (lm *logMachine) timestamp(t *rapid.T) {
	ts := rapid.OneOf(rapid.Just(log.LatestTimestamp), rapid.Just(log.EarliestTimestamp),
		rapid.Int64Range(lm.clock-3000, lm.clock+200)).Draw(t, "timestamp")
	lm.m.checkTimestamp(t, lm.r.l, ts)
	lm.m.checkEpochs(t, lm.r.l)
}

func (lm *logMachine) roll(t *rapid.T) {
	lm.ready(t)
	require.NoError(t, lm.r.l.Roll())
}

func (lm *logMachine) retention(t *rapid.T) {
	lm.ready(t)
	now := time.UnixMilli(lm.clock + rapid.Int64Range(-100, 3000).Draw(t, "retentionNow"))
	m, l := lm.m, lm.r.l
	// Predict from the segments and the model's batches.
	segs := l.Segments()
	size := l.Size()
	want := 0
	for ; want < len(segs)-1; want++ {
		s, upper := segs[want], segs[want+1].BaseOffset
		if upper > m.hw {
			break
		}
		maxTs := int64(-1)
		for _, b := range m.batches {
			if b.base >= s.BaseOffset && b.base < upper {
				maxTs = max(maxTs, b.maxTs)
			}
		}
		byTime := lm.cfg.RetentionTime >= 0 && maxTs >= 0 && now.UnixMilli()-maxTs > lm.cfg.RetentionTime.Milliseconds()
		bySize := lm.cfg.RetentionBytes >= 0 && size-s.Size >= lm.cfg.RetentionBytes
		if upper > m.logStart && !byTime && !bySize {
			break
		}
		size -= s.Size
	}
	n, err := l.ApplyRetention(now)
	require.NoError(t, err)
	require.Equal(t, want, n, "segments deleted by retention")
	if n > 0 {
		first := segs[n].BaseOffset
		m.retained(first)
		if first > m.logStart {
			m.setLogStart(first)
		}
	}
}

func (lm *logMachine) deleteRecords(t *rapid.T) {
	lm.ready(t)
	m := lm.m
	offset := rapid.Int64Range(m.logStart, m.leo).Draw(t, "deleteBefore")
	err := lm.r.l.DeleteRecordsBefore(offset)
	if offset > m.hw {
		require.ErrorIs(t, err, log.ErrOffsetOutOfRange)
		return
	}
	require.NoError(t, err)
	if offset > m.logStart {
		m.setLogStart(offset)
	}
}

func (lm *logMachine) setHW(t *rapid.T) {
	hw := rapid.Int64Range(lm.m.hw, lm.m.leo).Draw(t, "hw")
	lm.r.l.SetHighWatermark(hw)
	lm.m.hw = hw
}

func (lm *logMachine) truncate(t *rapid.T) {
	lm.ready(t)
	m := lm.m
	to := rapid.Int64Range(m.logStart, m.leo).Draw(t, "truncateTo")
	segs := lm.r.l.Segments()
	segBase := segs[max(0, segmentIndex(segs, to))].BaseOffset
	lm.truncation(t, func(done func(error)) { lm.r.l.Truncate(to, done) }, func() { m.truncate(to, segBase) })
}

func (lm *logMachine) truncateFully(t *rapid.T) {
	lm.ready(t)
	m := lm.m
	offset := rapid.Int64Range(max(0, m.leo-20), m.leo+20).Draw(t, "startAt")
	lm.truncation(t, func(done func(error)) { lm.r.l.TruncateFullyAndStartAt(offset, done) }, func() { m.truncateFully(offset) })
}

// truncation runs a truncation to completion, or crashes while it runs:
// then the old log and the new one may both come back.
func (lm *logMachine) truncation(t *rapid.T, issue func(func(error)), apply func()) {
	if !rapid.Bool().Draw(t, "crashDuring") {
		require.NoError(t, lm.r.Wait(issue))
		apply()
		lm.m.durableEnd = min(lm.m.durableEnd, lm.m.leo)
		return
	}
	m := lm.m
	done := false
	issue(func(err error) {
		require.NoError(t, err)
		done = true
	})
	lm.runSim(t, time.Duration(rapid.IntRange(0, 3000).Draw(t, "truncateMicros"))*time.Microsecond)
	// The old version keeps what the new one keeps (a truncation deletes
	// newest first), and a restart from scratch keeps nothing of it.
	old := alt{batches: m.batches, leo: m.leo}
	apply()
	m.seq++
	old.seq = m.seq
	old.required = min(m.durableEnd, m.leo)
	if m.leo <= m.logStart && len(m.batches) == 0 {
		old.required = 0
	}
	m.alts = append(m.alts, old)
	lm.r.crash()
	lm.pending = nil
	require.NoError(t, epochStartsKept(lm.r.Proc.Disk(), testDir))
	lm.r.openBusy()
	m.adoptRecovered(t, lm.r.l, false)
	_ = done
}

func (lm *logMachine) flush(t *rapid.T) {
	p := lm.m.flushIssued()
	cb := lm.flushCallback(t, p)
	require.NoError(t, lm.r.Wait(func(done func(error)) {
		lm.r.l.Flush(lm.m.leo, func(err error) {
			cb(err)
			done(err)
		})
	}))
}

func (lm *logMachine) flushAsync(t *rapid.T) {
	lm.r.l.Flush(lm.m.leo, lm.flushCallback(t, lm.m.flushIssued()))
}

func (lm *logMachine) tick(t *rapid.T) {
	lm.runSim(t, time.Duration(rapid.IntRange(0, 5000).Draw(t, "tickMicros"))*time.Microsecond)
}

func (lm *logMachine) reopen(t *rapid.T) {
	require.NoError(t, lm.r.l.Close())
	lm.pending = nil
	require.NoError(t, epochStartsKept(lm.r.Proc.Disk(), testDir))
	lm.r.openBusy()
	// Nothing was lost: the page cache survives a close (unless the log
	// start offset of the checkpoint lies beyond the log end: an emptied
	// log whose restart at a lower offset was not checkpointed).
	m := lm.m
	if lm.r.l.LogStartOffset() <= m.leo {
		require.Equal(t, m.leo, lm.r.l.LogEndOffset())
	}
	m.adoptRecovered(t, lm.r.l, true)
}

func (lm *logMachine) shutdown(t *rapid.T) {
	lm.ready(t)
	lm.r.shutdown()
	lm.pending = nil
	require.NoError(t, epochStartsKept(lm.r.Proc.Disk(), testDir))
	m := lm.m
	m.durableEnd = m.leo
	m.alts = nil
	lm.r.openBusy()
	require.Equal(t, m.leo, lm.r.l.LogEndOffset())
	require.Equal(t, m.logStart, lm.r.l.LogStartOffset())
	require.Equal(t, m.leo, lm.r.l.RecoveryPoint())
	m.adoptRecovered(t, lm.r.l, false)
}

func (lm *logMachine) crash(t *rapid.T) {
	if rapid.Bool().Draw(t, "flushFirst") {
		lm.flushAsync(t)
	}
	lm.runSim(t, time.Duration(rapid.IntRange(0, 3000).Draw(t, "beforeCrashMicros"))*time.Microsecond)
	lm.r.crash()
	lm.pending = nil
	if os.Getenv("STRATA_LOG_TEST_VERBOSE") != "" {
		fmt.Fprintln(os.Stderr, "after crash:", lm.r.Proc.Disk().Files())
	}
	require.NoError(t, epochStartsKept(lm.r.Proc.Disk(), testDir))
	lm.r.openBusy()
	lm.m.adoptRecovered(t, lm.r.l, false)
}
