package quota

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

const mib = 1 << 20

func newManager(t *testing.T, cfg Config, e Entity, ops ...Op) *Manager {
	t.Helper()
	m, err := NewManager(cfg)
	require.NoError(t, err)
	if len(ops) > 0 {
		require.NoError(t, m.Alter(e, ops, false))
	}
	return m
}

type step struct {
	at       time.Duration
	value    float64
	throttle time.Duration
}

// TestRecordByteRate runs Kafka's numbers by hand: 11 windows of 1 s, so a
// burst is measured over at least 10 s.
func TestRecordByteRate(t *testing.T) {
	alice := Entity{User: Named("alice")}
	for _, tc := range []struct {
		name  string
		cfg   Config
		quota float64
		steps []step
	}{
		// 5 MiB at once against 1 MiB/s: 0.5 MiB/s over the 10 s
		// floor, within the quota; 5 more a second later: 10 MiB over
		// 10 s, exactly the quota (allowed); 5 more: 15 MiB / 10 s =
		// 1.5 MiB/s, (1.5-1)/1 * 10 s = 5 s.
		{name: "1 MiB/s, 5 MiB bursts", quota: mib, steps: []step{
			{0, 5 * mib, 0}, {time.Second, 5 * mib, 0}, {2 * time.Second, 5 * mib, 5 * time.Second},
		}},
		// 20 MB at once against 1 MB/s: 2 MB/s, throttle 10 s.
		{name: "1 MB/s, 20 MB burst", quota: 1e6, steps: []step{{0, 20e6, 10 * time.Second}}},
		// 5 MB against 100 kB/s: 500 kB/s, (5-1)/1 * 10 s = 40 s.
		{name: "100 kB/s, 5 MB burst", quota: 1e5, steps: []step{{0, 5e6, 40 * time.Second}}},
		{name: "bounded", cfg: Config{MaxByteRateThrottle: 30 * time.Second}, quota: 1e5, steps: []step{{0, 5e6, 30 * time.Second}}},
		// The burst has expired 11 s after its last byte: the next
		// one is measured alone.
		{name: "window expiry", quota: 1e6, steps: []step{
			{0, 20e6, 10 * time.Second}, {11 * time.Second, 10e6, 0},
		}},
		// Still counted while throttled: a second 20 MB at 1 s makes
		// 40 MB over 10 s.
		{name: "throttled bytes count", quota: 1e6, steps: []step{
			{0, 20e6, 10 * time.Second}, {time.Second, 20e6, 30 * time.Second},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, tc.cfg, alice, Op{Key: ProducerByteRate, Value: tc.quota})
			for _, s := range tc.steps {
				got, err := m.Record(ProducerByteRate, "alice", "app", s.value, s.at)
				require.NoError(t, err)
				require.Equal(t, s.throttle, got, "at %v", s.at)
			}
			// The other direction is not limited.
			got, err := m.Record(ConsumerByteRate, "alice", "app", 1e12, 0)
			require.NoError(t, err)
			require.Zero(t, got)
		})
	}
}

// TestRecordSensorsPerUser checks that a default quota is a quota per
// user: two users under the default do not share a sensor.
func TestRecordSensorsPerUser(t *testing.T) {
	m := newManager(t, Config{}, Entity{User: Default()}, Op{Key: ConsumerByteRate, Value: 1e6})
	d, err := m.Record(ConsumerByteRate, "alice", "a", 10e6, 0)
	require.NoError(t, err)
	require.Zero(t, d)
	d, err = m.Record(ConsumerByteRate, "bob", "a", 10e6, 0)
	require.NoError(t, err)
	require.Zero(t, d, "bob has his own sensor")
	d, err = m.Record(ConsumerByteRate, "alice", "b", 1e6, 0)
	require.NoError(t, err)
	require.Equal(t, 1*time.Second, d, "alice's client ids share her user-level sensor")
	require.Equal(t, 2, m.Sensors())
}

