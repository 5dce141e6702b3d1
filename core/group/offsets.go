package group

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/plant"
)

// topicPartition names a partition by topic name (offsets are kept by
// name, as Kafka's OffsetCommitKey does).
type topicPartition struct {
	topic     string
	partition int32
}

// committed is one committed offset.
type committed struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	timestamp   int64 // commit time, ms
	// seq orders offsets applied to memory, in log order: a transaction's
	// pending offset does not replace one written after it (txnoffsets.go).
	seq int64
}

// MaxOffsetMetadataBytes is offset.metadata.max.bytes: longer metadata is
// refused with OFFSET_METADATA_TOO_LARGE.
const MaxOffsetMetadataBytes = 4096

// PartitionExists tells a shard whether a topic partition exists, so that
// commits for unknown partitions get UNKNOWN_TOPIC_OR_PARTITION.
type PartitionExists func(topic string, partition int32) bool

// Commit handles OffsetCommit; reply runs once the offsets are written.
//
// A commit with generation -1 and no member id is a simple commit (an
// admin tool, or a consumer assigning partitions itself): accepted only
// while the group has no members. Otherwise the member and generation
// must be current (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION), and a group
// completing a rebalance answers REBALANCE_IN_PROGRESS.
func (s *Shard) Commit(req *kmsg.OffsetCommitRequest, exists PartitionExists, reply func(*kmsg.OffsetCommitResponse)) {
	oc := &offsetCommit{group: req.Group, topics: readCommit(req.Topics, offsetCommitTopic, offsetCommitPart), hasEpoch: req.Version >= 6}
	oc.member = func(g *Group) (*Group, *kerr.Error) { return s.commitMember(g, req) }
	oc.answer = func() {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.Topics = answerCommit(oc.topics, offsetCommitAnswer, offsetCommitCode)
		reply(resp)
	}
	oc.write = func(recs []Record, done func(error)) {
		if plant.Is(plant.GroupCommitBeforeWrite) {
			oc.answer()
			reply = func(*kmsg.OffsetCommitResponse) {}
		}
		s.write(recs, done)
	}
	oc.apply = func(g *Group, tp topicPartition, c *committed) {
		if _, had := g.offsets[tp]; !had {
			g.sortedOffsets = nil
		}
		g.offsets[tp] = c
	}
	s.commit(oc, exists)
}

// commitMember is Commit's member check (see there): it returns the
// group to commit to (created for a simple commit), or the code.
func (s *Shard) commitMember(g *Group, req *kmsg.OffsetCommitRequest) (*Group, *kerr.Error) {
	if g != nil && g.state == StateDead {
		return nil, kerr.CoordinatorNotAvailable
	}
	simple := req.Generation < 0 && req.MemberID == ""
	if g != nil && g.consumer != nil {
		if e := g.checkConsumerCommit(req.MemberID, req.Generation, req.Version, true); e != nil {
			return nil, e
		}
		simple = true // checked: the classic checks below do not apply
	}
	if g != nil && g.consumer == nil && req.InstanceID != nil {
		if e := g.checkInstance(*req.InstanceID, req.MemberID); e != nil {
			return nil, e
		}
	}
	stale := !simple && plant.Is(plant.GroupStaleCommit) && g != nil
	switch {
	case stale:
	case simple && g != nil && g.consumer == nil && len(g.members) > 0:
		return nil, kerr.UnknownMemberID
	case !simple && (g == nil || g.member(req.MemberID) == nil):
		return nil, kerr.UnknownMemberID
	case !simple && req.Generation != g.generation:
		return nil, kerr.IllegalGeneration
	case !simple && g.state == StateCompletingRebalance:
		return nil, kerr.RebalanceInProgress
	}
	if g == nil {
		g = s.group(req.Group, true)
	}
	if m := g.member(req.MemberID); !simple && g.consumer == nil && m != nil {
		g.touch(m)
	}
	return g, nil
}

// OffsetsFetched is one group's part of an OffsetFetch answer.
type OffsetsFetched struct {
	ErrorCode int16
	Topics    []kmsg.OffsetFetchResponseGroupTopic
}

// Fetch returns a group's committed offsets: of the topics asked for
// (partitions without a commit get offset -1), or of every partition with
// one when topics is nil.
func (s *Shard) Fetch(group string, topics []kmsg.OffsetFetchRequestGroupTopic, all bool) OffsetsFetched {
	return s.FetchAs(group, nil, -1, topics, all)
}

// FetchAs is Fetch for a member (OffsetFetch v9+): of a consumer group,
// the member and its epoch must be current (UNKNOWN_MEMBER_ID,
// STALE_MEMBER_EPOCH) unless neither is given.
func (s *Shard) FetchAs(group string, memberID *string, epoch int32, topics []kmsg.OffsetFetchRequestGroupTopic, all bool) OffsetsFetched {
	return s.FetchStable(group, memberID, epoch, topics, all, false)
}

// FetchStable is FetchAs with OffsetFetch's require_stable (v7+): a
// partition with a transaction's pending offset answers
// UNSTABLE_OFFSET_COMMIT and offset -1 (txnoffsets.go, rule T2).
func (s *Shard) FetchStable(group string, memberID *string, epoch int32, topics []kmsg.OffsetFetchRequestGroupTopic, all, requireStable bool) OffsetsFetched {
	var out OffsetsFetched
	if e := s.status.Err(); e != nil {
		out.ErrorCode = e.Code
		return out
	}
	g := s.group(group, false)
	if g != nil && g.consumer != nil && (memberID != nil || epoch >= 0) {
		id := ""
		if memberID != nil {
			id = *memberID
		}
		if e := g.checkConsumerCommit(id, epoch, 9, false); e != nil {
			out.ErrorCode = e.Code
			return out
		}
	}
	lookup := func(tp topicPartition) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = tp.partition, -1, -1
		if g != nil && requireStable && g.hasPending(tp) {
			rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			return rp
		}
		if g != nil {
			if c, ok := g.offsets[tp]; ok {
				rp.Offset, rp.LeaderEpoch = c.offset, c.leaderEpoch
				rp.Metadata = kmsg.StringPtr(c.metadata)
			}
		}
		return rp
	}
	if all {
		if g == nil {
			return out
		}
		for _, tp := range g.offsetKeys() {
			if n := len(out.Topics); n == 0 || out.Topics[n-1].Topic != tp.topic {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = tp.topic
				out.Topics = append(out.Topics, rt)
			}
			out.Topics[len(out.Topics)-1].Partitions = append(out.Topics[len(out.Topics)-1].Partitions, lookup(tp))
		}
		return out
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, lookup(topicPartition{t.Topic, p}))
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

// offsetKeys lists the group's committed partitions sorted by topic and
// partition.
func (g *Group) offsetKeys() []topicPartition {
	if g.sortedOffsets == nil {
		keys := make([]topicPartition, 0, len(g.offsets))
		for tp := range g.offsets {
			keys = append(keys, tp)
		}
		slices.SortFunc(keys, func(a, b topicPartition) int {
			return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
		})
		g.sortedOffsets = keys
	}
	return g.sortedOffsets
}

// Offset returns a group's committed offset of a partition (tests and
// tools), or -1.
func (g *Group) Offset(topic string, partition int32) int64 {
	if c, ok := g.offsets[topicPartition{topic, partition}]; ok {
		return c.offset
	}
	return -1
}
