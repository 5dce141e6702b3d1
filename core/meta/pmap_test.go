package meta

import (
	"cmp"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// checkAVL verifies ordering, heights and balance, and returns the height.
func checkAVL(t require.TestingT, n *pnode[int32, int], lo, hi int64) int8 {
	if n == nil {
		return 0
	}
	require.True(t, int64(n.key) > lo && int64(n.key) < hi, "key %d outside (%d, %d)", n.key, lo, hi)
	hl := checkAVL(t, n.left, lo, int64(n.key))
	hr := checkAVL(t, n.right, int64(n.key), hi)
	require.LessOrEqual(t, max(hl-hr, hr-hl), int8(1), "unbalanced at %d", n.key)
	require.Equal(t, max(hl, hr)+1, n.height)
	return n.height
}

// TestPmapModel checks the persistent map against a Go map, and that every
// earlier version is unchanged by later updates.
func TestPmapModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newPmap[int32, int](cmp.Compare[int32])
		model := map[int32]int{}
		type version struct {
			m     pmap[int32, int]
			model map[int32]int
		}
		var versions []version
		for i := range rapid.IntRange(0, 300).Draw(t, "ops") {
			k := rapid.Int32Range(0, 64).Draw(t, "key")
			if rapid.IntRange(0, 2).Draw(t, "delete") == 0 {
				m = m.delete(k)
				delete(model, k)
			} else {
				m = m.set(k, i)
				model[k] = i
			}
			versions = append(versions, version{m, maps.Clone(model)})
		}
		for _, v := range versions {
			checkAVL(t, v.m.root, -1<<40, 1<<40)
			require.Equal(t, len(v.model), v.m.len())
			var keys []int32
			v.m.all(func(k int32, val int) bool {
				keys = append(keys, k)
				require.Equal(t, v.model[k], val)
				return true
			})
			require.Equal(t, slices.Sorted(maps.Keys(v.model)), keys)
			for k := int32(0); k <= 64; k++ {
				got, ok := v.m.get(k)
				want, wantOK := v.model[k]
				require.Equal(t, wantOK, ok)
				require.Equal(t, want, got)
			}
		}
	})
}

// TestPmapSharing: an update copies O(log n) nodes and shares the rest.
func TestPmapSharing(t *testing.T) {
	m := newPmap[int32, int](cmp.Compare[int32])
	for i := range int32(1024) {
		m = m.set(i, int(i))
	}
	seen := map[*pnode[int32, int]]bool{}
	var walk func(n *pnode[int32, int])
	walk = func(n *pnode[int32, int]) {
		if n != nil {
			seen[n] = true
			walk(n.left)
			walk(n.right)
		}
	}
	walk(m.root)
	m2 := m.set(500, -1)
	fresh := 0
	var walk2 func(n *pnode[int32, int])
	walk2 = func(n *pnode[int32, int]) {
		if n != nil {
			if !seen[n] {
				fresh++
			}
			walk2(n.left)
			walk2(n.right)
		}
	}
	walk2(m2.root)
	require.LessOrEqual(t, fresh, 12, "an update of a 1024-entry tree copies only its path")
	v, _ := m.get(500)
	require.Equal(t, 500, v, "the old version is unchanged")
}

func TestPmapEarlyStop(t *testing.T) {
	m := newPmap[int32, int](cmp.Compare[int32])
	for i := range int32(100) {
		m = m.set(i, 0)
	}
	n := 0
	m.all(func(int32, int) bool { n++; return n < 10 })
	require.Equal(t, 10, n)
}
