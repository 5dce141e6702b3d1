package controller

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicConfig describes one topic config key the controller accepts.
type TopicConfig struct {
	// Name is the topic-level key ("retention.ms").
	Name string
	// Type is the value's type as DescribeConfigs reports it.
	Type kmsg.ConfigType
	// Default is the value a topic has when neither it nor the cluster sets
	// the key: Kafka's default.
	Default string
	// ServerDefault is the broker property that sets the cluster-wide
	// default ("log.retention.ms"), or "" when there is none.
	ServerDefault string
	// validate checks a value (already trimmed of surrounding spaces).
	validate func(string) error
	// Doc is the key's one-line documentation, as DescribeConfigs
	// (version 3+) reports it.
	Doc string
}

// Validate checks a value for the key, as Kafka's ConfigDef does: the value
// is trimmed of surrounding spaces, then parsed and range checked.
func (tc *TopicConfig) Validate(value string) error {
	return tc.validate(strings.TrimSpace(value))
}

// Config keys the controller itself reads.
const (
	configUncleanLeaderElection = "unclean.leader.election.enable"
	configMinInsyncReplicas     = "min.insync.replicas"
)

// Bounds on config values, so that a request cannot bloat every snapshot.
const (
	// maxConfigValueBytes bounds one config value.
	maxConfigValueBytes = 32 << 10
)

