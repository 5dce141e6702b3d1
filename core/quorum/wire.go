package quorum

// This file translates the quorum's messages to and from the kmsg requests
// and responses of Kafka's KRaft RPCs, which the driver sends as frames.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The metadata log on the wire: KRaft replicates one partition of one topic.
const (
	MetadataTopic           = "__cluster_metadata"
	MetadataPartition int32 = 0
)

// MetadataTopicID is Kafka's fixed topic id of __cluster_metadata
// (Uuid.METADATA_TOPIC_ID, "AAAAAAAAAAAAAAAAAAAAAQ"), used by Fetch v13+.
var MetadataTopicID = [16]byte{15: 1}

// WireVersions are the request versions the quorum RPCs are encoded at. A
// response is encoded at its request's version.
type WireVersions struct {
	Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, DescribeQuorum int16
}

// DefaultWireVersions are the versions Strata speaks between its own nodes:
// Vote v2 carries the pre-vote flag (KIP-996); Fetch v17 carries the
// replica state, topic ids and the KIP-1166 high watermark tag.
var DefaultWireVersions = WireVersions{Vote: 2, BeginQuorumEpoch: 1, EndQuorumEpoch: 1, Fetch: 17, FetchSnapshot: 1, DescribeQuorum: 2}

// MinFetchVersion is the oldest Fetch carrying the diverging epoch, current
// leader and snapshot id tags that KRaft needs.
const MinFetchVersion = 12

// ErrWire wraps every translation failure: a payload that cannot be
// expressed at the requested version, or a kmsg message that is not a
// well-formed quorum RPC for the metadata partition.
var ErrWire = errors.New("quorum: wire translation")

func wireErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrWire, fmt.Sprintf(format, args...))
}

