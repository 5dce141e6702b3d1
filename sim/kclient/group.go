package kclient

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
)

// # Group members (the classic protocol)
//
// A GroupMember is a consumer in a group, as the Java client's
// ConsumerCoordinator with the eager "range" assignor and auto-commit:
//
//  1. FindCoordinator for the group; any coordinator error or lost
//     answer later finds it again (NOT_COORDINATOR,
//     COORDINATOR_NOT_AVAILABLE, a timeout, a lost connection), after a
//     backoff. COORDINATOR_LOAD_IN_PROGRESS asks the same coordinator
//     again after a backoff.
//  2. JoinGroup (KIP-394: a first join without a member id is answered
//     MEMBER_ID_REQUIRED with the id to join with; a static member,
//     group.instance.id, joins with its instance id and gets its member id
//     at once). The leader computes the assignment client-side (range
//     per topic, members sorted by member id, as Kafka's RangeAssignor).
//  3. SyncGroup; the assignment it answers is the member's for the
//     generation. OffsetFetch of the assigned partitions gives where the
//     member starts (the earliest offset when nothing is committed).
//  4. Heartbeat every HeartbeatInterval from the JoinGroup answer on.
//     REBALANCE_IN_PROGRESS: commit what was processed, give up the
//     assignment (eager) and join again. ILLEGAL_GENERATION,
//     UNKNOWN_MEMBER_ID: the assignment is lost (no commit) and the member
//     joins again (with no member id after UNKNOWN_MEMBER_ID).
//     FENCED_INSTANCE_ID: a newer incarnation of the static member took
//     its place; the Java client stops with a fatal error, this one
//     reports it and joins again as a new incarnation would.
//  5. OffsetCommit every CommitInterval of the positions processed
//     (records delivered to OnFetch count as processed), with the member
//     id and generation the coordinator checks.
//  6. Leave sends LeaveGroup (a dynamic member; a static member leaves by
//     its session timing out, as the Java client's close does).
//
// Every request and outcome the checkers need is reported (GroupEvent):
// assignments with their generation, commits with their send time and
// outcome, fetched offsets.

// GroupConfig configures a GroupMember.
type GroupConfig struct {
	Group string
	// InstanceID makes the member static (KIP-345); empty: dynamic.
	InstanceID string
	Topics     []string
	// SessionTimeout, RebalanceTimeout, HeartbeatInterval and
	// CommitInterval are session.timeout.ms (45 s), max.poll.interval.ms
	// as the rebalance timeout (5 min), heartbeat.interval.ms (3 s) and
	// auto.commit.interval.ms (5 s); zero takes those defaults.
	SessionTimeout, RebalanceTimeout, HeartbeatInterval, CommitInterval time.Duration
	// Cooperative offers only cooperative-sticky and rebalances
	// incrementally (KIP-429): the member keeps what it owns while it
	// rejoins, and a partition moving to another member is first given
	// up, then assigned in a second rebalance. Upgrading offers
	// cooperative-sticky before range and rebalances eagerly, as the
	// Java client does while any of its assignors is eager (the first
	// step of a rolling upgrade), so it can share a group with range-only
	// members.
	Cooperative, Upgrading bool
	// Consumer configures the fetching (Topics and Manual are set by the
	// member).
	Consumer ConsumerConfig
	// OnEvent learns what the member does in the group. It must not be
	// nil.
	OnEvent func(GroupEvent)
}

// GroupEventKind says what a GroupEvent reports.
type GroupEventKind uint8

const (
	// Joined: a JoinGroup answered without error (Generation, MemberID,
	// Leader).
	Joined GroupEventKind = iota + 1
	// Assigned: a SyncGroup answered the member's assignment for
	// Generation (Partitions).
	Assigned
	// Revoked: the member gave up its assignment (Err says why).
	Revoked
	// CommitAnswered: an OffsetCommit was answered; Commits hold each
	// partition's offset and code.
	CommitAnswered
	// CommitUnknown: an OffsetCommit got no answer (Err): it may have
	// been applied.
	CommitUnknown
	// OffsetsFetched: an OffsetFetch answered without error; Commits
	// hold each partition's committed offset (-1: none).
	OffsetsFetched
	// GroupError: a group request was refused (Err names the API and
	// the code).
	GroupError
	// CommitSent: an OffsetCommit is sent (Commits) to Coordinator.
	CommitSent
	// PlanSent: the leader sends its SyncGroup with the assignment
	// (Plan; the coordinator writes it before it answers).
	PlanSent
)

func (k GroupEventKind) String() string {
	return [...]string{"?", "joined", "assigned", "revoked", "commit", "commit-unknown", "offsets", "error", "commit-sent", "plan-sent"}[k]
}

