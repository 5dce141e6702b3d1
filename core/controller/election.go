package controller

import (
	"slices"

	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/plant"
)

// partitionFilter selects the partitions an election pass visits.
type partitionFilter func(p *meta.Partition) bool

// hasInISR selects the partitions whose ISR holds a broker (and so every
// partition it leads).
func hasInISR(id int32) partitionFilter {
	return func(p *meta.Partition) bool { return slices.Contains(p.ISR, id) }
}

// leaderless selects the partitions without a leader.
func leaderless(p *meta.Partition) bool { return p.Leader == meta.NoLeader }

// electionRules say who leaves ISRs and who may lead in an election pass.
type electionRules struct {
	// evict reports a broker to take out of ISRs (never emptying one).
	evict func(int32) bool
	// acceptable reports a broker that may lead.
	acceptable func(int32) bool
}

// removeBroker is the pass that takes one broker out of ISRs and
// leaderships (fencing, controlled shutdown, a replaced registration).
func removeBroker(img *meta.Image, id int32) electionRules {
	return electionRules{
		evict:      func(b int32) bool { return b == id },
		acceptable: acceptableLeaders(img, id, meta.NoLeader),
	}
}

// addBroker is the pass that lets a newly unfenced broker lead.
func addBroker(img *meta.Image, id int32) electionRules {
	return electionRules{
		evict:      func(int32) bool { return false },
		acceptable: acceptableLeaders(img, meta.NoLeader, id),
	}
}

// repairRules is the pass that restores the election invariants on an
// image a new leader inherits: inactive brokers leave ISRs and
// leaderships, leaderless partitions elect an active ISR member.
func repairRules(img *meta.Image) electionRules {
	ok := acceptableLeaders(img, meta.NoLeader, meta.NoLeader)
	return electionRules{evict: func(b int32) bool { return !ok(b) }, acceptable: ok}
}

// electionRecords is Kafka's generateLeaderAndIsrUpdates: for every
// partition of img that want selects, in topic name and partition order,
// the PartitionChangeRecord (if any) that applies the rules.
func (c *Controller) electionRecords(img *meta.Image, rules electionRules, want partitionFilter) []meta.Record {
	var out []meta.Record
	for t := range img.Topics() {
		unclean, known, minISR := false, false, 1
		for p := range t.Partitions() {
			if !want(&p) {
				continue
			}
			if !known {
				unclean, known = c.uncleanElection(img, t.Name()), true
				minISR = c.minInsyncReplicas(img, t.Name())
			}
			if rec := electChange(t.ID(), &p, rules, unclean, minISR); rec != nil {
				c.tellUnclean(t.Name(), &p, rec)
				out = append(out, rec)
			}
		}
	}
	return out
}

// acceptableLeaders returns the test for a broker that may lead or join an
// ISR: registered, unfenced and not shutting down in img, never remove,
// always add.
func acceptableLeaders(img *meta.Image, remove, add int32) func(int32) bool {
	ok := map[int32]bool{}
	for b := range img.Brokers() {
		if active(&b) {
			ok[b.ID] = true
		}
	}
	if add != meta.NoLeader {
		ok[add] = true
	}
	delete(ok, remove)
	return func(id int32) bool { return ok[id] }
}

