package kraft_test

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/sim"
)

const (
	// electionBound is how much simulated time a leader may take to be
	// elected and its controller to become active (default timeouts: a 1 s
	// election timeout drawn in [1 s, 2 s), a 2 s fetch timeout before a
	// follower notices a dead leader).
	electionBound = 10 * time.Second
	// commitBound is how long a request may take to be answered, and every
	// member to converge, on a healthy quorum.
	commitBound = 5 * time.Second
	pollStep    = 10 * time.Millisecond
)

type cluster struct {
	t       testing.TB
	s       *sim.Sim
	procs   []*sim.Process
	members []*kraft.Member
	// beforeStart, if not nil, runs before each kraft.Start of member i
	// (to damage its files, say); started, if not nil, after it (the
	// benchmark measures the start there).
	beforeStart func(i int, e env.Env)
	started     func(i int, m *kraft.Member)
	// startFailed, if not nil, takes kraft.Start's error for member i
	// (the test expects it); without it the test fails.
	startFailed func(i int, err error)
	// wrapEnv, if not nil, wraps each member's Env before kraft.Start
	// (a Net with simulated TLS, say).
	wrapEnv func(e env.Env) env.Env
}

// forSeeds runs test as a subtest for each of seeds 1, 2 and 3.
func forSeeds(t *testing.T, test func(t *testing.T, seed uint64)) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { test(t, seed) })
	}
}

func newCluster(t *testing.T, seed uint64, n int) *cluster {
	return newClusterWithObservers(t, seed, n, 0)
}

// observerID is the node id of observer j (0-based): brokers 201, 202, ...
func observerID(j int) quorum.NodeID { return quorum.NodeID(201 + j) }

// newClusterWithObservers starts n voters c1..cn (members 0..n-1) and
// observers b1..bk (members n..n+k-1, node ids observerID), each observer
// listening on bj:9093.
func newClusterWithObservers(t *testing.T, seed uint64, n, observers int) *cluster {
	return newClusterWithConfig(t, seed, n, observers, nil)
}

// newClusterWithConfig is newClusterWithObservers with tweak, if not nil,
// applied to every member's configuration.
func newClusterWithConfig(t testing.TB, seed uint64, n, observers int, tweak func(*kraft.Config)) *cluster {
	c := newClusterStopped(t, seed, n, observers, tweak)
	for _, p := range c.procs {
		p.Start()
	}
	return c
}

// newClusterStopped is newClusterWithConfig without starting the
// processes.
func newClusterStopped(t testing.TB, seed uint64, n, observers int, tweak func(*kraft.Config)) *cluster {
	c := &cluster{t: t, s: sim.New(sim.Config{Seed: seed, Log: testLog}), members: make([]*kraft.Member, n+observers)}
	voters := map[quorum.NodeID]string{}
	for i := 0; i < n; i++ {
		voters[quorum.NodeID(i+1)] = fmt.Sprintf("c%d:9093", i+1)
	}
	for i := 0; i < n+observers; i++ {
		cfg := kraft.Config{NodeID: quorum.NodeID(i + 1), Voters: kraft.ParseVoters(voters), ClusterID: "sim-cluster"}
		name := fmt.Sprintf("c%d", i+1)
		if i >= n {
			name = fmt.Sprintf("b%d", i-n+1)
			cfg.NodeID, cfg.ListenAddr = observerID(i-n), name+":9093"
		}
		if tweak != nil {
			tweak(&cfg)
		}
		p := c.s.AddProcess(name, func(e env.Env) {
			if c.beforeStart != nil {
				c.beforeStart(i, e)
			}
			if c.wrapEnv != nil {
				e = c.wrapEnv(e)
			}
			m, err := kraft.Start(e, cfg)
			switch {
			case err != nil && c.startFailed != nil:
				c.startFailed(i, err)
			case err != nil:
				t.Errorf("start %s: %v", name, err)
			}
			c.members[i] = m
			if c.started != nil {
				c.started(i, m)
			}
		})
		c.procs = append(c.procs, p)
	}
	return c
}

// runUntil runs the simulation until cond holds, failing after bound.
func (c *cluster) runUntil(bound time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := c.s.Now() + bound
	for !cond() {
		if c.s.Now() >= deadline {
			c.t.Fatalf("%s: not within %v (at %v)", what, bound, c.s.Now())
		}
		if err := c.s.RunFor(pollStep); err != nil {
			c.t.Fatalf("%s: simulation failed: %v", what, err)
		}
	}
}

