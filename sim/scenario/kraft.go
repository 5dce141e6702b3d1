package scenario

import (
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/linearizability"
	"github.com/strata-log/strata/nemesis"
	"github.com/strata-log/strata/nemesis/simworld"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/check"
)

// KRaft runs the "kraft" shape: three controller voters and two brokers
// as observers (see runKRaftWith).
func KRaft(o Options) sim.Summary {
	sum, _ := runKRaftWith(o, kraftShape3, kraftBugs{})
	return sum
}

// KRaft5 runs the "kraft5" shape: five controller voters and two brokers
// as observers.
func KRaft5(o Options) sim.Summary {
	sum, _ := runKRaftWith(o, kraftShape5, kraftBugs{})
	return sum
}

// kraftShape is a cluster shape of the kraft scenario: voters run the
// metadata quorum and the controller; observers (brokers, node ids not
// among the voters) fetch and apply the metadata log but never vote.
type kraftShape struct {
	name      string
	voters    int
	observers int
}

var (
	kraftShape3 = kraftShape{name: "kraft", voters: 3, observers: 2}
	kraftShape5 = kraftShape{name: "kraft5", voters: 5, observers: 2}
)

// kraftObserverBaseID is added to an observer's index (from 1) to make its
// node id: brokers 101, 102, ... (the admin's registered broker is
// kraftBrokerID).
const kraftObserverBaseID = 100

// runKRaft runs the "kraft" shape and also returns its harness, for tests.
func runKRaft(o Options) (sim.Summary, *kraftHarness) {
	return runKRaftWith(o, kraftShape3, kraftBugs{})
}

// kraftBugs plants bugs in the harness so that tests can prove the checks
// catch them. The zero value plants none. The view bugs change only what
// the log checker reads (kraftLogReader), never a member.
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
	// divergentBatch makes the checker read the batch at offset
	// kraftCorruptOffset of member c2 with a different first record: a log
	// that diverged under the same (epoch, end offset) key.
	divergentBatch bool
	// leaderTruncates hides the last batch of a leading member's log at
	// every other check: a leader whose log shrinks within its epoch.
	leaderTruncates bool
	// staleLeader hides, at the check that first sees a member lead an
	// epoch, the last batch known committed and everything after it: a
	// leader elected without a committed batch.
	staleLeader bool
	// secondLeader makes c2's observer report, for the first epoch it
	// sees a leader of, another node as that leader: two leaders in one
	// epoch, as the transition checkers see it.
	secondLeader bool
	// imageFork makes c2's observer report a different digest for its
	// images: two images at one position.
	imageFork bool
	// wipeVoters lets the nemesis wipe voters' disks too, which the
	// scenario does not promise to survive (see runKRaftWith): a voter
	// that forgot its log and its vote helps elect a second leader.
	wipeVoters bool
}

// kraftCorruptOffset is the base offset of the batch kraftBugs.divergentBatch
// corrupts: low enough that every run has it.
const kraftCorruptOffset = 3

