package replica

import "errors"

// Sentinel errors of the partition layer. Each stands for one Kafka error
// code; the broker's error table (core/broker/errors.go) maps them, along
// with the sentinels of core/log, core/record and core/producer that the
// partition passes through wrapped with context.
var (
	// ErrUnknownTopicOrPartition: this broker hosts no such partition
	// (UNKNOWN_TOPIC_OR_PARTITION).
	ErrUnknownTopicOrPartition = errors.New("replica: unknown topic or partition")
	// ErrNotLeader: this broker hosts the partition but does not lead it
	// now, or cannot serve it yet (NOT_LEADER_OR_FOLLOWER, retriable:
	// the client refreshes its metadata).
	ErrNotLeader = errors.New("replica: not the leader")
	// ErrStorage: the partition's log failed (a failed fsync, a full disk
	// at a sync, a disk that went read-only) and is being recovered
	// (KAFKA_STORAGE_ERROR, retriable).
	ErrStorage = errors.New("replica: storage error")
	// ErrNotEnoughReplicas: acks=all with fewer in-sync replicas than
	// min.insync.replicas (NOT_ENOUGH_REPLICAS).
	ErrNotEnoughReplicas = errors.New("replica: not enough in-sync replicas")
	// ErrNotEnoughReplicasAfterAppend: an acks=all batch was appended and
	// reached the high watermark, but the ISR had shrunk below
	// min.insync.replicas meanwhile (NOT_ENOUGH_REPLICAS_AFTER_APPEND,
	// retriable: the producer retries, and idempotence deduplicates).
	ErrNotEnoughReplicasAfterAppend = errors.New("replica: not enough in-sync replicas after the append")
	// ErrNotReplica: a replica fetch without a current leader epoch from
	// a broker that is not one of the partition's replicas
	// (NOT_LEADER_OR_FOLLOWER, as Kafka answers it; with an epoch the
	// answer is ErrUnknownLeaderEpoch).
	ErrNotReplica = errors.New("replica: not a replica of the partition")
	// ErrInvalidTimestamp: a CreateTime timestamp outside
	// message.timestamp.before.max.ms / after.max.ms of the broker's
	// clock (INVALID_TIMESTAMP).
	ErrInvalidTimestamp = errors.New("replica: invalid timestamp")
	// ErrInvalidRequiredAcks: acks other than -1, 0 or 1
	// (INVALID_REQUIRED_ACKS).
	ErrInvalidRequiredAcks = errors.New("replica: invalid required acks")
	// ErrFencedLeaderEpoch: the request names an older leader epoch than
	// the partition's (FENCED_LEADER_EPOCH, KIP-320).
	ErrFencedLeaderEpoch = errors.New("replica: fenced leader epoch")
	// ErrUnknownLeaderEpoch: the request names a newer leader epoch than
	// this broker knows (UNKNOWN_LEADER_EPOCH, retriable).
	ErrUnknownLeaderEpoch = errors.New("replica: unknown leader epoch")
	// ErrOffsetNotAvailable: ListOffsets "latest" on a leader whose high
	// watermark is still below the start of its leader epoch, so that the
	// end offset could go back (OFFSET_NOT_AVAILABLE, retriable; Kafka's
	// fetchOffsetForTimestamp).
	ErrOffsetNotAvailable = errors.New("replica: offset not available")
	// ErrInvalidListOffsetsTimestamp: a negative ListOffsets timestamp
	// that names no special offset (INVALID_REQUEST).
	ErrInvalidListOffsetsTimestamp = errors.New("replica: invalid ListOffsets timestamp")
	// ErrClosed: the manager was closed.
	ErrClosed = errors.New("replica: closed")
)
