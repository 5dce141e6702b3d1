package broker_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/server"
)

// verifiedProduce sends a transactional batch of id's producer to
// topic-partition at Produce version and returns the partition's answer.
func verifiedProduce(t *testing.T, do func(kmsg.Request) kmsg.Response, batch []byte, id, topic string, partition int32, version int16) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	return do(txnProduceRequest(version, id, topic, partition, batch)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

func (h *simServer) addPartitions(id string, pid int64, epoch int16, topic string, partitions ...int32) {
	h.T.Helper()
	for _, rp := range h.Do(addPartitionsRequest(id, pid, epoch, topic, partitions...)).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions {
		require.Zero(h.T, rp.ErrorCode, "%s-%d: %v", topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
	}
}

func (h *simServer) endTxnAt(version int16, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	h.T.Helper()
	er := h.Do(endTxnRequest(version, id, pid, epoch, commit)).(*kmsg.EndTxnResponse)
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

	// No __transaction_state yet: the coordinator cannot be asked, a
	// retriable error, nothing appended.
	got := verifiedProduce(t, do, h.txnBatch(7, 0, 0, "early"), "v", "t", 0, 9)
	require.Equal(t, kerr.NotEnoughReplicas.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Contains(t, *got.ErrorMessage, "COORDINATOR_NOT_AVAILABLE")
	require.Equal(t, int64(0), h.listOffset("t", 0, -1))

	init := h.newProducer("v")
	pid, epoch := init.ProducerID, init.ProducerEpoch

	// Not added: INVALID_TXN_STATE before Produce v11, TRANSACTION_ABORTABLE
	// from v11 (KIP-890's new code); nothing appended.
	got = verifiedProduce(t, do, h.txnBatch(pid, epoch, 0, "stray"), "v", "t", 0, 9)
	require.Equal(t, kerr.InvalidTxnState.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	got = verifiedProduce(t, do, h.txnBatch(pid, epoch, 0, "stray"), "v", "t", 0, 11)
	require.Equal(t, kerr.TransactionAbortable.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, int64(0), h.listOffset("t", 0, -1))
	failures, _ := h.Metrics.Value(metrics.TxnVerificationFailures)
	require.Equal(t, float64(2), failures, "the two answers that said no")

	// Added: accepted. The coordinator was asked once; the transaction's
	// later batches on the partition are not verified again.
	h.addPartitions("v", pid, epoch, "t", 0)
	before := verifyRequests()
	got = verifiedProduce(t, do, h.txnBatch(pid, epoch, 0, "a", "b"), "v", "t", 0, 9)
	require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, before+1, verifyRequests(), "the first batch is verified")
	for seq := int32(2); seq < 6; seq++ {
		got = verifiedProduce(t, do, h.txnBatch(pid, epoch, seq, "c"), "v", "t", 0, 9)
		require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	}
	require.Equal(t, before+1, verifyRequests(), "later batches are not")

	// The other partition was not added: refused, in a request whose
	// added partition is appended.
	req := txnProduceRequest(9, "v", "t", 1, h.txnBatch(pid, epoch, 0, "stray"))
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, kmsg.ProduceRequestTopicPartition{Partition: 0, Records: h.txnBatch(pid, epoch, 6, "d")})
	parts := h.Do(req).(*kmsg.ProduceResponse).Topics[0].Partitions
	require.Equal(t, kerr.InvalidTxnState.Code, parts[0].ErrorCode, "t-1: %v", kerr.ErrorForCode(parts[0].ErrorCode))
	require.Zero(t, parts[1].ErrorCode, "t-0: %v", kerr.ErrorForCode(parts[1].ErrorCode))
	require.Equal(t, int64(0), h.listOffset("t", 1, -1))

	// Commit with EndTxn v5 (KIP-890 part 2: the epoch bumps). A late
	// batch of the finished transaction is refused: its epoch is fenced.
	er := h.endTxnAt(5, "v", pid, epoch, true)
	h.RunUntil("the markers written", func() bool { return h.describeTxn("v").State == "CompleteCommit" })
	end0 := h.listOffset("t", 0, -1)
	got = verifiedProduce(t, do, h.txnBatch(pid, epoch, 7, "late"), "v", "t", 0, 9)
	require.Equal(t, kerr.InvalidProducerEpoch.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	// The new epoch may not write either before it adds the partition.
	got = verifiedProduce(t, do, h.txnBatch(pid, er.ProducerEpoch, 0, "next"), "v", "t", 0, 9)
	require.Equal(t, kerr.InvalidTxnState.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, end0, h.listOffset("t", 0, -1))

	// Transactions v1 (EndTxn v4, no bump): the epoch stays, so it is the
	// coordinator that refuses the finished transaction's late batch.
	w := h.newProducer("w")
	h.addPartitions("w", w.ProducerID, w.ProducerEpoch, "t", 1)
	got = verifiedProduce(t, do, h.txnBatch(w.ProducerID, w.ProducerEpoch, 0, "w0"), "w", "t", 1, 9)
	require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	h.endTxnAt(4, "w", w.ProducerID, w.ProducerEpoch, false)
	h.RunUntil("the markers written", func() bool { return h.describeTxn("w").State == "CompleteAbort" })
	end1 := h.listOffset("t", 1, -1)
	got = verifiedProduce(t, do, h.txnBatch(w.ProducerID, w.ProducerEpoch, 1, "w1"), "w", "t", 1, 9)
	require.Equal(t, kerr.InvalidTxnState.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, end1, h.listOffset("t", 1, -1))
	p, values := fetchCommittedAt(h, 11, "t", 0)
	require.Zero(t, p.ErrorCode)
	require.Equal(t, []string{"a", "b", "c", "c", "c", "c", "d"}, values, "v's committed transaction, nothing refused")

	// A transactional id the coordinator does not know.
	got = verifiedProduce(t, do, h.txnBatch(pid+100, 0, 0, "x"), "nobody", "t", 1, 9)
	require.Equal(t, kerr.InvalidProducerIDMapping.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
}

// TestProduceVerificationCoordinatorDown: three nodes; the partition's
// leader is not the coordinator of the producer's id. While the leader
// cannot reach the coordinator its verification cannot be answered: the
// batch gets a retriable error and is not appended. Once the coordinator
// is killed and another broker coordinates the id (from the replicated
// __transaction_state) the same batch is verified and appended.
func TestProduceVerificationCoordinatorDown(t *testing.T) {
	x := newSimCluster(t, 21, 3, func(c *server.Config) { c.BrokerListener.Txns.StatePartitions = 1 })
	x.CreateTopic(1, "t", 3, 1, nil) // one replica: the cuts below touch only the verification
	coord := x.txnCoordinator(1, "tx")
	init := x.initTxn(coord, "tx")
	x.addPartitions(coord, "tx", init, "t", 0, 1, 2)
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
	partition, leader := x.partitionNotLedBy(coord, "t", 3)
	batch := x.batch([]record.BuilderOption{record.WithProducer(init.ProducerID, init.ProducerEpoch, 0), record.WithTransactional()}, "v0")
	send := func() kmsg.ProduceResponseTopicPartition {
		t.Helper()
		// The payload is written in place by an append: send a copy.
		return verifiedProduce(t, func(r kmsg.Request) kmsg.Response { return x.do(leader, r) }, append([]byte(nil), batch...), "tx", "t", partition, 9)
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
	require.NotEqual(t, coord, x.txnCoordinator(leader, "tx"))
}

// TestTxnOffsetCommitVerification: the group coordinator verifies a
// TxnOffsetCommit's transactional batch as a partition leader verifies a
// produce (Kafka's coordinator does): without AddOffsetsToTxn the offsets
// are refused and nothing is pending; after it they are written.
func TestTxnOffsetCommitVerification(t *testing.T) {
	h, pid, epoch := newTxnOffsetsServer(t)

	// The producer never added the group's offsets partition:
	// TRANSACTION_ABORTABLE for v4 clients, INVALID_TXN_STATE before.
	require.Equal(t, []int16{kerr.TransactionAbortable.Code, kerr.TransactionAbortable.Code}, h.txnOffsetCommit("tx", "g", pid, epoch, 5, 7))
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = 3, "tx", "g", pid, epoch
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}}}
	require.Equal(t, kerr.InvalidTxnState.Code, h.Do(req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	_, codes := offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, []int16{0, 0}, codes, "nothing pending")

	require.Zero(t, h.Do(addOffsetsRequest("tx", pid, epoch, "g")).(*kmsg.AddOffsetsToTxnResponse).ErrorCode)
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

// finalizedTxnVersion is the transaction.version an ApiVersions v3 answer
// finalizes, -1 if it lists none.
func finalizedTxnVersion(h *simServer) int16 {
	h.T.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "test", "1"
	resp := h.Do(req).(*kmsg.ApiVersionsResponse)
	require.Zero(h.T, resp.ErrorCode)
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			require.Equal(h.T, f.MinVersionLevel, f.MaxVersionLevel)
			require.GreaterOrEqual(h.T, resp.FinalizedFeaturesEpoch, int64(0))
			return f.MaxVersionLevel
		}
	}
	return -1
}

// txnPartitionsOf lists the partitions DescribeTransactions names in id's
// transaction, as "topic-partition".
func txnPartitionsOf(h *simServer, id string) []string {
	h.T.Helper()
	var out []string
	for _, t := range h.describeTxn(id).Topics {
		for _, p := range t.Partitions {
			out = append(out, t.Topic+"-"+strconv.Itoa(int(p)))
		}
	}
	return out
}

// TestImplicitAdds: KIP-890 part 2's implicit adds through a node's
// handlers. With transaction.version 2 finalized (listed in ApiVersions),
// a Produce v12 of a producer that never sent
// AddPartitionsToTxn has the partition leader add the partition to the
// transaction, and a TxnOffsetCommit v5 without AddOffsetsToTxn has the
// group coordinator add the group's offsets partition; EndTxn v5 commits
// both. Older versions are still only verified, a late batch of the
// finished transaction is fenced rather than added to a new one, and at
// transaction.version 1 nothing is added implicitly.
func TestImplicitAdds(t *testing.T) {
	h := newSimServer(t, func(c *server.Config) { c.BrokerListener.Txns.TransactionVersion = 2 })
	require.Equal(t, int16(2), finalizedTxnVersion(h))
	h.CreateTopic("t", 2, nil)
	do := func(r kmsg.Request) kmsg.Response { return h.Do(r) }
	init := h.newProducer("i")
	h.groupCoordinatorReady("g")
	pid, epoch := init.ProducerID, init.ProducerEpoch

	// Produce v11 does not add: verified, and refused.
	got := verifiedProduce(t, do, h.txnBatch(pid, epoch, 0, "v11"), "i", "t", 1, 11)
	require.Equal(t, kerr.TransactionAbortable.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, int64(0), h.listOffset("t", 1, -1))

	// Produce v12 adds t-0, TxnOffsetCommit v5 the group's partition.
	got = verifiedProduce(t, do, h.txnBatch(pid, epoch, 0, "a", "b"), "i", "t", 0, 12)
	require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, "Ongoing", h.describeTxn("i").State)
	require.Equal(t, []string{"t-0"}, txnPartitionsOf(h, "i"))
	require.Equal(t, []int16{0, 0}, h.txnOffsetCommitAt(5, "i", "g", pid, epoch, 2, 0))
	parts := txnPartitionsOf(h, "i")
	require.Len(t, parts, 2, "t-0 and the group's __consumer_offsets partition: %v", parts)
	require.Contains(t, parts, "t-0")
	require.True(t, slices.ContainsFunc(parts, func(p string) bool { return strings.HasPrefix(p, broker.OffsetsTopic+"-") }), "%v", parts)
	_, codes := offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, []int16{kerr.UnstableOffsetCommit.Code, kerr.UnstableOffsetCommit.Code}, codes, "pending until the marker")

	er := h.endTxnAt(5, "i", pid, epoch, true)
	require.Equal(t, epoch+1, er.ProducerEpoch, "EndTxn v5 bumps the epoch")
	h.RunUntil("the markers written", func() bool { return h.describeTxn("i").State == "CompleteCommit" })
	p, values := fetchCommittedAt(h, 11, "t", 0)
	require.Zero(t, p.ErrorCode)
	require.Equal(t, []string{"a", "b"}, values)
	h.RunUntil("the offsets committed", func() bool {
		offs, codes := offsetsOf(h.fetchOffsets("g", true))
		return codes[0] == 0 && offs[0] == 2 && offs[1] == 0
	})

	// A late batch of the finished transaction, on a partition it never
	// wrote: its epoch is fenced, not added to a transaction of its own.
	end1 := h.listOffset("t", 1, -1)
	got = verifiedProduce(t, do, h.txnBatch(pid, epoch, 0, "late"), "i", "t", 1, 12)
	require.Equal(t, kerr.InvalidProducerEpoch.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, end1, h.listOffset("t", 1, -1))
	require.Equal(t, "CompleteCommit", h.describeTxn("i").State, "no transaction opened")
	// The bumped epoch's next transaction starts with its first produce.
	got = verifiedProduce(t, do, h.txnBatch(pid, er.ProducerEpoch, 0, "next"), "i", "t", 1, 12)
	require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, []string{"t-1"}, txnPartitionsOf(h, "i"))

	// The race behind KIP-890 part 2's per-epoch cache: the next
	// transaction's first batch on t-1 is sent as soon as EndTxn is
	// answered, while the marker of the transaction before is still on
	// its way to t-1. It must not join that transaction: aborted, it is
	// not read.
	ep := er.ProducerEpoch
	got = verifiedProduce(t, do, h.txnBatch(pid, ep, 1, "committed"), "i", "t", 1, 12)
	require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	er = h.endTxnAt(5, "i", pid, ep, true)
	got = verifiedProduce(t, do, h.txnBatch(pid, er.ProducerEpoch, 0, "aborted"), "i", "t", 1, 12)
	require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	h.endTxnAt(5, "i", pid, er.ProducerEpoch, false)
	h.RunUntil("the abort written", func() bool { return h.describeTxn("i").State == "CompleteAbort" })
	p, values = fetchCommittedIn(h, 11, "t", 1, 0)
	require.Zero(t, p.ErrorCode)
	require.Equal(t, []string{"next", "committed"}, values, "the aborted transaction's batch is not read")

	// transaction.version 1 (the default): finalized so, and a Produce v12 that added
	// nothing is refused as any unverified batch.
	h1 := newSimServer(t, nil)
	require.Equal(t, int16(1), finalizedTxnVersion(h1))
	h1.CreateTopic("t", 1, nil)
	j := h1.newProducer("j")
	got = verifiedProduce(t, func(r kmsg.Request) kmsg.Response { return h1.Do(r) }, h1.txnBatch(j.ProducerID, j.ProducerEpoch, 0, "x"), "j", "t", 0, 12)
	require.Equal(t, kerr.TransactionAbortable.Code, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, int64(0), h1.listOffset("t", 0, -1))

	// Partition verification off: the implicit add still happens (nobody
	// else would add the partition).
	h2 := newSimServer(t, func(c *server.Config) {
		c.BrokerListener.Txns.NoPartitionVerification, c.BrokerListener.Txns.TransactionVersion = true, 2
	})
	h2.CreateTopic("t", 1, nil)
	k := h2.newProducer("k")
	got = verifiedProduce(t, func(r kmsg.Request) kmsg.Response { return h2.Do(r) }, h2.txnBatch(k.ProducerID, k.ProducerEpoch, 0, "y"), "k", "t", 0, 12)
	require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))
	require.Equal(t, []string{"t-0"}, txnPartitionsOf(h2, "k"))
}

