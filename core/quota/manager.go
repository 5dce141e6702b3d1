package quota

import (
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Op is one change of AlterClientQuotas: set Key to Value, or remove Key.
type Op struct {
	Key    Key
	Value  float64
	Remove bool
}

// sensorID names one sensor: a key and whom it charges (an IP for
// connection_creation_rate).
type sensorID struct {
	key    Key
	sensor SensorKey
	ip     string
}

// sensor is a Rate or, for controller_mutation_rate, a TokenBucket, and
// the instant it was last touched (for Expire).
type sensor struct {
	rate    *Rate
	bucket  *TokenBucket
	touched time.Duration
}

// Manager is the quota state of one broker: the configured entries (as
// the ClientQuotaRecords of the metadata log leave them) and one sensor
// per charged entity and key. It is not safe for concurrent use; its
// owner serialises calls, as the rest of core does.
type Manager struct {
	cfg     Config
	entries map[Entity]map[Key]float64
	// enabled says a key has had an entry: from then on every
	// request is recorded for it (Kafka's quotasEnabled), so a quota set
	// later sees the traffic before it.
	enabled map[Key]bool
	sensors map[sensorID]*sensor
}

// NewManager returns a Manager with no quotas.
func NewManager(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Manager{
		cfg:     cfg.withDefaults(),
		entries: map[Entity]map[Key]float64{},
		enabled: map[Key]bool{},
		sensors: map[sensorID]*sensor{},
	}, nil
}

// Alter applies one AlterClientQuotas entry: every op is validated first
// (a valid entity, no key twice, a key the entity takes, a value Kafka
// would accept) and nothing changes unless all are; with validateOnly
// nothing changes at all. Errors wrap ErrInvalidRequest. As in Kafka
// (ClientQuotaControlManager.alterClientQuotaEntity), a removal is not
// validated: removing a key that is not set, even one that does not
// exist, changes nothing and is not an error.
func (m *Manager) Alter(e Entity, ops []Op, validateOnly bool) error {
	if err := e.validate(); err != nil {
		return err
	}
	seen := map[Key]bool{}
	for _, op := range ops {
		if seen[op.Key] {
			return invalidf("duplicate quota key %s, not updating quota for entity %s", op.Key, e)
		}
		seen[op.Key] = true
		if op.Remove {
			continue // Kafka validates only the values it sets
		}
		if err := validateKeyValue(e, op.Key, op.Value); err != nil {
			return err
		}
	}
	if validateOnly {
		return nil
	}
	for _, op := range ops {
		if op.Remove {
			delete(m.entries[e], op.Key)
			continue
		}
		if m.entries[e] == nil {
			m.entries[e] = map[Key]float64{}
		}
		m.entries[e][op.Key] = op.Value
		m.enabled[op.Key] = true
	}
	if len(m.entries[e]) == 0 {
		delete(m.entries, e)
	}
	return nil
}

// lookup returns the Lookup of one key over the entries.
func (m *Manager) lookup(k Key) Lookup {
	return func(e Entity) (float64, bool) {
		v, ok := m.entries[e][k]
		return v, ok
	}
}

// Resolve is the quota of key k for a request by user with clientID.
func (m *Manager) Resolve(k Key, user, clientID string) Resolution {
	return Resolve(m.lookup(k), user, clientID)
}

func (m *Manager) sensorFor(id sensorID, now time.Duration) *sensor {
	s := m.sensors[id]
	if s == nil {
		s = &sensor{}
		if id.key == ControllerMutationRate {
			s.bucket = &TokenBucket{}
		} else {
			s.rate = NewRate(m.cfg.WindowNum, m.cfg.WindowSize)
		}
		m.sensors[id] = s
	}
	s.touched = now
	return s
}

// Record charges value to the sensor of user and clientID for a rate key
// (producer_byte_rate and consumer_byte_rate in bytes, request_percentage
// in percent of a thread: see RecordRequestTime) and returns how long to
// throttle the client (ClientQuotaManager.recordAndGetThrottleTimeMs):
// the value is counted first, so a throttled request still counts, and
// the throttle is Kafka's (observed - quota) / quota * window, bounded by
// MaxByteRateThrottle for byte rates and by WindowSize for
// request_percentage (ClientRequestQuotaManager). A key Record does not
// take is an error, and so is a value that is not a finite number (it
// would poison the rate for quota.window.num windows); no quota is zero.
func (m *Manager) Record(k Key, user, clientID string, value float64, now time.Duration) (time.Duration, error) {
	var bound time.Duration
	switch k {
	case ProducerByteRate, ConsumerByteRate:
		bound = m.cfg.MaxByteRateThrottle
	case RequestPercentage:
		bound = m.cfg.WindowSize
	default:
		return 0, fmt.Errorf("quota: Record takes byte-rate and request_percentage keys, not %q", k)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return 0, fmt.Errorf("quota: %s value %v is not a finite number", k, value)
	}
	if !m.enabled[k] {
		return 0, nil
	}
	res := m.Resolve(k, user, clientID)
	s := m.sensorFor(sensorID{key: k, sensor: res.Sensor}, now)
	s.rate.Record(value, now)
	if !res.Limited() {
		return 0, nil
	}
	observed := s.rate.Measure(now)
	if observed <= res.Limit {
		return 0, nil
	}
	return BoundedThrottleTime(observed, res.Limit, s.rate.WindowSize(now), bound), nil
}

// RecordNoThrottle charges value to a rate key without a throttle
// (ClientQuotaManager.recordNoThrottle): Kafka's network-thread time for
// request_percentage, and, with a negative value, taking back what was
// charged for a response that was not sent (unrecordQuotaSensor). It
// returns an error for the keys Record refuses.
func (m *Manager) RecordNoThrottle(k Key, user, clientID string, value float64, now time.Duration) error {
	switch k {
	case ProducerByteRate, ConsumerByteRate, RequestPercentage:
	default:
		return fmt.Errorf("quota: RecordNoThrottle takes byte-rate and request_percentage keys, not %q", k)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return fmt.Errorf("quota: %s value %v is not a finite number", k, value)
	}
	if !m.enabled[k] {
		return nil
	}
	res := m.Resolve(k, user, clientID)
	m.sensorFor(sensorID{key: k, sensor: res.Sensor}, now).rate.Record(value, now)
	return nil
}

// MaxValueInQuotaWindow is ClientQuotaManager.getMaxValueInQuotaWindow:
// the most a client may take in the window, quota * (WindowNum - 1) *
// WindowSize, which Kafka uses to cap a throttled consumer's fetch size.
// It is +Inf when no quota applies.
func (m *Manager) MaxValueInQuotaWindow(k Key, user, clientID string) float64 {
	res := m.Resolve(k, user, clientID)
	if !res.Limited() {
		return math.Inf(1)
	}
	return res.Limit * float64(m.cfg.WindowNum-1) * m.cfg.WindowSize.Seconds()
}

// nanosToPercentage is ClientRequestQuotaManager.nanosToPercentage: one
// second of a thread's time is 100 percent.
func nanosToPercentage(d time.Duration) float64 { return float64(d.Nanoseconds()) * 100 / 1e9 }

// RecordRequestTime charges threadTime (request-handler or network thread
// time spent on a request) to request_percentage (KIP-124) and returns the
// throttle, at most WindowSize.
func (m *Manager) RecordRequestTime(user, clientID string, threadTime, now time.Duration) time.Duration {
	d, _ := m.Record(RequestPercentage, user, clientID, nanosToPercentage(threadTime), now) // the key is valid
	return d
}

// RecordMutations charges n partition mutations to controller_mutation_rate
// (KIP-599) with Kafka's token bucket. Permissive (strict false, the
// older request versions): the mutations are taken, possibly below zero,
// and the throttle is the time for the bucket to refill to zero. Strict
// (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): a bucket
// already below zero refuses the request without taking tokens,
// returning the throttle and ErrThrottlingQuotaExceeded; a bucket at or
// above zero takes them all, even if that overdraws it, and the request
// passes (the next one pays).
func (m *Manager) RecordMutations(user, clientID string, n float64, now time.Duration, strict bool) (time.Duration, error) {
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, fmt.Errorf("quota: %v mutations is not a finite number", n)
	}
	if !m.enabled[ControllerMutationRate] {
		return 0, nil
	}
	res := m.Resolve(ControllerMutationRate, user, clientID)
	if !res.Limited() {
		return 0, nil
	}
	s := m.sensorFor(sensorID{key: ControllerMutationRate, sensor: res.Sensor}, now)
	num, window := m.cfg.ControllerWindowNum, m.cfg.ControllerWindowSize
	if strict {
		if tokens := s.bucket.Tokens(res.Limit, num, window, now); tokens < 0 {
			return TokenThrottleTime(tokens, res.Limit), requestErrorf(kerr.ThrottlingQuotaExceeded, "controller mutation quota of %s exceeded", res.Entity)
		}
		s.bucket.Record(n, res.Limit, num, window, now)
		return 0, nil
	}
	s.bucket.Record(n, res.Limit, num, window, now)
	return TokenThrottleTime(s.bucket.Tokens(res.Limit, num, window, now), res.Limit), nil
}

