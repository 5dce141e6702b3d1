package simworld_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/nemesis"
	"github.com/strata-log/strata/nemesis/simworld"
	"github.com/strata-log/strata/sim"
)

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

// requireAllReach requires every node to reach every other (after a heal).
func requireAllReach(t *testing.T, s *sim.Sim, procs []*sim.Process, seed uint64) {
	t.Helper()
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
	require.Equal(t, len(procs)*(len(procs)-1), ok, "seed %d: some dials failed after the heal", seed)
}

func TestScheduleInjectsWithinBoundsAndHealsEverything(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		s, procs := cluster(seed, 5)
		mix := nemesis.Mix{Kinds: nemesis.AllKinds, MeanInterval: 20 * time.Millisecond, MaxDuration: time.Second, MaxDown: 2, Severity: 1}
		n := nemesis.Start(simworld.New(s, procs), mix, 5*time.Second)
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
		requireAllReach(t, s, procs, seed)
	}
}

func TestNoneInjectsNothing(t *testing.T) {
	s, procs := cluster(1, 3)
	n := nemesis.Start(simworld.New(s, procs), nemesis.None(), 2*time.Second)
	require.NoError(t, s.RunFor(3*time.Second))
	require.Zero(t, n.Injected())
	require.Empty(t, s.Faults())
}

// TestOneWayIsolatesNodesAsymmetrically checks that one-way faults cut
// single links and also a node from all others in one direction.
func TestOneWayIsolatesNodesAsymmetrically(t *testing.T) {
	s, procs := cluster(7, 5)
	mix := nemesis.Mix{Kinds: []nemesis.Kind{nemesis.OneWay}, MeanInterval: 50 * time.Millisecond, MaxDuration: 100 * time.Millisecond, MaxDown: 2, Severity: 1}
	n := nemesis.Start(simworld.New(s, procs), mix, 5*time.Second)
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
	mix := nemesis.Mix{Kinds: []nemesis.Kind{nemesis.DiskFaults}, MeanInterval: 20 * time.Millisecond, MaxDuration: 200 * time.Millisecond, MaxDown: 1, Severity: 1,
		Disk: nemesis.DiskMix{SyncFail: true}}
	nemesis.Start(simworld.New(s, procs), mix, 5*time.Second)
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

// TestShapesAndPromisedKindsHealEverything runs every kind with every
// shape: outages take more than MaxDown at once, wipes empty only the
// wipeable disks, and after the heal every node is up and reachable.
func TestShapesAndPromisedKindsHealEverything(t *testing.T) {
	kinds := append(append([]nemesis.Kind(nil), nemesis.AllKinds...), nemesis.PromisedKinds...)
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
		mix := nemesis.Mix{Kinds: kinds, MeanInterval: 20 * time.Millisecond, MaxDuration: time.Second, MaxDown: 1, Severity: 1,
			Shapes: true, Promises: nemesis.Promises{Outages: true, Voters: 3, Wipeable: []int{3, 4}}}
		end := s.Now() + 5*time.Second
		nemesis.Start(simworld.New(s, procs), mix, 5*time.Second)
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
		requireAllReach(t, s, procs, seed)
	}
	require.Positive(t, outages)
	require.Positive(t, wipes)
	require.Positive(t, shapes)
	require.Greater(t, maxDownSeen, 1, "an outage takes more than MaxDown")
}

// TestHealAllPowerCyclesFailedFilesystems: at the heal the simulator
// power-cycles an up machine whose filesystem failed and starts it again,
// and leaves a machine the scenario stopped itself as it is.
func TestHealAllPowerCyclesFailedFilesystems(t *testing.T) {
	s, procs := cluster(1, 3)
	nemesis.Start(simworld.New(s, procs), nemesis.None(), time.Second)
	failFilesystem(t, s, procs[0])
	failFilesystem(t, s, procs[1])
	procs[1].Kill() // stopped by the scenario, not the nemesis
	inc := []uint64{procs[0].Incarnation(), procs[1].Incarnation(), procs[2].Incarnation()}

	require.NoError(t, s.RunUntil(time.Second+time.Millisecond))
	require.True(t, procs[0].Up())
	require.False(t, procs[0].Disk().Failed(), "an up machine with a failed filesystem is power-cycled")
	require.Equal(t, inc[0]+1, procs[0].Incarnation())
	require.False(t, procs[1].Up(), "the scenario's own stop stands")
	require.True(t, procs[1].Disk().Failed())
	require.Equal(t, inc[2], procs[2].Incarnation(), "a healthy machine is left alone")
	require.Zero(t, procs[2].Disk().Stats().Crashes)
}

// TestCutHealsOnlyItself: the heal of a partition's cut leaves a one-way
// block of the same link in force (sim.Cut).
func TestCutHealsOnlyItself(t *testing.T) {
	s, procs := cluster(1, 3)
	w := simworld.New(s, procs)
	block := w.Block(0, 1)
	w.Partition([]int{0}, []int{1, 2}).Heal()
	got := 0
	procs[0].Env().Net().Dial("n2:1", func(c env.Conn, err error) {
		if err == nil {
			got++
		}
	})
	require.NoError(t, s.RunFor(12*time.Second))
	require.Zero(t, got, "the block outlives the partition's heal")
	block.Heal()
	requireAllReach(t, s, procs, 1)
}
