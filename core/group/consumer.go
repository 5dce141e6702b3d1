package group

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/coord"
	"github.com/strata-log/strata/core/env"
)

// # The consumer protocol (KIP-848)
//
// A consumer group (group.protocol=consumer) has no rebalance barrier:
// each member heartbeats on its own (ConsumerGroupHeartbeat) and the
// coordinator moves it, one heartbeat at a time, toward a target
// assignment it computes itself.
//
//  1. The group epoch counts the changes of membership, subscriptions
//     and subscribed topics' metadata. Every bump computes a new target
//     assignment at once (the assignor of assign.go) and sets the
//     assignment epoch to the group epoch.
//  2. A member's epoch trails the assignment epoch until it has
//     reconciled. From its current assignment A and its target T, a
//     heartbeat moves it (Kafka's CurrentAssignmentBuilder):
//     - A∖T non-empty (and still owned by the client): the member keeps
//     its epoch, is told to keep A∩T only, and waits in
//     UNREVOKED_PARTITIONS until a heartbeat's owned partitions show
//     A∖T is gone; for its rebalance timeout at most, then it is fenced.
//     - otherwise it takes the assignment epoch and every partition of
//     T that no other member holds; a partition another member still
//     holds (pending its revocation) waits: UNRELEASED_PARTITIONS until
//     it is free, STABLE once it has all of T.
//  3. A partition is held by at most one member at a time: the one whose
//     current assignment or pending revocation has it (owners). That is
//     what "revoke before assign" means here.
//  4. A heartbeat's epoch must be the member's (or its previous one, if
//     the answer that bumped it was lost and the owned partitions are a
//     subset of its assignment): otherwise FENCED_MEMBER_EPOCH, and the
//     client rejoins with epoch 0.
//  5. Members that stop heartbeating for group.consumer.session.timeout.ms
//     are removed; -1 leaves; a static member's -2 keeps its place (and
//     its partitions) for the session timeout so that its next
//     incarnation, same instance id, takes it over.
//
// Every change is written to __consumer_offsets as Kafka's KIP-848
// records (consumerrecords.go) and a heartbeat is answered only once the
// records it caused, and every earlier write of the group, are
// committed.

// memberState is a consumer member's reconciliation state (Kafka's
// MemberState, whose byte values the records carry).
type memberState int8

const (
	memberStable               memberState = 0
	memberUnrevokedPartitions  memberState = 1
	memberUnreleasedPartitions memberState = 2
	memberUnknown              memberState = 3
)

func (s memberState) String() string {
	switch s {
	case memberStable:
		return "stable"
	case memberUnrevokedPartitions:
		return "unrevoked"
	case memberUnreleasedPartitions:
		return "unreleased"
	}
	return "unknown"
}

// Member epochs with a meaning (KIP-848).
const (
	joinEpoch        = 0
	leaveEpoch       = -1
	staticLeaveEpoch = -2
)

// consumerGroup is a group's consumer-protocol state.
type consumerGroup struct {
	epoch           int32
	assignmentEpoch int32
	// members in join order; byID indexes them.
	members []*consumerMember
	byID    map[string]*consumerMember
	// owners maps every partition held by a member (assigned or pending
	// revocation) to it; rebuilt on load, kept by setAssignment.
	owners map[tpid]*consumerMember
	// subscribed is the metadata of the topics the subscriptions
	// resolved to when the target was last computed (sorted by name).
	subscribed []TopicInfo

	// records buffers what the running handler changed (flush writes it).
	records []Record
	// Write ordering: writes issued and completed, and replies waiting
	// for a write to complete.
	issued, completed uint64
	waiters           []writeWaiter
	// resync is set after a failed write: the next write carries the
	// whole group (and the tombstones of the members removed since).
	resync  bool
	removed []removedMember
}

// removedMember is a member removed in memory whose tombstones the write
// seq carries.
type removedMember struct {
	id  string
	seq uint64
}

type writeWaiter struct {
	seq  uint64
	done func(error)
}

// consumerMember is one member of a consumer group.
type consumerMember struct {
	id                 string
	instanceID, rackID *string
	clientID           string
	clientHost         string
	topicNames         []string // sorted
	regex              string
	re                 *regexp.Regexp
	rebalanceTimeoutMs int32
	assignor           string // "" when the member named none
	// classic is set for a member that speaks the classic protocol
	// (migrate.go).
	classic *classicMeta

	epoch, previousEpoch int32
	state                memberState
	assigned, revoking   parts
	target               parts

	session, rebalance env.Timer
}

