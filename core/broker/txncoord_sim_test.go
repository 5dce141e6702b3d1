package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/server"
)

// findTxnCoordinator asks for id's transaction coordinator until the
// first request's __transaction_state exists and is loaded.
func (h *simServer) findTxnCoordinator(id string) kmsg.FindCoordinatorResponseCoordinator {
	h.T.Helper()
	var c kmsg.FindCoordinatorResponseCoordinator
	h.RunUntil("the transaction coordinator", func() bool {
		c = h.Do(txnCoordinatorRequest(id)).(*kmsg.FindCoordinatorResponse).Coordinators[0]
		return c.ErrorCode == 0
	})
	return c
}

func (h *simServer) initTxn(id string, timeoutMs int32) *kmsg.InitProducerIDResponse {
	h.T.Helper()
	var resp *kmsg.InitProducerIDResponse
	h.RunUntil("InitProducerId", func() bool {
		resp = h.Do(initTxnRequest(id, timeoutMs)).(*kmsg.InitProducerIDResponse)
		return resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.NotCoordinator.Code &&
			resp.ErrorCode != kerr.ConcurrentTransactions.Code
	})
	return resp
}

func (h *simServer) describeTxn(id string) kmsg.DescribeTransactionsResponseTransactionState {
	h.T.Helper()
	return h.Do(describeTxnRequest(id)).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
}

// TestServerTransactionCoordinator drives the coordinator's APIs on a
// single node: FindCoordinator creates __transaction_state, a transaction
// adds partitions and a group's offsets partition and commits with EndTxn
// v5 (the epoch bumped), bad input is refused, and a restart replays the
// state. The markers go to the partition leader's WriteTxnMarkers, which
// the partition side serves (until it does, they are retried and the
// transaction stays PrepareCommit).
func TestServerTransactionCoordinator(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 2, nil)

	c := h.findTxnCoordinator("tx")
	require.Equal(t, int32(1), c.NodeID)
	for _, v := range broker.Versions(t, kmsg.FindCoordinator)[1:] { // v0 has no key type
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType = v, 1
		req.CoordinatorKey, req.CoordinatorKeys = "tx", []string{"tx", "other"}
		resp := h.Do(req).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			require.Zero(t, resp.ErrorCode, "v%d", v)
			require.Equal(t, int32(1), resp.NodeID)
			continue
		}
		require.Len(t, resp.Coordinators, 2, "v%d batched", v)
		for _, c := range resp.Coordinators {
			require.Zero(t, c.ErrorCode, "v%d %s", v, c.Key)
		}
	}
	require.Equal(t, kerr.InvalidRequest.Code, h.Do(txnCoordinatorRequest("")).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode)

	tooLong := h.initTxn("tx", 16*60*1000)
	require.Equal(t, kerr.InvalidTransactionTimeout.Code, tooLong.ErrorCode)
	init := h.initTxn("tx", 60_000)
	require.Zero(t, init.ErrorCode, "%v", kerr.ErrorForCode(init.ErrorCode))
	require.Zero(t, init.ProducerEpoch)
	pid := init.ProducerID

	for _, rt := range h.Do(addPartitionsRequest("tx", pid, 0, "t", 0, 1)).(*kmsg.AddPartitionsToTxnResponse).Topics {
		for _, rp := range rt.Partitions {
			require.Zero(t, rp.ErrorCode, "%s-%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
		}
	}
	unknown := addPartitionsRequest("tx", pid, 0, "nope", 0)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, h.Do(unknown).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode)

	// v4 (a partition leader's verifyOnly) for an id in and one not.
	verify := kmsg.NewPtrAddPartitionsToTxnRequest()
	verify.Version = 4
	verify.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{
		{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: 0, VerifyOnly: true, Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: []int32{1}}}},
		{TransactionalID: "other", ProducerID: pid, ProducerEpoch: 0, VerifyOnly: true, Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: []int32{1}}}},
	}
	vr := h.Do(verify).(*kmsg.AddPartitionsToTxnResponse)
	require.Len(t, vr.Transactions, 2)
	require.Zero(t, vr.Transactions[0].Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.InvalidProducerIDMapping.Code, vr.Transactions[1].Topics[0].Partitions[0].ErrorCode)

	require.Zero(t, h.Do(addOffsetsRequest("tx", pid, 0, "g")).(*kmsg.AddOffsetsToTxnResponse).ErrorCode)

	d := h.describeTxn("tx")
	require.Zero(t, d.ErrorCode)
	require.Equal(t, "Ongoing", d.State)
	require.Len(t, d.Topics, 2, "__consumer_offsets and t")
	require.Equal(t, broker.OffsetsTopic, d.Topics[0].Topic)

	list := kmsg.NewPtrListTransactionsRequest()
	list.Version, list.StateFilters = 2, []string{"Ongoing", "Bogus"}
	lr := h.Do(list).(*kmsg.ListTransactionsResponse)
	require.Equal(t, []string{"Bogus"}, lr.UnknownStateFilters)
	require.Len(t, lr.TransactionStates, 1)
	require.Equal(t, "tx", lr.TransactionStates[0].TransactionalID)

	// Clients cannot write the coordinator's topic.
	got := h.Produce(broker.TxnStateTopic, 0, "x")
	require.Equal(t, kerr.InvalidTopicException.Code, got.ErrorCode)

	stale := endTxnRequest(5, "tx", pid+1, 0, true)
	require.Equal(t, kerr.InvalidProducerIDMapping.Code, h.Do(stale).(*kmsg.EndTxnResponse).ErrorCode)

	// A wrong epoch is PRODUCER_FENCED, and INVALID_PRODUCER_EPOCH for
	// clients older than KIP-588 (EndTxn v0-1, AddPartitionsToTxn v0-1).
	for v, want := range map[int16]int16{1: kerr.InvalidProducerEpoch.Code, 2: kerr.ProducerFenced.Code, 5: kerr.ProducerFenced.Code} { //determinism:unordered independent requests
		wrong := endTxnRequest(v, "tx", pid, 3, true)
		require.Equal(t, want, h.Do(wrong).(*kmsg.EndTxnResponse).ErrorCode, "EndTxn v%d", v)
	}
	oldAdd := addPartitionsRequest("tx", pid, 3, "t", 0)
	oldAdd.Version = 1
	require.Equal(t, kerr.InvalidProducerEpoch.Code, h.Do(oldAdd).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode)

	er := h.Do(endTxnRequest(5, "tx", pid, 0, true)).(*kmsg.EndTxnResponse)
	require.Zero(t, er.ErrorCode, "%v", kerr.ErrorForCode(er.ErrorCode))
	require.Equal(t, int16(1), er.ProducerEpoch, "KIP-890: the epoch bumps at the end")

	_, markersServed := broker.APIs().Lookup(kmsg.WriteTxnMarkers.Int16())
	want := "PrepareCommit"
	if markersServed {
		want = "CompleteCommit"
		h.RunUntil("the markers written", func() bool { return h.describeTxn("tx").State == want })
	}
	require.Equal(t, want, h.describeTxn("tx").State)

	// A restart replays __transaction_state: the same state.
	h.Crash()
	h.findTxnCoordinator("tx")
	var after kmsg.DescribeTransactionsResponseTransactionState
	h.RunUntil("the shard loaded", func() bool {
		after = h.describeTxn("tx")
		return after.ErrorCode != kerr.CoordinatorLoadInProgress.Code && after.ErrorCode != kerr.NotCoordinator.Code
	})
	require.Zero(t, after.ErrorCode)
	require.Equal(t, pid, after.ProducerID)
	require.Equal(t, int16(1), after.ProducerEpoch)
	if markersServed {
		h.RunUntil("the markers written", func() bool { return h.describeTxn("tx").State == "CompleteCommit" })
	} else {
		require.Equal(t, "PrepareCommit", after.State, "the markers resume from the replayed log")
	}
}

