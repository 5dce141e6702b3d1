// Package config is Strata's table of config keys: one row per key, with
// its type, default, valid values and documentation, and a parser that
// every reader of the key goes through.
//
// # What it owns
//
// Today the rows of the topic configs (Kafka's LogConfig keys, topic.go):
// the controller validates CreateTopics, AlterConfigs and
// IncrementalAlterConfigs values with them (refusing with INVALID_CONFIG
// and the row's reason), the partitions parse the values they apply with
// them (core/replica topicconfig.go), DescribeConfigs reports their types
// and documentation, and the node checks the server.properties keys that
// set topic defaults (a row's ServerDefault) with them. A row's valid
// values are exactly what its users can apply: a value the partitions
// could not use (a segment.bytes below one batch header) is refused here,
// so it is never accepted and then skipped. docs/operations.md lists
// every row (a test compares them).
//
// The broker keys (node/configkeys.go) are to become rows here too
// (issue 23); the row type is shaped for them, not only for topics.
//
// # What it never does
//
// It holds no state and decides nothing about a particular topic: which
// source's value applies (topic, broker, cluster, static, default) is
// core/replica's resolution. It imports nothing above core/record.
package config
