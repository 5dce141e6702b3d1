package proccluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-log/strata/linearizability"
)

// KgoReads records what kgo consumers read from one topic into a
// linearizability.LogHistory: each reader's session of a partition from
// offset 0, a new session where kgo reset a position past the log
// (ErrDataLoss: committed data gone if the reader was told it was
// committed, which OutOfRange judges), and every fetch with its high
// watermark. It is not safe for concurrent use: the workload that owns it
// holds its lock around every call.
type KgoReads struct {
	history    *linearizability.LogHistory
	topic      string
	partitions int
	sessions   map[string][]int   // per reader and partition: its session
	next       map[string][]int64 // per reader and partition: the next offset
	// FetchErrs counts the fetch errors by text, for the report.
	FetchErrs map[string]int
}

// NewKgoReads records reads of topic's partitions into h.
func NewKgoReads(h *linearizability.LogHistory, topic string, partitions int) *KgoReads {
	return &KgoReads{history: h, topic: topic, partitions: partitions,
		sessions: map[string][]int{}, next: map[string][]int64{}, FetchErrs: map[string]int{}}
}

func (k *KgoReads) part(p int32) linearizability.LogPartition {
	return linearizability.LogPartition{Topic: k.topic, Partition: p}
}

// Start starts reader's session of every partition at offset 0.
func (k *KgoReads) Start(reader string) {
	k.sessions[reader] = make([]int, k.partitions)
	k.next[reader] = make([]int64, k.partitions)
	for p := range k.partitions {
		k.sessions[reader][p] = 1
		k.history.StartSession(reader, 1, k.part(int32(p)), 0)
	}
}

// Fetch records one partition of one fetch response of reader. It
// returns the records read (none after an error) and what the history's
// checks said of them.
func (k *KgoReads) Fetch(reader string, fp kgo.FetchTopicPartition) ([]linearizability.LogRecord, error) {
	lp := k.part(fp.Partition)
	if fp.Err != nil {
		if errors.Is(fp.Err, context.Canceled) {
			return nil, nil
		}
		k.FetchErrs[fp.Err.Error()]++
		var loss *kgo.ErrDataLoss
		if !errors.As(fp.Err, &loss) {
			return nil, nil
		}
		err := k.history.OutOfRange(reader, lp, loss.ConsumedTo)
		k.sessions[reader][fp.Partition]++
		k.history.StartSession(reader, k.sessions[reader][fp.Partition], lp, loss.ResetTo)
		k.next[reader][fp.Partition] = loss.ResetTo
		return nil, err
	}
	if len(fp.Records) == 0 {
		return nil, nil
	}
	recs := make([]linearizability.LogRecord, len(fp.Records))
	for i, r := range fp.Records {
		recs[i] = linearizability.LogRecord{Offset: r.Offset, Value: string(r.Value)}
	}
	err := k.history.ReadWithHW(reader, k.sessions[reader][fp.Partition], lp, recs, fp.HighWatermark)
	k.next[reader][fp.Partition] = recs[len(recs)-1].Offset + 1
	return recs, err
}

// ReadUpTo reports whether reader read every partition up to ends.
func (k *KgoReads) ReadUpTo(reader string, ends []int64) bool {
	for p, end := range ends {
		if k.next[reader][p] < end {
			return false
		}
	}
	return true
}

// AllReadUpTo reports whether every reader started read every partition
// up to ends.
func (k *KgoReads) AllReadUpTo(ends []int64) bool {
	for reader := range k.next {
		if !k.ReadUpTo(reader, ends) {
			return false
		}
	}
	return true
}

// ListEnds lists the high watermarks of topic's partitions 0..partitions-1
// (ListOffsets "latest" to each leader), for the drain and the final read.
func ListEnds(ctx context.Context, adm *kadm.Client, topic string, partitions int) ([]int64, error) {
	listed, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	ends := make([]int64, partitions)
	for p := range partitions {
		o, ok := listed.Lookup(topic, int32(p))
		if !ok || o.Err != nil {
			return nil, fmt.Errorf("end offset of %s-%d: %v", topic, p, o.Err)
		}
		ends[p] = o.Offset
	}
	return ends, nil
}

// CoverAcked returns an error unless every end of ends is above the
// highest offset acknowledged in its partition. A high watermark at or
// below an acknowledged offset is no end to read up to: it is a stale
// answer (a deposed leader whose metadata lags answers its old high
// watermark; Kafka's does too, to a client that sends no leader epoch)
// or lost records, and a final read to it would call the acknowledged
// records above it missing. The caller lists again; if the answer never
// covers the acknowledgements, the error says which.
func (k *KgoReads) CoverAcked(ends []int64) error {
	for p, end := range ends {
		if _, last := k.history.AckedIn(k.part(int32(p))); end <= last {
			return fmt.Errorf("the end offset %d of %s-%d is at or below its acknowledged offset %d (a stale answer, or lost records)", end, k.topic, p, last)
		}
	}
	return nil
}
