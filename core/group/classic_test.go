package group

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/sim"
)

// rig runs a shard on a simulated process; its Writer keeps the records
// (committed after writeDelay, or failed with failWrites).
type rig struct {
	t          *testing.T
	s          *sim.Sim
	e          env.Env
	shard      *Shard
	written    []Record
	writeDelay time.Duration
	failWrites error
}

func newRig(t *testing.T, cfg Config) *rig {
	r := &rig{t: t, s: sim.New(sim.Config{Seed: 1}), writeDelay: time.Millisecond}
	p := r.s.AddProcess("b1", func(e env.Env) { r.e = e })
	p.Start()
	r.run(0)
	r.shard = r.newShard(cfg)
	r.shard.Loaded()
	return r
}

func (r *rig) newShard(cfg Config) *Shard {
	cfg.Write = func(recs []Record, done func(error)) {
		r.write(func() { r.written = append(r.written, recs...) }, done)
	}
	if cfg.WriteTxn == nil {
		// Transactional offsets are kept out of written (their replay
		// is txnoffsets_test.go's).
		cfg.WriteTxn = func(_ TxnWrite, _ []Record, done func(error)) { r.write(func() {}, done) }
	}
	return NewShard(r.e, slog.New(slog.DiscardHandler), cfg)
}

// write is the rig's Writer: keep stores the records unless writes fail,
// and done has the outcome after writeDelay.
func (r *rig) write(keep func(), done func(error)) {
	err := r.failWrites
	if err == nil {
		keep()
	}
	r.e.AfterFunc(r.writeDelay, func() { done(err) })
}

func (r *rig) run(d time.Duration) {
	r.t.Helper()
	require.NoError(r.t, r.s.RunFor(d))
}

// await sends a request with send, lets the shard's writes (10 ms)
// finish, and returns its answer.
func await[R any](r *rig, send func(done func(*R))) *R {
	r.t.Helper()
	var got *R
	send(func(resp *R) { got = resp })
	r.run(10 * time.Millisecond)
	require.NotNil(r.t, got)
	return got
}

// replayed is a new shard loaded from everything written.
func (r *rig) replayed(cfg Config) *Shard {
	r.t.Helper()
	sh := r.newShard(cfg)
	for _, rec := range r.written {
		require.NoError(r.t, sh.Replay(rec.Key, rec.Value))
	}
	sh.Loaded()
	return sh
}

var testCfg = Config{InitialRebalanceDelay: 0}

func joinReq(group, member string, instance *string, meta string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.MemberID, req.InstanceID = group, member, instance
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 5000
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte(meta)}, {Name: "roundrobin", Metadata: []byte(meta)}}
	return req
}

// join sends a JoinGroup and returns where its answer lands.
func (r *rig) join(req *kmsg.JoinGroupRequest, client string) **kmsg.JoinGroupResponse {
	out := new(*kmsg.JoinGroupResponse)
	r.shard.Join(req, Client{ID: client, Host: "/127.0.0.1"}, func(resp *kmsg.JoinGroupResponse) {
		require.Nil(r.t, *out, "JoinGroup answered twice")
		*out = resp
	})
	return out
}

// newMember joins with KIP-394's two steps and returns the member id
// (its JoinGroup is waiting).
func (r *rig) newMember(group, client, meta string) (string, **kmsg.JoinGroupResponse) {
	r.t.Helper()
	first := r.join(joinReq(group, "", nil, meta), client)
	require.NotNil(r.t, *first)
	require.Equal(r.t, kerr.MemberIDRequired.Code, (*first).ErrorCode)
	id := (*first).MemberID
	require.NotEmpty(r.t, id)
	return id, r.join(joinReq(group, id, nil, meta), client)
}

