package kraft_test

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/quorum"
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
	t       *testing.T
	s       *sim.Sim
	procs   []*sim.Process
	members []*kraft.Member
}

func newCluster(t *testing.T, seed uint64, n int) *cluster {
	c := &cluster{t: t, s: sim.New(sim.Config{Seed: seed, Log: testLog}), members: make([]*kraft.Member, n)}
	voters := map[quorum.NodeID]string{}
	for i := 0; i < n; i++ {
		voters[quorum.NodeID(i+1)] = fmt.Sprintf("c%d:9093", i+1)
	}
	for i := 0; i < n; i++ {
		cfg := kraft.Config{NodeID: quorum.NodeID(i + 1), Voters: kraft.ParseVoters(voters), ClusterID: "sim-cluster"}
		p := c.s.AddProcess(fmt.Sprintf("c%d", i+1), func(e env.Env) {
			m, err := kraft.Start(e, cfg)
			if err != nil {
				t.Errorf("start c%d: %v", i+1, err)
			}
			c.members[i] = m
		})
		c.procs = append(c.procs, p)
	}
	for _, p := range c.procs {
		p.Start()
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

func (c *cluster) createTopic(leader int, name string) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, 3, 1
	req.Topics = []kmsg.CreateTopicsRequestTopic{t}
	resp := c.do(leader, req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		c.t.Fatalf("create topic %s: %+v", name, resp.Topics)
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
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
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
}

// testLog receives the members' log lines when set (for debugging a seed).
var testLog io.Writer
