package log

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/record"
)

// The log cleaner: compaction for cleanup.policy=compact (and
// compact,delete), Kafka's LogCleaner for one log, run in bounded steps on
// the log's loop (CleanStep).
//
// # A cleaning
//
//  1. Plan. The cleanable range ends at the first segment the cleaner may
//     not touch: the active segment, a segment not wholly below the high
//     watermark (the replication layer may still truncate above it) and
//     below DurableOffset (a record is removed only because a later one of
//     its key exists; that later one must survive any crash), one not
//     wholly below the last stable offset (with a transaction index), or
//     one whose largest timestamp is within min.compaction.lag.ms of now.
//     The dirty
//     section runs from the cleaner checkpoint's first dirty offset F to
//     that end. A cleaning starts when dirty bytes are at least
//     min.cleanable.dirty.ratio of the cleanable bytes, or when tombstones
//     the last cleaning kept have reached their delete horizon.
//  2. Map. The dirty section is read once to build the offset map, key ->
//     latest offset (full keys, bounded by log.cleaner.dedupe.buffer.size;
//     when it fills, the map ends at a batch boundary and the cleaning
//     covers only up to there). Records of transactional and control
//     batches are not mapped (see below).
//  3. Clean. From the first segment to the end of the map, consecutive
//     segments are grouped (their sizes summing to at most segment.bytes,
//     as Kafka groups them) and each group is rewritten into one new
//     segment named by the group's base offset, then swapped in (below).
//     A record stays unless its key maps to a later offset, it has no key
//     (Kafka drops those too), or it is a tombstone (null value) whose
//     batch's delete horizon has passed. Records at or past the end of the
//     map stay as they are.
//  4. Checkpoint. Once every group is swapped in, F becomes the end of the
//     map (clean_checkpoint.go).
//
// # What stays, and how it is written
//
//   - Offsets never change. A batch that keeps every record (and needs no
//     delete horizon) is copied byte for byte; otherwise it is rebuilt with
//     core/record's Builder from the records it keeps, with its original
//     base offset, last offset delta (so a removed tail leaves a gap, not a
//     shorter batch), partition leader epoch, producer id, epoch and base
//     sequence, timestamp type and compression codec (recompressing is
//     allowed here: this is not the produce path, and keeping the codec
//     keeps the segment about as small as the producer made it). A batch
//     that keeps no record is dropped, except (as an empty batch, its
//     header kept) the last batch of each group, so that the new segment
//     ends exactly where the old ones did and recovery never mistakes the
//     end for a lost tail; a batch that starts a leader epoch, so that the
//     epoch cache still matches the batches (recovery checks it); and a
//     batch of an idempotent producer, whose sequence state Kafka keeps
//     (Kafka keeps only each producer's last; core/log has no producer
//     state yet, so it keeps them all).
//   - Tombstones (KIP-534, the batch delete horizon). The first cleaning
//     that keeps a tombstone rewrites its batch with a delete horizon of
//     now + delete.retention.ms in the batch header (attribute bit 6,
//     baseTimestamp); a later cleaning at or past the horizon removes the
//     tombstone if it is still its key's latest record. So a tombstone
//     lives at least delete.retention.ms after it was first cleaned,
//     measured on Env.Now, without relying on file modification times,
//     which env does not have.
//   - Transactions. Committed transactional records and COMMIT markers are
//     copied unchanged, and transactional records are never mapped, so
//     they neither supersede nor get superseded by another record (an
//     aborted value must not hide the committed one before it; committed
//     transactional records are exempt from key compaction). With a
//     transaction index (Config.TxnIndex) aborted transactions' data and,
//     delete.retention.ms after their data went, their ABORT markers are
//     removed by the rules of clean_txn.go; without one, transactional
//     and control batches are all copied unchanged.
//   - The active segment is never read or written.
//
// # The swap, and what a crash leaves
//
// A group of segments B (first), B2 .. Bk, ending at E (the next segment's
// base), becomes B.log.cleaned, B.index.cleaned and B.timeindex.cleaned
// (and B.txnindex.cleaned, renamed before the .log like the others),
// written over several steps and synced. Then, in one turn of the loop:
//
//	rename B.index.cleaned -> B.index.swap, B.timeindex.cleaned -> B.timeindex.swap
//	rename B.log.cleaned -> B.log.swap                  (the commit point)
//	delete B2 .. Bk (.log, .index, .timeindex)
//	rename B.index.swap -> B.index, B.timeindex.swap -> B.timeindex
//	rename B.log.swap -> B.log
//	replace the segments in memory
//
// and the directory is synced (by a flush cycle: see syncDirChanges). Open's
// recovery rule 1 handles whatever a
// crash leaves of that sequence: without B.log.swap it deletes every
// .cleaned and .swap file (the old segments are whole); with B.log.swap it
// reads the offset E after its last batch, deletes the segments based in
// (B, E), and renames the .swap files into place. env.Disk keeps a prefix
// of a directory's unsynced changes in a crash (and a failed SyncDir loses
// every unsynced change, failing the log and the filesystem), so every
// crash leaves one of the states above, and each reads the same: the
// records of the old segments, or the cleaned ones.
// Doing the whole sequence in one turn, rather than syncing the directory
// after the commit point, leaves no moment in which retention or a
// truncation could act on segments half swapped.
//
// A cleaned segment ends exactly where the old group did and holds only
// durable, synced, CRC-valid batches in increasing offsets, so recovery
// accepts it whether it trusts it (below the recovery point) or scans it.
//
// # Interaction with the rest of the log
//
// Retention (compact,delete) may delete segments of a cleaning in
// progress: a group whose segments changed is abandoned (its .cleaned files
// deleted) and the cleaning goes on with the segments that remain. A
// truncation abandons the cleaning in progress (its map may name offsets
// that are gone) and lowers F to the new log end if F was above it. While
// the log is Busy (a truncation pending, or the settling after Open), steps
// do nothing and report no more work. The three .cleaned files of the group
// being written are open outside MaxOpenFiles. Directory syncs go through
// flush cycles (syncDirChanges), never beside them.
//
// A cleaning lives in memory only: after a restart the next one starts over
// from the checkpoint (the groups already swapped in are simply cleaned
// again, cheaply). Not done yet: max.compaction.lag.ms; compacting
// committed transactional records and removing COMMIT markers; keeping only
// each idempotent producer's last batch (needs producer state); throttling
// beyond the step budget the driver chooses.
type cleanState struct {
	// inStep: a CleanStep has not called back yet.
	inStep bool
	// loaded: ckpt holds the cleaner checkpoint file's content (or its
	// replacement); ckptDirty: ckpt was lowered by a truncation and the
	// file still holds the old one.
	loaded    bool
	ckpt      cleanerCheckpoint
	ckptDirty bool
	// minHorizon is the earliest delete horizon of the tombstones the last
	// complete cleaning kept, or record.NoTimestamp if none (or unknown).
	minHorizon int64
	round      *cleanRound

	dec     *record.Decompressor
	rr      *record.RecordReader
	comp    *record.Compressor
	builder *record.Builder
	keep    []bool
	keys    []mappedKey // a batch's keys, mapped once all its records parse
	out     []byte      // a rebuilt batch
	sc      scanner     // its read buffers are reused from step to step

	stats CleanerStats
}

