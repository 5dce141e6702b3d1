package scenario

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/linearizability"
	"github.com/strata-log/strata/nemesis"
	"github.com/strata-log/strata/sim"
)

// KRaft runs a quorum of controller members (core/kraft, three voters by
// default) under the nemesis, with an admin client that registers and
// heartbeats one broker and creates and deletes a few topics through
// whichever member is the active controller. Every 10 ms of virtual time it
// checks:
//
//   - at most one leader per epoch, across every member's view (a leader's
//     own and its followers');
//   - a member's applied position never goes backwards within an
//     incarnation (a restart replays the committed log from the start);
//   - two images at the same applied position, on any members at any time,
//     have the same digest.
//
// Liveness: after the final heal, within the heal phase (15 s by default)
// an active controller exists and every member's image converges to the
// same position and digest.
//
// Linearizability: every topic operation attempt of the admin client and
// every describe read (see kraftAdmin.read) is recorded in a
// linearizability.History against virtual time, and after liveness the
// history is checked against linearizability.KVModel: CreateTopics is
// CreateIfAbsent, DeleteTopics is Delete, a describe is Get. A history that
// is not linearizable fails the run.
//
// First step: the admin client calls Member.Submit on the member object
// directly instead of going through a broker's network listener.
func KRaft(o Options) sim.Summary {
	sum, _ := runKRaft(o)
	return sum
}

// runKRaft runs the scenario and also returns its harness, for tests.
func runKRaft(o Options) (sim.Summary, *kraftHarness) {
	return runKRaftWith(o, kraftBugs{})
}

// kraftBugs plants bugs in the harness so that tests can prove the checks
// catch them. The zero value plants none.
type kraftBugs struct {
	// ackCreateEarly makes the admin client record a CreateTopics as
	// successful when it sends it, without waiting for the controller's
	// answer (a client that acknowledges before the commit).
	ackCreateEarly bool
	// followerReads makes describe reads come from the image of the first
	// running member that is not the active controller, a follower's
	// possibly lagging image, without the freshness condition of
	// kraftAdmin.read.
	followerReads bool
}

// runKRaftWith is runKRaft with planted bugs.
func runKRaftWith(o Options, bugs kraftBugs) (sim.Summary, *kraftHarness) {
	o = o.withDefaults(3, 20*time.Second, 15*time.Second)
	s := sim.New(sim.Config{Seed: o.Seed, Log: o.Log})
	h := &kraftHarness{
		s:         s,
		n:         o.Nodes,
		members:   make([]*kraft.Member, o.Nodes),
		memberInc: make([]uint64, o.Nodes),
		applied:   make([]kraftApplied, o.Nodes),
		leaders:   map[int32]quorum.NodeID{},
		digests:   map[meta.Position]meta.Digest{},
		restarts:  make([]uint64, o.Nodes),
		opsUntil:  o.FaultPhase,
		hist:      linearizability.NewHistory(),
		unknown:   map[string]int{},
		bugs:      bugs,
	}
	voters := map[quorum.NodeID]string{}
	for i := 0; i < o.Nodes; i++ {
		voters[quorum.NodeID(i+1)] = kraftName(i) + ":9093"
	}
	for i := 0; i < o.Nodes; i++ {
		i := i
		cfg := kraft.Config{NodeID: quorum.NodeID(i + 1), Voters: kraft.ParseVoters(voters), ClusterID: kraftClusterID}
		p := s.AddProcess(kraftName(i), func(e env.Env) {
			h.members[i] = nil
			m, err := kraft.Start(e, cfg)
			if err != nil {
				e.Logger().Error("kraft start failed", "err", err)
				s.Trace(fmt.Sprintf("%s:start-failed:%v", kraftName(i), err))
				h.superviseRestart(i)
				return
			}
			h.members[i] = m
			h.memberInc[i] = h.procs[i].Incarnation()
		})
		h.procs = append(h.procs, p)
	}
	admin := s.AddProcess("admin", func(e env.Env) { h.client = startKRaftAdmin(h, e) })
	for _, p := range h.procs {
		p.Start()
	}
	admin.Start()
	mix := nemesis.None()
	if !o.NoFaults {
		mix = nemesis.DrawMix(s.Rand("nemesis/mix"), o.Nodes)
	}
	nemesis.Start(s, h.procs, mix, o.FaultPhase)
	h.scheduleCheck()

	sum := func(err error) (sim.Summary, *kraftHarness) {
		m := s.Summarize("kraft")
		m.Err = err
		return m, h
	}
	if err := s.RunUntil(o.FaultPhase); err != nil {
		return sum(err)
	}
	// The nemesis healed everything at FaultPhase; the admin client stops
	// issuing topic operations (heartbeats go on) so that the images can
	// settle.
	deadline := s.Now() + o.HealPhase
	for !h.converged() {
		if s.Now() >= deadline {
			return sum(fmt.Errorf("liveness: no active controller with converged images within %v of the heal: %s", o.HealPhase, h.describe()))
		}
		if err := s.RunFor(kraftCheckEvery); err != nil {
			return sum(err)
		}
	}
	s.Trace("kraft:converged " + h.describe())
	return sum(h.checkHistory())
}

