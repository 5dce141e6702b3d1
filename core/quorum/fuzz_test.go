package quorum

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/internal/fuzzcorpus"
)

// quorumKeys are the quorum RPCs, in the order a fuzz input picks them.
var quorumKeys = []kmsg.Key{kmsg.Vote, kmsg.BeginQuorumEpoch, kmsg.EndQuorumEpoch, kmsg.Fetch, kmsg.FetchSnapshot}

func keyIndex(k int16) uint8 {
	for i, q := range quorumKeys {
		if q.Int16() == k {
			return uint8(i)
		}
	}
	panic(fmt.Sprintf("key %d is not a quorum RPC", k))
}

// fuzzCluster is three voters and an observer with a committed log and a
// snapshot: leader 1, batches a, b (snapshotted), c.
func fuzzCluster(t *testing.T) *interaction {
	h := &interaction{nodes: map[NodeID]*testNode{}, network: newNetwork(), held: map[NodeID]bool{}, quiet: true}
	cfg := Config{Voters: []NodeID{1, 2, 3}}
	for _, id := range []NodeID{1, 2, 3, 4} {
		h.nodes[id] = newTestNode(id, cfg, uint64(id))
		h.ids = append(h.ids, id)
	}
	if err := h.nodes[1].raft.Campaign(); err != nil {
		t.Fatal(err)
	}
	h.process(1)
	h.runDuration(t, 500*time.Millisecond)
	for _, rec := range []string{"a", "b"} {
		if _, _, err := h.nodes[1].raft.Propose([][]byte{[]byte(rec)}); err != nil {
			t.Fatalf("set-up: %v", err)
		}
		h.process(1)
		h.stabilize(t)
	}
	if _, err := h.nodes[1].takeSnapshot(); err != nil {
		t.Fatalf("set-up: %v", err)
	}
	if _, _, err := h.nodes[1].raft.Propose([][]byte{[]byte("c")}); err != nil {
		t.Fatalf("set-up: %v", err)
	}
	h.process(1)
	h.runDuration(t, 100*time.Millisecond)
	for _, id := range h.ids {
		if s := h.nodes[id].raft.Status(); s.HighWatermark != 4 || (id == 1) != (s.Role == RoleLeader) {
			t.Fatalf("set-up: n%s %+v", id, s)
		}
	}
	h.out.Reset()
	return h
}

// probeRequest is a request node from would have in flight to node to, in
// its current state, for a fuzzed response to answer.
func probeRequest(h *interaction, kind int, from, to NodeID, preVote bool) Message {
	st := h.nodes[from].raft.Status()
	var p Payload
	switch kind {
	case 0:
		epoch := st.State.Epoch
		if !preVote {
			epoch++
		}
		p = VoteRequest{Epoch: epoch, CandidateID: from, LastEnd: st.LogEnd, PreVote: preVote}
	case 1:
		p = BeginQuorumEpochRequest{Epoch: st.State.Epoch, LeaderID: from}
	case 2:
		p = EndQuorumEpochRequest{Epoch: st.State.Epoch, LeaderID: from}
	case 3:
		p = FetchRequest{Epoch: st.State.Epoch, ReplicaID: from, FetchOffset: st.LogEnd.Offset, LastFetchedEpoch: st.LogEnd.Epoch, MaxBytes: 1 << 20}
	default:
		snap, _ := h.nodes[to].log.LatestSnapshot()
		p = FetchSnapshotRequest{Epoch: st.State.Epoch, ReplicaID: from, Snapshot: snap, MaxBytes: 1 << 20}
	}
	return Message{From: from, To: to, Payload: p}
}

// wireVersion is the version Strata sends kind at.
func wireVersion(kind int) int16 {
	v := DefaultWireVersions
	return [...]int16{v.Vote, v.BeginQuorumEpoch, v.EndQuorumEpoch, v.Fetch, v.FetchSnapshot}[kind]
}

