package controller

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/meta"
)

func TestRegistrationValidation(t *testing.T) {
	listener := func(name string, proto int16) kmsg.BrokerRegistrationRequestListener {
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port, l.SecurityProtocol = name, "h", 1, proto
		return l
	}
	feature := func(name string, lo, hi int16) kmsg.BrokerRegistrationRequestFeature {
		f := kmsg.NewBrokerRegistrationRequestFeature()
		f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = name, lo, hi
		return f
	}
	cases := []struct {
		name string
		cfg  Config
		edit func(r *kmsg.BrokerRegistrationRequest)
		want *kerr.Error
	}{
		{name: "ok", edit: func(*kmsg.BrokerRegistrationRequest) {}},
		{name: "rack and features", edit: func(r *kmsg.BrokerRegistrationRequest) {
			rack := "r1"
			r.Rack = &rack
			r.Features = append(r.Features, feature("metadata.version", 1, 20))
		}},
		{name: "negative id", edit: func(r *kmsg.BrokerRegistrationRequest) { r.BrokerID = -1 }, want: kerr.InvalidRequest},
		{name: "zero incarnation", edit: func(r *kmsg.BrokerRegistrationRequest) { r.IncarnationID = [16]byte{} }, want: kerr.InvalidRequest},
		{name: "unnamed listener", edit: func(r *kmsg.BrokerRegistrationRequest) {
			r.Listeners = append(r.Listeners, listener("", 0))
		}, want: kerr.InvalidRequest},
		{name: "duplicate listener", edit: func(r *kmsg.BrokerRegistrationRequest) {
			r.Listeners = append(r.Listeners, listener("PLAINTEXT", 0))
		}, want: kerr.InvalidRequest},
		{name: "bad protocol", edit: func(r *kmsg.BrokerRegistrationRequest) {
			r.Listeners = append(r.Listeners, listener("X", 9))
		}, want: kerr.InvalidRequest},
		{name: "too many listeners", edit: func(r *kmsg.BrokerRegistrationRequest) {
			for i := range maxListenersPerBroker {
				r.Listeners = append(r.Listeners, listener(string(rune('A'+i%26))+string(rune('a'+i/26)), 0))
			}
		}, want: kerr.InvalidRequest},
		{name: "bad feature range", edit: func(r *kmsg.BrokerRegistrationRequest) {
			r.Features = append(r.Features, feature("f", 3, 1))
		}, want: kerr.InvalidRequest},
		{name: "duplicate feature", edit: func(r *kmsg.BrokerRegistrationRequest) {
			r.Features = append(r.Features, feature("f", 1, 1), feature("f", 1, 2))
		}, want: kerr.InvalidRequest},
		{name: "cluster id", cfg: Config{ClusterID: "c1"}, edit: func(r *kmsg.BrokerRegistrationRequest) { r.ClusterID = "c2" },
			want: kerr.InconsistentClusterID},
		{name: "cluster id match", cfg: Config{ClusterID: "c1"}, edit: func(r *kmsg.BrokerRegistrationRequest) { r.ClusterID = "c1" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg, 1)
			req := registration(1, "a")
			tc.edit(req)
			resp := h.do(req).(*kmsg.BrokerRegistrationResponse)
			require.Equal(t, codeOf(tc.want), resp.ErrorCode, errName(resp.ErrorCode))
			if tc.want != nil {
				require.Equal(t, int64(-1), resp.BrokerEpoch)
				require.Zero(t, h.c.CommittedImage().NumBrokers())
				return
			}
			b, ok := h.c.CommittedImage().Broker(req.BrokerID)
			require.True(t, ok)
			require.Equal(t, b.Epoch, resp.BrokerEpoch)
			require.True(t, b.Fenced)
		})
	}
}