// GroupCommit is one partition of an OffsetCommit or OffsetFetch.
type GroupCommit struct {
	Topic     string
	Partition int32
	Offset    int64
	Code      int16
}

// GroupPlanEntry is one member's part of a leader's assignment.
type GroupPlanEntry struct {
	MemberID, InstanceID string
	Partitions           []TopicPartition
}

// GroupEvent is one step of a member.
type GroupEvent struct {
	Kind       GroupEventKind
	MemberID   string
	Generation int32
	Leader     string
	Partitions []TopicPartition
	Commits    []GroupCommit
	Plan       []GroupPlanEntry
	// Sent is when the request was sent (member's monotonic clock).
	Sent time.Duration
	// Coordinator is the node the request went to.
	Coordinator int32
	Err         error
}

// Defaults of GroupConfig (Kafka's).
const (
	DefaultSessionTimeout    = 45 * time.Second
	DefaultRebalanceTimeout  = 5 * time.Minute
	DefaultHeartbeatInterval = 3 * time.Second
	DefaultCommitInterval    = 5 * time.Second
)

// rangeProtocol is the eager range assignor's name; stickyProtocol the
// cooperative sticky one's.
const (
	rangeProtocol  = "range"
	stickyProtocol = "cooperative-sticky"
)

type memberState uint8

const (
	memberFinding memberState = iota // no coordinator known
	memberJoining                    // JoinGroup in flight (or due)
	memberSyncing                    // SyncGroup or OffsetFetch in flight
	memberStable                     // consuming its assignment
	memberClosed
)

// GroupMember is one consumer of a group. It runs on its client's loop.
type GroupMember struct {
	c   *Client
	cfg GroupConfig
	cn  *Consumer

	state       memberState
	coordinator int32 // -1: unknown
	memberID    string
	generation  int32
	leader      string
	// protocol is the generation's assignor (the group's choice).
	protocol string
	assigned []TopicPartition
	// committed is what the member last committed (or fetched) per
	// assigned partition: a commit is sent only for partitions that
	// moved on.
	committed map[TopicPartition]int64
	// epoch counts the member's passes through joining: answers of an
	// earlier pass are ignored.
	epoch                uint64
	failures             int
	committing           bool
	hbTimer, commitTimer env.Timer
	// rejoinAfter: a cooperative member that gave partitions up joins
	// again once it started what it gained.
	rejoinAfter bool
}

// NewGroupMember returns a member of cfg.Group on c; it starts at once.
func NewGroupMember(c *Client, cfg GroupConfig) *GroupMember {
	cfg.SessionTimeout = orDefault(cfg.SessionTimeout, DefaultSessionTimeout)
	cfg.RebalanceTimeout = orDefault(cfg.RebalanceTimeout, DefaultRebalanceTimeout)
	cfg.HeartbeatInterval = orDefault(cfg.HeartbeatInterval, DefaultHeartbeatInterval)
	cfg.CommitInterval = orDefault(cfg.CommitInterval, DefaultCommitInterval)
	cc := cfg.Consumer
	cc.Topics, cc.Manual = cfg.Topics, true
	gm := &GroupMember{c: c, cfg: cfg, coordinator: -1, generation: -1, committed: map[TopicPartition]int64{}}
	gm.cn = NewConsumer(c, cc)
	c.e.Post(gm.find)
	return gm
}

// Consumer is the member's consumer (positions, stats).
func (gm *GroupMember) Consumer() *Consumer { return gm.cn }

// MemberID, Generation and Assigned are the member's current view.
func (gm *GroupMember) MemberID() string           { return gm.memberID }
func (gm *GroupMember) Generation() int32          { return gm.generation }
func (gm *GroupMember) Assigned() []TopicPartition { return slices.Clone(gm.assigned) }

// Stable reports whether the member consumes an assignment.
func (gm *GroupMember) Stable() bool { return gm.state == memberStable }

// Close stops the member without leaving (a crash or a static member's
// close): the coordinator times it out.
func (gm *GroupMember) Close() {
	gm.state = memberClosed
	gm.stopTimers()
	gm.cn.Close()
}

