package meta

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/quota"
)

var (
	ordersID   = UUID{0: 0xa}
	paymentsID = UUID{0: 0xb}
)

// baseImage is a small cluster: brokers 1-3, topic "orders" with two
// partitions, topic "payments" with one, a topic config, producer ids and a
// feature level.
func baseImage(t testing.TB) *Image {
	t.Helper()
	recs := []Record{
		&FeatureLevelRecord{Name: "metadata.version", Level: 3},
		&RegisterBrokerRecord{BrokerID: 1, BrokerEpoch: 10, Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h1", Port: 9092}}},
		&RegisterBrokerRecord{BrokerID: 2, BrokerEpoch: 20, Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h2", Port: 9092}}},
		&RegisterBrokerRecord{BrokerID: 3, BrokerEpoch: 30, Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h3", Port: 9092}}},
		&TopicRecord{Name: "orders", TopicID: ordersID},
		&PartitionRecord{TopicID: ordersID, Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 7},
		&PartitionRecord{TopicID: ordersID, Partition: 1, Replicas: []int32{2, 3, 1}, ISR: []int32{2, 3}, Leader: 2},
		&TopicRecord{Name: "payments", TopicID: paymentsID},
		&PartitionRecord{TopicID: paymentsID, Partition: 0, Replicas: []int32{3}, ISR: []int32{3}, Leader: 3},
		&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "orders", Key: "retention.ms", Value: new("1000")},
		&ProducerIDsRecord{BrokerID: 1, BrokerEpoch: 10, NextProducerID: 1000},
	}
	img, err := LoadSnapshot(Position{Offset: 100, Epoch: 2}, recs)
	require.NoError(t, err)
	return img
}

// TestReplayRefusesInvalidRecords: every invariant violation is refused with
// its sentinel and a message naming the record, and leaves the delta as it
// was.
func TestReplayRefusesInvalidRecords(t *testing.T) {
	unknownID := UUID{0: 0xff}
	cases := []struct {
		name string
		rec  Record
		want error
	}{
		{"change of unknown topic", &PartitionChangeRecord{TopicID: unknownID, Partition: 0, Leader: new(int32(1))}, ErrUnknownTopic},
		{"change of unknown partition", &PartitionChangeRecord{TopicID: ordersID, Partition: 9, Leader: new(int32(1))}, ErrUnknownPartition},
		{"leader not a replica", &PartitionChangeRecord{TopicID: ordersID, Partition: 0, Leader: new(int32(5))}, ErrInvalidPartition},
		{"leader not in isr", &PartitionChangeRecord{TopicID: ordersID, Partition: 1, Leader: new(int32(1))}, ErrInvalidPartition},
		{"isr not a subset of replicas", &PartitionChangeRecord{TopicID: ordersID, Partition: 0, ISR: []int32{1, 4}}, ErrInvalidPartition},
		{"isr shrinks past the leader", &PartitionChangeRecord{TopicID: ordersID, Partition: 0, ISR: []int32{2, 3}}, ErrInvalidPartition},
		{"duplicate replica", &PartitionChangeRecord{TopicID: ordersID, Partition: 0, Replicas: []int32{1, 2, 2}}, ErrInvalidPartition},
		{"replicas shrink past the isr", &PartitionChangeRecord{TopicID: ordersID, Partition: 0, Replicas: []int32{1, 2}}, ErrInvalidPartition},
		{"elr overlaps isr", &PartitionChangeRecord{TopicID: ordersID, Partition: 0, ELR: []int32{2}}, ErrInvalidPartition},
		{"elr outside replicas", &PartitionChangeRecord{TopicID: ordersID, Partition: 1, ELR: []int32{7}}, ErrInvalidPartition},
		{"negative leader", &PartitionChangeRecord{TopicID: ordersID, Partition: 0, Leader: new(int32(-2))}, ErrInvalidPartition},
		{"adding and removing overlap", &PartitionChangeRecord{TopicID: ordersID, Partition: 0, AddingReplicas: []int32{3}, RemovingReplicas: []int32{3}}, ErrInvalidPartition},
		{"leader epoch backwards", &PartitionRecord{TopicID: ordersID, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7}, ErrEpochBackwards},
		{"partition epoch backwards", &PartitionRecord{TopicID: ordersID, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 6}, ErrEpochBackwards},
		{"partition replaced without an epoch bump", &PartitionRecord{TopicID: ordersID, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 6, PartitionEpoch: 7}, ErrEpochBackwards},
		{"partition of unknown topic", &PartitionRecord{TopicID: unknownID, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}, ErrUnknownTopic},
		{"partition without replicas", &PartitionRecord{TopicID: ordersID, Partition: 2, Replicas: []int32{}, Leader: NoLeader}, ErrInvalidPartition},
		{"negative partition id", &PartitionRecord{TopicID: ordersID, Partition: -1, Replicas: []int32{1}, Leader: NoLeader}, ErrInvalidPartition},
		{"negative replica id", &PartitionRecord{TopicID: ordersID, Partition: 2, Replicas: []int32{-3}, Leader: NoLeader}, ErrInvalidPartition},
		{"too many replicas", &PartitionRecord{TopicID: ordersID, Partition: 2, Replicas: make([]int32, maxReplicasPerPartition+1), Leader: NoLeader}, ErrInvalidPartition},
		{"remove unknown topic", &RemoveTopicRecord{TopicID: unknownID}, ErrUnknownTopic},
		{"duplicate topic name", &TopicRecord{Name: "orders", TopicID: unknownID}, ErrDuplicateTopic},
		{"duplicate topic id", &TopicRecord{Name: "other", TopicID: ordersID}, ErrDuplicateTopic},
		{"same topic again", &TopicRecord{Name: "orders", TopicID: ordersID}, ErrDuplicateTopic},
		{"bad topic name", &TopicRecord{Name: "a/b", TopicID: unknownID}, ErrInvalidRecord},
		{"dot topic name", &TopicRecord{Name: "..", TopicID: unknownID}, ErrInvalidRecord},
		{"zero topic id", &TopicRecord{Name: "new"}, ErrInvalidRecord},
		{"broker epoch not increasing", &RegisterBrokerRecord{BrokerID: 2, BrokerEpoch: 20}, ErrEpochBackwards},
		{"negative broker id", &RegisterBrokerRecord{BrokerID: -1}, ErrInvalidRecord},
		{"duplicate listener", &RegisterBrokerRecord{BrokerID: 4, Endpoints: []Endpoint{{Name: "A"}, {Name: "A"}}}, ErrInvalidRecord},
		{"unknown security protocol", &RegisterBrokerRecord{BrokerID: 4, Endpoints: []Endpoint{{Name: "A", SecurityProtocol: 9}}}, ErrInvalidRecord},
		{"bad feature range", &RegisterBrokerRecord{BrokerID: 4, Features: []FeatureRange{{Name: "f", MinVersion: 2, MaxVersion: 1}}}, ErrInvalidRecord},
		{"fence unknown broker", &FenceBrokerRecord{BrokerID: 9, BrokerEpoch: 1}, ErrUnknownBroker},
		{"fence with stale epoch", &FenceBrokerRecord{BrokerID: 1, BrokerEpoch: 9}, ErrBrokerEpochMismatch},
		{"unfence with stale epoch", &UnfenceBrokerRecord{BrokerID: 1, BrokerEpoch: 11}, ErrBrokerEpochMismatch},
		{"unregister with stale epoch", &UnregisterBrokerRecord{BrokerID: 3, BrokerEpoch: 29}, ErrBrokerEpochMismatch},
		{"bad flag change", &BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 10, Fenced: 2}, ErrInvalidRecord},
		{"config of unknown topic", &ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "nope", Key: "k", Value: new("v")}, ErrUnknownTopic},
		{"config of non-numeric broker", &ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "b1", Key: "k"}, ErrInvalidRecord},
		{"config of padded broker id", &ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "01", Key: "k"}, ErrInvalidRecord},
		{"config of unknown resource type", &ConfigRecord{ResourceType: 9, ResourceName: "x", Key: "k"}, ErrInvalidRecord},
		{"config with empty key", &ConfigRecord{ResourceType: ConfigResourceBroker, Key: ""}, ErrInvalidRecord},
		{"producer ids backwards", &ProducerIDsRecord{BrokerID: 1, NextProducerID: 1000}, ErrEpochBackwards},
		{"negative feature level", &FeatureLevelRecord{Name: "f", Level: -1}, ErrInvalidRecord},
		{"unnamed feature", &FeatureLevelRecord{Level: 1}, ErrInvalidRecord},
	}
	base := baseImage(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := base.NewDelta()
			require.NoError(t, d.Replay(&FenceBrokerRecord{BrokerID: 3, BrokerEpoch: 30}))
			before := d.Apply(Position{Offset: 101, Epoch: 2})

			err := d.Replay(c.rec)
			require.ErrorIs(t, err, c.want)
			require.ErrorIs(t, err, ErrInvalidRecord)
			var re *ReplayError
			require.True(t, errors.As(err, &re))
			require.Same(t, c.rec, re.Record)
			require.Contains(t, err.Error(), c.rec.String())

			require.Equal(t, 1, d.Len())
			after := d.Apply(Position{Offset: 101, Epoch: 2})
			require.Empty(t, Diff(before, after), "a refused record leaves the delta unchanged")
		})
	}
}

