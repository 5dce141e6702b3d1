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
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/kclient"
)

// The txn scenario (issue 13): the replicated scenario's cluster,
// workload, nemesis and checks, plus transactional producers
// (kclient.TxnProducer, one transactional id each) writing transactions
// of one to three batches over the partitions of topic txn (and, one in
// three, a batch on txn-out) and committing or aborting them, crashed
// and restarted now and then (the new incarnation initializes with the
// same transactional id, fencing the old one), read_committed readers
// tailing both topics, and consume-transform-produce (ETL) workers
// (txn_etl.go) that read txn read_committed and write a transform of
// each record to txn-out, committing the input offsets for group etl
// inside the transaction (AddOffsetsToTxn, TxnOffsetCommit), crashed,
// fenced and rewound to the committed offsets. In the seeds that
// strike, the harness kills, powers off or isolates the coordinator
// (the leader of the transactional id's __transaction_state partition)
// just after an EndTxn is sent to it, while the markers are in flight;
// in the seeds that delay (txn_stale.go), it delivers a copy of a
// producer's answered EndTxn late, during its next transaction. In half
// the seeds the brokers finalize transaction.version 2 (KIP-890 part 2),
// and two producer incarnations in three (producers and ETL workers
// alike) leave their adds to the brokers (kclient's ImplicitAdds: no
// AddPartitionsToTxn or AddOffsetsToTxn; the partition leader and the
// group coordinator add the partition); the others still add explicitly.
//
// A transaction's outcome, as the producer saw it: committed once its
// EndTxn commit was answered; aborted once it is over (answered abort,
// its producer crashed or fenced) without an EndTxn commit ever sent;
// unknown if a commit was sent and never answered. Checks, each on the
// observation that shows it:
//
//   - (n) lost write: every record of a committed transaction is
//     delivered to every read_committed reader that passes its offset,
//     and to the final read;
//   - (o) duplicate: no record of a transaction is read at two offsets;
//   - (p) aborted read (G1a): a read_committed reader never sees a record
//     of a transaction whose commit was not sent before the read (it is
//     aborted, or not decided yet);
//   - (q) atomic visibility (G1b): the final read_committed read has all
//     of a transaction's records or none, whatever its outcome;
//   - (r) last stable offset: no read_committed answer delivers a record
//     at or past the last stable offset it reports;
//   - (s) txn liveness: after the heal every producer's last transaction
//     ends, every ETL worker commits past the last record of its input,
//     a final read_committed reader reaches every partition's high
//     watermark with the last stable offset there, and then every
//     broker's ListTransactions names no transaction Ongoing or in a
//     Prepare state;
//   - (t) ETL exactly-once: the final read of txn-out holds exactly one
//     transform of each input record below group etl's committed offset
//     of its partition, and none of a record at or past it
//     (txn_etl.go);
//   - (u) G0 and G1c: the dependency graph over the committed
//     transactions (ww: one's marker before another's first record on a
//     partition; wr: an ETL transaction consumed a record of another)
//     has no cycle (txn_graph.go);
//   - (v) stale EndTxn: an EndTxn of transaction N delivered late,
//     during N+1 of the same producer, is refused (KIP-890 part 2's
//     epoch bump fences it; KAFKA-17754) (txn_stale.go).
//   - (w) produce order: a pipelined producer's batch (the ETL workers
//     produce as franz-go does: several requests in flight, batches of
//     several partitions per request, partitions joining the
//     transaction as it goes) is never refused
//     OUT_OF_ORDER_SEQUENCE_NUMBER when every earlier batch of its
//     partition was acknowledged: the partition leader appends a
//     producer's batches in the order they came (issue 22's kgo
//     TestTxnEtl failure: a request waiting for the coordinator's
//     verification of one partition let the next request's batch of
//     another overtake its own).
//
// Not built: KIP-447 group members as ETL workers (one transactional id
// per set of input partitions here, no rebalances), TxnOffsetCommit v5
// (KIP-890 part 2's implicit AddOffsetsToTxn), G2 (anti-dependencies).

