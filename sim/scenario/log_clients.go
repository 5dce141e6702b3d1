package scenario

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/linearizability"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/kclient"
)

// The log scenario's workload: what each seed draws (swarm), the admin
// that creates the topics, the producers and consumers of the fault
// phase, the prober and the final reader, and how their observations
// reach the history.

// Workload bounds, per seed.
const (
	// logMaxBatches bounds each producer's batches, and so the history;
	// at the drawn intervals a producer spends most of the fault phase
	// on them.
	logMaxBatches = 500
	// logMaxPending bounds a producer's unacknowledged batches: past it
	// the producer waits (a partition whose broker is down holds its
	// batches until the heal).
	logMaxPending = 30
	// logMaxRecordsPerBatch bounds a batch's records.
	logMaxRecordsPerBatch = 8
)

// logTopicSpec is a topic of the run.
type logTopicSpec struct {
	name       string
	partitions int32
	// rf is the replication factor (logShape.topicRF).
	rf      int
	configs [][2]string
}

// logProducerSpec is a producer of the run.
type logProducerSpec struct {
	name        string
	acks        int16
	idempotent  bool
	codec       record.Codec
	maxInflight int
	maxRecords  int
	interval    time.Duration
	maxVersions map[int16]int16
}

func (p logProducerSpec) String() string {
	kind := "plain"
	if p.idempotent {
		kind = "idempotent"
	}
	v := ""
	if p.maxVersions != nil {
		v = fmt.Sprintf(" produce<=v%d", p.maxVersions[kmsg.Produce.Int16()])
	}
	return fmt.Sprintf("%s:%s/acks=%d/%s/inflight=%d/recs<=%d/every=%v%s", p.name, kind, p.acks, p.codec, p.maxInflight, p.maxRecords, p.interval, v)
}

// logConsumerSpec is a tail consumer of the run.
type logConsumerSpec struct {
	name              string
	sessions          bool
	maxWait           time.Duration
	partitionMaxBytes int32
	maxVersions       map[int16]int16
}

func (c logConsumerSpec) String() string {
	v := ""
	if c.maxVersions != nil {
		v = fmt.Sprintf(" fetch<=v%d", c.maxVersions[kmsg.Fetch.Int16()])
	}
	return fmt.Sprintf("%s:sessions=%v/wait=%v/partbytes=%d%s", c.name, c.sessions, c.maxWait, c.partitionMaxBytes, v)
}

// logSwarm is what one seed draws.
type logSwarm struct {
	topics     []logTopicSpec
	producers  []logProducerSpec
	consumers  []logConsumerSpec
	powerCycle bool
	// clientFaults, when set, is the mean interval between faults of the
	// clients' own network (logHarness.clientFault).
	clientFaults time.Duration
}

func (w logSwarm) String() string {
	var parts []string
	for _, t := range w.topics {
		parts = append(parts, fmt.Sprintf("%s:%d%v", t.name, t.partitions, t.configs))
	}
	for _, p := range w.producers {
		parts = append(parts, p.String())
	}
	for _, c := range w.consumers {
		parts = append(parts, c.String())
	}
	parts = append(parts, fmt.Sprintf("power-cycle=%v client-faults=%v", w.powerCycle, w.clientFaults))
	return strings.Join(parts, " ")
}

var logCodecs = []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}