const (
	kraftClusterID  = "sim-cluster"
	kraftCheckEvery = 10 * time.Millisecond
	kraftBrokerID   = 100
	// kraftSupervisorDelay is how long the supervisor waits before
	// restarting a member that stopped on a fatal error.
	kraftSupervisorDelay = 50 * time.Millisecond
)

func kraftName(i int) string { return fmt.Sprintf("c%d", i+1) }

// kraftApplied is the last applied position the checker saw on a member's
// incarnation.
type kraftApplied struct {
	inc uint64
	pos meta.Position
}

type kraftHarness struct {
	s       *sim.Sim
	n       int
	procs   []*sim.Process
	members []*kraft.Member // latest member started, nil if its start failed
	// memberInc is the incarnation members[i] belongs to: between a
	// restart and the new incarnation's start event, members[i] is the
	// dead incarnation's.
	memberInc []uint64
	client    *kraftAdmin

	applied  []kraftApplied
	leaders  map[int32]quorum.NodeID       // epoch -> the leader any member saw for it
	digests  map[meta.Position]meta.Digest // applied position -> image digest seen there
	restarts []uint64                      // incarnation a supervisor restart is scheduled for (+1), 0 for none
	opsUntil time.Duration                 // the admin issues topic operations until then

	// hist is the admin client's history of topic operations and describe
	// reads; unknown counts, per topic name, the attempts whose outcome
	// is unknown (see kraftUnknownBudget).
	hist    *linearizability.History
	unknown map[string]int
	reads   int // describe reads recorded
	skipped int // describe reads left out: freshness not provable
	bugs    kraftBugs
}

// checkHistory checks the admin client's history for linearizability and
// traces the verdict; it returns the error that fails the run, if any.
func (h *kraftHarness) checkHistory() error {
	res, err := linearizability.Check(linearizability.KVModel(), h.hist)
	if err != nil {
		h.s.Trace("kraft:linearizability error " + err.Error())
		return fmt.Errorf("linearizability: %w", err)
	}
	h.s.Trace("kraft:linearizability " + res.String())
	if !res.Ok {
		return fmt.Errorf("linearizability: admin history %s; %s", res, describeLinearizationInfo(res))
	}
	return nil
}

// describeLinearizationInfo renders, for each partition (topic name) of a
// failing check, the tail of porcupine's longest partial linearization: the
// operations it could order before getting stuck.
func describeLinearizationInfo(res linearizability.Result) string {
	out := ""
	for p, lins := range res.Info.PartialLinearizationsOperations() {
		if len(lins) == 0 {
			continue
		}
		best := 0
		for j, l := range lins {
			if len(l) > len(lins[best]) {
				best = j
			}
		}
		l := lins[best]
		out += fmt.Sprintf(" partition %d: longest partial linearization of %d ops ends", p, len(l))
		for _, op := range l[max(0, len(l)-6):] {
			out += fmt.Sprintf(" [%+v -> %+v @%v..%v]", op.Input, op.Output, time.Duration(op.Call), time.Duration(op.Return))
		}
		out += ";"
	}
	return out
}

// member returns the running, started member i, or nil.
func (h *kraftHarness) member(i int) *kraft.Member {
	if !h.procs[i].Up() || h.memberInc[i] != h.procs[i].Incarnation() {
		return nil
	}
	return h.members[i]
}

