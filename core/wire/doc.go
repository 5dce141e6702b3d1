// Package wire is Strata's one Kafka wire layer: the framing of requests
// and responses, the client side of a connection, and the one reconnecting
// peer every link between nodes uses.
//
//   - frame.go: ParseRequest reads a request frame's header and decodes its
//     body for the listener's protocol.Table; EncodeResponse and
//     EncodeRequest render frames; ParseResponse decodes a response for
//     its request (env.Net adds and strips the size prefix).
//   - client.go: Client is the client side of one connection: increasing
//     correlation ids, each response matched to its request whatever the
//     order, at most MaxInflight unanswered.
//   - peer.go: Peer is one kept connection to one address, the only dial
//     and redial state machine of the tree: it dials through the Env's
//     network, queues requests while it connects (at most MaxQueued, the
//     oldest dropped), sends them in order once connected, bounds the
//     requests in flight (refusing, or resetting a stuck connection),
//     closes a connection whose request goes unanswered past its timeout,
//     and, with Redial, dials again after a backoff doubling from Min to
//     Max. The quorum's peers and the controller forwarder (core/kraft),
//     the inter-broker clients (core/broker peers.go) and the replica
//     fetchers (core/replica fetcher.go) are each a Peer with their own
//     PeerConfig, so that TLS and SASL for every link go here once.
//
// Which APIs and versions a listener serves, and how a request is answered
// with an error, are core/protocol's (the API table); this package holds
// the state of connections and none of the tables.
//
// Like all of core it is deterministic: no goroutines, clocks or sockets
// of its own; everything runs on the env.Env's loop (a real node's or the
// simulator's), so a Peer's dials, backoffs and timeouts are simulated
// events, in the same order for the same seed.
//
// A peer's callbacks (a request's done, OnDialFailed, OnConnected,
// OnLost) run on the loop, never inside the Do that gave the request;
// every request Do accepts gets its done exactly once, unless it is
// cancelled while still queued. Nothing read from the network reaches an
// assertion: a response that does not decode, or answers no request,
// closes its connection.
package wire
