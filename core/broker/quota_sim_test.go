package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/sim/servertest"
)

// The simulated server's client: no authentication (user ANONYMOUS) and
// client id "servertest".
const (
	quotaUser     = "ANONYMOUS"
	quotaClientID = "servertest"
)

// quotaEntity is a client quota entity: pairs of type and name, a nil
// name for the type's default.
type quotaEntity []struct {
	typ  string
	name *string
}

func userEntity(name *string) quotaEntity { return quotaEntity{{"user", name}} }

func clientEntity(name *string) quotaEntity { return quotaEntity{{"client-id", name}} }

// setQuota sets (or, with remove, removes) key on entity through
// AlterClientQuotas and waits until the broker's image describes it.
func setQuota(h *simServer, e quotaEntity, key string, value float64, remove bool) {
	h.T.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	for _, c := range e {
		ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ec.Type, ec.Name = c.typ, c.name
		entry.Entity = append(entry.Entity, ec)
	}
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, value, remove
	entry.Ops = append(entry.Ops, op)
	req.Entries = append(req.Entries, entry)
	resp := h.Do(req).(*kmsg.AlterClientQuotasResponse)
	require.Zero(h.T, resp.Entries[0].ErrorCode, "alter quota: %v", kerr.ErrorForCode(resp.Entries[0].ErrorCode))
	h.RunUntil("the quota applied", func() bool {
		img := h.Server.Image()
		found := false
		for ent, values := range img.ClientQuotas() {
			if ent.String() != entityString(e) {
				continue
			}
			for _, v := range values {
				found = found || string(v.Key) == key && v.Value == value
			}
		}
		return found != remove
	})
}

// entityString is quota.Entity's String of e.
func entityString(e quotaEntity) string {
	s := ""
	for i, c := range e {
		if i > 0 {
			s += ","
		}
		name := "<default>"
		if c.name != nil {
			name = *c.name
		}
		s += c.typ + "=" + name
	}
	return s
}

// produceBytes produces one batch of about size bytes to t-0 and returns
// the response.
func produceBytes(h *simServer, version int16, size int) *kmsg.ProduceResponse {
	h.T.Helper()
	b := record.NewBuilder()
	b.Append(h.ClientEnv().Now().UnixMilli(), nil, make([]byte, size))
	batch, err := b.AppendTo(nil)
	require.NoError(h.T, err)
	req := servertest.ProduceRequest("t", 0, batch)
	req.Version = version
	resp := h.Do(req).(*kmsg.ProduceResponse)
	require.Zero(h.T, resp.Topics[0].Partitions[0].ErrorCode)
	return resp
}

// timed runs do and returns how long it took in the client's time.
func timed(h *simServer, do func()) time.Duration {
	start := h.ClientEnv().Monotonic()
	do()
	return h.ClientEnv().Monotonic() - start
}

// requireMuted checks that the connection is not read for about throttle
// after a throttled answer: a Metadata sent at once is answered no sooner.
func requireMuted(t *testing.T, h *simServer, throttle time.Duration) {
	t.Helper()
	took := timed(h, func() { h.Do(kmsg.NewPtrMetadataRequest()) })
	require.GreaterOrEqual(t, took, throttle*9/10, "a request after a %v throttle answered after %v", throttle, took)
	require.Less(t, took, throttle+time.Second)
}

