package scenario

// This file is the simulator's hostile peer (issue 22): a process that
// sends forged and malformed quorum and controller requests to the
// CONTROLLER listeners of a cluster's voters during the fault phase, as an
// attacker or a broken client on the network would (the listener does not
// authenticate its peers yet). The kraft and the log scenarios (log,
// replicated, groups, txn) run it in one seed in two, drawn from its own
// stream ("hostile"), so that no other draw, and no pinned seed's fault
// mix, moves. Its requests count as faults ("hostile-quorum",
// "hostile-controller") in the summary.
//
// Checks: a request that must be refused at the boundary (an epoch past
// quorum.MaxEpoch, a self-named candidate or leader, a non-voter, a
// negative offset, another cluster, a bogus registration or a stale broker
// epoch) that gets an answer must get Kafka's error for it, never a grant
// or success; a wrong answer fails the run in the event that received it.
// Everything else the scenario checks already: no member panics (a panic
// fails the seed), the Raft safety checks hold while forged requests in
// range (a Vote, BeginQuorumEpoch or EndQuorumEpoch a real voter could
// have sent) disrupt the quorum, and liveness holds after the heal, when
// the hostile peer stops.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/sim"
)

// hostileConfig is where the hostile peer aims.
type hostileConfig struct {
	// targets are the voters' controller listeners and their node ids.
	targets []hostileTarget
	// brokers are real broker ids, for forgeries that name them with a
	// stale epoch.
	brokers   []int32
	clusterID string
	// topic is a topic of the run, for AlterPartition forgeries.
	topic string
	// until is when the hostile peer stops (the heal).
	until time.Duration
}

type hostileTarget struct {
	addr string
	id   int32
}

// hostileNonVoter is the node id the hostile peer claims when it poses as
// a node outside the voter set.
const hostileNonVoter = 77

// maybeStartHostilePeer starts the hostile peer in one seed in two (never
// with NoFaults), drawn from the "hostile" stream; it returns nil when
// the seed runs without.
func maybeStartHostilePeer(s *sim.Sim, o Options, cfg hostileConfig) *hostilePeer {
	r := s.Rand("hostile")
	if o.NoFaults || r.IntN(2) != 0 {
		return nil
	}
	p := &hostilePeer{s: s, r: r, cfg: cfg, clients: make([]*wire.Client, len(cfg.targets)),
		dialing: make([]bool, len(cfg.targets)),
		// The mean wait between requests, drawn per seed: from a trickle
		// to a flood of forgeries.
		interval: time.Duration(5+r.IntN(200)) * time.Millisecond}
	s.AddProcess("hostile", func(e env.Env) {
		p.e = e
		p.next()
	}).Start()
	return p
}

// hostilePeer is one run's hostile peer.
type hostilePeer struct {
	s        *sim.Sim
	r        *rand.Rand
	cfg      hostileConfig
	e        env.Env
	interval time.Duration
	clients  []*wire.Client // per target, nil while not connected
	dialing  []bool
	// epoch is the largest quorum epoch an answer carried: forgeries in
	// range aim just past it.
	epoch int32
	// sent and answered count requests, for the summary line.
	sent, answered int
}

// String describes the peer for a run's summary.
func (p *hostilePeer) String() string {
	if p == nil {
		return "off"
	}
	return fmt.Sprintf("every~%v sent=%d answered=%d", p.interval, p.sent, p.answered)
}

// next schedules the next forgery.
func (p *hostilePeer) next() {
	wait := time.Duration(p.r.Int64N(int64(2*p.interval))) + time.Millisecond
	p.e.AfterFunc(wait, func() {
		if p.e.Monotonic() >= p.cfg.until || p.s.Now() >= p.cfg.until {
			return
		}
		p.attack()
		p.next()
	})
}

