package main

import (
	"bufio"
	"cmp"
	"context"
	crand "crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

	"github.com/strata-log/strata/node"
)

// Bounds of the real-process cluster tests.
const (
	// clusterStartTimeout bounds a process's start, the first election and
	// the first broker registration.
	clusterStartTimeout = 20 * time.Second
	// failoverTimeout bounds one failover measurement: the fetch timeout
	// (2 s by default) plus an election or two, with a wide margin.
	failoverTimeout = 20 * time.Second
	// failoverPollInterval is how often the survivors are asked.
	failoverPollInterval = 5 * time.Millisecond
	// clusterRequestTimeout bounds one request to a process.
	clusterRequestTimeout = 500 * time.Millisecond
)

// nodeProcess is one `strata serve` child process.
type nodeProcess struct {
	id         int32
	roles      string
	brokerAddr string   // empty for a controller-only node
	ctrlAddr   string   // empty for a broker-only node
	args       []string // strata's arguments
	wrap       []string // a command that runs the test binary (ip netns exec …), or none
	cmd        *exec.Cmd
	exited     chan struct{}

	mu   sync.Mutex
	logs []string
}

func (p *nodeProcess) logged(substr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.logs, func(l string) bool { return strings.Contains(l, substr) })
}

func (p *nodeProcess) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs, "\n")
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *nodeProcess) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// spawn starts the node's process (again, after a kill: same
// configuration and data directory); its log lines append to p's.
func (p *nodeProcess) spawn(t *testing.T) {
	t.Helper()
	p.exited = make(chan struct{})
	name, args := os.Args[0], p.args
	if len(p.wrap) > 0 {
		name, args = p.wrap[0], append(append(slices.Clone(p.wrap[1:]), os.Args[0]), p.args...)
	}
	p.cmd = exec.Command(name, args...)
	// The child exits when this test binary dies (see TestMain);
	// Pdeathsig would follow the forking OS thread, not the process.
	p.cmd.Env = append(os.Environ(), "STRATA_TEST_MAIN=1", "STRATA_TEST_EXIT_WITH_PARENT=1")
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	cmd, exited := p.cmd, p.exited
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.logs = append(p.logs, sc.Text())
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(exited)
	}()
}

// clusterSpec describes one node of a test cluster.
type clusterSpec struct {
	id    int32
	roles string // "broker,controller", "controller" or "broker"
}

// testCluster is a set of `strata serve` child processes on 127.0.0.1.
type testCluster struct {
	t      *testing.T
	procs  []*nodeProcess
	voters string
}

// nodePlacement says where a node of a test cluster runs: the address
// its listeners bind (with fixed ports when the test cannot probe for
// free ones, as inside another network namespace) and the command that
// runs its process.
type nodePlacement struct {
	brokerAddr, ctrlAddr string   // host:port; empty: a free port on 127.0.0.1
	wrap                 []string // e.g. ip netns exec <ns>; empty: the test binary itself
}

// startCluster starts the nodes as child processes of this test binary
// (TestMain runs main for them), each with its own log.dirs under
// t.TempDir() and fixed free ports on 127.0.0.1. extra are more
// server.properties lines. Every process is SIGKILLed at the end of the
// test, and exits by itself if the test binary dies.
func startCluster(t *testing.T, specs []clusterSpec, extra ...string) *testCluster {
	t.Helper()
	return startPlacedCluster(t, specs, nil, extra...)
}