// TestImplicitAddRacesTheMarker: KIP-890 part 2 on three nodes, the
// partition led by another broker than the transaction coordinator. The
// producer commits a transaction with a batch on the partition, and the
// coordinator's marker to the partition's leader is held up (the link
// clogged); meanwhile the producer, answered, sends its next transaction's
// first batch (the bumped epoch) to the partition. That batch must not
// join the transaction still open there: the next transaction aborts, and
// read_committed reads the first transaction's record alone. (Before the
// partition's cache of the coordinator's answer compared the epoch, the
// batch skipped verification, went into the open transaction and was
// committed with it.)
func TestImplicitAddRacesTheMarker(t *testing.T) {
	x := newSimCluster(t, 23, 3, func(c *server.Config) {
		// One replica of everything: the clog below holds no
		// replication, only the coordinator's requests and answers.
		c.BrokerListener.Txns.StatePartitions, c.BrokerListener.Txns.StateReplicationFactor = 1, 1
		c.BrokerListener.Txns.TransactionVersion = 2
	})
	x.CreateTopic(1, "t", 3, 1, nil)
	coordOf := func() int {
		ti, ok := x.Servers[0].Image().TopicByName(broker.TxnStateTopic)
		if !ok {
			return -1
		}
		p, _ := ti.Partition(0)
		return int(p.Leader)
	}
	x.RunUntil("a transaction coordinator", func() bool {
		found := x.do(1, txnCoordinatorRequest("race")).(*kmsg.FindCoordinatorResponse).Coordinators[0] // creates __transaction_state
		c := coordOf()
		return found.ErrorCode == 0 && c > 0 && x.LeaderOf(broker.TxnStateTopic, 0) == c &&
			x.Servers[1].Image() != nil && x.Servers[2].Image() != nil
	})
	coord := coordOf()
	init := x.initTxn(coord, "race")
	partition, leader := x.partitionNotLedBy(coord, "t", 3)
	batch := func(epoch int16, seq int32, v string) []byte {
		return x.batch([]record.BuilderOption{record.WithProducer(init.ProducerID, epoch, seq), record.WithTransactional()}, v)
	}
	// produce retries a retriable answer, as a client does, until the
	// batch is appended.
	produce := func(epoch int16, seq int32, v string) {
		t.Helper()
		x.RunUntil("produced "+v, func() bool {
			got := verifiedProduce(t, func(r kmsg.Request) kmsg.Response { return x.do(leader, r) }, batch(epoch, seq, v), "race", "t", partition, 12)
			require.True(t, got.ErrorCode == 0 || got.ErrorCode == kerr.NotEnoughReplicas.Code, "%v", kerr.ErrorForCode(got.ErrorCode))
			return got.ErrorCode == 0
		})
	}
	end := func(epoch int16, commit bool) int16 {
		t.Helper()
		er := x.do(coord, endTxnRequest(5, "race", init.ProducerID, epoch, commit)).(*kmsg.EndTxnResponse)
		require.Zero(t, er.ErrorCode, "%v", kerr.ErrorForCode(er.ErrorCode))
		return er.ProducerEpoch
	}
	state := func() string {
		return x.do(coord, describeTxnRequest("race")).(*kmsg.DescribeTransactionsResponse).TransactionStates[0].State
	}

	produce(init.ProducerEpoch, 0, "first")
	// Hold the coordinator's traffic to the leader (the marker, and the
	// answers to the leader's adds) for longer than the broker retries an
	// add.
	x.Sim.Network().ClogLink("n"+strconv.Itoa(coord), "n"+strconv.Itoa(leader), 300*time.Millisecond)
	next := end(init.ProducerEpoch, true)
	require.Equal(t, init.ProducerEpoch+1, next)
	produce(next, 0, "second")
	x.RunUntil("the first transaction complete", func() bool { return state() != "PrepareCommit" })
	end(next, false)
	x.RunUntil("the second transaction aborted", func() bool { return state() == "CompleteAbort" })

	req := readCommittedRequest(11, "t", partition, 0)
	var values []string
	x.RunUntil("the partition's last stable offset past the abort", func() bool {
		p := x.do(leader, req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		require.Zero(t, p.ErrorCode)
		values = committedValues(t, p)
		return p.LastStableOffset == p.HighWatermark && p.HighWatermark >= 4
	})
	require.Equal(t, []string{"first"}, values, "the second transaction's batch was aborted with it")
}

// TestImplicitAddAskedOnce: a producer at transaction.version 2 sends
// three batches of its new transaction to a partition at once, before
// any is answered (kgo keeps several produce requests in flight). The
// partition's verification is asked about once: the later batches wait
// for that answer and go after it, so all three are appended in order
// and none is refused for overtaking the first (which, retriable, had
// kgo wait out a metadata refresh of up to 5 s before it sent it again).
func TestImplicitAddAskedOnce(t *testing.T) {
	h := newSimServer(t, func(c *server.Config) { c.BrokerListener.Txns.TransactionVersion = 2 })
	h.CreateTopic("t", 1, nil)
	init := h.newProducer("once")
	asks := func() float64 {
		n, _ := h.Metrics.Value(metrics.Requests, "AddPartitionsToTxn")
		return n
	}
	before := asks()
	codes := make([]int16, 3)
	answered := 0
	for seq := int32(0); seq < 3; seq++ {
		req := txnProduceRequest(12, "once", "t", 0, h.txnBatch(init.ProducerID, init.ProducerEpoch, seq, "v"+strconv.Itoa(int(seq))))
		h.Send(req, func(r kmsg.Response, err error) {
			require.NoError(t, err)
			codes[seq] = r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
			answered++
		})
	}
	h.RunUntil("the three produces answered", func() bool { return answered == 3 })
	require.Equal(t, []int16{0, 0, 0}, codes, "%v", codes)
	require.Equal(t, before+1, asks(), "one ask for the three batches")
	h.endTxnAt(5, "once", init.ProducerID, init.ProducerEpoch, true)
	h.RunUntil("the markers written", func() bool { return h.describeTxn("once").State == "CompleteCommit" })
	_, values := fetchCommittedAt(h, 11, "t", 0)
	require.Equal(t, []string{"v0", "v1", "v2"}, values)
}

// TestPipelinedProduceKeepsOrderPastVerification: the shape of franz-go's
// TestTxnEtl failure (issue 22, finding 10). A transactional producer
// keeps several produce requests in flight on its connection (kgo up to
// five) and a request carries batches of several partitions. Request 2
// holds the next batch of t-0, where the transaction is ongoing, and
// the first batch of t-1, just added to the transaction, which the
// coordinator must verify (KIP-890 part 1); request 3, sent before
// request 2 is answered, holds t-0's batch after that. The broker must
// not append request 3's t-0 batch before request 2's while request 2
// waits for the coordinator: it used to hold all of request 2 for the
// answer and let request 3 through, OUT_OF_ORDER_SEQUENCE_NUMBER, fatal
// for kgo's producer.
func TestPipelinedProduceKeepsOrderPastVerification(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 2, nil)
	init := h.newProducer("etl")
	pid, epoch := init.ProducerID, init.ProducerEpoch
	txnBatch := func(seq int32, values ...string) []byte { return h.txnBatch(pid, epoch, seq, values...) }
	h.addPartitions("etl", pid, epoch, "t", 0)
	got := verifiedProduce(t, func(r kmsg.Request) kmsg.Response { return h.Do(r) }, txnBatch(0, "a"), "etl", "t", 0, 9)
	require.Zero(t, got.ErrorCode, "%v", kerr.ErrorForCode(got.ErrorCode))

	h.addPartitions("etl", pid, epoch, "t", 1)
	req2 := txnProduceRequest(9, "etl", "t", 0, txnBatch(1, "b"))
	req2.Topics[0].Partitions = append(req2.Topics[0].Partitions, kmsg.ProduceRequestTopicPartition{Partition: 1, Records: txnBatch(0, "x")})
	req3 := txnProduceRequest(9, "etl", "t", 0, txnBatch(2, "c"))
	answers := h.sendPipelined(2, req2, req3)
	require.Equal(t, []string{"request 2 t-0: <nil>", "request 2 t-1: <nil>", "request 3 t-0: <nil>"}, answers)

	h.endTxnAt(3, "etl", pid, epoch, true)
	h.RunUntil("the markers written", func() bool { return h.describeTxn("etl").State == "CompleteCommit" })
	_, values := fetchCommittedIn(h, 11, "t", 0, 0)
	require.Equal(t, []string{"a", "b", "c"}, values, "t-0 in sequence order")
	_, values = fetchCommittedIn(h, 11, "t", 1, 0)
	require.Equal(t, []string{"x"}, values)
}

