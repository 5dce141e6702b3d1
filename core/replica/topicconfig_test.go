package replica

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
)

// imageWith builds an image with topic "t" and the given config records.
func imageWith(t *testing.T, configs ...*meta.ConfigRecord) *meta.Image {
	t.Helper()
	d := meta.Empty().NewDelta()
	require.NoError(t, d.Replay(&meta.RegisterBrokerRecord{BrokerID: 7, BrokerEpoch: 1}))
	id := meta.UUID{0: 1}
	require.NoError(t, d.Replay(&meta.TopicRecord{Name: "t", TopicID: id}))
	require.NoError(t, d.Replay(&meta.PartitionRecord{TopicID: id, Replicas: []int32{7}, ISR: []int32{7}, Leader: 7}))
	for _, c := range configs {
		require.NoError(t, d.Replay(c))
	}
	return d.Apply(meta.Position{Offset: 10, Epoch: 1})
}

func topicCfg(key, value string) *meta.ConfigRecord {
	return &meta.ConfigRecord{ResourceType: meta.ConfigResourceTopic, ResourceName: "t", Key: key, Value: &value}
}

func brokerCfg(name, key, value string) *meta.ConfigRecord {
	return &meta.ConfigRecord{ResourceType: meta.ConfigResourceBroker, ResourceName: name, Key: key, Value: &value}
}

func find(t *testing.T, values []TopicConfigValue, key string) TopicConfigValue {
	t.Helper()
	for _, v := range values {
		if v.Def.Name == key {
			return v
		}
	}
	t.Fatalf("%s not described", key)
	return TopicConfigValue{}
}

// TestEveryTableDefaultIsUsable: every row's default parses, and every key
// the partitions set has a row.
func TestEveryTableDefaultIsUsable(t *testing.T) {
	for _, def := range config.TopicRows() {
		require.NoError(t, def.Validate(def.Default), def.Name)
	}
	for key := range topicConfigSetters { //determinism:unordered a test's checks, in any order
		_, ok := config.TopicRow(key)
		require.True(t, ok, "the partitions set %s, which the table does not have", key)
	}
}

// TestTableBoundsAreUsable: the smallest and the largest value each row
// accepts for a key the partitions apply gives a log configuration core/log
// accepts, and one step past the smallest is refused by the row. This
// ties the table's bounds to the log's: a value the table accepts is one
// the partition can use (issue 22, finding 7: segment.bytes=14 was
// accepted and then skipped).
func TestTableBoundsAreUsable(t *testing.T) {
	cases := []struct{ key, lo, below, hi string }{
		{"segment.bytes", "61", "60", "2147483647"},
		{"segment.index.bytes", "12", "11", "2147483647"},
		{"max.message.bytes", "61", "60", "2147483647"},
		{"index.interval.bytes", "0", "-1", "2147483647"},
		{"segment.ms", "1", "0", "9223372036854775807"},
		{"retention.ms", "-1", "-2", "9223372036854775807"},
		{"retention.bytes", "-9223372036854775808", "", "9223372036854775807"},
		{"delete.retention.ms", "0", "-1", "9223372036854775807"},
		{"min.compaction.lag.ms", "0", "-1", "9223372036854775807"},
		{"min.cleanable.dirty.ratio", "0", "-0.1", "1"},
		{"flush.messages", "1", "0", "9223372036854775807"},
		{"flush.ms", "0", "-1", "9223372036854775807"},
		{"min.insync.replicas", "1", "0", "2147483647"},
		{"message.timestamp.before.max.ms", "0", "-1", "9223372036854775807"},
		{"message.timestamp.after.max.ms", "0", "-1", "9223372036854775807"},
	}
	covered := map[string]bool{}
	cfg := Config{NodeID: 7}
	for _, c := range cases {
		covered[c.key] = true
		row, ok := config.TopicRow(c.key)
		require.True(t, ok, c.key)
		set := topicConfigSetters[c.key]
		require.NotNil(t, set.apply, c.key)
		for _, v := range []string{c.lo, c.hi} {
			parsed, err := row.Parse(v)
			require.NoError(t, err, "%s=%s", c.key, v)
			tc := topicConfig{log: cfg.defaultLogConfig()}
			set.apply(&tc, parsed)
			require.NoError(t, tc.log.Validate(), "%s=%s: the row accepts it, the log must too", c.key, v)
		}
		if c.below != "" {
			require.ErrorIs(t, row.Validate(c.below), config.ErrInvalidValue, "%s=%s", c.key, c.below)
		}
	}
	for key, s := range topicConfigSetters { //determinism:unordered a test's checks, in any order
		if s.log && key != config.TopicCleanupPolicy {
			require.True(t, covered[key], "%s: a log key without a bounds case", key)
		}
	}
	// The log refuses what the rows refuse below their bounds.
	lc := cfg.defaultLogConfig()
	lc.SegmentBytes = 60
	require.ErrorIs(t, lc.Validate(), log.ErrInvalidConfig)
	lc = cfg.defaultLogConfig()
	lc.SegmentIndexBytes = 11
	require.ErrorIs(t, lc.Validate(), log.ErrInvalidConfig)
	lc = cfg.defaultLogConfig()
	lc.MessageMaxBytes = 60
	require.ErrorIs(t, lc.Validate(), log.ErrInvalidConfig)
}

