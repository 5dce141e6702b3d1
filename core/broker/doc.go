// Package broker is Strata's Kafka request server: it accepts connections on
// an env.Net listener, decodes request frames with kmsg, dispatches them to
// handlers and sends the encoded responses back, in request order, on the
// same connection.
//
// It owns the per-connection protocol state (correlation ids, which
// connections are open) and the answers to the cluster-level requests it
// implements today: ApiVersions and Metadata (unfenced brokers, topics and
// partitions from the metadata quorum member's image, Config.Metadata),
// and CreateTopics, DeleteTopics, CreatePartitions and DescribeQuorum,
// which it passes to the member's Submit (which forwards them to the
// quorum leader when needed) and answers with the controller's response.
// Metadata's controller id names a broker, as in KRaft Kafka: this one
// when it is registered and unfenced (metadata.go). Which API keys and versions it
// serves is decided in one place, package protocol; the handlers here must
// implement every version that table advertises.
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
// connection (as Kafka does), and nothing else. Panics are reserved for
// violated internal invariants (package assert).
//
// # Invariants
//
//   - Responses on a connection go out in the order their requests arrived.
//     A request passed to the metadata quorum is answered later; until
//     then the connection's further frames wait, unhandled, in a queue of
//     at most maxQueuedFrames (past it the connection is closed), so one
//     request per connection is in flight.
//   - An ApiVersions request at any version gets an answer the client can
//     decode (KIP-511), so it can retry at a version we support.
package broker
