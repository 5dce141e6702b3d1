package group

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// # Server-side assignors (KIP-848)
//
// A consumer group's target assignment is computed here, on the
// coordinator, by the assignor the members ask for (ServerAssignor):
//
//   - uniform (the default): every subscribed partition to one member,
//     as evenly as the subscriptions allow, keeping each member's previous
//     target where that stays balanced (sticky), so a rebalance moves as
//     few partitions as it must.
//   - range: per topic, the members subscribed to it (sorted by member
//     id) get contiguous runs of partitions, the first ones one more.
//
// Both are pure functions of sorted inputs: members sorted by id,
// topics by name, partitions ascending. No map order reaches a result.

// Assignor names.
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// Assignors lists the assignors this coordinator has, the default
// first (group.consumer.assignors may name fewer, or reorder them).
func Assignors() []string { return []string{AssignorUniform, AssignorRange} }

// tpid names a partition by topic id, as KIP-848 does.
type tpid struct {
	topic     [16]byte
	partition int32
}

func compareTP(a, b tpid) int {
	return cmp.Or(bytes.Compare(a.topic[:], b.topic[:]), cmp.Compare(a.partition, b.partition))
}

// parts is a set of partitions, sorted by (topic id, partition) without
// duplicates.
type parts []tpid

func sortParts(p parts) parts {
	slices.SortFunc(p, compareTP)
	return slices.Compact(p)
}

func (p parts) contains(x tpid) bool {
	_, ok := slices.BinarySearchFunc(p, x, compareTP)
	return ok
}

// minus is p without the partitions of q.
func (p parts) minus(q parts) parts {
	var out parts
	for _, x := range p {
		if !q.contains(x) {
			out = append(out, x)
		}
	}
	return out
}

// intersect is the partitions in both p and q.
func (p parts) intersect(q parts) parts {
	var out parts
	for _, x := range p {
		if q.contains(x) {
			out = append(out, x)
		}
	}
	return out
}

// subsetOf reports whether every partition of p is in q.
func (p parts) subsetOf(q parts) bool {
	for _, x := range p {
		if !q.contains(x) {
			return false
		}
	}
	return true
}

// grouped yields p by topic: the topic id and its partitions.
func (p parts) grouped(yield func(topic [16]byte, partitions []int32)) {
	for i := 0; i < len(p); {
		j := i
		var ps []int32
		for ; j < len(p) && p[j].topic == p[i].topic; j++ {
			ps = append(ps, p[j].partition)
		}
		yield(p[i].topic, ps)
		i = j
	}
}

// heartbeatAssignment is p as a ConsumerGroupHeartbeat answer's.
func (p parts) heartbeatAssignment() *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	p.grouped(func(topic [16]byte, ps []int32) {
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID, t.Partitions = topic, ps
		a.Topics = append(a.Topics, t)
	})
	return &a
}

// partsOf reads a heartbeat's owned partitions.
func partsOf(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) parts {
	var out parts
	for _, t := range topics {
		for _, p := range t.Partitions {
			out = append(out, tpid{t.TopicID, p})
		}
	}
	return sortParts(out)
}

// assignInput is one member as an assignor sees it.
type assignInput struct {
	id string
	// topics it subscribes to that exist, sorted by name.
	topics []TopicInfo
	// previous is its previous target (stickiness).
	previous parts
}

// assign computes the target assignment of members (sorted by id) with
// the named assignor; out[i] is members[i]'s.
func assign(assignor string, members []assignInput) []parts {
	if assignor == AssignorRange {
		return assignRange(members)
	}
	return assignUniform(members)
}

// assignRange is Kafka's range assignor: per topic, partitions split in
// contiguous runs among its subscribers in member id order.
func assignRange(members []assignInput) []parts {
	out := make([]parts, len(members))
	var topics []TopicInfo
	for _, m := range members {
		for _, t := range m.topics {
			if !slices.ContainsFunc(topics, func(x TopicInfo) bool { return x.ID == t.ID }) {
				topics = append(topics, t)
			}
		}
	}
	slices.SortFunc(topics, func(a, b TopicInfo) int { return cmp.Compare(a.Name, b.Name) })
	for _, t := range topics {
		var subs []int
		for i, m := range members {
			if slices.ContainsFunc(m.topics, func(x TopicInfo) bool { return x.ID == t.ID }) {
				subs = append(subs, i)
			}
		}
		n, k := int(t.Partitions), len(subs)
		next := 0
		for j, i := range subs {
			count := n / k
			if j < n%k {
				count++
			}
			for p := next; p < next+count; p++ {
				out[i] = append(out[i], tpid{t.ID, int32(p)})
			}
			next += count
		}
	}
	for i := range out {
		out[i] = sortParts(out[i])
	}
	return out
}

// assignUniform is a sticky, balanced assignor: each member keeps what
// it had that it still subscribes to, up to its fair share; the rest go
// to the least loaded member that subscribes to them; then partitions
// move from the most to the least loaded eligible member until no move
// makes the loads closer.
func assignUniform(members []assignInput) []parts {
	out := make([]parts, len(members))
	if len(members) == 0 {
		return out
	}
	// Every partition subscribed to, and who may own it.
	type cand struct {
		tp       tpid
		eligible []int
	}
	var all []cand
	index := map[tpid]int{}
	for i, m := range members {
		for _, t := range m.topics {
			for p := int32(0); p < t.Partitions; p++ {
				tp := tpid{t.ID, p}
				j, ok := index[tp]
				if !ok {
					j = len(all)
					index[tp] = j
					all = append(all, cand{tp: tp})
				}
				all[j].eligible = append(all[j].eligible, i)
			}
		}
	}
	slices.SortFunc(all, func(a, b cand) int { return compareTP(a.tp, b.tp) })
	for j := range all {
		index[all[j].tp] = j
	}
	owner := make([]int, len(all))
	for j := range owner {
		owner[j] = -1
	}
	load := make([]int, len(members))
	fair := (len(all) + len(members) - 1) / len(members)
	// 1. Sticky: keep previous partitions still eligible, up to the
	// fair share.
	for i, m := range members {
		for _, tp := range m.previous {
			j, ok := index[tp]
			if !ok || owner[j] >= 0 || !slices.Contains(all[j].eligible, i) || load[i] >= fair {
				continue
			}
			owner[j] = i
			load[i]++
		}
	}
	// 2. The rest to the least loaded eligible member (ties: lowest id).
	for j := range all {
		if owner[j] >= 0 {
			continue
		}
		best := -1
		for _, i := range all[j].eligible {
			if best < 0 || load[i] < load[best] {
				best = i
			}
		}
		owner[j] = best
		load[best]++
	}
	// 3. Balance: move a partition from a member to an eligible one
	// with at least two fewer. Each move lowers the sum of squared
	// loads, so this ends; the bound is a guard.
	for range len(all) * len(members) {
		moved := false
		for j := len(all) - 1; j >= 0 && !moved; j-- {
			from := owner[j]
			for _, to := range all[j].eligible {
				if load[from]-load[to] >= 2 {
					owner[j] = to
					load[from]--
					load[to]++
					moved = true
					break
				}
			}
		}
		if !moved {
			break
		}
	}
	for j, i := range owner {
		out[i] = append(out[i], all[j].tp)
	}
	return out
}
