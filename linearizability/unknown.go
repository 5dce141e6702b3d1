package linearizability

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Operations with an unknown outcome are, by definition, concurrent with
// everything after their call: exported as-is (return time UnknownReturn),
// porcupine must try every subset of them at every point of the history, and
// a failing history with a handful of timed-out writes on one key takes
// minutes to refute. Check therefore searches an equivalent history instead:
//
//   - an unknown-outcome operation becomes an instantaneous "arm" operation at
//     its call time, which adds its effect to a set of pending effects carried
//     in the model state;
//   - before each observed operation steps, any pending effects may fire, in
//     any order, each at most once; the model state is the set of every
//     (state, still-pending effects) configuration that could result.
//
// A pending effect may also never fire. So a configuration with the same
// state and a superset of pending effects can do everything a smaller one
// can, and the smaller one is dropped. For a key-value register that keeps
// the set at about one configuration per value the key could hold, where the
// plain search's cache grows with the subsets of unknown operations.
//
// This is exactly the semantics of a return time of plus infinity: an
// operation linearized at a point after its call corresponds to its effect
// firing just before the first operation linearized after that point, and an
// operation linearized after everything corresponds to an effect that never
// fires. TestCheckAgreesWithPorcupine checks the two encodings against each
// other on random histories.

// maxUnknownPerPartition is the most operations with an unknown outcome one
// partition can hold: pending effects are a bit mask.
const maxUnknownPerPartition = 64

// effect is an operation with an unknown outcome: what it does if it fires.
type effect struct {
	input  any // the operation's input
	output any // its Unknown output
}

// armInput is the input of the instantaneous operation that stands for an
// operation with an unknown outcome.
type armInput struct {
	effects []effect // the partition's effects, indexed by bit
	bit     int      // this operation's bit in config.pending
}

// config is one possible situation: the state of the specified system and
// the effects that have not fired yet, as a mask of bits in
// configSet.effects.
type config struct {
	state   any
	pending uint64
}

// configSet is the state porcupine sees: every configuration still possible,
// none dominated by another. configs never change once built; fired caches
// the configurations reachable by firing, which porcupine would otherwise
// have recomputed for every operation it tries from this state.
type configSet struct {
	effects []effect // nil until the partition's first arm operation
	configs []config
	fired   []config // nil until computed
}

// unknownOutcomes wraps inner so that armed effects are tracked in the state.
type unknownOutcomes struct {
	inner porcupine.Model
	equal func(a, b any) bool
}

// withUnknownOutcomes returns a model that checks partitions produced by
// armPartitions against the specification inner. Partition returns parts.
func withUnknownOutcomes(inner porcupine.Model, parts [][]porcupine.Operation) porcupine.Model {
	u := &unknownOutcomes{inner: inner, equal: inner.Equal}
	if u.equal == nil {
		u.equal = func(a, b any) bool { return a == b }
	}
	m := porcupine.Model{
		// The history given to porcupine is parts, flattened; the
		// partitioning was done before arming, on the original inputs.
		Partition:         func([]porcupine.Operation) [][]porcupine.Operation { return parts },
		Init:              u.init,
		Step:              u.step,
		Equal:             u.equalSets,
		DescribeOperation: u.describeOperation,
		DescribeState:     u.describeState,
	}
	if inner.Hash != nil {
		m.Hash = u.hash
	}
	return m
}

// armPartitions splits ops with model's partition function and replaces each
// operation with an unknown outcome by an instantaneous arm operation. It
// also returns the largest number of unknown-outcome operations in one
// partition; if that exceeds maxUnknownPerPartition, parts is nil.
func armPartitions(model porcupine.Model, ops []porcupine.Operation) (parts [][]porcupine.Operation, maxUnknown int) {
	if model.Partition != nil {
		parts = model.Partition(ops)
	} else {
		parts = [][]porcupine.Operation{ops}
	}
	for _, part := range parts {
		unknown := 0
		for _, op := range part {
			if isUnknownOp(op) {
				unknown++
			}
		}
		maxUnknown = max(maxUnknown, unknown)
	}
	if maxUnknown > maxUnknownPerPartition {
		return nil, maxUnknown
	}
	armed := make([][]porcupine.Operation, len(parts))
	for p, part := range parts {
		var effects []effect
		for _, op := range part {
			if isUnknownOp(op) {
				effects = append(effects, effect{input: op.Input, output: op.Output})
			}
		}
		armed[p] = make([]porcupine.Operation, len(part))
		bit := 0
		for i, op := range part {
			if isUnknownOp(op) {
				op.Input = armInput{effects: effects, bit: bit}
				op.Return = op.Call
				bit++
			}
			armed[p][i] = op
		}
	}
	return armed, maxUnknown
}

// isUnknownOp reports whether op is an exported operation with an unknown
// outcome.
func isUnknownOp(op porcupine.Operation) bool {
	return op.Return == UnknownReturn && IsUnknown(op.Output)
}

