package node

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testTimeout bounds every wait in this package's tests.
const testTimeout = 10 * time.Second

// startLoop runs a loop for the test and stops it at cleanup.
func startLoop(t testing.TB) *Loop {
	t.Helper()
	l := NewLoop()
	go l.Run()
	t.Cleanup(func() {
		l.Stop()
		select {
		case <-l.Done():
		case <-time.After(testTimeout):
			t.Error("loop did not stop")
		}
	})
	return l
}

// onLoop runs f on the loop and waits.
func onLoop(t testing.TB, l *Loop, f func()) {
	t.Helper()
	require.NoError(t, l.Call(f))
}

// waitFor receives from ch within testTimeout.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func TestLoopPostKeepsOrderPerPoster(t *testing.T) {
	l := startLoop(t)
	const posters, each = 4, 1000
	var got [posters][]int // only touched on the loop
	var wg sync.WaitGroup
	for p := range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				l.Post(func() { got[p] = append(got[p], i) })
			}
		}()
	}
	wg.Wait()
	onLoop(t, l, func() {})
	for p := range posters {
		require.Len(t, got[p], each)
		for i, v := range got[p] {
			require.Equal(t, i, v)
		}
	}
}

func TestLoopCallbackThatPostsNeverDeadlocks(t *testing.T) {
	l := startLoop(t)
	const depth = 100000
	done := make(chan int, 1)
	var step func(n int)
	step = func(n int) {
		if n == depth {
			done <- n
			return
		}
		l.Post(func() { step(n + 1) })
		l.Post(func() {}) // and some noise
	}
	l.Post(func() { step(0) })
	require.Equal(t, depth, waitFor(t, done, "nested posts"))
}

func TestLoopPostIsNeverInline(t *testing.T) {
	l := startLoop(t)
	ran := false
	onLoop(t, l, func() {
		l.Post(func() { ran = true })
		require.False(t, ran, "Post ran f inline")
		l.AfterFunc(0, func() { ran = true })
		require.False(t, ran, "AfterFunc(0) ran f inline")
	})
}

func TestTimersFireInDeadlineThenCreationOrder(t *testing.T) {
	l := startLoop(t)
	var order []int
	done := make(chan struct{})
	onLoop(t, l, func() {
		l.AfterFunc(30*time.Millisecond, func() { order = append(order, 3) })
		l.AfterFunc(10*time.Millisecond, func() { order = append(order, 1) })
		// Same deadline bucket: created in this order, fired in it.
		l.AfterFunc(20*time.Millisecond, func() { order = append(order, 2) })
		l.AfterFunc(-time.Second, func() { order = append(order, 0) })
		l.AfterFunc(40*time.Millisecond, func() { close(done) })
	})
	waitFor(t, done, "timers")
	onLoop(t, l, func() { require.Equal(t, []int{0, 1, 2, 3}, order) })

	// Timers created in one callback with the same duration may get the
	// same deadline; they must fire in creation order.
	var same []int
	done2 := make(chan struct{})
	onLoop(t, l, func() {
		for i := range 50 {
			l.AfterFunc(time.Millisecond, func() { same = append(same, i) })
		}
		l.AfterFunc(5*time.Millisecond, func() { close(done2) })
	})
	waitFor(t, done2, "same-duration timers")
	onLoop(t, l, func() {
		for i, v := range same {
			require.Equal(t, i, v)
		}
	})
}

// TestTimerStopAfterDeadlineBeforeCallback covers the race env.Timer.Stop
// must close: the deadline passed and the callback is queued on the loop,
// but has not run when Stop is called. Stop must return true and the
// callback must never run.
func TestTimerStopAfterDeadlineBeforeCallback(t *testing.T) {
	l := startLoop(t)
	fired := atomic.Bool{}
	result := make(chan bool, 1)
	l.Post(func() {
		tm := l.AfterFunc(time.Millisecond, func() { fired.Store(true) })
		// Queued before the timer's callback can be.
		l.Post(func() { result <- tm.Stop() })
		// Make the deadline pass while this callback still runs: the
		// next loop turn queues the timer's callback after the Stop.
		time.Sleep(5 * time.Millisecond)
	})
	require.True(t, waitFor(t, result, "stop"), "Stop after the deadline but before the callback must succeed")
	onLoop(t, l, func() {})
	time.Sleep(10 * time.Millisecond)
	onLoop(t, l, func() {})
	require.False(t, fired.Load(), "stopped timer fired")
}

func TestTimerStopSemantics(t *testing.T) {
	l := startLoop(t)
	fired := make(chan struct{}, 1)
	var tm interface{ Stop() bool }
	onLoop(t, l, func() { tm = l.AfterFunc(time.Millisecond, func() { fired <- struct{}{} }) })
	waitFor(t, fired, "timer")
	require.False(t, tm.Stop(), "Stop after firing")

	onLoop(t, l, func() { tm = l.AfterFunc(time.Hour, func() { t.Error("stopped timer fired") }) })
	require.True(t, tm.Stop())
	require.False(t, tm.Stop(), "second Stop")
	onLoop(t, l, func() { require.Empty(t, l.timers, "stopped timer left in the heap") })
}

// TestTimerStopFromOtherGoroutines races Stop against firing: every timer
// either fires or is stopped (Stop true), never both, never neither.
func TestTimerStopFromOtherGoroutines(t *testing.T) {
	l := startLoop(t)
	const n = 2000
	var fired, stopped atomic.Int64
	timers := make(chan interface{ Stop() bool }, n)
	for i := range n {
		d := time.Duration(i%5) * 100 * time.Microsecond
		timers <- l.AfterFunc(d, func() { fired.Add(1) })
	}
	close(timers)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tm := range timers {
				if tm.Stop() {
					stopped.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(testTimeout)
	for fired.Load()+stopped.Load() != n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
	onLoop(t, l, func() {})
	require.Equal(t, int64(n), fired.Load()+stopped.Load(), "fired=%d stopped=%d", fired.Load(), stopped.Load())
}

func TestLoopStopFromCallbackDropsTheRest(t *testing.T) {
	l := NewLoop()
	go l.Run()
	ranAfter := atomic.Bool{}
	l.Post(func() {
		l.Stop()
		l.Post(func() { ranAfter.Store(true) })
	})
	l.Post(func() { ranAfter.Store(true) })
	l.AfterFunc(0, func() { ranAfter.Store(true) })
	waitFor(t, l.Done(), "loop stop")
	require.False(t, ranAfter.Load(), "a callback ran after Stop")
	l.Post(func() { ranAfter.Store(true) }) // dropped, no panic, no block
	require.ErrorIs(t, l.Call(func() {}), ErrLoopStopped)
	l.Stop() // idempotent
	tm := l.AfterFunc(0, func() { ranAfter.Store(true) })
	require.False(t, tm.Stop(), "a timer created after Stop is already stopped")
}

func TestLoopMonotonicAdvances(t *testing.T) {
	l := NewLoop()
	a := l.Monotonic()
	time.Sleep(2 * time.Millisecond)
	require.Greater(t, l.Monotonic(), a)
}