// Txn scenario bounds.
const (
	txnTopic = "txn"
	// txnPartitions is the txn topic's partition count and
	// txnStatePartitions transaction.state.log.num.partitions.
	txnPartitions      = 3
	txnStatePartitions = 2
	// txnAbortCheckInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms,
	// lowered so that a crashed producer's transaction times out within
	// the heal.
	txnAbortCheckInterval = time.Second
	// txnTimeout is the producers' transaction.timeout.ms.
	txnTimeout   = 4 * time.Second
	txnProducers = 3
	// txnGapMin and txnGapMax bound the pause between a producer's
	// transactions; txnCrashGapMin and txnCrashGapMax between crashes
	// of a producer process.
	txnGapMin         = 20 * time.Millisecond
	txnGapMax         = 300 * time.Millisecond
	txnCrashGapMin    = time.Second
	txnCrashGapMax    = 5 * time.Second
	txnCrashDownMax   = time.Second
	txnStrikeOneIn    = 4 // one EndTxn send in this many may strike
	txnMaxWritesPerTx = 3
	txnMaxRecords     = 3
)

type txnOutcome uint8

const (
	txnOpen txnOutcome = iota
	txnCommitted
	txnAborted
	txnUnknown
)

func (o txnOutcome) String() string {
	return [...]string{"open", "committed", "aborted", "unknown"}[o]
}

// txnRecord is one transaction of the run.
type txnRecord struct {
	key    string
	writes []kclient.TxnWrite
	// offsets[i] is write i's acknowledged base offset, -1 until then.
	offsets    []int64
	commitSent bool
	outcome    txnOutcome
	ackedAt    time.Duration // committed: when the commit was answered
	// pid is the producer id the writes went under.
	pid int64
	// etl: an ETL worker's transaction (txn_etl.go).
	etl *etlTxn
}

// txnProducerProc is one transactional id's producer process.
type txnProducerProc struct {
	name string
	tid  string
	proc *sim.Process
	e    env.Env
	p    *kclient.TxnProducer
	// inc names the incarnation's transactions.
	inc uint64
	n   int
	cur *txnRecord
	up  bool
	// etl is set for an ETL worker's producer (txn_etl.go).
	etl *etlWorker
	// ending is the EndTxn of cur as last sent; stale the one of the
	// transaction before, which the harness may deliver late (check v).
	ending, stale staleEnd
}

// txnReader is one read_committed reader's process state.
type txnReader struct {
	name string
	proc *sim.Process
	e    env.Env
	cn   *kclient.Consumer
	// parts: per partition, what the current session delivered and how
	// far it passed.
	parts map[kclient.TopicPartition]*txnReadState
	final bool
}

type txnReadState struct {
	session   int
	start     int64 // where the session started
	pos       int64
	hw, lso   int64
	sentAfter time.Duration // the last answer's send time
	delivered map[int64]string
	// markers: the transaction markers passed, in offset order.
	markers []kclient.Marker
}

// txnRun is the transaction part of a txn run.
type txnRun struct {
	h         *logHarness
	r         *rand.Rand
	strikes   controllerStrikes
	producers []*txnProducerProc
	txns      map[string]*txnRecord
	order     []*txnRecord
	// where[value] is the offset and partition a value was first read at.
	where   map[string]txnPlace
	readers []*txnReader
	final   *txnReader
	checker *kclient.Client
	created bool
	healed  bool
	// listing: ListTransactions are out (s); listed: all answered empty.
	listing bool
	listed  int
	why     string
	// counters for the summary and the tests.
	committed, aborted, unknown, fenced, crashes, reads, skipped int
	// etl: the consume-transform-produce workers (txn_etl.go).
	etl etlRun
	// stale: the late EndTxn deliveries (txn_stale.go).
	stale staleRun
	// committedOn lists the committed transactions per partition they
	// wrote, in commit order (looked up only).
	committedOn map[kclient.TopicPartition][]*txnRecord
	// graphNodes and graphEdges: the size of (u)'s graph.
	graphNodes, graphEdges int
	// tv2: the seed's brokers finalize transaction.version 2 (KIP-890
	// part 2), and its clients in turn leave their adds to the brokers
	// (implicit) or make them (explicit); drawn from a stream of its own.
	tv2      bool
	tv2Draws *rand.Rand
}

