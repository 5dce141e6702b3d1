package sim

import (
	"fmt"
	"time"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
)

// StartFunc builds a process's core state on a fresh env: at first start and
// after every restart, when it must recover from what its disk made durable.
// It runs as an event of the new incarnation.
type StartFunc func(e env.Env)

// Process is a simulated node: a name that is also its network host, a disk
// that outlives crashes, a local clock, and the current incarnation of its
// core code. Crash ends the incarnation (every pending callback of it is
// dropped, unsynced disk data is lost, its connections reset); Start begins a
// new one from the disk.
type Process struct {
	sim   *Sim
	name  string
	start StartFunc
	disk  *Disk

	up          bool
	inc         uint64 // current incarnation, 1 for the first start
	pausedUntil time.Duration
	held        []*event // events that came due while paused, in order
	env         *procEnv

	clock localClock
}

// AddProcess registers a process; it does not start it.
func (s *Sim) AddProcess(name string, start StartFunc) *Process {
	assert.That(s.byName[name] == nil, "duplicate process %q", name)
	p := &Process{sim: s, name: name, start: start, clock: newLocalClock()}
	p.disk = newDisk(s, p)
	s.procs = append(s.procs, p)
	s.byName[name] = p
	return p
}

// Name is the process's name and network host.
func (p *Process) Name() string { return p.name }

// Up reports whether an incarnation is running (paused counts as up).
func (p *Process) Up() bool { return p.up }

// Paused reports whether the process is paused now.
func (p *Process) Paused() bool { return p.up && p.pausedUntil > p.sim.now }

// Frozen reports whether the machine is frozen now (Freeze).
func (p *Process) Frozen() bool { return p.up && p.sim.network.host(p.name).frozenUntil > p.sim.now }

// Incarnation counts the starts so far.
func (p *Process) Incarnation() uint64 { return p.inc }

// Disk is the process's simulated disk, for fault injection and checks.
func (p *Process) Disk() *Disk { return p.disk }

// Env is the current incarnation's env, or nil while down.
func (p *Process) Env() env.Env {
	if !p.up {
		return nil
	}
	return p.env
}

// Start begins a new incarnation if the process is down: the StartFunc runs
// as the incarnation's first event.
func (p *Process) Start() {
	if p.up {
		return
	}
	p.inc++
	p.up = true
	p.pausedUntil = 0
	p.held = nil
	p.clock.startIncarnation(p.sim.now)
	p.env = newProcEnv(p)
	p.sim.network.processUp(p)
	e := p.env
	p.sim.schedule(p, 0, p.label("start"), func() { p.start(e) })
}

// Crash ends the running incarnation as a power loss would: pending
// callbacks are dropped, unsynced disk state is lost (a torn tail may
// remain), a failed filesystem (Disk.Failed) comes back working. The
// machine stays off, silent, until the next Start: its peers get no reset
// (their conns to it are left half-open) and dials to it time out (see
// Network). It does nothing to a process that is down; see PowerCycle.
func (p *Process) Crash() {
	if p.end("crash", true) {
		p.disk.crash()
	}
}

// PowerCycle turns the machine off and on again, as an operator reboots a
// machine whose filesystem went read-only: the running incarnation, if
// any, ends as in Crash, and the disk loses its page cache even when the
// process was already down (a killed process leaves the page cache
// behind; a power loss does not). A failed filesystem (Disk.Failed) works
// again afterwards. The process stays down until Start.
func (p *Process) PowerCycle() {
	if p.up {
		p.Crash()
		return
	}
	p.sim.Fault("power-cycle", p.name)
	p.sim.network.powerOff(p)
	p.disk.crash()
}

// ReplaceDisk gives the machine, which must be down, a new empty disk: a
// failed disk replaced, or a node replaced by a fresh one under the same
// name. The next incarnation starts with nothing on disk. Faults set on the
// old disk do not carry over.
func (p *Process) ReplaceDisk() {
	assert.That(!p.up, "ReplaceDisk of %s while it runs", p.name)
	p.sim.Fault("disk-replace", p.name)
	boot := p.disk.boot + 1 // the machine was down: a new boot
	p.disk = newDisk(p.sim, p)
	p.disk.boot = boot
}

// Kill ends the running incarnation as a SIGKILL or an OOM kill would,
// with the machine staying up: pending callbacks are dropped and
// connections reset (its kernel sends the RSTs, and refuses dials until a
// new incarnation listens), but the disk keeps its page cache (writes already
// made stay readable; what was not synced is still not durable), a failed
// filesystem stays failed (Disk.Failed), and open files are closed.
func (p *Process) Kill() {
	if p.end("kill", false) {
		p.disk.processExit()
	}
}