// TopicInfo is a topic of the metadata image, as consumer groups see it.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// SetTopics gives the shard the topics of the metadata image (any
// order). Consumer groups whose subscribed topics appeared, went or
// changed their partitions get a new group epoch and target.
func (s *Shard) SetTopics(topics []TopicInfo) {
	topics = slices.Clone(topics)
	slices.SortFunc(topics, func(a, b TopicInfo) int { return cmp.Compare(a.Name, b.Name) })
	if slices.Equal(topics, s.topics) {
		return // most images change no topic
	}
	s.topics = topics
	s.topicIDs = make(map[[16]byte]int, len(topics))
	for i, t := range topics {
		s.topicIDs[t.ID] = i
	}
	if !s.status.Serving() {
		return
	}
	for _, g := range s.Groups() {
		cg := g.consumer
		if cg == nil || len(cg.members) == 0 || g.deleted {
			continue
		}
		if !slices.Equal(cg.subscribed, g.resolveSubscriptions()) {
			g.bumpEpoch("subscribed topics changed")
			g.flush(nil)
		}
	}
}

// topic returns the image's topic called name.
func (s *Shard) topic(name string) (TopicInfo, bool) {
	i, ok := slices.BinarySearchFunc(s.topics, name, func(t TopicInfo, n string) int { return cmp.Compare(t.Name, n) })
	if !ok {
		return TopicInfo{}, false
	}
	return s.topics[i], true
}