// TestRecordQuotaSetLater checks that traffic recorded while the key was
// enabled but the client unlimited counts once a quota applies to it, as
// in Kafka, where the sensor exists with an unbounded quota.
func TestRecordQuotaSetLater(t *testing.T) {
	m := newManager(t, Config{}, Entity{User: Named("bob")}, Op{Key: ProducerByteRate, Value: 1e6})
	d, err := m.Record(ProducerByteRate, "alice", "app", 20e6, 0)
	require.NoError(t, err)
	require.Zero(t, d)
	require.NoError(t, m.Alter(Entity{ClientID: Named("app")}, []Op{{Key: ProducerByteRate, Value: 1e6}}, false))
	d, err = m.Record(ProducerByteRate, "alice", "app", 0, 0)
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, d)
}

func TestRecordWrongKey(t *testing.T) {
	m := newManager(t, Config{}, Entity{})
	for _, k := range []Key{ControllerMutationRate, ConnectionCreationRate, "bogus"} {
		_, err := m.Record(k, "u", "c", 1, 0)
		require.Error(t, err, k)
	}
	_, err := m.Record(ProducerByteRate, "u", "c", nan(), 0)
	require.Error(t, err)
	_, err = m.RecordMutations("u", "c", nan(), 0, true)
	require.Error(t, err)
	require.False(t, IsThrottled(err))
}

// TestRecordRequestTime is KIP-124: thread time as a percentage of one
// thread, throttled at most one window (ClientRequestQuotaManager).
func TestRecordRequestTime(t *testing.T) {
	for _, tc := range []struct {
		thread, throttle time.Duration
	}{
		{5 * time.Second, 0},            // 500% over 10 s = 50%/s: the quota
		{5200 * ms, 400 * ms},           // 52: (52-50)/50 * 10 s
		{5500 * ms, time.Second},        // 55: 1 s, the bound
		{10 * time.Second, time.Second}, // 100: 10 s, bounded to 1 s
		{time.Microsecond, 0},
	} {
		m := newManager(t, Config{}, Entity{ClientID: Named("app")}, Op{Key: RequestPercentage, Value: 50})
		require.Equal(t, tc.throttle, m.RecordRequestTime("alice", "app", tc.thread, 0), "%v", tc.thread)
	}
}

// TestRecordMutations is KIP-599's token bucket: 10 mutations/s, 11
// windows of 1 s, so a burst of 110.
func TestRecordMutations(t *testing.T) {
	type call struct {
		at       time.Duration
		n        float64
		strict   bool
		throttle time.Duration
		refused  bool
	}
	for _, tc := range []struct {
		name  string
		calls []call
	}{
		{"permissive overdraws and is throttled after", []call{
			{100 * time.Second, 150, false, 4 * time.Second, false}, // 110-150 = -40: 4 s
			{101 * time.Second, 10, false, 4 * time.Second, false},  // -30-10 = -40
		}},
		{"strict passes the request that overdraws, refuses the next", []call{
			{100 * time.Second, 150, true, 0, false},            // 110 >= 0: taken, -40
			{101 * time.Second, 1, true, 3 * time.Second, true}, // -30: refused, nothing taken
			{103500 * ms, 1, true, 500 * ms, true},              // -5
			{104 * time.Second, 5, true, 0, false},              // 0 is not below zero: -5
			{104 * time.Second, 1, false, 600 * ms, false},      // permissive: -6
		}},
		{"an empty bucket at the epoch", []call{
			{0, 1, true, 0, false},         // 0 tokens, not below zero
			{0, 1, true, 100 * ms, true},   // -1 tokens: 1/10 s
			{0, 1, false, 200 * ms, false}, // -2
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, Config{}, Entity{User: Named("alice")}, Op{Key: ControllerMutationRate, Value: 10})
			for i, c := range tc.calls {
				d, err := m.RecordMutations("alice", "app", c.n, c.at, c.strict)
				require.Equal(t, c.throttle, d, "call %d", i)
				if c.refused {
					require.ErrorIs(t, err, ErrThrottlingQuotaExceeded, "call %d", i)
					require.True(t, IsThrottled(err))
					var ke *kerr.Error
					require.True(t, errors.As(err, &ke))
					require.Equal(t, int16(89), ke.Code)
				} else {
					require.NoError(t, err, "call %d", i)
				}
			}
			// Another user is not limited.
			d, err := m.RecordMutations("bob", "app", 1e9, 0, true)
			require.NoError(t, err)
			require.Zero(t, d)
		})
	}
}

