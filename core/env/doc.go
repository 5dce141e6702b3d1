// Package env defines the only doors through which Strata's deterministic
// core touches the world: time, timers, randomness, disk, network and the
// object store.
//
// Two implementations exist. The production runtime (package node) backs each
// interface with the real clock, os.File, TCP sockets and an objstore bucket.
// The simulator (package sim) backs them with a virtual clock, seeded
// randomness, a simulated page cache and disk, a simulated network and an
// in-memory bucket, all driven by one event queue.
//
// # The loop contract
//
// Every Env belongs to one event loop. Every callback passed to an Env method
// (a timer, a Sync completion, an accepted connection, a received frame, a
// bucket completion) runs later on that same loop, never inline inside the
// call that registered it and never concurrently with another callback of the
// same loop. Core code therefore needs no locks: while a callback runs it owns
// all state reachable from its loop.
//
// Callbacks registered by a process incarnation are never delivered after that
// incarnation crashes or stops: a crash drops every pending timer, completion
// and frame. A restarted process gets a fresh Env and rebuilds its state from
// what its Disk made durable.
//
// # What core must never do
//
// Core code reaches time, randomness and I/O only through Env. It starts no
// goroutines, uses no channels, select, sync, os, net, time.Now, time.Sleep,
// time.After, package-level math/rand functions or crypto/rand, and never lets
// map iteration order reach a decision or an output. A test
// (determinism_guard_test.go at the repository root) enforces this by reading
// the source.
package env
