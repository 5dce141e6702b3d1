package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupCoordinatorReady asks for group's coordinator until
// __consumer_offsets exists and the group's shard is loaded.
func (h *simServer) groupCoordinatorReady(group string) {
	h.T.Helper()
	h.RunUntil("the group coordinator", func() bool {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKeys = 4, []string{group}
		if h.Do(req).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode != 0 {
			return false
		}
		return h.fetchOffsets(group, false).ErrorCode == 0
	})
}

// newTxnOffsetsServer is a server with topic t (two partitions), group
// g's coordinator ready and a producer of transactional id tx, whose id
// and epoch it returns.
func newTxnOffsetsServer(t *testing.T) (*simServer, int64, int16) {
	t.Helper()
	h := newSimServer(t, nil)
	h.CreateTopic("t", 2, nil)
	init := h.newProducer("tx")
	h.groupCoordinatorReady("g")
	return h, init.ProducerID, init.ProducerEpoch
}

// fetchOffsets is an OffsetFetch v8 of t-0 and t-1.
func (h *simServer) fetchOffsets(group string, stable bool) kmsg.OffsetFetchResponseGroup {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.RequireStable = 8, stable
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0, 1}}}}}
	return h.Do(req).(*kmsg.OffsetFetchResponse).Groups[0]
}

func (h *simServer) txnOffsetCommit(id, group string, pid int64, epoch int16, offsets ...int64) []int16 {
	return h.txnOffsetCommitAt(4, id, group, pid, epoch, offsets...)
}

func (h *simServer) txnOffsetCommitAt(version int16, id, group string, pid int64, epoch int16, offsets ...int64) []int16 {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = version, id, group, pid, epoch
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	for i, o := range offsets {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = int32(i), o
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	var codes []int16
	for _, rp := range h.Do(req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions {
		codes = append(codes, rp.ErrorCode)
	}
	return codes
}

func (h *simServer) endTxn(id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	return h.Do(endTxnRequest(5, id, pid, epoch, commit)).(*kmsg.EndTxnResponse)
}

func offsetsOf(g kmsg.OffsetFetchResponseGroup) (offsets []int64, codes []int16) {
	for _, p := range g.Topics[0].Partitions {
		offsets, codes = append(offsets, p.Offset), append(codes, p.ErrorCode)
	}
	return offsets, codes
}

// TestServerTxnOffsetCommit: a transaction commits a group's offsets with
// TxnOffsetCommit; until its COMMIT marker reaches the group's
// __consumer_offsets partition they are pending (OffsetFetch answers the
// old offsets, and UNSTABLE_OFFSET_COMMIT with require_stable); then they
// are committed. A second transaction aborts: its offsets go. A restart
// replays the partition, transactional batches and markers, into the
// same offsets, and a transaction left pending across it is still
// pending and then committed.
func TestServerTxnOffsetCommit(t *testing.T) {
	h, pid, epoch := newTxnOffsetsServer(t)

	addOffsets := func(epoch int16) {
		require.Zero(t, h.Do(addOffsetsRequest("tx", pid, epoch, "g")).(*kmsg.AddOffsetsToTxnResponse).ErrorCode)
	}
	waitComplete := func(state string) {
		h.RunUntil("the markers written", func() bool { return h.describeTxn("tx").State == state })
	}

	// Transaction 1 commits offsets 5 and 7.
	addOffsets(epoch)
	require.Equal(t, []int16{0, 0}, h.txnOffsetCommit("tx", "g", pid, epoch, 5, 7))
	offs, codes := offsetsOf(h.fetchOffsets("g", false))
	require.Equal(t, []int64{-1, -1}, offs, "pending offsets are invisible")
	require.Equal(t, []int16{0, 0}, codes)
	_, codes = offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, []int16{kerr.UnstableOffsetCommit.Code, kerr.UnstableOffsetCommit.Code}, codes)

	er := h.endTxn("tx", pid, epoch, true)
	require.Zero(t, er.ErrorCode)
	epoch = er.ProducerEpoch
	waitComplete("CompleteCommit")
	offs, codes = offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, []int64{5, 7}, offs, "the COMMIT marker made them committed")
	require.Equal(t, []int16{0, 0}, codes)

	// The marker bumped the producer's epoch on the offsets partition: a
	// fenced producer's TxnOffsetCommit is refused, changing nothing.
	require.Equal(t, []int16{kerr.InvalidProducerEpoch.Code, kerr.InvalidProducerEpoch.Code}, h.txnOffsetCommit("tx", "g", pid, epoch-1, 1, 1))
	offs, _ = offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, []int64{5, 7}, offs)

	// Transaction 2 aborts: its offsets go.
	addOffsets(epoch)
	require.Equal(t, []int16{0, 0}, h.txnOffsetCommit("tx", "g", pid, epoch, 50, 70))
	er = h.endTxn("tx", pid, epoch, false)
	require.Zero(t, er.ErrorCode)
	epoch = er.ProducerEpoch
	waitComplete("CompleteAbort")
	offs, _ = offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, []int64{5, 7}, offs, "the ABORT marker dropped them")

	// Transaction 3 is pending across a restart.
	addOffsets(epoch)
	require.Equal(t, []int16{0, 0}, h.txnOffsetCommit("tx", "g", pid, epoch, 9, 11))
	// Bad input: an unknown partition, a negative offset.
	bad := kmsg.NewPtrTxnOffsetCommitRequest()
	bad.Version, bad.TransactionalID, bad.Group, bad.ProducerID, bad.ProducerEpoch = 4, "tx", "g", pid, epoch
	bad.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 9, Offset: 1}, {Partition: 0, Offset: -3}}}}
	br := h.Do(bad).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, br[0].ErrorCode)
	require.Equal(t, kerr.InvalidCommitOffsetSize.Code, br[1].ErrorCode)

	h.Crash()
	h.findTxnCoordinator("tx")
	h.groupCoordinatorReady("g")
	offs, codes = offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, []int16{kerr.UnstableOffsetCommit.Code, kerr.UnstableOffsetCommit.Code}, codes, "replay: transaction 3 still pending")
	offs, _ = offsetsOf(h.fetchOffsets("g", false))
	require.Equal(t, []int64{5, 7}, offs, "replay: transaction 1 committed, 2 aborted")
	var end *kmsg.EndTxnResponse
	h.RunUntil("EndTxn after the restart", func() bool {
		end = h.endTxn("tx", pid, epoch, true)
		return end.ErrorCode != kerr.CoordinatorLoadInProgress.Code && end.ErrorCode != kerr.NotCoordinator.Code
	})
	require.Zero(t, end.ErrorCode, "%v", kerr.ErrorForCode(end.ErrorCode))
	waitComplete("CompleteCommit")
	offs, codes = offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, []int64{9, 11}, offs)
	require.Equal(t, []int16{0, 0}, codes)

	// And once more after another restart: the replayed marker committed
	// them.
	h.Crash()
	h.groupCoordinatorReady("g")
	offs, _ = offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, []int64{9, 11}, offs)
}