func TestLeaderEpochOverflowRefused(t *testing.T) {
	d := Empty().NewDelta()
	require.NoError(t, d.Replay(&TopicRecord{Name: "t", TopicID: ordersID}))
	require.NoError(t, d.Replay(&PartitionRecord{TopicID: ordersID, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: math.MaxInt32}))
	err := d.Replay(&PartitionChangeRecord{TopicID: ordersID, Leader: new(int32(1))})
	require.ErrorIs(t, err, ErrInvalidPartition)
	require.NoError(t, d.Replay(&PartitionChangeRecord{TopicID: ordersID, ISR: []int32{1}}), "a change without a leader does not bump the leader epoch")
}

// TestPartitionChangeEpochRules follows Kafka's PartitionRegistration.merge.
func TestPartitionChangeEpochRules(t *testing.T) {
	base := baseImage(t)
	apply := func(recs ...Record) Partition {
		d := base.NewDelta()
		for _, r := range recs {
			require.NoError(t, d.Replay(r))
		}
		p, ok := d.Apply(Position{Offset: 200, Epoch: 3}).Partition(ordersID, 0)
		require.True(t, ok)
		return p
	}
	// Before: leader 1, leader epoch 5, partition epoch 7, isr [1 2 3].
	p := apply(&PartitionChangeRecord{TopicID: ordersID, ISR: []int32{1, 2}})
	require.Equal(t, []int32{1, 2}, p.ISR)
	require.Equal(t, int32(1), p.Leader)
	require.Equal(t, int32(5), p.LeaderEpoch, "an ISR change alone keeps the leader epoch")
	require.Equal(t, int32(8), p.PartitionEpoch, "every change bumps the partition epoch")

	p = apply(&PartitionChangeRecord{TopicID: ordersID, Leader: new(int32(1))})
	require.Equal(t, int32(6), p.LeaderEpoch, "setting the same leader still bumps the leader epoch")
	require.Equal(t, int32(8), p.PartitionEpoch)

	p = apply(&PartitionChangeRecord{TopicID: ordersID, Leader: new(int32(2)), ISR: []int32{2, 3}},
		&PartitionChangeRecord{TopicID: ordersID, Leader: new(NoLeader), ISR: []int32{}, ELR: []int32{2, 3}, LastKnownELR: []int32{2}})
	require.Equal(t, NoLeader, p.Leader)
	require.False(t, p.HasLeader())
	require.Empty(t, p.ISR)
	require.Equal(t, []int32{2, 3}, p.ELR)
	require.Equal(t, []int32{2}, p.LastKnownELR)
	require.Equal(t, int32(7), p.LeaderEpoch)
	require.Equal(t, int32(9), p.PartitionEpoch)
	require.Equal(t, []int32{1, 2, 3}, p.Replicas, "fields the record leaves nil are unchanged")

	p = apply(&PartitionChangeRecord{TopicID: ordersID})
	require.Equal(t, int32(8), p.PartitionEpoch, "an empty change still bumps the partition epoch, as in Kafka")
}

