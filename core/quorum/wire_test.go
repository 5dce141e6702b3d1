package quorum

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
)

// roundTripRequest encodes m as a kmsg request, serializes it, parses the
// bytes into a fresh request of the same key and version, and decodes it.
func roundTripRequest(t *testing.T, m Message, v WireVersions) Message {
	t.Helper()
	req, err := EncodeRequest(m, "cluster-x", v)
	if err != nil {
		t.Fatalf("encode %s: %v", m, err)
	}
	wire := req.AppendTo(nil)
	fresh := kmsg.RequestForKey(req.Key())
	fresh.SetVersion(req.GetVersion())
	if err := fresh.ReadFrom(wire); err != nil {
		t.Fatalf("parse %s (v%d): %v", m, req.GetVersion(), err)
	}
	got, err := DecodeRequest(fresh, m.To, "cluster-x")
	if err != nil {
		t.Fatalf("decode %s: %v", m, err)
	}
	return got
}

// roundTripResponse does the same for a response to req.
func roundTripResponse(t *testing.T, m, req Message, version int16) Message {
	t.Helper()
	resp, err := EncodeResponse(m, version)
	if err != nil {
		t.Fatalf("encode %s: %v", m, err)
	}
	wire := resp.AppendTo(nil)
	fresh := kmsg.ResponseForKey(resp.Key())
	fresh.SetVersion(version)
	if err := fresh.ReadFrom(wire); err != nil {
		t.Fatalf("parse %s (v%d): %v", m, version, err)
	}
	got, err := DecodeResponse(fresh, req)
	if err != nil {
		t.Fatalf("decode %s: %v", m, err)
	}
	return got
}

func TestWireRequestsRoundTrip(t *testing.T) {
	requests := []Message{
		{From: 2, To: 1, Payload: VoteRequest{Epoch: 7, CandidateID: 2, LastEnd: OffsetAndEpoch{Offset: 120, Epoch: 6}}},
		{From: 3, To: 1, Payload: VoteRequest{Epoch: 6, CandidateID: 3, LastEnd: OffsetAndEpoch{Offset: 0, Epoch: 0}, PreVote: true}},
		{From: 1, To: 2, Payload: BeginQuorumEpochRequest{Epoch: 9, LeaderID: 1}},
		{From: 1, To: 3, Payload: EndQuorumEpochRequest{Epoch: 9, LeaderID: 1, PreferredSuccessors: []NodeID{3, 2}}},
		{From: 1, To: 3, Payload: EndQuorumEpochRequest{Epoch: 9, LeaderID: 1}},
		{From: 4, To: 1, Payload: FetchRequest{Epoch: 3, ReplicaID: 4, FetchOffset: 77, LastFetchedEpoch: 2, HighWatermark: 70, MaxBytes: 1 << 20, MaxWait: 500 * time.Millisecond}},
		{From: 5, To: 1, Payload: FetchSnapshotRequest{Epoch: 3, ReplicaID: 5, Snapshot: SnapshotID{EndOffset: 1000, Epoch: 2}, Position: 4096, MaxBytes: 1 << 20}},
	}
	for _, m := range requests {
		t.Run(m.String(), func(t *testing.T) {
			got := roundTripRequest(t, m, DefaultWireVersions)
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, m)
			}
		})
	}
}

func TestWireOlderVersions(t *testing.T) {
	// EndQuorumEpoch v0 carries successors as PreferredSuccessors, v1 as
	// PreferredCandidates; Fetch before v15 carries ReplicaID and before
	// v13 the topic name instead of its id.
	old := WireVersions{Vote: 2, BeginQuorumEpoch: 0, EndQuorumEpoch: 0, Fetch: 12, FetchSnapshot: 0}
	for _, m := range []Message{
		{From: 1, To: 3, Payload: EndQuorumEpochRequest{Epoch: 9, LeaderID: 1, PreferredSuccessors: []NodeID{3, 2}}},
		{From: 1, To: 2, Payload: BeginQuorumEpochRequest{Epoch: 9, LeaderID: 1}},
		{From: 4, To: 1, Payload: FetchRequest{Epoch: 3, ReplicaID: 4, FetchOffset: 77, LastFetchedEpoch: 2, HighWatermark: 70, MaxBytes: 100, MaxWait: time.Second}},
		{From: 5, To: 1, Payload: FetchSnapshotRequest{Epoch: 3, ReplicaID: 5, Snapshot: SnapshotID{EndOffset: 10, Epoch: 2}, Position: 0, MaxBytes: 9}},
	} {
		if got := roundTripRequest(t, m, old); !reflect.DeepEqual(got, m) {
			t.Errorf("round trip:\n got %#v\nwant %#v", got, m)
		}
	}
	if _, err := EncodeRequest(Message{From: 1, To: 2, Payload: VoteRequest{Epoch: 1, CandidateID: 1, PreVote: true}}, "", WireVersions{Vote: 1}); !errors.Is(err, ErrWire) {
		t.Errorf("pre-vote at Vote v1: got %v, want ErrWire", err)
	}
	if _, err := EncodeRequest(Message{From: 1, To: 2, Payload: FetchRequest{ReplicaID: 1}}, "", WireVersions{Fetch: 11}); !errors.Is(err, ErrWire) {
		t.Errorf("fetch v11: got %v, want ErrWire", err)
	}
}

