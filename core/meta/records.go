package meta

import (
	"fmt"
	"strconv"
)

// RecordType identifies a metadata record kind on the wire. The numbers are
// Kafka's metadata record API keys, so that a Strata record and its Kafka
// counterpart are easy to relate; the bodies are Strata's own encoding.
type RecordType uint16

// Record types. Gaps are Kafka record kinds Strata does not model yet.
const (
	TypeRegisterBroker            RecordType = 0
	TypeUnregisterBroker          RecordType = 1
	TypeTopic                     RecordType = 2
	TypePartition                 RecordType = 3
	TypeConfig                    RecordType = 4
	TypePartitionChange           RecordType = 5
	TypeAccessControlEntry        RecordType = 6
	TypeFenceBroker               RecordType = 7
	TypeUnfenceBroker             RecordType = 8
	TypeRemoveTopic               RecordType = 9
	TypeUserScramCredential       RecordType = 11
	TypeFeatureLevel              RecordType = 12
	TypeClientQuota               RecordType = 14
	TypeProducerIDs               RecordType = 15
	TypeRemoveAccessControlEntry  RecordType = 16
	TypeBrokerRegistrationChange  RecordType = 17
	TypeRemoveUserScramCredential RecordType = 18
	TypeNoOp                      RecordType = 20
)

// String names the record type as Kafka does ("PartitionChangeRecord").
func (t RecordType) String() string {
	if s, ok := recordSpecs[t]; ok {
		return s.name
	}
	return "RecordType(" + strconv.Itoa(int(t)) + ")"
}

// Record is one metadata record: a change to the cluster metadata image. The
// concrete types are the *...Record structs of this package; the set is
// closed. Records are plain values: build them, encode them with
// EncodeRecord, replay them with Delta.Replay.
type Record interface {
	// Type is the record's wire type.
	Type() RecordType
	// String describes the record deterministically (no pointers), for
	// errors and logs.
	String() string

	// appendBody appends the body at version v, or fails with
	// ErrFieldNotInVersion.
	appendBody(dst []byte, v int16) ([]byte, error)
	// readBody fills the record from a body at version v.
	readBody(r *reader, v int16)
}

// SecurityProtocol is a listener's security protocol, numbered as Kafka's
// SecurityProtocol ids.
type SecurityProtocol int16

// Security protocols.
const (
	SecurityPlaintext     SecurityProtocol = 0
	SecuritySSL           SecurityProtocol = 1
	SecuritySASLPlaintext SecurityProtocol = 2
	SecuritySASLSSL       SecurityProtocol = 3
)

// Endpoint is one listener a broker advertises.
type Endpoint struct {
	// Name is the listener name (PLAINTEXT, INTERNAL, ...); unique per broker.
	Name string
	// Host and Port are where clients reach the listener.
	Host string
	Port uint16
	// SecurityProtocol is the protocol spoken on the listener.
	SecurityProtocol SecurityProtocol
}

// FeatureRange is a feature a broker supports, with the range of levels it
// can run at.
type FeatureRange struct {
	Name       string
	MinVersion int16
	MaxVersion int16
}

// RegisterBrokerRecord registers (or re-registers) a broker: written when a
// broker's BrokerRegistration request is accepted. A re-registration replaces
// the previous one and must carry a higher epoch.
type RegisterBrokerRecord struct {
	BrokerID int32
	// IncarnationID is chosen by the broker process at startup, so the
	// controller can tell a restart from a retried request.
	IncarnationID UUID
	// BrokerEpoch is assigned by the controller (Kafka uses the offset of
	// this record) and grows with every registration of the broker.
	BrokerEpoch int64
	// Endpoints are the broker's advertised listeners.
	Endpoints []Endpoint
	// Features are the feature ranges the broker supports.
	Features []FeatureRange
	// Rack is the broker's rack, or "" for none.
	Rack string
	// Fenced is true for a broker that may not lead or be in an ISR yet. A
	// new registration is fenced until its first heartbeat catches up.
	Fenced bool
	// InControlledShutdown is true for a broker that asked to shut down and
	// is having its leaderships moved away.
	InControlledShutdown bool
}

