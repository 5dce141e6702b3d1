package linearizability

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// ErrValueAppendedTwice is returned by CheckLog for a history with two
// appends of one value to one partition: values must name records.
var ErrValueAppendedTwice = errors.New("linearizability: value appended twice to a partition")

// LogOps records appends and reads of partitions against virtual time, for
// CheckLog: a [History] of [PartitionLogModel] operations with typed
// methods. The zero value is an empty recorder ready to use.
//
// Each appended value must be unique within its partition, as a
// LogHistory's values are: an append retried with the same bytes is one
// operation, completed by whichever send was acknowledged. A fetch that
// returns several records is one Read per record, each with the fetch's
// call and return times (Fetched records them); an empty fetch at an
// offset is a Read of it that found nothing yet.
//
// A LogOps is not safe for concurrent use.
type LogOps struct {
	h History
}

// Append records that client called an append of value to p at virtual
// time at, and returns the handle with which to report its outcome.
func (o *LogOps) Append(client int, p LogPartition, value string, at time.Duration) OpID {
	return o.h.Invoke(client, LogAppend(p, value), at)
}

// Appended records that append id was acknowledged at offset at virtual
// time at.
func (o *LogOps) Appended(id OpID, offset int64, at time.Duration) {
	o.mustBe(id, LogOpAppend, "Appended")
	o.h.Complete(id, LogOutput{Offset: offset}, at)
}

// Read records that client called a read of p at offset at virtual time
// at, and returns the handle with which to report its outcome.
func (o *LogOps) Read(client int, p LogPartition, offset int64, at time.Duration) OpID {
	return o.h.Invoke(client, LogRead(p, offset), at)
}

// ReadValue records that read id returned value at virtual time at.
func (o *LogOps) ReadValue(id OpID, value string, at time.Duration) {
	o.mustBe(id, LogOpRead, "ReadValue")
	o.h.Complete(id, LogOutput{Value: value, Found: true}, at)
}

// ReadNothing records that read id found nothing yet at its offset, at
// virtual time at.
func (o *LogOps) ReadNothing(id OpID, at time.Duration) {
	o.mustBe(id, LogOpRead, "ReadNothing")
	o.h.Complete(id, LogOutput{}, at)
}

// Fetched records a fetch by client of p from offset, called at call and
// answered at ret with records (in offset order): one Read per record, or
// one Read of offset that found nothing yet if records is empty.
func (o *LogOps) Fetched(client int, p LogPartition, offset int64, call, ret time.Duration, records []LogRecord) {
	if len(records) == 0 {
		o.ReadNothing(o.Read(client, p, offset, call), ret)
		return
	}
	for _, r := range records {
		o.ReadValue(o.Read(client, p, r.Offset, call), r.Value, ret)
	}
}

// Fail records that operation id ended in an error that leaves its
// outcome unknown; see [History.Fail].
func (o *LogOps) Fail(id OpID) { o.h.Fail(id) }

// Timeout records that the client stopped waiting for operation id; see
// [History.Timeout].
func (o *LogOps) Timeout(id OpID) { o.h.Timeout(id) }

// Discard removes operation id, which certainly had no effect (an append
// the broker rejected); see [History.Discard].
func (o *LogOps) Discard(id OpID) { o.h.Discard(id) }

// Len is the number of operations recorded and not discarded.
func (o *LogOps) Len() int { return o.h.Len() }

// UnknownLen is how many of them have an unknown outcome, counting those
// still pending.
func (o *LogOps) UnknownLen() int { return o.h.UnknownLen() }

// History returns the operations as a History, for [Check] with
// [PartitionLogModel]; CheckLog checks them faster.
func (o *LogOps) History() *History { return &o.h }

func (o *LogOps) mustBe(id OpID, op LogOp, method string) {
	if id < 0 || int(id) >= len(o.h.records) {
		panic(fmt.Sprintf("linearizability: %s: unknown op %d", method, id))
	}
	if got := o.h.records[id].input.(LogInput).Op; got != op {
		panic(fmt.Sprintf("linearizability: %s: op %d is a %v", method, id, got))
	}
}