func throttleOf(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// TestQuotaProducerByteRate: a producer over its producer_byte_rate gets
// throttle_time_ms (Kafka's (observed - quota) / quota * window, the rate
// measured over at least quota.window.num - 1 samples) and its connection
// is muted that long after the answer (KIP-219); without a quota, and once
// the quota is removed, nothing is throttled.
func TestQuotaProducerByteRate(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 1, nil)
	resp := produceBytes(h, 9, 20_000)
	require.Zero(t, resp.ThrottleMillis, "no quota: no throttle")
	require.Less(t, timed(h, func() { h.Do(kmsg.NewPtrMetadataRequest()) }), 100*time.Millisecond)

	setQuota(h, clientEntity(nil), "producer_byte_rate", 1024, false)
	resp = produceBytes(h, 9, 20_000)
	// 20 kB over 10 s is about 2 kB/s: twice the quota, so about one
	// measured window (10 s) of throttle.
	throttle := throttleOf(resp.ThrottleMillis)
	require.Greater(t, throttle, 8*time.Second)
	require.Less(t, throttle, 12*time.Second)
	requireMuted(t, h, throttle)
	require.Equal(t, uint64(1), throttleCount(h, "Produce"), "the throttle is in kafka_server_quota_throttle_time_ms")

	setQuota(h, clientEntity(nil), "producer_byte_rate", 0, true)
	resp = produceBytes(h, 9, 20_000)
	require.Zero(t, resp.ThrottleMillis, "quota removed: no throttle")
	require.Less(t, timed(h, func() { h.Do(kmsg.NewPtrMetadataRequest()) }), 100*time.Millisecond)
}

// TestQuotaResolvedAsKIP55: the most specific configured entity supplies
// the quota: a user's over a client id's, a user and client id's over the
// user's (each level with a sensor of its own).
func TestQuotaResolvedAsKIP55(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 1, nil)
	user, client := quotaUser, quotaClientID
	setQuota(h, clientEntity(&client), "producer_byte_rate", 1e9, false)
	require.Zero(t, produceBytes(h, 9, 20_000).ThrottleMillis, "the client id's quota is high")

	setQuota(h, userEntity(nil), "producer_byte_rate", 1024, false)
	resp := produceBytes(h, 9, 20_000)
	require.Positive(t, resp.ThrottleMillis, "the default user's quota is above the client id's in KIP-55's order")
	requireMuted(t, h, throttleOf(resp.ThrottleMillis))

	setQuota(h, quotaEntity{{"user", &user}, {"client-id", &client}}, "producer_byte_rate", 1e9, false)
	require.Zero(t, produceBytes(h, 9, 20_000).ThrottleMillis, "the user and client id's quota is the most specific")
}

// fetchFrom is a consumer Fetch v11 of t-0 from offset, answered at once.
func fetchFrom(h *simServer, offset int64) *kmsg.FetchResponse {
	h.T.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 11, 0, 1, 1<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return h.Do(req).(*kmsg.FetchResponse)
}

// fetchedRecords is the records of a fetch's only partition and the
// offset after them.
func fetchedRecords(t *testing.T, resp *kmsg.FetchResponse) (n int, next int64) {
	t.Helper()
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return 0, -1
	}
	p := resp.Topics[0].Partitions[0]
	require.Zero(t, p.ErrorCode)
	sp := record.NewSplitter(p.RecordBatches, len(p.RecordBatches)+1, record.CheckStored)
	next = -1
	for sp.Next() {
		bt := sp.Batch()
		n += int(bt.LastOffsetDelta()) + 1
		next = bt.BaseOffset() + int64(bt.LastOffsetDelta()) + 1
	}
	require.NoError(t, sp.Err())
	return n, next
}

// TestQuotaConsumerByteRate: a consumer fetch never reads more than its
// consumer_byte_rate allows in the measured window; once over the rate a
// fetch is answered empty with throttle_time_ms and the connection is
// muted (Kafka's throttled fetch response); the bytes of an empty answer
// are not counted.
func TestQuotaConsumerByteRate(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 1, nil)
	for range 20 {
		produceBytes(h, 9, 2000)
	}
	setQuota(h, userEntity(nil), "consumer_byte_rate", 1024, false)
	n, next := fetchedRecords(t, fetchFrom(h, 0))
	require.Positive(t, n)
	require.Less(t, n, 20, "a fetch reads at most the quota's window (about 10 kB), not the 40 kB there")
	var resp *kmsg.FetchResponse
	for range 5 {
		resp = fetchFrom(h, next)
		if resp.ThrottleMillis > 0 {
			break
		}
		var got int
		got, next = fetchedRecords(t, resp)
		require.Positive(t, got)
	}
	require.Positive(t, resp.ThrottleMillis, "the consumer is over its quota")
	got, _ := fetchedRecords(t, resp)
	require.Zero(t, got, "a throttled fetch is answered empty")
	requireMuted(t, h, throttleOf(resp.ThrottleMillis))
}

