package linearizability

import (
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"
)

// outcome is how a test operation ends: a KVOutput, or one of the unknown
// outcomes below.
type outcome any

type unknownOutcome int

const (
	timedOut unknownOutcome = iota // History.Timeout
	failed                         // History.Fail
	pending                        // never completed
)

var (
	done     = KVOutput{}                     // Put, Delete or CreateIfAbsent succeeded
	missing  = KVOutput{}                     // Get of an absent key
	exists   = KVOutput{Err: ErrKeyExists}    // CreateIfAbsent of a present key
	notFound = KVOutput{Err: ErrKeyNotFound}  // Delete of an absent key
	other    = KVOutput{Err: fmt.Errorf("x")} // an error the model does not know
)

func found(v string) KVOutput { return KVOutput{Value: v, Found: true} }

// testOp is one operation of a hand-written history. Times are virtual
// nanoseconds; ret is ignored for unknown outcomes.
type testOp struct {
	client    int
	in        KVInput
	out       outcome
	call, ret int
}

func op(client int, in KVInput, out outcome, call, ret int) testOp {
	return testOp{client: client, in: in, out: out, call: call, ret: ret}
}

// describeCase is an operation and how its model describes it.
type describeCase struct {
	in, out any
	want    string
}

// checkDescribes requires m to describe each case's operation as it says.
func checkDescribes(t *testing.T, m porcupine.Model, cases []describeCase) {
	t.Helper()
	for _, c := range cases {
		require.Equal(t, c.want, m.DescribeOperation(c.in, c.out), "DescribeOperation(%+v, %+v)", c.in, c.out)
	}
}

// recordOps builds a History from ops.
func recordOps(ops []testOp) *History {
	h := NewHistory()
	for _, o := range ops {
		id := h.Invoke(o.client, o.in, time.Duration(o.call))
		switch out := o.out.(type) {
		case unknownOutcome:
			switch out {
			case timedOut:
				h.Timeout(id)
			case failed:
				h.Fail(id)
			}
		default:
			h.Complete(id, out, time.Duration(o.ret))
		}
	}
	return h
}

// checkKV checks ops with Check, and also with porcupine directly on the
// exported history (unknown outcomes returning at plus infinity), and fails
// t unless both verdicts are want.
func checkKV(t *testing.T, ops []testOp, want bool) {
	t.Helper()
	h := recordOps(ops)
	res, err := Check(KVModel(), h)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ok != want {
		t.Errorf("Check: got %v, want linearizable=%v", res, want)
	}
	if got := porcupine.CheckOperations(KVModel(), h.Operations()); got != want {
		t.Errorf("porcupine on the exported history: got linearizable=%v, want %v", got, want)
	}
}

