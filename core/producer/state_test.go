package producer_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim/simtest"
)

// appendBatch checks and appends a client batch at st's end offset and
// returns its first offset; it fails the test if Check refuses it.
func appendBatch(t tb, st *producer.State, spec batchSpec) int64 {
	t.Helper()
	b := spec.build(t, 0)
	info := producer.InfoOf(b)
	res, err := st.Check(info)
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	first := st.EndOffset()
	b.AssignOffsets(first, 0)
	st.Appended(info, first, b.LastOffset(), b.MaxTimestamp())
	return first
}

func violation(t *testing.T, f func()) string {
	t.Helper()
	var msg string
	func() {
		defer func() {
			r := recover()
			v, ok := r.(assert.Violation)
			require.True(t, ok, "want an assert.Violation, got %v", r)
			msg = v.Msg
		}()
		f()
	}()
	return msg
}

func TestErrorsMapToKafkaCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want *kerr.Error
	}{
		{producer.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
		{producer.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
		{producer.ErrInvalidTxnState, kerr.InvalidTxnState},
		{producer.ErrInvalidBatch, kerr.InvalidRecord},
	} {
		var ke *kerr.Error
		require.True(t, errors.As(tc.err, &ke), "%v", tc.err)
		require.Equal(t, tc.want, ke)
		require.ErrorIs(t, tc.err, tc.want)
	}

	// Check's detailed errors keep both the sentinel and the code.
	st := producer.NewState(producer.DefaultConfig(), 0)
	appendBatch(t, st, batchSpec{pid: 1, epoch: 1, seq: 0, records: 1})
	_, err := st.Check(producer.BatchInfo{ProducerID: 1, ProducerEpoch: 1, FirstSeq: 5, LastSeq: 5})
	require.ErrorIs(t, err, producer.ErrOutOfOrderSequence)
	require.ErrorIs(t, err, kerr.OutOfOrderSequenceNumber)
	_, err = st.Check(producer.BatchInfo{ProducerID: 1, ProducerEpoch: 0, FirstSeq: 1, LastSeq: 1})
	require.ErrorIs(t, err, producer.ErrInvalidProducerEpoch)
	require.ErrorIs(t, err, kerr.InvalidProducerEpoch)
}

func TestCheckChangesNothing(t *testing.T) {
	st := producer.NewState(producer.DefaultConfig(), 0)
	appendBatch(t, st, batchSpec{pid: 1, epoch: 0, seq: 0, records: 2, ts: 5})
	before := st.Producers()
	for _, info := range []producer.BatchInfo{
		{ProducerID: 1, ProducerEpoch: 0, FirstSeq: 2, LastSeq: 2},     // would pass
		{ProducerID: 1, ProducerEpoch: 1, FirstSeq: 0, LastSeq: 0},     // new epoch
		{ProducerID: 2, ProducerEpoch: 0, FirstSeq: 9, LastSeq: 9},     // unknown
		{ProducerID: 1, ProducerEpoch: 0, FirstSeq: 0, LastSeq: 1},     // duplicate
		{ProducerID: 1, ProducerEpoch: 0, FirstSeq: 7, LastSeq: 7},     // out of order
		{ProducerID: -1, ProducerEpoch: -1, FirstSeq: -1, LastSeq: -1}, // no idempotence
	} {
		_, _ = st.Check(info)
	}
	require.Equal(t, before, st.Producers())
	require.Equal(t, int64(2), st.EndOffset())
}

func TestCheckRefusesInvalidProducerFields(t *testing.T) {
	st := producer.NewState(producer.DefaultConfig(), 0)
	for _, info := range []producer.BatchInfo{
		{ProducerID: -2, ProducerEpoch: 0, FirstSeq: 0, LastSeq: 0},
		{ProducerID: 1, ProducerEpoch: -1, FirstSeq: 0, LastSeq: 0},
		{ProducerID: 1, ProducerEpoch: 0, FirstSeq: -1, LastSeq: -1},
	} {
		_, err := st.Check(info)
		require.ErrorIs(t, err, producer.ErrInvalidBatch, "%+v", info)
		require.ErrorIs(t, err, kerr.InvalidRecord)
	}
}

func TestDuplicateOfEachOfTheLastFiveBatches(t *testing.T) {
	st := producer.NewState(producer.DefaultConfig(), 100)
	var firsts []int64
	for i := range 6 {
		firsts = append(firsts, appendBatch(t, st, batchSpec{pid: 3, epoch: 1, seq: int32(3 * i), records: 3, ts: int64(1000 + i)}))
	}
	// Batch 0 is the sixth back: forgotten.
	_, err := st.Check(producer.BatchInfo{ProducerID: 3, ProducerEpoch: 1, FirstSeq: 0, LastSeq: 2})
	require.ErrorIs(t, err, producer.ErrOutOfOrderSequence)
	for i := 1; i < 6; i++ {
		res, err := st.Check(producer.BatchInfo{ProducerID: 3, ProducerEpoch: 1, FirstSeq: int32(3 * i), LastSeq: int32(3*i + 2)})
		require.NoError(t, err)
		require.True(t, res.Duplicate, "batch %d", i)
		require.Equal(t, firsts[i], res.Original.FirstOffset())
		require.Equal(t, firsts[i]+2, res.Original.LastOffset)
		require.Equal(t, int64(1000+i), res.Original.Timestamp)
		require.Equal(t, int32(3*i), res.Original.FirstSeq())
	}
	p, ok := st.Producer(3)
	require.True(t, ok)
	require.Len(t, p.Batches, 5)
	require.Equal(t, int32(17), p.LastSeq())
	require.Equal(t, int64(117), p.LastOffset())
	require.Equal(t, int64(1005), p.LastTimestamp)
	require.Equal(t, int32(-1), p.CoordinatorEpoch)
	require.Equal(t, int64(-1), p.CurrentTxnFirstOffset)
}

func TestDuplicateNeedsTheSameEpoch(t *testing.T) {
	st := producer.NewState(producer.DefaultConfig(), 0)
	appendBatch(t, st, batchSpec{pid: 3, epoch: 1, seq: 0, records: 1})
	// The same range under a newer epoch is the new epoch's first batch.
	res, err := st.Check(producer.BatchInfo{ProducerID: 3, ProducerEpoch: 2, FirstSeq: 0, LastSeq: 0})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
}

func TestAppendedAssertsTheCallersContract(t *testing.T) {
	st := producer.NewState(producer.DefaultConfig(), 10)
	info := producer.BatchInfo{ProducerID: 1, ProducerEpoch: 0, FirstSeq: 0, LastSeq: 1}
	require.Contains(t, violation(t, func() { st.Appended(info, 8, 9, 0) }), "the state ends at 10")
	require.Contains(t, violation(t, func() { st.Appended(info, 10, 12, 0) }), "offsets 10..12")
	st.Appended(info, 10, 11, 0)
	// The same batch again is a duplicate Check would have answered.
	require.Contains(t, violation(t, func() { st.Appended(info, 12, 13, 0) }), "fails Check")
	// A batch Check refuses.
	bad := producer.BatchInfo{ProducerID: 1, ProducerEpoch: 0, FirstSeq: 5, LastSeq: 5}
	require.Contains(t, violation(t, func() { st.Appended(bad, 12, 12, 0) }), "fails Check")
	require.Contains(t, violation(t, func() { st.AdvanceTo(11) }), "moved backwards")
}

func TestNoIdempotenceOnlyMovesTheEnd(t *testing.T) {
	st := producer.NewState(producer.DefaultConfig(), 0)
	none := producer.BatchInfo{ProducerID: record.NoProducerID, ProducerEpoch: record.NoProducerEpoch, FirstSeq: record.NoSequence, LastSeq: record.NoSequence}
	res, err := st.Check(none)
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	st.Appended(none, 0, 9, 123)
	require.Equal(t, 0, st.Len())
	require.Equal(t, int64(10), st.EndOffset())
	st.AdvanceTo(20)
	require.Equal(t, int64(20), st.EndOffset())
}

func TestReplaySkipsWhatTheStateHolds(t *testing.T) {
	st := producer.NewState(producer.DefaultConfig(), 5)
	old := batchSpec{pid: 1, epoch: 0, seq: 0, records: 5}.build(t, 0)
	require.NoError(t, st.Replay(old)) // offsets 0..4, below the end
	require.Equal(t, 0, st.Len())
	require.Equal(t, int64(5), st.EndOffset())
	require.NoError(t, st.Replay(batchSpec{pid: 1, epoch: 0, seq: 5, records: 2, ts: 77}.build(t, 5)))
	p, ok := st.Producer(1)
	require.True(t, ok)
	require.Equal(t, []producer.BatchMetadata{{LastSeq: 6, LastOffset: 6, OffsetDelta: 1, Timestamp: 77}}, p.Batches)
	require.Equal(t, int64(7), st.EndOffset())
}

func TestReplayRejectsImpossibleHeaders(t *testing.T) {
	st := producer.NewState(producer.DefaultConfig(), 0)
	b := batchSpec{pid: 1, epoch: 0, seq: 0, records: 1}.build(t, 0)
	b.SetBaseOffset(-3)
	require.ErrorIs(t, st.Replay(b), record.ErrCorrupt)
	b.SetBaseOffset(math.MaxInt64)
	require.ErrorIs(t, st.Replay(b), record.ErrCorrupt)
	require.Equal(t, 0, st.Len())
	require.Equal(t, int64(0), st.EndOffset())
}

func TestProducersAreSortedByID(t *testing.T) {
	st := producer.NewState(producer.DefaultConfig(), 0)
	for _, id := range []int64{42, 7, 1000, 3, 99} {
		appendBatch(t, st, batchSpec{pid: id, epoch: 0, seq: 0, records: 1})
	}
	var ids []int64
	for _, p := range st.Producers() {
		ids = append(ids, p.ID)
	}
	require.Equal(t, []int64{3, 7, 42, 99, 1000}, ids)
	require.Equal(t, 5, st.Len())
}

func TestExpire(t *testing.T) {
	cfg := producer.Config{ExpirationTime: time.Minute}
	st := producer.NewState(cfg, 0)
	appendBatch(t, st, batchSpec{pid: 5, epoch: 0, seq: 0, records: 1, ts: 60_000})
	appendBatch(t, st, batchSpec{pid: 2, epoch: 0, seq: 0, records: 1, ts: 60_000})
	appendBatch(t, st, batchSpec{pid: 9, epoch: 0, seq: 0, records: 1, ts: 90_000})
	require.Empty(t, st.Expire(time.UnixMilli(119_999)))
	require.Equal(t, []int64{2, 5}, st.Expire(time.UnixMilli(120_000)))
	require.Equal(t, []int64{9}, st.Expire(time.UnixMilli(1<<50)))
	require.Equal(t, 0, st.Len())
	require.Equal(t, int64(3), st.EndOffset(), "expiry does not move the end offset")
}

func TestExpireKeepsAnOngoingTransaction(t *testing.T) {
	st, err := producer.Restore(producer.DefaultConfig(), 100, []producer.Producer{
		{ID: 1, Epoch: 0, LastTimestamp: 0, CoordinatorEpoch: 3, CurrentTxnFirstOffset: 50,
			Batches: []producer.BatchMetadata{{LastSeq: 4, LastOffset: 54, OffsetDelta: 4, Timestamp: 0}}},
		{ID: 2, Epoch: 0, LastTimestamp: 0, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1,
			Batches: []producer.BatchMetadata{{LastSeq: 0, LastOffset: 60, Timestamp: 0}}},
	}, time.UnixMilli(0))
	require.NoError(t, err)
	require.Equal(t, []int64{2}, st.Expire(time.UnixMilli(1<<50)))
	p, ok := st.Producer(1)
	require.True(t, ok)
	require.Equal(t, int64(50), p.CurrentTxnFirstOffset)
}

func TestConfig(t *testing.T) {
	require.NoError(t, producer.Config{}.Validate())
	require.Equal(t, 24*time.Hour, producer.DefaultConfig().ExpirationTime)
	require.Equal(t, 10*time.Minute, producer.DefaultConfig().ExpirationCheckInterval)
	st := producer.NewState(producer.Config{}, 0)
	require.Equal(t, producer.DefaultConfig(), st.Config())
	require.ErrorIs(t, producer.Config{ExpirationTime: time.Microsecond}.Validate(), producer.ErrInvalidConfig)
	require.ErrorIs(t, producer.Config{ExpirationCheckInterval: -time.Second}.Validate(), producer.ErrInvalidConfig)
}

// tb is what the helpers need from *testing.T, *testing.B and *rapid.T.
type tb = simtest.TB
