package group

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// # Online migration between the protocols (group.consumer.migration.policy)
//
// A rolling restart of consumers from group.protocol=classic to consumer
// (or back) goes through a consumer group some of whose members are
// classic members: they keep speaking JoinGroup, SyncGroup, Heartbeat and
// LeaveGroup, and the coordinator treats them as consumer members whose
// subscription and owned partitions come from their JoinGroup metadata
// (Kafka's GroupMetadataManager, classicGroup*ToConsumerGroup).
//
//  M1. Upgrade. A consumer-protocol member joining (epoch 0) a classic
//     group with members converts it, if the policy allows upgrade, the
//     group is Stable, or PreparingRebalance with the members' last
//     assignments known (not after a CompletingRebalance was cut short),
//     with no assignment being written, and every
//     member's metadata and assignment decode as the ConsumerProtocol's:
//     the group epoch and the assignment epoch become the generation,
//     and each classic member keeps its place, its epoch (the generation)
//     and its assignment, which is its target too. The classic record is
//     tombstoned. Classic members waiting in JoinGroup are answered
//     REBALANCE_IN_PROGRESS. The joining member then bumps the epoch
//     (rule 1).
//     Otherwise: GROUP_ID_NOT_FOUND, as with the policy disabled.
//  M2. A classic member's JoinGroup is a heartbeat with all its fields:
//     its subscription is the metadata's topics (a change bumps the
//     epoch), and what it owns is the metadata's owned partitions for a
//     cooperative member, nothing for an eager one (which revoked all
//     before it rejoined). It reconciles (rule 2) and is answered, once
//     written, with its member epoch as the generation and no leader
//     (the coordinator assigns). A new classic member (a restarted one)
//     may join a consumer group with members only if the policy allows
//     upgrade; without a member id v4+ gets MEMBER_ID_REQUIRED first.
//  M3. Its SyncGroup must carry its epoch (ILLEGAL_GENERATION) and is
//     answered, once written, with its current assignment (rule 2's
//     A∩T while it revokes), as a ConsumerProtocol assignment.
//  M4. Its Heartbeat must carry its epoch (ILLEGAL_GENERATION); while it
//     is not Stable at the assignment epoch it is answered
//     REBALANCE_IN_PROGRESS, so it rejoins (M2) and moves. Its session is
//     its own session.timeout.ms, its revocation bound its
//     rebalance.timeout.ms.
//  M5. Its LeaveGroup (or session timeout) removes it as rule 5 does.
//  M6. Downgrade. When a removal leaves only classic members and the
//     policy allows downgrade, the group becomes a classic group of them
//     instead of bumping its epoch: generation the group epoch, each
//     member's assignment its current one, every consumer record
//     tombstoned and the classic record written; then a rebalance, which
//     the members learn of in their Heartbeat.
//
// Revoke before assign (rule 3) holds throughout: classic members hold
// partitions in the same owners index.

// MigrationPolicy is group.consumer.migration.policy.
type MigrationPolicy string

// The policies (Kafka's ConsumerGroupMigrationPolicy).
const (
	MigrationDisabled      MigrationPolicy = "disabled"
	MigrationUpgrade       MigrationPolicy = "upgrade"
	MigrationDowngrade     MigrationPolicy = "downgrade"
	MigrationBidirectional MigrationPolicy = "bidirectional"

	DefaultMigrationPolicy = MigrationBidirectional
)

