// Package nemesis injects faults into a cluster on a seeded schedule.
//
// It draws the schedule against a World (world.go): nodes by index, the
// world's clock and timers (Now, After), its seeded streams (Rand), and
// the fault primitives. The simulator is one world (nemesis/simworld, the
// only place that joins nemesis to sim); a cluster of real processes is
// another (kill -9, SIGSTOP and SIGCONT, network namespaces and tc netem,
// a small log directory). A world says what it can inject
// (World.Capabilities; the simulator can inject everything, Everything):
// DrawMixWithin leaves out the kinds and disk classes it lacks, after the
// same draws, and Start refuses a mix it cannot inject. Where a world
// lacks a form of a kind (power loss, machine freeze, a single
// connection's reset) the kind takes its other form (process kill, process
// pause, a reset of every connection) after the same draws. Every decision
// comes from the world's "nemesis" stream and its answers (which nodes
// are up, how full a disk is), at the times of its timers: the same seed
// against worlds that answer alike makes the same calls at the same times.
//
// A run draws a Mix per seed (swarm testing): which fault kinds are enabled
// and how hard each hits. Swarm testing finds more bugs than always turning
// every fault on, because some bugs need a long quiet stretch of one kind of
// trouble (say, only clock skew) that an everything-at-once schedule never
// produces. The schedule then injects faults at random intervals during a
// fault phase and always ends by healing everything: the network heals,
// killed nodes restart, disk and bucket faults clear, clocks run true, and
// machines whose filesystem failed (a failed directory sync) are
// power-cycled, as an operator reboots a machine whose filesystem went
// read-only. The scenario checks liveness in the healed phase that follows.
//
// Primitives: kill (half the time a power loss: unsynced disk writes are
// lost, but for a possible torn prefix, and the machine is silent on the
// network until it boots; half the time a process kill with the machine
// up, which keeps the page cache and whose kernel resets the conns) and
// restart, pause (and machine freezes, silent), partition (random halves,
// and Jepsen's bridge and majorities ring) and one-way blocks (of one
// link, or asymmetric: a node cut from all others in one direction), clog
// (delay all traffic of a node, or one direction of a link), connection
// resets (of a node, or of one conn), disk faults (the classes of the
// seed's DiskMix, storage.go: fsync failures and ENOSPC at fsync;
// directory-sync failures, which fail the filesystem until the machine is
// power-cycled when the fault ends; EIO on write; ENOSPC on create, mkdir,
// rename and truncate; read bit flips, full disk, slow syncs; and, on a
// minority of processes and only on files their scenario declared
// survivable, latent sector errors, corruption at rest and misdirected
// writes), bucket faults (errors, ambiguous failures, latency), clock
// jumps and clock skew. Two more only where the scenario promises to
// survive them (Promises, DrawMixFor): outages (a majority of the voters,
// or every node, loses power at once) and wipes (a node comes back with an
// empty disk).
//
// Each temporary fault heals only itself: a partition's heal lifts its own
// cuts (Cut), a disk or bucket fault's heal returns to the newest other
// fault still in force there, or to the seed's crash model.
//
// The package is deterministic code: it imports nothing of the simulator,
// runs only in the world's callbacks, and everything it decides comes
// from the world's seeded streams (the determinism guard checks it, and
// simworld, like sim).
package nemesis
