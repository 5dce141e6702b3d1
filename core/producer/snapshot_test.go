package producer_test

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/producer"
)

// kafkaEntry is one producer entry of Kafka's ProducerSnapshot v1, in the
// order of ProducerSnapshot.json's fields.
type kafkaEntry struct {
	producerID            int64
	epoch                 int16
	lastSequence          int32
	lastOffset            int64
	offsetDelta           int32
	timestamp             int64
	coordinatorEpoch      int32
	currentTxnFirstOffset int64
}

// kafkaSnapshot builds a snapshot the way Kafka's writeSnapshot does,
// independently of the package: MessageUtil.toVersionPrefixedByteBuffer
// (version int16, then the non-flexible message: crc uint32, entries as an
// int32 count and the fields), then the CRC32C of everything after the crc
// field written into place.
func kafkaSnapshot(entries []kafkaEntry) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, 1)
	b = binary.BigEndian.AppendUint32(b, 0) // crc, filled in below
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.producerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(e.lastSequence))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(e.offsetDelta))
		b = binary.BigEndian.AppendUint64(b, uint64(e.timestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.coordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.currentTxnFirstOffset))
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestCRC32CIsCastagnoli(t *testing.T) {
	// The check value of CRC-32C (RFC 3720), which Kafka's Crc32C computes.
	require.Equal(t, uint32(0xE3069283), crc32.Checksum([]byte("123456789"), crc32.MakeTable(crc32.Castagnoli)))
}

func TestSnapshotIsKafkasFormatByteForByte(t *testing.T) {
	st := producer.NewState(producer.DefaultConfig(), 0)
	appendBatch(t, st, batchSpec{pid: 1000, epoch: 2, seq: 0, records: 3, ts: 1_700_000_000_000})
	appendBatch(t, st, batchSpec{pid: 7, epoch: 0, seq: 2147483646, records: 4, ts: 1_700_000_000_500})
	appendBatch(t, st, batchSpec{pid: 1000, epoch: 2, seq: 3, records: 2, ts: 1_700_000_000_900})
	require.Equal(t, int64(9), st.EndOffset())

	want := kafkaSnapshot([]kafkaEntry{
		{producerID: 7, epoch: 0, lastSequence: 1, lastOffset: 6, offsetDelta: 3, timestamp: 1_700_000_000_500, coordinatorEpoch: -1, currentTxnFirstOffset: -1},
		{producerID: 1000, epoch: 2, lastSequence: 4, lastOffset: 8, offsetDelta: 1, timestamp: 1_700_000_000_900, coordinatorEpoch: -1, currentTxnFirstOffset: -1},
	})
	got := st.EncodeSnapshot()
	require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(got))
	// Pinned, so that a change to both the builder above and the encoder
	// cannot go unnoticed.
	require.Equal(t, "0001"+"13037d30"+"00000002"+
		"0000000000000007"+"0000"+"00000001"+"0000000000000006"+"00000003"+"0000018bcfe569f4"+"ffffffff"+"ffffffffffffffff"+
		"00000000000003e8"+"0002"+"00000004"+"0000000000000008"+"00000001"+"0000018bcfe56b84"+"ffffffff"+"ffffffffffffffff",
		hex.EncodeToString(got))
}

func TestSnapshotRoundTrip(t *testing.T) {
	st := producer.NewState(producer.DefaultConfig(), 0)
	for i := range 4 {
		appendBatch(t, st, batchSpec{pid: 11, epoch: 3, seq: int32(2 * i), records: 2, ts: int64(5000 + i)})
	}
	appendBatch(t, st, batchSpec{pid: 4, epoch: 0, seq: 9, records: 1, ts: 6000})
	ps, err := producer.DecodeSnapshot(st.EncodeSnapshot())
	require.NoError(t, err)
	want := st.Producers()
	for i := range want {
		want[i].Batches = want[i].Batches[len(want[i].Batches)-1:] // a snapshot keeps the last batch
	}
	require.Equal(t, want, ps)

	restored, err := producer.Restore(producer.DefaultConfig(), st.EndOffset(), ps, time.UnixMilli(6000))
	require.NoError(t, err)
	require.Equal(t, want, restored.Producers())
	require.Equal(t, st.EndOffset(), restored.EndOffset())
	require.Equal(t, st.EncodeSnapshot(), restored.EncodeSnapshot())

	// The restored state decides like the original for the producers'
	// next batches.
	for _, info := range []producer.BatchInfo{
		{ProducerID: 11, ProducerEpoch: 3, FirstSeq: 8, LastSeq: 8},
		{ProducerID: 11, ProducerEpoch: 3, FirstSeq: 6, LastSeq: 7},
		{ProducerID: 11, ProducerEpoch: 2, FirstSeq: 8, LastSeq: 8},
		{ProducerID: 4, ProducerEpoch: 0, FirstSeq: 11, LastSeq: 11},
		{ProducerID: 4, ProducerEpoch: 1, FirstSeq: 0, LastSeq: 0},
	} {
		r1, e1 := st.Check(info)
		r2, e2 := restored.Check(info)
		require.Equal(t, r1, r2, "%+v", info)
		require.Equal(t, e1, e2, "%+v", info)
	}
}