// Leave sends LeaveGroup (a dynamic member) and closes; done runs with
// the answer's error, if any.
func (gm *GroupMember) Leave(done func(error)) {
	id, coord := gm.memberID, gm.coordinator
	gm.Close()
	if id == "" || coord < 0 {
		gm.c.e.Post(func() { done(fmt.Errorf("%w: not in the group", ErrNotSent)) })
		return
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group, req.MemberID = gm.cfg.Group, id
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = id
	req.Members = append(req.Members, m)
	gm.c.Do(coord, req, 0, func(r kmsg.Response, err error) {
		if resp, ok := r.(*kmsg.LeaveGroupResponse); ok && err == nil {
			code := resp.ErrorCode
			if code == 0 && len(resp.Members) == 1 {
				code = resp.Members[0].ErrorCode
			}
			err = kerr.ErrorForCode(code)
		}
		done(err)
	})
}

func (gm *GroupMember) stopTimers() {
	for _, t := range []env.Timer{gm.hbTimer, gm.commitTimer} {
		if t != nil {
			t.Stop()
		}
	}
	gm.hbTimer, gm.commitTimer = nil, nil
}

func (gm *GroupMember) instance() *string {
	if gm.cfg.InstanceID == "" {
		return nil
	}
	return kmsg.StringPtr(gm.cfg.InstanceID)
}

func (gm *GroupMember) event(ev GroupEvent) {
	if ev.MemberID == "" {
		ev.MemberID = gm.memberID
	}
	if ev.Coordinator == 0 {
		ev.Coordinator = gm.coordinator
	}
	gm.cfg.OnEvent(ev)
}

// retry runs f after the member's backoff, unless it moved on (closed or
// another pass began).
func (gm *GroupMember) retry(f func()) {
	gm.failures++
	epoch := gm.epoch
	gm.c.e.AfterFunc(gm.c.backoff(gm.failures), func() {
		if gm.state != memberClosed && gm.epoch == epoch {
			f()
		}
	})
}

// coordinatorLost forgets the coordinator after an error that says it
// moved (or a lost answer) and finds it again.
func (gm *GroupMember) coordinatorLost(code int16, err error) bool {
	if err == nil && code != kerr.NotCoordinator.Code && code != kerr.CoordinatorNotAvailable.Code {
		return false
	}
	gm.coordinator = -1
	gm.c.RefreshMetadata()
	return true
}

// find asks any broker for the group's coordinator, then joins.
func (gm *GroupMember) find() {
	if gm.state == memberClosed {
		return
	}
	if gm.coordinator >= 0 {
		gm.join()
		return
	}
	gm.state = memberFinding
	gm.epoch++
	epoch := gm.epoch
	gm.c.DoAny(findCoordinatorRequest(0, gm.cfg.Group), func(r kmsg.Response, err error) {
		if gm.state == memberClosed || gm.epoch != epoch {
			return
		}
		c, ok := coordinatorIn(r, err)
		if !ok {
			gm.retry(gm.find)
			return
		}
		if c.ErrorCode != 0 || c.NodeID < 0 {
			gm.event(GroupEvent{Kind: GroupError, Err: fmt.Errorf("FindCoordinator: %s", codeName(c.ErrorCode))})
			gm.retry(gm.find)
			return
		}
		gm.c.learnBroker(c.NodeID, c.Host, c.Port)
		gm.coordinator = c.NodeID
		gm.join()
	})
}

// revoke gives up the assignment (eager), reporting why.
func (gm *GroupMember) revoke(why error) {
	if len(gm.assigned) > 0 || gm.state == memberStable {
		gm.event(GroupEvent{Kind: Revoked, Generation: gm.generation, Partitions: gm.assigned, Err: why})
	}
	gm.cn.Unassign()
	gm.assigned = nil
	gm.rejoinAfter = false
	clear(gm.committed)
	if gm.commitTimer != nil {
		gm.commitTimer.Stop()
		gm.commitTimer = nil
	}
}

// rejoin gives up the assignment and joins again; forget drops the
// member id (after UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID).
func (gm *GroupMember) rejoin(why error, forget bool) {
	if gm.state == memberClosed {
		return
	}
	gm.revoke(why)
	if forget {
		gm.memberID = ""
		gm.generation = -1
	}
	gm.joinAgain()
}

// joinAgain stops the heartbeat and, on a later turn, finds the
// coordinator to join again, unless the member moved on meanwhile.
func (gm *GroupMember) joinAgain() {
	if gm.hbTimer != nil {
		gm.hbTimer.Stop()
		gm.hbTimer = nil
	}
	gm.state = memberJoining
	gm.epoch++
	epoch := gm.epoch
	gm.c.e.Post(func() {
		if gm.epoch == epoch {
			gm.find()
		}
	})
}

// rejoinKeeping joins again keeping the assignment (cooperative): the
// member goes on consuming what it owns, without committing, until the
// SyncGroup answer says what stays.
func (gm *GroupMember) rejoinKeeping(why error) {
	if gm.state == memberClosed {
		return
	}
	gm.rejoinAfter = false
	gm.joinAgain()
}

// addOwned adds owned to meta's owned partitions (version 2), a topic
// entry for each run of one topic.
func addOwned(meta *kmsg.ConsumerMemberMetadata, owned []TopicPartition) {
	for _, tp := range owned {
		if n := len(meta.OwnedPartitions); n == 0 || meta.OwnedPartitions[n-1].Topic != tp.Topic {
			op := kmsg.NewConsumerMemberMetadataOwnedPartition()
			op.Topic = tp.Topic
			meta.OwnedPartitions = append(meta.OwnedPartitions, op)
		}
		meta.OwnedPartitions[len(meta.OwnedPartitions)-1].Partitions = append(meta.OwnedPartitions[len(meta.OwnedPartitions)-1].Partitions, tp.Partition)
	}
}

// join sends JoinGroup.
func (gm *GroupMember) join() {
	gm.state = memberJoining
	gm.epoch++
	epoch := gm.epoch
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 0
	meta.Topics = slices.Clone(gm.cfg.Topics)
	if gm.cfg.Cooperative || gm.cfg.Upgrading {
		// v2: what the member owns and in which generation, for the
		// sticky assignor to keep it there.
		meta.Version, meta.Generation = 2, gm.generation
		addOwned(&meta, gm.assigned)
	}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.InstanceID = gm.cfg.Group, gm.memberID, gm.instance()
	req.SessionTimeoutMillis = int32(gm.cfg.SessionTimeout / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(gm.cfg.RebalanceTimeout / time.Millisecond)
	req.ProtocolType = "consumer"
	md := meta.AppendTo(nil)
	names := []string{rangeProtocol}
	switch {
	case gm.cfg.Cooperative:
		names = []string{stickyProtocol}
	case gm.cfg.Upgrading:
		names = []string{stickyProtocol, rangeProtocol}
	}
	for _, name := range names {
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = name, md
		req.Protocols = append(req.Protocols, p)
	}
	coord := gm.coordinator
	gm.c.Do(coord, req, gm.cfg.RebalanceTimeout, func(r kmsg.Response, err error) {
		if gm.state == memberClosed || gm.epoch != epoch {
			return
		}
		resp, ok := r.(*kmsg.JoinGroupResponse)
		if err != nil || !ok {
			gm.coordinatorLost(0, fmt.Errorf("join: %w", err))
			gm.retry(gm.find)
			return
		}
		switch code := resp.ErrorCode; code {
		case 0:
		case kerr.MemberIDRequired.Code:
			gm.memberID = resp.MemberID
			gm.join()
			return
		case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
			gm.event(GroupEvent{Kind: GroupError, Err: fmt.Errorf("JoinGroup: %s", codeName(code))})
			gm.memberID, gm.generation = "", -1
			gm.retry(gm.find)
			return
		case kerr.CoordinatorLoadInProgress.Code, kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
			gm.retry(gm.join)
			return
		default:
			gm.event(GroupEvent{Kind: GroupError, Err: fmt.Errorf("JoinGroup: %s", codeName(code))})
			gm.coordinatorLost(code, nil)
			gm.retry(gm.find)
			return
		}
		gm.failures = 0
		gm.memberID, gm.generation = resp.MemberID, resp.Generation
		gm.leader = resp.LeaderID
		gm.protocol = rangeProtocol
		if resp.Protocol != nil {
			gm.protocol = *resp.Protocol
		}
		gm.event(GroupEvent{Kind: Joined, Generation: gm.generation, Leader: gm.leader})
		// In the generation from here on, and heartbeating: a leader
		// waiting for metadata before it assigns must heartbeat too
		// (groups seed 2741: its heartbeat found it still joining and
		// stopped for good, and the coordinator expired it).
		gm.state = memberSyncing
		gm.scheduleHeartbeat()
		if resp.LeaderID == resp.MemberID && !resp.SkipAssignment {
			gm.lead(epoch, resp.Members)
			return
		}
		gm.sync(nil)
	})
}

// lead assigns the partitions as the group's leader once the metadata
// knows every topic the members subscribe to (the Java client's leader
// waits for fresh metadata too): a leader that assigned from a partial
// view would hand out nothing of a topic it did not know yet, and no
// member would ever ask for a rebalance.
func (gm *GroupMember) lead(epoch uint64, members []kmsg.JoinGroupResponseMember) {
	if gm.state == memberClosed || gm.epoch != epoch {
		return
	}
	for _, m := range members {
		var meta kmsg.ConsumerMemberMetadata
		if meta.ReadFrom(m.ProtocolMetadata) != nil {
			continue
		}
		for _, t := range meta.Topics {
			if tm, ok := gm.c.Topic(t); !ok || len(tm.Partitions) == 0 {
				gm.c.AddTopics(t)
				gm.c.RefreshMetadata()
				gm.c.e.AfterFunc(leaderMetadataWait, func() { gm.lead(epoch, members) })
				return
			}
		}
	}
	var plan []kmsg.SyncGroupRequestGroupAssignment
	if gm.protocol == stickyProtocol {
		plan = gm.assignSticky(members)
	} else {
		plan = gm.assign(members)
	}
	ev := GroupEvent{Kind: PlanSent, Generation: gm.generation}
	for _, a := range plan {
		entry := GroupPlanEntry{MemberID: a.MemberID, Partitions: decodeAssignment(a.MemberAssignment)}
		for _, m := range members {
			if m.MemberID == a.MemberID && m.InstanceID != nil {
				entry.InstanceID = *m.InstanceID
			}
		}
		ev.Plan = append(ev.Plan, entry)
	}
	gm.event(ev)
	gm.sync(plan)
}

// decodeAssignment lists the partitions of a ConsumerMemberAssignment,
// sorted (none if it does not decode).
func decodeAssignment(b []byte) []TopicPartition {
	var a kmsg.ConsumerMemberAssignment
	if len(b) == 0 || a.ReadFrom(b) != nil {
		return nil
	}
	return assignmentPartitions(a)
}

// assignmentPartitions lists a ConsumerMemberAssignment's partitions,
// sorted.
func assignmentPartitions(a kmsg.ConsumerMemberAssignment) []TopicPartition {
	var parts []TopicPartition
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, TopicPartition{t.Topic, p})
		}
	}
	sortPartitions(parts)
	return parts
}

