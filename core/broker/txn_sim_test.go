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