// topicConfigs is the table of topic configs: Kafka's LogConfig keys with
// their types, defaults, server-wide synonyms and validators. It is sorted
// by name (a test checks it). Cross-key rules (local retention within
// total retention, remote storage with compaction) are the broker's to
// apply when it builds a log config; the controller checks each key alone.
var topicConfigs = []TopicConfig{
	{"cleanup.policy", kmsg.ConfigTypeList, "delete", "log.cleanup.policy", listOf("compact", "delete"),
		"How old segments are discarded: delete (by retention.ms and retention.bytes), compact (keep the latest record per key), or both."},
	{"compression.gzip.level", kmsg.ConfigTypeInt, "-1", "compression.gzip.level", gzipLevel,
		"The gzip level for compression.type=gzip (-1: the codec's default)."},
	{"compression.lz4.level", kmsg.ConfigTypeInt, "9", "compression.lz4.level", intIn(1, 17),
		"The lz4 level for compression.type=lz4."},
	{"compression.type", kmsg.ConfigTypeString, "producer", "compression.type", oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
		"The topic's final compression; producer keeps the producer's codec (Strata never recompresses)."},
	{"compression.zstd.level", kmsg.ConfigTypeInt, "3", "compression.zstd.level", intIn(-131072, 22),
		"The zstd level for compression.type=zstd."},
	{"delete.retention.ms", kmsg.ConfigTypeLong, "86400000", "log.cleaner.delete.retention.ms", longAtLeast(0),
		"How long a tombstone is kept after compaction reached it, in milliseconds."},
	{"file.delete.delay.ms", kmsg.ConfigTypeLong, "60000", "log.segment.delete.delay.ms", longAtLeast(0),
		"How long a deleted segment's files wait before removal, in milliseconds."},
	// flush.messages: Strata's default is 1, not Kafka's 9223372036854775807:
	// every acknowledged batch is fsynced (with group commit). A topic set
	// to a larger value opts into Kafka's page-cache mode (core/replica).
	{"flush.messages", kmsg.ConfigTypeLong, "1", "log.flush.interval.messages", longAtLeast(1),
		"Fsync after this many messages; 1 (Strata's default) acknowledges only fsynced batches, larger values opt into Kafka's page-cache mode."},
	{"flush.ms", kmsg.ConfigTypeLong, "9223372036854775807", "log.flush.interval.ms", longAtLeast(0),
		"Fsync at least this often in page-cache mode, in milliseconds."},
	{"follower.replication.throttled.replicas", kmsg.ConfigTypeList, "", "", throttledReplicas,
		"Replicas whose follower-side replication is throttled (partition:broker list or *)."},
	{"index.interval.bytes", kmsg.ConfigTypeInt, "4096", "log.index.interval.bytes", intIn(0, math.MaxInt32),
		"Bytes appended between two offset index entries."},
	{"leader.replication.throttled.replicas", kmsg.ConfigTypeList, "", "", throttledReplicas,
		"Replicas whose leader-side replication is throttled (partition:broker list or *)."},
	{"local.retention.bytes", kmsg.ConfigTypeLong, "-2", "log.local.retention.bytes", longAtLeast(-2),
		"Bytes kept on local disk with tiered storage (-2: retention.bytes)."},
	{"local.retention.ms", kmsg.ConfigTypeLong, "-2", "log.local.retention.ms", longAtLeast(-2),
		"Milliseconds kept on local disk with tiered storage (-2: retention.ms)."},
	{"max.compaction.lag.ms", kmsg.ConfigTypeLong, "9223372036854775807", "log.cleaner.max.compaction.lag.ms", longAtLeast(1),
		"The longest a record stays uncompacted, in milliseconds."},
	{"max.message.bytes", kmsg.ConfigTypeInt, "1048588", "message.max.bytes", intIn(0, math.MaxInt32),
		"The largest record batch a producer may append, in bytes."},
	{"message.downconversion.enable", kmsg.ConfigTypeBoolean, "true", "log.message.downconversion.enable", boolean,
		"Whether old fetch versions get down-converted records (Strata serves RecordBatch v2 only)."},
	{"message.timestamp.after.max.ms", kmsg.ConfigTypeLong, "9223372036854775807", "log.message.timestamp.after.max.ms", longAtLeast(0),
		"How far a CreateTime timestamp may be ahead of the broker's clock, in milliseconds."},
	{"message.timestamp.before.max.ms", kmsg.ConfigTypeLong, "9223372036854775807", "log.message.timestamp.before.max.ms", longAtLeast(0),
		"How far a CreateTime timestamp may be behind the broker's clock, in milliseconds."},
	{"message.timestamp.difference.max.ms", kmsg.ConfigTypeLong, "9223372036854775807", "log.message.timestamp.difference.max.ms", longAtLeast(0),
		"Deprecated by message.timestamp.before.max.ms and after.max.ms."},
	{"message.timestamp.type", kmsg.ConfigTypeString, "CreateTime", "log.message.timestamp.type", oneOf("CreateTime", "LogAppendTime"),
		"CreateTime keeps the producer's timestamps, LogAppendTime stamps batches with the broker's clock."},
	{"min.cleanable.dirty.ratio", kmsg.ConfigTypeDouble, "0.5", "log.cleaner.min.cleanable.ratio", doubleIn(0, 1),
		"The dirty share of a compacted log at which a cleaning starts."},
	{"min.compaction.lag.ms", kmsg.ConfigTypeLong, "0", "log.cleaner.min.compaction.lag.ms", longAtLeast(0),
		"The least time a record stays uncompacted, in milliseconds."},
	{"min.insync.replicas", kmsg.ConfigTypeInt, "1", "min.insync.replicas", intIn(1, math.MaxInt32),
		"The fewest in-sync replicas an acks=all produce needs."},
	{"preallocate", kmsg.ConfigTypeBoolean, "false", "log.preallocate", boolean,
		"Whether segment files are preallocated."},
	{"remote.storage.enable", kmsg.ConfigTypeBoolean, "false", "", boolean,
		"Whether the topic tiers segments to object storage."},
	{"retention.bytes", kmsg.ConfigTypeLong, "-1", "log.retention.bytes", longAtLeast(math.MinInt64),
		"The size a partition is trimmed to by deleting old segments, in bytes (-1: unlimited)."},
	{"retention.ms", kmsg.ConfigTypeLong, "604800000", "log.retention.ms", longAtLeast(-1),
		"How long records are kept before their segment is deleted, in milliseconds (-1: forever)."},
	{"segment.bytes", kmsg.ConfigTypeInt, "1073741824", "log.segment.bytes", intIn(14, math.MaxInt32),
		"The size at which a new segment file is rolled, in bytes."},
	{"segment.index.bytes", kmsg.ConfigTypeInt, "10485760", "log.index.size.max.bytes", intIn(4, math.MaxInt32),
		"The size of a segment's index files, in bytes."},
	{"segment.jitter.ms", kmsg.ConfigTypeLong, "0", "log.roll.jitter.ms", longAtLeast(0),
		"A random jitter subtracted from segment.ms, in milliseconds."},
	{"segment.ms", kmsg.ConfigTypeLong, "604800000", "log.roll.ms", longAtLeast(1),
		"The age at which a new segment is rolled, in milliseconds."},
	{"strata.metrics.partition.enable", kmsg.ConfigTypeBoolean, "true", "strata.metrics.partition.enable", boolean,
		"Strata's own: whether the topic's partitions export their per-partition metrics (log size, segments, start and end offsets); false bounds the series of a cluster with very many partitions."},
	{configUncleanLeaderElection, kmsg.ConfigTypeBoolean, "false", "unclean.leader.election.enable", boolean,
		"Whether a replica outside the ISR may be elected leader, at the risk of data loss."},
}

