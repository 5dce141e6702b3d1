package broker

import (
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/metrics"
)

// brokerMetrics are the broker's series; nil with metrics off, when the
// request path takes no timestamps at all.
type brokerMetrics struct {
	reg *metrics.Registry
	// apis holds each served API's series, by key; only looked up.
	apis                      map[int16]*apiMetrics
	connsCreated, connsClosed *metrics.Counter
	// verifyFailures and verifyTime are the transaction verification's
	// (txnverify.go).
	verifyFailures *metrics.Counter
	verifyTime     *metrics.Histogram
}

// apiMetrics are one API's series (Kafka's RequestMetrics).
type apiMetrics struct {
	reg                                      *metrics.Registry
	name                                     string
	requests                                 *metrics.Counter
	bytes, queue, local, remote, send, total *metrics.Histogram
	// errors holds a counter per error code met so far; only looked up.
	errors map[int16]*metrics.Counter
}

// initMetrics registers the broker's series (Config.Metrics).
func (b *Broker) initMetrics() {
	reg := b.cfg.Metrics
	if reg == nil {
		return
	}
	bm := &brokerMetrics{reg: reg, apis: map[int16]*apiMetrics{},
		connsCreated: reg.Counter(metrics.ConnectionsCreated), connsClosed: reg.Counter(metrics.ConnectionsClosed),
		verifyFailures: reg.Counter(metrics.TxnVerificationFailures), verifyTime: reg.Histogram(metrics.TxnVerificationTime)}
	for _, a := range b.table.Rows() {
		name := kmsg.NameForKey(a.Key)
		bm.apis[a.Key] = &apiMetrics{reg: reg, name: name, errors: map[int16]*metrics.Counter{},
			requests: reg.Counter(metrics.Requests, name),
			bytes:    reg.Histogram(metrics.RequestBytes, name),
			queue:    reg.Histogram(metrics.RequestQueueTime, name),
			local:    reg.Histogram(metrics.RequestLocalTime, name),
			remote:   reg.Histogram(metrics.RequestRemoteTime, name),
			send:     reg.Histogram(metrics.RequestResponseSendTime, name),
			total:    reg.Histogram(metrics.RequestTotalTime, name),
		}
	}
	reg.GaugeFunc(metrics.Connections, func() float64 { return float64(len(b.conns)) })
	reg.GaugeFunc(metrics.ConnectionsPaused, func() float64 { return float64(len(b.paused)) })
	reg.GaugeFunc(metrics.InflightRequestBytes, func() float64 { return float64(b.inflightBytes) })
	reg.GaugeFunc(metrics.FetchSessions, func() float64 { return float64(len(b.sessions.sessions)) })
	// Counters the pool keeps itself (a counter's value read at scrape).
	reg.GaugeFunc(metrics.WorkJobs, func() float64 { return float64(b.work.Stats().Started) }, "worker")
	reg.GaugeFunc(metrics.WorkJobs, func() float64 { return float64(b.work.Stats().Inline) }, "inline")
	reg.GaugeFunc(metrics.WorkQueued, func() float64 { return float64(b.work.Stats().Queued) })
	b.metrics = bm
}

// countError counts one error code in a response of the API (NONE is
// not counted: the request counter has the total).
func (am *apiMetrics) countError(code int16) {
	if am == nil || code == 0 {
		return
	}
	c, ok := am.errors[code]
	if !ok {
		name := "UNKNOWN"
		if err := kerr.ErrorForCode(code); err != nil {
			if ke, ok := err.(*kerr.Error); ok {
				name = ke.Message
			}
		}
		c = am.reg.Counter(metrics.RequestErrors, am.name, name)
		am.errors[code] = c
	}
	c.Inc()
}

// requestTimes are the instants of one request's life (Env.Monotonic),
// taken only with metrics on.
type requestTimes struct {
	arrived, started, handled, answered time.Duration
	// returned: its handler has returned (handled is set). A request
	// answered before that (a Metadata, a batch refused on validation)
	// is sent from within its handler, and its local time ends at its
	// answer.
	returned bool
}

// observeSent records a request's stages once its response went to the
// transport (or, for acks=0, once it completed).
func (am *apiMetrics) observeSent(t requestTimes, sent time.Duration) {
	ms := func(d time.Duration) float64 { return float64(max(d, 0)) / float64(time.Millisecond) }
	localEnd := t.answered
	if t.returned {
		localEnd = min(t.handled, t.answered)
	}
	am.queue.Observe(ms(t.started - t.arrived))
	am.local.Observe(ms(localEnd - t.started))
	am.remote.Observe(ms(t.answered - localEnd))
	am.send.Observe(ms(sent - t.answered))
	am.total.Observe(ms(sent - t.arrived))
}

// countResponseErrors counts every error code of a response by walking
// it: each ErrorCode field of the response, its topics, partitions and
// so on. Produce and Fetch count their own as they build the response
// (apiHandler.countsErrors); the other APIs are not on a hot path.
func (am *apiMetrics) countResponseErrors(resp kmsg.Response) {
	if am == nil {
		return
	}
	walkErrorCodes(reflect.ValueOf(resp), am.countError)
}

var int16Type = reflect.TypeFor[int16]()

func walkErrorCodes(v reflect.Value, f func(int16)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkErrorCodes(v.Elem(), f)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			ft := t.Field(i)
			switch {
			case ft.Name == "ErrorCode" && ft.Type == int16Type:
				f(int16(v.Field(i).Int()))
			case ft.Type.Kind() == reflect.Slice || ft.Type.Kind() == reflect.Struct || ft.Type.Kind() == reflect.Pointer:
				walkErrorCodes(v.Field(i), f)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes, not a structure
		}
		for i := range v.Len() {
			walkErrorCodes(v.Index(i), f)
		}
	}
}