func (r *rig) sync(group, member string, gen int32, assign map[string]string) **kmsg.SyncGroupResponse {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = group, member, gen
	for m, a := range assign {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(a)})
	}
	out := new(*kmsg.SyncGroupResponse)
	r.shard.Sync(req, func(resp *kmsg.SyncGroupResponse) {
		require.Nil(r.t, *out, "SyncGroup answered twice")
		*out = resp
	})
	return out
}

func (r *rig) heartbeat(group, member string, gen int32, instance *string) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation, req.InstanceID = group, member, gen, instance
	return r.shard.Heartbeat(req).ErrorCode
}

// Two members join; the rebalance completes once both have; the leader
// gets both members' metadata and the follower's SyncGroup waits for the
// leader's assignment, which is written before anyone gets it.
func TestTwoMembersRebalance(t *testing.T) {
	r := newRig(t, testCfg)
	a, ja := r.newMember("g", "ca", "meta-a")
	r.run(time.Millisecond)
	require.NotNil(t, *ja, "a lone member's rebalance completes at once")
	require.Equal(t, int32(1), (*ja).Generation)
	require.Equal(t, a, (*ja).LeaderID)

	// b joins: a must rejoin (its heartbeat says so), and the rebalance
	// completes when it does.
	b, jb := r.newMember("g", "cb", "meta-b")
	require.Nil(t, *jb)
	require.Equal(t, kerr.RebalanceInProgress.Code, r.heartbeat("g", a, 1, nil))
	ja = r.join(joinReq("g", a, nil, "meta-a"), "ca")
	require.NotNil(t, *ja)
	require.NotNil(t, *jb)
	require.Equal(t, int32(2), (*ja).Generation)
	require.Equal(t, a, (*ja).LeaderID, "the leader stays")
	require.Equal(t, "range", *(*ja).Protocol)
	require.Len(t, (*ja).Members, 2)
	require.Empty(t, (*jb).Members, "only the leader gets the members")
	require.Equal(t, []byte("meta-b"), (*ja).Members[1].ProtocolMetadata)

	sb := r.sync("g", b, 2, nil)
	require.Nil(t, *sb, "the follower waits for the leader's assignment")
	written := len(r.written)
	sa := r.sync("g", a, 2, map[string]string{a: "pa", b: "pb"})
	require.Nil(t, *sa, "answered once written")
	r.run(5 * time.Millisecond)
	require.Equal(t, written+1, len(r.written))
	require.Equal(t, []byte("pa"), (*sa).MemberAssignment)
	require.Equal(t, []byte("pb"), (*sb).MemberAssignment)
	require.Equal(t, StateStable, r.shard.Group("g").State())
	require.Zero(t, r.heartbeat("g", b, 2, nil))
	require.Equal(t, kerr.IllegalGeneration.Code, r.heartbeat("g", b, 1, nil))
	require.Equal(t, kerr.UnknownMemberID.Code, r.heartbeat("g", "nobody", 2, nil))

	// A new coordinator replaying the partition has the group as written.
	re := r.replayed(testCfg)
	g := re.Group("g")
	require.Equal(t, StateStable, g.State())
	require.Equal(t, int32(2), g.Generation())
	require.Len(t, g.members, 2)
	require.Equal(t, []byte("pb"), g.member(b).assignment)
}

// A member that stops heartbeating is removed after its session timeout;
// the others rejoin in a new generation.
func TestSessionTimeoutRemovesAMember(t *testing.T) {
	r := newRig(t, testCfg)
	a, _ := r.newMember("g", "ca", "m")
	r.run(time.Millisecond)
	b, jb := r.newMember("g", "cb", "m")
	ja := r.join(joinReq("g", a, nil, "m"), "ca")
	require.NotNil(t, *jb)
	r.sync("g", b, 2, nil)
	r.sync("g", a, 2, map[string]string{a: "x", b: "y"})
	r.run(5 * time.Millisecond)
	require.Equal(t, StateStable, r.shard.Group("g").State())
	_ = ja

	// a heartbeats, b does not.
	for i := 0; i < 12; i++ {
		r.run(time.Second)
		code := r.heartbeat("g", a, 2, nil)
		if code != 0 {
			require.Equal(t, kerr.RebalanceInProgress.Code, code)
			break
		}
	}
	g := r.shard.Group("g")
	require.Nil(t, g.member(b), "b timed out")
	require.Equal(t, StatePreparingRebalance, g.State())
	ja = r.join(joinReq("g", a, nil, "m"), "ca")
	require.NotNil(t, *ja)
	require.Equal(t, int32(3), (*ja).Generation)
	require.Len(t, (*ja).Members, 1)
}