// memberTopics lists the existing topics m subscribes to, sorted by name.
func (g *Group) memberTopics(m *consumerMember) []TopicInfo {
	var out []TopicInfo
	if m.re != nil {
		for _, t := range g.s.topics {
			if m.re.MatchString(t.Name) {
				out = append(out, t)
			}
		}
	}
	for _, n := range m.topicNames {
		if t, ok := g.s.topic(n); ok && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b TopicInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// resolveSubscriptions is the metadata of every topic a member
// subscribes to, sorted by name.
func (g *Group) resolveSubscriptions() []TopicInfo {
	var out []TopicInfo
	for _, m := range g.consumer.members {
		for _, t := range g.memberTopics(m) {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.SortFunc(out, func(a, b TopicInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// groupAssignor is the assignor most members ask for (ties and no
// preference: the first of group.consumer.assignors).
func (g *Group) groupAssignor() string {
	assignors := g.s.cfg.ConsumerAssignors
	votes := make([]int, len(assignors))
	for _, m := range g.consumer.members {
		if i := slices.Index(assignors, m.assignor); i >= 0 {
			votes[i]++
		}
	}
	best := 0
	for i := range votes {
		if votes[i] > votes[best] {
			best = i
		}
	}
	return assignors[best]
}

// bumpEpoch starts a new group epoch and computes its target assignment.
func (g *Group) bumpEpoch(why string) {
	cg := g.consumer
	cg.epoch++
	cg.subscribed = g.resolveSubscriptions()
	cg.records = append(cg.records, consumerEpochRecord(g.name, cg.epoch), partitionMetadataRecord(g.name, cg.subscribed))
	sorted := slices.Clone(cg.members)
	slices.SortFunc(sorted, func(a, b *consumerMember) int { return cmp.Compare(a.id, b.id) })
	in := make([]assignInput, len(sorted))
	for i, m := range sorted {
		in[i] = assignInput{id: m.id, topics: g.memberTopics(m), previous: m.target}
	}
	out := assign(g.groupAssignor(), in)
	for i, m := range sorted {
		if !slices.Equal(m.target, out[i]) {
			m.target = out[i]
			cg.records = append(cg.records, targetMemberRecord(g.name, m.id, m.target))
		}
	}
	cg.assignmentEpoch = cg.epoch
	cg.records = append(cg.records, targetEpochRecord(g.name, cg.assignmentEpoch))
	g.s.log.Info("consumer group epoch", "group", g.name, "epoch", cg.epoch, "members", len(cg.members), "reason", why)
}

// setAssignment changes m's current assignment and keeps owners.
func (g *Group) setAssignment(m *consumerMember, state memberState, epoch int32, assigned, revoking parts) {
	cg := g.consumer
	for _, tp := range slices.Concat(m.assigned, m.revoking) {
		if cg.owners[tp] == m {
			delete(cg.owners, tp)
		}
	}
	for _, tp := range slices.Concat(assigned, revoking) {
		if o := cg.owners[tp]; o != nil && o != m {
			assert.That(false, "group %s: partition %x-%d given to %s while %s holds it", g.name, tp.topic, tp.partition, m.id, o.id)
		}
		cg.owners[tp] = m
	}
	if epoch != m.epoch {
		m.previousEpoch = m.epoch
	}
	m.state, m.epoch, m.assigned, m.revoking = state, epoch, assigned, revoking
	cg.records = append(cg.records, currentAssignmentRecord(g.name, m))
}

// reconcile moves m toward its target (rule 2); owned is what the client
// says it holds (nil: not said).
func (g *Group) reconcile(m *consumerMember, owned parts, ownedKnown bool) {
	cg := g.consumer
	switch m.state {
	case memberStable:
		if m.epoch == cg.assignmentEpoch {
			return
		}
	case memberUnrevokedPartitions:
		if !ownedKnown || len(owned.intersect(m.revoking)) > 0 {
			return // still revoking
		}
	case memberUnreleasedPartitions:
	default:
	}
	var keep, free parts
	unreleased := false
	for _, tp := range m.target {
		switch {
		case m.assigned.contains(tp):
			keep = append(keep, tp)
		case cg.owners[tp] == nil || cg.owners[tp] == m:
			free = append(free, tp)
		default:
			unreleased = true
		}
	}
	revoke := m.assigned.minus(m.target)
	if ownedKnown {
		revoke = revoke.intersect(owned) // what the client no longer has is not revoked
	}
	switch {
	case len(revoke) > 0:
		g.setAssignment(m, memberUnrevokedPartitions, m.epoch, keep, revoke)
		g.startRevocationTimer(m)
	case unreleased:
		g.setAssignment(m, memberUnreleasedPartitions, cg.assignmentEpoch, sortParts(slices.Concat(keep, free)), nil)
	default:
		g.setAssignment(m, memberStable, cg.assignmentEpoch, sortParts(slices.Concat(keep, free)), nil)
	}
	if m.state != memberUnrevokedPartitions && m.rebalance != nil {
		m.rebalance.Stop()
		m.rebalance = nil
	}
}

// startRevocationTimer fences m if it is still revoking the same
// partitions after its rebalance timeout.
func (g *Group) startRevocationTimer(m *consumerMember) {
	if m.rebalance != nil {
		m.rebalance.Stop()
	}
	epoch := m.epoch
	m.rebalance = g.s.e.AfterFunc(time.Duration(m.rebalanceTimeoutMs)*time.Millisecond, func() {
		m.rebalance = nil
		if g.consumer == nil || g.consumer.byID[m.id] != m || m.state != memberUnrevokedPartitions || m.epoch != epoch {
			return
		}
		g.removeConsumer(m, "did not revoke its partitions within its rebalance timeout")
		g.flush(nil)
	})
}

// touchConsumer restarts m's session timer.
func (g *Group) touchConsumer(m *consumerMember) {
	if m.session != nil {
		m.session.Stop()
		m.session = nil
	}
	if !g.s.status.Serving() {
		return
	}
	m.session = g.s.e.AfterFunc(m.sessionTimeout(g.s.cfg.ConsumerSessionTimeout), func() {
		m.session = nil
		if g.consumer == nil || g.consumer.byID[m.id] != m {
			return
		}
		g.removeConsumer(m, "session timeout")
		g.flush(nil)
	})
}

// removeConsumer fences a member: its partitions are free, the group
// gets a new epoch.
func (g *Group) removeConsumer(m *consumerMember, why string) {
	cg := g.consumer
	g.s.log.Info("consumer group member removed", "group", g.name, "member", m.id, "reason", why)
	g.dropConsumer(m)
	cg.records = append(cg.records, memberTombstones(g.name, m.id)...)
	if g.downgradable() {
		g.downgradeToClassic() // rule M6, instead of a new epoch
		return
	}
	g.bumpEpoch("member " + m.id + " removed")
	if len(cg.members) == 0 {
		g.state = StateEmpty
		g.emptySince = g.s.e.Monotonic()
	}
}

// dropConsumer forgets m (no records).
func (g *Group) dropConsumer(m *consumerMember) {
	cg := g.consumer
	for _, t := range []env.Timer{m.session, m.rebalance} {
		if t != nil {
			t.Stop()
		}
	}
	m.session, m.rebalance = nil, nil
	for _, tp := range slices.Concat(m.assigned, m.revoking) {
		if cg.owners[tp] == m {
			delete(cg.owners, tp)
		}
	}
	cg.members = slices.DeleteFunc(cg.members, func(x *consumerMember) bool { return x == m })
	delete(cg.byID, m.id)
	cg.removed = append(cg.removed, removedMember{m.id, cg.issued + 1})
}

// newConsumerGroup turns g (empty) into a consumer group, keeping its
// offsets; records says whether to write the classic group's tombstone.
func (g *Group) newConsumerGroup() {
	g.consumer = &consumerGroup{byID: map[string]*consumerMember{}, owners: map[tpid]*consumerMember{}}
	g.protocolType, g.protocol, g.leader, g.generation = "consumer", "", "", 0
	g.members, g.byID = nil, map[string]*member{}
	g.state = StateEmpty
}

// ConsumerHeartbeat handles ConsumerGroupHeartbeat; reply runs once the
// records the heartbeat caused (and every earlier write of the group)
// are committed.
func (s *Shard) ConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, c Client, reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.HeartbeatIntervalMillis = int32(s.cfg.ConsumerHeartbeatInterval.Milliseconds())
	fail := func(e *kerr.Error, msg string) {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.MemberEpoch = 0
		reply(resp)
	}
	if e := s.status.Err(); e != nil {
		fail(e, "")
		return
	}
	if e, msg := s.validHeartbeat(req); e != nil {
		fail(e, msg)
		return
	}
	var re *regexp.Regexp
	if req.SubscribedTopicRegex != nil {
		var err error
		if re, err = regexp.Compile("^(?:" + *req.SubscribedTopicRegex + ")$"); err != nil {
			fail(kerr.InvalidRegularExpression, err.Error())
			return
		}
	}
	g := s.group(req.Group, req.MemberEpoch == joinEpoch)
	if g != nil && g.consumer == nil && len(g.members) > 0 && req.MemberEpoch == joinEpoch && !g.deleted && g.upgradable() {
		g.upgradeToConsumer() // rule M1
		g.flush(nil)          // written even if the join below is refused
	}
	switch {
	case g == nil:
		fail(kerr.UnknownMemberID, "")
		return
	case g.state == StateDead || g.deleted:
		fail(kerr.CoordinatorNotAvailable, "")
		return
	case g.consumer == nil && len(g.members) > 0:
		fail(kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", g.name))
		return
	case g.consumer == nil && req.MemberEpoch != joinEpoch:
		fail(kerr.UnknownMemberID, "")
		return
	case g.consumer == nil:
		// An empty classic group (offsets only) becomes a consumer
		// group, keeping its offsets (Kafka 4's upgrade).
		hadClassic := g.generation > 0 || g.protocolType != ""
		g.stopTimers()
		g.newConsumerGroup()
		if hadClassic {
			g.consumer.records = append(g.consumer.records, classicTombstone(g.name))
		}
		s.log.Info("group converted to the consumer protocol", "group", g.name, "offsets", len(g.offsets))
	}
	switch req.MemberEpoch {
	case joinEpoch:
		g.consumerJoin(req, re, c, resp, reply)
		if cg := g.consumer; cg != nil && cg.epoch == 0 && len(cg.members) == 0 && len(g.offsets) == 0 && g.pendingCount() == 0 && len(cg.records) == 0 && cg.issued == 0 {
			s.dropGroup(g) // created for a join that failed: nothing to keep
		}
	case leaveEpoch, staticLeaveEpoch:
		g.consumerLeave(req, resp, reply)
	default:
		g.consumerBeat(req, re, resp, reply)
	}
}

// validHeartbeat checks a heartbeat as Kafka does before it looks at the
// group.
func (s *Shard) validHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (*kerr.Error, string) {
	empty := func(p *string) bool { return p != nil && *p == "" }
	switch {
	case req.Group == "":
		return kerr.InvalidRequest, "GroupId can't be empty."
	case empty(req.InstanceID):
		return kerr.InvalidRequest, "InstanceId can't be empty."
	case empty(req.RackID):
		return kerr.InvalidRequest, "RackId can't be empty."
	case req.MemberEpoch < staticLeaveEpoch:
		return kerr.InvalidRequest, "MemberEpoch is invalid."
	case req.MemberID == "" && (req.Version >= 1 || req.MemberEpoch != joinEpoch):
		return kerr.InvalidRequest, "MemberId can't be empty."
	case len(req.MemberID) > maxMemberIDBytes:
		return kerr.InvalidRequest, "MemberId is too long."
	case req.ServerAssignor != nil && !slices.Contains(s.cfg.ConsumerAssignors, *req.ServerAssignor):
		return kerr.UnsupportedAssignor, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s.",
			*req.ServerAssignor, strings.Join(s.cfg.ConsumerAssignors, ", "))
	}
	if req.MemberEpoch == joinEpoch {
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."
		case req.Topics == nil || len(req.Topics) > 0:
			return kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."
		case len(req.SubscribedTopicNames) == 0 && req.SubscribedTopicRegex == nil:
			return kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	}
	if req.SubscribedTopicRegex != nil && len(*req.SubscribedTopicRegex) > maxRegexBytes {
		return kerr.InvalidRegularExpression, "SubscribedTopicRegex is too long."
	}
	return nil, ""
}

// Bounds on what a member may send.
const (
	maxMemberIDBytes = 1 << 10
	maxRegexBytes    = 1 << 12
)

// consumerJoin handles epoch 0: a new member, a known member rejoining
// (its partitions are given up and given back per its target), or a
// static member's new incarnation.
func (g *Group) consumerJoin(req *kmsg.ConsumerGroupHeartbeatRequest, re *regexp.Regexp, c Client, resp *kmsg.ConsumerGroupHeartbeatResponse, reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	cg := g.consumer
	id := req.MemberID
	if id == "" {
		id = g.newMemberID(c.ID, req.InstanceID)
	}
	m := cg.byID[id]
	var old *consumerMember
	if req.InstanceID != nil {
		old = g.consumerByInstance(*req.InstanceID)
		if old == m {
			old = nil
		}
		if old != nil && old.epoch != staticLeaveEpoch {
			resp.ErrorCode = kerr.UnreleasedInstanceID.Code
			resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Static member %s with instance id %s is still in the group.", old.id, *req.InstanceID))
			reply(resp)
			return
		}
	}
	if m == nil && old == nil && len(cg.members) >= g.s.cfg.ConsumerMaxSize {
		resp.ErrorCode = kerr.GroupMaxSizeReached.Code
		reply(resp)
		return
	}
	changed := false
	if m == nil {
		m = &consumerMember{id: id}
		if old != nil {
			// The new incarnation takes the old one's place and
			// partitions; the old member id is gone.
			m.target, m.topicNames, m.regex, m.re, m.assignor = old.target, old.topicNames, old.regex, old.re, old.assignor
			assigned, revoking := old.assigned, old.revoking
			g.dropConsumer(old)
			cg.records = append(cg.records, memberTombstones(g.name, old.id)...)
			cg.members = append(cg.members, m)
			cg.byID[m.id] = m
			g.setAssignment(m, memberStable, 0, assigned, revoking)
			cg.records = append(cg.records, targetMemberRecord(g.name, m.id, m.target))
			m.state = memberUnknown // reconcile below from what it holds
		} else {
			cg.members = append(cg.members, m)
			cg.byID[m.id] = m
			changed = true
		}
	} else {
		// A known member rejoining has dropped what it held.
		g.setAssignment(m, memberStable, 0, nil, nil)
	}
	m.classic = nil
	m.instanceID, m.rackID, m.clientID, m.clientHost = req.InstanceID, req.RackID, c.ID, c.Host
	m.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	if g.updateSubscription(m, req, re) {
		changed = true
	}
	cg.records = append(cg.records, memberMetadataRecord(g.name, m))
	g.state = StateStable
	if changed {
		g.bumpEpoch("member " + m.id + " joined")
	}
	g.touchConsumer(m)
	m.state = memberUnknown
	g.reconcile(m, nil, true)
	g.answerBeat(m, resp, true, reply)
}

func (g *Group) consumerByInstance(inst string) *consumerMember {
	for _, m := range g.consumer.members {
		if m.instanceID != nil && *m.instanceID == inst {
			return m
		}
	}
	return nil
}

// updateSubscription takes a heartbeat's subscription fields (nil ones
// are unchanged) and reports whether the subscription changed.
func (g *Group) updateSubscription(m *consumerMember, req *kmsg.ConsumerGroupHeartbeatRequest, re *regexp.Regexp) bool {
	changed := false
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.topicNames) {
			m.topicNames, changed = names, true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex, m.re, changed = *req.SubscribedTopicRegex, re, true
		if m.regex == "" {
			m.re = nil
		}
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor, changed = *req.ServerAssignor, true
	}
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	return changed
}

// consumerLeave handles -1 (leave) and a static member's -2 (leave for
// now, keeping its place). The -2 may come without the instance id (kgo
// sends none): the member's decides; a dynamic member's -2 is a leave.
func (g *Group) consumerLeave(req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse, reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	cg := g.consumer
	m := cg.byID[req.MemberID]
	if m == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		reply(resp)
		return
	}
	if req.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *req.InstanceID) {
		resp.ErrorCode = kerr.FencedInstanceID.Code
		reply(resp)
		return
	}
	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(m.id), req.MemberEpoch
	if req.MemberEpoch == staticLeaveEpoch && m.instanceID != nil {
		// Kept, epoch -2, with its partitions, until its next
		// incarnation or its session timeout.
		if m.rebalance != nil {
			m.rebalance.Stop()
			m.rebalance = nil
		}
		g.setAssignment(m, m.state, staticLeaveEpoch, m.assigned, m.revoking)
		g.touchConsumer(m)
		g.flush(func(err error) { g.replyWritten(resp, err, reply) })
		return
	}
	g.removeConsumer(m, "left")
	g.flush(func(err error) { g.replyWritten(resp, err, reply) })
}

// consumerBeat handles a heartbeat of a member in the group.
func (g *Group) consumerBeat(req *kmsg.ConsumerGroupHeartbeatRequest, re *regexp.Regexp, resp *kmsg.ConsumerGroupHeartbeatResponse, reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	cg := g.consumer
	m := cg.byID[req.MemberID]
	switch {
	case m == nil, m.classic != nil: // a classic member speaks JoinGroup (M2)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		reply(resp)
		return
	case req.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *req.InstanceID):
		resp.ErrorCode = kerr.FencedInstanceID.Code
		reply(resp)
		return
	}
	owned := partsOf(req.Topics)
	if req.MemberEpoch != m.epoch {
		// Rule 4: only the previous epoch, with what it owns a subset
		// of the assignment, may come back.
		if req.MemberEpoch > m.epoch || req.MemberEpoch != m.previousEpoch || req.Topics == nil || !owned.subsetOf(m.assigned) {
			resp.ErrorCode = kerr.FencedMemberEpoch.Code
			resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("The member epoch is %d, not %d.", m.epoch, req.MemberEpoch))
			reply(resp)
			return
		}
	}
	g.touchConsumer(m)
	before, beforeEpoch := m.assigned, m.epoch
	if g.updateSubscription(m, req, re) {
		cg.records = append(cg.records, memberMetadataRecord(g.name, m))
		g.bumpEpoch("member " + m.id + " changed its subscription")
	}
	g.reconcile(m, owned, req.Topics != nil)
	full := req.Topics != nil && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil)
	g.answerBeat(m, resp, full || !slices.Equal(before, m.assigned) || beforeEpoch != m.epoch, reply)
}

