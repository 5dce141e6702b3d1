package linearizability

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

var (
	tp0 = LogPartition{Topic: "t", Partition: 0}
	tp1 = LogPartition{Topic: "t", Partition: 1}
)

// logOp is one operation of a hand-written log history. Times are virtual
// nanoseconds; ret is ignored for unknown outcomes.
type logOp struct {
	client    int
	in        LogInput
	out       any // LogOutput or unknownOutcome
	call, ret int
}

func appendOp(client int, p LogPartition, value string, out any, call, ret int) logOp {
	if offset, ok := out.(int); ok {
		out = LogOutput{Offset: int64(offset)}
	}
	return logOp{client: client, in: LogAppend(p, value), out: out, call: call, ret: ret}
}

// readOp reads p at offset: out is the value read, nothingYet, or an
// unknownOutcome.
func readOp(client int, p LogPartition, offset int64, out any, call, ret int) logOp {
	switch v := out.(type) {
	case string:
		out = LogOutput{Value: v, Found: true}
	case nothing:
		out = LogOutput{}
	}
	return logOp{client: client, in: LogRead(p, offset), out: out, call: call, ret: ret}
}

type nothing struct{}

var nothingYet nothing

// recordLogOps builds a LogOps from ops.
func recordLogOps(ops []logOp) *LogOps {
	var o LogOps
	for _, op := range ops {
		var id OpID
		if op.in.Op == LogOpAppend {
			id = o.Append(op.client, op.in.Partition, op.in.Value, time.Duration(op.call))
		} else {
			id = o.Read(op.client, op.in.Partition, op.in.Offset, time.Duration(op.call))
		}
		switch out := op.out.(type) {
		case unknownOutcome:
			switch out {
			case timedOut:
				o.Timeout(id)
			case failed:
				o.Fail(id)
			}
		case LogOutput:
			switch {
			case op.in.Op == LogOpAppend:
				o.Appended(id, out.Offset, time.Duration(op.ret))
			case out.Found:
				o.ReadValue(id, out.Value, time.Duration(op.ret))
			default:
				o.ReadNothing(id, time.Duration(op.ret))
			}
		}
	}
	return &o
}

// checkLog checks ops with CheckLog, with Check and PartitionLogModel, and
// with porcupine directly on the exported history, and fails t unless all
// three verdicts are want.
func checkLog(t *testing.T, ops []logOp, want bool) {
	t.Helper()
	o := recordLogOps(ops)
	res, err := CheckLog(o, DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, want, res.Ok, "CheckLog: %v\n%s", res, describeLogOps(ops))
	generic, err := Check(PartitionLogModel(), o.History())
	require.NoError(t, err)
	require.Equal(t, want, generic.Ok, "Check: %v\n%s", generic, describeLogOps(ops))
	require.Equal(t, want, porcupine.CheckOperations(PartitionLogModel(), o.History().Operations()), "porcupine\n%s", describeLogOps(ops))
}

func describeLogOps(ops []logOp) string {
	var b strings.Builder
	for _, op := range ops {
		out := op.out
		if u, ok := out.(unknownOutcome); ok {
			out = Unknown{Reason: [...]UnknownReason{TimedOut, Failed, Pending}[u]}
		}
		fmt.Fprintf(&b, "  client %d [%d, %d] %s\n", op.client, op.call, op.ret, describeLogOperation(op.in, out))
	}
	return b.String()
}

