package nemesis

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/strata-log/strata/sim"
)

// Nemesis injects the faults of one Mix into a simulation.
type Nemesis struct {
	s     *sim.Sim
	procs []*sim.Process
	mix   Mix
	r     *rand.Rand

	until    time.Duration // end of the fault phase
	down     []bool        // per proc: killed by the nemesis and not yet restarted
	downN    int
	healed   bool
	injected int
}

// Start schedules faults of mix against procs from now until now+faultPhase,
// then heals everything. Its randomness comes from the "nemesis" stream, so
// the schedule does not depend on what the processes draw.
func Start(s *sim.Sim, procs []*sim.Process, mix Mix, faultPhase time.Duration) *Nemesis {
	n := &Nemesis{
		s:     s,
		procs: procs,
		mix:   mix,
		r:     s.Rand("nemesis"),
		until: s.Now() + faultPhase,
		down:  make([]bool, len(procs)),
	}
	s.Trace("nemesis:" + mix.String())
	n.clearDiskFaults() // the seed's crash model (storage.go)
	if len(mix.Kinds) > 0 && len(procs) > 0 {
		n.scheduleNext()
	}
	s.At(n.until, "nemesis:heal", n.HealAll)
	return n
}

// Injected is the number of faults injected so far.
func (n *Nemesis) Injected() int { return n.injected }

// HealedAt is the virtual time at which the fault phase ends.
func (n *Nemesis) HealedAt() time.Duration { return n.until }

func (n *Nemesis) scheduleNext() {
	gap := time.Duration(n.r.ExpFloat64() * float64(n.mix.MeanInterval))
	at := n.s.Now() + gap
	if at >= n.until {
		return
	}
	n.s.At(at, "nemesis:fault", func() {
		if n.healed {
			return
		}
		n.inject(n.mix.Kinds[n.r.IntN(len(n.mix.Kinds))])
		n.scheduleNext()
	})
}

// duration draws how long a temporary fault lasts, never past the end of
// the fault phase (HealAll ends everything then anyway).
func (n *Nemesis) duration() time.Duration {
	d := time.Duration(1 + n.r.Int64N(int64(n.mix.MaxDuration)))
	if rest := n.until - n.s.Now(); d > rest {
		d = rest
	}
	return d
}

func (n *Nemesis) pick() int { return n.r.IntN(len(n.procs)) }

// later runs f after d unless the fault phase has been healed by then.
func (n *Nemesis) later(d time.Duration, label string, f func()) {
	n.s.After(d, label, func() {
		if !n.healed {
			f()
		}
	})
}

func (n *Nemesis) inject(k Kind) {
	n.injected++
	switch k {
	case Kill:
		n.kill()
	case Pause:
		p := n.procs[n.pick()]
		p.Pause(n.duration())
	case Partition:
		n.partition()
	case OneWay:
		n.oneWay()
	case Clog:
		n.clog()
	case Reset:
		p := n.procs[n.pick()]
		n.s.Network().ResetConns(p.Name())
	case DiskFaults:
		n.diskFaults()
	case BucketFault:
		n.bucketFaults()
	case ClockJump:
		p := n.procs[n.pick()]
		// Steps of up to a minute either way, as a bad NTP server makes.
		p.JumpClock(time.Duration(n.r.Int64N(int64(2*time.Minute))) - time.Minute)
	case ClockSkew:
		p := n.procs[n.pick()]
		skew := (n.r.Float64()*2 - 1) * 0.05 * n.mix.Severity // up to ±5%
		p.SetClockRate(1 + skew)
	default:
		panic(fmt.Sprintf("nemesis: unknown fault kind %q", k))
	}
}

