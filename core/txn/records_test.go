package txn

import (
	"time"

	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A record round-trips through Kafka's schema, partitions grouped by topic.
func TestRecordRoundTrip(t *testing.T) {
	st := txnState{producerID: 7, prevProducerID: 3, nextProducerID: -1, epoch: 4, lastEpoch: 3, timeoutMs: 60000, state: StatePrepareCommit,
		partitions: []TopicPartition{{"a", 0}, {"a", 2}, {"b", 1}}, startMs: 10, updateMs: 20, tv2: true}
	rec := st.record("t1")
	id, got, err := decodeRecord(rec.Key, rec.Value)
	require.NoError(t, err)
	require.Equal(t, "t1", id)
	require.Equal(t, st, *got)
	var v kmsg.TxnMetadataValue
	require.NoError(t, v.ReadFrom(rec.Value))
	require.Len(t, v.Topics, 2)
	require.Equal(t, kmsg.TransactionStatePrepareCommit, v.State)
}

// Damaged records are refused with ErrBadRecord, never a panic, and change
// nothing.
func TestReplayRefusesDamagedRecords(t *testing.T) {
	r := newRig(t)
	sh := r.newShard()
	good := (&txnState{producerID: 1, prevProducerID: -1, nextProducerID: -1, epoch: 0, lastEpoch: -1, state: StateEmpty}).record("t1")
	bad := []Record{
		{Key: nil, Value: good.Value},
		{Key: []byte{0, 1, 0, 2, 'x', 'y'}, Value: good.Value},
		{Key: good.Key, Value: []byte{0, 1, 2}},
		{Key: good.Key[:3], Value: good.Value},
		{Key: good.Key, Value: good.Value[:len(good.Value)-3]},
		(&txnState{producerID: 1, epoch: -4, state: StateEmpty}).record("t1"),
		(&txnState{producerID: 1, epoch: 0, state: 9}).record("t1"),
	}
	for i, rec := range bad {
		require.ErrorIs(t, sh.Replay(rec.Key, rec.Value), ErrBadRecord, "record %d", i)
	}
	require.Empty(t, sh.txns)
	require.NoError(t, sh.Replay(good.Key, good.Value))
	require.Len(t, sh.txns, 1)
}

func FuzzReplay(f *testing.F) {
	good := (&txnState{producerID: 1, prevProducerID: -1, nextProducerID: -1, epoch: 0, lastEpoch: -1, state: StateOngoing, partitions: []TopicPartition{{"a", 1}}}).record("t1")
	f.Add(good.Key, good.Value)
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r := newRig(t)
		sh := r.newShard()
		_ = sh.Replay(key, value)
		sh.Loaded()
		_, _ = sh.List(Filter{})
	})
}

// loadedWith is a new shard that replayed id's state as its one record.
func (r *rig) loadedWith(id string, st *txnState) *Shard {
	r.t.Helper()
	sh := r.newShard()
	rec := st.record(id)
	require.NoError(r.t, sh.Replay(rec.Key, rec.Value))
	sh.Loaded()
	return sh
}

// producerAnswer is what InitProducerId and EndTxn answer.
type producerAnswer struct {
	pid   int64
	epoch int16
	err   *kerr.Error
}

// A compacted log keeps only an id's last record: the epoch before it is
// not known (a KIP-360 retry naming it is fenced), and the state is the
// record's.
func TestReplayAfterCompaction(t *testing.T) {
	r := newRig(t)
	sh := r.loadedWith("t1", &txnState{producerID: 4, prevProducerID: -1, nextProducerID: -1, epoch: 5, lastEpoch: -1, timeoutMs: 1000, state: StateCompleteCommit, startMs: -1})
	tx := sh.txns["t1"]
	require.Equal(t, int16(5), tx.epoch)
	require.Equal(t, int16(-1), tx.lastEpoch)
	var got *int16
	sh.InitProducerID("t1", 1000, 4, 0, func(_ int64, _ int16, err *kerr.Error) {
		require.Equal(t, kerr.ProducerFenced, err)
		got = new(int16)
	})
	require.NotNil(t, got)
}

