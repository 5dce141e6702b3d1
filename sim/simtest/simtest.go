// Package simtest is the rig that package tests in core/ and sim/ share:
// one simulated process whose code a test drives from outside the
// simulator's loop, between runs (everything is one goroutine). A test's
// own rig embeds a *Rig and adds what it drives (a log, snapshots, a
// disk), so that starting the process, running the simulator, restarting
// after a power loss and waiting for a callback are written once.
//
// Only tests import it. Like all of sim it is deterministic: it runs the
// simulator and reads nothing from the host (a test that wants the
// processes' logging passes a writer in sim.Config.Log).
package simtest

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/sim"
)

// TB is what the rig needs of a test: a *testing.T, a *testing.B or a
// *rapid.T.
type TB interface {
	require.TestingT
	Helper()
}

const (
	// Host is the name of the process New starts.
	Host = "n1"
	// WaitBound is how much simulated time Wait, Await and RunUntil give
	// unless a rig sets its own Bound.
	WaitBound = 100 * time.Second
	// waitStep is how far Wait and RunUntil run the simulator between
	// looks.
	waitStep = time.Millisecond
)

// Rig is one simulated process, started, that a test drives between runs
// of the simulator.
type Rig struct {
	T    TB
	Sim  *sim.Sim
	Proc *sim.Process
	// Env is the running incarnation's environment.
	Env env.Env
	// Bound is how much simulated time Wait, Await and RunUntil allow
	// before the test fails (WaitBound when zero).
	Bound time.Duration
}

// New starts process Host of a new simulation built from cfg and runs the
// simulator until it has started.
func New(t TB, cfg sim.Config) *Rig { return NewProcess(t, cfg, Host, nil) }

// NewProcess starts host of a new simulation built from cfg and runs the
// simulator until it has started; start, when not nil, runs at the start
// of every incarnation, after Env is set.
func NewProcess(t TB, cfg sim.Config, host string, start func(env.Env)) *Rig {
	t.Helper()
	r := &Rig{T: t, Sim: sim.New(cfg)}
	r.Proc = r.Sim.AddProcess(host, func(e env.Env) {
		r.Env = e
		if start != nil {
			start(e)
		}
	})
	r.Proc.Start()
	r.Run(0)
	return r
}

// Run runs the simulator for d of simulated time; it fails the test if
// the simulation fails.
func (r *Rig) Run(d time.Duration) {
	r.T.Helper()
	require.NoError(r.T, r.Sim.RunFor(d))
}

// Restart power-fails the process (sim.Process.Crash: the page cache is
// lost), starts a new incarnation and runs until it has started.
func (r *Rig) Restart() {
	r.T.Helper()
	r.Proc.Crash()
	r.Proc.Start()
	r.Run(0)
}

// Wait issues an asynchronous operation and runs the simulator until its
// callback reports, and returns the callback's error. The callback must
// run, exactly once, and not inline (before issue returns): the core's
// callbacks never do.
func (r *Rig) Wait(issue func(done func(error))) error {
	r.T.Helper()
	var got error
	called := false
	issue(func(err error) {
		require.False(r.T, called, "callback ran twice")
		called, got = true, err
	})
	require.False(r.T, called, "callback ran inline")
	r.RunUntil("the callback", func() bool { return called })
	return got
}

// RunUntil runs the simulator until cond holds; it fails the test if cond
// does not hold within the rig's Bound.
func (r *Rig) RunUntil(what string, cond func() bool) {
	r.T.Helper()
	bound := r.Bound
	if bound == 0 {
		bound = WaitBound
	}
	RunUntil(r.T, r.Sim, what, bound, waitStep, cond)
}

// RunUntil runs s in steps of step until cond holds; it fails t if cond
// does not hold within bound, or if the simulation fails.
func RunUntil(t TB, s *sim.Sim, what string, bound, step time.Duration, cond func() bool) {
	t.Helper()
	deadline := s.Now() + bound
	for !cond() {
		if s.Now() >= deadline {
			require.FailNow(t, fmt.Sprintf("%s: not within %v", what, bound))
		}
		require.NoError(t, s.RunFor(step), what)
	}
}

// Await is Wait for an operation whose completion carries no error.
func (r *Rig) Await(issue func(done func())) {
	r.T.Helper()
	require.NoError(r.T, r.Wait(func(done func(error)) { issue(func() { done(nil) }) }))
}