func TestBrokerLifecycle(t *testing.T) {
	base := baseImage(t)
	d := base.NewDelta()
	require.NoError(t, d.Replay(&FenceBrokerRecord{BrokerID: 1, BrokerEpoch: 10}))
	require.NoError(t, d.Replay(&BrokerRegistrationChangeRecord{BrokerID: 2, BrokerEpoch: 20, InControlledShutdown: FlagSet}))
	require.NoError(t, d.Replay(&UnregisterBrokerRecord{BrokerID: 3, BrokerEpoch: 30}))
	img := d.Apply(Position{Offset: 103, Epoch: 2})
	b1, _ := img.Broker(1)
	require.True(t, b1.Fenced)
	b2, _ := img.Broker(2)
	require.True(t, b2.InControlledShutdown)
	require.False(t, b2.Fenced)
	_, ok := img.Broker(3)
	require.False(t, ok)
	require.Equal(t, 2, img.NumBrokers())
	ep, ok := b1.Endpoint("PLAINTEXT")
	require.True(t, ok)
	require.Equal(t, "h1", ep.Host)

	d = img.NewDelta()
	require.NoError(t, d.Replay(&RegisterBrokerRecord{BrokerID: 3, BrokerEpoch: 1}), "an unregistered broker starts over")
	require.NoError(t, d.Replay(&UnfenceBrokerRecord{BrokerID: 1, BrokerEpoch: 10}))
	require.NoError(t, d.Replay(&BrokerRegistrationChangeRecord{BrokerID: 2, BrokerEpoch: 20, Fenced: FlagSet, InControlledShutdown: FlagClear}))
	img = d.Apply(Position{Offset: 106, Epoch: 2})
	var ids []int32
	for b := range img.Brokers() {
		ids = append(ids, b.ID)
	}
	require.Equal(t, []int32{1, 2, 3}, ids)
	b1, _ = img.Broker(1)
	b2, _ = img.Broker(2)
	require.False(t, b1.Fenced)
	require.True(t, b2.Fenced)
	require.False(t, b2.InControlledShutdown)
	checkInvariants(t, img)
}

