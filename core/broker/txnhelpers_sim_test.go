package broker_test

import (
	"fmt"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim/servertest"
)

// The transaction requests the tests send, at the versions they send
// them unless they change it.

// txnCoordinatorRequest is a FindCoordinator v4 for id's transaction
// coordinator.
func txnCoordinatorRequest(id string) *kmsg.FindCoordinatorRequest {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version, req.CoordinatorType, req.CoordinatorKeys = 4, 1, []string{id}
	return req
}

// initTxnRequest is an InitProducerId v5 of a new producer for id.
func initTxnRequest(id string, timeoutMs int32) *kmsg.InitProducerIDRequest {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 5, kmsg.StringPtr(id), timeoutMs
	req.ProducerID, req.ProducerEpoch = -1, -1
	return req
}

// addPartitionsRequest is an AddPartitionsToTxn v3 of topic's partitions.
func addPartitionsRequest(id string, pid int64, epoch int16, topic string, partitions ...int32) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, id, pid, epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: partitions}}
	return req
}

// addOffsetsRequest is an AddOffsetsToTxn v4 of group's offsets.
func addOffsetsRequest(id string, pid int64, epoch int16, group string) *kmsg.AddOffsetsToTxnRequest {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = 4, id, pid, epoch, group
	return req
}

// endTxnRequest is an EndTxn at version.
func endTxnRequest(version int16, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnRequest {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, id, pid, epoch, commit
	return req
}

// describeTxnRequest is a DescribeTransactions of id alone.
func describeTxnRequest(id string) *kmsg.DescribeTransactionsRequest {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	return req
}

// txnProduceRequest is a Produce at version of batch to topic-partition
// in id's transaction.
func txnProduceRequest(version int16, id, topic string, partition int32, batch []byte) *kmsg.ProduceRequest {
	req := servertest.ProduceRequest(topic, partition, batch)
	req.Version, req.TransactionID = version, kmsg.StringPtr(id)
	return req
}

// txnBatch is a transactional batch of values from producer pid at epoch,
// its first record at sequence seq.
func (h *simServer) txnBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	return h.Batch([]record.BuilderOption{record.WithProducer(pid, epoch, seq), record.WithTransactional()}, values...)
}

// newProducer finds id's transaction coordinator and has it give id a
// producer (a 60 s transaction timeout).
func (h *simServer) newProducer(id string) *kmsg.InitProducerIDResponse {
	h.T.Helper()
	h.findTxnCoordinator(id)
	init := h.initTxn(id, 60_000)
	require.Zero(h.T, init.ErrorCode, "%v", kerr.ErrorForCode(init.ErrorCode))
	return init
}

// sendPipelined sends the produce requests one after the other without
// waiting for an answer (a client's requests in flight), waits for them
// all, and returns their partitions' answers in the order they came, as
// "request N t-P: error", the requests numbered from first.
func (h *simServer) sendPipelined(first int, reqs ...*kmsg.ProduceRequest) []string {
	h.T.Helper()
	var answers []string
	want := 0
	for i, req := range reqs {
		want += len(req.Topics[0].Partitions)
		h.Send(req, func(r kmsg.Response, err error) {
			require.NoError(h.T, err)
			for _, p := range r.(*kmsg.ProduceResponse).Topics[0].Partitions {
				answers = append(answers, fmt.Sprintf("request %d t-%d: %v", first+i, p.Partition, kerr.ErrorForCode(p.ErrorCode)))
			}
		})
	}
	h.RunUntil("the produces answered", func() bool { return len(answers) == want })
	return answers
}

// coordinatorRetriable reports whether a coordinator's code asks the
// client to find the coordinator again or wait for it.
func coordinatorRetriable(code int16) bool {
	return code == kerr.CoordinatorLoadInProgress.Code || code == kerr.NotCoordinator.Code || code == kerr.CoordinatorNotAvailable.Code
}

// txnCoordinator asks node via for id's transaction coordinator until one
// that is up is named, and returns it.
func (x *simCluster) txnCoordinator(via int, id string) int {
	x.t.Helper()
	var c kmsg.FindCoordinatorResponseCoordinator
	x.RunUntil("the transaction coordinator", func() bool {
		c = x.do(via, txnCoordinatorRequest(id)).(*kmsg.FindCoordinatorResponse).Coordinators[0]
		return c.ErrorCode == 0 && x.Servers[c.NodeID-1] != nil
	})
	return int(c.NodeID)
}

// initTxn has coordinator coord give id a producer (a 60 s transaction
// timeout), retrying while the coordinator is not ready.
func (x *simCluster) initTxn(coord int, id string) *kmsg.InitProducerIDResponse {
	x.t.Helper()
	var init *kmsg.InitProducerIDResponse
	x.RunUntil("InitProducerId", func() bool {
		init = x.do(coord, initTxnRequest(id, 60_000)).(*kmsg.InitProducerIDResponse)
		return !coordinatorRetriable(init.ErrorCode)
	})
	require.Zero(x.t, init.ErrorCode, "%v", kerr.ErrorForCode(init.ErrorCode))
	return init
}

// addPartitions adds topic's partitions to the transaction of init's
// producer at coordinator coord.
func (x *simCluster) addPartitions(coord int, id string, init *kmsg.InitProducerIDResponse, topic string, partitions ...int32) {
	x.t.Helper()
	add := addPartitionsRequest(id, init.ProducerID, init.ProducerEpoch, topic, partitions...)
	for _, rp := range x.do(coord, add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions {
		require.Zero(x.t, rp.ErrorCode, "%s-%d: %v", topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
	}
}
