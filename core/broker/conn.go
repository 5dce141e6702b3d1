package broker

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/connlimit"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/core/work"
)

// conn is the broker's view of one client connection: its requests in
// arrival order, each answered in place, and sent in that order.
//
// Requests are handled as they arrive (pipelined), except behind a
// barrier: a request kind whose table row says barrier (those passed to
// the metadata quorum) holds back the requests after it until it is
// answered, so that a client's Metadata after its CreateTopics on one
// connection is not served before the CreateTopics is. Responses always go
// out in request order, as Kafka requires: an answered request waits for
// every earlier one.
type conn struct {
	b      *Broker
	l      *listener // the listener that accepted it
	id     uint64
	c      env.Conn
	remote string
	// host is the remote address without its port, as ACL bindings and
	// quotas name hosts.
	host string
	// principal is who the connection authenticated as: User:ANONYMOUS
	// until (and unless) it authenticates.
	principal principal.Principal
	// auth is where its SASL authentication stands.
	auth connAuth
	// closing is set once the broker decided to close the connection, so
	// that frames the transport still delivers before OnClose are ignored.
	closing bool
	// draining is set at a frame that cannot be served: the connection
	// takes no more frames and closes once the requests before it are
	// answered (closeAfterAnswers).
	draining bool
	// idle closes the connection after connections.max.idle.ms.
	idle *connlimit.Idle
	// queue holds the requests not yet sent, oldest first; the first
	// dispatched of them are handled, the rest wait behind a barrier.
	queue      []*request
	dispatched int
	// paused is set while the conn's reads are paused for a bound.
	paused bool
	// work is the conn's line of CPU-heavy jobs (request.offload).
	work *work.Queue
	// muted is set while the conn is not read for a quota throttle
	// (KIP-219), until muteEnd (quotas.go).
	muted     bool
	muteEnd   time.Duration
	muteTimer env.Timer
}

// request is one request of a connection and, once answered, its answer.
type request struct {
	cn    *conn
	hdr   wire.RequestHeader
	body  kmsg.Request
	api   *apiHandler
	bytes int // the request frame's size, charged to the broker's budget
	// raw is the frame of a raw SASL token (after SaslHandshake v0),
	// which has no header or body.
	raw []byte
	// m are the API's series and t the request's instants; m is nil with
	// metrics off.
	m *apiMetrics
	t requestTimes
	// q is what the request is charged to its client's quotas; nil
	// without quotas (quotas.go).
	q *requestQuota

	answered bool
	silent   bool       // no response is sent (a Produce with acks=0)
	frame    []byte     // the encoded response, or
	parts    []env.Part // a response with file regions (Fetch)
	release  func()     // unpins the regions once sent or dropped
}

// respond answers the request with resp, which must be of its version.
func (r *request) respond(resp kmsg.Response) {
	assert.That(resp.GetVersion() == r.hdr.Version, "%s response version %d for request version %d",
		r.hdr.APIName(), resp.GetVersion(), r.hdr.Version)
	if r.m != nil && !r.api.countsErrors {
		r.m.countResponseErrors(resp)
	}
	r.cn.b.setThrottle(r, resp)
	r.respondFrame(wire.EncodeResponse(r.hdr.CorrelationID, resp))
}

// answeredNow stamps the answer's instant, with metrics on.
func (r *request) answeredNow() {
	if r.m != nil {
		r.t.answered = r.cn.b.e.Monotonic()
	}
}

// respondFrame answers the request with an encoded response frame.
func (r *request) respondFrame(frame []byte) {
	assert.That(!r.answered, "%s (correlation id %d) answered twice", r.hdr.APIName(), r.hdr.CorrelationID)
	r.answered, r.frame = true, frame
	r.answeredNow()
	r.cn.b.flushSoon(r.cn)
}

// respondParts answers the request with a frame of parts; release runs
// once the transport took its own reference to the regions, or when the
// connection is dropped first.
func (r *request) respondParts(parts []env.Part, release func()) {
	assert.That(!r.answered, "%s (correlation id %d) answered twice", r.hdr.APIName(), r.hdr.CorrelationID)
	r.cn.b.requestThrottle(r) // set in the response by its builder (fetchQuota)
	r.answered, r.parts, r.release = true, parts, release
	r.answeredNow()
	r.cn.b.flushSoon(r.cn)
}

// offload runs run off the loop (on a worker of the broker's pool, in
// turn with the other connections' jobs) and then done on the loop, after
// the done of every earlier offloaded request of the connection. cost is
// the job's estimated CPU time (costs.go). The job runs, and done with it,
// even if the connection closes meanwhile (the answer is then dropped):
// a received request is served, as Kafka serves it. run must be pure: it
// may read the request and what the caller hands it, never broker state.
func (r *request) offload(cost time.Duration, run, done func()) {
	r.chargeWork(cost)
	r.cn.work.Submit(work.Job{Cost: cost, Run: run, Done: r.onLoop(done)})
}

