package proccluster

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/internal/cli"
)

// Bounds of the real-process cluster tests.
const (
	// clusterStartTimeout bounds the first election and the first broker
	// registration.
	clusterStartTimeout = 20 * time.Second
	// failoverTimeout bounds one failover measurement: the fetch timeout
	// (2 s by default) plus an election or two, with a wide margin.
	failoverTimeout = 20 * time.Second
	// failoverPollInterval is how often the survivors are asked.
	failoverPollInterval = 5 * time.Millisecond
	// clusterRequestTimeout bounds one request to a process.
	clusterRequestTimeout = 500 * time.Millisecond
)

// healthyQuorum waits until a leader answers DescribeQuorum with every
// voter caught up to its log end, and returns its answer.
func (c *Cluster) healthyQuorum() *cli.QuorumDescription {
	c.t.Helper()
	var d *cli.QuorumDescription
	c.WaitFor(clusterStartTimeout, "the quorum never became healthy", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		d, err = cli.DescribeQuorum(ctx, cli.QuorumTarget{Addrs: c.ControllerAddrs(), Controllers: true})
		if err != nil {
			return false
		}
		leader, ok := d.LeaderState()
		if !ok || leader.LogEndOffset <= 0 || d.HighWatermark != leader.LogEndOffset {
			return false
		}
		for _, v := range d.CurrentVoters {
			if v.LogEndOffset != leader.LogEndOffset {
				return false
			}
		}
		return true
	})
	return d
}

// brokersInMetadata is how many brokers p's Metadata lists.
func brokersInMetadata(p *Node) int {
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.BrokerAddr), kgo.DialTimeout(time.Second))
	if err != nil {
		return 0
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), clusterRequestTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return 0
	}
	return len(resp.Brokers)
}

// topicsInMetadata are the topics p's Metadata lists, sorted; nil when p
// does not answer.
func topicsInMetadata(p *Node) []string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.BrokerAddr), kgo.DialTimeout(time.Second))
	if err != nil {
		return nil
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), clusterRequestTimeout)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return nil
	}
	var topics []string
	for _, t := range resp.Topics {
		if t.Topic != nil && t.ErrorCode == 0 {
			topics = append(topics, *t.Topic)
		}
	}
	slices.Sort(topics)
	return topics
}

