// Package assert holds the invariant checks used at state transitions in
// core. A violated invariant panics with a message naming it: in production
// that crashes the node before it can corrupt data or acknowledge something
// false, and in the simulator it fails the seed, which prints the command to
// replay it. Assertions are always on; they are cheap comparisons.
//
// Use them for facts the code guarantees (a high watermark never moves
// backwards, an offset is assigned once), never for validating input from the
// network or the disk: bad input gets an error, not a crash.
package assert

import "fmt"

// Violation is the panic value of a failed assertion, so that the simulator
// can tell an invariant violation from any other panic.
type Violation struct {
	Msg string
}

func (v Violation) Error() string { return "invariant violated: " + v.Msg }

// That panics with a Violation built from format and args when cond is false.
func That(cond bool, format string, args ...any) {
	if !cond {
		panic(Violation{Msg: fmt.Sprintf(format, args...)})
	}
}

// Never panics with a Violation: the caller reached a state the code rules
// out.
func Never(format string, args ...any) {
	panic(Violation{Msg: fmt.Sprintf(format, args...)})
}

// NotDecreasing panics when next < prev, naming what moved backwards.
func NotDecreasing[T ~int | ~int32 | ~int64 | ~uint64](what string, prev, next T) {
	if next < prev {
		panic(Violation{Msg: fmt.Sprintf("%s moved backwards: %d -> %d", what, prev, next)})
	}
}
