package interop

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franz-go's codecs and acks as the produce matrix visits them; codec is
// the RecordBatch attributes' compression id.
var (
	franzCodecs = []struct {
		name  string
		codec kgo.CompressionCodec
		id    int16
	}{
		{"none", kgo.NoCompression(), 0},
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	}
	franzAcks = []struct {
		name       string
		opts       []kgo.Opt
		acked      bool // the producer learns offsets
		idempotent bool
	}{
		{"acks0", []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}, false, false},
		{"acks1", []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}, true, false},
		{"acksall-idempotent", nil, true, true}, // kgo's default
		{"acksall", []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite()}, true, false},
	}
)

func toKgo(topic string, r rec) *kgo.Record {
	kr := &kgo.Record{Topic: topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return kr
}

func fromKgo(kr *kgo.Record) rec {
	r := rec{Partition: kr.Partition, Offset: kr.Offset, Key: kr.Key, Value: kr.Value, Timestamp: kr.Timestamp}
	for _, h := range kr.Headers {
		r.Headers = append(r.Headers, header{Key: h.Key, Value: h.Value})
	}
	return r
}

// produceKgo writes rs (each to its own partition, in order) with a new
// client made with opts, and records the acknowledged offsets in rs.
func produceKgo(t *testing.T, addrs []string, topic string, rs []rec, opts ...kgo.Opt) {
	t.Helper()
	cl := newClient(t, addrs, append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	krs := make([]*kgo.Record, len(rs))
	for i := range rs {
		krs[i] = toKgo(topic, rs[i])
	}
	results := cl.ProduceSync(ctxFor(t, opTimeout), krs...)
	require.NoError(t, results.FirstErr(), "produce to %s", topic)
	for i := range rs {
		rs[i].Offset = krs[i].Offset
	}
	cl.Close()
}

// writeRecords creates topic with o.partitions partitions and writes n
// records generated from seed with o to it (produceKgo, with opts), and
// returns them with their offsets.
func writeRecords(t *testing.T, adm *kadm.Client, addrs []string, topic string, seed uint64, n int, o genOpts, opts ...kgo.Opt) []rec {
	t.Helper()
	createTopic(t, adm, topic, o.partitions, nil)
	rs := genRecords(seed, n, o)
	produceKgo(t, addrs, topic, rs, opts...)
	return rs
}

// consumeKgo reads want records from topic's partitions starting at
// offsets, with a new client, and fails on a fetch error or if they do not
// all arrive within opTimeout.
func consumeKgo(t *testing.T, addrs []string, topic string, offsets map[int32]kgo.Offset, want int, opts ...kgo.Opt) []rec {
	t.Helper()
	cl := newClient(t, addrs, append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, opts...)...)
	defer cl.Close()
	return pollKgo(t, cl, want)
}

// pollKgo polls cl until it has want records.
func pollKgo(t *testing.T, cl *kgo.Client, want int) []rec {
	t.Helper()
	ctx := ctxFor(t, opTimeout)
	var got []rec
	for len(got) < want {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			require.Failf(t, "records missing", "read %d of %d records within %v", len(got), want, opTimeout)
		}
		fetches.EachError(func(topic string, p int32, err error) {
			require.NoError(t, err, "fetch %s[%d]", topic, p)
		})
		fetches.EachRecord(func(kr *kgo.Record) { got = append(got, fromKgo(kr)) })
	}
	return got
}

// atStart is the start of each of partitions partitions.
func atStart(partitions int32) map[int32]kgo.Offset {
	m := map[int32]kgo.Offset{}
	for p := range partitions {
		m[p] = kgo.NewOffset().AtStart()
	}
	return m
}

// requireEndOffsets checks that each partition's log end offset is want's.
func requireEndOffsets(t *testing.T, adm *kadm.Client, topic string, want map[int32]int64) {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctxFor(t, opTimeout), topic)
	require.NoError(t, err)
	require.NoError(t, ends.Error())
	for p, off := range want {
		lo, ok := ends.Lookup(topic, p)
		require.True(t, ok, "end offset of %s[%d] listed", topic, p)
		require.Equal(t, off, lo.Offset, "end offset of %s[%d]", topic, p)
	}
}

