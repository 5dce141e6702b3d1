package replica

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/record/recordtest"
)

// simEpochMs is the simulator's clock at the start, where batch stamps
// its records.
const simEpochMs = 1_767_225_600_000

// TestProduceRefusesMalformedRecordsOnEveryPolicy: each malformed shape
// of issue 22 (a valid CRC around records that do not parse) and each
// bomb is refused on a delete-policy topic as on a compacted one, with
// the record at fault named, and nothing is appended; a valid batch
// after them appends at offset 0.
func TestProduceRefusesMalformedRecordsOnEveryPolicy(t *testing.T) {
	for _, policy := range []string{"delete", "compact"} {
		t.Run(policy, func(t *testing.T) {
			r := newRig(t, 40)
			r.createTopic("m", topicID(40), 1, map[string]string{"cleanup.policy": policy})
			p := r.online("m", 0)
			for _, s := range recordtest.Malformed(simEpochMs) {
				res := r.produce(p, append([]byte{}, s.Payload...), -1)
				require.ErrorIs(t, res.Err, s.Kind, s.Name)
				require.Equal(t, int64(-1), res.BaseOffset, s.Name)
				if s.Record < 0 {
					require.Empty(t, res.RecordErrors, s.Name)
				} else {
					require.Len(t, res.RecordErrors, 1, s.Name)
					require.Equal(t, s.Record, res.RecordErrors[0].Index, s.Name)
					require.NotEmpty(t, res.RecordErrors[0].Message, s.Name)
				}
			}
			for _, bomb := range [][]byte{
				recordtest.Bomb(record.CodecZstd, 64<<20, simEpochMs),
				recordtest.ZstdRLEBomb(2<<30, simEpochMs),
				recordtest.Bomb(record.CodecGzip, 64<<20, simEpochMs),
				recordtest.Bomb(record.CodecLZ4, 64<<20, simEpochMs),
				recordtest.Bomb(record.CodecSnappy, 17<<20, simEpochMs),
				recordtest.Bomb(record.CodecSnappy, 2<<30, simEpochMs),
			} {
				require.LessOrEqual(t, len(bomb), record.DefaultMaxBatchBytes, "within max.message.bytes")
				res := r.produce(p, bomb, -1)
				require.ErrorIs(t, res.Err, record.ErrDecompressedTooLarge)
			}
			require.Zero(t, p.LogEndOffset(), "nothing appended")
			res := r.produce(p, batch(t, 3, record.WithCompression(record.CodecZstd)), -1)
			require.NoError(t, res.Err)
			require.Zero(t, res.BaseOffset)
		})
	}
}

// TestProduceChecksEveryRecordTimestamp: message.timestamp.*.max.ms
// applies to every record's create time, not only the header's first and
// largest (a later record far in the past passed), and the record errors
// name the records out of range.
func TestProduceChecksEveryRecordTimestamp(t *testing.T) {
	r := newRig(t, 41)
	r.createTopic("ts", topicID(41), 1, map[string]string{
		"message.timestamp.before.max.ms": "3600000", "message.timestamp.after.max.ms": "3600000"})
	p := r.online("ts", 0)
	now := r.Env.Now().UnixMilli()
	build := func(stamps ...int64) []byte {
		b := record.NewBuilder()
		for _, ts := range stamps {
			b.Append(ts, []byte("k"), []byte("v"))
		}
		out, err := b.AppendTo(nil)
		require.NoError(t, err)
		return out
	}
	old := r.produce(p, build(now, now-2*3600_000, now), 1)
	require.ErrorIs(t, old.Err, ErrInvalidTimestamp)
	require.Equal(t, []int32{1}, recordIndexes(old.RecordErrors))
	both := r.produce(p, build(now+2*3600_000, now, now-2*3600_000), 1)
	require.ErrorIs(t, both.Err, ErrInvalidTimestamp)
	require.Equal(t, []int32{2, 0}, recordIndexes(both.RecordErrors), "the earliest, then the latest")
	none := r.produce(p, build(record.NoTimestamp, now), 1)
	require.NoError(t, none.Err, "a record without a timestamp passes, as in Kafka")
	require.Equal(t, int64(2), p.LogEndOffset(), "only the last batch appended")
}

func recordIndexes(recs []RecordError) []int32 {
	var out []int32
	for _, r := range recs {
		out = append(out, r.Index)
	}
	return out
}

