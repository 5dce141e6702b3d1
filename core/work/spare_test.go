package work_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/work"
)

// handEnv is an Env whose workers the test drives by hand: Work only
// notes the job, and finish runs one to completion at the test's clock.
type handEnv struct {
	env.Env // nil: the pool uses only Work and Monotonic
	now     time.Duration
	running []handJob
}

type handJob struct {
	name      string
	job, done func()
}

func (e *handEnv) Monotonic() time.Duration { return e.now }

func (e *handEnv) Work(_ time.Duration, job, done func()) {
	e.running = append(e.running, handJob{job: job, done: done})
}

// finish completes the i-th running job.
func (e *handEnv) finish(i int) {
	j := e.running[i]
	e.running = append(e.running[:i], e.running[i+1:]...)
	j.job()
	j.done()
}

// submit queues a job named name on q that notes when it ran.
func submit(q *work.Queue, ran *[]string, name string, cost, charge time.Duration) {
	q.Submit(work.Job{Cost: cost, Charge: func() time.Duration { return charge },
		Run: func() { *ran = append(*ran, name) }, Done: func() {}})
}

// Fifty bombs in one request hold both workers for seconds; an honest
// client's small job starts at once in the spare slot, and without one it
// waits for them.
func TestSpareSlotServesALightQueueBesideHeavyOnes(t *testing.T) {
	for _, spare := range []int{0, 1} {
		e := &handEnv{}
		p := work.NewPool(e, work.Config{Limit: 2, PerQueue: 2, Spare: spare})
		heavy, light := p.NewQueue(), p.NewQueue()
		var ran []string
		// A connection's request of fifty bombs: a few milliseconds by
		// its estimate, seconds in fact, holding both workers.
		submit(heavy, &ran, "bombs-1", 5*time.Millisecond, 6*time.Second)
		submit(heavy, &ran, "bombs-2", 5*time.Millisecond, 6*time.Second)
		submit(light, &ran, "victim", 100*time.Microsecond, 100*time.Microsecond)
		if spare == 0 {
			require.Len(t, e.running, 2, "without a spare slot the victim waits")
			continue
		}
		require.Len(t, e.running, 3, "the victim's job starts at once in the spare slot")
		e.finish(2)
		require.Equal(t, []string{"victim"}, ran)
		require.Equal(t, uint64(1), p.Stats().Spare)
	}
}

// A queue whose jobs were charged far more than they were estimated at
// (a small compressed batch that decompressed to 16 MiB) is not light
// until the time it was charged has passed, however small its next job
// looks: the spare slot stays free for the honest client.
func TestChargedQueueIsNotLight(t *testing.T) {
	for _, charged := range []bool{false, true} {
		e := &handEnv{}
		p := work.NewPool(e, work.Config{Limit: 1, PerQueue: 1, Spare: 1})
		a, b, victim := p.NewQueue(), p.NewQueue(), p.NewQueue()
		var ran []string
		charge := 100 * time.Microsecond
		if charged {
			charge = 100 * time.Millisecond
		}
		// Two connections of small bombs: estimated 100 µs each.
		for _, q := range []*work.Queue{a, b} {
			submit(q, &ran, "bomb", 100*time.Microsecond, charge)
			submit(q, &ran, "bomb", 100*time.Microsecond, charge)
		}
		require.Len(t, e.running, 2, "a in the worker, b in the spare slot (nothing known of it yet)")
		e.now += 10 * time.Millisecond
		e.finish(1) // b's first bomb; b's second is ready
		submit(victim, &ran, "victim", 100*time.Microsecond, 100*time.Microsecond)
		require.Len(t, e.running, 2)
		e.finish(1)
		if charged {
			require.Equal(t, []string{"bomb", "victim"}, ran, "b was charged 100 ms: the spare slot went to the victim")
		} else {
			require.Equal(t, []string{"bomb", "bomb"}, ran, "b's bombs cost what they were estimated at: b stays light and takes the slot first")
		}
	}
}
