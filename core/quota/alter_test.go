package quota

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func strp(s string) *string { return &s }

func TestEntityFromComponents(t *testing.T) {
	for _, tc := range []struct {
		name  string
		comps []Component
		want  Entity
		err   string
	}{
		{"user", []Component{{EntityUser, strp("alice")}}, Entity{User: Named("alice")}, ""},
		{"default user and client", []Component{{EntityClientID, nil}, {EntityUser, nil}}, Entity{User: Default(), ClientID: Default()}, ""},
		{"ip", []Component{{EntityIP, strp("10.0.0.1")}}, Entity{IP: Named("10.0.0.1")}, ""},
		{"empty", nil, Entity{}, "invalid empty client quota entity"},
		{"unknown type", []Component{{"group", strp("g")}}, Entity{}, `unhandled client quota entity type: "group"`},
		{"duplicate", []Component{{EntityUser, strp("a")}, {EntityUser, nil}}, Entity{}, "duplicate entity entry user"},
		{"empty name", []Component{{EntityClientID, strp("")}}, Entity{}, "empty client-id not supported"},
		{"ip with user", []Component{{EntityIP, nil}, {EntityUser, strp("a")}}, Entity{}, "IP entity should not be combined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EntityFromComponents(tc.comps)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrInvalidRequest)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestAlterValidation(t *testing.T) {
	user := Entity{User: Named("alice")}
	ip := Entity{IP: Default()}
	for _, tc := range []struct {
		name   string
		entity Entity
		ops    []Op
		err    string
	}{
		{"unknown key", user, []Op{{Key: "bogus_rate", Value: 1}}, "invalid configuration key bogus_rate"},
		{"negative", user, []Op{{Key: ProducerByteRate, Value: -1}}, "must be greater than 0"},
		{"zero", user, []Op{{Key: RequestPercentage, Value: 0}}, "must be greater than 0"},
		{"NaN", user, []Op{{Key: RequestPercentage, Value: nan()}}, "finite"},
		{"fractional LONG", user, []Op{{Key: ConsumerByteRate, Value: 1.5}}, "cannot be a fractional value"},
		{"fractional INT", ip, []Op{{Key: ConnectionCreationRate, Value: 2.25}}, "cannot be a fractional value"},
		{"INT too large", ip, []Op{{Key: ConnectionCreationRate, Value: 1 << 31}}, "too large for an INT"},
		{"LONG too large", user, []Op{{Key: ProducerByteRate, Value: 1 << 63}}, "too large for a LONG"},
		{"IP key on a user", user, []Op{{Key: ConnectionCreationRate, Value: 5}}, "invalid configuration key connection_creation_rate"},
		{"user key on an IP", ip, []Op{{Key: ProducerByteRate, Value: 5}}, "invalid configuration key producer_byte_rate"},
		{"duplicate key", user, []Op{{Key: ProducerByteRate, Value: 5}, {Key: ProducerByteRate, Remove: true}}, "duplicate quota key producer_byte_rate"},
		{"empty entity", Entity{}, []Op{{Key: ProducerByteRate, Value: 5}}, "invalid empty client quota entity"},
		{"empty name", Entity{User: Named("")}, []Op{{Key: ProducerByteRate, Value: 5}}, "empty name"},
		{"IP with client", Entity{IP: Named("1.2.3.4"), ClientID: Default()}, []Op{{Key: ConnectionCreationRate, Value: 5}}, "should not be combined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, Config{}, Entity{})
			// One valid op first: nothing is applied when a later op
			// is refused.
			ops := append([]Op{{Key: ControllerMutationRate, Value: 10}}, tc.ops...)
			if tc.entity.isIP() {
				ops = tc.ops
			}
			err := m.Alter(tc.entity, ops, false)
			require.ErrorIs(t, err, ErrInvalidRequest)
			require.ErrorContains(t, err, tc.err)
			got, err := m.Describe(Filter{})
			require.NoError(t, err)
			require.Empty(t, got)
		})
	}
}

func TestAlterSetRemoveValidateOnly(t *testing.T) {
	m := newManager(t, Config{}, Entity{})
	alice := Entity{User: Named("alice")}
	require.NoError(t, m.Alter(alice, []Op{{Key: ProducerByteRate, Value: 1024}}, true))
	got, err := m.Describe(Filter{})
	require.NoError(t, err)
	require.Empty(t, got, "validateOnly changes nothing")

	require.NoError(t, m.Alter(alice, []Op{{Key: ProducerByteRate, Value: 1024}, {Key: RequestPercentage, Value: 12.5}}, false))
	require.NoError(t, m.Alter(alice, []Op{{Key: ProducerByteRate, Value: 2048}, {Key: ConsumerByteRate, Remove: true}}, false))
	got, err = m.Describe(Filter{})
	require.NoError(t, err)
	require.Equal(t, []Described{{Entity: alice, Values: []Value{{ProducerByteRate, 2048}, {RequestPercentage, 12.5}}}}, got)

	require.NoError(t, m.Alter(alice, []Op{{Key: "bogus_rate", Remove: true}}, false), "removals are not validated")
	require.NoError(t, m.Alter(alice, []Op{{Key: ProducerByteRate, Remove: true}, {Key: RequestPercentage, Remove: true}}, false))
	got, err = m.Describe(Filter{})
	require.NoError(t, err)
	require.Empty(t, got, "an entity with no keys left is gone")
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}
