package quorum

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testClusterID is the cluster id of the scripts' nodes: forged requests
// carry it unless they say otherwise.
const testClusterID = "test-cluster"

// forge is the scripts' hostile peer (issue 22): it builds a quorum
// request by hand, as an attacker or a broken client would, and sends it
// to one node through the same boundary a real frame crosses
// (DecodeRequest). A request refused there is printed with the error
// response the driver sends back; one accepted is stepped into the node,
// and the node's answers to it are printed as going back to the forger
// (they leave the network: the real driver answers on the forger's
// connection, not to the node it claimed to be).
//
//	forge to=2 Vote epoch=E candidate=C last=O@E [pre-vote] [voter=V]
//	forge to=2 BeginQuorumEpoch epoch=E leader=L [voter=V]
//	forge to=2 EndQuorumEpoch epoch=E leader=L [successors=1,3]
//	forge to=1 Fetch replica=R epoch=E offset=O last-epoch=E [max-wait=ms]
//	forge to=1 FetchSnapshot replica=R epoch=E snapshot=O@E position=P
//
// Every kind also takes cluster=ID (default the nodes' own; none for no
// id), topic=T and partition=P.
func (h *interaction) forge(t *testing.T, d *datadriven.TestData) {
	var to int
	d.ScanArgs(t, "to", &to)
	n := h.nodes[NodeID(to)]
	if n == nil || !n.up() {
		t.Fatalf("%s: node %d is not up", d.Pos, to)
	}
	h.deliverForged(t, NodeID(to), h.forgedRequest(t, d, NodeID(to)))
}

// deliverForged delivers a hand-built request to node to as its driver
// would: through DecodeRequest, answering a refusal with ErrorResponse, or
// stepping the message into the node and taking its answers back to the
// forger. Step must accept whatever DecodeRequest accepted.
func (h *interaction) deliverForged(t testing.TB, to NodeID, req kmsg.Request) {
	n := h.nodes[to]
	msg, err := DecodeRequest(req, to, testClusterID)
	var rerr *RequestError
	if errors.As(err, &rerr) {
		leader, epoch := n.raft.Leader()
		resp := ErrorResponse(req, rerr, leader, epoch)
		if resp == nil {
			t.Fatalf("no error response to %T", req)
		}
		h.printf("n%s refuses at the boundary: %s (%s); answers %s", to, rerr.Code, rerr.Reason, describeErrorResponse(resp))
		return
	}
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	h.printf("forged %s", msg)
	mark := len(h.pending)
	if err := n.raft.Step(msg); err != nil {
		t.Fatalf("n%s: Step refused %s, which DecodeRequest accepted: %v", to, msg, err)
	}
	h.process(to)
	kept := h.pending[:mark]
	for _, m := range h.pending[mark:] {
		if m.From == to && m.To == msg.From && !IsRequest(m.Payload) {
			h.printf("n%s answers the forger: %s", to, m.Payload)
			continue
		}
		kept = append(kept, m)
	}
	h.pending = kept
}

