package broker

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/coord"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/replica"
	"github.com/strata-log/strata/core/txn"
)

// # Transaction verification (KIP-890 part 1)
//
// A partition leader receiving a transactional batch of a producer that has
// no transaction ongoing on the partition asks the transaction coordinator
// of the request's transactional id whether the producer added the
// partition to its transaction (AddPartitionsToTxn v5, the broker form with
// VerifyOnly, as Kafka's AddPartitionsToTxnManager sends it), and appends
// only if it did, so that a late or stray write can neither join a finished
// transaction nor open one the coordinator does not know (a hanging
// transaction, which holds the last stable offset and read_committed
// consumers forever). The partition hands out a guard before the question
// and accepts the batch only with the guard still current (core/producer
// verify.go): a marker arriving while the question is out spends it. Once
// the batch is appended the partition's producer state holds the ongoing
// transaction, which is the cache: later batches of the transaction skip
// verification until its marker. transaction.partition.verification.enable
// (TxnConfig.NoPartitionVerification) turns it off.
//
// Differences from Kafka: one request per produce request rather than one
// batched per coordinator with one in flight, and a coordinator that does
// not serve v4+ is not skipped (every Strata broker serves it).
//
// # Implicit adds (KIP-890 part 2)
//
// With transaction.version 2 finalized (TxnConfig.TransactionVersion), a
// client sends no AddPartitionsToTxn for its partitions nor
// AddOffsetsToTxn for its group: its Produce v12+ and TxnOffsetCommit v5+
// say so, and the partition leader or group coordinator asks the
// coordinator to add the partition (the same request without VerifyOnly,
// as Kafka's AddPartitionsToTxnManager sends for its addPartition
// operation) where it would otherwise verify. This happens whether or not
// verification is enabled: without it nobody would add the partition.
// The guard and the cache are the same: a partition the producer's
// transaction is ongoing on is not added again.

// addPartitionsToTxnVerifyVersion is the version sent: v5, as Kafka's
// brokers send (v4 added VerifyOnly, v5 TRANSACTION_ABORTABLE).
const addPartitionsToTxnVerifyVersion = 5

// verifyRequestTimeout bounds the wait for the coordinator's answer
// (Kafka's request.timeout.ms for inter-broker requests, 30 s); past it the
// partitions answer as if the connection failed.
const verifyRequestTimeout = 30 * time.Second

// produceAbortableVersion is the first Produce version whose clients take
// TRANSACTION_ABORTABLE (KIP-890, Produce v11); older ones get
// INVALID_TXN_STATE for it, as Kafka answers.
const produceAbortableVersion = 11

// produceImplicitAddVersion and txnOffsetCommitImplicitAddVersion are the
// first versions whose clients leave the adds to the broker under
// transaction.version 2 (KIP-890 part 2).
const (
	produceImplicitAddVersion         = 12
	txnOffsetCommitImplicitAddVersion = 5
)

// implicitAdds reports whether a request at version, whose API's clients
// leave the adds to the broker from version first, does so: only with
// transaction.version 2 finalized, since a client decides from it.
func (b *Broker) implicitAdds(version, first int16) bool {
	return version >= first && b.cfg.Txns.transactionVersion() >= 2
}

// txnVerification is one partition's share of a produce's verification.
type txnVerification struct {
	// v is the partition's guard (nil: none needed) and err why the batch
	// must not be appended (nil: it may, with v).
	v   *producer.Verification
	err error
}