// TestImplicitAddWaitsForItsOwnAsk: a pipelined produce at
// transaction.version 2 that both waits on an earlier request's
// implicit add (its t-0 batch) and asks its own (its t-1 batch, the
// partition's first of the transaction) appends t-1 only once the
// coordinator added t-1. It used to append the whole request as soon as
// the earlier add answered, before its own ask (retried behind the first
// add's write with CONCURRENT_TRANSACTIONS) was answered: t-1's batch
// joined no transaction the coordinator knew, the commit wrote no marker
// there, and the committed record was never readable (the sim's txn seed
// 4 with pipelined ETL workers, (n) lost write).
func TestImplicitAddWaitsForItsOwnAsk(t *testing.T) {
	h := newSimServer(t, func(c *server.Config) { c.BrokerListener.Txns.TransactionVersion = 2 })
	h.CreateTopic("t", 2, nil)
	init := h.newProducer("own")
	txnBatch := func(seq int32, values ...string) []byte {
		return h.txnBatch(init.ProducerID, init.ProducerEpoch, seq, values...)
	}
	req1 := txnProduceRequest(12, "own", "t", 0, txnBatch(0, "a"))
	req2 := txnProduceRequest(12, "own", "t", 0, txnBatch(1, "b"))
	req2.Topics[0].Partitions = append(req2.Topics[0].Partitions, kmsg.ProduceRequestTopicPartition{Partition: 1, Records: txnBatch(0, "x")})
	answers := h.sendPipelined(1, req1, req2)
	require.Equal(t, []string{"request 1 t-0: <nil>", "request 2 t-0: <nil>", "request 2 t-1: <nil>"}, answers)
	require.Equal(t, []string{"t-0", "t-1"}, txnPartitionsOf(h, "own"), "both partitions added before their batches were appended")

	h.endTxnAt(5, "own", init.ProducerID, init.ProducerEpoch, true)
	h.RunUntil("the markers written", func() bool { return h.describeTxn("own").State == "CompleteCommit" })
	_, values := fetchCommittedIn(h, 11, "t", 0, 0)
	require.Equal(t, []string{"a", "b"}, values)
	_, values = fetchCommittedIn(h, 11, "t", 1, 0)
	require.Equal(t, []string{"x"}, values, "t-1's record committed with the transaction")
}
