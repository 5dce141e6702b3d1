package replica

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/record"
)

// Topic config resolution is decided here, once: the same function
// configures a topic's partitions (Manager.Apply) and answers
// DescribeConfigs for it (the broker calls ResolveTopicConfigs), so a
// described value can never differ from the applied one.
//
// A key's value comes from the first of these sources that sets it to a
// value the partition can use, in Kafka's order:
//
//  1. the topic's own config (DYNAMIC_TOPIC_CONFIG);
//  2. this broker's dynamic config, by the broker key, e.g.
//     log.retention.ms (DYNAMIC_BROKER_CONFIG);
//  3. the cluster-wide dynamic default, the image's cluster config
//     resource, by the broker key (DYNAMIC_DEFAULT_BROKER_CONFIG);
//  4. server.properties, Config.StaticTopicDefaults
//     (STATIC_BROKER_CONFIG);
//  5. the table's default (DEFAULT_CONFIG).
//
// Every value is parsed by its key's row of the one table of topic
// configs (core/config), whose valid values are what the partitions can
// apply; the controller refuses with the same rows, and the node checks
// server.properties with them. A value the row refuses can still be in an
// image written before the table refused it (segment.bytes=14 was once
// accepted): it is skipped for the next source and reported as a problem
// for a log line.

// ConfigValue is one value of a topic config key from one source.
type ConfigValue struct {
	// Name is the key the value is set under: the topic key for the
	// topic's own value, the broker key (log.retention.ms for
	// retention.ms) for the broker-level sources and the default, or the
	// topic key when the table names no broker key.
	Name   string
	Value  string
	Source kmsg.ConfigSource
}

// TopicConfigValue is one topic config key as a topic's partitions on
// this broker apply it.
type TopicConfigValue struct {
	// Def is the key's row in the table of topic configs.
	Def *config.Row
	// Effective is the value applied: the first of Synonyms that is valid.
	Effective ConfigValue
	// Synonyms are the key's values from every source that sets it, most
	// specific first, the table default last (DescribeConfigs'
	// synonyms).
	Synonyms []ConfigValue
}

// ResolveTopicConfigs returns every key of the table of topic configs with its effective value for topic, sorted by key, as the
// partitions of topic on a broker configured with c apply it (see the
// order above). img is the metadata image to resolve against.
func (c Config) ResolveTopicConfigs(img *meta.Image, topic string) []TopicConfigValue {
	_, values, _ := c.resolveTopicConfig(img, topic, true)
	return values
}

// ResolveTopicConfig is ResolveTopicConfigs for one key: its effective
// value for topic as the partitions apply it, parsed by the key's row
// (without ResolveTopicConfigs' fallback for a rule across keys, of which
// the topic keys have none today), or false for a key the table does not
// have.
func (c Config) ResolveTopicConfig(img *meta.Image, topic, key string) (config.Value, TopicConfigValue, bool) {
	def, ok := config.TopicRow(key)
	if !ok {
		return config.Value{}, TopicConfigValue{}, false
	}
	syn := c.topicConfigSources(img, topic, def)
	for _, v := range syn {
		if parsed, err := def.Parse(v.Value); err == nil {
			return parsed, TopicConfigValue{Def: def, Effective: v, Synonyms: syn}, true
		}
	}
	// The table's default always parses (a test checks it).
	last := syn[len(syn)-1]
	parsed, _ := def.Parse(last.Value)
	return parsed, TopicConfigValue{Def: def, Effective: last, Synonyms: syn}, true
}

// ResolveTopicConfig is Config.ResolveTopicConfig with the manager's
// configuration.
func (m *Manager) ResolveTopicConfig(img *meta.Image, topic, key string) (config.Value, TopicConfigValue, bool) {
	return m.cfg.ResolveTopicConfig(img, topic, key)
}

// ResolveTopicConfigs is Config.ResolveTopicConfigs with the manager's
// configuration.
func (m *Manager) ResolveTopicConfigs(img *meta.Image, topic string) []TopicConfigValue {
	return m.cfg.ResolveTopicConfigs(img, topic)
}

