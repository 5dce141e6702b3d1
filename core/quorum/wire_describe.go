package quorum

// This file translates DescribeQuorum (kafka-metadata-quorum describe) to
// and from kmsg.

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// CheckDescribeQuorumRequest checks that a DescribeQuorum request asks about
// the metadata partition; the driver answers it with DescribeQuorumResponse.
func CheckDescribeQuorumRequest(req *kmsg.DescribeQuorumRequest) error {
	return onePartition(len(req.Topics),
		func() (string, int) { return req.Topics[0].Topic, len(req.Topics[0].Partitions) },
		func() int32 { return req.Topics[0].Partitions[0].Partition })
}

// DescribeQuorumResponse encodes Raft.DescribeQuorum's answer at version.
// err is its error: a *NotLeaderError becomes NOT_LEADER_OR_FOLLOWER with the
// leader named. wallMillis converts the monotonic times of the report to
// wall-clock milliseconds (the driver knows both clocks).
func DescribeQuorumResponse(info QuorumInfo, err error, version int16, wallMillis func(time.Duration) int64) *kmsg.DescribeQuorumResponse {
	resp := kmsg.NewPtrDescribeQuorumResponse()
	resp.Version = version
	part := kmsg.NewDescribeQuorumResponseTopicPartition()
	part.Partition = MetadataPartition
	var nl *NotLeaderError
	switch {
	case errors.As(err, &nl):
		part.ErrorCode, part.LeaderID, part.LeaderEpoch = int16(ErrNotLeaderOrFollower), int32(nl.LeaderID), nl.Epoch
		part.HighWatermark = -1
	case err != nil:
		part.ErrorCode = int16(ErrInvalidRequest)
	default:
		part.LeaderID, part.LeaderEpoch, part.HighWatermark = int32(info.LeaderID), info.Epoch, info.HighWatermark
		conv := func(rs []ReplicaInfo) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
			var out []kmsg.DescribeQuorumResponseTopicPartitionReplicaState
			for _, r := range rs {
				s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
				s.ReplicaID, s.LogEndOffset = int32(r.ID), r.LogEndOffset
				s.LastFetchTimestamp = knownTime(r.LastFetch, wallMillis)
				s.LastCaughtUpTimestamp = knownTime(r.LastCaughtUp, wallMillis)
				out = append(out, s)
			}
			return out
		}
		part.CurrentVoters, part.Observers = conv(info.Voters), conv(info.Observers)
	}
	topic := kmsg.NewDescribeQuorumResponseTopic()
	topic.Topic, topic.Partitions = MetadataTopic, []kmsg.DescribeQuorumResponseTopicPartition{part}
	resp.Topics = []kmsg.DescribeQuorumResponseTopic{topic}
	return resp
}

// QuorumInfoFromKmsg decodes a DescribeQuorum response (for `strata quorum
// status`); monoFromWall converts wall-clock milliseconds back.
func QuorumInfoFromKmsg(resp *kmsg.DescribeQuorumResponse, monoFromWall func(int64) time.Duration) (QuorumInfo, error) {
	if resp.ErrorCode != 0 {
		return QuorumInfo{}, wireErr("describe quorum error %d", resp.ErrorCode)
	}
	if err := onePartition(len(resp.Topics),
		func() (string, int) { return resp.Topics[0].Topic, len(resp.Topics[0].Partitions) },
		func() int32 { return resp.Topics[0].Partitions[0].Partition }); err != nil {
		return QuorumInfo{}, err
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode == int16(ErrNotLeaderOrFollower) {
		return QuorumInfo{}, &NotLeaderError{LeaderID: NodeID(p.LeaderID), Epoch: p.LeaderEpoch}
	}
	if p.ErrorCode != 0 {
		return QuorumInfo{}, wireErr("describe quorum partition error %d", p.ErrorCode)
	}
	conv := func(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) []ReplicaInfo {
		var out []ReplicaInfo
		for _, s := range rs {
			out = append(out, ReplicaInfo{
				ID: NodeID(s.ReplicaID), LogEndOffset: s.LogEndOffset,
				LastFetch:    knownTime(s.LastFetchTimestamp, monoFromWall),
				LastCaughtUp: knownTime(s.LastCaughtUpTimestamp, monoFromWall),
			})
		}
		return out
	}
	return QuorumInfo{
		LeaderID: NodeID(p.LeaderID), Epoch: p.LeaderEpoch, HighWatermark: p.HighWatermark,
		Voters: conv(p.CurrentVoters), Observers: conv(p.Observers),
	}, nil
}

// knownTime converts a replica's time between the monotonic clock and wall
// clock milliseconds; a negative time (never) stays -1.
func knownTime[From, To time.Duration | int64](t From, conv func(From) To) To {
	if t < 0 {
		return -1
	}
	return conv(t)
}
