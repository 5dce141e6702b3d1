package broker_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/sim/servertest"
)

// verifiedProduce sends a transactional batch of id's producer to
// topic-partition at Produce version and returns the partition's answer.
func verifiedProduce(t *testing.T, do func(kmsg.Request) kmsg.Response, batch []byte, id, topic string, partition int32, version int16) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := servertest.ProduceRequest(topic, partition, batch)
	req.Version, req.TransactionID = version, kmsg.StringPtr(id)
	return do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

func (h *simServer) addPartitions(id string, pid int64, epoch int16, topic string, partitions ...int32) {
	h.T.Helper()
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, id, pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: partitions}}
	for _, rp := range h.Do(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions {
		require.Zero(h.T, rp.ErrorCode, "%s-%d: %v", topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
	}
}

func (h *simServer) endTxnAt(version int16, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	h.T.Helper()
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = version, id, pid, epoch, commit
	er := h.Do(end).(*kmsg.EndTxnResponse)
	require.Zero(h.T, er.ErrorCode, "%v", kerr.ErrorForCode(er.ErrorCode))
	return er
}

// TestProduceVerification: KIP-890 part 1 through a node's handlers. A
// transactional batch is appended only on a partition the producer added
// to its transaction; one it did not add, or one that arrives after its
// transaction ended, is refused with Kafka's code and appends nothing;
// without a reachable coordinator the answer is retriable
// (NOT_ENOUGH_REPLICAS); and once a transaction is ongoing on the
// partition its later batches are not verified again.
func TestProduceVerification(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 2, nil)
	do := func(r kmsg.Request) kmsg.Response { return h.Do(r) }
	verifyRequests := func() float64 {
		n, _ := h.Metrics.Value(metrics.Requests, "AddPartitionsToTxn")
		return n
	}
	txnBatch := func(pid int64, epoch int16, seq int32, values ...string) []byte {
		return h.Batch([]record.BuilderOption{record.WithProducer(pid, epoch, seq), record.WithTransactional()}, values...)
	}

	// No __transaction_state yet: the coordinator cannot be asked, a
	// retriable error, nothing appended.
	got := verifiedProduce(t, do, txnBatch(7, 0, 0, "early"), "v", "t", 0, 9)
	require.Equal(t, kerr.NotEnoughReplicas.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Contains(t, *got.ErrorMessage, "COORDINATOR_NOT_AVAILABLE")
	require.Equal(t, int64(0), h.listOffset("t", 0, -1))

	h.findTxnCoordinator("v")
	init := h.initTxn("v", 60_000)
	require.Zero(t, init.ErrorCode)
	pid, epoch := init.ProducerID, init.ProducerEpoch

	// Not added: INVALID_TXN_STATE before Produce v11, TRANSACTION_ABORTABLE
	// from v11 (KIP-890's new code); nothing appended.
	got = verifiedProduce(t, do, txnBatch(pid, epoch, 0, "stray"), "v", "t", 0, 9)
	require.Equal(t, kerr.InvalidTxnState.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	got = verifiedProduce(t, do, txnBatch(pid, epoch, 0, "stray"), "v", "t", 0, 11)
	require.Equal(t, kerr.TransactionAbortable.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, int64(0), h.listOffset("t", 0, -1))
	failures, _ := h.Metrics.Value(metrics.TxnVerificationFailures)
	require.Equal(t, float64(2), failures, "the two answers that said no")

	// Added: accepted. The coordinator was asked once; the transaction's
	// later batches on the partition are not verified again.
	h.addPartitions("v", pid, epoch, "t", 0)
	before := verifyRequests()
	got = verifiedProduce(t, do, txnBatch(pid, epoch, 0, "a", "b"), "v", "t", 0, 9)
	require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, before+1, verifyRequests(), "the first batch is verified")
	for seq := int32(2); seq < 6; seq++ {
		got = verifiedProduce(t, do, txnBatch(pid, epoch, seq, "c"), "v", "t", 0, 9)
		require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	}
	require.Equal(t, before+1, verifyRequests(), "later batches are not")

	// The other partition was not added: refused, in a request whose
	// added partition is appended.
	req := servertest.ProduceRequest("t", 1, txnBatch(pid, epoch, 0, "stray"))
	req.TransactionID = kmsg.StringPtr("v")
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, kmsg.ProduceRequestTopicPartition{Partition: 0, Records: txnBatch(pid, epoch, 6, "d")})
	parts := h.Do(req).(*kmsg.ProduceResponse).Topics[0].Partitions
	require.Equal(t, kerr.InvalidTxnState.Code, parts[0].ErrorCode, "t-1: %v", kerr.ErrorForCode(parts[0].ErrorCode))
	require.Zero(t, parts[1].ErrorCode, "t-0: %v", kerr.ErrorForCode(parts[1].ErrorCode))
	require.Equal(t, int64(0), h.listOffset("t", 1, -1))

	// Commit with EndTxn v5 (KIP-890 part 2: the epoch bumps). A late
	// batch of the finished transaction is refused: its epoch is fenced.
	er := h.endTxnAt(5, "v", pid, epoch, true)
	h.RunUntil("the markers written", func() bool { return h.describeTxn("v").State == "CompleteCommit" })
	end0 := h.listOffset("t", 0, -1)
	got = verifiedProduce(t, do, txnBatch(pid, epoch, 7, "late"), "v", "t", 0, 9)
	require.Equal(t, kerr.InvalidProducerEpoch.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	// The new epoch may not write either before it adds the partition.
	got = verifiedProduce(t, do, txnBatch(pid, er.ProducerEpoch, 0, "next"), "v", "t", 0, 9)
	require.Equal(t, kerr.InvalidTxnState.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, end0, h.listOffset("t", 0, -1))

	// Transactions v1 (EndTxn v4, no bump): the epoch stays, so it is the
	// coordinator that refuses the finished transaction's late batch.
	h.findTxnCoordinator("w")
	w := h.initTxn("w", 60_000)
	require.Zero(t, w.ErrorCode)
	h.addPartitions("w", w.ProducerID, w.ProducerEpoch, "t", 1)
	got = verifiedProduce(t, do, txnBatch(w.ProducerID, w.ProducerEpoch, 0, "w0"), "w", "t", 1, 9)
	require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	h.endTxnAt(4, "w", w.ProducerID, w.ProducerEpoch, false)
	h.RunUntil("the markers written", func() bool { return h.describeTxn("w").State == "CompleteAbort" })
	end1 := h.listOffset("t", 1, -1)
	got = verifiedProduce(t, do, txnBatch(w.ProducerID, w.ProducerEpoch, 1, "w1"), "w", "t", 1, 9)
	require.Equal(t, kerr.InvalidTxnState.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, end1, h.listOffset("t", 1, -1))
	p, values := fetchCommittedAt(h, 11, "t", 0)
	require.Zero(t, p.ErrorCode)
	require.Equal(t, []string{"a", "b", "c", "c", "c", "c", "d"}, values, "v's committed transaction, nothing refused")

	// A transactional id the coordinator does not know.
	got = verifiedProduce(t, do, txnBatch(pid+100, 0, 0, "x"), "nobody", "t", 1, 9)
	require.Equal(t, kerr.InvalidProducerIDMapping.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
}

// TestProduceVerificationCoordinatorDown: three nodes; the partition's
// leader is not the coordinator of the producer's id. While the leader
// cannot reach the coordinator its verification cannot be answered: the
// batch gets a retriable error and is not appended. Once the coordinator
// is killed and another broker coordinates the id (from the replicated
// __transaction_state) the same batch is verified and appended.
func TestProduceVerificationCoordinatorDown(t *testing.T) {
	x := servertest.StartCluster(t, 21, 3, func(c *server.Config) {
		c.Quorum.Controller.MaxReplicationFactor = 3
		c.BrokerListener.Txns.StatePartitions = 1
	})
	x.CreateTopic(1, "t", 3, 1, nil) // one replica: the cuts below touch only the verification
	do := func(node int, req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := x.Do(node, req)
		require.NoError(t, err)
		return resp
	}
	retriable := func(code int16) bool {
		return code == kerr.CoordinatorLoadInProgress.Code || code == kerr.NotCoordinator.Code || code == kerr.CoordinatorNotAvailable.Code
	}
	find := func(via int) int {
		t.Helper()
		var c kmsg.FindCoordinatorResponseCoordinator
		x.RunUntil("the transaction coordinator", func() bool {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.Version, req.CoordinatorType, req.CoordinatorKeys = 4, 1, []string{"tx"}
			c = do(via, req).(*kmsg.FindCoordinatorResponse).Coordinators[0]
			return c.ErrorCode == 0 && x.Servers[c.NodeID-1] != nil
		})
		return int(c.NodeID)
	}
	coord := find(1)
	var init *kmsg.InitProducerIDResponse
	x.RunUntil("InitProducerId", func() bool {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = 5, kmsg.StringPtr("tx"), 60_000, -1, -1
		init = do(coord, req).(*kmsg.InitProducerIDResponse)
		return !retriable(init.ErrorCode)
	})
	require.Zero(t, init.ErrorCode, "%v", kerr.ErrorForCode(init.ErrorCode))
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, "tx", init.ProducerID, init.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0, 1, 2}}}
	require.Zero(t, do(coord, add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode)
	// The coordinator as every broker's image has it (the leadership of
	// __transaction_state may have moved since the requests above; the
	// added partition went with its replicated records).
	imageLeader := func(i int) int32 {
		ti, ok := x.Servers[i-1].Image().TopicByName(broker.TxnStateTopic)
		if !ok {
			return -1
		}
		p, _ := ti.Partition(0)
		return p.Leader
	}
	x.RunUntil("one coordinator in every image", func() bool {
		l := imageLeader(1)
		coord = int(l)
		return l > 0 && imageLeader(2) == l && imageLeader(3) == l && x.LeaderOf(broker.TxnStateTopic, 0) == coord
	})

	// A partition led by another broker than the coordinator.
	partition, leader := int32(-1), 0
	for p := int32(0); p < 3; p++ {
		if l := x.LeaderOf("t", p); l != coord {
			partition, leader = p, l
			break
		}
	}
	require.GreaterOrEqual(t, partition, int32(0), "every partition led by the coordinator")
	b := record.NewBuilder(record.WithProducer(init.ProducerID, init.ProducerEpoch, 0), record.WithTransactional())
	b.Append(x.ClientEnv().Now().UnixMilli(), nil, []byte("v0"))
	batch, err := b.AppendTo(nil)
	require.NoError(t, err)
	send := func() kmsg.ProduceResponseTopicPartition {
		t.Helper()
		// The payload is written in place by an append: send a copy.
		return verifiedProduce(t, func(r kmsg.Request) kmsg.Response { return do(leader, r) }, append([]byte(nil), batch...), "tx", "t", partition, 9)
	}

	// Cut the leader off the coordinator: the question cannot be asked.
	cut := x.Sim.Network().Partition([]string{"n" + strconv.Itoa(leader)}, []string{"n" + strconv.Itoa(coord)})
	got := send()
	require.Equal(t, kerr.NotEnoughReplicas.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Contains(t, *got.ErrorMessage, "Unable to verify")
	require.Zero(t, x.Partition(leader, "t", partition).LogEndOffset(), "nothing appended")
	cut.Heal()

	// Kill the coordinator: the broker that takes its partition over
	// answers from the replicated __transaction_state, and the retried
	// batch is verified and appended once.
	x.Kill(coord)
	x.RunUntil("verified by the new coordinator", func() bool {
		got = send()
		require.True(t, got.ErrorCode == 0 || got.ErrorCode == kerr.NotEnoughReplicas.Code, "%v", kerr.ErrorForCode(got.ErrorCode))
		return got.ErrorCode == 0
	})
	require.Zero(t, got.BaseOffset)
	require.Equal(t, int64(1), x.Partition(leader, "t", partition).LogEndOffset())
	require.NotEqual(t, coord, find(leader))
}

// TestTxnOffsetCommitVerification: the group coordinator verifies a
// TxnOffsetCommit's transactional batch as a partition leader verifies a
// produce (Kafka's coordinator does): without AddOffsetsToTxn the offsets
// are refused and nothing is pending; after it they are written.
func TestTxnOffsetCommitVerification(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 2, nil)
	h.findTxnCoordinator("tx")
	h.groupCoordinatorReady("g")
	init := h.initTxn("tx", 60_000)
	require.Zero(t, init.ErrorCode)
	pid, epoch := init.ProducerID, init.ProducerEpoch

	// The producer never added the group's offsets partition:
	// TRANSACTION_ABORTABLE for v4 clients, INVALID_TXN_STATE before.
	require.Equal(t, []int16{kerr.TransactionAbortable.Code, kerr.TransactionAbortable.Code}, h.txnOffsetCommit("tx", "g", pid, epoch, 5, 7))
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = 3, "tx", "g", pid, epoch
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}}}
	require.Equal(t, kerr.InvalidTxnState.Code, h.Do(req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	_, codes := offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, []int16{0, 0}, codes, "nothing pending")

	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = 4, "tx", pid, epoch, "g"
	require.Zero(t, h.Do(add).(*kmsg.AddOffsetsToTxnResponse).ErrorCode)
	require.Equal(t, []int16{0, 0}, h.txnOffsetCommit("tx", "g", pid, epoch, 5, 7))
	require.Equal(t, []int16{0, 0}, h.txnOffsetCommit("tx", "g", pid, epoch, 6, 8), "the transaction is ongoing there: no second verification")
	require.Zero(t, h.endTxn("tx", pid, epoch, true).ErrorCode)
	h.RunUntil("the offsets committed", func() bool {
		offs, codes := offsetsOf(h.fetchOffsets("g", true))
		return codes[0] == 0 && offs[0] == 6 && offs[1] == 8
	})
	// A late TxnOffsetCommit of the finished transaction (its epoch was
	// bumped by EndTxn v5) is refused.
	codes = h.txnOffsetCommit("tx", "g", pid, epoch, 9, 9)
	require.Equal(t, []int16{kerr.InvalidProducerEpoch.Code, kerr.InvalidProducerEpoch.Code}, codes, "%v", kerr.ErrorForCode(codes[0]))
}