// FuzzQuorumMessages feeds a quorum member what the network can: any
// request a peer of the controller listener sends (through DecodeRequest,
// as the driver does) and any response to a request it has in flight
// (through DecodeResponse). Nothing may panic (every assertion in the
// Raft is an invariant), Step must accept whatever the boundary accepted,
// a refusal must have an encodable error response, the nodes' committed
// logs must agree afterwards, and the quorum must elect a leader and
// commit again (issue 22). The corpus (testdata/fuzz/FuzzQuorumMessages)
// holds the attack shapes: the max-epoch Vote, self-named Vote and
// BeginQuorumEpoch, non-voter ids, negative offsets.
func FuzzQuorumMessages(f *testing.F) {
	for _, s := range quorumFuzzSeeds() {
		args := []any{s.target, keyIndex(s.req.Key()), uint8(s.req.GetVersion()), s.req.AppendTo(nil), uint8(0), []byte(nil)}
		writeSeed(f, "FuzzQuorumMessages", s.name, args...)
	}
	f.Fuzz(func(t *testing.T, target, kind, version uint8, body []byte, respKind uint8, respBody []byte) {
		h := fuzzCluster(t)
		node := NodeID(target%4 + 1)
		req := kmsg.RequestForKey(quorumKeys[int(kind)%len(quorumKeys)].Int16())
		req.SetVersion(int16(int(version) % (int(req.MaxVersion()) + 1)))
		if err := req.ReadFrom(body); err == nil {
			h.deliverForged(t, node, req)
			h.stabilize(t)
		}
		if len(respBody) > 0 {
			k := int(respKind) % len(quorumKeys)
			peer := NodeID((int(respKind)/len(quorumKeys))%3 + 1)
			if peer == node {
				peer = peer%3 + 1
			}
			sent := probeRequest(h, k, node, peer, respKind&0x80 != 0)
			resp := kmsg.ResponseForKey(quorumKeys[k].Int16())
			resp.SetVersion(wireVersion(k))
			if err := resp.ReadFrom(respBody); err == nil {
				stepResponse(t, h, node, resp, sent)
			}
		}
		checkAfterFaults(t, h)
	})
}

// stepResponse hands node a response to sent, as its driver does: what
// DecodeResponse accepts, Step must accept.
func stepResponse(t *testing.T, h *interaction, node NodeID, resp kmsg.Response, sent Message) {
	t.Helper()
	if m, err := DecodeResponse(resp, sent); err == nil {
		if err := h.nodes[node].raft.Step(m); err != nil {
			t.Fatalf("Step refused %s, which DecodeResponse accepted: %v", m, err)
		}
		h.process(node)
	}
}

// checkAfterFaults runs the cluster for 20 s: the nodes' committed logs
// must agree, and the quorum must elect a leader and commit again.
func checkAfterFaults(t *testing.T, h *interaction) {
	t.Helper()
	h.runDuration(t, 20*time.Second)
	checkCommittedAgree(t, h)
	checkRecovers(t, h)
}

// checkCommittedAgree fails when two nodes hold different batches below
// both their high watermarks.
func checkCommittedAgree(t *testing.T, h *interaction) {
	t.Helper()
	for _, a := range h.ids {
		for _, b := range h.ids {
			if a >= b {
				continue
			}
			ra, rb := h.nodes[a], h.nodes[b]
			sa, sb := ra.raft.Status(), rb.raft.Status()
			from := max(sa.LogStart, sb.LogStart)
			upTo := min(sa.HighWatermark, sb.HighWatermark)
			if from >= upTo {
				continue
			}
			ba, bb := ra.log.Batches(ra.log.FloorBatchBoundary(from), math.MaxInt), rb.log.Batches(rb.log.FloorBatchBoundary(from), math.MaxInt)
			for _, x := range ba {
				if x.EndOffset() > upTo {
					break
				}
				i := slices.IndexFunc(bb, func(y Batch) bool { return y.BaseOffset == x.BaseOffset })
				if i >= 0 && !sameBatch(x, bb[i]) {
					t.Fatalf("committed batches differ: n%s %s, n%s %s", a, x, b, bb[i])
				}
			}
		}
	}
}

// checkRecovers requires a leader, and a proposal committed on every
// voter, within a few election rounds.
func checkRecovers(t *testing.T, h *interaction) {
	t.Helper()
	var leader *testNode
	for i := 0; i < 10 && leader == nil; i++ {
		for _, id := range h.ids {
			if n := h.nodes[id]; n.raft.Status().Role == RoleLeader {
				leader = n
			}
		}
		if leader == nil {
			h.runDuration(t, 2*time.Second)
		}
	}
	if leader == nil {
		h.status()
		t.Fatalf("no leader 40 s after the input:\n%s", h.out.String())
	}
	last, _, err := leader.raft.Propose([][]byte{[]byte("after")})
	if err != nil {
		t.Fatalf("propose on n%s: %v", leader.id, err)
	}
	h.process(leader.id)
	h.runDuration(t, 5*time.Second)
	for _, id := range []NodeID{1, 2, 3} {
		if hw := h.nodes[id].raft.Status().HighWatermark; hw <= last {
			h.out.Reset()
			h.status()
			t.Fatalf("n%s's high watermark %d, want past %d:\n%s", id, hw, last, h.out.String())
		}
	}
}

type quorumSeed struct {
	name   string
	target uint8 // node target%4+1 receives it
	req    kmsg.Request
}

