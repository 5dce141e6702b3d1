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
// It also owns what every table of keys shares: the checks (IntIn,
// LongIn, Boolean, Custom, ...: Kafka's ConfigDef validators, whose words
// docs/operations.md shows as valid values), Key[C], a row with the
// setter of the typed field of C it fills, Keys[C], a table of them, and
// ParseProperties, the server.properties text parser. The broker keys are
// Key[server.Config], in core/server keys.go, and the production
// process's own keys Key[node.Config], in node keys.go: a row that sets a
// field of server.Config cannot live here, since core/server imports
// core/broker, which imports this package. Each table sits beside the
// struct it fills; the rows of all three read the same.
//
// # What it never does
//
// It holds no state and decides nothing about a particular topic: which
// source's value applies (topic, broker, cluster, static, default) is
// core/replica's resolution. It imports nothing above core/record.
package config