// end ends the running incarnation, if any, as fault what: its pending and
// held callbacks are dropped and its connections end (reset by its kernel,
// or left half-open at its peers on a power loss). It reports whether an
// incarnation was running.
func (p *Process) end(what string, powerLoss bool) bool {
	if !p.up {
		return false
	}
	p.sim.Fault(what, p.name)
	p.up = false
	p.held = nil
	p.env = nil
	p.sim.network.processDown(p, powerLoss)
	return true
}

// Restart crashes the process if it is up and starts it again.
func (p *Process) Restart() {
	p.Crash()
	p.Start()
}

// Pause stops the process for d (a GC pause, SIGSTOP) with its machine's
// kernel running: nothing of it runs meanwhile; events that come due are
// held and delivered, in order, when the pause ends. Its kernel still
// acknowledges: peers' frames keep arriving and queue up, and dials to it
// complete their handshake (the accept waits for the process).
func (p *Process) Pause(d time.Duration) {
	if !p.up || d <= 0 {
		return
	}
	p.sim.Fault("pause", fmt.Sprintf("%s %v", p.name, d))
	p.hold(d)
}

// Freeze stops the whole machine for d (a VM paused by its hypervisor, a
// live migration's stop-and-copy, a hung host): the process is held as by
// Pause, and the machine is silent on the network meanwhile: SYNs to it are
// lost (dials retransmit, and time out if the freeze outlasts the connect
// timeout), frames to it are held unacknowledged and reset their conn if
// held past the transport timeout. When it thaws, held frames are
// delivered in order.
func (p *Process) Freeze(d time.Duration) {
	if !p.up || d <= 0 {
		return
	}
	p.sim.Fault("freeze", fmt.Sprintf("%s %v", p.name, d))
	p.hold(d)
	p.sim.network.freeze(p, p.sim.now+d)
}

// hold holds the process's events for d from now; it returns the end of
// the hold, or 0 when an earlier pause already covers it.
func (p *Process) hold(d time.Duration) time.Duration {
	until := p.sim.now + d
	if until <= p.pausedUntil {
		return 0
	}
	p.pausedUntil = until
	inc := p.inc
	p.sim.At(until, p.label("resume"), func() {
		if !p.up || p.inc != inc || p.pausedUntil != until {
			return
		}
		held := p.held
		p.held = nil
		for _, e := range held {
			e.at = p.sim.now
			p.sim.push(e)
		}
	})
	return until
}

// JumpClock steps the process's wall clock by delta (an NTP step, a
// misconfigured host). Its monotonic clock and timers are unaffected.
func (p *Process) JumpClock(delta time.Duration) {
	p.sim.Fault("clock-jump", fmt.Sprintf("%s %v", p.name, delta))
	p.clock.jump(delta)
}

// SetClockRate makes the process's clocks run at rate times real speed
// (1.0 is exact; 1.01 is an oscillator 1% fast). Timers already set keep
// their virtual deadline.
func (p *Process) SetClockRate(rate float64) {
	assert.That(rate > 0, "clock rate must be positive, got %v", rate)
	if rate == p.clock.rate {
		return
	}
	if rate == 1 {
		p.sim.Trace(p.name + ":clock-true") // lifting a fault is not a fault
	} else {
		p.sim.Fault("clock-skew", fmt.Sprintf("%s %.4f", p.name, rate))
	}
	p.clock.setRate(p.sim.now, rate)
}

func (p *Process) label(what string) string {
	return fmt.Sprintf("%s#%d:%s", p.name, p.inc, what)
}

// localClock is a process's oscillator. It persists across incarnations (it
// is the machine's, not the process's).
type localClock struct {
	rate      float64       // local seconds per virtual second
	baseSim   time.Duration // virtual time of the last rate change
	baseLocal time.Duration // local time at baseSim
	jumped    time.Duration // sum of wall-clock steps
	incStart  time.Duration // local time when the incarnation started
}

func newLocalClock() localClock { return localClock{rate: 1} }

func (c *localClock) local(now time.Duration) time.Duration {
	return c.baseLocal + time.Duration(float64(now-c.baseSim)*c.rate)
}

func (c *localClock) setRate(now time.Duration, rate float64) {
	c.baseLocal = c.local(now)
	c.baseSim = now
	c.rate = rate
}

func (c *localClock) jump(delta time.Duration) { c.jumped += delta }

func (c *localClock) startIncarnation(now time.Duration) { c.incStart = c.local(now) }

// toVirtual converts a local duration to the virtual duration it takes.
func (c *localClock) toVirtual(d time.Duration) time.Duration {
	if c.rate == 1 {
		return d
	}
	f := float64(d) / c.rate
	if f >= float64(maxTime) {
		return maxTime // converting an out-of-range float is undefined
	}
	v := time.Duration(f)
	if float64(v)*c.rate < float64(d) {
		v++ // never fire early in local time
	}
	return v
}
