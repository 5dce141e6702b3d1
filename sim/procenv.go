package sim

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/strata-log/strata/core/env"
)

// procEnv is env.Env for one incarnation of a process.
type procEnv struct {
	p      *Process
	inc    uint64
	rng    *rand.Rand
	disk   env.Disk
	net    env.Net
	bucket env.Bucket
	log    *slog.Logger

	// Labels are built once per incarnation: events are the hot path.
	timerLabel, postLabel, workLabel string

	// workerFree is when each of the incarnation's modelled CPU workers
	// (Work) is next free, in virtual time.
	workerFree [simWorkers]time.Duration
}

// simWorkers is how many CPU workers Work models per process: a job waits
// while this many are busy. Two, as on the machines Strata is tested on.
const simWorkers = 2

var _ env.Env = (*procEnv)(nil)

func newProcEnv(p *Process) *procEnv {
	s := p.sim
	e := &procEnv{
		p:   p,
		inc: p.inc,
		// Each incarnation draws a fresh stream, so a restart does not
		// replay its predecessor's choices (a new election timeout).
		rng: s.Rand("proc/" + p.name + "/" + strconv.FormatUint(p.inc, 10)),
	}
	e.disk = p.disk.handle()
	e.net = s.network.endpoint(p)
	e.bucket = s.bucket.handle(p)
	e.timerLabel = p.label("timer")
	e.postLabel = p.label("post")
	e.workLabel = p.label("work")
	e.log = slog.New(newSimLogHandler(s, p.name+"#"+strconv.FormatUint(p.inc, 10)))
	return e
}

func (e *procEnv) Now() time.Time {
	c := &e.p.clock
	return e.p.sim.cfg.Epoch.Add(c.local(e.p.sim.now) + c.jumped)
}

func (e *procEnv) Monotonic() time.Duration {
	c := &e.p.clock
	return c.local(e.p.sim.now) - c.incStart
}

func (e *procEnv) AfterFunc(d time.Duration, f func()) env.Timer {
	t := &simTimer{sim: e.p.sim}
	t.ev = e.p.sim.schedule(e.p, e.p.clock.toVirtual(d), e.timerLabel, f)
	return t
}

func (e *procEnv) Post(f func()) {
	e.p.sim.schedule(e.p, 0, e.postLabel, f)
}

// Work implements env.Env: the job takes cost of virtual time on the
// first modelled worker to be free (queueing behind busy ones), and runs
// with done as one event at its end. A buggified job is slow (ten times
// its cost: a descheduled worker, a cold cache), so late completions and
// completions out of submission order are common in simulation.
func (e *procEnv) Work(cost time.Duration, job func(), done func()) {
	now := e.p.sim.now
	w := 0
	for i := range e.workerFree {
		if e.workerFree[i] < e.workerFree[w] {
			w = i
		}
	}
	start := max(now, e.workerFree[w])
	cost = max(cost, 0)
	if e.Buggify("sim/work-slow") {
		cost *= 10
	}
	e.workerFree[w] = start + cost
	e.p.sim.schedule(e.p, start+cost-now, e.workLabel, func() {
		job()
		done()
	})
}

func (e *procEnv) Rand() *rand.Rand         { return e.rng }
func (e *procEnv) Buggify(site string) bool { return e.p.sim.buggifyFires(site) }
func (e *procEnv) Disk() env.Disk           { return e.disk }
func (e *procEnv) Net() env.Net             { return e.net }
func (e *procEnv) Bucket() env.Bucket       { return e.bucket }
func (e *procEnv) Logger() *slog.Logger     { return e.log }

type simTimer struct {
	sim *Sim
	ev  *event
}

func (t *simTimer) Stop() bool { return t.sim.cancel(t.ev) }

// simLogHandler writes text log lines stamped with virtual time, so that a
// run's log is as reproducible as its trace.
type simLogHandler struct {
	sim   *Sim
	inner slog.Handler
}

func newSimLogHandler(s *Sim, proc string) slog.Handler {
	w := s.cfg.Log
	if w == nil {
		w = io.Discard
	}
	inner := slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})
	return &simLogHandler{sim: s, inner: inner.WithAttrs([]slog.Attr{slog.String("proc", proc)})}
}

func (h *simLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.sim.cfg.Log != nil && h.inner.Enabled(ctx, l)
}

func (h *simLogHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Time = h.sim.cfg.Epoch.Add(h.sim.now)
	return h.inner.Handle(ctx, r)
}

func (h *simLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &simLogHandler{sim: h.sim, inner: h.inner.WithAttrs(as)}
}

func (h *simLogHandler) WithGroup(name string) slog.Handler {
	return &simLogHandler{sim: h.sim, inner: h.inner.WithGroup(name)}
}
