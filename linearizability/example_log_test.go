package linearizability_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/strata-log/strata/linearizability"
)

// A producer's append times out, and a consumer later reads its record:
// the append happened. A read that then finds nothing at that offset
// contradicts it.
func ExampleCheckLog() {
	var ops linearizability.LogOps
	p := linearizability.LogPartition{Topic: "orders", Partition: 0}
	ms := time.Millisecond

	ops.Appended(ops.Append(0, p, "order-1", 0*ms), 0, 2*ms)
	ops.Timeout(ops.Append(0, p, "order-2", 3*ms))
	ops.Fetched(1, p, 0, 10*ms, 12*ms, []linearizability.LogRecord{{Offset: 0, Value: "order-1"}, {Offset: 1, Value: "order-2"}})

	res, err := linearizability.CheckLog(&ops, linearizability.DefaultLimits())
	fmt.Println(res, err)

	ops.Fetched(2, p, 1, 20*ms, 21*ms, nil)
	res, err = linearizability.CheckLog(&ops, linearizability.DefaultLimits())
	fmt.Println(res, err)

	var html bytes.Buffer // a simulator writes this next to the replay command
	fmt.Println(linearizability.Visualize(&html, res), html.Len() > 0)
	// Output:
	// linearizable: 4 operations (1 with unknown outcome) <nil>
	// NOT linearizable: 5 operations (1 with unknown outcome) <nil>
	// <nil> true
}

// A consumer skips a record acknowledged to a producer, which is also
// missing from the final read.
func ExampleLogHistory_Anomalies() {
	now := time.Duration(0)
	h := linearizability.NewLogHistory(func() time.Duration { now += time.Millisecond; return now })
	p := linearizability.LogPartition{Topic: "orders", Partition: 0}
	rec := func(offset int64, value string) linearizability.LogRecord {
		return linearizability.LogRecord{Offset: offset, Value: value}
	}

	_ = h.Produced(p, "p1/b1", []string{"a", "b", "c"})
	_ = h.Attempt(linearizability.LogAttempt{Producer: "p1", Partition: p, Build: "p1/b1", Send: 1,
		Outcome: linearizability.LogAcked, Offset: 0}, []string{"a", "b", "c"})
	h.StartSession("c1", 1, p, 0)
	_ = h.ReadWithHW("c1", 1, p, []linearizability.LogRecord{rec(0, "a"), rec(2, "c")}, 3)
	h.StartSession("c2", 1, p, 1)
	_ = h.ReadWithHW("c2", 1, p, []linearizability.LogRecord{rec(1, "b")}, 3)
	h.FinalRead(p, 0, 3, []linearizability.LogRecord{rec(0, "a"), rec(2, "c")})

	fmt.Print(h.Anomalies())
	// Output:
	// lost: 1 [orders-0 at 2ms: acknowledged "b" at 1 (ack of p1 p1/b1 send 1): missing from the final read of 0..2]
	// duplicate: 0
	// inconsistent-offsets: 0
	// poll-skip: 1 [orders-0 at 4ms: c1 session 1 read offset 2 ("c") after offset 0, skipping 1..1, where "b" at 1 (ack of p1 p1/b1 send 1) was seen]
	// nonmonotonic-poll: 0
	// nonmonotonic-send: 0
	// unseen: 0
	// read-past-hw: 0
}