// attack sends one forgery to a random target, dialing it first if
// needed.
func (p *hostilePeer) attack() {
	i := p.r.IntN(len(p.cfg.targets))
	t := p.cfg.targets[i]
	shape := hostileShapes[p.r.IntN(len(hostileShapes))]
	if p.clients[i] == nil {
		if !p.dialing[i] {
			p.dialing[i] = true
			p.e.Net().Dial(t.addr, func(conn env.Conn, err error) {
				p.dialing[i] = false
				if err != nil {
					return
				}
				var cl *wire.Client
				cl = wire.NewClient(conn, wire.ClientConfig{ClientID: "hostile", MaxInflight: 64, OnClose: func(error) {
					if p.clients[i] == cl {
						p.clients[i] = nil
					}
				}})
				p.clients[i] = cl
			})
		}
		return
	}
	req := shape.build(p, t)
	kind := "hostile-quorum"
	if !isQuorumKey(req.Key()) {
		kind = "hostile-controller"
	}
	p.s.Fault(kind, fmt.Sprintf("%s->%s", shape.name, t.addr))
	p.sent++
	_ = p.clients[i].Do(req, func(resp kmsg.Response, err error) {
		if err != nil {
			return // the conn ended: a member restarting, or a refused frame
		}
		p.answered++
		p.learnEpoch(resp)
		if shape.expect == nil {
			return
		}
		if err := shape.expect(resp); err != nil {
			panic(fmt.Errorf("hostile peer: %s answered %s (%T v%d) wrongly: %w; request %+v, answer %+v", t.addr, shape.name, req, req.GetVersion(), err, req, resp))
		}
	})
}

func isQuorumKey(k int16) bool {
	switch kmsg.Key(k) {
	case kmsg.Vote, kmsg.BeginQuorumEpoch, kmsg.EndQuorumEpoch, kmsg.Fetch, kmsg.FetchSnapshot:
		return true
	}
	return false
}

// learnEpoch keeps the largest epoch a quorum answer carried.
func (p *hostilePeer) learnEpoch(resp kmsg.Response) {
	var e int32 = -1
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			e = r.Topics[0].Partitions[0].LeaderEpoch
		}
	case *kmsg.BeginQuorumEpochResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			e = r.Topics[0].Partitions[0].LeaderEpoch
		}
	case *kmsg.EndQuorumEpochResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			e = r.Topics[0].Partitions[0].LeaderEpoch
		}
	case *kmsg.FetchResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			e = r.Topics[0].Partitions[0].CurrentLeader.LeaderEpoch
		}
	}
	p.epoch = max(p.epoch, e)
}

// otherVoter is a voter that is not t, at random.
func (p *hostilePeer) otherVoter(t hostileTarget) int32 {
	var others []int32
	for _, o := range p.cfg.targets {
		if o.id != t.id {
			others = append(others, o.id)
		}
	}
	return others[p.r.IntN(len(others))]
}

// hostileShape is one kind of forgery: how to build it against a target,
// and what a correct answer is (nil: the request is in range, and any
// answer goes).
type hostileShape struct {
	name   string
	build  func(p *hostilePeer, t hostileTarget) kmsg.Request
	expect func(resp kmsg.Response) error
}

// quorumReq encodes a quorum request from a forged sender.
func quorumReq(from, to int32, payload quorum.Payload, clusterID string) kmsg.Request {
	req, err := quorum.EncodeRequest(quorum.Message{From: quorum.NodeID(from), To: quorum.NodeID(to), Payload: payload}, clusterID, quorum.DefaultWireVersions)
	if err != nil {
		panic(fmt.Sprintf("hostile peer: encode %s: %v", payload, err))
	}
	return req
}

func (p *hostilePeer) vote(t hostileTarget, candidate, epoch int32, last quorum.OffsetAndEpoch, pre bool) kmsg.Request {
	return quorumReq(candidate, t.id, quorum.VoteRequest{Epoch: epoch, CandidateID: quorum.NodeID(candidate), LastEnd: last, PreVote: pre}, p.cfg.clusterID)
}

