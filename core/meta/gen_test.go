package meta

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/quota"
)

// Generators of arbitrary records (any field values, for the codec) and of
// valid record sequences (for the image).

func genUUID() *rapid.Generator[UUID] {
	return rapid.Custom(func(t *rapid.T) UUID {
		var u UUID
		copy(u[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "uuid"))
		return u
	})
}

// genIDs draws a non-nil list of int32s of any value.
func genIDs() *rapid.Generator[[]int32] {
	return rapid.Custom(func(t *rapid.T) []int32 {
		ids := rapid.SliceOfN(rapid.Int32(), 0, 8).Draw(t, "ids")
		if ids == nil {
			ids = []int32{}
		}
		return ids
	})
}

// genOptionalIDs draws nil (no change) or a list.
func genOptionalIDs() *rapid.Generator[[]int32] {
	return rapid.Custom(func(t *rapid.T) []int32 {
		if rapid.Bool().Draw(t, "set") {
			return genIDs().Draw(t, "list")
		}
		return nil
	})
}

func genString() *rapid.Generator[string] {
	return rapid.OneOf(rapid.StringN(0, 12, -1), rapid.SampledFrom([]string{"", "orders", "PLAINTEXT", "ü☃"}))
}

func genInt16() *rapid.Generator[int16] { return rapid.Int16() }

// genBytes draws non-nil bytes of any value.
func genBytes() *rapid.Generator[[]byte] {
	return rapid.Custom(func(t *rapid.T) []byte {
		return append([]byte{}, rapid.SliceOfN(rapid.Byte(), 0, 70).Draw(t, "bytes")...)
	})
}

