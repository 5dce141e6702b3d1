package interop

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/node"
)

// saramaAdmin is a sarama ClusterAdmin of addr, closed with the test.
// NewClusterAdmin asks Metadata for the controller and fails at once when
// it is -1 ("kafka: controller is not available").
func saramaAdmin(t *testing.T, addr string, cfg *sarama.Config) sarama.ClusterAdmin {
	t.Helper()
	adm, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	require.NoError(t, err, "NewClusterAdmin")
	t.Cleanup(func() { _ = adm.Close() })
	return adm
}

// saramaAdminConfig is saramaConfig with the admin's bounds: retriable
// errors (NOT_CONTROLLER) retried for up to opTimeout.
func saramaAdminConfig(version sarama.KafkaVersion) *sarama.Config {
	cfg := saramaConfig(version)
	cfg.Admin.Timeout = opTimeout
	cfg.Admin.Retry.Backoff = 100 * time.Millisecond
	cfg.Admin.Retry.Max = int(opTimeout / cfg.Admin.Retry.Backoff)
	return cfg
}

// TestSaramaClusterAdmin drives sarama's ClusterAdmin, which sends its
// admin requests to Metadata's controller id, through topics, configs and
// consumer groups, at a recent Kafka version and at sarama's default
// (issue 22, finding 11).
func TestSaramaClusterAdmin(t *testing.T) {
	saramaLog.logTo(t)
	n := startNode(t, t.TempDir())
	addr := n.Addr()
	for _, v := range saramaVersions {
		t.Run(v.name, func(t *testing.T) {
			testSaramaClusterAdmin(t, addr, v.version, "sa-"+v.name)
		})
	}
}

func testSaramaClusterAdmin(t *testing.T, addr string, version sarama.KafkaVersion, prefix string) {
	cfg := saramaAdminConfig(version)
	adm := saramaAdmin(t, addr, cfg)
	topic, group := prefix+"-orders", prefix+"-group"

	// The controller is a live broker, which forwards to the active
	// controller.
	brokers, controller, err := adm.DescribeCluster()
	require.NoError(t, err)
	require.Len(t, brokers, 1)
	require.Equal(t, brokers[0].ID(), controller)

	// Topics.
	retention := "3600000"
	require.NoError(t, adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}, false))
	var te *sarama.TopicError
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	require.ErrorIs(t, err, sarama.ErrTopicAlreadyExists)
	// A value the partitions could not use is refused with the reason
	// (finding 7), and so is a coordinator's topic (finding 8).
	tiny := "14"
	err = adm.CreateTopic(prefix+"-tiny", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"segment.bytes": &tiny}}, false)
	require.ErrorIs(t, err, sarama.ErrInvalidConfig)
	require.ErrorAs(t, err, &te)
	require.NotNil(t, te.ErrMsg)
	require.Contains(t, *te.ErrMsg, "segment.bytes")
	err = adm.CreateTopic("__consumer_offsets", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	require.ErrorIs(t, err, sarama.ErrInvalidRequest)
	require.NoError(t, adm.CreateTopic(prefix+"-validate", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, true))

	require.Eventually(t, func() bool {
		topics, err := adm.ListTopics()
		if err != nil {
			return false
		}
		d, ok := topics[topic]
		_, validated := topics[prefix+"-validate"]
		return ok && d.NumPartitions == 3 && d.ReplicationFactor == 1 && !validated
	}, opTimeout, pollInterval, "ListTopics never listed %s with 3 partitions", topic)
	md, err := adm.DescribeTopics([]string{topic})
	require.NoError(t, err)
	require.Len(t, md, 1)
	require.Equal(t, sarama.ErrNoError, md[0].Err)
	require.Len(t, md[0].Partitions, 3)

	// Configs: describe, the legacy AlterConfigs (the whole topic config),
	// IncrementalAlterConfigs.
	describe := func(key string) (string, sarama.ConfigSource) {
		t.Helper()
		entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{key}})
		require.NoError(t, err)
		for _, e := range entries {
			if e.Name == key {
				return e.Value, e.Source
			}
		}
		t.Fatalf("DescribeConfig of %s has no %s", topic, key)
		return "", 0
	}
	v, src := describe("retention.ms")
	require.Equal(t, retention, v)
	if version.IsAtLeast(sarama.V1_1_0_0) {
		require.Equal(t, sarama.SourceTopic, src)
	}
	v, _ = describe("segment.bytes")
	require.Equal(t, "1073741824", v)
	day := "86400000"
	require.NoError(t, adm.AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": &day}, false))
	v, _ = describe("retention.ms")
	require.Equal(t, day, v)
	segment := "1048576"
	require.NoError(t, adm.IncrementalAlterConfig(sarama.TopicResource, topic,
		map[string]sarama.IncrementalAlterConfigsEntry{"segment.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &segment}}, false))
	v, _ = describe("segment.bytes")
	require.Equal(t, segment, v)
	v, _ = describe("retention.ms")
	require.Equal(t, day, v, "an incremental change keeps the other keys")
	zero := "0"
	err = adm.IncrementalAlterConfig(sarama.TopicResource, topic,
		map[string]sarama.IncrementalAlterConfigsEntry{"max.message.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &zero}}, false)
	require.ErrorIs(t, err, sarama.ErrInvalidConfig)

	// The other requests sarama sends to the controller.
	require.NoError(t, adm.CreatePartitions(topic, 4, nil, false))
	require.Eventually(t, func() bool {
		md, err := adm.DescribeTopics([]string{topic})
		return err == nil && len(md) == 1 && len(md[0].Partitions) == 4
	}, opTimeout, pollInterval, "the fourth partition never showed")
	reassigning, err := adm.ListPartitionReassignments(topic, []int32{0, 1, 2, 3})
	require.NoError(t, err)
	require.Empty(t, reassigning[topic])
	elected, err := adm.ElectLeaders(sarama.PreferredElection, map[string][]int32{topic: {0}})
	require.NoError(t, err)
	require.Contains(t, []sarama.KError{sarama.ErrNoError, sarama.ErrElectionNotNeeded}, elected[topic][0].ErrorCode)

	// Consumer groups: a member consumes and commits; the group is
	// listed, described (with its member while it runs), its offsets
	// listed; once empty, one offset and then the group are deleted.
	waitServed(t, newAdmin(t, addr), topic)
	ends := produceRoundRobin(t, addr, topic, 40)
	gcfg := saramaConfig(version)
	gcfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	gcfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	gcfg.Consumer.Group.Session.Timeout = 6 * time.Second
	gcfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	g, err := sarama.NewConsumerGroup([]string{addr}, group, gcfg)
	require.NoError(t, err)
	seen := &seenSet{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, saramaHandler{seen}); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				t.Logf("sarama consume: %v", err)
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
			require.NoError(t, g.Close())
		}
	}
	t.Cleanup(stop)
	seen.await(t, ends, "the group never consumed every record")
	requireCommitted(t, addr, group, topic, ends)

	groups, err := adm.ListConsumerGroups()
	require.NoError(t, err)
	require.Equal(t, "consumer", groups[group])
	require.Eventually(t, func() bool {
		desc, err := adm.DescribeConsumerGroups([]string{group})
		return err == nil && len(desc) == 1 && desc[0].State == "Stable" && len(desc[0].Members) == 1
	}, opTimeout, pollInterval, "DescribeConsumerGroups never showed %s stable with its member", group)
	offsets, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2, 3}})
	require.NoError(t, err)
	for p, end := range ends {
		b := offsets.GetBlock(topic, p)
		require.NotNil(t, b, "partition %d", p)
		require.Equal(t, end, b.Offset, "partition %d", p)
	}
	// A running group cannot be deleted.
	require.ErrorIs(t, adm.DeleteConsumerGroup(group), sarama.ErrNonEmptyGroup)
	stop()
	require.Eventually(t, func() bool {
		desc, err := adm.DescribeConsumerGroups([]string{group})
		return err == nil && len(desc) == 1 && desc[0].State == "Empty"
	}, opTimeout, pollInterval, "the group never became empty")
	require.NoError(t, adm.DeleteConsumerGroupOffset(group, topic, 0))
	offsets, err = adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1}})
	require.NoError(t, err)
	require.Equal(t, int64(-1), offsets.GetBlock(topic, 0).Offset, "the deleted offset")
	require.Equal(t, ends[1], offsets.GetBlock(topic, 1).Offset)
	require.NoError(t, adm.DeleteConsumerGroup(group))
	groups, err = adm.ListConsumerGroups()
	require.NoError(t, err)
	require.NotContains(t, groups, group)

	// Deleting the topic.
	require.NoError(t, adm.DeleteTopic(topic))
	require.ErrorIs(t, adm.DeleteTopic(topic), sarama.ErrUnknownTopicOrPartition)
	require.Eventually(t, func() bool {
		topics, err := adm.ListTopics()
		if err != nil {
			return false
		}
		_, ok := topics[topic]
		return !ok
	}, opTimeout, pollInterval, "ListTopics still lists %s", topic)
}

