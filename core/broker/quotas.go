package broker

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/quota"
)

// Client quotas (KIP-13, KIP-55, KIP-124, KIP-599, KIP-612), measured and
// enforced as Kafka's quota managers do, with core/quota's state:
//
//   - producer_byte_rate: a Produce's request size, charged when it is
//     answered (ClientQuotaManager, produce).
//   - consumer_byte_rate: a consumer Fetch's record bytes, charged before
//     its response is built; a throttled fetch is answered empty and its
//     bytes taken back, and a fetch never reads more than the quota
//     allows in a window (KafkaApis.handleFetchRequest).
//   - request_percentage: the loop time spent handling a request and
//     the estimated CPU time of its offloaded jobs
//     (ClientRequestQuotaManager).
//   - controller_mutation_rate: the partitions a CreateTopics,
//     CreatePartitions or DeleteTopics creates or deletes, charged before
//     it is passed to the controller; strict (THROTTLING_QUOTA_EXCEEDED)
//     from CreateTopics v6, CreatePartitions v3 and DeleteTopics v5,
//     permissive before (ControllerMutationQuotaManager).
//   - connection_creation_rate per IP: at accept; a connection over it is
//     not served and closed after its throttle (ConnectionQuotas).
//
// Every answered request over a quota carries throttle_time_ms (the
// largest of its throttles) where its response has the field, and its
// connection is muted (not read) for that long once the response is sent
// (KIP-219). A request is charged whether it is throttled or refused
// (Kafka's RequestQuotaTest). Requests between nodes (replica fetches,
// transaction markers, registrations) and the authentication exchange are
// exempt, as in Kafka.
//
// Nothing is measured until the image first holds a ClientQuotaRecord:
// without quotas the request path takes no timestamps and arms no timers.

// quotaClockOffset is added to the loop's monotonic clock for the quota
// state, so that a token bucket is full at a broker's start as it is in
// Kafka, whose clock is the wall clock (a bucket refills from instant zero).
const quotaClockOffset = 24 * time.Hour

// quotaExpireInterval is how often idle sensors are dropped (Kafka's
// sensor expiry runs on a schedule; here it runs with a request).
const quotaExpireInterval = time.Minute

// brokerQuotas is the broker's quota state.
type brokerQuotas struct {
	// m is nil until the image first holds a client quota.
	m *quota.Manager
	// img is the image m was last brought up to.
	img        *meta.Image
	lastExpire time.Duration
	// throttleTime are the throttle time histograms by quota type, nil
	// with metrics off.
	throttleTime map[string]*metrics.Histogram
}

// Quota types of the throttle time metric, as Kafka's QuotaType names.
const (
	quotaTypeProduce            = "Produce"
	quotaTypeFetch              = "Fetch"
	quotaTypeRequest            = "Request"
	quotaTypeControllerMutation = "ControllerMutation"
	quotaTypeConnection         = "ConnectionCreation"
)

// requestQuota is what one request is charged with, under quotas.
type requestQuota struct {
	user, clientID string
	// loop is the loop time spent handling the request so far; while
	// handling is set, since handleStart too.
	loop        time.Duration
	handleStart time.Duration
	handling    bool
	// work is the estimated CPU time of its offloaded jobs.
	work time.Duration
	// recorded is set once its time (and a Produce's bytes) are charged.
	recorded bool
	// throttle is the largest throttle it was given.
	throttle time.Duration
}

func (b *Broker) quotaNow() time.Duration { return b.e.Monotonic() + quotaClockOffset }

// quotaManager brings the quota state up to the applied image and returns
// it, or nil while no client quota was ever configured. A change of quotas
// updates the configured entries in place, so the rates already measured
// are kept.
func (b *Broker) quotaManager() *quota.Manager {
	q := &b.quotas
	img := b.image()
	if img == nil || img == q.img || img.SameClientQuotas(q.img) {
		return q.m
	}
	prev := q.img
	q.img = img
	if q.m == nil {
		empty := true
		for range img.ClientQuotas() {
			empty = false
			break
		}
		if empty {
			return nil
		}
		m, err := img.QuotaManager(b.cfg.Quotas) // validated with the config
		assert.That(err == nil, "broker: quota config refused after validation: %v", err)
		q.m, q.lastExpire = m, b.quotaNow()
		b.log.Info("client quotas configured: measuring clients")
		return m
	}
	// Remove what the previous image had and this one lacks, then set
	// this one's values (every value passed validation at replay).
	for e, old := range prev.ClientQuotas() {
		cur := img.ClientQuota(e)
		var ops []quota.Op
		for _, v := range old {
			if !slices.ContainsFunc(cur, func(c quota.Value) bool { return c.Key == v.Key }) {
				ops = append(ops, quota.Op{Key: v.Key, Remove: true})
			}
		}
		if len(ops) > 0 {
			_ = q.m.Alter(e, ops, false) // removals are never refused
		}
	}
	for e, values := range img.ClientQuotas() {
		ops := make([]quota.Op, len(values))
		for i, v := range values {
			ops[i] = quota.Op{Key: v.Key, Value: v.Value}
		}
		if err := q.m.Alter(e, ops, false); err != nil {
			assert.Never("broker: image quota %v refused: %v", e, err)
		}
	}
	return q.m
}

