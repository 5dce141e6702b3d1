package log_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
)

// crashSeeds is how many seeds TestCrashRecovery runs (a few hundred ms
// each on the simulator).
const crashSeeds = 200

// crashRegressionSeeds are seeds that once failed, pinned with the bug they
// found; those beyond the seeds a run sweeps (crashSeeds, 40 under -short,
// or STRATA_LOG_CRASH_SEEDS) run in addition.
var crashRegressionSeeds = []uint64{
	// Found by a 3000-seed sweep while the flush cycle and recovery were
	// being written (see the git history of core/log for the fixes):
	342, 433, 876, // recovered batches differ from those appended
	1045, 1417, 2016, // "segment ends before the recovery point" hard errors
	2014, 2316, 2757, // acknowledged data lost
	// Found by the next sweep:
	322, 1591, 2377, 2732, // torn batches below the recovery point
	341, // appended offsets do not follow the recovered log
	// Since restarts also kill the process with the machine up (the page
	// cache kept), seeds 20, 41, 72, 112, 113, 129, 137, 139, 147, 172,
	// 179, 188, 197, 200, 342, 876 and 1045 failed until a failed log left
	// a failure marker (failure.go): lost acknowledged data, zeros below
	// the recovery point, recovered batches that differ.
	798, // the marker recovery re-linked an empty segment as an empty .log.swap
	// A failed SyncDir on the simulated disk lost its directory changes
	// for good while later SyncDirs succeeded and the page cache went on
	// showing the lost names, which no real filesystem does (ext4 aborts
	// its journal, XFS shuts down). These failed until a failed SyncDir
	// failed the whole simulated filesystem until a power loss (sim.Disk):
	112, 129, // skipped as a known limit until then (the log directory's creation lost; deleted segments back)
	221, 234, // recovered batches that differ from those appended
	254, 605, 724, 776, // lost acknowledged data
	486, 680, // recovered batches that were never appended
	791, // a log start offset below the durable one
	// Found once the filesystem failed that way (and the harness rebooted
	// a machine whose filesystem stayed failed):
	63, // a failed Sync reported while other Syncs of its flush step were in flight failed the log only once the step ended; a kill in between left no marker
	12, // the harness forgot batches a marker recovery had cut before the cut was durable; a power loss brought them back (never-flushed data, allowed)
}

// TestCrashRecovery runs a process that appends random batches, flushes,
// rolls, applies retention and deletes records on a simulated disk whose
// syncs fail, stall and whose reads flip bits, while the process crashes
// (power loss) or, per the seed, is killed with the machine up (the page
// cache kept, as a supervisor's restart of a failed process does) at random
// points and restarts; the last stop is always a power loss. A failed
// directory sync fails the filesystem until a power loss: Open then fails
// with log.ErrStorageUnavailable (or the first flush fails the log) and the
// harness retries, rebooting the machine when a process restart found the
// filesystem still failed. After every restart it
// checks the recovered log against what the process had acknowledged: every
// batch a flush acknowledged is there with its offsets and bytes, reads
// return only whole valid batches, offsets are contiguous, the log is a
// prefix of what was appended (so nothing else), and the log start offset
// is neither beyond what retention or DeleteRecords allowed nor below what
// an acknowledged flush made durable.
//
// Replay one seed with: go test ./core/log -run 'TestCrashRecovery/seed=N$' -v
func TestCrashRecovery(t *testing.T) {
	// A longer sweep: STRATA_LOG_CRASH_SEEDS=5000 go test -run TestCrashRecovery ./core/log
	crashSweep(t, crashSeeds, "STRATA_LOG_CRASH_SEEDS", crashRegressionSeeds, runCrashSeed, addCounts[crashStats])
}

type crashStats struct {
	Restarts, Crashes, Kills, Reboots, FailedLogs, UnavailableOpens, Appends, Acked, Retained int
	FullDisk, FlakyReads, TornTails, BitFlips, FailedSyncs, FailedFilesystems                 int
}

