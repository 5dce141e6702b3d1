package meta

import (
	"math"
	"slices"
	"strconv"
)

// Bounds on what a record may describe. They are far above anything a sane
// cluster uses and exist so that a corrupt or hostile record cannot make
// validation or the image arbitrarily expensive.
const (
	// maxTopicNameLen is Kafka's limit on topic names, in bytes.
	maxTopicNameLen = 249
	// maxReplicasPerPartition bounds every id list of a partition.
	maxReplicasPerPartition = 1024
	// maxEndpointsPerBroker bounds a registration's listeners.
	maxEndpointsPerBroker = 64
	// maxFeaturesPerBroker bounds a registration's supported features.
	maxFeaturesPerBroker = 256
)

// ValidTopicName reports whether name follows Kafka's rule for topic
// names (validateTopicName).
func ValidTopicName(name string) bool { return validateTopicName(name) == nil }

// validateTopicName applies Kafka's rule: 1 to 249 characters of
// [a-zA-Z0-9._-], and neither "." nor "..".
func validateTopicName(name string) error {
	if name == "" || len(name) > maxTopicNameLen {
		return invalid(ErrInvalidRecord, "topic name of %d bytes (1..%d allowed)", len(name), maxTopicNameLen)
	}
	if name == "." || name == ".." {
		return invalid(ErrInvalidRecord, "topic name %q", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return invalid(ErrInvalidRecord, "topic name %q has character %q", name, c)
		}
	}
	return nil
}

// validateRegistration checks a RegisterBrokerRecord on its own.
func validateRegistration(r *RegisterBrokerRecord) error {
	if r.BrokerID < 0 {
		return invalid(ErrInvalidRecord, "broker id %d", r.BrokerID)
	}
	if r.BrokerEpoch < 0 {
		return invalid(ErrInvalidRecord, "broker epoch %d", r.BrokerEpoch)
	}
	if len(r.Endpoints) > maxEndpointsPerBroker {
		return invalid(ErrInvalidRecord, "%d endpoints (at most %d)", len(r.Endpoints), maxEndpointsPerBroker)
	}
	for i, e := range r.Endpoints {
		if e.Name == "" {
			return invalid(ErrInvalidRecord, "endpoint %d has no name", i)
		}
		if e.SecurityProtocol < SecurityPlaintext || e.SecurityProtocol > SecuritySASLSSL {
			return invalid(ErrInvalidRecord, "endpoint %q has security protocol %d", e.Name, e.SecurityProtocol)
		}
		for _, prev := range r.Endpoints[:i] {
			if prev.Name == e.Name {
				return invalid(ErrInvalidRecord, "endpoint %q listed twice", e.Name)
			}
		}
	}
	if len(r.Features) > maxFeaturesPerBroker {
		return invalid(ErrInvalidRecord, "%d features (at most %d)", len(r.Features), maxFeaturesPerBroker)
	}
	for i, f := range r.Features {
		if f.Name == "" || f.MinVersion > f.MaxVersion {
			return invalid(ErrInvalidRecord, "feature %d %q supports %d..%d", i, f.Name, f.MinVersion, f.MaxVersion)
		}
		for _, prev := range r.Features[:i] {
			if prev.Name == f.Name {
				return invalid(ErrInvalidRecord, "feature %q listed twice", f.Name)
			}
		}
	}
	return nil
}

// validateFlag checks a FlagChange value.
func validateFlag(name string, f FlagChange) error {
	if f < FlagClear || f > FlagSet {
		return invalid(ErrInvalidRecord, "%s change %d", name, f)
	}
	return nil
}

// validateConfigResource checks the resource of a ConfigRecord, except for
// the existence of a topic, which needs the image.
func validateConfigResource(r ConfigResource) error {
	switch r.Type {
	case ConfigResourceTopic:
		return validateTopicName(r.Name)
	case ConfigResourceBroker:
		if r.Name == "" {
			return nil // cluster-wide default
		}
		id, err := strconv.ParseInt(r.Name, 10, 32)
		if err != nil || id < 0 || strconv.FormatInt(id, 10) != r.Name {
			return invalid(ErrInvalidRecord, "broker config resource %q is not a broker id", r.Name)
		}
		return nil
	}
	return invalid(ErrInvalidRecord, "config resource type %d", r.Type)
}

