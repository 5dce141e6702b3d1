package replica

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/controller"
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
//  5. the controller's config table default (DEFAULT_CONFIG).
//
// A value that does not parse, or that the log cannot use (the
// controller accepts segment.bytes=14, Kafka's minimum, while a segment
// here must hold one batch header), is skipped for the next source and
// reported as a problem for a log line.

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
	// Def is the key's row in the controller's config table.
	Def *controller.TopicConfig
	// Effective is the value applied: the first of Synonyms that is valid.
	Effective ConfigValue
	// Synonyms are the key's values from every source that sets it, most
	// specific first, the table default last (DescribeConfigs'
	// synonyms).
	Synonyms []ConfigValue
}

// ResolveTopicConfigs returns every key of the controller's topic config
// table with its effective value for topic, sorted by key, as the
// partitions of topic on a broker configured with c apply it (see the
// order above). img is the metadata image to resolve against.
func (c Config) ResolveTopicConfigs(img *meta.Image, topic string) []TopicConfigValue {
	_, values, _ := c.resolveTopicConfig(img, topic, true)
	return values
}

// ResolveTopicConfigs is Config.ResolveTopicConfigs with the manager's
// configuration.
func (m *Manager) ResolveTopicConfigs(img *meta.Image, topic string) []TopicConfigValue {
	return m.cfg.ResolveTopicConfigs(img, topic)
}

// CheckTopicConfig reports whether value is a valid value of the topic
// config key both for the controller (its table's validator) and for a
// partition (the range the log accepts): a server.properties default is
// checked with it, so that a static default the partitions would skip is
// refused at start-up instead.
func CheckTopicConfig(key, value string) error {
	def, ok := controller.LookupTopicConfig(key)
	if !ok {
		return fmt.Errorf("unknown topic config %s", key)
	}
	if err := def.Validate(value); err != nil {
		return err
	}
	if p, ok := topicConfigParsers[key]; ok {
		tc := topicConfig{log: log.DefaultConfig()}
		if err := p.parse(&tc, strings.TrimSpace(value)); err != nil {
			return err
		}
	}
	return nil
}

