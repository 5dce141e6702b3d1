package scenario

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/linearizability"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/kclient"
)

// The groups scenario (issue 12): the replicated scenario's cluster,
// workload, nemesis and checks, plus a consumer group of simulated
// members (kclient.GroupMember: the classic protocol, eager range
// assignment, auto-commit) that join, leave, crash, pause past their
// session timeout and, for static members, restart within it, while the
// harness strikes the group's coordinator (the leader of its
// __consumer_offsets partition) when a member sends a commit.
//
// Checks, each on the observation that shows it:
//
//   - (j) one owner: in a generation, no partition is assigned to two
//     members (a static member's incarnations count as one);
//   - (k) commits hold: an acknowledged commit is never lost or moved
//     back: an OffsetFetch sent after it was acknowledged returns it or
//     more, and no later commit is acknowledged lower (there are no
//     admin resets in the workload);
//   - (l) fenced commits: a commit is acknowledged only for partitions
//     the member was assigned in the commit's generation, and only if no
//     later generation had been assigned before it was sent;
//   - (m) group liveness: after the heal the group settles: every member
//     running and stable in one generation for a session timeout, the
//     coordinator describing it Stable with exactly those members, every
//     partition owned by exactly one member, every member caught up and
//     its commits at the final high watermark; and every record of the
//     final read was consumed by some member (at least once).
//
// The members' fetches also go to the LogHistory (the log checks (b),
// (c), (e) apply to them as to any reader) and to the porcupine model.

// Group scenario bounds.
const (
	groupName = "sim-group"
	// groupOffsetsPartitions is offsets.topic.num.partitions: few, so
	// that __consumer_offsets does not dominate the run's cost.
	groupOffsetsPartitions = 3
	// groupMinSession is group.min.session.timeout.ms, lowered so that
	// sessions (1-3 s) expire within the fault phase.
	groupMinSession        = 500 * time.Millisecond
	groupInitialDelay      = 100 * time.Millisecond
	groupRebalanceTimeout  = 3 * time.Second
	groupActionGapMin      = 300 * time.Millisecond
	groupActionGapMax      = 2 * time.Second
	groupDynamicMembers    = 2
	groupStaticMembers     = 2
	groupStrikeProbability = 4 // one commit send in this many may strike
)

// groupMember is one member's process.
type groupMember struct {
	name     string
	instance string // static: its group.instance.id
	session  time.Duration
	commit   time.Duration
	// cooperative and upgrading are the member's assignor options
	// (kclient.GroupConfig).
	cooperative, upgrading bool
	proc                   *sim.Process
	e                      env.Env
	gm                     *kclient.GroupMember
	// up is false while the harness keeps it down (crashed, left).
	up bool
	// busyUntil: no new action on the member before.
	busyUntil time.Duration
	reader    string
	reads     map[linearizability.LogPartition]*logRead
}

// identity is who owns partitions: the instance id of a static member
// (its incarnations replace one another), the member id of a dynamic one.
func (m *groupMember) identity(memberID string) string {
	if m.instance != "" {
		return "instance " + m.instance
	}
	return memberID
}

// groupCommitAck is an acknowledged commit; reset marks an admin's
// reset, which may move the offset back.
type groupCommitAck struct {
	offset int64
	at     time.Duration
	who    string
	reset  bool
}

// groupRun is the group part of a groups run.
type groupRun struct {
	h       *logHarness
	r       *rand.Rand
	members []*groupMember
	strikes controllerStrikes
	// protocols is the seed's assignor draw: 0 range, 1 cooperative
	// sticky, 2 mixed.
	protocols int
	// resetRand draws the seed's admin reset (nil: none); resets counts
	// the partitions reset.
	resetRand *rand.Rand
	resets    int
	// resetTo is what the reset asks for, per partition.
	resetTo map[linearizability.LogPartition]int64

	// owners[generation][partition] is who was assigned it (j); held
	// [member id][generation] the member's assignment (l).
	owners map[int32]map[linearizability.LogPartition]string
	held   map[string]map[int32][]linearizability.LogPartition
	// plans[generation][owner] are the leaders' plans for the owner
	// (every one sent for that generation number).
	plans map[int32]map[string][][]linearizability.LogPartition
	// assignedGens lists (generation, first time a member was assigned
	// in it), in order of observation (l).
	assignedGens []struct {
		gen int32
		at  time.Duration
	}
	acks map[linearizability.LogPartition][]groupCommitAck
	// consumed[p][offset] is the value a member read there (m).
	consumed map[linearizability.LogPartition]map[int64]string

	checker  *kclient.Client
	describe *kmsg.DescribeGroupsResponse
	final    map[linearizability.LogPartition]int64
	// finalSent is when the OffsetFetch that brought final was sent.
	finalSent time.Duration
	asking    bool
	// settledSince is when the group was last seen settling (m), and
	// settledGen its generation then.
	settledSince time.Duration
	settledGen   int32
	why          string
	// counters for the summary and the tests.
	actions, commitsAcked, commitsRefused, assignments int
	// incremental counts a cooperative member's partial revocations
	// (the first phase of an incremental rebalance).
	incremental int
}