// implicitAdds draws whether a new producer incarnation leaves its adds to
// the brokers: never unless the seed's brokers finalize transaction.version
// 2, then two times in three (a Java 4.0 or kgo client; the third an older
// client, which still adds explicitly).
func (t *txnRun) implicitAdds() bool {
	return t.tv2 && t.tv2Draws.IntN(3) != 0
}

type txnPlace struct {
	topic     string
	partition int32
	offset    int64
}

func (p txnPlace) String() string {
	return fmt.Sprintf("%s-%d offset %d", p.topic, p.partition, p.offset)
}

func writeTP(w kclient.TxnWrite) kclient.TopicPartition {
	return kclient.TopicPartition{Topic: w.Topic, Partition: w.Partition}
}

func newTxnRun(h *logHarness) *txnRun {
	t := &txnRun{h: h, r: h.s.Rand("txn/producers"), txns: map[string]*txnRecord{}, where: map[string]txnPlace{},
		committedOn: map[kclient.TopicPartition][]*txnRecord{}}
	t.strikes.r = h.s.Rand("txn/coordinator-strike")
	t.strikes.on = t.strikes.r.IntN(2) == 0 && !h.o.NoFaults
	for i := 0; i < txnProducers; i++ {
		t.producers = append(t.producers, &txnProducerProc{name: fmt.Sprintf("tp%d", i+1), tid: fmt.Sprintf("tx-%d", i+1)})
	}
	t.newEtl()
	t.stale.r = h.s.Rand("txn/stale-end")
	t.stale.on = t.stale.r.IntN(2) == 0 && !h.o.NoFaults
	t.tv2Draws = h.s.Rand("txn/transaction-version")
	t.tv2 = t.tv2Draws.IntN(2) == 0
	return t
}

func (t *txnRun) summary() string {
	return fmt.Sprintf("txn={committed=%d aborted=%d unknown=%d fenced=%d crashes=%d reads=%d skipped=%d strikes=%d/%d etl=%d/%d/%d stale=%d/%d tv2=%v}",
		t.committed, t.aborted, t.unknown, t.fenced, t.crashes, t.reads, t.skipped, t.strikes.kills, t.strikes.cuts,
		t.etl.committed, t.etl.aborted, t.etl.rewinds, t.stale.sent, t.stale.fenced, t.tv2)
}

func (t *txnRun) fail(err error) { t.h.fail(err) }

// createTopic creates a topic as logAdmin.create does: a broker the
// Metadata listed may be fenced at the controller (not yet unfenced, or
// killed by a strike meanwhile: txn seeds 135 and 156 once partition
// .log files got latent errors), so INVALID_REPLICATION_FACTOR means "not
// enough brokers yet" and the creation is asked again, as an operator
// would.
func (t *txnRun) createTopic(c *kclient.Client, spec kclient.TopicSpec, done func(ok bool, code int16)) {
	c.CreateTopic(spec, func(ok bool, code int16) {
		if !ok && code == kerr.InvalidReplicationFactor.Code {
			t.h.s.Trace("txn:create-again " + spec.Name)
			t.h.s.After(200*time.Millisecond, "txn:create-again", func() { t.createTopic(c, spec, done) })
			return
		}
		done(ok, code)
	})
}