// writeSeed adds a seed to f, and with -update-fuzz-corpus writes it to
// testdata/fuzz/<target>/seed-<name>, the corpus go test runs.
func writeSeed(f *testing.F, target, name string, args ...any) {
	f.Add(args...)
	fuzzcorpus.Write(f, target, fuzzcorpus.Seed{Name: name, Args: args})
}

// quorumFuzzSeeds are issue 22's hostile quorum requests.
func quorumFuzzSeeds() []quorumSeed {
	enc := func(to NodeID, from NodeID, p Payload) kmsg.Request {
		req, err := EncodeRequest(Message{From: from, To: to, Payload: p}, testClusterID, DefaultWireVersions)
		if err != nil {
			panic(err)
		}
		return req
	}
	big := OffsetAndEpoch{Offset: 1 << 40, Epoch: math.MaxInt32 - 1}
	return []quorumSeed{
		{"max-epoch-vote", 1, enc(2, 3, VoteRequest{Epoch: math.MaxInt32, CandidateID: 3, LastEnd: big})},
		{"max-epoch-jump-vote", 1, enc(2, 3, VoteRequest{Epoch: MaxEpoch, CandidateID: 3, LastEnd: OffsetAndEpoch{Offset: 1 << 40, Epoch: MaxEpoch - 1}})},
		{"in-range-forged-vote", 1, enc(2, 3, VoteRequest{Epoch: 1000, CandidateID: 3, LastEnd: OffsetAndEpoch{Offset: 1 << 40, Epoch: 999}})},
		{"in-range-forged-prevote", 1, enc(2, 3, VoteRequest{Epoch: 1000, CandidateID: 3, LastEnd: OffsetAndEpoch{Offset: 1 << 40, Epoch: 999}, PreVote: true})},
		{"self-named-vote", 1, enc(2, 2, VoteRequest{Epoch: 5, CandidateID: 2, LastEnd: OffsetAndEpoch{Offset: 10, Epoch: 1}})},
		{"self-named-begin-quorum-epoch", 0, enc(1, 1, BeginQuorumEpochRequest{Epoch: 5, LeaderID: 1})},
		{"non-voter-vote", 1, enc(2, 9, VoteRequest{Epoch: 5, CandidateID: 9, LastEnd: OffsetAndEpoch{Offset: 10, Epoch: 1}})},
		{"non-voter-begin-quorum-epoch", 1, enc(2, 9, BeginQuorumEpochRequest{Epoch: 5, LeaderID: 9})},
		{"forged-begin-quorum-epoch", 1, enc(2, 3, BeginQuorumEpochRequest{Epoch: 5, LeaderID: 3})},
		{"end-quorum-epoch-odd-successors", 2, enc(3, 2, EndQuorumEpochRequest{Epoch: 9, LeaderID: 2, PreferredSuccessors: []NodeID{3, 3, -1, 99}})},
		{"negative-offset-vote", 1, enc(2, 3, VoteRequest{Epoch: 5, CandidateID: 3, LastEnd: OffsetAndEpoch{Offset: -1, Epoch: 1}})},
		{"negative-offset-fetch", 0, enc(1, 4, FetchRequest{Epoch: 1, ReplicaID: 4, FetchOffset: -5, LastFetchedEpoch: 0})},
		{"huge-offset-fetch-as-voter", 0, enc(1, 2, FetchRequest{Epoch: 1, ReplicaID: 2, FetchOffset: 1 << 40, LastFetchedEpoch: 1})},
		{"observer-fetch", 0, enc(1, 9, FetchRequest{Epoch: 1, ReplicaID: 9, FetchOffset: 0, LastFetchedEpoch: 0})},
		{"huge-position-fetch-snapshot", 0, enc(1, 4, FetchSnapshotRequest{Epoch: 1, ReplicaID: 4, Snapshot: SnapshotID{EndOffset: 3, Epoch: 1}, Position: 1 << 40})},
	}
}