// drawLogSwarm draws the seed's topics, producers and consumers from the
// "log/swarm" stream.
func drawLogSwarm(s *sim.Sim, shape logShape) logSwarm {
	r := s.Rand("log/swarm")
	var w logSwarm
	for i, name := range []string{"orders", "events"} {
		t := logTopicSpec{name: name, partitions: int32(1 + r.IntN(3-i)), rf: shape.topicRF(i)}
		if r.IntN(2) == 0 {
			// Small segments: rolls, producer snapshots at each roll,
			// recovery over many segments.
			t.configs = append(t.configs, [2]string{"segment.bytes", fmt.Sprint(1024 + r.IntN(15*1024))})
		}
		if r.IntN(4) == 0 {
			t.configs = append(t.configs, [2]string{"message.timestamp.type", "LogAppendTime"})
		}
		if shape.pageCache {
			t.configs = append(t.configs, [2]string{"flush.messages", "1000"})
		}
		w.topics = append(w.topics, t)
	}
	for i := 0; i < 3; i++ {
		p := logProducerSpec{name: fmt.Sprintf("p%d", i+1), codec: logCodecs[r.IntN(len(logCodecs))],
			maxInflight: 1 + r.IntN(kclient.MaxInflightPerPartition), maxRecords: 1 + r.IntN(logMaxRecordsPerBatch),
			interval: time.Duration(10+r.IntN(50)) * time.Millisecond}
		switch k := r.IntN(6); {
		case k < 3:
			p.acks, p.idempotent = -1, true
		case k == 3:
			p.acks = -1
		case k == 4:
			p.acks = 1
		default:
			p.acks = 0
		}
		if r.IntN(4) == 0 {
			p.maxVersions = map[int16]int16{kmsg.Produce.Int16(): int16(3 + r.IntN(10))}
		}
		w.producers = append(w.producers, p)
	}
	for i := 0; i < 2; i++ {
		c := logConsumerSpec{name: fmt.Sprintf("c%d", i+1), sessions: r.IntN(2) == 0,
			maxWait: time.Duration(50+r.IntN(450)) * time.Millisecond}
		if r.IntN(2) == 0 {
			c.partitionMaxBytes = int32(256 + r.IntN(4096))
		}
		if r.IntN(4) == 0 {
			c.maxVersions = map[int16]int16{kmsg.Fetch.Int16(): int16(4 + r.IntN(9)), kmsg.ListOffsets.Int16(): int16(1 + r.IntN(4))}
		}
		w.consumers = append(w.consumers, c)
	}
	w.powerCycle = r.IntN(2) == 0
	if r.IntN(2) == 0 {
		w.clientFaults = time.Duration(100+r.IntN(1900)) * time.Millisecond
	}
	return w
}

// newLogClient starts a client process (not under the nemesis) and
// calls ready with its client on its first event.
func (h *logHarness) newLogClient(name string, maxVersions map[int16]int16, ready func(e env.Env, c *kclient.Client)) {
	p := h.s.AddProcess(name, func(e env.Env) {
		ready(e, kclient.New(e, kclient.Config{ClientID: name, Bootstrap: h.bootstrap(), MaxVersions: maxVersions}))
	})
	h.clients = append(h.clients, p)
	p.Start()
}

// logMaxClientClog bounds a clog of a client's network: longer than the
// client's request timeout, so that some requests time out with an
// unknown outcome.
const logMaxClientClog = 4 * time.Second

// scheduleClientFault injects, during the fault phase and when the seed
// drew it, trouble on a workload client's own network, which the
// nemesis (striking servers only) never causes: a reset of its
// connections (requests in flight end with an unknown outcome) or a clog
// of its traffic (requests time out).
func (h *logHarness) scheduleClientFault(r *rand.Rand, until time.Duration) {
	gap := time.Duration(r.ExpFloat64() * float64(h.swarm.clientFaults))
	if h.s.Now()+gap >= until {
		return
	}
	h.s.After(gap, "log:client-fault", func() {
		var targets []*sim.Process
		for _, p := range h.clients {
			if p.Name() != "admin" {
				targets = append(targets, p)
			}
		}
		if len(targets) > 0 {
			p := targets[r.IntN(len(targets))]
			if r.IntN(2) == 0 {
				h.s.Network().ResetConns(p.Name())
			} else {
				h.s.Network().Clog(p.Name(), time.Duration(1+r.Int64N(int64(logMaxClientClog))))
			}
		}
		h.scheduleClientFault(r, until)
	})
}

// logAdmin creates the topics once every broker is registered.
type logAdmin struct {
	h       *logHarness
	c       *kclient.Client
	created int
	asked   bool
}

func startLogAdmin(h *logHarness) *logAdmin {
	a := &logAdmin{h: h}
	h.newLogClient("admin", nil, func(e env.Env, c *kclient.Client) {
		a.c = c
		for _, t := range h.swarm.topics {
			c.AddTopics(t.name)
		}
		a.tick(e)
	})
	return a
}