// answerBeat answers a heartbeat of m once the group's writes are
// committed, with its assignment if withAssignment.
func (g *Group) answerBeat(m *consumerMember, resp *kmsg.ConsumerGroupHeartbeatResponse, withAssignment bool, reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(m.id), m.epoch
	if withAssignment {
		resp.Assignment = m.assigned.heartbeatAssignment()
	}
	g.flush(func(err error) { g.replyWritten(resp, err, reply) })
}

func (g *Group) replyWritten(resp *kmsg.ConsumerGroupHeartbeatResponse, err error, reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	if err != nil {
		resp.ErrorCode = writeErrorCode(err).Code
		resp.MemberEpoch, resp.Assignment = 0, nil
	}
	reply(resp)
}

// flush writes the records the handler buffered and runs done (if any)
// once they and every earlier write of the group are committed.
func (g *Group) flush(done func(error)) {
	cg := g.consumer
	if cg == nil {
		cg = g.retired // downgraded by the handler (rule M6)
	}
	if cg == nil {
		if done != nil {
			done(nil)
		}
		return
	}
	recs := cg.records
	cg.records = nil
	snapshot := cg.resync && len(recs) > 0
	if snapshot {
		recs = g.consumerSnapshot()
	}
	if len(recs) == 0 {
		if done == nil {
			return
		}
		if cg.completed == cg.issued {
			done(nil)
			return
		}
		cg.waiters = append(cg.waiters, writeWaiter{seq: cg.issued, done: done})
		return
	}
	cg.issued++
	seq := cg.issued
	if done != nil {
		cg.waiters = append(cg.waiters, writeWaiter{seq: seq, done: done})
	}
	g.s.write(recs, func(err error) {
		cg.completed = max(cg.completed, seq)
		if err != nil {
			g.s.log.Warn("writing the consumer group failed", "group", g.name, "records", len(recs), "err", err)
			cg.resync = true
		} else {
			if snapshot {
				cg.resync = false
			}
			cg.removed = slices.DeleteFunc(cg.removed, func(r removedMember) bool { return r.seq <= seq })
		}
		var later []writeWaiter
		for _, w := range cg.waiters {
			if w.seq <= seq {
				w.done(err)
			} else {
				later = append(later, w)
			}
		}
		cg.waiters = later
	})
}