// cleanRound is a cleaning in progress.
type cleanRound struct {
	nowMs int64 // the wall clock when it started: delete horizons
	from  int64 // the first dirty offset: the map starts here
	end   int64 // the cleanable end, a segment base offset
	clean int64 // the trusted checkpoint at the start: below it, one record per key

	// txns is the transaction index's view (clean_txn.go), nil without one.
	txns *txnClean

	offsets  map[string]int64 // key -> latest offset in [from, mapEnd)
	mapBytes int64            // what offsets holds, by the bound's accounting
	mapped   bool             // the map is complete
	mapNext  int64            // the next offset to map
	mapEnd   int64            // once mapped: the map covers [from, mapEnd)

	cursor     int64 // the next group starts at the first segment based here or later
	group      *cleanGroup
	minHorizon int64 // earliest delete horizon of a tombstone kept so far

	checkpointing bool   // the cleaning is done; its checkpoint is being written
	aborted       string // why a truncation ended the cleaning, if it did
}

// CleanerStats counts what the cleaner of one log did since Open.
type CleanerStats struct {
	// Cleanings completed (checkpoint written) and abandoned.
	Cleanings, Abandoned int
	// Swaps counts groups swapped in; SegmentsCleaned the segments they
	// replaced.
	Swaps, SegmentsCleaned int
	// BytesRead (mapping and cleaning) and BytesWritten (cleaned segments).
	BytesRead, BytesWritten int64
	// RecordsRemoved counts removed records, TombstonesRemoved those of
	// them that were tombstones past their delete horizon.
	RecordsRemoved, TombstonesRemoved int64
	// BatchesRewritten were rebuilt with fewer records or a delete horizon;
	// BatchesRemoved were dropped.
	BatchesRewritten, BatchesRemoved int64
	// BatchesUnreadable were kept as they were because their records do
	// not parse (their CRC holds: appended by a build that did not
	// validate records), counted at each cleaning that meets them.
	BatchesUnreadable int64
}