func newGroupRun(h *logHarness) *groupRun {
	g := &groupRun{h: h, r: h.s.Rand("groups/members"),
		owners:     map[int32]map[linearizability.LogPartition]string{},
		held:       map[string]map[int32][]linearizability.LogPartition{},
		plans:      map[int32]map[string][][]linearizability.LogPartition{},
		acks:       map[linearizability.LogPartition][]groupCommitAck{},
		consumed:   map[linearizability.LogPartition]map[int64]string{},
		settledGen: -1}
	g.strikes.r = h.s.Rand("groups/coordinator-strike")
	g.strikes.on = g.strikes.r.IntN(2) == 0 && !h.o.NoFaults
	for i := 0; i < groupDynamicMembers+groupStaticMembers; i++ {
		m := &groupMember{name: fmt.Sprintf("g%d", i+1), up: true,
			session: time.Duration(1000+g.r.IntN(2000)) * time.Millisecond,
			commit:  time.Duration(100+g.r.IntN(900)) * time.Millisecond}
		if i >= groupDynamicMembers {
			m.instance = fmt.Sprintf("static-%d", i+1)
		}
		g.members = append(g.members, m)
	}
	// The assignor, from a stream of its own: eager range for all, the
	// cooperative sticky one for all, or a group in a rolling upgrade
	// (two members offer both and rebalance eagerly), which must agree
	// on range while a range-only member is in it.
	switch g.protocols = h.s.Rand("groups/protocol").IntN(3); g.protocols {
	case 1:
		for _, m := range g.members {
			m.cooperative = true
		}
	case 2:
		g.members[0].upgrading, g.members[2].upgrading = true, true
	}
	return g
}

func (g *groupRun) String() string {
	var parts []string
	for _, m := range g.members {
		kind := "dynamic"
		if m.instance != "" {
			kind = "static"
		}
		if m.cooperative {
			kind += "/cooperative"
		}
		if m.upgrading {
			kind += "/upgrading"
		}
		parts = append(parts, fmt.Sprintf("%s:%s/session=%v/commit=%v", m.name, kind, m.session, m.commit))
	}
	return fmt.Sprintf("%s strikes=%v", strings.Join(parts, " "), g.strikes.on)
}

func (g *groupRun) topics() []string {
	var out []string
	for _, t := range g.h.swarm.topics {
		out = append(out, t.name)
	}
	return out
}

// start starts the members, the checker's client and the actions.
func (g *groupRun) start() {
	h := g.h
	for _, m := range g.members {
		m := m
		m.proc = h.s.AddProcess(m.name, func(e env.Env) {
			m.e = e
			m.reader = fmt.Sprintf("%s#%d", m.name, m.proc.Incarnation())
			m.reads = map[linearizability.LogPartition]*logRead{}
			c := kclient.New(e, kclient.Config{ClientID: m.name, Bootstrap: h.bootstrap()})
			m.gm = kclient.NewGroupMember(c, kclient.GroupConfig{Group: groupName, InstanceID: m.instance, Topics: g.topics(),
				Cooperative: m.cooperative, Upgrading: m.upgrading, SessionTimeout: m.session, RebalanceTimeout: groupRebalanceTimeout, HeartbeatInterval: m.session / 4, CommitInterval: m.commit,
				Consumer: kclient.ConsumerConfig{MaxWait: 100 * time.Millisecond, OnFetch: func(ev kclient.FetchEvent) { g.onFetch(m, ev) }},
				OnEvent:  func(ev kclient.GroupEvent) { g.onEvent(m, ev) }})
		})
		h.clients = append(h.clients, m.proc)
		m.proc.Start()
	}
	h.newLogClient("gcheck", nil, func(e env.Env, c *kclient.Client) { g.checker = c })
	if !h.o.NoFaults {
		g.scheduleAction()
		g.scheduleReset()
	}
}

