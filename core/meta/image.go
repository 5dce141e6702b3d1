package meta

import (
	"cmp"
	"fmt"
	"iter"
	"strings"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/quota"
	"github.com/strata-log/strata/core/sasl"
)

// Position is where in the metadata log an image stands: the offset of the
// last record it includes and the leader epoch that record was written in.
type Position struct {
	Offset int64
	Epoch  int32
}

// EmptyPosition is the position of the empty image: before any record.
var EmptyPosition = Position{Offset: -1, Epoch: -1}

// String formats the position as "offset@epoch".
func (p Position) String() string { return fmt.Sprintf("%d@%d", p.Offset, p.Epoch) }

// ProducerIDs is the image's producer id allocation state: the last
// ProducerIDsRecord replayed. A zero NextProducerID means none was.
type ProducerIDs struct {
	BrokerID       int32
	BrokerEpoch    int64
	NextProducerID int64
}

// Image is the cluster metadata at a position of the metadata log: brokers,
// topics and their partitions, configs, producer id allocation, feature
// levels, ACLs, SCRAM credentials and client quotas. Every controller and broker keeps one, built by replaying the same
// committed records, so equal positions mean equal images.
//
// An Image is immutable and safe to share. Derive the next one with a Delta:
// the new image shares every broker, topic and config resource the delta did
// not touch. Slices reachable from an Image (a partition's replicas, a
// broker's endpoints) are shared too and must not be modified.
type Image struct {
	position    Position
	brokers     pmap[int32, *BrokerRegistration]
	topics      pmap[UUID, *TopicImage]
	names       pmap[string, UUID]
	configs     pmap[ConfigResource, *configImage]
	features    pmap[string, int16]
	producerIDs ProducerIDs
	// acls are the ACL bindings of AccessControlEntryRecords, indexed
	// for authorization.
	acls acl.Index
	// aclIDs maps each ACL id to its binding (RemoveAccessControlEntry
	// names the id).
	aclIDs pmap[UUID, acl.Binding]
	// scram are the SCRAM credentials by user and mechanism.
	scram pmap[scramKey, sasl.ScramCredential]
	// quotas are the client quotas by entity, each sorted by key and
	// never empty.
	quotas     pmap[quota.Entity, []quota.Value]
	partitions int
	sum        digestSum
}

// Empty returns the image before any record: no brokers, no topics, at
// EmptyPosition.
func Empty() *Image {
	return &Image{
		position: EmptyPosition,
		brokers:  newPmap[int32, *BrokerRegistration](cmp.Compare[int32]),
		topics:   newPmap[UUID, *TopicImage](compareUUID),
		names:    newPmap[string, UUID](strings.Compare),
		configs:  newPmap[ConfigResource, *configImage](compareConfigResource),
		features: newPmap[string, int16](strings.Compare),
		aclIDs:   newPmap[UUID, acl.Binding](compareUUID),
		scram:    newPmap[scramKey, sasl.ScramCredential](compareScramKeys),
		quotas:   newPmap[quota.Entity, []quota.Value](quota.CompareEntities),
	}
}

// Position is the position of the last record the image includes.
func (img *Image) Position() Position { return img.position }

// ACLs is the image's ACL bindings, indexed for authorization.
func (img *Image) ACLs() acl.Index { return img.acls }

// WithACLs returns a copy of img whose ACL index is ix, at the same
// position: for tests and tools that build an image by hand (the log's
// ACL records replay through a Delta). Only the index changes: the ACL
// ids, the digest and snapshots do not see ix.
func (img *Image) WithACLs(ix acl.Index) *Image {
	c := *img
	c.acls = ix
	return &c
}

// NewDelta starts a delta on top of img.
func (img *Image) NewDelta() *Delta { return newDelta(img) }

// Broker returns the registration of a broker.
func (img *Image) Broker(id int32) (BrokerRegistration, bool) {
	b, ok := img.brokers.get(id)
	if !ok {
		return BrokerRegistration{}, false
	}
	return *b, true
}

// Brokers yields every registered broker in ascending id order.
func (img *Image) Brokers() iter.Seq[BrokerRegistration] {
	return func(yield func(BrokerRegistration) bool) {
		img.brokers.all(func(_ int32, b *BrokerRegistration) bool { return yield(*b) })
	}
}

// NumBrokers is the number of registered brokers, fenced or not.
func (img *Image) NumBrokers() int { return img.brokers.len() }

// TopicByID returns a topic by its id.
func (img *Image) TopicByID(id UUID) (*TopicImage, bool) { return img.topics.get(id) }

// TopicByName returns a topic by its name.
func (img *Image) TopicByName(name string) (*TopicImage, bool) {
	id, ok := img.names.get(name)
	if !ok {
		return nil, false
	}
	return img.topics.get(id)
}

// Topics yields every topic in ascending name order.
func (img *Image) Topics() iter.Seq[*TopicImage] {
	return func(yield func(*TopicImage) bool) {
		img.names.all(func(_ string, id UUID) bool {
			t, _ := img.topics.get(id)
			return yield(t)
		})
	}
}

// NumTopics is the number of topics.
func (img *Image) NumTopics() int { return img.topics.len() }

// NumPartitions is the number of partitions over all topics.
func (img *Image) NumPartitions() int { return img.partitions }

// Partition returns one partition of a topic.
func (img *Image) Partition(topic UUID, partition int32) (Partition, bool) {
	t, ok := img.topics.get(topic)
	if !ok {
		return Partition{}, false
	}
	return t.Partition(partition)
}

// ConfigResources yields every resource with at least one config, in order
// of type, then name.
func (img *Image) ConfigResources() iter.Seq[ConfigResource] {
	return func(yield func(ConfigResource) bool) {
		img.configs.all(func(r ConfigResource, _ *configImage) bool { return yield(r) })
	}
}

// Configs returns the configs set on a resource, sorted by key; nil for
// none. The slice is the caller's.
func (img *Image) Configs(r ConfigResource) []ConfigEntry {
	c, ok := img.configs.get(r)
	if !ok {
		return nil
	}
	return append([]ConfigEntry(nil), c.entries...)
}

// ConfigValue returns the value of one config key of a resource.
func (img *Image) ConfigValue(r ConfigResource, key string) (string, bool) {
	c, ok := img.configs.get(r)
	if !ok {
		return "", false
	}
	return c.get(key)
}

// FeatureLevel returns the finalized level of a feature, 0 when unset.
func (img *Image) FeatureLevel(name string) int16 {
	level, _ := img.features.get(name)
	return level
}

// Features yields every finalized feature and its level, by name.
func (img *Image) Features() iter.Seq2[string, int16] {
	return func(yield func(string, int16) bool) { img.features.all(yield) }
}

// ProducerIDs returns the producer id allocation state.
func (img *Image) ProducerIDs() ProducerIDs { return img.producerIDs }

// String summarizes the image.
func (img *Image) String() string {
	return fmt.Sprintf("Image{at %v: %d brokers, %d topics, %d partitions, %d config resources, %d features, %d acls, %d scram credentials, %d quota entities}",
		img.position, img.brokers.len(), img.topics.len(), img.partitions, img.configs.len(), img.features.len(),
		img.aclIDs.len(), img.scram.len(), img.quotas.len())
}
