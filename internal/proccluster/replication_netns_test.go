package proccluster

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds of TestReplicationNetnsIsolationProcesses.
const (
	// isolationHold is how long the node stays isolated: longer than
	// replica.lag.time.max.ms (5 s) and broker.session.timeout.ms (4 s)
	// of replicationFaultProps, with room for the ISR changes and for
	// produces on the majority side afterwards.
	isolationHold = 12 * time.Second
	// isolationShrinkTimeout bounds the majority's view dropping the
	// isolated node from every ISR and every leadership.
	isolationShrinkTimeout = 20 * time.Second
	// staleProbeDeliveryTimeout bounds each record the stale-leader probe
	// asks the isolated node to acknowledge.
	staleProbeDeliveryTimeout = 3 * time.Second
	// isolationProduceTimeout is the workload producers' produce request
	// timeout (kgo's default is 10 s): a request sent to the isolated
	// node, which cannot make it durable, fails sooner.
	isolationProduceTimeout = 3 * time.Second
	// isolationAckTimeout bounds the wait, after the majority's ISR
	// change, for an acknowledgement in every partition: a few rounds of
	// isolationProduceTimeout.
	isolationAckTimeout = 30 * time.Second
	// staleProbeInterval paces the probe's writes.
	staleProbeInterval = 100 * time.Millisecond
)

