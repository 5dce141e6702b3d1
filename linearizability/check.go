package linearizability

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/anishathalye/porcupine"
)

// ErrHistoryTooLarge is returned by Check for a history beyond its Limits.
var ErrHistoryTooLarge = errors.New("linearizability: history exceeds check limits")

// ErrModelRejectsUnknown is returned by Check when the model's Step rejects
// an Unknown output, which it must accept for every input.
var ErrModelRejectsUnknown = errors.New("linearizability: model rejects an unknown outcome")

// ErrNothingToVisualize is returned by Visualize for a Result that carries
// no linearization info: one whose history was linearizable, or one that
// did not come from Check.
var ErrNothingToVisualize = errors.New("linearizability: result has no linearization info to visualize")

// Limits bound the history a Check will search. Linearizability checking is
// NP-complete: porcupine's search is exponential in the number of mutually
// concurrent operations, and operations with an unknown outcome stay
// concurrent with everything after their call. The simulator sizes its
// workloads to stay inside these bounds instead of relying on a wall-clock
// timeout, which would make verdicts depend on the machine.
//
// A zero field stands for its default.
type Limits struct {
	// MaxOperations is the most operations a history may hold. Default
	// DefaultMaxOperations.
	MaxOperations int
	// MaxUnknownPerPartition is the most operations with an unknown
	// outcome (failed, timed out or still pending) one partition of the
	// history may hold; for KVModel, one key. Default
	// DefaultMaxUnknownPerPartition; values above 64 act as 64, the width
	// of the mask that tracks them.
	MaxUnknownPerPartition int
	// MaxSteps (CheckLog only) is the most model steps porcupine's search
	// may take in one partition, a bound on its time and memory that does
	// not read the clock, so that a verdict never depends on the machine.
	// Past it CheckLog gives no verdict (ErrSearchBudget). Default
	// DefaultMaxLogSteps.
	MaxSteps int
}

// ErrSearchBudget is returned by CheckLog for a partition whose search
// took more than Limits.MaxSteps model steps: no verdict.
var ErrSearchBudget = errors.New("linearizability: search exceeds its step budget")

// DefaultMaxLogSteps is CheckLog's default step budget per partition. A
// search that never backtracks takes a few steps per operation; each
// step porcupine keeps costs it a bitset of the partition's operations,
// so a million steps of a partition of 4,000 operations hold about 500 MB.
const DefaultMaxLogSteps = 1_000_000

// Default limits. Measured on the project's 2-core machine with every
// operation on one key, up to four concurrent, and a stale read at the end
// (BenchmarkCheckFailingOneKey): a passing history of 10,000 operations with
// 32 unknown outcomes checks in under a second; refuting 1,000 operations
// with 32 unknown outcomes takes about 2 s, and 10,000 with 32 from 10 to
// 16 s depending on load. Cost grows roughly with operations per key times
// the square of unknown outcomes per key, so workloads should spread
// operations over keys.
const (
	DefaultMaxOperations          = 10_000
	DefaultMaxUnknownPerPartition = 32
)

// DefaultLimits returns the limits Check uses.
func DefaultLimits() Limits {
	return Limits{
		MaxOperations:          DefaultMaxOperations,
		MaxUnknownPerPartition: DefaultMaxUnknownPerPartition,
	}
}

// Result is the verdict of a linearizability check.
type Result struct {
	// Ok reports whether the history is linearizable.
	Ok bool
	// Operations is the number of operations checked.
	Operations int
	// UnknownOperations is how many of them had an unknown outcome.
	UnknownOperations int
	// Info holds porcupine's partial linearizations, for Visualize. It is
	// computed only when Ok is false.
	Info porcupine.LinearizationInfo

	// model is the model Info was computed against: the checked model
	// wrapped to track unknown outcomes.
	model porcupine.Model
}

// String summarises the verdict in one line.
func (r Result) String() string {
	verdict := "linearizable"
	if !r.Ok {
		verdict = "NOT linearizable"
	}
	return fmt.Sprintf("%s: %d operations (%d with unknown outcome)", verdict, r.Operations, r.UnknownOperations)
}

// Check reports whether h is linearizable with respect to model, within
// DefaultLimits.
func Check(model porcupine.Model, h *History) (Result, error) {
	return DefaultLimits().Check(model, h)
}