func TestRegistrationFinalizedFeatures(t *testing.T) {
	// An image with metadata.version finalized at 7.
	d := meta.Empty().NewDelta()
	require.NoError(t, d.Replay(&meta.FeatureLevelRecord{Name: "metadata.version", Level: 7}))
	img := d.Apply(meta.Position{Offset: 0, Epoch: 1})
	h := newHarness(t, Config{}, 1)
	h.c.Resign()
	h.c.BecomeLeader(h.now, 5, img, 1)
	h.epoch, h.log, h.committed = 5, []logEntry{{epoch: 1}}, 0

	req := registration(1, "a")
	resp := h.do(req).(*kmsg.BrokerRegistrationResponse)
	require.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode, "a broker not listing the feature supports level 0 only")

	f := kmsg.NewBrokerRegistrationRequestFeature()
	f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = "metadata.version", 1, 6
	req.Features = []kmsg.BrokerRegistrationRequestFeature{f}
	resp = h.do(req).(*kmsg.BrokerRegistrationResponse)
	require.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)

	req.Features[0].MaxSupportedVersion = 7
	resp = h.do(req).(*kmsg.BrokerRegistrationResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
}

func TestReRegistration(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(h *harness)
		inc     string
		edit    func(r *kmsg.BrokerRegistrationRequest)
		want    *kerr.Error
		records int
		sameEp  bool
	}{
		{name: "retry same incarnation", inc: "a", sameEp: true},
		{name: "same incarnation changed listeners", inc: "a", edit: func(r *kmsg.BrokerRegistrationRequest) {
			r.Listeners[0].Port = 9999
		}, records: 1 + 1},
		{name: "new incarnation live session", inc: "b", want: kerr.DuplicateBrokerRegistration},
		{name: "new incarnation after expiry", setup: func(h *harness) {
			h.tick(5 * time.Second)
			h.do(heartbeatReq(2, h.epochs[2], h.committed, false, false))
			h.tick(5 * time.Second)
		}, inc: "b", records: 1},
		{name: "new incarnation while fenced", setup: func(h *harness) {
			h.do(heartbeatReq(1, h.epochs[1], h.committed, true, false))
		}, inc: "b", records: 1},
		{name: "new incarnation just before expiry", setup: func(h *harness) {
			h.now += 9 * time.Second // not ticked: the session is still valid at exactly the timeout
		}, inc: "b", want: kerr.DuplicateBrokerRegistration},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newCluster(t, Config{}, 2)
			h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2}}, partitions: -1, rf: -1})
			if tc.setup != nil {
				tc.setup(h)
			}
			h.takeProposals()
			req := registration(1, tc.inc)
			if tc.edit != nil {
				tc.edit(req)
			}
			before, _ := h.c.CommittedImage().Broker(1)
			resp := h.do(req).(*kmsg.BrokerRegistrationResponse)
			require.Equal(t, codeOf(tc.want), resp.ErrorCode, errName(resp.ErrorCode))
			n := 0
			for _, p := range h.takeProposals() {
				n += len(p.Records)
			}
			require.Equal(t, tc.records, n)
			after, _ := h.c.CommittedImage().Broker(1)
			if tc.sameEp || tc.want != nil {
				require.Equal(t, before.Epoch, after.Epoch)
				if tc.want == nil {
					require.Equal(t, before.Epoch, resp.BrokerEpoch)
				}
				return
			}
			require.Greater(t, after.Epoch, before.Epoch)
			require.Equal(t, after.Epoch, resp.BrokerEpoch)
			require.True(t, after.Fenced)
			// The replaced registration's leaderships moved away.
			p := h.partition("t", 0)
			require.Equal(t, int32(2), p.Leader)
			require.Equal(t, []int32{2}, p.ISR)
		})
	}
}