// start creates the topic, then starts the producers and a reader.
func (t *txnRun) start() {
	h := t.h
	h.newLogClient("tcheck", nil, func(e env.Env, c *kclient.Client) {
		t.checker = c
		spec := kclient.TopicSpec{Name: txnTopic, Partitions: txnPartitions, ReplicationFactor: replicatedRF,
			Configs: [][2]string{{"min.insync.replicas", strconv.Itoa(minInsync(replicatedRF))}}}
		out := spec
		out.Name, out.Partitions = etlTopic, etlPartitions
		t.createTopic(c, spec, func(ok bool, code int16) {
			if !ok {
				t.fail(fmt.Errorf("setup: creating %s failed for good: error code %d", txnTopic, code))
			}
			t.createTopic(c, out, func(ok bool, code2 int16) {
				if !ok {
					t.fail(fmt.Errorf("setup: creating %s failed for good: error code %d", etlTopic, code2))
				}
				t.created = true
				h.s.Trace(fmt.Sprintf("txn:created code=%d,%d", code, code2))
				for _, p := range t.producers {
					t.startProducer(p)
				}
				for _, w := range t.etl.workers {
					t.startEtl(w)
				}
				t.readers = append(t.readers, t.startReader("trc1", false))
				if !h.o.NoFaults {
					t.scheduleCrash()
				}
			})
		})
	})
}

func (t *txnRun) startProducer(tp *txnProducerProc) {
	h := t.h
	tp.proc = h.s.AddProcess(tp.name, func(e env.Env) {
		tp.restart(e)
		tp.p = t.newProducer(t.newClient(e, tp.name), tp, false)
		t.tick(tp)
	})
	h.clients = append(h.clients, tp.proc)
	tp.proc.Start()
}

// restart takes up a new incarnation of tp's process, on e: no
// transaction in progress and no EndTxn to deliver late.
func (tp *txnProducerProc) restart(e env.Env) {
	tp.e, tp.up, tp.cur = e, true, nil
	tp.inc = tp.proc.Incarnation()
	tp.ending, tp.stale = staleEnd{}, staleEnd{}
}

// newClient is a client of the process e, named name, that knows the txn
// and ETL topics and caps its versions for a transactional producer.
func (t *txnRun) newClient(e env.Env, name string) *kclient.Client {
	c := kclient.New(e, kclient.Config{ClientID: name, Bootstrap: t.h.bootstrap(), MaxVersions: kclient.TxnMaxVersions()})
	c.AddTopics(txnTopic, etlTopic)
	return c
}

// newProducer is tp's transactional producer on c (pipelined: franz-go's
// way, see TxnProducerConfig.Pipelined), its events to onEvent.
func (t *txnRun) newProducer(c *kclient.Client, tp *txnProducerProc, pipelined bool) *kclient.TxnProducer {
	return kclient.NewTxnProducer(c, kclient.TxnProducerConfig{TransactionalID: tp.tid, Timeout: txnTimeout, ImplicitAdds: t.implicitAdds(),
		Pipelined: pipelined, OnEvent: func(ev kclient.TxnEvent) { t.onEvent(tp, ev) }})
}

// tick begins the producer's next transaction when it is ready, during
// the fault phase.
func (t *txnRun) tick(tp *txnProducerProc) {
	inc := tp.inc
	gap := drawBetween(t.r, txnGapMin, txnGapMax)
	tp.e.AfterFunc(gap, func() {
		if tp.inc != inc || !tp.up {
			return
		}
		if !t.healed && tp.p.Ready() {
			t.begin(tp)
		}
		t.tick(tp)
	})
}

func (t *txnRun) begin(tp *txnProducerProc) {
	tp.n++
	rec := &txnRecord{key: fmt.Sprintf("%s#%d.%d", tp.name, tp.inc, tp.n)}
	parts := t.r.Perm(txnPartitions)[:1+t.r.IntN(txnMaxWritesPerTx)]
	for _, p := range parts {
		w := kclient.TxnWrite{Topic: txnTopic, Partition: int32(p)}
		for i := 0; i < 1+t.r.IntN(txnMaxRecords); i++ {
			w.Values = append(w.Values, []byte(fmt.Sprintf("%s/%d/%d", rec.key, p, i)))
		}
		rec.writes = append(rec.writes, w)
		rec.offsets = append(rec.offsets, -1)
	}
	if t.r.IntN(3) == 0 {
		// A batch on the ETL output topic too, so that ETL and producer
		// transactions order each other there (check u).
		q := int32(t.r.IntN(etlPartitions))
		w := kclient.TxnWrite{Topic: etlTopic, Partition: q, Values: [][]byte{[]byte(fmt.Sprintf("%s/o%d/0", rec.key, q))}}
		rec.writes = append(rec.writes, w)
		rec.offsets = append(rec.offsets, -1)
	}
	commit := t.r.IntN(4) != 0
	t.txns[rec.key] = rec
	t.order = append(t.order, rec)
	tp.cur = rec
	t.h.s.Trace(fmt.Sprintf("txn:begin %s writes=%d commit=%v", rec.key, len(rec.writes), commit))
	tp.p.Begin(tp.n, rec.writes, commit)
}

