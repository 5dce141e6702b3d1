package nemesis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/sim"
)

func TestDrawMixIsSeededAndVaried(t *testing.T) {
	draw := func(seed uint64) Mix { return DrawMix(sim.New(sim.Config{Seed: seed}).Rand("mix"), 5) }
	require.Equal(t, draw(1), draw(1))
	kinds := map[string]bool{}
	counts := map[Kind]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		m := draw(seed)
		require.NotEmpty(t, m.Kinds, "seed %d enabled nothing", seed)
		require.Equal(t, 2, m.MaxDown, "a minority of 5")
		require.Greater(t, m.Severity, 0.0)
		kinds[fmt.Sprint(m.Kinds)] = true
		for _, k := range m.Kinds {
			counts[k]++
		}
	}
	require.Greater(t, len(kinds), 100, "swarm mixes should rarely repeat")
	for _, k := range AllKinds {
		require.Greater(t, counts[k], 50, "kind %s is enabled about half the time", k)
		require.Less(t, counts[k], 150, "kind %s is enabled about half the time", k)
	}
}

// cluster starts n idle processes that keep a listener open.
func cluster(seed uint64, n int) (*sim.Sim, []*sim.Process) {
	s := sim.New(sim.Config{Seed: seed})
	var procs []*sim.Process
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("n%d", i+1)
		p := s.AddProcess(name, func(e env.Env) {
			_, _ = e.Net().Listen(name+":1", func(c env.Conn) {
				c.OnFrame(func([]byte) {})
				c.OnClose(func(error) {})
			})
		})
		p.Start()
		procs = append(procs, p)
	}
	return s, procs
}

func TestScheduleInjectsWithinBoundsAndHealsEverything(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		s, procs := cluster(seed, 5)
		mix := Mix{Kinds: AllKinds, MeanInterval: 20 * time.Millisecond, MaxDuration: time.Second, MaxDown: 2, Severity: 1}
		n := Start(s, procs, mix, 5*time.Second)
		// Check the kill bound at every millisecond of the fault phase.
		for s.Now() < 5*time.Second {
			require.NoError(t, s.RunFor(time.Millisecond))
			down := 0
			for _, p := range procs {
				if !p.Up() {
					down++
				}
			}
			require.LessOrEqual(t, down, 2, "seed %d: more than MaxDown nodes down at %v", seed, s.Now())
		}
		require.NoError(t, s.RunFor(time.Millisecond))
		require.Positive(t, n.Injected())
		for _, p := range procs {
			require.True(t, p.Up(), "seed %d: %s still down after the heal", seed, p.Name())
			require.Equal(t, sim.DiskFaults{}, p.Disk().Faults())
		}
		require.Equal(t, sim.BucketFaults{}, s.Bucket().Faults())
		// After the heal, every node can reach every other.
		ok := 0
		for _, p := range procs {
			for _, q := range procs {
				if p != q {
					p.Env().Net().Dial(q.Name()+":1", func(c env.Conn, err error) {
						if err == nil {
							ok++
							c.OnFrame(func([]byte) {})
							c.OnClose(func(error) {})
						}
					})
				}
			}
		}
		require.NoError(t, s.RunFor(time.Second))
		require.Equal(t, 20, ok, "seed %d: some dials failed after the heal", seed)
	}
}

func TestNoneInjectsNothing(t *testing.T) {
	s, procs := cluster(1, 3)
	n := Start(s, procs, None(), 2*time.Second)
	require.NoError(t, s.RunFor(3*time.Second))
	require.Zero(t, n.Injected())
	require.Empty(t, s.Faults())
}

// TestOneWayIsolatesNodesAsymmetrically checks that one-way faults cut
// single links and also a node from all others in one direction.
func TestOneWayIsolatesNodesAsymmetrically(t *testing.T) {
	s, procs := cluster(7, 5)
	mix := Mix{Kinds: []Kind{OneWay}, MeanInterval: 50 * time.Millisecond, MaxDuration: 100 * time.Millisecond, MaxDown: 2, Severity: 1}
	n := Start(s, procs, mix, 5*time.Second)
	require.NoError(t, s.RunFor(6*time.Second))
	blocks := 0
	for _, f := range s.Faults() {
		if f.Kind == "net-block" {
			blocks = int(f.Count)
		}
	}
	require.Positive(t, n.Injected())
	// A single link is one block, an isolated node four.
	require.Greater(t, blocks, n.Injected(), "no one-way fault isolated a node")
	require.Less(t, blocks, 4*n.Injected(), "no one-way fault cut a single link")
}

