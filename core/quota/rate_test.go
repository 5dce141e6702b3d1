package quota

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// TestRateFirstWindows checks Kafka's handling of the first windows: the
// measured window is never shorter than quota.window.num-1 windows.
func TestRateFirstWindows(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []struct {
			at    time.Duration
			value float64
		}
		at     time.Duration
		window time.Duration
		rate   float64
	}{
		{name: "empty", at: 5 * time.Second, window: 10 * time.Second, rate: 0},
		{name: "one burst at its instant", records: []struct {
			at    time.Duration
			value float64
		}{{0, 5e6}}, at: 0, window: 10 * time.Second, rate: 5e5},
		{name: "half a window in", records: []struct {
			at    time.Duration
			value float64
		}{{0, 1000}, {500 * ms, 1000}}, at: 500 * ms, window: 10500 * ms, rate: 2000 / 10.5},
		{name: "ten windows in, no padding", records: []struct {
			at    time.Duration
			value float64
		}{{0, 1000}, {10 * time.Second, 1000}}, at: 10 * time.Second, window: 10 * time.Second, rate: 200},
		{name: "epoch far in the past", records: []struct {
			at    time.Duration
			value float64
		}{{1000 * time.Hour, 3000}}, at: 1000*time.Hour + 2500*ms, window: 10500 * ms, rate: 3000 / 10.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRate(11, time.Second)
			for _, rec := range tc.records {
				r.Record(rec.value, rec.at)
			}
			require.Equal(t, tc.window, r.WindowSize(tc.at))
			require.InDelta(t, tc.rate, r.Measure(tc.at), 1e-9)
		})
	}
}

// TestRateSteadyState records 1100 every second: once eleven samples are
// kept the window is ten seconds and the rate 1210/s (eleven samples over
// ten seconds, as Kafka measures), and it stays so as the ring wraps.
func TestRateSteadyState(t *testing.T) {
	r := NewRate(11, time.Second)
	for i := 0; i <= 40; i++ {
		now := time.Duration(i) * time.Second
		r.Record(1100, now)
		if i >= 10 {
			require.Equal(t, 10*time.Second, r.WindowSize(now), "t=%ds", i)
			require.InDelta(t, 1210, r.Measure(now), 1e-9, "t=%ds", i)
		}
	}
	require.LessOrEqual(t, len(r.ring), 12, "the ring keeps window.num+1 samples")
}

// TestRateExpiry checks that a sample is dropped once its last event is
// window.num windows old, and kept while it is younger, even if it
// started earlier.
func TestRateExpiry(t *testing.T) {
	r := NewRate(11, time.Second)
	r.Record(1000, 0)
	r.Record(1000, 900*ms) // same sample, last event at 900 ms
	require.InDelta(t, 2000/10.9, r.Measure(900*ms), 1e-9)
	// 11.899 s: the sample's last event is 10.999 s old: kept, the
	// window runs from its start (0).
	require.InDelta(t, 2000/11.899, r.Measure(11899*ms), 1e-9)
	// 11.9 s: 11 s after its last event: expired.
	require.Equal(t, 0.0, r.Measure(11900*ms))
	require.Equal(t, 10*time.Second, r.WindowSize(11900*ms))
}

func TestRateTimeGoingBackDoesNotPanic(t *testing.T) {
	r := NewRate(11, time.Second)
	r.Record(100, 5*time.Second)
	r.Record(100, time.Second)
	require.GreaterOrEqual(t, r.WindowSize(0), ms)
	require.False(t, r.Measure(0) < 0)
}

func TestThrottleTime(t *testing.T) {
	for _, tc := range []struct {
		observed, quota float64
		window, want    time.Duration
	}{
		{2e6, 1e6, 10 * time.Second, 10 * time.Second},
		{5e5, 1e5, 10 * time.Second, 40 * time.Second},
		{1e6, 1e6, 10 * time.Second, 0},
		{9e5, 1e6, 10 * time.Second, 0},
		{1.00005e6, 1e6, 10 * time.Second, 1 * ms},  // 0.5 ms rounds up, as Math.round
		{1.000049e6, 1e6, 10 * time.Second, 0 * ms}, // 0.49 ms rounds down
		{1e300, 1, 10 * time.Second, MaxWireThrottle},
		{10, 0, time.Second, 0},
	} {
		require.Equal(t, tc.want, ThrottleTime(tc.observed, tc.quota, tc.window), "%+v", tc)
	}
	require.Equal(t, time.Second, BoundedThrottleTime(2e6, 1e6, 10*time.Second, time.Second))
	require.Equal(t, 400*ms, BoundedThrottleTime(52, 50, 10*time.Second, time.Second))
}

func TestTokenBucket(t *testing.T) {
	var b TokenBucket
	// A new bucket was last refilled at the epoch: at 100 s it is full
	// (burst 11 * 1 s * 10/s = 110).
	require.InDelta(t, 110, b.Tokens(10, 11, time.Second, 100*time.Second), 1e-9)
	b.Record(150, 10, 11, time.Second, 100*time.Second)
	require.InDelta(t, -40, b.Tokens(10, 11, time.Second, 100*time.Second), 1e-9)
	require.Equal(t, 4*time.Second, TokenThrottleTime(-40, 10))
	require.InDelta(t, -30, b.Tokens(10, 11, time.Second, 101*time.Second), 1e-9)
	require.Equal(t, time.Duration(0), TokenThrottleTime(0, 10))
	require.Equal(t, time.Duration(0), TokenThrottleTime(5, 10))

	var fresh TokenBucket
	require.Equal(t, 0.0, fresh.Tokens(10, 11, time.Second, 0), "a bucket at the epoch is empty")
}