// electChange computes one partition's change, following Kafka's
// PartitionChangeBuilder with KIP-966's eligible leader replicas:
//
//   - the target ISR is the ISR without the evicted brokers, unless that
//     would empty it: an ISR never becomes empty, its members stay as the
//     replicas that hold the committed data;
//   - the current leader stays if it is acceptable and in the target ISR;
//     otherwise the first replica (in assignment order) that is in the
//     target ISR and acceptable leads; otherwise the first acceptable
//     eligible leader replica leads, with an ISR of itself (it holds every
//     committed record: see nextELR); otherwise, if unclean election is
//     enabled, the first acceptable replica leads with an ISR of itself
//     and the ELR is dropped; otherwise the partition has no leader;
//   - the ELR follows nextELR.
//
// It returns nil when nothing changes. Leader epochs follow the record's
// replay rule: they grow only when the leader field is set.
func electChange(topic meta.UUID, p *meta.Partition, rules electionRules, unclean bool, minISR int) *meta.PartitionChangeRecord {
	isr := p.ISR
	if slices.ContainsFunc(isr, rules.evict) {
		if kept := slices.DeleteFunc(slices.Clone(isr), rules.evict); len(kept) > 0 {
			isr = kept
		}
	}
	elr := nextELR(p, isr, minISR)
	acceptable := rules.acceptable
	lastKnownCleared := false // an unclean leader recovers no one
	leader := p.Leader
	if leader == meta.NoLeader || !acceptable(leader) || !slices.Contains(isr, leader) {
		leader = meta.NoLeader
		for _, r := range p.Replicas {
			if slices.Contains(isr, r) && acceptable(r) {
				leader = r
				break
			}
		}
		if leader == meta.NoLeader {
			for _, r := range p.Replicas {
				if slices.Contains(elr, r) && acceptable(r) {
					// An eligible leader replica: the ISR's members
					// stay eligible (they hold what it holds).
					leader, isr = r, []int32{r}
					elr = nextELR(p, isr, minISR)
					break
				}
			}
		}
		if leader == meta.NoLeader && unclean {
			for _, r := range p.Replicas {
				if acceptable(r) {
					leader, isr, elr, lastKnownCleared = r, []int32{r}, nil, len(p.LastKnownELR) > 0
					break
				}
			}
		}
	}
	if plant.Is(plant.LeaderOutsideISR) {
		// Planted: whenever an election pass visits the partition, a
		// replica outside the ISR takes the lead if there is one,
		// written into the ISR so that the record replays.
		for _, r := range p.Replicas {
			if !slices.Contains(isr, r) && acceptable(r) {
				leader, isr = r, append(slices.Clone(isr), r)
				break
			}
		}
	}
	if slices.ContainsFunc(elr, func(r int32) bool { return slices.Contains(isr, r) }) {
		elr = slices.DeleteFunc(slices.Clone(elr), func(r int32) bool { return slices.Contains(isr, r) })
	}
	leaderChanged, isrChanged, elrChanged := leader != p.Leader, !slices.Equal(isr, p.ISR), !slices.Equal(elr, p.ELR)
	if !leaderChanged && !isrChanged && !elrChanged && !lastKnownCleared {
		return nil
	}
	rec := &meta.PartitionChangeRecord{TopicID: topic, Partition: p.ID}
	if leaderChanged {
		rec.Leader = &leader
	}
	if isrChanged {
		rec.ISR = isr
	}
	if elrChanged {
		rec.ELR = append([]int32{}, elr...) // non-nil: an empty list clears it
	}
	if lastKnownCleared {
		rec.LastKnownELR = []int32{}
	}
	return rec
}

// tellUnclean tells the owner (Config.OnUncleanElection) when rec makes a
// replica outside p's ISR and ELR its leader.
func (c *Controller) tellUnclean(topic string, p *meta.Partition, rec *meta.PartitionChangeRecord) {
	if c.cfg.OnUncleanElection == nil || rec.Leader == nil || *rec.Leader == meta.NoLeader ||
		slices.Contains(p.ISR, *rec.Leader) || slices.Contains(p.ELR, *rec.Leader) {
		return
	}
	c.cfg.OnUncleanElection(topic, p.ID, *rec.Leader)
}

// nextELR is KIP-966's eligible leader replicas after the ISR becomes
// isr: none while the ISR holds at least min.insync.replicas members;
// below it, the current ELR and the members leaving the ISR (the leader
// does not move the high watermark while the ISR is below
// min.insync.replicas, so they hold every committed record), less the new
// ISR's members, in assignment order.
func nextELR(p *meta.Partition, isr []int32, minISR int) []int32 {
	if len(isr) >= minISR {
		return nil
	}
	var out []int32
	for _, r := range p.Replicas {
		if slices.Contains(isr, r) {
			continue
		}
		if slices.Contains(p.ELR, r) || slices.Contains(p.ISR, r) {
			out = append(out, r)
		}
	}
	return out
}

// minInsyncReplicas is a topic's min.insync.replicas as the controller
// resolves it: the topic's config, else the cluster config resource's,
// else 1. A value the table refuses (stored before it did) is skipped, as
// the partitions skip it.
func (c *Controller) minInsyncReplicas(img *meta.Image, topic string) int {
	for _, res := range []meta.ConfigResource{topicResource(topic), meta.ClusterConfigResource} {
		if v, ok := configValue(img, res, config.TopicMinInsyncReplicas); ok {
			return int(v.Int())
		}
	}
	return 1
}

// uncleanElection reports whether a topic may elect a leader outside its
// ISR: the topic's unclean.leader.election.enable, else the cluster
// config resource's, else the controller's configuration.
func (c *Controller) uncleanElection(img *meta.Image, topic string) bool {
	for _, res := range []meta.ConfigResource{topicResource(topic), meta.ClusterConfigResource} {
		if v, ok := configValue(img, res, config.TopicUncleanLeaderElection); ok {
			return v.Bool()
		}
	}
	return c.cfg.UncleanLeaderElection
}

// configValue is a resource's value of a topic config key, parsed by the
// key's row; a value the row refuses is not there.
func configValue(img *meta.Image, res meta.ConfigResource, key string) (config.Value, bool) {
	row, ok := config.TopicRow(key)
	s, set := img.ConfigValue(res, key)
	if !ok || !set {
		return config.Value{}, false
	}
	v, err := row.Parse(s)
	return v, err == nil
}
