package replica

// Opening a log holds file handles beyond the one an online log keeps: the
// segments recovery reads, the checkpoint files the first flush writes,
// and the node's duplicates of them while their syncs wait their turn. A
// broker that creates or restarts thousands of partitions at once would
// open them all together and run out of file handles (10,000 partitions
// on one node hit EMFILE at a limit of 20,000), so at most
// maxConcurrentOpens partitions open at a time, and the rest wait in
// arrival order, as Kafka loads logs with a bounded pool of recovery
// threads. A partition holds its slot from Log.Open until it is online,
// failed or closed.
const maxConcurrentOpens = 64

// takeOpenSlot reports whether p holds an open slot, taking a free one, or
// queues p for the next.
func (p *Partition) takeOpenSlot() bool {
	m := p.m
	switch {
	case p.openSlot:
		return true
	case m.opens < maxConcurrentOpens:
		m.opens++
		p.openSlot = true
		return true
	case !p.queued:
		p.queued = true
		m.openQueue = append(m.openQueue, p)
	}
	return false
}

// releaseOpenSlot gives p's slot, if it holds one, to the first partition
// waiting, which opens on a later turn of the loop.
func (p *Partition) releaseOpenSlot() {
	if !p.openSlot {
		return
	}
	m := p.m
	p.openSlot = false
	m.opens--
	for len(m.openQueue) > 0 && m.opens < maxConcurrentOpens {
		next := m.openQueue[0]
		m.openQueue[0] = nil
		m.openQueue = m.openQueue[1:]
		next.queued = false
		if next.state == stateClosed {
			continue
		}
		m.opens++
		next.openSlot = true
		m.e.Post(next.open)
	}
}