// activeController returns the index of the member whose controller is
// active, or -1; it fails on two active controllers in one epoch.
func (c *cluster) activeController() int {
	c.t.Helper()
	found := -1
	for i, m := range c.members {
		if m == nil || !c.procs[i].Up() {
			continue
		}
		st := m.Status()
		if st.Err != nil {
			c.t.Fatalf("c%d stopped: %v", i+1, st.Err)
		}
		if st.ActiveController {
			if found >= 0 && c.members[found].Status().Epoch == st.Epoch {
				c.t.Fatalf("two active controllers in epoch %d: c%d and c%d", st.Epoch, found+1, i+1)
			}
			if found < 0 || st.Epoch > c.members[found].Status().Epoch {
				found = i
			}
		}
	}
	return found
}

func (c *cluster) waitLeader() int {
	c.t.Helper()
	leader := -1
	c.runUntil(electionBound, "elect a leader", func() bool {
		leader = c.activeController()
		return leader >= 0
	})
	return leader
}

// do submits req to member i and runs until its response arrives.
func (c *cluster) do(i int, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	var resp kmsg.Response
	var done bool
	c.members[i].Submit(req, func(r kmsg.Response, err error) {
		if err != nil {
			c.t.Fatalf("submit %s: %v", kmsg.NameForKey(req.Key()), err)
		}
		resp, done = r, true
	})
	c.runUntil(commitBound, "answer "+kmsg.NameForKey(req.Key()), func() bool { return done })
	return resp
}