// topicConfigSources lists the values of def's key for topic from every
// source that sets it, most specific first, ending with the default.
func (c *Config) topicConfigSources(img *meta.Image, topic string, def *config.Row) []ConfigValue {
	var out []ConfigValue
	if v, ok := img.ConfigValue(meta.ConfigResource{Type: meta.ConfigResourceTopic, Name: topic}, def.Name); ok {
		out = append(out, ConfigValue{Name: def.Name, Value: v, Source: kmsg.ConfigSourceDynamicTopicConfig})
	}
	brokerKey := def.Name
	if def.ServerDefault != "" {
		brokerKey = def.ServerDefault
		self := meta.ConfigResource{Type: meta.ConfigResourceBroker, Name: strconv.Itoa(int(c.NodeID))}
		if v, ok := img.ConfigValue(self, brokerKey); ok {
			out = append(out, ConfigValue{Name: brokerKey, Value: v, Source: kmsg.ConfigSourceDynamicBrokerConfig})
		}
		if v, ok := img.ConfigValue(meta.ClusterConfigResource, brokerKey); ok {
			out = append(out, ConfigValue{Name: brokerKey, Value: v, Source: kmsg.ConfigSourceDynamicDefaultBrokerConfig})
		}
	}
	if v, ok := c.StaticTopicDefaults[def.Name]; ok {
		out = append(out, ConfigValue{Name: brokerKey, Value: v, Source: kmsg.ConfigSourceStaticBrokerConfig})
	}
	return append(out, ConfigValue{Name: brokerKey, Value: def.Default, Source: kmsg.ConfigSourceDefaultConfig})
}

// resolveTopicConfig computes a topic's effective configuration and, with
// describe, every table key's effective value (keys the partitions do
// not use are only parsed). The problems are the values skipped, for a
// log line.
func (c *Config) resolveTopicConfig(img *meta.Image, topic string, describe bool) (topicConfig, []TopicConfigValue, []string) {
	var problems []string
	var values []TopicConfigValue
	tc := topicConfig{log: c.defaultLogConfig()}
	for _, def := range config.TopicRows() {
		set, used := topicConfigSetters[def.Name]
		if !used && !describe {
			continue
		}
		syn := c.topicConfigSources(img, topic, def)
		chosen := len(syn) - 1
		for i, v := range syn {
			parsed, err := def.Parse(v.Value)
			if err == nil {
				if used {
					set.apply(&tc, parsed)
				}
				chosen = i
				break
			}
			problems = append(problems, fmt.Sprintf("%s=%q (%s): %v", v.Name, v.Value, v.Source, err))
		}
		if describe {
			values = append(values, TopicConfigValue{Def: def, Effective: syn[chosen], Synonyms: syn})
		}
	}
	if err := tc.log.Validate(); err != nil {
		// Each key alone is valid (its row's bounds are the log's), so
		// this is a rule across keys, of which there is none today: the
		// log gets its defaults, and so does the description.
		problems = append(problems, err.Error())
		tc.log = c.defaultLogConfig()
		for i := range values {
			if s, ok := topicConfigSetters[values[i].Def.Name]; ok && s.log {
				values[i].Effective = values[i].Synonyms[len(values[i].Synonyms)-1]
			}
		}
	}
	return tc, values, problems
}

// defaultLogConfig is core/log's default with this broker's bound on open
// files (or the log's default, if the bound is out of the log's range).
func (c *Config) defaultLogConfig() log.Config {
	lc := log.DefaultConfig()
	lc.MaxOpenFiles = c.LogMaxOpenFilesPerPartition
	if lc.Validate() != nil {
		lc.MaxOpenFiles = log.DefaultMaxOpenFiles
	}
	lc.OnFlush = c.flushObserver
	lc.TxnIndex = true // the aborted-transaction index (txn.go)
	return lc
}

