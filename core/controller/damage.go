package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// # A replica whose log is damaged gives up its places
//
// A broker that finds one of its partition logs damaged while it runs (a
// page it cannot read, a batch that fails its checks: core/replica
// damage.go) must not serve the damage nor be elected with it, and it may
// drop the damaged range and fetch it again only once no election counts
// it as holding every committed record. The start-up scrub does this for
// a whole broker (PreviousBrokerEpoch -1 makes the controller forget its
// places: forgetReplicas); for one partition of a running broker, the
// replica sends an AlterPartition for that partition with
// LeaderRecoveryState RECOVERING (1) and an empty ISR, whoever leads it:
// "my log of this partition needs recovering". Kafka's controller refuses
// both (a leader recovery state a broker may not set, an empty ISR);
// Strata's refused the state before, so no request of another shape
// changes meaning. The controller applies forgetReplicas' rules to that
// partition alone, in one PartitionChangeRecord, and always writes one:
// the partition epoch it bumps fences any ISR change in flight that the
// replica's earlier fetches vouched for (a leader adding it back), and
// voids the claims a recovering leader collected. The replica drops its
// damage once the image shows that epoch and it no longer counts.
//
//   - Outside the ISR, it leaves the ELR; from the ELR it joins the
//     LastKnownELR (it held every committed record once).
//   - In an ISR with other members, it leaves it; if the ISR falls below
//     min.insync.replicas, where it would have joined the ELR, it joins
//     the LastKnownELR instead. A leader is replaced by an election among
//     the rest (it is not acceptable), as a resignation is.
//   - As the ISR's last member, it is replaced by the first eligible
//     leader replica if there is one (which holds every committed record).
//     Else, if another member of the LastKnownELR is still a replica, it
//     stays, joins the LastKnownELR and leads in a new leader epoch: it
//     recovers (core/replica recovery.go), comparing its log, once it has
//     dropped the damage, with the others', and the longest leads. Else no
//     one else is known to hold the committed records: it stays too, and
//     joins the LastKnownELR alone, so that its replica waits, offline,
//     for an operator (an ElectLeaders of type unclean clears the
//     LastKnownELR: the replica then drops the damage and leads with what
//     it has, counted as unclean); a topic that allows unclean election
//     skips the wait.
//
// A new leader epoch whenever the damaged replica goes on leading: its log
// will end before batches its followers copied in the old epoch, which
// must then diverge (as core/replica's lostTail resignation ensures).

// leaderRecoveryRecovering is AlterPartition's LeaderRecoveryState
// RECOVERING, the shape of a damaged replica's request.
const leaderRecoveryRecovering int8 = 1

// forgetDamagedReplica handles the AlterPartition of a replica whose log of
// the partition is damaged (see above). Its leader and partition epochs
// are not fenced, the change being unconditional; epochs ahead of the
// controller's mean the requester heard from a newer controller
// (NOT_CONTROLLER).
func (c *Controller) forgetDamagedReplica(b **batch, req *kmsg.AlterPartitionRequest, topic *meta.TopicImage, part *meta.Partition, pd *kmsg.AlterPartitionRequestTopicPartition, newISR []int32) kmsg.AlterPartitionResponseTopicPartition {
	rp := kmsg.NewAlterPartitionResponseTopicPartition()
	rp.Partition = pd.Partition
	switch {
	case pd.LeaderEpoch > part.LeaderEpoch || pd.PartitionEpoch > part.PartitionEpoch:
		rp.ErrorCode = kerr.NotController.Code
		return rp
	case len(newISR) != 0 || !slices.Contains(part.Replicas, req.BrokerID):
		rp.ErrorCode = kerr.InvalidRequest.Code
		return rp
	}
	unclean := c.uncleanElection(c.spec, topic.Name())
	next, uncleanLeader := forgetDamaged(topic.ID(), part, req.BrokerID, c.minInsyncReplicas(c.spec, topic.Name()), unclean,
		acceptableLeaders(c.spec, meta.NoLeader, meta.NoLeader))
	rec := changeRecord(topic.ID(), part, &next)
	c.tellUnclean(topic.Name(), part, rec)
	if uncleanLeader && c.cfg.OnUncleanElection != nil {
		c.cfg.OnUncleanElection(topic.Name(), part.ID, next.Leader)
	}
	c.addSplit(b, rec)
	rp.LeaderID, rp.LeaderEpoch, rp.PartitionEpoch = next.Leader, next.LeaderEpoch, part.PartitionEpoch+1
	rp.ISR = slices.Clone(next.ISR)
	return rp
}