// CleanerInfo describes the cleaner's view of a log.
type CleanerInfo struct {
	// FirstDirtyOffset is where the dirty section starts: the cleaner
	// checkpoint's offset, if it can be trusted, and at least the log
	// start offset.
	FirstDirtyOffset int64
	// CleanableEnd is where the cleanable range ends (see CleanStep).
	CleanableEnd int64
	// DirtyBytes and CleanableBytes are the sizes of the segments holding
	// the dirty section and of all the segments below CleanableEnd.
	DirtyBytes, CleanableBytes int64
	// Due says a cleaning would start now.
	Due bool
	// InProgress says a cleaning has started and not finished.
	InProgress bool
	Stats      CleanerStats
}

// offsetMapEntryBytes is what the offset map charges per key besides the
// key's bytes: the map entry, the string header and the offset.
const offsetMapEntryBytes = 48

// CleanStep runs one bounded step of the log cleaner and calls done on the
// loop, never inline, with more set when the caller should call again soon
// (work remains), or false when there is nothing to do now: no cleaning is
// due, the policy does not compact, or the log is Busy. A driver posts the
// next step from done while more is true, and otherwise tries again later
// on a timer (Kafka's log.cleaner.backoff.ms):
//
//	var step func()
//	step = func() {
//		l.CleanStep(env.Now(), 1<<20, func(more bool, err error) {
//			if more && err == nil {
//				env.Post(step)
//			}
//		})
//	}
//
// A step reads and writes about budgetBytes (at least one batch), or waits
// for the syncs of a cleaned segment, or swaps one in, or writes the cleaner
// checkpoint. now is the wall clock the caller goes by (Env.Now); a
// cleaning takes its delete-horizon decisions at the now it started with.
// One step at a time: calling CleanStep before the previous one called back
// is a programming error.
//
// An error ends the cleaning in progress (its temporary files are deleted):
// a full disk (env.ErrNoSpace), a corrupt batch (ErrCorrupt) or a read the
// disk never returned the same twice (env.ErrIO: bit flips) leaves the log
// as it was; a failed write, Sync, SyncDir or rename fails the log
// (ErrLogFailed), like any other.
func (l *Log) CleanStep(now time.Time, budgetBytes int64, done func(more bool, err error)) {
	c := l.cleaner()
	assert.That(!c.inStep, "log %s: CleanStep called before the previous step called back", l.dir)
	assert.That(budgetBytes > 0, "log %s: CleanStep budget %d, want positive", l.dir, budgetBytes)
	c.inStep = true
	finish := func(more bool, err error) {
		c.inStep = false
		done(more, err)
	}
	later := func(more bool, err error) { l.e.Post(func() { finish(more, err) }) }
	if err := l.usable(); err != nil {
		later(false, err)
		return
	}
	if !l.cfg.CleanupPolicy.Compacts() || l.closing || l.Busy() || !l.AbortedIndexComplete() {
		// (The owner completes the transaction index right after Open;
		// a cleaning must not rewrite segments it is still adding to.)
		later(false, nil)
		return
	}
	if c.ckptDirty && (c.round == nil || !c.round.checkpointing) {
		ck := c.ckpt
		c.ckptDirty = false
		l.writeCleanerCheckpoint(ck, func(err error) { finish(err == nil, err) })
		return
	}
	r := c.round
	if r == nil {
		p := l.planCleaning(now)
		if !p.due {
			later(false, nil)
			return
		}
		r = l.startCleaning(now, p)
	}
	if r.aborted != "" {
		l.abandonCleaning(r.aborted)
		later(true, nil)
		return
	}
	if !r.mapped {
		if err := l.mapStep(r, budgetBytes); err != nil {
			l.abandonCleaning(fmt.Sprintf("mapping failed: %v", err))
			later(false, err)
			return
		}
		later(true, nil)
		return
	}
	l.cleanStep(r, now, budgetBytes, finish, later)
}