// sortPartitions sorts parts by topic, then partition.
func sortPartitions(parts []TopicPartition) {
	slices.SortFunc(parts, func(x, y TopicPartition) int {
		return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
}

// subscription is a group member's JoinGroup metadata as the assignors
// read it: its topics, and the partitions it owned in generation gen (-1
// before version 2 of the metadata).
type subscription struct {
	id     string
	topics []string
	owned  []TopicPartition
	gen    int32
}

// subscriptions decodes the members' metadata, sorted by member id; a
// member whose metadata does not decode is left out (it gets nothing).
func subscriptions(members []kmsg.JoinGroupResponseMember) []subscription {
	var subs []subscription
	for _, m := range members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
			continue
		}
		s := subscription{id: m.MemberID, topics: meta.Topics, gen: -1}
		if meta.Version >= 2 {
			s.gen = meta.Generation
		}
		for _, op := range meta.OwnedPartitions {
			for _, p := range op.Partitions {
				s.owned = append(s.owned, TopicPartition{op.Topic, p})
			}
		}
		subs = append(subs, s)
	}
	slices.SortFunc(subs, func(a, b subscription) int { return strings.Compare(a.id, b.id) })
	return subs
}

// subscribedTopics is the sorted union of the members' topics.
func subscribedTopics(subs []subscription) []string {
	var topics []string
	for _, s := range subs {
		for _, t := range s.topics {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	slices.Sort(topics)
	return topics
}

// leaderMetadataWait is how long a leader waits between looks at the
// metadata it needs to assign.
const leaderMetadataWait = 50 * time.Millisecond

// assign is the range assignor (Kafka's RangeAssignor): per topic, the
// members subscribing to it sorted by member id, each a contiguous range
// of the partitions, the first ones one more when they do not divide.
func (gm *GroupMember) assign(members []kmsg.JoinGroupResponseMember) []kmsg.SyncGroupRequestGroupAssignment {
	subs := subscriptions(members)
	got := make([]kmsg.ConsumerMemberAssignment, len(subs))
	for _, t := range subscribedTopics(subs) {
		tm, ok := gm.c.Topic(t)
		if !ok {
			continue
		}
		var who []int
		for i, s := range subs {
			if slices.Contains(s.topics, t) {
				who = append(who, i)
			}
		}
		n := len(tm.Partitions)
		per, extra := n/len(who), n%len(who)
		next := 0
		for k, i := range who {
			count := per
			if k < extra {
				count++
			}
			if count == 0 {
				continue
			}
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic = t
			for _, p := range tm.Partitions[next : next+count] {
				at.Partitions = append(at.Partitions, p.Partition)
			}
			next += count
			got[i].Topics = append(got[i].Topics, at)
		}
	}
	out := make([]kmsg.SyncGroupRequestGroupAssignment, len(subs))
	for i, s := range subs {
		out[i] = kmsg.NewSyncGroupRequestGroupAssignment()
		out[i].MemberID, out[i].MemberAssignment = s.id, got[i].AppendTo(nil)
	}
	return out
}

// sync sends SyncGroup (the leader with the plan).
func (gm *GroupMember) sync(plan []kmsg.SyncGroupRequestGroupAssignment) {
	gm.state = memberSyncing
	epoch, gen := gm.epoch, gm.generation
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = gm.cfg.Group, gm.memberID, gm.instance(), gen
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr(gm.protocol)
	req.GroupAssignment = plan
	gm.c.Do(gm.coordinator, req, gm.cfg.RebalanceTimeout, func(r kmsg.Response, err error) {
		if gm.state == memberClosed || gm.epoch != epoch {
			return
		}
		resp, ok := r.(*kmsg.SyncGroupResponse)
		if err != nil || !ok {
			gm.coordinatorLost(0, err)
			gm.rejoin(fmt.Errorf("SyncGroup: %w", err), false)
			return
		}
		if code := resp.ErrorCode; code != 0 {
			gm.event(GroupEvent{Kind: GroupError, Generation: gen, Err: fmt.Errorf("SyncGroup: %s", codeName(code))})
			gm.coordinatorLost(code, nil)
			forget := code == kerr.UnknownMemberID.Code || code == kerr.FencedInstanceID.Code
			gm.rejoin(kerr.ErrorForCode(code), forget)
			return
		}
		var a kmsg.ConsumerMemberAssignment
		if len(resp.MemberAssignment) > 0 {
			if err := a.ReadFrom(resp.MemberAssignment); err != nil {
				gm.rejoin(fmt.Errorf("SyncGroup: undecodable assignment: %w", err), false)
				return
			}
		}
		parts := assignmentPartitions(a)
		gm.event(GroupEvent{Kind: Assigned, Generation: gen, Partitions: parts})
		if !gm.cfg.Cooperative {
			gm.assigned = parts
			gm.fetchOffsets(epoch, parts)
			return
		}
		// Cooperative: give up what moves away (its progress since the
		// last commit is not committed: the member no longer owns it in
		// this generation), keep the rest, start what is new, and join
		// again at once if anything was revoked, for the partitions
		// withheld this round.
		// What the consumer reads is what the member owns: a partition
		// added in a generation that also revoked some is started too
		// (groups seed 1171: it was not, and never was).
		var revoked, added []TopicPartition
		consuming := gm.cn.Assigned()
		for _, tp := range consuming {
			if !slices.Contains(parts, tp) {
				revoked = append(revoked, tp)
			}
		}
		for _, tp := range parts {
			if !slices.Contains(consuming, tp) {
				added = append(added, tp)
			}
		}
		if len(revoked) > 0 {
			gm.event(GroupEvent{Kind: Revoked, Generation: gen, Partitions: revoked, Err: fmt.Errorf("cooperative: moved to another member")})
			for _, tp := range revoked {
				gm.cn.UnassignPartition(tp.Topic, tp.Partition)
				delete(gm.committed, tp)
			}
		}
		gm.assigned = parts
		gm.rejoinAfter = len(revoked) > 0
		gm.fetchOffsets(epoch, added)
	})
}

// fetchOffsets asks the coordinator where the assignment starts, then
// consumes it.
func (gm *GroupMember) fetchOffsets(epoch uint64, want []TopicPartition) {
	if len(want) == 0 {
		gm.stable()
		return
	}
	req := offsetFetchRequest(gm.cfg.Group, want)
	sent := gm.c.e.Monotonic()
	gm.c.Do(gm.coordinator, req, 0, func(r kmsg.Response, err error) {
		if gm.state == memberClosed || gm.epoch != epoch {
			return
		}
		resp, ok := r.(*kmsg.OffsetFetchResponse)
		if err != nil || !ok {
			gm.coordinatorLost(0, err)
			gm.rejoin(fmt.Errorf("OffsetFetch: %w", err), false)
			return
		}
		code := resp.ErrorCode
		type fetchedPart struct {
			topic  string
			part   int32
			offset int64
			code   int16
		}
		var got []fetchedPart
		if resp.Version >= 8 {
			code = 0
			if len(resp.Groups) == 1 {
				code = resp.Groups[0].ErrorCode
				for _, t := range resp.Groups[0].Topics {
					for _, p := range t.Partitions {
						got = append(got, fetchedPart{t.Topic, p.Partition, p.Offset, p.ErrorCode})
					}
				}
			}
		} else {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					got = append(got, fetchedPart{t.Topic, p.Partition, p.Offset, p.ErrorCode})
				}
			}
		}
		for _, g := range got {
			if g.code != 0 && code == 0 {
				code = g.code
			}
		}
		if code != 0 {
			gm.event(GroupEvent{Kind: GroupError, Generation: gm.generation, Err: fmt.Errorf("OffsetFetch: %s", codeName(code))})
			if code == kerr.CoordinatorLoadInProgress.Code || code == kerr.UnstableOffsetCommit.Code {
				gm.retry(func() { gm.fetchOffsets(epoch, want) })
				return
			}
			gm.coordinatorLost(code, nil)
			gm.rejoin(kerr.ErrorForCode(code), false)
			return
		}
		ev := GroupEvent{Kind: OffsetsFetched, Generation: gm.generation, Sent: sent}
		for _, g := range got {
			ev.Commits = append(ev.Commits, GroupCommit{Topic: g.topic, Partition: g.part, Offset: g.offset})
		}
		gm.event(ev)
		for _, tp := range want {
			off := int64(-1)
			for _, g := range got {
				if g.topic == tp.Topic && g.part == tp.Partition {
					off = g.offset
				}
			}
			gm.committed[tp] = off
			gm.cn.Assign(tp.Topic, tp.Partition, off)
		}
		gm.stable()
	})
}

