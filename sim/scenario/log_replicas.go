package scenario

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/strata-log/strata/core/log"
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
// replica that holds it).
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
	var out []byte
	next := int64(0)
	for next < hw {
		data, end, err := readRegion(l, next, hw)
		if err != nil {
			return nil, err
		}
		if end <= next {
			return nil, fmt.Errorf("no batch at %d below the high watermark %d (log end %d)", next, hw, l.LogEndOffset())
		}
		out, next = append(out, data...), end
	}
	if next != hw {
		return nil, fmt.Errorf("its batches end at %d, past the high watermark %d", next, hw)
	}
	return out, nil
}

// readRegion reads the batches of l from offset, ending at or below hw,
// as core/log serves them to a fetch, and returns their bytes and the
// offset after the last.
func readRegion(l *log.Log, offset, hw int64) ([]byte, int64, error) {
	res, err := l.Read(offset, 1<<20, hw)
	if err != nil {
		return nil, 0, err
	}
	defer res.Release()
	if res.Size == 0 {
		return nil, offset, nil
	}
	buf := make([]byte, res.Size)
	if _, err := res.File.ReadAt(buf, res.Position); err != nil {
		return nil, 0, err
	}
	end, err := batchesEnd(buf)
	if err != nil {
		return nil, 0, err
	}
	return buf, end, nil
}

// batchesEnd walks the batches of buf (framing only: the replicas'
// bytes are compared, not judged) and returns the offset after the last.
func batchesEnd(buf []byte) (int64, error) {
	end := int64(-1)
	for len(buf) > 0 {
		b, err := record.ReadBatch(buf, len(buf))
		if err != nil {
			return 0, err
		}
		end, buf = b.LastOffset()+1, buf[b.Size():]
	}
	return end, nil
}

// sameSet reports whether a and b hold the same broker ids.
func sameSet(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