// scheduleAction does something to one member every so often during the
// fault phase: a dynamic member leaves, crashes or pauses; a static
// member restarts within its session timeout, crashes for longer or
// pauses. A member that is down comes back by itself.
func (g *groupRun) scheduleAction() {
	h := g.h
	gap := drawBetween(g.r, groupActionGapMin, groupActionGapMax)
	h.s.After(gap, "groups:action", func() {
		if h.phase != logFaults {
			return
		}
		defer g.scheduleAction()
		m := g.members[g.r.IntN(len(g.members))]
		if !m.up || h.s.Now() < m.busyUntil || !m.proc.Up() {
			return
		}
		g.actions++
		frac := func(lo, hi float64) time.Duration {
			return time.Duration((lo + (hi-lo)*g.r.Float64()) * float64(m.session))
		}
		switch k := g.r.IntN(3); {
		case k == 0 && m.instance == "":
			g.down(m, "leave", frac(0.2, 2), true)
		case k == 0:
			g.down(m, "restart", frac(0.1, 0.6), false) // back within its session
		case k == 1:
			g.down(m, "crash", frac(0.2, 2.5), false)
		default:
			d := frac(0.3, 2.5)
			h.s.Fault("member-pause", fmt.Sprintf("%s %v (session %v)", m.name, d, m.session))
			m.busyUntil = h.s.Now() + d
			m.proc.Pause(d)
		}
	})
}

// down stops member m (with a LeaveGroup first if leave) and starts it
// again after d.
func (g *groupRun) down(m *groupMember, what string, d time.Duration, leave bool) {
	h := g.h
	h.s.Fault("member-"+what, fmt.Sprintf("%s for %v (session %v)", m.name, d, m.session))
	m.up = false
	m.busyUntil = h.s.Now() + d
	inc := m.proc.Incarnation()
	stop := func() {
		if m.proc.Incarnation() == inc && m.proc.Up() {
			m.proc.Kill()
		}
	}
	if leave && m.gm != nil {
		m.gm.Leave(func(err error) {
			h.s.Trace(fmt.Sprintf("groups:%s left err=%v", m.name, err))
			stop()
		})
		h.s.After(100*time.Millisecond, "groups:leave-timeout", stop)
	} else {
		stop()
	}
	h.s.After(d, "groups:member-start", func() {
		if !m.proc.Up() {
			m.proc.Start()
		}
		m.up = true
	})
}

// heal brings every member back (the heal).
func (g *groupRun) heal() {
	for _, m := range g.members {
		if !m.proc.Up() {
			m.proc.Start()
		}
		m.up = true
	}
}

func lp(tp kclient.TopicPartition) linearizability.LogPartition {
	return linearizability.LogPartition{Topic: tp.Topic, Partition: tp.Partition}
}

// virtual maps a member's monotonic instant to virtual time (clients run
// at the simulator's rate).
func (g *groupRun) virtual(m *groupMember, at time.Duration) time.Duration {
	return g.h.s.Now() - (m.e.Monotonic() - at)
}

// onEvent checks a member's group step.
func (g *groupRun) onEvent(m *groupMember, ev kclient.GroupEvent) {
	h := g.h
	g.trace(fmt.Sprintf("groups:%s %s gen=%d member=%s coord=%d parts=%v commits=%v err=%v", m.name, ev.Kind, ev.Generation, ev.MemberID, ev.Coordinator, ev.Partitions, ev.Commits, ev.Err))
	switch ev.Kind {
	case kclient.Assigned:
		g.assigned(m, ev)
	case kclient.Revoked:
		if m.cooperative && len(ev.Partitions) > 0 && h.phase == logFaults {
			g.incremental++
		}
	case kclient.PlanSent:
		g.planned(ev)
		g.strikeCoordinator(ev)
	case kclient.CommitSent:
		g.strikeCoordinator(ev)
	case kclient.CommitAnswered:
		g.committed(m, ev)
	case kclient.OffsetsFetched:
		sent := g.virtual(m, ev.Sent)
		for _, c := range ev.Commits {
			p := linearizability.LogPartition{Topic: c.Topic, Partition: c.Partition}
			if a, ok := g.lastAckBefore(p, sent); ok && c.Offset < a.offset {
				h.fail(g.violation("k", "%s fetched %s's committed offset %d (sent at %v), but a commit of %d by %s was acknowledged at %v", m.name, p, c.Offset, sent, a.offset, a.who, a.at))
			}
		}
	}
}

