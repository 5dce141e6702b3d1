package broker

import (
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/coord"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/txn"
)

// The transaction coordinator's requests: each finds the shard of its
// transactional id (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS otherwise) and answers once the shard has.

func codeOf(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}

// fencedCode is err's code for a request of version v of an API that
// learned PRODUCER_FENCED (KIP-588) at version since: older clients get
// INVALID_PRODUCER_EPOCH, which they handle the same way (Kafka's
// KafkaApis does this).
func fencedCode(err *kerr.Error, v, since int16) int16 {
	if err == kerr.ProducerFenced && v < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return codeOf(err)
}

// handleTransactionalInitProducerID is InitProducerId with a
// transactional id.
func handleTransactionalInitProducerID(b *Broker, r *request, req *kmsg.InitProducerIDRequest) {
	id := *req.TransactionalID
	if id == "" {
		r.respond(protocol.ErrorResponse(req, kerr.InvalidRequest, "A transactional id must not be empty."))
		return
	}
	sh, e := b.txnShardFor(id)
	if e != nil {
		r.respond(protocol.ErrorResponse(req, e, ""))
		return
	}
	expectedID, expectedEpoch := int64(-1), int16(-1)
	if req.Version >= 3 {
		expectedID, expectedEpoch = req.ProducerID, req.ProducerEpoch
	}
	sh.InitProducerID(id, req.TransactionTimeoutMillis, expectedID, expectedEpoch, func(pid int64, epoch int16, err *kerr.Error) {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = fencedCode(err, req.Version, 4), pid, epoch
		r.respond(resp)
	})
}

// handleAddPartitionsToTxn serves v0–v3 (one transaction, from producers)
// and v4+ (batched, from brokers; KIP-890 part 1's verifyOnly).
func handleAddPartitionsToTxn(b *Broker, r *request) {
	req := r.body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		var parts []txn.TopicPartition
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, txn.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
		answer := func(errs []*kerr.Error) {
			for i, tp := range parts {
				if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != tp.Topic {
					rt := kmsg.NewAddPartitionsToTxnResponseTopic()
					rt.Topic = tp.Topic
					resp.Topics = append(resp.Topics, rt)
				}
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = tp.Partition, fencedCode(errs[i], req.Version, 2)
				rt := &resp.Topics[len(resp.Topics)-1]
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.respond(resp)
		}
		if errs := topicsRefusedToTxn(b.topicAuth(r, kmsg.ACLOperationWrite), parts); errs != nil {
			answer(errs)
			return
		}
		b.addPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts, false, answer)
		return
	}
	pending := len(req.Transactions)
	resp.Transactions = make([]kmsg.AddPartitionsToTxnResponseTransaction, len(req.Transactions))
	if pending == 0 {
		r.respond(resp)
		return
	}
	for i, t := range req.Transactions {
		var parts []txn.TopicPartition
		for _, rt := range t.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, txn.TopicPartition{Topic: rt.Topic, Partition: p})
			}
		}
		b.addPartitions(t.TransactionalID, t.ProducerID, t.ProducerEpoch, parts, t.VerifyOnly, func(errs []*kerr.Error) {
			out := kmsg.NewAddPartitionsToTxnResponseTransaction()
			out.TransactionalID = t.TransactionalID
			for j, tp := range parts {
				if n := len(out.Topics); n == 0 || out.Topics[n-1].Topic != tp.Topic {
					ot := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
					ot.Topic = tp.Topic
					out.Topics = append(out.Topics, ot)
				}
				op := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				op.Partition, op.ErrorCode = tp.Partition, codeOf(errs[j])
				ot := &out.Topics[len(out.Topics)-1]
				ot.Partitions = append(ot.Partitions, op)
			}
			resp.Transactions[i] = out
			if pending--; pending == 0 {
				r.respond(resp)
			}
		})
	}
}

// addPartitions finds the shard of id and adds parts.
func (b *Broker) addPartitions(id string, pid int64, epoch int16, parts []txn.TopicPartition, verifyOnly bool, done func([]*kerr.Error)) {
	sh, e := b.txnShardFor(id)
	if e != nil {
		errs := make([]*kerr.Error, len(parts))
		for i := range errs {
			errs[i] = e
		}
		done(errs)
		return
	}
	sh.AddPartitions(id, pid, epoch, parts, verifyOnly, done)
}

