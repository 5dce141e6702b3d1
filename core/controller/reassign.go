package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// # Reassignment (KIP-455)
//
// AlterPartitionReassignments names a partition's target replicas. The
// controller adds the new ones to the assignment (Replicas: the target,
// then the replicas being removed; AddingReplicas and RemovingReplicas say
// which), their brokers start following the leader and catch up, the
// leader adds each to the ISR once it holds everything committed, and
// when the ISR holds every target replica the controller completes the
// reassignment: the assignment becomes the target, the removed replicas
// leave the ISR (and the ELR), and a removed leader hands the leadership
// to the first target replica in the ISR. A reassignment that only
// removes replicas completes at once (the remaining replicas hold the
// data only if they are in the ISR: the leader stays, or moves to an ISR
// member). A null target cancels a reassignment in progress: the adding
// replicas leave. ListPartitionReassignments lists those in progress.

// alterPartitionReassignments handles AlterPartitionReassignments.
func (c *Controller) alterPartitionReassignments(req *kmsg.AlterPartitionAssignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	b := c.openBatch()
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		ti, topicOK := c.spec.TopicByName(t.Topic)
		for _, pr := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = pr.Partition
			rp.ErrorCode, rp.ErrorMessage = changePartition(ti, topicOK, t.Topic, pr.Partition, func(part *meta.Partition) (*kerr.Error, string) {
				if pr.Replicas == nil {
					return c.cancelReassignment(&b, ti, part)
				}
				return c.startReassignment(&b, ti, part, pr.Replicas)
			})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	c.seal(b)
	return resp
}

// reassigning reports whether a partition has a reassignment in progress.
func reassigning(p *meta.Partition) bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// startReassignment validates target and writes the start of the
// reassignment (or all of it, when nothing is added).
func (c *Controller) startReassignment(b **batch, ti *meta.TopicImage, p *meta.Partition, target []int32) (*kerr.Error, string) {
	switch {
	case len(target) == 0:
		return kerr.InvalidReplicaAssignment, "The target replica list is empty."
	case reassigning(p):
		return kerr.ReassignmentInProgress, fmt.Sprintf("Partition %s-%d is being reassigned already; cancel it first.", ti.Name(), p.ID)
	}
	if id, dup := duplicateID(target); dup {
		return kerr.InvalidReplicaAssignment, fmt.Sprintf("Broker %d is listed twice.", id)
	}
	for _, id := range target {
		if _, ok := c.spec.Broker(id); !ok {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("Broker %d is not registered.", id)
		}
	}
	if slices.Equal(target, p.Replicas) {
		return nil, "" // nothing to do
	}
	var adding, removing []int32
	for _, id := range target {
		if !slices.Contains(p.Replicas, id) {
			adding = append(adding, id)
		}
	}
	for _, id := range p.Replicas {
		if !slices.Contains(target, id) {
			removing = append(removing, id)
		}
	}
	if len(adding) == 0 {
		if rec := c.maybeCompleteReassignment(ti, &meta.Partition{ID: p.ID, Replicas: append(slices.Clone(target), removing...),
			RemovingReplicas: removing, ISR: p.ISR, ELR: p.ELR, Leader: p.Leader}, p.ISR); rec != nil {
			// Only removals (or a new order), the target in sync: now.
			c.addSplit(b, rec)
			return nil, ""
		}
	}
	replicas := append(slices.Clone(target), removing...)
	c.addSplit(b, &meta.PartitionChangeRecord{TopicID: ti.ID(), Partition: p.ID, Replicas: replicas,
		AddingReplicas: adding, RemovingReplicas: append([]int32{}, removing...)})
	return nil, ""
}

