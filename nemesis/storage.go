package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Disk trouble, scaled by severity. The rates are per operation, so even the
// top of the range leaves most syncs succeeding: a disk that fails every
// fsync tests nothing but the restart loop.
const (
	maxSyncFailProbability    = 0.05
	maxSyncNoSpaceProbability = 0.05
	maxNoSpaceProbability     = 0.05
	// Writes are far more frequent than syncs (every append).
	maxWriteErrorProbability = 0.01
	maxBitFlipProbability    = 0.02
	maxStallProbability      = 0.2
	stallLatency             = 200 * time.Millisecond
	// At-rest damage strikes only files a scenario declared survivable,
	// which are read and synced far less often than a log is appended.
	maxAtRestProbability = 0.2
	// steadyAtRestProbability is the at-rest damage rate of a damaged
	// node's disk outside disk faults, times the severity.
	steadyAtRestProbability = 0.05
	// fullDiskHeadroomBytes is how much a "full disk" fault leaves free
	// beyond what the node already uses.
	fullDiskHeadroomBytes = 4096
)

// DiskMix is one seed's choice of disk fault classes (swarm testing: each
// class is drawn separately, so a seed may see only stalls, or only
// misdirected writes). Every class but PageCrash is injected by a "disk"
// fault (Kind DiskFaults), so it needs that kind enabled too.
type DiskMix struct {
	// PageCrash is the crash model of every disk for the whole run, heal
	// included: a power loss keeps any page-granular subset of unsynced
	// writes (sim.DiskFaults.PageCrash) rather than an in-order prefix.
	PageCrash bool

	SyncFail    bool // failed fsyncs; failed directory syncs, which fail the filesystem
	SyncNoSpace bool // ENOSPC at fsync (delayed allocation)
	NoSpace     bool // ENOSPC on create, mkdir, rename, truncate
	Full        bool // a full disk (a capacity just above what is used)
	WriteError  bool // EIO on write
	BitFlip     bool // bit flips on read
	Stall       bool // slow syncs

	// At-rest damage (latent sector errors, corruption, misdirected
	// writes) strikes only the processes in Damaged, and on them only the
	// files their scenario declared survivable (sim.Disk.DeclareSurvivable).
	Latent    bool
	Corrupt   bool
	Misdirect bool
	// Damaged lists the processes (indices into the nemesis's procs) that
	// may get at-rest damage: at most Mix.MaxDown of them, a minority, so
	// that the majority always holds an intact copy.
	Damaged []int
}

// drawDiskMix draws the disk classes for n processes of which at most
// maxDamaged may get at-rest damage.
func drawDiskMix(r *rand.Rand, n, maxDamaged int) DiskMix {
	var m DiskMix
	for _, c := range m.classes() {
		*c = r.IntN(2) == 0
	}
	if n > 0 && maxDamaged > 0 {
		m.Damaged = r.Perm(n)[:1+r.IntN(min(maxDamaged, n))]
		slices.Sort(m.Damaged)
	}
	return m
}

// classes lists m's class flags, the crash model first, in the order draws
// use.
func (m *DiskMix) classes() []*bool {
	return []*bool{&m.PageCrash, &m.SyncFail, &m.SyncNoSpace, &m.NoSpace, &m.Full, &m.WriteError, &m.BitFlip,
		&m.Stall, &m.Latent, &m.Corrupt, &m.Misdirect}
}

// within keeps the classes of m that can (a world's capabilities) has
// set, and drops Damaged where can has no class of damage at rest.
func (m DiskMix) within(can DiskMix) DiskMix {
	mc, cc := m.classes(), can.classes()
	for i := range mc {
		*mc[i] = *mc[i] && *cc[i]
	}
	if !can.Latent && !can.Corrupt && !can.Misdirect {
		m.Damaged = nil
	}
	return m
}

func (m DiskMix) String() string {
	var on []string
	for _, c := range []struct {
		name string
		on   bool
	}{{"page-crash", m.PageCrash}, {"sync-fail", m.SyncFail}, {"sync-nospace", m.SyncNoSpace},
		{"nospace", m.NoSpace}, {"full", m.Full}, {"write-error", m.WriteError}, {"bitflip", m.BitFlip},
		{"stall", m.Stall}, {"latent", m.Latent}, {"corrupt", m.Corrupt}, {"misdirect", m.Misdirect}} {
		if c.on {
			on = append(on, c.name)
		}
	}
	return fmt.Sprintf("[%s] damaged=%v", strings.Join(on, ","), m.Damaged)
}

// baseline is what every disk runs with outside a disk fault: the seed's
// crash model.
func (m DiskMix) baseline() DiskFaultConfig { return DiskFaultConfig{PageCrash: m.PageCrash} }

