package replica

import (
	"testing"
	"time"

	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
)

// FuzzProduce feeds arbitrary bytes to a partition as one Produce's
// records, after a valid batch. Whatever the bytes, Produce must not
// panic, must answer once, and must either refuse them changing nothing
// or append a batch that reads back and verifies; the partition keeps
// serving afterwards. The committed corpus (testdata/fuzz/FuzzProduce)
// holds valid batches of every codec and producer shape, and known bad
// ones; `go test -fuzz=FuzzProduce ./core/replica` searches for more.
func FuzzProduce(f *testing.F) {
	for _, codec := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		f.Add(batchOf(3, record.WithCompression(codec)))
	}
	f.Add(batchOf(2, record.WithProducer(9, 0, 0)))
	f.Add(batchOf(2, record.WithProducer(9, 0, 5)))
	f.Add(batchOf(1, record.WithTransactional(), record.WithProducer(9, 0, 0)))
	f.Add(batchOf(1, record.WithControl()))
	f.Add([]byte{})
	f.Add(make([]byte, 61))
	b := batchOf(2)
	b[20] ^= 1 // CRC mismatch
	f.Add(b)
	f.Add(append(batchOf(1), batchOf(1)...))

	r := newRig(&testing.T{}, 1)
	r.createTopic("fuzz", topicID(1), 1, map[string]string{"max.message.bytes": "65536"})
	p := r.onlineNoT("fuzz", 0)
	f.Fuzz(func(t *testing.T, payload []byte) {
		r.t = t
		before := p.LogEndOffset()
		var res *ProduceResult
		calls := 0
		p.Produce(append([]byte(nil), payload...), 1, r.Env.Now(), func(pr ProduceResult) { res = &pr; calls++ })
		for i := 0; i < 100 && res == nil; i++ {
			r.Run(time.Millisecond)
		}
		if res == nil || calls != 1 {
			t.Fatalf("Produce answered %d times", calls)
		}
		if res.Err != nil {
			if p.LogEndOffset() != before {
				t.Fatalf("a refused batch (%v) moved the log end from %d to %d", res.Err, before, p.LogEndOffset())
			}
			return
		}
		if p.LogEndOffset() == before && res.BaseOffset >= 0 && res.BaseOffset < before {
			// A retry of an idempotent batch already appended: it must be
			// one the producer state knows, answered with its offsets.
			b, err := record.ReadProduceBatch(payload, 1<<20)
			if err != nil {
				t.Fatalf("a duplicate answer for bytes that are no batch: %v", err)
			}
			check, err := p.producers.Check(producer.InfoOf(b))
			if err != nil || !check.Duplicate || check.Original.FirstOffset() != res.BaseOffset {
				t.Fatalf("answered at %d without appending, but not as a duplicate (%+v, %v)", res.BaseOffset, check, err)
			}
			return
		}
		if res.BaseOffset < before || p.LogEndOffset() <= before {
			t.Fatalf("accepted at %d with the log end %d -> %d", res.BaseOffset, before, p.LogEndOffset())
		}
		if err := p.Log().Verify(before, p.LogEndOffset()); err != nil {
			t.Fatalf("the log does not verify after an accepted batch: %v", err)
		}
		rr, err := p.Read(res.BaseOffset, 1<<20, -1)
		if err != nil || rr.Size == 0 {
			t.Fatalf("the accepted batch does not read back: %v", err)
		}
		rr.Release()
	})
}

func batchOf(n int, opts ...record.BuilderOption) []byte {
	b := record.NewBuilder(opts...)
	for i := 0; i < n; i++ {
		b.Append(1_767_225_600_000+int64(i), []byte{byte('k' + i)}, []byte{byte('v' + i)})
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}

// onlineNoT is online for a rig built outside a test (the fuzz corpus
// setup), failing by panic.
func (r *rig) onlineNoT(topic string, id int32) *Partition {
	for i := 0; i < 1000; i++ {
		if p, err := r.m.Lookup(topic, id); err == nil && p.Online() {
			return p
		}
		if err := r.Sim.RunFor(10 * time.Millisecond); err != nil {
			panic(err)
		}
	}
	panic("partition never came online")
}