func genArbitraryRecord(typ RecordType) *rapid.Generator[Record] {
	return rapid.Custom(func(t *rapid.T) Record {
		switch typ {
		case TypeRegisterBroker:
			r := &RegisterBrokerRecord{
				BrokerID:             rapid.Int32().Draw(t, "id"),
				IncarnationID:        genUUID().Draw(t, "inc"),
				BrokerEpoch:          rapid.Int64().Draw(t, "epoch"),
				Endpoints:            []Endpoint{},
				Features:             []FeatureRange{},
				Rack:                 genString().Draw(t, "rack"),
				Fenced:               rapid.Bool().Draw(t, "fenced"),
				InControlledShutdown: rapid.Bool().Draw(t, "cs"),
			}
			for range rapid.IntRange(0, 3).Draw(t, "endpoints") {
				r.Endpoints = append(r.Endpoints, Endpoint{
					Name: genString().Draw(t, "name"), Host: genString().Draw(t, "host"),
					Port: rapid.Uint16().Draw(t, "port"), SecurityProtocol: SecurityProtocol(genInt16().Draw(t, "sp")),
				})
			}
			for range rapid.IntRange(0, 3).Draw(t, "features") {
				r.Features = append(r.Features, FeatureRange{
					Name: genString().Draw(t, "name"), MinVersion: genInt16().Draw(t, "min"), MaxVersion: genInt16().Draw(t, "max"),
				})
			}
			return r
		case TypeUnregisterBroker:
			return &UnregisterBrokerRecord{BrokerID: rapid.Int32().Draw(t, "id"), BrokerEpoch: rapid.Int64().Draw(t, "epoch")}
		case TypeFenceBroker:
			return &FenceBrokerRecord{BrokerID: rapid.Int32().Draw(t, "id"), BrokerEpoch: rapid.Int64().Draw(t, "epoch")}
		case TypeUnfenceBroker:
			return &UnfenceBrokerRecord{BrokerID: rapid.Int32().Draw(t, "id"), BrokerEpoch: rapid.Int64().Draw(t, "epoch")}
		case TypeBrokerRegistrationChange:
			return &BrokerRegistrationChangeRecord{
				BrokerID: rapid.Int32().Draw(t, "id"), BrokerEpoch: rapid.Int64().Draw(t, "epoch"),
				Fenced:               FlagChange(rapid.Int8().Draw(t, "fenced")),
				InControlledShutdown: FlagChange(rapid.Int8().Draw(t, "cs")),
			}
		case TypeTopic:
			return &TopicRecord{Name: genString().Draw(t, "name"), TopicID: genUUID().Draw(t, "id")}
		case TypePartition:
			return &PartitionRecord{
				TopicID: genUUID().Draw(t, "topic"), Partition: rapid.Int32().Draw(t, "partition"),
				Replicas: genIDs().Draw(t, "replicas"), ISR: genIDs().Draw(t, "isr"),
				RemovingReplicas: genIDs().Draw(t, "removing"), AddingReplicas: genIDs().Draw(t, "adding"),
				Leader: rapid.Int32().Draw(t, "leader"), LeaderEpoch: rapid.Int32().Draw(t, "le"),
				PartitionEpoch: rapid.Int32().Draw(t, "pe"),
				ELR:            genIDs().Draw(t, "elr"), LastKnownELR: genIDs().Draw(t, "lkelr"),
			}
		case TypePartitionChange:
			r := &PartitionChangeRecord{
				TopicID: genUUID().Draw(t, "topic"), Partition: rapid.Int32().Draw(t, "partition"),
				ISR: genOptionalIDs().Draw(t, "isr"), Replicas: genOptionalIDs().Draw(t, "replicas"),
				RemovingReplicas: genOptionalIDs().Draw(t, "removing"), AddingReplicas: genOptionalIDs().Draw(t, "adding"),
				ELR: genOptionalIDs().Draw(t, "elr"), LastKnownELR: genOptionalIDs().Draw(t, "lkelr"),
			}
			if rapid.Bool().Draw(t, "leaderSet") {
				r.Leader = new(rapid.Int32().Draw(t, "leader"))
			}
			return r
		case TypeConfig:
			r := &ConfigRecord{
				ResourceType: ConfigResourceType(rapid.Int8().Draw(t, "type")),
				ResourceName: genString().Draw(t, "resource"), Key: genString().Draw(t, "key"),
			}
			if rapid.Bool().Draw(t, "set") {
				r.Value = new(genString().Draw(t, "value"))
			}
			return r
		case TypeRemoveTopic:
			return &RemoveTopicRecord{TopicID: genUUID().Draw(t, "id")}
		case TypeProducerIDs:
			return &ProducerIDsRecord{
				BrokerID: rapid.Int32().Draw(t, "id"), BrokerEpoch: rapid.Int64().Draw(t, "epoch"),
				NextProducerID: rapid.Int64().Draw(t, "next"),
			}
		case TypeFeatureLevel:
			return &FeatureLevelRecord{Name: genString().Draw(t, "name"), Level: genInt16().Draw(t, "level")}
		case TypeNoOp:
			_ = rapid.Bool().Draw(t, "unused") // rapid wants every generator to draw
			return &NoOpRecord{}
		case TypeAccessControlEntry:
			return &AccessControlEntryRecord{
				ID:           genUUID().Draw(t, "id"),
				ResourceType: kmsg.ACLResourceType(rapid.Int8().Draw(t, "rt")), ResourceName: genString().Draw(t, "name"),
				PatternType: kmsg.ACLResourcePatternType(rapid.Int8().Draw(t, "pt")), Principal: genString().Draw(t, "principal"),
				Host: genString().Draw(t, "host"), Operation: kmsg.ACLOperation(rapid.Int8().Draw(t, "op")),
				PermissionType: kmsg.ACLPermissionType(rapid.Int8().Draw(t, "perm")),
			}
		case TypeRemoveAccessControlEntry:
			return &RemoveAccessControlEntryRecord{ID: genUUID().Draw(t, "id")}
		case TypeUserScramCredential:
			return &UserScramCredentialRecord{
				Name: genString().Draw(t, "name"), Mechanism: ScramMechanism(rapid.Int8().Draw(t, "mech")),
				Salt: genBytes().Draw(t, "salt"), StoredKey: genBytes().Draw(t, "stored"), ServerKey: genBytes().Draw(t, "server"),
				Iterations: rapid.Int32().Draw(t, "iterations"),
			}
		case TypeRemoveUserScramCredential:
			return &RemoveUserScramCredentialRecord{Name: genString().Draw(t, "name"), Mechanism: ScramMechanism(rapid.Int8().Draw(t, "mech"))}
		case TypeClientQuota:
			r := &ClientQuotaRecord{
				Entity: []ClientQuotaEntityData{}, Key: genString().Draw(t, "key"),
				Value: rapid.Float64().Draw(t, "value"), Remove: rapid.Bool().Draw(t, "remove"),
			}
			for range rapid.IntRange(0, 3).Draw(t, "components") {
				c := ClientQuotaEntityData{EntityType: genString().Draw(t, "type")}
				if rapid.Bool().Draw(t, "named") {
					c.EntityName = new(genString().Draw(t, "entityName"))
				}
				r.Entity = append(r.Entity, c)
			}
			return r
		}
		panic(fmt.Sprintf("no generator for %v", typ))
	})
}