// failFilesystem makes one SyncDir of p fail, which fails p's filesystem
// until the machine power-cycles.
func failFilesystem(t *testing.T, s *sim.Sim, p *sim.Process) {
	d := p.Disk()
	d.SetFaults(sim.DiskFaults{SyncDirFailProbability: 1})
	var got error
	p.Env().Disk().SyncDir("", func(err error) { got = err })
	require.NoError(t, s.RunFor(10*time.Millisecond))
	require.ErrorIs(t, got, env.ErrIO)
	require.True(t, d.Failed())
}

// TestHealAllPowerCyclesFailedFilesystems: a machine whose filesystem
// failed is power-cycled at the heal (no process restart could cure it),
// whether its process is up or was killed by the nemesis; one the scenario
// stopped itself stays as it is.
func TestHealAllPowerCyclesFailedFilesystems(t *testing.T) {
	s, procs := cluster(1, 4)
	n := Start(s, procs, None(), time.Second)
	for _, p := range procs[:3] {
		failFilesystem(t, s, p)
	}
	procs[1].Kill() // as the nemesis's kill does, the page cache kept
	n.down[1] = true
	n.downN++
	procs[2].Kill() // stopped by the scenario, not the nemesis
	inc := []uint64{procs[0].Incarnation(), procs[1].Incarnation(), procs[2].Incarnation(), procs[3].Incarnation()}

	require.NoError(t, s.RunUntil(time.Second+time.Millisecond))
	require.True(t, procs[0].Up())
	require.False(t, procs[0].Disk().Failed(), "an up machine with a failed filesystem is power-cycled")
	require.Equal(t, inc[0]+1, procs[0].Incarnation())
	require.True(t, procs[1].Up())
	require.False(t, procs[1].Disk().Failed(), "a killed machine with a failed filesystem is power-cycled before its restart")
	require.Equal(t, inc[1]+1, procs[1].Incarnation())
	require.False(t, procs[2].Up(), "the scenario's own stop stands")
	require.True(t, procs[2].Disk().Failed())
	require.True(t, procs[3].Up())
	require.Equal(t, inc[3], procs[3].Incarnation(), "a healthy machine is left alone")
	require.Equal(t, uint64(0), procs[3].Disk().Stats().Crashes)
}

// TestDiskFaultEndRebootsFailedFilesystems: with disk faults only, nodes
// that sync their directory all the time fail their filesystems, and the
// end of each disk fault power-cycles such a machine during the fault
// phase already (nothing else would: no kills are enabled); after the heal
// every node is up on a working filesystem.
func TestDiskFaultEndRebootsFailedFilesystems(t *testing.T) {
	s := sim.New(sim.Config{Seed: 3})
	var procs []*sim.Process
	for i := 0; i < 3; i++ {
		p := s.AddProcess(fmt.Sprintf("n%d", i+1), func(e env.Env) {
			var tick func()
			tick = func() {
				e.Disk().SyncDir("", func(error) {})
				e.AfterFunc(time.Millisecond, tick)
			}
			tick()
		})
		p.Start()
		procs = append(procs, p)
	}
	mix := Mix{Kinds: []Kind{DiskFaults}, MeanInterval: 20 * time.Millisecond, MaxDuration: 200 * time.Millisecond, MaxDown: 1, Severity: 1,
		Disk: DiskMix{SyncFail: true}}
	Start(s, procs, mix, 5*time.Second)
	require.NoError(t, s.RunUntil(5*time.Second-time.Millisecond))
	var failures, reboots uint64
	for _, p := range procs {
		failures += p.Disk().Stats().FSFailures
		reboots += p.Disk().Stats().Crashes
	}
	require.Positive(t, failures, "the test wants failed filesystems")
	require.Positive(t, reboots, "a failed filesystem is rebooted when its disk fault ends")
	require.NoError(t, s.RunFor(10*time.Millisecond))
	for _, p := range procs {
		require.True(t, p.Up())
		require.False(t, p.Disk().Failed())
	}
}

