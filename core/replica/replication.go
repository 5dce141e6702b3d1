package replica

import (
	"fmt"
	"slices"
	"time"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/plant"
)

// # Replication, leader side
//
// Followers fetch from the leader as Kafka replicas do (Fetch with their
// replica id, the last epoch they fetched, the leader epoch they know).
// The leader answers each with the batches from the fetch offset up to its
// log end, its high watermark and log start offset, or, when the fetch's
// last fetched epoch does not end where the follower's log does in the
// leader's log, the diverging epoch and its end offset (Fetch v12+,
// KIP-595's truncation): the follower truncates there and fetches again.
//
// A follower fetches again only once what it appended is durable, so a
// fetch offset is the follower's durable log end; and a fetch that did not
// diverge proves the follower's log matches the leader's below it (two
// logs that agree on the epoch of an offset agree on everything before
// it). The leader therefore moves the high watermark to the smallest of
// its own durable offset (its log end in page-cache mode) and the fetch
// offsets of the ISR's other members: a record below the high watermark
// is fsynced on every in-sync replica, and acks=all completes when the
// high watermark passes the batch. A member of the ISR that has not
// fetched in this leadership holds the high watermark where it is.

// follower is what the leader knows of one other replica.
type follower struct {
	id int32
	// logEnd is the offset of its last fetch that did not diverge: its
	// durable log end, matching this leader's log below it; -1 until it
	// fetched in this leadership.
	logEnd int64
	// lastFetch is when it last fetched; leaderEndAtFetch the leader's
	// log end then. lastCaughtUp is the last time its log end reached the
	// leader's (Kafka's lastCaughtUpTimeMs): at a fetch from the leader's
	// log end, or at a fetch from the log end the leader had at the
	// previous fetch, which means it was caught up then.
	lastFetch, lastCaughtUp time.Duration
	leaderEndAtFetch        int64
	// sentEnd is the leader's log end at the last fetch that returned
	// bytes: the follower may hold anything below it (see lostTail).
	sentEnd int64
	// claim is its log end as its last fetch in this leadership told a
	// recovering leader (claimed: it fetched; recovery.go).
	claim   logClaim
	claimed bool
}

// resetFollowers starts a leadership: every other replica is unknown, and
// the ISR's members count as caught up now (Kafka's makeLeader).
func (p *Partition) resetFollowers() {
	p.followers = p.followers[:0]
	p.syncFollowers()
}

// syncFollowers follows a change of the replicas within a leadership:
// replicas that stay keep what the leader knows of them, new ones start
// unknown, removed ones are forgotten.
func (p *Partition) syncFollowers() {
	now := p.m.e.Monotonic()
	var next []follower
	for _, id := range p.replicas {
		if id == p.m.cfg.NodeID {
			continue
		}
		if f := p.follower(id); f != nil {
			next = append(next, *f)
		} else {
			next = append(next, follower{id: id, logEnd: -1, lastCaughtUp: now, leaderEndAtFetch: -1, sentEnd: -1})
		}
	}
	slices.SortFunc(next, func(a, b follower) int { return int(a.id) - int(b.id) })
	p.followers = next
}

// follower returns the state of replica id, or nil.
func (p *Partition) follower(id int32) *follower {
	i, ok := slices.BinarySearchFunc(p.followers, id, func(f follower, id int32) int { return int(f.id) - int(id) })
	if !ok {
		return nil
	}
	return &p.followers[i]
}

// leads reports whether this broker leads the partition per the image.
func (p *Partition) leads() bool { return p.leader == p.m.cfg.NodeID }

// replicatedHighWatermark is the high watermark the ISR allows, given the
// leader's own bound own: the smallest of own and the log ends of the
// ISR's other members, or -1 while one of them has not fetched yet.
func (p *Partition) replicatedHighWatermark(own int64) int64 {
	if plant.Is(plant.HighWatermarkFromLogEnd) {
		return p.l.LogEndOffset() // planted: neither durable nor replicated
	}
	if len(p.isr) < p.cfg.minInsyncReplicas || p.recovering() {
		// KIP-966: with the ISR below min.insync.replicas the high
		// watermark holds, so that the replicas that left the ISR (the
		// controller's eligible leader replicas) hold every committed
		// record and may lead. A recovering leader holds it too: its
		// log may be the one cut short (recovery.go).
		return -1
	}
	hw := own
	for _, id := range p.isrForHighWatermark() {
		if id == p.m.cfg.NodeID {
			continue
		}
		f := p.follower(id)
		if f == nil || f.logEnd < 0 {
			return -1
		}
		hw = min(hw, f.logEnd)
	}
	return hw
}