func TestKVModel(t *testing.T) {
	a := "a"
	tests := []struct {
		name string
		ops  []testOp
		want bool
	}{
		// Put and Get.
		{"get of a never-written key is not found", []testOp{
			op(0, KVGet(a), missing, 0, 10),
		}, true},
		{"get of a never-written key cannot be found", []testOp{
			op(0, KVGet(a), found("1"), 0, 10),
		}, false},
		{"read after a completed write sees it", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(1, KVGet(a), found("1"), 20, 30),
		}, true},
		{"read after a completed write cannot miss it", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(1, KVGet(a), missing, 20, 30),
		}, false},
		{"stale read after a completed write fails", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(0, KVPut(a, "2"), done, 20, 30),
			op(1, KVGet(a), found("1"), 40, 50),
		}, false},
		{"read concurrent with a write may see the old value", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(0, KVPut(a, "2"), done, 20, 40),
			op(1, KVGet(a), found("1"), 25, 30),
		}, true},
		{"read concurrent with a write may see the new value", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(0, KVPut(a, "2"), done, 20, 40),
			op(1, KVGet(a), found("2"), 25, 30),
		}, true},
		{"intervals are closed: a read returning as a write is called may see it", []testOp{
			op(0, KVPut(a, "1"), done, 10, 20),
			op(1, KVGet(a), found("1"), 0, 10),
		}, true},
		{"once a concurrent write is seen, later reads cannot go back", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(0, KVPut(a, "2"), done, 20, 100),
			op(1, KVGet(a), found("2"), 30, 40),
			op(2, KVGet(a), found("1"), 50, 60),
		}, false},
		{"concurrent writes may land in either order", []testOp{
			op(0, KVPut(a, "1"), done, 0, 50),
			op(1, KVPut(a, "2"), done, 0, 50),
			op(2, KVGet(a), found("1"), 60, 70),
		}, true},
		{"reads cannot disagree on the order of concurrent writes", []testOp{
			op(0, KVPut(a, "1"), done, 0, 50),
			op(1, KVPut(a, "2"), done, 0, 50),
			op(2, KVGet(a), found("1"), 60, 70),
			op(3, KVGet(a), found("2"), 80, 90),
		}, false},
		{"a put reporting an error is not a KV outcome", []testOp{
			op(0, KVPut(a, "1"), other, 0, 10),
		}, false},

		// Unknown outcomes.
		{"a timed-out write may appear later", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(0, KVPut(a, "2"), timedOut, 20, 0),
			op(1, KVGet(a), found("1"), 30, 40),
			op(1, KVGet(a), found("2"), 1000, 1010),
		}, true},
		{"a timed-out write may never appear", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(0, KVPut(a, "2"), timedOut, 20, 0),
			op(1, KVGet(a), found("1"), 1000, 1010),
		}, true},
		{"a timed-out write cannot appear before its call", []testOp{
			op(1, KVGet(a), found("2"), 0, 10),
			op(0, KVPut(a, "2"), timedOut, 20, 0),
		}, false},
		{"a timed-out write, once seen, cannot vanish", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(0, KVPut(a, "2"), timedOut, 20, 0),
			op(1, KVGet(a), found("2"), 30, 40),
			op(1, KVGet(a), found("1"), 50, 60),
		}, false},
		{"a timed-out write takes effect at most once", []testOp{
			op(0, KVPut(a, "2"), timedOut, 0, 0),
			op(1, KVGet(a), found("2"), 10, 20),
			op(1, KVPut(a, "3"), done, 30, 40),
			op(1, KVGet(a), found("2"), 50, 60),
		}, false},
		{"a failed write may appear later", []testOp{
			op(0, KVPut(a, "1"), failed, 0, 0),
			op(1, KVGet(a), missing, 10, 20),
			op(1, KVGet(a), found("1"), 30, 40),
		}, true},
		{"a pending write may appear later", []testOp{
			op(0, KVPut(a, "1"), pending, 0, 0),
			op(1, KVGet(a), missing, 10, 20),
			op(1, KVGet(a), found("1"), 30, 40),
		}, true},
		{"two timed-out writes may land in either order", []testOp{
			op(0, KVPut(a, "1"), timedOut, 0, 0),
			op(1, KVPut(a, "2"), timedOut, 0, 0),
			op(2, KVGet(a), found("2"), 10, 20),
			op(2, KVGet(a), found("1"), 30, 40),
		}, true},
		{"two timed-out writes cannot both be seen twice", []testOp{
			op(0, KVPut(a, "1"), timedOut, 0, 0),
			op(1, KVPut(a, "2"), timedOut, 0, 0),
			op(2, KVGet(a), found("2"), 10, 20),
			op(2, KVGet(a), found("1"), 30, 40),
			op(2, KVGet(a), found("2"), 50, 60),
		}, false},
		{"a timed-out get constrains nothing", []testOp{
			op(0, KVGet(a), timedOut, 0, 0),
			op(1, KVPut(a, "1"), done, 10, 20),
		}, true},

		// Delete.
		{"delete of a missing key reports not found", []testOp{
			op(0, KVDelete(a), notFound, 0, 10),
		}, true},
		{"delete of a missing key cannot succeed", []testOp{
			op(0, KVDelete(a), done, 0, 10),
		}, false},
		{"delete of a present key cannot report not found", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(0, KVDelete(a), notFound, 20, 30),
		}, false},
		{"get after a completed delete is not found", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(0, KVDelete(a), done, 20, 30),
			op(1, KVGet(a), missing, 40, 50),
		}, true},
		{"get after a completed delete cannot see the old value", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(0, KVDelete(a), done, 20, 30),
			op(1, KVGet(a), found("1"), 40, 50),
		}, false},
		{"of two concurrent deletes one may succeed", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(1, KVDelete(a), done, 20, 30),
			op(2, KVDelete(a), notFound, 20, 30),
		}, true},
		{"two deletes cannot both succeed", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(1, KVDelete(a), done, 20, 30),
			op(2, KVDelete(a), done, 20, 30),
		}, false},
		{"a timed-out delete may explain a later miss", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(1, KVDelete(a), timedOut, 20, 0),
			op(2, KVGet(a), found("1"), 30, 40),
			op(2, KVGet(a), missing, 50, 60),
		}, true},

		// CreateIfAbsent.
		{"create of an absent key succeeds and is seen", []testOp{
			op(0, KVCreateIfAbsent(a, "1"), done, 0, 10),
			op(1, KVGet(a), found("1"), 20, 30),
		}, true},
		{"create of an absent key cannot report exists", []testOp{
			op(0, KVCreateIfAbsent(a, "1"), exists, 0, 10),
		}, false},
		{"create of a present key reports exists and changes nothing", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(0, KVCreateIfAbsent(a, "2"), exists, 20, 30),
			op(1, KVGet(a), found("1"), 40, 50),
		}, true},
		{"create twice, both succeeding, fails", []testOp{
			op(0, KVCreateIfAbsent(a, "1"), done, 0, 10),
			op(1, KVCreateIfAbsent(a, "2"), done, 20, 30),
		}, false},
		{"concurrent creates both succeeding fails", []testOp{
			op(0, KVCreateIfAbsent(a, "1"), done, 0, 30),
			op(1, KVCreateIfAbsent(a, "2"), done, 10, 20),
		}, false},
		{"of concurrent creates one wins", []testOp{
			op(0, KVCreateIfAbsent(a, "1"), exists, 0, 30),
			op(1, KVCreateIfAbsent(a, "2"), done, 10, 20),
			op(2, KVGet(a), found("2"), 40, 50),
		}, true},
		{"the loser of concurrent creates is not what is read", []testOp{
			op(0, KVCreateIfAbsent(a, "1"), exists, 0, 30),
			op(1, KVCreateIfAbsent(a, "2"), done, 10, 20),
			op(2, KVGet(a), found("1"), 40, 50),
		}, false},
		{"create after a delete succeeds", []testOp{
			op(0, KVCreateIfAbsent(a, "1"), done, 0, 10),
			op(0, KVDelete(a), done, 20, 30),
			op(0, KVCreateIfAbsent(a, "2"), done, 40, 50),
			op(1, KVGet(a), found("2"), 60, 70),
		}, true},
		{"a timed-out create may explain a later exists", []testOp{
			op(0, KVCreateIfAbsent(a, "1"), timedOut, 0, 0),
			op(1, KVCreateIfAbsent(a, "2"), exists, 10, 20),
			op(2, KVGet(a), found("1"), 30, 40),
		}, true},
		{"a timed-out create cannot explain a value it did not write", []testOp{
			op(0, KVCreateIfAbsent(a, "1"), timedOut, 0, 0),
			op(1, KVCreateIfAbsent(a, "2"), exists, 10, 20),
			op(2, KVGet(a), found("3"), 30, 40),
		}, false},
		{"a timed-out create of a present key has no effect", []testOp{
			op(0, KVPut(a, "1"), done, 0, 10),
			op(1, KVCreateIfAbsent(a, "2"), timedOut, 20, 0),
			op(2, KVGet(a), found("1"), 30, 40),
			op(2, KVDelete(a), done, 50, 60),
			op(2, KVGet(a), found("2"), 70, 80),
		}, true},

		// Partitioning by key.
		{"keys are independent", []testOp{
			op(0, KVPut("a", "1"), done, 0, 10),
			op(1, KVGet("b"), missing, 20, 30),
			op(1, KVGet("a"), found("1"), 20, 30),
		}, true},
		{"a stale read on one key fails even if the other key is fine", []testOp{
			op(0, KVPut("a", "1"), done, 0, 10),
			op(1, KVGet("a"), found("1"), 20, 30),
			op(0, KVPut("b", "1"), done, 0, 10),
			op(0, KVPut("b", "2"), done, 20, 30),
			op(1, KVGet("b"), found("1"), 40, 50),
		}, false},
		{"a value is not visible under another key", []testOp{
			op(0, KVPut("a", "1"), done, 0, 10),
			op(1, KVGet("b"), found("1"), 20, 30),
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkKV(t, tt.ops, tt.want)
		})
	}
}