func TestPartitionLogModel(t *testing.T) {
	tests := []struct {
		name string
		ops  []logOp
		want bool
	}{
		{"sequential appends and reads", []logOp{
			appendOp(0, tp0, "a", 0, 0, 10),
			appendOp(0, tp0, "b", 1, 20, 30),
			readOp(1, tp0, 0, "a", 40, 50),
			readOp(1, tp0, 1, "b", 40, 50),
			readOp(1, tp0, 2, nothingYet, 40, 50),
		}, true},
		{"concurrent appends take either order", []logOp{
			appendOp(0, tp0, "a", 1, 0, 10),
			appendOp(1, tp0, "b", 0, 0, 10),
			readOp(2, tp0, 0, "b", 20, 30),
		}, true},
		{"a read concurrent with an append may see it or not", []logOp{
			appendOp(0, tp0, "a", 0, 0, 10),
			readOp(1, tp0, 0, nothingYet, 5, 15),
			readOp(2, tp0, 0, "a", 5, 15),
		}, true},
		{"a read sees a value before its append was invoked", []logOp{
			readOp(1, tp0, 0, "a", 0, 10),
			appendOp(0, tp0, "a", 0, 20, 30),
		}, false},
		{"two appends got the same offset", []logOp{
			appendOp(0, tp0, "a", 0, 0, 10),
			appendOp(1, tp0, "b", 0, 0, 10),
		}, false},
		{"a read found nothing yet at an offset a completed append returned", []logOp{
			appendOp(0, tp0, "a", 0, 0, 10),
			readOp(1, tp0, 0, nothingYet, 20, 30),
		}, false},
		{"a read of a value never appended", []logOp{
			appendOp(0, tp0, "a", 0, 0, 10),
			readOp(1, tp0, 0, "x", 20, 30),
		}, false},
		{"a read of a value appended to another partition", []logOp{
			appendOp(0, tp1, "a", 0, 0, 10),
			readOp(1, tp0, 0, "a", 20, 30),
		}, false},
		{"partitions are independent", []logOp{
			appendOp(0, tp0, "a", 0, 0, 10),
			appendOp(0, tp1, "b", 0, 0, 10),
			readOp(1, tp1, 0, "b", 20, 30),
			readOp(1, tp0, 1, nothingYet, 20, 30),
		}, true},
		{"an append after one it followed got a lower offset", []logOp{
			appendOp(0, tp0, "a", 1, 0, 10),
			appendOp(0, tp0, "b", 0, 20, 30),
		}, false},
		{"an unknown append a read saw", []logOp{
			appendOp(0, tp0, "a", timedOut, 0, 0),
			readOp(1, tp0, 0, "a", 20, 30),
			readOp(1, tp0, 0, "a", 40, 50),
		}, true},
		{"an unknown append that did not happen", []logOp{
			appendOp(0, tp0, "a", failed, 0, 0),
			readOp(1, tp0, 0, nothingYet, 20, 30),
		}, true},
		{"an unknown append seen, then not seen", []logOp{
			appendOp(0, tp0, "a", timedOut, 0, 0),
			readOp(1, tp0, 0, "a", 20, 30),
			readOp(1, tp0, 0, nothingYet, 40, 50),
		}, false},
		{"an unknown append seen at two offsets", []logOp{
			appendOp(0, tp0, "x", 0, 0, 10),
			appendOp(0, tp0, "a", timedOut, 20, 0),
			readOp(1, tp0, 1, "a", 30, 40),
			readOp(1, tp0, 2, "a", 30, 40),
		}, false},
		{"an unknown append read before its call", []logOp{
			readOp(1, tp0, 0, "a", 0, 10),
			appendOp(0, tp0, "a", timedOut, 20, 0),
		}, false},
		{"an unseen unknown append explains a later offset", []logOp{
			appendOp(0, tp0, "a", 0, 0, 10),
			appendOp(1, tp0, "x", timedOut, 20, 0),
			appendOp(0, tp0, "b", 2, 30, 40),
			readOp(2, tp0, 0, "a", 50, 60),
			readOp(2, tp0, 2, "b", 50, 60),
		}, true},
		{"an unknown append called after an offset it would explain", []logOp{
			appendOp(0, tp0, "a", 0, 0, 10),
			appendOp(0, tp0, "b", 2, 20, 30),
			appendOp(1, tp0, "x", timedOut, 40, 0),
		}, false},
		{"the hole an unseen append left is read as another value", []logOp{
			appendOp(1, tp0, "x", timedOut, 0, 0),
			appendOp(0, tp0, "b", 1, 10, 20),
			readOp(2, tp0, 0, "y", 30, 40),
		}, false},
		{"unseen unknown appends may also never happen", []logOp{
			appendOp(1, tp0, "x", timedOut, 0, 0),
			appendOp(2, tp0, "y", failed, 0, 0),
			appendOp(0, tp0, "b", 1, 10, 20),
			readOp(3, tp0, 2, nothingYet, 30, 40),
		}, true},
		{"an unknown read tells nothing", []logOp{
			appendOp(0, tp0, "a", 0, 0, 10),
			readOp(1, tp0, 0, timedOut, 20, 0),
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkLog(t, tt.ops, tt.want) })
	}
}