// ParseMigrationPolicy reads a policy, case-insensitively.
func ParseMigrationPolicy(s string) (MigrationPolicy, error) {
	for _, p := range []MigrationPolicy{MigrationDisabled, MigrationUpgrade, MigrationDowngrade, MigrationBidirectional} {
		if equalFold(s, string(p)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown migration policy %q; want disabled, upgrade, downgrade or bidirectional", s)
}

func (p MigrationPolicy) upgrade() bool {
	return p == MigrationUpgrade || p == MigrationBidirectional
}

func (p MigrationPolicy) downgrade() bool {
	return p == MigrationDowngrade || p == MigrationBidirectional
}

// classicMeta is what a classic member of a consumer group joined with
// (Kafka's ClassicMemberMetadata).
type classicMeta struct {
	sessionTimeoutMs int32
	protocols        []kmsg.JoinGroupRequestProtocol
}

// consumerProtocol returns the first of protocols whose metadata is a
// ConsumerProtocol subscription, and that subscription.
func consumerProtocol(protocols []kmsg.JoinGroupRequestProtocol) (string, *kmsg.ConsumerMemberMetadata, bool) {
	for _, p := range protocols {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(p.Metadata); err == nil {
			return p.Name, &meta, true
		}
	}
	return "", nil, false
}

// protocol is the protocol the classic member uses here.
func (c *classicMeta) protocol() string {
	name, _, _ := consumerProtocol(c.protocols)
	return name
}

// namedParts are a topic's partitions by the topic's name, as the
// ConsumerProtocol's subscription and assignment carry them.
type namedParts struct {
	topic      string
	partitions []int32
}

// partsByName maps partitions by topic name to parts of the image's
// topics; others are left out.
func (s *Shard) partsByName(topics []namedParts) parts {
	var out parts
	for _, np := range topics {
		t, ok := s.topic(np.topic)
		if !ok {
			continue
		}
		for _, p := range np.partitions {
			if p >= 0 && p < t.Partitions {
				out = append(out, tpid{t.ID, p})
			}
		}
	}
	return slices.Compact(sortParts(out))
}

// encodeAssignment is p as a ConsumerProtocol assignment (v0).
func (s *Shard) encodeAssignment(p parts) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	p.grouped(func(topic [16]byte, ps []int32) {
		i, ok := s.topicIDs[topic]
		if !ok {
			return
		}
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = s.topics[i].Name, slices.Clone(ps)
		a.Topics = append(a.Topics, at)
	})
	return a.AppendTo(nil)
}

// upgradable reports whether rule M1 lets g (classic, with members)
// become a consumer group now.
func (g *Group) upgradable() bool {
	switch {
	case !g.s.cfg.MigrationPolicy.upgrade(), g.writing, g.assignmentsLost, g.protocolType != "consumer":
		return false
	case g.state != StateStable && g.state != StatePreparingRebalance:
		return false
	}
	for _, m := range g.members {
		if _, _, ok := consumerProtocol(m.protocols); !ok {
			return false
		}
		if len(m.assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(m.assignment); err != nil {
				return false
			}
		}
	}
	return true
}

// upgradeToConsumer is rule M1.
func (g *Group) upgradeToConsumer() {
	classic, gen := g.members, g.generation
	g.failWaiting(kerr.RebalanceInProgress) // they rejoin the consumer group (M2)
	g.stopTimers()
	g.newConsumerGroup()
	cg := g.consumer
	cg.epoch, cg.assignmentEpoch = gen, gen
	cg.records = append(cg.records, classicTombstone(g.name))
	for _, cm := range classic {
		_, meta, _ := consumerProtocol(cm.protocols)
		m := &consumerMember{id: cm.id, instanceID: cm.instanceID, clientID: cm.clientID, clientHost: cm.clientHost,
			rebalanceTimeoutMs: cm.rebalanceTimeoutMs,
			classic:            &classicMeta{sessionTimeoutMs: cm.sessionTimeoutMs, protocols: slices.Clone(cm.protocols)}}
		m.topicNames = sortedNames(meta.Topics)
		var assigned parts
		if len(cm.assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			_ = a.ReadFrom(cm.assignment) // upgradable checked it
			var topics []namedParts
			for _, t := range a.Topics {
				topics = append(topics, namedParts{t.Topic, t.Partitions})
			}
			// A partition the leader gave twice stays with the first.
			assigned = slices.DeleteFunc(g.s.partsByName(topics), func(tp tpid) bool { return cg.owners[tp] != nil })
		}
		cg.members = append(cg.members, m)
		cg.byID[m.id] = m
		m.target = assigned
		g.setAssignment(m, memberStable, gen, assigned, nil)
		m.previousEpoch = gen
		cg.records = append(cg.records, memberMetadataRecord(g.name, m), targetMemberRecord(g.name, m.id, m.target))
		g.touchConsumer(m)
	}
	cg.subscribed = g.resolveSubscriptions()
	cg.records = append(cg.records, consumerEpochRecord(g.name, cg.epoch), partitionMetadataRecord(g.name, cg.subscribed),
		targetEpochRecord(g.name, cg.assignmentEpoch))
	g.state = StateStable
	g.s.log.Info("group upgraded to the consumer protocol", "group", g.name, "generation", gen, "classic members", len(classic))
}

func sortedNames(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}

// classicJoinConsumer is rule M2: a JoinGroup into a consumer group.
func (g *Group) classicJoinConsumer(req *kmsg.JoinGroupRequest, c Client, resp *kmsg.JoinGroupResponse, reply func(*kmsg.JoinGroupResponse)) {
	cg := g.consumer
	fail := failWith(resp, &resp.ErrorCode, reply)
	protocol, meta, ok := consumerProtocol(req.Protocols)
	if req.ProtocolType != "consumer" || !ok {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	var m *consumerMember
	if req.MemberID != "" {
		m = cg.byID[req.MemberID]
	}
	switch {
	case m != nil && m.classic == nil:
		fail(kerr.UnknownMemberID) // a consumer-protocol member's id
		return
	case m != nil && req.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *req.InstanceID):
		fail(kerr.FencedInstanceID)
		return
	case m == nil && !g.s.cfg.MigrationPolicy.upgrade():
		fail(kerr.InconsistentGroupProtocol)
		return
	case m == nil && req.InstanceID != nil && g.consumerByInstance(*req.InstanceID) != nil:
		fail(kerr.UnreleasedInstanceID) // a static classic member's replacement is not built
		return
	case m == nil && len(cg.members) >= g.s.cfg.ConsumerMaxSize:
		fail(kerr.GroupMaxSizeReached)
		return
	case m == nil && req.MemberID == "" && req.Version >= 4 && req.InstanceID == nil:
		resp.MemberID = g.newMemberID(c.ID, nil)
		fail(kerr.MemberIDRequired)
		return
	}
	changed := false
	if m == nil {
		id := req.MemberID
		if id == "" {
			id = g.newMemberID(c.ID, req.InstanceID)
		}
		m = &consumerMember{id: id}
		cg.members = append(cg.members, m)
		cg.byID[id] = m
		changed = true
	}
	m.instanceID, m.clientID, m.clientHost, m.rebalanceTimeoutMs = req.InstanceID, c.ID, c.Host, req.RebalanceTimeoutMillis
	m.classic = &classicMeta{sessionTimeoutMs: req.SessionTimeoutMillis, protocols: slices.Clone(req.Protocols)}
	if names := sortedNames(meta.Topics); !slices.Equal(names, m.topicNames) {
		m.topicNames, changed = names, true
	}
	cg.records = append(cg.records, memberMetadataRecord(g.name, m))
	g.state = StateStable
	if changed {
		g.bumpEpoch("classic member " + m.id + " joined")
	}
	g.touchConsumer(m)
	owned := parts{} // eager: it revoked everything before it rejoined
	if len(meta.OwnedPartitions) > 0 {
		var topics []namedParts
		for _, t := range meta.OwnedPartitions {
			topics = append(topics, namedParts{t.Topic, t.Partitions})
		}
		owned = g.s.partsByName(topics)
	}
	g.reconcile(m, owned, true)
	g.flush(func(err error) {
		if err != nil {
			fail(writeErrorCode(err))
			return
		}
		resp.ErrorCode, resp.Generation, resp.MemberID = 0, m.epoch, m.id
		resp.ProtocolType, resp.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr(protocol)
		reply(resp)
	})
}

// classicSyncConsumer is rule M3.
func (g *Group) classicSyncConsumer(req *kmsg.SyncGroupRequest, resp *kmsg.SyncGroupResponse, reply func(*kmsg.SyncGroupResponse)) {
	m := g.consumer.byID[req.MemberID]
	fail := failWith(resp, &resp.ErrorCode, reply)
	switch {
	case m == nil || m.classic == nil:
		fail(kerr.UnknownMemberID)
		return
	case req.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *req.InstanceID):
		fail(kerr.FencedInstanceID)
		return
	case req.Generation != m.epoch:
		fail(kerr.IllegalGeneration)
		return
	case req.ProtocolType != nil && *req.ProtocolType != "consumer",
		req.Protocol != nil && !slices.ContainsFunc(m.classic.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == *req.Protocol }):
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	g.touchConsumer(m)
	protocol := m.classic.protocol()
	if req.Protocol != nil {
		protocol = *req.Protocol
	}
	assignment := g.s.encodeAssignment(m.assigned)
	g.flush(func(err error) {
		if err != nil {
			fail(writeErrorCode(err))
			return
		}
		resp.ProtocolType, resp.Protocol, resp.MemberAssignment = kmsg.StringPtr("consumer"), kmsg.StringPtr(protocol), assignment
		reply(resp)
	})
}

