package replica

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
)

func TestProduceAcksAfterFsyncAndHighWatermarkFollowsDurability(t *testing.T) {
	r := newRig(t, 1)
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncLatencyMin: 5 * time.Millisecond, SyncLatencyMax: 5 * time.Millisecond})
	r.createTopic("orders", topicID(1), 2, nil)
	p := r.online("orders", 0)

	var res *ProduceResult
	p.Produce(batch(t, 3), -1, r.Env.Now(), func(pr ProduceResult) { res = &pr })
	require.Nil(t, res, "acks=all answers only once the batch is fsynced")
	require.Equal(t, int64(0), p.HighWatermark(), "consumers see nothing before fsync")
	rr, err := p.Read(0, 1<<20, -1)
	require.NoError(t, err)
	require.Zero(t, rr.Size, "a read stops at the high watermark")
	r.Run(10 * time.Millisecond)
	require.NotNil(t, res)
	require.NoError(t, res.Err)
	require.Equal(t, int64(0), res.BaseOffset)
	require.Equal(t, int64(3), p.HighWatermark())
	require.GreaterOrEqual(t, p.Log().DurableOffset(), int64(3))

	rr, err = p.Read(0, 1<<20, -1)
	require.NoError(t, err)
	require.Positive(t, rr.Size)
	require.Equal(t, int64(0), rr.FirstOffset)
	rr.Release()

	// acks=0 answers at once; the high watermark follows the flush.
	got := r.produce(p, batch(t, 2), 0)
	require.NoError(t, got.Err)
	require.Equal(t, int64(3), got.BaseOffset)
	r.Run(20 * time.Millisecond)
	require.Equal(t, int64(5), p.HighWatermark())
}

func TestPageCacheModeExposesBeforeFsync(t *testing.T) {
	r := newRig(t, 2)
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncLatencyMin: 50 * time.Millisecond, SyncLatencyMax: 50 * time.Millisecond})
	r.createTopic("fast", topicID(2), 1, map[string]string{"flush.messages": "1000"})
	p := r.online("fast", 0)
	var res *ProduceResult
	p.Produce(batch(t, 4), -1, r.Env.Now(), func(pr ProduceResult) { res = &pr })
	require.NotNil(t, res, "page-cache mode acknowledges after the append")
	require.NoError(t, res.Err)
	require.Equal(t, int64(4), p.HighWatermark(), "and exposes what is not yet durable, as Kafka does")
	require.Less(t, p.Log().DurableOffset(), int64(4))
}

func TestProduceValidation(t *testing.T) {
	r := newRig(t, 3)
	r.createTopic("v", topicID(3), 1, map[string]string{"max.message.bytes": "200", "message.timestamp.before.max.ms": "3600000"})
	p := r.online("v", 0)
	cases := []struct {
		name    string
		payload []byte
		acks    int16
		want    error
	}{
		{"bad acks", batch(t, 1), 2, ErrInvalidRequiredAcks},
		{"two batches", append(batch(t, 1), batch(t, 1)...), 1, record.ErrInvalidRecord},
		{"empty", nil, 1, record.ErrInvalidRecord},
		{"too large", batch(t, 40), 1, record.ErrBatchTooLarge},
		{"timestamp too old", batch(t, 1), 1, ErrInvalidTimestamp}, // the builder's timestamps are at the sim epoch
	}
	corrupt := batch(t, 1)
	corrupt[len(corrupt)-1] ^= 0xff
	cases = append(cases, struct {
		name    string
		payload []byte
		acks    int16
		want    error
	}{"crc", corrupt, 1, record.ErrCRCMismatch})
	r.Run(2 * time.Hour) // the clock moves past the before.max bound
	for _, tc := range cases {
		res := r.produce(p, tc.payload, tc.acks)
		require.ErrorIs(t, res.Err, tc.want, tc.name)
		require.Equal(t, int64(-1), res.BaseOffset, tc.name)
	}
	require.Equal(t, int64(0), p.LogEndOffset(), "nothing was appended")
}