func TestPartitionLogModelDescribes(t *testing.T) {
	m := PartitionLogModel()
	checkDescribes(t, m, []describeCase{
		{LogAppend(tp0, "v"), LogOutput{Offset: 3}, `Append(t-0, "v") -> 3`},
		{LogAppend(tp0, "v"), Unknown{Reason: TimedOut}, `Append(t-0, "v") -> ? (timeout)`},
		{LogAppend(tp0, "v"), logInferred{offset: 4, reason: Failed}, `Append(t-0, "v") -> ? (failed), read at 4`},
		{logArm{partition: tp1, value: "v"}, Unknown{Reason: Pending}, `Append(t-1, "v") -> ? (pending)`},
		{LogRead(tp0, 3), LogOutput{Value: "v", Found: true}, `Read(t-0, 3) -> "v"`},
		{LogRead(tp0, 3), LogOutput{}, `Read(t-0, 3) -> nothing yet`},
		{LogRead(tp0, 3), Unknown{Reason: Failed}, `Read(t-0, 3) -> ? (failed)`},
		{logReads{partition: tp0, records: recs(4, "a", "b")}, nil, `Read(t-0, 4..5) -> "a" "b"`},
		{logReads{partition: tp0, records: []LogRecord{{4, "a"}, {6, "c"}}}, nil, `Read(t-0, 4, 6) -> "a" "c"`},
		{logReads{partition: tp0, records: recs(0, "a", "b", "c", "d", "e", "f", "g")}, nil, `Read(t-0, 0..6) -> "a" "b" "c" … "e" "f" "g"`},
		{logReads{partition: tp0, records: []LogRecord{{0, "a"}, {2, "b"}, {4, "c"}, {6, "d"}, {8, "e"}, {10, "f"}, {12, "g"}}}, nil,
			`Read(t-0, 0, 2, 4, …, 8, 10, 12) -> "a" "b" "c" … "e" "f" "g"`},
	})
	s := m.Init()
	require.Equal(t, "0 records", m.DescribeState(s))
	_, s = m.Step(s, logArm{partition: tp0, claimed: &logClaims{}}, Unknown{Reason: TimedOut})
	for i := range 8 {
		offset := i
		if i == 7 {
			offset = 8 // after a hole
		}
		var ok bool
		ok, s = m.Step(s, LogAppend(tp0, fmt.Sprint("v", i)), LogOutput{Offset: int64(offset)})
		require.True(t, ok)
	}
	require.Equal(t, `9 records: … "v3" "v4" "v5" "v6" ? "v7"`, m.DescribeState(s))
	_, s = m.Step(s, logArm{partition: tp0, claimed: &logClaims{}}, Unknown{Reason: TimedOut})
	require.Equal(t, `9 records: … "v3" "v4" "v5" "v6" ? "v7" (+1 unknown appends pending)`, m.DescribeState(s))
	require.Equal(t, "LogOp(9)", LogOp(9).String())
}

// TestPartitionLogStatesAreCanonical: states holding the same records are
// ==, however they were reached, and states holding different ones are
// not; porcupine's cache relies on the first, correctness on the second.
func TestPartitionLogStatesAreCanonical(t *testing.T) {
	m := PartitionLogModel()
	steps := func(s any, values ...string) any {
		for _, v := range values {
			end := s.(logState).end
			ok, next := m.Step(s, LogAppend(tp0, v), LogOutput{Offset: end})
			require.True(t, ok)
			s = next
		}
		return s
	}
	root := m.Init()
	ab := steps(root, "a", "b")
	ba := steps(root, "b", "a")
	ab2 := steps(steps(root, "a"), "b")
	abc := steps(ab, "c")
	bac := steps(ba, "c")
	require.Equal(t, ab, ab2)
	require.Equal(t, m.Hash(ab), m.Hash(ab2))
	require.NotEqual(t, ab, ba)
	require.NotEqual(t, abc, bac)
	require.Equal(t, abc, steps(root, "a", "b", "c"))
	for _, c := range []struct {
		s    any
		want string
	}{{ab, `2 records: "a" "b"`}, {ba, `2 records: "b" "a"`}, {abc, `3 records: "a" "b" "c"`}, {bac, `3 records: "b" "a" "c"`}} {
		require.Equal(t, c.want, m.DescribeState(c.s))
	}
}