// A static member that restarts within its session timeout gets a new
// member id and its assignment back, without a rebalance; its old member
// id is fenced.
func TestStaticMemberRestartsWithoutRebalance(t *testing.T) {
	r := newRig(t, testCfg)
	inst := kmsg.StringPtr("consumer-1")
	ja := r.join(joinReq("g", "", inst, "m"), "c1")
	require.NotNil(t, *ja)
	old := (*ja).MemberID
	require.Zero(t, (*ja).ErrorCode, "a static member joins without MEMBER_ID_REQUIRED")
	sa := r.sync("g", old, 1, map[string]string{old: "assigned"})
	r.run(5 * time.Millisecond)
	require.Equal(t, []byte("assigned"), (*sa).MemberAssignment)

	again := r.join(joinReq("g", "", inst, "m"), "c1")
	require.Nil(t, *again, "answered once the new member id is written")
	r.run(5 * time.Millisecond)
	require.Zero(t, (*again).ErrorCode)
	require.NotEqual(t, old, (*again).MemberID)
	require.Equal(t, int32(1), (*again).Generation, "no rebalance")
	require.True(t, (*again).SkipAssignment, "the leader keeps its assignment (KIP-814)")
	require.Equal(t, StateStable, r.shard.Group("g").State())
	require.Equal(t, kerr.FencedInstanceID.Code, r.heartbeat("g", old, 1, inst))
	require.Zero(t, r.heartbeat("g", (*again).MemberID, 1, inst))
	s := r.sync("g", (*again).MemberID, 1, nil)
	require.Equal(t, []byte("assigned"), (*s).MemberAssignment)
}

func commitReq(group, member string, gen int32, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.MemberID, req.Generation = group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = "orders"
	for p := int32(0); p < 8; p++ {
		if o, ok := offsets[p]; ok {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, o, 3
			t.Partitions = append(t.Partitions, rp)
		}
	}
	req.Topics = append(req.Topics, t)
	return req
}

func (r *rig) commit(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	r.t.Helper()
	var out *kmsg.OffsetCommitResponse
	r.shard.Commit(req, func(topic string, p int32) bool { return topic == "orders" && p < 4 }, func(resp *kmsg.OffsetCommitResponse) { out = resp })
	r.run(5 * time.Millisecond)
	require.NotNil(r.t, out)
	return out
}

