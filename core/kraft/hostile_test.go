package kraft_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/quorum"
)

// forgedVote is a Vote as an attacker builds it by hand (issue 22, finding
// 1): the right cluster id and partition, addressed to voter, in the name
// of candidate, at epoch with a last offset far past anything the quorum
// holds.
func forgedVote(voter, candidate int32, epoch int32, lastEpoch int32, lastOffset int64) *kmsg.VoteRequest {
	req := kmsg.NewPtrVoteRequest()
	req.Version = 2
	cluster := "sim-cluster"
	req.ClusterID, req.VoterID = &cluster, voter
	part := kmsg.NewVoteRequestTopicPartition()
	part.Partition = quorum.MetadataPartition
	part.CandidateEpoch, part.CandidateID = epoch, candidate
	part.LastOffsetEpoch, part.LastOffset = lastEpoch, lastOffset
	topic := kmsg.NewVoteRequestTopic()
	topic.Topic, topic.Partitions = quorum.MetadataTopic, []kmsg.VoteRequestTopicPartition{part}
	req.Topics = []kmsg.VoteRequestTopic{topic}
	return req
}

// voteAnswer is the error and verdict of a Vote response: the top-level
// error when set, else the partition's.
func voteAnswer(resp *kmsg.VoteResponse) (int16, bool) {
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return resp.ErrorCode, false
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.VoteGranted
}

// TestForgedMaxEpochVote is finding 1 of issue 22 over the wire: a Vote
// with CandidateEpoch 2147483647 sent to the controller listener of every
// voter, naming another voter as candidate, used to be granted and
// persisted; the next candidacy computed epoch+1, wrapped to -2147483648
// and panicked ("quorum epoch moved backwards"), and every restart
// panicked again. Now every voter refuses it with INVALID_REQUEST, keeps
// its epoch, and the quorum goes on serving, across a restart of all.
func TestForgedMaxEpochVote(t *testing.T) {
	c := newCluster(t, 11, 3)
	leader, brokerEpoch := c.leadWithTopic("before")
	epoch := c.members[leader].Status().Epoch

	for i := range c.members {
		candidate := int32((i+1)%3 + 1)
		resp := c.requestOverNet(fmt.Sprintf("c%d:9093", i+1), forgedVote(int32(i+1), candidate, math.MaxInt32, math.MaxInt32-1, 1<<40)).(*kmsg.VoteResponse)
		code, granted := voteAnswer(resp)
		if granted || code != kerr.InvalidRequest.Code {
			t.Errorf("c%d answered the forged vote with error %d granted %v; want INVALID_REQUEST, refused", i+1, code, granted)
		}
	}
	// Long enough for every member to campaign again had it adopted the
	// forged epoch.
	if err := c.s.RunFor(20 * time.Second); err != nil {
		t.Fatalf("after the forged votes: %v", err)
	}
	for i, m := range c.members {
		if st := m.Status(); st.Err != nil || st.Epoch >= math.MaxInt32-1 {
			t.Fatalf("c%d after the forged votes: epoch %d, err %v", i+1, st.Epoch, st.Err)
		}
	}
	leader = c.waitLeader()
	if e := c.members[leader].Status().Epoch; e != epoch {
		t.Errorf("the leader's epoch moved from %d to %d: the forged votes disrupted it", epoch, e)
	}
	c.heartbeat(leader, brokerEpoch)
	c.createTopic(leader, "after")
	c.converge("before", "after")

	// Every restart comes back clean.
	for _, p := range c.procs {
		p.Crash()
	}
	for _, p := range c.procs {
		p.Start()
	}
	// Let the new incarnations start before asking them anything.
	if err := c.s.RunFor(time.Second); err != nil {
		t.Fatalf("restart: %v", err)
	}
	leader = c.waitLeader()
	c.heartbeat(leader, brokerEpoch)
	c.createTopic(leader, "restarted")
	c.converge("before", "after", "restarted")
}

