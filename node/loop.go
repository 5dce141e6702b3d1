package node

import (
	"container/heap"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-log/strata/core/env"
)

// ErrLoopStopped is returned by Loop.Call when the loop stopped before the
// function could run.
var ErrLoopStopped = errors.New("loop stopped")

// Loop is one event loop: a goroutine (the one calling Run) that runs posted
// callbacks and due timers one at a time, in order. Core state belongs to
// exactly one Loop and is touched only from its callbacks.
//
// Post and AfterFunc may be called from any goroutine. Callbacks run in the
// order they were posted; a timer's callback is queued when its deadline
// passes, timers due at the same instant in the order they were created.
type Loop struct {
	start time.Time

	mu    sync.Mutex
	queue []func()
	// queuedAt is when queue last went from empty to non-empty (on the
	// Monotonic clock): the arrival of its oldest callback.
	queuedAt time.Duration
	timers   timerHeap
	nextSeq  uint64 // creation order of timers, to break deadline ties
	// stopped is written under mu and read without it by Run between
	// callbacks, so that a Stop from inside a callback takes effect at once.
	stopped atomic.Bool

	wake chan struct{} // capacity 1: "something changed, look again"
	done chan struct{} // closed when Run returns

	// lag, when set, is told at every turn how long the oldest callback
	// of the turn waited; it runs on the loop goroutine between callbacks.
	lag func(time.Duration)
}

// SetLagObserver makes the loop report, once per turn, how long the
// oldest callback it is about to run waited (since it was posted, or
// since its timer came due). Call it before Run or from the loop.
func (l *Loop) SetLagObserver(f func(time.Duration)) { l.lag = f }

// NewLoop returns a loop whose Monotonic clock starts now. Call Run to
// start it.
func NewLoop() *Loop {
	return &Loop{
		start: time.Now(),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
}

// Monotonic is the time elapsed since the loop was created, on the
// monotonic clock.
func (l *Loop) Monotonic() time.Duration { return time.Since(l.start) }

// Post queues f to run on the loop. It never blocks and never runs f
// inline; after Stop, f is dropped (a stopped incarnation gets no more
// callbacks).
func (l *Loop) Post(f func()) {
	l.mu.Lock()
	if l.stopped.Load() {
		l.mu.Unlock()
		return
	}
	if len(l.queue) == 0 {
		l.queuedAt = l.Monotonic()
	}
	l.queue = append(l.queue, f)
	l.mu.Unlock()
	l.signal()
}

// AfterFunc runs f on the loop once d has elapsed on the Monotonic clock;
// d <= 0 means as soon as possible, but never inline. See env.Timer for
// Stop's guarantee.
func (l *Loop) AfterFunc(d time.Duration, f func()) env.Timer {
	t := &loopTimer{loop: l, f: f, index: -1}
	l.mu.Lock()
	if l.stopped.Load() {
		t.state = timerStopped
		l.mu.Unlock()
		return t
	}
	t.deadline = l.Monotonic() + max(d, 0)
	t.seq = l.nextSeq
	l.nextSeq++
	heap.Push(&l.timers, t)
	l.mu.Unlock()
	l.signal()
	return t
}

// Call runs f on the loop and waits for it to return. It returns
// ErrLoopStopped, without running f, when the loop stops first. It must not
// be called from the loop itself (it would wait for itself), and the loop
// must be running or about to run.
func (l *Loop) Call(f func()) error {
	ran := make(chan struct{})
	l.Post(func() {
		f()
		close(ran)
	})
	select {
	case <-ran:
		return nil
	case <-l.done:
		select {
		case <-ran:
			return nil
		default:
			return ErrLoopStopped
		}
	}
}

// Stop makes Run return after the callback running now (if any); queued
// callbacks and pending timers are dropped. It may be called from any
// goroutine, including from a callback, and more than once. It does not
// wait: use Done for that.
func (l *Loop) Stop() {
	l.mu.Lock()
	l.stopped.Store(true)
	l.queue = nil
	for _, t := range l.timers {
		t.index = -1
	}
	l.timers = nil
	l.mu.Unlock()
	l.signal()
}

// Done is closed when Run has returned.
func (l *Loop) Done() <-chan struct{} { return l.done }

// Run runs callbacks until Stop. It must be called exactly once.
func (l *Loop) Run() {
	defer close(l.done)
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	var batch []func()
	for {
		l.mu.Lock()
		if l.stopped.Load() {
			l.mu.Unlock()
			return
		}
		now := l.Monotonic()
		oldest := now
		if len(l.queue) > 0 {
			oldest = l.queuedAt
		}
		for len(l.timers) > 0 && l.timers[0].deadline <= now {
			t := heap.Pop(&l.timers).(*loopTimer)
			oldest = min(oldest, t.deadline)
			l.queue = append(l.queue, t.fire)
		}
		// Swap buffers: callbacks posted while this batch runs go to the
		// next one, after everything already queued.
		batch, l.queue = l.queue, batch[:0]
		wait := time.Duration(-1)
		if len(batch) == 0 && len(l.timers) > 0 {
			wait = l.timers[0].deadline - now
		}
		l.mu.Unlock()

		if len(batch) > 0 {
			if l.lag != nil {
				l.lag(max(now-oldest, 0))
			}
			for i, f := range batch {
				if l.stopped.Load() {
					clear(batch)
					return
				}
				batch[i] = nil // let the closure be collected early
				f()
			}
			batch = batch[:0]
			continue
		}
		if wait < 0 {
			<-l.wake
			continue
		}
		idle.Reset(wait)
		select {
		case <-l.wake:
		case <-idle.C:
		}
		idle.Stop()
	}
}

func (l *Loop) signal() {
	select {
	case l.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

const (
	timerPending = iota
	timerFired
	timerStopped
)

// loopTimer is a pending AfterFunc. Its fields are guarded by loop.mu.
type loopTimer struct {
	loop     *Loop
	f        func()
	deadline time.Duration // on the loop's Monotonic clock
	seq      uint64
	index    int // in loop.timers, -1 once popped or removed
	state    int
}

// Stop implements env.Timer. A timer whose deadline passed but whose
// callback has not run yet can still be stopped: fire checks the state on
// the loop, so after Stop returns true the callback never runs.
func (t *loopTimer) Stop() bool {
	l := t.loop
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.state != timerPending {
		return false
	}
	t.state = timerStopped
	if t.index >= 0 {
		heap.Remove(&l.timers, t.index)
	}
	return true
}

// fire runs on the loop once the timer is due.
func (t *loopTimer) fire() {
	l := t.loop
	l.mu.Lock()
	if t.state != timerPending {
		l.mu.Unlock()
		return
	}
	t.state = timerFired
	l.mu.Unlock()
	t.f()
}

// timerHeap orders timers by deadline, then creation.
type timerHeap []*loopTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*loopTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}