// quorumRefused expects a quorum answer with error want (at the top or in
// the partition), and no vote granted.
func quorumRefused(want *kerr.Error) func(kmsg.Response) error {
	return func(resp kmsg.Response) error {
		top, part, granted := quorumAnswer(resp)
		if granted {
			return fmt.Errorf("granted")
		}
		if top != want.Code && part != want.Code {
			return fmt.Errorf("error %d/%d, want %s", top, part, want.Message)
		}
		return nil
	}
}

// quorumAnswer is a quorum response's top-level and partition errors and,
// for a vote, whether it was granted.
func quorumAnswer(resp kmsg.Response) (top, part int16, granted bool) {
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		top = r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			pp := r.Topics[0].Partitions[0]
			part, granted = pp.ErrorCode, pp.VoteGranted
		}
	case *kmsg.BeginQuorumEpochResponse:
		top = r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			part = r.Topics[0].Partitions[0].ErrorCode
		}
	case *kmsg.EndQuorumEpochResponse:
		top = r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			part = r.Topics[0].Partitions[0].ErrorCode
		}
	case *kmsg.FetchResponse:
		top = r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			part = r.Topics[0].Partitions[0].ErrorCode
		}
	case *kmsg.FetchSnapshotResponse:
		top = r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			part = r.Topics[0].Partitions[0].ErrorCode
		}
	}
	return top, part, granted
}

// controllerRefused expects a controller answer whose every error code is
// one of wants, or NOT_CONTROLLER (a member that is not the active
// controller) or REQUEST_TIMED_OUT (the listener's in-flight bound), and
// no success.
func controllerRefused(wants ...*kerr.Error) func(kmsg.Response) error {
	allowed := []int16{kerr.NotController.Code, kerr.RequestTimedOut.Code}
	for _, w := range wants {
		allowed = append(allowed, w.Code)
	}
	return func(resp kmsg.Response) error {
		codes := hostileErrorCodes(resp)
		if len(codes) == 0 {
			return fmt.Errorf("no error in %T: accepted", resp)
		}
		for _, c := range codes {
			if !slices.Contains(allowed, c) {
				return fmt.Errorf("error %d (%v), want one of %v", c, kerr.ErrorForCode(c), wants)
			}
		}
		return nil
	}
}

// hostileErrorCodes is every non-zero error code of a controller
// response the hostile peer provokes.
func hostileErrorCodes(resp kmsg.Response) []int16 {
	var codes []int16
	add := func(c int16) {
		if c != 0 {
			codes = append(codes, c)
		}
	}
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		add(r.ErrorCode)
	case *kmsg.BrokerHeartbeatResponse:
		add(r.ErrorCode)
	case *kmsg.AllocateProducerIDsResponse:
		add(r.ErrorCode)
	case *kmsg.AlterPartitionResponse:
		add(r.ErrorCode)
		for _, t := range r.Topics {
			for _, pp := range t.Partitions {
				add(pp.ErrorCode)
			}
		}
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			add(t.ErrorCode)
		}
	case *kmsg.ElectLeadersResponse:
		add(r.ErrorCode)
		for _, t := range r.Topics {
			for _, pp := range t.Partitions {
				add(pp.ErrorCode)
			}
		}
	}
	return codes
}

var hostileBig = quorum.OffsetAndEpoch{Offset: 1 << 40, Epoch: math.MaxInt32 - 1}