// verifyTxnBatches starts the verification of a transactional produce
// request's batches (id is its transactional id, version its Produce
// version): parts[i] is the partition of payloads[i]. each(i, res) runs
// once per partition with its result, as soon as that partition's own
// verification is known, never later: at once for a partition that
// needs none (its producer's transaction is ongoing there, or the batch
// is not transactional), after the coordinator's answer for one asked
// about here, and after the answer of the ask it waits on for one whose
// verification another produce is asking about already (verifyWaiters).
//
// Per partition, not per request, because a producer keeps several
// requests in flight on its connection and the broker handles them as
// they come (pipelined, conn.go): a request that held all its batches
// for one partition's answer let the next request's batch of another
// partition, where the transaction was ongoing, be appended before its
// own: OUT_OF_ORDER_SEQUENCE_NUMBER, fatal for franz-go's producer
// (issue 22, its TestTxnEtl). And a batch must wait for its own
// partition's answer: a request that both waited on another's ask and
// asked its own once took the first answer for both and appended a
// batch the coordinator never added (txn seed 4). Kafka, which reads a
// connection's next request only once the previous one is answered,
// waits for the whole request; the order per partition is what a
// producer relies on.
func (b *Broker) verifyTxnBatches(id string, version int16, parts []*replica.Partition, payloads [][]byte, now time.Time, each func(int, txnVerification)) {
	add := b.implicitAdds(version, produceImplicitAddVersion)
	var ask []txn.TopicPartition
	var asked []int
	vs := make([]*producer.Verification, len(parts)) // the guards of the partitions asked about
	pid, epoch := int64(-1), int16(-1)
	for i, part := range parts {
		bt, err := record.ReadBatch(payloads[i], len(payloads[i])+1)
		if err != nil || !bt.Attributes().IsTransactional() || bt.ProducerID() < 0 {
			each(i, txnVerification{}) // not transactional, or left to the partition's validation
			continue
		}
		if pid < 0 {
			pid, epoch = bt.ProducerID(), bt.ProducerEpoch()
		}
		if bt.ProducerID() != pid || bt.ProducerEpoch() != epoch {
			// Kafka refuses a request of transactional batches of more
			// than one producer (InvalidPidMappingException).
			each(i, txnVerification{err: fmt.Errorf("%w: transactional batches of more than one producer in one request", kerr.InvalidProducerIDMapping)})
			continue
		}
		v, err := part.StartTxnVerification(pid, epoch, bt.BaseSequence(), add, now)
		switch {
		case err != nil:
			each(i, txnVerification{err: err})
		case v == nil:
			each(i, txnVerification{})
		case b.verifying[v] != nil:
			b.verifying[v].then = append(b.verifying[v].then, func(err *kerr.Error) {
				each(i, txnVerification{v: v, err: produceVerifyError(err, version)})
			})
		default:
			if b.verifying == nil {
				b.verifying = map[*producer.Verification]*verifyWaiters{}
			}
			b.verifying[v] = &verifyWaiters{}
			vs[i] = v
			ask = append(ask, txn.TopicPartition{Topic: part.Topic(), Partition: part.ID()})
			asked = append(asked, i)
		}
	}
	if len(ask) == 0 {
		return
	}
	b.askTxnVerification(id, pid, epoch, ask, add, func(errs []*kerr.Error) {
		// Each asked partition's batch, then the produces waiting behind
		// it in the order they came: the first batch of the transaction
		// on the partition is appended before the later ones are tried.
		for j, i := range asked {
			v := vs[i]
			w := b.verifying[v]
			delete(b.verifying, v)
			each(i, txnVerification{v: v, err: produceVerifyError(errs[j], version)})
			if w != nil {
				for _, f := range w.then {
					f(errs[j])
				}
			}
		}
	})
}

// verifyWaiters are the produces waiting on one verification's ask: a
// producer that sends several batches to a partition at once (kgo keeps
// up to five requests in flight) has each of them meet the same
// Verification (core/producer verify.go); rather than ask the coordinator
// once per batch, and have a later batch's answer arrive first and be
// refused (ErrVerificationPending: it must not overtake the first, and
// kgo waits out a metadata refresh on the retriable answer), the later
// ones take the first ask's answer, after it. Kafka's
// AddPartitionsToTxnManager keeps one request per transactional id for
// the same reason.
type verifyWaiters struct {
	then []func(*kerr.Error)
}

// Kafka's add.partitions.to.txn.retry.backoff.ms and
// add.partitions.to.txn.retry.backoff.max.ms: an implicit add that meets
// the producer's previous transaction still completing (its markers in
// flight: CONCURRENT_TRANSACTIONS, the common case right after an EndTxn)
// is retried by the broker every addRetryBackoff for up to addRetryMax
// before the produce is answered with a retriable error.
const (
	addRetryBackoff = 20 * time.Millisecond
	addRetryMax     = 100 * time.Millisecond
)

// askTxnVerification sends the coordinator of id an AddPartitionsToTxn
// for parts, with VerifyOnly unless add (an implicit add of KIP-890 part
// 2, retried while the coordinator answers CONCURRENT_TRANSACTIONS, for up
// to addRetryMax); done gets each partition's error as Kafka's
// AddPartitionsToTxnManager reports it to the produce path.
func (b *Broker) askTxnVerification(id string, pid int64, epoch int16, parts []txn.TopicPartition, add bool, done func([]*kerr.Error)) {
	if !add {
		b.sendTxnVerification(id, pid, epoch, parts, false, done)
		return
	}
	started := b.e.Monotonic()
	var try func()
	try = func() {
		b.sendTxnVerification(id, pid, epoch, parts, true, func(errs []*kerr.Error) {
			if slices.Contains(errs, kerr.ConcurrentTransactions) && b.e.Monotonic()-started+addRetryBackoff <= addRetryMax {
				b.e.AfterFunc(addRetryBackoff, try)
				return
			}
			done(errs)
		})
	}
	try()
}

