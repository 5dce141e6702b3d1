package linearizability_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/strata-log/strata/linearizability"
)

// A workload records topic administration as a key-value history: the key
// is the topic name, the value its topic id. Here a CreateTopics times out,
// and two later clients disagree about whether it happened.
func Example() {
	h := linearizability.NewHistory()
	ms := time.Millisecond

	create := h.Invoke(0, linearizability.KVCreateIfAbsent("orders", "id-1"), 0*ms)
	h.Timeout(create) // the topic may or may not have been created

	describe := h.Invoke(1, linearizability.KVGet("orders"), 10*ms)
	h.Complete(describe, linearizability.KVOutput{Value: "id-1", Found: true}, 12*ms)

	res, err := linearizability.Check(linearizability.KVModel(), h)
	fmt.Println(res, err)

	// A later Metadata request that does not see the topic contradicts the
	// describe: nothing deleted it.
	metadata := h.Invoke(2, linearizability.KVGet("orders"), 20*ms)
	h.Complete(metadata, linearizability.KVOutput{}, 21*ms)

	res, err = linearizability.Check(linearizability.KVModel(), h)
	fmt.Println(res, err)

	var html bytes.Buffer // a simulator would write this to a file
	fmt.Println(linearizability.Visualize(&html, res), html.Len() > 0)
	// Output:
	// linearizable: 2 operations (1 with unknown outcome) <nil>
	// NOT linearizable: 3 operations (1 with unknown outcome) <nil>
	// <nil> true
}
