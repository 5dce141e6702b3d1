package replica

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/log"
)

// # Damage found while the broker runs
//
// The start-up scrub finds damage at rest before the broker registers
// (scrub.go): the log drops it and the broker registers as one whose disk
// was replaced, so that the controller forgets its places first. Damage
// can also show later, in one partition of a running broker: a page of a
// segment the disk can no longer read (a latent sector error), a batch a
// leader is about to send a follower that fails its CRC (ReplicaFetch
// verifies what it serves), a misdirected batch the scrub could not judge
// that Open, the producer-state rebuild or a read then refuses (txn seeds
// 45, 256, 299, 260). log.DamagedSegment names the damaged segment. The
// replica then:
//
//  1. goes offline at once, serving nothing more of that log (no reopen:
//     the reopened log would serve the damage again);
//  2. gives up its places in that partition through the controller
//     (core/controller damage.go: an AlterPartition with
//     LeaderRecoveryState RECOVERING and an empty ISR), whoever leads it:
//     it leaves the ISR and the ELR, a leader is replaced, and the answer
//     names a partition epoch that fences any ISR change its earlier
//     fetches vouched for;
//  3. once the image shows that epoch and it no longer counts as holding
//     every committed record, drops the damaged segment and everything
//     after it (log.MarkDamaged, obeyed by the reopen, as for the scrub's
//     damage) and reopens: a follower fetches the range again from its
//     leader; a damaged last ISR member that stayed to recover compares
//     its shortened log with the LastKnownELR's (recovery.go), so the
//     longest log, which holds every committed record any of them held,
//     leads; no unclean election.
//
// A damaged leader that is the ISR's last member, with no eligible or
// last known eligible replica, first asks for a follower it knew caught up
// with its high watermark to join the ISR (handOffFirst): that follower
// holds every committed record, and giving up the places then hands it
// the leadership.
//
// A replica counts while it is in the ELR, or in the ISR but as a last
// member listed in the LastKnownELR with another member that is still a
// replica (the recovery then compares logs). A last member listed alone
// (the controller knows no one else who holds the committed records)
// keeps its damage and stays offline: dropping it would lose records a
// client was told were committed. An operator who accepts the loss runs
// ElectLeaders of type unclean, which clears the LastKnownELR (or the topic
// allows unclean election, and the controller never lists it): the replica
// then drops the damage and leads with what it has, counted as unclean.
// A restart does not wait: the start-up scrub drops damage it finds before
// the controller is asked (scrub.go).

// damageState is a damaged log's way back (see above).
type damageState struct {
	// from is the base offset of the damaged segment: the drop starts
	// there. err is what was found.
	from int64
	err  error
	// fence is the partition epoch the controller answered the request
	// to give up this replica's places with, -1 until answered; asking
	// is set while it is in flight.
	fence  int32
	asking bool
	// marked is set once the damage marker is written: the reopen drops
	// the range.
	marked bool
	// successors are the followers a damaged leader, the ISR's last
	// member, knew to hold every committed record when it found the
	// damage (caughtUpFollowers); tried is set once it asked the
	// controller to add the first to the ISR (handOffFirst).
	successors []int32
	tried      bool
}

// ReportDamage takes the partition's damage path when err, from a read of
// its log l by another component (a coordinator shard's load), shows l
// damaged (log.DamagedSegment); it reports whether it did. An error from a
// log the partition no longer holds is not reported.
func (p *Partition) ReportDamage(l *log.Log, err error) bool {
	from, ok := log.DamagedSegment(err)
	if !ok || l == nil || p.l != l {
		return false
	}
	p.damaged(from, err)
	return true
}

