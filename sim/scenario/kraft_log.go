package scenario

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/quorum"
)

// The Raft log checks of the kraft scenario. Every check interval the
// harness reads each running member's log through kraft.Member.LogView and
// checks, across all members (voters and observers) and all time:
//
//   - log matching: a batch is named by its key (epoch, end offset), and
//     every log that ever holds a batch under a key holds the same batch
//     (base offset and a hash of kind and records) after the same
//     predecessor (the epoch of the batch before it). By induction, two logs
//     holding a batch with the same key hold identical batches before it,
//     as far back as both reach (a trimmed log from its start);
//   - leader append-only: while a member leads an epoch (seen leading it at
//     two consecutive checks of one incarnation) its log never loses a
//     batch;
//   - committed log: every batch below a member's high watermark is
//     committed. The checker keeps the committed log it learned from all
//     members' high watermarks; a member's committed batch must be the
//     committed log's batch at that position (state-machine safety), and a
//     newly committed batch must continue the committed log;
//   - leader completeness: a member first seen leading an epoch holds the
//     last batch known committed at the previous check, or a snapshot
//     covering it; by log matching it then holds the whole committed log;
//   - applied image: a member's image position is the end of a batch of
//     the committed log (its image is a replay of the committed log's
//     prefix), and a snapshot id is a committed batch end.
//
// Incremental: the checker remembers, per member, the keys of the batches
// it verified (kraftMemberLog.keys). A check reads a member's log only when
// its end moved: it drops the remembered keys the log no longer holds
// (walking back from the tail, one batch read each), then reads and
// verifies only the new batches. Each batch is hashed once per member that
// holds it; a check of an unchanged log costs a LogView.

// kraftBatchRecord is what the checker knows of the batch under one key.
type kraftBatchRecord struct {
	base int64
	sum  uint64
	// prevEpoch is the epoch of the batch before it, kraftUnknownEpoch
	// until a log holding both was read (a trimmed log's first batch has
	// no predecessor to read).
	prevEpoch int32
	// first is the member that first held it, for messages.
	first int
}

// kraftUnknownEpoch marks a predecessor epoch the checker has not seen.
const kraftUnknownEpoch = int32(-1)

// kraftCommitted is one batch of the committed log.
type kraftCommitted struct {
	base, end int64
	epoch     int32
}

// kraftMemberLog is what the checker remembers of one member's log.
type kraftMemberLog struct {
	seen bool
	// start is the base offset of keys[0] (the log start when the log is
	// empty); keys are the keys of the batches verified, in log order.
	start int64
	keys  []quorum.OffsetAndEpoch
	// claimed counts the leading keys already recorded as committed.
	claimed int
	// inc is the incarnation leading belongs to; leading is the epoch
	// the member was seen leading at the previous check, 0 for none.
	inc     uint64
	leading int32
}

func (ml *kraftMemberLog) tail() quorum.OffsetAndEpoch {
	if n := len(ml.keys); n > 0 {
		return ml.keys[n-1]
	}
	return quorum.OffsetAndEpoch{Offset: ml.start, Epoch: kraftUnknownEpoch}
}

// holds reports whether the remembered keys include k.
func (ml *kraftMemberLog) holds(k quorum.OffsetAndEpoch) bool {
	j := sort.Search(len(ml.keys), func(j int) bool { return ml.keys[j].Offset >= k.Offset })
	return j < len(ml.keys) && ml.keys[j] == k
}

// kraftLogChecker is the checker's memory across members and incarnations.
type kraftLogChecker struct {
	batches   map[quorum.OffsetAndEpoch]kraftBatchRecord
	committed []kraftCommitted // in offset order; gaps only where no log showed the batches
	members   []kraftMemberLog
	// verified counts the batches hashed and checked, for the summary.
	verified int
	// pendingApplied are image positions seen past the committed end known
	// at the time: a member can install a snapshot (or apply a batch) the
	// leader committed and snapshotted between two checks, before any log
	// the checker read showed that batch committed. Each is checked once
	// the committed log reaches it; any still pending after the liveness
	// phase fails the run (checkPendingAtEnd).
	pendingApplied []kraftPendingApplied
}

type kraftPendingApplied struct {
	name string
	pos  meta.Position
}