func TestHeartbeatTransitions(t *testing.T) {
	type hb struct {
		fence, shutdown bool
		behind          bool
	}
	cases := []struct {
		name     string
		leads    bool
		start    string // "fenced" or "unfenced"
		hb       hb
		fenced   bool
		shutdown bool
		state    brokerState
	}{
		{name: "fenced caught up", start: "fenced", state: stateUnfenced},
		{name: "fenced behind", start: "fenced", hb: hb{behind: true}, fenced: true, state: stateFenced},
		{name: "fenced wants fence", start: "fenced", hb: hb{fence: true}, fenced: true, state: stateFenced},
		{name: "fenced wants shutdown", start: "fenced", hb: hb{shutdown: true}, fenced: true, shutdown: true, state: stateFenced},
		{name: "unfenced stays", start: "unfenced", state: stateUnfenced},
		{name: "unfenced wants fence", start: "unfenced", hb: hb{fence: true}, fenced: true, state: stateFenced},
		{name: "unfenced wants fence and shutdown", start: "unfenced", hb: hb{fence: true, shutdown: true}, fenced: true, shutdown: true, state: stateFenced},
		{name: "unfenced leader wants shutdown", start: "unfenced", leads: true, hb: hb{shutdown: true}, state: stateControlledShutdown},
		{name: "unfenced idle wants shutdown", start: "unfenced", hb: hb{shutdown: true}, fenced: true, shutdown: true, state: stateFenced},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{}, 1)
			for _, id := range []int32{1, 2} {
				h.epochs[id] = h.do(registration(id, "a")).(*kmsg.BrokerRegistrationResponse).BrokerEpoch
			}
			h.do(heartbeatReq(2, h.epochs[2], h.committed, false, false))
			if tc.start == "unfenced" {
				h.do(heartbeatReq(1, h.epochs[1], h.committed, false, false))
			}
			if tc.leads {
				h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2}}, partitions: -1, rf: -1})
			}
			offset := h.committed
			if tc.hb.behind {
				offset = h.epochs[1] - 1
			}
			resp := h.do(heartbeatReq(1, h.epochs[1], offset, tc.hb.fence, tc.hb.shutdown)).(*kmsg.BrokerHeartbeatResponse)
			require.Equal(t, int16(0), resp.ErrorCode)
			require.Equal(t, tc.fenced, resp.IsFenced)
			require.Equal(t, tc.shutdown, resp.ShouldShutdown)
			require.Equal(t, !tc.hb.behind, resp.IsCaughtUp)
			b, _ := h.c.CommittedImage().Broker(1)
			require.Equal(t, tc.state, currentState(&b))
			if tc.leads {
				p := h.partition("t", 0)
				require.Equal(t, int32(2), p.Leader)
				require.Equal(t, []int32{2}, p.ISR)
			}
		})
	}
}

func TestSessionExpiry(t *testing.T) {
	h := newCluster(t, Config{SessionTimeout: 2 * time.Second}, 3)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2, 3}, {2, 3, 1}}, partitions: -1, rf: -1})
	for range 5 {
		h.tick(time.Second)
		h.handle(heartbeatReq(2, h.epochs[2], h.committed, false, false))
		h.handle(heartbeatReq(3, h.epochs[3], h.committed, false, false))
		h.commitAll()
	}
	img := h.c.CommittedImage()
	b1, _ := img.Broker(1)
	require.True(t, b1.Fenced)
	for _, b := range []int32{2, 3} {
		br, _ := img.Broker(b)
		require.False(t, br.Fenced, "broker %d keeps heartbeating", b)
	}
	p0, p1 := h.partition("t", 0), h.partition("t", 1)
	require.Equal(t, int32(2), p0.Leader)
	require.Equal(t, int32(1), p0.LeaderEpoch)
	require.Equal(t, []int32{2, 3}, p0.ISR)
	require.Equal(t, int32(2), p1.Leader)
	require.Equal(t, int32(0), p1.LeaderEpoch, "partition 1's leader did not change")
	require.Equal(t, []int32{2, 3}, p1.ISR)

	// Nobody heartbeats: the rest are fenced too; the last ISR member stays.
	h.tick(3 * time.Second)
	h.commitAll()
	p0 = h.partition("t", 0)
	require.Equal(t, meta.NoLeader, p0.Leader)
	require.Len(t, p0.ISR, 1)
}

