// Package simworld is the simulator as a nemesis.World: the nemesis's
// primitives on a *sim.Sim and its processes. The simulator can inject
// every fault (nemesis.Everything). It keeps the nemesis package free of
// the simulator, so that a world of real processes implements the same
// interface outside sim.
//
// Like nemesis and sim it is deterministic code (determinism_guard_test.go).
package simworld

import (
	"time"

	"github.com/strata-log/strata/nemesis"
	"github.com/strata-log/strata/sim"
)

// World is the simulator's nemesis.World over the given processes, node i
// being procs[i]. Time, randomness, the trace and the fault summary are the
// simulator's own (the embedded *sim.Sim).
type World struct {
	*sim.Sim
	procs []*sim.Process
}

var _ nemesis.World = (*World)(nil)

// New returns the world of procs in s.
func New(s *sim.Sim, procs []*sim.Process) *World { return &World{Sim: s, procs: procs} }

// Capabilities: the simulator can inject everything.
func (w *World) Capabilities() nemesis.Capabilities { return nemesis.Everything() }

// Nodes is the number of processes.
func (w *World) Nodes() int { return len(w.procs) }

// Name is process i's host name.
func (w *World) Name(i int) string { return w.procs[i].Name() }

// Up reports whether process i runs.
func (w *World) Up(i int) bool { return w.procs[i].Up() }

// Frozen reports whether process i's machine is frozen.
func (w *World) Frozen(i int) bool { return w.procs[i].Frozen() }

// Kill is sim.Process.Kill.
func (w *World) Kill(i int) { w.procs[i].Kill() }

// PowerOff is sim.Process.Crash.
func (w *World) PowerOff(i int) { w.procs[i].Crash() }

// PowerCycle is sim.Process.PowerCycle.
func (w *World) PowerCycle(i int) { w.procs[i].PowerCycle() }

// ReplaceDisk is sim.Process.ReplaceDisk.
func (w *World) ReplaceDisk(i int) { w.procs[i].ReplaceDisk() }

// Start is sim.Process.Start.
func (w *World) Start(i int) { w.procs[i].Start() }

// Pause is sim.Process.Pause.
func (w *World) Pause(i int, d time.Duration) { w.procs[i].Pause(d) }

// Freeze is sim.Process.Freeze.
func (w *World) Freeze(i int, d time.Duration) { w.procs[i].Freeze(d) }

// Partition is sim.Network.Partition of two groups.
func (w *World) Partition(a, b []int) nemesis.Cut {
	return w.Network().Partition(w.names(a), w.names(b))
}

// CutLinks is sim.Network.CutLinks.
func (w *World) CutLinks(kind string, links [][2]int) nemesis.Cut {
	named := make([][2]string, len(links))
	for j, l := range links {
		named[j] = [2]string{w.Name(l[0]), w.Name(l[1])}
	}
	return w.Network().CutLinks(kind, named)
}

// Block is sim.Network.Block.
func (w *World) Block(from, to int) nemesis.Cut { return w.Network().Block(w.Name(from), w.Name(to)) }

// Clog is sim.Network.Clog.
func (w *World) Clog(i int, d time.Duration) { w.Network().Clog(w.Name(i), d) }

// ClogLink is sim.Network.ClogLink.
func (w *World) ClogLink(from, to int, d time.Duration) {
	w.Network().ClogLink(w.Name(from), w.Name(to), d)
}

// ResetConns is sim.Network.ResetConns.
func (w *World) ResetConns(i int) { w.Network().ResetConns(w.Name(i)) }

// ResetConn is sim.Network.ResetConn.
func (w *World) ResetConn(i, k int) { w.Network().ResetConn(w.Name(i), k) }

// HealNetwork is sim.Network.Heal.
func (w *World) HealNetwork() { w.Network().Heal() }

// SetDiskFaults sets process i's sim.DiskFaults.
func (w *World) SetDiskFaults(i int, f nemesis.DiskFaultConfig) {
	w.procs[i].Disk().SetFaults(sim.DiskFaults{
		PageCrash:              f.PageCrash,
		SyncFailProbability:    f.SyncFailProbability,
		SyncDirFailProbability: f.SyncDirFailProbability,
		SyncNoSpaceProbability: f.SyncNoSpaceProbability,
		NoSpaceProbability:     f.NoSpaceProbability,
		WriteErrorProbability:  f.WriteErrorProbability,
		BitFlipProbability:     f.BitFlipProbability,
		StallProbability:       f.StallProbability,
		StallLatency:           f.StallLatency,
		CapacityBytes:          f.CapacityBytes,
		LatentErrorProbability: f.LatentErrorProbability,
		CorruptProbability:     f.CorruptProbability,
		MisdirectProbability:   f.MisdirectProbability,
	})
}

// DiskUsedBytes is the page-cache size of process i's files.
func (w *World) DiskUsedBytes(i int) int64 {
	d := w.procs[i].Disk()
	var total int64
	for _, name := range d.Files() {
		b, _ := d.ReadFile(name)
		total += int64(len(b))
	}
	return total
}

// DiskSurvivable is sim.Disk.Survivable.
func (w *World) DiskSurvivable(i int) bool { return w.procs[i].Disk().Survivable() }

// FilesystemFailed is sim.Disk.Failed.
func (w *World) FilesystemFailed(i int) bool { return w.procs[i].Disk().Failed() }

// JumpClock is sim.Process.JumpClock.
func (w *World) JumpClock(i int, delta time.Duration) { w.procs[i].JumpClock(delta) }

// SetClockRate is sim.Process.SetClockRate.
func (w *World) SetClockRate(i int, rate float64) { w.procs[i].SetClockRate(rate) }

// SetBucketFaults sets the sim.Bucket's faults.
func (w *World) SetBucketFaults(f nemesis.BucketFaultConfig) {
	w.Bucket().SetFaults(sim.BucketFaults{
		LatencyMin:           f.LatencyMin,
		LatencyMax:           f.LatencyMax,
		ErrorProbability:     f.ErrorProbability,
		AmbiguousProbability: f.AmbiguousProbability,
		StaleListWindow:      f.StaleListWindow,
	})
}

func (w *World) names(is []int) []string {
	names := make([]string, len(is))
	for j, i := range is {
		names[j] = w.Name(i)
	}
	return names
}