// groupViolation is a failed group check, named like the log checks.
type groupViolation struct {
	check string
	at    time.Duration
	msg   string
}

var groupCheckNames = map[string]string{"j": "one owner", "k": "commits hold", "l": "fenced commits", "m": "group liveness"}

func (v *groupViolation) Error() string {
	return fmt.Sprintf("(%s) %s: at %v: %s", v.check, groupCheckNames[v.check], v.at, v.msg)
}

// trace folds a group observation into the trace and, with -v, prints
// it with the processes' logs.
func (g *groupRun) trace(line string) {
	g.h.s.Trace(line)
	if g.h.o.Log != nil {
		fmt.Fprintf(g.h.o.Log, "%v %s\n", g.h.s.Now(), line)
	}
}

func (g *groupRun) violation(check, format string, args ...any) error {
	return &groupViolation{check: check, at: g.h.s.Now(), msg: fmt.Sprintf(format, args...)}
}

// assigned checks (j) and records the assignment for (l).
func (g *groupRun) assigned(m *groupMember, ev kclient.GroupEvent) {
	g.assignments++
	who := m.identity(ev.MemberID)
	owners := g.owners[ev.Generation]
	if owners == nil {
		owners = map[linearizability.LogPartition]string{}
		g.owners[ev.Generation] = owners
		g.assignedGens = append(g.assignedGens, struct {
			gen int32
			at  time.Duration
		}{ev.Generation, g.h.s.Now()})
	}
	var parts []linearizability.LogPartition
	for _, tp := range ev.Partitions {
		p := lp(tp)
		parts = append(parts, p)
		if o, ok := owners[p]; ok && o != who {
			g.h.fail(g.violation("j", "%s is assigned to %s and to %s (%s) in generation %d", p, o, who, m.name, ev.Generation))
		}
		owners[p] = who
	}
	if plans, ok := g.plans[ev.Generation][who]; ok && !slices.ContainsFunc(plans, func(p []linearizability.LogPartition) bool { return slices.Equal(p, parts) }) {
		g.h.fail(g.violation("j", "%s (%s) was handed %v in generation %d, but the leader planned %v for it", m.name, who, parts, ev.Generation, plans))
	}
	if g.held[ev.MemberID] == nil {
		g.held[ev.MemberID] = map[int32][]linearizability.LogPartition{}
	}
	g.held[ev.MemberID][ev.Generation] = parts
}

// planned records a leader's assignment for (j): what the coordinator
// hands a member must be what a leader planned for it in that
// generation (a leader's plan may be sent more than once per generation
// number: a failover before it was written reruns the rebalance).
func (g *groupRun) planned(ev kclient.GroupEvent) {
	plans := g.plans[ev.Generation]
	if plans == nil {
		plans = map[string][][]linearizability.LogPartition{}
		g.plans[ev.Generation] = plans
	}
	for _, e := range ev.Plan {
		who := e.MemberID
		if e.InstanceID != "" {
			who = "instance " + e.InstanceID
		}
		var parts []linearizability.LogPartition
		for _, tp := range e.Partitions {
			parts = append(parts, lp(tp))
		}
		plans[who] = append(plans[who], parts)
	}
}

// lastAckBefore is the highest commit of p acknowledged before at since
// the last admin reset acknowledged before at (or that reset).
func (g *groupRun) lastAckBefore(p linearizability.LogPartition, at time.Duration) (groupCommitAck, bool) {
	var best groupCommitAck
	found := false
	for _, a := range g.acks[p] { // in the order acknowledged
		if a.at >= at {
			break
		}
		if a.reset || !found || a.offset > best.offset {
			best, found = a, true
		}
	}
	return best, found
}