func TestUncleanElectionOnFence(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster bool
		topic   string
		leader  int32
	}{
		{name: "off", leader: meta.NoLeader},
		{name: "cluster config", cluster: true, leader: 2},
		{name: "topic config", topic: "true", leader: 2},
		{name: "topic overrides cluster", cluster: true, topic: "false", leader: meta.NoLeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var told []string
			h := newCluster(t, Config{UncleanLeaderElection: tc.cluster, OnUncleanElection: func(topic string, partition, leader int32) {
				told = append(told, fmt.Sprintf("%s-%d led by %d", topic, partition, leader))
			}}, 2)
			spec := topicSpec{name: "t", assignment: [][]int32{{1, 2}}, partitions: -1, rf: -1, configs: map[string]string{}}
			if tc.topic != "" {
				spec.configs[config.TopicUncleanLeaderElection] = tc.topic
			}
			h.mustCreate(spec)
			// Broker 2 falls out of the ISR, then broker 1 is fenced.
			h.do(alterReq(3, 1, h.epochs[1], "t", h.topicID("t"), 0, 0, 0, 1))
			h.do(heartbeatReq(1, h.epochs[1], h.committed, true, false))
			p := h.partition("t", 0)
			require.Equal(t, tc.leader, p.Leader)
			if tc.leader == 2 {
				require.Equal(t, []int32{2}, p.ISR, "unclean election resets the ISR to the new leader")
				require.Equal(t, []string{"t-0 led by 2"}, told, "the owner is told (counted and logged)")
			} else {
				require.Equal(t, []int32{1}, p.ISR)
				require.Empty(t, told)
			}
		})
	}
}

func TestControlledShutdownWaitsForActiveBrokers(t *testing.T) {
	h := newCluster(t, Config{}, 3)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2, 3}}, partitions: -1, rf: -1})
	resp := h.do(heartbeatReq(1, h.epochs[1], h.committed, false, true)).(*kmsg.BrokerHeartbeatResponse)
	require.False(t, resp.ShouldShutdown)
	require.False(t, resp.IsFenced)
	shutdownOffset := h.committed
	// Brokers 2 and 3 last reported older offsets.
	resp = h.do(heartbeatReq(1, h.epochs[1], h.committed, false, true)).(*kmsg.BrokerHeartbeatResponse)
	require.False(t, resp.ShouldShutdown)
	h.do(heartbeatReq(2, h.epochs[2], shutdownOffset, false, false))
	resp = h.do(heartbeatReq(1, h.epochs[1], h.committed, false, true)).(*kmsg.BrokerHeartbeatResponse)
	require.False(t, resp.ShouldShutdown, "broker 3 has not caught up")
	h.do(heartbeatReq(3, h.epochs[3], shutdownOffset, false, false))
	resp = h.do(heartbeatReq(1, h.epochs[1], h.committed, false, true)).(*kmsg.BrokerHeartbeatResponse)
	require.True(t, resp.ShouldShutdown)
	require.True(t, resp.IsFenced)
	b, _ := h.c.CommittedImage().Broker(1)
	require.True(t, b.Fenced)
	require.False(t, b.InControlledShutdown)
}

func TestNewLeaderStartsFreshSessions(t *testing.T) {
	h := newCluster(t, Config{SessionTimeout: 2 * time.Second}, 2)
	h.tick(time.Second)
	h.resign(false)
	h.now += 10 * time.Second
	h.becomeLeader()
	// Both brokers get a full session from the takeover.
	h.tick(2 * time.Second)
	require.Empty(t, h.takeProposalsAfterSetup())
	h.tick(time.Millisecond)
	h.commitAll()
	for b := range h.c.CommittedImage().Brokers() {
		require.True(t, b.Fenced)
	}
}