// writeStateFile replaces member e's quorum-state, as the pre-fix
// member persisted it or as `strata quorum reset-state` writes it.
func writeStateFile(t testing.TB, e env.Env, s quorum.QuorumState) {
	f, err := e.Disk().Open(kraft.StateFileName, true)
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		err = f.WriteAt(kraft.EncodeStateFile(s), 0)
	}
	if err != nil {
		t.Fatalf("write quorum-state: %v", err)
	}
	_ = f.Close()
}

// TestUnusableStateFailsStartWithOneError is finding 1's aftermath: a
// quorum whose every member persisted epoch 2147483647 (as a Strata before
// the fix did from one forged Vote) used to panic at every start. Now each
// member refuses to start with one error naming the file and the fix; the
// operator's procedure (docs/operations.md) brings the quorum back with
// its metadata intact.
func TestUnusableStateFailsStartWithOneError(t *testing.T) {
	c := newCluster(t, 12, 3)
	leader, brokerEpoch := c.leadWithTopic("kept")
	var lastEpoch int32
	for _, m := range c.members {
		lastEpoch = max(lastEpoch, m.LogView().EndOffset.Epoch)
	}
	for _, p := range c.procs {
		p.Crash()
	}

	// Poisoned, as the pre-fix quorum left it.
	poisoned := quorum.QuorumState{Epoch: math.MaxInt32, VotedFor: 2, LeaderID: quorum.NoNode}
	failed := map[int]error{}
	c.beforeStart = func(i int, e env.Env) { writeStateFile(t, e, poisoned) }
	c.startFailed = func(i int, err error) { failed[i] = err }
	for _, p := range c.procs {
		p.Start()
	}
	if err := c.s.RunFor(5 * time.Second); err != nil {
		t.Fatalf("start on a poisoned quorum-state: %v", err)
	}
	for i := range c.procs {
		err := failed[i]
		if !errors.Is(err, kraft.ErrUnusableState) {
			t.Fatalf("c%d started on a poisoned quorum-state: %v", i+1, err)
		}
		for _, want := range []string{"quorum-state", "2147483647", "strata quorum reset-state", "docs/operations.md"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("c%d's error does not say %q: %v", i+1, want, err)
			}
		}
	}
	t.Logf("the error: %v", failed[0])

	// The operator's fix: every member reset to one past the largest epoch
	// any metadata log ends in.
	for _, p := range c.procs {
		p.Crash()
	}
	reset := quorum.QuorumState{Epoch: lastEpoch + 1, VotedFor: quorum.NoNode, LeaderID: quorum.NoNode}
	c.beforeStart = func(i int, e env.Env) { writeStateFile(t, e, reset) }
	c.startFailed = nil
	for _, p := range c.procs {
		p.Start()
	}
	if err := c.s.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	c.beforeStart = nil
	leader = c.waitLeader()
	if e := c.members[leader].Status().Epoch; e <= lastEpoch+1 {
		t.Errorf("elected in epoch %d, want past the reset epoch %d", e, lastEpoch+1)
	}
	c.heartbeat(leader, brokerEpoch)
	c.createTopic(leader, "after")
	c.converge("kept", "after")
}