func (a *logAdmin) tick(e env.Env) {
	if a.h.phase != logSetup {
		if a.h.shape.rf() > 1 {
			a.reassignTick(e)
		}
		return
	}
	a.c.RefreshMetadata()
	if !a.asked && a.c.MetadataBrokers() >= len(a.h.procs) {
		a.asked = true
		for _, t := range a.h.swarm.topics {
			a.create(t)
		}
	}
	e.AfterFunc(100*time.Millisecond, func() { a.tick(e) })
}

// reassignTick runs the replicated scenario's reassignments, in one seed
// of two: during the fault phase, every 0.5 to 3 s, one partition with
// every broker as a replica drops one (a removal, completed at once) and
// one with a broker missing gets it back (an addition: the new replica
// catches up before the reassignment completes); from the heal on, every
// partition gets its missing replica back, so that the run ends fully
// replicated. Answers are traced, not judged: a reassignment refused (in
// progress already, no controller) is simply tried again later.
func (a *logAdmin) reassignTick(e env.Env) {
	if a.h.phase == logDone || !a.h.reassigns {
		return
	}
	a.c.RefreshMetadata()
	r := a.h.reassignRand
	faults := a.h.phase == logFaults
	for _, t := range a.h.swarm.topics {
		tm, ok := a.c.Topic(t.name)
		if !ok {
			continue
		}
		for _, p := range tm.Partitions {
			n, brokers := t.rf, int32(len(a.h.procs))
			switch {
			case len(p.Replicas) == n && faults && r.IntN(8) == 0:
				drop := p.Replicas[r.IntN(n)]
				a.reassign(t.name, p.Partition, slices.DeleteFunc(slices.Clone(p.Replicas), func(id int32) bool { return id == drop }))
			case len(p.Replicas) == n-1 && (!faults || r.IntN(4) == 0):
				// Back to n replicas: with as many brokers as replicas the
				// one missing, else one of those holding none, drawn.
				var missing []int32
				for id := int32(1); id <= brokers; id++ {
					if !slices.Contains(p.Replicas, id) {
						missing = append(missing, id)
					}
				}
				add := missing[0]
				if len(missing) > 1 {
					add = missing[r.IntN(len(missing))]
				}
				a.reassign(t.name, p.Partition, append(slices.Clone(p.Replicas), add))
			}
		}
	}
	wait := time.Duration(500+r.IntN(2500)) * time.Millisecond
	if !faults {
		wait = 500 * time.Millisecond
	}
	e.AfterFunc(wait, func() { a.reassignTick(e) })
}

// reassign asks for partition's assignment to become target.
func (a *logAdmin) reassign(topic string, partition int32, target []int32) {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = partition, target
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	a.c.DoAny(req, func(resp kmsg.Response, err error) {
		code := int16(-1)
		if r, ok := resp.(*kmsg.AlterPartitionAssignmentsResponse); ok && err == nil && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			code = r.Topics[0].Partitions[0].ErrorCode
		}
		a.h.s.Trace(fmt.Sprintf("log:reassign %s-%d to %v code=%d", topic, partition, target, code))
	})
}

// create creates topic t. With replicas, a broker the Metadata listed may
// not be active at the controller yet (fenced until its first heartbeat):
// INVALID_REPLICATION_FACTOR then means "not enough brokers yet", and the
// creation is asked again, as an operator would.
func (a *logAdmin) create(t logTopicSpec) {
	configs := t.configs
	if t.rf > 1 {
		configs = append(slices.Clone(configs), [2]string{"min.insync.replicas", strconv.Itoa(minInsync(t.rf))})
	}
	spec := kclient.TopicSpec{Name: t.name, Partitions: t.partitions, ReplicationFactor: int16(t.rf), Configs: configs}
	a.c.CreateTopic(spec, func(ok bool, code int16) {
		if !ok && code == kerr.InvalidReplicationFactor.Code && a.h.shape.rf() > 1 && a.h.phase == logSetup {
			a.h.s.Trace("log:create-again " + spec.Name)
			a.h.s.After(200*time.Millisecond, "log:create-again", func() { a.create(t) })
			return
		}
		if !ok {
			a.h.fail(fmt.Errorf("setup: creating %s failed for good: error code %d", spec.Name, code))
		}
		a.created++
		a.h.s.Trace(fmt.Sprintf("log:created %s code=%d", spec.Name, code))
	})
}