// registeredBrokers are the nodes that logged their broker's registration.
func (c *Cluster) registeredBrokers() []int32 {
	var ids []int32
	for _, p := range c.Nodes {
		if p.BrokerAddr != "" && p.Logged("broker registered with the controller") {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// waitBrokersRegistered waits until every broker of c logged its
// registration, and returns their client listeners.
func (c *Cluster) waitBrokersRegistered() []string {
	c.t.Helper()
	seeds := c.BrokerAddrs()
	c.WaitFor(clusterStartTimeout, "every broker registered", func() bool { return len(c.registeredBrokers()) == len(seeds) })
	return seeds
}

// createReplicatedTopic creates topic (partitions partitions, RF 3,
// min.insync.replicas 2) through adm, retrying until it succeeds.
func (c *Cluster) createReplicatedTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32) {
	c.t.Helper()
	c.WaitFor(clusterStartTimeout, "the topic created", func() bool {
		resp, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": kadmString("2")}, topic)
		return err == nil && resp.Err == nil
	})
}

// createTopicDirect sends CreateTopics (one partition, replication factor
// 1) to each broker in turn, not routed by a client's idea of the
// controller, and reports whether one created it (or found it created by
// an earlier attempt whose answer was lost).
func createTopicDirect(brokers []*kgo.Broker, topic string) bool {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	req.TimeoutMillis = int32(clusterRequestTimeout / time.Millisecond)
	for _, b := range brokers {
		ctx, cancel := context.WithTimeout(context.Background(), clusterRequestTimeout)
		resp, err := req.RequestWith(ctx, b)
		cancel()
		if err == nil && len(resp.Topics) == 1 {
			if code := resp.Topics[0].ErrorCode; code == 0 || code == kerr.TopicAlreadyExists.Code {
				return true
			}
		}
	}
	return false
}

// failoverResult is one failover measurement.
type failoverResult struct {
	oldLeader, newLeader int32
	election             time.Duration // SIGKILL to a survivor answering as the new leader
	createTopics         time.Duration // SIGKILL to the first CreateTopics that succeeded
}

// measureFailover runs one three-node combined cluster: it waits until the
// quorum is healthy and the active controller's broker is registered,
// creates a topic with kadm, SIGKILLs the active controller's process and
// measures the time until a survivor leads (polling DescribeQuorum on the
// survivors' controller listeners every failoverPollInterval) and until a
// CreateTopics through a surviving broker succeeds.
func measureFailover(t *testing.T, run int, checkAllRegistered bool, extra ...string) failoverResult {
	c := StartCombined(t, 3, extra...)
	before := c.healthyQuorum()
	leader := c.Node(before.LeaderID)
	require.NotNil(t, leader)
	c.WaitFor(clusterStartTimeout, "the active controller's broker never registered", func() bool {
		return slices.Contains(c.registeredBrokers(), leader.ID)
	})
	if checkAllRegistered {
		// Every broker registers (the followers' registrations are
		// forwarded to the active controller) and every broker's
		// Metadata lists all three.
		c.WaitFor(clusterStartTimeout, "not every broker registered", func() bool {
			return len(c.registeredBrokers()) == 3
		})
		c.WaitFor(clusterStartTimeout, "Metadata does not list the three brokers on every broker", func() bool {
			for _, p := range c.Nodes {
				if brokersInMetadata(p) != 3 {
					return false
				}
			}
			return true
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterStartTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(leader.BrokerAddr), kgo.DialTimeout(time.Second))
	require.NoError(t, err)
	defer cl.Close()
	created, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, fmt.Sprintf("before-%d", run))
	require.NoError(t, err)
	require.NoError(t, created.Error())

	var survivors []*kgo.Broker
	var survivorCtrls []*kgo.Broker
	for _, p := range c.Nodes {
		if p == leader {
			continue
		}
		bcl, err := kgo.NewClient(kgo.SeedBrokers(p.BrokerAddr), kgo.DialTimeout(time.Second))
		require.NoError(t, err)
		defer bcl.Close()
		survivors = append(survivors, bcl.SeedBrokers()[0])
		ccl, b, err := cli.NewQuorumClient(p.CtrlAddr, true)
		require.NoError(t, err)
		defer ccl.Close()
		survivorCtrls = append(survivorCtrls, b)
	}

	res := failoverResult{oldLeader: leader.ID}
	killed := time.Now()
	require.NoError(t, leader.Signal(syscall.SIGKILL))
	deadline := killed.Add(failoverTimeout)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			for _, b := range survivorCtrls {
				ctx, cancel := context.WithTimeout(context.Background(), clusterRequestTimeout)
				d, _, err := cli.DescribeQuorumWith(ctx, b, true, "")
				cancel()
				if err == nil && d.LeaderID != leader.ID && d.LeaderEpoch > before.LeaderEpoch {
					res.election, res.newLeader = time.Since(killed), d.LeaderID
					return
				}
			}
			time.Sleep(failoverPollInterval)
		}
	}()
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			if createTopicDirect(survivors, fmt.Sprintf("after-%d", run)) {
				res.createTopics = time.Since(killed)
				return
			}
			time.Sleep(failoverPollInterval)
		}
	}()
	wg.Wait()
	<-leader.Exited()
	require.NotZero(t, res.election, "no survivor became the leader within %v of the SIGKILL", failoverTimeout)
	require.NotZero(t, res.createTopics, "no CreateTopics succeeded within %v of the SIGKILL", failoverTimeout)
	// No metadata is lost, and every surviving broker converges to the
	// same topics: the one created before the kill and the one after.
	want := []string{fmt.Sprintf("after-%d", run), fmt.Sprintf("before-%d", run)}
	c.WaitFor(clusterStartTimeout, fmt.Sprintf("the survivors' Metadata does not converge to topics %v", want), func() bool {
		for _, p := range c.Nodes {
			if p != leader && !slices.Equal(topicsInMetadata(p), want) {
				return false
			}
		}
		return true
	})
	t.Logf("run %d: killed leader %d; node %d led after %v; CreateTopics succeeded after %v",
		run, res.oldLeader, res.newLeader, res.election.Round(time.Millisecond), res.createTopics.Round(time.Millisecond))
	return res
}

// failoverExtraProps are server.properties lines for the failover
// clusters from the environment (make bench-failover passes them).
func failoverExtraProps() []string {
	var extra []string
	for env, key := range map[string]string{
		"STRATA_FAILOVER_FETCH_TIMEOUT_MS":    "controller.quorum.fetch.timeout.ms",
		"STRATA_FAILOVER_ELECTION_TIMEOUT_MS": "controller.quorum.election.timeout.ms",
	} {
		if v := os.Getenv(env); v != "" {
			extra = append(extra, key+"="+v)
		}
	}
	slices.Sort(extra)
	return extra
}