func (n *Nemesis) kill() {
	if n.downN >= n.mix.MaxDown {
		return
	}
	i := n.pick()
	if n.down[i] || !n.procs[i].Up() {
		return
	}
	// Half the kills are power losses (unsynced writes lost but for a
	// torn prefix), half process kills with the machine up (SIGKILL, OOM:
	// the page cache survives).
	if n.r.IntN(2) == 0 {
		n.procs[i].Crash()
	} else {
		n.procs[i].Kill()
	}
	n.down[i] = true
	n.downN++
	n.later(n.duration(), "nemesis:restart", func() { n.restart(i) })
}

func (n *Nemesis) restart(i int) {
	if !n.down[i] {
		return
	}
	n.down[i] = false
	n.downN--
	n.procs[i].Start()
}

// partition splits the nodes into two non-empty groups at random.
func (n *Nemesis) partition() {
	if len(n.procs) < 2 {
		return
	}
	var a, b []string
	perm := n.r.Perm(len(n.procs))
	cut := 1 + n.r.IntN(len(n.procs)-1)
	for j, i := range perm {
		if j < cut {
			a = append(a, n.procs[i].Name())
		} else {
			b = append(b, n.procs[i].Name())
		}
	}
	n.s.Network().Partition(a, b)
	n.later(n.duration(), "nemesis:heal-partition", n.s.Network().Heal)
}

// oneWay cuts traffic in one direction only: half the time on one link,
// otherwise between one node and all the others (an asymmetric partition:
// the node can send but not hear, or hear but not send, which is what
// lets a deposed leader keep talking or a follower keep voting blind).
func (n *Nemesis) oneWay() {
	if len(n.procs) < 2 {
		return
	}
	i := n.pick()
	var links [][2]string
	if n.r.IntN(2) == 0 {
		j := (i + 1 + n.r.IntN(len(n.procs)-1)) % len(n.procs)
		links = append(links, [2]string{n.procs[i].Name(), n.procs[j].Name()})
	} else {
		outbound := n.r.IntN(2) == 0
		for j, p := range n.procs {
			if j == i {
				continue
			}
			if outbound {
				links = append(links, [2]string{n.procs[i].Name(), p.Name()})
			} else {
				links = append(links, [2]string{p.Name(), n.procs[i].Name()})
			}
		}
	}
	for _, l := range links {
		n.s.Network().Block(l[0], l[1])
	}
	n.later(n.duration(), "nemesis:heal-one-way", func() {
		for _, l := range links {
			n.s.Network().Unblock(l[0], l[1])
		}
	})
}

// clog holds traffic for a while: half the time all of one node's,
// otherwise one direction of one link (a congested path).
func (n *Nemesis) clog() {
	i := n.pick()
	if len(n.procs) < 2 || n.r.IntN(2) == 0 {
		n.s.Network().Clog(n.procs[i].Name(), n.duration())
		return
	}
	j := (i + 1 + n.r.IntN(len(n.procs)-1)) % len(n.procs)
	n.s.Network().ClogLink(n.procs[i].Name(), n.procs[j].Name(), n.duration())
}

// HealAll ends the fault phase: the network heals, disk and bucket faults
// clear, clocks run true again, every machine whose filesystem failed is
// power-cycled and every node the nemesis killed restarts. Processes the
// scenario itself stopped stay as they are.
//
// The power cycle is what an operator does with a machine whose
// filesystem went read-only after a failed directory sync (ext4's aborted
// journal, XFS's shutdown; sim.Disk.Failed): no process restart can bring
// it back, so without it such a node could never recover and the
// liveness checks that follow the heal would fail for a reason no code
// can fix. The end of each disk fault does the same during the fault
// phase (see rebootIfFailed).
func (n *Nemesis) HealAll() {
	if n.healed {
		return
	}
	n.healed = true
	n.s.Trace("nemesis:heal-all")
	n.s.Network().Heal()
	n.clearDiskFaults()
	n.clearBucketFaults()
	for i, p := range n.procs {
		if p.Up() {
			p.SetClockRate(1)
		}
		n.rebootIfFailed(i)
		if n.down[i] {
			n.restart(i)
		}
	}
}
