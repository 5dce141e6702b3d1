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
	// ListedFromV0 makes ApiVersions list the API from version 0 while
	// only MinVersion..MaxVersion are served: a request below MinVersion
	// is refused like any other unsupported version. Kafka 4 lists
	// Produce this way (KAFKA-18659) because librdkafka before 2.8
	// compresses with gzip or snappy only when the broker lists Produce
	// v2, and otherwise silently sends every batch uncompressed.
	ListedFromV0 bool
}

// Listed is the version range ApiVersions gives for this API.
func (a API) Listed() (minVersion, maxVersion int16) {
	if a.ListedFromV0 {
		return 0, a.MaxVersion
	}
	return a.MinVersion, a.MaxVersion
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

// Listed is the table as ApiVersions lists it, sorted by key: each row's
// MinVersion and MaxVersion are its Listed range.
func (t Table) Listed() []API {
	rows := make([]API, len(t.rows))
	for i, a := range t.rows {
		minVersion, maxVersion := a.Listed()
		rows[i] = API{Key: a.Key, MinVersion: minVersion, MaxVersion: maxVersion}
	}
	return rows
}