// takeProposalsAfterSetup returns proposals made since the harness's setup
// was taken, ignoring registration and unfencing.
func (h *harness) takeProposalsAfterSetup() []Proposal {
	var out []Proposal
	for _, p := range h.takeProposals() {
		for _, r := range p.Records {
			if _, ok := r.(*meta.FenceBrokerRecord); ok {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func TestUncleanElectionClusterResource(t *testing.T) {
	d := meta.Empty().NewDelta()
	v := "true"
	require.NoError(t, d.Replay(&meta.ConfigRecord{ResourceType: meta.ConfigResourceBroker, Key: config.TopicUncleanLeaderElection, Value: &v}))
	img := d.Apply(meta.Position{Offset: 0, Epoch: 1})
	c := New(Config{}, rand.New(rand.NewPCG(1, 2)))
	require.True(t, c.uncleanElection(img, "t"), "the cluster config resource enables it")
	require.False(t, c.uncleanElection(meta.Empty(), "t"))
}

// KIP-966: replicas leaving an ISR already below min.insync.replicas
// become eligible leader replicas (the leader holds the high watermark
// while the ISR is that small, so they have every committed record); when
// the last ISR member is fenced, an eligible replica leads; an ISR back at
// min.insync.replicas clears the ELR.
func TestEligibleLeaderReplicas(t *testing.T) {
	h := newCluster(t, Config{}, 3)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2, 3}}, partitions: -1, rf: -1,
		configs: map[string]string{"min.insync.replicas": "2"}})
	id := h.topicID("t")
	alter := func(leader int32, isr ...int32) {
		t.Helper()
		p := h.partition("t", 0)
		resp := h.do(alterReq(2, leader, h.epochs[leader], "t", id, 0, p.LeaderEpoch, p.PartitionEpoch, isr...)).(*kmsg.AlterPartitionResponse)
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode, errName(resp.Topics[0].Partitions[0].ErrorCode))
		h.commitAll()
	}
	require.Equal(t, int32(1), h.partition("t", 0).Leader)
	alter(1, 1, 2) // 3 leaves with the ISR at min.insync.replicas: not eligible
	require.Empty(t, h.partition("t", 0).ELR)
	alter(1, 1) // 2 leaves an ISR going below it: eligible
	require.Equal(t, []int32{2}, h.partition("t", 0).ELR)

	// The last ISR member is fenced: the eligible replica leads, and the
	// fenced one, which held what the ISR held, becomes eligible.
	h.do(heartbeatReq(1, h.epochs[1], h.committed, true, false))
	h.commitAll()
	p := h.partition("t", 0)
	require.Equal(t, int32(2), p.Leader)
	require.Equal(t, []int32{2}, p.ISR)
	require.Equal(t, []int32{1}, p.ELR)

	// Back at min.insync.replicas: no ELR.
	alter(2, 2, 3)
	p = h.partition("t", 0)
	require.Equal(t, []int32{2, 3}, p.ISR)
	require.Empty(t, p.ELR)
}

// A fenced eligible leader replica that registers again keeps its place
// when its data directory remembers a previous broker epoch (a restart: its
// fsynced data is there), and loses it when it does not (PreviousBrokerEpoch
// -1: a replaced disk), so that it is never elected with an empty log.
func TestReplacedDiskLeavesELR(t *testing.T) {
	h := newCluster(t, Config{}, 3)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2, 3}}, partitions: -1, rf: -1,
		configs: map[string]string{"min.insync.replicas": "3"}})
	// Broker 3 is fenced: the ISR falls below min.insync.replicas, and 3
	// (which held every committed record) becomes eligible.
	h.do(heartbeatReq(3, h.epochs[3], h.committed, true, false))
	h.commitAll()
	p := h.partition("t", 0)
	require.Equal(t, []int32{1, 2}, p.ISR)
	require.Equal(t, []int32{3}, p.ELR)

	// A restart: its directory remembers the epoch it registered with.
	restart := registration(3, "b")
	restart.PreviousBrokerEpoch = h.epochs[3]
	resp := h.do(restart).(*kmsg.BrokerRegistrationResponse)
	require.Zero(t, resp.ErrorCode, errName(resp.ErrorCode))
	h.commitAll()
	require.Equal(t, []int32{3}, h.partition("t", 0).ELR, "a restarted broker keeps its ELR place")
	h.epochs[3] = resp.BrokerEpoch

	// A replaced disk: no previous epoch. It is fenced (not heartbeating
	// yet), and it leaves the ELR.
	replaced := registration(3, "c")
	resp = h.do(replaced).(*kmsg.BrokerRegistrationResponse)
	require.Zero(t, resp.ErrorCode, errName(resp.ErrorCode))
	h.commitAll()
	p = h.partition("t", 0)
	require.Empty(t, p.ELR, "a broker with a new data directory is not eligible")
	require.Equal(t, []int32{1, 2}, p.ISR)
}

