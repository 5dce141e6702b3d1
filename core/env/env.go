package env

import (
	"log/slog"
	"math/rand/v2"
	"time"
)

// Env is the world as seen by one process incarnation's event loop.
type Env interface {
	// Now returns the wall-clock time of this process. It is the clock Kafka
	// puts in record timestamps and log.retention decisions. It can jump
	// (NTP steps, nemesis clock jumps) and can run fast or slow (skew), so it
	// must never drive timeouts; use Monotonic for those.
	Now() time.Time

	// Monotonic returns the time elapsed on this process's monotonic clock
	// since the incarnation started. It never goes backwards and never jumps,
	// though in the simulator it may run at a skewed rate (a node whose
	// oscillator is 1% fast sees 1.01 s per real second).
	Monotonic() time.Duration

	// AfterFunc arranges for f to run on the loop once d has elapsed on the
	// Monotonic clock. d <= 0 schedules f as soon as possible, but still
	// later, never inline. Timers that fire at the same instant run in the
	// order they were created.
	AfterFunc(d time.Duration, f func()) Timer

	// Post runs f on the loop as soon as possible, after callbacks already
	// queued for the current instant. It is how code defers work to a later
	// step (bounded work per callback, e.g. a compaction slice).
	Post(f func())

	// Work runs job off the loop, on one of a bounded set of CPU workers
	// (about GOMAXPROCS in the node), and then done on the loop. It is for
	// CPU-heavy work on data the loop hands over and does not touch until
	// done runs (decompressing and validating a produced batch, encoding a
	// large response): while the job runs, the loop serves everyone else.
	//
	// job must be pure: it may read and write only what it was given, never
	// loop state, never the Env, and it must not block. cost is the
	// caller's estimate of the job's CPU time; the simulator runs the job
	// that long in virtual time on one of its modelled workers (jobs queue
	// when every worker is busy), the node ignores it. done runs on the
	// loop after job returned, never inline; a crashed or stopped
	// incarnation gets no done. Jobs may finish in any order: callers
	// that need an order keep it themselves (package core/work does).
	Work(cost time.Duration, job func(), done func())

	// Rand is this process's randomness. In the node it is ChaCha8 from a
	// secret seed, cryptographically strong, so what must not be guessed
	// (SASL nonces and salts) may come from it. In the simulator it is
	// seeded from the run seed and the process identity, so adding a
	// process does not reshuffle another's stream. Core must not share it
	// across loops.
	Rand() *rand.Rand

	// Buggify reports whether the fault point named site should misbehave
	// now (FoundationDB's BUGGIFY). It is always false in production; in the
	// simulator it is true with a seeded probability for sites the run
	// enabled. Rare paths (a slow retry, a tiny batch) become common in
	// simulation this way.
	Buggify(site string) bool

	// Disk is this process's storage root (the data directory).
	Disk() Disk

	// Net is this process's network endpoint.
	Net() Net

	// Bucket is this process's object store, or nil when none is configured.
	Bucket() Bucket

	// Logger is a structured logger. In the simulator it stamps virtual time
	// and the process name and its output is part of the deterministic run.
	Logger() *slog.Logger
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the timer from firing. It reports whether the call
	// stopped it; false means it already fired or was already stopped. After
	// Stop returns true the callback is guaranteed never to run.
	Stop() bool
}