// topicConfigSetter applies one key's value, already parsed and within
// its row's bounds, to a topicConfig; log says the key is a core/log
// setting.
type topicConfigSetter struct {
	apply func(*topicConfig, config.Value)
	log   bool
}

// topicConfigSetters are the keys the partitions use. The bounds are the
// rows' (core/config); a setter only converts. Looked up by key, never
// iterated.
var topicConfigSetters = map[string]topicConfigSetter{
	"segment.bytes":        logKey(func(tc *topicConfig, v config.Value) { tc.log.SegmentBytes = v.Int() }),
	"segment.ms":           logKey(func(tc *topicConfig, v config.Value) { tc.log.SegmentTime = millis(v) }),
	"retention.ms":         logKey(func(tc *topicConfig, v config.Value) { tc.log.RetentionTime = millis(v) }),
	"retention.bytes":      logKey(func(tc *topicConfig, v config.Value) { tc.log.RetentionBytes = v.Int() }),
	"index.interval.bytes": logKey(func(tc *topicConfig, v config.Value) { tc.log.IndexIntervalBytes = v.Int() }),
	"segment.index.bytes":  logKey(func(tc *topicConfig, v config.Value) { tc.log.SegmentIndexBytes = v.Int() }),
	"max.message.bytes":    logKey(func(tc *topicConfig, v config.Value) { tc.log.MessageMaxBytes = int(v.Int()) }),
	config.TopicCleanupPolicy: logKey(func(tc *topicConfig, v config.Value) {
		compact, del := slices.Contains(v.List(), "compact"), slices.Contains(v.List(), "delete")
		switch {
		case compact && del:
			tc.log.CleanupPolicy = log.CleanupCompactDelete
		case compact:
			tc.log.CleanupPolicy = log.CleanupCompact
		default:
			tc.log.CleanupPolicy = log.CleanupDelete
		}
	}),
	"delete.retention.ms":       logKey(func(tc *topicConfig, v config.Value) { tc.log.DeleteRetention = millis(v) }),
	"min.compaction.lag.ms":     logKey(func(tc *topicConfig, v config.Value) { tc.log.MinCompactionLag = millis(v) }),
	"min.cleanable.dirty.ratio": logKey(func(tc *topicConfig, v config.Value) { tc.log.MinCleanableDirtyRatio = v.Float() }),
	"flush.messages":            {apply: func(tc *topicConfig, v config.Value) { tc.flushMessages = v.Int() }},
	"flush.ms":                  {apply: func(tc *topicConfig, v config.Value) { tc.flushInterval = millis(v) }},
	"message.timestamp.type": {apply: func(tc *topicConfig, v config.Value) {
		tc.timestampType = record.CreateTime
		if v.String() == "LogAppendTime" {
			tc.timestampType = record.LogAppendTime
		}
	}},
	"message.timestamp.before.max.ms": {apply: func(tc *topicConfig, v config.Value) { tc.timestampBeforeMs = v.Int() }},
	"message.timestamp.after.max.ms":  {apply: func(tc *topicConfig, v config.Value) { tc.timestampAfterMs = v.Int() }},
	config.TopicMinInsyncReplicas:     {apply: func(tc *topicConfig, v config.Value) { tc.minInsyncReplicas = int(v.Int()) }},
	"strata.metrics.partition.enable": {apply: func(tc *topicConfig, v config.Value) { tc.partitionMetrics = v.Bool() }},
}

func logKey(apply func(*topicConfig, config.Value)) topicConfigSetter {
	return topicConfigSetter{apply: apply, log: true}
}

// millis is a duration in milliseconds: a negative value (the rows allow
// only -1, where it is allowed) means unlimited, and values past what a
// time.Duration holds are clamped.
func millis(v config.Value) time.Duration {
	switch n := v.Int(); {
	case n < 0:
		return -1
	case n > math.MaxInt64/int64(time.Millisecond):
		return time.Duration(math.MaxInt64)
	default:
		return time.Duration(n) * time.Millisecond
	}
}
