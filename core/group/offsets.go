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
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	all := func(code int16) {
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		reply(resp)
	}
	if e := s.check(); e != nil {
		all(e.Code)
		return
	}
	if req.Group == "" {
		all(kerr.InvalidGroupID.Code)
		return
	}
	g := s.group(req.Group, false)
	if g != nil && g.state == StateDead {
		all(kerr.CoordinatorNotAvailable.Code)
		return
	}
	simple := req.Generation < 0 && req.MemberID == ""
	if g != nil && g.consumer != nil {
		if e := g.checkConsumerCommit(req.MemberID, req.Generation, req.Version, true); e != nil {
			all(e.Code)
			return
		}
		simple = true // checked: the classic checks below do not apply
	}
	if g != nil && g.consumer == nil && req.InstanceID != nil {
		if e := g.checkInstance(*req.InstanceID, req.MemberID); e != nil {
			all(e.Code)
			return
		}
	}
	stale := !simple && plant.Is(plant.GroupStaleCommit) && g != nil
	switch {
	case stale:
	case simple && g != nil && g.consumer == nil && len(g.members) > 0:
		all(kerr.UnknownMemberID.Code)
		return
	case !simple && (g == nil || g.member(req.MemberID) == nil):
		all(kerr.UnknownMemberID.Code)
		return
	case !simple && req.Generation != g.generation:
		all(kerr.IllegalGeneration.Code)
		return
	case !simple && g.state == StateCompletingRebalance:
		all(kerr.RebalanceInProgress.Code)
		return
	}
	if g == nil {
		g = s.group(req.Group, true)
	}
	if m := g.member(req.MemberID); !simple && g.consumer == nil && m != nil {
		g.touch(m)
	}
	now := s.e.Now().UnixMilli()
	var recs []Record
	type accepted struct {
		tp topicPartition
		c  *committed
	}
	var ok []accepted
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			var c *committed
			if rp.ErrorCode, c = checkCommit(exists, t.Topic, p.Partition, p.Offset, p.LeaderEpoch, req.Version >= 6, p.Metadata, now); c != nil {
				tp := topicPartition{t.Topic, p.Partition}
				recs = append(recs, offsetRecord(g.name, tp.topic, tp.partition, c))
				ok = append(ok, accepted{tp, c})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(recs) == 0 {
		reply(resp)
		return
	}
	if plant.Is(plant.GroupCommitBeforeWrite) {
		early := *resp
		early.Topics = slices.Clone(resp.Topics)
		for i := range early.Topics {
			early.Topics[i].Partitions = slices.Clone(early.Topics[i].Partitions)
		}
		reply(&early)
		reply = func(*kmsg.OffsetCommitResponse) {}
	}
	s.write(recs, func(err error) {
		if err != nil {
			code := writeErrorCode(err).Code
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					if resp.Topics[i].Partitions[j].ErrorCode == 0 {
						resp.Topics[i].Partitions[j].ErrorCode = code
					}
				}
			}
			reply(resp)
			return
		}
		if g.deleted {
			reply(resp) // deleted meanwhile: the group's tombstone came after
			return
		}
		for _, a := range ok {
			a.c.seq = s.nextSeq()
			if _, had := g.offsets[a.tp]; !had {
				g.sortedOffsets = nil
			}
			g.offsets[a.tp] = a.c
		}
		reply(resp)
	})
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
	if e := s.check(); e != nil {
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

// checkCommit validates one partition's committed offset, of OffsetCommit
// or TxnOffsetCommit, and returns the error code for it, or the offset to
// write (its leader epoch -1 when the request version has none).
func checkCommit(exists PartitionExists, topic string, partition int32, offset int64, leaderEpoch int32, hasEpoch bool, metadata *string, now int64) (int16, *committed) {
	switch {
	case metadata != nil && len(*metadata) > MaxOffsetMetadataBytes:
		return kerr.OffsetMetadataTooLarge.Code, nil
	case exists != nil && !exists(topic, partition):
		return kerr.UnknownTopicOrPartition.Code, nil
	case offset < 0:
		return kerr.InvalidCommitOffsetSize.Code, nil
	}
	c := &committed{offset: offset, leaderEpoch: leaderEpoch, timestamp: now}
	if metadata != nil {
		c.metadata = *metadata
	}
	if !hasEpoch {
		c.leaderEpoch = -1
	}
	return 0, c
}