// Admin resets (one seed in three, stream groups/reset): once during the
// fault phase every member leaves, and while the group is empty the
// admin (the checker's client) resets each partition's committed offset
// back to half of the last acknowledged commit with a simple OffsetCommit
// (generation -1, no member id), as kafka-consumer-groups
// --reset-offsets does; the members come back 3-6 s later and read again
// from there. (k) takes each reset sent as the new floor.
const (
	groupResetFirstMin = 3 * time.Second
	groupResetFirstMax = 15 * time.Second
	groupResetAfter    = 600 * time.Millisecond
	groupResetRetries  = 15
)

func (g *groupRun) scheduleReset() {
	r := g.h.s.Rand("groups/reset")
	if r.IntN(3) != 0 || g.h.o.NoFaults {
		return
	}
	g.resetRand = r
	at := drawBetween(r, groupResetFirstMin, groupResetFirstMax)
	g.h.s.After(at, "groups:reset", g.tryReset)
}

// tryReset empties the group once every member is up and idle.
func (g *groupRun) tryReset() {
	h := g.h
	if h.phase != logFaults {
		return
	}
	for _, m := range g.members {
		if !m.up || h.s.Now() < m.busyUntil || !m.proc.Up() || m.gm == nil {
			h.s.After(500*time.Millisecond, "groups:reset", g.tryReset)
			return
		}
	}
	h.s.Fault("group-reset", "every member leaves; the admin resets the committed offsets")
	away := time.Duration(3000+g.resetRand.IntN(3000)) * time.Millisecond
	for _, m := range g.members {
		g.down(m, "leave", away, true)
	}
	h.s.After(groupResetAfter, "groups:reset-commit", func() { g.resetCommit(0) })
}

// resetCommit sends the admin's simple commit to the coordinator; a
// group that is not empty yet (UNKNOWN_MEMBER_ID) or a coordinator error
// is tried again a little later.
func (g *groupRun) resetCommit(try int) {
	h, c := g.h, g.checker
	if c == nil || try >= groupResetRetries || h.phase != logFaults {
		return
	}
	again := func() { h.s.After(300*time.Millisecond, "groups:reset-commit", func() { g.resetCommit(try + 1) }) }
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorKeys = groupName, []string{groupName}
	c.DoAny(req, func(r kmsg.Response, err error) {
		node := coordinatorOf(r, err)
		g.trace(fmt.Sprintf("groups:reset try=%d coordinator=%d err=%v", try, node, err))
		if node < 0 {
			again()
			return
		}
		if g.resetTo == nil {
			// Drawn once: a retry asks for the same offsets.
			g.resetTo = map[linearizability.LogPartition]int64{}
			for _, p := range h.partitions() {
				if a, ok := g.lastAckBefore(p, h.s.Now()+1); ok && a.offset >= 2 {
					g.resetTo[p] = a.offset / 2
				}
			}
		}
		want := g.resetTo
		var commits []kclient.GroupCommit
		for _, p := range h.partitions() {
			if off, ok := want[p]; ok {
				commits = append(commits, kclient.GroupCommit{Topic: p.Topic, Partition: p.Partition, Offset: off})
			}
		}
		creq := kclient.OffsetCommitRequest(groupName, commits)
		if len(want) == 0 {
			return
		}
		// A reset may take effect from its send on, before its answer
		// arrives (groups seed 182: a member's OffsetFetch saw it while
		// the answer was on the wire), or without one: (k) takes it as
		// the floor from now (a lower floor only weakens the check).
		if !h.bugs.groups.forgetResets {
			for _, p := range h.partitions() {
				if off, ok := want[p]; ok {
					g.acks[p] = append(g.acks[p], groupCommitAck{offset: off, at: h.s.Now(), who: "the admin's reset", reset: true})
				}
			}
		}
		c.Do(node, creq, 0, func(r kmsg.Response, err error) {
			resp, ok := r.(*kmsg.OffsetCommitResponse)
			if err != nil || !ok {
				// An unknown outcome may have been applied: it is not
				// asked again.
				g.trace(fmt.Sprintf("groups:reset unknown err=%v", err))
				return
			}
			retry := false
			for _, t := range resp.Topics {
				for _, rp := range t.Partitions {
					p := linearizability.LogPartition{Topic: t.Topic, Partition: rp.Partition}
					g.trace(fmt.Sprintf("groups:reset %s to %d code=%d", p, want[p], rp.ErrorCode))
					if rp.ErrorCode != 0 {
						retry = true
						continue
					}
					g.resets++
				}
			}
			if retry {
				again()
			}
		})
	})
}