// counts is how many records each partition holds.
func counts(rs []rec) map[int32]int64 {
	m := map[int32]int64{}
	for _, r := range rs {
		m[r.Partition]++
	}
	return m
}

// fetchRaw sends one Fetch for a partition from offset and returns the
// partition's answer. kgo sends the highest version both sides speak, so
// the topic is named both ways (by name before v13, by id from v13).
func fetchRaw(t *testing.T, addr, topic string, partition int32, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	cl := newClient(t, []string{addr})
	md, err := kadm.NewClient(cl).Metadata(ctxFor(t, opTimeout), topic)
	require.NoError(t, err)
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 100
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, md.Topics[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	resp, err := req.RequestWith(ctxFor(t, opTimeout), cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// rawBatches fetches a partition's record batches raw, as stored (those
// that fit in one 1 MiB fetch from offset 0).
func rawBatches(t *testing.T, addr, topic string, partition int32) []kmsg.RecordBatch {
	t.Helper()
	part := fetchRaw(t, addr, topic, partition, 0)
	require.NoError(t, kerr.ErrorForCode(part.ErrorCode))
	var batches []kmsg.RecordBatch
	for raw := part.RecordBatches; len(raw) > 0; {
		var batch kmsg.RecordBatch
		require.NoError(t, batch.ReadFrom(raw), "batch %d of %s[%d]", len(batches), topic, partition)
		length := 12 + int(batch.Length) // FirstOffset and Length precede what Length counts
		if length > len(raw) {
			break // a partial batch at the end of the fetch
		}
		batches = append(batches, batch)
		raw = raw[length:]
	}
	require.NotEmpty(t, batches, "%s[%d] has batches", topic, partition)
	return batches
}

// requireCodec checks that every stored batch of the partitions is
// compressed with codec (its RecordBatch attributes id) or, when
// orNone, left uncompressed: librdkafka sends a batch uncompressed when
// compression would not shrink it. At least one batch must have codec.
func requireCodec(t *testing.T, addr, topic string, partitions int32, codec int16, orNone bool) {
	t.Helper()
	seen := false
	for p := range partitions {
		for i, b := range rawBatches(t, addr, topic, p) {
			got := b.Attributes & 0x7
			seen = seen || got == codec
			if got != codec && !(orNone && got == 0) {
				require.Failf(t, "wrong codec", "%s[%d] batch %d: compression codec %d, want %d", topic, p, i, got, codec)
			}
		}
	}
	require.True(t, seen, "no batch of %s is compressed with codec %d", topic, codec)
}

// TestFranzGo drives franz-go's kgo and kadm against one node: the produce
// matrix, every way to start consuming, ListOffsets and topic
// administration.
func TestFranzGo(t *testing.T) {
	n := startNode(t, t.TempDir())
	addrs := []string{n.Addr()}
	adm := newAdmin(t, n.Addr())

	t.Run("produce", func(t *testing.T) {
		// Every compression with every acks setting: records with null
		// and empty keys and values, binary headers, explicit timestamps
		// on even rows of the matrix and the producer's clock on odd ones,
		// read back byte for byte from the start of each partition.
		const partitions, records = 3, 60
		row := 0
		for _, codec := range franzCodecs {
			for _, acks := range franzAcks {
				row++
				timestamps := row%2 == 0
				t.Run(codec.name+"/"+acks.name, func(t *testing.T) {
					topic := fmt.Sprintf("franz-%s-%s", codec.name, acks.name)
					createTopic(t, adm, topic, partitions, nil)
					rs := genRecords(uint64(row), records, genOpts{partitions: partitions, nulls: true, timestamps: timestamps})
					from := time.Now()
					produceKgo(t, addrs, topic, rs, append([]kgo.Opt{kgo.ProducerBatchCompression(codec.codec)}, acks.opts...)...)
					got := consumeKgo(t, addrs, topic, atStart(partitions), len(rs))
					requireSameRecords(t, rs, got, zeros(partitions), checkOpts{
						nullsDistinct: true, offsetsKnown: acks.acked, from: from, to: time.Now(),
					})
					requireEndOffsets(t, adm, topic, counts(rs))

					// Stored as the producer sent it: compressed with its
					// codec (kgo sends a batch that compression would not
					// shrink uncompressed), with a producer id only when
					// idempotent.
					requireCodec(t, n.Addr(), topic, partitions, codec.id, true)
					for p := range int32(partitions) {
						for _, batch := range rawBatches(t, n.Addr(), topic, p) {
							if acks.idempotent {
								require.GreaterOrEqual(t, batch.ProducerID, int64(0), "an idempotent batch's producer id")
							} else {
								require.Equal(t, int64(-1), batch.ProducerID, "a non-idempotent batch's producer id")
							}
						}
					}
				})
			}
		}
	})

	// One topic for the consume and offsets cases: two partitions of
	// records with explicit timestamps and a 300 KiB record.
	const cTopic, cParts = "franz-consume", 2
	crs := writeRecords(t, adm, addrs, cTopic, 100, 200, genOpts{partitions: cParts, nulls: true, timestamps: true, big: 300 << 10},
		kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	cBy := byPartition(crs)

	t.Run("consume/earliest", func(t *testing.T) {
		got := consumeKgo(t, addrs, cTopic, atStart(cParts), len(crs))
		requireSameRecords(t, crs, got, zeros(cParts), checkOpts{nullsDistinct: true, offsetsKnown: true})
	})

	t.Run("consume/offset", func(t *testing.T) {
		start := map[int32]int64{0: 37, 1: 99}
		offsets := map[int32]kgo.Offset{}
		var want []rec
		for p, o := range start {
			offsets[p] = kgo.NewOffset().At(o)
			want = append(want, cBy[p][o:]...)
		}
		got := consumeKgo(t, addrs, cTopic, offsets, len(want))
		requireSameRecords(t, want, got, start, checkOpts{nullsDistinct: true, offsetsKnown: true})
	})

	t.Run("consume/timestamp", func(t *testing.T) {
		// The first record at or after the 121st record's timestamp;
		// record i was written at base+i ms, round robin over partitions.
		ts := crs[121].Timestamp
		offsets := map[int32]kgo.Offset{}
		start := map[int32]int64{}
		var want []rec
		for p := range int32(cParts) {
			offsets[p] = kgo.NewOffset().AfterMilli(ts.UnixMilli())
			i := slices.IndexFunc(cBy[p], func(r rec) bool { return !r.Timestamp.Before(ts) })
			require.GreaterOrEqual(t, i, 0)
			start[p] = int64(i)
			want = append(want, cBy[p][i:]...)
		}
		got := consumeKgo(t, addrs, cTopic, offsets, len(want))
		requireSameRecords(t, want, got, start, checkOpts{nullsDistinct: true, offsetsKnown: true})
	})

	t.Run("consume/latest", func(t *testing.T) {
		// A consumer from the end sees only what is written after it
		// started: it has listed the end offsets once it sends a Fetch.
		var fetching atomic.Bool
		cl := newClient(t, addrs,
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cTopic: {0: kgo.NewOffset().AtEnd(), 1: kgo.NewOffset().AtEnd()}}),
			kgo.FetchMaxWait(500*time.Millisecond),
			kgo.WithHooks(fetchHook{&fetching}))
		require.Eventually(t, fetching.Load, opTimeout, pollInterval, "the consumer never fetched")
		more := genRecords(101, 20, genOpts{partitions: cParts, nulls: true, timestamps: true})
		produceKgo(t, addrs, cTopic, more)
		got := pollKgo(t, cl, len(more))
		start := map[int32]int64{}
		for p := range int32(cParts) {
			start[p] = int64(len(cBy[p]))
		}
		requireSameRecords(t, more, got, start, checkOpts{nullsDistinct: true, offsetsKnown: true})
		crs = append(crs, more...)
		cBy = byPartition(crs)
	})

	t.Run("list-offsets", func(t *testing.T) {
		ctx := ctxFor(t, opTimeout)
		starts, err := adm.ListStartOffsets(ctx, cTopic)
		require.NoError(t, err)
		require.NoError(t, starts.Error())
		ends, err := adm.ListEndOffsets(ctx, cTopic)
		require.NoError(t, err)
		require.NoError(t, ends.Error())
		maxTS, err := adm.ListMaxTimestampOffsets(ctx, cTopic)
		require.NoError(t, err)
		require.NoError(t, maxTS.Error())
		for p := range int32(cParts) {
			s, _ := starts.Lookup(cTopic, p)
			e, _ := ends.Lookup(cTopic, p)
			require.Equal(t, int64(0), s.Offset, "start offset of partition %d", p)
			require.Equal(t, int64(len(cBy[p])), e.Offset, "end offset of partition %d", p)
			last := maxTimestamp(cBy[p])
			m, _ := maxTS.Lookup(cTopic, p)
			require.Equal(t, last.Offset, m.Offset, "max-timestamp offset of partition %d", p)
			require.Equal(t, last.Timestamp.UnixMilli(), m.Timestamp, "max timestamp of partition %d", p)
		}
		for _, i := range []int{0, 57, 120} {
			ts := crs[i].Timestamp.UnixMilli()
			after, err := adm.ListOffsetsAfterMilli(ctx, ts, cTopic)
			require.NoError(t, err)
			require.NoError(t, after.Error())
			for p := range int32(cParts) {
				j := slices.IndexFunc(cBy[p], func(r rec) bool { return r.Timestamp.UnixMilli() >= ts })
				lo, _ := after.Lookup(cTopic, p)
				require.Equal(t, cBy[p][j].Offset, lo.Offset, "offset after %d ms in partition %d", ts, p)
				require.Equal(t, cBy[p][j].Timestamp.UnixMilli(), lo.Timestamp, "timestamp after %d ms in partition %d", ts, p)
			}
		}
		// After the last timestamp: the end offset, timestamp -1.
		after, err := adm.ListOffsetsAfterMilli(ctx, time.Now().Add(time.Hour).UnixMilli(), cTopic)
		require.NoError(t, err)
		for p := range int32(cParts) {
			lo, _ := after.Lookup(cTopic, p)
			require.NoError(t, lo.Err)
			require.Equal(t, int64(len(cBy[p])), lo.Offset, "offset after the future in partition %d", p)
			require.Equal(t, int64(-1), lo.Timestamp)
		}
		// An unknown partition is an error of that partition.
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = cTopic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = 7, -1
		rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
		req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
		resp, err := req.RequestWith(ctx, newClient(t, addrs).SeedBrokers()[0])
		require.NoError(t, err)
		require.ErrorIs(t, kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode), kerr.UnknownTopicOrPartition)
	})

	t.Run("admin", func(t *testing.T) {
		franzAdmin(t, n.Addr(), n.NodeID())
	})

	t.Run("admin/configs", func(t *testing.T) {
		franzConfigs(t, n.Addr())
	})
	t.Run("admin/delete-records", func(t *testing.T) {
		franzDeleteRecords(t, n.Addr())
	})
	t.Run("admin/cluster-and-log-dirs", func(t *testing.T) {
		franzDescribe(t, n.Addr(), n.NodeID())
	})
	t.Run("auto-create", func(t *testing.T) {
		franzAutoCreate(t, n.Addr())
	})
}

// maxTimestamp is the first record with the largest timestamp.
func maxTimestamp(rs []rec) rec {
	best := rs[0]
	for _, r := range rs[1:] {
		if r.Timestamp.After(best.Timestamp) {
			best = r
		}
	}
	return best
}

// fetchHook reports that the client wrote a Fetch request.
type fetchHook struct{ fetching *atomic.Bool }

func (h fetchHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == kmsg.Fetch.Int16() && err == nil {
		h.fetching.Store(true)
	}
}

// franzAdmin creates, lists, describes, grows and deletes topics with
// kadm, and checks the errors Kafka gives for the usual mistakes.
func franzAdmin(t *testing.T, addr string, nodeID int32) {
	adm := newAdmin(t, addr)
	ctx := ctxFor(t, opTimeout)
	created, err := adm.CreateTopics(ctx, 2, 1, nil, "adm-a", "adm-b")
	require.NoError(t, err)
	require.NoError(t, created.Error())
	ids := map[string]kadm.TopicID{}
	for _, name := range []string{"adm-a", "adm-b"} {
		ct, err := created.On(name, nil)
		require.NoError(t, err)
		require.NotEqual(t, kadm.TopicID{}, ct.ID, "topic id of %s", name)
		require.Equal(t, int32(2), ct.NumPartitions)
		require.Equal(t, int16(1), ct.ReplicationFactor)
		ids[name] = ct.ID
		waitLeaders(t, adm, name, 2)
		waitServed(t, adm, name)
	}

	// Listed and described as created.
	listed, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	for name, id := range ids {
		td, ok := listed[name]
		require.True(t, ok, "%s listed", name)
		require.Equal(t, id, td.ID)
		require.False(t, td.IsInternal)
		require.Len(t, td.Partitions, 2)
		for p, pd := range td.Partitions {
			require.Equal(t, nodeID, pd.Leader, "leader of %s[%d]", name, p)
			require.Equal(t, []int32{nodeID}, pd.Replicas)
			require.Equal(t, []int32{nodeID}, pd.ISR)
			require.Empty(t, pd.OfflineReplicas)
		}
	}

	// The usual mistakes.
	// (kadm's CreateTopic returns the topic's error.)
	_, err = adm.CreateTopic(ctx, 1, 1, nil, "adm-a")
	require.ErrorIs(t, err, kerr.TopicAlreadyExists)
	_, err = adm.CreateTopic(ctx, 1, 3, nil, "adm-rf3")
	require.ErrorIs(t, err, kerr.InvalidReplicationFactor)
	_, err = adm.CreateTopic(ctx, 1, 1, nil, "no/slashes")
	require.ErrorIs(t, err, kerr.InvalidTopicException)
	gone, err := adm.DeleteTopics(ctx, "adm-never")
	require.NoError(t, err)
	dt, err := gone.On("adm-never", nil)
	require.NoError(t, err)
	require.ErrorIs(t, dt.Err, kerr.UnknownTopicOrPartition)

	// CreatePartitions: adm-a grows to 5, and the new partitions take
	// records.
	grown, err := adm.CreatePartitions(ctx, 3, "adm-a")
	require.NoError(t, err)
	require.NoError(t, grown.Error())
	waitLeaders(t, adm, "adm-a", 5)
	waitServed(t, adm, "adm-a")
	shrink, err := adm.UpdatePartitions(ctx, 2, "adm-a")
	require.NoError(t, err)
	require.ErrorIs(t, shrink.Error(), kerr.InvalidPartitions)
	rs := genRecords(7, 25, genOpts{partitions: 5, nulls: true, timestamps: true})
	produceKgo(t, []string{addr}, "adm-a", rs)
	got := consumeKgo(t, []string{addr}, "adm-a", atStart(5), len(rs))
	requireSameRecords(t, rs, got, zeros(5), checkOpts{nullsDistinct: true, offsetsKnown: true})

	// DeleteTopics: gone from Metadata, and the name can be used again.
	deleted, err := adm.DeleteTopics(ctx, "adm-a", "adm-b")
	require.NoError(t, err)
	require.NoError(t, deleted.Error())
	require.Eventually(t, func() bool {
		md, err := newAdmin(t, addr).Metadata(ctx) // a fresh client: kgo caches metadata
		if err != nil {
			return false
		}
		_, a := md.Topics["adm-a"]
		_, b := md.Topics["adm-b"]
		return !a && !b
	}, opTimeout, pollInterval, "deleted topics still listed")
	fresh := writeRecords(t, adm, []string{addr}, "adm-a", 8, 5, genOpts{partitions: 1, nulls: true})
	require.Equal(t, int64(0), fresh[0].Offset, "a re-created topic starts empty")
	got = consumeKgo(t, []string{addr}, "adm-a", atStart(1), len(fresh))
	requireSameRecords(t, fresh, got, zeros(1), checkOpts{nullsDistinct: true, offsetsKnown: true, from: time.Now().Add(-time.Minute), to: time.Now()})
}

// franzConfigs creates a topic with configs, describes them, alters them
// incrementally and with the legacy AlterConfigs, and checks that an
// unknown key is refused.
func franzConfigs(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	ctx := ctxFor(t, opTimeout)
	retention := "3600000"
	createTopic(t, adm, "cfg", 1, map[string]*string{"retention.ms": &retention})
	valueOf := func(key string) (string, kmsg.ConfigSource) {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, "cfg")
		require.NoError(t, err)
		rc, err := rcs.On("cfg", nil)
		require.NoError(t, err)
		require.NoError(t, rc.Err)
		for _, c := range rc.Configs {
			if c.Key == key {
				return c.MaybeValue(), c.Source
			}
		}
		require.Failf(t, "config missing", "%s not described", key)
		return "", kmsg.ConfigSourceUnknown
	}
	v, src := valueOf("retention.ms")
	require.Equal(t, "3600000", v)
	require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, src)
	v, src = valueOf("cleanup.policy")
	require.Equal(t, "delete", v)
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, src)

	alterErr := func(rs kadm.AlterConfigsResponses) error {
		r, err := rs.On("cfg", nil)
		if err != nil {
			return err
		}
		return r.Err
	}
	segment := "1048576"
	altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "segment.bytes", Value: &segment},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
	}, "cfg")
	require.NoError(t, err)
	require.NoError(t, alterErr(altered))
	v, _ = valueOf("segment.bytes")
	require.Equal(t, segment, v)
	v, src = valueOf("retention.ms")
	require.Equal(t, "604800000", v)
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, src)

	// The legacy AlterConfigs replaces the topic's whole set.
	compact := "compact"
	replaced, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: &compact}}, "cfg")
	require.NoError(t, err)
	require.NoError(t, alterErr(replaced))
	v, _ = valueOf("cleanup.policy")
	require.Equal(t, compact, v)
	v, src = valueOf("segment.bytes")
	require.NotEqual(t, segment, v, "AlterConfigs replaced the set")
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, src)

	weeks := "2"
	bad, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.weeks", Value: &weeks}}, "cfg")
	require.NoError(t, err)
	require.ErrorIs(t, alterErr(bad), kerr.InvalidConfig)
}

