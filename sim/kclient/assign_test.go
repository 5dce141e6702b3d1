package kclient

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// assignRig is a member whose metadata knows the topics.
func assignRig(topics map[string]int32) *GroupMember {
	c := &Client{}
	for _, name := range []string{"a", "b", "c"} {
		n, ok := topics[name]
		if !ok {
			continue
		}
		t := TopicMetadata{Name: name}
		for p := int32(0); p < n; p++ {
			t.Partitions = append(t.Partitions, PartitionMetadata{Partition: p})
		}
		c.setTopic(t)
	}
	return &GroupMember{c: c}
}

func joinMember(id string, gen int32, topics []string, owned ...TopicPartition) kmsg.JoinGroupResponseMember {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version, meta.Topics, meta.Generation = 2, topics, gen
	addOwned(&meta, owned)
	m := kmsg.NewJoinGroupResponseMember()
	m.MemberID, m.ProtocolMetadata = id, meta.AppendTo(nil)
	return m
}

// plan decodes an assignment into member id -> partitions.
func plan(t *testing.T, out []kmsg.SyncGroupRequestGroupAssignment) map[string][]TopicPartition {
	t.Helper()
	got := map[string][]TopicPartition{}
	for _, a := range out {
		var ma kmsg.ConsumerMemberAssignment
		require.NoError(t, ma.ReadFrom(a.MemberAssignment))
		got[a.MemberID] = []TopicPartition{}
		for _, at := range ma.Topics {
			for _, p := range at.Partitions {
				got[a.MemberID] = append(got[a.MemberID], TopicPartition{at.Topic, p})
			}
		}
	}
	return got
}

func TestRangeAssignsContiguousRangesPerTopic(t *testing.T) {
	gm := assignRig(map[string]int32{"a": 3, "b": 3})
	got := plan(t, gm.assign([]kmsg.JoinGroupResponseMember{
		joinMember("m2", -1, []string{"a", "b"}), joinMember("m1", -1, []string{"a", "b"}),
	}))
	require.Equal(t, map[string][]TopicPartition{
		"m1": {{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}},
		"m2": {{"a", 2}, {"b", 2}},
	}, got)
}

// TestStickyWithholdsMovingPartitions: a partition moving from one member
// to another is given to nobody in the first generation (its owner gives
// it up and joins again) and to its new owner in the next.
func TestStickyWithholdsMovingPartitions(t *testing.T) {
	gm := assignRig(map[string]int32{"a": 4})
	all := []TopicPartition{{"a", 0}, {"a", 1}, {"a", 2}, {"a", 3}}
	first := plan(t, gm.assignSticky([]kmsg.JoinGroupResponseMember{
		joinMember("m1", 5, []string{"a"}, all...), joinMember("m2", -1, []string{"a"}),
	}))
	require.Equal(t, map[string][]TopicPartition{"m1": {{"a", 0}, {"a", 1}}, "m2": {}}, first)
	second := plan(t, gm.assignSticky([]kmsg.JoinGroupResponseMember{
		joinMember("m1", 6, []string{"a"}, first["m1"]...), joinMember("m2", 6, []string{"a"}),
	}))
	require.Equal(t, map[string][]TopicPartition{"m1": {{"a", 0}, {"a", 1}}, "m2": {{"a", 2}, {"a", 3}}}, second)
}

// TestStickyTrustsTheNewestClaim: two members claiming a partition (one
// missed a rebalance) resolve to the claim of the newer generation.
func TestStickyTrustsTheNewestClaim(t *testing.T) {
	gm := assignRig(map[string]int32{"a": 2})
	got := plan(t, gm.assignSticky([]kmsg.JoinGroupResponseMember{
		joinMember("m1", 3, []string{"a"}, TopicPartition{"a", 0}, TopicPartition{"a", 1}),
		joinMember("m2", 4, []string{"a"}, TopicPartition{"a", 0}),
	}))
	require.Equal(t, map[string][]TopicPartition{"m1": {{"a", 1}}, "m2": {{"a", 0}}}, got)
}
