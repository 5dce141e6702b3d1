package work_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/work"
	"github.com/strata-log/strata/sim"
)

// onSim runs f as the first event of a simulated process and then the
// simulation for a minute of virtual time.
func onSim(t *testing.T, seed uint64, f func(e env.Env)) *sim.Sim {
	t.Helper()
	s := sim.New(sim.Config{Seed: seed})
	s.AddProcess("n1", f).Start()
	require.NoError(t, s.RunFor(time.Minute))
	return s
}

// recorder notes the order in which jobs ran and completed, and checks
// that no more than limit run at once.
type recorder struct {
	t               *testing.T
	running, peak   int
	done            []string
	runningPerQueue map[string]int
}

func (r *recorder) job(q *work.Queue, name string, cost time.Duration) {
	queue := name[:1]
	q.Submit(work.Job{Cost: cost, Run: func() {
		r.running++
		r.runningPerQueue[queue]++
		r.peak = max(r.peak, r.running)
		// The simulator runs a job and its done in one event, so the
		// counts are released at done.
	}, Done: func() {
		r.running--
		r.runningPerQueue[queue]--
		r.done = append(r.done, name)
	}})
}

func TestQueueCompletesInSubmissionOrder(t *testing.T) {
	var r *recorder
	onSim(t, 1, func(e env.Env) {
		r = &recorder{t: t, runningPerQueue: map[string]int{}}
		p := work.NewPool(e, work.Config{Limit: 4, PerQueue: 4})
		q := p.NewQueue()
		// Decreasing costs: the workers finish the later jobs first.
		for i := range 4 {
			r.job(q, fmt.Sprintf("a%d", i), time.Duration(4-i)*time.Millisecond)
		}
	})
	require.Equal(t, []string{"a0", "a1", "a2", "a3"}, r.done)
}

func TestQueuesShareWorkersRoundRobin(t *testing.T) {
	var r *recorder
	var stats work.Stats
	onSim(t, 1, func(e env.Env) {
		r = &recorder{t: t, runningPerQueue: map[string]int{}}
		p := work.NewPool(e, work.Config{Limit: 1, PerQueue: 1})
		flood, other := p.NewQueue(), p.NewQueue()
		for i := range 50 {
			r.job(flood, fmt.Sprintf("f%02d", i), 10*time.Millisecond)
		}
		// A second client arrives behind fifty heavy jobs of the first.
		e.AfterFunc(25*time.Millisecond, func() {
			r.job(other, "o", time.Millisecond)
		})
		e.AfterFunc(time.Second, func() { stats = p.Stats() })
	})
	at := -1
	for i, name := range r.done {
		if name == "o" {
			at = i
		}
	}
	// f00..f02 started (or ran) before "o" was submitted at 25 ms with
	// one worker; o is next in line after the job running then.
	require.Equal(t, 3, at, "the other queue's job waited behind %d flood jobs: %v", at, r.done)
	require.Equal(t, uint64(51), stats.Started)
	require.Equal(t, 0, stats.Queued)
}

func TestPoolBoundsRunningJobs(t *testing.T) {
	var peak int
	onSim(t, 3, func(e env.Env) {
		p := work.NewPool(e, work.Config{Limit: 2, PerQueue: 2})
		qs := []*work.Queue{p.NewQueue(), p.NewQueue(), p.NewQueue()}
		for i := range 30 {
			q := qs[i%3]
			q.Submit(work.Job{Cost: time.Millisecond, Run: func() {}, Done: func() {}})
			peak = max(peak, p.Running())
		}
	})
	require.Equal(t, 2, peak)
}

func TestPerQueueShare(t *testing.T) {
	var peak int
	onSim(t, 4, func(e env.Env) {
		p := work.NewPool(e, work.Config{Limit: 8, PerQueue: 2})
		q := p.NewQueue()
		for range 10 {
			q.Submit(work.Job{Cost: time.Millisecond, Run: func() {}, Done: func() {}})
			peak = max(peak, p.Running())
		}
	})
	require.Equal(t, 2, peak, "one queue holds at most PerQueue workers")
}

func TestInlineOnlyWhenNothingPending(t *testing.T) {
	var order []string
	var stats work.Stats
	onSim(t, 5, func(e env.Env) {
		p := work.NewPool(e, work.Config{Limit: 1, InlineBelow: time.Millisecond})
		q := p.NewQueue()
		q.Submit(work.Job{Cost: time.Microsecond, Run: func() {}, Done: func() { order = append(order, "small1") }})
		require.Equal(t, []string{"small1"}, order, "a small job with nothing pending runs inline")
		q.Submit(work.Job{Cost: 5 * time.Millisecond, Run: func() {}, Done: func() { order = append(order, "big") }})
		// Behind a pending job a small one must wait its turn.
		q.Submit(work.Job{Cost: time.Microsecond, Run: func() {}, Done: func() { order = append(order, "small2") }})
		require.Equal(t, []string{"small1"}, order)
		e.AfterFunc(time.Second, func() { stats = p.Stats() })
	})
	require.Equal(t, []string{"small1", "big", "small2"}, order)
	require.Equal(t, uint64(1), stats.Inline)
}

func TestClosedQueueGetsNoDone(t *testing.T) {
	var done []string
	var stats work.Stats
	onSim(t, 6, func(e env.Env) {
		p := work.NewPool(e, work.Config{Limit: 1})
		a, b := p.NewQueue(), p.NewQueue()
		a.Submit(work.Job{Cost: time.Millisecond, Run: func() {}, Done: func() { done = append(done, "a0") },
			Drop: func() { done = append(done, "drop a0") }})
		a.Submit(work.Job{Cost: time.Millisecond, Run: func() {}, Done: func() { done = append(done, "a1") },
			Drop: func() { done = append(done, "drop a1") }})
		b.Submit(work.Job{Cost: time.Millisecond, Run: func() {}, Done: func() { done = append(done, "b0") }})
		a.Close() // a0 is on the worker, a1 never starts
		e.AfterFunc(time.Second, func() { stats = p.Stats() })
	})
	require.Equal(t, []string{"drop a0", "drop a1", "b0"}, done)
	require.Equal(t, uint64(2), stats.Started, "a0 and b0 ran; a1 was dropped before it started")
	require.Equal(t, 0, stats.Queued)
}

func TestDoneMayCloseItsQueue(t *testing.T) {
	var done []string
	onSim(t, 7, func(e env.Env) {
		p := work.NewPool(e, work.Config{Limit: 2, PerQueue: 2})
		q := p.NewQueue()
		q.Submit(work.Job{Cost: 2 * time.Millisecond, Run: func() {}, Done: func() { done = append(done, "q0"); q.Close() }})
		q.Submit(work.Job{Cost: time.Millisecond, Run: func() {}, Done: func() { done = append(done, "q1") },
			Drop: func() { done = append(done, "drop q1") }})
	})
	require.Equal(t, []string{"q0", "drop q1"}, done, "q1 finished first but its queue closed before its turn")
}