// CleanerInfo reports the cleaner's view of the log at now.
func (l *Log) CleanerInfo(now time.Time) CleanerInfo {
	c := l.cleaner()
	p := l.planCleaning(now)
	return CleanerInfo{
		FirstDirtyOffset: p.from, CleanableEnd: p.end,
		DirtyBytes: p.dirty, CleanableBytes: p.total,
		Due: p.due, InProgress: c.round != nil, Stats: c.stats,
	}
}

// cleaner returns the cleaner's state, creating it on first use.
func (l *Log) cleaner() *cleanState {
	if l.clean == nil {
		dec := record.NewDecompressor(l.readBound())
		l.clean = &cleanState{
			minHorizon: record.NoTimestamp,
			dec:        dec,
			rr:         record.NewRecordReader(dec),
			comp:       record.NewCompressor(),
			builder:    record.NewBuilder(),
		}
	}
	return l.clean
}

// cleanPlan is what planCleaning found.
type cleanPlan struct {
	from, end    int64
	dirty, total int64
	due          bool
}

// planCleaning computes the cleanable range and whether a cleaning is due
// (see the cleaner's doc, step 1).
func (l *Log) planCleaning(now time.Time) cleanPlan {
	c := l.cleaner()
	l.loadCleanerCheckpoint()
	nowMs := now.UnixMilli()
	first := l.segs[0].base
	end := first
	limit := min(l.hw, l.fl.durableOffset, l.cleanBound())
	lagMs := l.cfg.MinCompactionLag.Milliseconds()
	for i := 0; i < len(l.segs)-1; i++ {
		s := l.segs[i]
		if s.next > limit || lagMs > 0 && s.maxTs > nowMs-lagMs {
			break
		}
		end = l.segs[i+1].base
	}
	p := cleanPlan{from: l.trustedFirstDirty(), end: end}
	for _, s := range l.segs {
		if s.base >= end {
			break
		}
		p.total += s.size
		if s.next > p.from {
			p.dirty += s.size
		}
	}
	dirtyEnough := p.dirty > 0 && float64(p.dirty) >= l.cfg.MinCleanableDirtyRatio*float64(p.total)
	horizonDue := c.minHorizon != record.NoTimestamp && nowMs >= c.minHorizon && end > first
	p.due = dirtyEnough || horizonDue
	return p
}

// trustedFirstDirty returns the first dirty offset the checkpoint gives,
// if it can be trusted (see clean_checkpoint.go), and at least the log
// start offset.
func (l *Log) trustedFirstDirty() int64 {
	c := l.clean
	start := max(l.logStart, l.segs[0].base)
	f := c.ckpt.firstDirty
	if f <= start {
		return start
	}
	if f > l.LogEndOffset() || c.ckpt.epoch == UndefinedEpoch || l.EpochForOffset(f-1) != c.ckpt.epoch ||
		l.segs[0].base < c.ckpt.firstSegment {
		l.logger.Info("the cleaner checkpoint does not match the log (truncated, or deleted segments came back); cleaning everything again",
			"firstDirtyOffset", f, "epoch", c.ckpt.epoch, "firstSegmentOffset", c.ckpt.firstSegment,
			"logEndOffset", l.LogEndOffset(), "firstSegment", l.segs[0].base)
		c.ckpt = cleanerCheckpoint{firstDirty: 0, epoch: UndefinedEpoch}
		return start
	}
	return f
}

