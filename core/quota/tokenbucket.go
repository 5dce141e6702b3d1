package quota

import "time"

// TokenBucket is Kafka's org.apache.kafka.common.metrics.stats.TokenBucket,
// which KIP-599 uses for controller_mutation_rate: tokens refill at quota
// per second up to a burst of numSamples * window * quota, and a record
// takes tokens away, possibly below zero. A bucket below zero is over its
// quota; the time to climb back to zero is the throttle.
//
// As in Kafka, a new bucket is empty and was last refilled at the epoch
// (instant zero), so its first measurement refills it for all the time
// since the epoch (a full bucket for any caller whose epoch is well in the
// past).
type TokenBucket struct {
	tokens       float64
	lastUpdateMs int64
}

// burst is TokenBucket.burst: numSamples windows of quota.
func burst(numSamples int, window time.Duration, quota float64) float64 {
	return float64(numSamples) * window.Seconds() * quota
}

func (b *TokenBucket) refill(quota, burst float64, nowMs int64) {
	b.tokens = min(burst, b.tokens+quota*float64(nowMs-b.lastUpdateMs)/1000)
	b.lastUpdateMs = nowMs
}

// Tokens refills the bucket to now and returns its tokens
// (TokenBucket.measure).
func (b *TokenBucket) Tokens(quota float64, numSamples int, window time.Duration, now time.Duration) float64 {
	b.refill(quota, burst(numSamples, window, quota), now.Milliseconds())
	return b.tokens
}

// Record refills the bucket to now and takes value tokens
// (TokenBucket.record).
func (b *TokenBucket) Record(value, quota float64, numSamples int, window time.Duration, now time.Duration) {
	bu := burst(numSamples, window, quota)
	b.refill(quota, bu, now.Milliseconds())
	b.tokens = min(bu, b.tokens-value)
}

// TokenThrottleTime is ControllerMutationQuotaManager.throttleTimeMs: the
// time a bucket holding tokens (below zero) takes to refill to zero at
// quota per second, rounded to the millisecond. It is zero when tokens is
// not negative.
func TokenThrottleTime(tokens, quota float64) time.Duration {
	if !(tokens < 0) || !(quota > 0) {
		return 0
	}
	return msToDuration(roundHalfUp(-tokens / quota * 1000))
}