// committed checks an OffsetCommit answer: (k) and (l).
func (g *groupRun) committed(m *groupMember, ev kclient.GroupEvent) {
	h := g.h
	sent := g.virtual(m, ev.Sent)
	var newer int32 = -1
	for _, a := range g.assignedGens {
		if a.at < sent && a.gen > ev.Generation {
			newer = a.gen
			break
		}
	}
	for _, c := range ev.Commits {
		if c.Code != 0 {
			g.commitsRefused++
			continue
		}
		g.commitsAcked++
		p := linearizability.LogPartition{Topic: c.Topic, Partition: c.Partition}
		if !slices.Contains(g.held[ev.MemberID][ev.Generation], p) {
			h.fail(g.violation("l", "%s's commit of %s at %d was acknowledged for member %s in generation %d, which was not assigned it (assigned %v)",
				m.name, p, c.Offset, ev.MemberID, ev.Generation, g.held[ev.MemberID][ev.Generation]))
		}
		if newer >= 0 {
			h.fail(g.violation("l", "%s's commit of %s at %d in generation %d, sent at %v, was acknowledged although generation %d had been assigned before",
				m.name, p, c.Offset, ev.Generation, sent, newer))
		}
		if a, ok := g.lastAckBefore(p, sent); ok && c.Offset < a.offset {
			h.fail(g.violation("k", "%s's commit of %s at %d (sent at %v) was acknowledged, below the commit of %d by %s acknowledged at %v",
				m.name, p, c.Offset, sent, a.offset, a.who, a.at))
		}
		g.acks[p] = append(g.acks[p], groupCommitAck{offset: c.Offset, at: h.s.Now(), who: m.name + " " + ev.MemberID})
	}
}

// strikeCoordinator strikes the coordinator a commit or the leader's
// assignment goes to, in the seeds that strike, now and then.
func (g *groupRun) strikeCoordinator(ev kclient.GroupEvent) {
	h, st := g.h, &g.strikes
	target, ok := h.coordinatorStrike(st, groupStrikeProbability, ev.Coordinator)
	if !ok {
		return
	}
	what := "a commit"
	if ev.Kind == kclient.PlanSent {
		what = "the leader's assignment"
	}
	h.strike(st, target, "coordinator-strike", fmt.Sprintf("%s, the group's coordinator, while %s of generation %d is in flight", h.names[target], what, ev.Generation))
}

// onFetch hands a member's reads to the history, and remembers what the
// group consumed (m).
func (g *groupRun) onFetch(m *groupMember, ev kclient.FetchEvent) {
	h := g.h
	p := linearizability.LogPartition{Topic: ev.Topic, Partition: ev.Partition}
	st, ok := m.reads[p]
	if !ok {
		st = &logRead{start: -1, pos: -1, hw: -1}
		m.reads[p] = st
	}
	switch ev.Kind {
	case kclient.Reset:
		// The high watermark the reader was told stays: the history
		// holds each reader to it across its sessions, and a member
		// starts a session at every assignment.
		*st = logRead{session: ev.Session, start: ev.Offset, pos: ev.Offset, hw: st.hw}
		h.hist.StartSession(m.reader, ev.Session, p, ev.Offset)
	case kclient.Records:
		recs := make([]linearizability.LogRecord, len(ev.Records))
		seen := g.consumed[p]
		if seen == nil {
			seen = map[int64]string{}
			g.consumed[p] = seen
		}
		for i, r := range ev.Records {
			recs[i] = linearizability.LogRecord{Offset: r.Offset, Value: string(r.Value)}
			seen[r.Offset] = string(r.Value)
		}
		if len(recs) > 0 {
			st.pos = recs[len(recs)-1].Offset + 1
		}
		h.checkHostileRead(m.reader, p, recs)
		hw := max(ev.HighWatermark, st.hw)
		now := h.s.Now()
		h.model.fetched(m.reader, p, ev.Offset, now-(m.e.Monotonic()-ev.Sent), now, recs)
		h.fail(h.hist.ReadWithHW(m.reader, ev.Session, p, recs, hw))
		st.hw = hw
	case kclient.OutOfRange:
		h.fail(h.hist.OutOfRange(m.reader, p, ev.Offset))
	case kclient.Corrupt:
		h.fail(&linearizability.LogViolation{Check: "c", At: h.s.Now(),
			Msg: fmt.Sprintf("%s read damaged data from %s: %v", m.reader, p, ev.Err)})
	}
}

