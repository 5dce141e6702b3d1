package config

import (
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
)

// Topic config keys that code outside the table reads by name.
const (
	TopicCleanupPolicy         = "cleanup.policy"
	TopicMinInsyncReplicas     = "min.insync.replicas"
	TopicUncleanLeaderElection = "unclean.leader.election.enable"
)

// Broker keys of topic defaults that core/server's rows read by name:
// Kafka sets retention.ms's and segment.ms's defaults with keys of
// several units, the finest of which is the topic row's ServerDefault.
const (
	ServerKeyLogRetentionMs = "log.retention.ms"
	ServerKeyLogRollMs      = "log.roll.ms"
)

// Bounds of topic configs that Strata's partitions need and Kafka's do not
// state (a test in core/replica applies each bound to a partition log).
const (
	// minSegmentBytes is the smallest segment.bytes: one batch header, so
	// that a segment holds a batch (Kafka's minimum, 14, is a legacy
	// record's overhead; Kafka 4.0 raised it to 1 MiB).
	minSegmentBytes = record.HeaderSize
	// minSegmentIndexBytes is the smallest segment.index.bytes: one time
	// index entry (core/log's larger index entry; Kafka's minimum is 4).
	minSegmentIndexBytes = 12
	// minMessageMaxBytes is the smallest max.message.bytes: one batch
	// header (Kafka's minimum is 0, which refuses every batch).
	minMessageMaxBytes = record.HeaderSize
)