// Check reports whether h is linearizable with respect to model. It returns
// an error wrapping ErrHistoryTooLarge, and no verdict, if h exceeds l.
//
// The model's Step must accept an [Unknown] output for every input and
// return true and the state after the operation took effect, as [KVModel]
// does: that is how an operation whose outcome was not observed is applied.
// If the model has a Partition function it must keep each operation's Input.
//
// The verdict and the Info of a failing check are deterministic: the same
// history always gives the same Result.
func (l Limits) Check(model porcupine.Model, h *History) (Result, error) {
	maxOps := cmp.Or(l.MaxOperations, DefaultMaxOperations)
	maxUnknown := min(cmp.Or(l.MaxUnknownPerPartition, DefaultMaxUnknownPerPartition), maxUnknownPerPartition)
	res := Result{Operations: h.Len(), UnknownOperations: h.UnknownLen()}
	if res.Operations > maxOps {
		return Result{}, fmt.Errorf("%w: %d operations, limit %d", ErrHistoryTooLarge, res.Operations, maxOps)
	}
	parts, unknown := armPartitions(model, h.Operations())
	if unknown > maxUnknown {
		return Result{}, fmt.Errorf("%w: %d operations with unknown outcome in one partition, limit %d",
			ErrHistoryTooLarge, unknown, maxUnknown)
	}
	if err := acceptsUnknown(model, parts); err != nil {
		return Result{}, err
	}
	armed := withUnknownOutcomes(model, parts)
	var ops []porcupine.Operation
	for _, part := range parts {
		ops = append(ops, part...)
	}
	// The plain check stops at the first illegal partition; only a failing
	// history pays for the verbose search that records partial
	// linearizations. A zero timeout means porcupine never reads the clock.
	if porcupine.CheckOperations(armed, ops) {
		res.Ok = true
		return res, nil
	}
	verdict, info := porcupine.CheckOperationsVerbose(armed, ops, 0)
	if verdict != porcupine.Illegal {
		panic(fmt.Sprintf("linearizability: porcupine disagrees with itself: CheckOperations false, CheckOperationsVerbose %v", verdict))
	}
	sortPartialLinearizations(info)
	res.Info = info
	res.model = armed
	return res, nil
}

// acceptsUnknown checks, from the initial state, that model accepts the
// Unknown output of every armed operation in parts. A model that does so
// from the initial state but not from some later one still breaks its
// contract, and Check panics when it meets that.
func acceptsUnknown(model porcupine.Model, parts [][]porcupine.Operation) error {
	for _, part := range parts {
		for _, op := range part {
			arm, ok := op.Input.(armInput)
			if !ok {
				continue
			}
			e := arm.effects[arm.bit]
			if ok, _ := model.Step(model.Init(), e.input, e.output); !ok {
				return fmt.Errorf("%w: %v -> %v", ErrModelRejectsUnknown, e.input, e.output)
			}
		}
	}
	return nil
}

// sortPartialLinearizations puts porcupine's partial linearizations, which
// it collects through a map keyed by pointer, into a fixed order (longest
// first, then by operation ids) so that Visualize writes the same bytes for
// the same history. PartialLinearizations returns porcupine's own slices,
// so sorting them sorts info.
func sortPartialLinearizations(info porcupine.LinearizationInfo) {
	for _, partition := range info.PartialLinearizations() {
		slices.SortFunc(partition, func(a, b []int) int {
			if len(a) != len(b) {
				return len(b) - len(a)
			}
			return slices.Compare(a, b)
		})
	}
}

// Visualize writes porcupine's HTML visualisation of a failing check to w:
// the history per partition, the longest partial linearizations, and the
// point at which each could not be extended. Writing w to a file is the
// caller's job. An operation with an unknown outcome is drawn as an instant
// at its call, where Check armed its effect; the states shown list every
// possibility, with the number of effects that may still fire. It returns
// ErrNothingToVisualize if res is Ok or did not come from Check.
func Visualize(w io.Writer, res Result) error {
	if res.Ok || len(res.Info.PartialLinearizations()) == 0 {
		return ErrNothingToVisualize
	}
	if err := porcupine.Visualize(res.model, res.Info, w); err != nil {
		return fmt.Errorf("linearizability: visualize: %w", err)
	}
	return nil
}