func TestWireResponsesRoundTrip(t *testing.T) {
	vote := Message{From: 2, To: 1, Payload: VoteRequest{Epoch: 7, CandidateID: 2, PreVote: true}}
	begin := Message{From: 1, To: 2, Payload: BeginQuorumEpochRequest{Epoch: 9, LeaderID: 1}}
	end := Message{From: 1, To: 2, Payload: EndQuorumEpochRequest{Epoch: 9, LeaderID: 1}}
	fetch := Message{From: 2, To: 1, Payload: FetchRequest{Epoch: 4, ReplicaID: 2, FetchOffset: 10, LastFetchedEpoch: 3}}
	snap := Message{From: 2, To: 1, Payload: FetchSnapshotRequest{Epoch: 4, ReplicaID: 2, Snapshot: SnapshotID{EndOffset: 50, Epoch: 3}, Position: 8}}
	lc := encodeLeaderChange(1, []NodeID{1, 2, 3}, []NodeID{1, 3})
	cases := []struct {
		req, resp Message
		version   int16
	}{
		{vote, Message{From: 1, To: 2, Payload: VoteResponse{Epoch: 7, LeaderID: NoNode, Granted: true, PreVote: true}}, 2},
		{vote, Message{From: 1, To: 2, Payload: VoteResponse{Epoch: 8, LeaderID: 3, PreVote: true}}, 2},
		{begin, Message{From: 2, To: 1, Payload: BeginQuorumEpochResponse{Epoch: 9, LeaderID: 1}}, 1},
		{begin, Message{From: 2, To: 1, Payload: BeginQuorumEpochResponse{Error: ErrFencedLeaderEpoch, Epoch: 10, LeaderID: 3}}, 0},
		{end, Message{From: 2, To: 1, Payload: EndQuorumEpochResponse{Epoch: 9, LeaderID: NoNode}}, 1},
		{fetch, Message{From: 1, To: 2, Payload: FetchResponse{
			Epoch: 4, LeaderID: 1, HighWatermark: 9, LogStartOffset: 0, FetchEpoch: 4, FetchOffset: 10, LastFetchedEpoch: 3,
			Batches: []Batch{
				{BaseOffset: 10, Epoch: 3, Kind: BatchData, Records: [][]byte{[]byte("x")}},
				{BaseOffset: 11, Epoch: 4, Kind: BatchLeaderChange, Records: [][]byte{lc}},
				{BaseOffset: 12, Epoch: 4, Kind: BatchData, Records: [][]byte{[]byte("y"), {}}},
			},
		}}, 17},
		{fetch, Message{From: 1, To: 2, Payload: FetchResponse{
			Epoch: 4, LeaderID: 1, HighWatermark: 9, LogStartOffset: 0, FetchEpoch: 4, FetchOffset: 10, LastFetchedEpoch: 3,
			DivergingEpoch: &OffsetAndEpoch{Offset: 0, Epoch: 0},
		}}, 17},
		{fetch, Message{From: 1, To: 2, Payload: FetchResponse{
			Epoch: 4, LeaderID: 1, HighWatermark: 90, LogStartOffset: 50, FetchEpoch: 4, FetchOffset: 10, LastFetchedEpoch: 3,
			Snapshot: &SnapshotID{EndOffset: 50, Epoch: 3},
		}}, 13},
		{fetch, Message{From: 1, To: 2, Payload: FetchResponse{
			Error: ErrNotLeaderOrFollower, Epoch: 5, LeaderID: 3, HighWatermark: -1, LogStartOffset: -1, FetchEpoch: 4, FetchOffset: 10, LastFetchedEpoch: 3,
		}}, 17},
		{snap, Message{From: 1, To: 2, Payload: FetchSnapshotResponse{Epoch: 4, LeaderID: 1, Snapshot: SnapshotID{EndOffset: 50, Epoch: 3}, Size: 100, Position: 8, Data: []byte("chunk")}}, 1},
		{snap, Message{From: 1, To: 2, Payload: FetchSnapshotResponse{Error: ErrSnapshotNotFound, Epoch: 4, LeaderID: 1, Snapshot: SnapshotID{EndOffset: 50, Epoch: 3}, Data: []byte{}}}, 0},
	}
	for _, c := range cases {
		t.Run(c.resp.String(), func(t *testing.T) {
			got := roundTripResponse(t, c.resp, c.req, c.version)
			if !reflect.DeepEqual(got, c.resp) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, c.resp)
			}
		})
	}
}