// crashHarness is the checker: what the process appended and had
// acknowledged, across incarnations.
type crashHarness struct {
	crashWorld
	comp *record.Compressor
	rng  *rand.Rand
	// killRng decides, per restart, between a power loss (Crash) and a
	// process kill with the machine up (Kill, which keeps the page cache);
	// killMode is the seed's mix: 0 power losses only, 1 kills only, 2
	// both. It is a stream of its own so that the seeds that only crash
	// replay as before kills existed.
	killRng  *rand.Rand
	killMode int
	// txnRng decides whether the seed keeps a transaction index and
	// which appended batches stand for ABORT markers (a stream of its
	// own, so that seeds replay their other choices as before).
	txnRng *rand.Rand
	cfg    log.Config
	node   *crashNode
	st     crashStats

	history []mbatch // every batch of the current log history, in offset order
	// cutFrom indexes the first batch of history that the current
	// incarnation's recovery dropped (a failure marker cuts valid,
	// never-flushed batches). Until the log has settled, the cut is not
	// durable and a power loss may bring them back, as a crash may keep
	// unflushed data; the settle ends the history there.
	cutFrom int
	// restartsOnFailedFS counts the restarts in a row that found the
	// filesystem failed (a failed SyncDir; sim.Disk.Failed).
	restartsOnFailedFS int
}

func runCrashSeed(seed uint64) (crashStats, error) {
	s := newCrashSim(seed)
	h := &crashHarness{crashWorld: crashWorld{s: s}, rng: s.Rand("crash-test"), killRng: s.Rand("crash-test/kill"), comp: record.NewCompressor()}
	defer h.comp.Close()
	h.killMode = h.killRng.IntN(3)
	h.cfg = log.DefaultConfig()
	h.cfg.SegmentBytes = 4096 + h.rng.Int64N(16<<10)
	h.cfg.IndexIntervalBytes = h.rng.Int64N(2048)
	h.cfg.SegmentIndexBytes = []int64{24, 120, 1200, 4096}[h.rng.IntN(4)]
	h.cfg.SegmentTime = time.Duration(50+h.rng.IntN(1000)) * time.Millisecond
	h.cfg.RetentionTime = time.Duration(200+h.rng.IntN(2000)) * time.Millisecond
	h.cfg.RetentionBytes = []int64{-1, 8 << 10, 32 << 10}[h.rng.IntN(3)]
	h.cfg.MaxOpenFiles = 4 + h.rng.IntN(8)
	h.cfg.RecoveryCheckpointBytes = 1 + h.rng.Int64N(32<<10)
	h.cfg.FlushCheckpointInterval = time.Duration(1+h.rng.IntN(200)) * time.Millisecond
	h.txnRng = s.Rand("crash-test/txn")
	h.cfg.TxnIndex = h.txnRng.IntN(2) == 0
	h.p = s.AddProcess("n1", h.start)
	d := h.p.Disk()
	d.SetFaults(drawDiskFaults(h.rng, diskFaultMix{syncFailSpread: 0.02, capacityOneIn: 4, capacityMin: 64 << 10}))
	err := h.runPhases(h.rng, h.stop, &h.st.Crashes, func() bool { return h.node != nil && h.node.l != nil })
	ds := d.Stats()
	h.st.TornTails, h.st.BitFlips, h.st.FailedSyncs = int(ds.TornTails), int(ds.BitFlips), int(ds.FailedSyncs)
	h.st.FailedFilesystems = int(ds.FSFailures)
	return h.st, err
}

// restart crashes and restarts the process soon, from outside it (a
// failed log takes the directory offline; the node restarts). A process
// restart cannot cure a failed filesystem (a failed SyncDir), so when the
// filesystem is still failed after one, an operator reboots the machine
// (a power loss) instead.
func (h *crashHarness) restart(after time.Duration) {
	inc := h.inc
	h.s.After(after, "test:restart", func() {
		if h.inc != inc || !h.p.Up() {
			return
		}
		h.st.Restarts++
		if !h.p.Disk().Failed() {
			h.restartsOnFailedFS = 0
		} else if h.restartsOnFailedFS++; h.restartsOnFailedFS > 1 {
			h.restartsOnFailedFS = 0
			h.st.Reboots++
			h.p.Crash()
			h.p.Start()
			return
		}
		h.stop()
		h.p.Start()
	})
}

// stop ends the incarnation with a power loss or, per the seed's kill
// mode, a process kill that keeps the page cache (what a supervisor's
// restart of a failed process does: after a failed Sync the page cache may
// show data that never reaches the disk).
func (h *crashHarness) stop() {
	if h.killMode == 1 || h.killMode == 2 && h.killRng.IntN(2) == 0 {
		h.st.Kills++
		h.p.Kill()
		return
	}
	h.st.Crashes++
	h.p.Crash()
}

// start is the process's StartFunc: recover, check, then run the workload.
func (h *crashHarness) start(e env.Env) {
	h.node = nil
	h.startLoad(e, h.cfg, h.restart, &h.st.UnavailableOpens, h.checkRecovered, func(l *log.Log) *crashLoad {
		h.node = newCrashNode(h, e, l)
		return &h.node.crashLoad
	}, func(n *crashLoad) bool {
		h.history = h.history[:h.cutFrom] // what recovery cut is gone for good
		if err := h.completeTxnIndex(n.l); err != nil {
			if errors.Is(err, log.ErrLogFailed) {
				n.failed(err)
				return false
			}
			h.fail("%v", err)
			return false
		}
		return true
	})
}

