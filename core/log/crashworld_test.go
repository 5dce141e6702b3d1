package log_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
)

// This file holds what the crash tests (TestCrashRecovery and
// TestCompactCrashRecovery) share: the seed sweep, the world of one
// process on a faulty simulated disk with what its flushes acknowledged,
// the fault phases, and the parts of a workload both run.

// crashSweep runs run for seeds 1 to sweep (40 under -short, or the number
// in the environment variable sweepVar for a longer sweep) and, beyond
// them, the regression seeds; each seed is a parallel subtest, and add
// sums the seeds' statistics for the test's log.
func crashSweep[S any](t *testing.T, sweep uint64, sweepVar string, regression []uint64, run func(seed uint64) (S, error), add func(*S, S)) {
	if testing.Short() {
		sweep = 40
	}
	if v := os.Getenv(sweepVar); v != "" {
		var err error
		if sweep, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", sweepVar, v, err)
		}
	}
	seeds := make([]uint64, 0, sweep+uint64(len(regression)))
	for s := uint64(1); s <= sweep; s++ {
		seeds = append(seeds, s)
	}
	for _, s := range regression {
		if s > sweep {
			seeds = append(seeds, s)
		}
	}
	var mu sync.Mutex
	var total S
	t.Cleanup(func() { t.Logf("%d seeds: %+v", len(seeds), total) })
	name := t.Name()
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel() // each seed is its own simulation
			st, err := run(seed)
			if err != nil {
				t.Fatalf("seed %d: %v\nreplay: go test ./core/log -run '%s/seed=%d$' -v", seed, err, name, seed)
			}
			mu.Lock()
			add(&total, st)
			mu.Unlock()
		})
	}
}

// addCounts adds each field of o, a seed's statistics (all counts), to
// s's.
func addCounts[S any](s *S, o S) {
	sv, ov := reflect.ValueOf(s).Elem(), reflect.ValueOf(o)
	for i := range sv.NumField() {
		f := sv.Field(i)
		f.SetInt(f.Int() + ov.Field(i).Int())
	}
}

// crashWorld is one process on a faulty simulated disk, across its
// incarnations, and what its acknowledged flushes promise.
type crashWorld struct {
	s   *sim.Sim
	p   *sim.Process
	err error // the first violation found
	inc int   // the current incarnation
	// durableEnd: a flush acknowledged every offset below it.
	durableEnd int64
	// maxLogStart is the largest log start offset retention or
	// DeleteRecords ever set; durableLogStart the largest an acknowledged
	// flush covered.
	maxLogStart, durableLogStart int64
}

// newCrashSim is a crash test's simulation: buggified, logging with
// STRATA_LOG_TEST_VERBOSE set.
func newCrashSim(seed uint64) *sim.Sim {
	return sim.New(sim.Config{Seed: seed, BuggifyRate: 0.2, Log: verboseLog()})
}

func (w *crashWorld) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("incarnation %d at %v: %s", w.inc, w.s.Now(), fmt.Sprintf(format, args...))
	}
}

// diskFaultMix bounds the disk faults a seed draws.
type diskFaultMix struct {
	syncFailSpread float64 // a faulty seed's syncs fail 0.2% of the time plus up to this
	capacityOneIn  int     // one seed in this many has a disk that fills ...
	capacityMin    int64   // ... at this many bytes plus up to 256 KiB
}

// drawDiskFaults draws a seed's disk faults: each of failing syncs,
// flipped bits and stalls for half the seeds, a small disk for some.
func drawDiskFaults(rng *rand.Rand, mix diskFaultMix) sim.DiskFaults {
	faults := sim.DiskFaults{}
	if rng.IntN(2) == 0 {
		faults.SyncFailProbability = 0.002 + rng.Float64()*mix.syncFailSpread
		faults.SyncDirFailProbability = faults.SyncFailProbability
	}
	if rng.IntN(2) == 0 {
		faults.BitFlipProbability = 0.001 + rng.Float64()*0.01
	}
	if rng.IntN(2) == 0 {
		faults.StallProbability = 0.05
		faults.StallLatency = 20 * time.Millisecond
	}
	if rng.IntN(mix.capacityOneIn) == 0 {
		faults.CapacityBytes = mix.capacityMin + rng.Int64N(256<<10)
	}
	return faults
}