func (t *txnRun) onEvent(tp *txnProducerProc, ev kclient.TxnEvent) {
	h := t.h
	rec := tp.cur
	switch ev.Kind {
	case kclient.TxnInitialized:
		h.s.Trace(fmt.Sprintf("txn:init %s pid=%d epoch=%d", tp.name, ev.ProducerID, ev.Epoch))
	case kclient.TxnProduced:
		rec.offsets[ev.Write] = ev.Offset
		rec.pid = ev.ProducerID
		if rec.outcome == txnCommitted {
			t.checkCommitted(rec)
		}
		t.deliverStale(tp, rec)
	case kclient.TxnEndSent:
		if ev.Commit {
			rec.commitSent = true
		}
		tp.ending = staleEnd{rec: rec, pid: ev.ProducerID, epoch: ev.Epoch, commit: ev.Commit, coordinator: ev.Coordinator}
		t.strikeCoordinator(tp, ev)
	case kclient.TxnEnded:
		tp.cur = nil
		if tp.ending.rec == rec {
			tp.stale = tp.ending
		}
		if ev.Commit {
			t.decide(rec, txnCommitted)
		} else {
			t.decide(rec, txnAborted)
		}
	case kclient.TxnOutOfOrder:
		t.fail(fmt.Errorf("(w) produce order: %s, transaction %s (producer %d epoch %d): %v", tp.name, rec.key, ev.ProducerID, ev.Epoch, ev.Err))
	case kclient.TxnFenced:
		t.fenced++
		h.s.Trace(fmt.Sprintf("txn:fenced %s err=%v", tp.name, ev.Err))
		t.abandon(tp)
	}
	if tp.etl != nil {
		t.etlEvent(tp.etl, ev, rec)
	}
}

// crash crashes tp's process and starts it again after down.
func (t *txnRun) crash(tp *txnProducerProc, down time.Duration) {
	tp.up = false
	tp.proc.Crash()
	t.abandon(tp)
	t.h.s.After(down, "txn:restart", func() { tp.proc.Start() })
}

// abandon ends the producer's current transaction without an answer.
func (t *txnRun) abandon(tp *txnProducerProc) {
	if rec := tp.cur; rec != nil {
		tp.cur = nil
		if rec.commitSent {
			t.decide(rec, txnUnknown)
		} else {
			t.decide(rec, txnAborted)
		}
	}
	if tp.etl != nil {
		tp.etl.rewind()
	}
}

func (t *txnRun) decide(rec *txnRecord, o txnOutcome) {
	rec.outcome = o
	t.h.s.Trace(fmt.Sprintf("txn:%s %s", o, rec.key))
	switch o {
	case txnCommitted:
		t.committed++
		rec.ackedAt = t.h.s.Now()
		for _, w := range rec.writes {
			if tp := writeTP(w); !slices.Contains(t.committedOn[tp], rec) {
				t.committedOn[tp] = append(t.committedOn[tp], rec)
			}
		}
		t.checkCommitted(rec)
	case txnAborted:
		t.aborted++
		t.checkAborted(rec)
	case txnUnknown:
		t.unknown++
	}
}

// checkAborted is (p) at the decision: no reader delivered a record of
// rec (a read of it before the decision is caught at the read already,
// unless the commit was sent; an aborted one never was).
func (t *txnRun) checkAborted(rec *txnRecord) {
	for _, w := range rec.writes {
		for _, v := range w.Values {
			if pl, ok := t.where[string(v)]; ok {
				t.fail(fmt.Errorf("(p) aborted read: %v holds %q, of transaction %s, which aborted (no commit was sent)", pl, v, rec.key))
			}
		}
	}
}

