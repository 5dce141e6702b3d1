package linearizability

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// LogOp names an operation of the partition log model.
type LogOp uint8

const (
	// LogOpAppend appends a value to the end of a partition; its output is
	// the offset the value was given.
	LogOpAppend LogOp = iota + 1
	// LogOpRead reads the record at an offset: its value, or nothing yet
	// if the offset is at or past the end of the partition.
	LogOpRead
)

// String returns the operation's name as DescribeOperation prints it.
func (o LogOp) String() string {
	switch o {
	case LogOpAppend:
		return "Append"
	case LogOpRead:
		return "Read"
	default:
		return fmt.Sprintf("LogOp(%d)", uint8(o))
	}
}

// LogInput is the input of a partition log operation. Value is used by
// Append only, Offset by Read only.
type LogInput struct {
	Op        LogOp
	Partition LogPartition
	Value     string
	Offset    int64
}

// LogAppend returns the input of an Append of value to p.
func LogAppend(p LogPartition, value string) LogInput {
	return LogInput{Op: LogOpAppend, Partition: p, Value: value}
}

// LogRead returns the input of a Read of p at offset.
func LogRead(p LogPartition, offset int64) LogInput {
	return LogInput{Op: LogOpRead, Partition: p, Offset: offset}
}

// LogOutput is the observed output of a partition log operation.
//
//   - Append: Offset, the offset the value was given.
//   - Read: Found and, when Found, Value; a Read that is not Found saw
//     nothing yet at its offset.
//
// An operation whose outcome was not observed has an [Unknown] output
// instead.
type LogOutput struct {
	Offset int64
	Value  string
	Found  bool
}

// logArm is the input CheckLog gives an append with an unknown outcome
// whose value no read returned: an instantaneous operation at its call
// that adds one anonymous record to the appends that may still happen
// (see logops.go). Its output is the append's Unknown.
type logArm struct {
	partition LogPartition
	value     string
	claimed   *logClaims
}

// logClaims are the offsets of a partition that some append returned or
// some read found a value at, sorted. An anonymous append never takes
// effect at one of them: the append or read that names it could then
// never be linearized, and a search that finds this out only at the end
// of the history would try every way of making the mistake.
type logClaims struct {
	offsets []int64
}

// free reports whether no offset in [from, to) is claimed.
func (c *logClaims) free(from, to int64) bool {
	if from >= to {
		return true
	}
	if c == nil {
		return false
	}
	i, _ := slices.BinarySearch(c.offsets, from)
	return i == len(c.offsets) || c.offsets[i] >= to
}

// logReads is the input CheckLog gives the reads of one client with the
// same call and return times that all found a value (the records of one
// fetch): they hold at one instant exactly when each holds at some
// instant of the interval, since a record, once there, stays. Its output
// is nil.
type logReads struct {
	partition LogPartition
	records   []LogRecord
}

// logInferred is the output CheckLog gives an append with an unknown
// outcome whose value a read returned at offset: the append happened, at
// that offset (see logops.go).
type logInferred struct {
	offset int64
	reason UnknownReason
}

// logSlot is one offset of a partition: a value, or a hole left by an
// append with an unknown outcome whose value was never read.
type logSlot struct {
	value string
	hole  bool
}

// logState is the model's state for one partition: the records from
// offset 0 to end (exclusive), and how many anonymous appends armed by
// CheckLog may still take effect. It is comparable, and two states are ==
// exactly when they hold the same records (see logTree), so porcupine's
// default equality is the model's.
type logState struct {
	node    *logNode
	end     int64
	pending int
}

// logTree stores every sequence of records a search reaches, sharing
// prefixes: porcupine tries many orders of concurrent appends from one
// state, and copying the log for each would cost its length. One tree
// serves one partition's search (porcupine calls Init once per partition
// and searches it on one goroutine), so it needs no locking.
type logTree struct {
	nodes uint64 // nodes made, for ids
	// claimed is set by the first logArm: only anonymous appends use it.
	claimed *logClaims
	// steps counts the model steps of the search; past maxSteps (when
	// not 0) every step fails and exhausted is set, so that the search
	// ends at once and CheckLog reports no verdict (see Limits.MaxSteps).
	steps, maxSteps uint64
	exhausted       bool
}

// logNode is a run of records starting at offset base, following its
// parent's records up to base. slots only ever grows, so a state that
// points into a node sees the same records forever. Where a search
// appends at offset o a record other than slots[o-base], it takes (or
// makes) the fork keyed by that offset and record, so each sequence of
// records has exactly one (node, end): equality of states is identity.
type logNode struct {
	tree   *logTree
	id     uint64
	parent *logNode
	base   int64
	slots  []logSlot
	forks  map[logFork]*logNode
}