// offloadCharged is offload with charge, the job's cost as its result
// shows it, read on the loop after run (work.Job.Charge): what keeps a
// connection whose small batches decompress to megabytes from passing for
// a light one.
func (r *request) offloadCharged(cost time.Duration, run func(), charge func() time.Duration, done func()) {
	if r.q != nil {
		done0 := r.onLoop(done)
		done = func() {
			r.chargeWork(charge())
			done0()
		}
	}
	r.cn.work.Submit(work.Job{Cost: cost, Run: run, Charge: charge, Done: done})
}

// respondEncoded answers the request with resp already encoded as frame
// (off the loop), which must be of its version.
func (r *request) respondEncoded(resp kmsg.Response, frame []byte) {
	assert.That(resp.GetVersion() == r.hdr.Version, "%s response version %d for request version %d",
		r.hdr.APIName(), resp.GetVersion(), r.hdr.Version)
	if r.m != nil && !r.api.countsErrors {
		r.m.countResponseErrors(resp)
	}
	if r.cn.b.setThrottle(r, resp) {
		frame = wire.EncodeResponse(r.hdr.CorrelationID, resp) // throttled: rare, encoded again on the loop
	}
	r.respondFrame(frame)
}

// noResponse completes a request that gets no answer (acks=0).
func (r *request) noResponse() {
	assert.That(!r.answered, "%s (correlation id %d) answered twice", r.hdr.APIName(), r.hdr.CorrelationID)
	r.answered, r.silent = true, true
	r.cn.b.requestThrottle(r)
	r.answeredNow()
	r.cn.b.flush(r.cn)
}

// dropped releases what an unsent request holds.
func (r *request) dropped() {
	if r.release != nil {
		r.release()
		r.release = nil
	}
}

// onFrame parses one request frame and queues it. A frame that cannot be
// served closes the connection with a log line, once the requests before
// it are answered.
func (b *Broker) onFrame(cn *conn, frame []byte) {
	if cn.closing || cn.draining || b.closed {
		return
	}
	cn.idle.Touch()
	if !cn.authenticated() && len(frame) > MaxPreAuthFrameBytes {
		b.log.Warn("closing connection: request frame before authentication too large", "remote", cn.remote,
			"listener", cn.l.Name, "bytes", len(frame), "max", MaxPreAuthFrameBytes)
		b.closeAfterAnswers(cn)
		return
	}
	var r *request
	if cn.auth.state == authRawTokens {
		r = &request{cn: cn, hdr: wire.RequestHeader{Key: int16(kmsg.SASLAuthenticate)}, api: &rawTokenAPI, raw: frame, bytes: len(frame)}
	} else {
		hdr, body, err := wire.ParseRequest(b.table, frame)
		var api *apiHandler
		switch {
		case err == nil:
			api = b.handlers[hdr.Key]
			assert.That(api != nil, "protocol table lists %s (key %d) but the broker has no handler", hdr.APIName(), hdr.Key)
		case errors.Is(err, wire.ErrApiVersionsTooNew):
			api = &apiVersionsTooNew
		default:
			b.log.Warn("closing connection: bad request", "remote", cn.remote, "err", err)
			b.closeAfterAnswers(cn)
			return
		}
		if !b.checkAuthenticated(cn, hdr) {
			b.closeAfterAnswers(cn)
			return
		}
		r = &request{cn: cn, hdr: hdr, body: body, api: api, bytes: len(frame)}
	}
	if b.metrics != nil {
		r.m = b.metrics.apis[r.api.Key]
		r.t.arrived = b.e.Monotonic()
		r.m.requests.Inc()
		r.m.bytes.Observe(float64(r.bytes))
	}
	cn.queue = append(cn.queue, r)
	b.inflightBytes += r.bytes
	b.applyBounds(cn)
	b.dispatch(cn)
}

// dispatch hands the queued requests to their handlers, in order, up to
// the first unanswered barrier.
func (b *Broker) dispatch(cn *conn) {
	for cn.dispatched < len(cn.queue) && !cn.closing {
		if cn.dispatched > 0 {
			prev := cn.queue[cn.dispatched-1]
			if prev.api.barrier && !prev.answered {
				return
			}
		}
		r := cn.queue[cn.dispatched]
		cn.dispatched++
		if r.m == nil {
			b.handleWithQuotas(r)
			continue
		}
		r.t.started = b.e.Monotonic()
		b.handleWithQuotas(r)
		r.t.handled, r.t.returned = b.e.Monotonic(), true
	}
}

// flushSoon is flush, except that a buggified answer waits a little (a
// slow response path): responses must still go out in request order.
func (b *Broker) flushSoon(cn *conn) {
	if b.e.Buggify("broker/delay-response") {
		b.e.AfterFunc(time.Duration(b.e.Rand().Int64N(int64(20*time.Millisecond))), func() { b.flush(cn) })
		return
	}
	b.flush(cn)
}