func TestWireBatchesRoundTrip(t *testing.T) {
	var batches []Batch
	next := int64(100)
	for i := range 30 {
		b := Batch{BaseOffset: next, Epoch: int32(3 + i/10), Kind: BatchData}
		if i%10 == 0 {
			b.Kind, b.Records = BatchLeaderChange, [][]byte{encodeLeaderChange(NodeID(i%3), []NodeID{0, 1, 2}, []NodeID{0, 1})}
		} else {
			for j := range 1 + i%4 {
				b.Records = append(b.Records, []byte{byte(i), byte(j)})
			}
		}
		batches = append(batches, b)
		next = b.EndOffset()
	}
	wire, err := EncodeBatches(batches)
	if err != nil {
		t.Fatal(err)
	}
	// One Batch is one RecordBatch: a proposal is a unit on the wire too.
	split := record.NewSplitter(wire, record.MaxBatchSize, record.CheckStored)
	for i := 0; split.Next(); i++ {
		if rb, b := split.Batch(), batches[i]; rb.BaseOffset() != b.BaseOffset || rb.NextOffset() != b.EndOffset() || rb.PartitionLeaderEpoch() != b.Epoch {
			t.Fatalf("RecordBatch %d covers [%d, %d)@%d, want %s", i, rb.BaseOffset(), rb.NextOffset(), rb.PartitionLeaderEpoch(), b)
		}
	}
	got, err := DecodeBatches(wire)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, batches) {
		t.Fatalf("round trip:\n got %v\nwant %v", got, batches)
	}
	// A flipped byte fails the CRC: an error, never a panic or bad batches.
	wire[len(wire)-1] ^= 0xff
	if _, err := DecodeBatches(wire); !errors.Is(err, ErrWire) {
		t.Fatalf("corrupt batch: got %v, want ErrWire", err)
	}
	if got, err := DecodeBatches(nil); err != nil || got != nil {
		t.Fatalf("no batches: got %v, %v", got, err)
	}
	if _, err := EncodeBatches([]Batch{{BaseOffset: 1, Epoch: 1}}); !errors.Is(err, ErrWire) {
		t.Fatalf("empty batch: got %v, want ErrWire", err)
	}
}

func TestLeaderChangeRoundTrip(t *testing.T) {
	leader, voters, granting, err := DecodeLeaderChange(encodeLeaderChange(2, []NodeID{1, 2, 3}, []NodeID{2, 3}))
	if err != nil || leader != 2 || !reflect.DeepEqual(voters, []NodeID{1, 2, 3}) || !reflect.DeepEqual(granting, []NodeID{2, 3}) {
		t.Fatalf("got %v %v %v %v", leader, voters, granting, err)
	}
}