// damaged takes the partition offline for damage in its log at the
// segment based at from, found as err, and starts its way back.
func (p *Partition) damaged(from int64, err error) {
	if p.state == stateClosed {
		return
	}
	p.m.metrics.damagedLogs.Inc()
	if d := p.damage; d != nil && !d.marked {
		d.from = min(d.from, from)
	} else {
		p.damage = &damageState{from: from, err: err, fence: -1, successors: p.caughtUpFollowers()}
	}
	p.log.Error("DAMAGED partition log found while running: it goes offline, gives up its places through the controller, then drops the damaged segment and everything after it and fetches them again",
		"from_offset", from, "err", err)
	p.releaseOpenSlot()
	p.stopReopen()
	p.state, p.failure = stateFailed, fmt.Errorf("damaged log: %w", err)
	p.closeLog()
	p.failAcks(fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err))
	p.wake()
	p.releaseHeld()
	p.resolveDamage()
}

// resolveDamage takes the next step of a damaged log's way back: ask the
// controller, or, once the image allows it, drop the damage and reopen.
// It runs again at every image (update) and answer.
func (p *Partition) resolveDamage() {
	d := p.damage
	if d == nil || d.marked || d.asking || p.state == stateClosed || p.m.closed {
		return
	}
	if d.fence >= 0 && p.partitionEpoch >= d.fence {
		if p.mayDropDamage() {
			p.dropDamage(d)
			return
		}
		if p.countsAsInSync() {
			d.fence = -1 // counted again (never expected): ask again
		}
	}
	if d.fence < 0 {
		if p.handOffFirst(d) {
			return
		}
		p.giveUpPlaces(d)
	}
}

// caughtUpFollowers returns the followers whose last fetch in this
// leadership reached the high watermark and this leadership's first
// offset (maybeExpandISR's rule): they hold every committed record. For a
// leader whose log is still open, before it closes for damage.
func (p *Partition) caughtUpFollowers() []int32 {
	if !p.leads() || p.l == nil || p.state != stateOnline {
		return nil
	}
	var out []int32
	for _, f := range p.followers {
		if f.logEnd >= 0 && f.logEnd >= p.l.HighWatermark() && f.logEnd >= p.leaderEpochStart() &&
			slices.Contains(p.replicas, f.id) && !slices.Contains(p.isr, f.id) {
			out = append(out, f.id)
		}
	}
	return out
}

// handOffFirst covers a damaged leader that is the ISR's last member with
// no other replica the controller knows to hold the committed records
// (no ELR, no LastKnownELR peer), while a follower had caught up with its
// high watermark (its ISR expansion may even have been in flight: the
// request giving up this replica's places would fence it). It first asks
// the controller to add that follower to the ISR, with the usual ISR
// change, so that giving up its places then hands the leadership to a
// replica holding every committed record rather than waiting for an
// operator. It reports whether it sent that request; refused, it is not
// asked again.
func (p *Partition) handOffFirst(d *damageState) bool {
	self := p.m.cfg.NodeID
	if d.tried || len(d.successors) == 0 || !p.leads() || len(p.isr) != 1 || p.isr[0] != self || len(p.elr) > 0 ||
		slices.ContainsFunc(p.lastKnownELR, func(r int32) bool { return r != self && slices.Contains(p.replicas, r) }) ||
		p.m.cfg.AlterPartition == nil || !p.m.serving || p.m.cfg.BrokerEpoch == nil || p.m.cfg.BrokerEpoch() < 0 {
		return false
	}
	isr := []int32{self, d.successors[0]}
	slices.Sort(isr)
	d.asking, d.tried = true, true
	p.log.Warn("damaged log: adding a follower that holds every committed record to the ISR before giving up this replica's places",
		"follower", d.successors[0], "isr", p.isr, "new_isr", isr)
	p.sendAlterPartition(isr, leaderRecoveryRecovered, func(kmsg.Response, error) {
		if p.damage != d {
			return
		}
		// Accepted or not, the controller has decided it when it
		// answers: giving up the places comes next, on its image.
		d.asking = false
		p.resolveDamage()
	})
	return true
}