// allTypes lists every record type, in type order.
func allTypes() []RecordType {
	types := make([]RecordType, 0, len(recordSpecs))
	for typ := range recordSpecs {
		types = append(types, typ)
	}
	slices.Sort(types)
	return types
}

func genAnyRecord() *rapid.Generator[Record] {
	return rapid.Custom(func(t *rapid.T) Record {
		typ := rapid.SampledFrom(allTypes()).Draw(t, "type")
		return genArbitraryRecord(typ).Draw(t, "record")
	})
}

// Pools that make valid records collide often: few brokers, few topic names,
// few config keys.
var (
	brokerPool  = []int32{0, 1, 2, 3, 4, 5}
	topicPool   = []string{"a", "b", "orders", "payments", "x.y", "z_1"}
	configKeys  = []string{"cleanup.policy", "retention.ms", "min.insync.replicas"}
	featurePool = []string{"metadata.version", "kraft.version", "transaction.version"}
)

// subsetOf draws a duplicate-free subset of from, in a random order.
func subsetOf(t *rapid.T, from []int32, minLen int, label string) []int32 {
	if len(from) < minLen {
		minLen = len(from)
	}
	perm := rapid.Permutation(from).Draw(t, label+"Perm")
	n := rapid.IntRange(minLen, len(from)).Draw(t, label+"Len")
	return slices.Clone(perm[:n])
}

func without(from, drop []int32) []int32 {
	out := []int32{}
	for _, id := range from {
		if !slices.Contains(drop, id) {
			out = append(out, id)
		}
	}
	return out
}

// genPartitionState draws a valid partition state over the broker pool.
func genPartitionState(t *rapid.T) (replicas, isr, removing, adding, elr, lastKnown []int32, leader int32) {
	replicas = subsetOf(t, brokerPool, 1, "replicas")
	if len(replicas) > 3 {
		replicas = replicas[:3]
	}
	isr = subsetOf(t, replicas, 0, "isr")
	leader = NoLeader
	if len(isr) > 0 && rapid.IntRange(0, 4).Draw(t, "noLeader") > 0 {
		leader = rapid.SampledFrom(isr).Draw(t, "leader")
	}
	elr = subsetOf(t, without(replicas, isr), 0, "elr")
	lastKnown = subsetOf(t, replicas, 0, "lastKnown")
	if rapid.IntRange(0, 3).Draw(t, "reassigning") == 0 {
		removing = subsetOf(t, replicas, 0, "removing")
		adding = subsetOf(t, without(replicas, removing), 0, "adding")
	} else {
		removing, adding = []int32{}, []int32{}
	}
	return
}

// candidateKinds weighs genCandidate's cases: mostly partition work, as in
// a real log, with removals rare enough that images grow.
var candidateKinds = []int{
	9, 7, 5, 0, 9, 7, 11, 9, 7, 5, 9, 13, 0, 9, 2, 3, 4, 9, 7, 11, 1, 12, 13, 9, 0, 7, 11, 5,
	14, 14, 15, 16, 16, 17, 18, 18,
}

// Pools for the security records.
var (
	principalPool = []string{"User:alice", "User:bob", acl.WildcardPrincipal}
	scramUsers    = []string{"alice", "bob", "carol"}
	quotaKeys     = []quota.Key{quota.ProducerByteRate, quota.ConsumerByteRate, quota.RequestPercentage}
)