// quotaExempt are the APIs no client quota applies to: between nodes
// (Kafka's cluster actions) and authentication.
var quotaExempt = map[int16]bool{
	int16(kmsg.ApiVersions):          true,
	int16(kmsg.SASLHandshake):        true,
	int16(kmsg.SASLAuthenticate):     true,
	int16(kmsg.WriteTxnMarkers):      true,
	int16(kmsg.BrokerRegistration):   true,
	int16(kmsg.BrokerHeartbeat):      true,
	int16(kmsg.ControlledShutdown):   true,
	int16(kmsg.AlterPartition):       true,
	int16(kmsg.AllocateProducerIDs):  true,
	int16(kmsg.Vote):                 true,
	int16(kmsg.BeginQuorumEpoch):     true,
	int16(kmsg.EndQuorumEpoch):       true,
	int16(kmsg.FetchSnapshot):        true,
	int16(kmsg.UnregisterBroker):     true,
	int16(kmsg.AssignReplicasToDirs): true,
	int16(kmsg.AddRaftVoter):         true,
	int16(kmsg.RemoveRaftVoter):      true,
	int16(kmsg.UpdateRaftVoter):      true,
	int16(kmsg.Envelope):             true,
}

// handleWithQuotas handles r, charging it to its client's quotas when
// any are configured.
func (b *Broker) handleWithQuotas(r *request) {
	m := b.quotaManager()
	if m == nil || r.raw != nil || quotaExempt[r.hdr.Key] {
		b.handle(r)
		return
	}
	if f, ok := r.body.(*kmsg.FetchRequest); ok && fetchReplica(f) >= 0 {
		b.handle(r) // replication has its own quotas
		return
	}
	now := b.quotaNow()
	if now-b.quotas.lastExpire >= quotaExpireInterval {
		b.quotas.lastExpire = now
		m.Expire(now)
	}
	clientID := ""
	if r.hdr.ClientID != nil {
		clientID = *r.hdr.ClientID
	}
	r.q = &requestQuota{user: r.cn.principal.Name, clientID: clientID, handleStart: b.e.Monotonic(), handling: true}
	if !b.mutationQuota(r, m) {
		b.handle(r)
	}
	if r.q.handling {
		r.q.handling = false
		r.q.loop += b.e.Monotonic() - r.q.handleStart
	}
}

// requestThrottle charges r's time (and a Produce's bytes) once, when it
// is answered, and returns its throttle: the largest of the request-time,
// byte-rate and mutation throttles. Zero without quotas.
func (b *Broker) requestThrottle(r *request) time.Duration {
	q := r.q
	if q == nil {
		return 0
	}
	if q.recorded {
		return q.throttle
	}
	q.recorded = true
	m, now := b.quotas.m, b.quotaNow()
	if r.hdr.Key == int16(kmsg.Produce) {
		d, _ := m.Record(quota.ProducerByteRate, q.user, q.clientID, float64(r.bytes), now) // a valid key and size
		b.observeThrottle(quotaTypeProduce, d)
		q.throttle = max(q.throttle, d)
	}
	thread := q.loop + q.work
	if q.handling {
		thread += b.e.Monotonic() - q.handleStart
	}
	d := m.RecordRequestTime(q.user, q.clientID, thread, now)
	b.observeThrottle(quotaTypeRequest, d)
	q.throttle = max(q.throttle, d)
	return q.throttle
}

// setThrottle charges r and writes its throttle into resp, when resp has
// the field (the larger of it and what resp already carries, such as a
// controller's answer's).
func (b *Broker) setThrottle(r *request, resp kmsg.Response) bool {
	d := b.requestThrottle(r)
	if d <= 0 {
		return false
	}
	tr, ok := resp.(kmsg.ThrottleResponse)
	if !ok {
		return false
	}
	ms := int32(min(d, quota.MaxWireThrottle).Milliseconds())
	if cur, _ := tr.Throttle(); cur >= ms {
		return false
	}
	resp.(kmsg.SetThrottleResponse).SetThrottle(ms)
	return true
}