// A replaced disk on the ISR's last member: the first eligible leader
// replica, which holds every committed record, takes its place, and leads
// once it can.
func TestReplacedDiskOfTheLastISRMember(t *testing.T) {
	h := newCluster(t, Config{}, 3)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2, 3}}, partitions: -1, rf: -1,
		configs: map[string]string{"min.insync.replicas": "2"}})
	id := h.topicID("t")
	p := h.partition("t", 0)
	resp := h.do(alterReq(2, 1, h.epochs[1], "t", id, 0, p.LeaderEpoch, p.PartitionEpoch, 1, 2)).(*kmsg.AlterPartitionResponse)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	h.commitAll()
	p = h.partition("t", 0)
	resp = h.do(alterReq(2, 1, h.epochs[1], "t", id, 0, p.LeaderEpoch, p.PartitionEpoch, 1)).(*kmsg.AlterPartitionResponse)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	h.commitAll()
	p = h.partition("t", 0)
	require.Equal(t, []int32{1}, p.ISR)
	require.Equal(t, []int32{2}, p.ELR)

	// Broker 2 (eligible) and then broker 1 (the ISR's last member) are
	// fenced: no one can lead; 1 keeps its ISR place, 2 its ELR place.
	h.do(heartbeatReq(2, h.epochs[2], h.committed, true, false))
	h.commitAll()
	h.do(heartbeatReq(1, h.epochs[1], h.committed, true, false))
	h.commitAll()
	p = h.partition("t", 0)
	require.Equal(t, meta.NoLeader, p.Leader)
	require.Equal(t, []int32{1}, p.ISR)
	require.Equal(t, []int32{2}, p.ELR)

	// Broker 1 comes back with a new disk: 2 takes its ISR place.
	r := h.do(registration(1, "new-disk")).(*kmsg.BrokerRegistrationResponse)
	require.Zero(t, r.ErrorCode, errName(r.ErrorCode))
	h.commitAll()
	p = h.partition("t", 0)
	require.Equal(t, meta.NoLeader, p.Leader, "2 is fenced")
	require.Equal(t, []int32{2}, p.ISR)
	require.Empty(t, p.ELR)

	// 2 comes back (a restart: its directory remembers its epoch) and
	// leads with every committed record.
	r = h.do(func() *kmsg.BrokerRegistrationRequest {
		req := registration(2, "restart")
		req.PreviousBrokerEpoch = h.epochs[2]
		return req
	}()).(*kmsg.BrokerRegistrationResponse)
	require.Zero(t, r.ErrorCode, errName(r.ErrorCode))
	h.epochs[2] = r.BrokerEpoch
	h.commitAll()
	hb := h.do(heartbeatReq(2, h.epochs[2], h.committed, false, false)).(*kmsg.BrokerHeartbeatResponse)
	require.Zero(t, hb.ErrorCode)
	h.commitAll()
	p = h.partition("t", 0)
	require.Equal(t, int32(2), p.Leader)
	require.Empty(t, p.ELR, "the replaced disk is not eligible")
}

// SuspectBroker: a report that a broker's listener refuses connections
// fences it at once on the active controller (its leaderships move); a
// fenced or unknown broker, or a controller that does not lead, ignores it.
func TestSuspectBrokerFencesAtOnce(t *testing.T) {
	h := newCluster(t, Config{}, 3)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2, 3}}, partitions: -1, rf: -1})
	require.False(t, h.c.SuspectBroker(h.now, 9), "unknown broker")
	require.True(t, h.c.SuspectBroker(h.now, 1))
	h.drain()
	h.commitAll()
	p := h.partition("t", 0)
	require.Equal(t, int32(2), p.Leader)
	require.NotContains(t, p.ISR, int32(1))
	require.False(t, h.c.SuspectBroker(h.now, 1), "fenced already")
}