// startPlacedCluster is startCluster with the nodes of places placed
// there (the others on 127.0.0.1).
func startPlacedCluster(t *testing.T, specs []clusterSpec, places map[int32]nodePlacement, extra ...string) *testCluster {
	t.Helper()
	c := &testCluster{t: t}
	brokers := map[int32]string{}
	ctrls := map[int32]string{}
	var voters []string
	for _, s := range specs {
		if strings.Contains(s.roles, "broker") {
			brokers[s.id] = cmp.Or(places[s.id].brokerAddr, freePort(t))
		}
		if strings.Contains(s.roles, "controller") {
			ctrls[s.id] = cmp.Or(places[s.id].ctrlAddr, freePort(t))
			voters = append(voters, fmt.Sprintf("%d@%s", s.id, ctrls[s.id]))
		}
	}
	c.voters = strings.Join(voters, ",")
	clusterID, err := node.NewClusterID(crand.Reader)
	require.NoError(t, err)
	dir := t.TempDir()
	for _, s := range specs {
		var listeners []string
		if a := brokers[s.id]; a != "" {
			listeners = append(listeners, "PLAINTEXT://"+a)
		}
		if a := ctrls[s.id]; a != "" {
			listeners = append(listeners, "CONTROLLER://"+a)
		}
		props := append([]string{
			"node.id=" + strconv.Itoa(int(s.id)),
			"process.roles=" + s.roles,
			"listeners=" + strings.Join(listeners, ","),
			"controller.quorum.voters=" + c.voters,
			"log.dirs=" + filepath.Join(dir, fmt.Sprintf("node-%d", s.id)),
			"metrics.listener=127.0.0.1:0",
		}, extra...)
		path := filepath.Join(dir, fmt.Sprintf("node-%d.properties", s.id))
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(props, "\n")+"\n"), 0o644))
		p := &nodeProcess{id: s.id, roles: s.roles, brokerAddr: brokers[s.id], ctrlAddr: ctrls[s.id],
			args: []string{"serve", "--config", path, "--cluster-id", clusterID}, wrap: places[s.id].wrap}
		p.spawn(t)
		t.Cleanup(func() {
			p.kill()
			if t.Failed() {
				t.Logf("node %d (%s) log:\n%s", p.id, p.roles, p.logText())
			}
		})
		c.procs = append(c.procs, p)
	}
	for _, p := range c.procs {
		c.waitFor(clusterStartTimeout, fmt.Sprintf("node %d never started", p.id), func() bool {
			select {
			case <-p.exited:
				require.FailNow(t, "node exited early", "node %d (%v):\n%s", p.id, p.cmd.ProcessState, p.logText())
			default:
			}
			return p.logged(`msg="node started"`)
		})
	}
	return c
}