// startCleaning begins a cleaning of the plan's range.
func (l *Log) startCleaning(now time.Time, p cleanPlan) *cleanRound {
	// The checkpoint may lie past the cleanable end (after a restart the
	// high watermark starts low): then the map is empty and the cleaning
	// only removes tombstones past their horizon below the end.
	from := min(p.from, p.end)
	r := &cleanRound{
		nowMs: now.UnixMilli(), from: from, end: p.end, clean: p.from,
		offsets: make(map[string]int64), mapNext: from,
		cursor: l.segs[0].base, minHorizon: record.NoTimestamp,
	}
	r.txns = l.newTxnClean(p.end)
	l.clean.round = r
	l.logger.Debug("cleaning starts", "firstDirtyOffset", p.from, "cleanableEnd", p.end,
		"dirtyBytes", p.dirty, "cleanableBytes", p.total)
	return r
}

// abandonCleaning ends the cleaning in progress without a checkpoint,
// deleting the temporary files of the group being written.
func (l *Log) abandonCleaning(why string) {
	c := l.clean
	r := c.round
	if r == nil {
		return
	}
	if g := r.group; g != nil {
		l.dropGroup(g)
	}
	c.round = nil
	c.release()
	c.stats.Abandoned++
	l.logger.Info("cleaning abandoned", "reason", why)
}

// release drops the memory a cleaning holds (read buffers, the rebuilt
// batch, codec state) once it ends: a broker keeps many idle compacted logs.
func (c *cleanState) release() {
	c.sc = scanner{}
	c.out, c.keep, c.keys = nil, nil, nil
	c.comp.Close()
	c.dec.Close()
}

// cleanerTruncated is told that a truncation left the log ending at end:
// the cleaner checkpoint must not claim offsets at or past it, and the
// cleaning in progress ends (its map may name offsets that are gone, its
// segments may be; truncations are rare enough not to tell).
func (l *Log) cleanerTruncated(end int64) {
	c := l.cleaner()
	l.loadCleanerCheckpoint()
	if c.ckpt.firstDirty > end {
		c.ckpt = cleanerCheckpoint{firstDirty: end, epoch: l.EpochForOffset(end - 1), firstSegment: c.ckpt.firstSegment}
		c.ckptDirty = true
	}
	if r := c.round; r != nil {
		r.aborted = fmt.Sprintf("the log was truncated to %d", end)
		if r.checkpointing {
			c.ckptDirty = true // the checkpoint being written may claim more
		}
	}
}

// closeCleaner releases the cleaner's files and codecs when the log
// closes. Temporary files stay for Open to delete.
func (l *Log) closeCleaner() {
	c := l.clean
	if c == nil {
		return
	}
	if r := c.round; r != nil && r.group != nil {
		r.group.closeFiles(l)
	}
	c.release()
}

// mapStep extends the offset map by about budget bytes of the dirty
// section (at least one batch).
func (l *Log) mapStep(r *cleanRound, budget int64) error {
	c := l.clean
	used := int64(0)
	for used < budget {
		if r.mapNext < l.segs[0].base {
			r.mapNext = l.segs[0].base // retention deleted segments meanwhile
		}
		i := l.segmentFor(r.mapNext)
		s := l.segs[i]
		if r.mapNext >= r.end || i == len(l.segs)-1 || s.base >= r.end {
			l.finishMap(r, r.end)
			return nil
		}
		if r.mapNext >= s.next {
			r.mapNext = l.segs[i+1].base
			continue
		}
		if err := l.openForRead(s); err != nil {
			return err
		}
		pos, err := l.findCut(s, r.mapNext)
		if err != nil {
			return err
		}
		sc := c.scanner(s.files[kindLog], pos, s.size)
		for used < budget {
			decompressed := c.rr.Decompressed()
			b, pos, err := sc.next()
			if errors.Is(err, io.EOF) {
				r.mapNext = l.segs[i+1].base
				break
			}
			if err != nil {
				return err
			}
			full, err := l.mapBatch(r, b)
			if err != nil {
				// Its keys unknown, the batch supersedes nothing; the
				// clean step keeps it as it is (cleanBatch).
				l.logger.Warn("the cleaner maps nothing of a batch whose records do not parse",
					"file", s.files[kindLog].Name(), "position", pos, "baseOffset", b.BaseOffset(), "err", err)
				full = false
			}
			if full {
				l.finishMap(r, b.BaseOffset())
				return nil
			}
			// A compressed batch costs what it decompresses to: the
			// budget bounds the loop's time, not just the disk's.
			used += max(int64(b.Size()), c.rr.Decompressed()-decompressed)
			c.stats.BytesRead += int64(b.Size())
			r.mapNext = b.NextOffset()
		}
	}
	return nil
}