// UnregisterBrokerRecord removes a broker's registration.
type UnregisterBrokerRecord struct {
	BrokerID    int32
	BrokerEpoch int64
}

// FenceBrokerRecord fences a registered broker (its session timed out).
type FenceBrokerRecord struct {
	BrokerID    int32
	BrokerEpoch int64
}

// UnfenceBrokerRecord unfences a registered broker (it caught up).
type UnfenceBrokerRecord struct {
	BrokerID    int32
	BrokerEpoch int64
}

// FlagChange is a tri-state change to a boolean in a
// BrokerRegistrationChangeRecord. The zero value leaves the flag alone.
type FlagChange int8

// Flag changes, numbered as Kafka's "Fenced" field: -1 clears, 0 leaves, 1
// sets.
const (
	FlagClear     FlagChange = -1
	FlagUnchanged FlagChange = 0
	FlagSet       FlagChange = 1
)

// BrokerRegistrationChangeRecord changes the flags of a registered broker.
type BrokerRegistrationChangeRecord struct {
	BrokerID    int32
	BrokerEpoch int64
	// Fenced: FlagSet fences, FlagClear unfences.
	Fenced FlagChange
	// InControlledShutdown: FlagSet marks the broker as shutting down.
	InControlledShutdown FlagChange
}

// TopicRecord creates a topic. Its partitions follow as PartitionRecords.
type TopicRecord struct {
	Name    string
	TopicID UUID
}

// PartitionRecord sets the whole state of one partition; it creates the
// partition, or replaces it (with a higher partition epoch and a leader epoch
// that does not go backwards). Snapshots are made of these.
type PartitionRecord struct {
	TopicID   UUID
	Partition int32
	// Replicas is the replica assignment in preference order.
	Replicas []int32
	// ISR is the in-sync replica set, a subset of Replicas.
	ISR []int32
	// RemovingReplicas and AddingReplicas describe a reassignment in
	// progress; both are subsets of Replicas.
	RemovingReplicas []int32
	AddingReplicas   []int32
	// Leader is the leader's broker id, or NoLeader.
	Leader int32
	// LeaderEpoch grows by one with every leader election.
	LeaderEpoch int32
	// PartitionEpoch grows by one with every change of the partition.
	PartitionEpoch int32
	// ELR is KIP-966's eligible leader replicas: replicas outside the ISR
	// that are known to hold the whole committed log. Version 1 and later.
	ELR []int32
	// LastKnownELR is KIP-966's last known ELR, kept for unclean recovery.
	// Version 1 and later.
	LastKnownELR []int32
}

// NoLeader is the leader id of a partition without a leader.
const NoLeader int32 = -1

// PartitionChangeRecord changes some fields of an existing partition. A nil
// pointer or slice leaves its field unchanged; a non-nil, empty slice sets an
// empty list. Replaying it always bumps the partition epoch by one, and bumps
// the leader epoch by one whenever Leader is set (even to the same broker),
// as Kafka's PartitionRegistration.merge does: that is how the controller
// forces an epoch bump, for example when a reassignment completes.
type PartitionChangeRecord struct {
	TopicID   UUID
	Partition int32
	// Leader is the new leader (NoLeader for none), or nil for no change.
	Leader *int32
	// ISR, Replicas, RemovingReplicas, AddingReplicas: the new lists, or nil.
	ISR              []int32
	Replicas         []int32
	RemovingReplicas []int32
	AddingReplicas   []int32
	// ELR and LastKnownELR: the new KIP-966 lists, or nil. Version 1.
	ELR          []int32
	LastKnownELR []int32
}

// ConfigResourceType is the kind of resource a config belongs to, numbered as
// Kafka's ConfigResource.Type.
type ConfigResourceType int8