func TestCheckLogErrors(t *testing.T) {
	var o LogOps
	for i := range 3 {
		o.Appended(o.Append(0, tp0, fmt.Sprint(i), 0), int64(i), 1)
	}
	_, err := CheckLog(&o, Limits{MaxOperations: 2})
	require.ErrorIs(t, err, ErrHistoryTooLarge)
	res, err := CheckLog(&o, Limits{MaxOperations: 3})
	require.NoError(t, err)
	require.True(t, res.Ok)

	o.Timeout(o.Append(1, tp0, "1", 2))
	_, err = CheckLog(&o, DefaultLimits())
	require.ErrorIs(t, err, ErrValueAppendedTwice)

	var other LogOps
	other.Appended(other.Append(0, tp0, "a", 0), 0, 1)
	other.Appended(other.Append(0, tp1, "a", 0), 0, 1)
	other.Discard(other.Append(0, tp0, "a", 2))
	res, err = CheckLog(&other, DefaultLimits())
	require.NoError(t, err, "one value in two partitions, and a discarded append")
	require.True(t, res.Ok)
	require.Equal(t, 2, other.Len())
}

func TestLogOpsMisusePanics(t *testing.T) {
	var o LogOps
	read := o.Read(0, tp0, 0, 0)
	app := o.Append(0, tp0, "a", 0)
	require.Panics(t, func() { o.Appended(read, 0, 1) })
	require.Panics(t, func() { o.ReadValue(app, "a", 1) })
	require.Panics(t, func() { o.ReadNothing(app, 1) })
	require.Panics(t, func() { o.ReadNothing(OpID(7), 1) })
	o.Appended(app, 0, 1)
	require.Panics(t, func() { o.Appended(app, 0, 1) }, "completed twice")
}

func TestLogOpsFetched(t *testing.T) {
	var o LogOps
	o.Appended(o.Append(0, tp0, "a", 0), 0, 10)
	o.Appended(o.Append(0, tp0, "b", 0), 1, 10)
	o.Fetched(1, tp0, 0, 20, 30, recs(0, "a", "b"))
	o.Fetched(1, tp0, 2, 20, 30, nil)
	require.Equal(t, 5, o.Len())
	res, err := CheckLog(&o, DefaultLimits())
	require.NoError(t, err)
	require.True(t, res.Ok, "%v", res)
	o.Fetched(1, tp0, 1, 40, 50, nil)
	res, err = CheckLog(&o, DefaultLimits())
	require.NoError(t, err)
	require.False(t, res.Ok)
}

// manyUnknownAppends returns a history of one partition with n appends
// acknowledged and n with an unknown outcome, up to four at a time
// concurrent; half of the unknown ones take effect, and some of those are
// read while the workload runs. A final fetch reads every record and finds
// nothing after them; if stale, a read after it finds nothing at the last
// record's offset.
func manyUnknownAppends(n int, stale bool) *LogOps {
	var o LogOps
	var log []string
	next := xorshift()
	for i := range 2 * n {
		at := time.Duration(i * 10)
		call := max(0, at-time.Duration(next(30)))
		ret := at + time.Duration(next(30))
		v := fmt.Sprint("v", i)
		if i%2 == 1 {
			id := o.Append(i%4, tp0, v, call)
			o.Timeout(id)
			if next(2) == 0 {
				continue
			}
			log = append(log, v)
			if next(3) == 0 {
				o.ReadValue(o.Read(4, tp0, int64(len(log)-1), at), v, ret)
			}
			continue
		}
		log = append(log, v)
		o.Appended(o.Append(i%4, tp0, v, call), int64(len(log)-1), ret)
	}
	end := time.Duration(2*n*10 + 100)
	for i, v := range log {
		o.ReadValue(o.Read(5, tp0, int64(i), end), v, end+1)
	}
	o.ReadNothing(o.Read(5, tp0, int64(len(log)), end), end+1)
	if stale {
		o.ReadNothing(o.Read(5, tp0, int64(len(log)-1), end+10), end+11)
	}
	return &o
}

// TestCheckLogManyUnknownAppends: 200 appends with an unknown outcome in
// one partition, which Check refuses (its limit is 64) and porcupine on
// the raw history would search for exponentially long, check in
// milliseconds.
func TestCheckLogManyUnknownAppends(t *testing.T) {
	ok := manyUnknownAppends(200, false)
	require.Equal(t, 200, ok.UnknownLen())
	res, err := CheckLog(ok, DefaultLimits())
	require.NoError(t, err)
	require.True(t, res.Ok, "%v", res)
	_, err = Check(PartitionLogModel(), ok.History())
	require.ErrorIs(t, err, ErrHistoryTooLarge)

	res, err = CheckLog(manyUnknownAppends(200, true), DefaultLimits())
	require.NoError(t, err)
	require.False(t, res.Ok, "%v", res)
	require.NoError(t, Visualize(&bytes.Buffer{}, res))
}

