package meta

import (
	"maps"
	"slices"

	"github.com/strata-log/strata/core/assert"
)

// Apply returns the image the delta's records produce on top of its base,
// standing at pos (the position of the last record replayed). The new image
// shares everything the delta did not touch with the base: applying a change
// to one partition costs O(log topics + partitions of that topic), not
// O(cluster). The delta itself is not consumed.
//
// pos must not be behind the base image's position; a driver that moves
// backwards has a bug, and Apply asserts it.
func (d *Delta) Apply(pos Position) *Image {
	base := d.base
	assert.That(pos.Offset >= base.position.Offset && pos.Epoch >= base.position.Epoch,
		"meta: image position moved backwards: %v -> %v", base.position, pos)
	img := *base
	img.position = pos
	var h hasher
	d.applyBrokers(&img, &h)
	d.applyTopics(&img, &h)
	d.applyConfigs(&img, &h)
	d.applyFeatures(&img, &h)
	d.applySecurity(&img, &h)
	if d.producerIDs != nil {
		if base.producerIDs.NextProducerID != 0 {
			img.sum.sub(h.term(producerIDsRecord(base.producerIDs)))
		}
		img.producerIDs = *d.producerIDs
		img.sum.add(h.term(producerIDsRecord(img.producerIDs)))
	}
	return &img
}

func (d *Delta) applyBrokers(img *Image, h *hasher) {
	for _, id := range slices.Sorted(maps.Keys(d.brokers)) {
		if old, ok := d.base.brokers.get(id); ok {
			img.sum.sub(h.term(old.record()))
		}
		b := d.brokers[id]
		if b == nil {
			img.brokers = img.brokers.delete(id)
			continue
		}
		img.sum.add(h.term(b.record()))
		img.brokers = img.brokers.set(id, b)
	}
}

func (d *Delta) applyTopics(img *Image, h *hasher) {
	for _, id := range slices.SortedFunc(maps.Keys(d.topics), compareUUID) {
		td := d.topics[id]
		old, hadOld := d.base.topics.get(id)
		if hadOld && (td.removed || td.base == nil) {
			// Removed, or removed and created again: the old topic goes.
			img.sum.addTopic(h, old, -1)
			img.partitions -= len(old.partitions)
			img.topics = img.topics.delete(id)
		}
		if td.removed {
			continue
		}
		t := td.build()
		if td.base == nil {
			img.sum.addTopic(h, t, +1)
		} else {
			for _, pid := range slices.Sorted(maps.Keys(td.parts)) {
				if prev := td.base.partition(pid); prev != nil {
					img.sum.sub(h.partitionTerm(id, prev))
				}
				img.sum.add(h.partitionTerm(id, td.parts[pid]))
			}
			img.partitions -= len(td.base.partitions)
		}
		img.partitions += len(t.partitions)
		img.topics = img.topics.set(id, t)
	}
	for _, name := range slices.Sorted(maps.Keys(d.names)) {
		if id := d.names[name]; id.IsZero() {
			img.names = img.names.delete(name)
		} else {
			img.names = img.names.set(name, id)
		}
	}
}

// build returns the topic with the delta's partitions merged into its base's:
// one pass over both sorted lists, so O(partitions of the topic).
func (td *topicDelta) build() *TopicImage {
	var prev []*Partition
	if td.base != nil {
		prev = td.base.partitions
	}
	out := mergeSorted(prev, func(p *Partition) int32 { return p.ID }, td.parts,
		func(_ int32, p *Partition) (*Partition, bool) { return p, true })
	return &TopicImage{name: td.name, id: td.id, partitions: out}
}

func (d *Delta) applyConfigs(img *Image, h *hasher) {
	for _, r := range slices.SortedFunc(maps.Keys(d.configs), compareConfigResource) {
		cd := d.configs[r]
		var entries []ConfigEntry
		if old, ok := d.base.configs.get(r); ok {
			for _, e := range old.entries {
				img.sum.sub(h.term(configRecord(r, e)))
			}
			if !cd.cleared {
				entries = old.entries
			}
		}
		entries = mergeConfig(entries, cd.changes)
		if len(entries) == 0 {
			img.configs = img.configs.delete(r)
			continue
		}
		for _, e := range entries {
			img.sum.add(h.term(configRecord(r, e)))
		}
		img.configs = img.configs.set(r, &configImage{entries: entries})
	}
}

func (d *Delta) applyFeatures(img *Image, h *hasher) {
	for _, name := range slices.Sorted(maps.Keys(d.features)) {
		if old, ok := d.base.features.get(name); ok {
			img.sum.sub(h.term(&FeatureLevelRecord{Name: name, Level: old}))
		}
		level := d.features[name]
		if level == 0 {
			img.features = img.features.delete(name)
			continue
		}
		img.sum.add(h.term(&FeatureLevelRecord{Name: name, Level: level}))
		img.features = img.features.set(name, level)
	}
}

// configRecord is the ConfigRecord that recreates one config entry.
func configRecord(r ConfigResource, e ConfigEntry) *ConfigRecord {
	v := e.Value
	return &ConfigRecord{ResourceType: r.Type, ResourceName: r.Name, Key: e.Key, Value: &v}
}

// producerIDsRecord is the ProducerIDsRecord that recreates p.
func producerIDsRecord(p ProducerIDs) *ProducerIDsRecord {
	return &ProducerIDsRecord{BrokerID: p.BrokerID, BrokerEpoch: p.BrokerEpoch, NextProducerID: p.NextProducerID}
}