// Offsets: commits are fenced by member and generation, refused for
// unknown partitions, written before they are answered, and a new
// coordinator replaying the partition serves them.
func TestCommittedOffsets(t *testing.T) {
	r := newRig(t, testCfg)
	// A simple commit into a group with no members.
	resp := r.commit(commitReq("g", "", -1, map[int32]int64{0: 10, 1: 20, 5: 1}))
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[2].ErrorCode)
	require.Equal(t, int64(10), r.shard.Group("g").Offset("orders", 0))

	a, ja := r.newMember("g", "ca", "m")
	r.run(time.Millisecond)
	require.NotNil(t, *ja)
	r.sync("g", a, 1, map[string]string{a: "all"})
	r.run(5 * time.Millisecond)
	resp = r.commit(commitReq("g", "", -1, map[int32]int64{0: 99}))
	require.Equal(t, kerr.UnknownMemberID.Code, resp.Topics[0].Partitions[0].ErrorCode, "no simple commits into a group with members")
	resp = r.commit(commitReq("g", a, 0, map[int32]int64{0: 99}))
	require.Equal(t, kerr.IllegalGeneration.Code, resp.Topics[0].Partitions[0].ErrorCode)
	resp = r.commit(commitReq("g", a, 1, map[int32]int64{0: 11}))
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)

	fetched := r.shard.Fetch("g", []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{0, 1, 3}}}, false)
	require.Equal(t, int64(11), fetched.Topics[0].Partitions[0].Offset)
	require.Equal(t, int32(3), fetched.Topics[0].Partitions[0].LeaderEpoch)
	require.Equal(t, int64(20), fetched.Topics[0].Partitions[1].Offset)
	require.Equal(t, int64(-1), fetched.Topics[0].Partitions[2].Offset, "never committed")

	// A failed write changes nothing and says why.
	r.failWrites = kerr.NotLeaderForPartition
	resp = r.commit(commitReq("g", a, 1, map[int32]int64{0: 12}))
	require.Equal(t, kerr.NotCoordinator.Code, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(11), r.shard.Group("g").Offset("orders", 0))
	r.failWrites = nil

	re := r.replayed(testCfg)
	all := re.Fetch("g", nil, true)
	require.Len(t, all.Topics, 1)
	require.Len(t, all.Topics[0].Partitions, 2)
	require.Equal(t, int64(11), all.Topics[0].Partitions[0].Offset)
	require.Equal(t, int64(20), all.Topics[0].Partitions[1].Offset)
}

// Bad input gets Kafka's errors and changes nothing.
func TestJoinRefusesBadInput(t *testing.T) {
	r := newRig(t, Config{MaxSize: 1, MaxMemberMetadataBytes: 64})
	req := joinReq("g", "", nil, "m")
	req.SessionTimeoutMillis = 1000
	require.Equal(t, kerr.InvalidSessionTimeout.Code, (*r.join(req, "c")).ErrorCode)
	req = joinReq("", "", nil, "m")
	require.Equal(t, kerr.InvalidGroupID.Code, (*r.join(req, "c")).ErrorCode)
	req = joinReq("g", "", nil, string(make([]byte, 65)))
	require.Equal(t, kerr.InvalidRequest.Code, (*r.join(req, "c")).ErrorCode)
	req = joinReq("g", "", nil, "m")
	req.Protocols = append(req.Protocols, req.Protocols[0])
	require.Equal(t, kerr.InvalidRequest.Code, (*r.join(req, "c")).ErrorCode, "a protocol listed twice")
	req = joinReq("g", "unknown-member", nil, "m")
	require.Equal(t, kerr.UnknownMemberID.Code, (*r.join(req, "c")).ErrorCode)

	_, j := r.newMember("g", "c", "m")
	r.run(time.Millisecond)
	require.NotNil(t, *j)
	require.Equal(t, kerr.GroupMaxSizeReached.Code, (*r.join(joinReq("g", "", nil, "m"), "c2")).ErrorCode)
	other := joinReq("g", "", nil, "m")
	other.ProtocolType = "connect"
	require.Equal(t, kerr.InconsistentGroupProtocol.Code, (*r.join(other, "c3")).ErrorCode)
}

// A failed write of the leader's assignment answers every waiting
// SyncGroup with the error and starts another rebalance; an unloaded
// shard answers its waiting requests NOT_COORDINATOR.
func TestFailedAssignmentWriteAndUnload(t *testing.T) {
	r := newRig(t, testCfg)
	a, ja := r.newMember("g", "ca", "m")
	r.run(time.Millisecond)
	require.NotNil(t, *ja)
	r.failWrites = errors.New("disk on fire")
	sa := r.sync("g", a, 1, map[string]string{a: "x"})
	r.run(5 * time.Millisecond)
	require.Equal(t, kerr.NotCoordinator.Code, (*sa).ErrorCode)
	require.Equal(t, StatePreparingRebalance, r.shard.Group("g").State())
	r.failWrites = nil

	ja = r.join(joinReq("g", a, nil, "m"), "ca")
	require.NotNil(t, *ja)
	require.Equal(t, int32(2), (*ja).Generation)
	b, jb := r.newMember("g", "cb", "m")
	require.Nil(t, *jb)
	_ = b
	r.shard.Unload()
	require.Equal(t, kerr.NotCoordinator.Code, (*jb).ErrorCode)
	require.Equal(t, kerr.NotCoordinator.Code, r.heartbeat("g", a, 2, nil))
}