// classicBeatConsumer is rule M4.
func (g *Group) classicBeatConsumer(req *kmsg.HeartbeatRequest, resp *kmsg.HeartbeatResponse) {
	cg := g.consumer
	m := cg.byID[req.MemberID]
	switch {
	case m == nil || m.classic == nil:
		resp.ErrorCode = kerr.UnknownMemberID.Code
	case req.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *req.InstanceID):
		resp.ErrorCode = kerr.FencedInstanceID.Code
	case req.Generation != m.epoch:
		resp.ErrorCode = kerr.IllegalGeneration.Code
	default:
		g.touchConsumer(m)
		if m.state != memberStable || m.epoch != cg.assignmentEpoch {
			resp.ErrorCode = kerr.RebalanceInProgress.Code
		}
	}
}

// classicLeaveConsumer is rule M5 for one member of a LeaveGroup.
func (g *Group) classicLeaveConsumer(lm kmsg.LeaveGroupRequestMember) (string, int16) {
	cg := g.consumer
	var m *consumerMember
	if lm.InstanceID != nil {
		m = g.consumerByInstance(*lm.InstanceID)
		if m != nil && lm.MemberID != "" && lm.MemberID != m.id {
			return lm.MemberID, kerr.FencedInstanceID.Code
		}
	} else {
		m = cg.byID[lm.MemberID]
	}
	if m == nil || m.classic == nil {
		return lm.MemberID, kerr.UnknownMemberID.Code
	}
	g.removeConsumer(m, "left (classic)")
	return m.id, 0
}