// consumerSnapshot is every record of the group's consumer state, after
// the tombstones of the members removed since the last good write: what
// a write after a failed one carries, so the log ends up holding what
// memory does.
func (g *Group) consumerSnapshot() []Record {
	cg := g.consumer
	var recs []Record
	for _, r := range cg.removed {
		if cg.byID[r.id] == nil {
			recs = append(recs, memberTombstones(g.name, r.id)...)
		}
	}
	recs = append(recs, consumerEpochRecord(g.name, cg.epoch), partitionMetadataRecord(g.name, cg.subscribed))
	for _, m := range cg.members {
		recs = append(recs, memberMetadataRecord(g.name, m), targetMemberRecord(g.name, m.id, m.target))
	}
	recs = append(recs, targetEpochRecord(g.name, cg.assignmentEpoch))
	for _, m := range cg.members {
		recs = append(recs, currentAssignmentRecord(g.name, m))
	}
	return recs
}

// failConsumerWaiting answers every reply waiting for a write (unload).
func (g *Group) failConsumerWaiting() {
	for _, cg := range []*consumerGroup{g.consumer, g.retired} {
		if cg == nil {
			continue
		}
		ws := cg.waiters
		cg.waiters = nil
		for _, w := range ws {
			w.done(coord.ErrNotCoordinator)
		}
	}
}

