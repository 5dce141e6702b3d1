package quota

// Level names the entry of KIP-55's precedence order that supplied a
// client's quota, most specific first.
type Level int

// The eight levels of KIP-55, in precedence order, and LevelNone when no
// entry applies (the client is unlimited).
const (
	LevelNone                       Level = iota
	LevelUserClientID                     // /config/users/<user>/clients/<client-id>
	LevelUserDefaultClientID              // /config/users/<user>/clients/<default>
	LevelUser                             // /config/users/<user>
	LevelDefaultUserClientID              // /config/users/<default>/clients/<client-id>
	LevelDefaultUserDefaultClientID       // /config/users/<default>/clients/<default>
	LevelDefaultUser                      // /config/users/<default>
	LevelClientID                         // /config/clients/<client-id>
	LevelDefaultClientID                  // /config/clients/<default>
)

var levelNames = [...]string{"none", "user+client-id", "user+default-client-id", "user",
	"default-user+client-id", "default-user+default-client-id", "default-user", "client-id", "default-client-id"}

// String names the level, most specific part first.
func (l Level) String() string {
	if l < 0 || int(l) >= len(levelNames) {
		return "invalid"
	}
	return levelNames[l]
}

// SensorKey names the sensor a request is charged to: Kafka's quota
// metric tags (user, client-id). A user-and-client-id level charges the
// pair, a user level the user whatever its client id, a client-id level
// the client id whatever its user. Every user under a default quota has a
// sensor of its own: a default is a quota per user, not a shared one.
type SensorKey struct {
	// User is the user charged, or empty when the sensor is per client
	// id only.
	User string
	// ByUser says the sensor is keyed by the user.
	ByUser bool
	// ClientID is the client id charged, or empty when the sensor is per
	// user only.
	ClientID string
	// ByClientID says the sensor is keyed by the client id.
	ByClientID bool
}

// Resolution is the quota that applies to one request and where it
// comes from.
type Resolution struct {
	// Limit is the quota; meaningful only when Level is not LevelNone.
	Limit float64
	// Level is the precedence level that matched.
	Level Level
	// Entity is the configured entity that supplied Limit.
	Entity Entity
	// Sensor is the sensor the request is charged to.
	Sensor SensorKey
}

// Limited says a quota applies.
func (r Resolution) Limited() bool { return r.Level != LevelNone }

// Lookup answers whether an entity has a value for the key being
// resolved.
type Lookup func(Entity) (float64, bool)

// Resolve is DefaultQuotaCallback's quotaMetricTags and quotaLimit for a
// request by user with clientID: the first of KIP-55's eight levels that
// has a value in lookup supplies the quota, and its level chooses the
// sensor. It tries a fixed sequence of lookups, so no map order reaches
// the answer.
//
// Kafka's callback decides the sensor from the configured entities and
// then looks the quota up from the sensor's tags, treating an empty user
// or client id in the tags as "not keyed by it"; a request with an empty
// client id then never matches a client-id level. Here names are matched
// as given: an empty client id cannot be configured (AlterClientQuotas
// refuses empty names), so it matches only the default client-id levels,
// which is what they are for.
func Resolve(lookup Lookup, user, clientID string) Resolution {
	u, c := Named(user), Named(clientID)
	both := SensorKey{User: user, ByUser: true, ClientID: clientID, ByClientID: true}
	byUser := SensorKey{User: user, ByUser: true}
	byClient := SensorKey{ClientID: clientID, ByClientID: true}
	for _, step := range []struct {
		level  Level
		entity Entity
		sensor SensorKey
	}{
		{LevelUserClientID, Entity{User: u, ClientID: c}, both},
		{LevelUserDefaultClientID, Entity{User: u, ClientID: Default()}, both},
		{LevelUser, Entity{User: u}, byUser},
		{LevelDefaultUserClientID, Entity{User: Default(), ClientID: c}, both},
		{LevelDefaultUserDefaultClientID, Entity{User: Default(), ClientID: Default()}, both},
		{LevelDefaultUser, Entity{User: Default()}, byUser},
		{LevelClientID, Entity{ClientID: c}, byClient},
		{LevelDefaultClientID, Entity{ClientID: Default()}, byClient},
	} {
		if v, ok := lookup(step.entity); ok {
			return Resolution{Limit: v, Level: step.level, Entity: step.entity, Sensor: step.sensor}
		}
	}
	return Resolution{Sensor: byClient}
}

// ResolveIP is ConnectionQuotas.connectionRateForIP: the IP's own
// connection_creation_rate, else the default IP entity's, else none.
func ResolveIP(lookup Lookup, ip string) (limit float64, entity Entity, ok bool) {
	for _, e := range []Entity{{IP: Named(ip)}, {IP: Default()}} {
		if v, found := lookup(e); found {
			return v, e, true
		}
	}
	return 0, Entity{}, false
}
