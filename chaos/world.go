// Package chaos runs the nemesis against real processes: a World
// (nemesis.World) over three `strata serve` processes, each in its own
// network namespace (proccluster.NetGroup) with its data on a tmpfs of
// its own, and the campaign of `make chaos SEED= DURATION=` (TestChaos):
// a kgo producer and consumer recorded into a
// linearizability.LogHistory while the nemesis kills (kill -9), pauses
// (SIGSTOP, SIGCONT), partitions, cuts one way, clogs (tc) the nodes and
// fills their disks, then the heal, a liveness probe and the
// replicated scenario's checks on the real client's history.
//
// The World runs the nemesis's callbacks one at a time on the goroutine
// that calls Run, at their times on the wall clock; its Now is the time
// each callback was due, and its answers (Up) are its own bookkeeping,
// not the processes', so a seed draws the same schedule whatever the
// processes do (TestSameSeedSameSchedule runs it against a recording backend).
package chaos

import (
	"container/heap"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/strata-log/strata/internal/proccluster"
	"github.com/strata-log/strata/nemesis"
)

// Backend is what a World does to the processes and the network. The
// World calls it from Run's goroutine only, one call at a time.
type Backend interface {
	// Kill SIGKILLs node i's process and waits until it is gone.
	Kill(i int)
	// Start starts node i's process again on its data directory.
	Start(i int)
	// Stop SIGSTOPs node i's process; Cont SIGCONTs it.
	Stop(i int)
	Cont(i int)
	// Block cuts the link from -> to; Unblock lifts it. The World calls
	// each once per change of the link's state.
	Block(from, to int)
	Unblock(from, to int)
	// SetClogs makes the clogs in force exactly clogs.
	SetClogs(clogs []proccluster.ClogSpec)
	// DiskUsed is how many bytes node i's files take on its disk.
	DiskUsed(i int) int64
	// FillDisk leaves node i's disk room for capacity bytes of the
	// node's files in all, counting those it has (a full disk: writes
	// past it fail with ENOSPC); EmptyDisk gives the room back.
	FillDisk(i int, capacity int64)
	EmptyDisk(i int)
}

// Capabilities are what a World of real processes can inject: process
// kills (no power loss: a killed process's writes stay in the page
// cache), process pauses (no machine freeze), partitions and one-way
// cuts, clogs, and a full disk (each node's data is on a filesystem of
// its own, which a disk fault fills). No other disk class, clocks,
// object store, or connection resets.
func Capabilities() nemesis.Capabilities {
	return nemesis.Capabilities{
		Kinds: []nemesis.Kind{nemesis.Kill, nemesis.Pause, nemesis.Partition, nemesis.OneWay, nemesis.Clog, nemesis.DiskFaults},
		Disk:  nemesis.DiskMix{Full: true},
	}
}

// World is a nemesis.World over n nodes driven through a Backend.
type World struct {
	b     Backend
	n     int
	seed  uint64
	sleep func(time.Duration) // waits on the wall clock (nothing, for a recorder)
	begin time.Time
	now   time.Duration // the running callback's due time
	seq   int
	queue timers

	up       []bool
	paused   []int // pauses in force per node
	life     []int // per node, counts kills: a pause's end outlives no kill
	blocked  map[[2]int]int
	cuts     []*cut
	clogs    map[int]proccluster.ClogSpec
	nextClog int
	full     []bool // per node: its disk is filled

	// Schedule is every primitive the nemesis called, with its time.
	Schedule []string
	Mix      string
	Faults   int // primitives that did something
	// MaxLag is the most a callback ended after its time on the wall
	// clock (a kill waits for the process to go, tc and ip take a while).
	MaxLag time.Duration
}

// NewWorld is a World of n nodes, all up, whose streams derive from
// seed. sleep waits on the wall clock; nil runs every timer at once
// (a recorder's world).
func NewWorld(b Backend, n int, seed uint64, sleep func(time.Duration)) *World {
	return &World{b: b, n: n, seed: seed, sleep: sleep, up: slices.Repeat([]bool{true}, n),
		paused: make([]int, n), life: make([]int, n), full: make([]bool, n), blocked: map[[2]int]int{}, clogs: map[int]proccluster.ClogSpec{}}
}

type timer struct {
	at    time.Duration
	seq   int
	label string
	f     func()
}

type timers []timer

func (q timers) Len() int { return len(q) }
func (q timers) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q timers) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *timers) Push(x any)   { *q = append(*q, x.(timer)) }
func (q *timers) Pop() any {
	old := *q
	t := old[len(old)-1]
	*q = old[:len(old)-1]
	return t
}

