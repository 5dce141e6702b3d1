package sim

import (
	"container/heap"
	"time"
)

// event is one scheduled callback.
type event struct {
	at    time.Duration // virtual time since the start of the run
	seq   uint64        // insertion order, breaks ties in at
	label string        // folded into the trace hash when delivered
	owner *Process      // nil for simulator-level events
	inc   uint64        // owner's incarnation when scheduled
	fn    func()
	index int // position in the heap, -1 once removed
}

// eventQueue is a min-heap of events ordered by (at, seq). Because seq is
// unique and increasing, the order is total and independent of heap
// internals: two runs that push the same events pop them identically.
type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = i
	q[j].index = j
}
func (q *eventQueue) Push(x any) {
	e := x.(*event)
	e.index = len(*q)
	*q = append(*q, e)
}
func (q *eventQueue) Pop() any {
	old := *q
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	e.index = -1
	*q = old[:n-1]
	return e
}

func (q *eventQueue) push(e *event) { heap.Push(q, e) }
func (q *eventQueue) pop() *event   { return heap.Pop(q).(*event) }
func (q *eventQueue) remove(e *event) {
	if e.index >= 0 {
		heap.Remove(q, e.index)
	}
}
