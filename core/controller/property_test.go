package controller

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/meta"
)

// action is one step of a random history, drawn up front so that the same
// history can run twice. Its numbers pick among what exists when it runs.
type action struct {
	kind    int
	a, b, c int
	flag    bool
	flag2   bool
}

const (
	actRegister = iota
	actHeartbeat
	actTick
	actCreate
	actDelete
	actCreatePartitions
	actAlterPartition
	actAllocate
	actConfig
	actCommit
	actLeaderChange
	numActions
)

var propertyTopics = []string{"a", "b", "x.y", "x_y", "long-name", "z"}

// actionWeights weighs the action kinds, so that histories are mostly
// heartbeats, topic work and commits, with occasional leader changes.
var actionWeights = [numActions]int{
	actRegister: 2, actHeartbeat: 6, actTick: 3, actCreate: 4, actDelete: 1, actCreatePartitions: 2,
	actAlterPartition: 4, actAllocate: 1, actConfig: 2, actCommit: 5, actLeaderChange: 1,
}

// weightedKinds lists each kind as often as its weight, round robin, so
// that rapid's preference for early entries does not favour one kind.
func weightedKinds() []int {
	var kinds []int
	left := actionWeights
	for more := true; more; {
		more = false
		for k := range left {
			if left[k] > 0 {
				kinds = append(kinds, k)
				left[k]--
				more = true
			}
		}
	}
	return kinds
}

// drawHistory draws a history of requests, ticks, commits and leader
// changes.
func drawHistory(t *rapid.T) []action {
	n := rapid.IntRange(30, 200).Draw(t, "steps")
	kinds := rapid.SampledFrom(weightedKinds())
	out := make([]action, n)
	for i := range out {
		out[i] = action{
			kind:  kinds.Draw(t, "kind"),
			a:     rapid.IntRange(0, 1000).Draw(t, "a"),
			b:     rapid.IntRange(0, 1000).Draw(t, "b"),
			c:     rapid.IntRange(0, 1000).Draw(t, "c"),
			flag:  rapid.Bool().Draw(t, "flag"),
			flag2: rapid.Bool().Draw(t, "flag2"),
		}
	}
	return out
}

// runHistory plays a history on a fresh harness, checking the invariants
// after every step, and returns the log it produced.
func runHistory(t *rapid.T, history []action, check bool) [][]byte {
	h := newHarness(t, Config{SessionTimeout: 3 * time.Second}, 42)
	tracker := newEpochTracker()
	for _, act := range history {
		step(h, act)
		if check {
			checkInvariants(t, h, tracker)
			if act.kind == actLeaderChange {
				checkReplay(t, h)
			}
		}
	}
	// Finally everything commits (if still leader) and a broker replaying
	// the committed log gets the controller's committed image.
	if h.c.IsLeader() {
		h.commitAll()
	}
	if check {
		checkInvariants(t, h, tracker)
		checkReplay(t, h)
	}
	var values [][]byte
	for _, e := range h.log {
		values = append(values, e.value)
	}
	return values
}

