// Package sim is Strata's deterministic simulator: one goroutine, one event
// queue ordered by (virtual time, insertion sequence), seeded randomness with
// an independent stream per component, and simulated disks, networks and
// buckets behind the core/env interfaces. Processes (nodes) run their core
// code unchanged on top of it; the simulator crashes (a power loss: the
// machine falls silent), kills (its kernel resets the conns), restarts,
// pauses, freezes and partitions them, and replaces their disks, on a
// seeded schedule.
//
// Every delivered event folds its time and label into a running trace hash.
// The same seed and the same commit give the same hash: that is the contract
// `make sim SEED=N` and the determinism tests check.
//
// The package obeys the core determinism contract itself: no goroutines,
// channels, sync, os, net, wall clock or global randomness. The only wall
// clock a run sees is the one its caller passes in for the summary.
package sim
