package interop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startClassicMember is a classic cooperative-sticky kgo member of group,
// consuming topic.
func startClassicMember(t *testing.T, addr, group, topic string, seen *seenSet) *member848 {
	t.Helper()
	return startGroupMember(t, addr, group, seen, kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(250*time.Millisecond))
}

// awaitClassicMembers waits until the consumer group has three members,
// classic of them classic members.
func awaitClassicMembers(t *testing.T, adm *kadm.Client, group string, classic int, msgAndArgs ...any) {
	t.Helper()
	awaitGroup(t, adm, group, func(g kadm.DescribedConsumerGroup) bool {
		n := 0
		for _, m := range g.Members {
			if m.MemberType == 0 {
				n++
			}
		}
		return len(g.Members) == 3 && n == classic
	}, msgAndArgs...)
}

// The online upgrade (group.consumer.migration.policy, bidirectional by
// default): a rolling restart of three classic cooperative-sticky kgo
// members to kgo members of the consumer protocol, one at a time. The
// first consumer-protocol member turns the classic group into a consumer
// group whose classic members keep speaking JoinGroup, SyncGroup and
// Heartbeat until each is replaced. Throughout, every record produced is
// consumed, and the committed offsets end at the log ends.
func TestKgoOnlineUpgradeToConsumerProtocol(t *testing.T) {
	addr, adm, seen := start848Topic(t, "migrate", 6)
	classic := func() *member848 { return startClassicMember(t, addr, "gmigrate", "migrate", seen) }
	members := []*member848{classic(), classic(), classic()}
	ends := produceRoundRobin(t, addr, "migrate", 120)
	seen.await(t, ends, "the classic group did not consume every record")

	for i := range members {
		members[i].close() // LeaveGroup (classic) or epoch -1 (consumer)
		members[i] = startMember848(t, addr, "gmigrate", seen, kgo.ConsumeTopics("migrate"))
		ends = produceRoundRobin(t, addr, "migrate", 60)
		seen.await(t, ends,
			"records after replacing member %d not consumed", i)
		// The group is a consumer group from the first replacement on:
		// i+1 consumer-protocol members, the others classic ones.
		awaitClassicMembers(t, adm, "gmigrate", 2-i, "the group never had %d classic and %d consumer members", 2-i, i+1)
	}

	// Every member is a consumer-protocol member now, the group stable
	// with two partitions each.
	requireStableShares(t, adm, "gmigrate", 3, 2, func(m kadm.ConsumerGroupMember) bool { return m.MemberType == 1 },
		"the upgraded group never became stable with two partitions each")
	ends = produceRoundRobin(t, addr, "migrate", 60)
	seen.await(t, ends, "records after the upgrade not consumed")
	requireCommitted(t, addr, "gmigrate", "migrate", ends)
}

// The online downgrade: three consumer-protocol kgo members replaced one
// at a time by classic cooperative-sticky ones. The classic members join
// the consumer group as classic members; when the last consumer-protocol
// member leaves, the group becomes a classic group again (with a
// rebalance). Every record is consumed; the offsets end at the log ends.
func TestKgoOnlineDowngradeToClassicProtocol(t *testing.T) {
	addr, adm, seen := start848Topic(t, "downgrade", 6)
	members := []*member848{}
	for range 3 {
		members = append(members, startMember848(t, addr, "gdown", seen, kgo.ConsumeTopics("downgrade")))
	}
	ends := produceRoundRobin(t, addr, "downgrade", 120)
	seen.await(t, ends, "the consumer group did not consume every record")

	for i := range members {
		members[i].close()
		members[i] = startClassicMember(t, addr, "gdown", "downgrade", seen)
		ends = produceRoundRobin(t, addr, "downgrade", 60)
		seen.await(t, ends,
			"records after replacing member %d not consumed", i)
		if i == len(members)-1 {
			break
		}
		// Still a consumer group, with i+1 classic members in it.
		awaitClassicMembers(t, adm, "gdown", i+1, "the consumer group never had %d classic members", i+1)
	}

	// A classic group again: DescribeGroups sees its three members.
	require.Eventually(t, func() bool {
		ctx := ctxFor(t, opTimeout)
		gs, err := adm.DescribeGroups(ctx, "gdown")
		if err != nil {
			return false
		}
		g := gs["gdown"]
		return g.Err == nil && g.State == "Stable" && len(g.Members) == 3
	}, opTimeout, 100*time.Millisecond, "the group never became a stable classic group of three")
	ends = produceRoundRobin(t, addr, "downgrade", 60)
	seen.await(t, ends, "records after the downgrade not consumed")
	requireCommitted(t, addr, "gdown", "downgrade", ends)
}