// DivergingEpoch is the leader's answer to a fetch whose last fetched
// epoch does not match its log: the follower must truncate to at most
// EndOffset, the end of Epoch in the leader's log.
type DivergingEpoch struct {
	Epoch     int32
	EndOffset int64
}

// ReplicaFetchResult is a replica fetch's answer besides the records.
type ReplicaFetchResult struct {
	// Read holds the batches (a region to Release when not empty).
	Read log.ReadResult
	// HighWatermark and LogStartOffset are the leader's after the fetch.
	HighWatermark, LogStartOffset int64
	// Diverging is set when the follower must truncate first.
	Diverging *DivergingEpoch
}

// ReplicaFetch serves a follower's fetch as leader: replica is the
// follower's broker id, fetchOffset its log end, lastFetchedEpoch the
// epoch of its last batch (-1: none, or unknown), currentLeaderEpoch the
// leader epoch it knows (KIP-320; -1 skips the check). The batches come
// from fetchOffset up to the leader's log end, fsynced or not (see
// lostTail), not the high watermark. A fetch that does not diverge
// records the follower's log end (see above) and may move the high
// watermark.
func (p *Partition) ReplicaFetch(replica int32, fetchOffset int64, lastFetchedEpoch, currentLeaderEpoch int32, maxBytes int) (ReplicaFetchResult, error) {
	res := ReplicaFetchResult{Read: log.ReadResult{FirstOffset: -1}, HighWatermark: -1, LogStartOffset: -1}
	if err := p.servableToReplicas(); err != nil {
		return res, err
	}
	if err := p.checkEpoch(currentLeaderEpoch); err != nil {
		return res, err
	}
	f := p.follower(replica)
	if f == nil {
		// A fetch from a broker that is not a replica here (a follower
		// a reassignment adds, whose image is ahead of ours, or a forged
		// id) is answered as Kafka's Partition.followerReplicaOrThrow
		// answers it: UNKNOWN_LEADER_EPOCH when the fetch names our
		// leader epoch (the tuple of replica and epoch is not known yet,
		// so the follower retries), NOT_LEADER_OR_FOLLOWER when it names
		// none (an old version; the broker then names no current
		// leader, which would be this broker itself). Nothing about the
		// partition changes: this is not a leadership loss.
		if currentLeaderEpoch >= 0 {
			return res, fmt.Errorf("%w: broker %d is not a replica of %s in leader epoch %d (replicas %v)",
				ErrUnknownLeaderEpoch, replica, p.dir, p.leaderEpoch, p.replicas)
		}
		return res, fmt.Errorf("%w: broker %d fetching %s (replicas %v)", ErrNotReplica, replica, p.dir, p.replicas)
	}
	l := p.l
	leo := l.LogEndOffset()
	res.HighWatermark, res.LogStartOffset = l.HighWatermark(), l.LogStartOffset()
	if p.recovering() {
		// A claim, not a fetch: nothing is sent and nothing truncated
		// until the longest log is known (recovery.go).
		p.noteClaim(f, lastFetchedEpoch, fetchOffset)
		return res, nil
	}
	if lastFetchedEpoch >= 0 && fetchOffset > l.LogStartOffset() {
		// Our leadership's epoch starts at our log end if we have not
		// appended in it yet (Kafka writes it to the epoch cache when it
		// becomes leader): an epoch newer than our latest ends there.
		epoch, end := l.LatestEpoch(), leo
		if lastFetchedEpoch <= epoch {
			epoch, end = l.EndOffsetForEpoch(lastFetchedEpoch)
		}
		if epoch != lastFetchedEpoch || end < fetchOffset {
			// The follower's log does not end where ours does for its
			// last epoch: it truncates to at most our end of that
			// epoch (or of the last epoch before it we know).
			res.Diverging = &DivergingEpoch{Epoch: epoch, EndOffset: end}
			if epoch < 0 {
				res.Diverging.EndOffset = l.LogStartOffset()
			}
			return res, nil
		}
	}
	if fetchOffset < l.LogStartOffset() || fetchOffset > leo {
		return res, fmt.Errorf("%w: %s replica fetch at %d, the log holds [%d, %d]", log.ErrOffsetOutOfRange, p.dir, fetchOffset, l.LogStartOffset(), leo)
	}
	now := p.m.e.Monotonic()
	switch {
	case fetchOffset >= leo:
		f.lastCaughtUp = now
	case f.leaderEndAtFetch >= 0 && fetchOffset >= f.leaderEndAtFetch:
		f.lastCaughtUp = max(f.lastCaughtUp, f.lastFetch)
	}
	f.logEnd, f.lastFetch, f.leaderEndAtFetch = fetchOffset, now, leo
	p.advanceHighWatermark()
	p.maybeExpandISR(f)
	res.HighWatermark = l.HighWatermark()
	read, err := l.Read(fetchOffset, maxBytes, leo)
	if err == nil {
		// What a follower copies must be what the producers wrote: a
		// damaged batch sent would be refused there for ever, and this
		// leader would never learn of the damage (damage.go).
		if p.m.verifyBuf, err = read.Verify(p.m.verifyBuf); err != nil {
			read.Release()
		}
	}
	if err != nil {
		if logFailed(err) {
			p.fail(err)
			err = fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err)
		}
		return res, err
	}
	if read.Size > 0 {
		f.sentEnd = max(f.sentEnd, leo)
	}
	res.Read = read
	return res, nil
}

