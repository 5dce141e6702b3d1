package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
)

// Markers replicate like any batch: followers replay them into their
// producer state, so that after the leader dies the new leader has the
// same ongoing transactions, last stable offset and aborted list.
// The test writes the markers itself, so partition verification is off.
func TestReplicatedTransactionsSurviveTheLeader(t *testing.T) {
	x := newSimCluster(t, 13, 3, noTxnVerification)
	leader := x.replicatedTopic("tx")
	txnBatch := func(node int, pid int64, seq int32, v string) {
		t.Helper()
		raw := x.batch([]record.BuilderOption{record.WithProducer(pid, 0, seq), record.WithTransactional()}, v)
		got := x.do(node, txnProduceRequest(9, "t", "tx", 0, raw)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	}
	marker := func(node int, pid int64, commit bool) int16 {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = 1
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.CoordinatorEpoch, m.Committed = pid, 1, commit
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "tx", []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		return x.do(node, req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	txnBatch(leader, 1, 0, "c0")              // 0
	txnBatch(leader, 2, 0, "a0")              // 1
	txnBatch(leader, 3, 0, "o0")              // 2, left open
	require.Zero(t, marker(leader, 1, true))  // 3
	require.Zero(t, marker(leader, 2, false)) // 4
	follower := 0
	for i := 1; i <= 3; i++ {
		if i == leader {
			continue
		}
		follower = i
		p := x.Partition(i, "tx", 0)
		x.RunUntil("the follower's high watermark", func() bool { return p.HighWatermark() == 5 })
		require.Equal(t, []producer.OngoingTxn{{ProducerID: 3, FirstOffset: 2}}, p.OngoingTxns(), "node %d replayed the markers", i)
		require.Equal(t, int64(2), p.LastStableOffset())
	}
	require.Equal(t, int16(kerr.NotLeaderForPartition.Code), marker(follower, 3, true), "a follower appends no marker")

	x.Kill(leader)
	x.RunUntil("a new leader", func() bool { l := x.LeaderOf("tx", 0); return l != 0 && l != leader })
	next := x.LeaderOf("tx", 0)
	p := x.Partition(next, "tx", 0)
	x.RunUntil("the new leader serving", func() bool { return p.IsLeader() && p.HighWatermark() >= 5 })
	require.Equal(t, int64(2), p.LastStableOffset())
	x.RunUntil("the abort of producer 3 accepted", func() bool { return marker(next, 3, false) == 0 }) // 5
	require.Equal(t, int64(6), p.LastStableOffset())
	cr, err := p.ReadCommitted(0, 1<<20, -1)
	require.NoError(t, err)
	cr.Read.Release()
	var aborted []int64
	for _, a := range cr.Aborted {
		aborted = append(aborted, a.ProducerID)
	}
	require.Equal(t, []int64{2, 3}, aborted, "the new leader's aborted index has the old leader's abort and its own")
}