// hostileShapes are the forgeries, drawn uniformly: mostly ones that must
// be refused, a few in range that a real voter could have sent.
var hostileShapes = []hostileShape{
	{"vote-max-epoch", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return p.vote(t, p.otherVoter(t), math.MaxInt32, hostileBig, false)
	}, quorumRefused(kerr.InvalidRequest)},
	{"vote-self-named", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return p.vote(t, t.id, p.epoch+1, quorum.OffsetAndEpoch{Offset: 1 << 40, Epoch: p.epoch}, false)
	}, quorumRefused(kerr.InvalidRequest)},
	{"vote-non-voter", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return p.vote(t, hostileNonVoter, p.epoch+1, quorum.OffsetAndEpoch{Offset: 1 << 40, Epoch: p.epoch}, false)
	}, quorumRefused(kerr.InconsistentVoterSet)},
	{"vote-negative-offset", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return p.vote(t, p.otherVoter(t), p.epoch+1, quorum.OffsetAndEpoch{Offset: -1, Epoch: 0}, false)
	}, quorumRefused(kerr.InvalidRequest)},
	{"vote-other-cluster", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return quorumReq(p.otherVoter(t), t.id, quorum.VoteRequest{Epoch: p.epoch + 1, CandidateID: quorum.NodeID(p.otherVoter(t)),
			LastEnd: quorum.OffsetAndEpoch{Offset: 1 << 40, Epoch: p.epoch}}, "evil-cluster")
	}, quorumRefused(kerr.InconsistentClusterID)},
	{"vote-epoch-too-far", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		e := p.epoch + quorum.MaxEpochJump + 1000
		return p.vote(t, p.otherVoter(t), e, quorum.OffsetAndEpoch{Offset: 1 << 40, Epoch: e - 1}, p.r.IntN(2) == 0)
	}, quorumRefused(kerr.InvalidRequest)},
	{"begin-epoch-self-named", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return quorumReq(t.id, t.id, quorum.BeginQuorumEpochRequest{Epoch: p.epoch + 1, LeaderID: quorum.NodeID(t.id)}, p.cfg.clusterID)
	}, quorumRefused(kerr.InvalidRequest)},
	{"begin-epoch-max", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		v := p.otherVoter(t)
		return quorumReq(v, t.id, quorum.BeginQuorumEpochRequest{Epoch: math.MaxInt32, LeaderID: quorum.NodeID(v)}, p.cfg.clusterID)
	}, quorumRefused(kerr.InvalidRequest)},
	{"end-epoch-non-voter", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return quorumReq(hostileNonVoter, t.id, quorum.EndQuorumEpochRequest{Epoch: p.epoch, LeaderID: hostileNonVoter}, p.cfg.clusterID)
	}, quorumRefused(kerr.InconsistentVoterSet)},
	{"fetch-negative-offset", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return quorumReq(hostileNonVoter, t.id, quorum.FetchRequest{Epoch: max(p.epoch, 0), ReplicaID: hostileNonVoter, FetchOffset: -1, MaxBytes: 1 << 10}, p.cfg.clusterID)
	}, quorumRefused(kerr.InvalidRequest)},
	{"fetch-snapshot-self-named", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return quorumReq(t.id, t.id, quorum.FetchSnapshotRequest{Epoch: max(p.epoch, 0), ReplicaID: quorum.NodeID(t.id), MaxBytes: 1 << 10}, p.cfg.clusterID)
	}, quorumRefused(kerr.InvalidRequest)},
	// In range: what a real voter could send. They disrupt (an election,
	// a follower leaving its leader for a while); nothing may break. Not
	// a BeginQuorumEpoch in range: a leader announcement in another
	// voter's name is believed (a member that knew no leader of the epoch
	// follows the forged one, and cannot follow the real one of that
	// epoch until the next election), which only authenticating the
	// controller listener's peers prevents (the security issue).
	{"vote-forged", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		e := p.epoch + 1 + int32(p.r.IntN(2))
		return p.vote(t, p.otherVoter(t), e, quorum.OffsetAndEpoch{Offset: 1 << 40, Epoch: e - 1}, p.r.IntN(2) == 0)
	}, nil},
	{"end-epoch-forged", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		v := p.otherVoter(t)
		return quorumReq(v, t.id, quorum.EndQuorumEpochRequest{Epoch: max(p.epoch, 0), LeaderID: quorum.NodeID(v),
			PreferredSuccessors: []quorum.NodeID{quorum.NodeID(t.id)}}, p.cfg.clusterID)
	}, nil},
	// Controller requests with values that must be refused.
	{"register-negative-id", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return hostileRegistration(p, -1-int32(p.r.IntN(1000)), p.cfg.clusterID)
	}, controllerRefused(kerr.InvalidRequest)},
	{"register-other-cluster", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return hostileRegistration(p, hostileNonVoter, "evil-cluster")
	}, controllerRefused(kerr.InconsistentClusterID)},
	{"register-zero-incarnation", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		req := hostileRegistration(p, hostileNonVoter, p.cfg.clusterID)
		req.IncarnationID = [16]byte{}
		return req
	}, controllerRefused(kerr.InvalidRequest)},
	{"register-duplicate-listeners", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		req := hostileRegistration(p, hostileNonVoter, p.cfg.clusterID)
		req.Listeners = append(req.Listeners, req.Listeners[0])
		return req
	}, controllerRefused(kerr.InvalidRequest)},
	{"heartbeat-stale-epoch", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.Version = 1
		req.BrokerID = p.cfg.brokers[p.r.IntN(len(p.cfg.brokers))]
		req.BrokerEpoch = []int64{-1, math.MaxInt64, math.MinInt64}[p.r.IntN(3)]
		req.CurrentMetadataOffset, req.WantFence, req.WantShutdown = math.MaxInt64, true, true
		return req
	}, controllerRefused(kerr.StaleBrokerEpoch)},
	{"alter-partition-stale-epoch", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		req := kmsg.NewPtrAlterPartitionRequest()
		req.Version = 1
		req.BrokerID = p.cfg.brokers[p.r.IntN(len(p.cfg.brokers))]
		req.BrokerEpoch = math.MaxInt64
		tp := kmsg.NewAlterPartitionRequestTopic()
		tp.Topic = p.cfg.topic
		pp := kmsg.NewAlterPartitionRequestTopicPartition()
		pp.LeaderEpoch, pp.PartitionEpoch = math.MaxInt32, -1
		pp.NewISR = []int32{req.BrokerID, req.BrokerID, hostileNonVoter}
		tp.Partitions = []kmsg.AlterPartitionRequestTopicPartition{pp, pp}
		req.Topics = []kmsg.AlterPartitionRequestTopic{tp}
		return req
	}, controllerRefused(kerr.StaleBrokerEpoch)},
	{"allocate-producer-ids-stale-epoch", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = p.cfg.brokers[p.r.IntN(len(p.cfg.brokers))], -5
		return req
	}, controllerRefused(kerr.StaleBrokerEpoch)},
	{"create-topics-negative-partitions", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		// -1 is not negative here: it asks for num.partitions.
		return hostileCreateTopic("hostile-neg", -2-int32(p.r.IntN(100)), 1, nil)
	}, controllerRefused(kerr.InvalidPartitions)},
	{"create-topics-duplicate-replicas", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		b := p.cfg.brokers[p.r.IntN(len(p.cfg.brokers))]
		return hostileCreateTopic("hostile-dup", -1, -1, []int32{b, b})
	}, controllerRefused(kerr.InvalidReplicaAssignment, kerr.InvalidReplicationFactor)},
	{"create-topics-unknown-broker", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return hostileCreateTopic("hostile-unknown", -1, -1, []int32{hostileNonVoter})
	}, controllerRefused(kerr.InvalidReplicaAssignment)},
	{"create-topics-bad-name", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		return hostileCreateTopic("../../etc/passwd", 1, 1, nil)
	}, controllerRefused(kerr.InvalidTopicException)},
	{"elect-leaders-bad-type", func(p *hostilePeer, t hostileTarget) kmsg.Request {
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version = 2
		req.ElectionType = 7
		return req
	}, controllerRefused(kerr.InvalidRequest)},
}

func hostileRegistration(p *hostilePeer, id int32, clusterID string) *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 3
	req.BrokerID, req.ClusterID = id, clusterID
	req.IncarnationID = [16]byte{0: 0xee, 15: byte(1 + p.r.IntN(255))}
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "hostile", 9092
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{l}
	return req
}

func hostileCreateTopic(name string, partitions int32, rf int16, replicas []int32) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 1000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	if replicas != nil {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Replicas = slices.Clone(replicas)
		t.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{a}
	}
	req.Topics = []kmsg.CreateTopicsRequestTopic{t}
	return req
}