func newKRaftLogChecker(n int) *kraftLogChecker {
	return &kraftLogChecker{batches: map[quorum.OffsetAndEpoch]kraftBatchRecord{}, members: make([]kraftMemberLog, n)}
}

// committedEnd is the end of the last committed batch known, 0 for none.
func (lc *kraftLogChecker) committedEnd() int64 {
	if n := len(lc.committed); n > 0 {
		return lc.committed[n-1].end
	}
	return 0
}

// committedLast is the key of the last committed batch known.
func (lc *kraftLogChecker) committedLast() quorum.OffsetAndEpoch {
	if n := len(lc.committed); n > 0 {
		c := lc.committed[n-1]
		return quorum.OffsetAndEpoch{Offset: c.end, Epoch: c.epoch}
	}
	return quorum.OffsetAndEpoch{}
}

// lookupCommitted finds the committed batch that holds offset end-1. found
// is false when end is past the committed end or falls in a gap.
func (lc *kraftLogChecker) lookupCommitted(end int64) (c kraftCommitted, found bool) {
	j := sort.Search(len(lc.committed), func(j int) bool { return lc.committed[j].end >= end })
	if j == len(lc.committed) || lc.committed[j].base >= end {
		return kraftCommitted{}, false
	}
	return lc.committed[j], true
}

// kraftLogReader reads one member's log for the checker. The planted
// view bugs (kraftBugs) act here: they change what the checker sees, never
// the member.
type kraftLogReader struct {
	m *kraft.Member
	// cut hides every batch ending above it; -1 hides nothing.
	cut int64
	// corrupt rewrites the batches read; nil leaves them.
	corrupt func(quorum.Batch) quorum.Batch
}

func (r kraftLogReader) view() kraft.LogView {
	v := r.m.LogView()
	if r.cut >= 0 && r.cut < v.EndOffset.Offset {
		v.EndOffset = quorum.OffsetAndEpoch{Offset: max(r.cut, v.StartOffset)}
		if b, ok := r.m.LogBatchEndingAt(r.cut); ok {
			v.EndOffset.Epoch = b.Epoch
		}
		v.HighWatermark = min(v.HighWatermark, v.EndOffset.Offset)
	}
	return v
}

func (r kraftLogReader) batches(from int64) ([]quorum.Batch, bool) {
	bs, ok := r.m.LogBatches(from, kraftLogReadBytes)
	if r.cut >= 0 {
		n := 0
		for n < len(bs) && bs[n].EndOffset() <= r.cut {
			n++
		}
		bs = bs[:n]
	}
	if r.corrupt != nil {
		out := make([]quorum.Batch, len(bs))
		for j, b := range bs {
			out[j] = r.corrupt(b)
		}
		bs = out
	}
	return bs, ok
}

func (r kraftLogReader) batchEndingAt(end int64) (quorum.Batch, bool) {
	if r.cut >= 0 && end > r.cut {
		return quorum.Batch{}, false
	}
	b, ok := r.m.LogBatchEndingAt(end)
	if ok && r.corrupt != nil {
		b = r.corrupt(b)
	}
	return b, ok
}

// kraftLogReadBytes bounds one read of new batches.
const kraftLogReadBytes = 1 << 20

// hashBatch hashes what makes a batch itself: base offset, epoch, kind and
// records.
func hashBatch(b quorum.Batch) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(b.BaseOffset))
	h.Write(buf[:])
	binary.BigEndian.PutUint32(buf[:4], uint32(b.Epoch))
	h.Write(buf[:4])
	h.Write([]byte{byte(b.Kind)})
	for _, rec := range b.Records {
		binary.BigEndian.PutUint32(buf[:4], uint32(len(rec)))
		h.Write(buf[:4])
		h.Write(rec)
	}
	return h.Sum64()
}