// flush sends the answered requests at the head of cn's queue, in order,
// then dispatches what a barrier held back.
func (b *Broker) flush(cn *conn) {
	sent := 0
	for sent < len(cn.queue) && cn.queue[sent].answered {
		r := cn.queue[sent]
		sent++
		b.inflightBytes -= r.bytes
		if cn.closing || b.closed {
			r.dropped()
			continue
		}
		b.send(cn, r)
		if r.q != nil {
			b.muteFor(cn, r.q.throttle) // KIP-219: after the response
		}
		if r.m != nil {
			r.m.observeSent(r.t, b.e.Monotonic())
		}
	}
	if sent > 0 {
		cn.idle.Touch()
		clear(cn.queue[:sent])
		cn.queue = slices.Delete(cn.queue, 0, sent)
		cn.dispatched -= sent
		b.applyBounds(cn)
		b.resumePaused()
	}
	b.dispatch(cn)
	if cn.draining && len(cn.queue) == 0 {
		b.closeWhenSent(cn)
	}
}

// badFrameDrainTimeout bounds how long a connection that sent a frame
// that cannot be served waits for the answers to its earlier requests
// before it is closed anyway: Kafka's request.timeout.ms, after which
// the client has given up on them.
const badFrameDrainTimeout = 30 * time.Second

// closeAfterAnswers closes cn once every request received before now is
// answered and sent (Kafka serves a connection's requests one at a time,
// so a client's valid request before a bad frame is answered there too),
// and takes no more frames meanwhile.
func (b *Broker) closeAfterAnswers(cn *conn) {
	cn.draining = true
	cn.c.Pause()
	b.e.AfterFunc(badFrameDrainTimeout, func() { b.closeConn(cn) })
	if len(cn.queue) == 0 {
		b.closeWhenSent(cn)
	}
}

// drainPollInterval is how often a draining connection checks that its
// last answers left (env.Conn has no callback for it).
const drainPollInterval = 5 * time.Millisecond

// closeWhenSent closes a draining cn once the transport has sent its
// answers: closing earlier would drop them with the connection.
func (b *Broker) closeWhenSent(cn *conn) {
	if cn.closing {
		return
	}
	if cn.c.Buffered() == 0 {
		b.closeConn(cn)
		return
	}
	b.e.AfterFunc(drainPollInterval, func() { b.closeWhenSent(cn) })
}

// send writes one answered request's response.
func (b *Broker) send(cn *conn, r *request) {
	var err error
	switch {
	case r.silent:
		return
	case r.parts != nil:
		err = cn.c.SendParts(r.parts)
		r.dropped() // the transport holds its own reference now
	default:
		err = cn.c.Send(r.frame)
	}
	if err != nil {
		// The conn ended under us; its OnClose does the bookkeeping.
		b.log.Debug("response not sent", "remote", cn.remote, "err", err)
		return
	}
	if buffered := cn.c.Buffered(); buffered > b.cfg.MaxBufferedResponseBytes {
		b.log.Warn("closing connection: client is not reading responses",
			"remote", cn.remote, "buffered_bytes", buffered,
			"max_buffered_response_bytes", b.cfg.MaxBufferedResponseBytes)
		b.closeConn(cn)
	}
}

// applyBounds pauses cn while it has too many requests in flight or the
// broker holds too many request bytes; resumePaused undoes it.
func (b *Broker) applyBounds(cn *conn) {
	over := len(cn.queue) >= b.cfg.MaxInflightRequestsPerConn || b.inflightBytes > b.cfg.MaxInflightRequestBytes
	switch {
	case over && !cn.paused && !cn.closing:
		cn.paused = true
		cn.c.Pause()
		b.paused = append(b.paused, cn)
	case !over && cn.paused && len(cn.queue) < b.cfg.MaxInflightRequestsPerConn && b.inflightBytes <= b.cfg.MaxInflightRequestBytes:
		b.resume(cn)
	}
}

// resumePaused resumes the paused connections that are within their
// bounds again, oldest pause first, while the byte budget allows.
func (b *Broker) resumePaused() {
	for i := 0; i < len(b.paused) && b.inflightBytes <= b.cfg.MaxInflightRequestBytes; {
		cn := b.paused[i]
		if cn.closing || len(cn.queue) < b.cfg.MaxInflightRequestsPerConn {
			b.resume(cn)
			continue // b.paused shrank at i
		}
		i++
	}
}

func (b *Broker) resume(cn *conn) {
	cn.paused = false
	if i := slices.Index(b.paused, cn); i >= 0 {
		b.paused = slices.Delete(b.paused, i, i+1)
	}
	if !cn.closing && !cn.draining && !cn.muted {
		cn.c.Resume()
	}
}