// checkRecovered compares a recovered log with the history and adopts it.
func (h *crashHarness) checkRecovered(l *log.Log) error {
	if err := h.checkDurable(l); err != nil {
		return err
	}
	start, end := l.LogStartOffset(), l.LogEndOffset()
	got, err := readAllFlaky(l)
	if err != nil {
		return err
	}
	if os.Getenv("STRATA_LOG_TEST_VERBOSE") != "" {
		last := int64(-1)
		if len(got) > 0 {
			last = got[len(got)-1].last
		}
		fmt.Fprintf(os.Stderr, "recovered: start %d end %d last batch %d segments %v\n", start, end, last, l.Segments())
	}
	// A prefix of the history from the log start offset on, contiguous.
	i := 0
	for i < len(h.history) && h.history[i].last < start {
		i++
	}
	for j, g := range got {
		if i+j >= len(h.history) {
			return fmt.Errorf("recovered batch at %d was never appended", g.base)
		}
		want := h.history[i+j]
		if g.base != want.base || g.last != want.last || string(g.bytes) != string(want.bytes) {
			return fmt.Errorf("recovered batch %d at [%d, %d] differs from the one appended at [%d, %d]", j, g.base, g.last, want.base, want.last)
		}
		if j > 0 && g.base != got[j-1].last+1 {
			return fmt.Errorf("offsets not contiguous: %d after %d", g.base, got[j-1].last)
		}
	}
	// Adopt: the history continues from the recovered end once the log
	// has settled (see cutFrom).
	n := 0
	for n < len(h.history) && h.history[n].last < end {
		n++
	}
	if end == start {
		// An empty log (it may have started over at its log start
		// offset): appends continue from there.
		n = 0
	}
	h.cutFrom = n
	if h.cfg.TxnIndex {
		if err := checkTxnIndex(l, h.abortedTxns()); err != nil {
			return err
		}
	}
	h.adopt(l)
	return nil
}

// readAllFlaky reads the whole log, re-reading a region whose bytes do not
// check (reads may flip bits).
func readAllFlaky(l *log.Log) ([]storedBatch, error) {
	var out []storedBatch
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		res, err := l.Read(off, 1<<16, -1)
		if err != nil {
			return nil, fmt.Errorf("read at %d: %w", off, err)
		}
		if res.Size == 0 {
			return nil, fmt.Errorf("read at %d returned nothing below the log end %d", off, l.LogEndOffset())
		}
		var bs []storedBatch
		for attempt := 0; ; attempt++ {
			// Read until two reads agree: the CRC does not cover the base
			// offset, and reads may flip bits.
			buf, again := make([]byte, res.Size), make([]byte, res.Size)
			for {
				_, err1 := res.File.ReadAt(buf, res.Position)
				_, err2 := res.File.ReadAt(again, res.Position)
				if err1 != nil || err2 != nil {
					res.Release()
					return nil, errors.Join(err1, err2)
				}
				if string(buf) == string(again) {
					break
				}
			}
			bs, err = splitChecked(buf)
			if err == nil {
				break
			}
			if attempt == 5 {
				res.Release()
				return nil, fmt.Errorf("read at %d: region [%d, +%d) is not whole valid batches: %w", off, res.Position, res.Size, err)
			}
		}
		res.Release()
		if bs[0].last < off {
			return nil, fmt.Errorf("read at %d started with a batch ending at %d", off, bs[0].last)
		}
		out = append(out, bs...)
		off = out[len(out)-1].last + 1
	}
	return out, nil
}

func splitChecked(buf []byte) ([]storedBatch, error) {
	var out []storedBatch
	sp := record.NewSplitter(buf, len(buf)+1, record.CheckStored)
	for sp.Next() {
		b := sp.Batch()
		out = append(out, storedBatch{base: b.BaseOffset(), last: b.LastOffset(), bytes: append([]byte(nil), b.Bytes()...)})
	}
	if err := sp.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no batch")
	}
	return out, nil
}

// crashNode is one incarnation's workload.
type crashNode struct {
	crashLoad
	h *crashHarness
}

func newCrashNode(h *crashHarness, e env.Env, l *log.Log) *crashNode {
	n := &crashNode{h: h, crashLoad: crashLoad{w: &h.crashWorld, e: e, l: l, inc: h.inc, rng: e.Rand(),
		restart: h.restart, failedLogs: &h.st.FailedLogs, fullDisk: &h.st.FullDisk, flakyReads: &h.st.FlakyReads}}
	n.crashLoad.step = n.step
	return n
}

