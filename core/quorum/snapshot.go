package quorum

// This file is snapshots (KIP-630): registering the state machine's
// snapshots, serving FetchSnapshot, and pulling and installing a leader's
// snapshot on a follower.

import "fmt"

// snapshotFetch is a follower's progress pulling the leader's snapshot.
type snapshotFetch struct {
	id       SnapshotID
	position int64
}

// SnapshotTaken tells the Raft that the state machine wrote snapshot id,
// covering everything it applied below id.EndOffset, and that the snapshot
// is durable in the Log's store. id.EndOffset must be the end of a batch of
// epoch id.Epoch (the state machine applies whole batches). It becomes the
// snapshot that fetchers behind the log start are sent.
//
// Retention: the log is trimmed to the previous snapshot, not to this one,
// so it keeps one snapshot interval of batches behind the latest snapshot:
// a replica less than an interval behind catches up from the log instead of
// being sent a snapshot that is replaced while it downloads it.
func (r *Raft) SnapshotTaken(id SnapshotID) error {
	if id.EndOffset > r.applied {
		return fmt.Errorf("%w: %s is past the applied offset %d", ErrInvalidSnapshot, id, r.applied)
	}
	prev, hasPrev := r.log.LatestSnapshot()
	if hasPrev && id.EndOffset <= prev.EndOffset {
		return nil // not newer than the latest
	}
	if id.EndOffset <= r.log.StartOffset() {
		return fmt.Errorf("%w: %s is below the log start %d", ErrInvalidSnapshot, id, r.log.StartOffset())
	}
	// A snapshot ends on a batch end: the state machine applies whole
	// batches, and the log keeps or drops a batch whole around it.
	if b := r.log.Batches(r.log.FloorBatchBoundary(id.EndOffset-1), 1)[0]; b.EndOffset() != id.EndOffset || b.Epoch != id.Epoch {
		return fmt.Errorf("%w: %s does not end the log's batch %s", ErrInvalidSnapshot, id, b)
	}
	if err := r.log.InstallSnapshot(id); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	if hasPrev && prev.EndOffset > r.log.StartOffset() {
		r.log.TrimPrefix(prev.EndOffset)
	}
	r.appliedSinceSnap, r.snapshotRequested = 0, false
	return nil
}

func (r *Raft) sendFetchSnapshot() {
	f := r.fetcher
	r.send(f.target, FetchSnapshotRequest{
		Epoch:     r.state.Epoch,
		ReplicaID: r.id,
		Snapshot:  f.snapshot.id,
		Position:  f.snapshot.position,
		MaxBytes:  int32(min(r.cfg.SnapshotChunkBytes, 1<<31-1)),
	})
	f.inFlight, f.sentAt = true, r.now
}

func (r *Raft) handleFetchSnapshotRequest(from NodeID, req FetchSnapshotRequest) {
	respond := func(resp FetchSnapshotResponse) {
		resp.Epoch, resp.LeaderID, resp.Snapshot = r.state.Epoch, r.leaderHint(), req.Snapshot
		r.reply(from, resp)
	}
	switch {
	case req.ReplicaID != from || req.Position < 0:
		respond(FetchSnapshotResponse{Error: ErrInvalidRequest})
		return
	case r.role != RoleLeader:
		respond(FetchSnapshotResponse{Error: ErrNotLeaderOrFollower})
		return
	case req.Epoch < r.state.Epoch:
		respond(FetchSnapshotResponse{Error: ErrFencedLeaderEpoch})
		return
	case req.Epoch > r.state.Epoch:
		respond(FetchSnapshotResponse{Error: ErrUnknownLeaderEpoch})
		return
	}
	p := r.trackReplica(from)
	p.lastFetch, p.acked = r.now, true
	if latest, ok := r.log.LatestSnapshot(); !ok || latest != req.Snapshot {
		respond(FetchSnapshotResponse{Error: ErrSnapshotNotFound})
		return
	}
	maxBytes := r.cfg.SnapshotChunkBytes
	if req.MaxBytes > 0 {
		maxBytes = min(maxBytes, int(req.MaxBytes))
	}
	data, size, err := r.log.ReadSnapshot(req.Snapshot, req.Position, maxBytes)
	if err != nil || req.Position > size {
		respond(FetchSnapshotResponse{Error: ErrPositionOutOfRange, Size: size})
		return
	}
	respond(FetchSnapshotResponse{Size: size, Position: req.Position, Data: data})
}

func (r *Raft) handleFetchSnapshotResponse(from NodeID, resp FetchSnapshotResponse) {
	f := r.fetcher
	if r.observeEpoch(resp.Epoch, resp.LeaderID) || f == nil || f.snapshot == nil ||
		from != f.target || r.role != RoleFollower || resp.Epoch < r.state.Epoch {
		return
	}
	s := f.snapshot
	if resp.Snapshot != s.id || (resp.Error == ErrNone && resp.Position != s.position) {
		return // answers another chunk: stale or duplicated
	}
	f.inFlight = false
	if resp.Error != ErrNone {
		// The leader moved on (a newer snapshot, or no longer leader):
		// start over from a Fetch, which names the snapshot to get.
		f.snapshot = nil
		f.retryAt = r.now + r.cfg.RetryBackoff
		return
	}
	r.markLeaderContact()
	next := s.position + int64(len(resp.Data))
	if next > resp.Size || (len(resp.Data) == 0 && next < resp.Size) {
		f.snapshot = nil
		f.retryAt = r.now + r.cfg.RetryBackoff
		return
	}
	if err := r.log.WriteSnapshotChunk(s.id, s.position, resp.Data); err != nil {
		f.snapshot = nil
		f.retryAt = r.now + r.cfg.RetryBackoff
		return
	}
	s.position = next
	if next == resp.Size {
		f.snapshot = nil
		r.installFetchedSnapshot(s.id)
	}
	r.maybeSendFetch()
}

// installFetchedSnapshot makes a fetched snapshot the latest; the log
// restarts after it unless it already holds the batch the snapshot ends
// with. The next fetch waits for the install to be synced, since its offset
// acknowledges the snapshot's records.
func (r *Raft) installFetchedSnapshot(id SnapshotID) {
	oldStart := r.log.StartOffset()
	if latest, ok := r.log.LatestSnapshot(); ok && id.EndOffset <= latest.EndOffset {
		return
	}
	if err := r.log.InstallSnapshot(id); err != nil {
		r.fetcher.retryAt = r.now + r.cfg.RetryBackoff
		return
	}
	r.clampDurable(oldStart)
	r.syncPending = true
	if id.EndOffset > r.highWatermark {
		r.setHighWatermark(id.EndOffset)
	}
	if id.EndOffset > r.applied {
		r.loadSnapshot = true
	}
	r.appliedSinceSnap, r.snapshotRequested = 0, false
}