// franzDeleteRecords moves a partition's log start with DeleteRecords and
// checks that reads and ListOffsets follow.
func franzDeleteRecords(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	ctx := ctxFor(t, opTimeout)
	rs := writeRecords(t, adm, []string{addr}, "delrec", 9, 40, genOpts{partitions: 2, nulls: true, timestamps: true})
	os := kadm.Offsets{}
	os.AddOffset("delrec", 0, 12, -1)
	deleted, err := adm.DeleteRecords(ctx, os)
	require.NoError(t, err)
	require.NoError(t, deleted.Error())
	dr, ok := deleted.Lookup("delrec", 0)
	require.True(t, ok)
	require.Equal(t, int64(12), dr.LowWatermark)
	starts, err := adm.ListStartOffsets(ctx, "delrec")
	require.NoError(t, err)
	s0, _ := starts.Lookup("delrec", 0)
	s1, _ := starts.Lookup("delrec", 1)
	require.Equal(t, int64(12), s0.Offset)
	require.Equal(t, int64(0), s1.Offset)
	by := byPartition(rs)
	want := append(slices.Clone(by[0][12:]), by[1]...)
	got := consumeKgo(t, []string{addr}, "delrec", atStart(2), len(want))
	requireSameRecords(t, want, got, map[int32]int64{0: 12, 1: 0}, checkOpts{nullsDistinct: true, offsetsKnown: true})

	// Reading below the log start is OFFSET_OUT_OF_RANGE.
	part := fetchRaw(t, addr, "delrec", 0, 3)
	require.ErrorIs(t, kerr.ErrorForCode(part.ErrorCode), kerr.OffsetOutOfRange)
	require.Equal(t, int64(12), part.LogStartOffset)
}

