package kraft_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/quorum"
)

// follower returns a running voter other than leader.
func (c *cluster) follower(leader, voters int) int {
	return (leader + 1) % voters
}

// forwardVoters is the number of voters of newForwardCluster's cluster.
const forwardVoters = 3

// newForwardCluster starts forwardVoters voters and one observer and waits
// for a leader. It returns the cluster, the leader and the two members
// whose Submit forwards to it: a follower and the observer.
func newForwardCluster(t *testing.T, seed uint64) (c *cluster, leader, follower, observer int) {
	c = newClusterWithObservers(t, seed, forwardVoters, 1)
	leader = c.waitLeader()
	return c, leader, c.follower(leader, forwardVoters), forwardVoters
}

// submitAsync submits req to member i; the returned func reports the
// response once it has arrived (nil before).
func (c *cluster) submitAsync(i int, req kmsg.Request) func() kmsg.Response {
	c.t.Helper()
	var resp kmsg.Response
	c.members[i].Submit(req, func(r kmsg.Response, err error) {
		if err != nil {
			c.t.Errorf("submit %s: %v", kmsg.NameForKey(req.Key()), err)
		}
		resp = r
	})
	return func() kmsg.Response { return resp }
}

func createTopicsRequest(name string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, 1, 1
	req.Topics = []kmsg.CreateTopicsRequestTopic{t}
	return req
}

func describeQuorumRequest() *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	topic := kmsg.NewDescribeQuorumRequestTopic()
	topic.Topic = quorum.MetadataTopic
	part := kmsg.NewDescribeQuorumRequestTopicPartition()
	part.Partition = quorum.MetadataPartition
	topic.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{part}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{topic}
	return req
}

// topicError is the error code of the only topic of a CreateTopics response.
func topicError(t testing.TB, r kmsg.Response) int16 {
	t.Helper()
	resp, ok := r.(*kmsg.CreateTopicsResponse)
	if !ok || len(resp.Topics) != 1 {
		t.Fatalf("CreateTopics answered %+v", r)
	}
	return resp.Topics[0].ErrorCode
}

func TestForwardFromFollowerAndObserver(t *testing.T) {
	forSeeds(t, func(t *testing.T, seed uint64) {
		c, leader, follower, observer := newForwardCluster(t, seed)
		// Wait until both know the leader, so Submit forwards.
		c.runUntil(commitBound, "leader known", func() bool {
			return c.members[follower].Status().Leader == quorum.NodeID(leader+1) &&
				c.members[observer].Status().Leader == quorum.NodeID(leader+1)
		})

		// The broker registers through the observer (as a broker-only
		// node does) and heartbeats through the follower.
		brokerEpoch := c.registerBroker(observer)
		c.heartbeat(follower, brokerEpoch)
		c.createTopic(follower, "from-follower")
		c.createTopic(observer, "from-observer")
		c.converge("from-follower", "from-observer")
		if got := topicError(t, c.do(observer, createTopicsRequest("from-follower"))); got != kerr.TopicAlreadyExists.Code {
			t.Fatalf("second create answered %v, want TOPIC_ALREADY_EXISTS", kerr.ErrorForCode(got))
		}

		// DescribeQuorum through Submit is the leader's answer.
		for _, i := range []int{follower, observer, leader} {
			resp := c.do(i, describeQuorumRequest()).(*kmsg.DescribeQuorumResponse)
			if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("%s: DescribeQuorum %+v", c.procs[i].Name(), resp)
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.LeaderID != int32(leader+1) || len(p.CurrentVoters) != forwardVoters || p.HighWatermark <= 0 {
				t.Fatalf("%s: DescribeQuorum partition %+v", c.procs[i].Name(), p)
			}
		}
	})
}

// TestForwardLeaderCrash crashes the leader while forwarded requests are in
// flight: they fail with NOT_CONTROLLER (retriable) well before the
// forward timeout, and a retry succeeds through the new leader.
func TestForwardLeaderCrash(t *testing.T) {
	forSeeds(t, func(t *testing.T, seed uint64) {
		c, leader, follower, observer := newForwardCluster(t, seed)
		c.heartbeat(leader, c.registerBroker(leader))
		// Warm the forwarding connections.
		c.createTopic(follower, "warm-follower")
		c.createTopic(observer, "warm-observer")

		fromFollower := c.submitAsync(follower, createTopicsRequest("lost-follower"))
		fromObserver := c.submitAsync(observer, createTopicsRequest("lost-observer"))
		c.procs[leader].Crash()
		c.runUntil(commitBound, "forwarded requests fail", func() bool {
			return fromFollower() != nil && fromObserver() != nil
		})
		for _, r := range []kmsg.Response{fromFollower(), fromObserver()} {
			if got := topicError(t, r); got != kerr.NotController.Code {
				t.Fatalf("in-flight forwarded request answered %v, want NOT_CONTROLLER", kerr.ErrorForCode(got))
			}
		}

		next := c.waitLeader()
		if next == leader {
			t.Fatalf("crashed c%d still leads", leader+1)
		}
		retryAt := observer
		c.runUntil(electionBound, "observer learns the new leader", func() bool {
			return c.members[retryAt].Status().Leader == quorum.NodeID(next+1)
		})
		// The outcome of the lost request was unknown; the retry
		// either creates it or finds it.
		if got := topicError(t, c.do(retryAt, createTopicsRequest("lost-observer"))); got != 0 && got != kerr.TopicAlreadyExists.Code {
			t.Fatalf("retry answered %v", kerr.ErrorForCode(got))
		}
	})
}