func (n *crashNode) step() {
	h, l := n.h, n.l
	switch r := n.rng.IntN(100); {
	case r < 55:
		n.appendBatches()
	case r < 80:
		n.flush(&h.st.Acked)
	case r < 84:
		n.check(l.Roll())
	case r < 92:
		n.applyRetention(&h.st.Retained)
	case r < 96:
		l.SetHighWatermark(l.LogEndOffset())
		start, end := l.LogStartOffset(), l.LogEndOffset()
		to := start + n.rng.Int64N(end-start+1)
		if err := l.DeleteRecordsBefore(to); !n.check(err) {
			return
		}
		h.maxLogStart = max(h.maxLogStart, l.LogStartOffset())
	default:
		n.read()
	}
}

func (n *crashNode) appendBatches() {
	h, l := n.h, n.l
	var buf []byte
	var sizes []int
	now := n.e.Now().UnixMilli()
	for k := 1 + n.rng.IntN(2); k > 0; k-- {
		b := record.NewBuilder(n.builderOptions(h.comp)...)
		for r := 1 + n.rng.IntN(8); r > 0; r-- {
			v := make([]byte, n.rng.IntN(400))
			for i := 0; i < len(v); i += 8 {
				x := n.rng.Uint64()
				for j := i; j < min(i+8, len(v)); j++ {
					v[j] = byte(x >> (8 * (j - i)))
				}
			}
			b.Append(now+int64(n.rng.IntN(5)), []byte(fmt.Sprintf("k%d", n.rng.IntN(50))), v)
		}
		out, err := b.AppendTo(nil)
		if err != nil {
			h.fail("build: %v", err)
			return
		}
		sizes = append(sizes, len(out))
		buf = append(buf, out...)
	}
	info, err := l.Append(buf, 0)
	if int64(len(buf)) > h.cfg.SegmentBytes {
		if !errors.Is(err, record.ErrBatchTooLarge) {
			h.fail("append of %d bytes into %d-byte segments: %v", len(buf), h.cfg.SegmentBytes, err)
		}
		return
	}
	if !n.check(err) {
		return
	}
	h.st.Appends++
	pos := 0
	for _, size := range sizes {
		bt, err := record.ReadBatch(buf[pos:pos+size], size)
		if err != nil {
			h.fail("stored batch: %v", err)
			return
		}
		if len(h.history) > 0 && bt.BaseOffset() != h.history[len(h.history)-1].last+1 {
			h.fail("append assigned offset %d after %d", bt.BaseOffset(), h.history[len(h.history)-1].last)
			return
		}
		h.history = append(h.history, mbatch{base: bt.BaseOffset(), last: bt.LastOffset(), bytes: append([]byte(nil), buf[pos:pos+size]...)})
		pos += size
	}
	if info.LastOffset != h.history[len(h.history)-1].last {
		h.fail("append info last offset %d, want %d", info.LastOffset, h.history[len(h.history)-1].last)
	}
	if h.cfg.TxnIndex && h.txnRng.IntN(3) == 0 {
		// The last batch stands for an ABORT marker: its entry goes in the
		// same turn, as an owner's does.
		last := &h.history[len(h.history)-1]
		t := drawAbortedTxn(h.txnRng, l, last.last)
		if !n.check(l.AppendAbortedTxn(t)) {
			return
		}
		last.aborted = &t
	}
}

// abortedTxns lists the entries of the history's batches that stand for
// ABORT markers; checkTxnIndex compares a recovered index with them, and
// completeTxnIndex then adds those at or past its end, as an owner
// replaying its producer state does, and completes the index.
func (h *crashHarness) abortedTxns() []log.AbortedTxn {
	var out []log.AbortedTxn
	for _, b := range h.history {
		if b.aborted != nil {
			out = append(out, *b.aborted)
		}
	}
	return out
}

func (h *crashHarness) completeTxnIndex(l *log.Log) error {
	if !h.cfg.TxnIndex {
		return nil
	}
	start, end := l.LogStartOffset(), l.AbortedIndexEnd()
	for _, b := range h.history {
		if b.aborted != nil && b.last >= max(start, end) && b.last < l.LogEndOffset() {
			if err := l.AppendAbortedTxn(*b.aborted); err != nil {
				return fmt.Errorf("append aborted transaction: %w", err)
			}
		}
	}
	return l.CompleteAbortedIndex(l.LogEndOffset())
}
