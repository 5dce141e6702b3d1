package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Kind names a fault primitive.
type Kind string

// The fault primitives.
const (
	Kill        Kind = "kill"       // power loss or process kill of a node (half each); it restarts after a downtime
	Pause       Kind = "pause"      // freeze a node (GC pause, SIGSTOP)
	Partition   Kind = "partition"  // split the nodes into two groups
	OneWay      Kind = "one-way"    // block traffic in one direction: of a link, or between a node and all others
	Clog        Kind = "clog"       // delay all traffic of a node, or of one direction of a link
	Reset       Kind = "reset"      // reset every connection of a node
	DiskFaults  Kind = "disk"       // a bad disk for a while: the classes of Mix.Disk (storage.go)
	BucketFault Kind = "bucket"     // object store errors, ambiguous failures, latency
	ClockJump   Kind = "clock-jump" // step a node's wall clock
	ClockSkew   Kind = "clock-skew" // make a node's clocks run fast or slow

	// Kinds a scenario enables only by promising to survive them
	// (Promises; DrawMixFor).
	Outage Kind = "outage" // correlated power loss: a majority of the voters, or every node, at once
	Wipe   Kind = "wipe"   // a node's disk is replaced: it comes back empty
)

// AllKinds lists every primitive every scenario can take, in a fixed order
// (the order draws use).
var AllKinds = []Kind{Kill, Pause, Partition, OneWay, Clog, Reset, DiskFaults, BucketFault, ClockJump, ClockSkew}

// PromisedKinds lists the primitives DrawMixFor adds when the scenario's
// Promises allow them, in the order draws use.
var PromisedKinds = []Kind{Outage, Wipe}

// Promises are what a scenario promises to survive beyond AllKinds. A fault
// a scenario cannot survive by design (not by a bug) would only make its
// seeds fail for nothing, so the nemesis injects it only where promised.
type Promises struct {
	// Outages: the scenario survives a correlated power loss, a majority
	// of the voters or every node at once (acknowledged writes are
	// fsynced on a quorum; a quorum system stops and resumes).
	Outages bool
	// Voters is how many of the processes, the first ones, are voters of
	// the scenario's quorum: an outage that is not total takes a majority
	// of them (and each other node with probability one half). Zero
	// means every process.
	Voters int
	// Wipeable lists the processes (indices into Start's procs) that may
	// come back with an empty disk. A voter of a Raft quorum must not: one
	// that forgot its log and its vote can help elect a leader missing a
	// committed entry.
	Wipeable []int
}

// Mix is one seed's choice of faults and their intensities.
type Mix struct {
	// Kinds are the enabled primitives, in AllKinds order.
	Kinds []Kind
	// MeanInterval is the mean time between two faults (exponentially
	// distributed).
	MeanInterval time.Duration
	// MaxDuration bounds how long a temporary fault (partition, clog,
	// pause, disk or bucket trouble, downtime) lasts.
	MaxDuration time.Duration
	// MaxDown bounds how many nodes are killed at once; the default keeps a
	// majority alive so that quorum systems can make progress during the
	// fault phase.
	MaxDown int
	// Severity in (0, 1] scales fault probabilities (fsync failure rate,
	// bucket error rate, bit-flip rate, clock skew).
	Severity float64
	// Disk is the seed's choice of disk fault classes and crash model
	// (storage.go).
	Disk DiskMix
	// Shapes widens the existing kinds to the fault shapes real fleets
	// and Jepsen produce (DrawMixFor sets it): partitions also as a
	// bridge or a majorities ring, pauses also as machine freezes (silent
	// on the network), resets also of a single connection. A mix from
	// DrawMix leaves it unset, so its seeds draw what they always drew.
	Shapes bool
	// Promises are the scenario's (DrawMixFor).
	Promises Promises
}

// Has reports whether a kind is enabled.
func (m Mix) Has(k Kind) bool {
	for _, x := range m.Kinds {
		if x == k {
			return true
		}
	}
	return false
}

func (m Mix) String() string {
	ks := make([]string, len(m.Kinds))
	for i, k := range m.Kinds {
		ks[i] = string(k)
	}
	s := fmt.Sprintf("kinds=[%s] every~%v max=%v maxdown=%d severity=%.2f disk=%v",
		strings.Join(ks, ","), m.MeanInterval, m.MaxDuration, m.MaxDown, m.Severity, m.Disk)
	if m.Shapes {
		s += fmt.Sprintf(" shapes voters=%d wipeable=%v", m.Promises.Voters, m.Promises.Wipeable)
	}
	return s
}

// DrawMix draws a swarm mix for a cluster of n nodes in a world that can
// inject everything (the simulator): each kind is enabled with probability
// one half (at least one always is), and the intensities are drawn from
// ranges wide enough to cover both a sprinkle of faults and a storm.
func DrawMix(r *rand.Rand, n int) Mix { return drawMix(r, n, Everything()) }

// drawMix draws as DrawMix does and leaves out what c cannot inject. It
// draws the same numbers whatever c says, but for the one kind it enables
// when the coins enabled none c can inject (drawn among those c can), so
// with Everything it draws what DrawMix always drew.
func drawMix(r *rand.Rand, n int, c Capabilities) Mix {
	var m Mix
	for _, k := range AllKinds {
		if r.IntN(2) == 0 && c.Can(k) {
			m.Kinds = append(m.Kinds, k)
		}
	}
	if len(m.Kinds) == 0 {
		can := slices.DeleteFunc(slices.Clone(AllKinds), func(k Kind) bool { return !c.Can(k) })
		if len(can) > 0 {
			m.Kinds = []Kind{can[r.IntN(len(can))]}
		}
	}
	m.MeanInterval = time.Duration(50+r.IntN(1950)) * time.Millisecond
	m.MaxDuration = time.Duration(100+r.IntN(4900)) * time.Millisecond
	m.MaxDown = max(1, (n-1)/2)
	m.Severity = 0.1 + 0.9*r.Float64()
	m.Disk = drawDiskMix(r, n, m.MaxDown).within(c.Disk) // last, so the draws above stay as they were
	return m
}

// DrawMixFor draws a mix as DrawMix does (the same draws, so a seed's
// base kinds do not change) and then, from the same stream, enables each
// kind of PromisedKinds the scenario's promises allow with probability one
// half, and widens the kinds to their real-world shapes (Mix.Shapes).
func DrawMixFor(r *rand.Rand, n int, p Promises) Mix { return DrawMixWithin(r, n, p, Everything()) }

// DrawMixWithin draws as DrawMixFor does for a world that can inject only
// what c lists (World.Capabilities): kinds and disk classes it cannot
// inject are left out after the same draws, so a seed enables the same of
// the others in every world.
func DrawMixWithin(r *rand.Rand, n int, p Promises, c Capabilities) Mix {
	c = c.consistent()
	m := drawMix(r, n, c)
	m.Shapes = true
	m.Promises = p
	for _, k := range PromisedKinds {
		allowed := (k == Outage && p.Outages || k == Wipe && len(p.Wipeable) > 0) && c.Can(k)
		if r.IntN(2) == 0 && allowed {
			m.Kinds = append(m.Kinds, k)
		}
	}
	return m
}

// None is a mix that injects nothing (a fault-free baseline run).
func None() Mix { return Mix{MaxDown: 0, Severity: 0} }