func (gm *GroupMember) stable() {
	gm.failures = 0
	if gm.rejoinAfter {
		// Cooperative: partitions were revoked; the second rebalance
		// assigns them to their new owners.
		gm.rejoinAfter = false
		gm.rejoinKeeping(fmt.Errorf("cooperative: partitions revoked"))
		return
	}
	gm.state = memberStable
	gm.scheduleCommit()
}

func (gm *GroupMember) scheduleHeartbeat() {
	if gm.hbTimer != nil {
		gm.hbTimer.Stop()
	}
	gm.hbTimer = gm.c.e.AfterFunc(gm.cfg.HeartbeatInterval, gm.heartbeat)
}

// heartbeat sends Heartbeat and acts on its answer.
func (gm *GroupMember) heartbeat() {
	gm.hbTimer = nil
	if gm.state != memberSyncing && gm.state != memberStable {
		return
	}
	epoch, gen := gm.epoch, gm.generation
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = gm.cfg.Group, gm.memberID, gm.instance(), gen
	gm.c.Do(gm.coordinator, req, 0, func(r kmsg.Response, err error) {
		if gm.state == memberClosed || gm.epoch != epoch {
			return
		}
		resp, ok := r.(*kmsg.HeartbeatResponse)
		if err != nil || !ok {
			// The Java client finds the coordinator again and keeps its
			// generation: the next heartbeat tells.
			gm.coordinatorLost(0, err)
			gm.refind(epoch)
			return
		}
		switch code := resp.ErrorCode; code {
		case 0:
			gm.scheduleHeartbeat()
		case kerr.RebalanceInProgress.Code:
			// Commit what was processed, then join again: eager gives
			// everything up first, cooperative keeps consuming it.
			if gm.cfg.Cooperative {
				gm.commit(func() { gm.rejoinKeeping(kerr.RebalanceInProgress) })
				return
			}
			gm.commit(func() { gm.rejoin(kerr.RebalanceInProgress, false) })
		case kerr.IllegalGeneration.Code:
			gm.rejoin(kerr.IllegalGeneration, false)
		case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
			gm.event(GroupEvent{Kind: GroupError, Generation: gen, Err: fmt.Errorf("Heartbeat: %s", codeName(code))})
			gm.rejoin(kerr.ErrorForCode(code), true)
		case kerr.CoordinatorLoadInProgress.Code:
			gm.scheduleHeartbeat()
		default:
			if gm.coordinatorLost(code, nil) {
				gm.refind(epoch)
				return
			}
			gm.scheduleHeartbeat()
		}
	})
}

