package interop

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-log/strata/node"
)

// KIP-848 consumer groups with kgo's ServerSideBalancer: the coordinator
// assigns, members reconcile by heartbeat.

// config848 makes consumer-protocol sessions time out in 3 s and members
// heartbeat every 250 ms, so a test sees a dead member go quickly.
func config848(c *node.Config) {
	c.ConsumerMinSessionTimeoutMs, c.BrokerListener.Groups.Coordinator.ConsumerSessionTimeout = 1000, 3*time.Second
	c.ConsumerMinHeartbeatIntervalMs, c.BrokerListener.Groups.Coordinator.ConsumerHeartbeatInterval = 100, 250*time.Millisecond
}

// start848Topic starts a node of config848 with a topic of partitions
// partitions, and returns the node's address, an admin client and the set
// its members record what they consume in.
func start848Topic(t *testing.T, topic string, partitions int32) (string, *kadm.Client, *seenSet) {
	t.Helper()
	addr := startNodeWith(t, t.TempDir(), config848).Addr()
	adm := newAdmin(t, addr)
	createTopic(t, adm, topic, partitions, nil)
	return addr, adm, &seenSet{}
}

// killableDialer makes a client's connections, and cuts them all (and
// refuses new ones) on kill: the client is gone without leaving.
type killableDialer struct {
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (d *killableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.killed {
		return nil, errors.New("killed")
	}
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *killableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.killed = true
	for _, c := range d.conns {
		c.Close()
	}
}

// member848 is a kgo consumer of the consumer protocol that records what
// it consumes.
type member848 struct {
	cl     *kgo.Client
	dialer *killableDialer
	done   chan struct{}
}

func startMember848(t *testing.T, addr, group string, seen *seenSet, opts ...kgo.Opt) *member848 {
	t.Helper()
	return startGroupMember(t, addr, group, seen, append([]kgo.Opt{kgo.ServerSideBalancer()}, opts...)...)
}

// startGroupMember is a kgo group member of the protocol opts choose (the
// classic one, with kgo's default balancers, unless they say otherwise)
// that records what it consumes.
func startGroupMember(t *testing.T, addr, group string, seen *seenSet, opts ...kgo.Opt) *member848 {
	t.Helper()
	m := &member848{dialer: &killableDialer{}, done: make(chan struct{})}
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(addr), kgo.ConsumerGroup(group),
		kgo.Dialer(m.dialer.dial), kgo.AutoCommitInterval(100 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.RetryTimeout(opTimeout),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	m.cl = cl
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) { seen.add(r.Partition, r.Offset) })
		}
	}()
	t.Cleanup(m.close)
	return m
}

func (m *member848) close() {
	m.cl.Close()
	<-m.done
}

// describe848 describes a consumer group (ConsumerGroupDescribe).
func describe848(t *testing.T, adm *kadm.Client, group string) kadm.DescribedConsumerGroup {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gs, err := adm.DescribeConsumerGroups(ctx, group)
	require.NoError(t, err)
	return gs[group]
}

// awaitGroup waits until group is described without an error and
// accepted by ok, and returns it.
func awaitGroup(t *testing.T, adm *kadm.Client, group string, ok func(kadm.DescribedConsumerGroup) bool, msgAndArgs ...any) kadm.DescribedConsumerGroup {
	t.Helper()
	var g kadm.DescribedConsumerGroup
	require.Eventually(t, func() bool {
		g = describe848(t, adm, group)
		return g.Err == nil && ok(g)
	}, opTimeout, 100*time.Millisecond, msgAndArgs...)
	return g
}

// requireStableShares waits until group is Stable with members members,
// each assigned perMember partitions and accepted by ok (nil: any).
func requireStableShares(t *testing.T, adm *kadm.Client, group string, members, perMember int, ok func(kadm.ConsumerGroupMember) bool, msg string) {
	t.Helper()
	awaitGroup(t, adm, group, func(g kadm.DescribedConsumerGroup) bool {
		if g.State != "Stable" || len(g.Members) != members {
			return false
		}
		for _, m := range g.Members {
			n := 0
			for _, ps := range m.Assignment {
				n += len(ps)
			}
			if n != perMember || (ok != nil && !ok(m)) {
				return false
			}
		}
		return true
	}, msg)
}

// Three members share a topic of six partitions; one leaves cleanly, one
// is killed (its session times out); every record is consumed and the
// committed offsets end at the log ends.
func TestKgoConsumerProtocolGroup(t *testing.T) {
	addr, adm, seen := start848Topic(t, "kip848", 6)

	a := startMember848(t, addr, "g848", seen, kgo.ConsumeTopics("kip848"))
	b := startMember848(t, addr, "g848", seen, kgo.ConsumeTopics("kip848"))
	c := startMember848(t, addr, "g848", seen, kgo.ConsumeTopics("kip848"))
	ends := produceRoundRobin(t, addr, "kip848", 120)
	seen.await(t, ends, "not every record consumed")

	// The coordinator spreads the six partitions over the three members.
	requireStableShares(t, adm, "g848", 3, 2, nil, "the group never became stable with two partitions each")

	a.close() // leaves (epoch -1)
	ends = produceRoundRobin(t, addr, "kip848", 60)
	seen.await(t, ends, "records after a member left not consumed")

	b.dialer.kill() // gone without leaving: its session times out
	ends = produceRoundRobin(t, addr, "kip848", 60)
	seen.await(t, ends, "records after a member died not consumed")
	awaitGroup(t, adm, "g848", func(g kadm.DescribedConsumerGroup) bool { return len(g.Members) == 1 }, "the killed member was never removed")
	requireCommitted(t, addr, "g848", "kip848", ends)

	// ListGroups shows its type.
	ctx := ctxFor(t, opTimeout)
	listed, err := adm.ListGroups(ctx)
	require.NoError(t, err)
	require.Contains(t, listed.Groups(), "g848")
	c.close()
}