func TestDecodeKafkaEntryWithoutBatch(t *testing.T) {
	// Kafka writes a producer whose only record was a transaction marker
	// with last offset -1 and last sequence -1.
	ps, err := producer.DecodeSnapshot(kafkaSnapshot([]kafkaEntry{
		{producerID: 5, epoch: 1, lastSequence: -1, lastOffset: -1, offsetDelta: 0, timestamp: 77, coordinatorEpoch: 4, currentTxnFirstOffset: -1},
	}))
	require.NoError(t, err)
	require.Equal(t, []producer.Producer{{ID: 5, Epoch: 1, CoordinatorEpoch: 4, LastTimestamp: 77, CurrentTxnFirstOffset: -1}}, ps)
	st, err := producer.Restore(producer.DefaultConfig(), 10, ps, time.UnixMilli(77))
	require.NoError(t, err)
	// Its epoch is known and it has no batch: the epoch must start at 0.
	_, err = st.Check(producer.BatchInfo{ProducerID: 5, ProducerEpoch: 1, FirstSeq: 3, LastSeq: 3})
	require.ErrorIs(t, err, producer.ErrOutOfOrderSequence)
	_, err = st.Check(producer.BatchInfo{ProducerID: 5, ProducerEpoch: 1, FirstSeq: 0, LastSeq: 3})
	require.NoError(t, err)
	_, err = st.Check(producer.BatchInfo{ProducerID: 5, ProducerEpoch: 0, FirstSeq: 0, LastSeq: 0})
	require.ErrorIs(t, err, producer.ErrInvalidProducerEpoch)
	require.Equal(t, kafkaSnapshot([]kafkaEntry{
		{producerID: 5, epoch: 1, lastSequence: -1, lastOffset: -1, offsetDelta: 0, timestamp: 77, coordinatorEpoch: 4, currentTxnFirstOffset: -1},
	}), st.EncodeSnapshot())
}

func TestDecodeAcceptsAnyEntryOrder(t *testing.T) {
	ps, err := producer.DecodeSnapshot(kafkaSnapshot([]kafkaEntry{
		{producerID: 9, lastSequence: 0, lastOffset: 3, currentTxnFirstOffset: -1},
		{producerID: 2, lastSequence: 0, lastOffset: 1, currentTxnFirstOffset: -1},
	}))
	require.NoError(t, err)
	require.Equal(t, int64(9), ps[0].ID)
	st, err := producer.Restore(producer.DefaultConfig(), 4, ps, time.UnixMilli(0))
	require.NoError(t, err)
	require.Equal(t, int64(2), st.Producers()[0].ID)
}

func TestDecodeEmptySnapshot(t *testing.T) {
	data := producer.NewState(producer.DefaultConfig(), 3).EncodeSnapshot()
	require.Equal(t, kafkaSnapshot(nil), data)
	ps, err := producer.DecodeSnapshot(data)
	require.NoError(t, err)
	require.Empty(t, ps)
}

