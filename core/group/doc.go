// Package group is the group coordinator (issue 12): consumer groups of
// the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, with
// eager and cooperative assignors chosen by the members, KIP-394 member
// ids and KIP-345 static members) and their committed offsets.
//
// A Shard is the coordinator of the groups that hash to one partition of
// __consumer_offsets: it runs on the broker that leads that partition,
// writes every state change there (Kafka's GroupMetadataKey/Value and
// OffsetCommitKey/Value records, through a Writer the owner provides) and
// answers a request only once its records are committed, so that a new
// coordinator that replays the partition (Shard.Replay) holds exactly the
// state clients were told of.
//
// Like the rest of core, a Shard runs on one env loop: time and
// randomness (member ids) come from its env.Env, and nothing it decides
// or answers depends on map iteration order (members are kept in join
// order).
package group
