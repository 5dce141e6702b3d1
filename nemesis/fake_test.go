package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// fakeWorld is a World that records every call the nemesis makes, with its
// time, and keeps just enough state to answer: which nodes are up, which
// filesystems failed, each disk's faults. Its timers run in time order
// (ties in the order they were set) when the test calls runUntil.
type fakeWorld struct {
	seed   uint64
	caps   Capabilities
	now    time.Duration
	timers []fakeTimer
	seq    int

	up         []bool
	failed     []bool
	survivable []bool
	disk       []DiskFaultConfig
	bucket     BucketFaultConfig
	calls      []string
}

type fakeTimer struct {
	at  time.Duration
	seq int
	f   func()
}

func newFakeWorld(seed uint64, nodes int, caps Capabilities) *fakeWorld {
	w := &fakeWorld{seed: seed, caps: caps, up: make([]bool, nodes), failed: make([]bool, nodes),
		survivable: make([]bool, nodes), disk: make([]DiskFaultConfig, nodes)}
	for i := range w.up {
		w.up[i] = true
	}
	return w
}

// runUntil runs the timers due by t, then sets the time to t.
func (w *fakeWorld) runUntil(t time.Duration) {
	for len(w.timers) > 0 {
		next := slices.MinFunc(w.timers, func(a, b fakeTimer) int {
			if a.at != b.at {
				return int(a.at - b.at)
			}
			return a.seq - b.seq
		})
		if next.at > t {
			break
		}
		w.timers = slices.DeleteFunc(w.timers, func(x fakeTimer) bool { return x.seq == next.seq })
		w.now = next.at
		next.f()
	}
	w.now = max(w.now, t)
}

func (w *fakeWorld) record(format string, args ...any) {
	w.calls = append(w.calls, fmt.Sprintf("%v ", w.now)+fmt.Sprintf(format, args...))
}

// called reports whether some recorded call starts with method.
func (w *fakeWorld) called(method string) bool {
	return slices.ContainsFunc(w.calls, func(c string) bool {
		_, call, _ := strings.Cut(c, " ")
		return strings.HasPrefix(call, method+" ")
	})
}

func (w *fakeWorld) Now() time.Duration { return w.now }
func (w *fakeWorld) After(d time.Duration, _ string, f func()) {
	w.seq++
	w.timers = append(w.timers, fakeTimer{at: w.now + max(d, 0), seq: w.seq, f: f})
}
func (w *fakeWorld) Rand(stream string) *rand.Rand {
	var h uint64
	for _, c := range stream {
		h = h*31 + uint64(c)
	}
	return rand.New(rand.NewPCG(w.seed, h))
}
func (w *fakeWorld) Trace(string)                 {}
func (w *fakeWorld) Fault(kind, detail string)    { w.record("fault %s %s", kind, detail) }
func (w *fakeWorld) SetFaultMix(string)           {}
func (w *fakeWorld) Capabilities() Capabilities   { return w.caps }
func (w *fakeWorld) Nodes() int                   { return len(w.up) }
func (w *fakeWorld) Name(i int) string            { return fmt.Sprintf("n%d", i+1) }
func (w *fakeWorld) Up(i int) bool                { return w.up[i] }
func (w *fakeWorld) Frozen(int) bool              { return false }
func (w *fakeWorld) Kill(i int)                   { w.record("kill %d", i); w.up[i] = false }
func (w *fakeWorld) PowerOff(i int)               { w.record("power-off %d", i); w.up[i] = false }
func (w *fakeWorld) ReplaceDisk(i int)            { w.record("replace-disk %d", i) }
func (w *fakeWorld) Start(i int)                  { w.record("start %d", i); w.up[i] = true }
func (w *fakeWorld) Pause(i int, d time.Duration) { w.record("pause %d %v", i, d) }
func (w *fakeWorld) Freeze(i int, d time.Duration) {
	w.record("freeze %d %v", i, d)
}
func (w *fakeWorld) PowerCycle(i int) {
	w.record("power-cycle %d", i)
	w.up[i], w.failed[i] = false, false
}

// fakeCut records its heal.
type fakeCut struct {
	w    *fakeWorld
	what string
}

func (c fakeCut) Heal() { c.w.record("heal %s", c.what) }

func (w *fakeWorld) cut(format string, args ...any) Cut {
	what := fmt.Sprintf(format, args...)
	w.record("%s", what)
	return fakeCut{w, what}
}
func (w *fakeWorld) Partition(a, b []int) Cut { return w.cut("partition %v|%v", a, b) }
func (w *fakeWorld) CutLinks(kind string, links [][2]int) Cut {
	return w.cut("cut %s %v", kind, links)
}
func (w *fakeWorld) Block(from, to int) Cut { return w.cut("block %d>%d", from, to) }
func (w *fakeWorld) Clog(i int, d time.Duration) {
	w.record("clog %d %v", i, d)
}
func (w *fakeWorld) ClogLink(from, to int, d time.Duration) {
	w.record("clog %d>%d %v", from, to, d)
}
func (w *fakeWorld) ResetConns(i int)   { w.record("reset %d", i) }
func (w *fakeWorld) ResetConn(i, k int) { w.record("reset-conn %d %d", i, k) }
func (w *fakeWorld) HealNetwork()       { w.record("heal-network") }
func (w *fakeWorld) SetDiskFaults(i int, f DiskFaultConfig) {
	w.record("disk %d %+v", i, f)
	w.disk[i] = f
}
func (w *fakeWorld) DiskUsedBytes(int) int64          { return 1 << 20 }
func (w *fakeWorld) DiskSurvivable(i int) bool        { return w.survivable[i] }
func (w *fakeWorld) FilesystemFailed(i int) bool      { return w.failed[i] }
func (w *fakeWorld) JumpClock(i int, d time.Duration) { w.record("jump-clock %d %v", i, d) }
func (w *fakeWorld) SetClockRate(i int, rate float64) {
	w.record("clock-rate %d %.6f", i, rate)
}
func (w *fakeWorld) SetBucketFaults(f BucketFaultConfig) {
	w.record("bucket %+v", f)
	w.bucket = f
}

var _ World = (*fakeWorld)(nil)