func TestDecodeRejectsDamage(t *testing.T) {
	good := kafkaEntry{producerID: 1, epoch: 0, lastSequence: 4, lastOffset: 10, offsetDelta: 4, timestamp: 1, coordinatorEpoch: -1, currentTxnFirstOffset: -1}
	valid := kafkaSnapshot([]kafkaEntry{good})
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), valid...)) }
	withEntry := func(f func(e *kafkaEntry)) []byte {
		e := good
		f(&e)
		return kafkaSnapshot([]kafkaEntry{e})
	}
	for name, data := range map[string][]byte{
		"empty":           nil,
		"short header":    valid[:9],
		"truncated entry": valid[:len(valid)-1],
		"trailing byte":   append(append([]byte(nil), valid...), 0),
		"version 0":       mutate(func(b []byte) []byte { b[1] = 0; return b }),
		"version 2":       mutate(func(b []byte) []byte { b[1] = 2; return b }),
		"crc":             mutate(func(b []byte) []byte { b[2] ^= 1; return b }),
		"flipped bit":     mutate(func(b []byte) []byte { b[20] ^= 0x10; return b }),
		"negative count":  mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[6:], math.MaxUint32); return b }),
		"huge count":      mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[6:], math.MaxInt32); return b }),
		"negative pid":    withEntry(func(e *kafkaEntry) { e.producerID = -1 }),
		"last offset -2":  withEntry(func(e *kafkaEntry) { e.lastOffset = -2 }),
		"negative delta":  withEntry(func(e *kafkaEntry) { e.offsetDelta = -1 }),
		"delta too large": withEntry(func(e *kafkaEntry) { e.offsetDelta = 11 }),
		"txn offset -2":   withEntry(func(e *kafkaEntry) { e.currentTxnFirstOffset = -2 }),
		"duplicate pid":   kafkaSnapshot([]kafkaEntry{good, good}),
	} {
		_, err := producer.DecodeSnapshot(data)
		require.ErrorIs(t, err, producer.ErrCorruptSnapshot, name)
	}
}

func TestRestoreRejectsEntriesBeyondTheSnapshot(t *testing.T) {
	batch := func(last int64) []producer.BatchMetadata {
		return []producer.BatchMetadata{{LastSeq: 0, LastOffset: last}}
	}
	for name, p := range map[string]producer.Producer{
		"batch at the offset":  {ID: 1, Batches: batch(10), CurrentTxnFirstOffset: -1},
		"txn at the offset":    {ID: 1, Batches: batch(3), CurrentTxnFirstOffset: 10},
		"negative id":          {ID: -4, Batches: batch(3), CurrentTxnFirstOffset: -1},
		"six batches":          {ID: 1, Batches: []producer.BatchMetadata{{LastOffset: 0}, {LastOffset: 1}, {LastOffset: 2}, {LastOffset: 3}, {LastOffset: 4}, {LastOffset: 5}}, CurrentTxnFirstOffset: -1},
		"batches out of order": {ID: 1, Batches: []producer.BatchMetadata{{LastOffset: 5}, {LastOffset: 4}}, CurrentTxnFirstOffset: -1},
	} {
		_, err := producer.Restore(producer.DefaultConfig(), 10, []producer.Producer{p}, time.UnixMilli(0))
		require.ErrorIs(t, err, producer.ErrCorruptSnapshot, name)
	}
	_, err := producer.Restore(producer.DefaultConfig(), 10, []producer.Producer{
		{ID: 1, Batches: batch(3), CurrentTxnFirstOffset: -1}, {ID: 1, Batches: batch(4), CurrentTxnFirstOffset: -1},
	}, time.UnixMilli(0))
	require.ErrorIs(t, err, producer.ErrCorruptSnapshot)
	_, err = producer.Restore(producer.DefaultConfig(), -1, nil, time.UnixMilli(0))
	require.ErrorIs(t, err, producer.ErrCorruptSnapshot)
}

// TestEncodeManyProducers guards against quadratic encoding: 200,000
// producers encode and decode in well under the test timeout, and the
// snapshot has exactly one entry each.
func TestEncodeManyProducers(t *testing.T) {
	const n = 200_000
	st := producer.NewState(producer.DefaultConfig(), 0)
	for i := range n {
		pid := int64((i * 7919) % n) // not in id order
		off := st.EndOffset()
		st.Appended(producer.BatchInfo{ProducerID: pid, ProducerEpoch: 0, FirstSeq: 0, LastSeq: 0}, off, off, int64(i))
	}
	start := time.Now()
	data := st.EncodeSnapshot()
	ps, err := producer.DecodeSnapshot(data)
	elapsed := time.Since(start)
	require.NoError(t, err)
	require.Len(t, data, 10+46*n)
	require.Len(t, ps, n)
	for i := 1; i < n; i++ {
		require.Less(t, ps[i-1].ID, ps[i].ID)
	}
	require.Less(t, elapsed, 5*time.Second)
}

func BenchmarkEncodeSnapshot(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		st := producer.NewState(producer.DefaultConfig(), 0)
		for i := range n {
			off := st.EndOffset()
			st.Appended(producer.BatchInfo{ProducerID: int64(i), ProducerEpoch: 0, FirstSeq: 0, LastSeq: 0}, off, off, 0)
		}
		b.Run(fmt.Sprintf("producers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = st.EncodeSnapshot()
			}
		})
	}
}