func TestLogAppendTimeStampsTheBatch(t *testing.T) {
	r := newRig(t, 4)
	r.createTopic("lat", topicID(4), 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	p := r.online("lat", 0)
	now := r.Env.Now().UnixMilli()
	res := r.produce(p, batch(t, 2), 1)
	require.NoError(t, res.Err)
	require.Equal(t, now, res.LogAppendTime)
	off, err := p.ListOffset(log.MaxTimestamp, -1)
	require.NoError(t, err)
	require.Equal(t, res.LogAppendTime, off.Timestamp)
}

func TestIdempotentDuplicatesAndSequences(t *testing.T) {
	r := newRig(t, 5)
	p := r.newTopic("idem", topicID(5))
	first := batch(t, 2, record.WithProducer(7, 0, 0))
	res := r.produce(p, append([]byte(nil), first...), -1)
	require.NoError(t, res.Err)
	require.Equal(t, int64(0), res.BaseOffset)
	second := r.produce(p, batch(t, 3, record.WithProducer(7, 0, 2)), -1)
	require.NoError(t, second.Err)
	require.Equal(t, int64(2), second.BaseOffset)

	// A retry of the first batch is answered with its original offsets
	// and appends nothing.
	dup := r.produce(p, batch(t, 2, record.WithProducer(7, 0, 0)), -1)
	require.NoError(t, dup.Err)
	require.Equal(t, int64(0), dup.BaseOffset)
	require.Equal(t, int64(5), p.LogEndOffset())

	gap := r.produce(p, batch(t, 1, record.WithProducer(7, 0, 9)), -1)
	require.ErrorIs(t, gap.Err, producer.ErrOutOfOrderSequence)
	fenced := r.produce(p, batch(t, 1, record.WithProducer(7, -1+0, 5)), -1)
	require.Error(t, fenced.Err)

	// The state survives a restart of the process: the snapshot written
	// at shutdown or the log's tail rebuilds it.
	p = r.restart(r.Proc.Kill, "idem")
	again := r.produce(p, batch(t, 3, record.WithProducer(7, 0, 2)), -1)
	require.NoError(t, again.Err)
	require.Equal(t, int64(2), again.BaseOffset, "a retry after a restart is still a duplicate")
	require.Equal(t, int64(5), p.LogEndOffset())
}

func TestLeadershipAndEpochChecks(t *testing.T) {
	r := newRig(t, 6)
	p := r.newTopic("lead", topicID(6))
	res := r.produce(p, batch(t, 1), 1)
	require.NoError(t, res.Err)

	_, err := p.Read(0, 100, 3)
	require.ErrorIs(t, err, ErrUnknownLeaderEpoch)
	// Leadership moves to broker 2 (a reassignment that keeps a replica
	// here): the partition stays hosted but serves nothing.
	two := int32(2)
	r.apply(&meta.PartitionChangeRecord{TopicID: topicID(6), Partition: 0, Replicas: []int32{testNode, 2}, ISR: []int32{testNode, 2}})
	r.apply(&meta.PartitionChangeRecord{TopicID: topicID(6), Partition: 0, Leader: &two})
	require.Equal(t, int32(2), p.leader)
	require.Equal(t, int32(1), p.LeaderEpoch())
	res = r.produce(p, batch(t, 1), 1)
	require.ErrorIs(t, res.Err, ErrNotLeader)
	_, err = p.Read(0, 100, -1)
	require.True(t, errors.Is(err, ErrNotLeader), "%v", err)
	r.apply(&meta.PartitionChangeRecord{TopicID: topicID(6), Partition: 0, Leader: ptr(int32(testNode))})
	p = r.online("lead", 0)
	_, err = p.Read(0, 100, 1)
	require.ErrorIs(t, err, ErrFencedLeaderEpoch, "a fetch from the previous epoch")

	_, err = r.m.Lookup("nope", 0)
	require.ErrorIs(t, err, ErrUnknownTopicOrPartition)
}

func TestDeleteRecordsAndListOffsets(t *testing.T) {
	r := newRig(t, 7)
	p := r.newTopic("del", topicID(7))
	for i := 0; i < 4; i++ {
		require.NoError(t, r.produce(p, batch(t, 5), -1).Err)
	}
	latest, err := p.ListOffset(log.LatestTimestamp, -1)
	require.NoError(t, err)
	require.Equal(t, int64(20), latest.Offset)

	var low int64 = -2
	var derr error
	p.DeleteRecords(7, func(lw int64, err error) { low, derr = lw, err })
	r.Run(50 * time.Millisecond)
	require.NoError(t, derr)
	require.Equal(t, int64(7), low)
	earliest, err := p.ListOffset(log.EarliestTimestamp, -1)
	require.NoError(t, err)
	require.Equal(t, int64(7), earliest.Offset)
	_, err = p.Read(3, 100, -1)
	require.ErrorIs(t, err, log.ErrOffsetOutOfRange)

	p.DeleteRecords(25, func(lw int64, err error) { low, derr = lw, err })
	r.Run(10 * time.Millisecond)
	require.ErrorIs(t, derr, log.ErrOffsetOutOfRange)
	p.DeleteRecords(-1, func(lw int64, err error) { low, derr = lw, err })
	r.Run(50 * time.Millisecond)
	require.NoError(t, derr)
	require.Equal(t, int64(20), low, "-1 deletes up to the high watermark")
}

func TestTopicDeletionAndRecreation(t *testing.T) {
	r := newRig(t, 8)
	p := r.newTopic("gone", topicID(8))
	require.NoError(t, r.produce(p, batch(t, 3), -1).Err)
	r.apply(&meta.RemoveTopicRecord{TopicID: topicID(8)})
	r.Run(100 * time.Millisecond)
	_, err := r.m.Lookup("gone", 0)
	require.ErrorIs(t, err, ErrUnknownTopicOrPartition)
	_, ok := r.Proc.Disk().ReadFile("gone-0/partition.metadata")
	require.False(t, ok, "the directory is deleted")

	// Recreated under the same name: an empty log, a new id.
	r.createTopic("gone", topicID(9), 1, nil)
	p2 := r.online("gone", 0)
	require.NotSame(t, p, p2)
	require.Equal(t, int64(0), p2.LogEndOffset())
	md, ok := r.Proc.Disk().ReadFile("gone-0/partition.metadata")
	require.True(t, ok)
	require.Contains(t, string(md), topicID(9).String())
}

func TestStaleDirectoryOfARecreatedTopicIsReplaced(t *testing.T) {
	r := newRig(t, 9)
	p := r.newTopic("x", topicID(10))
	require.NoError(t, r.produce(p, batch(t, 3), -1).Err)
	// While the broker is down, the topic is deleted and recreated.
	r.Proc.Kill()
	img := meta.Empty()
	r.img, r.pos = img, 0
	r.Proc.Start()
	r.Run(0)
	r.createTopic("x", topicID(11), 1, nil)
	p = r.online("x", 0)
	require.Equal(t, int64(0), p.LogEndOffset(), "the old incarnation's data is not served as the new topic's")
}

func TestConfigChangeReopensTheLog(t *testing.T) {
	r := newRig(t, 10)
	p := r.newTopic("cfg", topicID(12))
	require.NoError(t, r.produce(p, batch(t, 3), -1).Err)
	v := "2048"
	r.apply(&meta.ConfigRecord{ResourceType: meta.ConfigResourceTopic, ResourceName: "cfg", Key: "segment.bytes", Value: &v})
	p = r.online("cfg", 0)
	require.Equal(t, int64(2048), p.Log().Config().SegmentBytes)
	require.Equal(t, int64(3), p.HighWatermark(), "nothing lost across the reopen")
}

func TestFailedSyncTakesThePartitionOfflineAndItRecovers(t *testing.T) {
	r := newRig(t, 11)
	p := r.newTopic("flaky", topicID(13))
	require.NoError(t, r.produce(p, batch(t, 2), -1).Err)
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncFailProbability: 1})
	res := r.produce(p, batch(t, 2), -1)
	require.ErrorIs(t, res.Err, ErrStorage)
	_, err := p.Read(0, 100, -1)
	require.ErrorIs(t, err, ErrStorage)
	r.Proc.Disk().SetFaults(sim.DiskFaults{})
	p = r.online("flaky", 0)
	require.Equal(t, int64(2), p.HighWatermark(), "what was acknowledged survives; the failed batch is dropped")
	require.NoError(t, r.produce(p, batch(t, 1), -1).Err)
}