// TestControllerListenerRefusesForgedRequests sends the hostile shapes of
// issue 22 over the wire to a follower's controller listener: each is
// answered with Kafka's error (the self-named ones used to get no answer
// at all, leaving the connection hanging), and the quorum does not move.
func TestControllerListenerRefusesForgedRequests(t *testing.T) {
	c := newCluster(t, 13, 3)
	leader := c.waitLeader()
	epoch := c.members[leader].Status().Epoch
	follower := (leader + 1) % 3
	self := int32(follower + 1)
	other := int32((follower+1)%3 + 1)
	addr := fmt.Sprintf("c%d:9093", self)
	last := quorum.OffsetAndEpoch{Offset: 1 << 40, Epoch: epoch}
	enc := func(from int32, p quorum.Payload, cluster string) kmsg.Request {
		req, err := quorum.EncodeRequest(quorum.Message{From: quorum.NodeID(from), To: quorum.NodeID(self), Payload: p}, cluster, quorum.DefaultWireVersions)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	otherTopic := enc(other, quorum.VoteRequest{Epoch: epoch + 1, CandidateID: quorum.NodeID(other), LastEnd: last}, "sim-cluster").(*kmsg.VoteRequest)
	otherTopic.Topics[0].Topic = "orders"
	for _, tc := range []struct {
		name string
		req  kmsg.Request
		want *kerr.Error
	}{
		{"self-named vote", enc(self, quorum.VoteRequest{Epoch: epoch + 1, CandidateID: quorum.NodeID(self), LastEnd: last}, "sim-cluster"), kerr.InvalidRequest},
		{"self-named begin quorum epoch", enc(self, quorum.BeginQuorumEpochRequest{Epoch: epoch + 1, LeaderID: quorum.NodeID(self)}, "sim-cluster"), kerr.InvalidRequest},
		{"non-voter vote", enc(77, quorum.VoteRequest{Epoch: epoch + 1, CandidateID: 77, LastEnd: last}, "sim-cluster"), kerr.InconsistentVoterSet},
		{"non-voter begin quorum epoch", enc(77, quorum.BeginQuorumEpochRequest{Epoch: epoch + 1, LeaderID: 77}, "sim-cluster"), kerr.InconsistentVoterSet},
		{"other cluster", enc(other, quorum.VoteRequest{Epoch: epoch + 1, CandidateID: quorum.NodeID(other), LastEnd: last}, "evil"), kerr.InconsistentClusterID},
		{"other topic", otherTopic, kerr.InvalidRequest},
		{"negative fetch offset", enc(77, quorum.FetchRequest{Epoch: epoch, ReplicaID: 77, FetchOffset: -1}, "sim-cluster"), kerr.InvalidRequest},
		{"second leader of the epoch", enc(other, quorum.BeginQuorumEpochRequest{Epoch: epoch, LeaderID: quorum.NodeID(other)}, "sim-cluster"), kerr.InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.requestOverNet(addr, tc.req)
			var top, part int16
			switch r := resp.(type) {
			case *kmsg.VoteResponse:
				top = r.ErrorCode
				if len(r.Topics) == 1 {
					part = r.Topics[0].Partitions[0].ErrorCode
					if r.Topics[0].Partitions[0].VoteGranted {
						t.Fatal("granted")
					}
				}
			case *kmsg.BeginQuorumEpochResponse:
				top = r.ErrorCode
				if len(r.Topics) == 1 {
					part = r.Topics[0].Partitions[0].ErrorCode
				}
			case *kmsg.FetchResponse:
				top = r.ErrorCode
				if len(r.Topics) == 1 {
					part = r.Topics[0].Partitions[0].ErrorCode
				}
			}
			if top != tc.want.Code && part != tc.want.Code {
				t.Fatalf("answered %d/%d, want %s", top, part, tc.want.Message)
			}
		})
	}
	if now := c.activeController(); now != leader || c.members[leader].Status().Epoch != epoch {
		t.Fatalf("the quorum moved: c%d leads in epoch %d, was c%d in %d", now+1, c.members[now].Status().Epoch, leader+1, epoch)
	}
}

// TestOtherClusterIsRefused: a voter started with another cluster id (a
// data directory of another cluster, or a node formatted without the
// shared --cluster-id) takes no part in the quorum: its requests are
// refused with INCONSISTENT_CLUSTER_ID and it refuses the leader's, as
// KafkaRaftClient does. The two others elect and commit.
func TestOtherClusterIsRefused(t *testing.T) {
	c := newClusterWithConfig(t, 14, 3, 0, func(cfg *kraft.Config) {
		if cfg.NodeID == 3 {
			cfg.ClusterID = "other-cluster"
		}
	})
	leader := c.waitLeader()
	if leader == 2 {
		t.Fatal("the member of another cluster leads")
	}
	brokerEpoch := c.registerBroker(leader)
	c.heartbeat(leader, brokerEpoch)
	c.createTopic(leader, "alpha")
	if err := c.s.RunFor(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if st := c.members[2].Status(); st.Leader != quorum.NoNode || st.Err != nil {
		t.Fatalf("the member of another cluster follows %d (err %v)", st.Leader, st.Err)
	}
	if _, ok := c.members[2].Image().TopicByName("alpha"); ok {
		t.Fatal("the member of another cluster applied the metadata log")
	}
}