// TestDrawDiskMixDrawsEveryClass: over many seeds every disk class is
// drawn on and off, and the processes open to damage at rest are never
// more than MaxDown.
func TestDrawDiskMixDrawsEveryClass(t *testing.T) {
	seen := map[string]int{}
	for seed := uint64(0); seed < 200; seed++ {
		m := DrawMix(sim.New(sim.Config{Seed: seed}).Rand("mix"), 5)
		require.LessOrEqual(t, len(m.Disk.Damaged), m.MaxDown)
		require.NotEmpty(t, m.Disk.Damaged)
		for _, c := range strings.Split(strings.Trim(strings.Fields(m.Disk.String())[0], "[]"), ",") {
			seen[c]++
		}
	}
	for _, c := range []string{"page-crash", "sync-fail", "sync-nospace", "nospace", "full", "write-error",
		"bitflip", "stall", "latent", "corrupt", "misdirect"} {
		require.Greater(t, seen[c], 50, c)
		require.Less(t, seen[c], 150, c)
	}
}

// TestAtRestDamageOnlyOnDamagedDisks: with every at-rest class on, only
// the disks of DiskMix.Damaged get at-rest rates, at a steady low rate
// outside disk faults and up to the maximum during them (the sim disk
// applies them to declared survivable files only); every disk keeps the
// seed's crash model, and the heal restores each one's baseline.
func TestAtRestDamageOnlyOnDamagedDisks(t *testing.T) {
	s, procs := cluster(5, 3)
	procs[0].Disk().DeclareSurvivable(func(string) bool { return true })
	procs[1].Disk().DeclareSurvivable(func(string) bool { return true })
	mix := Mix{Kinds: []Kind{DiskFaults}, MeanInterval: 10 * time.Millisecond, MaxDuration: time.Second, MaxDown: 1, Severity: 1,
		Disk: DiskMix{PageCrash: true, Latent: true, Corrupt: true, Misdirect: true, Damaged: []int{1, 2}}}
	Start(s, procs, mix, 2*time.Second)
	steady := sim.DiskFaults{PageCrash: true, LatentErrorProbability: steadyAtRestProbability,
		CorruptProbability: steadyAtRestProbability, MisdirectProbability: steadyAtRestProbability}
	require.Equal(t, steady, procs[1].Disk().Faults(), "a damaged disk's baseline")
	require.Equal(t, sim.DiskFaults{PageCrash: true}, procs[0].Disk().Faults(), "an undamaged disk's baseline")
	damaged := make([]bool, len(procs))
	for s.Now() < 2*time.Second-10*time.Millisecond {
		require.NoError(t, s.RunFor(time.Millisecond))
		for i, p := range procs {
			f := p.Disk().Faults()
			require.True(t, f.PageCrash, "the crash model holds throughout")
			if f.LatentErrorProbability > 0 || f.CorruptProbability > 0 || f.MisdirectProbability > 0 {
				damaged[i] = true
			}
		}
	}
	require.Equal(t, []bool{false, true, true}, damaged, "only the damaged processes")
	require.NoError(t, s.RunFor(100*time.Millisecond))
	for i, p := range procs {
		want := sim.DiskFaults{PageCrash: true}
		if i == 1 || i == 2 {
			want = steady
		}
		require.Equal(t, want, p.Disk().Faults(), "the heal restores the baseline of %s", p.Name())
	}
}

// TestDrawMixForKeepsTheBaseDrawAndAddsOnlyPromisedKinds: DrawMixFor
// enables the base kinds DrawMix would (a seed's base mix does not change),
// and each promised kind about half the time, never an unpromised one.
func TestDrawMixForKeepsTheBaseDrawAndAddsOnlyPromisedKinds(t *testing.T) {
	counts := map[Kind]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		s := sim.New(sim.Config{Seed: seed})
		base := DrawMix(s.Rand("mix"), 3)
		m := DrawMixFor(s.Rand("mix"), 3, Promises{Outages: true, Wipeable: []int{3}})
		require.Equal(t, base.Kinds, m.Kinds[:len(base.Kinds)], "seed %d", seed)
		require.True(t, m.Shapes)
		for _, k := range m.Kinds {
			counts[k]++
		}
		none := DrawMixFor(s.Rand("mix"), 3, Promises{})
		require.False(t, none.Has(Outage) || none.Has(Wipe), "seed %d: unpromised kinds", seed)
	}
	for _, k := range PromisedKinds {
		require.Greater(t, counts[k], 70, "kind %s is enabled about half the time", k)
		require.Less(t, counts[k], 130, "kind %s is enabled about half the time", k)
	}
}