// An id whose epoch is exhausted gets a new producer id at its next
// InitProducerId (the old one is kept as the previous id), and a KIP-360
// retry naming the old id and epoch gets the new id again.
func TestEpochExhaustionRotatesTheProducerID(t *testing.T) {
	r := newRig(t)
	sh := r.loadedWith("t1", &txnState{producerID: 4, prevProducerID: -1, nextProducerID: -1, epoch: maxEpoch, lastEpoch: -1, timeoutMs: 1000, state: StateCompleteAbort, startMs: -1})
	r.shard = sh
	init := func(pid int64, epoch int16) *producerAnswer {
		var a *producerAnswer
		sh.InitProducerID("t1", 1000, pid, epoch, func(p int64, e int16, err *kerr.Error) { a = &producerAnswer{p, e, err} })
		r.run(10 * time.Millisecond)
		require.NotNil(t, a)
		return a
	}
	got := init(4, maxEpoch)
	require.Nil(t, got.err)
	require.Equal(t, int64(1000), got.pid, "a new producer id from the allocator")
	require.Zero(t, got.epoch)
	require.Equal(t, int64(4), sh.txns["t1"].prevProducerID)
	retry := init(4, maxEpoch)
	require.Equal(t, *got, *retry)
	require.Equal(t, kerr.ProducerFenced, init(4, 3).err)
	require.Equal(t, dump(sh), dump(r.replayed()))
}

// KIP-890 part 2 with the epoch exhausted: the end's markers carry the
// last epoch, the answer gives a new producer id at epoch 0 (the client's
// next transaction), requests of the new id wait for the markers, the
// Complete state moves the id, and a retry of the end (old id, old epoch)
// gets the same answer.
func TestEndTxnRotatesAnExhaustedProducerID(t *testing.T) {
	r := newRig(t)
	sh := r.loadedWith("t1", &txnState{producerID: 4, prevProducerID: -1, nextProducerID: -1, epoch: maxEpoch, lastEpoch: -1, timeoutMs: 1000,
		state: StateCompleteCommit, startMs: -1, tv2: true})
	r.shard = sh
	add := func(pid int64, epoch int16) *kerr.Error {
		var got []*kerr.Error
		sh.AddPartitions("t1", pid, epoch, []TopicPartition{{"foo", 0}}, false, func(e []*kerr.Error) { got = e })
		r.run(10 * time.Millisecond)
		require.Len(t, got, 1)
		return got[0]
	}
	end := func(pid int64, epoch int16) *producerAnswer {
		var a *producerAnswer
		sh.EndTxn("t1", pid, epoch, true, true, func(p int64, e int16, err *kerr.Error) { a = &producerAnswer{p, e, err} })
		r.run(10 * time.Millisecond)
		require.NotNil(t, a)
		return a
	}
	require.Nil(t, add(4, maxEpoch))
	got := end(4, maxEpoch)
	require.Equal(t, producerAnswer{1000, 0, nil}, *got)
	require.Len(t, r.sent, 1)
	require.Equal(t, int64(4), r.sent[0].m.ProducerID)
	require.Equal(t, int16(maxEpoch+1), r.sent[0].m.ProducerEpoch)
	require.Equal(t, dump(sh), dump(r.replayed()), "the Prepare state with its next producer id replays")
	require.Equal(t, kerr.ConcurrentTransactions, add(1000, 0), "the new id waits for the markers")
	require.Equal(t, kerr.ConcurrentTransactions, end(4, maxEpoch).err, "a retry waits too")

	s := r.sent[0]
	r.sent = nil
	s.done([]MarkerResult{{TopicPartition: TopicPartition{"foo", 0}}})
	r.run(10 * time.Millisecond)
	tx := sh.txns["t1"]
	require.Equal(t, StateCompleteCommit, tx.state)
	require.Equal(t, int64(1000), tx.producerID)
	require.Equal(t, int64(4), tx.prevProducerID)
	require.Equal(t, int64(-1), tx.nextProducerID)
	require.Zero(t, tx.epoch)
	require.Equal(t, *got, *end(4, maxEpoch), "a retry of the end after the rotation")
	require.Equal(t, kerr.InvalidProducerIDMapping, add(4, maxEpoch+1))
	require.Nil(t, add(1000, 0))
	require.Equal(t, dump(sh), dump(r.replayed()))
}