// TestRemoveTopic: removal frees the name and the id and drops partitions
// and configs; the name can be reused in the same delta.
func TestRemoveTopic(t *testing.T) {
	base := baseImage(t)
	newID := UUID{0: 0xc}
	d := base.NewDelta()
	require.NoError(t, d.Replay(&RemoveTopicRecord{TopicID: ordersID}))
	require.ErrorIs(t, d.Replay(&PartitionChangeRecord{TopicID: ordersID, Leader: new(int32(1))}), ErrUnknownTopic)
	require.ErrorIs(t, d.Replay(&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "orders", Key: "k", Value: new("v")}), ErrUnknownTopic)
	require.NoError(t, d.Replay(&TopicRecord{Name: "orders", TopicID: newID}))
	require.NoError(t, d.Replay(&PartitionRecord{TopicID: newID, Partition: 0, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2}))
	require.NoError(t, d.Replay(&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "orders", Key: "cleanup.policy", Value: new("compact")}))
	img := d.Apply(Position{Offset: 110, Epoch: 2})

	_, ok := img.TopicByID(ordersID)
	require.False(t, ok)
	topic, ok := img.TopicByName("orders")
	require.True(t, ok)
	require.Equal(t, newID, topic.ID())
	require.Equal(t, 1, topic.NumPartitions())
	require.Equal(t, 2, img.NumPartitions())
	orders := ConfigResource{Type: ConfigResourceTopic, Name: "orders"}
	require.Equal(t, []ConfigEntry{{Key: "cleanup.policy", Value: "compact"}}, img.Configs(orders), "the old topic's configs went with it")
	checkInvariants(t, img)

	d = img.NewDelta()
	require.NoError(t, d.Replay(&RemoveTopicRecord{TopicID: newID}))
	require.NoError(t, d.Replay(&RemoveTopicRecord{TopicID: paymentsID}))
	img = d.Apply(Position{Offset: 112, Epoch: 2})
	require.Zero(t, img.NumTopics())
	require.Zero(t, img.NumPartitions())
	require.Nil(t, img.Configs(orders))
	checkInvariants(t, img)
}