// TestSaramaClusterAdminWhileStarting: a sarama ClusterAdmin can be made
// while the node is still starting (its client listener is open before
// its broker is registered and unfenced: the start-up scrub, the first
// election). Metadata named no controller (-1) in that window and
// NewClusterAdmin failed at once ("kafka: controller is not available");
// now the node names itself, which it lists, and its admin requests are
// forwarded to the active controller (NOT_CONTROLLER before there is one,
// which sarama retries).
func TestSaramaClusterAdminWhileStarting(t *testing.T) {
	saramaLog.logTo(t)
	cfg := node.DefaultConfig()
	cfg.Listener, cfg.ControllerListener, cfg.MetricsListener = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.LogDir = t.TempDir()
	n, err := node.Start(cfg, slog.New(slog.NewTextHandler(newTestLog(t), nil)))
	require.NoError(t, err)
	tn := &testNode{Node: n}
	t.Cleanup(func() { tn.stop(t) })
	require.False(t, n.Registered(), "the test must run before the broker is registered (the first election takes a second)")

	adm := saramaAdmin(t, n.Addr(), saramaAdminConfig(sarama.V3_6_0_0))
	_, controller, err := adm.DescribeCluster()
	require.NoError(t, err)
	require.Equal(t, n.NodeID(), controller)
	// A topic needs a registered broker to place its replicas on
	// (INVALID_REPLICATION_FACTOR before, as in Kafka); the admin made
	// early serves once there is one.
	require.Eventually(t, func() bool { return n.ActiveController() && n.Registered() }, readyTimeout, pollInterval)
	require.NoError(t, adm.CreateTopic("early", &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false))
	require.Eventually(t, func() bool {
		topics, err := adm.ListTopics()
		_, ok := topics["early"]
		return err == nil && ok
	}, opTimeout, pollInterval, "ListTopics never listed the topic created while starting")
}