type logFork struct {
	offset int64
	slot   logSlot
}

func newLogState() any {
	t := &logTree{}
	return logState{node: t.node(nil, 0, nil)}
}

func (t *logTree) node(parent *logNode, base int64, slots []logSlot) *logNode {
	t.nodes++
	return &logNode{tree: t, id: t.nodes, parent: parent, base: base, slots: slots}
}

// append returns s with slot added at its end.
func (s logState) append(slot logSlot) logState {
	n := s.node
	next := logState{node: n, end: s.end + 1, pending: s.pending}
	switch i := s.end - n.base; {
	case i == int64(len(n.slots)):
		n.slots = append(n.slots, slot)
	case n.slots[i] == slot:
	default:
		key := logFork{offset: s.end, slot: slot}
		fork, ok := n.forks[key]
		if !ok {
			fork = n.tree.node(n, s.end, []logSlot{slot})
			if n.forks == nil {
				n.forks = map[logFork]*logNode{}
			}
			n.forks[key] = fork
		}
		next.node = fork
	}
	return next
}

// at returns the record at offset, which must be below s.end.
func (s logState) at(offset int64) logSlot {
	n := s.node
	for offset < n.base {
		n = n.parent
	}
	return n.slots[offset-n.base]
}

// PartitionLogModel returns the porcupine model of Kafka-style partitions
// as append-only logs, partitioned by partition. Inputs are [LogInput];
// outputs are [LogOutput] or [Unknown]. An Append whose outcome is
// unknown appends its value when it takes effect. The model knows nothing
// of high watermarks: a partition's records are those committed, and a
// read past the high watermark returns nothing yet.
//
// [Check] accepts this model, but [CheckLog] checks the same
// specification with an encoding of unknown appends that stays cheap for
// hundreds of them.
func PartitionLogModel() porcupine.Model {
	return porcupine.Model{
		Partition:         partitionByLogPartition,
		Init:              newLogState,
		Step:              logStep,
		Hash:              logHash,
		DescribeOperation: describeLogOperation,
		DescribeState:     describeLogState,
	}
}

// partitionByLogPartition splits a history into one sub-history per
// partition, in order of partition.
func partitionByLogPartition(history []porcupine.Operation) [][]porcupine.Operation {
	var ids []LogPartition
	index := map[LogPartition]int{}
	for _, op := range history {
		p := logInputPartition(op.Input)
		if _, ok := index[p]; !ok {
			index[p] = len(ids)
			ids = append(ids, p)
		}
	}
	sorted := slices.SortedFunc(slices.Values(ids), LogPartition.compare)
	for i, p := range sorted {
		index[p] = i
	}
	parts := make([][]porcupine.Operation, len(sorted))
	for _, op := range history {
		i := index[logInputPartition(op.Input)]
		parts[i] = append(parts[i], op)
	}
	return parts
}

func logInputPartition(input any) LogPartition {
	switch in := input.(type) {
	case logArm:
		return in.partition
	case logReads:
		return in.partition
	default:
		return input.(LogInput).Partition
	}
}

// logStep reports whether the operation could have produced output from
// state, and the state after it.
func logStep(state, input, output any) (bool, any) {
	s := state.(logState)
	if t := s.node.tree; t.maxSteps > 0 {
		if t.steps++; t.steps > t.maxSteps {
			t.exhausted = true
			return false, s
		}
	}
	switch in := input.(type) {
	case logArm:
		s.node.tree.claimed = in.claimed
		s.pending++
		return true, s
	case logReads:
		for _, r := range in.records {
			if !s.holds(r) {
				return false, s
			}
		}
		return true, s
	}
	in := input.(LogInput)
	switch in.Op {
	case LogOpAppend:
		switch out := output.(type) {
		case Unknown:
			return true, s.append(logSlot{value: in.Value})
		case logInferred:
			return appendAt(s, in.Value, out.offset)
		default:
			return appendAt(s, in.Value, out.(LogOutput).Offset)
		}
	case LogOpRead:
		if IsUnknown(output) {
			return true, s
		}
		out := output.(LogOutput)
		if !out.Found {
			return in.Offset >= s.end, s
		}
		return s.holds(LogRecord{Offset: in.Offset, Value: out.Value}), s
	default:
		panic(fmt.Sprintf("linearizability: unknown log operation %v", in.Op))
	}
}