func TestKVDescribeOperation(t *testing.T) {
	m := KVModel()
	checkDescribes(t, m, []describeCase{
		{KVPut("t", "1"), done, `Put("t", "1") -> ok`},
		{KVGet("t"), found("1"), `Get("t") -> "1"`},
		{KVGet("t"), missing, `Get("t") -> not found`},
		{KVDelete("t"), done, `Delete("t") -> ok`},
		{KVDelete("t"), notFound, `Delete("t") -> key not found`},
		{KVCreateIfAbsent("t", "1"), done, `CreateIfAbsent("t", "1") -> created`},
		{KVCreateIfAbsent("t", "1"), exists, `CreateIfAbsent("t", "1") -> key already exists`},
		{KVPut("t", "1"), Unknown{Reason: TimedOut}, `Put("t", "1") -> ? (timeout)`},
		{KVDelete("t"), Unknown{Reason: Failed}, `Delete("t") -> ? (failed)`},
	})
	if got := m.DescribeState(kvState{}); got != "absent" {
		t.Errorf("DescribeState(absent) = %s", got)
	}
	if got := m.DescribeState(kvState{present: true, value: "x"}); got != `"x"` {
		t.Errorf("DescribeState(x) = %s", got)
	}
	if got := KVOp(99).String(); got != "KVOp(99)" {
		t.Errorf("KVOp(99).String() = %s", got)
	}
}

