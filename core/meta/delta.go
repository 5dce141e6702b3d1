package meta

// Delta accumulates records replayed on top of a base image and produces the
// next image with Apply. It holds only what the records changed: the
// brokers, topics (and within them, partitions), config resources and
// features they touched. Replaying a record validates it against the base
// image plus everything replayed so far; a record that would break an
// invariant is refused with a *ReplayError and leaves the delta unchanged.
//
// A delta may be applied more than once (at growing positions) and may keep
// replaying after Apply; images already produced never change.
type Delta struct {
	base *Image
	// brokers maps a touched broker id to its new registration, nil once
	// unregistered.
	brokers map[int32]*BrokerRegistration
	// topics maps a touched topic id to its changes.
	topics map[UUID]*topicDelta
	// names maps a touched topic name to its topic id, the zero UUID once the
	// name is free.
	names map[string]UUID
	// configs maps a touched resource to its changes.
	configs map[ConfigResource]*configDelta
	// features maps a touched feature to its new level, 0 once removed.
	features map[string]int16
	// producerIDs is the new producer id state, nil when untouched.
	producerIDs *ProducerIDs
	// sec is the ACL, SCRAM and client quota changes.
	sec securityDelta
	// records counts the records replayed.
	records int
}

// topicDelta is the changes to one topic.
type topicDelta struct {
	name string
	id   UUID
	// base is the image's topic these changes apply to, or nil for a topic
	// created in this delta (even if the image held a topic of that id that
	// the delta removed first).
	base *TopicImage
	// removed is true once the topic is deleted.
	removed bool
	// parts maps a changed partition id to its new, immutable state.
	parts map[int32]*Partition
}

// configDelta is the changes to one config resource.
type configDelta struct {
	// cleared means the base image's configs of the resource are dropped
	// (the topic was removed) before changes apply.
	cleared bool
	// changes maps a key to its new value, nil for deleted.
	changes map[string]*string
}

func newDelta(base *Image) *Delta {
	return &Delta{
		base:     base,
		brokers:  map[int32]*BrokerRegistration{},
		topics:   map[UUID]*topicDelta{},
		names:    map[string]UUID{},
		configs:  map[ConfigResource]*configDelta{},
		features: map[string]int16{},
		sec:      newSecurityDelta(),
	}
}

// Base is the image the delta applies to.
func (d *Delta) Base() *Image { return d.base }

// Len is the number of records replayed into the delta.
func (d *Delta) Len() int { return d.records }

// broker returns the current registration of a broker, nil if none.
func (d *Delta) broker(id int32) *BrokerRegistration {
	if b, ok := d.brokers[id]; ok {
		return b
	}
	b, _ := d.base.brokers.get(id)
	return b
}

// topicExists reports whether a topic id is in use.
func (d *Delta) topicExists(id UUID) bool {
	if td, ok := d.topics[id]; ok {
		return !td.removed
	}
	_, ok := d.base.topics.get(id)
	return ok
}

// topicName returns the name of a live topic.
func (d *Delta) topicName(id UUID) (string, bool) {
	if td, ok := d.topics[id]; ok {
		return td.name, !td.removed
	}
	t, ok := d.base.topics.get(id)
	if !ok {
		return "", false
	}
	return t.name, true
}

// topicIDByName returns the id of the live topic with a name.
func (d *Delta) topicIDByName(name string) (UUID, bool) {
	if id, ok := d.names[name]; ok {
		return id, !id.IsZero()
	}
	return d.base.names.get(name)
}

// partition returns the current state of a partition of a live topic, nil
// if none.
func (d *Delta) partition(topic UUID, id int32) *Partition {
	if td, ok := d.topics[topic]; ok {
		if td.removed {
			return nil
		}
		if p, ok := td.parts[id]; ok {
			return p
		}
		if td.base == nil {
			return nil
		}
		return td.base.partition(id)
	}
	t, ok := d.base.topics.get(topic)
	if !ok {
		return nil
	}
	return t.partition(id)
}

// touchTopic returns the changes of a live topic, starting them if needed.
func (d *Delta) touchTopic(id UUID) *topicDelta {
	if td, ok := d.topics[id]; ok {
		return td
	}
	t, _ := d.base.topics.get(id)
	td := &topicDelta{name: t.name, id: id, base: t, parts: map[int32]*Partition{}}
	d.topics[id] = td
	return td
}

// touchConfig returns the changes of a config resource, starting them if
// needed.
func (d *Delta) touchConfig(r ConfigResource) *configDelta {
	cd, ok := d.configs[r]
	if !ok {
		cd = &configDelta{changes: map[string]*string{}}
		d.configs[r] = cd
	}
	return cd
}

// currentProducerIDs is the producer id state including the delta.
func (d *Delta) currentProducerIDs() ProducerIDs {
	if d.producerIDs != nil {
		return *d.producerIDs
	}
	return d.base.producerIDs
}
