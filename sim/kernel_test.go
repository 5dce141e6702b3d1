package sim

import (
	"math"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/strata-log/strata/core/env"
)

// TestQueueOrder: whatever order events are pushed in, they are delivered
// sorted by (time, insertion sequence), and virtual time never goes back.
func TestQueueOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := New(Config{Seed: rapid.Uint64().Draw(t, "seed")})
		type ev struct {
			at  time.Duration
			seq int
		}
		var want, got []ev
		n := rapid.IntRange(0, 200).Draw(t, "n")
		for i := 0; i < n; i++ {
			at := time.Duration(rapid.IntRange(0, 50).Draw(t, "at")) * time.Millisecond
			e := ev{at: at, seq: i}
			want = append(want, e)
			s.At(at, "e", func() {
				require.Equal(t, e.at, s.Now())
				got = append(got, e)
			})
		}
		// Events scheduled by events land after everything already due at
		// the same instant.
		sort.SliceStable(want, func(i, j int) bool { return want[i].at < want[j].at })
		require.NoError(t, s.RunUntil(time.Second))
		require.Equal(t, want, got)
		require.Equal(t, uint64(n), s.Events())
	})
}

func TestEventsScheduledAtSameInstantRunAfterQueuedOnes(t *testing.T) {
	s := New(Config{Seed: 1})
	var order []string
	s.At(0, "a", func() {
		order = append(order, "a")
		s.After(0, "c", func() { order = append(order, "c") })
	})
	s.At(0, "b", func() { order = append(order, "b") })
	require.NoError(t, s.RunFor(time.Millisecond))
	require.Equal(t, []string{"a", "b", "c"}, order)
}

func TestRandStreamsAreIndependent(t *testing.T) {
	draw := func(s *Sim, name string) []uint64 {
		r := s.Rand(name)
		out := make([]uint64, 8)
		for i := range out {
			out[i] = r.Uint64()
		}
		return out
	}
	a := New(Config{Seed: 7})
	b := New(Config{Seed: 7})
	_ = draw(b, "other") // using another stream first must not matter
	require.Equal(t, draw(a, "n1"), draw(b, "n1"))
	require.NotEqual(t, draw(a, "n1"), draw(a, "n2"))
	require.NotEqual(t, draw(New(Config{Seed: 8}), "n1"), draw(a, "n1"))
}

func TestTimerStop(t *testing.T) {
	s := New(Config{Seed: 1})
	fired := 0
	var tm env.Timer
	p := s.AddProcess("n1", func(e env.Env) {
		tm = e.AfterFunc(10*time.Millisecond, func() { fired++ })
		e.AfterFunc(5*time.Millisecond, func() { require.True(t, tm.Stop()) })
		e.AfterFunc(20*time.Millisecond, func() { require.False(t, tm.Stop()) })
	})
	p.Start()
	require.NoError(t, s.RunFor(time.Second))
	require.Zero(t, fired)
}

func TestCrashDropsPendingCallbacks(t *testing.T) {
	s := New(Config{Seed: 1})
	fired := map[uint64]int{}
	var p *Process
	p = s.AddProcess("n1", func(e env.Env) {
		inc := p.Incarnation()
		e.AfterFunc(10*time.Millisecond, func() { fired[inc]++ })
		e.Post(func() { fired[inc] += 10 })
	})
	p.Start()
	require.NoError(t, s.RunFor(time.Millisecond)) // start and post ran
	p.Crash()
	require.Nil(t, p.Env())
	require.NoError(t, s.RunFor(time.Second))
	require.Equal(t, map[uint64]int{1: 10}, fired, "the timer of the crashed incarnation never fires")
	p.Start()
	require.NoError(t, s.RunFor(time.Second))
	require.Equal(t, map[uint64]int{1: 10, 2: 11}, fired)
	require.Equal(t, uint64(2), p.Incarnation())
}