// stopConsumerTimers stops the members' timers.
func (g *Group) stopConsumerTimers() {
	if g.consumer == nil {
		return
	}
	for _, m := range g.consumer.members {
		for _, t := range []env.Timer{m.session, m.rebalance} {
			if t != nil {
				t.Stop()
			}
		}
		m.session, m.rebalance = nil, nil
	}
}

// consumerLoaded finishes a consumer group's replay: owners from the
// members' assignments, session timers, and a rebalance timer for
// members still revoking.
func (g *Group) consumerLoaded() {
	cg := g.consumer
	cg.owners = map[tpid]*consumerMember{}
	for _, m := range cg.members {
		// Rule 3 on what was read: a partition two members claim stays
		// with the first (in join order); the other is told to drop it.
		held := func(tp tpid) bool {
			if o := cg.owners[tp]; o != nil && o != m {
				g.s.log.Warn("consumer group records give a partition to two members", "group", g.name,
					"partition", tp.partition, "member", m.id, "holder", o.id)
				return true
			}
			return false
		}
		m.assigned = slices.DeleteFunc(m.assigned, held)
		m.revoking = slices.DeleteFunc(m.revoking, held)
		for _, tp := range slices.Concat(m.assigned, m.revoking) {
			cg.owners[tp] = m
		}
		g.touchConsumer(m)
		if m.state == memberUnrevokedPartitions {
			g.startRevocationTimer(m)
		}
	}
	if len(cg.members) == 0 {
		g.state = StateEmpty
		g.emptySince = g.s.e.Monotonic()
		return
	}
	g.state = StateStable
	if !slices.Equal(cg.subscribed, g.resolveSubscriptions()) {
		// Topics changed while no coordinator served the group.
		g.bumpEpoch("subscribed topics changed before the load")
		g.flush(nil)
	}
}