// A member subscribed by regex gets a topic created after it joined.
func TestKgoConsumerProtocolRegex(t *testing.T) {
	addr, adm, seen := start848Topic(t, "re-a", 2)
	startMember848(t, addr, "g848re", seen, kgo.ConsumeTopics("re-.*"), kgo.ConsumeRegex(),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.MetadataMaxAge(500*time.Millisecond))
	endsA := produceRoundRobin(t, addr, "re-a", 10)
	seen.await(t, endsA, "re-a not consumed")

	createTopic(t, adm, "re-b", 1, nil)
	endsB := produceRoundRobin(t, addr, "re-b", 10)
	awaitGroup(t, adm, "g848re", func(g kadm.DescribedConsumerGroup) bool {
		return len(g.Members) == 1 && len(g.Members[0].Assignment["re-b"]) == 1
	}, "the regex member was never assigned re-b")
	// re-b's records are consumed once its offsets are committed at its
	// end (seenSet keys by partition only, so it cannot tell re-a's
	// partition 0 from re-b's).
	requireCommitted(t, addr, "g848re", "re-b", endsB)
	requireCommitted(t, addr, "g848re", "re-a", endsA)
}

// A consumer group survives its coordinator's restart: the new
// coordinator replays the group (its member, still holding its
// partitions, until its session times out) and its offsets, and a new
// member goes on from the committed offsets.
func TestKgoConsumerProtocolRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNodeWith(t, dir, config848)
	adm := newAdmin(t, n.Addr())
	createTopic(t, adm, "kip848r", 3, nil)
	seen := &seenSet{}
	a := startMember848(t, n.Addr(), "g848r", seen, kgo.ConsumeTopics("kip848r"))
	ends := produceRoundRobin(t, n.Addr(), "kip848r", 30)
	requireCommitted(t, n.Addr(), "g848r", "kip848r", ends)
	memberID, _ := a.cl.GroupMetadata()
	a.dialer.kill()
	n.stop(t)

	n = startNodeWith(t, dir, config848)
	adm = newAdmin(t, n.Addr())
	replayed := awaitGroup(t, adm, "g848r", func(kadm.DescribedConsumerGroup) bool { return true }, "the group was never served after the restart")
	// Replayed with its member, whose session (3 s) starts at the load.
	require.Len(t, replayed.Members, 1)
	require.Equal(t, memberID, replayed.Members[0].MemberID)
	require.Len(t, replayed.Members[0].Assignment["kip848r"], 3)
	requireCommitted(t, n.Addr(), "g848r", "kip848r", ends)

	seen2 := &seenSet{}
	startMember848(t, n.Addr(), "g848r", seen2, kgo.ConsumeTopics("kip848r"))
	more := produceRoundRobin(t, n.Addr(), "kip848r", 30)
	requireCommitted(t, n.Addr(), "g848r", "kip848r", more)
	// The new member started from the commits: it never saw the records
	// below them.
	seen2.mu.Lock()
	defer seen2.mu.Unlock()
	for p, offs := range seen2.seen {
		for o := range offs {
			require.GreaterOrEqual(t, o, ends[p], "partition %d: offset %d consumed again below the commit %d", p, o, ends[p])
		}
	}
}

// A static member (group.instance.id) that closes leaves with epoch -2:
// its partitions wait for its next incarnation, which takes them over
// without a new group epoch.
func TestKgoConsumerProtocolStaticMember(t *testing.T) {
	addr, adm, seen := start848Topic(t, "kip848s", 4)
	s1 := startMember848(t, addr, "g848s", seen, kgo.ConsumeTopics("kip848s"), kgo.InstanceID("i1"))
	startMember848(t, addr, "g848s", seen, kgo.ConsumeTopics("kip848s"))
	ends := produceRoundRobin(t, addr, "kip848s", 40)
	seen.await(t, ends, "not every record consumed")
	before := awaitGroup(t, adm, "g848s", func(g kadm.DescribedConsumerGroup) bool {
		return g.State == "Stable" && len(g.Members) == 2
	}, "the group never became stable")

	s1.close()
	s2 := startMember848(t, addr, "g848s", seen, kgo.ConsumeTopics("kip848s"), kgo.InstanceID("i1"))
	more := produceRoundRobin(t, addr, "kip848s", 40)
	seen.await(t, more, "records after the restart not consumed")
	after := describe848(t, adm, "g848s")
	require.NoError(t, after.Err)
	require.Len(t, after.Members, 2)
	require.Equal(t, before.Epoch, after.Epoch, "the static member's return started a new group epoch")
	memberID, _ := s2.cl.GroupMetadata()
	found := false
	for _, m := range after.Members {
		if m.InstanceID != nil && *m.InstanceID == "i1" {
			found = true
			require.Equal(t, memberID, m.MemberID)
		}
	}
	require.True(t, found, "instance i1 is not in the group")
	requireCommitted(t, addr, "g848s", "kip848s", more)
}
