// Package detguard reads Go source and reports constructs that break
// Strata's deterministic core contract: goroutines, channels, select, the
// sync/os/net packages, the wall clock, global or cryptographic randomness,
// and map iteration whose order can reach a decision or an output.
//
// It is run by the repository's determinism guard test over core/, sim/,
// nemesis/ and linearizability/. It only reads code; it never executes it.
//
// # Map iteration
//
// Go randomises map iteration order on purpose, so a `for range` over a map
// is accepted only when its order provably cannot matter:
//
//   - the loop body only appends to slices (directly, or inside ifs whose
//     conditions call no function) and every such slice is sorted later in
//     the same function (sort.*, slices.Sort*), or
//   - the loop carries an annotation on its line or the line above:
//     //determinism:unordered <reason>
//     where the reason says why order cannot leak (a commutative sum, a
//     lookup that deletes every entry). An annotation without a reason is a
//     finding itself, and a reason that rests on a sort ("sorted below") is
//     verified by the rule above rather than trusted.
//
// The iterators of package maps (maps.Keys, maps.Values, maps.All) walk a
// map in the same random order: a call to one is accepted only as the
// direct argument of slices.Sorted, SortedFunc or SortedStableFunc, or
// with the annotation.
package detguard