// runPhases starts the process and runs the fault phase (1.5 s) with
// stop then a new incarnation at random points of it, heals the disk,
// runs clean for 300 ms, then loses power a last time and gives recovery
// 50 ms; opened says whether the last incarnation has its log open.
// crashes counts the last power loss.
func (w *crashWorld) runPhases(rng *rand.Rand, stop func(), crashes *int, opened func() bool) error {
	w.p.Start()
	const faultPhase = 1500 * time.Millisecond
	for at := time.Duration(0); ; {
		at += time.Duration(rng.Int64N(int64(400 * time.Millisecond)))
		if at >= faultPhase {
			break
		}
		w.s.At(at, "test:crash", func() {
			stop()
			w.p.Start()
		})
	}
	if err := w.s.RunUntil(faultPhase); err != nil {
		return err
	}
	if w.err != nil {
		return w.err
	}
	w.p.Disk().SetFaults(sim.DiskFaults{})
	if !w.p.Up() {
		w.p.Start()
	}
	if err := w.s.RunFor(300 * time.Millisecond); err != nil {
		return err
	}
	*crashes++
	w.p.Crash()
	w.p.Start()
	if err := w.s.RunFor(50 * time.Millisecond); err != nil {
		return err
	}
	if w.err == nil && !opened() {
		w.err = errors.New("the log did not open after the faults healed")
	}
	return w.err
}

// open begins an incarnation: it checks the epochs the disk kept and
// opens the log. When the disk is full (recovery rewrites indexes) or
// unavailable (a failed filesystem, or reads of one range that never
// agreed twice in a row: with reads flipping a bit up to 1.1% of the time
// and millions of reads per run, that happens about once in 1e8 stable
// reads; the disk is bad, not the log), it has restart retry soon, as the
// owner of a log does, and returns nil, as it does after a violation.
func (w *crashWorld) open(e env.Env, cfg log.Config, restart func(after time.Duration), unavailable *int) *log.Log {
	w.inc++
	if err := epochStartsKept(w.p.Disk(), testDir); err != nil {
		w.fail("before open: %v", err)
		return nil
	}
	l, err := log.Open(e, testDir, cfg)
	switch {
	case err == nil:
		return l
	case errors.Is(err, env.ErrNoSpace):
		restart(10 * time.Millisecond)
	case errors.Is(err, log.ErrStorageUnavailable):
		*unavailable++
		restart(10 * time.Millisecond)
	default:
		if os.Getenv("STRATA_LOG_TEST_VERBOSE") != "" {
			ck, _ := w.p.Disk().ReadFile(testDir + "/recovery-checkpoint")
			fmt.Fprintf(os.Stderr, "open failed: checkpoint %q\n", ck)
		}
		w.fail("open: %v", err)
	}
	return nil
}

// startLoad begins an incarnation's workload: it opens the log (open),
// checks it with recovered (an error is a violation) and makes the
// workload with newLoad; once what recovery changed is durable, settled
// prepares the workload's log (false when that failed) and the workload
// ticks.
func (w *crashWorld) startLoad(e env.Env, cfg log.Config, restart func(after time.Duration), unavailable *int,
	recovered func(*log.Log) error, newLoad func(*log.Log) *crashLoad, settled func(n *crashLoad) bool) {
	l := w.open(e, cfg, restart, unavailable)
	if l == nil {
		return
	}
	if err := recovered(l); err != nil {
		w.fail("after recovery: %v", err)
		return
	}
	n := newLoad(l)
	l.Flush(l.LogEndOffset(), func(err error) {
		if err != nil {
			n.failed(err)
			return
		}
		if settled(n) {
			n.tick()
		}
	})
}

// checkDurable checks a recovered log's bounds against what flushes
// acknowledged and what retention or DeleteRecords set.
func (w *crashWorld) checkDurable(l *log.Log) error {
	start, end := l.LogStartOffset(), l.LogEndOffset()
	if start > w.maxLogStart {
		return fmt.Errorf("log start offset %d beyond anything retention or DeleteRecords set (%d)", start, w.maxLogStart)
	}
	if start < w.durableLogStart {
		return fmt.Errorf("log start offset %d below the durable %d", start, w.durableLogStart)
	}
	if end < w.durableEnd && w.durableEnd > start {
		return fmt.Errorf("lost acknowledged data: log ends at %d, a flush acknowledged %d", end, w.durableEnd)
	}
	return nil
}

// adopt takes a checked recovered log as what the world knows.
func (w *crashWorld) adopt(l *log.Log) {
	w.durableEnd = min(w.durableEnd, l.LogEndOffset())
	w.maxLogStart = l.LogStartOffset()
}

// checkTxnIndex compares a recovered transaction index with the entries
// of the history (in offset order): below AbortedIndexEnd, and at or past
// the log start, it must list exactly those, through every swap the
// cleaner made.
func checkTxnIndex(l *log.Log, history []log.AbortedTxn) error {
	start, end := l.LogStartOffset(), l.AbortedIndexEnd()
	if end < start || end > l.LogEndOffset() {
		return fmt.Errorf("transaction index end %d outside the log [%d, %d]", end, start, l.LogEndOffset())
	}
	var want, got []log.AbortedTxn
	for _, t := range history {
		if t.LastOffset >= start && t.LastOffset < end {
			want = append(want, t)
		}
	}
	for _, t := range l.AbortedTxns(start, math.MaxInt64) {
		if t.LastOffset >= end {
			return fmt.Errorf("transaction index entry at %d beyond its end %d", t.LastOffset, end)
		}
		got = append(got, t)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("transaction index below %d:\n got %v\nwant %v", end, got, want)
	}
	return nil
}