// settle is (m), asked at every step after the heal and the other final
// checks: it reports nil once the group settled and consumed everything,
// a *groupViolation for a failed check, or why not yet.
func (g *groupRun) settle() error {
	h := g.h
	parts := h.partitions()
	var gen int32 = -1
	owner := map[linearizability.LogPartition]string{}
	var ids []string
	for _, m := range g.members {
		if !m.proc.Up() || m.gm == nil || !m.gm.Stable() {
			return g.unsettled(fmt.Errorf("%s is not stable", m.name))
		}
		if gen >= 0 && m.gm.Generation() != gen {
			return g.unsettled(fmt.Errorf("%s is in generation %d, another member in %d", m.name, m.gm.Generation(), gen))
		}
		gen = m.gm.Generation()
		ids = append(ids, m.gm.MemberID())
		for _, tp := range m.gm.Assigned() {
			p := lp(tp)
			if o, ok := owner[p]; ok {
				return g.unsettled(fmt.Errorf("%s is held by %s and %s", p, o, m.name))
			}
			owner[p] = m.name
			pos, _ := m.gm.Consumer().Position(tp.Topic, tp.Partition)
			if hw := h.verifier.state(p).hw; pos != hw {
				return g.unsettled(fmt.Errorf("%s is at %d of %s, the high watermark is %d", m.name, pos, p, hw))
			}
		}
	}
	for _, p := range parts {
		if _, ok := owner[p]; !ok {
			return g.unsettled(fmt.Errorf("%s is owned by no member", p))
		}
	}
	g.ask(ids)
	if g.describe == nil || g.final == nil {
		return g.unsettled(fmt.Errorf("waiting for the coordinator's description and offsets"))
	}
	if len(g.describe.Groups) != 1 {
		return g.unsettled(fmt.Errorf("DescribeGroups answered %d groups", len(g.describe.Groups)))
	}
	dg := g.describe.Groups[0]
	var described []string
	for _, dm := range dg.Members {
		described = append(described, dm.MemberID)
	}
	slices.Sort(described)
	slices.Sort(ids)
	if dg.ErrorCode != 0 || dg.State != "Stable" || !slices.Equal(described, ids) {
		return g.unsettled(fmt.Errorf("the coordinator describes the group %s (code %d) with members %v; the members are %v", dg.State, dg.ErrorCode, described, ids))
	}
	for _, p := range parts {
		hw := h.verifier.state(p).hw
		if a, ok := g.lastAckBefore(p, g.finalSent); ok && g.final[p] < a.offset {
			return g.violation("k", "after the heal the coordinator holds %s's committed offset %d, but a commit of %d by %s was acknowledged at %v", p, g.final[p], a.offset, a.who, a.at)
		}
		if g.final[p] != hw {
			return g.unsettled(fmt.Errorf("%s is committed at %d, the high watermark is %d", p, g.final[p], hw))
		}
	}
	if gen != g.settledGen {
		g.settledGen, g.settledSince = gen, h.s.Now()
	}
	var longest time.Duration
	for _, m := range g.members {
		longest = max(longest, m.session)
	}
	if h.s.Now()-g.settledSince < longest {
		return g.unsettled(fmt.Errorf("generation %d stable since %v, for less than a session timeout", gen, g.settledSince))
	}
	// At least once: every record of the final read was consumed by a
	// member.
	for _, p := range parts {
		for _, r := range h.verifier.state(p).records {
			if v, ok := g.consumed[p][r.Offset]; !ok || v != r.Value {
				return g.violation("m", "the group never consumed %s offset %d (%q); it read %q there", p, r.Offset, r.Value, v)
			}
		}
	}
	h.s.Trace(fmt.Sprintf("groups:settled gen=%d members=%v", gen, ids))
	return nil
}

