package quota

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// allLevels configures producer_byte_rate at every level for user alice
// and client id app, level i's value being i.
func allLevels() map[Level]Entity {
	u, c, d := Named("alice"), Named("app"), Default()
	return map[Level]Entity{
		LevelUserClientID:               {User: u, ClientID: c},
		LevelUserDefaultClientID:        {User: u, ClientID: d},
		LevelUser:                       {User: u},
		LevelDefaultUserClientID:        {User: d, ClientID: c},
		LevelDefaultUserDefaultClientID: {User: d, ClientID: d},
		LevelDefaultUser:                {User: d},
		LevelClientID:                   {ClientID: c},
		LevelDefaultClientID:            {ClientID: d},
	}
}

// TestResolvePrecedence removes the levels one by one from the most
// specific: each time the next level of KIP-55's order applies, charging
// the sensor Kafka's DefaultQuotaCallback chooses.
func TestResolvePrecedence(t *testing.T) {
	both := SensorKey{User: "alice", ByUser: true, ClientID: "app", ByClientID: true}
	user := SensorKey{User: "alice", ByUser: true}
	client := SensorKey{ClientID: "app", ByClientID: true}
	wantSensor := map[Level]SensorKey{
		LevelUserClientID: both, LevelUserDefaultClientID: both, LevelUser: user,
		LevelDefaultUserClientID: both, LevelDefaultUserDefaultClientID: both, LevelDefaultUser: user,
		LevelClientID: client, LevelDefaultClientID: client, LevelNone: client,
	}
	m, err := NewManager(Config{})
	require.NoError(t, err)
	levels := allLevels()
	for l := LevelUserClientID; l <= LevelDefaultClientID; l++ {
		require.NoError(t, m.Alter(levels[l], []Op{{Key: ProducerByteRate, Value: float64(l)}}, false))
	}
	for l := LevelUserClientID; l <= LevelDefaultClientID+1; l++ {
		res := m.Resolve(ProducerByteRate, "alice", "app")
		if l > LevelDefaultClientID {
			require.Equal(t, LevelNone, res.Level)
			require.False(t, res.Limited())
			require.Equal(t, wantSensor[LevelNone], res.Sensor)
			break
		}
		require.Equal(t, l, res.Level, "after removing the levels above %v", l)
		require.Equal(t, float64(l), res.Limit)
		require.Equal(t, levels[l], res.Entity)
		require.Equal(t, wantSensor[l], res.Sensor, "%v", l)
		// Another key's entries do not take part.
		require.False(t, m.Resolve(ConsumerByteRate, "alice", "app").Limited())
		require.NoError(t, m.Alter(levels[l], []Op{{Key: ProducerByteRate, Remove: true}}, false))
	}
}

// TestResolveOtherClients checks that entries for alice and app do not
// apply to other names, and that defaults do, charging a sensor per name.
func TestResolveOtherClients(t *testing.T) {
	m, err := NewManager(Config{})
	require.NoError(t, err)
	for l, e := range allLevels() {
		require.NoError(t, m.Alter(e, []Op{{Key: ProducerByteRate, Value: float64(l)}}, false))
	}
	for _, tc := range []struct {
		user, client string
		level        Level
		sensor       SensorKey
	}{
		{"alice", "app", LevelUserClientID, SensorKey{User: "alice", ByUser: true, ClientID: "app", ByClientID: true}},
		{"alice", "other", LevelUserDefaultClientID, SensorKey{User: "alice", ByUser: true, ClientID: "other", ByClientID: true}},
		{"alice", "", LevelUserDefaultClientID, SensorKey{User: "alice", ByUser: true, ByClientID: true}},
		{"bob", "app", LevelDefaultUserClientID, SensorKey{User: "bob", ByUser: true, ClientID: "app", ByClientID: true}},
		{"bob", "other", LevelDefaultUserDefaultClientID, SensorKey{User: "bob", ByUser: true, ClientID: "other", ByClientID: true}},
		{"App", "ALICE", LevelDefaultUserDefaultClientID, SensorKey{User: "App", ByUser: true, ClientID: "ALICE", ByClientID: true}},
	} {
		res := m.Resolve(ProducerByteRate, tc.user, tc.client)
		require.Equal(t, tc.level, res.Level, "%+v", tc)
		require.Equal(t, tc.sensor, res.Sensor, "%+v", tc)
	}
}

// TestResolveSingleLevels configures one level at a time and checks which
// requests it covers.
func TestResolveSingleLevels(t *testing.T) {
	requests := []struct{ user, client string }{{"alice", "app"}, {"alice", "x"}, {"bob", "app"}, {"bob", "x"}}
	for l, e := range allLevels() {
		m, err := NewManager(Config{})
		require.NoError(t, err)
		require.NoError(t, m.Alter(e, []Op{{Key: ConsumerByteRate, Value: 7}}, false))
		for _, r := range requests {
			userOK := !e.User.Set || e.User.Default || e.User.Name == r.user
			clientOK := !e.ClientID.Set || e.ClientID.Default || e.ClientID.Name == r.client
			res := m.Resolve(ConsumerByteRate, r.user, r.client)
			if userOK && clientOK {
				require.Equal(t, l, res.Level, "%v %+v", l, r)
				require.Equal(t, 7.0, res.Limit)
				require.Equal(t, e.User.Set, res.Sensor.ByUser)
				require.Equal(t, e.ClientID.Set, res.Sensor.ByClientID)
			} else {
				require.False(t, res.Limited(), "%v %+v", l, r)
			}
		}
	}
}

func TestResolveIP(t *testing.T) {
	m, err := NewManager(Config{})
	require.NoError(t, err)
	_, _, ok := ResolveIP(m.lookup(ConnectionCreationRate), "10.0.0.1")
	require.False(t, ok)
	require.NoError(t, m.Alter(Entity{IP: Default()}, []Op{{Key: ConnectionCreationRate, Value: 5}}, false))
	require.NoError(t, m.Alter(Entity{IP: Named("10.0.0.1")}, []Op{{Key: ConnectionCreationRate, Value: 2}}, false))
	limit, e, ok := ResolveIP(m.lookup(ConnectionCreationRate), "10.0.0.1")
	require.True(t, ok)
	require.Equal(t, 2.0, limit)
	require.Equal(t, Entity{IP: Named("10.0.0.1")}, e)
	limit, e, ok = ResolveIP(m.lookup(ConnectionCreationRate), "10.0.0.2")
	require.True(t, ok)
	require.Equal(t, 5.0, limit)
	require.Equal(t, Entity{IP: Default()}, e)
}

func TestLevelString(t *testing.T) {
	require.Equal(t, "user+default-client-id", LevelUserDefaultClientID.String())
	require.Equal(t, "invalid", Level(42).String())
}