// franzDescribe asks for the cluster (DescribeCluster), the log dirs
// (DescribeLogDirs), a topic's partitions (DescribeTopicPartitions) and
// leader epochs (OffsetForLeaderEpoch).
func franzDescribe(t *testing.T, addr string, nodeID int32) {
	adm := newAdmin(t, addr)
	ctx := ctxFor(t, opTimeout)
	rs := writeRecords(t, adm, []string{addr}, "desc", 10, 30, genOpts{partitions: 2})
	cl := newClient(t, []string{addr})

	dc := kmsg.NewPtrDescribeClusterRequest()
	dcResp, err := dc.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(dcResp.ErrorCode))
	require.Len(t, dcResp.Brokers, 1)
	require.Equal(t, nodeID, dcResp.Brokers[0].NodeID)
	require.Equal(t, nodeID, dcResp.ControllerID)

	dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"desc": {0: {}, 1: {}}})
	require.NoError(t, err)
	var sizes int64
	for _, bd := range dirs {
		require.NoError(t, bd.Error())
		bd.EachPartition(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == "desc" {
				sizes += p.Size
			}
		})
	}
	require.Positive(t, sizes, "the partitions' sizes on disk")

	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "desc"
	dtp.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{rt}
	dtpResp, err := dtp.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, dtpResp.Topics, 1)
	require.NoError(t, kerr.ErrorForCode(dtpResp.Topics[0].ErrorCode))
	require.Len(t, dtpResp.Topics[0].Partitions, 2)

	var epochReq kadm.OffsetForLeaderEpochRequest
	epochReq.Add("desc", 0, 0)
	epochs, err := adm.OffsetForLeaderEpoch(ctx, epochReq)
	require.NoError(t, err)
	o, ok := epochs["desc"][0]
	require.True(t, ok, "desc[0] answered")
	require.NoError(t, o.Err)
	require.Equal(t, counts(rs)[0], o.EndOffset, "the end offset of leader epoch 0")
}

