package replica

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
)

// fullReplayAborted is how a partition rebuilt its aborted-transaction
// index before the log kept one: a scratch producer state replaying the
// whole log. It stays here as the baseline of BenchmarkOpenPartition and
// as the reference the index must equal.
func fullReplayAborted(l *log.Log, cfg producer.Config) ([]AbortedTxn, error) {
	out := []AbortedTxn{}
	st := producer.NewState(cfg, l.LogStartOffset())
	err := scanLog(l, st.EndOffset(), func(b record.Batch) error {
		t, ended, err := st.ReplayTxn(b)
		if ended && t.Aborted {
			out = append(out, abortedEntry(t))
		}
		return err
	})
	return out, err
}

// openRig is a broker process with one partition whose log holds
// transactions, some aborted, that a benchmark or test restarts.
type openRig struct {
	tb   testing.TB
	s    *sim.Sim
	proc *sim.Process
	e    env.Env
	m    *Manager
	img  *meta.Image
	seqs map[int64]int32 // each producer's next sequence
}

func newOpenRig(tb testing.TB, seed uint64, segmentBytes string) *openRig {
	r := &openRig{tb: tb, s: sim.New(sim.Config{Seed: seed}), seqs: map[int64]int32{}}
	id := meta.UUID{7, 7}
	d := meta.Empty().NewDelta()
	v := segmentBytes
	for _, rec := range []meta.Record{
		&meta.TopicRecord{Name: "t", TopicID: id},
		&meta.PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		&meta.ConfigRecord{ResourceType: meta.ConfigResourceTopic, ResourceName: "t", Key: "segment.bytes", Value: &v},
	} {
		require.NoError(tb, d.Replay(rec))
	}
	r.img = d.Apply(meta.Position{Offset: 1, Epoch: 1})
	r.proc = r.s.AddProcess("b1", func(e env.Env) {
		r.e = e
		r.m = NewManager(e, Config{NodeID: 1, ReopenBackoff: 100 * time.Millisecond})
		r.m.Apply(r.img, true)
	})
	r.proc.Start()
	r.online()
	return r
}

// online runs the simulator until the partition serves, and returns it.
func (r *openRig) online() *Partition {
	for i := 0; i < 100000; i++ {
		if r.proc.Up() && r.m != nil {
			if p, err := r.m.Lookup("t", 0); err == nil && p.Online() {
				return p
			}
		}
		require.NoError(r.tb, r.s.RunFor(time.Millisecond))
	}
	r.tb.Fatal("the partition never came online")
	return nil
}

func (r *openRig) await(issue func(done func(error))) {
	var got *error
	issue(func(err error) { got = &err })
	for i := 0; i < 100000 && got == nil; i++ {
		require.NoError(r.tb, r.s.RunFor(time.Millisecond))
	}
	require.NotNil(r.tb, got, "no answer")
	require.NoError(r.tb, *got)
}

// fill writes txns transactions of batches batches of records records
// each (values of valueBytes), every third one aborted, from producers
// taking turns.
func (r *openRig) fill(txns, batches, records, valueBytes int) {
	p := r.online()
	value := make([]byte, valueBytes)
	seqs := r.seqs
	for i := 0; i < txns; i++ {
		pid := int64(1 + i%4)
		for k := 0; k < batches; k++ {
			b := record.NewBuilder(record.WithProducer(pid, 0, seqs[pid]), record.WithTransactional())
			for j := 0; j < records; j++ {
				b.Append(r.e.Now().UnixMilli(), []byte(fmt.Sprintf("k%d", j)), value)
			}
			raw, err := b.AppendTo(nil)
			require.NoError(r.tb, err)
			seqs[pid] += int32(records)
			r.await(func(done func(error)) {
				p.Produce(raw, -1, r.e.Now(), func(res ProduceResult) { done(res.Err) })
			})
		}
		m := producer.Marker{ProducerID: pid, CoordinatorEpoch: 1, Commit: i%3 != 0}
		r.await(func(done func(error)) { p.WriteTxnMarker(m, r.e.Now(), done) })
	}
}

// restart stops the broker (cleanly, or by a power loss) and waits until
// the partition is online again.
func (r *openRig) restart(clean bool) *Partition {
	r.stop(clean)
	r.proc.Start()
	return r.online()
}

// stop stops the broker cleanly, or by a power loss.
func (r *openRig) stop(clean bool) {
	if clean {
		closed := false
		r.m.Close(func() { closed = true })
		for i := 0; i < 100000 && !closed; i++ {
			require.NoError(r.tb, r.s.RunFor(time.Millisecond))
		}
		require.True(r.tb, closed)
		r.proc.Kill()
	} else {
		r.proc.Crash()
	}
	r.m = nil // the next incarnation's comes with its start
}

// TestOpenIndexEqualsFullReplay: after clean restarts and power losses at
// random points, the aborted-transaction index a partition opens with (its
// snapshot, the tail and the log's .txnindex files) lists exactly what a
// replay of the whole log finds, so read_committed fetches answer as they
// did when every open replayed everything.
func TestOpenIndexEqualsFullReplay(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := newOpenRig(t, seed, "8192")
			for round := 0; round < 4; round++ {
				r.fill(12, 2, 4, 200)
				p := r.restart(round%2 == 0)
				want, err := fullReplayAborted(p.Log(), r.m.cfg.Producers)
				require.NoError(t, err)
				require.NotEmpty(t, want)
				require.Equal(t, want, p.Log().AbortedTxns(0, math.MaxInt64), "round %d", round)
				require.Greater(t, p.Log().NumSegments(), 2)
			}
		})
	}
}

// BenchmarkOpenPartition opens a partition of a 64 MiB log of
// transactions (a third aborted) after a clean shutdown, and after a power
// loss, timing from the restart to the partition serving. "index" is
// today's open: the producer snapshot at or below the .txnindex end, the
// tail past it, the index files. "full-replay" adds what every open did
// before the index existed, a replay of the whole log to rebuild the
// aborted list (fullReplayAborted), and is the baseline.
//
//	go test ./core/replica -run '^$' -bench BenchmarkOpenPartition -count 5
func BenchmarkOpenPartition(b *testing.B) {
	for _, clean := range []bool{true, false} {
		stop := "clean"
		if !clean {
			stop = "crash"
		}
		r := newOpenRig(b, 1, fmt.Sprint(8<<20))
		// 512 transactions x 4 batches x 32 records x 1 KiB = 64 MiB.
		r.fill(512, 4, 32, 1024)
		size := r.online().Log().Size()
		for _, full := range []bool{false, true} {
			name := "index"
			if full {
				name = "full-replay"
			}
			b.Run(stop+"/"+name, func(b *testing.B) {
				b.SetBytes(size)
				b.StopTimer()
				for i := 0; i < b.N; i++ {
					r.stop(clean)
					b.StartTimer()
					r.proc.Start()
					p := r.online()
					if full {
						if _, err := fullReplayAborted(p.Log(), r.m.cfg.Producers); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
				}
			})
		}
	}
}
