package log

import (
	"fmt"
	"time"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/plant"
)

// Durability works in flush cycles, at most one in flight (so at most one
// Sync per file in flight, and group commit falls out: every Flush that
// arrives while a cycle runs is served by the next one, which syncs up to
// the log end offset as of its start). A cycle has up to three steps:
//
//  1. Settle, only in the first cycle after a recovery that changed the
//     disk (cut a torn tail or an overlap, deleted segments, lowered the
//     recovery point), or a truncation (see truncate.go, which has its own
//     first steps): the files recovery cut are synced first, then the
//     checkpoints are rewritten (recovery point first when it fell) and the
//     directory is synced, which makes the deletions durable; after a
//     recovery that obeyed failure markers (failure.go) the markers are
//     removed last, and the directory synced again. In that order a crash
//     halfway leaves evidence from which recovery reaches the same result
//     again; and the log refuses changes (ErrBusy) until then, so that
//     nothing new is built on a recovery a crash could still undo.
//  2. Sync: every segment file with unsynced writes or truncations is
//     synced (normally just the active .log file; after a roll also the
//     sealed segment's files). When the recovery checkpoint is due, its
//     temp files are written and synced alongside, claiming the log end
//     offset the step covers.
//  3. Install: the synced temp files are renamed into place and the
//     directory (and any parent that Open created) is synced when it has
//     changed (a roll created files, retention deleted some, a checkpoint
//     was renamed).
//
// A Flush callback fires once a cycle that started after the call has
// completed: the offsets below its target are durable and so is every
// directory change and log start offset made before the call. Callbacks
// fire in call order. A failed Sync, SyncDir, write or rename fails the log
// (ErrLogFailed): the covered data may be lost whatever later Syncs say.
//
// The recovery checkpoint is due when the log start offset changed, after
// a roll, at Shutdown, and otherwise when it is behind and
// FlushCheckpointInterval has passed or RecoveryCheckpointBytes were
// appended since the last one. Its recovery point never passes the data,
// the sealed segments' index files and the epoch cache entries it vouches
// for: all are synced in the same step, before the rename.
type flushState struct {
	waiters []flushWaiter
	cycle   *flushCycle

	// durableOffset: every batch below it is durable.
	durableOffset int64
	// metaGen counts changes a Flush must make durable besides data
	// (directory changes, log start offset); durableGen is the value
	// covered by the last completed cycle.
	metaGen, durableGen uint64
	// dirGen counts directory changes; dirSyncedGen is the value the last
	// successful SyncDir covered.
	dirGen, dirSyncedGen uint64
	// parentDirs must be synced once: Open created the log directory.
	parentDirs []string
	// retained are segments retention retired whose files the next
	// install step deletes (see unlinkRetained).
	retained []*segment
	// settle: the next cycle starts with step 1; the log is busy.
	settle bool
	// unmarked is the durable offset of a failure whose marker could not
	// be created (hasUnmarked): see UnmarkedFailure.
	unmarked    int64
	hasUnmarked bool
	// checkpointed is the recovery checkpoint as last made durable.
	checkpointed checkpoint
	// epochVersionWritten is the epoch cache version last made durable.
	epochVersionWritten uint64
	// forceCheckpoint makes the next cycle write the checkpoint.
	forceCheckpoint bool
	// background asks for a cycle with no waiter (after a roll, a
	// truncation, retention).
	background bool
	// recovering holds cycles back while Open runs.
	recovering bool
	// markers are the failure markers Open found (failure.go); the settle
	// step removes them once what it obeyed them for is durable.
	markers []string
	// hintWritten is the offset this incarnation's .flushed-offset note
	// holds, -1 until it wrote one (failure.go); hinted is the offset a
	// previous incarnation's note vouched for, used until the first
	// settle completes.
	hintWritten int64
	hinted      int64
	// lastCheckpoint (Env.Monotonic) and bytesAtCheckpoint (of
	// appendedBytes) date the last checkpoint.
	lastCheckpoint    time.Duration
	bytesAtCheckpoint int64
	appendedBytes     int64
	// flushedBytes is appendedBytes as of the last completed cycle's sync
	// step (what Config.OnFlush reports is the difference).
	flushedBytes int64
}