// Forgotten replicas join the LastKnownELR. When the ISR's last member is
// forgotten too and no eligible replica is left, it stays, listed in the
// LastKnownELR: leading, it recovers (core/replica recovery.go). Its
// AlterPartition naming another member hands the leadership to it (once
// that member is active); one with its ISR unchanged ends the recovery.
// Either clears the LastKnownELR (replicated seeds 573 and 771 with
// -damage-logs: the damaged last member led with its cut log).
func TestForgottenLastISRMemberRecovers(t *testing.T) {
	h := newCluster(t, Config{}, 3)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2, 3}}, partitions: -1, rf: -1,
		configs: map[string]string{"min.insync.replicas": "2"}})
	id := h.topicID("t")
	alter := func(broker int32, isr ...int32) int16 {
		t.Helper()
		p := h.partition("t", 0)
		resp := h.do(alterReq(2, broker, h.epochs[broker], "t", id, 0, p.LeaderEpoch, p.PartitionEpoch, isr...)).(*kmsg.AlterPartitionResponse)
		h.commitAll()
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	require.Zero(t, alter(1, 1, 2))
	require.Zero(t, alter(1, 1))
	require.Equal(t, []int32{2}, h.partition("t", 0).ELR)

	// Every broker loses power; 2 and then 1 come back with damage the
	// scrub found (PreviousBrokerEpoch -1).
	for _, b := range []int32{3, 2, 1} {
		h.do(heartbeatReq(b, h.epochs[b], h.committed, true, false))
		h.commitAll()
	}
	rejoin := func(b int32, incarnation string) {
		t.Helper()
		r := h.do(registration(b, incarnation)).(*kmsg.BrokerRegistrationResponse)
		require.Zero(t, r.ErrorCode, errName(r.ErrorCode))
		h.epochs[b] = r.BrokerEpoch
		h.commitAll()
	}
	rejoin(2, "damaged-2")
	p := h.partition("t", 0)
	require.Empty(t, p.ELR)
	require.Equal(t, []int32{2}, p.LastKnownELR, "forgotten, not lost: 2 may hold every committed record")
	rejoin(1, "damaged-1")
	p = h.partition("t", 0)
	require.Equal(t, []int32{1}, p.ISR, "the ISR is never empty")
	require.Equal(t, []int32{2, 1}, p.LastKnownELR)

	hb := h.do(heartbeatReq(1, h.epochs[1], h.committed, false, false)).(*kmsg.BrokerHeartbeatResponse)
	require.Zero(t, hb.ErrorCode)
	h.commitAll()
	p = h.partition("t", 0)
	require.Equal(t, int32(1), p.Leader)
	require.True(t, recovering(&p))
	require.Equal(t, kerr.InvalidRequest.Code, alter(1, 3), "3 is not in the LastKnownELR")
	require.Equal(t, kerr.IneligibleReplica.Code, alter(1, 2), "2 is fenced")

	hb = h.do(heartbeatReq(2, h.epochs[2], h.committed, false, false)).(*kmsg.BrokerHeartbeatResponse)
	require.Zero(t, hb.ErrorCode)
	h.commitAll()
	require.Equal(t, kerr.InvalidRequest.Code, alter(1, 1, 2), "a recovering leader grows no ISR")

	// 2 comes back with lost data again: the partition epoch moves on
	// (voiding the claims the leader holds), and a hand-off sent at the
	// old one is refused.
	h.do(heartbeatReq(2, h.epochs[2], h.committed, true, false))
	h.commitAll()
	stale := h.partition("t", 0)
	rejoin(2, "damaged-again")
	p = h.partition("t", 0)
	require.Equal(t, stale.PartitionEpoch+1, p.PartitionEpoch)
	require.Equal(t, []int32{2, 1}, p.LastKnownELR)
	resp := h.do(alterReq(2, 1, h.epochs[1], "t", id, 0, stale.LeaderEpoch, stale.PartitionEpoch, 2)).(*kmsg.AlterPartitionResponse)
	h.commitAll()
	require.Equal(t, kerr.InvalidUpdateVersion.Code, resp.Topics[0].Partitions[0].ErrorCode)
	hb = h.do(heartbeatReq(2, h.epochs[2], h.committed, false, false)).(*kmsg.BrokerHeartbeatResponse)
	require.Zero(t, hb.ErrorCode)
	h.commitAll()
	epoch := h.partition("t", 0).LeaderEpoch
	require.Zero(t, alter(1, 2), "2 claimed the longer log")
	p = h.partition("t", 0)
	require.Equal(t, int32(2), p.Leader)
	require.Equal(t, epoch+1, p.LeaderEpoch)
	require.Equal(t, []int32{2}, p.ISR)
	require.Empty(t, p.LastKnownELR)
	require.False(t, recovering(&p))
}

