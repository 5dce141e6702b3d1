package group

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func loads(out []parts) []int {
	var n []int
	for _, p := range out {
		n = append(n, len(p))
	}
	return n
}

// requireDisjointCover checks every partition of topics is assigned to
// exactly one member.
func requireDisjointCover(t *testing.T, out []parts, topics []TopicInfo) {
	t.Helper()
	seen := map[tpid]bool{}
	for _, p := range out {
		for _, tp := range p {
			require.False(t, seen[tp], "partition %v assigned twice", tp)
			seen[tp] = true
		}
	}
	n := 0
	for _, tpc := range topics {
		n += int(tpc.Partitions)
	}
	require.Len(t, seen, n)
}

func TestUniformAssignorBalancesAndSticks(t *testing.T) {
	topics := []TopicInfo{{Name: "a", ID: topicID("a"), Partitions: 7}, {Name: "b", ID: topicID("b"), Partitions: 3}}
	in := []assignInput{{id: "m1", topics: topics}, {id: "m2", topics: topics}, {id: "m3", topics: topics}}
	out := assign(AssignorUniform, in)
	requireDisjointCover(t, out, topics)
	require.ElementsMatch(t, []int{4, 3, 3}, loads(out))

	// A fourth member takes partitions only from the others' surplus:
	// every member keeps at least two of what it had.
	for i := range in {
		in[i].previous = out[i]
	}
	in = append(in, assignInput{id: "m4", topics: topics})
	next := assign(AssignorUniform, in)
	requireDisjointCover(t, next, topics)
	require.ElementsMatch(t, []int{3, 3, 2, 2}, loads(next))
	moved := 0
	for i := range out {
		moved += len(out[i].minus(next[i]))
	}
	require.Equal(t, 2, moved, "only what the new member needs moves")

	// Heterogeneous subscriptions: m2 reads only b.
	het := []assignInput{{id: "m1", topics: topics}, {id: "m2", topics: topics[1:]}}
	out = assign(AssignorUniform, het)
	requireDisjointCover(t, out, topics)
	for _, tp := range out[1] {
		require.Equal(t, topicID("b"), tp.topic)
	}
	require.Equal(t, []int{7, 3}, loads(out))
}

func TestRangeAssignor(t *testing.T) {
	topics := []TopicInfo{{Name: "a", ID: topicID("a"), Partitions: 5}}
	out := assign(AssignorRange, []assignInput{{id: "m1", topics: topics}, {id: "m2", topics: topics}})
	require.Equal(t, parts{{topicID("a"), 0}, {topicID("a"), 1}, {topicID("a"), 2}}, out[0])
	require.Equal(t, parts{{topicID("a"), 3}, {topicID("a"), 4}}, out[1])
}

func TestConsumerGroupMaxSize(t *testing.T) {
	cfg := testCfg
	cfg.ConsumerMaxSize = 1
	r := newRig(t, cfg)
	r.shard.SetTopics([]TopicInfo{{Name: "t", ID: topicID("t"), Partitions: 1}})
	beat := func(member string) int16 {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "g", member, 1000
		req.SubscribedTopicNames, req.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		got := await(r, func(done func(*kmsg.ConsumerGroupHeartbeatResponse)) { r.shard.ConsumerHeartbeat(req, Client{}, done) })
		return got.ErrorCode
	}
	require.Zero(t, beat("a"))
	require.Equal(t, kerr.GroupMaxSizeReached.Code, beat("b"))
	require.Zero(t, beat("a"), "a member already in may rejoin")
}

// FuzzReplayConsumer: no record, however damaged, panics a loading shard.
func FuzzReplayConsumer(f *testing.F) {
	m := &consumerMember{id: "m", topicNames: []string{"t"}, regex: "t.*", assigned: parts{{topicID("t"), 1}}, revoking: parts{{topicID("t"), 2}}}
	for _, rec := range []Record{
		consumerEpochRecord("g", 3), targetEpochRecord("g", 3), partitionMetadataRecord("g", []TopicInfo{{Name: "t", ID: topicID("t"), Partitions: 3}}),
		memberMetadataRecord("g", m), targetMemberRecord("g", "m", m.assigned), currentAssignmentRecord("g", m),
	} {
		f.Add(rec.Key, rec.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r := newRig(t, testCfg)
		sh := r.newShard(testCfg)
		_ = sh.Replay(key, value)
		if len(value) > 0 {
			_ = sh.Replay(key, value[:len(value)/2])
		}
		sh.Loaded()
		_ = fmt.Sprint(sh)
	})
}

// FuzzConsumerHeartbeat: no heartbeat, however odd, panics the shard,
// and no partition is ever held by two members.
func FuzzConsumerHeartbeat(f *testing.F) {
	seed := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	seed.Version, seed.Group, seed.MemberID, seed.RebalanceTimeoutMillis = 1, "g", "a", 1000
	seed.SubscribedTopicNames, seed.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	f.Add(seed.AppendTo(nil), seed.AppendTo(nil))
	seed.MemberID, seed.MemberEpoch = "b", 0
	seed.SubscribedTopicRegex = kmsg.StringPtr("t.*")
	second := seed.AppendTo(nil)
	seed.MemberEpoch, seed.Topics = 2, []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicID("t"), Partitions: []int32{0, 1, 7}}}
	f.Add(second, seed.AppendTo(nil))
	f.Fuzz(func(t *testing.T, first, then []byte) {
		r := newRig(t, testCfg)
		r.shard.SetTopics([]TopicInfo{{Name: "t", ID: topicID("t"), Partitions: 4}, {Name: "tt", ID: topicID("tt"), Partitions: 2}})
		for _, b := range [][]byte{first, then, first} {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Version = 1
			if req.ReadFrom(b) != nil {
				continue
			}
			req.Group = "g"
			answered := 0
			r.shard.ConsumerHeartbeat(req, Client{}, func(*kmsg.ConsumerGroupHeartbeatResponse) { answered++ })
			r.run(10e6)
			require.Equal(t, 1, answered)
		}
		if g := r.shard.Group("g"); g != nil && g.consumer != nil {
			held := map[tpid]string{}
			for _, m := range g.consumer.members {
				for _, tp := range append(append(parts{}, m.assigned...), m.revoking...) {
					if o, ok := held[tp]; ok && o != m.id {
						t.Fatalf("partition %v held by %s and %s", tp, o, m.id)
					}
					held[tp] = m.id
				}
			}
		}
	})
}

// TestConsumerAssignorsConfig: group.consumer.assignors bounds what
// members may ask for, and its first is the group's default.
func TestConsumerAssignorsConfig(t *testing.T) {
	cfg := testCfg
	cfg.ConsumerAssignors = []string{AssignorRange}
	r := newRig(t, cfg)
	r.shard.SetTopics([]TopicInfo{{Name: "t", ID: topicID("t"), Partitions: 3}})
	beat := func(assignor *string) int16 {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "g", "a", 1000
		req.SubscribedTopicNames, req.Topics, req.ServerAssignor = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}, assignor
		got := await(r, func(done func(*kmsg.ConsumerGroupHeartbeatResponse)) { r.shard.ConsumerHeartbeat(req, Client{}, done) })
		return got.ErrorCode
	}
	require.Equal(t, kerr.UnsupportedAssignor.Code, beat(kmsg.StringPtr(AssignorUniform)))
	require.Zero(t, beat(nil))
	require.Equal(t, AssignorRange, r.shard.DescribeConsumer("g").AssignorName)
}