// TestTxnCoordinatorFailoverMidCommit: a three-node cluster; the
// coordinator of an id writes PrepareCommit (EndTxn v5 answered) and is
// killed. The new leader of the id's __transaction_state partition
// replays it, describes the same producer and bumped epoch in
// PrepareCommit (or CompleteCommit once markers are served), answers the
// client's retried EndTxn, and sends the markers again.
func TestTxnCoordinatorFailoverMidCommit(t *testing.T) {
	x := newSimCluster(t, 7, 3, func(c *server.Config) { c.BrokerListener.Txns.StatePartitions = 3 })
	x.CreateTopic(1, "t", 2, 3, nil)
	coord := x.txnCoordinator(1, "tx")
	init := x.initTxn(coord, "tx")
	x.addPartitions(coord, "tx", init, "t", 0, 1)
	end := endTxnRequest(5, "tx", init.ProducerID, init.ProducerEpoch, true)
	er := x.do(coord, end).(*kmsg.EndTxnResponse)
	require.Zero(t, er.ErrorCode, "%v", kerr.ErrorForCode(er.ErrorCode))
	require.Equal(t, init.ProducerEpoch+1, er.ProducerEpoch)

	x.Kill(coord)
	via := 1
	if coord == 1 {
		via = 2
	}
	next := x.txnCoordinator(via, "tx")
	t.Logf("coordinator %d, after the kill %d", coord, next)
	require.NotEqual(t, coord, next)
	_, markersServed := broker.APIs().Lookup(kmsg.WriteTxnMarkers.Int16())
	var st kmsg.DescribeTransactionsResponseTransactionState
	x.RunUntil("the new coordinator loaded", func() bool {
		st = x.do(next, describeTxnRequest("tx")).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
		return !coordinatorRetriable(st.ErrorCode) && (!markersServed || st.State == "CompleteCommit")
	})
	require.Zero(t, st.ErrorCode)
	require.Equal(t, init.ProducerID, st.ProducerID)
	require.Equal(t, er.ProducerEpoch, st.ProducerEpoch)
	if !markersServed {
		require.Equal(t, "PrepareCommit", st.State)
	}
	// The client's retry of its EndTxn (the epoch it sent): the same
	// outcome, never another decision.
	retry := x.do(next, end).(*kmsg.EndTxnResponse)
	if markersServed {
		require.Zero(t, retry.ErrorCode)
		require.Equal(t, er.ProducerEpoch, retry.ProducerEpoch)
	} else {
		require.Equal(t, kerr.ConcurrentTransactions.Code, retry.ErrorCode)
	}
	abort := *end
	abort.Commit = false
	require.Equal(t, kerr.InvalidTxnState.Code, x.do(next, &abort).(*kmsg.EndTxnResponse).ErrorCode)
}
