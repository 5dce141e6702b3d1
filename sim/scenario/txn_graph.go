package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/strata-log/strata/sim/kclient"
)

// (u) G0 and G1c: the dependency graph over the committed transactions
// (those the final read_committed read shows) must be acyclic. Its
// edges:
//
//   - ww on a partition: T1 -> T2 when T1's commit marker there precedes
//     T2's first record there (T2 wrote after T1 was decided);
//   - wr: T -> E when ETL transaction E consumed a record of T.
//
// Each edge orders the two transactions' commit decisions, so a cycle
// is a transaction decided before itself: a write cycle (G0) if it has
// only ww edges, a circular information flow (G1c) otherwise. The ww
// edges between transactions whose writes to a partition interleave
// (T2's record before T1's marker) are left out: Kafka orders no two
// open transactions, so such cycles are allowed (Jepsen found G0 in
// Kafka 3.0 this way); the checked graph is the part whose order every
// correct implementation keeps.

type txnEdge struct {
	to   int    // index in the node list
	kind string // "ww txn-1", "wr"
}

// txnReadPartitions lists the partitions the txn readers read.
func txnReadPartitions() []kclient.TopicPartition {
	var out []kclient.TopicPartition
	for p := int32(0); p < txnPartitions; p++ {
		out = append(out, kclient.TopicPartition{Topic: txnTopic, Partition: p})
	}
	for p := int32(0); p < etlPartitions; p++ {
		out = append(out, kclient.TopicPartition{Topic: etlTopic, Partition: p})
	}
	return out
}

// graphCheck is (u) on the final read.
func (t *txnRun) graphCheck() error {
	// The nodes: committed transactions, in t.order.
	var nodes []*txnRecord
	index := map[*txnRecord]int{}
	for _, rec := range t.order {
		if t.finalHas(rec) {
			index[rec] = len(nodes)
			nodes = append(nodes, rec)
		}
	}
	edges := make([][]txnEdge, len(nodes))
	add := func(from, to int, kind string) {
		if from != to {
			edges[from] = append(edges[from], txnEdge{to, kind})
		}
	}
	for _, tp := range txnReadPartitions() {
		st := t.final.parts[tp]
		type span struct {
			node          int
			first, marker int64
		}
		var spans []span
		for i, rec := range nodes {
			for j, w := range rec.writes {
				if writeTP(w) != tp || rec.offsets[j] < 0 {
					continue
				}
				last := rec.offsets[j] + int64(len(w.Values)) - 1
				marker := int64(-1)
				for _, m := range st.markers {
					if m.ProducerID == rec.pid && m.Offset > last {
						marker = m.Offset
						break
					}
				}
				spans = append(spans, span{i, rec.offsets[j], marker})
			}
		}
		kind := fmt.Sprintf("ww %s-%d", tp.Topic, tp.Partition)
		for _, a := range spans {
			for _, b := range spans {
				if a.marker >= 0 && a.marker < b.first {
					add(a.node, b.node, kind)
				}
			}
		}
	}
	reversed := false
	for i, rec := range nodes {
		if rec.etl == nil {
			continue
		}
		for _, in := range rec.etl.inputs {
			key, _, _ := strings.Cut(in.value, "/")
			if from, ok := index[t.txns[key]]; ok {
				add(from, i, "wr")
				if t.h.bugs.txn.reverseEdge && !reversed {
					reversed = true
					add(i, from, "wr")
				}
			}
		}
	}
	// Sorted, one edge per pair (the first kind in order).
	for i := range edges {
		slices.SortFunc(edges[i], func(x, y txnEdge) int {
			if x.to != y.to {
				return x.to - y.to
			}
			return strings.Compare(x.kind, y.kind)
		})
		edges[i] = slices.CompactFunc(edges[i], func(x, y txnEdge) bool { return x.to == y.to })
	}
	if cyc := findCycle(edges); cyc != nil {
		var b strings.Builder
		g0 := true
		for k, e := range cyc {
			if k == 0 {
				b.WriteString(nodes[e.from].key)
			}
			fmt.Fprintf(&b, " -%s-> %s", e.kind, nodes[e.to].key)
			if e.kind == "wr" {
				g0 = false
			}
		}
		name := "G1c circular information flow"
		if g0 {
			name = "G0 write cycle"
		}
		return fmt.Errorf("(u) %s over committed transactions: %s", name, b.String())
	}
	n := 0
	for _, es := range edges {
		n += len(es)
	}
	t.graphNodes, t.graphEdges = t.graphNodes+len(nodes), t.graphEdges+n
	t.h.s.Trace(fmt.Sprintf("txn:graph-check ok nodes=%d edges=%d", len(nodes), n))
	return nil
}

// finalHas reports whether the final read holds a record of rec.
func (t *txnRun) finalHas(rec *txnRecord) bool {
	for i, w := range rec.writes {
		st := t.final.parts[writeTP(w)]
		if off := rec.offsets[i]; st != nil && off >= 0 && len(w.Values) > 0 && st.delivered[off] == string(w.Values[0]) {
			return true
		}
	}
	return false
}

type cycleEdge struct {
	from, to int
	kind     string
}

// findCycle returns the edges of a cycle of the graph, or nil: a depth
// first search from each node in order, the edges in order.
func findCycle(edges [][]txnEdge) []cycleEdge {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(edges))
	type frame struct{ node, next int }
	for root := range edges {
		if color[root] != white {
			continue
		}
		stack := []frame{{root, 0}}
		color[root] = grey
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next == len(edges[f.node]) {
				color[f.node] = black
				stack = stack[:len(stack)-1]
				continue
			}
			e := edges[f.node][f.next]
			f.next++
			switch color[e.to] {
			case white:
				color[e.to] = grey
				stack = append(stack, frame{e.to, 0})
			case grey:
				// The cycle: from e.to down the stack to f.node, then e.
				var cyc []cycleEdge
				start := slices.IndexFunc(stack, func(x frame) bool { return x.node == e.to })
				for k := start; k < len(stack)-1; k++ {
					from := stack[k]
					used := edges[from.node][from.next-1]
					cyc = append(cyc, cycleEdge{from.node, used.to, used.kind})
				}
				return append(cyc, cycleEdge{f.node, e.to, e.kind})
			}
		}
	}
	return nil
}
