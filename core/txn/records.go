package txn

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/coord"
)

// Record is one record of __transaction_state: Kafka's TransactionLogKey
// (version 0) and TransactionLogValue (version 1, flexible), a nil value
// being a tombstone.
type Record = coord.Record

const (
	keyVersion   = 0
	valueVersion = 1
)

// TopicPartition names a partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func compareTP(a, b TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// ByTopic yields each run of parts in one topic, in order, as the topic
// and the run's partitions: the shape of the topic lists in Kafka's
// transaction requests and records (parts sorted by topic make one run a
// topic).
func ByTopic(parts []TopicPartition) iter.Seq2[string, []int32] {
	return func(yield func(string, []int32) bool) {
		for i := 0; i < len(parts); {
			topic := parts[i].Topic
			var partitions []int32
			for ; i < len(parts) && parts[i].Topic == topic; i++ {
				partitions = append(partitions, parts[i].Partition)
			}
			if !yield(topic, partitions) {
				return
			}
		}
	}
}

func encodeKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = keyVersion, id
	return k.AppendTo(nil)
}

// record encodes a transaction's persisted state.
func (st *txnState) record(id string) Record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch = st.producerID, st.epoch
	v.PreviousProducerID, v.NextProducerID = st.prevProducerID, st.nextProducerID
	v.TimeoutMillis = st.timeoutMs
	v.State = kmsg.TransactionState(st.state)
	v.LastUpdateTimestamp, v.StartTimestamp = st.updateMs, st.startMs
	if st.tv2 {
		v.ClientTransactionVersion = 2
	}
	for topic, partitions := range ByTopic(st.partitions) {
		t := kmsg.NewTxnMetadataValueTopic()
		t.Topic, t.Partitions = topic, partitions
		v.Topics = append(v.Topics, t)
	}
	return Record{Key: encodeKey(id), Value: v.AppendTo(nil)}
}

// ErrBadRecord is a record of the partition that is not a transaction
// log record this shard can read.
var ErrBadRecord = errors.New("txn: unreadable __transaction_state record")

// decodeRecord reads a record: the id and its state, nil for a tombstone.
func decodeRecord(key, value []byte) (string, *txnState, error) {
	if len(key) < 2 || binary.BigEndian.Uint16(key) != keyVersion {
		return "", nil, fmt.Errorf("%w: key version", ErrBadRecord)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", nil, fmt.Errorf("%w: key: %w", ErrBadRecord, err)
	}
	if value == nil {
		return k.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return "", nil, fmt.Errorf("%w: value of %q: %w", ErrBadRecord, k.TransactionalID, err)
	}
	st := State(v.State)
	if st > StatePrepareEpochFence || st < 0 || v.ProducerID < 0 || v.ProducerEpoch < 0 {
		return "", nil, fmt.Errorf("%w: value of %q: state %d, producer %d epoch %d", ErrBadRecord, k.TransactionalID, v.State, v.ProducerID, v.ProducerEpoch)
	}
	s := &txnState{
		producerID: v.ProducerID, prevProducerID: v.PreviousProducerID, nextProducerID: v.NextProducerID, epoch: v.ProducerEpoch, lastEpoch: -1,
		timeoutMs: v.TimeoutMillis, state: st, startMs: v.StartTimestamp, updateMs: v.LastUpdateTimestamp,
		tv2: v.ClientTransactionVersion >= 2,
	}
	if s.tv2 && s.epoch > 0 && (st == StatePrepareCommit || st == StatePrepareAbort || st == StateCompleteCommit || st == StateCompleteAbort) {
		// KIP-890 part 2 bumped the epoch when the transaction ended; a
		// retried EndTxn carries the one before.
		s.lastEpoch = s.epoch - 1
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			s.partitions = append(s.partitions, TopicPartition{t.Topic, p})
		}
	}
	slices.SortFunc(s.partitions, compareTP)
	s.partitions = slices.Compact(s.partitions)
	return k.TransactionalID, s, nil
}