// Run runs the timers due up to until in the order of their times (ties
// in the order they were set), each when the wall clock since the first
// Run reaches its time; it returns when none is left before until.
func (w *World) Run(until time.Duration) {
	if w.begin.IsZero() {
		w.begin = time.Now()
	}
	for len(w.queue) > 0 && w.queue[0].at <= until {
		t := heap.Pop(&w.queue).(timer)
		if w.sleep != nil {
			if d := t.at - time.Since(w.begin); d > 0 {
				w.sleep(d)
			}
		}
		w.now = t.at
		t.f()
		if w.sleep != nil {
			w.MaxLag = max(w.MaxLag, time.Since(w.begin)-t.at)
		}
	}
}

func (w *World) record(format string, args ...any) {
	w.Schedule = append(w.Schedule, fmt.Sprintf("%9s ", w.now.Round(time.Millisecond))+fmt.Sprintf(format, args...))
}

// Now is the time the running callback was due (the schedule's time, not
// the wall clock's, which may lag behind a slow Start).
func (w *World) Now() time.Duration { return w.now }

// After runs f in Run d from now.
func (w *World) After(d time.Duration, label string, f func()) {
	w.seq++
	heap.Push(&w.queue, timer{at: w.now + d, seq: w.seq, label: label, f: f})
}

// Rand is the seeded stream named stream.
func (w *World) Rand(stream string) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(stream))
	return rand.New(rand.NewPCG(w.seed, h.Sum64()))
}

func (w *World) Trace(string) {}
func (w *World) Fault(kind, detail string) {
	w.Faults++
	w.record("%s %s", kind, detail)
}
func (w *World) SetFaultMix(desc string)                   { w.Mix = desc }
func (w *World) Capabilities() nemesis.Capabilities        { return Capabilities() }
func (w *World) Nodes() int                                { return w.n }
func (w *World) Name(i int) string                         { return fmt.Sprintf("n%d", i+1) }
func (w *World) Up(i int) bool                             { return w.up[i] }
func (w *World) Frozen(int) bool                           { return false }
func (w *World) DiskSurvivable(int) bool                   { return false }
func (w *World) FilesystemFailed(int) bool                 { return false }
func (w *World) PowerOff(int)                              { panic("chaos: no power loss") }
func (w *World) PowerCycle(int)                            { panic("chaos: no power loss") }
func (w *World) ReplaceDisk(int)                           { panic("chaos: no power loss") }
func (w *World) Freeze(int, time.Duration)                 { panic("chaos: no machine freeze") }
func (w *World) ResetConns(int)                            { panic("chaos: no connection resets") }
func (w *World) ResetConn(int, int)                        { panic("chaos: no connection resets") }
func (w *World) SetBucketFaults(nemesis.BucketFaultConfig) { panic("chaos: no object store") }
func (w *World) JumpClock(int, time.Duration)              { panic("chaos: no clocks") }
func (w *World) SetClockRate(int, float64)                 { panic("chaos: no clocks") }

// DiskUsedBytes is what node i's files take on its disk.
func (w *World) DiskUsedBytes(i int) int64 { return w.b.DiskUsed(i) }

// SetDiskFaults fills node i's disk to f.CapacityBytes, or empties it
// where f is none; a full disk is the only disk class here
// (Capabilities), so a disk fault of the seed's other draw does nothing.
func (w *World) SetDiskFaults(i int, f nemesis.DiskFaultConfig) {
	if rest := (nemesis.DiskFaultConfig{PageCrash: f.PageCrash, CapacityBytes: f.CapacityBytes}); f != rest || f.PageCrash {
		panic(fmt.Sprintf("chaos: a disk fault this world cannot inject: %+v", f))
	}
	switch {
	case f.CapacityBytes > 0:
		w.record("fill the disk of %s", w.Name(i))
		w.full[i] = true
		w.b.FillDisk(i, f.CapacityBytes)
	case w.full[i]:
		w.record("empty the disk of %s", w.Name(i))
		w.full[i] = false
		w.b.EmptyDisk(i)
	default:
		w.record("disk %s: nothing to inject", w.Name(i))
	}
}

// Kill SIGKILLs node i's process.
func (w *World) Kill(i int) {
	if !w.up[i] {
		w.record("kill %s: already down", w.Name(i))
		return
	}
	w.Faults++
	w.record("kill -9 %s", w.Name(i))
	w.up[i] = false
	w.paused[i] = 0
	w.life[i]++
	w.b.Kill(i)
}

// Start restarts node i's process on its data directory.
func (w *World) Start(i int) {
	w.record("start %s", w.Name(i))
	if w.up[i] {
		return
	}
	w.up[i] = true
	w.b.Start(i)
}

