// Package work schedules CPU-heavy jobs of one event loop onto the Env's
// workers (env.Env.Work) fairly and in order.
//
// A Pool belongs to one loop. Each client of it (a connection, a
// listener) gets a Queue. Jobs of one queue complete in the order they were
// submitted (a connection's produce requests are appended in the order they
// arrived), however the workers finish them; jobs of different queues share
// the workers round-robin, so one connection's pipeline of heavy requests
// cannot starve another connection: a newcomer's job starts as soon as a
// worker is free, after at most one job of every other queue.
//
// The pool hands the Env at most Limit jobs at a time and keeps the rest
// itself, so nothing queues where fairness cannot see it. Small jobs may
// run inline on the loop (InlineBelow) when nothing of their queue is
// pending, which keeps the common small request off the workers' round
// trip without reordering anything.
//
// What it must never do: run a job's done out of its queue's order, call a
// done after its queue was closed, or hold more than Limit jobs on the
// Env.
package work

import (
	"time"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
)

// Config bounds a Pool.
type Config struct {
	// Limit is how many jobs the Env runs at once for the pool (about
	// the number of CPU workers). Default 2.
	Limit int
	// PerQueue is how many jobs of one queue may run at once (their done
	// callbacks still run in order). Default 2: a single connection can
	// use two cores for its produce requests, and never all of them when
	// Limit is larger.
	PerQueue int
	// InlineBelow: a job whose cost is below it runs on the loop at
	// Submit when its queue has nothing pending. Zero never runs inline.
	InlineBelow time.Duration
	// Spare is how many jobs beyond Limit may run at once, each of a
	// light queue (see LightBelow). Zero (the default) keeps none.
	Spare int
	// LightBelow: a job may take a spare slot when its cost is below
	// it, nothing of its queue runs, and its queue's recent work (what
	// its jobs were charged, less the time since) is below it too.
	// Default 1 ms.
	LightBelow time.Duration
}

const (
	defaultLimit      = 2
	defaultPerQueue   = 2
	defaultLightBelow = time.Millisecond
)

// Pool is the loop's scheduler of jobs onto env.Env.Work.
type Pool struct {
	e       env.Env
	cfg     Config
	running int      // jobs handed to the Env and not completed
	ready   []*Queue // queues with a job they may start, round-robin order
	stats   Stats
}

// Stats counts what a Pool did, for metrics and tests.
type Stats struct {
	Submitted, Inline, Started, Completed, Dropped uint64
	// Spare counts the jobs started in a spare slot.
	Spare uint64
	// Queued is the jobs waiting for a worker now.
	Queued int
}