func (h *kraftHarness) scheduleCheck() {
	h.s.After(kraftCheckEvery, "kraft:check", func() {
		h.check()
		h.scheduleCheck()
	})
}

// check runs the safety checks against every running member.
func (h *kraftHarness) check() {
	for i := range h.procs {
		m := h.member(i)
		if m == nil {
			continue
		}
		st := m.Status()
		if st.Err != nil {
			h.superviseRestart(i)
		}
		if st.Leader != quorum.NoNode {
			if prev, ok := h.leaders[st.Epoch]; !ok {
				h.leaders[st.Epoch] = st.Leader
				h.s.Trace(fmt.Sprintf("kraft:leader epoch=%d node=%d", st.Epoch, st.Leader))
			} else {
				assert.That(prev == st.Leader, "two leaders in epoch %d: node %d and node %d (seen by %s)", st.Epoch, prev, st.Leader, kraftName(i))
			}
		}
		inc := h.procs[i].Incarnation()
		pos := st.Applied
		if a := h.applied[i]; a.inc == inc {
			assert.That(pos.Offset >= a.pos.Offset, "%s applied position went backwards: %+v -> %+v", kraftName(i), a.pos, pos)
		}
		h.applied[i] = kraftApplied{inc: inc, pos: pos}
		d := m.Image().Digest()
		if prev, ok := h.digests[pos]; !ok {
			h.digests[pos] = d
		} else {
			assert.That(prev == d, "%s image at %+v has digest %s, another image there had %s", kraftName(i), pos, d, prev)
		}
	}
}

// superviseRestart restarts member i's process a little later, unless it
// restarted meanwhile: what a process supervisor does with a member that
// stopped on a fatal error (a failed fsync).
func (h *kraftHarness) superviseRestart(i int) {
	p := h.procs[i]
	inc := p.Incarnation()
	if h.restarts[i] == inc+1 {
		return
	}
	h.restarts[i] = inc + 1
	h.s.Trace(kraftName(i) + ":supervisor-restart")
	h.s.After(kraftSupervisorDelay, "supervisor:restart", func() {
		if p.Incarnation() == inc && p.Up() {
			p.Restart()
		}
	})
}

// active returns the running member whose controller is active in the
// highest epoch, or -1.
func (h *kraftHarness) active() int {
	found, epoch := -1, int32(-1)
	for i := range h.procs {
		m := h.member(i)
		if m == nil || h.procs[i].Paused() {
			continue
		}
		st := m.Status()
		if st.Err == nil && st.ActiveController && st.Epoch > epoch {
			found, epoch = i, st.Epoch
		}
	}
	return found
}

// converged reports whether an active controller exists and every member
// runs with the same applied position and image digest.
func (h *kraftHarness) converged() bool {
	if h.active() < 0 {
		return false
	}
	var first *kraft.Member
	for i := range h.procs {
		m := h.member(i)
		if m == nil || m.Status().Err != nil {
			return false
		}
		if first == nil {
			first = m
			continue
		}
		if first.Image().Position() != m.Image().Position() || first.Image().Digest() != m.Image().Digest() {
			return false
		}
	}
	return true
}

func (h *kraftHarness) describe() string {
	out := ""
	for i := range h.procs {
		m := h.member(i)
		if m == nil {
			out += fmt.Sprintf(" %s=down", kraftName(i))
			continue
		}
		st := m.Status()
		out += fmt.Sprintf(" %s={leader=%d epoch=%d active=%v applied=%d/%d topics=%d err=%v}",
			kraftName(i), st.Leader, st.Epoch, st.ActiveController, st.Applied.Offset, st.Applied.Epoch, m.Image().NumTopics(), st.Err)
	}
	if c := h.client; c != nil {
		out += fmt.Sprintf(" admin={ok=%d retries=%d reads=%d skipped=%d ops=%d unknown=%d}", c.completed, c.retries, h.reads, h.skipped, h.hist.Len(), h.hist.UnknownLen())
	}
	return out
}

// kraftAdmin is the admin client: it registers one broker and keeps it
// heartbeating (CreateTopics needs an unfenced broker to place replicas
// on), and creates and deletes topics among a few names, one operation at
// a time, retrying on NOT_CONTROLLER and timeouts.
type kraftAdmin struct {
	h *kraftHarness
	e env.Env

	brokerEpoch int64 // -1 until registered
	hbBusy      bool
	opBusy      bool
	seq         uint64 // request id; a callback for an older one is stale

	completed int
	retries   int
}