func durationMillis(d time.Duration) int32 {
	return int32(min(d.Milliseconds(), 1<<31-1))
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// EncodeRequest translates the request in m into the kmsg request the
// driver sends to m.To. clusterID may be empty. BeginQuorumEpoch and
// EndQuorumEpoch v1 also carry the leader's endpoints, which the driver
// adds (the quorum does not know listeners).
func EncodeRequest(m Message, clusterID string, v WireVersions) (kmsg.Request, error) {
	switch p := m.Payload.(type) {
	case VoteRequest:
		if p.PreVote && v.Vote < 2 {
			return nil, wireErr("pre-vote needs Vote v2, have v%d", v.Vote)
		}
		req := kmsg.NewPtrVoteRequest()
		req.Version, req.ClusterID, req.VoterID = v.Vote, optString(clusterID), int32(m.To)
		part := kmsg.NewVoteRequestTopicPartition()
		part.Partition = MetadataPartition
		part.CandidateEpoch, part.CandidateID = p.Epoch, int32(p.CandidateID)
		part.LastOffsetEpoch, part.LastOffset = p.LastEnd.Epoch, p.LastEnd.Offset
		part.PreVote = p.PreVote
		topic := kmsg.NewVoteRequestTopic()
		topic.Topic, topic.Partitions = MetadataTopic, []kmsg.VoteRequestTopicPartition{part}
		req.Topics = []kmsg.VoteRequestTopic{topic}
		return req, nil
	case BeginQuorumEpochRequest:
		req := kmsg.NewPtrBeginQuorumEpochRequest()
		req.Version, req.ClusterID, req.VoterID = v.BeginQuorumEpoch, optString(clusterID), int32(m.To)
		part := kmsg.NewBeginQuorumEpochRequestTopicPartition()
		part.Partition, part.LeaderID, part.LeaderEpoch = MetadataPartition, int32(p.LeaderID), p.Epoch
		topic := kmsg.NewBeginQuorumEpochRequestTopic()
		topic.Topic, topic.Partitions = MetadataTopic, []kmsg.BeginQuorumEpochRequestTopicPartition{part}
		req.Topics = []kmsg.BeginQuorumEpochRequestTopic{topic}
		return req, nil
	case EndQuorumEpochRequest:
		req := kmsg.NewPtrEndQuorumEpochRequest()
		req.Version, req.ClusterID = v.EndQuorumEpoch, optString(clusterID)
		part := kmsg.NewEndQuorumEpochRequestTopicPartition()
		part.Partition, part.LeaderID, part.LeaderEpoch = MetadataPartition, int32(p.LeaderID), p.Epoch
		for _, s := range p.PreferredSuccessors {
			if v.EndQuorumEpoch >= 1 {
				c := kmsg.NewEndQuorumEpochRequestTopicPartitionPreferredCandidate()
				c.CandidateID = int32(s)
				part.PreferredCandidates = append(part.PreferredCandidates, c)
			} else {
				part.PreferredSuccessors = append(part.PreferredSuccessors, int32(s))
			}
		}
		topic := kmsg.NewEndQuorumEpochRequestTopic()
		topic.Topic, topic.Partitions = MetadataTopic, []kmsg.EndQuorumEpochRequestTopicPartition{part}
		req.Topics = []kmsg.EndQuorumEpochRequestTopic{topic}
		return req, nil
	case FetchRequest:
		if v.Fetch < MinFetchVersion {
			return nil, wireErr("KRaft fetch needs Fetch v%d+, have v%d", MinFetchVersion, v.Fetch)
		}
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ClusterID = v.Fetch, optString(clusterID)
		if v.Fetch >= 15 {
			req.ReplicaState.ID = int32(p.ReplicaID)
		} else {
			req.ReplicaID = int32(p.ReplicaID)
		}
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = durationMillis(p.MaxWait), 0, p.MaxBytes
		part := kmsg.NewFetchRequestTopicPartition()
		part.Partition, part.CurrentLeaderEpoch = MetadataPartition, p.Epoch
		part.FetchOffset, part.LastFetchedEpoch = p.FetchOffset, p.LastFetchedEpoch
		part.PartitionMaxBytes, part.HighWatermark = p.MaxBytes, p.HighWatermark
		topic := kmsg.NewFetchRequestTopic()
		topic.Topic, topic.TopicID = MetadataTopic, MetadataTopicID
		topic.Partitions = []kmsg.FetchRequestTopicPartition{part}
		req.Topics = []kmsg.FetchRequestTopic{topic}
		return req, nil
	case FetchSnapshotRequest:
		req := kmsg.NewPtrFetchSnapshotRequest()
		req.Version, req.ClusterID = v.FetchSnapshot, optString(clusterID)
		req.ReplicaID, req.MaxBytes = int32(p.ReplicaID), p.MaxBytes
		part := kmsg.NewFetchSnapshotRequestTopicPartition()
		part.Partition, part.CurrentLeaderEpoch = MetadataPartition, p.Epoch
		part.SnapshotID.EndOffset, part.SnapshotID.Epoch = p.Snapshot.EndOffset, p.Snapshot.Epoch
		part.Position = p.Position
		topic := kmsg.NewFetchSnapshotRequestTopic()
		topic.Topic, topic.Partitions = MetadataTopic, []kmsg.FetchSnapshotRequestTopicPartition{part}
		req.Topics = []kmsg.FetchSnapshotRequestTopic{topic}
		return req, nil
	}
	return nil, wireErr("%T is not a request", m.Payload)
}

// onePartition checks that a quorum RPC names exactly the metadata
// partition, and returns the index of the topic.
func onePartition(topics int, topic func() (string, int), partition func() int32) error {
	if topics != 1 {
		return wireErr("%d topics, want 1", topics)
	}
	name, parts := topic()
	if name != MetadataTopic {
		return wireErr("topic %q, want %q", name, MetadataTopic)
	}
	if parts != 1 {
		return wireErr("%d partitions, want 1", parts)
	}
	if p := partition(); p != MetadataPartition {
		return wireErr("partition %d, want %d", p, MetadataPartition)
	}
	return nil
}

// DecodeRequest translates a received kmsg request into the Message to
// Step on node local, checking it first as KafkaRaftClient does (and
// more, see validate.go): a cluster id other than clusterID (when both
// are set) is INCONSISTENT_CLUSTER_ID; a request for anything but the
// metadata partition INVALID_REQUEST (a FetchSnapshot of another
// partition UNKNOWN_TOPIC_OR_PARTITION); a Vote or BeginQuorumEpoch
// addressed to another voter INVALID_VOTER_KEY; a sender id that is not a
// node id or is local's own, an epoch above MaxEpoch, a negative offset or
// epochs that contradict each other INVALID_REQUEST. Such a request
// returns a *RequestError, which the driver answers with ErrorResponse.
// The sender is taken from the request (candidate, leader or replica id).
// Any other error means req is not a quorum request at all.
func DecodeRequest(req kmsg.Request, local NodeID, clusterID string) (Message, error) {
	m, rerr := decodeRequest(req, local, clusterID)
	if rerr != nil {
		return Message{}, rerr
	}
	if m.Payload == nil {
		return Message{}, wireErr("%T is not a quorum request", req)
	}
	if rerr := checkRequest(m); rerr != nil {
		return Message{}, rerr
	}
	return m, nil
}

// decodeRequest is DecodeRequest before the value checks; a zero Message
// without error means req is not a quorum request.
func decodeRequest(req kmsg.Request, local NodeID, clusterID string) (Message, *RequestError) {
	cluster := func(id *string) *RequestError {
		if id != nil && clusterID != "" && *id != clusterID {
			return &RequestError{Code: ErrInconsistentClusterID, TopLevel: true, Reason: fmt.Sprintf("cluster id %q, this cluster is %q", *id, clusterID)}
		}
		return nil
	}
	partition := func(err error) *RequestError {
		if err != nil {
			// Until KRaft replicates more than one partition, Kafka answers
			// a topic-partition mismatch as an invalid request.
			return &RequestError{Code: ErrInvalidRequest, TopLevel: true, Reason: strings.TrimPrefix(err.Error(), ErrWire.Error()+": ")}
		}
		return nil
	}
	voterKey := func(version int16, voter int32) *RequestError {
		if version >= 1 && voter >= 0 && NodeID(voter) != local {
			return &RequestError{Code: ErrInvalidVoterKey, Reason: fmt.Sprintf("addressed to voter %d, received by %s", voter, local)}
		}
		return nil
	}
	switch q := req.(type) {
	case *kmsg.VoteRequest:
		if err := cluster(q.ClusterID); err != nil {
			return Message{}, err
		}
		if err := partition(onePartition(len(q.Topics),
			func() (string, int) { return q.Topics[0].Topic, len(q.Topics[0].Partitions) },
			func() int32 { return q.Topics[0].Partitions[0].Partition })); err != nil {
			return Message{}, err
		}
		if err := voterKey(q.Version, q.VoterID); err != nil {
			return Message{}, err
		}
		p := q.Topics[0].Partitions[0]
		return Message{From: NodeID(p.CandidateID), To: local, Payload: VoteRequest{
			Epoch: p.CandidateEpoch, CandidateID: NodeID(p.CandidateID),
			LastEnd: OffsetAndEpoch{Offset: p.LastOffset, Epoch: p.LastOffsetEpoch},
			PreVote: p.PreVote,
		}}, nil
	case *kmsg.BeginQuorumEpochRequest:
		if err := cluster(q.ClusterID); err != nil {
			return Message{}, err
		}
		if err := partition(onePartition(len(q.Topics),
			func() (string, int) { return q.Topics[0].Topic, len(q.Topics[0].Partitions) },
			func() int32 { return q.Topics[0].Partitions[0].Partition })); err != nil {
			return Message{}, err
		}
		if err := voterKey(q.Version, q.VoterID); err != nil {
			return Message{}, err
		}
		p := q.Topics[0].Partitions[0]
		return Message{From: NodeID(p.LeaderID), To: local, Payload: BeginQuorumEpochRequest{Epoch: p.LeaderEpoch, LeaderID: NodeID(p.LeaderID)}}, nil
	case *kmsg.EndQuorumEpochRequest:
		if err := cluster(q.ClusterID); err != nil {
			return Message{}, err
		}
		if err := partition(onePartition(len(q.Topics),
			func() (string, int) { return q.Topics[0].Topic, len(q.Topics[0].Partitions) },
			func() int32 { return q.Topics[0].Partitions[0].Partition })); err != nil {
			return Message{}, err
		}
		p := q.Topics[0].Partitions[0]
		if n := len(p.PreferredSuccessors) + len(p.PreferredCandidates); n > maxPreferredSuccessors {
			return Message{}, invalidRequest("%d preferred successors", n)
		}
		var successors []NodeID
		for _, s := range p.PreferredSuccessors {
			successors = append(successors, NodeID(s))
		}
		for _, c := range p.PreferredCandidates {
			successors = append(successors, NodeID(c.CandidateID))
		}
		return Message{From: NodeID(p.LeaderID), To: local, Payload: EndQuorumEpochRequest{
			Epoch: p.LeaderEpoch, LeaderID: NodeID(p.LeaderID), PreferredSuccessors: successors,
		}}, nil
	case *kmsg.FetchRequest:
		if q.Version < MinFetchVersion {
			return Message{}, &RequestError{Code: ErrUnsupportedVersion, TopLevel: true,
				Reason: fmt.Sprintf("KRaft fetch needs Fetch v%d+, got v%d", MinFetchVersion, q.Version)}
		}
		if err := cluster(q.ClusterID); err != nil {
			return Message{}, err
		}
		if len(q.Topics) != 1 || len(q.Topics[0].Partitions) != 1 {
			return Message{}, partition(wireErr("fetch of %d topics, want 1 partition of %s", len(q.Topics), MetadataTopic))
		}
		t := q.Topics[0]
		if (q.Version >= 13 && t.TopicID != MetadataTopicID) || (q.Version < 13 && t.Topic != MetadataTopic) {
			return Message{}, partition(wireErr("fetch of another topic (%q, %x)", t.Topic, t.TopicID))
		}
		p := t.Partitions[0]
		if p.Partition != MetadataPartition {
			return Message{}, partition(wireErr("fetch of partition %d", p.Partition))
		}
		replica := q.ReplicaID
		if q.Version >= 15 {
			replica = q.ReplicaState.ID
		}
		if replica < 0 {
			return Message{}, invalidRequest("fetch without a replica id")
		}
		return Message{From: NodeID(replica), To: local, Payload: FetchRequest{
			Epoch: p.CurrentLeaderEpoch, ReplicaID: NodeID(replica),
			FetchOffset: p.FetchOffset, LastFetchedEpoch: p.LastFetchedEpoch,
			HighWatermark: p.HighWatermark, MaxBytes: min(q.MaxBytes, p.PartitionMaxBytes),
			MaxWait: time.Duration(q.MaxWaitMillis) * time.Millisecond,
		}}, nil
	case *kmsg.FetchSnapshotRequest:
		if err := cluster(q.ClusterID); err != nil {
			return Message{}, err
		}
		if len(q.Topics) != 1 || len(q.Topics[0].Partitions) != 1 {
			return Message{}, partition(wireErr("fetch snapshot of %d topics, want 1 partition of %s", len(q.Topics), MetadataTopic))
		}
		p := q.Topics[0].Partitions[0]
		if q.Topics[0].Topic != MetadataTopic || p.Partition != MetadataPartition {
			return Message{}, &RequestError{Code: ErrUnknownTopicOrPartition,
				Reason: fmt.Sprintf("fetch snapshot of %s-%d", q.Topics[0].Topic, p.Partition)}
		}
		return Message{From: NodeID(q.ReplicaID), To: local, Payload: FetchSnapshotRequest{
			Epoch: p.CurrentLeaderEpoch, ReplicaID: NodeID(q.ReplicaID),
			Snapshot: SnapshotID{EndOffset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch},
			Position: p.Position, MaxBytes: q.MaxBytes,
		}}, nil
	}
	return Message{}, nil
}

// EncodeResponse translates the response in m into the kmsg response to a
// request of the given version.
func EncodeResponse(m Message, version int16) (kmsg.Response, error) {
	switch p := m.Payload.(type) {
	case VoteResponse:
		resp := kmsg.NewPtrVoteResponse()
		resp.Version = version
		part := kmsg.NewVoteResponseTopicPartition()
		part.Partition, part.ErrorCode = MetadataPartition, int16(p.Error)
		part.LeaderID, part.LeaderEpoch, part.VoteGranted = int32(p.LeaderID), p.Epoch, p.Granted
		topic := kmsg.NewVoteResponseTopic()
		topic.Topic, topic.Partitions = MetadataTopic, []kmsg.VoteResponseTopicPartition{part}
		resp.Topics = []kmsg.VoteResponseTopic{topic}
		return resp, nil
	case BeginQuorumEpochResponse:
		resp := kmsg.NewPtrBeginQuorumEpochResponse()
		resp.Version = version
		part := kmsg.NewBeginQuorumEpochResponseTopicPartition()
		part.Partition, part.ErrorCode = MetadataPartition, int16(p.Error)
		part.LeaderID, part.LeaderEpoch = int32(p.LeaderID), p.Epoch
		topic := kmsg.NewBeginQuorumEpochResponseTopic()
		topic.Topic, topic.Partitions = MetadataTopic, []kmsg.BeginQuorumEpochResponseTopicPartition{part}
		resp.Topics = []kmsg.BeginQuorumEpochResponseTopic{topic}
		return resp, nil
	case EndQuorumEpochResponse:
		resp := kmsg.NewPtrEndQuorumEpochResponse()
		resp.Version = version
		part := kmsg.NewEndQuorumEpochResponseTopicPartition()
		part.Partition, part.ErrorCode = MetadataPartition, int16(p.Error)
		part.LeaderID, part.LeaderEpoch = int32(p.LeaderID), p.Epoch
		topic := kmsg.NewEndQuorumEpochResponseTopic()
		topic.Topic, topic.Partitions = MetadataTopic, []kmsg.EndQuorumEpochResponseTopicPartition{part}
		resp.Topics = []kmsg.EndQuorumEpochResponseTopic{topic}
		return resp, nil
	case FetchResponse:
		if version < MinFetchVersion {
			return nil, wireErr("KRaft fetch needs Fetch v%d+, have v%d", MinFetchVersion, version)
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = version
		part := kmsg.NewFetchResponseTopicPartition()
		part.Partition, part.ErrorCode = MetadataPartition, int16(p.Error)
		part.HighWatermark, part.LastStableOffset, part.LogStartOffset = p.HighWatermark, p.HighWatermark, p.LogStartOffset
		part.CurrentLeader.LeaderID, part.CurrentLeader.LeaderEpoch = int32(p.LeaderID), p.Epoch
		if d := p.DivergingEpoch; d != nil {
			part.DivergingEpoch.Epoch, part.DivergingEpoch.EndOffset = d.Epoch, d.Offset
		}
		if s := p.Snapshot; s != nil {
			part.SnapshotID.EndOffset, part.SnapshotID.Epoch = s.EndOffset, s.Epoch
		}
		batches, err := EncodeBatches(p.Batches)
		if err != nil {
			return nil, err
		}
		part.RecordBatches = batches
		topic := kmsg.NewFetchResponseTopic()
		topic.Topic, topic.TopicID = MetadataTopic, MetadataTopicID
		topic.Partitions = []kmsg.FetchResponseTopicPartition{part}
		resp.Topics = []kmsg.FetchResponseTopic{topic}
		return resp, nil
	case FetchSnapshotResponse:
		resp := kmsg.NewPtrFetchSnapshotResponse()
		resp.Version = version
		part := kmsg.NewFetchSnapshotResponseTopicPartition()
		part.Partition, part.ErrorCode = MetadataPartition, int16(p.Error)
		part.SnapshotID.EndOffset, part.SnapshotID.Epoch = p.Snapshot.EndOffset, p.Snapshot.Epoch
		part.CurrentLeader.LeaderID, part.CurrentLeader.LeaderEpoch = int32(p.LeaderID), p.Epoch
		part.Size, part.Position, part.Bytes = p.Size, p.Position, p.Data
		topic := kmsg.NewFetchSnapshotResponseTopic()
		topic.Topic, topic.Partitions = MetadataTopic, []kmsg.FetchSnapshotResponseTopicPartition{part}
		resp.Topics = []kmsg.FetchSnapshotResponseTopic{topic}
		return resp, nil
	}
	return nil, wireErr("%T is not a response", m.Payload)
}

// DecodeResponse translates a kmsg response into the Message to Step. req is
// the request it answers, as sent: the response comes from req.To, and
// fields Kafka's response does not carry (a vote's pre-vote flag, a fetch's
// position) are restored from it. A response whose values are out of range
// (an epoch above MaxEpoch, a negative offset; see checkResponse) is an
// error: the Raft times its request out.
func DecodeResponse(resp kmsg.Response, req Message) (Message, error) {
	m, err := decodeResponse(resp, req)
	if err != nil {
		return Message{}, err
	}
	if err := checkResponse(m.Payload); err != nil {
		return Message{}, fmt.Errorf("%w: %w", ErrWire, err)
	}
	return m, nil
}

func decodeResponse(resp kmsg.Response, req Message) (Message, error) {
	out := Message{From: req.To, To: req.From}
	switch q := resp.(type) {
	case *kmsg.VoteResponse:
		vr, ok := req.Payload.(VoteRequest)
		if !ok {
			return Message{}, wireErr("vote response to a %T", req.Payload)
		}
		if q.ErrorCode != 0 {
			out.Payload = VoteResponse{Error: ErrorCode(q.ErrorCode), Epoch: -1, LeaderID: NoNode, PreVote: vr.PreVote}
			return out, nil
		}
		if err := onePartition(len(q.Topics),
			func() (string, int) { return q.Topics[0].Topic, len(q.Topics[0].Partitions) },
			func() int32 { return q.Topics[0].Partitions[0].Partition }); err != nil {
			return Message{}, err
		}
		p := q.Topics[0].Partitions[0]
		out.Payload = VoteResponse{Error: ErrorCode(p.ErrorCode), Epoch: p.LeaderEpoch, LeaderID: NodeID(p.LeaderID), Granted: p.VoteGranted, PreVote: vr.PreVote}
		return out, nil
	case *kmsg.BeginQuorumEpochResponse:
		if q.ErrorCode != 0 {
			out.Payload = BeginQuorumEpochResponse{Error: ErrorCode(q.ErrorCode), Epoch: -1, LeaderID: NoNode}
			return out, nil
		}
		if err := onePartition(len(q.Topics),
			func() (string, int) { return q.Topics[0].Topic, len(q.Topics[0].Partitions) },
			func() int32 { return q.Topics[0].Partitions[0].Partition }); err != nil {
			return Message{}, err
		}
		p := q.Topics[0].Partitions[0]
		out.Payload = BeginQuorumEpochResponse{Error: ErrorCode(p.ErrorCode), Epoch: p.LeaderEpoch, LeaderID: NodeID(p.LeaderID)}
		return out, nil
	case *kmsg.EndQuorumEpochResponse:
		if q.ErrorCode != 0 {
			out.Payload = EndQuorumEpochResponse{Error: ErrorCode(q.ErrorCode), Epoch: -1, LeaderID: NoNode}
			return out, nil
		}
		if err := onePartition(len(q.Topics),
			func() (string, int) { return q.Topics[0].Topic, len(q.Topics[0].Partitions) },
			func() int32 { return q.Topics[0].Partitions[0].Partition }); err != nil {
			return Message{}, err
		}
		p := q.Topics[0].Partitions[0]
		out.Payload = EndQuorumEpochResponse{Error: ErrorCode(p.ErrorCode), Epoch: p.LeaderEpoch, LeaderID: NodeID(p.LeaderID)}
		return out, nil
	case *kmsg.FetchResponse:
		fr, ok := req.Payload.(FetchRequest)
		if !ok {
			return Message{}, wireErr("fetch response to a %T", req.Payload)
		}
		if q.ErrorCode != 0 {
			return Message{}, wireErr("fetch session error %d", q.ErrorCode)
		}
		if len(q.Topics) != 1 || len(q.Topics[0].Partitions) != 1 || q.Topics[0].Partitions[0].Partition != MetadataPartition {
			return Message{}, wireErr("fetch response is not one partition of %s", MetadataTopic)
		}
		p := q.Topics[0].Partitions[0]
		fresp := FetchResponse{
			Error: ErrorCode(p.ErrorCode), Epoch: p.CurrentLeader.LeaderEpoch, LeaderID: NodeID(p.CurrentLeader.LeaderID),
			HighWatermark: p.HighWatermark, LogStartOffset: p.LogStartOffset,
			FetchEpoch: fr.Epoch, FetchOffset: fr.FetchOffset, LastFetchedEpoch: fr.LastFetchedEpoch,
		}
		if d := p.DivergingEpoch; d.EndOffset >= 0 && d.Epoch >= 0 {
			fresp.DivergingEpoch = &OffsetAndEpoch{Offset: d.EndOffset, Epoch: d.Epoch}
		}
		if s := p.SnapshotID; s.EndOffset >= 0 && s.Epoch >= 0 {
			fresp.Snapshot = &SnapshotID{EndOffset: s.EndOffset, Epoch: s.Epoch}
		}
		batches, err := DecodeBatches(p.RecordBatches)
		if err != nil {
			return Message{}, err
		}
		fresp.Batches = batches
		out.Payload = fresp
		return out, nil
	case *kmsg.FetchSnapshotResponse:
		if _, ok := req.Payload.(FetchSnapshotRequest); !ok {
			return Message{}, wireErr("fetch snapshot response to a %T", req.Payload)
		}
		if q.ErrorCode != 0 {
			return Message{}, wireErr("fetch snapshot error %d", q.ErrorCode)
		}
		if err := onePartition(len(q.Topics),
			func() (string, int) { return q.Topics[0].Topic, len(q.Topics[0].Partitions) },
			func() int32 { return q.Topics[0].Partitions[0].Partition }); err != nil {
			return Message{}, err
		}
		p := q.Topics[0].Partitions[0]
		out.Payload = FetchSnapshotResponse{
			Error: ErrorCode(p.ErrorCode), Epoch: p.CurrentLeader.LeaderEpoch, LeaderID: NodeID(p.CurrentLeader.LeaderID),
			Snapshot: SnapshotID{EndOffset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch},
			Size:     p.Size, Position: p.Position, Data: p.Bytes,
		}
		return out, nil
	}
	return Message{}, wireErr("%T is not a quorum response", resp)
}

// TopLevelError is the top-level error code of a quorum RPC's response
// (ErrNone for any other response).
func TopLevelError(resp kmsg.Response) ErrorCode {
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		return ErrorCode(r.ErrorCode)
	case *kmsg.BeginQuorumEpochResponse:
		return ErrorCode(r.ErrorCode)
	case *kmsg.EndQuorumEpochResponse:
		return ErrorCode(r.ErrorCode)
	case *kmsg.FetchResponse:
		return ErrorCode(r.ErrorCode)
	case *kmsg.FetchSnapshotResponse:
		return ErrorCode(r.ErrorCode)
	}
	return ErrNone
}

// ErrorResponse is the response to a quorum request refused at the
// boundary (DecodeRequest's *RequestError), at the request's version, as
// KafkaRaftClient answers: the error in the top-level error code, or in
// the one partition's with the receiver's leader and epoch. It returns nil
// when req is not a quorum request.
func ErrorResponse(req kmsg.Request, rerr *RequestError, leader NodeID, epoch int32) kmsg.Response {
	code := int16(rerr.Code)
	top, part := int16(0), code
	if rerr.TopLevel {
		top, part = code, 0
	}
	switch q := req.(type) {
	case *kmsg.VoteRequest:
		resp := kmsg.NewPtrVoteResponse()
		resp.Version, resp.ErrorCode = q.Version, top
		if !rerr.TopLevel {
			p := kmsg.NewVoteResponseTopicPartition()
			p.Partition, p.ErrorCode, p.LeaderID, p.LeaderEpoch = MetadataPartition, part, int32(leader), epoch
			t := kmsg.NewVoteResponseTopic()
			t.Topic, t.Partitions = MetadataTopic, []kmsg.VoteResponseTopicPartition{p}
			resp.Topics = []kmsg.VoteResponseTopic{t}
		}
		return resp
	case *kmsg.BeginQuorumEpochRequest:
		resp := kmsg.NewPtrBeginQuorumEpochResponse()
		resp.Version, resp.ErrorCode = q.Version, top
		if !rerr.TopLevel {
			p := kmsg.NewBeginQuorumEpochResponseTopicPartition()
			p.Partition, p.ErrorCode, p.LeaderID, p.LeaderEpoch = MetadataPartition, part, int32(leader), epoch
			t := kmsg.NewBeginQuorumEpochResponseTopic()
			t.Topic, t.Partitions = MetadataTopic, []kmsg.BeginQuorumEpochResponseTopicPartition{p}
			resp.Topics = []kmsg.BeginQuorumEpochResponseTopic{t}
		}
		return resp
	case *kmsg.EndQuorumEpochRequest:
		resp := kmsg.NewPtrEndQuorumEpochResponse()
		resp.Version, resp.ErrorCode = q.Version, top
		if !rerr.TopLevel {
			p := kmsg.NewEndQuorumEpochResponseTopicPartition()
			p.Partition, p.ErrorCode, p.LeaderID, p.LeaderEpoch = MetadataPartition, part, int32(leader), epoch
			t := kmsg.NewEndQuorumEpochResponseTopic()
			t.Topic, t.Partitions = MetadataTopic, []kmsg.EndQuorumEpochResponseTopicPartition{p}
			resp.Topics = []kmsg.EndQuorumEpochResponseTopic{t}
		}
		return resp
	case *kmsg.FetchRequest:
		resp := kmsg.NewPtrFetchResponse()
		resp.Version, resp.ErrorCode = q.Version, top
		if !rerr.TopLevel {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition, p.ErrorCode = MetadataPartition, part
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = int32(leader), epoch
			t := kmsg.NewFetchResponseTopic()
			t.Topic, t.TopicID = MetadataTopic, MetadataTopicID
			t.Partitions = []kmsg.FetchResponseTopicPartition{p}
			resp.Topics = []kmsg.FetchResponseTopic{t}
		}
		return resp
	case *kmsg.FetchSnapshotRequest:
		resp := kmsg.NewPtrFetchSnapshotResponse()
		resp.Version, resp.ErrorCode = q.Version, top
		if !rerr.TopLevel {
			p := kmsg.NewFetchSnapshotResponseTopicPartition()
			p.Partition, p.ErrorCode = MetadataPartition, part
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = int32(leader), epoch
			topic := MetadataTopic
			if len(q.Topics) == 1 && len(q.Topics[0].Partitions) == 1 {
				// Echo what was asked, as Kafka does for an unknown one.
				topic, p.Partition = q.Topics[0].Topic, q.Topics[0].Partitions[0].Partition
			}
			t := kmsg.NewFetchSnapshotResponseTopic()
			t.Topic, t.Partitions = topic, []kmsg.FetchSnapshotResponseTopicPartition{p}
			resp.Topics = []kmsg.FetchSnapshotResponseTopic{t}
		}
		return resp
	}
	return nil
}