// fetchQuota charges a consumer fetch's bytes and its time and returns
// its throttle; a throttled fetch is answered empty (Kafka's
// getThrottledResponse), so its bytes are taken back.
func (b *Broker) fetchQuota(r *request, bytes int64) time.Duration {
	q := r.q
	if q == nil {
		return 0
	}
	m, now := b.quotas.m, b.quotaNow()
	fetchThrottle, _ := m.Record(quota.ConsumerByteRate, q.user, q.clientID, float64(bytes), now) // a valid key and size
	d := max(fetchThrottle, b.requestThrottle(r))
	if d > 0 {
		_ = m.RecordNoThrottle(quota.ConsumerByteRate, q.user, q.clientID, -float64(bytes), now)
	}
	b.observeThrottle(quotaTypeFetch, fetchThrottle)
	q.throttle = max(q.throttle, d)
	return q.throttle
}

// fetchQuotaBytes is the most a consumer fetch may read under its
// consumer_byte_rate (ClientQuotaManager.getMaxValueInQuotaWindow), or
// budget when no quota applies.
func (b *Broker) fetchQuotaBytes(r *request, budget int64) int64 {
	if r.q == nil {
		return budget
	}
	limit := b.quotas.m.MaxValueInQuotaWindow(quota.ConsumerByteRate, r.q.user, r.q.clientID)
	if limit < float64(budget) {
		return max(int64(limit), 1)
	}
	return budget
}

// mutationQuota charges a CreateTopics, CreatePartitions or DeleteTopics
// with the partitions it creates or deletes on topics it may change
// (KIP-599) and answers it when its strict quota is already exhausted:
// THROTTLING_QUOTA_EXCEEDED for those topics, the refusal each other
// topic would get anyway. It reports whether it answered.
func (b *Broker) mutationQuota(r *request, m *quota.Manager) bool {
	n, strict, refusals := b.mutations(r)
	if n <= 0 {
		return false
	}
	d, err := m.RecordMutations(r.q.user, r.q.clientID, float64(n), b.quotaNow(), strict)
	b.observeThrottle(quotaTypeControllerMutation, d)
	r.q.throttle = max(r.q.throttle, d)
	if err == nil {
		return false
	}
	b.log.Debug("request refused: controller mutation quota exceeded", "api_name", r.hdr.APIName(),
		"principal", r.cn.principal.String(), "client_id", r.q.clientID, "throttle", d)
	resp := protocol.ErrorResponse(r.body, kerr.ThrottlingQuotaExceeded, "The throttling quota has been exceeded.")
	setRefusals(resp, refusals)
	r.respond(resp)
	return true
}

// mutationRefusal is the answer a topic of a controller request gets
// whatever its quota (nil: none).
type mutationRefusal struct {
	err *kerr.Error
	msg string
}

// mutations is the partition count a controller request creates or
// deletes on the topics the client may change, whether its version takes
// a strict quota (Kafka's ControllerMutationQuotaManager.newQuotaFor), and
// each topic's refusal in the answer's order. Validate-only requests
// mutate nothing.
func (b *Broker) mutations(r *request) (int, bool, []*mutationRefusal) {
	img := b.image()
	n := 0
	unauthorized := &mutationRefusal{err: kerr.TopicAuthorizationFailed, msg: "Authorization failed."}
	var refusals []*mutationRefusal
	switch req := r.body.(type) {
	case *kmsg.CreateTopicsRequest:
		if req.ValidateOnly {
			return 0, false, nil
		}
		canCreate := b.createTopicAuth(r)
		for _, t := range req.Topics {
			switch {
			case isCoordinatorTopic(t.Topic):
				refusals = append(refusals, &mutationRefusal{err: kerr.InvalidRequest,
					msg: "Creation of internal topic " + t.Topic + " is prohibited."})
				continue
			case canCreate(t.Topic) != nil:
				refusals = append(refusals, unauthorized)
				continue
			}
			refusals = append(refusals, nil)
			switch {
			case len(t.ReplicaAssignment) > 0:
				n += len(t.ReplicaAssignment)
			case t.NumPartitions > 0:
				n += int(t.NumPartitions)
			case b.cfg.DefaultNumPartitions > 0:
				n += int(b.cfg.DefaultNumPartitions)
			default:
				n++ // the controller's default, num.partitions=1
			}
		}
		return n, req.Version >= 6, refusals
	case *kmsg.CreatePartitionsRequest:
		if req.ValidateOnly {
			return 0, false, nil
		}
		canAlter := b.topicAuth(r, kmsg.ACLOperationAlter)
		for _, t := range req.Topics {
			if canAlter(t.Topic) != nil {
				refusals = append(refusals, unauthorized)
				continue
			}
			refusals = append(refusals, nil)
			if cur := topicPartitions(img, t.Topic); t.Count > cur {
				n += int(t.Count - cur)
			}
		}
		return n, req.Version >= 3, refusals
	case *kmsg.DeleteTopicsRequest:
		canDelete := b.topicAuth(r, kmsg.ACLOperationDelete)
		if b.authorized(r, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeCluster, clusterName) {
			canDelete = func(string) error { return nil }
		}
		for _, t := range protocol.DeleteTopicsEntries(req) {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			} else if img != nil {
				if ti, ok := img.TopicByID(meta.UUID(t.TopicID)); ok {
					name = ti.Name()
				}
			}
			if name != "" && canDelete(name) != nil {
				refusals = append(refusals, unauthorized)
				continue
			}
			refusals = append(refusals, nil)
			n += int(topicPartitions(img, name))
		}
		return n, req.Version >= 5, refusals
	}
	return 0, false, nil
}