func (c *cluster) registerBroker(leader int) int64 {
	c.t.Helper()
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.Version = 3
	reg.BrokerID = 100
	reg.IncarnationID = [16]byte{0: 1, 15: 1}
	reg.ClusterID = "sim-cluster"
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "broker-100", 9092
	reg.Listeners = []kmsg.BrokerRegistrationRequestListener{l}
	resp := c.do(leader, reg).(*kmsg.BrokerRegistrationResponse)
	if resp.ErrorCode != 0 {
		c.t.Fatalf("register broker: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.BrokerEpoch
}

// heartbeat heartbeats the broker at the leader's applied offset until it
// is unfenced.
func (c *cluster) heartbeat(leader int, brokerEpoch int64) {
	c.t.Helper()
	for try := 0; ; try++ {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.Version = 1
		hb.BrokerID, hb.BrokerEpoch = 100, brokerEpoch
		hb.CurrentMetadataOffset = c.members[leader].Image().Position().Offset
		resp := c.do(leader, hb).(*kmsg.BrokerHeartbeatResponse)
		if resp.ErrorCode != 0 {
			c.t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		if !resp.IsFenced {
			return
		}
		if try == 10 {
			c.t.Fatalf("broker still fenced after %d heartbeats", try)
		}
	}
}

// leadWithTopic waits for a leader, registers and unfences broker 100
// through it and creates topic, converged on every running member
// (observers included). It returns the leader and the broker's epoch.
func (c *cluster) leadWithTopic(topic string) (leader int, brokerEpoch int64) {
	c.t.Helper()
	leader = c.waitLeader()
	brokerEpoch = c.registerBroker(leader)
	c.heartbeat(leader, brokerEpoch)
	c.createTopic(leader, topic)
	c.converge(topic)
	return leader, brokerEpoch
}

func (c *cluster) createTopic(leader int, name string) {
	c.t.Helper()
	c.createTopicBatch(leader, []string{name}, 3)
}

// createTopicBatch creates topics of the given partition count (replication
// factor 1) in one CreateTopics through member leader.
func (c *cluster) createTopicBatch(leader int, names []string, partitions int32) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 30_000
	for _, name := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, 1
		req.Topics = append(req.Topics, t)
	}
	resp := c.do(leader, req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != len(names) {
		c.t.Fatalf("create topics %v: %d answers", names, len(resp.Topics))
	}
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 {
			c.t.Fatalf("create topic %s: %v", t.Topic, kerr.ErrorForCode(t.ErrorCode))
		}
	}
}

// converge runs until every running member's image has the same digest and
// holds every topic in want.
func (c *cluster) converge(want ...string) {
	c.t.Helper()
	c.runUntil(commitBound, fmt.Sprintf("converge on %v", want), func() bool {
		var first *kraft.Member
		for i, m := range c.members {
			if m == nil || !c.procs[i].Up() {
				return false
			}
			img := m.Image()
			for _, name := range want {
				if _, ok := img.TopicByName(name); !ok {
					return false
				}
			}
			if first == nil {
				first = m
			} else if first.Image().Digest() != img.Digest() {
				return false
			}
		}
		return true
	})
}

func TestElectCreateFailover(t *testing.T) {
	forSeeds(t, func(t *testing.T, seed uint64) {
		c := newCluster(t, seed, 3)
		leader := c.waitLeader()
		t.Logf("seed %d: c%d leads at %v", seed, leader+1, c.s.Now())

		brokerEpoch := c.registerBroker(leader)
		c.heartbeat(leader, brokerEpoch)
		c.createTopic(leader, "alpha")
		c.converge("alpha")

		c.procs[leader].Crash()
		crashedAt := c.s.Now()
		next := c.waitLeader()
		if next == leader {
			t.Fatalf("crashed member c%d still leads", leader+1)
		}
		t.Logf("seed %d: c%d leads %v after the crash", seed, next+1, c.s.Now()-crashedAt)
		c.heartbeat(next, brokerEpoch)
		c.createTopic(next, "beta")

		c.procs[leader].Start()
		c.converge("alpha", "beta")
	})
}

func TestObserversConverge(t *testing.T) {
	const voters, observers = 3, 2
	forSeeds(t, func(t *testing.T, seed uint64) {
		c := newClusterWithObservers(t, seed, voters, observers)
		leader, brokerEpoch := c.leadWithTopic("alpha")

		for j := voters; j < voters+observers; j++ {
			st := c.members[j].Status()
			if st.Quorum.Voter || st.ActiveController || st.Leader != c.members[leader].Status().Leader {
				t.Fatalf("observer %s: voter=%v active=%v leader=%d", c.procs[j].Name(), st.Quorum.Voter, st.ActiveController, st.Leader)
			}
			// An observer's Submit is forwarded to the leader.
			c.createTopic(j, "gamma-"+c.procs[j].Name())
		}

		c.procs[leader].Crash()
		next := c.waitLeader()
		if next == leader || next >= voters {
			t.Fatalf("c%d leads after c%d crashed", next+1, leader+1)
		}
		c.heartbeat(next, brokerEpoch)
		c.createTopic(next, "beta")
		c.procs[leader].Start()
		c.converge("alpha", "beta")
	})
}

// describeQuorumOverNet sends a DescribeQuorum v2 request from a client
// process to addr over env.Net and returns the response, checked to hold
// the one partition of the metadata log.
func (c *cluster) describeQuorumOverNet(addr string) *kmsg.DescribeQuorumResponse {
	c.t.Helper()
	got := c.requestOverNet(addr, describeQuorumRequest()).(*kmsg.DescribeQuorumResponse)
	if len(got.Topics) != 1 || len(got.Topics[0].Partitions) != 1 {
		c.t.Fatalf("DescribeQuorum from %s: %+v", addr, got)
	}
	return got
}

func TestDescribeQuorum(t *testing.T) {
	const voters, observers = 3, 2
	c := newClusterWithObservers(t, 7, voters, observers)
	leader := c.waitLeader()
	c.heartbeat(leader, c.registerBroker(leader))
	c.createTopic(leader, "alpha")
	c.converge("alpha")
	// Let the observers' next fetches reach the leader.
	if err := c.s.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	st := c.members[leader].Status()

	resp := c.describeQuorumOverNet(fmt.Sprintf("c%d:9093", leader+1))
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID != int32(leader+1) || p.LeaderEpoch != st.Epoch || p.HighWatermark <= 0 {
		t.Fatalf("leader answered error %d leader %d epoch %d hw %d; want leader %d epoch %d", p.ErrorCode, p.LeaderID, p.LeaderEpoch, p.HighWatermark, leader+1, st.Epoch)
	}
	if len(p.CurrentVoters) != voters {
		t.Fatalf("voters %+v", p.CurrentVoters)
	}
	wallNow := c.s.Epoch().Add(c.s.Now()).UnixMilli()
	for _, v := range p.CurrentVoters {
		if v.ReplicaID < 1 || v.ReplicaID > voters || v.LogEndOffset <= 0 || v.LogEndOffset > st.Quorum.LogEnd.Offset {
			t.Fatalf("voter %+v (leader log end %d)", v, st.Quorum.LogEnd.Offset)
		}
		if v.LastFetchTimestamp <= 0 || v.LastFetchTimestamp > wallNow+1000 || v.LastFetchTimestamp < wallNow-10_000 {
			t.Fatalf("voter %d last fetch %d, wall now %d", v.ReplicaID, v.LastFetchTimestamp, wallNow)
		}
	}
	seen := map[int32]bool{}
	for _, o := range p.Observers {
		seen[o.ReplicaID] = o.LogEndOffset > 0
	}
	for j := 0; j < observers; j++ {
		if !seen[int32(observerID(j))] {
			t.Fatalf("observer %d not listed with a log end offset: %+v", observerID(j), p.Observers)
		}
	}

	// In process, the same answer.
	info, err := c.members[leader].DescribeQuorum()
	if err != nil || info.LeaderID != quorum.NodeID(leader+1) || len(info.Voters) != voters || len(info.Observers) != observers {
		t.Fatalf("in-process DescribeQuorum: %+v, %v", info, err)
	}

	// A follower and an observer answer NOT_LEADER_OR_FOLLOWER naming the leader.
	follower := (leader + 1) % voters
	for _, addr := range []string{fmt.Sprintf("c%d:9093", follower+1), "b1:9093"} {
		p := c.describeQuorumOverNet(addr).Topics[0].Partitions[0]
		if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.LeaderID != int32(leader+1) {
			t.Fatalf("%s answered error %d leader %d; want NOT_LEADER_OR_FOLLOWER naming %d", addr, p.ErrorCode, p.LeaderID, leader+1)
		}
	}
}

func TestCloseResignsFast(t *testing.T) {
	forSeeds(t, func(t *testing.T, seed uint64) {
		c := newClusterWithObservers(t, seed, 3, 1)
		leader, brokerEpoch := c.leadWithTopic("alpha")

		closed := false
		start := c.s.Now()
		c.members[leader].Close(func() { closed = true })
		next := -1
		c.runUntil(electionBound, "elect a successor", func() bool {
			next = c.activeController()
			return next >= 0 && next != leader
		})
		took := c.s.Now() - start
		t.Logf("seed %d: c%d leads %v after c%d closed", seed, next+1, took, leader+1)
		if took >= time.Second {
			t.Fatalf("successor after %v, want < 1s (the fetch timeout is %v)", took, quorum.DefaultFetchTimeout)
		}
		c.runUntil(time.Second, "close completes", func() bool { return closed })
		if st := c.members[leader].Status(); st.ActiveController || st.Err != nil {
			t.Fatalf("closed member: %+v", st)
		}
		// The rest of the cluster still makes progress.
		c.heartbeat(next, brokerEpoch)
		c.createTopic(next, "beta")
		c.runUntil(commitBound, "observer applies beta", func() bool {
			_, ok := c.members[3].Image().TopicByName("beta")
			return ok
		})
	})
}

// testLog receives the members' log lines when set (for debugging a seed).
var testLog io.Writer

// dialFromClient starts a new client process that dials addr and hands
// connected the connection, or sets *failed to the dial's error.
func (c *cluster) dialFromClient(addr string, failed *error, connected func(env.Conn)) {
	name := fmt.Sprintf("client-%d", len(c.s.Processes()))
	c.s.AddProcess(name, func(e env.Env) {
		e.Net().Dial(addr, func(conn env.Conn, err error) {
			if err != nil {
				*failed = err
				return
			}
			connected(conn)
		})
	}).Start()
}

// requestOverNet sends req to a controller listener from a new client
// process and returns the response.
func (c *cluster) requestOverNet(addr string, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	var got kmsg.Response
	var failed error
	c.dialFromClient(addr, &failed, func(conn env.Conn) {
		cl := wire.NewClient(conn, wire.ClientConfig{ClientID: "test"})
		if err := cl.Do(req, func(r kmsg.Response, err error) { got, failed = r, err }); err != nil {
			failed = err
		}
	})
	c.runUntil(commitBound, kmsg.NameForKey(req.Key())+" from "+addr, func() bool { return got != nil || failed != nil })
	if failed != nil {
		c.t.Fatalf("%s from %s: %v", kmsg.NameForKey(req.Key()), addr, failed)
	}
	return got
}

func TestControllerListenerAnswersApiVersions(t *testing.T) {
	c := newCluster(t, 5, 3)
	leader := c.waitLeader()
	addr := c.members[leader].Addr()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "strata-test", "1.0"
	resp := c.requestOverNet(addr, req).(*kmsg.ApiVersionsResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
	var got []protocol.API
	for _, k := range resp.ApiKeys {
		got = append(got, protocol.API{Key: k.ApiKey, MinVersion: k.MinVersion, MaxVersion: k.MaxVersion})
	}
	require.Equal(t, kraft.ControllerAPIs().Rows(), got)
	for _, want := range []kmsg.Key{kmsg.Vote, kmsg.Fetch, kmsg.DescribeQuorum, kmsg.BrokerRegistration, kmsg.CreateTopics} {
		_, ok := kraft.ControllerAPIs().Lookup(want.Int16())
		require.True(t, ok, "%s is served", want)
	}
	_, ok := kraft.ControllerAPIs().Lookup(kmsg.Produce.Int16())
	require.False(t, ok, "no data path on the controller listener")
}
