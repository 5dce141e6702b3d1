package kraft_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/sim"
)

// BenchmarkFailover100kPartitions measures controller failover in the
// simulator with 100,000 partitions in the metadata image: three voters,
// 1000 topics of 100 partitions created through the controller (20 topics
// per CreateTopics), then the leader crashes. It reports
//
//   - failover-sim-ms: simulated time from the crash until a new controller
//     is active and a CreateTopics (after the broker's next heartbeat)
//     succeeds, and failover-wall-ms, the wall time simulating it took;
//   - snapshot-bytes, snapshot-partitions and snapshot-load-wall-ms: the
//     size of the crashed member's latest snapshot, the partitions it
//     holds, and the wall time of its restart's
//     kraft.Start, which loads it; catchup-wall-ms: the wall time until its
//     image converged with the others (replaying the log after the
//     snapshot);
//   - create-wall-s: the wall time of creating the partitions.
//
// Run it with
//
//	go test -run '^$' -bench Failover100kPartitions -benchtime 1x ./core/kraft/
func BenchmarkFailover100kPartitions(b *testing.B) {
	for i := 0; i < b.N; i++ {
		runFailoverBench(b, uint64(i+1), 1000, 100)
	}
}

// failoverSnapshotRecords is the benchmark's snapshot interval in records
// (Config.SnapshotIntervalRecords): the 100k partition records are only
// about 10 MiB of log, below Kafka's 20 MiB byte interval, and with this
// the latest snapshot holds all of them.
const failoverSnapshotRecords = 20_000

type benchCluster struct {
	tb       testing.TB
	s        *sim.Sim
	procs    []*sim.Process
	members  []*kraft.Member
	startDur []time.Duration // wall time of each member's latest kraft.Start
	// startParts is the partition count of each member's image right
	// after its latest kraft.Start: what its snapshot held.
	startParts []int
}

func (c *benchCluster) runUntil(bound time.Duration, what string, cond func() bool) {
	c.tb.Helper()
	deadline := c.s.Now() + bound
	for !cond() {
		if c.s.Now() >= deadline {
			c.tb.Fatalf("%s: not within %v (at %v)", what, bound, c.s.Now())
		}
		if err := c.s.RunFor(pollStep); err != nil {
			c.tb.Fatalf("%s: %v", what, err)
		}
	}
}

func (c *benchCluster) active(except int) int {
	for i, m := range c.members {
		if i != except && m != nil && c.procs[i].Up() && m.Status().ActiveController {
			return i
		}
	}
	return -1
}

func (c *benchCluster) do(i int, req kmsg.Request) kmsg.Response {
	c.tb.Helper()
	var resp kmsg.Response
	done := false
	c.members[i].Submit(req, func(r kmsg.Response, err error) {
		if err != nil {
			c.tb.Fatalf("submit %s: %v", kmsg.NameForKey(req.Key()), err)
		}
		resp, done = r, true
	})
	c.runUntil(30*time.Second, "answer "+kmsg.NameForKey(req.Key()), func() bool { return done })
	return resp
}

func (c *benchCluster) heartbeat(leader int, brokerEpoch int64) {
	c.tb.Helper()
	for try := 0; try < 20; try++ {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.Version = 1
		hb.BrokerID, hb.BrokerEpoch = 100, brokerEpoch
		hb.CurrentMetadataOffset = c.members[leader].Image().Position().Offset
		resp := c.do(leader, hb).(*kmsg.BrokerHeartbeatResponse)
		if resp.ErrorCode != 0 {
			c.tb.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		if !resp.IsFenced {
			return
		}
	}
	c.tb.Fatalf("broker still fenced")
}

func (c *benchCluster) createTopics(leader int, names []string, partitions int32) {
	c.tb.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 30_000
	for _, name := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, 1
		req.Topics = append(req.Topics, t)
	}
	resp := c.do(leader, req).(*kmsg.CreateTopicsResponse)
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 {
			c.tb.Fatalf("create topic %s: %v", t.Topic, kerr.ErrorForCode(t.ErrorCode))
		}
	}
}

