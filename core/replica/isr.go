package replica

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
)

// # The ISR, leader side
//
// The leader changes the ISR through the controller (AlterPartition, with
// its leader and partition epochs, Kafka's fencing), one change in flight
// per partition:
//
//   - expand: a replica outside the ISR whose fetches reached the high
//     watermark and the start of this leadership's epoch (so it holds
//     everything committed, and has truncated to this leader's log) joins;
//   - shrink: a member that has not caught up with the leader's log end
//     for replica.lag.time.max.ms leaves (checked every half of it).
//
// While a change is in flight, the high watermark counts the larger of the
// two sets (Kafka's maximal ISR): an expansion may commit, so the joining
// replica must hold what the high watermark passes; a shrink may fail, so
// the leaving one still counts. min.insync.replicas counts the committed
// ISR. A change is settled when the image shows the partition epoch the
// controller answered (or any newer one); a refusal settles at the next
// image.

// isrForHighWatermark is the ISR the high watermark waits for: the
// committed one, and the pending change's members while one is in flight.
func (p *Partition) isrForHighWatermark() []int32 {
	if p.pendingISR == nil {
		return p.isr
	}
	out := slices.Clone(p.isr)
	for _, id := range p.pendingISR {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// maybeExpandISR proposes adding follower f to the ISR if it caught up.
func (p *Partition) maybeExpandISR(f *follower) {
	if !p.canAlterISR() || p.resigning || slices.Contains(p.isr, f.id) || !slices.Contains(p.replicas, f.id) {
		return
	}
	if f.logEnd < p.l.HighWatermark() || f.logEnd < p.leaderEpochStart() {
		return
	}
	isr := append(slices.Clone(p.isr), f.id)
	slices.Sort(isr)
	p.log.Info("expanding the ISR", "replica", f.id, "isr", p.isr, "new_isr", isr, "replica_log_end", f.logEnd, "high_watermark", p.l.HighWatermark())
	p.alterISR(isr)
}

// maybeShrinkISR proposes removing the members that stopped catching up.
func (p *Partition) maybeShrinkISR() {
	if !p.canAlterISR() || p.resigning {
		return
	}
	now := p.m.e.Monotonic()
	var out []int32
	for _, id := range p.isr {
		if id == p.m.cfg.NodeID {
			continue
		}
		if f := p.follower(id); f != nil && now-f.lastCaughtUp > p.m.cfg.ReplicaLagTime {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return
	}
	isr := slices.DeleteFunc(slices.Clone(p.isr), func(id int32) bool { return slices.Contains(out, id) })
	p.log.Info("shrinking the ISR", "out_of_sync", out, "isr", p.isr, "new_isr", isr, "lag_time", p.m.cfg.ReplicaLagTime)
	p.alterISR(isr)
}

// canAlterISR reports whether this leader may propose an ISR change now.
func (p *Partition) canAlterISR() bool {
	return p.m.cfg.AlterPartition != nil && p.leads() && p.state == stateOnline && p.m.serving &&
		p.pendingISR == nil && p.m.cfg.BrokerEpoch != nil && p.m.cfg.BrokerEpoch() >= 0
}

// alterISR sends the ISR change to the controller.
func (p *Partition) alterISR(isr []int32) {
	assert.That(p.resigning || p.recovering() || slices.Contains(isr, p.m.cfg.NodeID),
		"%s: leader %d proposing ISR %v without itself", p.dir, p.m.cfg.NodeID, isr)
	p.pendingISR, p.pendingEpoch = isr, -1
	leaderEpoch, partitionEpoch := p.leaderEpoch, p.partitionEpoch
	p.sendAlterPartition(isr, leaderRecoveryRecovered, func(r kmsg.Response, err error) {
		if p.pendingISR == nil || !slices.Equal(p.pendingISR, isr) {
			return // settled meanwhile (a new leadership cleared it)
		}
		if p.leaderEpoch != leaderEpoch || p.partitionEpoch != partitionEpoch {
			// The image moved on while the change was in flight: it
			// shows the change if the controller made it, and the next
			// fetch or check proposes what is still needed.
			p.pendingISR, p.pendingEpoch = nil, -1
			p.advanceHighWatermark()
			return
		}
		resp, ok := r.(*kmsg.AlterPartitionResponse)
		code := int16(-1)
		if err == nil && ok {
			code = resp.ErrorCode
			if code == 0 && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
				rp := resp.Topics[0].Partitions[0]
				code = rp.ErrorCode
				if code == 0 {
					p.pendingEpoch = rp.PartitionEpoch // settles when the image shows it
					return
				}
			}
		}
		p.log.Info("ISR change refused; retrying later", "new_isr", isr, "err", err, "code", kerr.ErrorForCode(code))
		switch code {
		case kerr.FencedLeaderEpoch.Code, kerr.InvalidUpdateVersion.Code:
			p.pendingEpoch = partitionEpoch + 1 // stale: the next image settles it
		case -1, kerr.NotController.Code, kerr.RequestTimedOut.Code:
			// An unknown outcome: no answer, or the controller the
			// request reached went away (a forwarding member fails its
			// forwarded requests NOT_CONTROLLER) after it may have
			// committed the change. Until an image says, the change
			// counts as in flight: the high watermark waits for the
			// maximal ISR (replicated seed 421: the dropped change was
			// committed, and a replica the high watermark had left
			// behind was elected from the ISR it joined). Ask again.
			p.pendingEpoch = partitionEpoch + 1
			p.retryAlterISR(isr, leaderEpoch, partitionEpoch)
		default:
			p.pendingISR = nil // refused: retried at the next fetch or check
		}
		p.advanceHighWatermark()
	})
}

// sendAlterPartition sends the controller, as this broker, an
// AlterPartition request changing this partition, at its current epochs,
// to the ISR isr and the LeaderRecoveryState recovery, and then tells
// cfg.AlterPartitionSent.
func (p *Partition) sendAlterPartition(isr []int32, recovery int8, done func(kmsg.Response, error)) {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 2
	req.BrokerID, req.BrokerEpoch = p.m.cfg.NodeID, p.m.cfg.BrokerEpoch()
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = p.topicID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = p.id, p.leaderEpoch, p.partitionEpoch
	rp.NewISR, rp.LeaderRecoveryState = isr, recovery
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p.m.cfg.AlterPartition(req, done)
	if sent := p.m.cfg.AlterPartitionSent; sent != nil {
		sent(p.topic, p.id)
	}
}

// resign asks the controller for a new leader epoch (see lostTail): this
// leader proposes the ISR without itself, and the controller elects
// another member, or, when none can lead, this one again, in a new epoch.
// It asks again every alterISRRetryBackoff until the image shows a new
// leader epoch (which clears resigning).
func (p *Partition) resign() {
	if !p.resigning || p.m.closed || p.state == stateClosed || !p.leads() || p.m.cfg.AlterPartition == nil {
		return
	}
	if p.canAlterISR() {
		isr := slices.DeleteFunc(slices.Clone(p.isr), func(id int32) bool { return id == p.m.cfg.NodeID })
		p.log.Info("resigning the leadership", "leader_epoch", p.leaderEpoch, "isr", p.isr, "new_isr", isr)
		p.alterISR(isr)
	}
	epoch := p.leaderEpoch
	p.m.e.AfterFunc(alterISRRetryBackoff, func() {
		if p.leaderEpoch == epoch {
			p.resign()
		}
	})
}

// alterISRRetryBackoff is how long a leader waits before asking again for
// an ISR change whose outcome it does not know.
const alterISRRetryBackoff = 100 * time.Millisecond

// retryAlterISR sends the ISR change isr again after alterISRRetryBackoff
// if it is still pending under the same leader and partition epochs (an
// image that moved either on settled it).
func (p *Partition) retryAlterISR(isr []int32, leaderEpoch, partitionEpoch int32) {
	p.m.e.AfterFunc(alterISRRetryBackoff, func() {
		if p.pendingISR == nil || !slices.Equal(p.pendingISR, isr) || p.leaderEpoch != leaderEpoch || p.partitionEpoch != partitionEpoch {
			return
		}
		if p.m.closed || p.state == stateClosed || !p.leads() {
			return // removed, or a new leadership cleared the change
		}
		if p.state != stateOnline || !p.m.serving || p.m.cfg.BrokerEpoch == nil || p.m.cfg.BrokerEpoch() < 0 {
			p.retryAlterISR(isr, leaderEpoch, partitionEpoch)
			return
		}
		p.alterISR(isr)
	})
}

// settleISR clears the pending ISR change once the image caught up with it
// (called with the image's partition epoch).
func (p *Partition) settleISR(partitionEpoch int32) {
	if p.pendingISR != nil && p.pendingEpoch >= 0 && partitionEpoch >= p.pendingEpoch {
		p.pendingISR, p.pendingEpoch = nil, -1
	}
}

// checkISRs shrinks the ISRs of the partitions this broker leads (every
// half of replica.lag.time.max.ms, as Kafka's isr-expiration task).
func (m *Manager) checkISRs() {
	if m.closed {
		return
	}
	for _, p := range m.parts {
		p.maybeShrinkISR()
	}
	m.isrCheck = m.e.AfterFunc(m.cfg.ReplicaLagTime/2, m.checkISRs)
}

// leaderEpochStart is the offset where this leadership's epoch starts in
// the log: its first batch, or the log end if it appended none yet.
func (p *Partition) leaderEpochStart() int64 {
	l := p.l
	if l.LatestEpoch() != p.leaderEpoch {
		return l.LogEndOffset()
	}
	_, end := l.EndOffsetForEpoch(p.leaderEpoch - 1)
	return max(end, l.LogStartOffset())
}

func (p *Partition) String() string {
	return fmt.Sprintf("%s(leader %d epoch %d)", p.dir, p.leader, p.leaderEpoch)
}