// drawAbortedTxn draws the entry of an ABORT marker that a batch ending at
// last stands for.
func drawAbortedTxn(rng *rand.Rand, l *log.Log, last int64) log.AbortedTxn {
	t := log.AbortedTxn{ProducerID: rng.Int64N(5), LastOffset: last, LastStableOffset: last}
	t.FirstOffset = max(l.LogStartOffset(), last-rng.Int64N(50))
	return t
}

// crashLoad is what one incarnation's workload in a crash test shares:
// the log it drives, its pace, its handling of errors and the steps both
// tests take.
type crashLoad struct {
	w    *crashWorld
	e    env.Env
	l    *log.Log
	inc  int
	rng  *rand.Rand
	dead bool
	// step takes one step of the test's own workload; restart is what a
	// failed log makes the test do (restart the process after a while).
	step    func()
	restart func(after time.Duration)
	// Counters of the errors the workload expects, in the test's stats.
	failedLogs, fullDisk, flakyReads *int
}

func (n *crashLoad) alive() bool { return !n.dead && n.inc == n.w.inc && n.w.err == nil }

// tick takes a step every 0.1 to 1.6 ms while the incarnation lives.
func (n *crashLoad) tick() {
	if !n.alive() {
		return
	}
	n.step()
	n.e.AfterFunc(time.Duration(100+n.rng.IntN(1500))*time.Microsecond, n.tick)
}

// failed ends the workload on an operation's error: a failed log restarts
// the process soon; anything else is a bug.
func (n *crashLoad) failed(err error) {
	if n.dead {
		return
	}
	n.dead = true
	if errors.Is(err, log.ErrLogFailed) {
		*n.failedLogs++
		n.restart(time.Duration(n.rng.IntN(5)) * time.Millisecond)
		return
	}
	n.w.fail("unexpected error: %v", err)
}

// check handles an operation's error and reports whether there was none:
// a failed log restarts; a full disk is expected, and so is a read that
// never read the same twice (bit flips), which leaves the log as it was;
// anything else is a bug.
func (n *crashLoad) check(err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, log.ErrLogFailed):
		n.failed(err)
	case errors.Is(err, env.ErrNoSpace):
		*n.fullDisk++
	case errors.Is(err, env.ErrIO) && !errors.Is(err, log.ErrCorrupt):
		*n.flakyReads++
	default:
		n.w.fail("unexpected error: %v", err)
	}
	return false
}

// flush flushes to the log end; when it is acknowledged in the same
// incarnation, acked counts it and the world's durable bounds move.
func (n *crashLoad) flush(acked *int) {
	w, l := n.w, n.l
	upto, start := l.LogEndOffset(), l.LogStartOffset()
	l.Flush(upto, func(err error) {
		if err != nil {
			n.failed(err)
			return
		}
		if n.inc == w.inc {
			*acked++
			w.durableEnd = max(w.durableEnd, upto)
			w.durableLogStart = max(w.durableLogStart, start)
		}
	})
}

// applyRetention applies retention to the whole log; retained counts the
// segments it deleted.
func (n *crashLoad) applyRetention(retained *int) {
	l := n.l
	l.SetHighWatermark(l.LogEndOffset())
	deleted, err := l.ApplyRetention(n.e.Now())
	n.check(err)
	*retained += deleted
	n.w.maxLogStart = max(n.w.maxLogStart, l.LogStartOffset())
}

// read reads somewhere in the log (what it reads the recovery checks).
func (n *crashLoad) read() {
	l := n.l
	if l.LogEndOffset() > l.LogStartOffset() {
		off := l.LogStartOffset() + n.rng.Int64N(l.LogEndOffset()-l.LogStartOffset())
		res, err := l.Read(off, n.rng.IntN(4096), -1)
		if !n.check(err) {
			return
		}
		res.Release()
	}
}

// builderOptions compresses a quarter of the batches, with any codec.
func (n *crashLoad) builderOptions(comp *record.Compressor) []record.BuilderOption {
	opts := []record.BuilderOption{record.WithCompressor(comp)}
	if n.rng.IntN(4) == 0 {
		opts = append(opts, record.WithCompression([]record.Codec{record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}[n.rng.IntN(4)]))
	}
	return opts
}