func runFailoverBench(b *testing.B, seed uint64, topics, partitions int) {
	b.StopTimer()
	const perRequest = 20
	c := &benchCluster{tb: b, s: sim.New(sim.Config{Seed: seed, Log: testLog}), members: make([]*kraft.Member, 3), startDur: make([]time.Duration, 3), startParts: make([]int, 3)}
	voters := map[quorum.NodeID]string{}
	for i := 0; i < 3; i++ {
		voters[quorum.NodeID(i+1)] = fmt.Sprintf("c%d:9093", i+1)
	}
	for i := 0; i < 3; i++ {
		cfg := kraft.Config{NodeID: quorum.NodeID(i + 1), Voters: kraft.ParseVoters(voters), ClusterID: "sim-cluster"}
		cfg.SnapshotIntervalRecords = failoverSnapshotRecords
		p := c.s.AddProcess(fmt.Sprintf("c%d", i+1), func(e env.Env) {
			start := time.Now()
			m, err := kraft.Start(e, cfg)
			c.startDur[i] = time.Since(start)
			if err != nil {
				b.Errorf("start c%d: %v", i+1, err)
			}
			c.members[i] = m
			if m != nil {
				c.startParts[i] = m.Image().NumPartitions()
			}
		})
		c.procs = append(c.procs, p)
		p.Start()
	}
	leader := -1
	c.runUntil(electionBound, "elect", func() bool { leader = c.active(-1); return leader >= 0 })

	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.Version = 3
	reg.BrokerID = 100
	reg.IncarnationID = [16]byte{0: 1, 15: 1}
	reg.ClusterID = "sim-cluster"
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "broker-100", 9092
	reg.Listeners = []kmsg.BrokerRegistrationRequestListener{l}
	regResp := c.do(leader, reg).(*kmsg.BrokerRegistrationResponse)
	if regResp.ErrorCode != 0 {
		b.Fatalf("register: %v", kerr.ErrorForCode(regResp.ErrorCode))
	}
	brokerEpoch := regResp.BrokerEpoch

	createStart := time.Now()
	for t := 0; t < topics; t += perRequest {
		var names []string
		for k := t; k < min(t+perRequest, topics); k++ {
			names = append(names, fmt.Sprintf("topic-%04d", k))
		}
		c.heartbeat(leader, brokerEpoch)
		c.createTopics(leader, names, int32(partitions))
	}
	createWall := time.Since(createStart)
	c.runUntil(30*time.Second, "converge", func() bool {
		d := c.members[0].Image().Digest()
		return c.members[1].Image().Digest() == d && c.members[2].Image().Digest() == d
	})
	img := c.members[leader].Image()
	count := img.NumPartitions()
	if count != topics*partitions {
		b.Fatalf("%d partitions in the image, want %d", count, topics*partitions)
	}

	// Failover.
	b.StartTimer()
	crashedAt, wallStart := c.s.Now(), time.Now()
	c.procs[leader].Crash()
	next := -1
	c.runUntil(electionBound, "elect a successor", func() bool { next = c.active(leader); return next >= 0 })
	activeAt := c.s.Now()
	c.heartbeat(next, brokerEpoch)
	c.createTopics(next, []string{"after-failover"}, 1)
	failoverSim, failoverWall := c.s.Now()-crashedAt, time.Since(wallStart)
	b.StopTimer()

	// Restart the crashed member: it loads its latest snapshot.
	var snapName string
	var snapBytes int
	for _, f := range c.procs[leader].Disk().Files() {
		if strings.HasSuffix(f, ".checkpoint") {
			data, _ := c.procs[leader].Disk().ReadFile(f)
			snapName, snapBytes = f, len(data)
		}
	}
	c.members[leader] = nil
	catchupStart := time.Now()
	c.procs[leader].Start()
	c.runUntil(30*time.Second, "restarted member converges", func() bool {
		m := c.members[leader]
		return m != nil && m.Image().Digest() == c.members[next].Image().Digest()
	})
	catchupWall := time.Since(catchupStart)

	b.ReportMetric(float64(failoverSim.Milliseconds()), "failover-sim-ms")
	b.ReportMetric(float64(failoverWall.Milliseconds()), "failover-wall-ms")
	b.ReportMetric(float64(snapBytes), "snapshot-bytes")
	b.ReportMetric(float64(c.startParts[leader]), "snapshot-partitions")
	b.ReportMetric(float64(c.startDur[leader].Microseconds())/1000, "snapshot-load-wall-ms")
	b.ReportMetric(float64(catchupWall.Milliseconds()), "catchup-wall-ms")
	b.ReportMetric(createWall.Seconds(), "create-wall-s")
	b.Logf("seed %d: %d partitions; c%d crashed, c%d active after %v (sim), CreateTopics answered %v after the crash (sim), %v wall; "+
		"snapshot %s of %d bytes (%d partitions) loaded by kraft.Start in %v wall, caught up in %v wall; creating took %v wall",
		seed, count, leader+1, next+1, activeAt-crashedAt, failoverSim, failoverWall,
		snapName, snapBytes, c.startParts[leader], c.startDur[leader], catchupWall, createWall)
}
