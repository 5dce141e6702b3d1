package node_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/node"
)

// startNodeWithProperties runs a node configured by a server.properties
// file (on top of the test's loopback listeners and data dir).
func startNodeWithProperties(t *testing.T, dataDir, properties string) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig()
	path := filepath.Join(t.TempDir(), "server.properties")
	require.NoError(t, os.WriteFile(path, []byte(properties), 0o644))
	ignored, err := node.LoadConfigFile(&cfg, path)
	require.NoError(t, err)
	require.Empty(t, ignored)
	cfg.Listener, cfg.ControllerListener, cfg.LogDir = "127.0.0.1:0", "127.0.0.1:0", dataDir
	cfg.MetricsListener = "127.0.0.1:0"
	n, err := node.Start(cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { shutdown(t, n) })
	waitActive(t, n)
	return n
}

func newProducer(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTimeout(5 * time.Second)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func produceN(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, n, size int) {
	t.Helper()
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(fmt.Sprint(i)), Value: []byte(strings.Repeat("v", size))}
		require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
	}
}

func configOf(t *testing.T, rc kadm.ResourceConfig, key string) kadm.Config {
	t.Helper()
	for _, c := range rc.Configs {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("%s not described for %s", key, rc.Name)
	return kadm.Config{}
}

// TestE2EAdminConfigs: server.properties defaults are described as
// STATIC_BROKER_CONFIG and applied to partitions (segments roll at
// log.segment.bytes); a topic's own configs and altered configs are
// described as DYNAMIC_TOPIC_CONFIG; the broker describes its own keys.
func TestE2EAdminConfigs(t *testing.T) {
	dataDir := t.TempDir()
	n := startNodeWithProperties(t, dataDir, strings.Join([]string{
		"log.segment.bytes=4096",
		"log.retention.hours=48",
		"num.partitions=2",
		"log.cleaner.min.cleanable.ratio = 0.25",
	}, "\n"))
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	adm := newAdmin(t, n.Addr())

	created, err := adm.CreateTopics(ctx, -1, -1, map[string]*string{"retention.bytes": kadm.StringPtr("1000000")}, "orders")
	require.NoError(t, err)
	require.NoError(t, created["orders"].Err)
	require.Equal(t, int32(2), created["orders"].NumPartitions, "num.partitions")

	rcs, err := adm.DescribeTopicConfigs(ctx, "orders")
	require.NoError(t, err)
	rc, err := rcs.On("orders", nil)
	require.NoError(t, err)
	require.NoError(t, rc.Err)
	seg := configOf(t, rc, "segment.bytes")
	require.Equal(t, "4096", seg.MaybeValue())
	require.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, seg.Source)
	require.Equal(t, "log.segment.bytes", seg.Synonyms[0].Key)
	ret := configOf(t, rc, "retention.ms")
	require.Equal(t, "172800000", ret.MaybeValue(), "48 hours")
	require.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, ret.Source)
	ratio := configOf(t, rc, "min.cleanable.dirty.ratio")
	require.Equal(t, "0.25", ratio.MaybeValue())
	rb := configOf(t, rc, "retention.bytes")
	require.Equal(t, "1000000", rb.MaybeValue())
	require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, rb.Source)
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, configOf(t, rc, "cleanup.policy").Source)

	// Applied: 4 KiB segments roll.
	cl := newProducer(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	produceN(t, ctx, cl, "orders", 30, 500)
	logs, err := filepath.Glob(filepath.Join(dataDir, "orders-0", "*.log"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(logs), 3, "segments of log.segment.bytes=4096: %v", logs)

	// Alter, then describe.
	altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("60000")},
		{Op: kadm.DeleteConfig, Name: "retention.bytes"},
	}, "orders")
	require.NoError(t, err)
	ar, err := altered.On("orders", nil)
	require.NoError(t, err)
	require.NoError(t, ar.Err)
	require.Eventually(t, func() bool {
		rcs, err := adm.DescribeTopicConfigs(ctx, "orders")
		if err != nil {
			return false
		}
		rc, _ := rcs.On("orders", nil)
		r := configOf(t, rc, "retention.ms")
		return r.MaybeValue() == "60000" && r.Source == kmsg.ConfigSourceDynamicTopicConfig &&
			configOf(t, rc, "retention.bytes").Source == kmsg.ConfigSourceDefaultConfig
	}, e2eTimeout, 20*time.Millisecond)

	// Bad alters: an unknown key, a bad value, an unknown topic.
	altered, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.weeks", Value: kadm.StringPtr("1")}}, "orders")
	require.NoError(t, err)
	ar, _ = altered.On("orders", nil)
	require.ErrorIs(t, ar.Err, kerr.InvalidConfig)
	require.Contains(t, ar.ErrMessage, "retention.weeks")
	altered, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "segment.bytes", Value: kadm.StringPtr("tiny")}}, "orders")
	require.NoError(t, err)
	ar, _ = altered.On("orders", nil)
	require.ErrorIs(t, ar.Err, kerr.InvalidConfig)
	rcs, err = adm.DescribeTopicConfigs(ctx, "missing")
	require.NoError(t, err)
	rc, _ = rcs.On("missing", nil)
	require.ErrorIs(t, rc.Err, kerr.UnknownTopicOrPartition)

	// The broker's own keys: what server.properties set, and defaults.
	bcs, err := adm.DescribeBrokerConfigs(ctx, n.NodeID())
	require.NoError(t, err)
	require.Len(t, bcs, 1)
	require.NoError(t, bcs[0].Err)
	ls := configOf(t, bcs[0], "log.segment.bytes")
	require.Equal(t, "4096", ls.MaybeValue())
	require.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, ls.Source)
	np := configOf(t, bcs[0], "num.partitions")
	require.Equal(t, "2", np.MaybeValue())
	ac := configOf(t, bcs[0], "auto.create.topics.enable")
	require.Equal(t, "true", ac.MaybeValue())
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, ac.Source)
	// Every entry is a row's (core/server's broker keys and node's), and
	// every row is an entry.
	var described, rows []string
	for _, c := range bcs[0].Configs {
		described = append(described, c.Key)
	}
	for _, k := range node.ConfigKeys() {
		rows = append(rows, k.Name)
	}
	require.ElementsMatch(t, rows, described)
	cluster, err := adm.DescribeBrokerConfigs(ctx)
	require.NoError(t, err)
	require.Len(t, cluster, 1)
	require.NoError(t, cluster[0].Err)
	require.Empty(t, cluster[0].Configs, "no cluster-wide dynamic defaults")
}