// checkLog runs the log checks on member i, whose view v was read at this
// check through r. ckpt is the last committed batch known at the previous
// check.
func (h *kraftHarness) checkLog(i int, r kraftLogReader, v kraft.LogView, ckpt quorum.OffsetAndEpoch) {
	lc := h.logs
	ml := &lc.members[i]
	name := h.name(i)
	if inc := h.procs[i].Incarnation(); ml.inc != inc {
		ml.inc, ml.leading = inc, 0
	}
	leading := v.Started && v.Role == quorum.RoleLeader
	wasLeading := leading && ml.leading == v.Epoch

	before := ml.tail()
	dropped := h.followLog(i, r, v)
	assert.That(!wasLeading || dropped == 0, "leader append-only: %s leads epoch %d but its log lost %d batches: end %s -> %s",
		name, v.Epoch, dropped, before, v.EndOffset)

	// Committed batches: everything at or below the high watermark.
	for ml.claimed < len(ml.keys) && ml.keys[ml.claimed].Offset <= v.HighWatermark {
		k := ml.keys[ml.claimed]
		base := ml.start
		if ml.claimed > 0 {
			base = ml.keys[ml.claimed-1].Offset
		}
		h.commit(i, base, k)
		ml.claimed++
	}

	if leading && !wasLeading && ckpt.Offset > 0 {
		covered := ckpt.Offset <= v.StartOffset && v.HasSnapshot && v.Snapshot.EndOffset >= ckpt.Offset
		assert.That(covered || ml.holds(ckpt), "leader completeness: %s leads epoch %d but its log [%d, %s) lacks committed batch ending at %s",
			name, v.Epoch, v.StartOffset, v.EndOffset, ckpt)
	}
	ml.leading = 0
	if leading {
		ml.leading = v.Epoch
	}

	if v.HasSnapshot {
		if c, ok := lc.lookupCommitted(v.Snapshot.EndOffset); ok {
			assert.That(c.end == v.Snapshot.EndOffset && c.epoch == v.Snapshot.Epoch,
				"snapshot: %s holds snapshot %s, but the committed batch there is [%d, %d)@%d", name, v.Snapshot, c.base, c.end, c.epoch)
		}
	}
}

// checkApplied checks that member i's image position is a committed batch
// end: the image replayed a prefix of the committed log. A position past
// the committed end known so far waits in pendingApplied.
func (h *kraftHarness) checkApplied(i int, pos meta.Position) {
	if pos == meta.EmptyPosition {
		return
	}
	h.logs.checkAppliedAt(h.name(i), pos)
}

func (lc *kraftLogChecker) checkAppliedAt(name string, pos meta.Position) {
	end := pos.Offset + 1
	if end > lc.committedEnd() {
		lc.pendingApplied = append(lc.pendingApplied, kraftPendingApplied{name: name, pos: pos})
		return
	}
	if c, ok := lc.lookupCommitted(end); ok {
		assert.That(c.end == end && c.epoch == pos.Epoch, "applied image: %s applied up to %+v, but the committed batch there is [%d, %d)@%d",
			name, pos, c.base, c.end, c.epoch)
	}
}

// recheckPending checks the pending positions the committed log now
// reaches.
func (lc *kraftLogChecker) recheckPending() {
	pending := lc.pendingApplied
	lc.pendingApplied = nil
	for _, p := range pending {
		lc.checkAppliedAt(p.name, p.pos) // re-queues what is still ahead
	}
}

// checkPendingAtEnd fails the run if a member applied past every batch the
// logs ever showed committed, once the cluster has converged.
func (lc *kraftLogChecker) checkPendingAtEnd() error {
	lc.recheckPending()
	if len(lc.pendingApplied) > 0 {
		p := lc.pendingApplied[0]
		return fmt.Errorf("applied image: %s applied up to %+v, past the committed log's end %d (%d such positions)",
			p.name, p.pos, lc.committedEnd(), len(lc.pendingApplied))
	}
	return nil
}

