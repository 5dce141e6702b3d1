// Package server composes one whole Strata server on an env.Env, once for
// both worlds: the metadata quorum member (core/kraft: a voter with the
// controller role, an observer otherwise) and, with the broker role, the
// client listener (core/broker), the broker's registration and heartbeats
// with the controller, and the partitions it hosts (core/replica). node/
// runs Start on its real Env; every simulator scenario that runs servers
// calls the same Start on a simulated Env, so the nemesis exercises the
// wiring production runs.
//
// It also owns the broker's config rows (keys.go): one row per Kafka
// broker key, with its type, default, bounds, documentation and the typed
// field of Config it sets. server.properties text, `strata serve` flags,
// DescribeConfigs and docs/operations.md all read them; the process's own
// keys (listeners, sockets) are node's rows.
package server
