package node

import (
	"runtime"
	"sync"
	"time"
)

// workPool runs env.Env.Work jobs: a fixed set of worker goroutines (one
// per usable CPU by default) take jobs in submission order and post each
// job's completion to the loop. The queue is unbounded here because its
// callers bound it: core/work hands the Env at most a few jobs per worker
// at a time and keeps the rest in its own fair queues.
type workPool struct {
	loop    *Loop
	workers int

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []workJob
	started bool
	closed  bool
	wg      sync.WaitGroup
}

type workJob struct {
	job, done func()
}

// newWorkPool returns a pool of workers goroutines (<= 0: GOMAXPROCS)
// posting to loop. Workers start with the first job.
func newWorkPool(loop *Loop, workers int) *workPool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &workPool{loop: loop, workers: workers}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Work implements env.Env.Work. cost is the simulator's; the node measures
// nothing from it.
func (p *workPool) Work(_ time.Duration, job, done func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return // the loop has stopped: done would be dropped anyway
	}
	if !p.started {
		p.started = true
		p.wg.Add(p.workers)
		for range p.workers {
			go p.run()
		}
	}
	p.queue = append(p.queue, workJob{job: job, done: done})
	p.cond.Signal()
}

func (p *workPool) run() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		for len(p.queue) == 0 && !p.closed {
			p.cond.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		j := p.queue[0]
		p.queue[0] = workJob{}
		p.queue = p.queue[1:]
		p.mu.Unlock()
		j.job()
		p.loop.Post(j.done)
	}
}

// close stops the workers once the jobs running now return; queued jobs
// are dropped (their completions could only reach a stopped loop).
func (p *workPool) close() {
	p.mu.Lock()
	p.closed = true
	p.queue = nil
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}