// TestShapesAndPromisedKindsHealEverything runs every kind with every
// shape: outages take more than MaxDown at once, wipes empty only the
// wipeable disks, and after the heal every node is up and reachable.
func TestShapesAndPromisedKindsHealEverything(t *testing.T) {
	kinds := append(append([]Kind(nil), AllKinds...), PromisedKinds...)
	maxDownSeen := 0
	var outages, wipes, shapes uint64
	for seed := uint64(1); seed <= 20; seed++ {
		s, procs := cluster(seed, 5)
		for _, p := range procs {
			d := p.Env().Disk()
			f, err := d.Open("mark", true)
			require.NoError(t, err)
			_, err = f.Append([]byte("x"))
			require.NoError(t, err)
			f.Sync(func(err error) { require.NoError(t, err) })
			d.SyncDir("", func(err error) { require.NoError(t, err) })
		}
		require.NoError(t, s.RunFor(100*time.Millisecond))
		mix := Mix{Kinds: kinds, MeanInterval: 20 * time.Millisecond, MaxDuration: time.Second, MaxDown: 1, Severity: 1,
			Shapes: true, Promises: Promises{Outages: true, Voters: 3, Wipeable: []int{3, 4}}}
		end := s.Now() + 5*time.Second
		Start(s, procs, mix, 5*time.Second)
		for s.Now() < end {
			require.NoError(t, s.RunFor(time.Millisecond))
			down := 0
			for _, p := range procs {
				if !p.Up() {
					down++
				}
			}
			maxDownSeen = max(maxDownSeen, down)
		}
		require.NoError(t, s.RunFor(time.Millisecond))
		for i, p := range procs {
			require.True(t, p.Up(), "seed %d: %s still down after the heal", seed, p.Name())
			if i < 3 {
				_, ok := p.Disk().ReadFile("mark")
				require.True(t, ok, "seed %d: %s is not wipeable", seed, p.Name())
			}
		}
		for _, f := range s.Faults() {
			switch f.Kind {
			case "outage":
				outages += f.Count
			case "disk-replace":
				wipes += f.Count
			case "partition-bridge", "partition-ring", "freeze", "net-reset-conn":
				shapes += f.Count
			}
		}
		ok := 0
		for _, p := range procs {
			for _, q := range procs {
				if p != q {
					p.Env().Net().Dial(q.Name()+":1", func(c env.Conn, err error) {
						if err == nil {
							ok++
							c.OnFrame(func([]byte) {})
							c.OnClose(func(error) {})
						}
					})
				}
			}
		}
		require.NoError(t, s.RunFor(time.Second))
		require.Equal(t, 20, ok, "seed %d: some dials failed after the heal", seed)
	}
	require.Positive(t, outages)
	require.Positive(t, wipes)
	require.Positive(t, shapes)
	require.Greater(t, maxDownSeen, 1, "an outage takes more than MaxDown")
}

// TestHealUndoesOnlyItsOwnFault: a partition's heal leaves a one-way
// block of the same link in force, and a disk fault's heal leaves the
// node's other disk fault in force.
func TestHealUndoesOnlyItsOwnFault(t *testing.T) {
	s, procs := cluster(1, 3)
	n := Start(s, procs, Mix{Kinds: []Kind{Partition}, MeanInterval: time.Hour, MaxDuration: time.Second, MaxDown: 1, Severity: 1}, time.Hour)
	net := s.Network()
	block := net.Block("n1", "n2")
	n.partition() // heals itself within a second
	require.NoError(t, s.RunFor(2*time.Second))
	got := 0
	procs[0].Env().Net().Dial("n2:1", func(c env.Conn, err error) {
		if err == nil {
			got++
		}
	})
	require.NoError(t, s.RunFor(12*time.Second))
	require.Zero(t, got, "the block outlives the partition's heal")
	block.Heal()

	first := sim.DiskFaults{StallProbability: 0.5, StallLatency: time.Millisecond}
	second := sim.DiskFaults{BitFlipProbability: 0.5}
	n.nextID++
	n.disk[0] = append(n.disk[0], diskFault{id: n.nextID, f: first})
	n.nextID++
	n.disk[0] = append(n.disk[0], diskFault{id: n.nextID, f: second})
	procs[0].Disk().SetFaults(second)
	n.healDisk(0, n.nextID-1) // the first ends: the second stays
	require.Equal(t, second, procs[0].Disk().Faults())
	n.healDisk(0, n.nextID)
	require.Equal(t, sim.DiskFaults{}, procs[0].Disk().Faults())
}
