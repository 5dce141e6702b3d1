package meta

import "fmt"

// Replay validates rec against the base image plus the records replayed so
// far and, if it keeps every invariant, adds it to the delta. Otherwise it
// returns a *ReplayError naming the record and the invariant (errors.Is
// ErrInvalidRecord), and the delta is unchanged.
//
// Records of the committed metadata log were validated by the controller
// that wrote them, so a quorum driver that gets an error here has found
// divergent or corrupt state and must stop the node rather than skip the
// record.
func (d *Delta) Replay(rec Record) error {
	var err error
	switch r := rec.(type) {
	case *RegisterBrokerRecord:
		err = d.replayRegisterBroker(r)
	case *UnregisterBrokerRecord:
		err = d.replayBrokerChange(r.BrokerID, r.BrokerEpoch, func(*BrokerRegistration) *BrokerRegistration { return nil })
	case *FenceBrokerRecord:
		err = d.replayBrokerChange(r.BrokerID, r.BrokerEpoch, func(b *BrokerRegistration) *BrokerRegistration {
			b.Fenced = true
			return b
		})
	case *UnfenceBrokerRecord:
		err = d.replayBrokerChange(r.BrokerID, r.BrokerEpoch, func(b *BrokerRegistration) *BrokerRegistration {
			b.Fenced = false
			return b
		})
	case *BrokerRegistrationChangeRecord:
		err = d.replayRegistrationChange(r)
	case *TopicRecord:
		err = d.replayTopic(r)
	case *PartitionRecord:
		err = d.replayPartition(r)
	case *PartitionChangeRecord:
		err = d.replayPartitionChange(r)
	case *ConfigRecord:
		err = d.replayConfig(r)
	case *RemoveTopicRecord:
		err = d.replayRemoveTopic(r)
	case *ProducerIDsRecord:
		err = d.replayProducerIDs(r)
	case *FeatureLevelRecord:
		err = d.replayFeatureLevel(r)
	case *AccessControlEntryRecord:
		err = d.replayACL(r)
	case *RemoveAccessControlEntryRecord:
		err = d.replayRemoveACL(r)
	case *UserScramCredentialRecord:
		err = d.replayScram(r)
	case *RemoveUserScramCredentialRecord:
		err = d.replayRemoveScram(r)
	case *ClientQuotaRecord:
		err = d.replayClientQuota(r)
	case *NoOpRecord:
	default:
		err = fmt.Errorf("%w: record type %T", ErrInvalidRecord, rec)
	}
	if err != nil {
		return &ReplayError{Record: rec, Err: err}
	}
	d.records++
	return nil
}

func (d *Delta) replayRegisterBroker(r *RegisterBrokerRecord) error {
	if err := validateRegistration(r); err != nil {
		return err
	}
	if cur := d.broker(r.BrokerID); cur != nil && r.BrokerEpoch <= cur.Epoch {
		return invalid(ErrEpochBackwards, "broker %d registered at epoch %d, new registration has epoch %d", r.BrokerID, cur.Epoch, r.BrokerEpoch)
	}
	d.brokers[r.BrokerID] = brokerFromRecord(r)
	return nil
}

// replayBrokerChange checks that a broker is registered at the given epoch
// and replaces its registration with change(copy of it).
func (d *Delta) replayBrokerChange(id int32, epoch int64, change func(*BrokerRegistration) *BrokerRegistration) error {
	cur := d.broker(id)
	if cur == nil {
		return invalid(ErrUnknownBroker, "broker %d", id)
	}
	if cur.Epoch != epoch {
		return invalid(ErrBrokerEpochMismatch, "broker %d is at epoch %d, record has %d", id, cur.Epoch, epoch)
	}
	next := *cur
	d.brokers[id] = change(&next)
	return nil
}

func (d *Delta) replayRegistrationChange(r *BrokerRegistrationChangeRecord) error {
	if err := validateFlag("fenced", r.Fenced); err != nil {
		return err
	}
	if err := validateFlag("in controlled shutdown", r.InControlledShutdown); err != nil {
		return err
	}
	return d.replayBrokerChange(r.BrokerID, r.BrokerEpoch, func(b *BrokerRegistration) *BrokerRegistration {
		if r.Fenced != FlagUnchanged {
			b.Fenced = r.Fenced == FlagSet
		}
		if r.InControlledShutdown != FlagUnchanged {
			b.InControlledShutdown = r.InControlledShutdown == FlagSet
		}
		return b
	})
}

