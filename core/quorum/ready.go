package quorum

// This file is the Raft's boundary with storage and the state machine:
// Ready and the completions that answer it, and the durability bookkeeping
// behind the persist barrier.

import (
	"fmt"

	"github.com/strata-log/strata/core/assert"
)

// Ready is what the driver must do next, drained by Raft.Ready. Handle it in
// field order: persisting and syncing may complete later (report them with
// StatePersisted and LogSynced), but Messages may go out at once, because
// the Raft withheld every message that needs state not yet durable.
type Ready struct {
	// PersistState, when set, is the quorum state to write and fsync; then
	// call StatePersisted(PersistState.Seq). Requests complete in order.
	PersistState *PersistRequest
	// SyncLog, when set, asks for an fsync of everything written through
	// the Log so far (batches, truncations, snapshot installs); then call
	// LogSynced(SyncLog.Seq). Requests complete in order.
	SyncLog *SyncRequest
	// Messages are to be sent to their destinations, best effort.
	Messages []Message
	// LoadSnapshot, when set, tells the state machine to replace its state
	// with this snapshot (read it from the Log) before applying Committed.
	LoadSnapshot *SnapshotID
	// Committed are batches to apply to the state machine, in offset order,
	// leader-change batches included. Each is whole: the state machine
	// applies a batch atomically, all its records or none.
	Committed []Batch
	// HighWatermark is the current high watermark.
	HighWatermark int64
	// SnapshotDue asks the state machine to write a snapshot at what it has
	// applied and report it with SnapshotTaken. Set once per interval.
	SnapshotDue bool
	// SoftState, when set, is the role, epoch or leader that changed since
	// the previous Ready (a controller becomes active or inactive on it).
	SoftState *SoftState
}

// PersistRequest is a quorum state to make durable.
type PersistRequest struct {
	Seq   uint64
	State QuorumState
}

// SyncRequest asks for the log to be fsynced; UpTo is its end offset when
// the request was made.
type SyncRequest struct {
	Seq  uint64
	UpTo int64
}

// SoftState is the volatile part of a node's position in the quorum.
type SoftState struct {
	Role     Role
	Epoch    int32
	LeaderID NodeID
}

// gatedMessage is a message waiting for the quorum state of seq to be
// durable.
type gatedMessage struct {
	seq uint64
	msg Message
}

// pendingSync is a log sync requested but not completed; upTo shrinks if
// the log is truncated below it meanwhile.
type pendingSync struct {
	seq  uint64
	upTo int64
}

// StatePersisted reports that the quorum state of PersistRequest seq (and
// every earlier one) is durable. Messages that waited for it are released
// to the next Ready.
func (r *Raft) StatePersisted(seq uint64) {
	assert.That(seq <= r.stateSeq, "quorum: persisted seq %d never requested (latest %d)", seq, r.stateSeq)
	if seq <= r.durableSeq {
		return
	}
	r.durableSeq = seq
	n := 0
	for _, g := range r.gated {
		if g.seq <= r.durableSeq {
			r.outbox = append(r.outbox, g.msg)
		} else {
			r.gated[n] = g
			n++
		}
	}
	r.gated = r.gated[:n]
	r.maybeWinElection()
}

// LogSynced reports that the log sync of SyncRequest seq (and every earlier
// one) completed.
func (r *Raft) LogSynced(seq uint64) {
	assert.That(seq <= r.syncSeq, "quorum: synced seq %d never requested (latest %d)", seq, r.syncSeq)
	advanced := false
	for len(r.syncs) > 0 && r.syncs[0].seq <= seq {
		if s := r.syncs[0]; s.upTo > r.durableEnd {
			r.durableEnd = s.upTo
			advanced = true
		}
		r.syncs = r.syncs[1:]
	}
	assert.That(r.durableEnd <= r.log.EndOffset().Offset, "quorum: durable end %d past log end %d", r.durableEnd, r.log.EndOffset().Offset)
	if !advanced {
		return
	}
	switch r.role {
	case RoleLeader:
		r.maybeAdvanceHighWatermark()
	case RoleFollower, RoleUnattached:
		r.maybeSendFetch()
	}
}

// HasReady reports whether Ready would return anything.
func (r *Raft) HasReady() bool {
	return r.persistPending || r.syncPending || len(r.outbox) > 0 || r.loadSnapshot ||
		r.applied < r.applyLimit() || r.softStateChanged || r.snapshotDue()
}

