package meta

import "fmt"

// Record bodies, one pair of appendBody/readBody per type. Fixed fields come
// first, in the order the structs declare them; every body ends with a
// tagged-field section (empty unless a type says otherwise), which is the
// room a later field that older readers may skip will use.

// PartitionChangeRecord tags. Tag 5 is left free for Kafka's
// LeaderRecoveryState (KIP-704) should Strata adopt it.
const (
	tagChangeISR              = 0
	tagChangeLeader           = 1
	tagChangeReplicas         = 2
	tagChangeRemovingReplicas = 3
	tagChangeAddingReplicas   = 4
	tagChangeELR              = 6 // version 1 and later
	tagChangeLastKnownELR     = 7 // version 1 and later
)

// BrokerRegistrationChangeRecord tags.
const (
	tagRegistrationFenced               = 0
	tagRegistrationInControlledShutdown = 1
)

func (r *RegisterBrokerRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	b = appendInt32(b, r.BrokerID)
	b = appendUUID(b, r.IncarnationID)
	b = appendInt64(b, r.BrokerEpoch)
	b = appendArrayLen(b, len(r.Endpoints))
	for _, e := range r.Endpoints {
		b = appendString(b, e.Name)
		b = appendString(b, e.Host)
		b = appendUint16(b, e.Port)
		b = appendInt16(b, int16(e.SecurityProtocol))
	}
	b = appendArrayLen(b, len(r.Features))
	for _, f := range r.Features {
		b = appendString(b, f.Name)
		b = appendInt16(b, f.MinVersion)
		b = appendInt16(b, f.MaxVersion)
	}
	b = appendString(b, r.Rack)
	b = appendBool(b, r.Fenced)
	b = appendBool(b, r.InControlledShutdown)
	return appendNoTags(b), nil
}

func (r *RegisterBrokerRecord) readBody(rd *reader, _ int16) {
	r.BrokerID = rd.int32()
	r.IncarnationID = rd.uuid()
	r.BrokerEpoch = rd.int64()
	r.Endpoints = make([]Endpoint, rd.arrayLen())
	for i := range r.Endpoints {
		e := &r.Endpoints[i]
		e.Name = rd.string()
		e.Host = rd.string()
		e.Port = rd.uint16()
		e.SecurityProtocol = SecurityProtocol(rd.int16())
	}
	r.Features = make([]FeatureRange, rd.arrayLen())
	for i := range r.Features {
		f := &r.Features[i]
		f.Name = rd.string()
		f.MinVersion = rd.int16()
		f.MaxVersion = rd.int16()
	}
	r.Rack = rd.string()
	r.Fenced = rd.bool()
	r.InControlledShutdown = rd.bool()
	rd.tags(nil)
}

// appendBrokerEpoch is the body of the records that name a broker and its
// epoch and nothing else.
func appendBrokerEpoch(b []byte, id int32, epoch int64) []byte {
	b = appendInt32(b, id)
	b = appendInt64(b, epoch)
	return appendNoTags(b)
}

func readBrokerEpoch(rd *reader) (int32, int64) {
	id, epoch := rd.int32(), rd.int64()
	rd.tags(nil)
	return id, epoch
}

func (r *UnregisterBrokerRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	return appendBrokerEpoch(b, r.BrokerID, r.BrokerEpoch), nil
}

func (r *UnregisterBrokerRecord) readBody(rd *reader, _ int16) {
	r.BrokerID, r.BrokerEpoch = readBrokerEpoch(rd)
}

func (r *FenceBrokerRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	return appendBrokerEpoch(b, r.BrokerID, r.BrokerEpoch), nil
}

func (r *FenceBrokerRecord) readBody(rd *reader, _ int16) {
	r.BrokerID, r.BrokerEpoch = readBrokerEpoch(rd)
}

func (r *UnfenceBrokerRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	return appendBrokerEpoch(b, r.BrokerID, r.BrokerEpoch), nil
}

func (r *UnfenceBrokerRecord) readBody(rd *reader, _ int16) {
	r.BrokerID, r.BrokerEpoch = readBrokerEpoch(rd)
}

func (r *BrokerRegistrationChangeRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	b = appendInt32(b, r.BrokerID)
	b = appendInt64(b, r.BrokerEpoch)
	count := 0
	if r.Fenced != FlagUnchanged {
		count++
	}
	if r.InControlledShutdown != FlagUnchanged {
		count++
	}
	b = appendArrayCount(b, count)
	if r.Fenced != FlagUnchanged {
		b = appendTagged(b, tagRegistrationFenced, appendInt32(nil, int32(r.Fenced)))
	}
	if r.InControlledShutdown != FlagUnchanged {
		b = appendTagged(b, tagRegistrationInControlledShutdown, appendInt32(nil, int32(r.InControlledShutdown)))
	}
	return b, nil
}

func (r *BrokerRegistrationChangeRecord) readBody(rd *reader, _ int16) {
	r.BrokerID = rd.int32()
	r.BrokerEpoch = rd.int64()
	rd.tags(func(tag uint32, p *reader) bool {
		switch tag {
		case tagRegistrationFenced:
			r.Fenced = FlagChange(p.int8())
		case tagRegistrationInControlledShutdown:
			r.InControlledShutdown = FlagChange(p.int8())
		default:
			return false
		}
		return true
	})
}

func (r *TopicRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	b = appendString(b, r.Name)
	b = appendUUID(b, r.TopicID)
	return appendNoTags(b), nil
}

func (r *TopicRecord) readBody(rd *reader, _ int16) {
	r.Name = rd.string()
	r.TopicID = rd.uuid()
	rd.tags(nil)
}

