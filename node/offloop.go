package node

import "sync"

// offLoop runs blocking jobs (fdatasync, object-store calls) on helper
// goroutines, at most limit at a time, so that the loop never blocks on
// them. Submitting never blocks either: a job beyond the limit waits in its
// own goroutine for a slot. Jobs post their completions to the loop
// themselves.
type offLoop struct {
	slots chan struct{}
	wg    sync.WaitGroup
}

func newOffLoop(limit int) *offLoop {
	return &offLoop{slots: make(chan struct{}, limit)}
}

// Go runs job on a helper goroutine once a slot is free.
func (o *offLoop) Go(job func()) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		o.slots <- struct{}{}
		defer func() { <-o.slots }()
		job()
	}()
}

// Wait returns when every submitted job has returned. Call it only once no
// more jobs can be submitted (the loop has stopped).
func (o *offLoop) Wait() { o.wg.Wait() }
