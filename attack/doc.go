// Package attack holds Strata's attack suite (issue 22): real `strata
// serve` processes, built from this tree, fed every hostile and malformed
// input issue 22 found, plus mutations of valid requests, while a victim
// client measures what an honest client sees. It has no code of its own
// outside its tests.
//
// What it owns: the proof, on real processes, sockets and disks, that no
// client can crash, wedge or poison a node. Throughout every phase of an
// attack it asserts that the node does not panic, answers another client's
// Metadata and /healthz within a bound, keeps that client's acks=all
// produce p99 within a multiple of its quiet p99, and stays under an RSS
// bound (docs/operations.md, "Connections and request memory"). After the
// attacks a consumer reads exactly the records that were acknowledged,
// compaction still runs, and a restart is clean.
//
// The tests:
//
//   - TestAttackNode (attack_test.go): one combined node; a quiet phase,
//     then one phase per shape (forged quorum and controller requests at
//     the CONTROLLER listener, malformed batches, decompression bombs with
//     repeated partitions, partial frames, trickling, idle sockets up to
//     max.connections, pipelined all-topics Metadata floods, bad topic
//     configs and internal topic names, replica fetches from an unknown
//     replica, a valid request followed by a bad frame) and a phase of
//     mutated valid requests (seeded: STRATA_ATTACK_SEED replays one);
//     then the checks after, and a SIGTERM and restart on the same data.
//   - TestAttackQuorum (quorum_test.go): three voters, forged Votes at the
//     largest epoch and self-named Votes and BeginQuorumEpochs at every
//     CONTROLLER listener; the quorum keeps its leader, and after all three
//     restart it elects again.
//
// What it must never do: listen or dial anywhere but 127.0.0.x, run
// unbounded (every wait has a deadline; a node process dies with the test
// binary), or loosen a bound to get a run through: a bound that fails is
// a finding until shown otherwise.
package attack