// runKRaftWith runs one shape of the scenario with planted bugs.
//
// The cluster: shape.voters controller members (Options.Nodes overrides
// the count) named c1, c2, ... with node ids 1, 2, ..., and shape.observers
// broker members (Options.Observers overrides it) named b1, b2, ... with
// node ids 101, 102, ..., all under the nemesis. An admin client registers
// and heartbeats one broker and creates and deletes a few topics through
// whichever member is the active controller. On every transition, as it
// happens (sim/check, fed by kraft.Observer):
//
//   - at most one leader per epoch, across every member's view (a leader's
//     own and its followers' and observers');
//   - a member's applied position never goes backwards within an
//     incarnation (a restart replays the committed log from the start);
//   - two images at the same applied position, on any members at any time,
//     have the same digest.
//
// And every 10 ms of virtual time, reading every member's log:
//
//   - the Raft log checks of kraft_log.go: log matching, leader
//     append-only, one committed log (state-machine safety), leader
//     completeness, and every image a replay of a committed prefix.
//
// Liveness: after the final heal, within the heal phase (15 s by default)
// an active controller exists and every member's image, observers
// included, converges to the same position and digest.
//
// Linearizability: every topic operation attempt of the admin client and
// every describe read (see kraftAdmin.read) is recorded in a
// linearizability.History against virtual time, and after liveness the
// history is checked against linearizability.KVModel: CreateTopics is
// CreateIfAbsent, DeleteTopics is Delete, a describe is Get. A history that
// is not linearizable fails the run.
//
// The admin client calls Member.Submit on the active member directly
// instead of going through a broker's network listener.
func runKRaftWith(o Options, shape kraftShape, bugs kraftBugs) (sim.Summary, *kraftHarness) {
	o = o.withDefaults(shape.voters, 20*time.Second, 15*time.Second)
	observers := shape.observers
	switch {
	case o.Observers > 0:
		observers = o.Observers
	case o.Observers < 0:
		observers = 0
	}
	n := o.Nodes + observers
	s := sim.New(sim.Config{Seed: o.Seed, Log: o.Log, BuggifyRate: o.buggifyRate()})
	h := &kraftHarness{
		s:         s,
		n:         n,
		voters:    o.Nodes,
		dirty:     make([]bool, n),
		members:   make([]*kraft.Member, n),
		memberInc: make([]uint64, n),
		checkers:  check.NewSet(check.All()...),
		restarts:  make([]uint64, n),
		opsUntil:  o.FaultPhase,
		hist:      linearizability.NewHistory(),
		unknown:   map[string]int{},
		bugs:      bugs,
		logs:      newKRaftLogChecker(n),
	}
	for i := 0; i < n; i++ {
		if i < o.Nodes {
			h.names = append(h.names, fmt.Sprintf("c%d", i+1))
		} else {
			h.names = append(h.names, fmt.Sprintf("b%d", i-o.Nodes+1))
		}
	}
	voters := map[quorum.NodeID]string{}
	for i := 0; i < o.Nodes; i++ {
		voters[quorum.NodeID(i+1)] = h.name(i) + ":9093"
	}
	for i := 0; i < n; i++ {
		i := i
		id := quorum.NodeID(i + 1)
		if i >= o.Nodes {
			id = quorum.NodeID(kraftObserverBaseID + i - o.Nodes + 1)
		}
		cfg := kraft.Config{NodeID: id, Voters: kraft.ParseVoters(voters), ClusterID: kraftClusterID}
		// Swarm: two seeds in three snapshot often and roll small
		// segments, so that snapshot writes, log trimming, segment
		// deletion and FetchSnapshot installs run under the faults.
		if every := kraftSnapshotEvery[o.Seed%uint64(len(kraftSnapshotEvery))]; every > 0 {
			cfg.SnapshotIntervalRecords = every
			cfg.LogSegmentBytes = 4 << 10
		}
		// Every member runs the whole server, as a node does: voters
		// with the controller role, observers as brokers (which
		// register and heartbeat like the real ones).
		scfg := server.Config{NodeID: int32(id), ClusterID: kraftClusterID, Controller: i < o.Nodes, Broker: i >= o.Nodes, Quorum: cfg}
		if scfg.Broker {
			scfg.BrokerListener = broker.Config{ListenAddr: h.name(i) + ":9092", AdvertisedHost: h.name(i)}
		}
		p := s.AddProcess(h.name(i), func(e env.Env) {
			h.members[i] = nil
			h.procs[i].Disk().DeclareSurvivable(indexFilesSurvivable) // a replaced disk forgets it
			scfg := scfg
			scfg.Quorum.Observer = h.observer(i)
			srv, err := server.Start(e, scfg)
			if err != nil {
				e.Logger().Error("server start failed", "err", err)
				s.Trace(fmt.Sprintf("%s:start-failed:%v", h.name(i), err))
				h.superviseRestart(i)
				return
			}
			h.members[i] = srv.Member()
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
		// MaxDown follows the voters: a majority of them stays up but
		// in outages, which the Raft survives (it fsyncs before it
		// votes or acknowledges). Observers may come back with an empty
		// disk (they refetch the log); voters may not: core/quorum has
		// no way yet to keep a voter that lost its log and its vote from
		// voting (KIP-853's directory ids), so a wiped voter could elect
		// a leader missing committed records.
		var wipeable []int
		first := o.Nodes
		if bugs.wipeVoters {
			first = 0
		}
		for i := first; i < n; i++ {
			wipeable = append(wipeable, i)
		}
		mix = nemesis.DrawMixFor(s.Rand("nemesis/mix"), o.Nodes, nemesis.Promises{Outages: true, Voters: o.Nodes, Wipeable: wipeable})
	}
	nemesis.Start(simworld.New(s, h.procs), mix, o.FaultPhase)
	h.hostile = maybeStartHostilePeer(s, o, h.hostileConfig(o))
	h.scheduleCheck()

	sum := func(err error) (sim.Summary, *kraftHarness) {
		m := s.Summarize(shape.name)
		m.Err = err
		return m, h
	}
	if err := kraftRunUntil(s, o.FaultPhase); err != nil {
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
		if err := kraftRunUntil(s, s.Now()+kraftCheckEvery); err != nil {
			return sum(err)
		}
	}
	s.Trace("kraft:converged " + h.describe())
	if err := h.logs.checkPendingAtEnd(); err != nil {
		return sum(err)
	}
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

// kraftMaxEventsPerInstant bounds the events delivered at one virtual
// instant. A run past it is livelocked (an event that reschedules itself at
// once, forever): without the bound, RunUntil would never return and the
// seed would hang instead of failing.
const kraftMaxEventsPerInstant = 1_000_000

// kraftRunUntil is s.RunUntil(t) with a livelock guard: it fails the run,
// as a *sim.Failure, when more than kraftMaxEventsPerInstant events arrive
// at one virtual instant.
func kraftRunUntil(s *sim.Sim, t time.Duration) (err error) {
	reached := false
	s.At(t, "kraft:run-until", func() { reached = true })
	defer func() {
		if r := recover(); r != nil {
			err = &sim.Failure{At: s.Now(), Value: r, Stack: string(debug.Stack())}
		}
	}()
	instant, same := s.Now(), 0
	for !reached && s.Step() {
		if s.Now() != instant {
			instant, same = s.Now(), 0
			continue
		}
		same++
		if same > kraftMaxEventsPerInstant {
			return &sim.Failure{At: s.Now(), Value: fmt.Sprintf("livelock: more than %d events at virtual time %v without time advancing", kraftMaxEventsPerInstant, s.Now())}
		}
	}
	// Events due at t after the marker.
	return s.RunUntil(t)
}

// observer feeds member i's transitions, in the incarnation being
// started, to the checkers; a finding fails the run in the event that
// completed it.
func (h *kraftHarness) observer(i int) *kraft.Observer {
	inc := h.procs[i].Incarnation()
	observe := func(e check.Event) {
		e.At, e.Node, e.Inc = h.s.Now(), h.name(i), inc
		if f := h.checkers.Observe(e); f != nil {
			panic(f)
		}
		h.checkNow(i)
	}
	return &kraft.Observer{
		LogChanged: func() { h.checkNow(i) },
		RoleChanged: func(st quorum.SoftState) {
			leader := int32(-1)
			if st.LeaderID != quorum.NoNode {
				leader = int32(st.LeaderID)
				if h.bugs.secondLeader && h.name(i) == "c2" {
					leader += 1000
				}
				h.s.Trace(fmt.Sprintf("kraft:leader epoch=%d node=%d seen-by=%s", st.Epoch, st.LeaderID, h.name(i)))
			}
			observe(check.Event{Kind: check.RoleChange, Role: st.Role.String(), Epoch: st.Epoch, Leader: leader})
		},
		Applied: func(img *meta.Image) {
			pos, d := img.Position(), img.Digest()
			if h.bugs.imageFork && h.name(i) == "c2" {
				d[0] ^= 1
			}
			observe(check.Event{Kind: check.Apply, Offset: pos.Offset, PosEpoch: pos.Epoch, Digest: hex.EncodeToString(d[:])})
		},
	}
}

type kraftHarness struct {
	s           *sim.Sim
	checkQueued bool   // a checkNow is pending
	dirty       []bool // the members checkNow will check
	n           int    // members: voters, then observers
	voters      int
	names       []string
	procs       []*sim.Process
	// members are the latest members started, nil if its start failed.
	members []*kraft.Member
	// memberInc is the incarnation members[i] belongs to: between a
	// restart and the new incarnation's start event, members[i] is the
	// dead incarnation's.
	memberInc []uint64
	client    *kraftAdmin

	// checkers see every member's transitions (observer).
	checkers *check.Set
	restarts []uint64      // incarnation a supervisor restart is scheduled for (+1), 0 for none
	opsUntil time.Duration // the admin issues topic operations until then
	logs     *kraftLogChecker
	checks   uint64 // checks run

	// hist is the admin client's history of topic operations and describe
	// reads; unknown counts, per topic name, the attempts whose outcome
	// is unknown (see kraftUnknownBudget).
	hist    *linearizability.History
	unknown map[string]int
	reads   int // describe reads recorded
	skipped int // describe reads left out: freshness not provable
	bugs    kraftBugs
	// hostile is the run's hostile peer (hostile.go), nil when the seed
	// runs without.
	hostile *hostilePeer
}

// hostileConfig aims the hostile peer at the voters' controller
// listeners, naming the admin's broker and the observers.
func (h *kraftHarness) hostileConfig(o Options) hostileConfig {
	cfg := hostileConfig{clusterID: kraftClusterID, topic: "t0", until: o.FaultPhase, brokers: []int32{kraftBrokerID}}
	for i := 0; i < h.voters; i++ {
		cfg.targets = append(cfg.targets, hostileTarget{addr: h.name(i) + ":9093", id: int32(i + 1)})
	}
	for i := h.voters; i < h.n; i++ {
		cfg.brokers = append(cfg.brokers, int32(kraftObserverBaseID+i-h.voters+1))
	}
	return cfg
}

// name is member i's process (host) name.
// kraftSnapshotEvery is the snapshot interval in records drawn per seed
// (0: only the default 20 MiB, which a run never reaches).
var kraftSnapshotEvery = []int64{0, 8, 40}

func (h *kraftHarness) name(i int) string { return h.names[i] }

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

// checkNow runs the log and image checks of member i at this virtual
// instant, after the event that changed its log, role or image: the checks
// see every transition, not samples. Changes at one instant share one
// check of the members they touched.
func (h *kraftHarness) checkNow(i int) {
	h.dirty[i] = true
	if h.checkQueued {
		return
	}
	h.checkQueued = true
	h.s.After(0, "kraft:check-transition", func() {
		h.checkQueued = false
		h.checkMembers(h.dirty)
		clear(h.dirty)
	})
}

// scheduleCheck runs the checks every kraftCheckEvery as well: they also
// supervise members that stopped on a fatal error.
func (h *kraftHarness) scheduleCheck() {
	h.s.After(kraftCheckEvery, "kraft:check", func() {
		h.check()
		h.scheduleCheck()
	})
}

// check runs the safety checks against every running member.
func (h *kraftHarness) check() { h.checkMembers(nil) }

// checkMembers runs the safety checks against the running members that
// only names (every one when only is nil).
func (h *kraftHarness) checkMembers(only []bool) {
	h.checks++
	// The last batch known committed before this check: a member first
	// seen leading now was elected after it was committed.
	ckpt := h.logs.committedLast()
	// Image positions are checked after every log was read, so that the
	// committed batches of this check are known.
	var applied []kraftMemberPos
	for i := range h.procs {
		m := h.member(i)
		if m == nil || only != nil && !only[i] {
			continue
		}
		st := m.Status()
		if st.Err != nil {
			h.superviseRestart(i)
		}
		pos := st.Applied
		r := h.logReader(i, m, ckpt)
		h.checkLog(i, r, r.view(), ckpt)
		applied = append(applied, kraftMemberPos{i, pos})
	}
	h.logs.recheckPending()
	for _, a := range applied {
		h.checkApplied(a.i, a.pos)
	}
}

type kraftMemberPos struct {
	i   int
	pos meta.Position
}

// logReader returns the reader of member i's log for this check, with the
// planted view bugs.
func (h *kraftHarness) logReader(i int, m *kraft.Member, ckpt quorum.OffsetAndEpoch) kraftLogReader {
	r := kraftLogReader{m: m, cut: -1}
	b := h.bugs
	if !b.divergentBatch && !b.leaderTruncates && !b.staleLeader {
		return r
	}
	if b.divergentBatch && i == 1 {
		r.corrupt = func(b quorum.Batch) quorum.Batch {
			if b.BaseOffset != kraftCorruptOffset {
				return b
			}
			recs := append([][]byte(nil), b.Records...)
			recs[0] = append(append([]byte(nil), recs[0]...), 0xff)
			b.Records = recs
			return b
		}
	}
	v := m.LogView()
	if !v.Started || v.Role != quorum.RoleLeader {
		return r
	}
	ml := h.logs.members[i]
	firstLead := ml.inc != h.procs[i].Incarnation() || ml.leading != v.Epoch
	switch {
	case b.leaderTruncates && h.checks%2 == 1:
		if last, ok := m.LogBatchEndingAt(v.EndOffset.Offset); ok {
			r.cut = last.BaseOffset
		}
	case b.staleLeader && firstLead && ckpt.Offset > 0:
		if c, ok := m.LogBatchEndingAt(ckpt.Offset); ok {
			r.cut = c.BaseOffset
		}
	}
	return r
}

// superviseRestart restarts member i's process a little later, unless it
// restarted meanwhile: what a process supervisor does with a member that
// stopped on a fatal error (a failed fsync).
func (h *kraftHarness) superviseRestart(i int) {
	superviseRestart(h.s, h.procs[i], &h.restarts[i], h.name(i), kraftSupervisorDelay)
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
			out += fmt.Sprintf(" %s=down", h.name(i))
			continue
		}
		st := m.Status()
		out += fmt.Sprintf(" %s={leader=%d epoch=%d active=%v applied=%d/%d topics=%d err=%v}",
			h.name(i), st.Leader, st.Epoch, st.ActiveController, st.Applied.Offset, st.Applied.Epoch, m.Image().NumTopics(), st.Err)
	}
	if h.hostile != nil {
		out += fmt.Sprintf(" hostile={%s}", h.hostile)
	}
	lc := h.logs
	out += fmt.Sprintf(" log={committed=%d batches=%d verified=%d}", lc.committedEnd(), len(lc.batches), lc.verified)
	if c := h.client; c != nil {
		out += fmt.Sprintf(" admin={ok=%d retries=%d forwarded=%d reads=%d skipped=%d ops=%d unknown=%d}", c.completed, c.retries, c.forwarded, h.reads, h.skipped, h.hist.Len(), h.hist.UnknownLen())
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
	forwarded int // topic operation attempts sent through a forwarding member
	// configTopicReady is set once kraftConfigTopic exists.
	configTopicReady bool
}

// kraftForwardOneIn: one topic operation attempt in this many goes through
// a follower or an observer, which forwards it to the leader.
const kraftForwardOneIn = 3

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
	switch {
	case c.e.Rand().IntN(3) == 0:
		if c.e.Rand().IntN(4) == 0 {
			c.readConfig()
		} else {
			c.read(kraftTopics[c.e.Rand().IntN(len(kraftTopics))])
		}
	case c.opBusy || c.brokerEpoch < 0 || c.h.s.Now() >= c.h.opsUntil:
	case !c.configTopicReady:
		c.createConfigTopic()
	case c.e.Rand().IntN(4) == 0:
		c.configOp()
	default:
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
	c.submitOp(req, false, nil, func(r kmsg.Response, _, _ bool) { done(r) })
}

// via picks the member a request goes to: the active controller (-1 when
// there is none), or with forward a running member that is not active and
// follows a leader other than itself, so that its Submit forwards the
// request to that leader; forwarded reports which.
func (c *kraftAdmin) via(forward bool) (i int, forwarded bool) {
	h := c.h
	active := h.active()
	if active < 0 || !forward {
		return active, false
	}
	var cands []int
	for j := range h.procs {
		m := h.member(j)
		if j == active || m == nil || h.procs[j].Paused() {
			continue
		}
		st := m.Status()
		if st.Err == nil && !st.ActiveController && st.Leader != quorum.NoNode && st.Leader != st.Quorum.ID {
			cands = append(cands, j)
		}
	}
	if len(cands) == 0 {
		return active, false
	}
	return cands[c.e.Rand().IntN(len(cands))], true
}

// submitOp is submit for a topic operation: sent runs when the request
// is handed to a member, and done also learns whether the request was sent
// at all (with no active controller it is not, and has no effect) and
// whether it went through a member that forwards it to the leader. With
// forward set, the request goes to a running member that is not the
// active controller but knows a leader, when there is one, and that member
// forwards it (Member.Submit).
func (c *kraftAdmin) submitOp(req kmsg.Request, forward bool, sent func(), done func(r kmsg.Response, wasSent, forwarded bool)) {
	c.seq++
	id := c.seq
	finished := false
	i, forwarded := c.via(forward)
	finish := func(r kmsg.Response) {
		if finished {
			return
		}
		finished = true
		done(r, true, forwarded)
	}
	if i < 0 {
		c.e.Post(func() { done(nil, false, false) })
		return
	}
	if sent != nil {
		sent()
	}
	name := kmsg.NameForKey(req.Key())
	via := ""
	if forwarded {
		via = " forwarded"
		c.forwarded++
	}
	c.h.s.Trace(fmt.Sprintf("admin:req=%d %s to=%s%s", id, name, c.h.name(i), via))
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
//   - NOT_CONTROLLER is unknown (Timeout). Sent directly, the client only
//     sends to a member whose controller is active, so the answer comes
//     from Controller.Handle
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
//   - with no active controller the request is never sent: Discard;
//   - a forwarded request (one in kraftForwardOneIn goes through a
//     follower or observer, see submitOp) may also come back
//     REQUEST_TIMED_OUT from the forwarder (its timeout, or too many
//     requests forwarded) or NOT_CONTROLLER (connection to the leader lost,
//     leader changed) after the leader acted on it: both unknown. A
//     forwarder sends to the leader it knows, which may be a deposed one
//     whose controller has not noticed yet: it answers
//     TOPIC_ALREADY_EXISTS or UNKNOWN_TOPIC_OR_PARTITION from its stale
//     image without committing anything (as Kafka's controller does), which
//     is not linearizable (seed 204). So a forwarded error answer is
//     Discard: the request wrote nothing, and only its read is unchecked.
//     A forwarded success comes only after the commit and is checked.
func (c *kraftAdmin) attempt(name string, in linearizability.KVInput, req kmsg.Request, code func(kmsg.Response) (int16, bool), okErr int16, errOut error, again func()) {
	c.attemptVia(name, in, req, true, code, okErr, errOut, again)
}

// attemptVia is attempt; mayForward false keeps the request off the
// forwarding path.
func (c *kraftAdmin) attemptVia(name string, in linearizability.KVInput, req kmsg.Request, mayForward bool, code func(kmsg.Response) (int16, bool), okErr int16, errOut error, again func()) {
	h := c.h
	if h.unknown[name] >= kraftUnknownBudget || h.s.Now() >= h.opsUntil {
		c.opBusy = false
		return
	}
	var id linearizability.OpID
	recorded := false
	forward := c.e.Rand().IntN(kraftForwardOneIn) == 0 && mayForward
	c.submitOp(req, forward, func() {
		id = h.hist.Invoke(0, in, h.s.Now())
		if h.bugs.ackCreateEarly && in.Op == linearizability.KVOpCreateIfAbsent {
			h.hist.Complete(id, linearizability.KVOutput{}, h.s.Now())
			recorded = true
		}
	}, func(r kmsg.Response, sent, forwarded bool) {
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
		case !ok || cd == kerr.NotController.Code || forwarded && cd == kerr.RequestTimedOut.Code:
			h.hist.Timeout(id)
			h.unknown[name]++
		case cd == 0:
			h.hist.Complete(id, linearizability.KVOutput{}, h.s.Now())
			outcome = "ok"
		case forwarded:
			// A definite error through a forwarder may come from a deposed
			// controller's stale image (see above): it wrote nothing.
			h.hist.Discard(id)
			outcome = "discarded"
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

// The config workload: IncrementalAlterConfigs SETs kraftConfigKey on
// kraftConfigTopic, a topic the client creates once and never deletes,
// to one of a few values; the history records it as a Put of
// kraftConfigHistKey, and describe reads of the key from the image
// (readConfig) as Gets. A config change goes to the active controller
// only, never through a forwarder: a SET to the value already held writes
// nothing, and a deposed controller would answer it from its stale image.
const (
	kraftConfigTopic   = "settings"
	kraftConfigKey     = "retention.ms"
	kraftConfigHistKey = kraftConfigTopic + "/" + kraftConfigKey
	// kraftNoErrorCode is an error code no response carries.
	kraftNoErrorCode = int16(-32768)
)

var kraftConfigValues = []string{"60000", "120000", "180000", "240000"}

// createConfigTopic creates kraftConfigTopic, outside the history (its
// existence is not checked); the config workload starts once it exists.
func (c *kraftAdmin) createConfigTopic() {
	c.opBusy = true
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = kraftConfigTopic, 1, 1
	req.Topics = []kmsg.CreateTopicsRequestTopic{t}
	c.submit(req, func(r kmsg.Response) {
		c.opBusy = false
		resp, ok := r.(*kmsg.CreateTopicsResponse)
		if ok && len(resp.Topics) == 1 && (resp.Topics[0].ErrorCode == 0 || resp.Topics[0].ErrorCode == kerr.TopicAlreadyExists.Code) {
			c.configTopicReady = true
			c.h.s.Trace("admin:config-topic-ready")
			return
		}
		c.retry("create "+kraftConfigTopic, r)
	})
}

// configOp sets kraftConfigKey to a random value.
func (c *kraftAdmin) configOp() {
	if c.h.unknown[kraftConfigHistKey] >= kraftUnknownBudget {
		return
	}
	c.opBusy = true
	c.setConfig(kraftConfigValues[c.e.Rand().IntN(len(kraftConfigValues))])
}

func (c *kraftAdmin) setConfig(value string) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, kraftConfigTopic
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op, cfg.Value = kraftConfigKey, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{cfg}
	req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
	c.attemptVia(kraftConfigHistKey, linearizability.KVPut(kraftConfigHistKey, value), req, false, func(r kmsg.Response) (int16, bool) {
		resp, ok := r.(*kmsg.IncrementalAlterConfigsResponse)
		if !ok || len(resp.Resources) != 1 {
			return 0, false
		}
		return resp.Resources[0].ErrorCode, true
	}, kraftNoErrorCode, nil, func() { c.setConfig(value) })
}

// readConfig records a describe of kraftConfigKey from the image, under the
// same freshness condition as read.
func (c *kraftAdmin) readConfig() {
	c.readKey(kraftConfigHistKey, func(img *meta.Image) (string, bool) {
		return img.ConfigValue(meta.ConfigResource{Type: meta.ConfigResourceTopic, Name: kraftConfigTopic}, kraftConfigKey)
	})
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
	c.readKey(name, func(img *meta.Image) (string, bool) {
		_, found := img.TopicByName(name)
		return kraftTopicValue, found
	})
}

// readKey records a read of the history key key, whose value get reads
// from an image, when the read is provably fresh (see read).
func (c *kraftAdmin) readKey(key string, get func(*meta.Image) (string, bool)) {
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
	id := h.hist.Invoke(0, linearizability.KVGet(key), now)
	value, found := get(h.members[i].Image())
	out := linearizability.KVOutput{Found: found}
	if found {
		out.Value = value
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