// A replay that finds a record it cannot read fails instead of serving a
// partial state.
func TestReplayRefusesDamagedRecords(t *testing.T) {
	r := newRig(t, testCfg)
	sh := r.newShard(testCfg)
	require.ErrorIs(t, sh.Replay([]byte{0}, nil), ErrBadRecord)
	key := offsetRecord("g", "t", 0, nil).Key
	require.ErrorIs(t, sh.Replay(key, []byte{0, 3, 1}), ErrBadRecord)
}

// Offsets expire after offsets.retention.minutes: a consumer group's once
// it has been empty that long (and the group goes), a group of simple
// commits offset by offset, counted from each commit. The expiry is
// written, so a new coordinator does not bring them back.
func TestOffsetsExpire(t *testing.T) {
	cfg := Config{InitialRebalanceDelay: 0, OffsetsRetention: time.Hour, RetentionCheckInterval: time.Minute}
	r := newRig(t, cfg)
	// A simple-commit group: partition 0 committed now, 1 half an hour
	// later.
	r.commit(commitReq("simple", "", -1, map[int32]int64{0: 5}))
	r.run(30 * time.Minute)
	r.commit(commitReq("simple", "", -1, map[int32]int64{1: 6}))
	// A consumer group that empties now.
	a, ja := r.newMember("cg", "ca", "m")
	r.run(time.Millisecond)
	require.NotNil(t, *ja)
	r.sync("cg", a, 1, map[string]string{a: "x"})
	r.run(5 * time.Millisecond)
	r.commit(commitReq("cg", a, 1, map[int32]int64{0: 9}))
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group, leave.MemberID = 1, "cg", a
	require.Zero(t, r.shard.Leave(leave).ErrorCode)
	r.run(time.Second)
	require.Equal(t, StateEmpty, r.shard.Group("cg").State())

	r.run(35 * time.Minute) // 65 min after the first simple commit
	require.Equal(t, int64(-1), r.shard.Group("simple").Offset("orders", 0), "expired an hour after its commit")
	require.Equal(t, int64(6), r.shard.Group("simple").Offset("orders", 1))
	require.Equal(t, int64(9), r.shard.Group("cg").Offset("orders", 0), "empty for 35 minutes only")
	r.run(30 * time.Minute)
	require.Nil(t, r.shard.Group("cg"), "empty for an hour: its offsets expired and it went")
	require.Nil(t, r.shard.Group("simple"), "its last offset expired")

	re := r.replayed(testCfg)
	require.Nil(t, re.Group("cg"))
	require.Nil(t, re.Group("simple"))
}

