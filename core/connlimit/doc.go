// Package connlimit admits and expires the connections of one listener:
// Kafka's max.connections, max.connections.per.ip (with
// max.connections.per.ip.overrides) and connections.max.idle.ms. The
// client listener (core/broker) and the controller listener (core/kraft)
// each keep one Guard, so both are bounded alike in the node and in the
// simulator.
//
// It owns the counts of open connections, in total and by host (the
// remote address without its port), and one idle timer per watched
// connection. It decides; its owner closes: a connection refused by Admit
// is closed at once with a log line (Kafka's way: a refused client gets
// no error response), and an idle one is closed by the owner's expire
// function.
//
// A connection is idle when it has no request in flight (the owner's busy
// function says so), no response bytes leaving for the socket
// (env.Conn.Buffered changing since the last look: response bytes that
// wait and do not move are a client that stopped reading, which holds the
// connection and the bytes for ever otherwise) and no frame partly
// received (env.FrameReceiver, where the transport has it), and the owner
// has not touched it, at a request or a response, for MaxIdle. The timer
// is re-armed lazily: a touch only records the instant (and the bytes
// waiting then), and the timer, when it fires early, waits out the rest.
//
// # What it must never do
//
// connlimit is part of the deterministic core: time comes from env
// timers and env.Monotonic, it starts no goroutines and uses no sync,
// os, net or global randomness, and its by-host counts are only ever
// looked up, never iterated, so no map order reaches a decision.
package connlimit
