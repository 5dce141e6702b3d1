package meta

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// seedRecords is one record of every type, with the fields set, for the
// fuzz corpus and the examples.
func seedRecords() []Record {
	id := UUID{0: 0x5e, 15: 0xed}
	return []Record{
		&RegisterBrokerRecord{BrokerID: 1, IncarnationID: UUID{1, 2, 3}, BrokerEpoch: 42,
			Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}, {Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093, SecurityProtocol: SecuritySSL}},
			Features:  []FeatureRange{{Name: "metadata.version", MinVersion: 1, MaxVersion: 7}},
			Rack:      "r1", Fenced: true},
		&UnregisterBrokerRecord{BrokerID: 1, BrokerEpoch: 42},
		&FenceBrokerRecord{BrokerID: 2, BrokerEpoch: 7},
		&UnfenceBrokerRecord{BrokerID: 2, BrokerEpoch: 7},
		&BrokerRegistrationChangeRecord{BrokerID: 3, BrokerEpoch: 9, Fenced: FlagClear, InControlledShutdown: FlagSet},
		&TopicRecord{Name: "orders", TopicID: id},
		&PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, RemovingReplicas: []int32{3},
			AddingReplicas: []int32{}, Leader: 1, LeaderEpoch: 3, PartitionEpoch: 8, ELR: []int32{3}, LastKnownELR: []int32{}},
		&PartitionRecord{TopicID: id, Partition: 1, Replicas: []int32{2}, ISR: []int32{2}, RemovingReplicas: []int32{},
			AddingReplicas: []int32{}, Leader: 2},
		&PartitionChangeRecord{TopicID: id, Partition: 0, Leader: new(int32(2)), ISR: []int32{2}, Replicas: []int32{1, 2, 3},
			RemovingReplicas: []int32{}, AddingReplicas: []int32{}, ELR: []int32{1}, LastKnownELR: []int32{}},
		&PartitionChangeRecord{TopicID: id, Partition: 1, ISR: []int32{}},
		&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "orders", Key: "cleanup.policy", Value: new("compact")},
		&ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "", Key: "log.retention.ms"},
		&RemoveTopicRecord{TopicID: id},
		&ProducerIDsRecord{BrokerID: 1, BrokerEpoch: 42, NextProducerID: 1000},
		&FeatureLevelRecord{Name: "metadata.version", Level: 7},
		&NoOpRecord{},
		&AccessControlEntryRecord{ID: UUID{0: 0xac}, ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders",
			PatternType: kmsg.ACLResourcePatternTypePrefixed, Principal: "User:alice", Host: "*",
			Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow},
		&RemoveAccessControlEntryRecord{ID: UUID{0: 0xac}},
		&UserScramCredentialRecord{Name: "alice", Mechanism: ScramSHA256, Salt: []byte("salt"),
			StoredKey: make([]byte, 32), ServerKey: make([]byte, 32), Iterations: 4096},
		&RemoveUserScramCredentialRecord{Name: "alice", Mechanism: ScramSHA256},
		&ClientQuotaRecord{Entity: []ClientQuotaEntityData{{EntityType: "user", EntityName: new("alice")}, {EntityType: "client-id"}},
			Key: "producer_byte_rate", Value: 1024},
		&ClientQuotaRecord{Entity: []ClientQuotaEntityData{{EntityType: "user"}}, Key: "request_percentage", Remove: true},
	}
}

type fuzzSeed struct {
	name  string
	value []byte
}

// fuzzSeeds are every seed record at every version it encodes at, and some
// broken values.
func fuzzSeeds() []fuzzSeed {
	var seeds []fuzzSeed
	for i, rec := range seedRecords() {
		latest, _ := LatestVersion(rec.Type())
		for v := int16(0); v <= latest; v++ {
			value, err := EncodeRecordVersion(nil, rec, v)
			if err != nil {
				continue
			}
			seeds = append(seeds, fuzzSeed{name: seedName(i, rec, v), value: value})
		}
	}
	topic := EncodeRecord(nil, &TopicRecord{Name: "t", TopicID: UUID{1}})
	seeds = append(seeds,
		fuzzSeed{"empty", nil},
		fuzzSeed{"truncated-topic", topic[:len(topic)-2]},
		fuzzSeed{"unknown-type", []byte{1, 99, 0, 0}},
		fuzzSeed{"too-new-version", []byte{1, 3, 9, 0}},
		fuzzSeed{"unknown-tag", append(topic[:len(topic)-1:len(topic)-1], 1, 30, 2, 0xaa, 0xbb)},
		fuzzSeed{"huge-length", []byte{1, 2, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
	)
	return seeds
}

func seedName(i int, rec Record, v int16) string {
	return string(rune('a'+i)) + "-" + rec.Type().String() + "-v" + string(rune('0'+v))
}

// FuzzDecodeRecord: no input makes DecodeRecord or Replay panic; a decoded
// record re-encodes (at its version) to a value that decodes to the same
// record; every error carries a sentinel.
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s.value)
	}
	base := baseImage(f)
	f.Fuzz(func(t *testing.T, value []byte) {
		rec, err := DecodeRecord(value)
		if err != nil {
			require.True(t, errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnknownRecordType) ||
				errors.Is(err, ErrUnsupportedVersion), "error without a sentinel: %v", err)
			return
		}
		h, _, err := ReadHeader(value)
		require.NoError(t, err)
		again, err := EncodeRecordVersion(nil, rec, h.Version)
		require.NoError(t, err)
		rec2, err := DecodeRecord(again)
		require.NoError(t, err)
		require.Equal(t, rec, rec2)

		d := base.NewDelta()
		if err := d.Replay(rec); err != nil {
			require.ErrorIs(t, err, ErrInvalidRecord)
			return
		}
		checkInvariants(t, d.Apply(base.Position()))
	})
}
