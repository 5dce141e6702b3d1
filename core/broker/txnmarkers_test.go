package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/txn"
)

// A leader's WriteTxnMarkers groups its partitions by topic, carries the
// coordinator epoch, and goes at v2 only with KIP-890's transaction
// version; its answer is read for the partitions asked only.
func TestMarkerRequestAndResults(t *testing.T) {
	parts := []txn.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 2}, {Topic: "b", Partition: 1}}
	m := txn.Markers{ProducerID: 7, ProducerEpoch: 3, Commit: true, CoordinatorEpoch: 9, Partitions: parts}
	req := markerRequest(m, parts)
	require.Equal(t, int16(1), req.Version)
	require.Len(t, req.Markers, 1)
	mk := req.Markers[0]
	require.Equal(t, int64(7), mk.ProducerID)
	require.Equal(t, int16(3), mk.ProducerEpoch)
	require.True(t, mk.Committed)
	require.Equal(t, int32(9), mk.CoordinatorEpoch)
	require.Len(t, mk.Topics, 2)
	require.Equal(t, []int32{0, 2}, mk.Topics[0].Partitions)

	m.TransactionVersion = 2
	require.Equal(t, int16(2), markerRequest(m, parts).Version)

	resp := kmsg.NewPtrWriteTxnMarkersResponse()
	rm := kmsg.NewWriteTxnMarkersResponseMarker()
	rm.Topics = []kmsg.WriteTxnMarkersResponseMarkerTopic{
		{Topic: "a", Partitions: []kmsg.WriteTxnMarkersResponseMarkerTopicPartition{{Partition: 0}, {Partition: 2, ErrorCode: kerr.NotLeaderForPartition.Code}, {Partition: 5}}},
		{Topic: "b", Partitions: []kmsg.WriteTxnMarkersResponseMarkerTopicPartition{{Partition: 1, ErrorCode: 9999}}},
	}
	resp.Markers = append(resp.Markers, rm)
	got := markerResults(resp, parts)
	require.Equal(t, []txn.MarkerResult{
		{TopicPartition: parts[0]},
		{TopicPartition: parts[1], Err: kerr.NotLeaderForPartition},
		{TopicPartition: parts[2], Err: kerr.UnknownServerError},
	}, got, "a-5 was not asked; an unknown code is UNKNOWN_SERVER_ERROR")
	require.Nil(t, markerResults(nil, parts))
	require.Nil(t, markerResults(kmsg.NewPtrWriteTxnMarkersResponse(), parts))
}