func (u *unknownOutcomes) init() any {
	return &configSet{configs: []config{{state: u.inner.Init()}}}
}

func (u *unknownOutcomes) step(state, input, output any) (bool, any) {
	set := state.(*configSet)
	if arm, ok := input.(armInput); ok {
		next := &configSet{effects: arm.effects, configs: make([]config, len(set.configs))}
		for i, c := range set.configs {
			next.configs[i] = config{state: c.state, pending: c.pending | 1<<arm.bit}
		}
		return true, next
	}
	if set.fired == nil {
		set.fired = u.fireAll(set)
	}
	var next antichain
	for _, c := range set.fired {
		if ok, s := u.inner.Step(c.state, input, output); ok {
			next.add(u, config{state: s, pending: c.pending})
		}
	}
	if next.len() == 0 {
		return false, nil
	}
	return true, &configSet{effects: set.effects, configs: next.configs()}
}

// fireAll returns every configuration reachable from set by firing pending
// effects, without dominated ones.
func (u *unknownOutcomes) fireAll(set *configSet) []config {
	var all antichain
	for _, c := range set.configs {
		all.add(u, c)
	}
	// all.list grows while it is walked; entries dominated after being
	// added are skipped, since whatever they reach, their dominator reaches.
	for i := 0; i < len(all.list); i++ {
		if !all.live[i] {
			continue
		}
		c := all.list[i]
		for pending := c.pending; pending != 0; pending &= pending - 1 {
			bit := bits.TrailingZeros64(pending)
			e := set.effects[bit]
			ok, s := u.inner.Step(c.state, e.input, e.output)
			if !ok {
				panic(fmt.Sprintf("linearizability: model rejected an unknown outcome for %s", u.describeInner(e.input, e.output)))
			}
			all.add(u, config{state: s, pending: c.pending &^ (1 << bit)})
		}
	}
	return all.configs()
}

// dominates reports whether a can do everything b can: the same state, and
// every effect still pending in b still pending in a.
func (u *unknownOutcomes) dominates(a, b config) bool {
	return b.pending&^a.pending == 0 && u.equal(a.state, b.state)
}

func (u *unknownOutcomes) equalSets(state1, state2 any) bool {
	a, b := state1.(*configSet), state2.(*configSet)
	if len(a.configs) != len(b.configs) {
		return false
	}
	// Neither set holds a configuration dominated by another of its own, so
	// one-way containment of equal-sized sets is equality.
	for _, x := range a.configs {
		found := false
		for _, y := range b.configs {
			if x.pending == y.pending && u.equal(x.state, y.state) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// hash combines configurations order-independently, so equal sets hash
// equally whatever order they were built in.
func (u *unknownOutcomes) hash(state any) uint64 {
	var h uint64
	for _, c := range state.(*configSet).configs {
		h ^= (u.inner.Hash(c.state) ^ c.pending) * 0x100000001b3
	}
	return h
}

func (u *unknownOutcomes) describeOperation(input, output any) string {
	if arm, ok := input.(armInput); ok {
		e := arm.effects[arm.bit]
		return u.describeInner(e.input, e.output)
	}
	return u.describeInner(input, output)
}

func (u *unknownOutcomes) describeInner(input, output any) string {
	if u.inner.DescribeOperation != nil {
		return u.inner.DescribeOperation(input, output)
	}
	return fmt.Sprintf("%v -> %v", input, output)
}

// describeState lists the possible states, each with the number of effects
// that may still fire, for example `"v1" | absent (+2 pending)`.
func (u *unknownOutcomes) describeState(state any) string {
	var parts []string
	for _, c := range state.(*configSet).configs {
		var d string
		if u.inner.DescribeState != nil {
			d = u.inner.DescribeState(c.state)
		} else {
			d = fmt.Sprintf("%v", c.state)
		}
		if n := bits.OnesCount64(c.pending); n > 0 {
			d = fmt.Sprintf("%s (+%d pending)", d, n)
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, " | ")
}

// antichain accumulates configurations, keeping none that another
// dominates. list only grows; live marks the entries still kept.
type antichain struct {
	list []config
	live []bool
	n    int // live entries
}

func (a *antichain) add(u *unknownOutcomes, c config) {
	for i, d := range a.list {
		if a.live[i] && u.dominates(d, c) {
			return
		}
	}
	for i, d := range a.list {
		if a.live[i] && u.dominates(c, d) {
			a.live[i] = false
			a.n--
		}
	}
	a.list = append(a.list, c)
	a.live = append(a.live, true)
	a.n++
}

func (a *antichain) len() int { return a.n }

func (a *antichain) configs() []config {
	out := make([]config, 0, a.n)
	for i, c := range a.list {
		if a.live[i] {
			out = append(out, c)
		}
	}
	return out
}