func BenchmarkCheckLogUnknownAppends(b *testing.B) {
	for _, stale := range []bool{false, true} {
		b.Run(fmt.Sprintf("appends=400/unknown=200/stale=%v", stale), func(b *testing.B) {
			o := manyUnknownAppends(200, stale)
			for b.Loop() {
				if res, err := CheckLog(o, DefaultLimits()); err != nil || res.Ok == stale {
					b.Fatalf("got %v, %v", res, err)
				}
			}
		})
	}
}

// failingLog is a non-linearizable history over two partitions with
// unknown appends of every kind, whose search finds partial
// linearizations of equal length.
func failingLog() *LogOps {
	var o LogOps
	for _, p := range []LogPartition{tp1, tp0} {
		v := func(s string) string { return p.String() + "/" + s }
		o.Appended(o.Append(0, p, v("a"), 0), 0, 10)
		o.Appended(o.Append(1, p, v("b"), 20), 1, 100)
		o.Appended(o.Append(2, p, v("c"), 20), 2, 100)
		o.Timeout(o.Append(3, p, v("seen"), 25))
		o.Fail(o.Append(3, p, v("unseen"), 26))
		o.ReadValue(o.Read(4, p, 1, 110), v("c"), 120)
		o.ReadValue(o.Read(5, p, 3, 110), v("seen"), 120)
		o.ReadNothing(o.Read(5, p, 2, 130), 140)
	}
	return &o
}

func TestVisualizeLog(t *testing.T) {
	var first []byte
	for i := range 10 {
		res, err := CheckLog(failingLog(), DefaultLimits())
		require.NoError(t, err)
		require.False(t, res.Ok)
		var buf bytes.Buffer
		require.NoError(t, Visualize(&buf, res))
		if i == 0 {
			first = buf.Bytes()
			html := buf.String()
			for _, want := range []string{
				`Append(t-0, \"t-0/b\") -\u003e 1`,
				`Append(t-1, \"t-1/seen\") -\u003e ? (timeout), read at 3`,
				`Append(t-1, \"t-1/unseen\") -\u003e ? (failed)`,
				`Read(t-0, 2) -\u003e nothing yet`,
			} {
				require.Contains(t, html, want)
			}
			continue
		}
		require.Equal(t, first, buf.Bytes(), "run %d wrote a different visualisation", i)
	}
}

// refLog is the sequential reference: one slice per partition.
type refLog map[LogPartition][]string

// genLogOps draws a history produced by running random appends and
// fetches (reads of up to three consecutive offsets, stopping at the end)
// against refLog one at a time, at linearization points 100 ns apart, each
// inside its operation's interval; the intervals of neighbours overlap.
// Operations with an unknown outcome take effect at their point or never.
// Every appended value is unique.
func genLogOps(t *rapid.T, maxOps int) []logOp {
	parts := []LogPartition{tp0, tp1}[:rapid.IntRange(1, 2).Draw(t, "partitions")]
	n := rapid.IntRange(1, maxOps).Draw(t, "n")
	ref := refLog{}
	ops := make([]logOp, 0, n)
	for i := range n {
		p := rapid.SampledFrom(parts).Draw(t, "partition")
		point := 100*i + 50
		call := max(0, point-rapid.IntRange(0, 200).Draw(t, "before"))
		ret := point + rapid.IntRange(0, 200).Draw(t, "after")
		unknown := rapid.IntRange(0, 4).Draw(t, "unknown") == 0
		var op logOp
		if rapid.Bool().Draw(t, "append") {
			v := fmt.Sprint("v", i)
			offset := len(ref[p])
			if !unknown || rapid.Bool().Draw(t, "applied") {
				ref[p] = append(ref[p], v)
			}
			op = appendOp(i%5, p, v, offset, call, ret)
		} else {
			// A fetch: up to three reads from offset, at one instant.
			offset := rapid.IntRange(0, len(ref[p])+1).Draw(t, "offset")
			for j := range rapid.IntRange(1, 3).Draw(t, "records") {
				var out any = nothingYet
				if offset+j < len(ref[p]) {
					out = ref[p][offset+j]
				}
				op = readOp(i%5, p, int64(offset+j), out, call, ret)
				if out == nothingYet || j == 2 {
					break
				}
				ops = append(ops, op)
			}
		}
		if unknown {
			op.out = rapid.SampledFrom([]unknownOutcome{timedOut, failed, pending}).Draw(t, "reason")
		}
		ops = append(ops, op)
	}
	return ops
}

