package broker_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/sim/servertest"
)

// noTxnVerification turns off transaction.partition.verification.enable,
// for tests of the partition side that play the coordinator themselves.
func noTxnVerification(c *server.Config) { c.BrokerListener.Txns.NoPartitionVerification = true }

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

// txnProduce sends a transactional batch (with a transactional id) of
// producer pid and returns the partition's answer.
func txnProduce(h *simServer, topic string, pid int64, epoch int16, seq int32, values ...string) kmsg.ProduceResponseTopicPartition {
	h.T.Helper()
	return h.Do(txnProduceRequest(9, fmt.Sprintf("txn-%d", pid), topic, 0, h.txnBatch(pid, epoch, seq, values...))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// writeMarker sends WriteTxnMarkers for one producer to the named
// partitions of topic and returns their error codes.
func writeMarker(h *simServer, version int16, pid int64, epoch int16, coord int32, commit bool, topic string, partitions ...int32) []int16 {
	h.T.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = version
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed = pid, epoch, coord, commit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, partitions
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp := h.Do(req).(*kmsg.WriteTxnMarkersResponse)
	require.Len(h.T, resp.Markers, 1)
	require.Equal(h.T, pid, resp.Markers[0].ProducerID)
	var codes []int16
	for _, p := range resp.Markers[0].Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	return codes
}

// fetchCommitted is a read_committed Fetch v11 from offset: the
// partition's answer and the values a read_committed consumer keeps
// (dropping the aborted transactions' batches and the markers).
func fetchCommitted(h *simServer, topic string, offset int64) (kmsg.FetchResponseTopicPartition, []string) {
	return fetchCommittedAt(h, 11, topic, offset)
}

// fetchCommittedAt is fetchCommitted at a Fetch version that names topics
// by name (up to v12).
func fetchCommittedAt(h *simServer, version int16, topic string, offset int64) (kmsg.FetchResponseTopicPartition, []string) {
	h.T.Helper()
	return fetchCommittedIn(h, version, topic, 0, offset)
}

// fetchCommittedIn is fetchCommittedAt on partition partition.
func fetchCommittedIn(h *simServer, version int16, topic string, partition int32, offset int64) (kmsg.FetchResponseTopicPartition, []string) {
	h.T.Helper()
	p := h.Do(readCommittedRequest(version, topic, partition, offset)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	return p, committedValues(h.T, p)
}

// readCommittedRequest is a read_committed Fetch at version of one
// partition from offset, without a session and without waiting.
func readCommittedRequest(version int16, topic string, partition int32, offset int64) *kmsg.FetchRequest {
	return fetchRequest(version, 1, topic, partition, offset)
}

// fetchRequest is a Fetch at version and isolation level of one partition
// from offset, without a session and without waiting.
func fetchRequest(version int16, isolation int8, topic string, partition int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.IsolationLevel = version, 0, 1, 1<<20, isolation
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// committedValues reads a read_committed Fetch answer as a consumer does:
// the values of its records, the aborted transactions' batches and the
// control batches left out.
func committedValues(t require.TestingT, p kmsg.FetchResponseTopicPartition) []string {
	require.NotNil(t, p.AbortedTransactions, "read_committed answers a list, even an empty one")
	aborted := map[int64]int64{} // producer -> first offset of its aborted transaction in reach
	var values []string
	sp := record.NewSplitter(p.RecordBatches, len(p.RecordBatches)+1, record.CheckStored)
	for sp.Next() {
		b := sp.Batch()
		require.Less(t, b.LastOffset(), p.LastStableOffset)
		for _, a := range p.AbortedTransactions {
			if a.FirstOffset <= b.BaseOffset() {
				aborted[a.ProducerID] = a.FirstOffset
			}
		}
		if b.Attributes().IsControl() {
			delete(aborted, b.ProducerID())
			continue
		}
		if _, ok := aborted[b.ProducerID()]; ok && b.Attributes().IsTransactional() {
			continue
		}
		rd := record.NewRecordReader(record.NewDecompressor(1 << 20))
		require.NoError(t, rd.Reset(b))
		for rd.Next() {
			values = append(values, string(rd.Record().Value))
		}
	}
	require.NoError(t, sp.Err())
	return values
}

func listOffsetCommitted(h *simServer, topic string) int64 {
	h.T.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.IsolationLevel = 7, 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	got := h.Do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	require.Zero(h.T, got.ErrorCode)
	return got.Offset
}

// TestServerTransactionsOnAPartition drives the partition side of
// transactions through the broker's handlers: transactional Produce,
// WriteTxnMarkers, read_committed Fetch and ListOffsets, and a crash that
// recovery must rebuild the same last stable offset and aborted list from.
//
// No coordinator is involved (the test writes the markers), so partition
// verification (KIP-890 part 1, TestProduceVerification) is off.
func TestServerTransactionsOnAPartition(t *testing.T) {
	h := newSimServer(t, noTxnVerification)
	h.CreateTopic("t", 1, nil)

	// A transactional batch without a transactional id is refused.
	req := servertest.ProduceRequest("t", 0, h.Batch([]record.BuilderOption{record.WithProducer(1, 0, 0), record.WithTransactional()}, "x"))
	got := h.Do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	require.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, got.ErrorCode)
	// Payloads too short to hold a batch header reach the partition's
	// validation (the transactional check must not choke on them).
	for _, payload := range [][]byte{nil, {0}, make([]byte, 20)} {
		got = h.Do(servertest.ProduceRequest("t", 0, payload)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		require.NotZero(t, got.ErrorCode)
	}

	require.Zero(t, txnProduce(h, "t", 1, 0, 0, "c0", "c1").ErrorCode) // 0..1
	require.Zero(t, txnProduce(h, "t", 2, 0, 0, "a0").ErrorCode)       // 2
	require.Zero(t, h.Produce("t", 0, "plain").ErrorCode)              // 3
	require.Zero(t, txnProduce(h, "t", 2, 0, 1, "a1").ErrorCode)       // 4

	require.Equal(t, int64(5), h.listOffset("t", 0, -1), "read_uncommitted latest is the high watermark")
	require.Equal(t, int64(0), listOffsetCommitted(h, "t"), "read_committed latest is the last stable offset")
	p, values := fetchCommitted(h, "t", 0)
	require.Zero(t, p.ErrorCode)
	require.Equal(t, int64(0), p.LastStableOffset)
	require.Empty(t, values)
	plain, all := h.Fetch("t", 0, 0)
	require.Equal(t, int64(0), plain.LastStableOffset, "every fetch reports the last stable offset")
	require.Equal(t, []string{"c0", "c1", "a0", "plain", "a1"}, all, "read_uncommitted is unchanged")

	// Every WriteTxnMarkers version: producer 1 commits (v0), producer 2
	// aborts (v1).
	require.Equal(t, []int16{0}, writeMarker(h, 0, 1, 0, 4, true, "t", 0)) // 5
	require.Equal(t, int64(2), listOffsetCommitted(h, "t"))
	require.Equal(t, []int16{0}, writeMarker(h, 1, 2, 0, 4, false, "t", 0)) // 6
	require.Equal(t, int64(7), listOffsetCommitted(h, "t"))

	check := func(lso int64) {
		t.Helper()
		p, values := fetchCommitted(h, "t", 0)
		require.Zero(t, p.ErrorCode)
		require.Equal(t, lso, p.LastStableOffset)
		require.Equal(t, []string{"c0", "c1", "plain"}, values)
		require.Len(t, p.AbortedTransactions, 1)
		require.Equal(t, int64(2), p.AbortedTransactions[0].ProducerID)
		require.Equal(t, int64(2), p.AbortedTransactions[0].FirstOffset)
	}
	check(7)
	for _, v := range []int16{4, 12} { // the oldest served, and the first flexible one
		p, values := fetchCommittedAt(h, v, "t", 0)
		require.Zero(t, p.ErrorCode, "v%d", v)
		require.Equal(t, []string{"c0", "c1", "plain"}, values, "v%d", v)
		require.Len(t, p.AbortedTransactions, 1, "v%d", v)
	}

	// Fencing and refusals.
	require.Equal(t, []int16{kerr.TransactionCoordinatorFenced.Code}, writeMarker(h, 1, 1, 0, 3, true, "t", 0))
	codes := writeMarker(h, 1, 9, 0, 0, true, "t", 0, 7) // 7
	require.Equal(t, []int16{0, kerr.UnknownTopicOrPartition.Code}, codes, "an unknown producer's marker is appended; a missing partition is unknown")
	require.Equal(t, []int16{kerr.UnknownTopicOrPartition.Code}, writeMarker(h, 1, 1, 0, 4, true, "nope", 0))
	// A marker may bump the producer's epoch (an abort of a timed-out
	// transaction does); the old epoch is then fenced, data and markers.
	require.Equal(t, []int16{0}, writeMarker(h, 1, 1, 1, 4, false, "t", 0)) // 8
	require.Equal(t, []int16{kerr.InvalidProducerEpoch.Code}, writeMarker(h, 1, 1, 0, 4, true, "t", 0))
	require.Equal(t, kerr.InvalidProducerEpoch.Code, txnProduce(h, "t", 1, 0, 2, "z").ErrorCode)
	check(9)

	// A crash: recovery rebuilds the last stable offset and the aborted
	// index; a transaction left open stays open.
	require.Zero(t, txnProduce(h, "t", 3, 0, 0, "open").ErrorCode) // 9
	h.Crash()
	h.WaitServing("t", 1)
	h.RunUntil("the high watermark back", func() bool { return h.Partition("t", 0).HighWatermark() == 10 })
	require.Equal(t, int64(9), listOffsetCommitted(h, "t"))
	p, values = fetchCommitted(h, "t", 0)
	require.Equal(t, int64(9), p.LastStableOffset)
	require.Equal(t, []string{"c0", "c1", "plain"}, values)
	require.Len(t, p.AbortedTransactions, 1)
	require.Equal(t, kerr.InvalidProducerEpoch.Code, txnProduce(h, "t", 1, 0, 2, "z").ErrorCode, "the bumped epoch survives the crash")
	require.Equal(t, []int16{0}, writeMarker(h, 1, 3, 0, 4, false, "t", 0)) // 10
	p, values = fetchCommitted(h, "t", 0)
	require.Equal(t, int64(11), p.LastStableOffset)
	require.Equal(t, []string{"c0", "c1", "plain"}, values)
	require.Len(t, p.AbortedTransactions, 2)
}