// A group loaded from the log knows of each member only the protocol it
// chose (the record keeps no other), so a member offering another of the
// protocols the members had offered was refused with
// INCONSISTENT_GROUP_PROTOCOL, for as long as the loaded members went on
// heartbeating without rejoining (groups seed 1670: a range-only member
// locked out of a group that had chosen cooperative-sticky). A loaded
// member counts as supporting any protocol until it joins again: the new
// member starts a rebalance, and the protocols are chosen among the
// members that rejoin it.
func TestLoadedGroupAdmitsAMemberOfAnotherProtocol(t *testing.T) {
	r := newRig(t, testCfg)
	a, ja := r.newMember("g", "c1", "a")
	r.run(0)
	require.NotNil(t, *ja)
	require.Equal(t, "range", *(*ja).Protocol)
	r.sync("g", a, 1, map[string]string{a: "x"})
	r.run(5 * time.Millisecond)
	r.shard = r.replayed(testCfg)
	req := joinReq("g", "", nil, "b")
	req.Protocols = req.Protocols[1:] // roundrobin only
	first := r.join(req, "c2")
	require.Equal(t, kerr.MemberIDRequired.Code, (*first).ErrorCode)
	req2 := joinReq("g", (*first).MemberID, nil, "b")
	req2.Protocols = req2.Protocols[1:]
	jb := r.join(req2, "c2")
	require.Nil(t, *jb, "the new member waits in the rebalance it started")
	require.Equal(t, StatePreparingRebalance, r.shard.Group("g").State())
	require.Equal(t, kerr.RebalanceInProgress.Code, r.heartbeat("g", a, 1, nil))
	ja2 := r.join(joinReq("g", a, nil, "a"), "c1")
	r.run(time.Millisecond)
	require.NotNil(t, *ja2)
	require.Zero(t, (*ja2).ErrorCode)
	require.Equal(t, "roundrobin", *(*ja2).Protocol, "chosen among the members that rejoined")
	require.NotNil(t, *jb)
	require.Equal(t, int32(2), (*jb).Generation)
}

// The leader's SyncGroup of a generation that completed while the
// previous generation's assignment was still being written is not
// parked for good: once that write ends (its generation is stale), the
// new assignment is written and every SyncGroup answered. It used to
// wait until the members' sessions expired (kgo's GroupTransactSession
// churn test: all five members removed by session timeout 10 s after a
// member joined 17 ms after the last SyncGroup, their next JoinGroup
// UNKNOWN_MEMBER_ID).
func TestSyncDuringThePreviousAssignmentWrite(t *testing.T) {
	r := newRig(t, testCfg)
	r.writeDelay = 50 * time.Millisecond
	a, ja := r.newMember("g", "ca", "m")
	r.run(time.Millisecond)
	require.NotNil(t, *ja)
	sa := r.sync("g", a, 1, map[string]string{a: "a1"})
	r.run(60 * time.Millisecond)
	require.NotNil(t, *sa)

	// Generation 2: a and b; the leader's assignment write is slow.
	b, jb := r.newMember("g", "cb", "m")
	ja = r.join(joinReq("g", a, nil, "m"), "ca")
	require.NotNil(t, *ja)
	require.NotNil(t, *jb)
	require.Equal(t, int32(2), (*ja).Generation)
	r.sync("g", b, 2, nil)
	r.sync("g", a, 2, map[string]string{a: "a2", b: "b2"})
	r.run(10 * time.Millisecond)
	require.Equal(t, StateCompletingRebalance, r.shard.Group("g").State(), "generation 2's write is in flight")

	// c joins meanwhile; a and b rejoin; generation 3 completes and its
	// SyncGroups come while generation 2's write is still in flight.
	c, jc := r.newMember("g", "cc", "m")
	ja = r.join(joinReq("g", a, nil, "m"), "ca")
	jb = r.join(joinReq("g", b, nil, "m"), "cb")
	require.NotNil(t, *ja)
	require.NotNil(t, *jb)
	require.NotNil(t, *jc)
	require.Equal(t, int32(3), (*ja).Generation)
	sb := r.sync("g", b, 3, nil)
	sc := r.sync("g", c, 3, nil)
	sa = r.sync("g", a, 3, map[string]string{a: "a3", b: "b3", c: "c3"})
	r.run(200 * time.Millisecond)
	require.Equal(t, StateStable, r.shard.Group("g").State())
	require.NotNil(t, *sa, "the leader's SyncGroup answered")
	require.Equal(t, []byte("a3"), (*sa).MemberAssignment)
	require.NotNil(t, *sb)
	require.Equal(t, []byte("b3"), (*sb).MemberAssignment)
	require.NotNil(t, *sc)
	require.Equal(t, []byte("c3"), (*sc).MemberAssignment)
}
