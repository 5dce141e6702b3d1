package group

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe fills a DescribeGroups answer for one group (a group this
// shard does not know is described as Dead, as Kafka does).
func (s *Shard) Describe(name string) kmsg.DescribeGroupsResponseGroup {
	out := kmsg.NewDescribeGroupsResponseGroup()
	out.Group = name
	if e := s.status.Err(); e != nil {
		out.ErrorCode = e.Code
		return out
	}
	g := s.group(name, false)
	if g == nil || g.consumer != nil {
		// Kafka 4 describes a consumer group as a classic group it does
		// not know (ConsumerGroupDescribe is its API).
		out.State = string(StateDead)
		return out
	}
	out.State, out.ProtocolType = string(g.state), g.protocolType
	if g.state == StateStable {
		out.Protocol = g.protocol
	}
	for _, m := range g.members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		if g.state == StateStable {
			dm.ProtocolMetadata, dm.MemberAssignment = m.metadataFor(g.protocol), m.assignment
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

// List lists the shard's groups (ListGroups), filtered by state and type
// when the lists are not empty (v4+, v5+).
func (s *Shard) List(states, types []string) []kmsg.ListGroupsResponseGroup {
	if s.status.Err() != nil {
		return nil
	}
	var out []kmsg.ListGroupsResponseGroup
	for _, g := range s.Groups() {
		typ, state := g.Type(), string(g.state)
		if g.consumer != nil {
			state = g.ConsumerState()
		}
		if len(states) > 0 && !slices.ContainsFunc(states, func(st string) bool { return equalFold(st, state) }) {
			continue
		}
		if len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return equalFold(t, typ) }) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.name, g.protocolType, state, typ
		out = append(out, lg)
	}
	return out
}

// equalFold compares ASCII case-insensitively (Kafka parses states,
// types and config values such as the migration policy ignoring case).
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Delete deletes a group with no members and its offsets (DeleteGroups):
// NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND if unknown.
// done gets the code once the tombstones are written.
func (s *Shard) Delete(name string, done func(int16)) {
	if e := s.status.Err(); e != nil {
		done(e.Code)
		return
	}
	g := s.group(name, false)
	switch {
	case g == nil || g.state == StateDead:
		done(kerr.GroupIDNotFound.Code)
		return
	case len(g.members) > 0 || g.state != StateEmpty || g.writing:
		done(kerr.NonEmptyGroup.Code)
		return
	case g.consumer != nil && (len(g.consumer.members) > 0 || g.consumer.issued != g.consumer.completed):
		done(kerr.NonEmptyGroup.Code)
		return
	}
	recs := make([]Record, 0, len(g.offsets)+1)
	for _, tp := range g.offsetKeys() {
		recs = append(recs, offsetRecord(g.name, tp.topic, tp.partition, nil))
	}
	g.state = StateDead
	g.deleted = true
	recs = append(recs, g.deletionRecords(s.e.Now().UnixMilli())...)
	s.write(recs, func(err error) {
		if err != nil {
			g.state, g.deleted = StateEmpty, false
			done(writeErrorCode(err).Code)
			return
		}
		if s.groups[name] == g {
			s.dropGroup(g)
		}
		s.log.Info("group deleted", "group", name)
		done(0)
	})
}

// subscribedTopics lists the topics the members of a consumer group
// subscribe to (from their protocol metadata), or nil.
func (g *Group) subscribedTopics() []string {
	if g.consumer != nil {
		var topics []string
		for _, t := range g.consumer.subscribed {
			topics = append(topics, t.Name)
		}
		return topics
	}
	if g.protocolType != "consumer" || g.protocol == "" {
		return nil
	}
	var topics []string
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			continue
		}
		for _, t := range meta.Topics {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	return topics
}

// DeleteOffsets handles OffsetDelete: the offsets of topics no member
// subscribes to are deleted (GROUP_SUBSCRIBED_TO_TOPIC for the others);
// done gets the answer once the tombstones are written.
func (s *Shard) DeleteOffsets(req *kmsg.OffsetDeleteRequest, done func(*kmsg.OffsetDeleteResponse)) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if e := s.status.Err(); e != nil {
		resp.ErrorCode = e.Code
		done(resp)
		return
	}
	g := s.group(req.Group, false)
	if g == nil || g.state == StateDead {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		done(resp)
		return
	}
	if len(g.members) > 0 && g.protocolType != "consumer" {
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		done(resp)
		return
	}
	subscribed := g.subscribedTopics()
	var recs []Record
	var deleted []topicPartition
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			tp := topicPartition{t.Topic, p.Partition}
			switch {
			case slices.Contains(subscribed, t.Topic):
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				if _, ok := g.offsets[tp]; ok {
					recs = append(recs, offsetRecord(g.name, tp.topic, tp.partition, nil))
					deleted = append(deleted, tp)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(recs) == 0 {
		done(resp)
		return
	}
	s.write(recs, func(err error) {
		if err != nil {
			resp.ErrorCode = writeErrorCode(err).Code
			resp.Topics = nil
			done(resp)
			return
		}
		for _, tp := range deleted {
			delete(g.offsets, tp)
		}
		g.sortedOffsets = nil
		done(resp)
	})
}
