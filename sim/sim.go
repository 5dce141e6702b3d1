package sim

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"sort"
	"time"

	"github.com/strata-log/strata/core/assert"
)

// DefaultEpoch is the wall-clock instant virtual time 0 maps to, unless a
// Config says otherwise. A fixed epoch keeps record timestamps, and so the
// trace, identical across runs.
var DefaultEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Config configures a simulation run.
type Config struct {
	// Seed determines every random choice of the run.
	Seed uint64
	// Log receives the processes' log lines (stamped with virtual time);
	// nil discards them.
	Log io.Writer
	// Epoch is the wall-clock time at virtual time 0; zero means
	// DefaultEpoch.
	Epoch time.Time
	// BuggifyRate is the probability that a fault point (env.Buggify site)
	// is enabled for the run; an enabled site fires on each call with the
	// same probability (counted as a "buggify" fault). Zero disables
	// buggification. Scenarios draw it per seed (DrawBuggifyRate).
	BuggifyRate float64
}

// Sim is one simulation run. It is not safe for concurrent use: everything
// happens on the goroutine that calls Step or Run.
type Sim struct {
	cfg     Config
	now     time.Duration
	seq     uint64
	queue   eventQueue
	trace   traceHash
	events  uint64
	faults  map[string]uint64 // fault kind -> count; read only through sorted keys
	procs   []*Process        // in creation order
	byName  map[string]*Process
	buggify map[string]bool // site -> enabled for this run
	bugRand *rand.Rand

	network *Network
	bucket  *Bucket
	// mix describes the run's fault schedule (SetFaultMix).
	mix string
	// faultLog prints each injected fault beside the processes' logs when
	// the run has a log (-v), so that a failure reads in order.
	faultLog *slog.Logger
}

// SetFaultMix records the description of the run's fault schedule (the
// nemesis's mix) for the summary: a pinned seed keeps it, so that a change
// that re-draws the seed's faults is noticed.
func (s *Sim) SetFaultMix(desc string) { s.mix = desc }

// New returns a simulator at virtual time 0.
func New(cfg Config) *Sim {
	if cfg.Epoch.IsZero() {
		cfg.Epoch = DefaultEpoch
	}
	s := &Sim{
		cfg:     cfg,
		trace:   newTraceHash(),
		faults:  make(map[string]uint64),
		byName:  make(map[string]*Process),
		buggify: make(map[string]bool),
	}
	s.bugRand = s.Rand("buggify")
	s.network = newNetwork(s)
	s.bucket = newBucket(s)
	return s
}

// Seed is the run's seed.
func (s *Sim) Seed() uint64 { return s.cfg.Seed }

// Now is the current virtual time since the start of the run.
func (s *Sim) Now() time.Duration { return s.now }

// Epoch is the wall-clock time at virtual time 0.
func (s *Sim) Epoch() time.Time { return s.cfg.Epoch }

// Network is the simulated network all processes share.
func (s *Sim) Network() *Network { return s.network }

// Bucket is the simulated object store all processes share.
func (s *Sim) Bucket() *Bucket { return s.bucket }

// Rand returns a new random stream for the named component. Streams are
// derived from the seed and the name only, so creating, using or removing one
// stream never changes the numbers another produces: adding a node to a
// scenario does not reshuffle the other nodes' randomness.
func (s *Sim) Rand(stream string) *rand.Rand {
	h := fnv64(stream)
	return rand.New(rand.NewPCG(splitmix(s.cfg.Seed^h), splitmix(h+0x9e3779b97f4a7c15)))
}

// At schedules a simulator-level event (one that belongs to no process and
// so survives every crash) at virtual time at, or now if at is in the past.
func (s *Sim) At(at time.Duration, label string, fn func()) {
	if at < s.now {
		at = s.now
	}
	s.push(&event{at: at, label: label, fn: fn})
}

// maxTime is the latest virtual time; scheduling past it saturates there.
const maxTime = time.Duration(math.MaxInt64)

// After schedules a simulator-level event d from now.
func (s *Sim) After(d time.Duration, label string, fn func()) {
	s.At(s.now+d, label, fn)
}

// schedule queues fn to run d from now on behalf of owner's current
// incarnation; it is dropped if that incarnation has ended by then. A nil
// owner makes a simulator-level event. It returns the event so that it can be
// cancelled.
func (s *Sim) schedule(owner *Process, d time.Duration, label string, fn func()) *event {
	if d < 0 {
		d = 0
	}
	at := s.now + d
	if at < s.now {
		at = maxTime // saturate: a timer "never" stays in the far future
	}
	e := &event{at: at, label: label, owner: owner, fn: fn}
	if owner != nil {
		e.inc = owner.inc
	}
	s.push(e)
	return e
}

// cancel removes a pending event; it reports whether the event was pending.
func (s *Sim) cancel(e *event) bool {
	if e.index < 0 {
		return false
	}
	s.queue.remove(e)
	return true
}

