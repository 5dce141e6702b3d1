package nemesis

import (
	"time"

	"github.com/strata-log/strata/sim"
)

// Disk trouble, scaled by severity. The rates are per operation, so even the
// top of the range leaves most syncs succeeding: a disk that fails every
// fsync tests nothing but the restart loop.
const (
	maxSyncFailProbability = 0.05
	maxBitFlipProbability  = 0.02
	maxStallProbability    = 0.2
	stallLatency           = 200 * time.Millisecond
	// fullDiskHeadroomBytes is how much a "full disk" fault leaves free
	// beyond what the node already uses.
	fullDiskHeadroomBytes = 4096
)

// diskFaults gives one node a bad disk for a while: a mix of failed
// fsyncs, read bit flips, stalls and (sometimes) a full disk.
func (n *Nemesis) diskFaults() {
	i := n.pick()
	d := n.procs[i].Disk()
	sev := n.mix.Severity
	f := sim.DiskFaults{
		SyncFailProbability: n.r.Float64() * maxSyncFailProbability * sev,
		BitFlipProbability:  n.r.Float64() * maxBitFlipProbability * sev,
		StallProbability:    n.r.Float64() * maxStallProbability * sev,
		StallLatency:        stallLatency,
	}
	// A failed directory sync fails the filesystem until the machine
	// power-cycles; rebootIfFailed does that when the fault ends.
	f.SyncDirFailProbability = f.SyncFailProbability
	if n.r.IntN(4) == 0 {
		f.CapacityBytes = usedBytes(d) + fullDiskHeadroomBytes
	}
	d.SetFaults(f)
	n.s.Fault("disk", n.procs[i].Name())
	n.later(n.duration(), "nemesis:heal-disk", func() {
		d.SetFaults(sim.DiskFaults{})
		n.rebootIfFailed(i)
	})
}

// rebootIfFailed power-cycles machine i if its filesystem failed (a failed
// directory sync: ext4 aborts its journal, XFS shuts down), as an operator
// reboots a machine whose filesystem went read-only: no process restart
// can bring it back. A process that was up starts again at once; one the
// nemesis killed starts at its scheduled restart; one the scenario stopped
// itself is left alone.
func (n *Nemesis) rebootIfFailed(i int) {
	p := n.procs[i]
	if !p.Disk().Failed() || !p.Up() && !n.down[i] {
		return
	}
	up := p.Up()
	p.PowerCycle()
	if up {
		p.Start()
	}
}

func usedBytes(d *sim.Disk) int64 {
	var total int64
	for _, name := range d.Files() {
		b, _ := d.ReadFile(name)
		total += int64(len(b))
	}
	return total
}

func (n *Nemesis) clearDiskFaults() {
	for _, p := range n.procs {
		p.Disk().SetFaults(sim.DiskFaults{})
	}
}

// bucketFaults makes the shared object store unreliable for a while.
func (n *Nemesis) bucketFaults() {
	sev := n.mix.Severity
	n.s.Bucket().SetFaults(sim.BucketFaults{
		LatencyMin:           time.Millisecond,
		LatencyMax:           time.Duration(1+n.r.IntN(200)) * time.Millisecond,
		ErrorProbability:     n.r.Float64() * 0.3 * sev,
		AmbiguousProbability: n.r.Float64() * 0.3 * sev,
		StaleListWindow:      time.Duration(n.r.IntN(2000)) * time.Millisecond,
	})
	n.s.Fault("bucket", "")
	n.later(n.duration(), "nemesis:heal-bucket", n.clearBucketFaults)
}

func (n *Nemesis) clearBucketFaults() { n.s.Bucket().SetFaults(sim.BucketFaults{}) }