func TestRetentionDeletesOldSegments(t *testing.T) {
	r := newRig(t, 12)
	r.createTopic("ret", topicID(14), 1, map[string]string{"segment.bytes": "1024", "retention.bytes": "2048"})
	p := r.online("ret", 0)
	for i := 0; i < 100; i++ {
		require.NoError(t, r.produce(p, batch(t, 5), -1).Err)
	}
	before := len(p.Log().Segments())
	require.Greater(t, before, 5)
	r.m.retentionCheckNow()
	r.Run(100 * time.Millisecond)
	require.Less(t, len(p.Log().Segments()), before)
	require.LessOrEqual(t, p.Size(), int64(2048+1024))
	require.Positive(t, p.LogStartOffset())
}

func ptr[T any](v T) *T { return &v }

func TestFullDiskFailsAppendsButServesReadsAndRecovers(t *testing.T) {
	r := newRig(t, 13)
	r.createTopic("full", topicID(15), 2, nil)
	a := r.online("full", 0)
	b := r.online("full", 1)
	require.NoError(t, r.produce(a, batch(t, 3), -1).Err)
	used := r.Proc.Disk().Stats().UsedBytes
	r.Proc.Disk().SetFaults(sim.DiskFaults{CapacityBytes: used})
	res := r.produce(a, batch(t, 50), -1)
	require.ErrorIs(t, res.Err, ErrStorage, "no room: KAFKA_STORAGE_ERROR")
	// Reads and the other partition's reads go on.
	rr, err := a.Read(0, 1<<20, -1)
	require.NoError(t, err)
	require.Positive(t, rr.Size)
	rr.Release()
	_, err = b.Read(0, 1<<20, -1)
	require.NoError(t, err)
	// Room again: appends succeed, nothing acknowledged was lost.
	r.Proc.Disk().SetFaults(sim.DiskFaults{})
	a = r.online("full", 0)
	res = r.produce(a, batch(t, 2), -1)
	require.NoError(t, res.Err)
	require.Equal(t, int64(3), res.BaseOffset)
}

