package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// Election types of ElectLeaders (KIP-460).
const (
	electPreferred int8 = 0
	electUnclean   int8 = 1
)

// electLeaders handles ElectLeaders: for each partition named (every
// partition when Topics is null), a preferred election makes the first
// replica of the assignment the leader when it is in the ISR and active
// (ELECTION_NOT_NEEDED when it leads already,
// PREFERRED_LEADER_NOT_AVAILABLE otherwise); an unclean election gives a
// leaderless partition a leader, from the ISR or the eligible leader
// replicas if one is active, else any active replica
// (ELECTION_NOT_NEEDED when it has a leader, ELIGIBLE_LEADERS_NOT_AVAILABLE
// when no replica is active).
func (c *Controller) electLeaders(req *kmsg.ElectLeadersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.ElectionType != electPreferred && req.ElectionType != electUnclean {
		return ErrorResponse(req, kerr.InvalidRequest, fmt.Sprintf("Unknown election type %d.", req.ElectionType))
	}
	type target struct {
		topic      string
		partitions []int32
	}
	var targets []target
	if req.Topics == nil {
		for t := range c.spec.Topics() {
			var ids []int32
			for p := range t.Partitions() {
				ids = append(ids, p.ID)
			}
			targets = append(targets, target{t.Name(), ids})
		}
	} else {
		for _, t := range req.Topics {
			targets = append(targets, target{t.Topic, t.Partitions})
		}
	}
	acceptable := acceptableLeaders(c.spec, meta.NoLeader, meta.NoLeader)
	b := c.openBatch()
	for _, tg := range targets {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = tg.topic
		ti, topicOK := c.spec.TopicByName(tg.topic)
		for _, id := range tg.partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = id
			rp.ErrorCode, rp.ErrorMessage = changePartition(ti, topicOK, tg.topic, id, func(part *meta.Partition) (*kerr.Error, string) {
				if req.ElectionType == electPreferred {
					return c.electPreferred(&b, ti, part, acceptable)
				}
				return c.electUnclean(&b, ti, part, acceptable)
			})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	c.seal(b)
	return resp
}

// electPreferred makes the partition's preferred replica its leader.
func (c *Controller) electPreferred(b **batch, ti *meta.TopicImage, p *meta.Partition, acceptable func(int32) bool) (*kerr.Error, string) {
	preferred := p.Replicas[0]
	switch {
	case p.Leader == preferred:
		return kerr.ElectionNotNeeded, fmt.Sprintf("Broker %d, the preferred replica, leads already.", preferred)
	case !slices.Contains(p.ISR, preferred) || !acceptable(preferred):
		return kerr.PreferredLeaderNotAvailable, fmt.Sprintf("The preferred replica %d is not in the ISR %v or not active.", preferred, p.ISR)
	}
	c.addSplit(b, &meta.PartitionChangeRecord{TopicID: ti.ID(), Partition: p.ID, Leader: &preferred})
	return nil, ""
}

// electUnclean gives a leaderless partition a leader: from the ISR or
// the eligible leader replicas first, else any active replica, with an
// ISR of itself (counted and logged as unclean). A recovering leader
// (waiting for a member of the LastKnownELR that may never come back)
// stops recovering and serves its own log, also counted as unclean.
func (c *Controller) electUnclean(b **batch, ti *meta.TopicImage, p *meta.Partition, acceptable func(int32) bool) (*kerr.Error, string) {
	if recovering(p) {
		c.addSplit(b, &meta.PartitionChangeRecord{TopicID: ti.ID(), Partition: p.ID, LastKnownELR: []int32{}})
		if c.cfg.OnUncleanElection != nil {
			c.cfg.OnUncleanElection(ti.Name(), p.ID, p.Leader)
		}
		return nil, ""
	}
	if p.Leader != meta.NoLeader {
		return kerr.ElectionNotNeeded, fmt.Sprintf("Broker %d leads already.", p.Leader)
	}
	rules := electionRules{evict: func(int32) bool { return false }, acceptable: acceptable}
	rec := electChange(ti.ID(), p, rules, true, c.minInsyncReplicas(c.spec, ti.Name()))
	if rec == nil || rec.Leader == nil || *rec.Leader == meta.NoLeader {
		return kerr.EligibleLeadersNotAvailable, fmt.Sprintf("No replica of %v is active.", p.Replicas)
	}
	c.tellUnclean(ti.Name(), p, rec)
	c.addSplit(b, rec)
	return nil, ""
}

// rebalanceLeaders is the automatic preferred-leader election pass: every
// partition led by another replica than its preferred one moves back to
// it when the preferred replica is in the ISR and active. Kafka waits for
// a broker's share of such partitions to pass
// leader.imbalance.per.broker.percentage; Strata moves every one.
func (c *Controller) rebalanceLeaders() {
	acceptable := acceptableLeaders(c.spec, meta.NoLeader, meta.NoLeader)
	b := c.openBatch()
	for t := range c.spec.Topics() {
		for p := range t.Partitions() {
			if c.pendingRecords >= c.cfg.MaxPendingRecords {
				break
			}
			if len(p.Replicas) == 0 || p.Leader == p.Replicas[0] || p.Leader == meta.NoLeader {
				continue
			}
			if preferred := p.Replicas[0]; slices.Contains(p.ISR, preferred) && acceptable(preferred) {
				c.addSplit(&b, &meta.PartitionChangeRecord{TopicID: t.ID(), Partition: p.ID, Leader: &preferred})
			}
		}
	}
	c.seal(b)
}
