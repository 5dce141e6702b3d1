// Package group is the group coordinator (issue 12): consumer groups of
// the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, with
// eager and cooperative assignors chosen by the members, KIP-394 member
// ids and KIP-345 static members), consumer groups of KIP-848's consumer
// protocol (ConsumerGroupHeartbeat: member and group epochs, a target
// assignment computed here by the uniform or range assignor, and
// reconciliation that revokes a partition before it gives it to its next
// owner), and their committed offsets.
//
// A Shard is the coordinator of the groups that hash to one partition of
// __consumer_offsets: it runs on the broker that leads that partition,
// writes every state change there (Kafka's GroupMetadataKey/Value,
// OffsetCommitKey/Value and KIP-848 ConsumerGroup* records, through a
// Writer the owner provides) and
// answers a request only once its records are committed, so that a new
// coordinator that replays the partition (Shard.Replay) holds exactly the
// state clients were told of. The coordinator runtime (core/coord) runs
// the shards: it loads, replays and unloads them and is their write path.
//
// Like the rest of core, a Shard runs on one env loop: time and
// randomness (member ids) come from its env.Env, and nothing it decides
// or answers depends on map iteration order (members are kept in join
// order, assignors see members sorted by id and partitions sorted).
package group
