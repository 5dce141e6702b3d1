package replica

import (
	"cmp"
	"slices"
)

// # Recovery: a forgotten leader compares logs before it serves
//
// A broker whose data directory may have lost records (its start-up scrub
// found damage, or a torn tail it cannot tell from damage; a replaced
// disk) registers with PreviousBrokerEpoch -1, and the controller forgets
// it as an eligible leader: it leaves every ELR and joins the partition's
// LastKnownELR (controller.forgetReplicas). When it is the ISR's last
// member and no eligible replica is left, it stays, listed in the
// LastKnownELR with the others forgotten before it; leading, it is
// recovering: its log may be the one cut short, while another member of
// the LastKnownELR, whose scrub only found a torn tail, holds every
// committed record (replicated seeds 573 and 771 once partition .log
// files were declared survivable: the damaged replica was elected with
// its cut log, and a follower holding every committed record truncated
// to it).
//
// So a recovering leader appends nothing and lets no follower truncate:
// a fetch from a member of the LastKnownELR is its claim, the epoch of
// its last batch and its log end (a follower's fetch offset is its durable
// log end), answered with no batches and no diverging epoch. Once every
// other member that is still a replica has claimed in this leadership,
// the longest log wins, by last epoch and then log end (Kafka's unclean
// recovery rule, KIP-966): two logs that agree on an epoch agree on
// everything before its end, and a committed record is in every log that
// holds a later epoch or more of the same one, so the winner holds every
// committed record any member held. A leader whose own log wins (ties go
// to it) proposes its ISR of one unchanged, which the controller reads as
// recovered (it clears the LastKnownELR); otherwise it proposes an ISR of
// the winner alone, which the controller reads as a hand-off: the winner
// leads in the next epoch, and this broker then follows it and truncates
// to it as any diverged follower. The request is resent every
// alterISRRetryBackoff until the image shows the recovery done. Claims
// hold for one partition epoch: a member that claimed and then came back
// with lost data makes the controller bump the epoch, which voids the
// claims and fences a hand-off sent on them.
//
// A member that never comes back keeps the partition offline (Kafka's
// balanced unclean recovery waits for the same); an operator who accepts
// the loss enables unclean.leader.election.enable, whose election clears
// the LastKnownELR.

// recovering reports whether this broker leads the partition as a
// forgotten replica that must compare its log with the LastKnownELR's.
func (p *Partition) recovering() bool {
	return p.leads() && slices.Contains(p.lastKnownELR, p.m.cfg.NodeID)
}

// logClaim is a replica's log end for the recovery comparison.
type logClaim struct {
	epoch  int32
	end    int64
	broker int32
}

// longer reports whether a is a longer log than b: a later last epoch,
// or the same one ending further.
func (a logClaim) longer(b logClaim) bool {
	return cmp.Or(cmp.Compare(a.epoch, b.epoch), cmp.Compare(a.end, b.end)) > 0
}

// noteClaim records a fetch from follower f as its claim, and finishes
// the recovery if every claim is in.
func (p *Partition) noteClaim(f *follower, lastFetchedEpoch int32, fetchOffset int64) {
	if !slices.Contains(p.lastKnownELR, f.id) {
		return
	}
	f.claim = logClaim{epoch: lastFetchedEpoch, end: fetchOffset, broker: f.id}
	f.claimed = true
	p.finishRecovery()
}

// voidClaims forgets every claim: the partition changed (a new partition
// epoch), and the controller voids claims so when a member that may have
// claimed registers again having lost data (controller.forgetReplicas).
func (p *Partition) voidClaims() {
	for i := range p.followers {
		p.followers[i].claimed = false
	}
}

// recoveryWinner returns the longest log among this leader's and the
// claims of the LastKnownELR's other members that are still replicas, in
// LastKnownELR order, ties going to this leader; false while a claim is
// missing.
func (p *Partition) recoveryWinner() (logClaim, bool) {
	best := logClaim{epoch: p.l.LatestEpoch(), end: p.l.LogEndOffset(), broker: p.m.cfg.NodeID}
	for _, id := range p.lastKnownELR {
		if id == p.m.cfg.NodeID || !slices.Contains(p.replicas, id) {
			continue
		}
		f := p.follower(id)
		if f == nil || !f.claimed {
			return logClaim{}, false
		}
		if f.claim.longer(best) {
			best = f.claim
		}
	}
	return best, true
}

// finishRecovery proposes the recovery's outcome once every claim is in
// (see above), and again every alterISRRetryBackoff while the image still
// shows this leader recovering in the same epochs.
func (p *Partition) finishRecovery() {
	if !p.recovering() || p.l == nil || p.state != stateOnline || !p.canAlterISR() {
		return
	}
	best, ok := p.recoveryWinner()
	if !ok {
		return
	}
	isr := []int32{best.broker}
	if best.broker == p.m.cfg.NodeID {
		p.log.Info("recovered: this leader's log is the longest of the last known ELR",
			"last_known_elr", p.lastKnownELR, "last_epoch", best.epoch, "log_end", best.end)
		isr = slices.Clone(p.isr)
	} else {
		p.log.Warn("recovering: a member of the last known ELR holds a longer log; handing the leadership to it",
			"to", best.broker, "its_last_epoch", best.epoch, "its_log_end", best.end,
			"last_epoch", p.l.LatestEpoch(), "log_end", p.l.LogEndOffset())
	}
	p.alterISR(isr)
	leaderEpoch, partitionEpoch := p.leaderEpoch, p.partitionEpoch
	p.m.e.AfterFunc(alterISRRetryBackoff, func() {
		if p.leaderEpoch == leaderEpoch && p.partitionEpoch == partitionEpoch && p.pendingISR != nil && slices.Equal(p.pendingISR, isr) {
			p.pendingISR, p.pendingEpoch = nil, -1
			p.finishRecovery()
		}
	})
}