// topicConfigSources lists the values of def's key for topic from every
// source that sets it, most specific first, ending with the default.
func (c *Config) topicConfigSources(img *meta.Image, topic string, def *controller.TopicConfig) []ConfigValue {
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
// not use are only checked against the table's validator). The problems
// are the values skipped, for a log line.
func (c *Config) resolveTopicConfig(img *meta.Image, topic string, describe bool) (topicConfig, []TopicConfigValue, []string) {
	var problems []string
	var values []TopicConfigValue
	tc := topicConfig{log: c.defaultLogConfig()}
	for _, def := range controller.TopicConfigs() {
		p, used := topicConfigParsers[def.Name]
		if !used && !describe {
			continue
		}
		syn := c.topicConfigSources(img, topic, def)
		chosen := len(syn) - 1
		for i, v := range syn {
			var err error
			if used {
				err = p.parse(&tc, strings.TrimSpace(v.Value))
			} else {
				err = def.Validate(v.Value)
			}
			if err == nil {
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
		// Each key alone is in range, so this is a rule across keys:
		// the log gets its defaults, and so does the description.
		problems = append(problems, err.Error())
		tc.log = c.defaultLogConfig()
		for i := range values {
			if p, ok := topicConfigParsers[values[i].Def.Name]; ok && p.log {
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

// topicConfigParser applies one key's value to a topicConfig; log says
// the key is a core/log setting.
type topicConfigParser struct {
	parse func(*topicConfig, string) error
	log   bool
}

// topicConfigParsers are the keys the partitions use, each with the range
// the log or the partition accepts. Looked up by key, never iterated.
var topicConfigParsers = map[string]topicConfigParser{
	"segment.bytes": logKey(intRange(func(tc *topicConfig, n int64) { tc.log.SegmentBytes = n }, record.HeaderSize, math.MaxInt32)),
	"segment.ms":    logKey(millis(func(tc *topicConfig, d time.Duration) { tc.log.SegmentTime = d }, 1)),
	"retention.ms":  logKey(millis(func(tc *topicConfig, d time.Duration) { tc.log.RetentionTime = d }, -1)),
	"retention.bytes": logKey(intRange(func(tc *topicConfig, n int64) { tc.log.RetentionBytes = n },
		math.MinInt64, math.MaxInt64)),
	"index.interval.bytes": logKey(intRange(func(tc *topicConfig, n int64) { tc.log.IndexIntervalBytes = n }, 0, math.MaxInt32)),
	"segment.index.bytes":  logKey(intRange(func(tc *topicConfig, n int64) { tc.log.SegmentIndexBytes = n }, 12, math.MaxInt32)),
	"max.message.bytes": logKey(intRange(func(tc *topicConfig, n int64) { tc.log.MessageMaxBytes = int(n) },
		record.HeaderSize, math.MaxInt32)),
	"cleanup.policy": logKey(func(tc *topicConfig, v string) error {
		p, err := log.ParseCleanupPolicy(v)
		if err == nil {
			tc.log.CleanupPolicy = p
		}
		return err
	}),
	"delete.retention.ms":   logKey(millis(func(tc *topicConfig, d time.Duration) { tc.log.DeleteRetention = d }, 0)),
	"min.compaction.lag.ms": logKey(millis(func(tc *topicConfig, d time.Duration) { tc.log.MinCompactionLag = d }, 0)),
	"min.cleanable.dirty.ratio": logKey(func(tc *topicConfig, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return fmt.Errorf("not a ratio in [0, 1]")
		}
		tc.log.MinCleanableDirtyRatio = f
		return nil
	}),
	"flush.messages": {parse: intRange(func(tc *topicConfig, n int64) { tc.flushMessages = n }, 1, math.MaxInt64)},
	"flush.ms":       {parse: millis(func(tc *topicConfig, d time.Duration) { tc.flushInterval = d }, 0)},
	"message.timestamp.type": {parse: func(tc *topicConfig, v string) error {
		switch v {
		case "CreateTime":
			tc.timestampType = record.CreateTime
		case "LogAppendTime":
			tc.timestampType = record.LogAppendTime
		default:
			return fmt.Errorf("not CreateTime or LogAppendTime")
		}
		return nil
	}},
	"message.timestamp.before.max.ms": {parse: intRange(func(tc *topicConfig, n int64) { tc.timestampBeforeMs = n }, 0, math.MaxInt64)},
	"message.timestamp.after.max.ms":  {parse: intRange(func(tc *topicConfig, n int64) { tc.timestampAfterMs = n }, 0, math.MaxInt64)},
	"min.insync.replicas":             {parse: intRange(func(tc *topicConfig, n int64) { tc.minInsyncReplicas = int(n) }, 1, math.MaxInt32)},
	"strata.metrics.partition.enable": {parse: func(tc *topicConfig, v string) error {
		switch {
		case strings.EqualFold(v, "true"):
			tc.partitionMetrics = true
		case strings.EqualFold(v, "false"):
			tc.partitionMetrics = false
		default:
			return fmt.Errorf("not true or false")
		}
		return nil
	}},
}

func logKey(parse func(*topicConfig, string) error) topicConfigParser {
	return topicConfigParser{parse: parse, log: true}
}

// intRange parses an integer in [lo, hi]; a failed parse sets nothing.
func intRange(set func(*topicConfig, int64), lo, hi int64) func(*topicConfig, string) error {
	return func(tc *topicConfig, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		if n < lo || n > hi {
			return fmt.Errorf("out of [%d, %d]", lo, hi)
		}
		set(tc, n)
		return nil
	}
}

// millis parses a duration in milliseconds of at least lo; a negative
// value (allowed when lo < 0) means unlimited, and values past what a
// time.Duration holds are clamped.
func millis(set func(*topicConfig, time.Duration), lo int64) func(*topicConfig, string) error {
	return intRange(func(tc *topicConfig, n int64) {
		switch {
		case n < 0:
			set(tc, -1)
		case n > math.MaxInt64/int64(time.Millisecond):
			set(tc, time.Duration(math.MaxInt64))
		default:
			set(tc, time.Duration(n)*time.Millisecond)
		}
	}, lo, math.MaxInt64)
}