// checkCommitted is (n) at the decision (or once an offset is known): a
// read_committed reader that passed a committed record's offset delivered
// it.
func (t *txnRun) checkCommitted(rec *txnRecord) {
	for _, rd := range t.readers {
		t.checkReaderHas(rd, rec)
	}
	if t.final != nil {
		t.checkReaderHas(t.final, rec)
	}
}

func (t *txnRun) checkReaderHas(rd *txnReader, rec *txnRecord) {
	for i, w := range rec.writes {
		off := rec.offsets[i]
		st := rd.parts[writeTP(w)]
		if off < 0 || st == nil || off < st.start || st.pos <= off+int64(len(w.Values)-1) || st.sentAfter < rec.ackedAt {
			continue
		}
		for j, v := range w.Values {
			if st.delivered[off+int64(j)] != string(v) {
				t.fail(fmt.Errorf("(n) lost write: read_committed reader %s passed %s-%d offset %d (at %d) without delivering %q of transaction %s, committed at %v (it delivered %q there)",
					rd.name, w.Topic, w.Partition, off+int64(j), st.pos, v, rec.key, rec.ackedAt, st.delivered[off+int64(j)]))
			}
		}
	}
}

// strikeCoordinator strikes the coordinator an EndTxn goes to, in the
// seeds that strike, now and then.
func (t *txnRun) strikeCoordinator(tp *txnProducerProc, ev kclient.TxnEvent) {
	h, st := t.h, &t.strikes
	target, ok := h.coordinatorStrike(st, txnStrikeOneIn, ev.Coordinator)
	if !ok {
		return
	}
	h.strike(st, target, "coordinator-strike", fmt.Sprintf("%s, %s's transaction coordinator, while its EndTxn (commit=%v) is in flight", h.names[target], tp.tid, ev.Commit))
}

// scheduleCrash crashes a producer process every so often in the fault
// phase and starts it again a little later (a new incarnation with the
// same transactional id).
func (t *txnRun) scheduleCrash() {
	h := t.h
	gap := drawBetween(t.r, txnCrashGapMin, txnCrashGapMax)
	h.s.After(gap, "txn:crash", func() {
		if h.phase != logFaults {
			return
		}
		all := t.producers
		for _, w := range t.etl.workers {
			all = append(slices.Clip(all), &w.txnProducerProc)
		}
		tp := all[t.r.IntN(len(all))]
		if tp.up {
			t.crashes++
			h.s.Fault("txn-producer", "crash "+tp.name)
			t.crash(tp, time.Duration(t.r.Int64N(int64(txnCrashDownMax))))
		}
		t.scheduleCrash()
	})
}

func (t *txnRun) startReader(name string, final bool) *txnReader {
	h := t.h
	rd := &txnReader{name: name, final: final, parts: map[kclient.TopicPartition]*txnReadState{}}
	rd.proc = h.s.AddProcess(name, func(e env.Env) {
		rd.e = e
		c := kclient.New(e, kclient.Config{ClientID: name, Bootstrap: h.bootstrap()})
		rd.cn = kclient.NewConsumer(c, kclient.ConsumerConfig{Topics: []string{txnTopic, etlTopic}, ReadCommitted: true, MaxWait: 100 * time.Millisecond,
			OnFetch: func(ev kclient.FetchEvent) { t.onFetch(rd, ev) }})
	})
	h.clients = append(h.clients, rd.proc)
	rd.proc.Start()
	return rd
}

