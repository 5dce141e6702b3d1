package scenario

import (
	"bytes"
	"fmt"
	"path"
	"slices"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/record"
)

// checkReplicas is check (i), after the heal, once the metrics say healthy
// (g): in the active controller's image every partition has a leader and
// an ISR holding every replica, no reassignment is in progress, and every
// replica's log holds the same bytes (batch for batch, headers included:
// a follower appends the leader's batches as they are) from the log start
// up to the final read's high watermark. (g) compares log end offsets;
// this compares what is below them, so a replica that kept a batch the
// others replaced, or a damaged one, is found even where the offsets
// agree.
func (h *logHarness) checkReplicas() error {
	var img *meta.Image
	for i := range h.procs {
		if srv := h.server(i); srv != nil && srv.ActiveController() {
			img = srv.Image()
		}
	}
	if img == nil {
		return fmt.Errorf("(i) replicas: no active controller after the heal")
	}
	for _, p := range h.partitions() {
		t, ok := img.TopicByName(p.Topic)
		if !ok {
			return fmt.Errorf("(i) replicas: topic %s is not in the image", p.Topic)
		}
		part, ok := t.Partition(p.Partition)
		if !ok {
			return fmt.Errorf("(i) replicas: %s is not in the image", p)
		}
		switch {
		case part.Leader < 0:
			return fmt.Errorf("(i) replicas: %s has no leader after the heal", p)
		case len(part.Replicas) != h.topicRF(p.Topic) || len(part.AddingReplicas)+len(part.RemovingReplicas) > 0:
			return fmt.Errorf("(i) replicas: %s has replicas %v (adding %v, removing %v), replication factor %d", p, part.Replicas, part.AddingReplicas, part.RemovingReplicas, h.topicRF(p.Topic))
		case !sameSet(part.ISR, part.Replicas):
			return fmt.Errorf("(i) replicas: %s has ISR %v of replicas %v after the heal", p, part.ISR, part.Replicas)
		}
		hw := h.verifier.state(p).hw
		var first []byte
		var firstID int32
		for i, id := range part.Replicas {
			data, err := h.replicaBytes(id, p.Topic, p.Partition, hw)
			if err != nil {
				return fmt.Errorf("(i) replicas: %s on broker %d: %w", p, id, err)
			}
			if h.bugs.divergentReplica && i == len(part.Replicas)-1 && len(data) > 0 {
				data = slices.Clone(data)
				data[len(data)/2] ^= 1
			}
			if first == nil {
				first, firstID = data, id
				continue
			}
			if !bytes.Equal(first, data) {
				at := 0
				for at < min(len(first), len(data)) && first[at] == data[at] {
					at++
				}
				return fmt.Errorf("(i) replicas: %s below the high watermark %d: broker %d holds %d bytes, broker %d %d, first different at byte %d",
					p, hw, firstID, len(first), id, len(data), at)
			}
		}
	}
	return nil
}

// replicaBytes reads broker id's replica of topic-partition from its log
// start up to hw: the bytes of every batch that ends below hw, which must
// end exactly at hw (a high watermark is a batch boundary on every
// replica that holds it). It reads the segment files' page-cache content
// through the simulated disk itself, not through the broker's Env: a
// check must neither draw the run's disk faults (a read there may make a
// page unreadable) nor fail on a page the broker has
// not read yet (latent damage it finds when it does).
func (h *logHarness) replicaBytes(id int32, topic string, partition int32, hw int64) ([]byte, error) {
	srv := h.server(int(id) - 1)
	if srv == nil {
		return nil, fmt.Errorf("not running")
	}
	rp, err := srv.Partitions().Lookup(topic, partition)
	if err != nil {
		return nil, err
	}
	l := rp.Log()
	if !rp.Online() || l == nil {
		return nil, fmt.Errorf("not online")
	}
	if l.LogStartOffset() != 0 {
		return nil, fmt.Errorf("log starts at %d (the run deletes nothing)", l.LogStartOffset())
	}
	disk := h.procs[int(id)-1].Disk()
	var out []byte
	next := int64(0)
	for _, seg := range l.Segments() {
		if next >= hw {
			break
		}
		name := path.Join(l.Dir(), fmt.Sprintf("%020d.log", seg.BaseOffset))
		data, ok := disk.ReadFile(name)
		if !ok {
			return nil, fmt.Errorf("no file %s", name)
		}
		data = data[:min(int64(len(data)), seg.Size)]
		for len(data) > 0 && next < hw {
			b, err := record.ReadBatch(data, len(data))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if b.LastOffset() >= hw {
				break
			}
			if b.BaseOffset() < next {
				return nil, fmt.Errorf("%s: batch [%d, %d] after offset %d", name, b.BaseOffset(), b.LastOffset(), next-1)
			}
			out, next = append(out, b.Bytes()...), b.LastOffset()+1
			data = data[b.Size():]
		}
	}
	if next != hw {
		return nil, fmt.Errorf("its batches end at %d, not at the high watermark %d (log end %d)", next, hw, l.LogEndOffset())
	}
	return out, nil
}

// sameSet reports whether a and b hold the same broker ids.
func sameSet(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