func TestCompactedTopicKeepsTheLatestValuePerKey(t *testing.T) {
	r := newRig(t, 14)
	r.createTopic("compacted", topicID(16), 1, map[string]string{"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"})
	p := r.online("compacted", 0)
	// Three keys written over and over: most records are superseded.
	for i := 0; i < 60; i++ {
		b := record.NewBuilder()
		b.Append(1_767_225_600_000+int64(i), []byte{byte('a' + i%3)}, []byte{byte(i)})
		payload, err := b.AppendTo(nil)
		require.NoError(t, err)
		require.NoError(t, r.produce(p, payload, -1).Err)
	}
	noKeyBuilder := record.NewBuilder()
	noKeyBuilder.Append(1, nil, []byte("x"))
	noKey, err := noKeyBuilder.AppendTo(nil)
	require.NoError(t, err)
	require.ErrorIs(t, r.produce(p, noKey, -1).Err, record.ErrInvalidRecord, "a compacted topic refuses records without a key")
	before := p.Size()
	for i := 0; i < 20 && p.Size() >= before; i++ {
		r.m.retentionCheckNow()
		r.Run(100 * time.Millisecond)
	}
	require.Less(t, p.Size(), before, "the cleaner rewrote the dirty segments")
	// Every key's latest value is still there.
	latest := map[byte]byte{}
	for off := p.LogStartOffset(); off < p.HighWatermark(); {
		rr, err := p.Read(off, 1<<20, -1)
		require.NoError(t, err)
		if rr.Size == 0 {
			break
		}
		buf := make([]byte, rr.Size)
		_, err = rr.File.ReadAt(buf, rr.Position)
		require.NoError(t, err)
		rr.Release()
		sp := record.NewSplitter(buf, len(buf), record.CheckStored)
		for sp.Next() {
			it := sp.Batch()
			rd := record.NewRecordReader(record.NewDecompressor(record.DefaultMaxDecompressedBytes))
			require.NoError(t, rd.Reset(it))
			for rd.Next() {
				rec := rd.Record()
				latest[rec.Key[0]] = rec.Value[0]
			}
			off = it.NextOffset()
		}
	}
	require.Equal(t, map[byte]byte{'a': 57, 'b': 58, 'c': 59}, latest)
}

func TestSegmentMsRollsAndRetentionMsDeletes(t *testing.T) {
	r := newRig(t, 15)
	r.createTopic("timed", topicID(17), 1, map[string]string{"segment.ms": "60000", "retention.ms": "120000"})
	p := r.online("timed", 0)
	stamped := func() []byte {
		b := record.NewBuilder()
		b.Append(r.Env.Now().UnixMilli(), []byte("k"), []byte("v"))
		out, err := b.AppendTo(nil)
		require.NoError(t, err)
		return out
	}
	require.NoError(t, r.produce(p, stamped(), -1).Err)
	r.Run(90 * time.Second)
	require.NoError(t, r.produce(p, stamped(), -1).Err)
	require.Len(t, p.Log().Segments(), 2, "segment.ms rolled the first segment")
	r.m.retentionCheckNow()
	require.Equal(t, int64(0), p.LogStartOffset(), "the first segment is 90 s old, within retention.ms")
	r.Run(60 * time.Second)
	r.m.retentionCheckNow()
	r.Run(50 * time.Millisecond)
	require.Equal(t, int64(1), p.LogStartOffset(), "at 150 s the first segment is past retention.ms")
}

func TestProduceHeldWhileOpeningIsAnsweredWhenTheOpenFails(t *testing.T) {
	r := newRig(t, 16)
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncFailProbability: 1})
	r.createTopic("doomed", topicID(18), 1, nil)
	p, err := r.m.Lookup("doomed", 0)
	require.NoError(t, err)
	require.False(t, p.Online())
	var res *ProduceResult
	p.Produce(batch(t, 1), -1, r.Env.Now(), func(pr ProduceResult) { res = &pr })
	require.Nil(t, res, "held while the log opens")
	r.Run(50 * time.Millisecond)
	require.NotNil(t, res, "answered once the open failed")
	require.ErrorIs(t, res.Err, ErrStorage)
}