// onFetch checks a read_committed answer: (r), (p), (o), then (n) for
// the committed transactions whose records it passed.
func (t *txnRun) onFetch(rd *txnReader, ev kclient.FetchEvent) {
	if ev.Topic != txnTopic && ev.Topic != etlTopic {
		return
	}
	tp := kclient.TopicPartition{Topic: ev.Topic, Partition: ev.Partition}
	st := rd.parts[tp]
	switch ev.Kind {
	case kclient.Reset:
		rd.parts[tp] = &txnReadState{session: ev.Session, start: ev.Offset, pos: ev.Offset, hw: -1, lso: -1, delivered: map[int64]string{}}
		return
	case kclient.Records:
	default:
		return
	}
	if st == nil || st.session != ev.Session {
		return
	}
	t.reads++
	t.skipped += ev.Skipped
	recs := ev.Records
	if t.h.bugs.txn.dropCommitted && len(recs) >= 2 {
		recs = recs[1:]
	}
	if t.h.bugs.txn.repeatRecord && len(recs) >= 1 && recs[len(recs)-1].Offset+1 < ev.LastStableOffset {
		extra := recs[0]
		extra.Offset = recs[len(recs)-1].Offset + 1
		recs = append(slices.Clone(recs), extra)
	}
	for _, r := range recs {
		v := string(r.Value)
		if r.Offset >= ev.LastStableOffset {
			t.fail(fmt.Errorf("(r) last stable offset: read_committed reader %s got %s-%d offset %d (%q) in an answer whose last stable offset is %d",
				rd.name, ev.Topic, ev.Partition, r.Offset, v, ev.LastStableOffset))
		}
		key, _, _ := strings.Cut(v, "/")
		rec := t.txns[key]
		switch {
		case rec == nil:
			t.fail(fmt.Errorf("(p) aborted read: read_committed reader %s got %q at %s-%d offset %d, never produced", rd.name, v, ev.Topic, ev.Partition, r.Offset))
		case !rec.commitSent:
			t.fail(fmt.Errorf("(p) aborted read: read_committed reader %s got %q at %s-%d offset %d, of transaction %s (%s) whose commit was never sent",
				rd.name, v, ev.Topic, ev.Partition, r.Offset, key, rec.outcome))
		}
		pl := txnPlace{ev.Topic, ev.Partition, r.Offset}
		if prev, ok := t.where[v]; ok && prev != pl {
			t.fail(fmt.Errorf("(o) duplicate: %q of transaction %s read at %v and at %v", v, key, prev, pl))
		}
		t.where[v] = pl
		st.delivered[r.Offset] = v
		st.pos = r.Offset + 1
	}
	// The consumer's position is past the aborted batches and markers it
	// skipped too.
	for _, m := range ev.Markers {
		if n := len(st.markers); n == 0 || st.markers[n-1].Offset < m.Offset {
			st.markers = append(st.markers, m)
		}
	}
	if pos, _ := rd.cn.Position(ev.Topic, ev.Partition); pos > st.pos {
		st.pos = pos
	}
	// The fetch was sent ev.Sent on the reader's monotonic clock: in
	// virtual time, now less the time since.
	now := t.h.s.Now()
	st.hw, st.lso, st.sentAfter = ev.HighWatermark, ev.LastStableOffset, now-(rd.e.Monotonic()-ev.Sent)
	for _, rec := range t.committedOn[tp] {
		t.checkReaderHas(rd, rec)
	}
}

// heal stops new transactions: each producer ends the one it runs.
func (t *txnRun) heal() { t.healed = true }

// settle is (s) and the final checks (n), (q): it reports true once
// every producer is idle, the final reader has reached every partition's
// high watermark with the last stable offset there, and the final read
// passed the checks.
func (t *txnRun) settle() bool {
	if !t.created {
		t.why = "the txn topic was never created"
		return false
	}
	for _, tp := range t.producers {
		if tp.cur != nil {
			t.why = fmt.Sprintf("%s still runs transaction %s", tp.name, tp.cur.key)
			return false
		}
	}
	if t.final == nil {
		t.final = t.startReader("tfinal", true)
		t.why = "the final read_committed reader starts"
		return false
	}
	for _, tp := range txnReadPartitions() {
		st := t.final.parts[tp]
		switch {
		case st == nil:
			t.why = fmt.Sprintf("the final reader has not started %s-%d", tp.Topic, tp.Partition)
			return false
		case st.lso != st.hw || st.hw < 0:
			t.why = fmt.Sprintf("%s-%d: last stable offset %d, high watermark %d (a transaction is open or prepared)", tp.Topic, tp.Partition, st.lso, st.hw)
			return false
		case st.pos < st.hw:
			t.why = fmt.Sprintf("%s-%d: the final reader is at %d, the high watermark at %d", tp.Topic, tp.Partition, st.pos, st.hw)
			return false
		}
	}
	if !t.etlSettled() {
		return false
	}
	if !t.noneOpen() {
		return false
	}
	if !t.etlOffsetsFetched() {
		return false
	}
	// At once: the run ends with this phase, before any event scheduled
	// now would run. Outside an event, so the failure is recorded, not
	// raised (h.fail panics, which only an event's recovery catches).
	if err := t.finalCheck(); err != nil && t.h.err == nil {
		t.h.err = err
	}
	return true
}