// topicRows is the table of topic configs: Kafka's LogConfig keys, sorted
// by name (a test checks it). Each key's valid values are the values the
// partitions can apply, so the controller refuses what they would skip.
// Cross-key rules (local retention within total retention, remote storage
// with compaction) are not checked: each key is valid alone.
var topicRows = []Row{
	{"cleanup.policy", kmsg.ConfigTypeList, "delete", "log.cleanup.policy",
		"How old segments are discarded: delete (by retention.ms and retention.bytes), compact (keep the latest record per key), or both.",
		listOf("compact", "delete")},
	{"compression.gzip.level", kmsg.ConfigTypeInt, "-1", "compression.gzip.level",
		"The gzip level for compression.type=gzip (-1: the codec's default); stored, not acted on (Strata never recompresses).",
		gzipLevel()},
	{"compression.lz4.level", kmsg.ConfigTypeInt, "9", "compression.lz4.level",
		"The lz4 level for compression.type=lz4; stored, not acted on (Strata never recompresses).",
		intIn(1, 17)},
	{"compression.type", kmsg.ConfigTypeString, "producer", "compression.type",
		"The topic's final compression; stored, not acted on: Strata keeps the producer's codec (it never recompresses).",
		oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")},
	{"compression.zstd.level", kmsg.ConfigTypeInt, "3", "compression.zstd.level",
		"The zstd level for compression.type=zstd; stored, not acted on (Strata never recompresses).",
		intIn(-131072, 22)},
	{"delete.retention.ms", kmsg.ConfigTypeLong, "86400000", "log.cleaner.delete.retention.ms",
		"How long a tombstone is kept after compaction reached it, in milliseconds.",
		longAtLeast(0)},
	{"file.delete.delay.ms", kmsg.ConfigTypeLong, "60000", "log.segment.delete.delay.ms",
		"How long a deleted segment's files wait before removal, in milliseconds; stored, not acted on (Strata removes them once no read uses them).",
		longAtLeast(0)},
	// flush.messages: Strata's default is 1, not Kafka's 9223372036854775807:
	// every acknowledged batch is fsynced (with group commit). A topic set
	// to a larger value opts into Kafka's page-cache mode (core/replica).
	{"flush.messages", kmsg.ConfigTypeLong, "1", "log.flush.interval.messages",
		"Fsync after this many messages; 1 (Strata's default) acknowledges only fsynced batches, larger values opt into Kafka's page-cache mode.",
		longAtLeast(1)},
	{"flush.ms", kmsg.ConfigTypeLong, "9223372036854775807", "log.flush.interval.ms",
		"Fsync at least this often in page-cache mode, in milliseconds.",
		longAtLeast(0)},
	{"follower.replication.throttled.replicas", kmsg.ConfigTypeList, "", "",
		"Replicas whose follower-side replication is throttled (partition:broker list or *); stored, not acted on (no replication quotas yet).",
		throttledReplicas()},
	{"index.interval.bytes", kmsg.ConfigTypeInt, "4096", "log.index.interval.bytes",
		"Bytes appended between two offset index entries.",
		intIn(0, math.MaxInt32)},
	{"leader.replication.throttled.replicas", kmsg.ConfigTypeList, "", "",
		"Replicas whose leader-side replication is throttled (partition:broker list or *); stored, not acted on (no replication quotas yet).",
		throttledReplicas()},
	{"local.retention.bytes", kmsg.ConfigTypeLong, "-2", "log.local.retention.bytes",
		"Bytes kept on local disk with tiered storage (-2: retention.bytes); stored, not acted on (no tiered storage yet).",
		longAtLeast(-2)},
	{"local.retention.ms", kmsg.ConfigTypeLong, "-2", "log.local.retention.ms",
		"Milliseconds kept on local disk with tiered storage (-2: retention.ms); stored, not acted on (no tiered storage yet).",
		longAtLeast(-2)},
	{"max.compaction.lag.ms", kmsg.ConfigTypeLong, "9223372036854775807", "log.cleaner.max.compaction.lag.ms",
		"The longest a record stays uncompacted, in milliseconds; stored, not acted on (compaction starts by min.cleanable.dirty.ratio).",
		longAtLeast(1)},
	{"max.message.bytes", kmsg.ConfigTypeInt, "1048588", "message.max.bytes",
		"The largest record batch a producer may append, in bytes; at least one batch header.",
		intIn(minMessageMaxBytes, math.MaxInt32)},
	{"message.downconversion.enable", kmsg.ConfigTypeBoolean, "true", "log.message.downconversion.enable",
		"Whether old fetch versions get down-converted records; stored, not acted on (Strata serves RecordBatch v2 only).",
		boolean()},
	{"message.timestamp.after.max.ms", kmsg.ConfigTypeLong, "9223372036854775807", "log.message.timestamp.after.max.ms",
		"How far a CreateTime timestamp may be ahead of the broker's clock, in milliseconds.",
		longAtLeast(0)},
	{"message.timestamp.before.max.ms", kmsg.ConfigTypeLong, "9223372036854775807", "log.message.timestamp.before.max.ms",
		"How far a CreateTime timestamp may be behind the broker's clock, in milliseconds.",
		longAtLeast(0)},
	{"message.timestamp.difference.max.ms", kmsg.ConfigTypeLong, "9223372036854775807", "log.message.timestamp.difference.max.ms",
		"Deprecated by message.timestamp.before.max.ms and after.max.ms; stored, not acted on.",
		longAtLeast(0)},
	{"message.timestamp.type", kmsg.ConfigTypeString, "CreateTime", "log.message.timestamp.type",
		"CreateTime keeps the producer's timestamps, LogAppendTime stamps batches with the broker's clock.",
		oneOf("CreateTime", "LogAppendTime")},
	{"min.cleanable.dirty.ratio", kmsg.ConfigTypeDouble, "0.5", "log.cleaner.min.cleanable.ratio",
		"The dirty share of a compacted log at which a cleaning starts.",
		doubleIn(0, 1)},
	{"min.compaction.lag.ms", kmsg.ConfigTypeLong, "0", "log.cleaner.min.compaction.lag.ms",
		"The least time a record stays uncompacted, in milliseconds.",
		longAtLeast(0)},
	{TopicMinInsyncReplicas, kmsg.ConfigTypeInt, "1", "min.insync.replicas",
		"The fewest in-sync replicas an acks=all produce needs.",
		intIn(1, math.MaxInt32)},
	{"preallocate", kmsg.ConfigTypeBoolean, "false", "log.preallocate",
		"Whether segment files are preallocated; stored, not acted on.",
		boolean()},
	{"remote.storage.enable", kmsg.ConfigTypeBoolean, "false", "",
		"Whether the topic tiers segments to object storage; stored, not acted on (no tiered storage yet).",
		boolean()},
	{"retention.bytes", kmsg.ConfigTypeLong, "-1", "log.retention.bytes",
		"The size a partition is trimmed to by deleting old segments, in bytes (-1: unlimited).",
		anyLong()},
	{"retention.ms", kmsg.ConfigTypeLong, "604800000", ServerKeyLogRetentionMs,
		"How long records are kept before their segment is deleted, in milliseconds (-1: forever).",
		longAtLeast(-1)},
	{"segment.bytes", kmsg.ConfigTypeInt, "1073741824", "log.segment.bytes",
		"The size at which a new segment file is rolled, in bytes; at least one batch header.",
		intIn(minSegmentBytes, math.MaxInt32)},
	{"segment.index.bytes", kmsg.ConfigTypeInt, "10485760", "log.index.size.max.bytes",
		"The size of a segment's index files, in bytes; at least one time index entry. A full index rolls the segment.",
		intIn(minSegmentIndexBytes, math.MaxInt32)},
	{"segment.jitter.ms", kmsg.ConfigTypeLong, "0", "log.roll.jitter.ms",
		"A random jitter subtracted from segment.ms, in milliseconds; stored, not acted on.",
		longAtLeast(0)},
	{"segment.ms", kmsg.ConfigTypeLong, "604800000", ServerKeyLogRollMs,
		"The age at which a new segment is rolled, in milliseconds.",
		longAtLeast(1)},
	{"strata.metrics.partition.enable", kmsg.ConfigTypeBoolean, "true", "strata.metrics.partition.enable",
		"Strata's own: whether the topic's partitions export their per-partition metrics (log size, segments, start and end offsets); false bounds the series of a cluster with very many partitions.",
		boolean()},
	{TopicUncleanLeaderElection, kmsg.ConfigTypeBoolean, "false", "unclean.leader.election.enable",
		"Whether a replica outside the ISR may be elected leader, at the risk of data loss.",
		boolean()},
}

// TopicRow returns the row of a topic config key.
func TopicRow(name string) (*Row, bool) {
	i := sort.Search(len(topicRows), func(i int) bool { return topicRows[i].Name >= name })
	if i < len(topicRows) && topicRows[i].Name == name {
		return &topicRows[i], true
	}
	return nil, false
}

// TopicRows returns every topic config row, sorted by name. The slice is
// the caller's; the rows are shared.
func TopicRows() []*Row {
	out := make([]*Row, len(topicRows))
	for i := range topicRows {
		out[i] = &topicRows[i]
	}
	return out
}

// serverProperties are the topic configs whose cluster default
// server.properties sets (through the row's ServerDefault key), in the
// order docs/operations.md lists them. retention.ms and segment.ms are
// not among them: Kafka sets them with keys of several units
// (log.retention.hours, log.roll.ms...), core/server's rows.
var serverProperties = []string{
	"retention.bytes", "segment.bytes", "cleanup.policy", "delete.retention.ms", "min.compaction.lag.ms",
	"min.cleanable.dirty.ratio", "max.message.bytes", "index.interval.bytes", "segment.index.bytes",
	"flush.messages", "flush.ms", "message.timestamp.type", "message.timestamp.before.max.ms",
	"message.timestamp.after.max.ms", TopicMinInsyncReplicas, "strata.metrics.partition.enable",
}

// ServerPropertyRows returns the rows of the topic configs whose cluster
// default server.properties sets by the row's ServerDefault key.
func ServerPropertyRows() []*Row {
	out := make([]*Row, 0, len(serverProperties))
	for _, name := range serverProperties {
		r, ok := TopicRow(name)
		if !ok || r.ServerDefault == "" {
			panic("config: serverProperties names " + name + ", which has no server default") // a table bug, caught by every test
		}
		out = append(out, r)
	}
	return out
}

// TopicRowByServerDefault returns the row of the topic config whose
// cluster default the broker key sets ("log.segment.bytes" gives
// segment.bytes).
func TopicRowByServerDefault(brokerKey string) (*Row, bool) {
	for i := range topicRows {
		if brokerKey != "" && topicRows[i].ServerDefault == brokerKey {
			return &topicRows[i], true
		}
	}
	return nil, false
}