// NewPool returns a Pool on e.
func NewPool(e env.Env, cfg Config) *Pool {
	if cfg.Limit <= 0 {
		cfg.Limit = defaultLimit
	}
	if cfg.PerQueue <= 0 {
		cfg.PerQueue = defaultPerQueue
	}
	if cfg.LightBelow <= 0 {
		cfg.LightBelow = defaultLightBelow
	}
	return &Pool{e: e, cfg: cfg}
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats { return p.stats }

// Running is the number of jobs on the Env's workers now.
func (p *Pool) Running() int { return p.running }

// Queue is one client's ordered line of jobs.
type Queue struct {
	p       *Pool
	jobs    []*job // submitted and not yet done, in submission order
	started int    // jobs[:started] were handed to the Env (or ran inline)
	running int
	ready   bool // listed in p.ready
	closed  bool
	// busyUntil is when the queue's charged work would end had it run
	// alone from its first job on (Monotonic); its recent work is
	// busyUntil - now. Kept only with spare slots.
	busyUntil time.Duration
}

// Job is one piece of CPU-heavy work.
type Job struct {
	// Cost is the estimate given to the Env (the simulator's virtual CPU
	// time; see env.Env.Work).
	Cost time.Duration
	// Run runs off the loop (or inline, see Config.InlineBelow). It must
	// be pure: only its own inputs, never loop state.
	Run func()
	// Done runs on the loop after Run, in the queue's submission order.
	Done func()
	// Drop, if set, runs on the loop instead of Done when the queue is
	// closed before Done could run, so that the owner can release what
	// the job held.
	Drop func()
	// Charge, if set, is the job's cost as its result shows it (a
	// batch's decompressed size), read on the loop once Run returned;
	// the queue's recent work grows by it (by Cost when unset).
	Charge func() time.Duration
}

type job struct {
	Job
	finished bool
}

// NewQueue returns an empty queue of p.
func (p *Pool) NewQueue() *Queue { return &Queue{p: p} }

// Pending is the number of jobs of q submitted and not yet done.
func (q *Queue) Pending() int { return len(q.jobs) }

// Submit runs j.Run off the loop and then j.Done on the loop, after the
// Done of every job submitted to q before it. A job below InlineBelow with
// nothing pending in q runs inline: Run and Done both run before Submit
// returns.
func (q *Queue) Submit(j Job) {
	assert.That(!q.closed, "work: submit to a closed queue")
	p := q.p
	p.stats.Submitted++
	if len(q.jobs) == 0 && j.Cost < p.cfg.InlineBelow {
		p.stats.Inline++
		j.Run()
		j.Done()
		return
	}
	q.jobs = append(q.jobs, &job{Job: j})
	p.stats.Queued++
	q.markReady()
	p.pump()
}

// Close drops q's jobs: those not started never run, and no Done of q runs
// from now on (jobs already on a worker finish there and are forgotten).
// Each dropped job's Drop runs now, in submission order.
func (q *Queue) Close() {
	if q.closed {
		return
	}
	q.closed = true
	p := q.p
	dropped := q.jobs
	p.stats.Queued -= len(q.jobs) - q.started
	p.stats.Dropped += uint64(len(q.jobs))
	q.jobs = nil
	q.started = 0
	for _, j := range dropped {
		if j.Drop != nil {
			j.Drop()
		}
	}
	// Running jobs still hold workers until they complete (complete
	// releases them); q stays out of the ready ring.
}

// canStart reports whether q has a job it may hand to a worker now.
func (q *Queue) canStart() bool {
	return !q.closed && q.started < len(q.jobs) && q.running < q.p.cfg.PerQueue
}

func (q *Queue) markReady() {
	if !q.ready && q.canStart() {
		q.ready = true
		q.p.ready = append(q.p.ready, q)
	}
}

// pump hands jobs to the Env while workers are free, one job per ready
// queue in turn, and then spare slots to light queues.
func (p *Pool) pump() {
	for p.running < p.cfg.Limit && len(p.ready) > 0 {
		q := p.ready[0]
		p.ready[0] = nil
		p.ready = p.ready[1:]
		q.ready = false
		if !q.canStart() {
			continue // closed, or filled its share, since it was listed
		}
		p.start(q)
	}
	if p.cfg.Spare == 0 || p.running >= p.cfg.Limit+p.cfg.Spare || len(p.ready) == 0 {
		return
	}
	now := p.e.Monotonic()
	for i := 0; i < len(p.ready) && p.running < p.cfg.Limit+p.cfg.Spare; {
		q := p.ready[i]
		if !q.canStart() || !q.light(now) {
			i++
			continue
		}
		p.ready = append(p.ready[:i], p.ready[i+1:]...)
		q.ready = false
		p.stats.Spare++
		p.start(q)
	}
}

// light reports whether q's next job may take a spare slot at now.
func (q *Queue) light(now time.Duration) bool {
	return q.running == 0 && q.jobs[q.started].Cost < q.p.cfg.LightBelow && q.busyUntil-now < q.p.cfg.LightBelow
}

// start hands q's next job to the Env and lists q again (at the back of
// the ring: round-robin) if it may start another.
func (p *Pool) start(q *Queue) {
	j := q.jobs[q.started]
	q.started++
	q.running++
	p.running++
	p.stats.Queued--
	p.stats.Started++
	p.e.Work(j.Cost, j.Run, func() { q.complete(j) })
	q.markReady()
}

// complete runs on the loop when j's run returned: j's done runs once every
// job before it in q is done, and the freed worker goes to the next queue.
func (q *Queue) complete(j *job) {
	p := q.p
	p.running--
	q.running--
	p.stats.Completed++
	assert.That(p.running >= 0 && q.running >= 0, "work: completion of a job never started")
	if p.cfg.Spare > 0 {
		charge := j.Cost
		if j.Charge != nil {
			charge = j.Charge()
		}
		q.busyUntil = max(q.busyUntil, p.e.Monotonic()) + max(charge, 0)
	}
	if !q.closed {
		j.finished = true
		for len(q.jobs) > 0 && q.jobs[0].finished {
			next := q.jobs[0]
			q.jobs[0] = nil
			q.jobs = q.jobs[1:]
			q.started--
			next.Done()
			if q.closed {
				break // a done closed its own queue
			}
		}
		q.markReady()
	}
	p.pump()
}
