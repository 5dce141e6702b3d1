package kclient

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// assignSticky is a cooperative sticky assignor (KIP-429), simplified
// from Kafka's CooperativeStickyAssignor for members that subscribe to
// the same topics, deterministic for a given JoinGroup answer:
//
//  1. A member's claim on a partition it owned counts if it is of the
//     highest generation any member claims that partition in (an older
//     claim is a member that missed a rebalance).
//  2. Quotas: with n partitions and m members, each gets n/m, and the
//     first n%m members (sorted by member id) one more.
//  3. Each member keeps what it owned up to its quota (in partition
//     order).
//  4. The partitions left go, in order, to the members below their quota
//     (the first in member order first).
//  5. A partition given to one member in step 4 that another member
//     owns is withheld: nobody gets it in this generation, its owner
//     gives it up, joins again, and the next rebalance assigns it (the
//     two phases of an incremental rebalance: a partition never has two
//     owners at once).
func (gm *GroupMember) assignSticky(members []kmsg.JoinGroupResponseMember) []kmsg.SyncGroupRequestGroupAssignment {
	type claim struct {
		member     int
		generation int32
	}
	subs := subscriptions(members)
	if len(subs) == 0 {
		return nil
	}
	var all []TopicPartition
	for _, t := range subscribedTopics(subs) {
		if tm, ok := gm.c.Topic(t); ok {
			for _, p := range tm.Partitions {
				all = append(all, TopicPartition{t, p.Partition})
			}
		}
	}
	// 1. Valid claims.
	owner := map[TopicPartition]claim{}
	for i, s := range subs {
		for _, tp := range s.owned {
			if !slices.Contains(all, tp) {
				continue
			}
			if c, ok := owner[tp]; !ok || s.gen > c.generation {
				owner[tp] = claim{i, s.gen}
			}
		}
	}
	// 2. Quotas.
	n, m := len(all), len(subs)
	quota := make([]int, m)
	for i := range quota {
		quota[i] = n / m
		if i < n%m {
			quota[i]++
		}
	}
	// 3. Keep owned partitions up to the quota.
	got := make([][]TopicPartition, m)
	taken := map[TopicPartition]bool{}
	for _, tp := range all {
		c, ok := owner[tp]
		if ok && len(got[c.member]) < quota[c.member] {
			got[c.member] = append(got[c.member], tp)
			taken[tp] = true
		}
	}
	// 4 and 5. The rest to the members below quota, withholding what
	// another member still owns.
	next := 0
	for _, tp := range all {
		if taken[tp] {
			continue
		}
		for next < m && len(got[next]) >= quota[next] {
			next++
		}
		if next == m {
			break
		}
		if c, ok := owner[tp]; ok && c.member != next {
			quota[next]-- // withheld: this member waits for it
			continue
		}
		got[next] = append(got[next], tp)
	}
	out := make([]kmsg.SyncGroupRequestGroupAssignment, m)
	for i, s := range subs {
		var a kmsg.ConsumerMemberAssignment
		sortPartitions(got[i])
		for _, tp := range got[i] {
			if k := len(a.Topics); k == 0 || a.Topics[k-1].Topic != tp.Topic {
				at := kmsg.NewConsumerMemberAssignmentTopic()
				at.Topic = tp.Topic
				a.Topics = append(a.Topics, at)
			}
			a.Topics[len(a.Topics)-1].Partitions = append(a.Topics[len(a.Topics)-1].Partitions, tp.Partition)
		}
		out[i] = kmsg.NewSyncGroupRequestGroupAssignment()
		out[i].MemberID, out[i].MemberAssignment = s.id, a.AppendTo(nil)
	}
	return out
}