// TestQuotaRequestPercentage: a client whose requests take more of the
// broker's time than its request_percentage is throttled by at most one
// window (quota.window.size.seconds), and muted; every request counts,
// even throttled ones.
func TestQuotaRequestPercentage(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 1, nil)
	setQuota(h, clientEntity(nil), "request_percentage", 0.01, false)
	var throttle time.Duration
	for i := 0; i < 200 && throttle == 0; i++ {
		throttle = throttleOf(produceBytes(h, 9, 200_000).ThrottleMillis)
	}
	require.Positive(t, throttle, "the producer's validation work exceeds 0.01% of a thread")
	require.LessOrEqual(t, throttle, time.Second, "a request throttle is at most one window")
	requireMuted(t, h, throttle)
}

// createTopics creates topics of partitions each at version.
func createTopics(h *simServer, version int16, partitions int32, names ...string) *kmsg.CreateTopicsResponse {
	h.T.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = version, 30_000
	for _, name := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, 1
		req.Topics = append(req.Topics, t)
	}
	return h.Do(req).(*kmsg.CreateTopicsResponse)
}

// TestQuotaControllerMutationRate: controller_mutation_rate is a token
// bucket of quota.window.num windows (KIP-599). Strict versions
// (CreateTopics v6+, DeleteTopics v5+) pass while the bucket is not below
// zero, even if they overdraw it, and are then refused with
// THROTTLING_QUOTA_EXCEEDED and the time to refill; permissive versions
// always pass and are throttled.
func TestQuotaControllerMutationRate(t *testing.T) {
	h := newSimServer(t, nil)
	setQuota(h, userEntity(nil), "controller_mutation_rate", 1, false)

	// The bucket holds 11 (11 windows of 1 s at 1/s): 14 overdraw it by 3.
	resp := createTopics(h, 7, 14, "a")
	require.Zero(t, resp.Topics[0].ErrorCode, "a strict request passes while the bucket is not below zero")
	require.Zero(t, resp.ThrottleMillis)

	resp = createTopics(h, 7, 1, "b")
	require.Equal(t, kerr.ThrottlingQuotaExceeded.Code, resp.Topics[0].ErrorCode)
	throttle := throttleOf(resp.ThrottleMillis)
	require.Greater(t, throttle, 2*time.Second)
	require.LessOrEqual(t, throttle, 3*time.Second)
	requireMuted(t, h, throttle)

	// Refilled to zero: a permissive request passes and overdraws again.
	resp = createTopics(h, 5, 5, "c")
	require.Zero(t, resp.Topics[0].ErrorCode, "a permissive request always passes")
	throttle = throttleOf(resp.ThrottleMillis)
	require.Greater(t, throttle, 3*time.Second, "and is throttled for its overdraft")
	requireMuted(t, h, throttle)

	// DeleteTopics v6 is strict: the 14 partitions of "a" pass (the
	// bucket is at zero again), then the next is refused.
	del := func(name string) *kmsg.DeleteTopicsResponse {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version, req.TimeoutMillis = 6, 30_000
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, dt)
		return h.Do(req).(*kmsg.DeleteTopicsResponse)
	}
	dr := del("a")
	require.Zero(t, dr.Topics[0].ErrorCode)
	dr = del("c")
	require.Equal(t, kerr.ThrottlingQuotaExceeded.Code, dr.Topics[0].ErrorCode)
	require.Positive(t, dr.ThrottleMillis)
}