// refind finds the coordinator again while keeping the generation and
// the assignment (the Java client's markCoordinatorUnknown), then goes on
// heartbeating.
func (gm *GroupMember) refind(epoch uint64) {
	req := findCoordinatorRequest(0, gm.cfg.Group)
	gm.failures++
	gm.c.e.AfterFunc(gm.c.backoff(gm.failures), func() {
		if gm.state == memberClosed || gm.epoch != epoch {
			return
		}
		gm.c.DoAny(req, func(r kmsg.Response, err error) {
			if gm.state == memberClosed || gm.epoch != epoch {
				return
			}
			resp, ok := r.(*kmsg.FindCoordinatorResponse)
			if err != nil || !ok {
				gm.refind(epoch)
				return
			}
			code, node, host, port := resp.ErrorCode, resp.NodeID, resp.Host, resp.Port
			if resp.Version >= 4 && len(resp.Coordinators) == 1 {
				c := resp.Coordinators[0]
				code, node, host, port = c.ErrorCode, c.NodeID, c.Host, c.Port
			}
			if code != 0 || node < 0 {
				gm.refind(epoch)
				return
			}
			gm.c.learnBroker(node, host, port)
			gm.coordinator = node
			gm.heartbeat()
		})
	})
}

func (gm *GroupMember) scheduleCommit() {
	if gm.commitTimer != nil {
		gm.commitTimer.Stop()
	}
	gm.commitTimer = gm.c.e.AfterFunc(gm.cfg.CommitInterval, func() {
		gm.commitTimer = nil
		if gm.state != memberStable {
			return
		}
		gm.commit(gm.scheduleCommit)
	})
}