// followLog brings the checker's memory of member i's log up to date and
// returns how many remembered batches the log no longer holds at its tail
// (truncated, or lost in a crash).
func (h *kraftHarness) followLog(i int, r kraftLogReader, v kraft.LogView) (dropped int) {
	ml := &h.logs.members[i]
	if !ml.seen {
		ml.seen, ml.start = true, v.StartOffset
	}
	if len(ml.keys) > 0 && ml.tail() == v.EndOffset && ml.start == v.StartOffset {
		return 0
	}
	if len(ml.keys) == 0 && ml.start == v.StartOffset && v.EndOffset.Offset == v.StartOffset {
		return 0
	}
	// Drop from the tail the batches the log no longer holds.
	for n := len(ml.keys); n > 0; n-- {
		k := ml.keys[n-1]
		if k.Offset <= v.StartOffset {
			break // trimmed, below
		}
		if b, ok := r.batchEndingAt(k.Offset); ok && b.Epoch == k.Epoch {
			break
		}
		ml.keys = ml.keys[:n-1]
		dropped++
	}
	// Drop the batches trimmed away (or wiped by a snapshot install).
	if v.StartOffset > ml.start || len(ml.keys) == 0 {
		j := sort.Search(len(ml.keys), func(j int) bool { return ml.keys[j].Offset > v.StartOffset })
		ml.keys = append(ml.keys[:0:0], ml.keys[j:]...)
		ml.claimed = max(0, ml.claimed-j)
		ml.start = v.StartOffset
	}
	ml.claimed = min(ml.claimed, len(ml.keys))
	// Read and verify the new batches.
	last := ml.tail()
	prevEpoch := last.Epoch
	if last.Offset == 0 {
		prevEpoch = 0 // the start of the log: nothing before
	}
	for from := last.Offset; from < v.EndOffset.Offset; {
		bs, ok := r.batches(from)
		assert.That(ok && len(bs) > 0, "log view: %s: no batches at %d, below its end %s", h.name(i), from, v.EndOffset)
		for _, b := range bs {
			h.verifyBatch(i, b, prevEpoch)
			ml.keys = append(ml.keys, b.End())
			prevEpoch = b.Epoch
			from = b.EndOffset()
		}
	}
	return dropped
}

// verifyBatch checks batch b of member i against what every log held under
// its key, and records it.
func (h *kraftHarness) verifyBatch(i int, b quorum.Batch, prevEpoch int32) {
	lc := h.logs
	lc.verified++
	k := b.End()
	sum := hashBatch(b)
	rec, ok := lc.batches[k]
	if !ok {
		lc.batches[k] = kraftBatchRecord{base: b.BaseOffset, sum: sum, prevEpoch: prevEpoch, first: i}
		return
	}
	assert.That(rec.base == b.BaseOffset && rec.sum == sum, "log matching: %s holds batch [%d, %d)@%d (hash %016x), but %s held [%d, %d)@%d (hash %016x) under that key",
		h.name(i), b.BaseOffset, k.Offset, k.Epoch, sum, h.name(rec.first), rec.base, k.Offset, k.Epoch, rec.sum)
	if prevEpoch == kraftUnknownEpoch {
		return
	}
	if rec.prevEpoch == kraftUnknownEpoch {
		rec.prevEpoch = prevEpoch
		lc.batches[k] = rec
		return
	}
	assert.That(rec.prevEpoch == prevEpoch, "log matching: %s holds batch [%d, %d)@%d after a batch of epoch %d, but %s held it after epoch %d",
		h.name(i), b.BaseOffset, k.Offset, k.Epoch, prevEpoch, h.name(rec.first), rec.prevEpoch)
}

// commit records that member i's batch [base, k.Offset)@k.Epoch is
// committed (below its high watermark), checking it against the committed
// log.
func (h *kraftHarness) commit(i int, base int64, k quorum.OffsetAndEpoch) {
	lc := h.logs
	end := lc.committedEnd()
	if k.Offset <= end {
		if c, ok := lc.lookupCommitted(k.Offset); ok {
			assert.That(c.end == k.Offset && c.base == base && c.epoch == k.Epoch,
				"committed log: %s has batch [%d, %d)@%d below its high watermark, but the committed log holds [%d, %d)@%d there",
				h.name(i), base, k.Offset, k.Epoch, c.base, c.end, c.epoch)
		}
		return
	}
	assert.That(base >= end, "committed log: %s has batch [%d, %d)@%d below its high watermark, straddling the committed log's end %d",
		h.name(i), base, k.Offset, k.Epoch, end)
	if n := len(lc.committed); n > 0 {
		assert.That(k.Epoch >= lc.committed[n-1].epoch, "committed log: %s commits [%d, %d)@%d after a batch of epoch %d",
			h.name(i), base, k.Offset, k.Epoch, lc.committed[n-1].epoch)
	}
	lc.committed = append(lc.committed, kraftCommitted{base: base, end: k.Offset, epoch: k.Epoch})
}