func TestKVHashAgreesWithEqual(t *testing.T) {
	states := []kvState{{}, {present: true}, {present: true, value: "a"}, {present: true, value: "b"}}
	for _, a := range states {
		for _, b := range states {
			if a == b && kvHash(a) != kvHash(b) {
				t.Errorf("equal states %+v hash differently", a)
			}
		}
	}
	if kvHash(kvState{}) == kvHash(kvState{present: true}) {
		t.Errorf("absent and present-empty hash alike; allowed, but avoidable")
	}
}

func TestKVPartitionOrdersByFirstAppearance(t *testing.T) {
	h := NewHistory()
	for i, k := range []string{"b", "a", "b", "c", "a"} {
		h.Complete(h.Invoke(0, KVGet(k), time.Duration(i)), missing, time.Duration(i))
	}
	parts := KVModel().Partition(h.Operations())
	var keys []string
	for _, p := range parts {
		keys = append(keys, fmt.Sprintf("%s:%d", p[0].Input.(KVInput).Key, len(p)))
	}
	if got, want := fmt.Sprint(keys), "[b:2 a:2 c:1]"; got != want {
		t.Errorf("partitions %s, want %s", got, want)
	}
}

// xorshift returns a draw of an int below m from a fixed xorshift, the
// same sequence on every run (so a generated history is too).
func xorshift() func(m int) int {
	x := uint64(0x9e3779b97f4a7c15)
	return func(m int) int {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return int(x % uint64(m))
	}
}

// oneKeyHistory returns n operations on one key, about half puts and half
// gets, up to four at a time concurrent, with unknown of the puts timing out
// (half of those taking effect). If stale, a read of a value never written
// is appended.
func oneKeyHistory(n, unknown int, stale bool) *History {
	h := NewHistory()
	var value string
	present := false
	next := xorshift()
	every := n
	if unknown > 0 {
		every = n / unknown
	}
	for i := range n {
		at := time.Duration(i * 10)
		call := max(0, at-time.Duration(next(40)))
		ret := at + time.Duration(next(40))
		v := fmt.Sprint(i)
		switch {
		case unknown > 0 && i%every == every/2 && h.UnknownLen() < unknown:
			if next(2) == 0 {
				value, present = v, true
			}
			h.Timeout(h.Invoke(i%8, KVPut("k", v), call))
		case next(2) == 0:
			value, present = v, true
			h.Complete(h.Invoke(i%8, KVPut("k", v), call), done, ret)
		default:
			h.Complete(h.Invoke(i%8, KVGet("k"), call), KVOutput{Value: value, Found: present}, ret)
		}
	}
	if stale {
		end := time.Duration(n * 10)
		h.Complete(h.Invoke(0, KVGet("k"), end), found("never written"), end+1)
	}
	return h
}