// forgetDamaged returns partition p after its replica id gave up its places
// (see above): active says which brokers are registered, unfenced and not
// shutting down, unclean whether the topic allows unclean election.
// uncleanLeader reports a last ISR member left to lead with its damaged
// log because the topic allows it.
func forgetDamaged(topic meta.UUID, p *meta.Partition, id int32, minISR int, unclean bool, active func(int32) bool) (next meta.Partition, uncleanLeader bool) {
	next = *p
	next.ISR, next.ELR, next.LastKnownELR = slices.Clone(p.ISR), without(p.ELR, id), slices.Clone(p.LastKnownELR)
	forgotten := slices.Contains(p.ELR, id)
	others := func(r int32) bool { return r != id && active(r) } // who may lead instead
	switch {
	case !slices.Contains(p.ISR, id):
	case len(p.ISR) > 1:
		next.ISR = without(p.ISR, id)
		if len(next.ISR) < minISR {
			forgotten = true // where nextELR would have made it eligible
		}
		next.ELR = without(nextELR(p, next.ISR, minISR), id)
		if rec := electChange(topic, &next, electionRules{evict: func(int32) bool { return false }, acceptable: others}, unclean, minISR); rec != nil {
			applyElection(&next, rec)
		}
	case len(next.ELR) > 0:
		forgotten = true
		next.ISR, next.ELR = []int32{next.ELR[0]}, next.ELR[1:]
		next.Leader = meta.NoLeader
		if others(next.ISR[0]) {
			next.Leader = next.ISR[0]
		}
	default:
		// It stays the ISR's last member, leading in a new epoch.
		peers := slices.ContainsFunc(p.LastKnownELR, func(r int32) bool { return r != id && slices.Contains(p.Replicas, r) })
		forgotten = peers || !unclean
		uncleanLeader = !forgotten
		next.Leader = meta.NoLeader
		if active(id) {
			next.Leader = id
		}
	}
	if forgotten && !slices.Contains(next.LastKnownELR, id) {
		next.LastKnownELR = append(next.LastKnownELR, id)
	}
	if next.Leader != p.Leader || slices.Contains(next.ISR, id) && next.Leader == id {
		next.LeaderEpoch = p.LeaderEpoch + 1
	}
	return next, uncleanLeader && next.Leader != meta.NoLeader
}

// applyElection applies an election's change to p (its epochs excepted).
func applyElection(p *meta.Partition, rec *meta.PartitionChangeRecord) {
	if rec.Leader != nil {
		p.Leader = *rec.Leader
	}
	if rec.ISR != nil {
		p.ISR = rec.ISR
	}
	if rec.ELR != nil {
		p.ELR = rec.ELR
	}
	if rec.LastKnownELR != nil {
		p.LastKnownELR = rec.LastKnownELR
	}
}

// changeRecord is the PartitionChangeRecord that takes p to next: the
// lists that differ, and the leader whenever the leader epoch grows. It
// always bumps the partition epoch, even when nothing else changes.
func changeRecord(topic meta.UUID, p, next *meta.Partition) *meta.PartitionChangeRecord {
	rec := &meta.PartitionChangeRecord{TopicID: topic, Partition: p.ID}
	if next.LeaderEpoch != p.LeaderEpoch || next.Leader != p.Leader {
		leader := next.Leader
		rec.Leader = &leader
	}
	if !slices.Equal(next.ISR, p.ISR) {
		rec.ISR = slices.Clone(next.ISR)
	}
	if !slices.Equal(next.ELR, p.ELR) {
		rec.ELR = append([]int32{}, next.ELR...) // non-nil: an empty list clears it
	}
	if !slices.Equal(next.LastKnownELR, p.LastKnownELR) {
		rec.LastKnownELR = append([]int32{}, next.LastKnownELR...)
	}
	return rec
}

// without returns a copy of ids without id.
func without(ids []int32, id int32) []int32 {
	return slices.DeleteFunc(slices.Clone(ids), func(r int32) bool { return r == id })
}