// downgradable reports whether rule M6 applies: members remain, all of
// them classic.
func (g *Group) downgradable() bool {
	cg := g.consumer
	if !g.s.cfg.MigrationPolicy.downgrade() || len(cg.members) == 0 || g.deleted {
		return false
	}
	for _, m := range cg.members {
		if m.classic == nil {
			return false
		}
	}
	return true
}

// downgradeToClassic is rule M6; the records go with the group's
// pending write (flush, through retired).
func (g *Group) downgradeToClassic() {
	cg := g.consumer
	for _, r := range cg.removed {
		if cg.byID[r.id] == nil {
			cg.records = append(cg.records, memberTombstones(g.name, r.id)...)
		}
	}
	var members []*member
	for _, m := range cg.members {
		cg.records = append(cg.records, memberTombstones(g.name, m.id)...)
		members = append(members, &member{id: m.id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			protocolType: "consumer", protocols: slices.Clone(m.classic.protocols), sessionTimeoutMs: m.classic.sessionTimeoutMs,
			rebalanceTimeoutMs: m.rebalanceTimeoutMs, assignment: g.s.encodeAssignment(m.assigned), synced: true})
	}
	cg.records = append(cg.records, consumerGroupTombstones(g.name)...)
	g.stopConsumerTimers()
	cg.resync = false // the tombstones and the classic record replace everything
	g.consumer, g.retired = nil, cg
	g.protocolType, g.protocol, g.leader, g.generation = "consumer", cg.members[0].classic.protocol(), members[0].id, cg.epoch
	g.members, g.byID = members, map[string]*member{}
	for _, m := range members {
		g.byID[m.id] = m
	}
	g.state = StateStable
	cg.records = append(cg.records, groupRecord(g, g.s.e.Now().UnixMilli()))
	g.s.log.Info("group downgraded to the classic protocol", "group", g.name, "generation", g.generation, "members", len(members))
	for _, m := range members {
		g.touch(m)
	}
	g.rebalance("converted to the classic protocol")
}

// classicSession is a classic member's session timeout.
func (m *consumerMember) sessionTimeout(def time.Duration) time.Duration {
	if m.classic != nil && m.classic.sessionTimeoutMs > 0 {
		return time.Duration(m.classic.sessionTimeoutMs) * time.Millisecond
	}
	return def
}