const (
	kraftAdminTick      = 20 * time.Millisecond
	kraftHeartbeatEvery = 500 * time.Millisecond
	kraftRequestTimeout = 2 * time.Second
)

var kraftTopics = []string{"alpha", "beta", "gamma", "delta"}

func startKRaftAdmin(h *kraftHarness, e env.Env) *kraftAdmin {
	c := &kraftAdmin{h: h, e: e, brokerEpoch: -1}
	c.tick()
	c.heartbeatLoop()
	return c
}

func (c *kraftAdmin) tick() {
	if c.e.Rand().IntN(3) == 0 {
		c.read(kraftTopics[c.e.Rand().IntN(len(kraftTopics))])
	} else if !c.opBusy && c.brokerEpoch >= 0 && c.h.s.Now() < c.h.opsUntil {
		c.topicOp()
	}
	c.e.AfterFunc(kraftAdminTick+time.Duration(c.e.Rand().Int64N(int64(kraftAdminTick))), c.tick)
}

func (c *kraftAdmin) heartbeatLoop() {
	if !c.hbBusy {
		if c.brokerEpoch < 0 {
			c.register()
		} else {
			c.heartbeat()
		}
	}
	c.e.AfterFunc(kraftHeartbeatEvery, c.heartbeatLoop)
}

// submit sends req to the active controller and calls done with its
// response, or with nil on a timeout, a missing controller or an error.
func (c *kraftAdmin) submit(req kmsg.Request, done func(kmsg.Response)) {
	c.submitOp(req, nil, func(r kmsg.Response, _ bool) { done(r) })
}

// submitOp is submit for a topic operation: sent(i) runs when the request
// is handed to member i, and done also learns whether the request was sent
// at all (with no active controller it is not, and has no effect).
func (c *kraftAdmin) submitOp(req kmsg.Request, sent func(), done func(r kmsg.Response, wasSent bool)) {
	c.seq++
	id := c.seq
	finished := false
	finish := func(r kmsg.Response) {
		if finished {
			return
		}
		finished = true
		done(r, true)
	}
	i := c.h.active()
	if i < 0 {
		c.e.Post(func() { done(nil, false) })
		return
	}
	if sent != nil {
		sent()
	}
	name := kmsg.NameForKey(req.Key())
	c.h.s.Trace(fmt.Sprintf("admin:req=%d %s to=%s", id, name, kraftName(i)))
	c.h.members[i].Submit(req, func(r kmsg.Response, err error) {
		if err != nil {
			c.e.Logger().Warn("submit failed", "req", name, "err", err)
			r = nil
		}
		finish(r)
	})
	c.e.AfterFunc(kraftRequestTimeout, func() { finish(nil) })
}

func (c *kraftAdmin) register() {
	c.hbBusy = true
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.Version = 3
	reg.BrokerID = kraftBrokerID
	reg.IncarnationID = [16]byte{0: 1, 15: 1}
	reg.ClusterID = kraftClusterID
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "broker-100", 9092
	reg.Listeners = []kmsg.BrokerRegistrationRequestListener{l}
	c.submit(reg, func(r kmsg.Response) {
		c.hbBusy = false
		resp, ok := r.(*kmsg.BrokerRegistrationResponse)
		if !ok || resp.ErrorCode != 0 {
			c.retry("register", r)
			return
		}
		c.brokerEpoch = resp.BrokerEpoch
		c.h.s.Trace(fmt.Sprintf("admin:registered epoch=%d", resp.BrokerEpoch))
		c.heartbeat()
	})
}

func (c *kraftAdmin) heartbeat() {
	c.hbBusy = true
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.Version = 1
	hb.BrokerID, hb.BrokerEpoch = kraftBrokerID, c.brokerEpoch
	if i := c.h.active(); i >= 0 {
		hb.CurrentMetadataOffset = c.h.members[i].Image().Position().Offset
	}
	c.submit(hb, func(r kmsg.Response) {
		c.hbBusy = false
		resp, ok := r.(*kmsg.BrokerHeartbeatResponse)
		if !ok {
			c.retry("heartbeat", r)
			return
		}
		switch resp.ErrorCode {
		case 0:
		case kerr.StaleBrokerEpoch.Code, kerr.BrokerIDNotRegistered.Code:
			c.h.s.Trace(fmt.Sprintf("admin:reregister code=%d", resp.ErrorCode))
			c.brokerEpoch = -1
		default:
			c.retry("heartbeat", r)
		}
	})
}