// TestE2EDeleteRecordsAutoCreateAndReplicationFactor: DeleteRecords moves
// the start offset ListStartOffsets reports; a produce auto-creates its
// topic; a replication factor above one is refused.
func TestE2EDeleteRecordsAutoCreateAndReplicationFactor(t *testing.T) {
	n := startNodeWithProperties(t, t.TempDir(), "num.partitions=1\n")
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	adm := newAdmin(t, n.Addr())

	// Auto-creation: the first produce creates the topic.
	cl := newProducer(t, n.Addr(), kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, ctx, cl, "auto", 10, 10)
	topics, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	require.True(t, topics.Has("auto"), "auto-created topic listed")

	start, err := adm.ListStartOffsets(ctx, "auto")
	require.NoError(t, err)
	o, _ := start.Lookup("auto", 0)
	require.NoError(t, o.Err)
	require.Equal(t, int64(0), o.Offset)

	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "auto", Partition: 0, At: 4})
	deleted, err := adm.DeleteRecords(ctx, offsets)
	require.NoError(t, err)
	d, ok := deleted.Lookup("auto", 0)
	require.True(t, ok)
	require.NoError(t, d.Err)
	require.Equal(t, int64(4), d.LowWatermark)
	start, err = adm.ListStartOffsets(ctx, "auto")
	require.NoError(t, err)
	o, _ = start.Lookup("auto", 0)
	require.Equal(t, int64(4), o.Offset)

	offsets = kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "auto", Partition: 0, At: 99})
	deleted, err = adm.DeleteRecords(ctx, offsets)
	require.NoError(t, err)
	d, _ = deleted.Lookup("auto", 0)
	require.ErrorIs(t, d.Err, kerr.OffsetOutOfRange)

	// A consumer from the start now begins at 4.
	consumer := newProducer(t, n.Addr(), kgo.ConsumeTopics("auto"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fetches := consumer.PollRecords(ctx, 1)
	require.NoError(t, fetches.Err())
	require.Equal(t, int64(4), fetches.Records()[0].Offset)

	// Without auto-creation (kgo's default), a missing topic stays missing.
	plain := newProducer(t, n.Addr(), kgo.RecordRetries(1), kgo.ProduceRequestTimeout(time.Second))
	shortCtx, shortCancel := context.WithTimeout(ctx, 2*time.Second)
	err = plain.ProduceSync(shortCtx, &kgo.Record{Topic: "not-created", Value: []byte("x")}).FirstErr()
	shortCancel()
	require.Error(t, err)
	topics, err = adm.ListTopics(ctx)
	require.NoError(t, err)
	require.False(t, topics.Has("not-created"))

	// Replication factor 3 on one broker: refused, saying why.
	created, err := adm.CreateTopics(ctx, 1, 3, nil, "wide")
	require.NoError(t, err)
	require.ErrorIs(t, created["wide"].Err, kerr.InvalidReplicationFactor)
	require.Contains(t, created["wide"].ErrMessage, "only 1 broker(s) are registered and unfenced")

	// The log dir lists the partitions with their sizes.
	dirs, err := adm.DescribeBrokerLogDirs(ctx, n.NodeID(), nil)
	require.NoError(t, err)
	require.Len(t, dirs, 1)
	for _, dir := range dirs {
		require.NoError(t, dir.Err)
		require.True(t, filepath.IsAbs(dir.Dir), dir.Dir)
		p, ok := dir.Topics["auto"][0]
		require.True(t, ok, "auto-0 in %s", dir.Dir)
		require.Greater(t, p.Size, int64(0))
	}
}
