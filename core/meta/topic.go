package meta

import (
	"iter"
	"slices"
	"sort"
)

// TopicImage is one topic of an image: its name, its id and its partitions.
// It is immutable; a delta that changes a partition builds a new TopicImage
// (copying this topic's partition pointers, never the other topics').
type TopicImage struct {
	name string
	id   UUID
	// partitions is sorted by partition id; each *Partition is immutable.
	partitions []*Partition
}

// Name is the topic's name.
func (t *TopicImage) Name() string { return t.name }

// ID is the topic's id.
func (t *TopicImage) ID() UUID { return t.id }

// NumPartitions is the number of partitions the topic has.
func (t *TopicImage) NumPartitions() int { return len(t.partitions) }

// Partition returns one partition of the topic.
func (t *TopicImage) Partition(id int32) (Partition, bool) {
	p := t.partition(id)
	if p == nil {
		return Partition{}, false
	}
	return *p, true
}

// Partitions yields the topic's partitions in ascending id order.
func (t *TopicImage) Partitions() iter.Seq[Partition] {
	return func(yield func(Partition) bool) {
		for _, p := range t.partitions {
			if !yield(*p) {
				return
			}
		}
	}
}

// partition finds a partition: directly when ids are dense (the usual case),
// by binary search otherwise.
func (t *TopicImage) partition(id int32) *Partition {
	if id >= 0 && int(id) < len(t.partitions) && t.partitions[id].ID == id {
		return t.partitions[id]
	}
	i := sort.Search(len(t.partitions), func(i int) bool { return t.partitions[i].ID >= id })
	if i < len(t.partitions) && t.partitions[i].ID == id {
		return t.partitions[i]
	}
	return nil
}

// Partition is the state of one partition as the image holds it. The slices
// are shared with the image and must not be modified.
type Partition struct {
	// ID is the partition's index in its topic.
	ID int32
	// Replicas is the replica assignment in preference order.
	Replicas []int32
	// ISR is the in-sync replica set, a subset of Replicas.
	ISR []int32
	// RemovingReplicas and AddingReplicas describe a reassignment in
	// progress; both are subsets of Replicas.
	RemovingReplicas []int32
	AddingReplicas   []int32
	// Leader is the leader's broker id, a member of ISR, or NoLeader.
	Leader int32
	// LeaderEpoch grows by one with every leader election.
	LeaderEpoch int32
	// PartitionEpoch grows by one with every change.
	PartitionEpoch int32
	// ELR and LastKnownELR are KIP-966's eligible leader replicas (disjoint
	// from ISR) and last known ELR.
	ELR          []int32
	LastKnownELR []int32
}

// HasLeader reports whether the partition has a leader.
func (p *Partition) HasLeader() bool { return p.Leader != NoLeader }

// record is the PartitionRecord that recreates p in topic.
func (p *Partition) record(topic UUID) *PartitionRecord {
	return &PartitionRecord{
		TopicID:          topic,
		Partition:        p.ID,
		Replicas:         p.Replicas,
		ISR:              p.ISR,
		RemovingReplicas: p.RemovingReplicas,
		AddingReplicas:   p.AddingReplicas,
		Leader:           p.Leader,
		LeaderEpoch:      p.LeaderEpoch,
		PartitionEpoch:   p.PartitionEpoch,
		ELR:              p.ELR,
		LastKnownELR:     p.LastKnownELR,
	}
}

// equal compares two partitions field by field (nil and empty lists are
// equal).
func (p *Partition) equal(o *Partition) bool {
	return p.ID == o.ID && p.Leader == o.Leader && p.LeaderEpoch == o.LeaderEpoch &&
		p.PartitionEpoch == o.PartitionEpoch &&
		slices.Equal(p.Replicas, o.Replicas) && slices.Equal(p.ISR, o.ISR) &&
		slices.Equal(p.RemovingReplicas, o.RemovingReplicas) &&
		slices.Equal(p.AddingReplicas, o.AddingReplicas) &&
		slices.Equal(p.ELR, o.ELR) && slices.Equal(p.LastKnownELR, o.LastKnownELR)
}

// newPartition builds a partition whose six id lists share one allocation
// that nothing else references, so the image never aliases a caller's
// record.
func newPartition(id int32, leader, leaderEpoch, partitionEpoch int32, replicas, isr, removing, adding, elr, lastKnownELR []int32) *Partition {
	lists := [...][]int32{replicas, isr, removing, adding, elr, lastKnownELR}
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	backing := make([]int32, 0, total)
	var owned [len(lists)][]int32
	for i, l := range lists {
		start := len(backing)
		backing = append(backing, l...)
		owned[i] = backing[start:len(backing):len(backing)]
	}
	return &Partition{
		ID:               id,
		Replicas:         owned[0],
		ISR:              owned[1],
		RemovingReplicas: owned[2],
		AddingReplicas:   owned[3],
		Leader:           leader,
		LeaderEpoch:      leaderEpoch,
		PartitionEpoch:   partitionEpoch,
		ELR:              owned[4],
		LastKnownELR:     owned[5],
	}
}

// partitionFromRecord builds the state a PartitionRecord describes.
func partitionFromRecord(r *PartitionRecord) *Partition {
	return newPartition(r.Partition, r.Leader, r.LeaderEpoch, r.PartitionEpoch,
		r.Replicas, r.ISR, r.RemovingReplicas, r.AddingReplicas, r.ELR, r.LastKnownELR)
}
