package quota

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// describeFixture configures one entity of every shape, each with
// producer_byte_rate (or connection_creation_rate for IPs).
func describeFixture(t *testing.T) *Manager {
	m := newManager(t, Config{}, Entity{})
	for _, e := range []Entity{
		{ClientID: Named("app")},
		{User: Named("alice"), ClientID: Named("app")},
		{User: Default()},
		{User: Named("alice")},
		{ClientID: Default()},
		{User: Default(), ClientID: Named("app")},
		{User: Named("bob"), ClientID: Default()},
		{User: Default(), ClientID: Default()},
	} {
		require.NoError(t, m.Alter(e, []Op{{Key: ProducerByteRate, Value: 100}}, false))
	}
	for _, e := range []Entity{{IP: Named("10.0.0.1")}, {IP: Default()}} {
		require.NoError(t, m.Alter(e, []Op{{Key: ConnectionCreationRate, Value: 3}}, false))
	}
	return m
}

func TestDescribe(t *testing.T) {
	m := describeFixture(t)
	exact := func(typ, name string) FilterComponent {
		return FilterComponent{Type: typ, Match: MatchExact, Name: strp(name)}
	}
	def := func(typ string) FilterComponent { return FilterComponent{Type: typ, Match: MatchDefault} }
	anyOf := func(typ string) FilterComponent { return FilterComponent{Type: typ, Match: MatchAny} }
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"everything, sorted", Filter{}, []string{
			"ip=<default>", "ip=10.0.0.1", "client-id=<default>", "client-id=app",
			"user=<default>", "user=<default>,client-id=<default>", "user=<default>,client-id=app",
			"user=alice", "user=alice,client-id=app", "user=bob,client-id=<default>",
		}},
		{"strict with no components", Filter{Strict: true}, nil},
		{"exact user", Filter{Components: []FilterComponent{exact(EntityUser, "alice")}}, []string{"user=alice", "user=alice,client-id=app"}},
		{"exact user, strict", Filter{Components: []FilterComponent{exact(EntityUser, "alice")}, Strict: true}, []string{"user=alice"}},
		{"default user", Filter{Components: []FilterComponent{def(EntityUser)}}, []string{"user=<default>", "user=<default>,client-id=<default>", "user=<default>,client-id=app"}},
		{"any user, strict", Filter{Components: []FilterComponent{anyOf(EntityUser)}, Strict: true}, []string{"user=<default>", "user=alice"}},
		{"any user, any client id", Filter{Components: []FilterComponent{anyOf(EntityUser), anyOf(EntityClientID)}}, []string{
			"user=<default>,client-id=<default>", "user=<default>,client-id=app", "user=alice,client-id=app", "user=bob,client-id=<default>",
		}},
		{"exact client id", Filter{Components: []FilterComponent{exact(EntityClientID, "app")}}, []string{"client-id=app", "user=<default>,client-id=app", "user=alice,client-id=app"}},
		{"default client id, strict", Filter{Components: []FilterComponent{def(EntityClientID)}, Strict: true}, []string{"client-id=<default>"}},
		{"exact does not match default", Filter{Components: []FilterComponent{exact(EntityUser, "<default>")}}, nil},
		{"name matched exactly", Filter{Components: []FilterComponent{exact(EntityUser, "Alice")}}, nil},
		{"any ip", Filter{Components: []FilterComponent{anyOf(EntityIP)}}, []string{"ip=<default>", "ip=10.0.0.1"}},
		{"exact ip", Filter{Components: []FilterComponent{exact(EntityIP, "10.0.0.1")}}, []string{"ip=10.0.0.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.Describe(tc.f)
			require.NoError(t, err)
			var names []string
			for _, d := range got {
				names = append(names, d.Entity.String())
				require.Len(t, d.Values, 1)
			}
			require.Equal(t, tc.want, names)
		})
	}
}

func TestDescribeInvalidFilters(t *testing.T) {
	m := describeFixture(t)
	for _, tc := range []struct {
		name        string
		f           Filter
		err         string
		unsupported bool
	}{
		{"empty type", Filter{Components: []FilterComponent{{Match: MatchAny}}}, "invalid empty entity type", false},
		{"repeated type", Filter{Components: []FilterComponent{{Type: EntityUser, Match: MatchAny}, {Type: EntityUser, Match: MatchDefault}}}, "more than once", false},
		{"unknown type", Filter{Components: []FilterComponent{{Type: "group", Match: MatchAny}}}, "unsupported entity type group", true},
		{"exact without name", Filter{Components: []FilterComponent{{Type: EntityUser, Match: MatchExact}}}, "MATCH_TYPE_EXACT", false},
		{"default with name", Filter{Components: []FilterComponent{{Type: EntityUser, Match: MatchDefault, Name: strp("a")}}}, "also specified a match string", false},
		{"any with name", Filter{Components: []FilterComponent{{Type: EntityUser, Match: MatchAny, Name: strp("a")}}}, "also specified a match string", false},
		{"unknown match", Filter{Components: []FilterComponent{{Type: EntityUser, Match: 7}}}, "unknown match type 7", false},
		{"ip with user", Filter{Components: []FilterComponent{{Type: EntityIP, Match: MatchAny}, {Type: EntityUser, Match: MatchAny}}}, "IP filter component", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Describe(tc.f)
			require.ErrorContains(t, err, tc.err)
			var re *RequestError
			require.True(t, errors.As(err, &re))
			require.NotContains(t, err.Error(), "most likely", "the message is ours alone")
			if tc.unsupported {
				require.ErrorIs(t, err, ErrUnsupportedVersion)
			} else {
				require.ErrorIs(t, err, ErrInvalidRequest)
			}
		})
	}
}
