package replica

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/strata-log/strata/core/controller"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
)

// Config configures the partitions of one broker.
type Config struct {
	// NodeID is this broker's node.id: a partition is hosted here when
	// its replicas include it.
	NodeID int32

	// StaticTopicDefaults are the topic config defaults this broker's
	// server.properties sets, by topic key ("retention.ms" for
	// log.retention.ms, log.retention.minutes or log.retention.hours):
	// Kafka's STATIC_BROKER_CONFIG synonyms. A topic's own config wins,
	// then the cluster-wide dynamic default (the image's cluster config
	// resource, by the broker key), then these, then the config table's
	// default.
	StaticTopicDefaults map[string]string

	// LogMaxOpenFilesPerPartition bounds each log's open file handles
	// (log.Config.MaxOpenFiles; zero means log.DefaultMaxOpenFiles).
	LogMaxOpenFilesPerPartition int

	// RetentionCheckInterval is log.retention.check.interval.ms: how often
	// every log is checked for segments to delete (and compacted logs for
	// a cleaning to start). Zero means DefaultRetentionCheckInterval.
	RetentionCheckInterval time.Duration

	// CleanerStepBytes bounds the bytes one cleaner step reads or writes
	// before it yields the loop (DefaultCleanerStepBytes when zero).
	CleanerStepBytes int64

	// Producers configures the idempotent producer state
	// (producer.id.expiration.ms); zero fields take core/producer's
	// defaults.
	Producers producer.Config

	// KeepDirs are directories of the data directory that are not
	// partitions of the image even though their names look like it (the
	// metadata log's __cluster_metadata-0): the sweep never deletes them.
	KeepDirs []string

	// ReopenBackoff is how long a partition whose log failed waits before
	// it reopens the log and recovers what is durable
	// (DefaultReopenBackoff when zero).
	ReopenBackoff time.Duration
}

// Defaults of Config.
const (
	// DefaultRetentionCheckInterval is Kafka's
	// log.retention.check.interval.ms default.
	DefaultRetentionCheckInterval = 5 * time.Minute
	// DefaultCleanerStepBytes keeps a cleaner step to a few milliseconds
	// of loop time.
	DefaultCleanerStepBytes = 4 << 20
	// DefaultReopenBackoff paces the recovery of a failed log: a disk
	// that is full or failing is not hammered.
	DefaultReopenBackoff = time.Second
)