func (s *Sim) push(e *event) {
	s.seq++
	e.seq = s.seq
	s.queue.push(e)
}

// Pending is the number of queued events.
func (s *Sim) Pending() int { return len(s.queue) }

// Step delivers the next event, advancing virtual time to it. It reports
// false when the queue is empty.
func (s *Sim) Step() bool {
	if len(s.queue) == 0 {
		return false
	}
	e := s.queue.pop()
	if e.at < s.now {
		assert.Never("virtual time moved backwards: %v -> %v", s.now, e.at)
	}
	s.now = e.at
	if p := e.owner; p != nil {
		if !p.up || e.inc != p.inc {
			return true // the incarnation that asked for it is gone
		}
		if p.pausedUntil > s.now {
			p.held = append(p.held, e)
			return true
		}
	}
	s.events++
	s.trace.fold(uint64(e.at), e.label)
	e.fn()
	return true
}

// RunUntil delivers every event due at or before t, then sets the clock to t.
// A panic in an event is returned as a *Failure naming the event, so the
// caller can print the replay command.
func (s *Sim) RunUntil(t time.Duration) (err error) {
	var cur *event
	defer func() {
		if r := recover(); r != nil {
			err = &Failure{At: s.now, Event: labelOf(cur), Value: r, Stack: string(debug.Stack())}
		}
	}()
	for len(s.queue) > 0 && s.queue[0].at <= t {
		cur = s.queue[0]
		s.Step()
	}
	if t > s.now {
		s.now = t
	}
	return nil
}

// RunFor runs for d of virtual time.
func (s *Sim) RunFor(d time.Duration) error { return s.RunUntil(s.now + d) }

func labelOf(e *event) string {
	if e == nil {
		return ""
	}
	return e.label
}

// Trace folds an observation into the trace hash (a checker's verdict, a
// value read by a client), so that two runs agree only if they saw the same.
func (s *Sim) Trace(what string) { s.trace.fold(uint64(s.now), what) }

// TraceHash is the running hash of every delivered event and observation.
func (s *Sim) TraceHash() uint64 { return s.trace.sum() }

// Events is the number of events delivered so far.
func (s *Sim) Events() uint64 { return s.events }

// Fault records that a fault of the given kind was injected; it counts
// toward the summary and folds into the trace.
func (s *Sim) Fault(kind, detail string) {
	s.faults[kind]++
	s.trace.fold(uint64(s.now), "fault:"+kind+":"+detail)
	if s.cfg.Log != nil {
		if s.faultLog == nil {
			s.faultLog = slog.New(newSimLogHandler(s, "nemesis"))
		}
		s.faultLog.Debug("fault", "kind", kind, "detail", detail)
	}
}

// FaultCount is a fault kind and how often it was injected.
type FaultCount struct {
	Kind  string
	Count uint64
}

// Faults lists the injected faults by kind, sorted by kind.
func (s *Sim) Faults() []FaultCount {
	kinds := make([]string, 0, len(s.faults))
	for k := range s.faults { // sorted below
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	out := make([]FaultCount, len(kinds))
	for i, k := range kinds {
		out[i] = FaultCount{Kind: k, Count: s.faults[k]}
	}
	return out
}

// Processes lists the processes in creation order.
func (s *Sim) Processes() []*Process { return append([]*Process(nil), s.procs...) }

// Process returns the named process or nil.
func (s *Sim) Process(name string) *Process { return s.byName[name] }

// buggifyFires decides a fault point: a site is enabled for the whole run
// with probability BuggifyRate the first time it is seen, and an enabled site
// fires with the same probability on each call.
func (s *Sim) buggifyFires(site string) bool {
	rate := s.cfg.BuggifyRate
	if rate <= 0 {
		return false
	}
	enabled, seen := s.buggify[site]
	if !seen {
		enabled = s.bugRand.Float64() < rate
		s.buggify[site] = enabled
	}
	if enabled && s.bugRand.Float64() < rate {
		s.Fault("buggify", site)
		return true
	}
	return false
}

// Bounds of DrawBuggifyRate.
const (
	minDrawnBuggifyRate = 0.02
	maxDrawnBuggifyRate = 0.25
)

// DrawBuggifyRate is the buggify rate of a scenario's run with seed: zero
// (off) in half the seeds, else uniform in [0.02, 0.25], as FoundationDB
// enables BUGGIFY in some runs and not others so that both the fault
// points and the code without them are exercised. It draws from a stream
// of its own, so that no other draw of the run moves.
func DrawBuggifyRate(seed uint64) float64 {
	r := rand.New(rand.NewPCG(seed, 0xb066_1f7))
	if r.IntN(2) == 0 {
		return 0
	}
	return minDrawnBuggifyRate + r.Float64()*(maxDrawnBuggifyRate-minDrawnBuggifyRate)
}

// Failure is a panic raised by an event, with where and when it happened.
type Failure struct {
	At    time.Duration
	Event string
	Value any
	Stack string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("panic at virtual time %v in event %q: %v", f.At, f.Event, f.Value)
}