// RecordConnection charges one new connection from ip to
// connection_creation_rate (KIP-612, ConnectionQuotas.
// recordIpConnectionMaybeThrottle) and returns the throttle, at most
// WindowSize. A throttled connection is taken back out of the rate (the
// caller closes it after the throttle, and it did not count), as Kafka
// does. ip is as the caller canonicalised it.
func (m *Manager) RecordConnection(ip string, now time.Duration) time.Duration {
	limit, _, ok := ResolveIP(m.lookup(ConnectionCreationRate), ip)
	if !ok {
		return 0
	}
	s := m.sensorFor(sensorID{key: ConnectionCreationRate, ip: ip}, now)
	s.rate.Record(1, now)
	observed := s.rate.Measure(now)
	if observed <= limit {
		return 0
	}
	throttle := BoundedThrottleTime(observed, limit, s.rate.WindowSize(now), m.cfg.WindowSize)
	if throttle > 0 {
		s.rate.Record(-1, now)
	}
	return throttle
}

// Expire drops the sensors no call has touched for SensorIdleExpiry
// (Kafka's sensor expiry), bounding the memory of clients that came and
// went, and returns how many it dropped.
func (m *Manager) Expire(now time.Duration) int {
	dropped := 0
	//determinism:unordered deleting idle entries; each is decided alone and only the count leaves
	for id, s := range m.sensors {
		if now-s.touched >= m.cfg.SensorIdleExpiry {
			delete(m.sensors, id)
			dropped++
		}
	}
	return dropped
}

// Sensors is the number of sensors kept, for metrics and tests.
func (m *Manager) Sensors() int { return len(m.sensors) }