// topicOp creates or deletes one of the names, chosen at random.
func (c *kraftAdmin) topicOp() {
	name := kraftTopics[c.e.Rand().IntN(len(kraftTopics))]
	create := c.e.Rand().IntN(2) == 0
	if c.h.unknown[name] >= kraftUnknownBudget {
		return
	}
	c.opBusy = true
	if create {
		c.createTopic(name)
	} else {
		c.deleteTopic(name)
	}
}

// kraftUnknownBudget is how many attempts per topic name may end with an
// unknown outcome; past it the client stops operating on the name, since
// linearizability.Check refuses a partition with more than
// DefaultMaxUnknownPerPartition of them. The margin covers the attempt
// still in flight when the run ends, exported as pending.
const kraftUnknownBudget = linearizability.DefaultMaxUnknownPerPartition - 2

// kraftTopicValue is the value a created topic has in the KV model: the
// model only needs presence.
const kraftTopicValue = "topic"

// Outcome classification of one topic operation attempt (each attempt,
// retries included, is its own operation in the history):
//
//   - a definite answer (created, TOPIC_ALREADY_EXISTS; deleted,
//     UNKNOWN_TOPIC_OR_PARTITION) completes the operation when it arrives;
//   - NOT_CONTROLLER is unknown (Timeout). The client only sends to a member
//     whose controller is active, so the answer comes from Controller.Handle
//     or Controller.Resign after the member's Raft stepped: the request may
//     have been proposed, and a resigning controller's proposals may still
//     commit under the next leader. Member.Submit answers NOT_CONTROLLER
//     without proposing only when the controller is inactive, which the
//     client cannot tell apart from outside, so it never discards one;
//   - no answer within kraftRequestTimeout, a failed Submit or a member that
//     crashed holding the request is unknown (Timeout);
//   - REQUEST_TIMED_OUT is Controller.Handle refusing a request because too
//     many records are uncommitted, before acting on it: Discard. So is any
//     other error code (validation errors): the controller wrote nothing;
//   - with no active controller the request is never sent: Discard.
func (c *kraftAdmin) attempt(name string, in linearizability.KVInput, req kmsg.Request, code func(kmsg.Response) (int16, bool), okErr int16, errOut error, again func()) {
	h := c.h
	if h.unknown[name] >= kraftUnknownBudget || h.s.Now() >= h.opsUntil {
		c.opBusy = false
		return
	}
	var id linearizability.OpID
	recorded := false
	c.submitOp(req, func() {
		id = h.hist.Invoke(0, in, h.s.Now())
		if h.bugs.ackCreateEarly && in.Op == linearizability.KVOpCreateIfAbsent {
			h.hist.Complete(id, linearizability.KVOutput{}, h.s.Now())
			recorded = true
		}
	}, func(r kmsg.Response, sent bool) {
		cd, ok := code(r)
		if !sent {
			// Never sent: nothing was invoked.
			c.retryOp(in.Op.String()+" "+name, r, again)
			return
		}
		outcome := "unknown"
		switch {
		case recorded:
			outcome = "recorded-early"
		case !ok || cd == kerr.NotController.Code:
			h.hist.Timeout(id)
			h.unknown[name]++
		case cd == 0:
			h.hist.Complete(id, linearizability.KVOutput{}, h.s.Now())
			outcome = "ok"
		case cd == okErr:
			h.hist.Complete(id, linearizability.KVOutput{Err: errOut}, h.s.Now())
			outcome = "err"
		default:
			h.hist.Discard(id)
			outcome = "discarded"
		}
		h.s.Trace(fmt.Sprintf("admin:hist %s %s code=%d -> %s", in.Op, name, cd, outcome))
		if !ok || retriable(cd) {
			c.retryOp(in.Op.String()+" "+name, r, again)
			return
		}
		c.done(fmt.Sprintf("%s %s code=%d", in.Op, name, cd))
	})
}

