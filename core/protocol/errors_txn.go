package protocol

import "github.com/twmb/franz-go/pkg/kmsg"

// txnErrors answer the producer id and transaction requests, served by a
// transactional id's coordinator (InitProducerID without one by any
// broker).
var txnErrors = map[kmsg.Key]errorAnswer{
	kmsg.InitProducerID: answer(func(_ *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse, f failure) {
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = f.code, -1, -1
	}),
	kmsg.AddPartitionsToTxn: answer(func(r *kmsg.AddPartitionsToTxnRequest, resp *kmsg.AddPartitionsToTxnResponse, f failure) {
		resp.Topics = each(r.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) kmsg.AddPartitionsToTxnResponseTopic {
			return kmsg.AddPartitionsToTxnResponseTopic{Topic: t.Topic, Partitions: each(t.Partitions, f.addedPartition)}
		})
		if r.Version >= 4 {
			resp.ErrorCode = f.code
		}
	}),
	kmsg.AddOffsetsToTxn: answer(func(_ *kmsg.AddOffsetsToTxnRequest, resp *kmsg.AddOffsetsToTxnResponse, f failure) {
		resp.ErrorCode = f.code
	}),
	kmsg.TxnOffsetCommit: answer(func(r *kmsg.TxnOffsetCommitRequest, resp *kmsg.TxnOffsetCommitResponse, f failure) {
		resp.Topics = each(r.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) kmsg.TxnOffsetCommitResponseTopic {
			return kmsg.TxnOffsetCommitResponseTopic{Topic: t.Topic, Partitions: each(t.Partitions, f.txnCommittedPartition)}
		})
	}),
	kmsg.EndTxn: answer(func(_ *kmsg.EndTxnRequest, resp *kmsg.EndTxnResponse, f failure) {
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = f.code, -1, -1
	}),
	kmsg.DescribeTransactions: answer(func(r *kmsg.DescribeTransactionsRequest, resp *kmsg.DescribeTransactionsResponse, f failure) {
		resp.TransactionStates = each(r.TransactionalIDs, func(id string) kmsg.DescribeTransactionsResponseTransactionState {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode, st.ProducerID, st.ProducerEpoch = id, f.code, -1, -1
			return st
		})
	}),
	kmsg.ListTransactions: answer(func(_ *kmsg.ListTransactionsRequest, resp *kmsg.ListTransactionsResponse, f failure) {
		resp.ErrorCode = f.code
	}),
}

func (f failure) addedPartition(p int32) kmsg.AddPartitionsToTxnResponseTopicPartition {
	rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
	rp.Partition, rp.ErrorCode = p, f.code
	return rp
}

func (f failure) txnCommittedPartition(p kmsg.TxnOffsetCommitRequestTopicPartition) kmsg.TxnOffsetCommitResponseTopicPartition {
	rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
	rp.Partition, rp.ErrorCode = p.Partition, f.code
	return rp
}