// TestProduceRefusesKeylessRecordsByTheSummary: a compacted topic's key
// rule names the first record without a key.
func TestProduceRefusesKeylessRecordsByTheSummary(t *testing.T) {
	r := newRig(t, 42)
	r.createTopic("c", topicID(42), 1, map[string]string{"cleanup.policy": "compact"})
	p := r.online("c", 0)
	b := record.NewBuilder(record.WithCompression(record.CodecLZ4))
	b.Append(simEpochMs, []byte("k"), []byte("v"))
	b.Append(simEpochMs, []byte("k"), []byte("v"))
	b.Append(simEpochMs, nil, []byte("v"))
	b.Append(simEpochMs, nil, []byte("v"))
	payload, err := b.AppendTo(nil)
	require.NoError(t, err)
	res := r.produce(p, payload, 1)
	require.ErrorIs(t, res.Err, record.ErrInvalidRecord)
	require.Contains(t, res.Err.Error(), "2 of 4 records have no key")
	require.Equal(t, []int32{2}, recordIndexes(res.RecordErrors))
	require.Contains(t, res.RecordErrors[0].Message, "Compacted topic cannot accept message without key")
	require.Zero(t, p.LogEndOffset())
}

// TestProduceSetsMaxTimestampFromTheRecords: a producer's header
// maxTimestamp below its records' is replaced by the largest record
// timestamp, as Kafka's LogValidator does, so that ListOffsets by time
// finds the record (it went by the header and missed it).
func TestProduceSetsMaxTimestampFromTheRecords(t *testing.T) {
	r := newRig(t, 43)
	p := r.newTopic("mt", topicID(43))
	b := record.NewBuilder()
	b.Append(simEpochMs, []byte("a"), []byte("1"))
	b.Append(simEpochMs+500, []byte("b"), []byte("2"))
	payload, err := b.AppendTo(nil)
	require.NoError(t, err)
	// The producer's header claims maxTimestamp = baseTimestamp.
	h, _ := record.ReadBatch(payload, len(payload))
	payload = record.Assemble(func() record.BatchHeader {
		x := h.Header()
		x.MaxTimestamp = simEpochMs
		return x
	}(), h.RecordBytes())
	require.NoError(t, r.produce(p, payload, 1).Err)
	off, err := p.ListOffset(simEpochMs+100, -1)
	require.NoError(t, err)
	require.Equal(t, int64(1), off.Offset)
	require.Equal(t, simEpochMs+int64(500), off.Timestamp)
	off, err = p.ListOffset(log.MaxTimestamp, -1)
	require.NoError(t, err)
	require.Equal(t, int64(1), off.Offset)
}

// TestProduceValidatedTakesABatchValidatedElsewhere: ValidateProduce is a
// pure function of the payload and the limits (what a worker runs), and
// the partition appends its result without reading the records again;
// its own rules still apply, by the current config.
func TestProduceValidatedTakesABatchValidatedElsewhere(t *testing.T) {
	r := newRig(t, 44)
	p := r.newTopic("pv", topicID(44))
	v := record.NewValidator() // a worker's
	produce := func(vb ValidatedBatch) ProduceResult {
		var res *ProduceResult
		p.ProduceValidated(vb, -1, r.Env.Now(), func(pr ProduceResult) { res = &pr })
		for i := 0; i < 1000 && res == nil; i++ {
			r.Run(time.Millisecond)
		}
		require.NotNil(t, res)
		return *res
	}
	limits := p.ProduceLimits()
	require.Equal(t, record.DefaultMaxBatchBytes, limits.MaxMessageBytes)
	require.Equal(t, 16*record.DefaultMaxBatchBytes, limits.Records.MaxDecompressedBytes)

	good := ValidateProduce(v, batch(t, 4, record.WithCompression(record.CodecSnappy)), limits)
	require.NoError(t, good.Err)
	require.Equal(t, int32(4), good.Summary.Records)
	res := produce(good)
	require.NoError(t, res.Err)
	require.Equal(t, int64(4), p.LogEndOffset())

	bad := ValidateProduce(v, recordtest.Malformed(simEpochMs)[1].Payload, limits)
	require.ErrorIs(t, bad.Err, record.ErrInvalidRecord)
	res = produce(bad)
	require.ErrorIs(t, res.Err, record.ErrInvalidRecord)
	require.Equal(t, []int32{0}, recordIndexes(res.RecordErrors))

	// max.message.bytes goes down while a batch is being validated.
	big := ValidateProduce(v, batch(t, 40), limits)
	require.NoError(t, big.Err)
	small := "200"
	r.apply(&meta.ConfigRecord{ResourceType: meta.ConfigResourceTopic, ResourceName: "pv", Key: "max.message.bytes", Value: &small})
	p = r.online("pv", 0)
	res = produce(big)
	require.ErrorIs(t, res.Err, record.ErrBatchTooLarge)
	require.Equal(t, int64(4), p.LogEndOffset(), "nothing more appended")
}