func TestPauseHoldsEventsInOrder(t *testing.T) {
	s := New(Config{Seed: 1})
	var at []time.Duration
	var seq []int
	p := s.AddProcess("n1", func(e env.Env) {
		for i := 0; i < 3; i++ {
			i := i
			e.AfterFunc(time.Duration(10+i)*time.Millisecond, func() {
				at = append(at, s.Now())
				seq = append(seq, i)
			})
		}
	})
	p.Start()
	require.NoError(t, s.RunFor(time.Millisecond))
	p.Pause(100 * time.Millisecond)
	require.True(t, p.Paused())
	require.NoError(t, s.RunFor(time.Second))
	require.Equal(t, []int{0, 1, 2}, seq)
	for _, a := range at {
		require.Equal(t, 101*time.Millisecond, a, "held events run when the pause ends")
	}
}

func TestClockSkewAndJump(t *testing.T) {
	s := New(Config{Seed: 1})
	var e0 env.Env
	p := s.AddProcess("n1", func(e env.Env) { e0 = e })
	p.Start()
	require.NoError(t, s.RunFor(time.Second))
	require.Equal(t, time.Second, e0.Monotonic())
	require.Equal(t, DefaultEpoch.Add(time.Second), e0.Now())

	p.SetClockRate(2)
	require.NoError(t, s.RunFor(time.Second))
	require.Equal(t, 3*time.Second, e0.Monotonic())

	p.JumpClock(-time.Hour)
	require.Equal(t, 3*time.Second, e0.Monotonic(), "a wall-clock step leaves the monotonic clock alone")
	require.Equal(t, DefaultEpoch.Add(3*time.Second-time.Hour), e0.Now())

	// A timer of 1 s local time takes 0.5 s of virtual time at rate 2.
	fired := time.Duration(0)
	e0.AfterFunc(time.Second, func() { fired = s.Now() })
	start := s.Now()
	require.NoError(t, s.RunFor(2*time.Second))
	require.Equal(t, 500*time.Millisecond, fired-start)
}

func TestPanicBecomesFailure(t *testing.T) {
	s := New(Config{Seed: 1})
	s.At(time.Millisecond, "boom", func() { panic("kaboom") })
	err := s.RunFor(time.Second)
	var f *Failure
	require.ErrorAs(t, err, &f)
	require.Equal(t, "boom", f.Event)
	require.Equal(t, time.Millisecond, f.At)
}

func TestTraceHashDependsOnEvents(t *testing.T) {
	run := func(labels ...string) uint64 {
		s := New(Config{Seed: 1})
		for i, l := range labels {
			s.At(time.Duration(i), l, func() {})
		}
		require.NoError(t, s.RunFor(time.Second))
		return s.TraceHash()
	}
	require.Equal(t, run("a", "b"), run("a", "b"))
	require.NotEqual(t, run("a", "b"), run("b", "a"))
	require.NotEqual(t, run("ab", "c"), run("a", "bc"))
}

func BenchmarkEventThroughput(b *testing.B) {
	s := New(Config{Seed: 1})
	remaining := b.N
	var step func()
	step = func() {
		remaining--
		if remaining > 0 {
			s.After(time.Microsecond, "tick", step)
		}
	}
	// Keep a realistic queue depth: 1,000 concurrent chains.
	chains := 1000
	if chains > b.N {
		chains = b.N
	}
	b.ResetTimer()
	for i := 0; i < chains; i++ {
		s.After(time.Duration(i), "tick", step)
	}
	for remaining > 0 && s.Step() {
	}
	b.ReportMetric(float64(s.Events())/b.Elapsed().Seconds(), "events/s")
}

// TestTimerAtNeverSaturates: a timer for the largest duration (a deadline
// "never", as quorum's NextDeadline gives) neither fires nor moves virtual
// time backwards, at any clock rate (kraft seed 364 overflowed here).
func TestTimerAtNeverSaturates(t *testing.T) {
	for _, rate := range []float64{1, 0.9, 1.1} {
		s := New(Config{Seed: 1})
		fired := 0
		p := s.AddProcess("n1", func(e env.Env) {
			e.AfterFunc(time.Duration(math.MaxInt64), func() { fired++ })
			e.AfterFunc(time.Duration(math.MaxInt64)-time.Second, func() { fired++ })
		})
		p.SetClockRate(rate)
		p.Start()
		require.NoError(t, s.RunFor(time.Minute), "rate %v", rate)
		require.Zero(t, fired, "rate %v", rate)
		require.Equal(t, time.Minute, s.Now(), "rate %v", rate)
	}
}
