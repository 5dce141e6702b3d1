// Package broker is Strata's Kafka request server: it accepts connections on
// an env.Net listener, decodes request frames with kmsg, dispatches them to
// handlers and sends the encoded responses back, in request order, on the
// same connection.
//
// It owns the per-connection protocol state (correlation ids, which
// connections are open, request order) and the answers to the requests in
// its one API table (apis.go): ApiVersions; Metadata (brokers, topics and
// partitions from the metadata quorum member's image, Config.Metadata,
// with topic auto-creation, autocreate.go); the data path on the hosted
// partitions (Produce, Fetch, ListOffsets, DeleteRecords,
// OffsetForLeaderEpoch, InitProducerId); the descriptions DescribeConfigs
// (topic configs resolved by core/replica, the function that configures
// the partitions), DescribeCluster, DescribeTopicPartitions and
// DescribeLogDirs; and the controller requests (CreateTopics,
// DeleteTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs,
// DescribeQuorum), which it passes to the member's Submit (which forwards
// them to the quorum leader when needed) and answers with the
// controller's response. Metadata's controller id names a broker, as in
// KRaft Kafka: this one when it is registered and unfenced (metadata.go).
// The handlers must implement every version the table advertises; Kafka
// error codes come from the one error table (errors.go).
//
// # What it must never do
//
// broker is part of the deterministic core. It runs only inside env
// callbacks on one loop, and it must never start goroutines, use channels,
// select, sync, os, net, time.Now/Sleep/After, math/rand globals or
// crypto/rand, or let map iteration order reach an output. Everything it
// does to the world goes through env.Env.
//
// It must never panic on input from the network. Bytes from a client are
// validated, not trusted: a malformed frame, an unknown API key or an
// unsupported version is logged with the remote address and closes that one
// connection (as Kafka does), once the requests before it are answered,
// and nothing else. Connections are admitted and expired by a
// core/connlimit Guard (max.connections, max.connections.per.ip,
// connections.max.idle.ms). Panics are reserved for
// violated internal invariants (package assert).
//
// # Invariants
//
//   - Responses on a connection go out in the order their requests arrived.
//     Requests are handled as they arrive (pipelined), except behind a
//     barrier: a request passed to the metadata quorum holds the
//     connection's later requests, unhandled, until it is answered (conn.go).
//     A connection with Config.MaxInflightRequestsPerConn requests in
//     flight, or a broker holding Config.MaxInflightRequestBytes, stops
//     reading until answers go out.
//   - An ApiVersions request at any version gets an answer the client can
//     decode (KIP-511), so it can retry at a version we support.
package broker