type flushWaiter struct {
	upto int64
	gen  uint64
	done func(error)
}

// flushCycle is the cycle in flight. Asynchronous operations of one step
// report to it; when the last one has, next runs.
type flushCycle struct {
	pending int
	err     error
	next    func()

	target   int64  // durable offset once the cycle completes
	gen      uint64 // metaGen covered once it completes
	dirGen   uint64 // dirGen the install step's SyncDir covers
	appended int64  // appendedBytes at the sync step

	// truncation ran in this cycle; its callback fires when the cycle
	// completes.
	truncation *truncation
	// started is when the cycle started (Env.Monotonic), for OnFlush.
	started time.Duration

	ckpt         *checkpoint // checkpoint written by this cycle, or nil
	epochVersion uint64      // epoch cache version written, when epochs
	epochs       bool
	tmps         []string // checkpoint names whose temp files to rename, in order
}

// Bounds of the flusher.
const (
	// indexWriteBatchEntries is how many offset index entries the active
	// segment accumulates before they are written to its file (they are
	// also written when a checkpoint is, at a roll and at shutdown).
	indexWriteBatchEntries = 512
)

// Flush makes the batches below upto durable (upto is capped at the log end
// offset), together with every directory change and log start offset
// change made before the call, and then calls done on the loop. Flushes
// coalesce: while a cycle is in flight, new requests wait for the next
// one, which covers them all with one Sync per dirty file. Callbacks fire
// in the order of the calls, never inline. done gets an error wrapping
// ErrLogFailed when durability failed, or ErrClosed when the log closed
// first.
func (l *Log) Flush(upto int64, done func(error)) {
	if err := l.usable(); err != nil {
		l.e.Post(func() { done(err) })
		return
	}
	upto = min(upto, l.LogEndOffset())
	w := flushWaiter{upto: upto, gen: l.fl.metaGen, done: done}
	if len(l.fl.waiters) == 0 && l.fl.cycle == nil && !l.fl.settle && l.satisfied(w) {
		l.e.Post(func() { done(nil) })
		return
	}
	l.fl.waiters = append(l.fl.waiters, w)
	l.kick()
}

// Shutdown closes the log cleanly: it stops accepting changes, flushes
// everything, writes the recovery checkpoint at the log end offset (so the
// next Open scans almost nothing), closes the files and calls done.
func (l *Log) Shutdown(done func(error)) {
	if err := l.mutable(); err != nil {
		l.e.Post(func() { done(err) })
		return
	}
	l.closing = true
	l.fl.forceCheckpoint = true
	l.fl.metaGen++ // only a cycle that starts from now on serves this waiter
	l.fl.waiters = append(l.fl.waiters, flushWaiter{upto: l.LogEndOffset(), gen: l.fl.metaGen, done: func(err error) {
		if cerr := l.Close(); err == nil {
			err = cerr
		}
		done(err)
	}})
	l.kick()
}

func (l *Log) satisfied(w flushWaiter) bool {
	return w.upto <= l.fl.durableOffset && w.gen <= l.fl.durableGen
}

// dirChanged records a change of the log directory (a file created,
// removed or renamed) that a Flush must make durable.
func (l *Log) dirChanged() {
	l.fl.dirGen++
	l.fl.metaGen++
}

// requestBackground asks for a cycle even if nobody waits for it.
func (l *Log) requestBackground() {
	l.fl.background = true
	l.kick()
}

// kick starts a cycle if none is in flight and one is wanted (and Open
// has finished recovering).
func (l *Log) kick() {
	if l.fl.cycle != nil || l.closed || l.failed != nil || l.fl.recovering {
		return
	}
	if len(l.fl.waiters) == 0 && !l.fl.background && !l.fl.settle && l.trunc == nil {
		return
	}
	l.fl.background = false
	c := &flushCycle{started: l.e.Monotonic()}
	l.fl.cycle = c
	if l.trunc != nil {
		l.cycleTruncate(c)
		return
	}
	l.cycleSync(c)
}

// failWaiters completes every waiter with err (on the loop, never inline).
func (l *Log) failWaiters(err error) {
	ws := l.fl.waiters
	l.fl.waiters = nil
	l.fl.cycle = nil
	if t := l.trunc; t != nil {
		l.trunc = nil
		ws = append([]flushWaiter{{done: t.done}}, ws...)
	}
	for _, w := range ws {
		done := w.done
		l.e.Post(func() { done(err) })
	}
}

