package meta

import (
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
	keys := make([]string, 0, len(changes))
	for k := range changes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]ConfigEntry, 0, len(base)+len(keys))
	i, j := 0, 0
	for i < len(base) || j < len(keys) {
		switch {
		case j == len(keys) || (i < len(base) && base[i].Key < keys[j]):
			out = append(out, base[i])
			i++
		default:
			if i < len(base) && base[i].Key == keys[j] {
				i++
			}
			if v := changes[keys[j]]; v != nil {
				out = append(out, ConfigEntry{Key: keys[j], Value: *v})
			}
			j++
		}
	}
	return out
}