func (g *groupRun) unsettled(err error) error {
	g.why = err.Error()
	return err
}

// ask sends the checker's DescribeGroups and OffsetFetch to the group's
// coordinator, one at a time, refreshing the answers.
func (g *groupRun) ask(ids []string) {
	if g.asking || g.checker == nil {
		return
	}
	g.asking = true
	c := g.checker
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorKeys = groupName, []string{groupName}
	c.DoAny(req, func(r kmsg.Response, err error) {
		node := coordinatorOf(r, err)
		if node < 0 {
			g.asking = false
			return
		}
		dreq := kmsg.NewPtrDescribeGroupsRequest()
		dreq.Groups = []string{groupName}
		c.Do(node, dreq, 0, func(r kmsg.Response, err error) {
			if d, ok := r.(*kmsg.DescribeGroupsResponse); ok && err == nil {
				g.describe = d
			}
			freq := kmsg.NewPtrOffsetFetchRequest()
			freq.Group = groupName
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = groupName
			for _, t := range g.h.swarm.topics {
				rt := kmsg.NewOffsetFetchRequestTopic()
				gt := kmsg.NewOffsetFetchRequestGroupTopic()
				rt.Topic, gt.Topic = t.name, t.name
				for p := int32(0); p < t.partitions; p++ {
					rt.Partitions = append(rt.Partitions, p)
					gt.Partitions = append(gt.Partitions, p)
				}
				freq.Topics = append(freq.Topics, rt)
				rg.Topics = append(rg.Topics, gt)
			}
			freq.Groups = append(freq.Groups, rg)
			sent := g.h.s.Now()
			c.Do(node, freq, 0, func(r kmsg.Response, err error) {
				g.asking = false
				resp, ok := r.(*kmsg.OffsetFetchResponse)
				if err != nil || !ok {
					return
				}
				final := map[linearizability.LogPartition]int64{}
				add := func(topic string, p int32, off int64, code int16) bool {
					if code != 0 {
						return false
					}
					final[linearizability.LogPartition{Topic: topic, Partition: p}] = off
					return true
				}
				if resp.Version >= 8 {
					if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
						return
					}
					for _, t := range resp.Groups[0].Topics {
						for _, p := range t.Partitions {
							if !add(t.Topic, p.Partition, p.Offset, p.ErrorCode) {
								return
							}
						}
					}
				} else {
					if resp.ErrorCode != 0 {
						return
					}
					for _, t := range resp.Topics {
						for _, p := range t.Partitions {
							if !add(t.Topic, p.Partition, p.Offset, p.ErrorCode) {
								return
							}
						}
					}
				}
				g.final, g.finalSent = final, sent
			})
		})
	})
}

// coordinatorOf is the node a FindCoordinator answer names, or -1.
func coordinatorOf(r kmsg.Response, err error) int32 {
	resp, ok := r.(*kmsg.FindCoordinatorResponse)
	switch {
	case err != nil || !ok:
		return -1
	case resp.Version >= 4:
		if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return -1
		}
		return resp.Coordinators[0].NodeID
	case resp.ErrorCode != 0:
		return -1
	}
	return resp.NodeID
}

// summary is the group's counters, for describe.
func (g *groupRun) summary() string {
	var gens []int32
	for gen := range g.owners {
		gens = append(gens, gen)
	}
	slices.SortFunc(gens, cmp.Compare)
	var ms []string
	for _, m := range g.members {
		st := "down"
		if m.gm != nil && m.proc.Up() {
			st = fmt.Sprintf("gen=%d stable=%v assigned=%v", m.gm.Generation(), m.gm.Stable(), m.gm.Assigned())
		}
		ms = append(ms, fmt.Sprintf("%s={%s}", m.name, st))
	}
	return fmt.Sprintf("group={%s actions=%d generations=%v assignments=%d commits acked=%d refused=%d coordinator-strikes=%d+%d why=%q %s}",
		g, g.actions, gens, g.assignments, g.commitsAcked, g.commitsRefused, g.strikes.kills, g.strikes.cuts, g.why, strings.Join(ms, " "))
}