// lostTail follows this leader's log reopening (after a failure), ending
// at end. Followers fetch up to the leader's log end, fsynced or not, so
// that the leader's and the followers' fsyncs of a batch run at once
// rather than one after the other (the acks=all latency). A log that fails
// reopens without what it had not fsynced: if a follower may have fetched
// past end, it holds, in this leader epoch, batches the leader lost, and
// were the leader to append again in this epoch, two histories would
// share it, which no diverging epoch can tell apart (replicated seed 107,
// when followers fetched only fsynced bytes to avoid this, and seed 479,
// when the leader made the followers truncate but a later leader did not
// know to). So the leader appends nothing more in this epoch and resigns
// (isr.go): the controller elects another in-sync replica, or this one
// again, in a new epoch, and the followers' extra batches end where the
// leader's epoch ends, as any other divergence. The high watermark never
// passed end: it counts the leader's own durable offset.
func (p *Partition) lostTail(end int64) {
	if !p.leads() || plant.Is(plant.FollowerKeepsLostTail) {
		return
	}
	for _, f := range p.followers {
		if f.sentEnd > end {
			p.log.Warn("the reopened log lost batches a follower may hold; resigning the leadership of this epoch",
				"follower", f.id, "sent_end", f.sentEnd, "log_end", end, "leader_epoch", p.leaderEpoch)
			p.resigning = true
			p.resign()
			return
		}
	}
}

// assertLeaderAppend holds before every append of this broker's own
// batches (produces, transaction markers): only the leader of the image's
// epoch appends, to an online log, and never while it resigns an epoch
// whose tail its log lost (lostTail): two histories would share the epoch.
func (p *Partition) assertLeaderAppend() {
	assert.That(p.leads() && p.state == stateOnline && p.l != nil && !p.resigning,
		"%s: appending as leader while leader %d (this broker %d), state %s, resigning %t",
		p.dir, p.leader, p.m.cfg.NodeID, p.state, p.resigning)
}

// pendingAck is an acks=all produce waiting for the high watermark to
// pass its batch.
type pendingAck struct {
	upto int64
	res  ProduceResult
	done func(ProduceResult)
}

// awaitHighWatermark answers res once the high watermark reaches upto
// (at once if it has), with NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR
// is below min.insync.replicas then.
func (p *Partition) awaitHighWatermark(upto int64, res ProduceResult, done func(ProduceResult)) {
	if plant.Is(plant.AckBeforeISR) {
		done(res) // planted: the followers may not have it
		return
	}
	p.acks = append(p.acks, pendingAck{upto: upto, res: res, done: done})
	p.completeAcks()
}

// completeAcks answers the acks=all produces the high watermark passed.
// With the ISR below min.insync.replicas the high watermark holds (see
// replicatedHighWatermark), so the waiting ones are answered at once with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND: appended, not committed, and not about
// to be (the producer retries; idempotence keeps the batch once).
func (p *Partition) completeAcks() {
	if len(p.acks) == 0 || p.l == nil {
		return
	}
	if len(p.isr) < p.cfg.minInsyncReplicas {
		p.failAcks(fmt.Errorf("%w: %s has %d in-sync replicas, min.insync.replicas is %d",
			ErrNotEnoughReplicasAfterAppend, p.dir, len(p.isr), p.cfg.minInsyncReplicas))
		return
	}
	hw := p.l.HighWatermark()
	keep := p.acks[:0]
	var ready []pendingAck
	for _, a := range p.acks {
		if a.upto <= hw {
			ready = append(ready, a)
		} else {
			keep = append(keep, a)
		}
	}
	clear(p.acks[len(keep):])
	p.acks = keep
	for _, a := range ready {
		a.done(a.res)
	}
}

// failAcks answers every waiting acks=all produce with err: the
// leadership ended or the log failed, and the batch may never be
// committed (the producer retries; idempotence keeps it once).
func (p *Partition) failAcks(err error) {
	acks := p.acks
	p.acks = nil
	for _, a := range acks {
		a.res.Err = err
		a.done(a.res)
	}
}
