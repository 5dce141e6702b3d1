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
	n.nextID++
	id := n.nextID
	n.disk[i] = append(n.disk[i], diskFault{id: id, f: f})
	d.SetFaults(f)
	n.s.Fault("disk", n.procs[i].Name())
	n.later(n.duration(), "nemesis:heal-disk", func() {
		n.healDisk(i, id)
		n.rebootIfFailed(i)
	})
}

// diskFault is one disk fault in force, by the id its heal names it with.
type diskFault struct {
	id int
	f  sim.DiskFaults
}

// healDisk ends disk fault id of proc i, and only it: the disk goes back to
// the newest of the node's other disk faults still in force, or to none.
// A fault already gone (a replaced disk) is left alone.
func (n *Nemesis) healDisk(i, id int) {
	active := n.disk[i]
	for j, df := range active {
		if df.id != id {
			continue
		}
		active = append(active[:j], active[j+1:]...)
		n.disk[i] = active
		f := n.diskBaseline()
		if len(active) > 0 {
			f = active[len(active)-1].f
		}
		n.procs[i].Disk().SetFaults(f)
		return
	}
}

// diskBaseline is what a disk runs with outside every disk fault.
func (n *Nemesis) diskBaseline() sim.DiskFaults { return sim.DiskFaults{} }

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
	for i, p := range n.procs {
		p.Disk().SetFaults(sim.DiskFaults{})
		n.disk[i] = nil
	}
}

// bucketFaults makes the shared object store unreliable for a while.
func (n *Nemesis) bucketFaults() {
	sev := n.mix.Severity
	f := sim.BucketFaults{
		LatencyMin:           time.Millisecond,
		LatencyMax:           time.Duration(1+n.r.IntN(200)) * time.Millisecond,
		ErrorProbability:     n.r.Float64() * 0.3 * sev,
		AmbiguousProbability: n.r.Float64() * 0.3 * sev,
		StaleListWindow:      time.Duration(n.r.IntN(2000)) * time.Millisecond,
	}
	n.nextID++
	id := n.nextID
	n.bucket = append(n.bucket, bucketFault{id: id, f: f})
	n.s.Bucket().SetFaults(f)
	n.s.Fault("bucket", "")
	n.later(n.duration(), "nemesis:heal-bucket", func() { n.healBucket(id) })
}

// bucketFault is one bucket fault in force.
type bucketFault struct {
	id int
	f  sim.BucketFaults
}

// healBucket ends bucket fault id, and only it, as healDisk does.
func (n *Nemesis) healBucket(id int) {
	for j, bf := range n.bucket {
		if bf.id != id {
			continue
		}
		n.bucket = append(n.bucket[:j], n.bucket[j+1:]...)
		var f sim.BucketFaults
		if len(n.bucket) > 0 {
			f = n.bucket[len(n.bucket)-1].f
		}
		n.s.Bucket().SetFaults(f)
		return
	}
}

func (n *Nemesis) clearBucketFaults() {
	n.s.Bucket().SetFaults(sim.BucketFaults{})
	n.bucket = nil
}