// FuzzQuorumValues is FuzzQuorumMessages with structure: a request of
// kind, built around fuzzed ids, epochs and offsets (relative to the
// receiver's own when rel is set, so that most land near the values that
// matter), and then a response to a request the receiver has in flight,
// built the same way. The same checks follow.
func FuzzQuorumValues(f *testing.F) {
	f.Add(uint8(1), uint8(0), int32(math.MaxInt32), int32(3), int64(1<<40), int32(math.MaxInt32-1), false, uint8(0), int32(0), int32(0), int64(0), int64(0))
	f.Add(uint8(1), uint8(0), int32(1000), int32(3), int64(1<<40), int32(999), false, uint8(3), int32(1), int32(1), int64(4), int64(0))
	f.Add(uint8(1), uint8(3), int32(0), int32(1), int64(0), int32(0), true, uint8(3), int32(0), int32(1), int64(1), int64(-3))
	f.Add(uint8(2), uint8(1), int32(1), int32(3), int64(0), int32(0), true, uint8(4), int32(0), int32(1), int64(0), int64(1<<40))
	f.Fuzz(func(t *testing.T, target, kind uint8, epoch, id int32, offset int64, lastEpoch int32, rel bool,
		respKind uint8, respEpoch, respLeader int32, respOffset, respOffset2 int64) {
		h := fuzzCluster(t)
		node := NodeID(target%4 + 1)
		st := h.nodes[node].raft.Status()
		if rel {
			epoch += st.State.Epoch
			offset += st.LogEnd.Offset
			lastEpoch += st.LogEnd.Epoch
		}
		from := NodeID(id)
		var p Payload
		switch int(kind) % len(quorumKeys) {
		case 0:
			p = VoteRequest{Epoch: epoch, CandidateID: from, LastEnd: OffsetAndEpoch{Offset: offset, Epoch: lastEpoch}, PreVote: kind&0x80 != 0}
		case 1:
			p = BeginQuorumEpochRequest{Epoch: epoch, LeaderID: from}
		case 2:
			p = EndQuorumEpochRequest{Epoch: epoch, LeaderID: from, PreferredSuccessors: []NodeID{NodeID(lastEpoch), node}}
		case 3:
			p = FetchRequest{Epoch: epoch, ReplicaID: from, FetchOffset: offset, LastFetchedEpoch: lastEpoch, HighWatermark: offset, MaxBytes: lastEpoch, MaxWait: time.Duration(lastEpoch) * time.Millisecond}
		default:
			p = FetchSnapshotRequest{Epoch: epoch, ReplicaID: from, Snapshot: SnapshotID{EndOffset: offset, Epoch: lastEpoch}, Position: offset / 2, MaxBytes: lastEpoch}
		}
		req, err := EncodeRequest(Message{From: from, To: node, Payload: p}, testClusterID, DefaultWireVersions)
		if err == nil {
			h.deliverForged(t, node, req)
			h.stabilize(t)
		}
		st = h.nodes[node].raft.Status()
		k := int(respKind) % len(quorumKeys)
		peer := NodeID(respLeader%3+3)%3 + 1
		if peer == node {
			peer = peer%3 + 1
		}
		sent := probeRequest(h, k, node, peer, respKind&0x80 != 0)
		if rel {
			respEpoch += st.State.Epoch
			respOffset += st.LogEnd.Offset
		}
		var resp Payload
		switch k {
		case 0:
			resp = VoteResponse{Epoch: respEpoch, LeaderID: NodeID(respLeader), Granted: respOffset&1 == 0, PreVote: respKind&0x80 != 0}
		case 1:
			resp = BeginQuorumEpochResponse{Epoch: respEpoch, LeaderID: NodeID(respLeader)}
		case 2:
			resp = EndQuorumEpochResponse{Epoch: respEpoch, LeaderID: NodeID(respLeader)}
		case 3:
			fr := FetchResponse{Epoch: respEpoch, LeaderID: NodeID(respLeader), HighWatermark: respOffset, LogStartOffset: respOffset2}
			switch respOffset2 & 3 {
			case 1:
				fr.DivergingEpoch = &OffsetAndEpoch{Offset: respOffset, Epoch: int32(respOffset2 >> 2)}
			case 2:
				fr.Snapshot = &SnapshotID{EndOffset: respOffset, Epoch: int32(respOffset2 >> 2)}
			case 3:
				fr.Batches = []Batch{{BaseOffset: st.LogEnd.Offset, Epoch: int32(respOffset2 >> 2), Records: [][]byte{[]byte("x")}}}
			}
			resp = fr
		default:
			resp = FetchSnapshotResponse{Epoch: respEpoch, LeaderID: NodeID(respLeader), Snapshot: sent.Payload.(FetchSnapshotRequest).Snapshot,
				Size: respOffset, Position: respOffset2, Data: []byte("chunk")}
		}
		if kresp, err := EncodeResponse(Message{From: peer, To: node, Payload: resp}, wireVersion(k)); err == nil {
			fresh := kmsg.ResponseForKey(kresp.Key())
			fresh.SetVersion(wireVersion(k))
			if err := fresh.ReadFrom(kresp.AppendTo(nil)); err != nil {
				t.Fatalf("re-read %s: %v", resp, err)
			}
			stepResponse(t, h, node, fresh, sent)
		}
		checkAfterFaults(t, h)
	})
}