// TestQuotaConnectionCreationRate: connections from an IP past its
// connection_creation_rate (KIP-612) are not served and are closed after
// their throttle; below it they are served.
func TestQuotaConnectionCreationRate(t *testing.T) {
	h := newSimServer(t, nil)
	setQuota(h, quotaEntity{{"ip", nil}}, "connection_creation_rate", 1, false)
	// The rate is measured over at least 10 windows of 1 s: about 10
	// connections pass at once, then the rest are throttled.
	served, refused := 0, 0
	for i := range 20 {
		var c *wire.Client
		closed, answered := false, false
		h.ClientEnv().Net().Dial("n1:9092", func(conn env.Conn, err error) {
			require.NoError(t, err)
			c = wire.NewClient(conn, wire.ClientConfig{ClientID: fmt.Sprintf("c%d", i)})
		})
		h.RunUntil("a connection", func() bool { return c != nil })
		require.NoError(t, c.Do(kmsg.NewPtrApiVersionsRequest(), func(_ kmsg.Response, err error) {
			answered, closed = err == nil, err != nil
		}))
		h.RunUntil("an answer or a close", func() bool { return answered || closed })
		if answered {
			require.Zero(t, refused, "connection %d served after one was refused, within the window", i)
			served++
		} else {
			refused++
		}
	}
	require.GreaterOrEqual(t, served, 9)
	require.LessOrEqual(t, served, 11)
	require.Equal(t, 20-served, refused)
}

// TestQuotaCountsUnauthorizedRequests: a request refused by the
// authorizer is still charged to its client's quotas and throttled
// (Kafka's RequestQuotaTest): an unauthorized producer over its
// producer_byte_rate gets TOPIC_AUTHORIZATION_FAILED with
// throttle_time_ms, and is muted.
func TestQuotaCountsUnauthorizedRequests(t *testing.T) {
	a := newAuthServer(t)
	h := &simServer{a.Single}
	user := "client"
	a.asAdmin(func() {
		h.CreateTopic("t", 1, nil)
		setQuota(h, userEntity(&user), "producer_byte_rate", 1024, false)
	})
	b := record.NewBuilder()
	b.Append(h.ClientEnv().Now().UnixMilli(), nil, make([]byte, 20_000))
	batch, err := b.AppendTo(nil)
	require.NoError(t, err)
	resp := h.Do(servertest.ProduceRequest("t", 0, batch)).(*kmsg.ProduceResponse)
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.Topics[0].Partitions[0].ErrorCode)
	require.Positive(t, resp.ThrottleMillis, "the refused request counts")
	requireMuted(t, h, throttleOf(resp.ThrottleMillis))
}

// TestQuotaControllerMutationsOfAuthorizedTopicsOnly: only the topics a
// client may change are charged to its controller_mutation_rate, and a
// strict refusal answers the others with their own error
// (TOPIC_AUTHORIZATION_FAILED), as Kafka's controller does.
func TestQuotaControllerMutationsOfAuthorizedTopicsOnly(t *testing.T) {
	a := newAuthServer(t)
	h := &simServer{a.Single}
	user := "client"
	a.asAdmin(func() { setQuota(h, userEntity(&user), "controller_mutation_rate", 1, false) })
	a.set(allow(topicRes, "a", kmsg.ACLOperationCreate), allow(topicRes, "b", kmsg.ACLOperationCreate))

	// 14 partitions of "a" overdraw the bucket of 11 by 3; the 100 of
	// "x", refused, are not charged.
	resp := createTopics(h, 7, 14, "a")
	require.Zero(t, resp.Topics[0].ErrorCode)
	resp = createTopics(h, 7, 100, "x")
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.Topics[0].ErrorCode)

	resp = createTopics(h, 7, 1, "b", "y")
	require.Equal(t, kerr.ThrottlingQuotaExceeded.Code, resp.Topics[0].ErrorCode)
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.Topics[1].ErrorCode)
	throttle := throttleOf(resp.ThrottleMillis)
	require.Positive(t, throttle)
	require.LessOrEqual(t, throttle, 3*time.Second, "only the 14 authorized partitions were charged")
}

// throttleCount is how many throttles of quotaType the metrics counted.
func throttleCount(h *simServer, quotaType string) uint64 {
	for _, snap := range h.Metrics.Snapshot() {
		if snap.Def != metrics.QuotaThrottleTime {
			continue
		}
		for _, series := range snap.Series {
			if len(series.Labels) == 1 && series.Labels[0] == quotaType {
				return series.Count
			}
		}
	}
	return 0
}