// LookupTopicConfig returns the description of a topic config key.
func LookupTopicConfig(name string) (*TopicConfig, bool) {
	i := sort.Search(len(topicConfigs), func(i int) bool { return topicConfigs[i].Name >= name })
	if i < len(topicConfigs) && topicConfigs[i].Name == name {
		return &topicConfigs[i], true
	}
	return nil, false
}

// TopicConfigs returns every topic config key the controller accepts,
// sorted by name. The slice is the caller's; the descriptions are shared.
func TopicConfigs() []*TopicConfig {
	out := make([]*TopicConfig, len(topicConfigs))
	for i := range topicConfigs {
		out[i] = &topicConfigs[i]
	}
	return out
}

// splittable reports whether a key's value is a list, which
// IncrementalAlterConfigs may APPEND to and SUBTRACT from.
func (tc *TopicConfig) splittable() bool { return tc.Type == kmsg.ConfigTypeList }

// Validators.

func parseLong(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a long")
	}
	return n, nil
}

func longAtLeast(lo int64) func(string) error {
	return func(v string) error {
		n, err := parseLong(v)
		if err != nil {
			return err
		}
		if n < lo {
			return fmt.Errorf("value must be at least %d", lo)
		}
		return nil
	}
}

func intIn(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return fmt.Errorf("not an int")
		}
		if n < lo || n > hi {
			return fmt.Errorf("value must be in [%d, %d]", lo, hi)
		}
		return nil
	}
}

// gzipLevel is Kafka's GzipCompression level: -1 (the codec's default) or
// 1 to 9.
func gzipLevel(v string) error {
	if v == "-1" {
		return nil
	}
	return intIn(1, 9)(v)
}

func doubleIn(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return fmt.Errorf("not a double")
		}
		if f < lo || f > hi {
			return fmt.Errorf("value must be in [%g, %g]", lo, hi)
		}
		return nil
	}
}

func boolean(v string) error {
	if strings.EqualFold(v, "true") || strings.EqualFold(v, "false") {
		return nil
	}
	return fmt.Errorf("value must be true or false")
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		if slices.Contains(allowed, v) {
			return nil
		}
		return fmt.Errorf("value must be one of %s", strings.Join(allowed, ", "))
	}
}

// listOf accepts a non-empty comma-separated list of allowed values.
func listOf(allowed ...string) func(string) error {
	return func(v string) error {
		items := splitList(v)
		if len(items) == 0 {
			return fmt.Errorf("value must list at least one of %s", strings.Join(allowed, ", "))
		}
		for _, it := range items {
			if !slices.Contains(allowed, it) {
				return fmt.Errorf("%q is not one of %s", it, strings.Join(allowed, ", "))
			}
		}
		return nil
	}
}

// throttledReplicas accepts "", "*" or a list of partition:broker pairs.
func throttledReplicas(v string) error {
	if v == "" || v == "*" {
		return nil
	}
	for _, it := range splitList(v) {
		p, b, ok := strings.Cut(it, ":")
		if !ok {
			return fmt.Errorf("%q is not partition:broker", it)
		}
		if _, err := strconv.ParseInt(p, 10, 32); err != nil {
			return fmt.Errorf("%q is not partition:broker", it)
		}
		if _, err := strconv.ParseInt(b, 10, 32); err != nil {
			return fmt.Errorf("%q is not partition:broker", it)
		}
	}
	return nil
}

// splitList splits a list value at commas, trimming items and dropping
// empty ones.
func splitList(v string) []string {
	var out []string
	for it := range strings.SplitSeq(v, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}
