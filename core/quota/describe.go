package quota

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MatchType is how a DescribeClientQuotas filter component matches
// (KIP-546).
type MatchType int8

// The match types of DescribeClientQuotasRequest, with their wire values.
const (
	// MatchExact matches the entity whose component of the type has
	// the given name.
	MatchExact MatchType = 0
	// MatchDefault matches the entity whose component of the type is
	// the default.
	MatchDefault MatchType = 1
	// MatchAny matches any entity with a component of the type
	// (MATCH_TYPE_SPECIFIED: a name or the default).
	MatchAny MatchType = 2
)

// FilterComponent is one component of a DescribeClientQuotas filter.
// Name is set only for MatchExact (nil on the wire otherwise).
type FilterComponent struct {
	Type  string
	Match MatchType
	Name  *string
}

// Filter is a DescribeClientQuotas request: every component must match;
// with Strict, the entity must also have no component the filter does not
// name.
type Filter struct {
	Components []FilterComponent
	Strict     bool
}

// Value is one configured key of an entity.
type Value struct {
	Key   Key
	Value float64
}

// Described is one entity of Describe's answer with its values, sorted by
// key.
type Described struct {
	Entity Entity
	Values []Value
}

// componentOf returns the component of e of the given type.
func componentOf(e Entity, typ string) Name {
	switch typ {
	case EntityUser:
		return e.User
	case EntityClientID:
		return e.ClientID
	}
	return e.IP
}

// Describe answers DescribeClientQuotas with ClientQuotasImage.describe's
// semantics, sorted by entity (CompareEntities) and key. A malformed
// filter (an empty or repeated type, a name with a non-exact match or
// none with an exact one, an unknown match type, ip combined with user
// or client-id) wraps ErrInvalidRequest; an unknown entity type wraps
// kerr.UnsupportedVersion, as Kafka answers it.
func (m *Manager) Describe(f Filter) ([]Described, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	entities := make([]Entity, 0, len(m.entries))
	for e := range m.entries {
		entities = append(entities, e)
	}
	slices.SortFunc(entities, CompareEntities)
	var out []Described
	for _, e := range entities {
		if f.matches(e) {
			out = append(out, Described{Entity: e, Values: m.values(e)})
		}
	}
	return out, nil
}

// values returns the values of e sorted by key.
func (m *Manager) values(e Entity) []Value {
	keys := make([]Key, 0, len(m.entries[e]))
	for k := range m.entries[e] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	values := make([]Value, 0, len(keys))
	for _, k := range keys {
		values = append(values, Value{Key: k, Value: m.entries[e][k]})
	}
	return values
}

func (f Filter) validate() error {
	seen := map[string]bool{}
	for _, c := range f.Components {
		switch {
		case c.Type == "":
			return invalidf("invalid empty entity type")
		case seen[c.Type]:
			return invalidf("entity type %s cannot appear more than once in the filter", c.Type)
		case c.Type != EntityUser && c.Type != EntityClientID && c.Type != EntityIP:
			return requestErrorf(kerr.UnsupportedVersion, "unsupported entity type %s", c.Type)
		}
		seen[c.Type] = true
		switch c.Match {
		case MatchExact:
			if c.Name == nil {
				return invalidf("request specified MATCH_TYPE_EXACT, but set match string to null")
			}
		case MatchDefault, MatchAny:
			if c.Name != nil {
				return invalidf("request specified match type %d, but also specified a match string", c.Match)
			}
		default:
			return invalidf("unknown match type %d", c.Match)
		}
	}
	if seen[EntityIP] && (seen[EntityUser] || seen[EntityClientID]) {
		return invalidf("invalid entity filter component combination, IP filter component should not be used with user or clientId filter component")
	}
	return nil
}

func (f Filter) matches(e Entity) bool {
	if f.Strict {
		n := 0
		for _, c := range []Name{e.User, e.ClientID, e.IP} {
			if c.Set {
				n++
			}
		}
		if n != len(f.Components) {
			return false
		}
	}
	for _, c := range f.Components {
		got := componentOf(e, c.Type)
		switch {
		case !got.Set:
			return false
		case c.Match == MatchExact && (got.Default || got.Name != *c.Name):
			return false
		case c.Match == MatchDefault && !got.Default:
			return false
		}
	}
	return true
}