// holds reports whether r is in s.
func (s logState) holds(r LogRecord) bool {
	if r.Offset < 0 || r.Offset >= s.end {
		return false
	}
	got := s.at(r.Offset)
	return !got.hole && got.value == r.Value
}

// appendAt appends value, which was given offset. Anonymous appends armed
// by CheckLog take effect only when an append needs them to explain its
// offset, and only at offsets no operation claims: taking effect later
// never rules out more than taking effect earlier (the holes they leave
// are never read), so this loses nothing.
func appendAt(s logState, value string, offset int64) (bool, any) {
	holes := offset - s.end
	if holes < 0 || holes > int64(s.pending) || !s.node.tree.claimed.free(s.end, offset) {
		return false, s
	}
	for range holes {
		s = s.append(logSlot{hole: true})
	}
	s.pending -= int(holes)
	return true, s.append(logSlot{value: value})
}

// logHash hashes a logState; equal states hash equally, since their nodes
// are the same node.
func logHash(state any) uint64 {
	s := state.(logState)
	return (s.node.id*0x9e3779b97f4a7c15^uint64(s.end))*0x100000001b3 ^ uint64(s.pending)
}

// describeLogOperation renders an operation for the visualisation, for
// example `Append(t-0, "v3") -> 7`, `Read(t-0, 7) -> "v3"` or
// `Read(t-0, 9) -> nothing yet`.
func describeLogOperation(input, output any) string {
	switch in := input.(type) {
	case logArm:
		return fmt.Sprintf("Append(%s, %q) -> %v", in.partition, in.value, output)
	case logReads:
		return describeLogReads(in)
	}
	in := input.(LogInput)
	var call string
	switch in.Op {
	case LogOpAppend:
		call = fmt.Sprintf("Append(%s, %q)", in.Partition, in.Value)
	default:
		call = fmt.Sprintf("%v(%s, %d)", in.Op, in.Partition, in.Offset)
	}
	switch out := output.(type) {
	case Unknown:
		return call + " -> " + out.String()
	case logInferred:
		return fmt.Sprintf("%s -> ? (%v), read at %d", call, out.reason, out.offset)
	}
	out := output.(LogOutput)
	switch {
	case in.Op == LogOpAppend:
		return fmt.Sprintf("%s -> %d", call, out.Offset)
	case out.Found:
		return fmt.Sprintf("%s -> %q", call, out.Value)
	default:
		return call + " -> nothing yet"
	}
}

// describeLogReads renders the reads of one fetch, for example
// `Read(t-0, 4..6) -> "v4" "v5" "v6"`, or `Read(t-0, 4, 6) -> "v4" "v6"`
// if the offsets are not consecutive; past logStateShown records it
// elides the middle.
func describeLogReads(in logReads) string {
	var offsets, values []string
	consecutive := true
	for i, r := range in.records {
		if i > 0 && r.Offset != in.records[i-1].Offset+1 {
			consecutive = false
		}
		offsets = append(offsets, fmt.Sprint(r.Offset))
		values = append(values, fmt.Sprintf("%q", r.Value))
	}
	if n := len(in.records); consecutive && n > 1 {
		offsets = []string{fmt.Sprintf("%d..%d", in.records[0].Offset, in.records[n-1].Offset)}
	}
	elide := func(s []string) string {
		if len(s) > logStateShown {
			s = append(slices.Clone(s[:logStateShown/2]), append([]string{"…"}, s[len(s)-logStateShown/2:]...)...)
		}
		return strings.Join(s, " ")
	}
	return fmt.Sprintf("Read(%s, %s) -> %s", in.partition, strings.ReplaceAll(elide(offsets), " ", ", "), elide(values))
}

// logStateShown is how many of the last records describeLogState shows.
const logStateShown = 6

// describeLogState renders a partition for the visualisation: its length
// and last records, a hole left by an unknown append as ?, and how many
// unknown appends may still take effect, for example
// `12 records: … "v9" ? "v11" (+2 unknown appends pending)`.
func describeLogState(state any) string {
	s := state.(logState)
	var b strings.Builder
	fmt.Fprintf(&b, "%d records", s.end)
	if s.end > 0 {
		b.WriteString(":")
		from := max(0, s.end-logStateShown)
		if from > 0 {
			b.WriteString(" …")
		}
		for o := from; o < s.end; o++ {
			if slot := s.at(o); slot.hole {
				b.WriteString(" ?")
			} else {
				fmt.Fprintf(&b, " %q", slot.value)
			}
		}
	}
	if s.pending > 0 {
		fmt.Fprintf(&b, " (+%d unknown appends pending)", s.pending)
	}
	return b.String()
}
