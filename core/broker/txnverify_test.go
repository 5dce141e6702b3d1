package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/txn"
)

// TestVerifyResults: the coordinator's answer to a VerifyOnly
// AddPartitionsToTxn, read as Kafka's AddPartitionsToTxnManager reads it.
func TestVerifyResults(t *testing.T) {
	parts := []txn.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "b", Partition: 0}}
	answer := func(codes ...int16) *kmsg.AddPartitionsToTxnResponse {
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		tr := kmsg.NewAddPartitionsToTxnResponseTransaction()
		tr.TransactionalID = "tx"
		for i, tp := range parts[:len(codes)] {
			if n := len(tr.Topics); n == 0 || tr.Topics[n-1].Topic != tp.Topic {
				tr.Topics = append(tr.Topics, kmsg.AddPartitionsToTxnResponseTransactionTopic{Topic: tp.Topic})
			}
			rt := &tr.Topics[len(tr.Topics)-1]
			rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: tp.Partition, ErrorCode: codes[i]})
		}
		resp.Transactions = append(resp.Transactions, tr)
		return resp
	}
	all := func(e *kerr.Error) []*kerr.Error { return []*kerr.Error{e, e, e} }

	require.Equal(t, all(kerr.NetworkException), verifyResults(nil, "tx", parts), "no answer")
	top := kmsg.NewPtrAddPartitionsToTxnResponse()
	top.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	require.Equal(t, all(kerr.InvalidTxnState), verifyResults(top, "tx", parts), "the client must not see CLUSTER_AUTHORIZATION_FAILED")
	top.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	require.Equal(t, all(kerr.CoordinatorLoadInProgress), verifyResults(top, "tx", parts))
	require.Equal(t, []*kerr.Error{nil, kerr.TransactionAbortable, kerr.InvalidProducerEpoch},
		verifyResults(answer(0, kerr.TransactionAbortable.Code, kerr.ProducerFenced.Code), "tx", parts), "PRODUCER_FENCED as producers expect it on produce")
	require.Equal(t, []*kerr.Error{nil, nil, kerr.NetworkException}, verifyResults(answer(0, 0), "tx", parts), "a partition left out of the answer is retried")
	other := answer(0, 0, 0)
	other.Transactions[0].TransactionalID = "someone-else"
	require.Equal(t, all(kerr.NetworkException), verifyResults(other, "tx", parts), "another id's answer says nothing of ours")
}

// TestProduceVerifyError: the produce answer for a failed verification
// (Kafka's ReplicaManager translation).
func TestProduceVerifyError(t *testing.T) {
	b, _ := newTestBroker(t)
	for _, tc := range []struct {
		err     *kerr.Error
		version int16
		want    *kerr.Error
	}{
		{nil, 9, nil},
		{kerr.TransactionAbortable, 10, kerr.InvalidTxnState},
		{kerr.TransactionAbortable, 11, kerr.TransactionAbortable},
		{kerr.InvalidTxnState, 11, kerr.InvalidTxnState},
		{kerr.ConcurrentTransactions, 9, kerr.NotEnoughReplicas},
		{kerr.NetworkException, 9, kerr.NotEnoughReplicas},
		{kerr.CoordinatorLoadInProgress, 9, kerr.NotEnoughReplicas},
		{kerr.CoordinatorNotAvailable, 9, kerr.NotEnoughReplicas},
		{kerr.NotCoordinator, 9, kerr.NotEnoughReplicas},
		{kerr.InvalidProducerEpoch, 9, kerr.InvalidProducerEpoch},
		{kerr.InvalidProducerIDMapping, 9, kerr.InvalidProducerIDMapping},
	} {
		err := produceVerifyError(tc.err, tc.version)
		if tc.want == nil {
			require.NoError(t, err)
			continue
		}
		require.Equal(t, tc.want, b.errorCode(err), "%v at Produce v%d", tc.err, tc.version)
	}
}