// mayDropDamage reports whether the image lets this replica drop records:
// it is in neither the ISR nor the ELR, or it is the ISR's last member and
// either another member of the LastKnownELR that is still a replica will
// compare logs with it, or it is not listed there (the controller, or an
// operator's unclean election, accepted what it loses).
func (p *Partition) mayDropDamage() bool {
	self := p.m.cfg.NodeID
	if slices.Contains(p.elr, self) {
		return false
	}
	if !slices.Contains(p.isr, self) {
		return true
	}
	if len(p.isr) > 1 {
		return false
	}
	if !slices.Contains(p.lastKnownELR, self) {
		return true
	}
	return slices.ContainsFunc(p.lastKnownELR, func(r int32) bool { return r != self && slices.Contains(p.replicas, r) })
}

// countsAsInSync reports whether the image counts this replica as holding
// every committed record in a way giving up its places would end: in the
// ELR, or in an ISR with other members.
func (p *Partition) countsAsInSync() bool {
	self := p.m.cfg.NodeID
	return slices.Contains(p.elr, self) || slices.Contains(p.isr, self) && len(p.isr) > 1
}

// giveUpPlaces asks the controller to take this replica out of the
// partition's ISR and ELR (core/controller damage.go), and again every
// alterISRRetryBackoff until it answers.
func (p *Partition) giveUpPlaces(d *damageState) {
	retry := func() {
		p.m.e.AfterFunc(alterISRRetryBackoff, func() {
			if p.damage == d {
				p.resolveDamage()
			}
		})
	}
	if p.m.cfg.AlterPartition == nil || !p.m.serving || p.m.cfg.BrokerEpoch == nil || p.m.cfg.BrokerEpoch() < 0 {
		if p.m.cfg.AlterPartition != nil {
			retry()
		}
		return
	}
	d.asking = true
	p.log.Warn("damaged log: giving up this replica's places in the partition", "isr", p.isr, "leader", p.leader,
		"leader_epoch", p.leaderEpoch, "partition_epoch", p.partitionEpoch)
	p.sendAlterPartition([]int32{}, leaderRecoveryRecovering, func(r kmsg.Response, err error) {
		if p.damage != d {
			return
		}
		d.asking = false
		code := int16(-1)
		resp, ok := r.(*kmsg.AlterPartitionResponse)
		if err == nil && ok {
			code = resp.ErrorCode
			if code == 0 && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
				code = resp.Topics[0].Partitions[0].ErrorCode
				if code == 0 {
					d.fence = resp.Topics[0].Partitions[0].PartitionEpoch
					p.resolveDamage()
					return
				}
			}
		}
		p.log.Info("giving up the damaged replica's places failed; asking again", "err", err, "code", kerr.ErrorForCode(code))
		retry()
	})
}

// AlterPartition's LeaderRecoveryState: RECOVERED in an ISR change,
// RECOVERING in a damaged replica's request (core/controller damage.go).
const (
	leaderRecoveryRecovered  int8 = 0
	leaderRecoveryRecovering int8 = 1
)

// dropDamage leaves the damage marker and reopens the log, which drops
// the damaged segment and everything after it.
func (p *Partition) dropDamage(d *damageState) {
	if err := log.MarkDamaged(p.m.e, p.dir, d.from); err != nil {
		p.log.Error("cannot mark the damaged log to drop; retrying", "from_offset", d.from, "err", err)
		p.m.e.AfterFunc(p.reopenBackoff(), func() {
			if p.damage == d {
				p.resolveDamage()
			}
		})
		return
	}
	d.marked = true
	p.log.Warn("damaged log: this replica no longer counts as in sync; dropping the damaged segment and everything after it, to fetch them again",
		"from_offset", d.from, "isr", p.isr, "last_known_elr", p.lastKnownELR, "leader", p.leader)
	p.reopen = p.m.e.AfterFunc(p.reopenBackoff(), p.open)
}