// CheckLog reports whether the operations recorded in ops are linearizable
// with respect to [PartitionLogModel]. It returns an error wrapping
// ErrHistoryTooLarge, and no verdict, if ops holds more than
// l.MaxOperations operations, and one wrapping ErrValueAppendedTwice if a
// value was appended twice to a partition. l.MaxUnknownPerPartition does
// not apply: unknown outcomes cost CheckLog nothing beyond their number.
//
// Before the search, it rewrites each operation with an unknown outcome
// into an equivalent one (an equivalence TestCheckLogAgreesWithCheck tests
// against [Check]):
//
//  1. A read with an unknown outcome observed nothing, and changes
//     nothing: it is left out.
//  2. An append with an unknown outcome whose value some read returned at
//     offset o happened, before the first of those reads returned, at o
//     (values are unique, and a record never moves): it becomes an
//     append that returned o then (or at its call, if that read returned
//     before it; the history is then not linearizable either way).
//  3. An append with an unknown outcome whose value no read returned
//     matters only by the offset it may have taken: it becomes an
//     instantaneous operation at its call that arms one anonymous append,
//     which takes effect when a later append's offset needs it, at an
//     offset no append returned and no read found a value at, leaving a
//     hole no read can match.
//
// Each partition's state is then one log and a count, and the search costs
// what it costs for a history without unknown outcomes. One more rewrite
// keeps the search from trying every order of the records of one fetch:
//
//  4. Reads of one client with the same call and return times that found
//     a value become one read of them all: a record, once there, stays,
//     so they hold at one instant of the interval exactly when each holds
//     at some instant of it.
//
// Visualize draws (2) as the append, with its unknown outcome and the
// offset it was read at, (3) as an instant at its call, and (4) as one
// read.
//
// The verdict and the Info of a failing check are deterministic.
func CheckLog(ops *LogOps, l Limits) (Result, error) {
	res, parts, err := prepareLog(ops, l)
	if err != nil {
		return Result{}, err
	}
	maxSteps := uint64(cmp.Or(l.MaxSteps, DefaultMaxLogSteps))
	// Each partition alone, in order, so that the step budget is spent
	// per partition whatever porcupine's goroutines do, and a failing
	// history's verbose search (which records partial linearizations)
	// covers only its failing partitions.
	var failing []porcupine.Operation
	for _, part := range parts {
		model, tree := budgetedLogModel(part, maxSteps)
		ok := porcupine.CheckOperations(model, part)
		if tree.exhausted {
			return Result{}, fmt.Errorf("%w: %d model steps in partition %s", ErrSearchBudget, maxSteps, logInputPartition(part[0].Input))
		}
		if !ok {
			failing = append(failing, part...)
		}
	}
	if len(failing) == 0 {
		res.Ok = true
		return res, nil
	}
	model, info := verboseLog(failing, maxSteps)
	res.Info = info
	res.model = model
	return res, nil
}

// VisualizeLog writes porcupine's HTML visualisation of the operations
// recorded in ops to w, linearizable or not: for a linearizable history
// each partition's linearization, for one that is not the longest partial
// linearizations and where each stopped (as [Visualize] draws a failing
// CheckLog). A simulator run that failed another check draws its history
// this way, so that the reader sees every produce and fetch in time. It
// returns CheckLog's errors for a history it would not check.
func VisualizeLog(w io.Writer, ops *LogOps, l Limits) error {
	_, parts, err := prepareLog(ops, l)
	if err != nil {
		return err
	}
	maxSteps := uint64(cmp.Or(l.MaxSteps, DefaultMaxLogSteps))
	var flat []porcupine.Operation
	for _, part := range parts {
		model, tree := budgetedLogModel(part, maxSteps)
		porcupine.CheckOperations(model, part)
		if tree.exhausted {
			return fmt.Errorf("%w: %d model steps in partition %s", ErrSearchBudget, maxSteps, logInputPartition(part[0].Input))
		}
		flat = append(flat, part...)
	}
	model, info := verboseLog(flat, maxSteps)
	if err := porcupine.Visualize(model, info, w); err != nil {
		return fmt.Errorf("linearizability: visualize: %w", err)
	}
	return nil
}