func (c Config) withDefaults() Config {
	if c.RetentionCheckInterval <= 0 {
		c.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if c.CleanerStepBytes <= 0 {
		c.CleanerStepBytes = DefaultCleanerStepBytes
	}
	if c.ReopenBackoff <= 0 {
		c.ReopenBackoff = DefaultReopenBackoff
	}
	if c.LogMaxOpenFilesPerPartition <= 0 {
		c.LogMaxOpenFilesPerPartition = log.DefaultMaxOpenFiles
	}
	return c
}

// topicConfig is a topic's effective configuration, parsed.
type topicConfig struct {
	log log.Config
	// flushMessages and flushInterval are flush.messages and flush.ms.
	// With flushMessages 1 (Strata's default) an acknowledged batch is
	// fsynced and consumers see only durable records; otherwise (Kafka's
	// page-cache mode) the leader acknowledges and exposes appended
	// batches at once and fsyncs every flushMessages messages or
	// flushInterval.
	flushMessages int64
	flushInterval time.Duration
	// timestampType is message.timestamp.type.
	timestampType record.TimestampType
	// timestampBefore and timestampAfter are
	// message.timestamp.before.max.ms and after.max.ms; math.MaxInt64
	// is unbounded.
	timestampBeforeMs, timestampAfterMs int64
	// minInsyncReplicas is min.insync.replicas.
	minInsyncReplicas int
}

// durable reports whether acknowledgements wait for fsync.
func (tc topicConfig) durable() bool { return tc.flushMessages <= 1 }

// resolveTopicConfig computes a topic's effective configuration from the
// image (topic configs, cluster dynamic defaults), the static defaults and
// the table's defaults. A value that does not parse or is out of the
// log's range falls back to the next source, and the problem is returned
// for a log line (configs the controller accepted are in range; a static
// default need not be).
func (c *Config) resolveTopicConfig(img *meta.Image, topic string) (topicConfig, []string) {
	var problems []string
	tr := meta.ConfigResource{Type: meta.ConfigResourceTopic, Name: topic}
	lookup := func(key string) []string {
		var vals []string
		if v, ok := img.ConfigValue(tr, key); ok {
			vals = append(vals, v)
		}
		tc, known := controller.LookupTopicConfig(key)
		if known && tc.ServerDefault != "" {
			if v, ok := img.ConfigValue(meta.ClusterConfigResource, tc.ServerDefault); ok {
				vals = append(vals, v)
			}
		}
		if v, ok := c.StaticTopicDefaults[key]; ok {
			vals = append(vals, v)
		}
		if known {
			vals = append(vals, tc.Default)
		}
		return vals
	}
	// first returns the first value of key that parse accepts.
	first := func(key string, parse func(string) error) {
		for _, v := range lookup(key) {
			if err := parse(strings.TrimSpace(v)); err != nil {
				problems = append(problems, fmt.Sprintf("%s=%q: %v", key, v, err))
				continue
			}
			return
		}
	}
	tc := topicConfig{log: log.DefaultConfig()}
	tc.log.MaxOpenFiles = c.LogMaxOpenFilesPerPartition
	first("segment.bytes", intRange(func(n int64) { tc.log.SegmentBytes = n }, record.HeaderSize, math.MaxInt32))
	first("segment.ms", millis(func(d time.Duration) { tc.log.SegmentTime = d }, 1))
	first("retention.ms", millis(func(d time.Duration) { tc.log.RetentionTime = d }, -1))
	first("retention.bytes", intRange(func(n int64) { tc.log.RetentionBytes = n }, math.MinInt64, math.MaxInt64))
	first("index.interval.bytes", intRange(func(n int64) { tc.log.IndexIntervalBytes = n }, 0, math.MaxInt32))
	first("segment.index.bytes", intRange(func(n int64) { tc.log.SegmentIndexBytes = n }, 12, math.MaxInt32))
	first("max.message.bytes", intRange(func(n int64) { tc.log.MessageMaxBytes = int(n) }, record.HeaderSize, math.MaxInt32))
	first("cleanup.policy", func(v string) error {
		p, err := log.ParseCleanupPolicy(v)
		tc.log.CleanupPolicy = p
		return err
	})
	first("delete.retention.ms", millis(func(d time.Duration) { tc.log.DeleteRetention = d }, 0))
	first("min.compaction.lag.ms", millis(func(d time.Duration) { tc.log.MinCompactionLag = d }, 0))
	first("min.cleanable.dirty.ratio", func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return fmt.Errorf("not a ratio in [0, 1]")
		}
		tc.log.MinCleanableDirtyRatio = f
		return nil
	})
	first("flush.messages", intRange(func(n int64) { tc.flushMessages = n }, 1, math.MaxInt64))
	first("flush.ms", millis(func(d time.Duration) { tc.flushInterval = d }, 0))
	first("message.timestamp.type", func(v string) error {
		switch v {
		case "CreateTime":
			tc.timestampType = record.CreateTime
		case "LogAppendTime":
			tc.timestampType = record.LogAppendTime
		default:
			return fmt.Errorf("not CreateTime or LogAppendTime")
		}
		return nil
	})
	first("message.timestamp.before.max.ms", intRange(func(n int64) { tc.timestampBeforeMs = n }, 0, math.MaxInt64))
	first("message.timestamp.after.max.ms", intRange(func(n int64) { tc.timestampAfterMs = n }, 0, math.MaxInt64))
	first("min.insync.replicas", intRange(func(n int64) { tc.minInsyncReplicas = int(n) }, 1, math.MaxInt32))
	if err := tc.log.Validate(); err != nil {
		problems = append(problems, err.Error())
		tc.log = log.DefaultConfig()
		tc.log.MaxOpenFiles = c.LogMaxOpenFilesPerPartition
	}
	return tc, problems
}

func intRange(set func(int64), lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		if n < lo || n > hi {
			return fmt.Errorf("out of [%d, %d]", lo, hi)
		}
		set(n)
		return nil
	}
}

// millis parses a duration in milliseconds of at least lo; a negative
// value (allowed when lo < 0) means unlimited, and values past what a
// time.Duration holds are clamped.
func millis(set func(time.Duration), lo int64) func(string) error {
	return intRange(func(n int64) {
		switch {
		case n < 0:
			set(-1)
		case n > math.MaxInt64/int64(time.Millisecond):
			set(time.Duration(math.MaxInt64))
		default:
			set(time.Duration(n) * time.Millisecond)
		}
	}, lo, math.MaxInt64)
}
