package group

import (
	"encoding/binary"
	"fmt"
	"regexp"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// # KIP-848 records
//
// A consumer group is written to __consumer_offsets as Kafka's records
// (group-coordinator/src/main/resources/common/message/ConsumerGroup*.json),
// so that Kafka's tools read them and a new coordinator rebuilds the
// group by replaying them. kmsg has no types for them, so they are
// encoded here with kbin: a key is its type (int16) and non-flexible
// fields; a value is its version (0) and flexible fields (compact
// strings and arrays, a tagged-field section after every struct).
//
//	type  key (group [, member])             value
//	3     ConsumerGroupMetadata              Epoch
//	4     ConsumerGroupPartitionMetadata     Topics (id, name, partitions)
//	5     ConsumerGroupMemberMetadata        the member's subscription (a classic
//	                                         member's JoinGroup protocols and session
//	                                         timeout in tagged field 0)
//	6     ConsumerGroupTargetAssignmentMetadata  AssignmentEpoch
//	7     ConsumerGroupTargetAssignmentMember    the member's target
//	8     ConsumerGroupCurrentMemberAssignment   epochs, state, assigned, revoking
//
// A member leaves with tombstones of 8, 7 and 5; a group with 6, 4, 3.
const (
	keyConsumerGroup     = 3
	keyPartitionMetadata = 4
	keyMemberMetadata    = 5
	keyTargetMetadata    = 6
	keyTargetMember      = 7
	keyCurrentAssignment = 8
)

func consumerKey(typ int16, group string, member *string) []byte {
	k := kbin.AppendInt16(nil, typ)
	k = kbin.AppendString(k, group)
	if member != nil {
		k = kbin.AppendString(k, *member)
	}
	return k
}

func valueHeader() []byte { return kbin.AppendInt16(nil, 0) }

func appendTags(b []byte) []byte { return kbin.AppendUvarint(b, 0) }

func appendParts(b []byte, p parts) []byte {
	var n int
	p.grouped(func([16]byte, []int32) { n++ })
	b = kbin.AppendCompactArrayLen(b, n)
	p.grouped(func(topic [16]byte, ps []int32) {
		b = kbin.AppendUuid(b, topic)
		b = kbin.AppendCompactArrayLen(b, len(ps))
		for _, x := range ps {
			b = kbin.AppendInt32(b, x)
		}
		b = appendTags(b)
	})
	return b
}

func consumerEpochRecord(group string, epoch int32) Record {
	v := kbin.AppendInt32(valueHeader(), epoch)
	return Record{Key: consumerKey(keyConsumerGroup, group, nil), Value: appendTags(v)}
}

func targetEpochRecord(group string, epoch int32) Record {
	v := kbin.AppendInt32(valueHeader(), epoch)
	return Record{Key: consumerKey(keyTargetMetadata, group, nil), Value: appendTags(v)}
}

func partitionMetadataRecord(group string, topics []TopicInfo) Record {
	v := kbin.AppendCompactArrayLen(valueHeader(), len(topics))
	for _, t := range topics {
		v = kbin.AppendUuid(v, t.ID)
		v = kbin.AppendCompactString(v, t.Name)
		v = kbin.AppendInt32(v, t.Partitions)
		v = kbin.AppendCompactArrayLen(v, 0) // PartitionMetadata (racks): unused since Kafka 4.0
		v = appendTags(v)
	}
	return Record{Key: consumerKey(keyPartitionMetadata, group, nil), Value: appendTags(v)}
}

func memberMetadataRecord(group string, m *consumerMember) Record {
	v := kbin.AppendCompactNullableString(valueHeader(), m.instanceID)
	v = kbin.AppendCompactNullableString(v, m.rackID)
	v = kbin.AppendCompactString(v, m.clientID)
	v = kbin.AppendCompactString(v, m.clientHost)
	v = kbin.AppendCompactArrayLen(v, len(m.topicNames))
	for _, n := range m.topicNames {
		v = kbin.AppendCompactString(v, n)
	}
	var regex, assignor *string
	if m.regex != "" {
		regex = &m.regex
	}
	if m.assignor != "" {
		assignor = &m.assignor
	}
	v = kbin.AppendCompactNullableString(v, regex)
	v = kbin.AppendInt32(v, m.rebalanceTimeoutMs)
	v = kbin.AppendCompactNullableString(v, assignor)
	if m.classic == nil {
		return Record{Key: consumerKey(keyMemberMetadata, group, &m.id), Value: appendTags(v)}
	}
	// ClassicMemberMetadata, tagged field 0: SessionTimeoutMs,
	// SupportedProtocols. A nullable struct has no marker byte where it
	// is tagged (absent is null), as Kafka's generator writes it.
	c := kbin.AppendInt32(nil, m.classic.sessionTimeoutMs)
	c = kbin.AppendCompactArrayLen(c, len(m.classic.protocols))
	for _, p := range m.classic.protocols {
		c = kbin.AppendCompactString(c, p.Name)
		c = kbin.AppendCompactBytes(c, p.Metadata)
		c = appendTags(c)
	}
	c = appendTags(c)
	v = kbin.AppendUvarint(v, 1)
	v = kbin.AppendUvarint(v, tagClassicMemberMetadata)
	v = kbin.AppendUvarint(v, uint32(len(c)))
	v = append(v, c...)
	return Record{Key: consumerKey(keyMemberMetadata, group, &m.id), Value: v}
}

// tagClassicMemberMetadata is ConsumerGroupMemberMetadataValue's tag of
// a classic member's metadata.
const tagClassicMemberMetadata = 0

// readClassicMeta reads ClassicMemberMetadata.
func readClassicMeta(b []byte) (*classicMeta, bool) {
	r := reader{kbin.Reader{Src: b}}
	c := &classicMeta{sessionTimeoutMs: r.Int32()}
	for n := r.CompactArrayLen(); n > 0 && r.Ok(); n-- {
		var p kmsg.JoinGroupRequestProtocol
		p.Name, p.Metadata = r.CompactString(), r.CompactBytes()
		r.skipTags()
		c.protocols = append(c.protocols, p)
	}
	r.skipTags()
	if err := r.Complete(); err != nil || len(c.protocols) == 0 {
		return nil, false
	}
	return c, true
}

func targetMemberRecord(group, member string, target parts) Record {
	v := appendParts(valueHeader(), target)
	return Record{Key: consumerKey(keyTargetMember, group, &member), Value: appendTags(v)}
}

func currentAssignmentRecord(group string, m *consumerMember) Record {
	v := kbin.AppendInt32(valueHeader(), m.epoch)
	v = kbin.AppendInt32(v, m.previousEpoch)
	v = kbin.AppendInt8(v, int8(m.state))
	v = appendParts(v, m.assigned)
	v = appendParts(v, m.revoking)
	return Record{Key: consumerKey(keyCurrentAssignment, group, &m.id), Value: appendTags(v)}
}

// memberTombstones delete a member (Kafka's order: current assignment,
// target, metadata).
func memberTombstones(group, member string) []Record {
	return []Record{
		{Key: consumerKey(keyCurrentAssignment, group, &member)},
		{Key: consumerKey(keyTargetMember, group, &member)},
		{Key: consumerKey(keyMemberMetadata, group, &member)},
	}
}

// consumerGroupTombstones delete a consumer group with no members.
func consumerGroupTombstones(group string) []Record {
	return []Record{
		{Key: consumerKey(keyTargetMetadata, group, nil)},
		{Key: consumerKey(keyPartitionMetadata, group, nil)},
		{Key: consumerKey(keyConsumerGroup, group, nil)},
	}
}

// classicTombstone deletes a classic group's record (it became a
// consumer group; its offsets stay).
func classicTombstone(group string) Record {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = keyGroupMetadata, group
	return Record{Key: k.AppendTo(nil)}
}

// isConsumerKey reports whether key is one of the KIP-848 records.
func isConsumerKey(key []byte) bool {
	if len(key) < 2 {
		return false
	}
	t := int16(binary.BigEndian.Uint16(key))
	return t >= keyConsumerGroup && t <= keyCurrentAssignment
}

// reader wraps kbin's with the flexible-version helpers.
type reader struct{ kbin.Reader }

func (r *reader) skipTags() {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

func (r *reader) parts() parts {
	var out parts
	for n := r.CompactArrayLen(); n > 0 && r.Ok(); n-- {
		topic := r.Uuid()
		for k := r.CompactArrayLen(); k > 0 && r.Ok(); k-- {
			out = append(out, tpid{topic, r.Int32()})
		}
		r.skipTags()
	}
	return sortParts(out)
}

// replayConsumer applies one KIP-848 record while loading.
func (s *Shard) replayConsumer(key, value []byte) error {
	kr := reader{kbin.Reader{Src: key}}
	typ := kr.Int16()
	group := kr.String()
	var member string
	if typ == keyMemberMetadata || typ == keyTargetMember || typ == keyCurrentAssignment {
		member = kr.String()
	}
	if err := kr.Complete(); err != nil || len(kr.Src) != 0 {
		return fmt.Errorf("%w: consumer group key of type %d", ErrBadRecord, typ)
	}
	g := s.group(group, value != nil)
	if g == nil {
		return nil
	}
	if g.consumer == nil {
		if value == nil {
			return nil
		}
		g.newConsumerGroup()
	}
	cg := g.consumer
	r := reader{kbin.Reader{Src: value}}
	if value != nil && r.Int16() != 0 {
		return nil // a newer value version than this coordinator knows: skipped
	}
	m := cg.byID[member]
	bad := func(what string) error {
		return fmt.Errorf("%w: %s of consumer group %s member %q", ErrBadRecord, what, group, member)
	}
	switch typ {
	case keyConsumerGroup:
		if value == nil {
			// The consumer group is gone; its offsets (if any) stay,
			// an empty classic group.
			g.consumer = nil
			g.protocolType, g.state = "", StateEmpty
			if len(g.offsets) == 0 && g.pendingCount() == 0 {
				s.dropGroup(g)
			}
			return nil
		}
		cg.epoch = r.Int32()
	case keyTargetMetadata:
		if value != nil {
			cg.assignmentEpoch = r.Int32()
		}
	case keyPartitionMetadata:
		cg.subscribed = nil
		for n := r.CompactArrayLen(); value != nil && n > 0 && r.Ok(); n-- {
			var t TopicInfo
			t.ID, t.Name, t.Partitions = r.Uuid(), r.CompactString(), r.Int32()
			for k := r.CompactArrayLen(); k > 0 && r.Ok(); k-- {
				r.Int32()
				for j := r.CompactArrayLen(); j > 0 && r.Ok(); j-- {
					r.CompactString()
				}
				r.skipTags()
			}
			r.skipTags()
			cg.subscribed = append(cg.subscribed, t)
		}
	case keyMemberMetadata:
		if value == nil {
			if m != nil {
				g.dropConsumer(m)
				cg.removed = nil
			}
			return nil
		}
		if m == nil {
			m = &consumerMember{id: member}
			cg.members = append(cg.members, m)
			cg.byID[member] = m
		}
		m.instanceID, m.rackID = r.CompactNullableString(), r.CompactNullableString()
		m.clientID, m.clientHost = r.CompactString(), r.CompactString()
		m.topicNames = nil
		for n := r.CompactArrayLen(); n > 0 && r.Ok(); n-- {
			m.topicNames = append(m.topicNames, r.CompactString())
		}
		m.regex, m.re = "", nil
		if re := r.CompactNullableString(); re != nil && *re != "" {
			compiled, err := regexp.Compile("^(?:" + *re + ")$")
			if err != nil {
				return bad("regex")
			}
			m.regex, m.re = *re, compiled
		}
		m.rebalanceTimeoutMs = r.Int32()
		m.assignor = ""
		if a := r.CompactNullableString(); a != nil {
			m.assignor = *a
		}
		m.classic = nil
		for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
			tag, body := r.Uvarint(), r.Span(int(r.Uvarint()))
			if tag != tagClassicMemberMetadata || !r.Ok() {
				continue
			}
			c, ok := readClassicMeta(body)
			if !ok {
				return bad("classic member metadata")
			}
			m.classic = c
		}
		if err := r.Complete(); err != nil {
			return bad("member metadata")
		}
		return nil
	case keyTargetMember, keyCurrentAssignment:
		if m == nil && value == nil {
			return nil // the member's metadata was deleted first
		}
		if m == nil {
			// A member's records may come before its metadata (a
			// static member's new incarnation).
			m = &consumerMember{id: member}
			cg.members = append(cg.members, m)
			cg.byID[member] = m
		}
		if value == nil {
			if typ == keyTargetMember {
				m.target = nil
			} else {
				m.assigned, m.revoking, m.epoch, m.previousEpoch, m.state = nil, nil, 0, 0, memberStable
			}
			return nil
		}
		if typ == keyTargetMember {
			m.target = r.parts()
			break
		}
		m.epoch, m.previousEpoch, m.state = r.Int32(), r.Int32(), memberState(r.Int8())
		m.assigned, m.revoking = r.parts(), r.parts()
		if m.state < memberStable || m.state > memberUnknown {
			return bad("member state")
		}
	}
	if value != nil {
		r.skipTags()
		if err := r.Complete(); err != nil {
			return bad(fmt.Sprintf("value of type %d", typ))
		}
	}
	return nil
}