func TestResolveTopicConfigsOrder(t *testing.T) {
	cfg := Config{NodeID: 7, StaticTopicDefaults: map[string]string{
		"retention.ms": "1000", "segment.bytes": "2000", "min.insync.replicas": "2", "cleanup.policy": "compact",
	}}
	img := imageWith(t,
		topicCfg("retention.ms", "10"),
		brokerCfg("7", "log.retention.ms", "20"),
		brokerCfg("8", "log.segment.bytes", "99999"), // another broker's: ignored
		brokerCfg("", "log.retention.ms", "30"),
		brokerCfg("", "log.segment.bytes", "3000"),
		topicCfg("segment.ms", "5"),
	)
	values := cfg.ResolveTopicConfigs(img, "t")
	require.Len(t, values, len(config.TopicRows()))
	for i := 1; i < len(values); i++ {
		require.Less(t, values[i-1].Def.Name, values[i].Def.Name, "sorted by key")
	}

	r := find(t, values, "retention.ms")
	require.Equal(t, ConfigValue{"retention.ms", "10", kmsg.ConfigSourceDynamicTopicConfig}, r.Effective)
	require.Equal(t, []ConfigValue{
		{"retention.ms", "10", kmsg.ConfigSourceDynamicTopicConfig},
		{"log.retention.ms", "20", kmsg.ConfigSourceDynamicBrokerConfig},
		{"log.retention.ms", "30", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{"log.retention.ms", "1000", kmsg.ConfigSourceStaticBrokerConfig},
		{"log.retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig},
	}, r.Synonyms)

	require.Equal(t, ConfigValue{"log.segment.bytes", "3000", kmsg.ConfigSourceDynamicDefaultBrokerConfig}, find(t, values, "segment.bytes").Effective)
	require.Equal(t, ConfigValue{"min.insync.replicas", "2", kmsg.ConfigSourceStaticBrokerConfig}, find(t, values, "min.insync.replicas").Effective)
	require.Equal(t, ConfigValue{"log.cleanup.policy", "compact", kmsg.ConfigSourceStaticBrokerConfig}, find(t, values, "cleanup.policy").Effective)
	require.Equal(t, ConfigValue{"log.index.interval.bytes", "4096", kmsg.ConfigSourceDefaultConfig}, find(t, values, "index.interval.bytes").Effective)
	// A key without a broker key names itself at every level.
	require.Equal(t, ConfigValue{"remote.storage.enable", "false", kmsg.ConfigSourceDefaultConfig}, find(t, values, "remote.storage.enable").Effective)

	applied, _, problems := cfg.resolveTopicConfig(img, "t", false)
	require.Empty(t, problems)
	require.Equal(t, int64(3000), applied.log.SegmentBytes)
	require.Equal(t, 2, applied.minInsyncReplicas)
	require.Equal(t, "10ms", applied.log.RetentionTime.String())
}

// TestResolveTopicConfigsSkipsUnusable: a value the table refuses (stored
// in an image before the table refused it) is skipped for the next
// source, and the description says so.
func TestResolveTopicConfigsSkipsUnusable(t *testing.T) {
	cfg := Config{NodeID: 7, StaticTopicDefaults: map[string]string{"segment.bytes": "5000"}}
	img := imageWith(t, topicCfg("segment.bytes", "20"), topicCfg("max.message.bytes", "3"))
	values := cfg.ResolveTopicConfigs(img, "t")
	s := find(t, values, "segment.bytes")
	require.Equal(t, ConfigValue{"log.segment.bytes", "5000", kmsg.ConfigSourceStaticBrokerConfig}, s.Effective)
	require.Equal(t, "20", s.Synonyms[0].Value, "the skipped topic value is still listed")
	require.Equal(t, ConfigValue{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig}, find(t, values, "max.message.bytes").Effective)
	applied, _, problems := cfg.resolveTopicConfig(img, "t", false)
	require.Len(t, problems, 2)
	require.Equal(t, int64(5000), applied.log.SegmentBytes)
}

// TestDescribedIsApplied: whatever the sources hold, the described
// effective values, applied one by one, give exactly the configuration the
// partitions get.
func TestDescribedIsApplied(t *testing.T) {
	candidates := map[string][]string{
		"segment.bytes":                   {"14", "20", "61", "4096", "1073741824", "x"},
		"retention.ms":                    {"-1", "0", "1000", "-5", "nope"},
		"retention.bytes":                 {"-1", "100", "9223372036854775807"},
		"segment.index.bytes":             {"4", "12", "1024"},
		"max.message.bytes":               {"0", "61", "2000"},
		"cleanup.policy":                  {"compact", "delete", "compact,delete", "bogus"},
		"min.cleanable.dirty.ratio":       {"0", "0.9", "2"},
		"flush.messages":                  {"1", "1000", "0"},
		"message.timestamp.type":          {"CreateTime", "LogAppendTime", "Other"},
		"message.timestamp.before.max.ms": {"0", "1000"},
		"min.insync.replicas":             {"1", "3", "0"},
		"segment.ms":                      {"1", "0", "86400000"},
	}
	keys := []string{"segment.bytes", "retention.ms", "retention.bytes", "segment.index.bytes", "max.message.bytes", "cleanup.policy",
		"min.cleanable.dirty.ratio", "flush.messages", "message.timestamp.type", "message.timestamp.before.max.ms", "min.insync.replicas", "segment.ms"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(key string) (string, bool) {
		if rng.IntN(2) == 0 {
			return "", false
		}
		c := candidates[key]
		return c[rng.IntN(len(c))], true
	}
	for iter := range 300 {
		static := map[string]string{}
		var recs []*meta.ConfigRecord
		for _, key := range keys {
			def, _ := config.TopicRow(key)
			if v, ok := pick(key); ok && def.Validate(v) == nil { // the controller validates what it stores
				recs = append(recs, topicCfg(key, v))
			}
			if v, ok := pick(key); ok && def.Validate(v) == nil {
				recs = append(recs, brokerCfg("", def.ServerDefault, v))
			}
			if v, ok := pick(key); ok {
				static[key] = v // static values are the node's to validate
			}
		}
		cfg := Config{NodeID: 7, StaticTopicDefaults: static}
		img := imageWith(t, recs...)
		applied, described, _ := cfg.resolveTopicConfig(img, "t", true)
		replay := topicConfig{log: cfg.defaultLogConfig()}
		for _, v := range described {
			if s, ok := topicConfigSetters[v.Def.Name]; ok {
				parsed, err := v.Def.Parse(v.Effective.Value)
				require.NoError(t, err, "iteration %d: %s", iter, v.Def.Name)
				s.apply(&replay, parsed)
			}
		}
		require.Equal(t, applied, replay, fmt.Sprintf("iteration %d: described values differ from the applied ones", iter))
	}
}