func TestWireRejectsOtherPartitions(t *testing.T) {
	req, err := EncodeRequest(Message{From: 2, To: 1, Payload: VoteRequest{Epoch: 1, CandidateID: 2}}, "", DefaultWireVersions)
	if err != nil {
		t.Fatal(err)
	}
	vr := req.(*kmsg.VoteRequest)
	vr.Topics[0].Topic = "other"
	if _, err := DecodeRequest(vr, 1, ""); !errors.Is(err, ErrWire) {
		t.Errorf("vote for another topic: got %v", err)
	}
	vr.Topics[0].Topic = MetadataTopic
	if _, err := DecodeRequest(vr, 3, ""); !errors.Is(err, ErrWire) {
		t.Errorf("vote addressed to voter 1 received by 3: got %v", err)
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 17
	fetch.ReplicaState.ID = 2
	if _, err := DecodeRequest(fetch, 1, ""); !errors.Is(err, ErrWire) {
		t.Errorf("fetch of no partition: got %v", err)
	}
	if _, err := DecodeRequest(kmsg.NewPtrMetadataRequest(), 1, ""); !errors.Is(err, ErrWire) {
		t.Errorf("metadata request: got %v", err)
	}
}

func TestDescribeQuorumRoundTrip(t *testing.T) {
	info := QuorumInfo{
		LeaderID: 1, Epoch: 5, HighWatermark: 42,
		Voters: []ReplicaInfo{
			{ID: 1, LogEndOffset: 44, LastFetch: 10 * time.Second, LastCaughtUp: 10 * time.Second},
			{ID: 2, LogEndOffset: 42, LastFetch: 9 * time.Second, LastCaughtUp: 8 * time.Second},
			{ID: 3, LogEndOffset: -1, LastFetch: -1, LastCaughtUp: -1},
		},
		Observers: []ReplicaInfo{{ID: 7, LogEndOffset: 40, LastFetch: 9500 * time.Millisecond, LastCaughtUp: -1}},
	}
	const base = 1_700_000_000_000 // wall-clock ms at monotonic zero
	toWall := func(d time.Duration) int64 { return base + d.Milliseconds() }
	fromWall := func(ms int64) time.Duration { return time.Duration(ms-base) * time.Millisecond }
	for _, version := range []int16{0, 1, 2} {
		resp := DescribeQuorumResponse(info, nil, version, toWall)
		fresh := kmsg.NewPtrDescribeQuorumResponse()
		fresh.Version = version
		if err := fresh.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		got, err := QuorumInfoFromKmsg(fresh, fromWall)
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		want := info
		if version == 0 { // v0 carries no timestamps
			want.Voters = append([]ReplicaInfo(nil), info.Voters...)
			for i := range want.Voters {
				want.Voters[i].LastFetch, want.Voters[i].LastCaughtUp = -1, -1
			}
			want.Observers = []ReplicaInfo{{ID: 7, LogEndOffset: 40, LastFetch: -1, LastCaughtUp: -1}}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("v%d round trip:\n got %+v\nwant %+v", version, got, want)
		}
	}
	resp := DescribeQuorumResponse(QuorumInfo{}, &NotLeaderError{LeaderID: 3, Epoch: 6}, 2, toWall)
	var nl *NotLeaderError
	if _, err := QuorumInfoFromKmsg(resp, fromWall); !errors.As(err, &nl) || nl.LeaderID != 3 || nl.Epoch != 6 {
		t.Errorf("not leader: got %v", err)
	}
}

// TestErrorCodesAreKafkas pins the quorum's error codes to Kafka's.
func TestErrorCodesAreKafkas(t *testing.T) {
	for code, want := range map[ErrorCode]*kerr.Error{ //determinism:unordered test table
		ErrNotLeaderOrFollower:     kerr.NotLeaderForPartition,
		ErrInvalidRequest:          kerr.InvalidRequest,
		ErrFencedLeaderEpoch:       kerr.FencedLeaderEpoch,
		ErrUnknownLeaderEpoch:      kerr.UnknownLeaderEpoch,
		ErrInconsistentVoterSet:    kerr.InconsistentVoterSet,
		ErrSnapshotNotFound:        kerr.SnapshotNotFound,
		ErrPositionOutOfRange:      kerr.PositionOutOfRange,
		ErrUnknownTopicOrPartition: kerr.UnknownTopicOrPartition,
		ErrUnsupportedVersion:      kerr.UnsupportedVersion,
		ErrInconsistentClusterID:   kerr.InconsistentClusterID,
		ErrInvalidVoterKey:         kerr.InvalidVoterKey,
	} {
		if int16(code) != want.Code {
			t.Errorf("%s = %d, Kafka's %s is %d", code, int16(code), want.Message, want.Code)
		}
	}
}