// diskFaults gives one node a bad disk for a while: the seed's classes
// (DiskMix), each at a rate drawn up to its maximum times the severity.
func (n *Nemesis) diskFaults() {
	i := n.pick()
	dm := n.mix.Disk
	rate := func(on bool, maxP float64) float64 {
		if !on {
			return 0
		}
		return n.r.Float64() * maxP * n.mix.Severity
	}
	f := dm.baseline()
	f.SyncFailProbability = rate(dm.SyncFail, maxSyncFailProbability)
	f.SyncNoSpaceProbability = rate(dm.SyncNoSpace, maxSyncNoSpaceProbability)
	f.NoSpaceProbability = rate(dm.NoSpace, maxNoSpaceProbability)
	f.WriteErrorProbability = rate(dm.WriteError, maxWriteErrorProbability)
	f.BitFlipProbability = rate(dm.BitFlip, maxBitFlipProbability)
	f.StallProbability = rate(dm.Stall, maxStallProbability)
	if dm.Stall {
		f.StallLatency = stallLatency
	}
	// A failed directory sync fails the filesystem until the machine
	// power-cycles; rebootIfFailed does that when the fault ends.
	f.SyncDirFailProbability = f.SyncFailProbability
	if dm.Full && n.r.IntN(2) == 0 {
		f.CapacityBytes = n.w.DiskUsedBytes(i) + fullDiskHeadroomBytes
	}
	if slices.Contains(dm.Damaged, i) && n.w.DiskSurvivable(i) {
		f.LatentErrorProbability = rate(dm.Latent, maxAtRestProbability)
		f.CorruptProbability = rate(dm.Corrupt, maxAtRestProbability)
		f.MisdirectProbability = rate(dm.Misdirect, maxAtRestProbability)
	}
	n.nextID++
	id := n.nextID
	n.disk[i] = append(n.disk[i], diskFault{id: id, f: f})
	n.w.SetDiskFaults(i, f)
	n.w.Fault("disk", n.w.Name(i))
	n.later(n.duration(), "nemesis:heal-disk", func() {
		n.healDisk(i, id)
		n.rebootIfFailed(i)
	})
}

// diskFault is one disk fault in force, by the id its heal names it with.
type diskFault struct {
	id int
	f  DiskFaultConfig
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
		f := n.diskBaseline(i)
		if len(active) > 0 {
			f = active[len(active)-1].f
		}
		n.w.SetDiskFaults(i, f)
		return
	}
}

// diskBaseline is what disk i runs with outside every disk fault: the
// seed's crash model (DiskMix.baseline) and, on a node of DiskMix.Damaged,
// the seed's at-rest damage classes at a steady low rate: a bad medium is
// bad all the time, not only while a disk fault is in force (the sim disk
// applies them only to the files the scenario declared survivable).
func (n *Nemesis) diskBaseline(i int) DiskFaultConfig {
	dm := n.mix.Disk
	f := dm.baseline()
	if slices.Contains(dm.Damaged, i) {
		r := steadyAtRestProbability * n.mix.Severity
		if dm.Latent {
			f.LatentErrorProbability = r
		}
		if dm.Corrupt {
			f.CorruptProbability = r
		}
		if dm.Misdirect {
			f.MisdirectProbability = r
		}
	}
	return f
}

// rebootIfFailed power-cycles machine i if its filesystem failed (a failed
// directory sync: ext4 aborts its journal, XFS shuts down), as an operator
// reboots a machine whose filesystem went read-only: no process restart
// can bring it back. A process that was up starts again at once; one the
// nemesis killed starts at its scheduled restart; one the scenario stopped
// itself is left alone.
func (n *Nemesis) rebootIfFailed(i int) {
	if !n.caps.PowerLoss || !n.w.FilesystemFailed(i) || !n.w.Up(i) && !n.down[i] {
		return
	}
	up := n.w.Up(i)
	n.w.PowerCycle(i)
	if up {
		n.w.Start(i)
	}
}

// clearDiskFaults gives every disk the seed's baseline and nothing else.
// Damage already done at rest stays: it belongs to the medium.
func (n *Nemesis) clearDiskFaults() {
	if !n.caps.disks() {
		return
	}
	for i := range n.disk {
		n.w.SetDiskFaults(i, n.diskBaseline(i))
		n.disk[i] = nil
	}
}

// bucketFaults makes the shared object store unreliable for a while.
func (n *Nemesis) bucketFaults() {
	sev := n.mix.Severity
	f := BucketFaultConfig{
		LatencyMin:           time.Millisecond,
		LatencyMax:           time.Duration(1+n.r.IntN(200)) * time.Millisecond,
		ErrorProbability:     n.r.Float64() * 0.3 * sev,
		AmbiguousProbability: n.r.Float64() * 0.3 * sev,
		StaleListWindow:      time.Duration(n.r.IntN(2000)) * time.Millisecond,
	}
	n.nextID++
	id := n.nextID
	n.bucket = append(n.bucket, bucketFault{id: id, f: f})
	n.w.SetBucketFaults(f)
	n.w.Fault("bucket", "")
	n.later(n.duration(), "nemesis:heal-bucket", func() { n.healBucket(id) })
}

// bucketFault is one bucket fault in force.
type bucketFault struct {
	id int
	f  BucketFaultConfig
}

// healBucket ends bucket fault id, and only it, as healDisk does.
func (n *Nemesis) healBucket(id int) {
	for j, bf := range n.bucket {
		if bf.id != id {
			continue
		}
		n.bucket = append(n.bucket[:j], n.bucket[j+1:]...)
		var f BucketFaultConfig
		if len(n.bucket) > 0 {
			f = n.bucket[len(n.bucket)-1].f
		}
		n.w.SetBucketFaults(f)
		return
	}
}

func (n *Nemesis) clearBucketFaults() {
	if n.caps.Can(BucketFault) {
		n.w.SetBucketFaults(BucketFaultConfig{})
	}
	n.bucket = nil
}