// franzAutoCreate produces to a topic nobody created: the broker creates
// it (auto.create.topics.enable, Kafka's default) and the records land.
func franzAutoCreate(t *testing.T, addr string) {
	rs := genRecords(11, 10, genOpts{partitions: 1, nulls: true, timestamps: true})
	produceKgo(t, []string{addr}, "auto-created", rs, kgo.AllowAutoTopicCreation())
	got := consumeKgo(t, []string{addr}, "auto-created", atStart(1), len(rs))
	requireSameRecords(t, rs, got, zeros(1), checkOpts{nullsDistinct: true, offsetsKnown: true})
}

// TestFranzGoRestart writes with every compression and acks setting that
// is acknowledged, stops the node cleanly, starts it again on the same
// data directory and reads every acknowledged record back at its
// acknowledged offset; then a new idempotent producer appends after them.
func TestFranzGoRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	const topic, partitions = "restart", 3
	createTopic(t, newAdmin(t, n.Addr()), topic, partitions, nil)
	var written []rec
	seed := uint64(200)
	for _, codec := range franzCodecs {
		for _, acks := range franzAcks {
			if !acks.acked {
				continue
			}
			seed++
			rs := genRecords(seed, 15, genOpts{partitions: partitions, nulls: true, timestamps: true})
			produceKgo(t, []string{n.Addr()}, topic, rs, append([]kgo.Opt{kgo.ProducerBatchCompression(codec.codec)}, acks.opts...)...)
			written = append(written, rs...)
		}
	}
	n.stop(t)

	again := startNode(t, dir)
	require.Equal(t, n.ClusterID(), again.ClusterID())
	adm := newAdmin(t, again.Addr())
	waitLeaders(t, adm, topic, partitions)
	requireEndOffsets(t, adm, topic, counts(written))
	got := consumeKgo(t, []string{again.Addr()}, topic, atStart(partitions), len(written))
	requireSameRecords(t, written, got, zeros(partitions), checkOpts{nullsDistinct: true, offsetsKnown: true})

	more := genRecords(299, 12, genOpts{partitions: partitions, nulls: true, timestamps: true})
	produceKgo(t, []string{again.Addr()}, topic, more)
	all := append(slices.Clone(written), more...)
	got = consumeKgo(t, []string{again.Addr()}, topic, atStart(partitions), len(all))
	requireSameRecords(t, all, got, zeros(partitions), checkOpts{nullsDistinct: true, offsetsKnown: true})
}