func (c *kraftAdmin) createTopic(name string) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, 2, 1
	req.Topics = []kmsg.CreateTopicsRequestTopic{t}
	c.attempt(name, linearizability.KVCreateIfAbsent(name, kraftTopicValue), req, func(r kmsg.Response) (int16, bool) {
		resp, ok := r.(*kmsg.CreateTopicsResponse)
		if !ok || len(resp.Topics) != 1 {
			return 0, false
		}
		return resp.Topics[0].ErrorCode, true
	}, kerr.TopicAlreadyExists.Code, linearizability.ErrKeyExists, func() { c.createTopic(name) })
}

func (c *kraftAdmin) deleteTopic(name string) {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 4
	req.TopicNames = []string{name}
	c.attempt(name, linearizability.KVDelete(name), req, func(r kmsg.Response) (int16, bool) {
		resp, ok := r.(*kmsg.DeleteTopicsResponse)
		if !ok || len(resp.Topics) != 1 {
			return 0, false
		}
		return resp.Topics[0].ErrorCode, true
	}, kerr.UnknownTopicOrPartition.Code, linearizability.ErrKeyNotFound, func() { c.deleteTopic(name) })
}

// read records a describe of name: whether the topic exists, read from the
// committed image of the active controller, as a Get, when that read is
// linearizable, and not at all otherwise.
//
// A member's committed image is linearizable only on the leader of the
// newest epoch. A controller becomes active only once it applied its
// epoch's leader-change batch, so its image then holds every record
// committed in earlier epochs; in its own epoch it is the only proposer and
// answers a request only after applying its records. But a deposed leader
// that has not noticed yet (partitioned, paused, with a slow check-quorum)
// still reports itself active while a newer leader commits creates and
// deletes: its image is stale, which is what a Kafka Metadata or
// DescribeTopics request served from a metadata cache gives (not
// linearizable in Kafka either). So the harness, which sees every member,
// reads only when no member, up, paused or crashed, knows an epoch newer
// than the reading controller's: electing a newer leader takes a
// candidate that durably moved to the newer epoch before asking for votes,
// and a member being started (whose state is unknown) blocks the read. The
// read takes no virtual time. Reads the harness cannot prove fresh are left
// out of the history (counted in kraftHarness.skipped).
func (c *kraftAdmin) read(name string) {
	h := c.h
	i := h.active()
	if i < 0 {
		return
	}
	if h.bugs.followerReads {
		for j := range h.procs {
			if j != i && h.member(j) != nil {
				i = j
				break
			}
		}
	}
	epoch := h.members[i].Status().Epoch
	for j := range h.procs {
		if h.bugs.followerReads {
			break
		}
		m := h.members[j]
		if m == nil || h.memberInc[j] != h.procs[j].Incarnation() && h.procs[j].Up() || m.Status().Epoch > epoch {
			// Being started (its durable epoch is unknown here), or a
			// newer epoch exists.
			h.skipped++
			return
		}
	}
	now := h.s.Now()
	id := h.hist.Invoke(0, linearizability.KVGet(name), now)
	_, found := h.members[i].Image().TopicByName(name)
	out := linearizability.KVOutput{Found: found}
	if found {
		out.Value = kraftTopicValue
	}
	h.hist.Complete(id, out, now)
	h.reads++
}

// retriable reports whether an answer means "try again elsewhere or later".
func retriable(code int16) bool {
	return code == kerr.NotController.Code || code == kerr.RequestTimedOut.Code
}

func (c *kraftAdmin) done(what string) {
	c.opBusy = false
	c.completed++
	c.h.s.Trace("admin:done " + what)
}

func (c *kraftAdmin) retry(what string, r kmsg.Response) {
	c.retries++
	c.e.Logger().Debug("retrying", "op", what, "resp", fmt.Sprintf("%T", r))
}

// retryOp retries a topic operation after a tick; topic operations stop at
// the heal, and one interrupted then is abandoned.
func (c *kraftAdmin) retryOp(what string, r kmsg.Response, again func()) {
	c.retry(what, r)
	c.e.AfterFunc(kraftAdminTick, func() {
		if c.h.s.Now() >= c.h.opsUntil {
			c.opBusy = false
			return
		}
		again()
	})
}