func step(h *harness, act action) {
	spec := h.c.SpeculativeImage()
	var brokers []meta.BrokerRegistration
	for b := range spec.Brokers() {
		brokers = append(brokers, b)
	}
	var topics []*meta.TopicImage
	for t := range spec.Topics() {
		topics = append(topics, t)
	}
	switch act.kind {
	case actRegister:
		inc := []string{"a", "b", "c"}[act.b%3]
		h.handle(registration(int32(1+act.a%4), inc))
	case actHeartbeat:
		if len(brokers) == 0 {
			return
		}
		b := brokers[act.a%len(brokers)]
		epoch, offset := b.Epoch, h.committed
		switch act.c % 8 {
		case 0:
			epoch-- // stale
		case 1:
			offset = b.Epoch - 1 // behind its registration
		}
		h.handle(heartbeatReq(b.ID, epoch, offset, act.flag && act.b%4 == 0, act.flag2 && act.b%5 == 0))
	case actTick:
		h.tick(time.Duration(act.a%2000) * time.Millisecond)
	case actCreate:
		name := propertyTopics[act.a%len(propertyTopics)]
		ts := topicSpec{name: name, partitions: int32(1 + act.b%4), rf: int16(1 + act.c%3), configs: map[string]string{}}
		if act.flag && len(brokers) > 0 {
			// A manual assignment over registered brokers, maybe fenced ones.
			ts.partitions, ts.rf = -1, -1
			for p := range 1 + act.b%3 {
				replicas := []int32{brokers[(act.c+p)%len(brokers)].ID}
				if len(brokers) > 1 {
					replicas = append(replicas, brokers[(act.c+p+1)%len(brokers)].ID)
				}
				ts.assignment = append(ts.assignment, replicas)
			}
		}
		if act.flag2 {
			ts.configs[config.TopicUncleanLeaderElection] = "true"
		}
		h.handle(createTopicsReq(act.c%7 == 0, ts))
	case actDelete:
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = 6
		dt := kmsg.NewDeleteTopicsRequestTopic()
		if act.flag && len(topics) > 0 {
			dt.TopicID = topics[act.a%len(topics)].ID()
		} else {
			name := propertyTopics[act.a%len(propertyTopics)]
			dt.Topic = &name
		}
		req.Topics = append(req.Topics, dt)
		h.handle(req)
	case actCreatePartitions:
		name := propertyTopics[act.a%len(propertyTopics)]
		h.handle(createPartitionsReq(false, growTo(name, int32(act.b%6))))
	case actAlterPartition:
		if len(topics) == 0 {
			return
		}
		topic := topics[act.a%len(topics)]
		if topic.NumPartitions() == 0 {
			return
		}
		p, _ := topic.Partition(int32(act.b % topic.NumPartitions()))
		leader := p.Leader
		if leader == meta.NoLeader {
			leader = p.Replicas[0]
		}
		var isr []int32
		for i, r := range p.Replicas {
			if r == leader || (act.c>>i)&1 == 1 {
				isr = append(isr, r)
			}
		}
		leaderEpoch, partitionEpoch := p.LeaderEpoch, p.PartitionEpoch
		if act.flag {
			partitionEpoch-- // stale
		}
		if act.flag2 && act.c%3 == 0 {
			leaderEpoch--
		}
		reg, _ := spec.Broker(leader)
		h.handle(alterReq(3, leader, reg.Epoch, topic.Name(), topic.ID(), p.ID, leaderEpoch, partitionEpoch, isr...))
	case actAllocate:
		if len(brokers) == 0 {
			return
		}
		b := brokers[act.a%len(brokers)]
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = b.ID, b.Epoch
		h.handle(req)
	case actConfig:
		name := propertyTopics[act.a%len(propertyTopics)]
		value := []string{"true", "false"}[act.b%2]
		ops := []configOp{set(config.TopicUncleanLeaderElection, value)}
		if act.flag {
			ops = []configOp{del(config.TopicUncleanLeaderElection), set("retention.ms", fmt.Sprint(act.c))}
		}
		h.handle(incrementalReq(false, kmsg.ConfigResourceTypeTopic, name, ops...))
	case actCommit:
		if !h.c.IsLeader() {
			return
		}
		end := int64(len(h.log) - 1)
		if end <= h.committed {
			return
		}
		to := end
		if act.flag {
			// Anywhere in the uncommitted tail, batch boundaries or not.
			to = h.committed + 1 + int64(act.a)%(end-h.committed)
		}
		h.commit(to)
	case actLeaderChange:
		h.resign(act.flag)
		h.now += time.Duration(act.a) * time.Millisecond
		h.becomeLeader()
	}
}

// epochTracker remembers partition and broker epochs of the last committed
// image checked, to check they never go backwards.
type epochTracker struct {
	partitions map[partitionKey][2]int32
	brokers    map[int32]int64
	producerID int64
	position   int64
}

func newEpochTracker() *epochTracker {
	return &epochTracker{partitions: map[partitionKey][2]int32{}, brokers: map[int32]int64{}, position: -1}
}

