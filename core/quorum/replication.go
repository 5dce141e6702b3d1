package quorum

// This file is the leader side of replication: proposals, answering
// fetches (validating the fetcher's position, parking fetches with nothing
// new), the high watermark, and check-quorum.

import (
	"fmt"
	"slices"
	"time"

	"github.com/strata-log/strata/core/assert"
)

// leaderState is the leader's view of its epoch and of every replica.
type leaderState struct {
	// epochStartOffset is the offset of the epoch's leader-change batch:
	// the high watermark moves only past it, that is, only once a batch of
	// the current epoch is on a majority.
	epochStartOffset int64
	// replicas holds every other voter and the observers seen fetching.
	replicas map[NodeID]*replicaProgress
	// parked holds at most one fetch per replica that had nothing new.
	parked map[NodeID]parkedFetch
	// beginRetryAt is when BeginQuorumEpoch goes again to voters that have
	// not acknowledged it.
	beginRetryAt time.Duration
}

// replicaProgress is what the leader knows of one replica.
type replicaProgress struct {
	voter bool
	// endOffset is the replica's last validated fetch offset (its durable
	// log end as far as it matches the leader's), -1 when unknown.
	endOffset    int64
	lastFetch    time.Duration
	lastCaughtUp time.Duration
	caughtUp     bool
	// acked: the replica acknowledged the epoch (BeginQuorumEpoch response
	// or a fetch in the epoch).
	acked bool
}

type parkedFetch struct {
	req      FetchRequest
	deadline time.Duration
	// ref is the parked request's Message.Ref, echoed by its answer.
	ref uint64
}

// Propose appends records to the log as one batch in the leader's epoch and
// returns the offset of its last record and the epoch. The batch is a unit:
// it is replicated, committed, truncated and handed to Ready.Committed
// whole, never in part. It commits when the high watermark reaches its end
// (offset+1), unless the leader loses its epoch first; then it may be
// truncated, and the caller learns it by never seeing it committed in that
// epoch. Not on the leader, it returns a *NotLeaderError; a batch above
// Config.MaxBatchRecords records or Config.MaxBatchBytes bytes (by
// Batch.Size) gets ErrProposalTooLarge.
func (r *Raft) Propose(records [][]byte) (offset int64, epoch int32, err error) {
	if r.role != RoleLeader {
		return 0, 0, &NotLeaderError{LeaderID: r.leaderHint(), Epoch: r.state.Epoch}
	}
	if len(records) == 0 {
		return 0, 0, ErrEmptyProposal
	}
	// The record values are shared (they are immutable once proposed), the
	// slice holding them is not: the caller may reuse it.
	b := Batch{BaseOffset: r.log.EndOffset().Offset, Epoch: r.state.Epoch, Kind: BatchData, Records: slices.Clone(records)}
	if size := b.Size(); len(records) > r.cfg.MaxBatchRecords || size > r.cfg.MaxBatchBytes {
		return 0, 0, fmt.Errorf("%w: %d records of %d bytes, at most %d records and %d bytes fit a batch",
			ErrProposalTooLarge, len(records), size, r.cfg.MaxBatchRecords, r.cfg.MaxBatchBytes)
	}
	r.appendBatch(b)
	r.answerParkedFetches()
	return b.EndOffset() - 1, b.Epoch, nil
}