// ready reports whether every topic exists with a leader for every
// partition.
func (a *logAdmin) ready() bool {
	if a.c == nil || a.created < len(a.h.swarm.topics) {
		return false
	}
	for _, t := range a.h.swarm.topics {
		tm, ok := a.c.Topic(t.name)
		if !ok || len(tm.Partitions) != int(t.partitions) {
			return false
		}
		for _, p := range tm.Partitions {
			if p.Leader < 0 {
				return false
			}
		}
	}
	return true
}

// startWorkload starts the producers and the tail consumers.
func (h *logHarness) startWorkload() {
	for _, spec := range h.swarm.producers {
		h.producers = append(h.producers, h.startProducer(spec, true))
	}
	for _, spec := range h.swarm.consumers {
		if h.shape.noTailConsumers {
			break
		}
		h.consumers = append(h.consumers, h.startConsumer(spec, false))
	}
	if h.group != nil {
		h.group.start()
	}
	if h.txn != nil {
		h.txn.start()
	}
}

// startProbe starts the prober: one record to every partition.
func (h *logHarness) startProbe() {
	h.prober = h.startProducer(logProducerSpec{name: "probe", acks: -1, idempotent: true, maxInflight: 1, maxRecords: 1}, false)
}

// startVerify starts the final reader.
func (h *logHarness) startVerify() {
	h.verifier = h.startConsumer(logConsumerSpec{name: "final", maxWait: 100 * time.Millisecond}, true)
}

// logProducer is one producer of the run.
type logProducer struct {
	h    *logHarness
	spec logProducerSpec
	name string
	e    env.Env
	p    *kclient.Producer
	// batches counts the batches produced; the counters count outcomes.
	batches                                  int
	acked, rejected, unknown, notSent, fired int
}

func (lp *logProducer) counts() string {
	return fmt.Sprintf("batches=%d acked=%d rejected=%d unknown=%d not-sent=%d fired=%d", lp.batches, lp.acked, lp.rejected, lp.unknown, lp.notSent, lp.fired)
}

// startProducer starts a producer process; a workload producer produces
// on its interval during the fault phase, the prober one record to every
// partition.
func (h *logHarness) startProducer(spec logProducerSpec, workload bool) *logProducer {
	lp := &logProducer{h: h, spec: spec, name: spec.name}
	h.newLogClient(spec.name, spec.maxVersions, func(e env.Env, c *kclient.Client) {
		lp.e = e
		lp.p = kclient.NewProducer(c, kclient.ProducerConfig{
			Acks: spec.acks, Idempotent: spec.idempotent, Codec: spec.codec, MaxInflight: spec.maxInflight,
			Values: lp.value, OnEvent: lp.onEvent,
		})
		if workload {
			lp.tick()
			return
		}
		for _, p := range h.partitions() {
			lp.p.Produce(p.Topic, p.Partition, 1)
		}
	})
	return lp
}

func (lp *logProducer) tick() {
	h := lp.h
	if h.phase != logFaults || lp.batches >= logMaxBatches {
		return
	}
	if lp.p.Pending() < logMaxPending {
		parts := h.partitions()
		p := parts[lp.e.Rand().IntN(len(parts))]
		lp.batches++
		lp.p.Produce(p.Topic, p.Partition, 1+lp.e.Rand().IntN(lp.spec.maxRecords))
	}
	d := lp.spec.interval/2 + time.Duration(lp.e.Rand().Int64N(int64(lp.spec.interval)))
	lp.e.AfterFunc(d, lp.tick)
}

// value is a record's value: unique per build (producer, batch,
// generation, index), with the idempotent fields for the reader of a
// failure.
func (lp *logProducer) value(b kclient.BatchInfo, i int) []byte {
	return []byte(fmt.Sprintf("%s b%d g%d pid%d.%d s%d r%d", lp.name, b.Number, b.Generation, b.ProducerID, b.ProducerEpoch, b.BaseSequence, i))
}

func buildName(producer string, b kclient.BatchInfo) string {
	return fmt.Sprintf("%s/b%d/g%d", producer, b.Number, b.Generation)
}