// TestRecordConnection is KIP-612: 2 connections/s from 10.0.0.1, so 20
// at once fit in the 10 s floor; the 21st is throttled 500 ms and taken
// back out, so the 22nd is throttled alike.
func TestRecordConnection(t *testing.T) {
	m := newManager(t, Config{}, Entity{IP: Named("10.0.0.1")}, Op{Key: ConnectionCreationRate, Value: 2})
	for i := 0; i < 20; i++ {
		require.Zero(t, m.RecordConnection("10.0.0.1", 0), "connection %d", i)
	}
	require.Equal(t, 500*ms, m.RecordConnection("10.0.0.1", 0))
	require.Equal(t, 500*ms, m.RecordConnection("10.0.0.1", 0))
	require.Zero(t, m.RecordConnection("10.0.0.2", 0), "no default IP quota")
	// Eleven seconds later the burst has expired.
	require.Zero(t, m.RecordConnection("10.0.0.1", 11*time.Second))

	// A default IP quota covers every address, each with its own rate,
	// and the throttle is bounded by one window.
	require.NoError(t, m.Alter(Entity{IP: Default()}, []Op{{Key: ConnectionCreationRate, Value: 1}}, false))
	for i := 0; i < 10; i++ {
		require.Zero(t, m.RecordConnection("10.0.0.2", 0))
		require.Zero(t, m.RecordConnection("10.0.0.3", 0))
	}
	require.Equal(t, time.Second, m.RecordConnection("10.0.0.2", 0))
}

func TestExpire(t *testing.T) {
	m := newManager(t, Config{}, Entity{User: Default()}, Op{Key: ProducerByteRate, Value: 1e6})
	_, err := m.Record(ProducerByteRate, "alice", "a", 1, 0)
	require.NoError(t, err)
	_, err = m.Record(ProducerByteRate, "bob", "a", 1, 30*time.Minute)
	require.NoError(t, err)
	require.Equal(t, 0, m.Expire(time.Hour-ms))
	require.Equal(t, 1, m.Expire(time.Hour))
	require.Equal(t, 1, m.Sensors())
	require.Equal(t, 1, m.Expire(90*time.Minute))
	require.Equal(t, 0, m.Sensors())
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, Config{}.Validate())
	for _, bad := range []Config{
		{WindowNum: -1}, {ControllerWindowNum: -1}, {WindowSize: -time.Second},
		{WindowSize: time.Microsecond}, {ControllerWindowSize: -1}, {MaxByteRateThrottle: -1}, {SensorIdleExpiry: -1},
	} {
		require.Error(t, bad.Validate(), "%+v", bad)
		_, err := NewManager(bad)
		require.Error(t, err)
	}
}

func TestRecordNoThrottle(t *testing.T) {
	m := newManager(t, Config{}, Entity{User: Named("alice")}, Op{Key: ConsumerByteRate, Value: 1e6})
	require.NoError(t, m.RecordNoThrottle(ConsumerByteRate, "alice", "app", 20e6, 0))
	// The 20 MB counted: a further byte is throttled for all of them.
	d, err := m.Record(ConsumerByteRate, "alice", "app", 1, 0)
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, d)
	// Taken back, the rate is within the quota again.
	require.NoError(t, m.RecordNoThrottle(ConsumerByteRate, "alice", "app", -20e6, 0))
	d, err = m.Record(ConsumerByteRate, "alice", "app", 1, 0)
	require.NoError(t, err)
	require.Zero(t, d)
	require.Error(t, m.RecordNoThrottle(ConnectionCreationRate, "alice", "app", 1, 0))
	require.Error(t, m.RecordNoThrottle(ConsumerByteRate, "alice", "app", nan(), 0))
}

func TestMaxValueInQuotaWindow(t *testing.T) {
	m := newManager(t, Config{}, Entity{User: Named("alice")}, Op{Key: ConsumerByteRate, Value: 1e6})
	require.Equal(t, 10e6, m.MaxValueInQuotaWindow(ConsumerByteRate, "alice", "app"))
	require.True(t, math.IsInf(m.MaxValueInQuotaWindow(ConsumerByteRate, "bob", "app"), 1))
}