// setRefusals puts each refused topic's own error in a
// THROTTLING_QUOTA_EXCEEDED answer (its topics in request order).
func setRefusals(resp kmsg.Response, refusals []*mutationRefusal) {
	set := func(i int, code *int16, msg **string) {
		if i < len(refusals) && refusals[i] != nil {
			*code, *msg = refusals[i].err.Code, kmsg.StringPtr(refusals[i].msg)
		}
	}
	switch resp := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for i := range resp.Topics {
			set(i, &resp.Topics[i].ErrorCode, &resp.Topics[i].ErrorMessage)
		}
	case *kmsg.CreatePartitionsResponse:
		for i := range resp.Topics {
			set(i, &resp.Topics[i].ErrorCode, &resp.Topics[i].ErrorMessage)
		}
	case *kmsg.DeleteTopicsResponse:
		for i := range resp.Topics {
			set(i, &resp.Topics[i].ErrorCode, &resp.Topics[i].ErrorMessage)
		}
	}
}

// topicPartitions is a topic's partition count in img, 0 if unknown.
func topicPartitions(img *meta.Image, name string) int32 {
	if img == nil {
		return 0
	}
	ti, ok := img.TopicByName(name)
	if !ok {
		return 0
	}
	return int32(ti.NumPartitions())
}

// onLoop wraps f, a part of r's handling that runs later on the loop (an
// offloaded job's completion), so that its loop time is charged to r's
// request time as the handler's is.
func (r *request) onLoop(f func()) func() {
	q := r.q
	if q == nil {
		return f
	}
	e := r.cn.b.e
	return func() {
		if q.handling {
			f() // inline, within the handler: already timed
			return
		}
		q.handleStart, q.handling = e.Monotonic(), true
		f()
		if q.handling {
			q.handling = false
			q.loop += e.Monotonic() - q.handleStart
		}
	}
}

// chargeWork adds an offloaded job's estimated CPU time to r's request
// time.
func (r *request) chargeWork(d time.Duration) {
	if r.q != nil {
		r.q.work += d
	}
}

// muteFor stops reading cn for d after a throttled response (KIP-219);
// a later throttle that ends later extends the mute.
func (b *Broker) muteFor(cn *conn, d time.Duration) {
	if d <= 0 || cn.closing {
		return
	}
	end := b.e.Monotonic() + d
	if cn.muted && end <= cn.muteEnd {
		return
	}
	if cn.muteTimer != nil {
		cn.muteTimer.Stop()
	}
	cn.muted, cn.muteEnd = true, end
	cn.c.Pause()
	cn.muteTimer = b.e.AfterFunc(d, func() {
		cn.muted, cn.muteTimer = false, nil
		if !cn.paused && !cn.closing && !cn.draining {
			cn.c.Resume()
		}
	})
}

// admitConnectionRate charges a new connection from host to its
// connection_creation_rate (KIP-612) and reports whether it may be
// served. A throttled connection is not read, and closed after its
// throttle (Kafka's acceptor holds it that long before closing it).
func (b *Broker) admitConnectionRate(c env.Conn, host string, release func()) bool {
	m := b.quotaManager()
	if m == nil {
		return true
	}
	d := m.RecordConnection(host, b.quotaNow())
	if d <= 0 {
		return true
	}
	b.observeThrottle(quotaTypeConnection, d)
	b.log.Info("closing connection: connection creation rate exceeded", "remote", c.RemoteAddr(), "throttle", d)
	c.OnFrame(func([]byte) {})
	c.OnClose(func(error) { release() })
	c.Pause()
	b.e.AfterFunc(d, c.Close)
	return false
}

// observeThrottle counts a throttle in the metrics.
func (b *Broker) observeThrottle(quotaType string, d time.Duration) {
	if b.metrics == nil || d <= 0 {
		return
	}
	h := b.quotas.throttleTime[quotaType]
	if h == nil {
		if b.quotas.throttleTime == nil {
			b.quotas.throttleTime = map[string]*metrics.Histogram{}
		}
		h = b.cfg.Metrics.Histogram(metrics.QuotaThrottleTime, quotaType)
		b.quotas.throttleTime[quotaType] = h
	}
	h.Observe(float64(d) / float64(time.Millisecond))
}