// cancelReassignment reverts a reassignment in progress: the adding
// replicas leave the assignment and the ISR.
func (c *Controller) cancelReassignment(b **batch, ti *meta.TopicImage, p *meta.Partition) (*kerr.Error, string) {
	if !reassigning(p) {
		return kerr.NoReassignmentInProgress, fmt.Sprintf("Partition %s-%d is not being reassigned.", ti.Name(), p.ID)
	}
	original := slices.DeleteFunc(slices.Clone(p.Replicas), func(id int32) bool { return slices.Contains(p.AddingReplicas, id) })
	rec := c.reassignTo(ti, p, original)
	if rec == nil {
		return kerr.InvalidReplicaAssignment, fmt.Sprintf("Cancelling would leave %s-%d without an in-sync replica (ISR %v, original replicas %v).", ti.Name(), p.ID, p.ISR, original)
	}
	c.addSplit(b, rec)
	return nil, ""
}

// reassignTo is the change that makes replicas the partition's assignment,
// ending any reassignment: the ISR and ELR keep only its members, and a
// leader outside it gives way to the first member in the ISR that is
// active. It returns nil when no ISR member would remain: an ISR is never
// made up (replicated seed 95).
func (c *Controller) reassignTo(ti *meta.TopicImage, p *meta.Partition, replicas []int32) *meta.PartitionChangeRecord {
	in := func(id int32) bool { return slices.Contains(replicas, id) }
	isr := slices.DeleteFunc(slices.Clone(p.ISR), func(id int32) bool { return !in(id) })
	if len(isr) == 0 {
		return nil
	}
	elr := slices.DeleteFunc(slices.Clone(p.ELR), func(id int32) bool { return !in(id) || slices.Contains(isr, id) })
	rec := &meta.PartitionChangeRecord{TopicID: ti.ID(), Partition: p.ID, Replicas: slices.Clone(replicas),
		ISR: isr, AddingReplicas: []int32{}, RemovingReplicas: []int32{}, ELR: append([]int32{}, elr...)}
	if !in(p.Leader) || !slices.Contains(isr, p.Leader) {
		acceptable := acceptableLeaders(c.spec, meta.NoLeader, meta.NoLeader)
		leader := meta.NoLeader
		for _, id := range replicas {
			if slices.Contains(isr, id) && acceptable(id) {
				leader = id
				break
			}
		}
		rec.Leader = &leader
	}
	return rec
}

// maybeCompleteReassignment completes p's reassignment once isr holds
// every target replica; it returns the change, or nil.
func (c *Controller) maybeCompleteReassignment(ti *meta.TopicImage, p *meta.Partition, isr []int32) *meta.PartitionChangeRecord {
	if !reassigning(p) {
		return nil
	}
	target := slices.DeleteFunc(slices.Clone(p.Replicas), func(id int32) bool { return slices.Contains(p.RemovingReplicas, id) })
	for _, id := range target {
		if !slices.Contains(isr, id) {
			return nil
		}
	}
	q := *p
	q.ISR = isr
	return c.reassignTo(ti, &q, target)
}

// listPartitionReassignments handles ListPartitionReassignments: the
// partitions named (every partition when Topics is null) with a
// reassignment in progress.
func (c *Controller) listPartitionReassignments(req *kmsg.ListPartitionReassignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	add := func(ti *meta.TopicImage, p meta.Partition) {
		n := len(resp.Topics)
		if n == 0 || resp.Topics[n-1].Topic != ti.Name() {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = ti.Name()
			resp.Topics = append(resp.Topics, rt)
			n++
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = p.ID
		rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = slices.Clone(p.Replicas), slices.Clone(p.AddingReplicas), slices.Clone(p.RemovingReplicas)
		resp.Topics[n-1].Partitions = append(resp.Topics[n-1].Partitions, rp)
	}
	if req.Topics == nil {
		for ti := range c.spec.Topics() {
			for p := range ti.Partitions() {
				if reassigning(&p) {
					add(ti, p)
				}
			}
		}
		return resp
	}
	for _, t := range req.Topics {
		ti, ok := c.spec.TopicByName(t.Topic)
		if !ok {
			continue
		}
		for _, id := range t.Partitions {
			if p, ok := ti.Partition(id); ok && reassigning(&p) {
				add(ti, p)
			}
		}
	}
	return resp
}