// OffsetCommitRequest is an OffsetCommit of commits' offsets (Code
// unused) for group, as an admin sends it (generation -1, no member); a
// run of commits of one topic shares its topic entry.
func OffsetCommitRequest(group string, commits []GroupCommit) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	for _, c := range commits {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != c.Topic {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = c.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = c.Partition, c.Offset, -1
		req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, rp)
	}
	return req
}

// commit commits the position of every assigned partition that moved on
// since its last commit, then runs then (whatever the outcome; errors
// that end the generation are the heartbeat's to act on, as in the Java
// client, except that they also rejoin here at once).
func (gm *GroupMember) commit(then func()) {
	if gm.committing || gm.coordinator < 0 || gm.memberID == "" {
		gm.c.e.Post(then)
		return
	}
	var commits []GroupCommit
	for _, tp := range gm.assigned {
		pos, _ := gm.cn.Position(tp.Topic, tp.Partition)
		if pos < 0 || pos <= gm.committed[tp] {
			continue
		}
		commits = append(commits, GroupCommit{Topic: tp.Topic, Partition: tp.Partition, Offset: pos})
	}
	if len(commits) == 0 {
		gm.c.e.Post(then)
		return
	}
	req := OffsetCommitRequest(gm.cfg.Group, commits)
	req.MemberID, req.InstanceID, req.Generation = gm.memberID, gm.instance(), gm.generation
	gm.committing = true
	gen, id, coord, epoch := gm.generation, gm.memberID, gm.coordinator, gm.epoch
	sent := gm.c.e.Monotonic()
	gm.event(GroupEvent{Kind: CommitSent, MemberID: id, Generation: gen, Sent: sent, Coordinator: coord, Commits: commits})
	gm.c.Do(coord, req, 0, func(r kmsg.Response, err error) {
		gm.committing = false
		if gm.state == memberClosed {
			return
		}
		resp, ok := r.(*kmsg.OffsetCommitResponse)
		ev := GroupEvent{MemberID: id, Generation: gen, Sent: sent, Coordinator: coord}
		if err != nil || !ok {
			ev.Kind, ev.Commits, ev.Err = CommitUnknown, commits, err
			gm.event(ev)
			gm.coordinatorLost(0, err)
			then()
			return
		}
		ev.Kind = CommitAnswered
		worst := int16(0)
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				off := int64(-1)
				for _, c := range commits {
					if c.Topic == t.Topic && c.Partition == p.Partition {
						off = c.Offset
					}
				}
				ev.Commits = append(ev.Commits, GroupCommit{Topic: t.Topic, Partition: p.Partition, Offset: off, Code: p.ErrorCode})
				if p.ErrorCode == 0 && gm.epoch == epoch {
					tp := TopicPartition{t.Topic, p.Partition}
					if _, ok := gm.committed[tp]; ok {
						gm.committed[tp] = max(gm.committed[tp], off)
					}
				}
				if p.ErrorCode != 0 {
					worst = p.ErrorCode
				}
			}
		}
		gm.event(ev)
		if gm.epoch != epoch {
			then()
			return
		}
		switch worst {
		case kerr.RebalanceInProgress.Code:
			if gm.cfg.Cooperative {
				gm.rejoinKeeping(kerr.RebalanceInProgress)
				break
			}
			gm.rejoin(kerr.RebalanceInProgress, false)
		case kerr.IllegalGeneration.Code:
			gm.rejoin(kerr.ErrorForCode(worst), false)
		case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
			gm.rejoin(kerr.ErrorForCode(worst), true)
		default:
			gm.coordinatorLost(worst, nil)
			then()
		}
	})
}

// offsetFetchRequest asks for group's committed offsets of parts (sorted
// by topic), in both the v0–v7 fields and v8+'s batched groups, so that it
// serves at whatever version is negotiated.
func offsetFetchRequest(group string, parts []TopicPartition) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	for _, tp := range parts {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic = tp.Topic
			rg.Topics = append(rg.Topics, gt)
		}
		req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, tp.Partition)
		rg.Topics[len(rg.Topics)-1].Partitions = append(rg.Topics[len(rg.Topics)-1].Partitions, tp.Partition)
	}
	req.Groups = append(req.Groups, rg)
	return req
}