// shutDown has the brokers shut down in turn (a heartbeat asking to),
// committing after each.
func (h *harness) shutDown(brokers ...int32) {
	for _, b := range brokers {
		h.do(heartbeatReq(b, h.epochs[b], h.committed, true, false))
		h.commitAll()
	}
}

// reregister registers broker b again, as a restarted broker does, and
// commits.
func (h *harness) reregister(b int32) {
	h.tb.Helper()
	r := h.do(registration(b, "again")).(*kmsg.BrokerRegistrationResponse)
	if r.ErrorCode != 0 {
		h.tb.Fatalf("register %d again: %s", b, errName(r.ErrorCode))
	}
	h.epochs[b] = r.BrokerEpoch
	h.commitAll()
}

// A recovering leader whose own log is the longest proposes its ISR
// unchanged: it leads on, in the same epoch, and the LastKnownELR clears.
func TestRecoveringLeaderRecovered(t *testing.T) {
	h := newCluster(t, Config{}, 2)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2}}, partitions: -1, rf: -1,
		configs: map[string]string{"min.insync.replicas": "2"}})
	id := h.topicID("t")
	p := h.partition("t", 0)
	resp := h.do(alterReq(2, 1, h.epochs[1], "t", id, 0, p.LeaderEpoch, p.PartitionEpoch, 1)).(*kmsg.AlterPartitionResponse)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	h.commitAll()
	h.shutDown(2, 1)
	for _, b := range []int32{2, 1} {
		h.reregister(b)
		h.do(heartbeatReq(b, h.epochs[b], h.committed, false, false))
		h.commitAll()
	}
	p = h.partition("t", 0)
	require.Equal(t, int32(1), p.Leader)
	require.True(t, recovering(&p))
	resp = h.do(alterReq(2, 1, h.epochs[1], "t", id, 0, p.LeaderEpoch, p.PartitionEpoch, 1)).(*kmsg.AlterPartitionResponse)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	h.commitAll()
	q := h.partition("t", 0)
	require.Equal(t, p.LeaderEpoch, q.LeaderEpoch)
	require.Empty(t, q.LastKnownELR)
	require.False(t, recovering(&q))

	// Back at min.insync.replicas later, nothing is left to recover.
	resp = h.do(alterReq(2, 1, h.epochs[1], "t", id, 0, q.LeaderEpoch, q.PartitionEpoch, 1, 2)).(*kmsg.AlterPartitionResponse)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
}

// An operator who gives up on a LastKnownELR member that never comes back
// asks for an unclean election: the recovering leader serves its own log,
// counted as unclean.
func TestUncleanElectionEndsARecovery(t *testing.T) {
	var told []int32
	h := newCluster(t, Config{OnUncleanElection: func(_ string, _, leader int32) { told = append(told, leader) }}, 2)
	h.mustCreate(topicSpec{name: "t", assignment: [][]int32{{1, 2}}, partitions: -1, rf: -1,
		configs: map[string]string{"min.insync.replicas": "2"}})
	p := h.partition("t", 0)
	h.do(alterReq(2, 1, h.epochs[1], "t", h.topicID("t"), 0, p.LeaderEpoch, p.PartitionEpoch, 1))
	h.commitAll()
	h.shutDown(2, 1)
	for _, b := range []int32{2, 1} {
		h.reregister(b)
	}
	h.do(heartbeatReq(1, h.epochs[1], h.committed, false, false)) // 2 stays away
	h.commitAll()
	p = h.partition("t", 0)
	require.True(t, recovering(&p))
	require.Equal(t, []int16{0}, electCodes(h.do(electReq(electUnclean, "t", 0))))
	h.commitAll()
	p = h.partition("t", 0)
	require.False(t, recovering(&p))
	require.Equal(t, int32(1), p.Leader)
	require.Equal(t, []int32{1}, told)
}
