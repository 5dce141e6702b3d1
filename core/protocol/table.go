package protocol

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// API is one Kafka API (request key) and the inclusive range of versions a
// listener implements for it.
type API struct {
	// Key is the Kafka API key (kmsg.Key values, e.g. 18 for ApiVersions).
	Key int16
	// MinVersion and MaxVersion bound the versions handled, inclusively.
	MinVersion, MaxVersion int16
}

// Name is the Kafka name of the API ("ApiVersions", "Metadata", ...).
func (a API) Name() string { return kmsg.NameForKey(a.Key) }

// Supports reports whether version v of this API is implemented.
func (a API) Supports(v int16) bool { return v >= a.MinVersion && v <= a.MaxVersion }

// Table is the set of APIs one listener serves: what its ApiVersions
// answers and what ParseRequest accepts. It is immutable.
type Table struct {
	rows []API // sorted by key, unique
}

// NewTable builds a table. Rows must name keys kmsg knows, each once, with
// versions kmsg can decode, and must include ApiVersions: a table that
// breaks these is a programming error, and NewTable panics.
func NewTable(rows ...API) Table {
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b API) int { return cmp.Compare(a.Key, b.Key) })
	hasApiVersions := false
	for i, a := range rows {
		req := kmsg.RequestForKey(a.Key)
		switch {
		case i > 0 && rows[i-1].Key == a.Key:
			panic(fmt.Sprintf("protocol: API %s listed twice", a.Name()))
		case req == nil:
			panic(fmt.Sprintf("protocol: API key %d unknown to kmsg", a.Key))
		case a.MinVersion < 0 || a.MinVersion > a.MaxVersion || a.MaxVersion > req.MaxVersion():
			panic(fmt.Sprintf("protocol: %s versions %d..%d outside 0..%d", a.Name(), a.MinVersion, a.MaxVersion, req.MaxVersion()))
		}
		hasApiVersions = hasApiVersions || a.Key == kmsg.ApiVersions.Int16()
	}
	if !hasApiVersions {
		panic("protocol: a listener's table must include ApiVersions")
	}
	return Table{rows: rows}
}

// Lookup returns the row for key and whether the table serves that key.
func (t Table) Lookup(key int16) (API, bool) {
	i, found := slices.BinarySearchFunc(t.rows, key, func(a API, k int16) int { return cmp.Compare(a.Key, k) })
	if !found {
		return API{}, false
	}
	return t.rows[i], true
}

// Rows returns a copy of the table, sorted by key.
func (t Table) Rows() []API { return slices.Clone(t.rows) }
