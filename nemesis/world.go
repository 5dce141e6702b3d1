package nemesis

import (
	"math/rand/v2"
	"slices"
	"time"
)

// World is what the nemesis injects faults into: a cluster of nodes, named
// by their index 0..Nodes()-1, with the clock, the randomness and the fault
// primitives of the world they run in. The simulator is one world
// (nemesis/simworld); a cluster of real processes on one machine is
// another, whose primitives are kill -9, SIGSTOP and SIGCONT, network
// namespaces and tc netem.
//
// A world need not implement every primitive: Capabilities says which it
// can inject, DrawMixWithin draws mixes of those only, and Start refuses
// a mix that asks for more. A method outside the world's capabilities is
// never called (it may panic).
//
// Every decision the nemesis makes comes from the world's Rand stream and
// from what the world answers (Up, Frozen, DiskUsedBytes, ...), at the
// times of its Scheduler: the same seed against worlds that answer alike
// draws the same schedule of faults (TestSameSeedSameSchedule).
type World interface {
	Scheduler
	Recorder
	Nodes
	Network
	Disks
	Clocks
	// SetBucketFaults sets the faults of the shared object store; the
	// zero value is none.
	SetBucketFaults(f BucketFaultConfig)
	// Capabilities lists the faults this world can inject.
	Capabilities() Capabilities
}

// Scheduler is the world's time: virtual time in the simulator, wall-clock
// time since the campaign began in a real world. The nemesis runs only in
// Start and in After's callbacks.
type Scheduler interface {
	// Now is the time since the world began.
	Now() time.Duration
	// After runs f once d from now. label names the event (the simulator
	// folds it into the trace hash). A real world runs f on its wall
	// clock, never while Start or another f runs.
	After(d time.Duration, label string, f func())
	// Rand returns the seeded random stream of the given name; the
	// nemesis draws from "nemesis".
	Rand(stream string) *rand.Rand
}

// Recorder takes what the nemesis reports about itself.
type Recorder interface {
	// Trace records an observation (the simulator folds it into the
	// trace hash).
	Trace(what string)
	// Fault records a fault the nemesis injected itself (outage, disk,
	// bucket); the world's own primitives record theirs.
	Fault(kind, detail string)
	// SetFaultMix records the run's mix for its summary.
	SetFaultMix(desc string)
}

// Nodes are the cluster's processes and the machines they run on.
type Nodes interface {
	// Nodes is how many there are.
	Nodes() int
	// Name is node i's host name.
	Name(i int) string
	// Up reports whether node i's process runs (a paused one does).
	Up(i int) bool
	// Frozen reports whether node i's machine is frozen (Freeze).
	Frozen(i int) bool
	// Kill ends node i's process as kill -9 does, the machine staying up:
	// its kernel resets the connections, the page cache is kept.
	Kill(i int)
	// PowerOff cuts node i's power (Capabilities.PowerLoss): unsynced
	// writes are lost, the machine is silent on the network until Start.
	PowerOff(i int)
	// PowerCycle turns node i's machine off and on again, whether its
	// process is up or down (Capabilities.PowerLoss); the process stays
	// down until Start.
	PowerCycle(i int)
	// ReplaceDisk gives node i, which is down, an empty disk
	// (Capabilities.PowerLoss and the Wipe kind).
	ReplaceDisk(i int)
	// Start starts node i's process again after Kill or PowerOff.
	Start(i int)
	// Pause stops node i's process for d (SIGSTOP, then SIGCONT): its
	// kernel still acknowledges and holds what arrives.
	Pause(i int, d time.Duration)
	// Freeze stops node i's whole machine for d, silent on the network
	// (Capabilities.Freeze).
	Freeze(i int, d time.Duration)
}

// Cut is one injected cut of links; Heal lifts it and only it (a link
// another cut still covers stays cut).
type Cut interface{ Heal() }

// Network is the links between the nodes. A link is directed: [2]int{a, b}
// carries what a sends to b.
type Network interface {
	// Partition cuts every link between a and b, both ways.
	Partition(a, b []int) Cut
	// CutLinks cuts the given links as one fault of the given kind
	// ("partition-bridge", "partition-ring").
	CutLinks(kind string, links [][2]int) Cut
	// Block cuts the link from -> to only.
	Block(from, to int) Cut
	// Clog troubles all of node i's traffic for d: the simulator holds
	// it and delivers it in order at the end; a real world delays, drops
	// and reorders packets (tc netem), which TCP turns into delay.
	Clog(i int, d time.Duration)
	// ClogLink troubles the traffic of the link from -> to for d, as Clog.
	ClogLink(from, to int, d time.Duration)
	// ResetConns resets every connection of node i.
	ResetConns(i int)
	// ResetConn resets the k-th (modulo their number) of node i's
	// connections (Capabilities.ResetConn).
	ResetConn(i, k int)
	// HealNetwork lifts every cut and clog.
	HealNetwork()
}

