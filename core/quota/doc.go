// Package quota is Kafka's client quotas as deterministic state: the
// sampled rates and token buckets that measure clients, the throttle time
// a client over its quota is given, which configured entity's quota
// applies to a request, and the AlterClientQuotas / DescribeClientQuotas
// view of the configured entries.
//
// # What it follows
//
//   - Rate is org.apache.kafka.common.metrics.stats.Rate over a
//     SampledStat (WindowedSum): quota.window.num samples of
//     quota.window.size.seconds, samples expiring by their last event,
//     and the measured window never shorter than quota.window.num - 1
//     whole windows, so a client's first burst is spread over the full
//     window.
//   - ThrottleTime and BoundedThrottleTime are QuotaUtils.throttleTime
//     and boundedThrottleTime: (observed - quota) / quota * window.
//   - producer_byte_rate and consumer_byte_rate (KIP-13) follow
//     ClientQuotaManager: the value is recorded, then the rate checked,
//     so a throttled request still counts. request_percentage (KIP-124)
//     follows ClientRequestQuotaManager: thread time as a percentage of
//     one thread, the throttle bounded by one window.
//   - controller_mutation_rate (KIP-599) follows
//     ControllerMutationQuotaManager with TokenBucket: a burst of
//     controller.quota.window.num windows; permissive requests overdraw
//     and are throttled afterwards, strict ones are refused with
//     THROTTLING_QUOTA_EXCEEDED only once the bucket is already below
//     zero.
//   - connection_creation_rate per IP (KIP-612) follows
//     ConnectionQuotas.recordIpConnectionMaybeThrottle: a throttled
//     connection is taken back out of the rate; the throttle is bounded by
//     one window.
//   - Resolve is DefaultQuotaCallback: KIP-55's precedence of (user,
//     client-id), (user, default client-id), user, (default user,
//     client-id), (default user, default client-id), default user,
//     client-id, default client-id, and the sensor (metric tags) each
//     level charges.
//   - Alter validates as ClientQuotaControlManager, and Describe matches
//     as ClientQuotasImage.describe (KIP-546: exact, default, any;
//     strict).
//
// # What it must never do
//
// quota is part of the deterministic core: time is a time.Duration since
// an epoch the caller chooses, passed to every call (Kafka counts whole
// milliseconds, and so does this package); it reads no clock, starts no
// goroutines, and sorts before any map iteration reaches an answer. No
// request value can make it panic: malformed input is an error.
//
// # What is left to the caller
//
// The broker owns the Manager, applies ClientQuotaRecords from the
// metadata log through Alter, sets throttle_time_ms in responses and mutes
// the channel for the throttle (KIP-219: the response is sent at once, the
// channel muted after it), canonicalises IP addresses (core may not parse
// them: Kafka also accepts resolvable host names), picks strict or
// permissive mutation quotas by request version, calls Expire now and
// then, and takes the largest of the byte-rate and request throttles of
// one request, as KafkaApis does.
package quota