// mapBatch adds the records of b to the offset map, or reports that the
// map is full (it always takes a batch while it is empty).
func (l *Log) mapBatch(r *cleanRound, b record.Batch) (bool, error) {
	a := b.Attributes()
	if a.IsControl() || a.IsTransactional() || b.RecordCount() == 0 {
		return false, nil
	}
	if r.mapBytes >= l.cfg.CleanerDedupeBufferBytes && len(r.offsets) > 0 {
		return true, nil
	}
	c := l.clean
	rr := c.rr
	if err := rr.Reset(b); err != nil {
		return false, err
	}
	// All of the batch or none of it: a key of a batch that turns out not
	// to parse must not supersede the readable records before it.
	c.keys = c.keys[:0]
	for rr.Next() {
		if rec := rr.Record(); rec.Key != nil {
			c.keys = append(c.keys, mappedKey{key: rec.Key, offset: rec.Offset})
		}
	}
	if err := rr.Err(); err != nil {
		return false, err
	}
	for _, k := range c.keys {
		if _, ok := r.offsets[string(k.key)]; !ok {
			r.mapBytes += int64(len(k.key)) + offsetMapEntryBytes
		}
		r.offsets[string(k.key)] = k.offset
	}
	return false, nil
}

// mappedKey is a key of the batch being mapped (aliasing the reader's
// buffer) and its record's offset.
type mappedKey struct {
	key    []byte
	offset int64
}

// finishMap completes the offset map at mapEnd.
func (l *Log) finishMap(r *cleanRound, mapEnd int64) {
	r.mapped, r.mapEnd = true, max(mapEnd, r.from)
	l.logger.Debug("offset map built", "from", r.from, "to", r.mapEnd, "keys", len(r.offsets), "bytes", r.mapBytes)
}

// finishCleaning writes the checkpoint of a cleaning whose groups are all
// swapped in, then ends it.
func (l *Log) finishCleaning(r *cleanRound, now time.Time, finish func(bool, error)) {
	c := l.clean
	// Below the old checkpoint each key still has at most one record: a
	// cleaning only removes records.
	f := max(r.mapEnd, r.clean)
	ck := cleanerCheckpoint{firstDirty: f, epoch: l.EpochForOffset(f - 1), firstSegment: l.segs[0].base}
	r.checkpointing = true
	l.writeCleanerCheckpoint(ck, func(err error) {
		c.round = nil
		c.release()
		if err != nil {
			c.stats.Abandoned++
			finish(false, err)
			return
		}
		if r.aborted != "" {
			// A truncation lowered the checkpoint meanwhile; ckptDirty
			// rewrites it at the next step.
			c.stats.Abandoned++
			finish(true, nil)
			return
		}
		c.ckpt = ck
		c.minHorizon = r.minHorizon
		c.stats.Cleanings++
		l.logger.Debug("cleaning done", "firstDirtyOffset", ck.firstDirty)
		finish(l.usable() == nil && l.planCleaning(now).due, nil)
	})
}

// scanner returns the cleaner's scanner reset to read f from start to end,
// keeping its buffers.
func (c *cleanState) scanner(f env.File, start, end int64) *scanner {
	c.sc = scanner{f: f, pos: start, end: end, buf: c.sc.buf[:0], scratch: c.sc.scratch[:0]}
	return &c.sc
}

// epochStartsIn returns the start offsets of the leader epochs in [from,
// to), sorted.
func (l *Log) epochStartsIn(from, to int64) []int64 {
	var out []int64
	for _, e := range l.epochs.entries {
		if e.startOffset >= from && e.startOffset < to {
			out = append(out, e.startOffset)
		}
	}
	return out
}

func containsOffset(sorted []int64, o int64) bool {
	i := sort.Search(len(sorted), func(i int) bool { return sorted[i] >= o })
	return i < len(sorted) && sorted[i] == o
}