// begin starts a step of c; next runs when every operation issued before
// end has reported.
func (c *flushCycle) begin(next func()) {
	c.pending, c.err, c.next = 1, nil, next
}

// op registers one asynchronous operation of the current step and returns
// its completion. A failed operation fails the log at once, in the turn of
// the loop that reports it, not when the step's other operations are
// done: the failure marker (failure.go) must exist before the process can
// die, or the next incarnation trusts a page cache showing lost writes.
func (l *Log) op(c *flushCycle) func(error) {
	c.pending++
	return func(err error) {
		if l.fl.cycle != c || l.closed || l.failed != nil {
			return // a stale cycle: the log failed or closed meanwhile
		}
		if err != nil {
			_ = l.fail(err)
			return
		}
		c.pending--
		if c.pending == 0 {
			l.stepDone(c)
		}
	}
}

// end closes the issuing of a step. A step with nothing to wait for
// completes on a later turn of the loop, never inline.
func (l *Log) end(c *flushCycle) {
	c.pending--
	if c.pending == 0 {
		l.e.Post(func() {
			if l.fl.cycle == c && !l.closed && l.failed == nil {
				l.stepDone(c)
			}
		})
	}
}

func (l *Log) stepDone(c *flushCycle) {
	if c.err != nil {
		_ = l.fail(c.err)
		return
	}
	c.next()
}

// cycleSettle is step 1. Nothing is appended meanwhile (the log is busy),
// so once the dirty files are synced everything up to the log end offset
// is durable, and the recovery point moves there.
func (l *Log) cycleSettle(c *flushCycle) {
	// The transaction index end is claimed as of the syncs issued now:
	// entries the owner adds meanwhile are synced by a later cycle.
	txnClaim := l.newCheckpoint(l.LogEndOffset()).txnIndexEnd
	c.begin(func() {
		ck := l.newCheckpoint(l.LogEndOffset())
		ck.txnIndexEnd = min(ck.txnIndexEnd, txnClaim)
		epochVersion := l.epochs.version
		l.beginInstall(c, func() {
			l.fl.parentDirs = nil
			l.fl.checkpointed = ck
			l.fl.epochVersionWritten = epochVersion
			l.fl.durableOffset = max(l.fl.durableOffset, ck.recoveryPoint)
			l.epochs.prune(ck.logStartOffset)
			if l.writeHint(); l.failed != nil {
				return
			}
			if len(l.fl.markers) > 0 {
				l.settleMarkers(c)
				return
			}
			l.settled(c)
		})
		// The epoch checkpoint goes in place first when the recovery
		// point rises (the new one relies on it), last when it falls
		// (the old one covers the old recovery point until then).
		epochs := l.epochs.view(l.fl.checkpointed.logStartOffset).encode()
		if ck.recoveryPoint >= l.fl.checkpointed.recoveryPoint {
			l.writeTmp(c, epochCheckpointName, epochs)
			l.writeTmp(c, checkpointName, ck.encode())
		} else {
			l.writeTmp(c, checkpointName, ck.encode())
			l.writeTmp(c, epochCheckpointName, epochs)
		}
		l.end(c)
	})
	l.syncDirtyFiles(c)
	l.end(c)
}

// settleMarkers ends a settle step that obeyed failure markers
// (failure.go): the cut files and the checkpoint at the new log end are
// durable now, so the markers go, and the log takes changes only once their
// removal is durable too.
func (l *Log) settleMarkers(c *flushCycle) {
	if err := l.removeFailedMarkers(); err != nil {
		_ = l.fail(err)
		return
	}
	l.syncDirsThen(c, func() {
		l.settled(c)
	})
}

// settled ends the settle step: recovery's changes are durable, so the
// handles recovery opened go (a restarted broker with thousands of logs
// keeps about one handle for each), and the cycle goes on to step 2.
func (l *Log) settled(c *flushCycle) {
	l.fl.settle = false
	l.releaseCleanFiles()
	l.cycleSync(c)
}

