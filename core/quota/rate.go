package quota

import (
	"math"
	"time"
)

// Rate is Kafka's org.apache.kafka.common.metrics.stats.Rate over a
// WindowedSum (a SampledStat): the sum of what was recorded in the last
// samples windows, divided by the time those windows cover, per second.
// Kafka counts in whole milliseconds, and so does Rate: instants are
// truncated to the millisecond before use.
//
// It keeps samples+1 samples in a ring, as SampledStat does: the extra one
// holds the sample that overlaps the start of the monitored window.
type Rate struct {
	numSamples int   // quota.window.num
	windowMs   int64 // quota.window.size.seconds, in ms
	ring       []sample
	current    int
}

// sample is SampledStat.Sample: the sum recorded since startMs, and the
// instant of its last event (a sample expires by its last event).
type sample struct {
	value       float64
	startMs     int64
	lastEventMs int64
}

func (s *sample) reset(nowMs int64) { *s = sample{startMs: nowMs, lastEventMs: nowMs} }

// NewRate returns an empty Rate of numSamples windows of window each.
// The arguments are validated by Config.Validate; out-of-range ones are
// raised to one sample of one millisecond so that Rate never divides by
// zero.
func NewRate(numSamples int, window time.Duration) *Rate {
	return &Rate{numSamples: max(numSamples, 1), windowMs: max(window.Milliseconds(), 1)}
}

// Record adds value at now (SampledStat.record): into the current sample,
// or into a fresh one when the current sample's window has passed.
func (r *Rate) Record(value float64, now time.Duration) {
	nowMs := now.Milliseconds()
	s := r.currentSample(nowMs)
	if nowMs-s.startMs >= r.windowMs {
		s = r.advance(nowMs)
	}
	s.value += value
	s.lastEventMs = nowMs
}

// Measure returns the rate per second at now (Rate.measure): obsolete
// samples are purged, the rest summed and divided by WindowSize.
func (r *Rate) Measure(now time.Duration) float64 {
	nowMs := now.Milliseconds()
	r.purge(nowMs)
	var sum float64
	for i := range r.ring {
		sum += r.ring[i].value
	}
	return sum / (float64(r.windowSizeMs(nowMs)) / 1000)
}

// WindowSize is the time the rate is measured over at now
// (Rate.windowSize): from the start of the oldest sample kept to now, but
// never less than numSamples-1 whole windows. That floor is Kafka's
// handling of the first windows: a client's first burst is spread over
// (quota.window.num - 1) windows rather than over the few milliseconds
// since its first byte, so a new client is not throttled for a burst the
// full window would allow. It is at least 1 ms.
func (r *Rate) WindowSize(now time.Duration) time.Duration {
	return time.Duration(r.windowSizeMs(now.Milliseconds())) * time.Millisecond
}

func (r *Rate) windowSizeMs(nowMs int64) int64 {
	r.purge(nowMs)
	elapsed := nowMs - r.oldest(nowMs).startMs
	fullWindows := elapsed / r.windowMs
	minFullWindows := int64(r.numSamples - 1)
	if fullWindows < minFullWindows {
		elapsed += (minFullWindows - fullWindows) * r.windowMs
	}
	return max(elapsed, 1)
}

func (r *Rate) currentSample(nowMs int64) *sample {
	if len(r.ring) == 0 {
		r.ring = append(r.ring, sample{startMs: nowMs, lastEventMs: nowMs})
	}
	return &r.ring[r.current]
}

// advance moves to the next slot of the ring (numSamples+1 slots), growing
// the ring until it is full and then reusing the oldest slot.
func (r *Rate) advance(nowMs int64) *sample {
	r.current = (r.current + 1) % (r.numSamples + 1)
	if r.current >= len(r.ring) {
		r.ring = append(r.ring, sample{startMs: nowMs, lastEventMs: nowMs})
	} else {
		r.ring[r.current].reset(nowMs)
	}
	return &r.ring[r.current]
}

func (r *Rate) oldest(nowMs int64) *sample {
	if len(r.ring) == 0 {
		r.ring = append(r.ring, sample{startMs: nowMs, lastEventMs: nowMs})
	}
	oldest := &r.ring[0]
	for i := 1; i < len(r.ring); i++ {
		if r.ring[i].startMs < oldest.startMs {
			oldest = &r.ring[i]
		}
	}
	return oldest
}

// purge resets the samples whose last event is numSamples windows old or
// older (SampledStat.purgeObsoleteSamples): a sample that started before
// the monitored window but had events inside it is kept.
func (r *Rate) purge(nowMs int64) {
	expireAge := int64(r.numSamples) * r.windowMs
	for i := range r.ring {
		if nowMs-r.ring[i].lastEventMs >= expireAge {
			r.ring[i].reset(nowMs)
		}
	}
}

// lastEventMs is the instant of the last event of any sample, for sensor
// expiry.
func (r *Rate) lastEventMs() int64 {
	last := int64(math.MinInt64)
	for i := range r.ring {
		last = max(last, r.ring[i].lastEventMs)
	}
	return last
}

// ThrottleTime is QuotaUtils.throttleTime: how long a client measured at
// observed against quota must wait so that its rate, over window, falls
// back to the quota: (observed - quota) / quota * window, rounded to the
// millisecond as Java's Math.round does (half up). It is zero when
// observed is within the quota, and it is not bounded: see
// BoundedThrottleTime.
func ThrottleTime(observed, quota float64, window time.Duration) time.Duration {
	if !(observed > quota) || !(quota > 0) {
		return 0
	}
	return msToDuration(roundHalfUp((observed - quota) / quota * float64(window.Milliseconds())))
}

// BoundedThrottleTime is QuotaUtils.boundedThrottleTime: ThrottleTime, but
// never more than maxThrottle.
func BoundedThrottleTime(observed, quota float64, window, maxThrottle time.Duration) time.Duration {
	return min(ThrottleTime(observed, quota, window), maxThrottle)
}

// roundHalfUp is Java's Math.round for a double: floor(x + 0.5).
func roundHalfUp(x float64) float64 { return math.Floor(x + 0.5) }

// msToDuration turns a count of milliseconds into a Duration, saturating
// at MaxWireThrottle (a throttle_time_ms is an INT32 on the wire) and at
// zero, so no float reaches an overflowing conversion.
func msToDuration(ms float64) time.Duration {
	switch {
	case !(ms > 0):
		return 0
	case ms >= float64(MaxWireThrottle/time.Millisecond):
		return MaxWireThrottle
	}
	return time.Duration(ms) * time.Millisecond
}

// MaxWireThrottle is the longest throttle a Kafka response can carry:
// throttle_time_ms is an INT32 count of milliseconds.
const MaxWireThrottle = math.MaxInt32 * time.Millisecond
