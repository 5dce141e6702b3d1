package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/record/recordtest"
)

// produceBatches is an acks=all Produce of version v with one batch per
// (topic, partition, batch) given, in order.
func produceBatches(v int16, parts ...producePart) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = v, -1, 30_000
	for _, p := range parts {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.topic {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = p.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p.partition, p.batch
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

type producePart struct {
	topic     string
	partition int32
	batch     []byte
}

// TestProduceRecordErrors: Produce answers a batch whose records do not
// validate with INVALID_RECORD, and from v8 with the record at fault
// (record_errors' batch_index and message) and an error message, as
// Kafka's RecordValidationException does; a bomb gets MESSAGE_TOO_LARGE;
// the valid batches of the same request append, and nothing of the
// refused ones does.
func TestProduceRecordErrors(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("v", 2, nil)
	ts := h.ClientEnv().Now().UnixMilli()
	shapes := recordtest.Malformed(ts)
	for _, version := range []int16{3, 7, 8, 9, 12} {
		for _, s := range shapes {
			good := h.Batch(nil, "good")
			resp := h.Do(produceBatches(version,
				producePart{"v", 0, append([]byte{}, s.Payload...)},
				producePart{"v", 1, good},
			)).(*kmsg.ProduceResponse)
			bad, ok := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
			require.Equal(t, kerr.InvalidRecord.Code, bad.ErrorCode, "v%d %s: %v", version, s.Name, kerr.ErrorForCode(bad.ErrorCode))
			require.Equal(t, int64(-1), bad.BaseOffset)
			require.Zero(t, ok.ErrorCode, "v%d %s: the other partition's batch appends", version, s.Name)
			if version < 8 {
				require.Nil(t, bad.ErrorMessage, "not encoded before v8")
				require.Empty(t, bad.ErrorRecords)
				continue
			}
			require.NotNil(t, bad.ErrorMessage)
			require.Contains(t, *bad.ErrorMessage, "invalid record")
			if s.Record < 0 {
				require.Empty(t, bad.ErrorRecords, "v%d %s: the batch's fault, no record's", version, s.Name)
				continue
			}
			require.Len(t, bad.ErrorRecords, 1, "v%d %s", version, s.Name)
			require.Equal(t, s.Record, bad.ErrorRecords[0].RelativeOffset, "v%d %s", version, s.Name)
			require.NotEmpty(t, *bad.ErrorRecords[0].ErrorMessage)
		}
	}
	// Nothing of the refused batches is stored: partition 0 is empty, and
	// a valid batch to it now appends at offset 0.
	got := h.Produce("v", 0, "after")
	require.Zero(t, got.ErrorCode)
	require.Zero(t, got.BaseOffset)
	_, values := h.Fetch("v", 0, 0)
	require.Equal(t, []string{"after"}, values)

	for _, bomb := range [][]byte{
		recordtest.Bomb(record.CodecZstd, 64<<20, ts),
		recordtest.ZstdRLEBomb(2<<30, ts),
		recordtest.Bomb(record.CodecGzip, 64<<20, ts),
	} {
		resp := h.Do(produceBatches(9, producePart{"v", 0, bomb})).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		require.Equal(t, kerr.MessageTooLarge.Code, p.ErrorCode, "%v", kerr.ErrorForCode(p.ErrorCode))
		require.Contains(t, *p.ErrorMessage, "decompresses to more than")
	}
	got = h.Produce("v", 0, "last")
	require.Zero(t, got.ErrorCode)
	require.Equal(t, int64(1), got.BaseOffset, "no bomb was stored")
}

// TestProduceRecordErrorsOfTopicRules: a compacted topic's keyless records
// and out-of-range timestamps name their records too (INVALID_RECORD,
// INVALID_TIMESTAMP).
func TestProduceRecordErrorsOfTopicRules(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("c", 1, map[string]string{"cleanup.policy": "compact", "message.timestamp.after.max.ms": "60000"})
	now := h.ClientEnv().Now().UnixMilli()
	// refused sends a batch whose second record breaks a rule of the topic.
	refused := func(batch []byte, code int16, message string) {
		t.Helper()
		p := h.Do(produceBatches(9, producePart{"c", 0, batch})).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		require.Equal(t, code, p.ErrorCode)
		require.Len(t, p.ErrorRecords, 1)
		require.Equal(t, int32(1), p.ErrorRecords[0].RelativeOffset)
		require.Contains(t, *p.ErrorRecords[0].ErrorMessage, message)
	}
	b := record.NewBuilder(record.WithCompression(record.CodecZstd))
	b.Append(now, []byte("k"), []byte("v"))
	b.Append(now, nil, []byte("v"))
	keyless, err := b.AppendTo(nil)
	require.NoError(t, err)
	refused(keyless, kerr.InvalidRecord.Code, "Compacted topic cannot accept message without key")

	b = record.NewBuilder()
	b.Append(now, []byte("a"), []byte("v"))
	b.Append(now+3_600_000, []byte("b"), []byte("v"))
	future, err := b.AppendTo(nil)
	require.NoError(t, err)
	refused(future, kerr.InvalidTimestamp.Code, "is out of range")

	b = record.NewBuilder()
	b.Append(now, []byte("a"), []byte("v"))
	ok, err := b.AppendTo(nil)
	require.NoError(t, err)
	p := h.Do(produceBatches(9, producePart{"c", 0, ok})).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	require.Zero(t, p.ErrorCode)
	require.Zero(t, p.BaseOffset, "nothing of the refused batches was stored")
}