// cycleSync is step 2.
func (l *Log) cycleSync(c *flushCycle) {
	if l.fl.settle {
		l.cycleSettle(c)
		return
	}
	c.target, c.gen, c.appended = l.LogEndOffset(), l.fl.metaGen, l.fl.appendedBytes
	c.ckpt, c.tmps = nil, nil
	if l.checkpointDue(c.target) {
		ck := l.newCheckpoint(c.target)
		c.ckpt = &ck
		c.epochs = l.epochs.version != l.fl.epochVersionWritten
		c.epochVersion = l.epochs.version
		l.fl.forceCheckpoint = false
		// Recovery resumes from the active segment's last index entry
		// below the recovery point: put the entries in its file now (no
		// sync needed, see recover.go), not at every flush.
		if err := l.writeIndexes(l.active()); err != nil {
			return
		}
	}
	c.begin(func() { l.cycleInstall(c) })
	l.syncDirtyFiles(c)
	if c.ckpt != nil {
		if c.epochs {
			l.writeTmp(c, epochCheckpointName, l.epochs.view(l.fl.checkpointed.logStartOffset).encode())
		}
		l.writeTmp(c, checkpointName, c.ckpt.encode())
	}
	l.end(c)
}

// syncDirtyFiles issues a Sync, as operations of c, for every segment file
// with writes or truncations not yet covered by one.
func (l *Log) syncDirtyFiles(c *flushCycle) {
	for _, s := range l.segs {
		for k := range numKinds {
			if !s.dirty[k] {
				continue
			}
			if plant.Is(plant.LogSkipFsync) {
				s.dirty[k] = false // planted: reported synced, never synced
				continue
			}
			f, err := l.handle(s, k, false)
			if err != nil {
				c.err = err
				return
			}
			s.dirty[k] = false
			s.syncing++
			done := l.op(c)
			f.Sync(func(err error) {
				s.syncing--
				done(err)
			})
		}
		if s.txns.dirty {
			f, err := l.txnHandle(s, false)
			if err == nil && f == nil {
				err = fmt.Errorf("log: the transaction index of segment %d vanished before its sync", s.base)
			}
			if err != nil {
				c.err = err
				return
			}
			s.txns.dirty = false
			s.syncing++
			done := l.op(c)
			f.Sync(func(err error) {
				s.syncing--
				done(err)
			})
		}
	}
}

// checkpointDue decides whether the sync step writes the recovery
// checkpoint with recovery point target.
func (l *Log) checkpointDue(target int64) bool {
	ck := l.fl.checkpointed
	if l.fl.forceCheckpoint || l.logStart != ck.logStartOffset {
		return true
	}
	if target <= ck.recoveryPoint {
		return false
	}
	if l.epochs.version != l.fl.epochVersionWritten {
		// A new epoch below target: the epoch checkpoint listing it and
		// a recovery point past it become durable with its batch, so
		// that the start-up scrub can check every durable batch's
		// leader epoch (scrub.go, checkEpoch).
		return true
	}
	return l.fl.appendedBytes-l.fl.bytesAtCheckpoint >= l.cfg.RecoveryCheckpointBytes ||
		l.e.Monotonic()-l.fl.lastCheckpoint >= l.cfg.FlushCheckpointInterval ||
		l.e.Buggify("log/checkpoint-every-cycle")
}

// cycleInstall is step 3.
func (l *Log) cycleInstall(c *flushCycle) {
	installed := false
	if c.ckpt != nil {
		if err := l.installTmps(c); err != nil {
			_ = l.fail(err)
			return
		}
		installed = true
	}
	if !installed {
		c.ckpt = nil
	}
	if err := l.unlinkRetained(); err != nil {
		return
	}
	if l.fl.dirGen == l.fl.dirSyncedGen && len(l.fl.parentDirs) == 0 {
		l.cycleFinish(c)
		return
	}
	l.syncDirsThen(c, func() {
		l.fl.parentDirs = nil
		l.cycleFinish(c)
	})
}