// TestReplicationNetnsIsolationProcesses runs three combined nodes as
// real processes, node 3 inside its own network namespace (see
// netnsNode for the addresses), with the fault tests' topic (three
// partitions, RF 3, min.insync.replicas 2) and the recorded workload of
// TestReplicationFaultLoopProcesses: two acks=all producers and a
// consumer in the root namespace. It isolates node 3 from nodes 1 and 2,
// not from the clients, for at least isolationHold, longer than
// replica.lag.time.max.ms and broker.session.timeout.ms:
//
//   - in the majority's metadata node 3 leaves every ISR, and leads no
//     partition (a partition it led moves to a node in its ISR); a
//     controller of the majority leads the metadata quorum;
//   - acks=all produces keep succeeding in every partition (a producer
//     misled by node 3's stale Metadata recovers once its produce request
//     there times out);
//   - node 3 acknowledges nothing: a probe producer that can reach only
//     node 3 (not idempotent: a producer id needs the controller) asks it
//     for acks=all writes to the partitions it led, all the while, and
//     none is acknowledged; its records are in the history with unknown
//     outcomes.
//
// Then it heals: node 3 is back in every ISR (truncating what it wrote
// alone, if anything), and every acknowledged record is read back at its
// offset with the history's checks, anomalies and porcupine clean.
//
// It skips, with the reason, where namespaces are unavailable (not root,
// no iproute2, no CAP_SYS_ADMIN), and fails instead under CI=true.
func TestReplicationNetnsIsolationProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	n := NewNetns(t)
	places := map[int32]Placement{
		1: {BrokerAddr: FreePortOn(t, n.PeerA), CtrlAddr: FreePortOn(t, n.PeerA)},
		2: {BrokerAddr: FreePortOn(t, n.PeerB), CtrlAddr: FreePortOn(t, n.PeerB)},
		// A fresh namespace has nothing listening: fixed ports.
		3: {BrokerAddr: net.JoinHostPort(n.NS.String(), "9092"), CtrlAddr: net.JoinHostPort(n.NS.String(), "9093"), Netns: n},
	}
	c := Start(t, Combined(3), Options{Props: replicationFaultProps, Places: places})
	r := setUpReplicated(t, c, "isolated", kgo.Dialer(n.ClientDialer()))
	isolated := c.Node(3)

	// The majority's view: metadata from nodes 1 and 2 only (node 3
	// answers the clients with its own stale view while isolated).
	clientDial := n.ClientDialer()
	majorityDial := func(ctx context.Context, network, host string) (net.Conn, error) {
		if host == isolated.BrokerAddr {
			return nil, errors.New("the majority's view leaves out the isolated node")
		}
		return clientDial(ctx, network, host)
	}
	majCl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(1).BrokerAddr, c.Node(2).BrokerAddr), kgo.Dialer(majorityDial),
		kgo.RetryTimeout(2*time.Second))
	require.NoError(t, err)
	defer majCl.Close()
	majority := &replicatedCluster{Cluster: c, topic: r.topic, adm: kadm.NewClient(majCl)}

	w := newLogWorkload(t, r.topic, replicatedTopicPartitions, r.seeds)
	w.dialer = n.ClientDialer()
	w.producerOpts = []kgo.Opt{kgo.ProduceRequestTimeout(isolationProduceTimeout)}
	w.startProducer("p1")
	w.startProducer("p2")
	w.startConsumer("c1")
	defer w.stopConsumers()
	defer w.stopProducers()
	c.WaitFor(clusterStartTimeout, "100 records acknowledged before the isolation", func() bool { return sum(w.ackedInPartitions()) >= 100 })

	var led []int32
	for p, pd := range majority.partitions() {
		if pd.Leader == isolated.ID {
			led = append(led, p)
		}
	}
	slices.Sort(led)
	t.Logf("before the isolation: node 3 leads partitions %v; the active controller is node %d", led, c.activeController())

	lines := isolated.LogLines()
	isolatedAt := time.Now()
	c.Partition(isolated.ID)
	stopProbe := func() {}
	if len(led) > 0 {
		onlyIsolated := func(ctx context.Context, network, host string) (net.Conn, error) {
			if host != isolated.BrokerAddr {
				return nil, errors.New("the probe talks to the isolated node only")
			}
			return clientDial(ctx, network, host)
		}
		stopProbe = w.startProducerTo("stale", led, staleProbeInterval, kgo.SeedBrokers(isolated.BrokerAddr), kgo.Dialer(onlyIsolated),
			kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(staleProbeDeliveryTimeout),
			kgo.ProduceRequestTimeout(time.Second))
	}
	if len(led) == 0 {
		t.Logf("node 3 led no partition when isolated: no probe asks it to acknowledge")
	}
	defer stopProbe()

	// The majority drops node 3 from every ISR and every leadership.
	c.WaitFor(isolationShrinkTimeout, "in the majority's metadata node 3 leaves every ISR and leads nothing", func() bool {
		ps := majority.partitions()
		if ps == nil {
			return false
		}
		for _, pd := range ps {
			if pd.Err != nil || pd.Leader < 0 || pd.Leader == isolated.ID || slices.Contains(pd.ISR, isolated.ID) || len(pd.ISR) != 2 {
				return false
			}
		}
		return true
	})
	shrunk := time.Since(isolatedAt)
	c.WaitFor(isolationShrinkTimeout, "a controller of the majority leads the metadata quorum", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		d, err := cli.DescribeQuorum(ctx, cli.QuorumTarget{Addrs: c.ControllerAddrs(isolated.ID), Controllers: true})
		return err == nil && d.LeaderID > 0 && d.LeaderID != isolated.ID
	})
	// acks=all produces succeed on the majority side, in every partition.
	// A producer may first be misled: node 3 still answers Metadata from
	// its stale image (as a Kafka broker cut off from its controller
	// does), naming itself the leader of the partitions it led, and a
	// produce request sent there is answered REQUEST_TIMED_OUT only after
	// its timeout (isolationProduceTimeout here); kgo then asks the next
	// broker in turn.
	atShrink := w.ackedInPartitions()
	var stalled []int
	for deadline := time.Now().Add(isolationAckTimeout); ; time.Sleep(10 * time.Millisecond) {
		now := w.ackedInPartitions()
		stalled = stalled[:0]
		for p := range now {
			if now[p] <= atShrink[p] {
				stalled = append(stalled, p)
			}
		}
		if len(stalled) == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "with node 3 isolated, no acks=all produce was acknowledged in partitions %v within %v "+
			"of the majority's ISR change (node 3 led %v); acknowledged by partition since then: %v", stalled, isolationAckTimeout, led, now)
	}
	acksResumed := time.Since(isolatedAt)
	if rest := isolationHold - time.Since(isolatedAt); rest > 0 {
		time.Sleep(rest) // the isolation's length, not a wait for a condition
	}
	stopProbe()
	probeAcked, probeUnknown := w.producerOutcomes("stale")
	require.Zero(t, probeAcked, "the isolated node acknowledged acks=all writes")
	duringIsolation := sum(w.ackedInPartitions()) - sum(atShrink)
	c.RequireRunning()

	isolatedFor := time.Since(isolatedAt)
	c.Heal(isolated.ID)
	healedAt := time.Now()
	c.WaitFor(faultRejoinTimeout, "node 3 back in every ISR after the heal", func() bool { return majority.fullISRs() })
	rejoined := time.Since(healedAt)
	truncated := isolated.LoggedSince(lines, "truncating to the leader's log")
	t.Logf("isolated node 3 for %v: out of every ISR and leadership after %v, acknowledgements in every partition after %v; "+
		"%d records acknowledged by the majority meanwhile; the probe's %d writes to node 3 all unacknowledged; back in every ISR %v after the heal (truncated: %v)",
		isolatedFor.Round(time.Millisecond), shrunk.Round(time.Millisecond), acksResumed.Round(time.Millisecond),
		duringIsolation, probeUnknown, rejoined.Round(time.Millisecond), truncated)

	w.drain(c, r.adm)
	w.verify()
}

func sum(xs []int) int {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total
}