// genSecurityCandidate draws a security record likely to be valid on img.
func genSecurityCandidate(t *rapid.T, img *Image, kind int) Record {
	switch kind {
	case 14:
		id := genUUID().Draw(t, "aclID")
		if rapid.IntRange(0, 9).Draw(t, "reuseID") == 0 {
			for existing := range img.ACLIDs() {
				id = existing
				break
			}
		}
		return AccessControlEntryFor(id, acl.Binding{
			Principal: rapid.SampledFrom(principalPool).Draw(t, "principal"), Host: "*",
			ResourceType: rapid.SampledFrom([]kmsg.ACLResourceType{kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup}).Draw(t, "rt"),
			ResourceName: rapid.SampledFrom(topicPool).Draw(t, "resource"),
			PatternType:  rapid.SampledFrom([]kmsg.ACLResourcePatternType{kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed}).Draw(t, "pt"),
			Operation:    rapid.SampledFrom([]kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationAll}).Draw(t, "op"),
			Permission:   rapid.SampledFrom([]kmsg.ACLPermissionType{kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny}).Draw(t, "perm"),
		})
	case 15:
		var ids []UUID
		for id := range img.ACLIDs() {
			ids = append(ids, id)
		}
		if len(ids) == 0 || rapid.IntRange(0, 4).Draw(t, "removeUnknownACL") == 0 {
			return &RemoveAccessControlEntryRecord{ID: genUUID().Draw(t, "aclID")}
		}
		return &RemoveAccessControlEntryRecord{ID: rapid.SampledFrom(ids).Draw(t, "aclID")}
	case 16:
		m := rapid.SampledFrom([]ScramMechanism{ScramSHA256, ScramSHA512}).Draw(t, "mech")
		return &UserScramCredentialRecord{
			Name: rapid.SampledFrom(scramUsers).Draw(t, "user"), Mechanism: m,
			Salt:       rapid.SliceOfN(rapid.Byte(), 1, 8).Draw(t, "salt"),
			StoredKey:  rapid.SliceOfN(rapid.Byte(), m.keyBytes(), m.keyBytes()).Draw(t, "stored"),
			ServerKey:  rapid.SliceOfN(rapid.Byte(), m.keyBytes(), m.keyBytes()).Draw(t, "server"),
			Iterations: rapid.Int32Range(4096, 8192).Draw(t, "iterations"),
		}
	case 17:
		return &RemoveUserScramCredentialRecord{
			Name:      rapid.SampledFrom(scramUsers).Draw(t, "user"),
			Mechanism: rapid.SampledFrom([]ScramMechanism{ScramSHA256, ScramSHA512}).Draw(t, "mech"),
		}
	default:
		var e quota.Entity
		switch rapid.IntRange(0, 3).Draw(t, "entityShape") {
		case 0:
			e.User = quota.Named(rapid.SampledFrom(scramUsers).Draw(t, "quotaUser"))
		case 1:
			e.User = quota.Default()
		case 2:
			e.ClientID = quota.Named("app")
		default:
			e.User, e.ClientID = quota.Named("alice"), quota.Default()
		}
		r := &ClientQuotaRecord{Entity: QuotaEntityData(e), Key: string(rapid.SampledFrom(quotaKeys).Draw(t, "quotaKey"))}
		if rapid.IntRange(0, 3).Draw(t, "quotaRemove") == 0 {
			r.Remove = true
		} else {
			r.Value = float64(rapid.IntRange(1, 100).Draw(t, "quotaValue"))
		}
		return r
	}
}

