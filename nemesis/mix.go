package nemesis

import (
	"fmt"
	"math/rand/v2"
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
)

// AllKinds lists every primitive in a fixed order (the order draws use).
var AllKinds = []Kind{Kill, Pause, Partition, OneWay, Clog, Reset, DiskFaults, BucketFault, ClockJump, ClockSkew}

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
	return fmt.Sprintf("kinds=[%s] every~%v max=%v maxdown=%d severity=%.2f disk=%v",
		strings.Join(ks, ","), m.MeanInterval, m.MaxDuration, m.MaxDown, m.Severity, m.Disk)
}

// DrawMix draws a swarm mix for a cluster of n nodes: each kind is enabled
// with probability one half (at least one always is), and the intensities
// are drawn from ranges wide enough to cover both a sprinkle of faults and a
// storm.
func DrawMix(r *rand.Rand, n int) Mix {
	var m Mix
	for _, k := range AllKinds {
		if r.IntN(2) == 0 {
			m.Kinds = append(m.Kinds, k)
		}
	}
	if len(m.Kinds) == 0 {
		m.Kinds = []Kind{AllKinds[r.IntN(len(AllKinds))]}
	}
	m.MeanInterval = time.Duration(50+r.IntN(1950)) * time.Millisecond
	m.MaxDuration = time.Duration(100+r.IntN(4900)) * time.Millisecond
	m.MaxDown = max(1, (n-1)/2)
	m.Severity = 0.1 + 0.9*r.Float64()
	m.Disk = drawDiskMix(r, n, m.MaxDown) // last, so the draws above stay as they were
	return m
}

// None is a mix that injects nothing (a fault-free baseline run).
func None() Mix { return Mix{MaxDown: 0, Severity: 0} }