func TestConfigsAndFeatures(t *testing.T) {
	base := baseImage(t)
	broker2 := ConfigResource{Type: ConfigResourceBroker, Name: "2"}
	d := base.NewDelta()
	require.NoError(t, d.Replay(&ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "2", Key: "b", Value: new("2")}))
	require.NoError(t, d.Replay(&ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "2", Key: "a", Value: new("1")}))
	require.NoError(t, d.Replay(&ConfigRecord{ResourceType: ConfigResourceBroker, Key: "log.retention.ms", Value: new("5")}))
	require.NoError(t, d.Replay(&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "orders", Key: "retention.ms"}))
	require.NoError(t, d.Replay(&FeatureLevelRecord{Name: "metadata.version", Level: 0}))
	require.NoError(t, d.Replay(&FeatureLevelRecord{Name: "kraft.version", Level: 1}))
	img := d.Apply(Position{Offset: 120, Epoch: 2})

	require.Equal(t, []ConfigEntry{{"a", "1"}, {"b", "2"}}, img.Configs(broker2))
	v, ok := img.ConfigValue(ClusterConfigResource, "log.retention.ms")
	require.True(t, ok)
	require.Equal(t, "5", v)
	_, ok = img.ConfigValue(broker2, "c")
	require.False(t, ok)
	var resources []string
	for r := range img.ConfigResources() {
		resources = append(resources, r.String())
	}
	require.Equal(t, []string{"cluster", "broker:2"}, resources, "the emptied topic resource left the image; order is type, then name")
	require.Zero(t, img.FeatureLevel("metadata.version"))
	require.Equal(t, int16(1), img.FeatureLevel("kraft.version"))
	n := 0
	for range img.Features() {
		n++
	}
	require.Equal(t, 1, n)
	checkInvariants(t, img)
}

// TestApplySharesUntouched: a change to one partition builds a new topic
// and shares every other topic, broker and config resource.
func TestApplySharesUntouched(t *testing.T) {
	base := baseImage(t)
	d := base.NewDelta()
	require.NoError(t, d.Replay(&PartitionChangeRecord{TopicID: ordersID, Partition: 1, ISR: []int32{2}}))
	img := d.Apply(Position{Offset: 101, Epoch: 2})

	oldOrders, _ := base.TopicByID(ordersID)
	newOrders, _ := img.TopicByID(ordersID)
	require.NotSame(t, oldOrders, newOrders)
	require.Same(t, oldOrders.partitions[0], newOrders.partitions[0], "untouched partitions are shared")
	oldPayments, _ := base.TopicByID(paymentsID)
	newPayments, _ := img.TopicByID(paymentsID)
	require.Same(t, oldPayments, newPayments, "untouched topics are shared")
	require.Same(t, base.brokers.root, img.brokers.root)
	require.Same(t, base.configs.root, img.configs.root)

	p, _ := base.Partition(ordersID, 1)
	require.Equal(t, []int32{2, 3}, p.ISR, "the base image is unchanged")
	require.NotEqual(t, base.Digest(), img.Digest())
}

// TestReplayCopiesRecords: the image never aliases a record's slices.
func TestReplayCopiesRecords(t *testing.T) {
	rec := &PartitionRecord{TopicID: ordersID, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}
	d := Empty().NewDelta()
	require.NoError(t, d.Replay(&TopicRecord{Name: "t", TopicID: ordersID}))
	require.NoError(t, d.Replay(rec))
	img := d.Apply(Position{Offset: 1, Epoch: 1})
	rec.Replicas[0], rec.ISR[0] = 9, 9
	p, _ := img.Partition(ordersID, 0)
	require.Equal(t, []int32{1, 2}, p.Replicas)
	require.Equal(t, []int32{1, 2}, p.ISR)
	p.Replicas = append(p.Replicas, 7) // capacity-limited: must not write into ISR
	p2, _ := img.Partition(ordersID, 0)
	require.Equal(t, []int32{1, 2}, p2.ISR)
}

func TestApplyPositionBackwardsAsserts(t *testing.T) {
	base := baseImage(t)
	require.PanicsWithValue(t,
		assert.Violation{Msg: "meta: image position moved backwards: 100@2 -> 99@2"},
		func() { base.NewDelta().Apply(Position{Offset: 99, Epoch: 2}) })
	require.Panics(t, func() { base.NewDelta().Apply(Position{Offset: 101, Epoch: 1}) })
}