// checkInvariants checks the image invariants on the committed image and,
// on a leader, the speculative image.
func checkInvariants(t *rapid.T, h *harness, tr *epochTracker) {
	committed := h.c.CommittedImage()
	if committed.Position().Offset < tr.position {
		t.Fatalf("committed position moved back: %d -> %v", tr.position, committed.Position())
	}
	tr.position = committed.Position().Offset
	if committed.Position().Offset > h.committed {
		t.Fatalf("committed image at %v beyond the committed offset %d", committed.Position(), h.committed)
	}
	for t2 := range committed.Topics() {
		for p := range t2.Partitions() {
			k := partitionKey{t2.ID(), p.ID}
			if prev, ok := tr.partitions[k]; ok {
				if p.LeaderEpoch < prev[0] || p.PartitionEpoch < prev[1] {
					t.Fatalf("%s-%d epochs went back: %v -> %d/%d", t2.Name(), p.ID, prev, p.LeaderEpoch, p.PartitionEpoch)
				}
			}
			tr.partitions[k] = [2]int32{p.LeaderEpoch, p.PartitionEpoch}
		}
	}
	for b := range committed.Brokers() {
		if prev, ok := tr.brokers[b.ID]; ok && b.Epoch < prev {
			t.Fatalf("broker %d epoch went back: %d -> %d", b.ID, prev, b.Epoch)
		}
		tr.brokers[b.ID] = b.Epoch
	}
	if next := committed.ProducerIDs().NextProducerID; next < tr.producerID {
		t.Fatalf("next producer id went back: %d -> %d", tr.producerID, next)
	} else {
		tr.producerID = next
	}
	if h.c.IsLeader() {
		// The leader's images stand at batch boundaries, where the election
		// invariants hold, once the repair of what it inherited commits.
		if committed.Position().Offset >= h.repairedAt {
			checkElections(t, "committed", committed)
		}
		checkElections(t, "speculative", h.c.SpeculativeImage())
	}
}

// checkElections: every leader is an active member of its partition's ISR,
// the ISR is a non-empty subset of the replicas, and a partition without a
// leader has no active ISR member.
func checkElections(t *rapid.T, which string, img *meta.Image) {
	active := acceptableLeaders(img, meta.NoLeader, meta.NoLeader)
	for topic := range img.Topics() {
		for p := range topic.Partitions() {
			if len(p.ISR) == 0 {
				t.Fatalf("%s %s-%d: empty ISR", which, topic.Name(), p.ID)
			}
			for _, m := range p.ISR {
				if !slices.Contains(p.Replicas, m) {
					t.Fatalf("%s %s-%d: ISR %v not within replicas %v", which, topic.Name(), p.ID, p.ISR, p.Replicas)
				}
			}
			if p.Leader != meta.NoLeader {
				if !slices.Contains(p.ISR, p.Leader) {
					t.Fatalf("%s %s-%d: leader %d not in ISR %v", which, topic.Name(), p.ID, p.Leader, p.ISR)
				}
				if !active(p.Leader) {
					t.Fatalf("%s %s-%d: led by inactive broker %d", which, topic.Name(), p.ID, p.Leader)
				}
				continue
			}
			if slices.ContainsFunc(p.ISR, active) {
				t.Fatalf("%s %s-%d: leaderless with active ISR member in %v", which, topic.Name(), p.ID, p.ISR)
			}
		}
	}
}

// checkReplay replays the committed log onto the empty image and compares
// with the controller's committed image.
func checkReplay(t *rapid.T, h *harness) {
	img := h.c.CommittedImage()
	replayed := h.replayCommitted(img.Position().Offset)
	if !meta.Equal(replayed, img) {
		t.Fatalf("replayed log differs from the controller's image: %v", meta.Diff(replayed, img))
	}
}

// propertyRounds is how many rapid runs (of -rapid.checks histories each,
// 100 by default) TestPropertyInvariants makes outside -short: about a
// second for a thousand histories.
const propertyRounds = 10

// TestPropertyInvariants runs random histories of requests, ticks, partial
// commits and leader changes: the invariants hold after every step, the
// committed log replays to the controller's image, and the same history
// gives the same log (determinism).
func TestPropertyInvariants(t *testing.T) {
	rounds := propertyRounds
	if testing.Short() {
		rounds = 1
	}
	for round := range rounds {
		t.Run(fmt.Sprint("round-", round), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				history := drawHistory(t)
				first := runHistory(t, history, true)
				second := runHistory(t, history, false)
				if len(first) != len(second) {
					t.Fatalf("same history, logs of %d and %d entries", len(first), len(second))
				}
				for i := range first {
					if !bytes.Equal(first[i], second[i]) {
						t.Fatalf("same history, logs differ at offset %d", i)
					}
				}
			})
		})
	}
}