func (r *Raft) handleFetchRequest(from NodeID, req FetchRequest) {
	respondErr := func(code ErrorCode) {
		r.reply(from, FetchResponse{
			Error: code, Epoch: r.state.Epoch, LeaderID: r.leaderHint(),
			HighWatermark: -1, LogStartOffset: -1,
			FetchEpoch: req.Epoch, FetchOffset: req.FetchOffset, LastFetchedEpoch: req.LastFetchedEpoch,
		})
	}
	switch {
	case req.ReplicaID != from || req.FetchOffset < 0:
		respondErr(ErrInvalidRequest)
		return
	case r.role != RoleLeader:
		respondErr(ErrNotLeaderOrFollower)
		return
	case req.Epoch < r.state.Epoch:
		respondErr(ErrFencedLeaderEpoch)
		return
	case req.Epoch > r.state.Epoch:
		respondErr(ErrUnknownLeaderEpoch)
		return
	}
	ls := r.leader
	p := r.trackReplica(from)
	p.lastFetch = r.now
	p.acked = true
	delete(ls.parked, from) // a newer fetch supersedes a parked one, unanswered

	resp := FetchResponse{
		Epoch: r.state.Epoch, LeaderID: r.id,
		FetchEpoch: req.Epoch, FetchOffset: req.FetchOffset, LastFetchedEpoch: req.LastFetchedEpoch,
	}
	if diverging, snapshot := r.validateFetchPosition(req.FetchOffset, req.LastFetchedEpoch); diverging != nil || snapshot != nil {
		resp.DivergingEpoch, resp.Snapshot = diverging, snapshot
		resp.HighWatermark, resp.LogStartOffset = r.highWatermark, r.log.StartOffset()
		r.reply(from, resp)
		return
	}
	end := r.log.EndOffset().Offset
	assert.That(req.FetchOffset <= end, "quorum: validated fetch offset %d past leader end %d", req.FetchOffset, end)
	if r.log.FloorBatchBoundary(req.FetchOffset) != req.FetchOffset {
		// A fetcher whose log matches this one up to its offset ends on a
		// boundary of it; one that does not is broken, not diverged.
		respondErr(ErrInvalidRequest)
		return
	}
	p.endOffset = req.FetchOffset
	if req.FetchOffset == end {
		p.caughtUp, p.lastCaughtUp = true, r.now
	}
	if p.voter {
		r.maybeAdvanceHighWatermark()
	}
	if req.FetchOffset == end && req.HighWatermark >= r.highWatermark && req.MaxWait > 0 {
		ls.parked[from] = parkedFetch{req: req, deadline: r.now + min(req.MaxWait, r.cfg.FetchMaxWait), ref: r.stepRef}
		return
	}
	r.reply(from, r.fetchResponse(req))
}

// fetchResponse answers a validated fetch with the leader's log from the
// fetch offset, in whole batches: at least one, however large, and then as
// many as fit the fetch's max bytes.
func (r *Raft) fetchResponse(req FetchRequest) FetchResponse {
	resp := FetchResponse{
		Epoch: r.state.Epoch, LeaderID: r.id,
		HighWatermark: r.highWatermark, LogStartOffset: r.log.StartOffset(),
		FetchEpoch: req.Epoch, FetchOffset: req.FetchOffset, LastFetchedEpoch: req.LastFetchedEpoch,
	}
	if req.FetchOffset < r.log.EndOffset().Offset {
		maxBytes := r.cfg.MaxFetchBytes
		if req.MaxBytes > 0 {
			maxBytes = min(maxBytes, int(req.MaxBytes))
		}
		resp.Batches = r.log.Batches(req.FetchOffset, maxBytes)
	}
	return resp
}

// validateFetchPosition checks a fetcher's log end against the leader's log
// (KRaft's validateOffsetAndEpoch). The fetcher needs the snapshot when its
// offset is below the log start, or when every epoch the log holds is above
// its last one (its log diverged somewhere below the log start). It
// diverged when the leader does not hold its last epoch up to its fetch
// offset; the answer is the largest epoch the leader holds at or below the
// fetcher's last, with its end offset.
func (r *Raft) validateFetchPosition(offset int64, lastEpoch int32) (diverging *OffsetAndEpoch, snapshot *SnapshotID) {
	end, ok := r.log.EndOffsetForEpoch(lastEpoch)
	if offset < r.log.StartOffset() || !ok {
		if snap, hasSnap := r.log.LatestSnapshot(); hasSnap {
			return nil, &snap
		}
		return &OffsetAndEpoch{}, nil
	}
	if end.Epoch != lastEpoch || end.Offset < offset {
		return &end, nil
	}
	return nil, nil
}

