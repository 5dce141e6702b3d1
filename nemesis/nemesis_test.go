package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rng is a seeded stream for draws.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6d6978)) }

// processWorld is what a world of real processes can inject: kill -9 and
// restart, SIGSTOP, cuts and delays with network namespaces and netem, a
// full disk.
var processWorld = Capabilities{
	Kinds: []Kind{Kill, Pause, Partition, OneWay, Clog, DiskFaults},
	Disk:  DiskMix{Full: true},
}

func TestDrawMixIsSeededAndVaried(t *testing.T) {
	draw := func(seed uint64) Mix { return DrawMix(rng(seed), 5) }
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

// TestDrawDiskMixDrawsEveryClass: over many seeds every disk class is
// drawn on and off, and the processes open to damage at rest are never
// more than MaxDown.
func TestDrawDiskMixDrawsEveryClass(t *testing.T) {
	seen := map[string]int{}
	for seed := uint64(0); seed < 200; seed++ {
		m := DrawMix(rng(seed), 5)
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

// TestDrawMixForKeepsTheBaseDrawAndAddsOnlyPromisedKinds: DrawMixFor
// enables the base kinds DrawMix would (a seed's base mix does not change),
// and each promised kind about half the time, never an unpromised one.
func TestDrawMixForKeepsTheBaseDrawAndAddsOnlyPromisedKinds(t *testing.T) {
	counts := map[Kind]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		base := DrawMix(rng(seed), 3)
		m := DrawMixFor(rng(seed), 3, Promises{Outages: true, Wipeable: []int{3}})
		require.Equal(t, base.Kinds, m.Kinds[:len(base.Kinds)], "seed %d", seed)
		require.True(t, m.Shapes)
		for _, k := range m.Kinds {
			counts[k]++
		}
		none := DrawMixFor(rng(seed), 3, Promises{})
		require.False(t, none.Has(Outage) || none.Has(Wipe), "seed %d: unpromised kinds", seed)
	}
	for _, k := range PromisedKinds {
		require.Greater(t, counts[k], 70, "kind %s is enabled about half the time", k)
		require.Less(t, counts[k], 130, "kind %s is enabled about half the time", k)
	}
}

// TestDrawMixWithinLeavesOutWhatTheWorldCannot: a world of real processes
// gets only the kinds and disk classes it can inject, the same of them
// the simulator's draw enables for the seed (the same coins), and never a
// promised kind that needs a power loss.
func TestDrawMixWithinLeavesOutWhatTheWorldCannot(t *testing.T) {
	promises := Promises{Outages: true, Voters: 3, Wipeable: []int{2}}
	counts := map[Kind]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		sim := DrawMixFor(rng(seed), 3, promises)
		m := DrawMixWithin(rng(seed), 3, promises, processWorld)
		require.True(t, processWorld.Allows(m), "seed %d: %v", seed, m)
		require.NotEmpty(t, m.Kinds, "seed %d enabled nothing", seed)
		same := slices.DeleteFunc(slices.Clone(sim.Kinds), func(k Kind) bool { return !processWorld.Can(k) })
		require.Equal(t, DiskMix{Full: m.Disk.Full}, m.Disk, "seed %d: only a full disk", seed)
		if len(same) > 0 { // else it draws one kind of its own, and the rest of its draws shift
			require.Equal(t, same, m.Kinds, "seed %d: the same coins", seed)
			require.Equal(t, sim.Disk.Full, m.Disk.Full, "seed %d", seed)
			require.Equal(t, sim.MeanInterval, m.MeanInterval)
		}
		for _, k := range m.Kinds {
			counts[k]++
		}
	}
	for _, k := range processWorld.Kinds {
		require.Greater(t, counts[k], 50, "kind %s", k)
	}
}

// TestStartRefusesAMixTheWorldCannotInject: a mix drawn for the simulator
// does not run against a world that lacks what it enables.
func TestStartRefusesAMixTheWorldCannotInject(t *testing.T) {
	w := newFakeWorld(1, 3, processWorld)
	require.Panics(t, func() { Start(w, Mix{Kinds: []Kind{ClockSkew}, MaxDown: 1}, time.Second) })
	require.Panics(t, func() {
		Start(w, Mix{Kinds: []Kind{DiskFaults}, MaxDown: 1, Disk: DiskMix{BitFlip: true}}, time.Second)
	})
	// PowerLoss is what outages need, whatever Kinds says.
	noPower := Capabilities{Kinds: []Kind{Kill, Outage}}
	require.Panics(t, func() { Start(newFakeWorld(1, 3, noPower), Mix{Kinds: []Kind{Outage}, MaxDown: 1}, time.Second) })
	require.NotPanics(t, func() { Start(w, Mix{Kinds: []Kind{Kill}, MaxDown: 1}, time.Second) })
}

// campaign runs the nemesis of seed against a fake world of three nodes
// for a 20-second fault phase and returns the calls it made.
func campaign(t *testing.T, seed uint64, caps Capabilities) []string {
	w := newFakeWorld(seed, 3, caps)
	mix := DrawMixWithin(w.Rand("nemesis/mix"), 3, Promises{Outages: true, Voters: 3, Wipeable: []int{2}}, caps)
	Start(w, mix, 20*time.Second)
	w.runUntil(21 * time.Second)
	for i, up := range w.up {
		require.True(t, up, "seed %d: node %d down after the heal", seed, i)
	}
	return w.calls
}

// TestSameSeedSameSchedule: the schedule of fault calls, with their times,
// is a function of the seed (and of the world's answers): two runs of a
// seed make the same calls at the same times, and other seeds make other
// calls. A campaign of real processes, whose clock is the wall's, relies
// on it to replay a seed's faults.
func TestSameSeedSameSchedule(t *testing.T) {
	for _, caps := range []Capabilities{Everything(), processWorld} {
		var last []string
		for seed := uint64(1); seed <= 20; seed++ {
			calls := campaign(t, seed, caps)
			require.Greater(t, len(calls), 3, "seed %d: a schedule to compare", seed)
			require.Equal(t, calls, campaign(t, seed, caps), "seed %d", seed)
			require.NotEqual(t, last, calls, "seeds %d and %d", seed-1, seed)
			last = calls
		}
	}
}

// TestAWorldWithoutPowerLossKillsProcesses: against a world of real
// processes the nemesis kills, pauses, cuts and clogs, and never calls a
// primitive the world lacks (no power loss, freeze, single-connection
// reset, clock or bucket fault).
func TestAWorldWithoutPowerLossKillsProcesses(t *testing.T) {
	w := newFakeWorld(1, 3, processWorld)
	mix := Mix{Kinds: processWorld.Kinds, MeanInterval: 20 * time.Millisecond, MaxDuration: time.Second, MaxDown: 1,
		Severity: 1, Shapes: true, Disk: DiskMix{Full: true}}
	Start(w, mix, 10*time.Second)
	w.runUntil(11 * time.Second)
	for _, m := range []string{"kill", "start", "pause", "partition", "block", "clog", "disk"} {
		require.True(t, w.called(m), "%s never called", m)
	}
	for _, m := range []string{"power-off", "power-cycle", "replace-disk", "freeze", "reset-conn", "reset",
		"jump-clock", "clock-rate", "bucket"} {
		require.False(t, w.called(m), "%s called", m)
	}
	full := false
	for _, c := range w.calls {
		full = full || strings.Contains(c, fmt.Sprintf("CapacityBytes:%d ", 1<<20+fullDiskHeadroomBytes))
	}
	require.True(t, full, "a full disk: its capacity just above what is used")
}

// TestHealAllPowerCyclesFailedFilesystems: a machine whose filesystem
// failed is power-cycled at the heal (no process restart could cure it),
// whether its process is up or was killed by the nemesis; one the scenario
// stopped itself stays as it is.
func TestHealAllPowerCyclesFailedFilesystems(t *testing.T) {
	w := newFakeWorld(1, 4, Everything())
	n := Start(w, None(), time.Second)
	w.failed = []bool{true, true, true, false}
	w.up[1] = false // killed by the nemesis, the page cache kept
	n.down[1] = true
	n.downN++
	w.up[2] = false // stopped by the scenario, not the nemesis
	w.calls = nil
	w.runUntil(time.Second)
	var lifecycle []string
	for _, c := range w.calls {
		if strings.Contains(c, "power-cycle") || strings.Contains(c, "start") {
			lifecycle = append(lifecycle, c)
		}
	}
	require.Equal(t, []string{"1s power-cycle 0", "1s start 0", "1s power-cycle 1", "1s start 1"}, lifecycle)
	require.Equal(t, []bool{true, true, false, true}, w.up)
	require.True(t, w.failed[2], "the scenario's own stop stands")
}

// TestAtRestDamageOnlyOnDamagedDisks: with every at-rest class on, only
// the disks of DiskMix.Damaged get at-rest rates, at a steady low rate
// outside disk faults and up to the maximum during them, and only where
// the scenario declared survivable files; every disk keeps the seed's
// crash model, and the heal restores each one's baseline.
func TestAtRestDamageOnlyOnDamagedDisks(t *testing.T) {
	w := newFakeWorld(5, 3, Everything())
	w.survivable = []bool{true, true, false}
	mix := Mix{Kinds: []Kind{DiskFaults}, MeanInterval: 10 * time.Millisecond, MaxDuration: time.Second, MaxDown: 1, Severity: 1,
		Disk: DiskMix{PageCrash: true, Latent: true, Corrupt: true, Misdirect: true, Damaged: []int{1, 2}}}
	Start(w, mix, 2*time.Second)
	steady := DiskFaultConfig{PageCrash: true, LatentErrorProbability: steadyAtRestProbability,
		CorruptProbability: steadyAtRestProbability, MisdirectProbability: steadyAtRestProbability}
	require.Equal(t, steady, w.disk[1], "a damaged disk's baseline")
	require.Equal(t, DiskFaultConfig{PageCrash: true}, w.disk[0], "an undamaged disk's baseline")
	above := make([]bool, 3)
	for w.now < 2*time.Second-10*time.Millisecond {
		w.runUntil(w.now + time.Millisecond)
		for i, f := range w.disk {
			require.True(t, f.PageCrash, "the crash model holds throughout")
			if f.LatentErrorProbability > steadyAtRestProbability || f.CorruptProbability > steadyAtRestProbability ||
				f.MisdirectProbability > steadyAtRestProbability || i == 0 && f != (DiskFaultConfig{PageCrash: true}) {
				above[i] = true
			}
		}
	}
	require.Equal(t, []bool{false, true, false}, above, "damaged and survivable only")
	w.runUntil(2*time.Second + time.Millisecond)
	require.Equal(t, []DiskFaultConfig{{PageCrash: true}, steady, steady}, w.disk, "the heal restores the baselines")
}

// TestHealUndoesOnlyItsOwnFault: a partition's heal lifts its own cut and
// no other, and a disk fault's heal leaves the node's other disk fault in
// force.
func TestHealUndoesOnlyItsOwnFault(t *testing.T) {
	w := newFakeWorld(1, 3, Everything())
	n := Start(w, Mix{Kinds: []Kind{Partition}, MeanInterval: time.Hour, MaxDuration: time.Second, MaxDown: 1, Severity: 1}, time.Hour)
	w.Block(0, 1)
	n.partition() // heals itself within a second
	w.runUntil(2 * time.Second)
	var heals []string
	for _, c := range w.calls {
		if _, call, _ := strings.Cut(c, " "); strings.HasPrefix(call, "heal") {
			heals = append(heals, call)
		}
	}
	require.Len(t, heals, 1)
	require.True(t, strings.HasPrefix(heals[0], "heal partition "), heals[0])

	first := DiskFaultConfig{StallProbability: 0.5, StallLatency: time.Millisecond}
	second := DiskFaultConfig{BitFlipProbability: 0.5}
	n.nextID++
	n.disk[0] = append(n.disk[0], diskFault{id: n.nextID, f: first})
	n.nextID++
	n.disk[0] = append(n.disk[0], diskFault{id: n.nextID, f: second})
	w.SetDiskFaults(0, second)
	n.healDisk(0, n.nextID-1) // the first ends: the second stays
	require.Equal(t, second, w.disk[0])
	n.healDisk(0, n.nextID)
	require.Equal(t, DiskFaultConfig{}, w.disk[0])
}