// Disks are the nodes' disks.
type Disks interface {
	// SetDiskFaults sets the faults of node i's disk; the zero value is
	// none.
	SetDiskFaults(i int, f DiskFaultConfig)
	// DiskUsedBytes is how much node i's files take (a full disk leaves a
	// little more).
	DiskUsedBytes(i int) int64
	// DiskSurvivable reports whether node i's scenario declared files that
	// survive damage at rest.
	DiskSurvivable(i int) bool
	// FilesystemFailed reports whether node i's filesystem failed (a
	// failed directory sync) and needs a power cycle.
	FilesystemFailed(i int) bool
}

// Clocks are the nodes' clocks.
type Clocks interface {
	// JumpClock steps node i's wall clock by delta.
	JumpClock(i int, delta time.Duration)
	// SetClockRate makes node i's clocks run at rate (1 is true time).
	SetClockRate(i int, rate float64)
}

// DiskFaultConfig is a disk's fault configuration: per-operation
// probabilities and the crash model (sim.DiskFaults documents each).
type DiskFaultConfig struct {
	PageCrash              bool // a power loss keeps any page-granular subset of unsynced writes
	SyncFailProbability    float64
	SyncDirFailProbability float64 // fails the filesystem until a power cycle
	SyncNoSpaceProbability float64
	NoSpaceProbability     float64
	WriteErrorProbability  float64
	BitFlipProbability     float64
	StallProbability       float64
	StallLatency           time.Duration
	CapacityBytes          int64 // a full disk: writes past it fail with ENOSPC (0: unbounded)
	LatentErrorProbability float64
	CorruptProbability     float64
	MisdirectProbability   float64
}

// BucketFaultConfig is the object store's fault configuration
// (sim.BucketFaults documents each).
type BucketFaultConfig struct {
	LatencyMin, LatencyMax time.Duration
	ErrorProbability       float64
	AmbiguousProbability   float64
	StaleListWindow        time.Duration
}

// Capabilities are the faults a world can inject. The simulator can inject
// all of them (Everything). A real-process world can kill, pause, cut and
// clog, and fill a small disk, but not lose power (a killed process's
// writes are in the page cache and stay), freeze a machine, flip bits on
// a read, skew a clock or fail an object store.
//
// Whole kinds and disk classes a world lacks are left out of the mix
// (DrawMixWithin). The flags below are forms of a kind: where a world
// lacks one, the kind takes its other form (a kill is always a process
// kill, a pause a process pause, a reset one of every connection), after
// the same draws, so a seed's schedule of fault times and targets does not
// depend on them.
type Capabilities struct {
	// Kinds are the kinds the world can inject, of AllKinds and
	// PromisedKinds.
	Kinds []Kind
	// PowerLoss: a kill may cut the machine's power, and a failed
	// filesystem is power-cycled. Outage and Wipe need it, and so do
	// DiskMix.PageCrash (a crash model) and DiskMix.SyncFail (whose
	// failed directory syncs only a power cycle cures).
	PowerLoss bool
	// Freeze: with Mix.Shapes a pause may freeze the whole machine.
	Freeze bool
	// ResetConn: with Mix.Shapes a reset may hit a single connection.
	ResetConn bool
	// Disk has the disk classes the world can inject set (Damaged is
	// ignored).
	Disk DiskMix
}

// Everything is what the simulator can inject: every kind, form and disk
// class.
func Everything() Capabilities {
	return Capabilities{
		Kinds:     append(append([]Kind(nil), AllKinds...), PromisedKinds...),
		PowerLoss: true,
		Freeze:    true,
		ResetConn: true,
		Disk: DiskMix{PageCrash: true, SyncFail: true, SyncNoSpace: true, NoSpace: true, Full: true,
			WriteError: true, BitFlip: true, Stall: true, Latent: true, Corrupt: true, Misdirect: true},
	}
}

// Can reports whether the world can inject kind k.
func (c Capabilities) Can(k Kind) bool { return slices.Contains(c.Kinds, k) }

// Allows reports whether the world can inject everything mix m enables.
func (c Capabilities) Allows(m Mix) bool {
	c = c.consistent()
	for _, k := range m.Kinds {
		if !c.Can(k) {
			return false
		}
	}
	want, can := m.Disk, c.Disk
	wf, cf := want.classes(), can.classes()
	for i := range wf {
		if *wf[i] && !*cf[i] {
			return false
		}
	}
	return true
}

// consistent drops what a world without power loss cannot do whatever it
// says: outages, wipes, the page crash model, and failed syncs (a failed
// directory sync needs a power cycle).
func (c Capabilities) consistent() Capabilities {
	if c.PowerLoss {
		return c
	}
	c.Kinds = slices.DeleteFunc(slices.Clone(c.Kinds), func(k Kind) bool { return k == Outage || k == Wipe })
	c.Disk.PageCrash, c.Disk.SyncFail = false, false
	return c
}

// disks reports whether the world configures its disks at all: a crash
// model, or disk faults.
func (c Capabilities) disks() bool { return c.Disk.PageCrash || c.Can(DiskFaults) }