func (c *testCluster) waitFor(d time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNow(c.t, what, "after %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *testCluster) proc(id int32) *nodeProcess {
	for _, p := range c.procs {
		if p.id == id {
			return p
		}
	}
	return nil
}

// controllerAddrs are the controller listeners of the nodes not in skip.
func (c *testCluster) controllerAddrs(skip ...int32) []string {
	var out []string
	for _, p := range c.procs {
		if p.ctrlAddr != "" && !slices.Contains(skip, p.id) {
			out = append(out, p.ctrlAddr)
		}
	}
	return out
}

// healthyQuorum waits until a leader answers DescribeQuorum with every
// voter caught up to its log end, and returns its answer.
func (c *testCluster) healthyQuorum() *quorumDescription {
	c.t.Helper()
	var d *quorumDescription
	c.waitFor(clusterStartTimeout, "the quorum never became healthy", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		d, err = describeQuorum(ctx, quorumTarget{addrs: c.controllerAddrs(), controllers: true})
		if err != nil {
			return false
		}
		leader, ok := d.leaderState()
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
func brokersInMetadata(p *nodeProcess) int {
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.brokerAddr), kgo.DialTimeout(time.Second))
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
func topicsInMetadata(p *nodeProcess) []string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.brokerAddr), kgo.DialTimeout(time.Second))
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
func (c *testCluster) registeredBrokers() []int32 {
	var ids []int32
	for _, p := range c.procs {
		if p.brokerAddr != "" && p.logged("broker registered with the controller") {
			ids = append(ids, p.id)
		}
	}
	return ids
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
	c := startCluster(t, []clusterSpec{{1, "broker,controller"}, {2, "broker,controller"}, {3, "broker,controller"}}, extra...)
	before := c.healthyQuorum()
	leader := c.proc(before.LeaderID)
	require.NotNil(t, leader)
	c.waitFor(clusterStartTimeout, "the active controller's broker never registered", func() bool {
		return slices.Contains(c.registeredBrokers(), leader.id)
	})
	if checkAllRegistered {
		// Every broker registers (the followers' registrations are
		// forwarded to the active controller) and every broker's
		// Metadata lists all three.
		c.waitFor(clusterStartTimeout, "not every broker registered", func() bool {
			return len(c.registeredBrokers()) == 3
		})
		c.waitFor(clusterStartTimeout, "Metadata does not list the three brokers on every broker", func() bool {
			for _, p := range c.procs {
				if brokersInMetadata(p) != 3 {
					return false
				}
			}
			return true
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterStartTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(leader.brokerAddr), kgo.DialTimeout(time.Second))
	require.NoError(t, err)
	defer cl.Close()
	created, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, fmt.Sprintf("before-%d", run))
	require.NoError(t, err)
	require.NoError(t, created.Error())

	var survivors []*kgo.Broker
	var survivorCtrls []*kgo.Broker
	for _, p := range c.procs {
		if p == leader {
			continue
		}
		bcl, err := kgo.NewClient(kgo.SeedBrokers(p.brokerAddr), kgo.DialTimeout(time.Second))
		require.NoError(t, err)
		defer bcl.Close()
		survivors = append(survivors, bcl.SeedBrokers()[0])
		ccl, b, err := newQuorumClient(p.ctrlAddr, true)
		require.NoError(t, err)
		defer ccl.Close()
		survivorCtrls = append(survivorCtrls, b)
	}

	res := failoverResult{oldLeader: leader.id}
	killed := time.Now()
	require.NoError(t, leader.cmd.Process.Signal(syscall.SIGKILL))
	deadline := killed.Add(failoverTimeout)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			for _, b := range survivorCtrls {
				ctx, cancel := context.WithTimeout(context.Background(), clusterRequestTimeout)
				d, _, err := describeQuorumWith(ctx, b, true, "")
				cancel()
				if err == nil && d.LeaderID != leader.id && d.LeaderEpoch > before.LeaderEpoch {
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
	<-leader.exited
	require.NotZero(t, res.election, "no survivor became the leader within %v of the SIGKILL", failoverTimeout)
	require.NotZero(t, res.createTopics, "no CreateTopics succeeded within %v of the SIGKILL", failoverTimeout)
	// No metadata is lost, and every surviving broker converges to the
	// same topics: the one created before the kill and the one after.
	want := []string{fmt.Sprintf("after-%d", run), fmt.Sprintf("before-%d", run)}
	c.waitFor(clusterStartTimeout, fmt.Sprintf("the survivors' Metadata does not converge to topics %v", want), func() bool {
		for _, p := range c.procs {
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
	summary := func(ds []time.Duration) string {
		s := slices.Clone(ds)
		slices.Sort(s)
		med := s[len(s)/2]
		if len(s)%2 == 0 {
			med = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
		return fmt.Sprintf("median %v, min %v, max %v", med.Round(time.Millisecond), s[0].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
	}
	settings := "default quorum timeouts (election 1000 ms, fetch 2000 ms)"
	if len(extra) > 0 {
		settings = strings.Join(extra, " ")
	}
	msg := fmt.Sprintf("KRaft failover after SIGKILL of the active controller, %d runs, %s:\n  new leader elected: %s\n  CreateTopics succeeds: %s",
		runs, settings, summary(elections), summary(creates))
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
	c := startCluster(t, []clusterSpec{{1, "controller"}, {2, "controller"}, {3, "controller"}, {4, "broker"}})
	for _, p := range c.procs[:3] {
		require.Empty(t, p.brokerAddr)
		require.Regexp(t, regexp.MustCompile(`msg="node started".* process_roles=controller listener="" controller_listener=`+p.ctrlAddr), p.logText())
	}
	broker := c.proc(4)
	require.Regexp(t, regexp.MustCompile(`msg="node started".* process_roles=broker listener=`+broker.brokerAddr+` controller_listener=""`), broker.logText())

	before := c.healthyQuorum()
	c.waitFor(clusterStartTimeout, "the broker-only node never showed up as an observer", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		d, err := describeQuorum(ctx, quorumTarget{addrs: c.controllerAddrs(), controllers: true})
		return err == nil && replicaIDs(d.Observers) == "[4]"
	})
	t.Logf("quorum: leader %d, voters %s, observers [4]", before.LeaderID, replicaIDs(before.CurrentVoters))

	deadline := time.Now().Add(clusterStartTimeout)
	for !broker.logged("broker registered with the controller") {
		if time.Now().After(deadline) {
			require.FailNow(t, "the broker-only node never registered with the active controller",
				"BrokerRegistration from a broker-only node (a kraft observer) must be forwarded to the active controller; "+
					"kraft.Member.Submit on an observer answers NOT_CONTROLLER until core/kraft forwards it. Broker log:\n%s", broker.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterStartTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.brokerAddr), kgo.DialTimeout(time.Second))
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
	c.waitFor(clusterStartTimeout, "the broker never listed the created topic", func() bool {
		md, err = adm.Metadata(ctx, "split")
		return err == nil && len(md.Topics["split"].Partitions) == 3
	})
	for _, p := range md.Topics["split"].Partitions {
		require.Equal(t, []int32{4}, p.Replicas, "the only broker holds every replica")
	}

	// The quorum through the broker (DescribeQuorum forwarded).
	code, out, errOut := runQuorum("status", "--bootstrap-server", broker.brokerAddr)
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, "[1,2,3]", statusField(t, out, "CurrentVoters"))
	require.Equal(t, "[4]", statusField(t, out, "CurrentObservers"))
}