// forgedRequest builds the kmsg request a forge command describes.
func (h *interaction) forgedRequest(t *testing.T, d *datadriven.TestData, to NodeID) kmsg.Request {
	if len(d.CmdArgs) < 2 {
		t.Fatalf("%s: forge to=N <Kind> ...", d.Pos)
	}
	kind := d.CmdArgs[1].Key
	i32 := func(key string) int32 {
		var v string
		d.ScanArgs(t, key, &v)
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			t.Fatalf("%s: %s=%s: %v", d.Pos, key, v, err)
		}
		return int32(n)
	}
	i64 := func(key string, def int64) int64 {
		if !d.HasArg(key) {
			return def
		}
		var v string
		d.ScanArgs(t, key, &v)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s: %s=%s: %v", d.Pos, key, v, err)
		}
		return n
	}
	pos := func(key string) (int64, int32) {
		var v string
		d.ScanArgs(t, key, &v)
		off, ep, ok := strings.Cut(v, "@")
		o, err1 := strconv.ParseInt(off, 10, 64)
		e, err2 := strconv.ParseInt(ep, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("%s: %s=%s: want offset@epoch", d.Pos, key, v)
		}
		return o, int32(e)
	}
	cluster := testClusterID
	if d.HasArg("cluster") {
		d.ScanArgs(t, "cluster", &cluster)
		if cluster == "none" {
			cluster = ""
		}
	}
	var payload Payload
	var from NodeID
	switch kind {
	case "Vote":
		o, e := pos("last")
		p := VoteRequest{Epoch: i32("epoch"), CandidateID: NodeID(i32("candidate")), LastEnd: OffsetAndEpoch{Offset: o, Epoch: e}, PreVote: d.HasArg("pre-vote")}
		payload, from = p, p.CandidateID
	case "BeginQuorumEpoch":
		p := BeginQuorumEpochRequest{Epoch: i32("epoch"), LeaderID: NodeID(i32("leader"))}
		payload, from = p, p.LeaderID
	case "EndQuorumEpoch":
		p := EndQuorumEpochRequest{Epoch: i32("epoch"), LeaderID: NodeID(i32("leader"))}
		if arg, ok := d.Arg("successors"); ok {
			for _, v := range splitVals(arg.Vals) {
				id, _ := strconv.Atoi(v)
				p.PreferredSuccessors = append(p.PreferredSuccessors, NodeID(id))
			}
		}
		payload, from = p, p.LeaderID
	case "Fetch":
		p := FetchRequest{Epoch: i32("epoch"), ReplicaID: NodeID(i32("replica")), FetchOffset: i64("offset", 0),
			LastFetchedEpoch: i32("last-epoch"), HighWatermark: -1, MaxBytes: 1 << 20}
		payload, from = p, p.ReplicaID
	case "FetchSnapshot":
		o, e := pos("snapshot")
		p := FetchSnapshotRequest{Epoch: i32("epoch"), ReplicaID: NodeID(i32("replica")), Snapshot: SnapshotID{EndOffset: o, Epoch: e},
			Position: i64("position", 0), MaxBytes: 1 << 20}
		payload, from = p, p.ReplicaID
	default:
		t.Fatalf("%s: cannot forge %q", d.Pos, kind)
	}
	req, err := EncodeRequest(Message{From: from, To: to, Payload: payload}, cluster, DefaultWireVersions)
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	if d.HasArg("voter") {
		v := i32("voter")
		switch r := req.(type) {
		case *kmsg.VoteRequest:
			r.VoterID = v
		case *kmsg.BeginQuorumEpochRequest:
			r.VoterID = v
		}
	}
	if kind == "Fetch" && d.HasArg("max-wait") {
		req.(*kmsg.FetchRequest).MaxWaitMillis = int32(i64("max-wait", 0))
	}
	if d.HasArg("topic") || d.HasArg("partition") {
		var topic string
		d.MaybeScanArgs(t, "topic", &topic)
		part := int32(MetadataPartition)
		if d.HasArg("partition") {
			part = i32("partition")
		}
		retarget(req, topic, part)
	}
	return req
}

// retarget points a request at another topic (when not empty) and
// partition.
func retarget(req kmsg.Request, topic string, partition int32) {
	set := func(name *string, p *int32) {
		if topic != "" {
			*name = topic
		}
		*p = partition
	}
	switch r := req.(type) {
	case *kmsg.VoteRequest:
		set(&r.Topics[0].Topic, &r.Topics[0].Partitions[0].Partition)
	case *kmsg.BeginQuorumEpochRequest:
		set(&r.Topics[0].Topic, &r.Topics[0].Partitions[0].Partition)
	case *kmsg.EndQuorumEpochRequest:
		set(&r.Topics[0].Topic, &r.Topics[0].Partitions[0].Partition)
	case *kmsg.FetchRequest:
		if topic != "" {
			r.Topics[0].TopicID = [16]byte{0: 9}
		}
		r.Topics[0].Partitions[0].Partition = partition
	case *kmsg.FetchSnapshotRequest:
		set(&r.Topics[0].Topic, &r.Topics[0].Partitions[0].Partition)
	}
}

// describeErrorResponse prints the error response the driver sends: its
// top-level error, or its partition's error with the leader and epoch.
func describeErrorResponse(resp kmsg.Response) string {
	var top, part int16
	var leader, epoch int32
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		top = r.ErrorCode
		if len(r.Topics) > 0 {
			p := r.Topics[0].Partitions[0]
			part, leader, epoch = p.ErrorCode, p.LeaderID, p.LeaderEpoch
		}
	case *kmsg.BeginQuorumEpochResponse:
		top = r.ErrorCode
		if len(r.Topics) > 0 {
			p := r.Topics[0].Partitions[0]
			part, leader, epoch = p.ErrorCode, p.LeaderID, p.LeaderEpoch
		}
	case *kmsg.EndQuorumEpochResponse:
		top = r.ErrorCode
		if len(r.Topics) > 0 {
			p := r.Topics[0].Partitions[0]
			part, leader, epoch = p.ErrorCode, p.LeaderID, p.LeaderEpoch
		}
	case *kmsg.FetchResponse:
		top = r.ErrorCode
		if len(r.Topics) > 0 {
			p := r.Topics[0].Partitions[0]
			part, leader, epoch = p.ErrorCode, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch
		}
	case *kmsg.FetchSnapshotResponse:
		top = r.ErrorCode
		if len(r.Topics) > 0 {
			p := r.Topics[0].Partitions[0]
			part, leader, epoch = p.ErrorCode, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch
		}
	default:
		return fmt.Sprintf("%T", resp)
	}
	if top != 0 {
		return fmt.Sprintf("%s %s", kmsg.NameForKey(resp.Key()), ErrorCode(top))
	}
	return fmt.Sprintf("%s partition %s epoch=%d leader=%s", kmsg.NameForKey(resp.Key()), ErrorCode(part), epoch, NodeID(leader))
}