// replayTopic creates a topic. Its name and its id must both be new:
// Kafka's TopicRecord replay would silently drop the partitions of an
// existing topic, and a controller never writes one for a live topic.
func (d *Delta) replayTopic(r *TopicRecord) error {
	if err := validateTopicName(r.Name); err != nil {
		return err
	}
	if r.TopicID.IsZero() {
		return invalid(ErrInvalidRecord, "zero topic id")
	}
	if name, ok := d.topicName(r.TopicID); ok {
		return invalid(ErrDuplicateTopic, "id %v already belongs to topic %q", r.TopicID, name)
	}
	if id, ok := d.topicIDByName(r.Name); ok {
		return invalid(ErrDuplicateTopic, "name %q already belongs to topic id %v", r.Name, id)
	}
	d.topics[r.TopicID] = &topicDelta{name: r.Name, id: r.TopicID, parts: map[int32]*Partition{}}
	d.names[r.Name] = r.TopicID
	return nil
}

func (d *Delta) replayRemoveTopic(r *RemoveTopicRecord) error {
	name, ok := d.topicName(r.TopicID)
	if !ok {
		return invalid(ErrUnknownTopic, "id %v", r.TopicID)
	}
	td := d.touchTopic(r.TopicID)
	td.removed = true
	td.parts = nil
	d.names[name] = UUID{}
	cd := d.touchConfig(ConfigResource{Type: ConfigResourceTopic, Name: name})
	cd.cleared = true
	clear(cd.changes)
	return nil
}

func (d *Delta) replayPartition(r *PartitionRecord) error {
	if !d.topicExists(r.TopicID) {
		return invalid(ErrUnknownTopic, "id %v", r.TopicID)
	}
	p := partitionFromRecord(r)
	if err := validatePartition(p); err != nil {
		return err
	}
	// Replacing a partition is a change like any other: its partition epoch
	// must grow (brokers and AlterPartition tell states apart by it), and its
	// leader epoch must not shrink.
	if cur := d.partition(r.TopicID, r.Partition); cur != nil {
		if p.LeaderEpoch < cur.LeaderEpoch || p.PartitionEpoch <= cur.PartitionEpoch {
			return invalid(ErrEpochBackwards, "partition at leader epoch %d, partition epoch %d; record has %d, %d",
				cur.LeaderEpoch, cur.PartitionEpoch, p.LeaderEpoch, p.PartitionEpoch)
		}
	}
	d.touchTopic(r.TopicID).parts[r.Partition] = p
	return nil
}

func (d *Delta) replayPartitionChange(r *PartitionChangeRecord) error {
	if !d.topicExists(r.TopicID) {
		return invalid(ErrUnknownTopic, "id %v", r.TopicID)
	}
	cur := d.partition(r.TopicID, r.Partition)
	if cur == nil {
		return invalid(ErrUnknownPartition, "partition %d", r.Partition)
	}
	next, err := mergeChange(cur, r)
	if err != nil {
		return err
	}
	if err := validatePartition(next); err != nil {
		return err
	}
	d.touchTopic(r.TopicID).parts[r.Partition] = next
	return nil
}

func (d *Delta) replayConfig(r *ConfigRecord) error {
	res := r.Resource()
	if err := validateConfigResource(res); err != nil {
		return err
	}
	if res.Type == ConfigResourceTopic {
		if _, ok := d.topicIDByName(res.Name); !ok {
			return invalid(ErrUnknownTopic, "name %q", res.Name)
		}
	}
	if r.Key == "" {
		return invalid(ErrInvalidRecord, "empty config key")
	}
	var value *string
	if r.Value != nil {
		v := *r.Value
		value = &v
	}
	d.touchConfig(res).changes[r.Key] = value
	return nil
}

func (d *Delta) replayProducerIDs(r *ProducerIDsRecord) error {
	cur := d.currentProducerIDs()
	if r.NextProducerID <= cur.NextProducerID {
		return invalid(ErrEpochBackwards, "next producer id %d, record has %d", cur.NextProducerID, r.NextProducerID)
	}
	next := ProducerIDs{BrokerID: r.BrokerID, BrokerEpoch: r.BrokerEpoch, NextProducerID: r.NextProducerID}
	d.producerIDs = &next
	return nil
}

func (d *Delta) replayFeatureLevel(r *FeatureLevelRecord) error {
	if r.Name == "" || r.Level < 0 {
		return invalid(ErrInvalidRecord, "feature %q level %d", r.Name, r.Level)
	}
	d.features[r.Name] = r.Level
	return nil
}
