// Package proccluster runs Strata nodes as real processes for system
// tests: the strata binary built from this tree, N nodes on 127.0.0.1
// with ports the OS picked, or a node inside a network namespace. Its
// Cluster names its faults after what they do to a node (Kill, Restart,
// Pause, Resume, Partition, Heal): the real-process half of one nemesis
// for both worlds, where the simulator's cluster is the other.
//
// The system tests of the whole binary (KRaft failover, replication under
// kill -9 and partitions) live beside it, in this package's tests;
// interop/ and attack/ start their processes with it too.
//
// What it guarantees: every process it starts is SIGKILLed at the end of
// its test and dies with the test binary (Pdeathsig from one OS thread
// that lives as long as the binary), whatever ends it; every wait is
// bounded; a failed test logs each node's log.
//
// A test binary that uses Binary calls RunTests from its TestMain, which
// removes the built binary afterwards.
package proccluster