// handleAddOffsetsToTxn adds the group's __consumer_offsets partition to
// the transaction (the TxnOffsetCommit that follows goes to the group
// coordinator).
func handleAddOffsetsToTxn(b *Broker, r *request) {
	req := r.body.(*kmsg.AddOffsetsToTxnRequest)
	if req.Group == "" {
		r.respond(protocol.ErrorResponse(req, kerr.InvalidRequest, "A group id must not be empty."))
		return
	}
	n := b.offsetsPartitions()
	if img := b.image(); img != nil {
		if ti, ok := img.TopicByName(OffsetsTopic); ok && ti.NumPartitions() > 0 {
			n = int32(ti.NumPartitions())
		}
	}
	tp := txn.TopicPartition{Topic: OffsetsTopic, Partition: coord.PartitionFor(req.Group, n)}
	b.addPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp}, false, func(errs []*kerr.Error) {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = fencedCode(errs[0], req.Version, 2)
		r.respond(resp)
	})
}

func handleEndTxn(b *Broker, r *request) {
	req := r.body.(*kmsg.EndTxnRequest)
	sh, e := b.txnShardFor(req.TransactionalID)
	if e != nil {
		r.respond(protocol.ErrorResponse(req, e, ""))
		return
	}
	sh.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, req.Version >= 5, func(pid int64, epoch int16, err *kerr.Error) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = fencedCode(err, req.Version, 2), pid, epoch
		r.respond(resp)
	})
}

func handleDescribeTransactions(b *Broker, r *request) {
	req := r.body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	canDescribe := b.topicAuth(r, kmsg.ACLOperationDescribe)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		e := b.txnIDAuth(r, kmsg.ACLOperationDescribe, id)
		var sh *txn.Shard
		if e == nil {
			sh, e = b.txnShardFor(id)
		}
		if e == nil {
			var s txn.Summary
			s, e = sh.Describe(id)
			if e == nil {
				st.State, st.TimeoutMillis, st.StartTimestamp = s.State.String(), s.TimeoutMillis, s.StartTimestamp
				st.ProducerID, st.ProducerEpoch = s.ProducerID, s.ProducerEpoch
				for topic, partitions := range txn.ByTopic(s.Partitions) {
					if canDescribe(topic) != nil {
						continue // Kafka leaves out the topics not described
					}
					t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					t.Topic, t.Partitions = topic, partitions
					st.Topics = append(st.Topics, t)
				}
			}
		}
		st.ErrorCode = codeOf(e)
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	r.respond(resp)
}

// handleListTransactions lists the transactions of every shard led here
// (an admin client asks every broker), filtered by state, producer id,
// duration (v1) and id pattern (v2, a Go RE2 regular expression).
func handleListTransactions(b *Broker, r *request) {
	req := r.body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var f txn.Filter
	for _, name := range req.StateFilters {
		st, ok := txn.ParseState(name)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		f.States = append(f.States, st)
	}
	if len(req.StateFilters) > 0 && len(f.States) == 0 {
		r.respond(resp) // only unknown states: nothing matches
		return
	}
	f.ProducerIDs = req.ProducerIDFilters
	if req.Version >= 1 && req.DurationFilterMillis > 0 {
		f.MinDuration = time.Duration(req.DurationFilterMillis) * time.Millisecond
	}
	var pattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile(*req.TransactionalIDPattern)
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			r.respond(resp)
			return
		}
		pattern = re
	}
	for _, ts := range b.txns.rt.Slots() {
		list, e := ts.Shard.List(f)
		if e != nil {
			resp.ErrorCode = e.Code
			resp.TransactionStates = nil
			break
		}
		for _, s := range list {
			if pattern != nil && !pattern.MatchString(s.TransactionalID) ||
				b.txnIDAuth(r, kmsg.ACLOperationDescribe, s.TransactionalID) != nil {
				continue
			}
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = s.TransactionalID, s.ProducerID, s.State.String()
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
	}
	r.respond(resp)
}