func TestReferenceLogHistoriesAreLinearizable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ops := genLogOps(t, 60)
		res, err := CheckLog(recordLogOps(ops), DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if !res.Ok {
			t.Fatalf("reference history not linearizable: %v\n%s", res, describeLogOps(ops))
		}
	})
}

// TestCheckLogAgreesWithCheck compares CheckLog, which rewrites unknown
// outcomes, with Check on the same model and with porcupine on the
// exported history. Outputs are sometimes corrupted so that both verdicts
// occur.
func TestCheckLogAgreesWithCheck(t *testing.T) {
	verdicts := map[bool]int{}
	rapid.Check(t, func(t *rapid.T) {
		ops := genLogOps(t, 10)
		for i := range ops {
			if _, known := ops[i].out.(LogOutput); !known || rapid.IntRange(0, 4).Draw(t, "corrupt") != 0 {
				continue
			}
			out := ops[i].out.(LogOutput)
			switch {
			case ops[i].in.Op == LogOpAppend:
				out.Offset += int64(rapid.IntRange(-1, 1).Draw(t, "shift"))
			case out.Found && rapid.Bool().Draw(t, "forget"):
				out = LogOutput{}
			default:
				out = LogOutput{Value: fmt.Sprint("v", rapid.IntRange(0, len(ops)).Draw(t, "value")), Found: true}
			}
			ops[i].out = out
		}
		o := recordLogOps(ops)
		res, err := CheckLog(o, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		generic, err := Check(PartitionLogModel(), o.History())
		if err != nil {
			t.Fatal(err)
		}
		raw := porcupine.CheckOperations(PartitionLogModel(), o.History().Operations())
		if res.Ok != generic.Ok || res.Ok != raw {
			t.Fatalf("CheckLog says %v, Check %v, porcupine linearizable=%v\n%s", res, generic, raw, describeLogOps(ops))
		}
		verdicts[res.Ok]++
	})
	if verdicts[true] == 0 || verdicts[false] == 0 {
		t.Errorf("generator produced only one verdict: %v", verdicts)
	}
	t.Logf("verdicts: %v", verdicts)
}

// TestVisualizeLogDrawsAnyHistory: VisualizeLog draws a linearizable
// history too (a simulator run that failed another check), the same bytes
// every time, and a failing one as Visualize draws CheckLog's result.
func TestVisualizeLogDrawsAnyHistory(t *testing.T) {
	var first []byte
	for i := range 3 {
		var buf bytes.Buffer
		require.NoError(t, VisualizeLog(&buf, manyUnknownAppends(20, false), DefaultLimits()))
		require.Contains(t, buf.String(), `Append(t-0, \"v0\") -\u003e 0`)
		if i == 0 {
			first = buf.Bytes()
			continue
		}
		require.Equal(t, first, buf.Bytes())
	}
	var buf bytes.Buffer
	require.NoError(t, VisualizeLog(&buf, failingLog(), DefaultLimits()))
	require.Contains(t, buf.String(), `Read(t-0, 2) -\u003e nothing yet`)
}

// TestCheckLogStepBudget: a search past Limits.MaxSteps in a partition
// gives no verdict (ErrSearchBudget), whatever it would have found; within
// the budget the verdict stands.
func TestCheckLogStepBudget(t *testing.T) {
	for _, stale := range []bool{false, true} {
		_, err := CheckLog(manyUnknownAppends(200, stale), Limits{MaxSteps: 100})
		require.ErrorIs(t, err, ErrSearchBudget, "stale=%v", stale)
		res, err := CheckLog(manyUnknownAppends(200, stale), Limits{MaxSteps: 1_000_000})
		require.NoError(t, err)
		require.Equal(t, !stale, res.Ok)
	}
	require.ErrorIs(t, VisualizeLog(&bytes.Buffer{}, manyUnknownAppends(200, false), Limits{MaxSteps: 100}), ErrSearchBudget)
}
