// Package kclient is a deterministic Kafka client for the simulator: a
// producer and a consumer that speak the Kafka protocol (kmsg frames
// through core/wire.Client) to Strata brokers over env.Net, as the
// franz-go and Java clients do, so that a simulated workload exercises
// the same broker code and the same wire as a real one.
//
// # What it owns
//
//   - Client: connections to brokers (dial with backoff, ApiVersions
//     negotiation, request timeouts), the metadata cache (bootstrap,
//     Metadata refresh on errors and every MetadataMaxAge, KIP-951 leader
//     hints from NOT_LEADER_OR_FOLLOWER answers) and routing to partition
//     leaders.
//   - Producer: acks=all, 1 or 0; idempotent (InitProducerId, per-partition
//     sequences, up to 5 batches in flight per partition, retries of the
//     same batch bytes with the same sequence, epoch bump on
//     OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID for the oldest
//     batch, a new producer id when fenced) or plain.
//   - Consumer: ListOffsets (earliest) to start, Fetch by offset with
//     long polling and optional fetch sessions (KIP-227), CRC and offset
//     validation of what it reads.
//   - SASL logins (Config.SASL, sasl.go): SaslHandshake v1 and
//     SaslAuthenticate after ApiVersions on every connection, PLAIN or
//     SCRAM with nonces from env.Rand, and KIP-368 re-authentication
//     before the session lifetime the broker gave ends.
//   - GroupMember: a consumer in a group of the classic protocol
//     (FindCoordinator, JoinGroup with KIP-394 member ids and KIP-345
//     static members, SyncGroup with a client-side range or
//     cooperative-sticky assignment, Heartbeat, OffsetCommit,
//     OffsetFetch, LeaveGroup), consuming its assignment with a Manual
//     Consumer and reporting every step (GroupEvent).
//
// Every outcome is reported through callbacks (ProduceEvent, FetchEvent)
// so that a checker observes each response the client receives, not a
// sample of them.
//
// # Outcomes
//
// A request ends in one of three ways: an answer; ErrNotSent (it never
// reached the transport, so it had no effect); or an unknown outcome,
// ErrTimeout or ErrConnLost (it was sent and may have taken effect). A
// timed-out request closes its connection, as the Java client does, which
// makes every other request pending on it unknown too.
//
// # Deviations from the Java and franz-go clients, on purpose
//
//   - A plain (non-idempotent) producer rebuilds a batch with new values
//     for every retry (ProducerConfig.Values sees the generation), so
//     that a duplicate it may legitimately write is told apart from a
//     broker writing one batch twice. An idempotent producer retries the
//     same bytes; only an epoch bump or a new producer id rebuilds.
//   - Suspicious fetched data (a batch whose CRC fails, or offsets that do
//     not continue the consumer's position) is fetched again before it is
//     believed: the simulated disk flips bits on read, and a batch's base
//     offset lies outside its CRC, so one bad read proves nothing. The
//     same bad bytes read twice are reported as they are, for the
//     checkers to judge.
//   - There is no delivery timeout: a batch is retried until it is
//     acknowledged or the producer is closed.
//
// # What it must never do
//
// It is deterministic code like the rest of sim/: time and timers only
// from env.Env, randomness only from env.Rand, no goroutines, channels or
// sync, and no map iteration reaching a decision (brokers, topics and
// partitions live in sorted slices). Every callback runs on the env's
// loop, never inline inside the call that caused it.
package kclient