// validatePartition checks the invariants of one partition's state:
//
//   - the partition id is not negative, the epochs are not negative;
//   - Replicas is non-empty; every list holds broker ids (>= 0) without
//     duplicates and within maxReplicasPerPartition;
//   - ISR, RemovingReplicas, AddingReplicas and ELR are subsets of
//     Replicas; RemovingReplicas and AddingReplicas are disjoint; ELR and ISR
//     are disjoint;
//   - the leader is NoLeader or a member of the ISR.
func validatePartition(p *Partition) error {
	if p.ID < 0 {
		return invalid(ErrInvalidPartition, "partition id %d", p.ID)
	}
	if p.LeaderEpoch < 0 || p.PartitionEpoch < 0 {
		return invalid(ErrInvalidPartition, "negative epoch (leader %d, partition %d)", p.LeaderEpoch, p.PartitionEpoch)
	}
	if len(p.Replicas) == 0 {
		return invalid(ErrInvalidPartition, "no replicas")
	}
	lists := []namedIDs{
		{"replicas", p.Replicas}, {"isr", p.ISR}, {"removing replicas", p.RemovingReplicas},
		{"adding replicas", p.AddingReplicas}, {"elr", p.ELR}, {"last known elr", p.LastKnownELR},
	}
	for _, l := range lists {
		if err := validateIDList(l.name, l.ids); err != nil {
			return err
		}
	}
	for _, l := range lists[1:5] {
		if id, ok := notSubset(l.ids, p.Replicas); ok {
			return invalid(ErrInvalidPartition, "%s member %d is not a replica (replicas %v)", l.name, id, p.Replicas)
		}
	}
	if id, ok := intersect(p.RemovingReplicas, p.AddingReplicas); ok {
		return invalid(ErrInvalidPartition, "replica %d both adding and removing", id)
	}
	if id, ok := intersect(p.ISR, p.ELR); ok {
		return invalid(ErrInvalidPartition, "replica %d both in isr and elr", id)
	}
	if p.Leader != NoLeader && !slices.Contains(p.ISR, p.Leader) {
		return invalid(ErrInvalidPartition, "leader %d not in isr %v", p.Leader, p.ISR)
	}
	return nil
}

// validateIDList checks one list of broker ids: bounded, non-negative, no
// duplicates.
func validateIDList(name string, ids []int32) error {
	if len(ids) > maxReplicasPerPartition {
		return invalid(ErrInvalidPartition, "%s has %d members (at most %d)", name, len(ids), maxReplicasPerPartition)
	}
	for _, id := range ids {
		if id < 0 {
			return invalid(ErrInvalidPartition, "%s has broker id %d", name, id)
		}
	}
	if id, ok := duplicate(ids); ok {
		return invalid(ErrInvalidPartition, "%s lists broker %d twice", name, id)
	}
	return nil
}

// smallList is the length up to which the set helpers compare pairwise
// instead of sorting: replica lists are almost always this short, and
// pairwise needs no allocation.
const smallList = 16

// duplicate returns an id listed twice, if any.
func duplicate(ids []int32) (int32, bool) {
	if len(ids) <= smallList {
		for i, id := range ids {
			if slices.Contains(ids[:i], id) {
				return id, true
			}
		}
		return 0, false
	}
	sorted := sortedCopy(ids)
	for i := 1; i < len(sorted); i++ {
		if sorted[i-1] == sorted[i] {
			return sorted[i], true
		}
	}
	return 0, false
}

// notSubset returns a member of sub that set lacks, if any.
func notSubset(sub, set []int32) (int32, bool) {
	if len(sub) == 0 {
		return 0, false
	}
	if len(set) <= smallList {
		for _, id := range sub {
			if !slices.Contains(set, id) {
				return id, true
			}
		}
		return 0, false
	}
	sorted := sortedCopy(set)
	for _, id := range sub {
		if _, found := slices.BinarySearch(sorted, id); !found {
			return id, true
		}
	}
	return 0, false
}

// intersect returns a member common to a and b, if any.
func intersect(a, b []int32) (int32, bool) {
	if len(a) == 0 || len(b) == 0 {
		return 0, false
	}
	if len(b) <= smallList {
		for _, id := range a {
			if slices.Contains(b, id) {
				return id, true
			}
		}
		return 0, false
	}
	sorted := sortedCopy(b)
	for _, id := range a {
		if _, found := slices.BinarySearch(sorted, id); found {
			return id, true
		}
	}
	return 0, false
}

// sortedCopy returns a sorted copy of ids.
func sortedCopy(ids []int32) []int32 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}

// mergeChange returns the state of p after a PartitionChangeRecord, with
// Kafka's epoch rules: the partition epoch always grows by one; the leader
// epoch grows by one when the record sets a leader, even the same one.
func mergeChange(p *Partition, r *PartitionChangeRecord) (*Partition, error) {
	pick := func(change, current []int32) []int32 {
		if change != nil {
			return change
		}
		return current
	}
	leader, leaderEpoch := p.Leader, p.LeaderEpoch
	if r.Leader != nil {
		if p.LeaderEpoch == math.MaxInt32 {
			return nil, invalid(ErrInvalidPartition, "leader epoch would overflow")
		}
		leader, leaderEpoch = *r.Leader, p.LeaderEpoch+1
	}
	if p.PartitionEpoch == math.MaxInt32 {
		return nil, invalid(ErrInvalidPartition, "partition epoch would overflow")
	}
	return newPartition(p.ID, leader, leaderEpoch, p.PartitionEpoch+1,
		pick(r.Replicas, p.Replicas), pick(r.ISR, p.ISR),
		pick(r.RemovingReplicas, p.RemovingReplicas), pick(r.AddingReplicas, p.AddingReplicas),
		pick(r.ELR, p.ELR), pick(r.LastKnownELR, p.LastKnownELR)), nil
}