// trackReplica returns the progress of a replica, adding an observer seen
// for the first time (and forgetting the least recently seen observer past
// MaxObservers).
func (r *Raft) trackReplica(id NodeID) *replicaProgress {
	ls := r.leader
	if p := ls.replicas[id]; p != nil {
		return p
	}
	var observers []NodeID
	for oid, p := range ls.replicas { //determinism:unordered sorted below
		if !p.voter {
			observers = append(observers, oid)
		}
	}
	if len(observers) >= r.cfg.MaxObservers {
		slices.SortFunc(observers, func(a, b NodeID) int {
			if c := ls.replicas[a].lastFetch - ls.replicas[b].lastFetch; c != 0 {
				if c < 0 {
					return -1
				}
				return 1
			}
			return int(a - b)
		})
		delete(ls.replicas, observers[0])
		delete(ls.parked, observers[0])
	}
	p := &replicaProgress{endOffset: -1, lastFetch: r.now}
	ls.replicas[id] = p
	return p
}

// maybeAdvanceHighWatermark moves the high watermark to the largest offset
// a majority of voters durably holds, once that includes the current
// epoch's leader-change batch. Every voter's end is a batch boundary of
// this log (a validated fetch offset, or the durable end), so the high
// watermark only ever lands on a batch end.
func (r *Raft) maybeAdvanceHighWatermark() {
	ls := r.leader
	ends := make([]int64, 0, len(r.cfg.Voters))
	for _, v := range r.cfg.Voters {
		end := r.durableEnd
		if v != r.id {
			end = ls.replicas[v].endOffset
		}
		r.assertBoundary(end, "voter %s's log end", v)
		ends = append(ends, end)
	}
	slices.Sort(ends)
	slices.Reverse(ends)
	candidate := ends[r.majority()-1]
	if candidate > ls.epochStartOffset && candidate > r.highWatermark {
		r.setHighWatermark(candidate)
	}
}

// answerParkedFetches answers the parked fetches that now have something
// new: batches past their offset or a newer high watermark.
func (r *Raft) answerParkedFetches() {
	r.releaseParked(func(pf parkedFetch) bool {
		return r.log.EndOffset().Offset > pf.req.FetchOffset || r.highWatermark > pf.req.HighWatermark
	})
}

// releaseParked answers, in replica order, the parked fetches for which
// ready holds.
func (r *Raft) releaseParked(ready func(parkedFetch) bool) {
	ls := r.leader
	if ls == nil || len(ls.parked) == 0 {
		return
	}
	ids := make([]NodeID, 0, len(ls.parked))
	for id := range ls.parked { //determinism:unordered sorted below
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		pf := ls.parked[id]
		if ready(pf) {
			delete(ls.parked, id)
			r.sendRef(id, pf.ref, r.fetchResponse(pf.req))
		}
	}
}

func (r *Raft) tickLeader() {
	if r.now >= r.checkQuorumDeadline() {
		// Check-quorum: without fetches from a majority this leader may be
		// cut off, and a new leader may already be elected; stop serving.
		r.resign()
		return
	}
	r.releaseParked(func(pf parkedFetch) bool { return r.now >= pf.deadline })
	ls := r.leader
	if r.now >= ls.beginRetryAt {
		for _, v := range r.otherVoters() {
			if !ls.replicas[v].acked {
				r.send(v, BeginQuorumEpochRequest{Epoch: r.state.Epoch, LeaderID: r.id})
			}
		}
		ls.beginRetryAt = r.now + r.cfg.RequestTimeout
	}
}

// checkQuorumDeadline is when the leader resigns unless more voters fetch:
// the time the majority-th most recently heard voter (counting itself as
// heard now) goes silent for the check-quorum timeout.
func (r *Raft) checkQuorumDeadline() time.Duration {
	need := r.majority() - 1
	if need == 0 {
		return never
	}
	times := make([]time.Duration, 0, len(r.cfg.Voters))
	for _, v := range r.otherVoters() {
		times = append(times, r.leader.replicas[v].lastFetch)
	}
	slices.Sort(times)
	slices.Reverse(times)
	return times[need-1] + r.cfg.checkQuorumTimeout()
}

func (r *Raft) leaderDeadline() time.Duration {
	ls := r.leader
	d := r.checkQuorumDeadline()
	for _, pf := range ls.parked { //determinism:unordered min is order-independent
		d = min(d, pf.deadline)
	}
	for _, v := range r.otherVoters() {
		if !ls.replicas[v].acked {
			d = min(d, ls.beginRetryAt)
			break
		}
	}
	return d
}