// TestForwardTimeout pauses the leader past the forward timeout (but not
// past the fetch timeout, so nobody notices it is gone): the forwarded
// request gets REQUEST_TIMED_OUT, and the leader's late answer is dropped.
func TestForwardTimeout(t *testing.T) {
	const timeout = 500 * time.Millisecond
	c := newClusterWithConfig(t, 5, 3, 1, func(cfg *kraft.Config) { cfg.ForwardRequestTimeout = timeout })
	leader := c.waitLeader()
	follower := c.follower(leader, 3)
	c.heartbeat(leader, c.registerBroker(leader))
	c.createTopic(follower, "warm")

	got := c.submitAsync(follower, createTopicsRequest("slow"))
	start := c.s.Now()
	c.procs[leader].Pause(time.Second)
	// While the leader is paused the forwarded requests pile up to the
	// bound; one more is refused at once.
	var piled []func() kmsg.Response
	for i := 1; i < kraft.MaxForwardedInflight; i++ {
		piled = append(piled, c.submitAsync(follower, describeQuorumRequest()))
	}
	refused := c.submitAsync(follower, createTopicsRequest("refused"))
	c.runUntil(pollStep, "refused at once", func() bool { return refused() != nil })
	if code := topicError(t, refused()); code != kerr.RequestTimedOut.Code {
		t.Fatalf("request past the bound answered %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}
	c.runUntil(commitBound, "forwarded request times out", func() bool { return got() != nil })
	if took := c.s.Now() - start; took < timeout || took > timeout+100*time.Millisecond {
		t.Fatalf("answered after %v, want about %v", took, timeout)
	}
	if code := topicError(t, got()); code != kerr.RequestTimedOut.Code {
		t.Fatalf("answered %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}
	c.runUntil(pollStep, "the piled-up requests time out", func() bool { return piled[len(piled)-1]() != nil })
	for _, r := range piled {
		if resp, ok := r().(*kmsg.DescribeQuorumResponse); !ok || resp.ErrorCode != kerr.RequestTimedOut.Code {
			t.Fatalf("piled-up DescribeQuorum answered %+v, want REQUEST_TIMED_OUT", r())
		}
	}
	// The leader answers once resumed; the follower drops that answer and
	// keeps working.
	c.converge("warm", "slow")
	if code := topicError(t, c.do(follower, createTopicsRequest("slow"))); code != kerr.TopicAlreadyExists.Code {
		t.Fatalf("retry answered %v, want TOPIC_ALREADY_EXISTS", kerr.ErrorForCode(code))
	}
}

// roundTrip sends frame from a fresh client process to addr and returns
// the first response frame, or closed when the server closed the conn
// without answering.
func (c *cluster) roundTrip(addr string, frame []byte) (resp []byte, closed bool) {
	c.t.Helper()
	var failed error
	finished := false
	c.dialFromClient(addr, &failed, func(conn env.Conn) {
		conn.OnFrame(func(f []byte) {
			if !finished {
				resp, finished = f, true
				conn.Close()
			}
		})
		conn.OnClose(func(error) {
			if !finished {
				closed, finished = true, true
			}
		})
		if err := conn.Send(frame); err != nil {
			failed = err
		}
	})
	c.runUntil(commitBound, "round trip to "+addr, func() bool { return finished || failed != nil })
	if failed != nil {
		c.t.Fatalf("round trip to %s: %v", addr, failed)
	}
	return resp, closed
}

// requestFrame encodes req with a request header (without the size prefix).
func requestFrame(req kmsg.Request, corr int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, corr)[4:]
}

// createTopicsOverNet sends CreateTopics straight to a controller listener
// and returns its topic error code.
func (c *cluster) createTopicsOverNet(addr, name string) int16 {
	c.t.Helper()
	req := createTopicsRequest(name)
	frame, closed := c.roundTrip(addr, requestFrame(req, 7))
	if closed {
		c.t.Fatalf("%s closed the connection on CreateTopics", addr)
	}
	r := kbin.Reader{Src: frame}
	if corr := r.Int32(); corr != 7 {
		c.t.Fatalf("correlation id %d", corr)
	}
	kmsg.SkipTags(&r)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	if err := resp.ReadFrom(r.Src); err != nil {
		c.t.Fatalf("decode CreateTopics response: %v", err)
	}
	return topicError(c.t, resp)
}

// TestListenerDoesNotReforward: a controller request reaching a member
// whose controller is not active is answered NOT_CONTROLLER by it, not
// forwarded again: a follower, and a leader that lost leadership while cut
// off from the other voters.
func TestListenerDoesNotReforward(t *testing.T) {
	const voters = 3
	c := newClusterWithObservers(t, 11, voters, 1)
	leader := c.waitLeader()
	c.heartbeat(leader, c.registerBroker(leader))
	follower := c.follower(leader, voters)
	addr := func(i int) string { return fmt.Sprintf("c%d:9093", i+1) }

	if code := c.createTopicsOverNet(addr(follower), "via-follower"); code != kerr.NotController.Code {
		t.Fatalf("follower listener answered %v, want NOT_CONTROLLER", kerr.ErrorForCode(code))
	}
	if code := c.createTopicsOverNet(addr(leader), "via-leader"); code != 0 {
		t.Fatalf("leader listener answered %v", kerr.ErrorForCode(code))
	}

	// Cut the leader off from every other member (test clients still
	// reach it) until another voter leads and it has stepped down.
	var others []string
	for i, p := range c.procs {
		if i != leader {
			others = append(others, p.Name())
		}
	}
	c.s.Network().Partition([]string{c.procs[leader].Name()}, others)
	c.runUntil(electionBound, "the cut-off leader steps down", func() bool {
		next := c.activeController()
		return next >= 0 && next != leader && !c.members[leader].Status().ActiveController
	})
	if code := c.createTopicsOverNet(addr(leader), "via-old-leader"); code != kerr.NotController.Code {
		t.Fatalf("former leader's listener answered %v, want NOT_CONTROLLER", kerr.ErrorForCode(code))
	}
	// Its own Submit cannot reach a leader either: a retriable error, no
	// hang.
	r := c.submitAsync(leader, createTopicsRequest("from-old-leader"))
	c.runUntil(commitBound, "cut-off member answers", func() bool { return r() != nil })
	if code := topicError(t, r()); code != kerr.NotController.Code && code != kerr.RequestTimedOut.Code {
		t.Fatalf("cut-off member answered %v", kerr.ErrorForCode(code))
	}
	c.s.Network().Heal()
	c.converge("via-leader")
}

// TestListenerRejectsBadInput: malformed frames, unknown keys and versions
// on the controller listener close that connection and nothing else.
func TestListenerRejectsBadInput(t *testing.T) {
	const voters = 3
	c := newClusterWithObservers(t, 13, voters, 1)
	leader := c.waitLeader()
	c.heartbeat(leader, c.registerBroker(leader))

	header := func(key, version int16) []byte {
		b := kbin.AppendInt16(nil, key)
		b = kbin.AppendInt16(b, version)
		return kbin.AppendInt32(b, 1)
	}
	good := requestFrame(createTopicsRequest("x"), 1)
	cases := []struct {
		name  string
		frame []byte
	}{
		{"empty", []byte{}},
		{"short header", []byte{0, 19, 0}},
		{"unknown key", header(9999, 0)},
		{"negative key", header(-5, 0)},
		{"version too new", append(header(kmsg.CreateTopics.Int16(), 99), good[8:]...)},
		{"negative version", append(header(kmsg.CreateTopics.Int16(), -1), good[8:]...)},
		{"truncated body", good[:len(good)-3]},
		{"no client id", header(kmsg.CreateTopics.Int16(), 7)},
		{"truncated quorum request", requestFrame(kmsg.NewPtrVoteRequest(), 1)[:12]},
		{"describe quorum without client id", header(kmsg.DescribeQuorum.Int16(), 1)},
	}
	for _, i := range []int{leader, c.follower(leader, voters), voters} {
		for _, tc := range cases {
			addr := fmt.Sprintf("%s:9093", c.procs[i].Name())
			if _, closed := c.roundTrip(addr, tc.frame); !closed {
				t.Fatalf("%s: %s answered instead of closing the connection", addr, tc.name)
			}
			if err := c.members[i].Status().Err; err != nil {
				t.Fatalf("%s after %s: member stopped: %v", addr, tc.name, err)
			}
		}
	}
	// The quorum still serves, forwarding included.
	c.createTopic(c.follower(leader, voters), "after")
	c.converge("after")
}