// noneOpen is the last part of (s): every broker's ListTransactions,
// sent after the final read caught up, names no transaction Ongoing or
// in a Prepare state. It asks again until every answer is empty.
func (t *txnRun) noneOpen() bool {
	if t.listed == len(t.h.procs) {
		return true
	}
	if t.listing {
		return false
	}
	t.listing, t.listed = true, 0
	answered := 0
	open := ""
	for i := range t.h.procs {
		node := int32(i + 1)
		t.h.s.At(t.h.s.Now(), "txn:list-transactions", func() {
			req := kmsg.NewPtrListTransactionsRequest()
			req.StateFilters = []string{"Ongoing", "PrepareCommit", "PrepareAbort"}
			t.checker.Do(node, req, 0, func(r kmsg.Response, err error) {
				resp, ok := r.(*kmsg.ListTransactionsResponse)
				switch {
				case err != nil || !ok:
					open += fmt.Sprintf(" n%d: %v", node, err)
				case resp.ErrorCode != 0:
					open += fmt.Sprintf(" n%d: error code %d", node, resp.ErrorCode)
				default:
					for _, ts := range resp.TransactionStates {
						open += fmt.Sprintf(" n%d: %s %s", node, ts.TransactionalID, ts.TransactionState)
					}
				}
				if answered++; answered < len(t.h.procs) {
					return
				}
				t.listing = false
				if open == "" {
					t.listed = len(t.h.procs)
					return
				}
				t.why = "ListTransactions after the final read:" + open
			})
		})
	}
	t.why = "ListTransactions sent"
	return false
}

// finalCheck is (n) and (q) on the final read.
func (t *txnRun) finalCheck() error {
	read := map[kclient.TopicPartition]map[string]bool{}
	for _, tp := range txnReadPartitions() {
		got := map[string]bool{}
		for _, v := range t.final.parts[tp].delivered { //determinism:unordered builds a set of the values read
			got[v] = true
		}
		read[tp] = got
	}
	for _, rec := range t.order {
		var have, lack []string
		for _, w := range rec.writes {
			got := read[writeTP(w)]
			for _, v := range w.Values {
				if got[string(v)] {
					have = append(have, string(v))
				} else {
					lack = append(lack, string(v))
				}
			}
		}
		switch {
		case rec.outcome == txnCommitted && len(lack) > 0:
			return fmt.Errorf("(n) lost write: the final read_committed read lacks %v of transaction %s, committed at %v", lack, rec.key, rec.ackedAt)
		case len(have) > 0 && len(lack) > 0:
			return fmt.Errorf("(q) atomic visibility: the final read_committed read has %v of transaction %s (%s) but not %v", have, rec.key, rec.outcome, lack)
		case rec.outcome == txnAborted && len(have) > 0:
			return fmt.Errorf("(p) aborted read: the final read_committed read has %v of transaction %s, aborted", have, rec.key)
		}
	}
	if err := t.etlCheck(); err != nil {
		return err
	}
	if err := t.graphCheck(); err != nil {
		return err
	}
	t.h.s.Trace("txn:final-check ok " + t.summary())
	return nil
}

// txnKeys lists the run's transactions, for tests.
func (t *txnRun) txnKeys() []string {
	out := make([]string, 0, len(t.order))
	for _, r := range t.order {
		out = append(out, r.key)
	}
	slices.Sort(out)
	return out
}