func TestImageAccessors(t *testing.T) {
	img := baseImage(t)
	require.Equal(t, Position{Offset: 100, Epoch: 2}, img.Position())
	require.Equal(t, "Image{at 100@2: 3 brokers, 2 topics, 3 partitions, 1 config resources, 1 features, 0 acls, 0 scram credentials, 0 quota entities}", img.String())
	var names []string
	for tp := range img.Topics() {
		names = append(names, tp.Name())
	}
	require.Equal(t, []string{"orders", "payments"}, names)
	orders, ok := img.TopicByName("orders")
	require.True(t, ok)
	var parts []int32
	for p := range orders.Partitions() {
		parts = append(parts, p.ID)
	}
	require.Equal(t, []int32{0, 1}, parts)
	_, ok = orders.Partition(2)
	require.False(t, ok)
	_, ok = img.Partition(UUID{9}, 0)
	require.False(t, ok)
	_, ok = img.TopicByName("nope")
	require.False(t, ok)
	require.Equal(t, ProducerIDs{BrokerID: 1, BrokerEpoch: 10, NextProducerID: 1000}, img.ProducerIDs())
	require.Equal(t, EmptyPosition, Empty().Position())
	require.Equal(t, "AQAAAAAAAAAAAAAAAAAAAA", UUID{1}.String())
}

// checkInvariants verifies every invariant the package documents on img.
func checkInvariants(t require.TestingT, img *Image) {
	require.Equal(t, img.topics.len(), img.names.len(), "names and ids are one-to-one")
	partitions := 0
	img.names.all(func(name string, id UUID) bool {
		tp, ok := img.topics.get(id)
		require.True(t, ok, "name %q points at missing id %v", name, id)
		require.Equal(t, name, tp.name)
		for i, p := range tp.partitions {
			require.NoError(t, validatePartition(p))
			if i > 0 {
				require.Less(t, tp.partitions[i-1].ID, p.ID, "partitions sorted and unique")
			}
		}
		partitions += len(tp.partitions)
		return true
	})
	require.Equal(t, partitions, img.NumPartitions())
	img.configs.all(func(r ConfigResource, c *configImage) bool {
		require.NotEmpty(t, c.entries, "no empty config resource")
		if r.Type == ConfigResourceTopic {
			_, ok := img.names.get(r.Name)
			require.True(t, ok, "config of dead topic %q", r.Name)
		}
		return true
	})
	img.features.all(func(name string, level int16) bool {
		require.Positive(t, level, "feature %q at level 0 kept", name)
		return true
	})
	require.Equal(t, img.recomputeSum(), img.sum, "incremental digest matches the snapshot's")
	require.Equal(t, img.aclIDs.len(), img.ACLs().Len(), "ACL ids and the index are one-to-one")
	img.aclIDs.all(func(id UUID, b acl.Binding) bool {
		require.True(t, containsBinding(img.ACLs(), b), "ACL %v of id %v not in the index", b, id)
		return true
	})
	img.quotas.all(func(e quota.Entity, values []quota.Value) bool {
		require.NotEmpty(t, values, "no empty quota entity")
		require.True(t, slices.IsSortedFunc(values, func(a, b quota.Value) int { return strings.Compare(string(a.Key), string(b.Key)) }))
		return true
	})
}

func TestDiffDescribes(t *testing.T) {
	base := baseImage(t)
	d := base.NewDelta()
	require.NoError(t, d.Replay(&PartitionChangeRecord{TopicID: ordersID, Partition: 1, ISR: []int32{2}}))
	require.NoError(t, d.Replay(&FenceBrokerRecord{BrokerID: 2, BrokerEpoch: 20}))
	require.NoError(t, d.Replay(&ConfigRecord{ResourceType: ConfigResourceBroker, Key: "k", Value: new("v")}))
	img := d.Apply(base.Position())
	diffs := Diff(base, img)
	require.Len(t, diffs, 3)
	require.Contains(t, diffs[0], "broker 2 differs")
	require.Contains(t, diffs[1], "topic CgAAAAAAAAAAAAAAAAAAAA differs: ; PartitionRecord{")
	require.Contains(t, diffs[1], "isr=[2 3]")
	require.Contains(t, diffs[2], "config cluster only in the second image")
	require.Nil(t, Diff(img, img))
	require.True(t, Equal(base, base))
}
