package linearizability

import (
	"fmt"
	"testing"

	"github.com/anishathalye/porcupine"
	"pgregory.net/rapid"
)

// refKV is the sequential reference implementation: a plain map.
type refKV map[string]string

// apply runs in against m and returns what it returns.
func (m refKV) apply(in KVInput) KVOutput {
	v, ok := m[in.Key]
	switch in.Op {
	case KVOpPut:
		m[in.Key] = in.Value
		return done
	case KVOpGet:
		return KVOutput{Value: v, Found: ok}
	case KVOpDelete:
		if !ok {
			return notFound
		}
		delete(m, in.Key)
		return done
	case KVOpCreateIfAbsent:
		if ok {
			return exists
		}
		m[in.Key] = in.Value
		return done
	}
	panic(in.Op)
}

// genKVOps draws a history produced by running random operations against
// refKV, one at a time at linearization points 100 ns apart. Each operation's
// [call, return] interval contains its linearization point; if overlap, the
// intervals of up to four neighbours may overlap, otherwise they are
// disjoint. Operations with an unknown outcome take effect at their point or
// never. Every written value is unique.
func genKVOps(t *rapid.T, maxOps int, overlap bool) []testOp {
	keys := []string{"a", "b", "c"}[:rapid.IntRange(1, 3).Draw(t, "keys")]
	n := rapid.IntRange(1, maxOps).Draw(t, "n")
	ref := refKV{}
	ops := make([]testOp, 0, n)
	for i := range n {
		key := rapid.SampledFrom(keys).Draw(t, "key")
		value := fmt.Sprintf("v%d", i)
		in := rapid.SampledFrom([]KVInput{
			KVPut(key, value), KVGet(key), KVDelete(key), KVCreateIfAbsent(key, value),
		}).Draw(t, "op")
		point := 100*i + 50
		var call, ret int
		if overlap {
			call = max(0, point-rapid.IntRange(0, 200).Draw(t, "before"))
			ret = point + rapid.IntRange(0, 200).Draw(t, "after")
		} else {
			call = point - rapid.IntRange(0, 49).Draw(t, "before")
			ret = point + rapid.IntRange(0, 49).Draw(t, "after")
		}
		var out outcome
		if rapid.IntRange(0, 7).Draw(t, "unknown") == 0 {
			if rapid.Bool().Draw(t, "applied") {
				ref.apply(in)
			}
			out = rapid.SampledFrom([]unknownOutcome{timedOut, failed, pending}).Draw(t, "reason")
		} else {
			out = ref.apply(in)
		}
		ops = append(ops, op(i%5, in, out, call, ret))
	}
	return ops
}

func TestReferenceHistoriesAreLinearizable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ops := genKVOps(t, 60, rapid.Bool().Draw(t, "overlap"))
		res, err := Check(KVModel(), recordOps(ops))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Ok {
			t.Fatalf("reference history not linearizable: %v\n%s", res, describeOps(ops))
		}
	})
}

func TestReadOfAValueNeverWrittenIsCaught(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ops := genKVOps(t, 60, rapid.Bool().Draw(t, "overlap"))
		var reads []int
		for i, o := range ops {
			if _, known := o.out.(KVOutput); known && o.in.Op == KVOpGet {
				reads = append(reads, i)
			}
		}
		if len(reads) == 0 {
			end := 100 * len(ops)
			ops = append(ops, op(0, KVGet("a"), missing, end, end+1))
			reads = append(reads, len(ops)-1)
		}
		i := rapid.SampledFrom(reads).Draw(t, "read")
		ops[i].out = found("never written")
		res, err := Check(KVModel(), recordOps(ops))
		if err != nil {
			t.Fatal(err)
		}
		if res.Ok {
			t.Fatalf("read %d of a value never written passed\n%s", i, describeOps(ops))
		}
	})
}

// TestCheckAgreesWithPorcupine compares Check, which arms unknown outcomes
// as pending effects, with porcupine run directly on the exported history,
// where they return at plus infinity. Outputs are sometimes corrupted so
// that both verdicts occur.
func TestCheckAgreesWithPorcupine(t *testing.T) {
	verdicts := map[bool]int{}
	rapid.Check(t, func(t *rapid.T) {
		ops := genKVOps(t, 12, true)
		for i := range ops {
			if rapid.IntRange(0, 5).Draw(t, "corrupt") != 0 {
				continue
			}
			ops[i].out = rapid.SampledFrom([]outcome{
				done, missing, exists, notFound, timedOut,
				found("v0"), found("v1"), found("v2"), found(fmt.Sprintf("v%d", i)),
			}).Draw(t, "output")
		}
		h := recordOps(ops)
		res, err := Check(KVModel(), h)
		if err != nil {
			t.Fatal(err)
		}
		if want := porcupine.CheckOperations(KVModel(), h.Operations()); res.Ok != want {
			t.Fatalf("Check says %v, porcupine says linearizable=%v\n%s", res, want, describeOps(ops))
		}
		verdicts[res.Ok]++
	})
	if verdicts[true] == 0 || verdicts[false] == 0 {
		t.Errorf("generator produced only one verdict: %v", verdicts)
	}
	t.Logf("verdicts: %v", verdicts)
}

// describeOps renders ops one per line for failure messages.
func describeOps(ops []testOp) string {
	m := KVModel()
	var s string
	for _, o := range ops {
		out := any(o.out)
		ret := fmt.Sprint(o.ret)
		if u, ok := o.out.(unknownOutcome); ok {
			out = Unknown{Reason: [...]UnknownReason{TimedOut, Failed, Pending}[u]}
			ret = "inf"
		}
		s += fmt.Sprintf("  client %d [%d, %s] %s\n", o.client, o.call, ret, m.DescribeOperation(o.in, out))
	}
	return s
}