// verboseLog runs porcupine's verbose search over rewritten operations
// (of one or more partitions) and returns the model and the partial
// linearizations in a fixed order. Each partition's search is the one a
// plain check already ran within maxSteps; the bound only guards it.
func verboseLog(ops []porcupine.Operation, maxSteps uint64) (porcupine.Model, porcupine.LinearizationInfo) {
	model := PartitionLogModel()
	parts := model.Partition(ops)
	model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return parts }
	model.Init = func() any {
		t := &logTree{maxSteps: maxSteps}
		return logState{node: t.node(nil, 0, nil)}
	}
	_, info := porcupine.CheckOperationsVerbose(model, ops, 0)
	model.Init = newLogState
	sortPartialLinearizations(info)
	return model, info
}

// budgetedLogModel is the model for one rewritten partition, with a
// search tree bounded by maxSteps, returned for its exhausted flag.
func budgetedLogModel(part []porcupine.Operation, maxSteps uint64) (porcupine.Model, *logTree) {
	model := PartitionLogModel()
	model.Partition = nil
	tree := &logTree{maxSteps: maxSteps}
	model.Init = func() any { return logState{node: tree.node(nil, 0, nil)} }
	return model, tree
}

// prepareLog applies CheckLog's limits and rewrites to ops: it returns
// the result's counts and the rewritten operations of each partition.
func prepareLog(ops *LogOps, l Limits) (Result, [][]porcupine.Operation, error) {
	maxOps := cmp.Or(l.MaxOperations, DefaultMaxOperations)
	res := Result{Operations: ops.Len(), UnknownOperations: ops.UnknownLen()}
	if res.Operations > maxOps {
		return Result{}, nil, fmt.Errorf("%w: %d operations, limit %d", ErrHistoryTooLarge, res.Operations, maxOps)
	}
	parts := PartitionLogModel().Partition(ops.h.Operations())
	for i, part := range parts {
		rewritten, err := rewriteLogUnknowns(part)
		if err != nil {
			return Result{}, nil, err
		}
		parts[i] = rewritten
	}
	return res, parts, nil
}

// rewriteLogUnknowns applies CheckLog's rules to one partition's
// operations, keeping their order.
func rewriteLogUnknowns(part []porcupine.Operation) ([]porcupine.Operation, error) {
	// firstRead maps each value read to the read that returned first.
	firstRead := map[string]porcupine.Operation{}
	appended := map[string]bool{}
	claimed := &logClaims{}
	for _, op := range part {
		in := op.Input.(LogInput)
		out, known := op.Output.(LogOutput)
		if in.Op == LogOpAppend {
			if appended[in.Value] {
				return nil, fmt.Errorf("%w: %q to %s", ErrValueAppendedTwice, in.Value, in.Partition)
			}
			appended[in.Value] = true
			if known {
				claimed.offsets = append(claimed.offsets, out.Offset)
			}
			continue
		}
		if known && out.Found {
			claimed.offsets = append(claimed.offsets, in.Offset)
			if prev, ok := firstRead[out.Value]; !ok || op.Return < prev.Return {
				firstRead[out.Value] = op
			}
		}
	}
	slices.Sort(claimed.offsets)
	claimed.offsets = slices.Compact(claimed.offsets)

	out := make([]porcupine.Operation, 0, len(part))
	// fetches maps a client's call and return times to the index in out
	// of its reads that found a value in that interval.
	fetches := map[logFetchKey]int{}
	for _, op := range part {
		in := op.Input.(LogInput)
		switch o := op.Output.(type) {
		case LogOutput:
			if in.Op == LogOpRead && o.Found { // rule 4
				key := logFetchKey{client: op.ClientId, call: op.Call, ret: op.Return}
				r := LogRecord{Offset: in.Offset, Value: o.Value}
				if i, ok := fetches[key]; ok {
					reads := out[i].Input.(logReads)
					reads.records = append(reads.records, r)
					out[i].Input = reads
					continue
				}
				fetches[key] = len(out)
				op.Input = logReads{partition: in.Partition, records: []LogRecord{r}}
				op.Output = nil
			}
		case Unknown:
			if in.Op == LogOpRead {
				continue // rule 1
			}
			if read, ok := firstRead[in.Value]; ok { // rule 2
				op.Output = logInferred{offset: read.Input.(LogInput).Offset, reason: o.Reason}
				op.Return = max(op.Call, read.Return)
			} else { // rule 3
				op.Input = logArm{partition: in.Partition, value: in.Value, claimed: claimed}
				op.Return = op.Call
			}
		}
		out = append(out, op)
	}
	return out, nil
}

type logFetchKey struct {
	client    int
	call, ret int64
}