func strs(values [][]byte) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// onEvent hands a producer's build or send outcome to the history.
func (lp *logProducer) onEvent(ev kclient.ProduceEvent) {
	h := lp.h
	part := linearizability.LogPartition{Topic: ev.Batch.Topic, Partition: ev.Batch.Partition}
	build := buildName(lp.name, ev.Batch)
	h.s.Trace(fmt.Sprintf("log:%s %s %s %s send=%d off=%d code=%d", lp.name, ev.Kind, part, build, ev.Send, ev.BaseOffset, ev.Code))
	if ev.Kind == kclient.Built {
		if err := h.hist.Produced(part, build, strs(ev.Values)); err != nil {
			h.fail(err)
		}
		h.model.built(lp.name, part, build, strs(ev.Values), h.s.Now())
		return
	}
	// acks=1 with replicas: the leader alone had the batch, and a leader
	// change may take it back (Kafka's semantics). It is not an
	// observation of the committed log.
	leaderOnly := lp.spec.acks == 1 && h.shape.rf() > 1
	h.model.sent(build, ev.Kind, ev.BaseOffset, !leaderOnly, h.s.Now())
	a := linearizability.LogAttempt{Producer: lp.name, Partition: part, Build: build, Send: ev.Send, Offset: ev.BaseOffset}
	switch ev.Kind {
	case kclient.Acked:
		lp.acked++
		a.Outcome = linearizability.LogAcked
		if lp.name == "probe" {
			h.probes[part] = ev.BaseOffset
		}
		if leaderOnly {
			a.Outcome, a.Detail = linearizability.LogUnknown, "acks=1 (the leader only)"
		}
	case kclient.Rejected:
		lp.rejected++
		a.Outcome, a.Detail = linearizability.LogRejected, kerrName(ev.Code)
	case kclient.Unknown:
		lp.unknown++
		a.Outcome, a.Detail = linearizability.LogUnknown, ev.Err.Error()
	case kclient.Fired:
		lp.fired++
		a.Outcome, a.Detail = linearizability.LogUnknown, "acks=0"
	default:
		lp.notSent++
		a.Outcome, a.Detail = linearizability.LogNotSent, ev.Err.Error()
	}
	h.fail(h.hist.Attempt(a, strs(ev.Values)))
}

// logConsumer is a tail consumer or the final reader.
type logConsumer struct {
	h     *logHarness
	name  string
	final bool
	e     env.Env
	cn    *kclient.Consumer
	// reads holds per partition what the consumer's current session
	// read (the final reader keeps the records).
	reads map[linearizability.LogPartition]*logRead
}

// logRead is a consumer's current session of a partition.
type logRead struct {
	session int
	start   int64
	pos     int64
	hw      int64
	records []linearizability.LogRecord
	// tampered: the final-read bugs were planted in this session.
	tampered bool
}

func (h *logHarness) startConsumer(spec logConsumerSpec, final bool) *logConsumer {
	lc := &logConsumer{h: h, name: spec.name, final: final, reads: map[linearizability.LogPartition]*logRead{}}
	var topics []string
	for _, t := range h.swarm.topics {
		topics = append(topics, t.name)
	}
	h.newLogClient(spec.name, spec.maxVersions, func(e env.Env, c *kclient.Client) {
		lc.e = e
		lc.cn = kclient.NewConsumer(c, kclient.ConsumerConfig{Topics: topics, Sessions: spec.sessions, MaxWait: spec.maxWait,
			PartitionMaxBytes: spec.partitionMaxBytes, OnFetch: lc.onFetch})
	})
	return lc
}

// state returns the consumer's current session of p.
func (lc *logConsumer) state(p linearizability.LogPartition) *logRead {
	st, ok := lc.reads[p]
	if !ok {
		st = &logRead{start: -1, pos: -1, hw: -1}
		lc.reads[p] = st
	}
	return st
}

// caughtUp reports whether the current session read p up to the high
// watermark the last fetch reported, and that is at least need.
func (lc *logConsumer) caughtUp(p linearizability.LogPartition, need int64) bool {
	st := lc.state(p)
	return st.session > 0 && st.hw >= 0 && st.pos == st.hw && st.hw >= need
}

