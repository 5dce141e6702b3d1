package nemesis

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Nemesis injects the faults of one Mix into a World.
type Nemesis struct {
	w    World
	caps Capabilities
	mix  Mix
	r    *rand.Rand

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

// Start schedules faults of mix against the nodes of w from now until
// now+faultPhase, then heals everything. Its randomness comes from w's
// "nemesis" stream, so the schedule does not depend on what the nodes
// draw. It panics if mix enables a fault w cannot inject (draw the mix
// with DrawMixWithin(..., w.Capabilities())).
func Start(w World, mix Mix, faultPhase time.Duration) *Nemesis {
	caps := w.Capabilities().consistent()
	if !caps.Allows(mix) {
		panic(fmt.Sprintf("nemesis: the world cannot inject the mix %v", mix))
	}
	n := &Nemesis{
		w:     w,
		caps:  caps,
		mix:   mix,
		r:     w.Rand("nemesis"),
		until: w.Now() + faultPhase,
		down:  make([]bool, w.Nodes()),
		disk:  make([][]diskFault, w.Nodes()),
	}
	w.Trace("nemesis:" + mix.String())
	w.SetFaultMix(mix.String())
	n.clearDiskFaults() // the seed's crash model (storage.go)
	if len(mix.Kinds) > 0 && w.Nodes() > 0 {
		n.scheduleNext()
	}
	w.After(faultPhase, "nemesis:heal", n.HealAll)
	return n
}

// Injected is the number of faults injected so far.
func (n *Nemesis) Injected() int { return n.injected }

// HealedAt is the time (World.Now) at which the fault phase ends.
func (n *Nemesis) HealedAt() time.Duration { return n.until }

func (n *Nemesis) scheduleNext() {
	gap := time.Duration(n.r.ExpFloat64() * float64(n.mix.MeanInterval))
	if n.w.Now()+gap >= n.until {
		return
	}
	n.w.After(gap, "nemesis:fault", func() {
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
	if rest := n.until - n.w.Now(); d > rest {
		d = rest
	}
	return d
}

func (n *Nemesis) pick() int { return n.r.IntN(n.w.Nodes()) }

// later runs f after d unless the fault phase has been healed by then.
func (n *Nemesis) later(d time.Duration, label string, f func()) {
	n.w.After(d, label, func() {
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
		i := n.pick()
		// Steps of up to a minute either way, as a bad NTP server makes.
		n.w.JumpClock(i, time.Duration(n.r.Int64N(int64(2*time.Minute)))-time.Minute)
	case ClockSkew:
		i := n.pick()
		skew := (n.r.Float64()*2 - 1) * 0.05 * n.mix.Severity // up to ±5%
		n.w.SetClockRate(i, 1+skew)
	default:
		panic(fmt.Sprintf("nemesis: unknown fault kind %q", k))
	}
}

func (n *Nemesis) kill() {
	if n.downN >= n.mix.MaxDown {
		return
	}
	i := n.pick()
	if n.down[i] || !n.w.Up(i) {
		return
	}
	// Half the kills are power losses (unsynced writes lost but for a
	// torn prefix; the machine is silent until it boots), half process
	// kills with the machine up (SIGKILL, OOM: the page cache survives,
	// its kernel resets the conns and refuses dials). A world that cannot
	// cut power kills the process every time.
	// A frozen machine runs no kernel to send RSTs: stopping its VM is a
	// power loss.
	powerLoss := n.r.IntN(2) == 0 || n.w.Frozen(i)
	if powerLoss && n.caps.PowerLoss {
		n.w.PowerOff(i)
	} else {
		n.w.Kill(i)
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
// freeze (a VM paused by its hypervisor: silent on the network) where
// the world can freeze one (Capabilities.Freeze).
func (n *Nemesis) pause() {
	i := n.pick()
	if n.mix.Shapes && n.r.IntN(2) == 0 && n.caps.Freeze {
		n.w.Freeze(i, n.duration())
		return
	}
	n.w.Pause(i, n.duration())
}

// reset resets every conn of a node, or with Mix.Shapes half the time a
// single one of its conns where the world can (Capabilities.ResetConn).
func (n *Nemesis) reset() {
	i := n.pick()
	if n.mix.Shapes && n.r.IntN(2) == 0 && n.caps.ResetConn {
		n.w.ResetConn(i, n.r.IntN(1<<16))
		return
	}
	n.w.ResetConns(i)
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
	nodes := n.w.Nodes()
	voters := n.mix.Promises.Voters
	if voters <= 0 || voters > nodes {
		voters = nodes
	}
	hit := make([]bool, nodes)
	if n.r.IntN(2) == 0 {
		for i := range hit {
			hit[i] = true
		}
	} else {
		for _, i := range n.r.Perm(voters)[:voters/2+1] {
			hit[i] = true
		}
		for i := voters; i < nodes; i++ {
			hit[i] = n.r.IntN(2) == 0
		}
	}
	down := n.duration()
	n.w.Fault("outage", fmt.Sprint(hit))
	for i := range nodes {
		if !hit[i] || n.down[i] || !n.w.Up(i) {
			continue
		}
		n.w.PowerOff(i)
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
	if n.down[i] || !n.w.Up(i) {
		return
	}
	n.w.PowerOff(i)
	n.w.ReplaceDisk(i)
	n.disk[i] = nil // the faults of the old disk went with it
	n.w.SetDiskFaults(i, n.diskBaseline(i))
	n.markDown(i, n.duration())
}

func (n *Nemesis) restart(i int) {
	if !n.down[i] {
		return
	}
	n.down[i] = false
	n.downN--
	n.w.Start(i)
}

// partition splits the nodes into two non-empty groups at random.
func (n *Nemesis) partition() {
	nodes := n.w.Nodes()
	if nodes < 2 {
		return
	}
	perm := n.r.Perm(nodes)
	cut := 1 + n.r.IntN(nodes-1)
	a, b := perm[:cut], perm[cut:]
	if n.mix.Shapes && nodes >= 3 {
		switch n.r.IntN(3) {
		case 1:
			n.bridge(perm)
			return
		case 2:
			n.ring(perm)
			return
		}
	}
	n.cutFor(n.w.Partition(a, b))
}

// cutFor heals cut, and only it, after a duration.
func (n *Nemesis) cutFor(cut Cut) {
	n.later(n.duration(), "nemesis:heal-cut", cut.Heal)
}

// bridge is Jepsen's bridge: the nodes split into two halves, and one node
// in the middle keeps talking to both (order is a random permutation).
// With a quorum on each side of the bridge node it can, for one, see two
// leaders.
func (n *Nemesis) bridge(order []int) {
	mid := len(order) / 2
	n.cutFor(n.w.CutLinks("partition-bridge", crossLinks(order[:mid], order[mid+1:])))
}

// ring is Jepsen's majorities ring: the nodes sit on a ring in a random
// order, and each hears only the majority of nodes that starts at itself
// and runs along the ring (every node sees a majority, no two the same
// one). A node drops what the others send it; the cuts are one-way.
func (n *Nemesis) ring(order []int) {
	k := len(order)
	majority := k/2 + 1
	var links [][2]int
	for j, i := range order {
		for off := majority; off < k; off++ {
			links = append(links, [2]int{order[(j+off)%k], i})
		}
	}
	n.cutFor(n.w.CutLinks("partition-ring", links))
}

// crossLinks lists the links between two groups, both ways.
func crossLinks(a, b []int) [][2]int {
	var links [][2]int
	for _, x := range a {
		for _, y := range b {
			links = append(links, [2]int{x, y}, [2]int{y, x})
		}
	}
	return links
}

// oneWay cuts traffic in one direction only: half the time on one link,
// otherwise between one node and all the others (an asymmetric partition:
// the node can send but not hear, or hear but not send, which is what
// lets a deposed leader keep talking or a follower keep voting blind).
func (n *Nemesis) oneWay() {
	nodes := n.w.Nodes()
	if nodes < 2 {
		return
	}
	i := n.pick()
	var links [][2]int
	if n.r.IntN(2) == 0 {
		j := (i + 1 + n.r.IntN(nodes-1)) % nodes
		links = append(links, [2]int{i, j})
	} else {
		outbound := n.r.IntN(2) == 0
		for j := range nodes {
			if j == i {
				continue
			}
			if outbound {
				links = append(links, [2]int{i, j})
			} else {
				links = append(links, [2]int{j, i})
			}
		}
	}
	cuts := make([]Cut, len(links))
	for j, l := range links {
		cuts[j] = n.w.Block(l[0], l[1])
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
	nodes := n.w.Nodes()
	i := n.pick()
	if nodes < 2 || n.r.IntN(2) == 0 {
		n.w.Clog(i, n.duration())
		return
	}
	j := (i + 1 + n.r.IntN(nodes-1)) % nodes
	n.w.ClogLink(i, j, n.duration())
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
	n.w.Trace("nemesis:heal-all")
	n.w.HealNetwork()
	n.clearDiskFaults()
	n.clearBucketFaults()
	for i := range n.w.Nodes() {
		if n.caps.Can(ClockSkew) && n.w.Up(i) {
			n.w.SetClockRate(i, 1)
		}
		n.rebootIfFailed(i)
		if n.down[i] {
			n.restart(i)
		}
	}
}