func (r *PartitionRecord) appendBody(b []byte, v int16) ([]byte, error) {
	if v < 1 && (len(r.ELR) > 0 || len(r.LastKnownELR) > 0) {
		return b, fmt.Errorf("%w: eligible leader replicas need version 1", ErrFieldNotInVersion)
	}
	b = appendUUID(b, r.TopicID)
	b = appendInt32(b, r.Partition)
	b = appendIDs(b, r.Replicas)
	b = appendIDs(b, r.ISR)
	b = appendIDs(b, r.RemovingReplicas)
	b = appendIDs(b, r.AddingReplicas)
	b = appendInt32(b, r.Leader)
	b = appendInt32(b, r.LeaderEpoch)
	b = appendInt32(b, r.PartitionEpoch)
	if v >= 1 {
		b = appendIDs(b, r.ELR)
		b = appendIDs(b, r.LastKnownELR)
	}
	return appendNoTags(b), nil
}

func (r *PartitionRecord) readBody(rd *reader, v int16) {
	r.TopicID = rd.uuid()
	r.Partition = rd.int32()
	r.Replicas = rd.ids()
	r.ISR = rd.ids()
	r.RemovingReplicas = rd.ids()
	r.AddingReplicas = rd.ids()
	r.Leader = rd.int32()
	r.LeaderEpoch = rd.int32()
	r.PartitionEpoch = rd.int32()
	if v >= 1 {
		r.ELR = rd.ids()
		r.LastKnownELR = rd.ids()
	}
	rd.tags(nil)
}

func (r *PartitionChangeRecord) appendBody(b []byte, v int16) ([]byte, error) {
	if v < 1 && (r.ELR != nil || r.LastKnownELR != nil) {
		return b, fmt.Errorf("%w: eligible leader replicas need version 1", ErrFieldNotInVersion)
	}
	b = appendUUID(b, r.TopicID)
	b = appendInt32(b, r.Partition)
	type field struct {
		tag     uint32
		payload []byte
	}
	var fields [8]field
	n := 0
	addIDs := func(tag uint32, ids []int32) {
		if ids != nil {
			fields[n] = field{tag, appendIDs(nil, ids)}
			n++
		}
	}
	// Ascending tag order.
	addIDs(tagChangeISR, r.ISR)
	if r.Leader != nil {
		fields[n] = field{tagChangeLeader, appendInt32(nil, *r.Leader)}
		n++
	}
	addIDs(tagChangeReplicas, r.Replicas)
	addIDs(tagChangeRemovingReplicas, r.RemovingReplicas)
	addIDs(tagChangeAddingReplicas, r.AddingReplicas)
	addIDs(tagChangeELR, r.ELR)
	addIDs(tagChangeLastKnownELR, r.LastKnownELR)
	b = appendArrayCount(b, n)
	for _, f := range fields[:n] {
		b = appendTagged(b, f.tag, f.payload)
	}
	return b, nil
}

func (r *PartitionChangeRecord) readBody(rd *reader, v int16) {
	r.TopicID = rd.uuid()
	r.Partition = rd.int32()
	rd.tags(func(tag uint32, p *reader) bool {
		switch {
		case tag == tagChangeISR:
			r.ISR = p.ids()
		case tag == tagChangeLeader:
			leader := p.int32()
			r.Leader = &leader
		case tag == tagChangeReplicas:
			r.Replicas = p.ids()
		case tag == tagChangeRemovingReplicas:
			r.RemovingReplicas = p.ids()
		case tag == tagChangeAddingReplicas:
			r.AddingReplicas = p.ids()
		case tag == tagChangeELR && v >= 1:
			r.ELR = p.ids()
		case tag == tagChangeLastKnownELR && v >= 1:
			r.LastKnownELR = p.ids()
		default:
			return false
		}
		return true
	})
}

func (r *ConfigRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	b = appendInt32(b, int32(r.ResourceType))
	b = appendString(b, r.ResourceName)
	b = appendString(b, r.Key)
	b = appendNullableString(b, r.Value)
	return appendNoTags(b), nil
}

func (r *ConfigRecord) readBody(rd *reader, _ int16) {
	r.ResourceType = ConfigResourceType(rd.int8())
	r.ResourceName = rd.string()
	r.Key = rd.string()
	r.Value = rd.nullableString()
	rd.tags(nil)
}

func (r *RemoveTopicRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	return appendNoTags(appendUUID(b, r.TopicID)), nil
}

func (r *RemoveTopicRecord) readBody(rd *reader, _ int16) {
	r.TopicID = rd.uuid()
	rd.tags(nil)
}

func (r *ProducerIDsRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	b = appendInt32(b, r.BrokerID)
	b = appendInt64(b, r.BrokerEpoch)
	b = appendInt64(b, r.NextProducerID)
	return appendNoTags(b), nil
}

func (r *ProducerIDsRecord) readBody(rd *reader, _ int16) {
	r.BrokerID = rd.int32()
	r.BrokerEpoch = rd.int64()
	r.NextProducerID = rd.int64()
	rd.tags(nil)
}

func (r *FeatureLevelRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	b = appendString(b, r.Name)
	b = appendInt16(b, r.Level)
	return appendNoTags(b), nil
}

func (r *FeatureLevelRecord) readBody(rd *reader, _ int16) {
	r.Name = rd.string()
	r.Level = rd.int16()
	rd.tags(nil)
}

func (*NoOpRecord) appendBody(b []byte, _ int16) ([]byte, error) { return appendNoTags(b), nil }

func (*NoOpRecord) readBody(rd *reader, _ int16) { rd.tags(nil) }