// sendTxnVerification is one AddPartitionsToTxn of askTxnVerification.
func (b *Broker) sendTxnVerification(id string, pid int64, epoch int16, parts []txn.TopicPartition, add bool, done func([]*kerr.Error)) {
	all := func(err *kerr.Error) []*kerr.Error {
		errs := make([]*kerr.Error, len(parts))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	coordinator, ok := b.txnCoordinatorNode(id)
	if !ok {
		b.e.Post(func() { done(all(kerr.CoordinatorNotAvailable)) })
		return
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = addPartitionsToTxnVerifyVersion
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = id, pid, epoch, !add
	for topic, partitions := range txn.ByTopic(parts) {
		rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		rt.Topic, rt.Partitions = topic, partitions
		t.Topics = append(t.Topics, rt)
	}
	req.Transactions = append(req.Transactions, t)
	started := b.e.Monotonic()
	b.peers().ask(b.image().Broker, coordinator, req, verifyRequestTimeout, func(r kmsg.Response, timedOut bool) {
		var errs []*kerr.Error
		if timedOut {
			errs = all(kerr.NetworkException)
		} else {
			resp, _ := r.(*kmsg.AddPartitionsToTxnResponse)
			errs = verifyResults(resp, id, parts)
		}
		if m := b.metrics; m != nil {
			m.verifyTime.Observe(float64(b.e.Monotonic()-started) / float64(time.Millisecond))
			for _, err := range errs {
				if err != nil {
					m.verifyFailures.Inc()
				}
			}
		}
		done(errs)
	})
}

// txnCoordinatorNode is the broker leading id's __transaction_state
// partition in the image.
func (b *Broker) txnCoordinatorNode(id string) (int32, bool) {
	img := b.image()
	if img == nil {
		return 0, false
	}
	ti, ok := img.TopicByName(TxnStateTopic)
	if !ok || ti.NumPartitions() == 0 {
		return 0, false
	}
	p, ok := ti.Partition(coord.PartitionFor(id, int32(ti.NumPartitions())))
	if !ok || !p.HasLeader() {
		return 0, false
	}
	return p.Leader, true
}

// verifyResults reads the coordinator's answer for parts (Kafka's
// AddPartitionsToTxnHandler): no answer is NETWORK_EXCEPTION; a top-level
// error applies to every partition (CLUSTER_AUTHORIZATION_FAILED becoming
// INVALID_TXN_STATE, which the client must not see); PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH, which producers expect on produce; a partition
// the answer leaves out is NETWORK_EXCEPTION too (retried).
func verifyResults(resp *kmsg.AddPartitionsToTxnResponse, id string, parts []txn.TopicPartition) []*kerr.Error {
	errs := make([]*kerr.Error, len(parts))
	fill := func(err *kerr.Error) []*kerr.Error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if resp == nil {
		return fill(kerr.NetworkException)
	}
	if resp.ErrorCode != 0 {
		if resp.ErrorCode == kerr.ClusterAuthorizationFailed.Code {
			return fill(kerr.InvalidTxnState)
		}
		return fill(kerrOf(resp.ErrorCode))
	}
	fill(kerr.NetworkException)
	for _, t := range resp.Transactions {
		if t.TransactionalID != id {
			continue
		}
		for _, rt := range t.Topics {
			for _, rp := range rt.Partitions {
				for i, tp := range parts {
					if tp.Topic != rt.Topic || tp.Partition != rp.Partition {
						continue
					}
					errs[i] = nil
					if rp.ErrorCode != 0 {
						errs[i] = kerrOf(rp.ErrorCode)
					}
					if errs[i] == kerr.ProducerFenced {
						errs[i] = kerr.InvalidProducerEpoch
					}
				}
			}
		}
	}
	return errs
}

// kerrOf is code's kerr value (UNKNOWN_SERVER_ERROR for a code kerr does
// not know).
func kerrOf(code int16) *kerr.Error {
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e
	}
	return kerr.UnknownServerError
}

// produceVerifyError is the produce answer for a partition whose
// verification failed with err (Kafka's ReplicaManager.handleProduceAppend
// translation), nil for nil:
//
//   - TRANSACTION_ABORTABLE (the partition is not in the transaction) is
//     INVALID_TXN_STATE for Produce before v11, whose clients do not know
//     it (Kafka's defaultError operation);
//   - INVALID_TXN_STATE says the partition was not added;
//   - CONCURRENT_TRANSACTIONS, NETWORK_EXCEPTION,
//     COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE and
//     NOT_COORDINATOR become NOT_ENOUGH_REPLICAS: retriable for every
//     client, and unlike NOT_LEADER_OR_FOLLOWER no reason to refresh
//     metadata;
//   - any other error passes unchanged.
func produceVerifyError(err *kerr.Error, version int16) error {
	if err == nil {
		return nil
	}
	if err == kerr.TransactionAbortable && version < produceAbortableVersion {
		err = kerr.InvalidTxnState
	}
	switch err {
	case kerr.InvalidTxnState:
		return fmt.Errorf("%w: Partition was not added to the transaction", err)
	case kerr.ConcurrentTransactions, kerr.NetworkException, kerr.CoordinatorLoadInProgress,
		kerr.CoordinatorNotAvailable, kerr.NotCoordinator:
		return fmt.Errorf("%w: Unable to verify the partition has been added to the transaction. Underlying error: %s",
			kerr.NotEnoughReplicas, err.Message)
	}
	return fmt.Errorf("%w: the transaction coordinator refused the verification", err)
}