// TestKRaftFailoverProcesses runs three combined nodes as real processes,
// SIGKILLs the active controller and measures how long until a new leader
// is elected and a CreateTopics succeeds. `make test` runs it once;
// `make bench-failover RUNS=N` (STRATA_FAILOVER_RUNS=N) runs it N times and
// prints the median, min and max.
func TestKRaftFailoverProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	runs := 1
	if v := os.Getenv("STRATA_FAILOVER_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "STRATA_FAILOVER_RUNS")
		require.Positive(t, n, "STRATA_FAILOVER_RUNS")
		runs = n
	}
	extra := failoverExtraProps()
	var elections, creates []time.Duration
	for run := 1; run <= runs; run++ {
		var res failoverResult
		t.Run(fmt.Sprintf("run-%d", run), func(t *testing.T) {
			res = measureFailover(t, run, run == 1, extra...)
		})
		if t.Failed() {
			return
		}
		elections = append(elections, res.election)
		creates = append(creates, res.createTopics)
	}
	settings := "default quorum timeouts (election 1000 ms, fetch 2000 ms)"
	if len(extra) > 0 {
		settings = strings.Join(extra, " ")
	}
	msg := fmt.Sprintf("KRaft failover after SIGKILL of the active controller, %d runs, %s:\n  new leader elected: %s\n  CreateTopics succeeds: %s",
		runs, settings, Spread(elections), Spread(creates))
	t.Log(msg)
	if runs > 1 {
		fmt.Println(msg)
	}
}

// TestKRaftSplitRolesProcesses runs three controller-only nodes and one
// broker-only node as real processes: the broker follows the metadata log
// as an observer, registers with the active controller and serves
// CreateTopics. Registration and CreateTopics from a broker-only node need
// the broker's requests forwarded to the active controller (core/kraft's
// forwarding, core/broker's Metadata controller id): without them this
// test fails, and says so.
func TestKRaftSplitRolesProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	c := Start(t, []Spec{{1, "controller"}, {2, "controller"}, {3, "controller"}, {4, "broker"}}, Options{})
	for _, p := range c.Nodes[:3] {
		require.Empty(t, p.BrokerAddr)
		require.Regexp(t, regexp.MustCompile(`msg="node started".* process_roles=controller listener="" controller_listener=`+p.CtrlAddr), p.LogText())
	}
	broker := c.Node(4)
	require.Regexp(t, regexp.MustCompile(`msg="node started".* process_roles=broker listener=`+broker.BrokerAddr+` controller_listener=""`), broker.LogText())

	before := c.healthyQuorum()
	c.WaitFor(clusterStartTimeout, "the broker-only node never showed up as an observer", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		d, err := cli.DescribeQuorum(ctx, cli.QuorumTarget{Addrs: c.ControllerAddrs(), Controllers: true})
		return err == nil && cli.ReplicaIDs(d.Observers) == "[4]"
	})
	t.Logf("quorum: leader %d, voters %s, observers [4]", before.LeaderID, cli.ReplicaIDs(before.CurrentVoters))

	deadline := time.Now().Add(clusterStartTimeout)
	for !broker.Logged("broker registered with the controller") {
		if time.Now().After(deadline) {
			require.FailNow(t, "the broker-only node never registered with the active controller",
				"BrokerRegistration from a broker-only node (a kraft observer) must be forwarded to the active controller; "+
					"kraft.Member.Submit on an observer answers NOT_CONTROLLER until core/kraft forwards it. Broker log:\n%s", broker.LogText())
		}
		time.Sleep(20 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterStartTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.BrokerAddr), kgo.DialTimeout(time.Second))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var createErr error
	for {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		created, err := adm.CreateTopics(actx, 3, 1, nil, "split")
		acancel()
		if createErr = err; err == nil {
			createErr = created.Error()
		}
		if createErr == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, createErr, "CreateTopics through the broker-only node: it must forward to the active controller "+
		"(and report a reachable broker as Metadata's controller id, as Kafka's KRaft brokers do)")
	// The broker's image follows the controller's commit a moment later
	// (as a Kafka broker's metadata cache does).
	var md kadm.Metadata
	c.WaitFor(clusterStartTimeout, "the broker never listed the created topic", func() bool {
		md, err = adm.Metadata(ctx, "split")
		return err == nil && len(md.Topics["split"].Partitions) == 3
	})
	for _, p := range md.Topics["split"].Partitions {
		require.Equal(t, []int32{4}, p.Replicas, "the only broker holds every replica")
	}

	// The quorum through the broker (DescribeQuorum forwarded).
	code, out, errOut := runStrata(t, "quorum", "status", "--bootstrap-server", broker.BrokerAddr)
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Equal(t, "[1,2,3]", StatusField(t, out, "CurrentVoters"))
	require.Equal(t, "[4]", StatusField(t, out, "CurrentObservers"))
}