// cycleFinish completes a cycle: it publishes what became durable, fires
// the satisfied waiters in order and starts the next cycle if one is
// wanted.
func (l *Log) cycleFinish(c *flushCycle) {
	assert.That(c.target <= l.LogEndOffset(), "flush covered offset %d beyond the log end %d", c.target, l.LogEndOffset())
	l.fl.durableOffset = max(l.fl.durableOffset, c.target)
	if l.writeHint(); l.failed != nil {
		return
	}
	l.fl.durableGen = max(l.fl.durableGen, c.gen)
	if c.ckpt != nil {
		l.fl.checkpointed = *c.ckpt
		if c.epochs {
			l.fl.epochVersionWritten = c.epochVersion
		}
		l.epochs.prune(c.ckpt.logStartOffset)
		l.fl.lastCheckpoint = l.e.Monotonic()
		l.fl.bytesAtCheckpoint = c.appended
	}
	l.fl.cycle = nil
	if l.cfg.OnFlush != nil {
		bytes := max(c.appended-l.fl.flushedBytes, 0)
		l.cfg.OnFlush.ObserveFlush(bytes, l.e.Monotonic()-c.started)
	}
	l.fl.flushedBytes = max(l.fl.flushedBytes, c.appended)
	if t := c.truncation; t != nil {
		l.trunc = nil
		t.done(nil)
		if l.fl.cycle != nil || l.closed || l.failed != nil {
			return
		}
	}
	for len(l.fl.waiters) > 0 && l.satisfied(l.fl.waiters[0]) {
		w := l.fl.waiters[0]
		// Cleared first: the backing array would keep the callback (and
		// what it holds, a producer's request frame) alive until it
		// was reallocated.
		l.fl.waiters[0] = flushWaiter{}
		l.fl.waiters = l.fl.waiters[1:]
		w.done(nil)
		if l.fl.cycle != nil || l.closed || l.failed != nil {
			return // the callback started a cycle, closed or failed the log
		}
	}
	l.enforceBudget(nil)
	l.kick()
}

// syncDirsThen syncs the log directory (and any parent Open created) as
// the next step of c, records the directory generation that covers, and
// then runs then.
func (l *Log) syncDirsThen(c *flushCycle, then func()) {
	c.dirGen = l.fl.dirGen
	c.begin(func() {
		l.fl.dirSyncedGen = max(l.fl.dirSyncedGen, c.dirGen)
		then()
	})
	l.syncDirs(c)
	l.end(c)
}

// beginInstall starts the next step of c: it renames the temp files
// written meanwhile into place (failing the log when one cannot be),
// syncs the directories (syncDirsThen) and then runs then.
func (l *Log) beginInstall(c *flushCycle, then func()) {
	c.tmps = nil
	c.begin(func() {
		if err := l.installTmps(c); err != nil {
			_ = l.fail(err)
			return
		}
		l.syncDirsThen(c, then)
	})
}

// syncDirs issues SyncDir for the log directory and any parent Open
// created, as operations of c.
func (l *Log) syncDirs(c *flushCycle) {
	l.disk.SyncDir(l.dir, l.op(c))
	for _, p := range l.fl.parentDirs {
		l.disk.SyncDir(p, l.op(c))
	}
}

// writeTmp writes content to the temp file of checkpoint name and syncs it
// as an operation of c; installTmps renames it into place later.
func (l *Log) writeTmp(c *flushCycle, name string, content []byte) {
	tmp := l.path(name + tmpSuffix)
	f, err := l.disk.Open(tmp, true)
	if err == nil {
		l.fl.dirGen++ // maybe created; the rename needs a SyncDir anyway
		if err = f.Truncate(0); err == nil {
			err = f.WriteAt(content, 0)
		}
	}
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		c.err = fmt.Errorf("write %s: %w", tmp, err)
		return
	}
	done := l.op(c)
	f.Sync(func(err error) {
		_ = f.Close()
		done(err)
	})
	c.tmps = append(c.tmps, name)
}

// installTmps renames the synced temp files of c into place, in the order
// written: when the recovery point rises, the epoch checkpoint goes first
// (the new recovery point relies on it); when it falls, last (the old epoch
// checkpoint covers the old recovery point until the new one is in place).
func (l *Log) installTmps(c *flushCycle) error {
	for _, name := range c.tmps {
		if err := l.disk.Rename(l.path(name+tmpSuffix), l.path(name)); err != nil {
			return fmt.Errorf("rename %s: %w", name+tmpSuffix, err)
		}
		l.fl.dirGen++
	}
	c.tmps = nil
	return nil
}