// Pause SIGSTOPs node i's process, and SIGCONTs it d later unless
// another pause still holds it then or it was killed meanwhile.
func (w *World) Pause(i int, d time.Duration) {
	if !w.up[i] {
		w.record("pause %s for %v: down", w.Name(i), d)
		return
	}
	w.Faults++
	w.record("SIGSTOP %s for %v", w.Name(i), d.Round(time.Millisecond))
	if w.paused[i] == 0 {
		w.b.Stop(i)
	}
	w.paused[i]++
	life := w.life[i]
	w.After(d, "chaos:resume", func() {
		if w.life[i] != life || w.paused[i] == 0 {
			return
		}
		w.paused[i]--
		if w.paused[i] == 0 {
			w.record("SIGCONT %s", w.Name(i))
			w.b.Cont(i)
		}
	})
}

// cut is one injected set of cut links.
type cut struct {
	w      *World
	what   string
	links  [][2]int
	healed bool
}

// Heal lifts the cut's links that no other cut holds.
func (c *cut) Heal() {
	if c.healed {
		return
	}
	c.healed = true
	c.w.record("heal %s", c.what)
	for _, l := range c.links {
		c.w.blocked[l]--
		if c.w.blocked[l] == 0 {
			delete(c.w.blocked, l)
			c.w.b.Unblock(l[0], l[1])
		}
	}
}

func (w *World) cutLinks(what string, links [][2]int) nemesis.Cut {
	w.Faults++
	w.record("cut %s", what)
	c := &cut{w: w, what: what, links: links}
	for _, l := range links {
		if w.blocked[l] == 0 {
			w.b.Block(l[0], l[1])
		}
		w.blocked[l]++
	}
	w.cuts = append(w.cuts, c)
	return c
}

func (w *World) linkNames(links [][2]int) string {
	s := make([]string, len(links))
	for i, l := range links {
		s[i] = w.Name(l[0]) + ">" + w.Name(l[1])
	}
	return strings.Join(s, " ")
}

// Partition cuts every link between a and b both ways.
func (w *World) Partition(a, b []int) nemesis.Cut {
	var links [][2]int
	for _, x := range a {
		for _, y := range b {
			links = append(links, [2]int{x, y}, [2]int{y, x})
		}
	}
	return w.cutLinks(fmt.Sprintf("partition %v | %v", w.names(a), w.names(b)), links)
}

func (w *World) names(is []int) []string {
	out := make([]string, len(is))
	for k, i := range is {
		out[k] = w.Name(i)
	}
	return out
}

// CutLinks cuts links as one fault.
func (w *World) CutLinks(kind string, links [][2]int) nemesis.Cut {
	return w.cutLinks(kind+" "+w.linkNames(links), links)
}

// Block cuts from -> to.
func (w *World) Block(from, to int) nemesis.Cut {
	return w.cutLinks("one-way "+w.linkNames([][2]int{{from, to}}), [][2]int{{from, to}})
}

// Clog troubles all of node i's traffic for d.
func (w *World) Clog(i int, d time.Duration) {
	w.clog(proccluster.ClogSpec{Node: i, To: -1}, "clog "+w.Name(i), d)
}

// ClogLink troubles what from sends to to for d.
func (w *World) ClogLink(from, to int, d time.Duration) {
	w.clog(proccluster.ClogSpec{Node: from, To: to}, "clog "+w.Name(from)+">"+w.Name(to), d)
}

func (w *World) clog(c proccluster.ClogSpec, what string, d time.Duration) {
	w.Faults++
	w.record("%s for %v", what, d.Round(time.Millisecond))
	id := w.nextClog
	w.nextClog++
	w.clogs[id] = c
	w.b.SetClogs(w.clogsInForce())
	w.After(d, "chaos:unclog", func() {
		if _, ok := w.clogs[id]; !ok {
			return
		}
		w.record("end %s", what)
		delete(w.clogs, id)
		w.b.SetClogs(w.clogsInForce())
	})
}

// clogsInForce lists the clogs in the order they began.
func (w *World) clogsInForce() []proccluster.ClogSpec {
	ids := make([]int, 0, len(w.clogs))
	for id := range w.clogs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]proccluster.ClogSpec, len(ids))
	for k, id := range ids {
		out[k] = w.clogs[id]
	}
	return out
}

// HealNetwork lifts every cut and clog.
func (w *World) HealNetwork() {
	w.record("heal network")
	for _, c := range w.cuts {
		c.Heal()
	}
	w.cuts = nil
	if len(w.clogs) > 0 {
		clear(w.clogs)
		w.b.SetClogs(nil)
	}
}

// HealEverything ends whatever is still in force after the nemesis's
// own heal: pauses whose end was dropped, cuts and clogs, full disks,
// and nodes down.
func (w *World) HealEverything() {
	for i := range w.n {
		if w.up[i] && w.paused[i] > 0 {
			w.paused[i] = 0
			w.record("SIGCONT %s", w.Name(i))
			w.b.Cont(i)
		}
	}
	w.HealNetwork()
	for i := range w.n {
		if w.full[i] {
			w.SetDiskFaults(i, nemesis.DiskFaultConfig{})
		}
		if !w.up[i] {
			w.Start(i)
		}
	}
	w.queue = nil
}
