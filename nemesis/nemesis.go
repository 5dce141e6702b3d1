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

	// Faults in force that a later fault of the same kind must not undo:
	// per proc, the disk faults in the order injected (the newest is the
	// disk's configuration); the bucket faults likewise.
	disk   [][]diskFault
	bucket []bucketFault
	nextID int
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
		disk:  make([][]diskFault, len(procs)),
	}
	s.Trace("nemesis:" + mix.String())
	s.SetFaultMix(mix.String())
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
		n.pause()
	case Partition:
		n.partition()
	case OneWay:
		n.oneWay()
	case Clog:
		n.clog()
	case Reset:
		n.reset()
	case Outage:
		n.outage()
	case Wipe:
		n.wipe()
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
	// torn prefix; the machine is silent until it boots), half process
	// kills with the machine up (SIGKILL, OOM: the page cache survives,
	// its kernel resets the conns and refuses dials).
	// A frozen machine runs no kernel to send RSTs: stopping its VM is a
	// power loss.
	if n.r.IntN(2) == 0 || n.procs[i].Frozen() {
		n.procs[i].Crash()
	} else {
		n.procs[i].Kill()
	}
	n.markDown(i, n.duration())
}

// markDown records that the nemesis took proc i down and schedules its
// restart after d.
func (n *Nemesis) markDown(i int, d time.Duration) {
	n.down[i] = true
	n.downN++
	n.later(d, "nemesis:restart", func() { n.restart(i) })
}

// pause stops a node for a while: a process pause (GC, SIGSTOP: its
// kernel still acknowledges), or with Mix.Shapes half the time a machine
// freeze (a VM paused by its hypervisor: silent on the network).
func (n *Nemesis) pause() {
	p := n.procs[n.pick()]
	if n.mix.Shapes && n.r.IntN(2) == 0 {
		p.Freeze(n.duration())
		return
	}
	p.Pause(n.duration())
}

// reset resets every conn of a node, or with Mix.Shapes half the time a
// single one of its conns.
func (n *Nemesis) reset() {
	p := n.procs[n.pick()]
	if n.mix.Shapes && n.r.IntN(2) == 0 {
		n.s.Network().ResetConn(p.Name(), n.r.IntN(1<<16))
		return
	}
	n.s.Network().ResetConns(p.Name())
}

// outage cuts the power of many machines at once (a datacenter's or a
// rack's power, a bad kernel rolled out everywhere): every node half the
// time, otherwise a majority of the voters and each other node with
// probability one half. Each machine boots again after the same downtime
// plus up to 10% of it (machines do not boot in lockstep). Machines the
// nemesis already took down stay down on their own schedule. The kill
// bound (MaxDown) does not apply: correlated failure is the point. Only
// scenarios that promise to survive it enable it (Promises.Outages).
func (n *Nemesis) outage() {
	voters := n.mix.Promises.Voters
	if voters <= 0 || voters > len(n.procs) {
		voters = len(n.procs)
	}
	hit := make([]bool, len(n.procs))
	if n.r.IntN(2) == 0 {
		for i := range hit {
			hit[i] = true
		}
	} else {
		for _, i := range n.r.Perm(voters)[:voters/2+1] {
			hit[i] = true
		}
		for i := voters; i < len(n.procs); i++ {
			hit[i] = n.r.IntN(2) == 0
		}
	}
	down := n.duration()
	n.s.Fault("outage", fmt.Sprint(hit))
	for i, p := range n.procs {
		if !hit[i] || n.down[i] || !p.Up() {
			continue
		}
		p.Crash()
		n.markDown(i, down+time.Duration(n.r.Int64N(int64(down)/10+1)))
	}
}

// wipe replaces the disk of a machine the scenario allows (Promises.Wipeable):
// it loses power, gets an empty disk, and boots after a downtime, as a node
// whose failed disk was replaced, or a node replaced by a fresh machine
// under the same name. It counts toward MaxDown like a kill.
func (n *Nemesis) wipe() {
	w := n.mix.Promises.Wipeable
	if len(w) == 0 || n.downN >= n.mix.MaxDown {
		return
	}
	i := w[n.r.IntN(len(w))]
	p := n.procs[i]
	if n.down[i] || !p.Up() {
		return
	}
	p.Crash()
	p.ReplaceDisk()
	n.disk[i] = nil // the faults of the old disk went with it
	p.Disk().SetFaults(n.diskBaseline(i))
	n.markDown(i, n.duration())
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
	if n.mix.Shapes && len(n.procs) >= 3 {
		switch n.r.IntN(3) {
		case 1:
			n.bridge(perm)
			return
		case 2:
			n.ring(perm)
			return
		}
	}
	n.cutFor(n.s.Network().Partition(a, b))
}

// cutFor heals cut, and only it, after a duration.
func (n *Nemesis) cutFor(cut *sim.Cut) {
	n.later(n.duration(), "nemesis:heal-cut", cut.Heal)
}

// bridge is Jepsen's bridge: the nodes split into two halves, and one node
// in the middle keeps talking to both (order is a random permutation).
// With a quorum on each side of the bridge node it can, for one, see two
// leaders.
func (n *Nemesis) bridge(order []int) {
	mid := len(order) / 2
	var a, b []string
	for j, i := range order {
		switch {
		case j < mid:
			a = append(a, n.procs[i].Name())
		case j > mid:
			b = append(b, n.procs[i].Name())
		}
	}
	n.cutFor(n.s.Network().CutLinks("partition-bridge", crossLinks(a, b)))
}

// ring is Jepsen's majorities ring: the nodes sit on a ring in a random
// order, and each hears only the majority of nodes that starts at itself
// and runs along the ring (every node sees a majority, no two the same
// one). A node drops what the others send it; the cuts are one-way.
func (n *Nemesis) ring(order []int) {
	k := len(order)
	majority := k/2 + 1
	var links [][2]string
	for j, i := range order {
		for off := majority; off < k; off++ {
			from := order[(j+off)%k]
			links = append(links, [2]string{n.procs[from].Name(), n.procs[i].Name()})
		}
	}
	n.cutFor(n.s.Network().CutLinks("partition-ring", links))
}

// crossLinks lists the links between two groups, both ways.
func crossLinks(a, b []string) [][2]string {
	var links [][2]string
	for _, x := range a {
		for _, y := range b {
			links = append(links, [2]string{x, y}, [2]string{y, x})
		}
	}
	return links
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
	cuts := make([]*sim.Cut, len(links))
	for j, l := range links {
		cuts[j] = n.s.Network().Block(l[0], l[1])
	}
	n.later(n.duration(), "nemesis:heal-one-way", func() {
		for _, c := range cuts {
			c.Heal()
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
