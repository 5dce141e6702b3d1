package proccluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds of the fault loop of TestReplicationFaultLoopProcesses.
const (
	// faultLoopDuration is how long the fault loop starts new kills.
	faultLoopDuration = 35 * time.Second
	// faultUpMin and faultUpMax bound the pause, with every node up and
	// every ISR full, before the next kill.
	faultUpMin, faultUpMax = 500 * time.Millisecond, 2 * time.Second
	// faultDownMin and faultDownMax bound how long a killed node stays
	// down.
	faultDownMin, faultDownMax = 200 * time.Millisecond, 3 * time.Second
	// faultRejoinTimeout bounds a restarted node's return to every ISR:
	// registration, the truncation of its log and the catch-up.
	faultRejoinTimeout = 30 * time.Second
	// faultLoopMinKills is the fewest kills a fault loop must reach: a
	// kill cycle (up, down, rejoin) takes 2–12 s.
	faultLoopMinKills = 3
	// replicatedTopicPartitions is the partition count of the fault
	// tests' topic.
	replicatedTopicPartitions = 3
)

// replicationFaultProps are the server.properties lines of the fault
// tests: short session and lag timeouts, so a dead or isolated node
// leaves the ISRs in seconds.
var replicationFaultProps = []string{"broker.session.timeout.ms=4000", "replica.lag.time.max.ms=5000"}

// replicatedCluster is a started cluster with the fault tests' topic
// (RF 3, min.insync.replicas 2) created, and an admin client.
type replicatedCluster struct {
	*Cluster
	seeds []string
	adm   *kadm.Client
	topic string
}

// setUpReplicated waits until c's three brokers registered, creates topic
// (replicatedTopicPartitions partitions, RF 3, min.insync.replicas 2)
// and waits until every partition is led with a full ISR; opts are more
// options of the admin client (a dialer, say).
func setUpReplicated(t *testing.T, c *Cluster, topic string, opts ...kgo.Opt) *replicatedCluster {
	t.Helper()
	r := &replicatedCluster{Cluster: c, topic: topic, seeds: c.waitBrokersRegistered()}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(r.seeds...), kgo.DialTimeout(time.Second),
		kgo.RetryTimeout(2 * time.Second)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	r.adm = kadm.NewClient(cl)
	c.WaitFor(clusterStartTimeout, "the topic created", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := r.adm.CreateTopic(ctx, replicatedTopicPartitions, 3, map[string]*string{"min.insync.replicas": kadmString("2")}, topic)
		return err == nil && resp.Err == nil
	})
	c.WaitFor(clusterStartTimeout, "every partition led with a full ISR", func() bool { return r.fullISRs() })
	return r
}

// partitions is the topic's metadata per partition, or nil when the
// cluster does not answer.
func (r *replicatedCluster) partitions() map[int32]kadm.PartitionDetail {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	md, err := r.adm.Metadata(ctx, r.topic)
	if err != nil {
		return nil
	}
	td, ok := md.Topics[r.topic]
	if !ok || td.Err != nil || len(td.Partitions) != replicatedTopicPartitions {
		return nil
	}
	return td.Partitions
}

// fullISRs reports whether every partition has a leader and all three
// replicas in its ISR.
func (r *replicatedCluster) fullISRs() bool {
	ps := r.partitions()
	if ps == nil {
		return false
	}
	for _, pd := range ps {
		if pd.Err != nil || pd.Leader < 0 || len(pd.ISR) != 3 {
			return false
		}
	}
	return true
}

// activeController is the quorum's leader, or -1 when none answers.
func (c *Cluster) activeController() int32 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	d, err := cli.DescribeQuorum(ctx, cli.QuorumTarget{Addrs: c.ControllerAddrs(), Controllers: true})
	if err != nil {
		return -1
	}
	return d.LeaderID
}

// TestReplicationFaultLoopProcesses is a Jepsen-style test with real
// processes: three combined nodes, a topic of three partitions with
// replication factor 3 and min.insync.replicas 2, two kgo producers
// (acks=all, idempotent, a unique value per record) and two kgo
// consumers, everything they see recorded into a LogHistory and a LogOps.
// For faultLoopDuration a fault loop SIGKILLs a node (the first kill and
// every third after it the active controller, found with DescribeQuorum,
// the others a random one) and restarts it after a random pause; it never
// kills a second node while one is down or out of an ISR, which RF 3 with
// min.insync.replicas 2 survives.
// Afterwards: every ISR full, the producers' outcomes all in, the
// consumers caught up, a final read of every partition; then every
// acknowledged record is at its offset, the history's checks pass, its
// anomaly report is empty and porcupine accepts the partition-log model.
func TestReplicationFaultLoopProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	c := StartCombined(t, 3, replicationFaultProps...)
	r := setUpReplicated(t, c, "faults")

	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("fault schedule seed %d (the schedule only: process timing is not reproducible)", seed)

	w := newLogWorkload(t, r.topic, replicatedTopicPartitions, r.seeds)
	w.startProducer("p1")
	w.startProducer("p2")
	w.startConsumer("c1")
	w.startConsumer("c2")
	// After a failed require too, the clients stop before the nodes go.
	defer w.stopConsumers()
	defer w.stopProducers()

	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	var kills, controllerKills int
	loopEnd := time.Now().Add(faultLoopDuration)
	for time.Now().Before(loopEnd) {
		time.Sleep(between(faultUpMin, faultUpMax)) // the schedule's pause, not a wait for a condition
		c.RequireRunning()
		victim := c.Nodes[rng.IntN(len(c.Nodes))]
		why := "random"
		if kills%3 == 0 { // the first kill and every third after it
			id := int32(-1)
			c.WaitFor(clusterStartTimeout, "an active controller", func() bool { id = c.activeController(); return id > 0 })
			victim, why = c.Node(id), "active controller"
			controllerKills++
		}
		lines := victim.LogLines()
		victim.Kill()
		kills++
		down := between(faultDownMin, faultDownMax)
		time.Sleep(down)
		c.Restart(victim.ID)
		rejoin := time.Now()
		c.WaitFor(clusterStartTimeout, fmt.Sprintf("node %d registered again after its restart", victim.ID), func() bool {
			return victim.LoggedSince(lines, "broker registered with the controller")
		})
		c.WaitFor(faultRejoinTimeout, fmt.Sprintf("node %d back in every ISR", victim.ID), func() bool { return r.fullISRs() })
		t.Logf("kill %d: node %d (%s), down %v, every ISR full %v after the restart",
			kills, victim.ID, why, down.Round(time.Millisecond), time.Since(rejoin).Round(time.Millisecond))
	}
	c.RequireRunning()

	healed := time.Now()
	w.stopProducers()
	c.WaitFor(faultRejoinTimeout, "every ISR full after the heal", func() bool { return r.fullISRs() })
	ends := w.drain(c, r.adm)
	t.Logf("%d kills (%d of the active controller) in %v; heal to final read %v; high watermarks %v",
		kills, controllerKills, faultLoopDuration, time.Since(healed).Round(time.Millisecond), ends)
	require.GreaterOrEqual(t, kills, faultLoopMinKills, "the fault loop killed too few nodes to mean much")
	w.verify()
}
