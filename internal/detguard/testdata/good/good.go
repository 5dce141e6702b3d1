// Package good uses every allowed form the determinism guard must accept.
package good

import (
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

func Seeded(seed uint64) int { return rand.New(rand.NewPCG(seed, 1)).IntN(10) }

func Durations() time.Duration { return 3 * time.Second }

func Instants() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

func SortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func SortedValues(m map[string]int) []int {
	var vs []int
	for _, v := range m {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs
}

func Sum(m map[string]int) int {
	n := 0
	//determinism:unordered addition is commutative
	for _, v := range m {
		n += v
	}
	return n
}

func InClosure(m map[string]int) func() []string {
	return func() []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
}

func SortedIterator(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }

func SortedClaimTrue(m map[string]int) []string {
	var out []string
	//determinism:unordered sorted below
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func AnnotatedIterator(m map[string]int) int {
	n := 0
	//determinism:unordered addition is commutative
	for v := range maps.Values(m) {
		n += v
	}
	return n
}

func FilteredThenSorted(m map[string]int) []string {
	var out []string
	//determinism:unordered sorted below
	for k, v := range m {
		if v > 0 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