// ConsumerState is a consumer group's state as Kafka names it.
func (g *Group) ConsumerState() string {
	cg := g.consumer
	switch {
	case g.state == StateDead:
		return "Dead"
	case len(cg.members) == 0:
		return "Empty"
	case cg.assignmentEpoch != cg.epoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// IsConsumer reports whether the group uses the consumer protocol.
func (g *Group) IsConsumer() bool { return g.consumer != nil }

// Type is the group's type as ListGroups shows it.
func (g *Group) Type() string {
	if g.consumer != nil {
		return "consumer"
	}
	return "classic"
}

// DescribeConsumer fills a ConsumerGroupDescribe answer for one group.
func (s *Shard) DescribeConsumer(name string) kmsg.ConsumerGroupDescribeResponseGroup {
	out := kmsg.NewConsumerGroupDescribeResponseGroup()
	out.Group = name
	if e := s.status.Err(); e != nil {
		out.ErrorCode = e.Code
		return out
	}
	g := s.group(name, false)
	switch {
	case g == nil || g.state == StateDead:
		out.ErrorCode = kerr.GroupIDNotFound.Code
		out.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Group %s not found.", name))
		return out
	case g.consumer == nil:
		out.ErrorCode = kerr.GroupIDNotFound.Code
		out.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Group %s is not a consumer group.", name))
		return out
	}
	cg := g.consumer
	out.State, out.Epoch, out.AssignmentEpoch, out.AssignorName = g.ConsumerState(), cg.epoch, cg.assignmentEpoch, g.groupAssignor()
	for _, m := range cg.members {
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.id, m.instanceID, m.rackID, m.epoch
		dm.ClientID, dm.ClientHost, dm.SubscribedTopics = m.clientID, m.clientHost, m.topicNames
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		if m.regex != "" {
			dm.SubscribedTopicRegex = kmsg.StringPtr(m.regex)
		}
		dm.Assignment, dm.TargetAssignment = s.describeAssignment(m.assigned), s.describeAssignment(m.target)
		dm.MemberType = 1 // the consumer protocol
		if m.classic != nil {
			dm.MemberType = 0
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

func (s *Shard) describeAssignment(p parts) kmsg.Assignment {
	var a kmsg.Assignment
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	p.grouped(func(topic [16]byte, ps []int32) {
		tp := kmsg.AssignmentTopicPartition{TopicID: topic, Partitions: ps}
		if i, ok := s.topicIDs[topic]; ok {
			tp.Topic = s.topics[i].Name
		}
		a.TopicPartitions = append(a.TopicPartitions, tp)
	})
	return a
}

// checkConsumerCommit checks an offset commit's (or fetch's) member and
// epoch against a consumer group, as Kafka 4 does: an epoch below 0
// without a member id is an admin's, allowed while the group is empty.
func (g *Group) checkConsumerCommit(memberID string, epoch int32, version int16, isCommit bool) *kerr.Error {
	cg := g.consumer
	if epoch < 0 && memberID == "" {
		if isCommit && len(cg.members) > 0 {
			return kerr.UnknownMemberID
		}
		return nil
	}
	m := cg.byID[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case m.classic != nil && epoch != m.epoch:
		return kerr.IllegalGeneration // a classic member's generation is its epoch
	case m.classic == nil && isCommit && version < 9:
		return kerr.UnsupportedVersion
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch
	}
	if isCommit {
		g.touchConsumer(m)
	}
	return nil
}

// ConsumerMember describes a consumer group member for tests and tools.
type ConsumerMember struct {
	ID                 string
	Epoch              int32
	State              string
	Assigned, Revoking []string
	Target             []string
	Classic            bool // speaks the classic protocol
}

// ConsumerMembers lists the consumer members in join order (nil for a
// classic group); partitions are "topic-partition" by topic name.
func (g *Group) ConsumerMembers() []ConsumerMember {
	if g.consumer == nil {
		return nil
	}
	var out []ConsumerMember
	for _, m := range g.consumer.members {
		out = append(out, ConsumerMember{ID: m.id, Epoch: m.epoch, State: m.state.String(),
			Assigned: g.s.partNames(m.assigned), Revoking: g.s.partNames(m.revoking), Target: g.s.partNames(m.target),
			Classic: m.classic != nil})
	}
	return out
}

func (s *Shard) partNames(p parts) []string {
	var out []string
	for _, tp := range p {
		name := fmt.Sprintf("%x", tp.topic[:4])
		if i, ok := s.topicIDs[tp.topic]; ok {
			name = s.topics[i].Name
		}
		out = append(out, fmt.Sprintf("%s-%d", name, tp.partition))
	}
	return out
}

// ConsumerEpochs are a consumer group's group and assignment epochs.
func (g *Group) ConsumerEpochs() (epoch, assignmentEpoch int32) {
	if g.consumer == nil {
		return -1, -1
	}
	return g.consumer.epoch, g.consumer.assignmentEpoch
}

// toClassic turns an empty consumer group back into a classic one (a
// classic member joins), keeping its offsets.
func (g *Group) toClassic() {
	g.s.log.Info("group converted to the classic protocol", "group", g.name, "offsets", len(g.offsets))
	g.stopConsumerTimers()
	g.consumer = nil
	g.protocolType, g.state = "", StateEmpty
	g.s.write(consumerGroupTombstones(g.name), func(err error) {
		if err != nil {
			g.s.log.Warn("writing the consumer group's tombstones failed", "group", g.name, "err", err)
		}
	})
}

// deletionRecords are the tombstones that delete the group's record
// (after its offsets'): a classic group's GroupMetadata, a consumer
// group's three.
func (g *Group) deletionRecords(nowMs int64) []Record {
	if g.consumer != nil {
		return consumerGroupTombstones(g.name)
	}
	return []Record{groupRecord(g, nowMs)}
}

// dropEmptyConsumerGroup deletes a consumer group left with no members and
// no offsets (the retention check finds it, as Kafka's cleanup does).
func (s *Shard) dropEmptyConsumerGroup(g *Group) {
	g.deleted, g.state = true, StateDead // heartbeats meanwhile: COORDINATOR_NOT_AVAILABLE
	s.write(consumerGroupTombstones(g.name), func(err error) {
		if err != nil {
			g.deleted, g.state = false, StateEmpty
			s.log.Warn("deleting the empty consumer group failed", "group", g.name, "err", err)
			return
		}
		s.log.Info("empty consumer group deleted", "group", g.name)
		if s.groups[g.name] == g {
			s.dropGroup(g)
		}
	})
}
