package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/sim/servertest"
)

// Markers replicate like any batch: followers replay them into their
// producer state, so that after the leader dies the new leader has the
// same ongoing transactions, last stable offset and aborted list.
// The test writes the markers itself, so partition verification is off.
func TestReplicatedTransactionsSurviveTheLeader(t *testing.T) {
	x := servertest.StartCluster(t, 13, 3, func(c *server.Config) {
		c.Quorum.Controller.MaxReplicationFactor = 3
		noTxnVerification(c)
	})
	x.CreateTopic(1, "tx", 1, 3, map[string]string{"min.insync.replicas": "2"})
	leader := x.LeaderOf("tx", 0)
	do := func(node int, req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := x.Do(node, req)
		require.NoError(t, err)
		return resp
	}
	txnBatch := func(node int, pid int64, seq int32, v string) {
		t.Helper()
		b := record.NewBuilder(record.WithProducer(pid, 0, seq), record.WithTransactional())
		b.Append(x.ClientEnv().Now().UnixMilli(), nil, []byte(v))
		raw, err := b.AppendTo(nil)
		require.NoError(t, err)
		req := servertest.ProduceRequest("tx", 0, raw)
		req.TransactionID = kmsg.StringPtr("t")
		got := do(node, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
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
		return do(node, req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
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
