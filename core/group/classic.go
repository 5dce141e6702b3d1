package group

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/plant"
)

// # The classic protocol
//
// A group moves through Kafka's states:
//
//   - Empty: no members (offsets may remain). A JoinGroup starts a
//     rebalance.
//   - PreparingRebalance: the coordinator waits for every known member to
//     (re)join, up to the largest rebalance timeout of the members (and,
//     for a group that was empty, group.initial.rebalance.delay.ms for
//     more to come); members that did not rejoin are removed.
//   - CompletingRebalance: the generation is bumped, a protocol all
//     members support chosen by vote, and every member answered its
//     JoinGroup (the leader with the members' metadata); the coordinator
//     waits for the leader's SyncGroup with the assignment, writes the
//     group record, and then answers every SyncGroup with its assignment.
//   - Stable: members heartbeat within their session timeout; a new
//     member, a member leaving or timing out, or a member joining with new
//     metadata (or the leader rejoining) starts a rebalance.
//   - Dead: the group was deleted.
//
// Members get ids from the coordinator (KIP-394: a first JoinGroup v4+
// without one is answered MEMBER_ID_REQUIRED with the id to use). Static
// members (KIP-345, group.instance.id) keep their place across restarts:
// a known instance id joining again replaces its old member id (which is
// fenced: FENCED_INSTANCE_ID) and, if its metadata is unchanged and the
// group stable, gets its assignment back without a rebalance.

// State is a group's state (Kafka's names, as DescribeGroups shows them).
type State string

// The states.
const (
	StateEmpty               State = "Empty"
	StatePreparingRebalance  State = "PreparingRebalance"
	StateCompletingRebalance State = "CompletingRebalance"
	StateStable              State = "Stable"
	StateDead                State = "Dead"
)

// Group is one consumer (or other classic-protocol) group.
type Group struct {
	s    *Shard
	name string

	state        State
	generation   int32
	protocolType string
	protocol     string
	leader       string

	// members in join order; byID indexes them; pending are the ids
	// handed out with MEMBER_ID_REQUIRED that have not joined yet.
	members []*member
	byID    map[string]*member
	pending []pendingMember
	// joining counts the members with a JoinGroup waiting.
	joining int
	// rebalanceTimer completes the rebalance when members are slow;
	// syncTimer removes the members that did not SyncGroup in time.
	rebalanceTimer, syncTimer env.Timer
	// initialDelay is set while an empty group's first rebalance waits
	// group.initial.rebalance.delay.ms.
	initialDelay bool
	// writing is set while the leader's assignment is being written.
	writing bool
	// assignmentsLost is set while a rebalance that began in
	// CompletingRebalance runs: the members' assignments were cleared
	// though their clients may hold the previous ones (no upgrade, M1).
	assignmentsLost bool

	// consumer is the group's consumer-protocol state (KIP-848), nil
	// for a classic group.
	consumer *consumerGroup
	// retired is the consumer state a downgrade (rule M6) left, whose
	// writes and waiting replies are still its.
	retired *consumerGroup

	offsets       map[topicPartition]*committed
	sortedOffsets []topicPartition
	// txnOffsets are the transactions' pending offsets by producer id
	// (txnoffsets.go).
	txnOffsets map[int64]txnPending
	// emptySince is when the group last became empty (offset retention).
	emptySince time.Duration
	deleted    bool
}

// member is one member of a classic group.
type member struct {
	id                 string
	instanceID         *string
	clientID           string
	clientHost         string
	protocolType       string
	protocols          []kmsg.JoinGroupRequestProtocol
	sessionTimeoutMs   int32
	rebalanceTimeoutMs int32
	assignment         []byte

	// joinReq and joinReply are its waiting JoinGroup; syncReq and
	// syncReply its waiting SyncGroup.
	joinReq   *kmsg.JoinGroupRequest
	joinReply func(*kmsg.JoinGroupResponse)
	syncReq   *kmsg.SyncGroupRequest
	syncReply func(*kmsg.SyncGroupResponse)
	// session expires the member when it stops heartbeating.
	session env.Timer
	// synced is set once it sent its SyncGroup in this generation.
	synced bool
	// restored is set while the member is known only from the group
	// record (its chosen protocol), until it joins again.
	restored bool
}