// genCandidate draws a record that is likely (not certain) to be valid on
// img.
func genCandidate(t *rapid.T, img *Image) Record {
	var brokers []BrokerRegistration
	for b := range img.Brokers() {
		brokers = append(brokers, b)
	}
	var topics []*TopicImage
	for tp := range img.Topics() {
		topics = append(topics, tp)
	}
	pickBroker := func() (int32, int64, bool) {
		if len(brokers) == 0 {
			return rapid.SampledFrom(brokerPool).Draw(t, "broker"), 0, false
		}
		b := rapid.SampledFrom(brokers).Draw(t, "broker")
		epoch := b.Epoch
		if rapid.IntRange(0, 9).Draw(t, "wrongEpoch") == 0 {
			epoch++
		}
		return b.ID, epoch, true
	}
	pickPartition := func() (*TopicImage, Partition, bool) {
		if len(topics) == 0 {
			return nil, Partition{}, false
		}
		tp := rapid.SampledFrom(topics).Draw(t, "topic")
		if tp.NumPartitions() == 0 {
			return tp, Partition{}, false
		}
		p, _ := tp.Partition(rapid.Int32Range(0, int32(tp.NumPartitions()-1)).Draw(t, "partition"))
		return tp, p, true
	}
	switch kind := rapid.SampledFrom(candidateKinds).Draw(t, "kind"); kind {
	case 0:
		id := rapid.SampledFrom(brokerPool).Draw(t, "broker")
		epoch := rapid.Int64Range(0, 10).Draw(t, "epoch")
		if cur, ok := img.Broker(id); ok {
			epoch = cur.Epoch + rapid.Int64Range(1, 3).Draw(t, "epochStep")
		}
		r := &RegisterBrokerRecord{
			BrokerID: id, IncarnationID: genUUID().Draw(t, "inc"), BrokerEpoch: epoch,
			Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: fmt.Sprintf("host%d", id), Port: uint16(9092 + id)}},
			Features:  []FeatureRange{{Name: "metadata.version", MinVersion: 1, MaxVersion: rapid.Int16Range(1, 9).Draw(t, "mv")}},
			Rack:      rapid.SampledFrom([]string{"", "r1", "r2"}).Draw(t, "rack"),
			Fenced:    rapid.Bool().Draw(t, "fenced"),
		}
		if rapid.Bool().Draw(t, "twoListeners") {
			r.Endpoints = append(r.Endpoints, Endpoint{Name: "CONTROLLER", Host: "h", Port: 9093, SecurityProtocol: SecuritySSL})
		}
		return r
	case 1:
		id, epoch, _ := pickBroker()
		return &UnregisterBrokerRecord{BrokerID: id, BrokerEpoch: epoch}
	case 2:
		id, epoch, _ := pickBroker()
		return &FenceBrokerRecord{BrokerID: id, BrokerEpoch: epoch}
	case 3:
		id, epoch, _ := pickBroker()
		return &UnfenceBrokerRecord{BrokerID: id, BrokerEpoch: epoch}
	case 4:
		id, epoch, _ := pickBroker()
		flags := []FlagChange{FlagClear, FlagUnchanged, FlagSet}
		return &BrokerRegistrationChangeRecord{BrokerID: id, BrokerEpoch: epoch,
			Fenced: rapid.SampledFrom(flags).Draw(t, "fenced"), InControlledShutdown: rapid.SampledFrom(flags).Draw(t, "cs")}
	case 5:
		name := fmt.Sprintf("t%d", img.NumTopics())
		if rapid.IntRange(0, 3).Draw(t, "poolName") == 0 {
			name = rapid.SampledFrom(topicPool).Draw(t, "name")
		}
		return &TopicRecord{Name: name, TopicID: genUUID().Draw(t, "id")}
	case 7:
		tp, cur, exists := pickPartition()
		if tp == nil {
			return &NoOpRecord{}
		}
		replicas, isr, removing, adding, elr, lastKnown, leader := genPartitionState(t)
		r := &PartitionRecord{TopicID: tp.ID(), Partition: int32(tp.NumPartitions()),
			Replicas: replicas, ISR: isr, RemovingReplicas: removing, AddingReplicas: adding,
			Leader: leader, ELR: elr, LastKnownELR: lastKnown,
			LeaderEpoch: rapid.Int32Range(0, 5).Draw(t, "le"), PartitionEpoch: rapid.Int32Range(0, 5).Draw(t, "pe")}
		if exists && rapid.IntRange(0, 3).Draw(t, "replace") == 0 {
			r.Partition = cur.ID
			r.LeaderEpoch = cur.LeaderEpoch + rapid.Int32Range(0, 2).Draw(t, "leStep")
			r.PartitionEpoch = cur.PartitionEpoch + rapid.Int32Range(1, 2).Draw(t, "peStep")
		}
		return r
	case 9:
		tp, cur, exists := pickPartition()
		if !exists {
			return &NoOpRecord{}
		}
		r := &PartitionChangeRecord{TopicID: tp.ID(), Partition: cur.ID}
		replicas, isr, removing, adding, elr, lastKnown, leader := genPartitionState(t)
		if rapid.IntRange(0, 3).Draw(t, "changeReplicas") == 0 {
			r.Replicas, r.RemovingReplicas, r.AddingReplicas = replicas, removing, adding
		} else {
			replicas = cur.Replicas
			isr = subsetOf(t, replicas, 0, "isr2")
			elr = subsetOf(t, without(replicas, isr), 0, "elr2")
			lastKnown = subsetOf(t, replicas, 0, "lastKnown2")
			leader = NoLeader
			if len(isr) > 0 && rapid.Bool().Draw(t, "hasLeader") {
				leader = rapid.SampledFrom(isr).Draw(t, "leader2")
			}
		}
		r.ISR = isr
		if rapid.Bool().Draw(t, "setLeader") {
			r.Leader = new(leader)
		}
		if rapid.Bool().Draw(t, "setELR") {
			r.ELR, r.LastKnownELR = elr, lastKnown
		}
		return r
	case 11:
		r := &ConfigRecord{Key: rapid.SampledFrom(configKeys).Draw(t, "key")}
		switch rapid.IntRange(0, 2).Draw(t, "resource") {
		case 0:
			r.ResourceType, r.ResourceName = ConfigResourceTopic, rapid.SampledFrom(topicPool).Draw(t, "topicName")
			if len(topics) > 0 && rapid.Bool().Draw(t, "liveTopic") {
				r.ResourceName = rapid.SampledFrom(topics).Draw(t, "topic").Name()
			}
		case 1:
			r.ResourceType, r.ResourceName = ConfigResourceBroker, fmt.Sprint(rapid.SampledFrom(brokerPool).Draw(t, "broker"))
		default:
			r.ResourceType = ConfigResourceBroker
		}
		if rapid.IntRange(0, 3).Draw(t, "delete") > 0 {
			r.Value = new(rapid.SampledFrom([]string{"1", "2", "compact", "delete"}).Draw(t, "value"))
		}
		return r
	case 12:
		if len(topics) == 0 || rapid.IntRange(0, 4).Draw(t, "removeUnknown") == 0 {
			return &RemoveTopicRecord{TopicID: genUUID().Draw(t, "id")}
		}
		return &RemoveTopicRecord{TopicID: rapid.SampledFrom(topics).Draw(t, "topic").ID()}
	case 14, 15, 16, 17, 18:
		return genSecurityCandidate(t, img, kind)
	default:
		if rapid.Bool().Draw(t, "producerIDs") {
			next := img.ProducerIDs().NextProducerID + rapid.Int64Range(0, 1000).Draw(t, "block")
			id, epoch, _ := pickBroker()
			return &ProducerIDsRecord{BrokerID: id, BrokerEpoch: epoch, NextProducerID: next}
		}
		if rapid.IntRange(0, 3).Draw(t, "noop") == 0 {
			return &NoOpRecord{}
		}
		return &FeatureLevelRecord{Name: rapid.SampledFrom(featurePool).Draw(t, "feature"), Level: rapid.Int16Range(0, 4).Draw(t, "level")}
	}
}

// genValidRecords draws up to n candidates and keeps those that replay,
// returning the valid sequence and the image it produces (one Apply per
// record, the simplest path).
func genValidRecords(t *rapid.T, n int) ([]Record, *Image) {
	img := Empty()
	var recs []Record
	for range n {
		rec := genCandidate(t, img)
		d := img.NewDelta()
		if err := d.Replay(rec); err != nil {
			continue
		}
		recs = append(recs, rec)
		img = d.Apply(positionOf(len(recs) - 1))
	}
	return recs, img
}

// positionOf is the position tests give the i-th record of a sequence: a
// new epoch every 10 records, as leader changes would.
func positionOf(i int) Position { return Position{Offset: int64(i), Epoch: int32(1 + i/10)} }