// Config resource types. Cluster-wide defaults are, as in Kafka, the broker
// resource with an empty name (ClusterConfigResource).
const (
	ConfigResourceTopic  ConfigResourceType = 2
	ConfigResourceBroker ConfigResourceType = 4
)

// ConfigResource names a set of configs: a topic by name, a broker by its
// decimal id, or the cluster (broker type, empty name).
type ConfigResource struct {
	Type ConfigResourceType
	Name string
}

// ClusterConfigResource is the resource of cluster-wide default configs.
var ClusterConfigResource = ConfigResource{Type: ConfigResourceBroker, Name: ""}

// String formats the resource as "topic:orders", "broker:3" or "cluster".
func (r ConfigResource) String() string {
	switch {
	case r == ClusterConfigResource:
		return "cluster"
	case r.Type == ConfigResourceTopic:
		return "topic:" + r.Name
	case r.Type == ConfigResourceBroker:
		return "broker:" + r.Name
	}
	return "resource" + strconv.Itoa(int(r.Type)) + ":" + r.Name
}

// compareConfigResource orders resources by type, then name.
func compareConfigResource(a, b ConfigResource) int {
	if a.Type != b.Type {
		if a.Type < b.Type {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// ConfigRecord sets (Value non-nil) or deletes (Value nil) one config key of
// a resource.
type ConfigRecord struct {
	ResourceType ConfigResourceType
	ResourceName string
	Key          string
	Value        *string
}

// Resource returns the resource the record configures.
func (c *ConfigRecord) Resource() ConfigResource {
	return ConfigResource{Type: c.ResourceType, Name: c.ResourceName}
}

// RemoveTopicRecord deletes a topic, its partitions and its configs.
type RemoveTopicRecord struct {
	TopicID UUID
}

// ProducerIDsRecord allocates a block of producer ids to a broker: every id
// below NextProducerID is taken. NextProducerID only grows.
type ProducerIDsRecord struct {
	BrokerID       int32
	BrokerEpoch    int64
	NextProducerID int64
}

// FeatureLevelRecord sets the finalized level of a cluster feature; level 0
// removes it.
type FeatureLevelRecord struct {
	Name  string
	Level int16
}

// NoOpRecord changes nothing. A newly elected quorum leader writes one so
// that it can commit an entry of its own epoch.
type NoOpRecord struct{}

// Type implements Record.
func (*RegisterBrokerRecord) Type() RecordType { return TypeRegisterBroker }

// Type implements Record.
func (*UnregisterBrokerRecord) Type() RecordType { return TypeUnregisterBroker }

// Type implements Record.
func (*FenceBrokerRecord) Type() RecordType { return TypeFenceBroker }

// Type implements Record.
func (*UnfenceBrokerRecord) Type() RecordType { return TypeUnfenceBroker }

// Type implements Record.
func (*BrokerRegistrationChangeRecord) Type() RecordType { return TypeBrokerRegistrationChange }

// Type implements Record.
func (*TopicRecord) Type() RecordType { return TypeTopic }

// Type implements Record.
func (*PartitionRecord) Type() RecordType { return TypePartition }

// Type implements Record.
func (*PartitionChangeRecord) Type() RecordType { return TypePartitionChange }

// Type implements Record.
func (*ConfigRecord) Type() RecordType { return TypeConfig }

// Type implements Record.
func (*RemoveTopicRecord) Type() RecordType { return TypeRemoveTopic }

// Type implements Record.
func (*ProducerIDsRecord) Type() RecordType { return TypeProducerIDs }

// Type implements Record.
func (*FeatureLevelRecord) Type() RecordType { return TypeFeatureLevel }

// Type implements Record.
func (*NoOpRecord) Type() RecordType { return TypeNoOp }

// String implements Record.
func (r *RegisterBrokerRecord) String() string {
	return fmt.Sprintf("RegisterBrokerRecord{broker=%d incarnation=%v epoch=%d endpoints=%v features=%v rack=%q fenced=%t controlledShutdown=%t}",
		r.BrokerID, r.IncarnationID, r.BrokerEpoch, r.Endpoints, r.Features, r.Rack, r.Fenced, r.InControlledShutdown)
}

// String implements Record.
func (r *UnregisterBrokerRecord) String() string {
	return fmt.Sprintf("UnregisterBrokerRecord{broker=%d epoch=%d}", r.BrokerID, r.BrokerEpoch)
}

// String implements Record.
func (r *FenceBrokerRecord) String() string {
	return fmt.Sprintf("FenceBrokerRecord{broker=%d epoch=%d}", r.BrokerID, r.BrokerEpoch)
}

// String implements Record.
func (r *UnfenceBrokerRecord) String() string {
	return fmt.Sprintf("UnfenceBrokerRecord{broker=%d epoch=%d}", r.BrokerID, r.BrokerEpoch)
}

// String implements Record.
func (r *BrokerRegistrationChangeRecord) String() string {
	return fmt.Sprintf("BrokerRegistrationChangeRecord{broker=%d epoch=%d fenced=%d controlledShutdown=%d}",
		r.BrokerID, r.BrokerEpoch, r.Fenced, r.InControlledShutdown)
}

// String implements Record.
func (r *TopicRecord) String() string {
	return fmt.Sprintf("TopicRecord{name=%q id=%v}", r.Name, r.TopicID)
}

// String implements Record.
func (r *PartitionRecord) String() string {
	return fmt.Sprintf("PartitionRecord{topic=%v partition=%d replicas=%v isr=%v removing=%v adding=%v leader=%d leaderEpoch=%d partitionEpoch=%d elr=%v lastKnownELR=%v}",
		r.TopicID, r.Partition, r.Replicas, r.ISR, r.RemovingReplicas, r.AddingReplicas,
		r.Leader, r.LeaderEpoch, r.PartitionEpoch, r.ELR, r.LastKnownELR)
}

// namedIDs is one of a partition's lists of broker ids, with its name.
type namedIDs struct {
	name string
	ids  []int32
}

// String implements Record. Only the fields the record changes are listed.
func (r *PartitionChangeRecord) String() string {
	s := fmt.Sprintf("PartitionChangeRecord{topic=%v partition=%d", r.TopicID, r.Partition)
	if r.Leader != nil {
		s += fmt.Sprintf(" leader=%d", *r.Leader)
	}
	lists := []namedIDs{
		{"isr", r.ISR}, {"replicas", r.Replicas}, {"removing", r.RemovingReplicas},
		{"adding", r.AddingReplicas}, {"elr", r.ELR}, {"lastKnownELR", r.LastKnownELR},
	}
	for _, l := range lists {
		if l.ids != nil {
			s += fmt.Sprintf(" %s=%v", l.name, l.ids)
		}
	}
	return s + "}"
}

// String implements Record.
func (r *ConfigRecord) String() string {
	if r.Value == nil {
		return fmt.Sprintf("ConfigRecord{%v delete %q}", r.Resource(), r.Key)
	}
	return fmt.Sprintf("ConfigRecord{%v %q=%q}", r.Resource(), r.Key, *r.Value)
}

// String implements Record.
func (r *RemoveTopicRecord) String() string {
	return fmt.Sprintf("RemoveTopicRecord{id=%v}", r.TopicID)
}

// String implements Record.
func (r *ProducerIDsRecord) String() string {
	return fmt.Sprintf("ProducerIDsRecord{broker=%d epoch=%d next=%d}", r.BrokerID, r.BrokerEpoch, r.NextProducerID)
}

// String implements Record.
func (r *FeatureLevelRecord) String() string {
	return fmt.Sprintf("FeatureLevelRecord{%s=%d}", r.Name, r.Level)
}

// String implements Record.
func (*NoOpRecord) String() string { return "NoOpRecord{}" }