// pendingMember is a member id handed out with MEMBER_ID_REQUIRED.
type pendingMember struct {
	id    string
	timer env.Timer
}

// metadataFor returns the member's metadata for protocol, or nil.
func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// supports reports whether the member lists protocol.
//
// A member loaded from the log (restored) is known only by the protocol
// the group chose: it counts as supporting any until it joins again, so
// that a member offering another protocol the members share is not
// refused (groups seed 1670); the rebalance that member starts chooses
// among the members that rejoin.
func (m *member) supports(protocol string) bool {
	return m.restored || slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == protocol })
}

// Name is the group's id.
func (g *Group) Name() string { return g.name }

// State is the group's state.
func (g *Group) State() State { return g.state }

// Generation is the group's generation.
func (g *Group) Generation() int32 { return g.generation }

// ProtocolType is the members' protocol type ("consumer" for consumers).
func (g *Group) ProtocolType() string { return g.protocolType }

func (g *Group) member(id string) *member { return g.byID[id] }

// memberByInstance returns the static member with instance id inst.
func (g *Group) memberByInstance(inst string) *member {
	for _, m := range g.members {
		if m.instanceID != nil && *m.instanceID == inst {
			return m
		}
	}
	return nil
}

// newMemberID is Kafka's: the client id, a dash and a random UUID (the
// instance id instead of the client id for a static member).
func (g *Group) newMemberID(clientID string, instanceID *string) string {
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	r := g.s.e.Rand()
	var u [16]byte
	for i := range u {
		u[i] = byte(r.Uint32())
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Client describes the connection a request came on.
type Client struct {
	ID   string // the request header's client id
	Host string // the remote address, as DescribeGroups shows it
}

// failWith is an early answer of a request: fail(e) sets e's code in
// resp's code field and replies resp.
func failWith[R any](resp R, code *int16, reply func(R)) func(e *kerr.Error) {
	return func(e *kerr.Error) {
		*code = e.Code
		reply(resp)
	}
}

// Join handles JoinGroup; reply runs once, now or when the rebalance
// completes.
func (s *Shard) Join(req *kmsg.JoinGroupRequest, c Client, reply func(*kmsg.JoinGroupResponse)) {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Generation = -1
	fail := failWith(resp, &resp.ErrorCode, reply)
	if e := s.status.Err(); e != nil {
		fail(e)
		return
	}
	switch {
	case req.Group == "":
		fail(kerr.InvalidGroupID)
		return
	case req.SessionTimeoutMillis < int32(s.cfg.MinSessionTimeout.Milliseconds()) ||
		int64(req.SessionTimeoutMillis) > s.cfg.MaxSessionTimeout.Milliseconds():
		fail(kerr.InvalidSessionTimeout)
		return
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	for i, p := range req.Protocols {
		if len(p.Metadata) > s.cfg.MaxMemberMetadataBytes || p.Name == "" {
			fail(kerr.InvalidRequest)
			return
		}
		for _, q := range req.Protocols[:i] {
			if q.Name == p.Name {
				fail(kerr.InvalidRequest)
				return
			}
		}
	}
	if req.Version == 0 {
		req.RebalanceTimeoutMillis = req.SessionTimeoutMillis
	}
	g := s.group(req.Group, true)
	if g.state == StateDead {
		fail(kerr.CoordinatorNotAvailable)
		return
	}
	if g.consumer != nil {
		if len(g.consumer.members) > 0 {
			m := g.consumer.byID[req.MemberID]
			if s.cfg.MigrationPolicy.upgrade() || (m != nil && m.classic != nil) {
				g.classicJoinConsumer(req, c, resp, reply) // rule M2
				return
			}
			fail(kerr.InconsistentGroupProtocol)
			return
		}
		if g.consumer.issued != g.consumer.completed {
			fail(kerr.InconsistentGroupProtocol)
			return
		}
		g.toClassic()
	}
	if !g.protocolsMatch(req) {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	if req.MemberID == "" {
		g.joinUnknown(req, c, resp, reply)
		return
	}
	if req.InstanceID != nil {
		if e := g.checkInstance(*req.InstanceID, req.MemberID); e != nil {
			fail(e)
			return
		}
	}
	if i := slices.IndexFunc(g.pending, func(p pendingMember) bool { return p.id == req.MemberID }); i >= 0 {
		g.stopPending(i)
		if len(g.members) >= s.cfg.MaxSize {
			fail(kerr.GroupMaxSizeReached)
			return
		}
		g.addMember(g.newMember(req.MemberID, req, c), req, reply)
		return
	}
	m := g.member(req.MemberID)
	if m == nil {
		fail(kerr.UnknownMemberID)
		return
	}
	switch g.state {
	case StatePreparingRebalance:
		g.updateMember(m, req, reply)
	case StateCompletingRebalance:
		if m.sameProtocols(req) {
			// The member missed its answer: give it again.
			g.fillJoin(m, resp)
			reply(resp)
			return
		}
		g.updateMember(m, req, reply)
	case StateStable:
		if m.id != g.leader && m.sameProtocols(req) {
			g.fillJoin(m, resp)
			g.touch(m)
			reply(resp)
			return
		}
		g.updateMember(m, req, reply)
	default:
		fail(kerr.UnknownMemberID)
	}
}

// joinUnknown handles a JoinGroup without a member id.
func (g *Group) joinUnknown(req *kmsg.JoinGroupRequest, c Client, resp *kmsg.JoinGroupResponse, reply func(*kmsg.JoinGroupResponse)) {
	if req.InstanceID != nil {
		if old := g.memberByInstance(*req.InstanceID); old != nil {
			g.replaceStatic(old, req, c, resp, reply)
			return
		}
	}
	if len(g.members)+len(g.pending) >= g.s.cfg.MaxSize {
		resp.ErrorCode = kerr.GroupMaxSizeReached.Code
		reply(resp)
		return
	}
	id := g.newMemberID(c.ID, req.InstanceID)
	if req.Version >= 4 && req.InstanceID == nil {
		// KIP-394: the member joins again with this id; until then it
		// is pending, for one session timeout.
		pm := pendingMember{id: id}
		pm.timer = g.s.e.AfterFunc(time.Duration(req.SessionTimeoutMillis)*time.Millisecond, func() {
			if i := slices.IndexFunc(g.pending, func(p pendingMember) bool { return p.id == id }); i >= 0 {
				g.pending = slices.Delete(g.pending, i, i+1)
			}
		})
		g.pending = append(g.pending, pm)
		resp.MemberID = id
		resp.ErrorCode = kerr.MemberIDRequired.Code
		reply(resp)
		return
	}
	g.addMember(g.newMember(id, req, c), req, reply)
}

func (g *Group) newMember(id string, req *kmsg.JoinGroupRequest, c Client) *member {
	m := &member{id: id, instanceID: req.InstanceID, clientID: c.ID, clientHost: c.Host}
	m.setJoin(req)
	return m
}

// setJoin takes a JoinGroup's protocols and timeouts.
func (m *member) setJoin(req *kmsg.JoinGroupRequest) {
	m.restored = false
	m.protocolType = req.ProtocolType
	m.protocols = slices.Clone(req.Protocols)
	m.sessionTimeoutMs, m.rebalanceTimeoutMs = req.SessionTimeoutMillis, req.RebalanceTimeoutMillis
}

// sameProtocols reports whether req lists the member's protocols and
// metadata unchanged.
func (m *member) sameProtocols(req *kmsg.JoinGroupRequest) bool {
	return slices.EqualFunc(m.protocols, req.Protocols, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// checkInstance checks a static member's instance id against its member
// id: an unknown instance is UNKNOWN_MEMBER_ID, a known one with another
// member id FENCED_INSTANCE_ID (an older incarnation of the member).
func (g *Group) checkInstance(inst, memberID string) *kerr.Error {
	m := g.memberByInstance(inst)
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case m.id != memberID:
		return kerr.FencedInstanceID
	}
	return nil
}

// protocolsMatch reports whether a joining member can be in the group: the
// same protocol type, and (with members) at least one protocol every
// current member supports.
func (g *Group) protocolsMatch(req *kmsg.JoinGroupRequest) bool {
	if len(g.members) == 0 {
		return true
	}
	if req.ProtocolType != g.protocolType {
		return false
	}
	for _, p := range req.Protocols {
		if g.allSupport(p.Name, nil) {
			return true
		}
	}
	return false
}

// allSupport reports whether every member but except supports protocol.
func (g *Group) allSupport(protocol string, except *member) bool {
	for _, m := range g.members {
		if m != except && !m.supports(protocol) {
			return false
		}
	}
	return true
}

// replaceStatic gives a static member's place to its new incarnation
// (KIP-345): the old member id is fenced, and with unchanged metadata in a
// stable group the new one gets the old assignment without a rebalance
// (once the new member id is written).
func (g *Group) replaceStatic(old *member, req *kmsg.JoinGroupRequest, c Client, resp *kmsg.JoinGroupResponse, reply func(*kmsg.JoinGroupResponse)) {
	oldID := old.id
	newID := g.newMemberID(c.ID, req.InstanceID)
	g.fence(old)
	delete(g.byID, oldID)
	old.id = newID
	old.clientID, old.clientHost = c.ID, c.Host
	g.byID[newID] = old
	if g.leader == oldID {
		g.leader = newID
	}
	if g.state == StateStable && old.sameProtocols(req) {
		old.sessionTimeoutMs, old.rebalanceTimeoutMs = req.SessionTimeoutMillis, req.RebalanceTimeoutMillis
		g.writing = true
		g.s.write([]Record{groupRecord(g, g.s.e.Now().UnixMilli())}, func(err error) {
			defer g.writeDone()
			if err != nil {
				// Undo: the old member id stays the one on record.
				if g.byID[newID] == old {
					delete(g.byID, newID)
					old.id = oldID
					g.byID[oldID] = old
					if g.leader == newID {
						g.leader = oldID
					}
				}
				resp.ErrorCode = writeErrorCode(err).Code
				reply(resp)
				return
			}
			g.fillJoin(old, resp)
			if resp.LeaderID == newID {
				resp.SkipAssignment = true // KIP-814: the leader keeps the assignment
			}
			g.touch(old)
			reply(resp)
		})
		return
	}
	g.updateMember(old, req, reply)
}

// fence answers an old static member's waiting requests
// FENCED_INSTANCE_ID.
func (g *Group) fence(m *member) {
	g.failJoin(m, kerr.FencedInstanceID.Code)
	g.failSync(m, kerr.FencedInstanceID.Code)
}

// addMember adds a new member with its JoinGroup waiting and rebalances.
func (g *Group) addMember(m *member, req *kmsg.JoinGroupRequest, reply func(*kmsg.JoinGroupResponse)) {
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.members = append(g.members, m)
	g.byID[m.id] = m
	m.joinReq, m.joinReply = req, reply
	g.joining++
	g.touch(m)
	g.rebalance("member " + m.id + " joined")
}

// updateMember takes a known member's new JoinGroup and rebalances.
func (g *Group) updateMember(m *member, req *kmsg.JoinGroupRequest, reply func(*kmsg.JoinGroupResponse)) {
	m.setJoin(req)
	g.failJoin(m, kerr.RebalanceInProgress.Code) // a newer JoinGroup replaces the waiting one
	m.joinReq, m.joinReply = req, reply
	g.joining++
	g.touch(m)
	g.rebalance("member " + m.id + " rejoined")
}

// removeMember drops a member (left, timed out, or missed a rebalance).
func (g *Group) removeMember(m *member, why string) {
	g.s.log.Info("group member removed", "group", g.name, "member", m.id, "reason", why)
	if m.session != nil {
		m.session.Stop()
		m.session = nil
	}
	g.failJoin(m, kerr.UnknownMemberID.Code)
	g.failSync(m, kerr.UnknownMemberID.Code)
	g.members = slices.DeleteFunc(g.members, func(x *member) bool { return x == m })
	delete(g.byID, m.id)
	if g.leader == m.id {
		g.leader = ""
	}
}

// answerJoin sends a member's waiting JoinGroup its answer.
func (g *Group) answerJoin(m *member, r *kmsg.JoinGroupResponse) {
	reply := m.joinReply
	m.joinReq, m.joinReply = nil, nil
	g.joining--
	assert.That(g.joining >= 0, "group %s: joining count went negative", g.name)
	reply(r)
}

// failJoin answers a member's waiting JoinGroup, if any, with code.
func (g *Group) failJoin(m *member, code int16) {
	if m.joinReply == nil {
		return
	}
	r := m.joinReq.ResponseKind().(*kmsg.JoinGroupResponse)
	r.ErrorCode, r.Generation = code, -1
	g.answerJoin(m, r)
}

// failSync answers a member's waiting SyncGroup, if any, with code.
func (g *Group) failSync(m *member, code int16) {
	if m.syncReply == nil {
		return
	}
	r := m.syncReq.ResponseKind().(*kmsg.SyncGroupResponse)
	r.ErrorCode = code
	g.answerSync(m, r)
}

// answerSync sends a member's waiting SyncGroup its answer.
func (g *Group) answerSync(m *member, r *kmsg.SyncGroupResponse) {
	reply := m.syncReply
	m.syncReq, m.syncReply = nil, nil
	reply(r)
}

// touch restarts a member's session timer.
func (g *Group) touch(m *member) {
	if m.session != nil {
		m.session.Stop()
	}
	if !g.s.status.Serving() {
		return
	}
	m.session = g.s.e.AfterFunc(time.Duration(m.sessionTimeoutMs)*time.Millisecond, func() {
		m.session = nil
		if g.byID[m.id] != m {
			return
		}
		if m.joinReply != nil && g.state == StatePreparingRebalance {
			return // waiting in a rebalance: the rebalance timeout decides
		}
		g.removeMember(m, "session timeout")
		g.rebalance("member " + m.id + " timed out")
	})
}

// rebalance moves the group to PreparingRebalance (again), or completes
// the rebalance at once if every member is waiting in JoinGroup.
func (g *Group) rebalance(why string) {
	if g.state == StateDead {
		return
	}
	if g.state == StateCompletingRebalance {
		g.assignmentsLost = true
		// Members waiting in SyncGroup must join again.
		for _, m := range g.members {
			m.assignment = nil
			g.failSync(m, kerr.RebalanceInProgress.Code)
		}
	}
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
	wasEmpty := g.state == StateEmpty
	if g.state != StatePreparingRebalance {
		g.s.log.Info("group rebalancing", "group", g.name, "generation", g.generation, "reason", why)
	}
	g.state = StatePreparingRebalance
	if len(g.members) == 0 {
		g.completeRebalance()
		return
	}
	if wasEmpty && g.s.cfg.InitialRebalanceDelay > 0 {
		g.initialDelay = true
		g.startRebalanceTimer(min(g.s.cfg.InitialRebalanceDelay, g.maxRebalanceTimeout()))
		return
	}
	if g.initialDelay {
		return // the initial delay's timer completes it
	}
	if g.joining == len(g.members) {
		g.completeRebalance()
		return
	}
	g.startRebalanceTimer(g.maxRebalanceTimeout())
}

func (g *Group) startRebalanceTimer(d time.Duration) {
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
	}
	gen := g.generation
	g.rebalanceTimer = g.s.e.AfterFunc(d, func() {
		g.rebalanceTimer = nil
		if g.generation != gen || g.state != StatePreparingRebalance {
			return
		}
		if g.initialDelay {
			g.initialDelay = false
			if g.joining < len(g.members) {
				g.startRebalanceTimer(g.maxRebalanceTimeout())
				return
			}
		}
		g.completeRebalance()
	})
}

// maxRebalanceTimeout is the largest rebalance timeout of the members.
func (g *Group) maxRebalanceTimeout() time.Duration {
	var ms int32
	for _, m := range g.members {
		ms = max(ms, m.rebalanceTimeoutMs)
	}
	return time.Duration(ms) * time.Millisecond
}

// completeRebalance ends PreparingRebalance: members that did not join are
// removed, the generation is bumped, a protocol is chosen, and every
// member gets its JoinGroup answer.
func (g *Group) completeRebalance() {
	if g.state != StatePreparingRebalance {
		return
	}
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
		g.rebalanceTimer = nil
	}
	g.initialDelay = false
	for _, m := range slices.Clone(g.members) {
		if m.joinReply == nil {
			g.removeMember(m, "did not join the rebalance in time")
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader = StateEmpty, "", ""
		g.emptySince = g.s.e.Monotonic()
		g.s.log.Info("group is empty", "group", g.name, "generation", g.generation)
		g.s.write([]Record{groupRecord(g, g.s.e.Now().UnixMilli())}, func(err error) {
			if err != nil {
				g.s.log.Warn("writing the empty group failed", "group", g.name, "err", err)
			}
		})
		return
	}
	g.protocol = g.chooseProtocol()
	if g.leader == "" || g.byID[g.leader] == nil {
		g.leader = g.members[0].id
	}
	g.state = StateCompletingRebalance
	g.s.log.Info("group rebalanced", "group", g.name, "generation", g.generation, "protocol", g.protocol,
		"leader", g.leader, "members", len(g.members))
	for _, m := range g.members {
		m.synced = false
		r := m.joinReq.ResponseKind().(*kmsg.JoinGroupResponse)
		g.fillJoin(m, r)
		g.answerJoin(m, r)
		g.touch(m)
	}
	gen := g.generation
	g.syncTimer = g.s.e.AfterFunc(g.maxRebalanceTimeout(), func() {
		g.syncTimer = nil
		if g.generation != gen || g.state != StateCompletingRebalance {
			return
		}
		for _, m := range slices.Clone(g.members) {
			if !m.synced {
				g.removeMember(m, "did not sync in time")
			}
		}
		g.rebalance("members did not sync in time")
	})
}

// chooseProtocol is Kafka's vote: among the protocols every member
// supports, each member votes for the first it lists; the most votes win,
// ties going to the one the first member prefers.
func (g *Group) chooseProtocol() string {
	var candidates []string
	for _, p := range g.members[0].protocols {
		if g.allSupport(p.Name, nil) {
			candidates = append(candidates, p.Name)
		}
	}
	assert.That(len(candidates) > 0, "group %s: no protocol every member supports", g.name)
	votes := make([]int, len(candidates))
	for _, m := range g.members {
		for _, p := range m.protocols {
			if i := slices.Index(candidates, p.Name); i >= 0 {
				votes[i]++
				break
			}
		}
	}
	best := 0
	for i := range candidates {
		if votes[i] > votes[best] {
			best = i
		}
	}
	return candidates[best]
}

// fillJoin fills a JoinGroup answer for m in the current generation: the
// leader gets every member's metadata for the chosen protocol.
func (g *Group) fillJoin(m *member, r *kmsg.JoinGroupResponse) {
	r.ErrorCode = 0
	r.Generation, r.LeaderID, r.MemberID = g.generation, g.leader, m.id
	r.ProtocolType, r.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
	r.Members = nil
	if m.id == g.leader {
		for _, x := range g.members {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = x.id, x.instanceID, x.metadataFor(g.protocol)
			r.Members = append(r.Members, jm)
		}
	}
}

// Sync handles SyncGroup; reply runs once, now or once the leader's
// assignment is written.
func (s *Shard) Sync(req *kmsg.SyncGroupRequest, reply func(*kmsg.SyncGroupResponse)) {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	fail := failWith(resp, &resp.ErrorCode, reply)
	if e := s.status.Err(); e != nil {
		fail(e)
		return
	}
	g := s.group(req.Group, false)
	if g == nil || g.state == StateDead {
		fail(kerr.UnknownMemberID)
		return
	}
	if g.consumer != nil {
		g.classicSyncConsumer(req, resp, reply) // rule M3
		return
	}
	if req.InstanceID != nil {
		if e := g.checkInstance(*req.InstanceID, req.MemberID); e != nil {
			fail(e)
			return
		}
	}
	m := g.member(req.MemberID)
	switch {
	case m == nil:
		fail(kerr.UnknownMemberID)
		return
	case req.Generation != g.generation:
		fail(kerr.IllegalGeneration)
		return
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	for _, a := range req.GroupAssignment {
		if len(a.MemberAssignment) > s.cfg.MaxMemberMetadataBytes {
			fail(kerr.InvalidRequest)
			return
		}
	}
	switch g.state {
	case StatePreparingRebalance:
		fail(kerr.RebalanceInProgress)
	case StateStable:
		g.touch(m)
		resp.ProtocolType, resp.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
		resp.MemberAssignment = m.assignment
		reply(resp)
	case StateCompletingRebalance:
		g.failSync(m, kerr.RebalanceInProgress.Code)
		m.synced = true
		m.syncReq, m.syncReply = req, reply
		g.touch(m)
		if m.id == g.leader && !g.writing {
			g.storeAssignment(req)
		}
	default:
		fail(kerr.UnknownMemberID)
	}
}

// writeDone ends a write of the group's record (writing) and writes
// the assignment of the leader's SyncGroup that came meanwhile: Sync
// leaves it waiting while a write is in flight (one write of the group
// at a time), so a rebalance that completed during the write, or during
// the previous generation's assignment write, would otherwise stay in
// CompletingRebalance until its members' sessions expired (Kafka
// answers a SyncGroup waiting for the leader's as soon as the leader's
// comes).
func (g *Group) writeDone() {
	g.writing = false
	if g.state != StateCompletingRebalance {
		return
	}
	if l := g.byID[g.leader]; l != nil && l.syncReq != nil {
		g.storeAssignment(l.syncReq)
	}
}

// storeAssignment writes the leader's assignment with the group record and
// then answers every waiting SyncGroup; the group is Stable.
func (g *Group) storeAssignment(req *kmsg.SyncGroupRequest) {
	assign := make(map[string][]byte, len(req.GroupAssignment))
	for _, a := range req.GroupAssignment {
		assign[a.MemberID] = a.MemberAssignment
	}
	for _, m := range g.members {
		if plant.Is(plant.GroupStaleAssignment) && len(assign[m.id]) < len(m.assignment) {
			continue
		}
		m.assignment = assign[m.id]
	}
	gen := g.generation
	g.writing = true
	write := g.s.write
	if plant.Is(plant.GroupSyncBeforeWrite) {
		write = func(recs []Record, done func(error)) { g.s.write(recs, func(error) {}); done(nil) }
	}
	write([]Record{groupRecord(g, g.s.e.Now().UnixMilli())}, func(err error) {
		if g.generation != gen || g.state != StateCompletingRebalance {
			// A rebalance began meanwhile; its members were told, and
			// its leader's SyncGroup may be waiting for this write.
			g.writeDone()
			return
		}
		g.writing = false
		if err != nil {
			g.s.log.Warn("writing the group's assignment failed", "group", g.name, "generation", gen, "err", err)
			code := writeErrorCode(err).Code
			for _, m := range g.members {
				m.assignment = nil
				g.failSync(m, code)
			}
			g.rebalance("the assignment could not be written")
			return
		}
		g.state, g.assignmentsLost = StateStable, false
		if g.syncTimer != nil {
			g.syncTimer.Stop()
			g.syncTimer = nil
		}
		for _, m := range g.members {
			if m.syncReply != nil {
				r := m.syncReq.ResponseKind().(*kmsg.SyncGroupResponse)
				r.ProtocolType, r.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
				r.MemberAssignment = m.assignment
				g.answerSync(m, r)
			}
		}
	})
}

// Heartbeat handles Heartbeat.
func (s *Shard) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if e := s.status.Err(); e != nil {
		resp.ErrorCode = e.Code
		return resp
	}
	g := s.group(req.Group, false)
	if g == nil || g.state == StateDead {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	if g.consumer != nil {
		g.classicBeatConsumer(req, resp) // rule M4
		return resp
	}
	if req.InstanceID != nil {
		if e := g.checkInstance(*req.InstanceID, req.MemberID); e != nil {
			resp.ErrorCode = e.Code
			return resp
		}
	}
	m := g.member(req.MemberID)
	switch {
	case m == nil:
		resp.ErrorCode = kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		resp.ErrorCode = kerr.IllegalGeneration.Code
	case g.state == StatePreparingRebalance:
		g.touch(m)
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	case g.state == StateCompletingRebalance, g.state == StateStable:
		if !plant.Is(plant.GroupHeartbeatKeepsNoSession) {
			g.touch(m)
		}
	default:
		resp.ErrorCode = kerr.UnknownMemberID.Code
	}
	return resp
}

// Leave handles LeaveGroup (v3+: a batch of members, static ones by
// instance id).
func (s *Shard) Leave(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if e := s.status.Err(); e != nil {
		resp.ErrorCode = e.Code
		return resp
	}
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	g := s.group(req.Group, false)
	if g != nil && g.consumer != nil && g.state != StateDead {
		// Rule M5: classic members of a consumer group.
		for i, lm := range leaving {
			if g.consumer == nil {
				// Downgraded (M6) by an earlier leave: the rest leave
				// the classic group.
				rest := kmsg.NewPtrLeaveGroupRequest()
				rest.Version, rest.Group, rest.Members = 3, req.Group, leaving[i:]
				g.flush(nil)
				resp.Members = append(resp.Members, s.Leave(rest).Members...)
				break
			}
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.InstanceID = lm.InstanceID
			rm.MemberID, rm.ErrorCode = g.classicLeaveConsumer(lm)
			resp.Members = append(resp.Members, rm)
		}
		g.flush(nil)
		if req.Version < 3 {
			resp.ErrorCode, resp.Members = resp.Members[0].ErrorCode, nil
		}
		return resp
	}
	var left []string
	for _, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		code := int16(0)
		switch {
		case g == nil || g.state == StateDead:
			code = kerr.UnknownMemberID.Code
		case lm.InstanceID != nil:
			m := g.memberByInstance(*lm.InstanceID)
			switch {
			case m == nil:
				code = kerr.UnknownMemberID.Code
			case lm.MemberID != "" && lm.MemberID != m.id:
				code = kerr.FencedInstanceID.Code
			default:
				rm.MemberID = m.id
				g.removeMember(m, "left (static)")
				left = append(left, m.id)
			}
		default:
			if i := slices.IndexFunc(g.pending, func(p pendingMember) bool { return p.id == lm.MemberID }); i >= 0 {
				g.stopPending(i)
				break
			}
			m := g.member(lm.MemberID)
			if m == nil {
				code = kerr.UnknownMemberID.Code
				break
			}
			g.removeMember(m, "left")
			left = append(left, m.id)
		}
		rm.ErrorCode = code
		resp.Members = append(resp.Members, rm)
	}
	if req.Version < 3 {
		resp.ErrorCode, resp.Members = resp.Members[0].ErrorCode, nil
	}
	if len(left) > 0 {
		g.rebalance(fmt.Sprintf("%d member(s) left", len(left)))
	}
	return resp
}

func (g *Group) stopPending(i int) {
	g.pending[i].timer.Stop()
	g.pending = slices.Delete(g.pending, i, i+1)
}

// stopTimers stops every timer of the group (unload, deletion).
func (g *Group) stopTimers() {
	for _, t := range []env.Timer{g.rebalanceTimer, g.syncTimer} {
		if t != nil {
			t.Stop()
		}
	}
	g.rebalanceTimer, g.syncTimer = nil, nil
	for _, m := range g.members {
		if m.session != nil {
			m.session.Stop()
			m.session = nil
		}
	}
	for _, p := range g.pending {
		p.timer.Stop()
	}
	g.pending = nil
	g.stopConsumerTimers()
}

// failWaiting answers every waiting JoinGroup and SyncGroup with e.
func (g *Group) failWaiting(e *kerr.Error) {
	for _, m := range g.members {
		g.failJoin(m, e.Code)
		g.failSync(m, e.Code)
	}
}

// restore loads a group record while replaying: the group as of its last
// written generation. A stable group comes back Stable with its members
// (who must heartbeat to the new coordinator), an empty one Empty.
func (g *Group) restore(v *kmsg.GroupMetadataValue) error {
	g.protocolType, g.generation = v.ProtocolType, v.Generation
	g.protocol, g.leader = "", ""
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	g.members, g.byID = nil, map[string]*member{}
	for _, vm := range v.Members {
		if g.byID[vm.MemberID] != nil {
			return fmt.Errorf("%w: group %s lists member %s twice", ErrBadRecord, g.name, vm.MemberID)
		}
		m := &member{id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			protocolType: v.ProtocolType, sessionTimeoutMs: vm.SessionTimeoutMillis, rebalanceTimeoutMs: vm.RebalanceTimeoutMillis,
			assignment: vm.Assignment, synced: true, restored: true}
		if m.rebalanceTimeoutMs < 0 {
			m.rebalanceTimeoutMs = m.sessionTimeoutMs
		}
		m.protocols = []kmsg.JoinGroupRequestProtocol{{Name: g.protocol, Metadata: vm.Subscription}}
		g.members = append(g.members, m)
		g.byID[m.id] = m
	}
	if len(g.members) == 0 {
		g.state = StateEmpty
		g.emptySince = g.s.e.Monotonic()
	} else {
		g.state = StateStable
	}
	return nil
}