// Ready drains the effects accumulated since the previous call.
func (r *Raft) Ready() Ready {
	rd := Ready{HighWatermark: r.highWatermark}
	if r.persistPending {
		rd.PersistState = &PersistRequest{Seq: r.stateSeq, State: r.state}
		r.persistPending = false
	}
	if r.syncPending {
		r.syncSeq++
		upTo := r.log.EndOffset().Offset
		r.syncs = append(r.syncs, pendingSync{seq: r.syncSeq, upTo: upTo})
		rd.SyncLog = &SyncRequest{Seq: r.syncSeq, UpTo: upTo}
		r.syncPending = false
	}
	rd.Messages, r.outbox = r.outbox, nil
	if r.loadSnapshot {
		id, ok := r.log.LatestSnapshot()
		assert.That(ok, "quorum: snapshot to load vanished")
		rd.LoadSnapshot = &id
		r.applied = id.EndOffset
		r.appliedSinceSnap = 0
		r.loadSnapshot = false
	}
	if limit := r.applyLimit(); r.applied < limit {
		assert.That(r.applied >= r.log.StartOffset(), "quorum: applied %d below log start %d", r.applied, r.log.StartOffset())
		batches := r.log.Batches(r.applied, r.cfg.MaxApplyBytes)
		n := 0
		for _, b := range batches {
			if b.EndOffset() > limit {
				break
			}
			assert.That(b.BaseOffset == r.applied, "quorum: applying batch %s, want offset %d", b, r.applied)
			r.applied = b.EndOffset()
			r.appliedSinceSnap += int64(b.Size())
			n++
		}
		// The limit is a batch end, so the batch holding it was taken whole.
		assert.That(n > 0, "quorum: apply limit %d inside the batch at %d", limit, r.applied)
		rd.Committed = batches[:n:n]
	}
	if r.snapshotDue() {
		rd.SnapshotDue = true
		r.snapshotRequested = true
	}
	if r.softStateChanged {
		rd.SoftState = &SoftState{Role: r.role, Epoch: r.state.Epoch, LeaderID: r.leaderHint()}
		r.softStateChanged = false
	}
	return rd
}

// applyLimit is the offset below which batches may be applied: committed
// and durable here. Both bounds are batch ends, so it is one too.
func (r *Raft) applyLimit() int64 { return min(r.highWatermark, r.durableEnd) }

func (r *Raft) snapshotDue() bool {
	return !r.snapshotRequested && r.appliedSinceSnap >= r.cfg.SnapshotIntervalBytes
}

// send queues a message, withheld until the current quorum state is durable.
func (r *Raft) send(to NodeID, p Payload) { r.sendRef(to, 0, p) }

// reply sends the answer to the request Step is handling, echoing its Ref.
func (r *Raft) reply(to NodeID, p Payload) { r.sendRef(to, r.stepRef, p) }

// sendRef is send with the Ref of the request p answers.
func (r *Raft) sendRef(to NodeID, ref uint64, p Payload) {
	m := Message{From: r.id, To: to, Ref: ref, Payload: p}
	if r.durableSeq >= r.stateSeq && len(r.gated) == 0 {
		r.outbox = append(r.outbox, m)
		return
	}
	r.gated = append(r.gated, gatedMessage{seq: r.stateSeq, msg: m})
}

// appendBatch writes one batch to the log and schedules a sync.
func (r *Raft) appendBatch(b Batch) { r.appendBatches([]Batch{b}) }

// appendBatches writes batches to the log and schedules a sync.
func (r *Raft) appendBatches(batches []Batch) {
	r.log.Append(batches)
	r.syncPending = true
}

// truncate removes the batches at and above offset, a batch boundary, which
// must all be uncommitted; a leader never truncates.
func (r *Raft) truncate(offset int64) {
	assert.That(r.role != RoleLeader, "quorum: leader %s truncating its log to %d", r.id, offset)
	assert.That(offset >= r.highWatermark, "quorum: node %s truncating to %d below its high watermark %d", r.id, offset, r.highWatermark)
	if offset >= r.log.EndOffset().Offset {
		return
	}
	r.assertBoundary(offset, "truncation point")
	r.log.TruncateTo(offset)
	r.clampDurable(offset)
}

// clampDurable forgets durability at and above offset: the log changed there
// and what a sync in flight covers is uncertain.
func (r *Raft) clampDurable(offset int64) {
	r.durableEnd = min(r.durableEnd, offset)
	for i := range r.syncs {
		r.syncs[i].upTo = min(r.syncs[i].upTo, offset)
	}
}

// setHighWatermark advances the high watermark, always to a batch end.
func (r *Raft) setHighWatermark(hw int64) {
	assert.NotDecreasing("quorum high watermark", r.highWatermark, hw)
	assert.That(hw <= r.log.EndOffset().Offset, "quorum: high watermark %d past log end %d", hw, r.log.EndOffset().Offset)
	r.assertBoundary(hw, "high watermark")
	if hw == r.highWatermark {
		return
	}
	r.highWatermark = hw
	if r.role == RoleLeader {
		r.answerParkedFetches()
	}
}

// assertBoundary checks that offset, a log position the Raft derived (a high
// watermark, a replica's log end, a truncation point), is a batch boundary of
// the log: no batch is ever committed, acknowledged or truncated in part.
// Positions below the log start (unknown, or trimmed into a snapshot) are
// not checked.
func (r *Raft) assertBoundary(offset int64, format string, args ...any) {
	if offset < r.log.StartOffset() {
		return
	}
	if b := r.log.FloorBatchBoundary(offset); b != offset {
		assert.Never("quorum: node %s: %s at %d is inside the batch at %d", r.id, fmt.Sprintf(format, args...), offset, b)
	}
}