// onFetch hands what a consumer read to the history.
func (lc *logConsumer) onFetch(ev kclient.FetchEvent) {
	h := lc.h
	p := linearizability.LogPartition{Topic: ev.Topic, Partition: ev.Partition}
	st := lc.state(p)
	switch ev.Kind {
	case kclient.Reset:
		h.s.Trace(fmt.Sprintf("log:%s reset %s session=%d at=%d", lc.name, p, ev.Session, ev.Offset))
		*st = logRead{session: ev.Session, start: ev.Offset, pos: ev.Offset, hw: -1}
		h.hist.StartSession(lc.name, ev.Session, p, ev.Offset)
	case kclient.Records:
		recs := make([]linearizability.LogRecord, len(ev.Records))
		for i, r := range ev.Records {
			recs[i] = linearizability.LogRecord{Offset: r.Offset, Value: string(r.Value)}
		}
		first, last := int64(-1), int64(-1)
		if len(recs) > 0 {
			first, last = recs[0].Offset, recs[len(recs)-1].Offset
			st.pos = last + 1
		}
		h.s.Trace(fmt.Sprintf("log:%s read %s session=%d %d..%d hw=%d", lc.name, p, ev.Session, first, last, ev.HighWatermark))
		recs = lc.view(p, st, recs)
		h.checkHostileRead(lc.name, p, recs)
		hw := ev.HighWatermark
		if h.shape.rf() > 1 {
			// A new leader's high watermark may lag the old one's until
			// its followers fetch (Kafka's): what the reader learned was
			// committed stays committed, which (b) checks record by
			// record, but the number it is told may go back.
			hw = max(hw, st.hw)
		}
		// The fetch was sent ev.Sent on the client's monotonic clock;
		// clients run at the simulator's rate (the nemesis skews servers
		// only), so the time since then is the same in virtual time.
		now := h.s.Now()
		h.model.fetched(lc.name, p, ev.Offset, now-(lc.e.Monotonic()-ev.Sent), now, recs)
		h.fail(h.hist.ReadWithHW(lc.name, ev.Session, p, recs, hw))
		st.hw = hw
		if lc.final {
			st.records = append(st.records, recs...)
		}
	case kclient.OutOfRange:
		h.s.Trace(fmt.Sprintf("log:%s out-of-range %s at=%d", lc.name, p, ev.Offset))
		h.fail(h.hist.OutOfRange(lc.name, p, ev.Offset))
	case kclient.Corrupt:
		h.fail(&linearizability.LogViolation{Check: "c", At: h.s.Now(),
			Msg: fmt.Sprintf("%s read damaged data from %s: %v", lc.name, p, ev.Err)})
	}
}

// view applies the planted bugs to what the checker is told.
func (lc *logConsumer) view(p linearizability.LogPartition, st *logRead, recs []linearizability.LogRecord) []linearizability.LogRecord {
	b := lc.h.bugs
	if b.reorder && !lc.final && len(recs) >= 2 {
		recs = append([]linearizability.LogRecord(nil), recs...)
		recs[0], recs[1] = recs[1], recs[0]
	}
	if b.changeRecord && lc.final && len(recs) > 0 && recs[0].Offset == st.start {
		recs = append([]linearizability.LogRecord(nil), recs...)
		recs[0].Value += " (changed)"
	}
	return recs
}

// tamperTail plants the final-read bugs that add records after the end
// of every partition, once the final reader caught up: an invented record
// (c), or the partition's first record again (d).
func (lc *logConsumer) tamperTail() {
	h := lc.h
	for _, p := range h.partitions() {
		st := lc.state(p)
		if st.tampered || st.hw < 0 {
			continue
		}
		st.tampered = true
		var extra []linearizability.LogRecord
		switch {
		case h.bugs.invent:
			extra = append(extra, linearizability.LogRecord{Offset: st.hw, Value: "invented " + p.String()})
		case h.bugs.dupBatch && len(st.records) > 0:
			extra = append(extra, linearizability.LogRecord{Offset: st.hw, Value: st.records[0].Value})
		}
		if len(extra) > 0 {
			h.model.fetched(lc.name, p, st.hw, h.s.Now(), h.s.Now(), extra)
			h.fail(h.hist.Read(lc.name, st.session, p, extra))
		}
	}
}

func kerrName(code int16) string {
	if e := kerr.TypedErrorForCode(code); e != nil {
		return e.Message
	}
	return fmt.Sprintf("error code %d", code)
}
