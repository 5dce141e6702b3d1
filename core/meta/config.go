package meta

import (
	"cmp"
	"maps"
	"slices"
	"sort"
)

// ConfigEntry is one config key set on a resource.
type ConfigEntry struct {
	Key   string
	Value string
}

// configImage is the configs of one resource, sorted by key, never empty
// (a resource whose last key is deleted leaves the image).
type configImage struct {
	entries []ConfigEntry
}

func (c *configImage) get(key string) (string, bool) {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Key >= key })
	if i < len(c.entries) && c.entries[i].Key == key {
		return c.entries[i].Value, true
	}
	return "", false
}

// mergeConfig applies changes (key to new value, nil deletes) to sorted
// entries and returns new sorted entries; base is not modified.
func mergeConfig(base []ConfigEntry, changes map[string]*string) []ConfigEntry {
	return mergeSorted(base, func(e ConfigEntry) string { return e.Key }, changes, func(k string, v *string) (ConfigEntry, bool) {
		if v == nil {
			return ConfigEntry{}, false
		}
		return ConfigEntry{Key: k, Value: *v}, true
	})
}

// mergeSorted merges changes into base, a list sorted by key, in one pass
// over both: the element of each changed key (replacing base's, if any) is
// what change makes of its value, or none when change says so. base is not
// modified.
func mergeSorted[E any, K cmp.Ordered, V any](base []E, key func(E) K, changes map[K]V, change func(K, V) (E, bool)) []E {
	keys := slices.Sorted(maps.Keys(changes))
	out := make([]E, 0, len(base)+len(keys))
	i, j := 0, 0
	for i < len(base) || j < len(keys) {
		switch {
		case j == len(keys) || (i < len(base) && key(base[i]) < keys[j]):
			out = append(out, base[i])
			i++
		default:
			if i < len(base) && key(base[i]) == keys[j] {
				i++
			}
			if e, ok := change(keys[j], changes[keys[j]]); ok {
				out = append(out, e)
			}
			j++
		}
	}
	return out
}
