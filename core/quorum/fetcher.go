package quorum

// This file is the follower side of replication: the Fetch loop of a
// follower (or of an observer looking for the leader), applying responses
// to the log, truncating on divergence. The fetch offset is always the log
// end, a batch boundary.

import "time"

// fetcherState drives the Fetch loop of a follower, or of an unattached
// observer looking for the leader.
type fetcherState struct {
	// target is the node fetched from: the leader, or during discovery the
	// voter asked last.
	target      NodeID
	discovering bool
	inFlight    bool
	sentAt      time.Duration
	// retryAt delays the next request after an error response.
	retryAt  time.Duration
	snapshot *snapshotFetch
}

// maybeSendFetch sends the next Fetch (or FetchSnapshot) when none is in
// flight, no backoff is pending and the log is durable up to its end: the
// fetch offset acknowledges everything below it.
func (r *Raft) maybeSendFetch() {
	f := r.fetcher
	if f == nil || f.inFlight || r.now < f.retryAt {
		return
	}
	if f.snapshot != nil {
		r.sendFetchSnapshot()
		return
	}
	end := r.log.EndOffset()
	if r.durableEnd < end.Offset {
		return
	}
	if f.discovering {
		f.target = r.cfg.Voters[r.discoveryNextVoter%len(r.cfg.Voters)]
		r.discoveryNextVoter++
		if f.target == r.id {
			return
		}
	}
	r.send(f.target, FetchRequest{
		Epoch:            r.state.Epoch,
		ReplicaID:        r.id,
		FetchOffset:      end.Offset,
		LastFetchedEpoch: end.Epoch,
		HighWatermark:    r.highWatermark,
		MaxBytes:         int32(min(r.cfg.MaxFetchBytes, 1<<31-1)),
		MaxWait:          r.cfg.FetchMaxWait,
	})
	f.inFlight, f.sentAt = true, r.now
}

func (r *Raft) tickFollower() {
	if r.now >= r.fetchDeadline {
		if r.voter {
			r.becomeProspective()
		} else {
			r.enterUnattached()
		}
		return
	}
	r.tickFetcher()
}

// tickFetcher retries a request that went unanswered for RequestTimeout, or
// one held back by a backoff.
func (r *Raft) tickFetcher() {
	f := r.fetcher
	if f.inFlight && r.now >= f.sentAt+r.cfg.RequestTimeout {
		f.inFlight = false
	}
	r.maybeSendFetch()
}

func (r *Raft) fetcherDeadline() time.Duration {
	f := r.fetcher
	switch {
	case f.inFlight:
		return f.sentAt + r.cfg.RequestTimeout
	case f.retryAt > r.now:
		return f.retryAt
	}
	return never
}

func (r *Raft) handleFetchResponse(from NodeID, resp FetchResponse) {
	f := r.fetcher
	if f == nil || from != f.target {
		// Not the node this one fetches from; only a newer epoch matters.
		r.observeEpoch(resp.Epoch, resp.LeaderID)
		return
	}
	if r.observeEpoch(resp.Epoch, resp.LeaderID) || resp.Epoch < r.state.Epoch {
		return
	}
	if resp.Error != ErrNone {
		if l := resp.LeaderID; l != NoNode && l != r.id && r.role != RoleFollower && r.isVoter(l) && r.mayFollow(r.state.Epoch, l) {
			// Discovery found the leader of this epoch.
			r.becomeFollower(r.state.Epoch, l)
			return
		}
		if r.role == RoleFollower && resp.Epoch == r.state.Epoch && resp.FetchEpoch == r.state.Epoch &&
			resp.LeaderID == NoNode && resp.Error == ErrNotLeaderOrFollower {
			// The leader, asked in this epoch, is no longer leading it, so
			// it stepped down and will never lead it again: stop following
			// it. (A request from an earlier epoch may have been answered
			// before it won this one, which proves nothing.)
			r.leaderGone = true
			r.enterUnattached()
			return
		}
		f.inFlight = false
		f.retryAt = r.now + r.cfg.RetryBackoff
		return
	}
	if r.role != RoleFollower {
		// Discovery reached the leader of this very epoch.
		if f.discovering && resp.LeaderID == from && r.mayFollow(r.state.Epoch, from) {
			r.becomeFollower(r.state.Epoch, from)
		}
		return
	}
	end := r.log.EndOffset()
	if resp.FetchOffset != end.Offset || resp.LastFetchedEpoch != end.Epoch || f.snapshot != nil {
		return // answers a position this log has left: stale or duplicated
	}
	f.inFlight = false
	if !r.validFetchAnswer(resp) {
		f.retryAt = r.now + r.cfg.RetryBackoff
		return
	}
	r.markLeaderContact()
	switch {
	case resp.DivergingEpoch != nil:
		r.truncate(r.divergenceCut(*resp.DivergingEpoch))
	case resp.Snapshot != nil:
		f.snapshot = &snapshotFetch{id: *resp.Snapshot}
	default:
		if len(resp.Batches) > 0 {
			r.appendBatches(resp.Batches)
		}
		// The leader's high watermark is a batch end of its log, which this
		// one now matches up to its end; the floor only guards against a
		// leader that is not so.
		if hw := min(resp.HighWatermark, r.log.EndOffset().Offset); hw > r.highWatermark {
			if hw = r.log.FloorBatchBoundary(hw); hw > r.highWatermark {
				r.setHighWatermark(hw)
			}
		}
	}
	r.maybeSendFetch()
}

// validFetchAnswer checks what a fetch response tells this follower to do
// before it touches the log. A leader's answer never asks to cut the log
// below this node's high watermark, nor to replace it with a snapshot
// that ends below it (everything committed is in the leader's log, at the
// same offsets and epochs); a response that does comes from a damaged or
// hostile peer and is dropped, as its batches are when they do not
// continue the log (validBatches).
func (r *Raft) validFetchAnswer(resp FetchResponse) bool {
	switch {
	case resp.DivergingEpoch != nil:
		return r.divergenceCut(*resp.DivergingEpoch) >= r.highWatermark
	case resp.Snapshot != nil:
		return resp.Snapshot.EndOffset >= r.highWatermark
	}
	return r.validBatches(resp.Batches, resp.Epoch)
}

// validBatches checks batches from the network before they touch the log:
// they continue it densely, none is empty or of an unknown kind, and their
// epochs do not decrease or pass the leader's.
func (r *Raft) validBatches(batches []Batch, leaderEpoch int32) bool {
	end := r.log.EndOffset()
	for _, b := range batches {
		if b.BaseOffset != end.Offset || len(b.Records) == 0 || b.Epoch < end.Epoch || b.Epoch > leaderEpoch ||
			(b.Kind != BatchData && b.Kind != BatchLeaderChange) {
			return false
		}
		end = b.End()
	}
	return true
}

// divergenceCut is where the log diverges from the leader's, given the
// leader's diverging epoch and its end offset (KRaft's
// truncateToEndOffset): the batch boundary to truncate to. Both logs hold
// the batches of an epoch as copies of its leader's, so the cut falls on a
// batch boundary of this log; the floor only guards against a leader that
// is not so, and a batch that straddles the cut goes whole. The cut is
// never below the log start.
func (r *Raft) divergenceCut(d OffsetAndEpoch) int64 {
	local, ok := r.log.EndOffsetForEpoch(d.Epoch)
	var to int64
	switch {
	case !ok:
		to = r.log.StartOffset()
	case local.Epoch == d.Epoch:
		to = min(local.Offset, d.Offset)
	default:
		to = local.Offset
	}
	return r.log.FloorBatchBoundary(max(to, r.log.StartOffset()))
}
