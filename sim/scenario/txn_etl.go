package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/sim/kclient"
)

// The txn scenario's consume-transform-produce workers (ETL, issue 13):
// each owns some partitions of the txn topic (its input) under its own
// transactional id, the pre-KIP-447 model of one transactional id per
// set of input partitions. An incarnation initializes its producer
// (fencing the one before), asks the group's coordinator for the
// committed offsets with require_stable (UNSTABLE_OFFSET_COMMIT while a
// transactional commit of them is pending: it asks again), reads its
// partitions read_committed from there, and runs transactions that
// write one transformed record to the txn-out topic per input record
// taken and commit the input offsets past them for group etl
// (AddOffsetsToTxn, TxnOffsetCommit), then EndTxn. An abort, a fence or
// a crash rewinds it: it reads again from the committed offsets. Its
// consumer is also a read_committed reader of the txn checks ((n)–(r)).
// It keeps running after the heal until it has committed past the last
// record of its input.
//
// (t) ETL exactly-once: after the heal, the final read_committed read of
// txn-out holds, for every record of the input below the group's
// committed offset of its partition, exactly one transform, made from
// the record read there, and no transform of a record at or past it.

// ETL bounds.
const (
	etlTopic = "txn-out"
	// etlPartitions is txn-out's partition count: more than the
	// brokers, so that one leads two of them and a pipelined request
	// (kclient's TxnProducerConfig.Pipelined) carries batches of both.
	etlPartitions = 4
	// etlBatchRecords bounds the records of one batch of an ETL
	// transaction.
	etlBatchRecords = 3
	etlGroup        = "etl"
	etlWorkers      = 2
	// etlMaxTake bounds the input records one ETL transaction takes in
	// the fault phase, etlHealedTake after the heal (to catch up).
	etlMaxTake    = 8
	etlHealedTake = 40
	// etlAbortOneIn: one ETL transaction in this many aborts.
	etlAbortOneIn = 8
	etlGapMin     = 50 * time.Millisecond
	etlGapMax     = 200 * time.Millisecond
	// etlFenceRestart is how long a fenced worker's process waits
	// before it starts again.
	etlFenceRestart = 200 * time.Millisecond
	// txnOffsetsPartitions is offsets.topic.num.partitions in the txn
	// scenario and txnOffsetsMinInsync the min.insync.replicas of
	// __consumer_offsets there (docs/architecture.md says why).
	txnOffsetsPartitions = 2
	txnOffsetsMinInsync  = 2
)

// etlIn is one input record an ETL worker read.
type etlIn struct {
	partition int32
	offset    int64
	value     string
}

// etlTxn is what an ETL transaction took and commits.
type etlTxn struct {
	worker  *etlWorker
	inputs  []etlIn
	offsets []kclient.TxnOffset
}

// etlWorker is one ETL worker process.
type etlWorker struct {
	txnProducerProc
	parts []int32 // its input partitions of txnTopic, sorted
	c     *kclient.Client
	rd    *txnReader
	// assigned: the committed offsets are known and the consumer reads
	// from them; fetching: an OffsetFetch is out.
	assigned, fetching bool
	// buf: records read and not taken yet, in read order per partition.
	buf []etlIn
	// committed is the offset per part the worker knows committed.
	committed []int64
}

// etlRun is the ETL part of a txn run.
type etlRun struct {
	workers []*etlWorker
	// source names, per output value, the input record it transforms.
	source map[string]etlIn
	// final is the group's committed offset per txn partition after the
	// heal (nil until fetched); fetching: the OffsetFetch is out.
	final    []int64
	fetching bool
	// counters for the summary and the tests.
	committed, aborted, rewinds, restarts int
}

func (t *txnRun) newEtl() {
	t.etl.source = map[string]etlIn{}
	for i := 0; i < etlWorkers; i++ {
		w := &etlWorker{txnProducerProc: txnProducerProc{name: fmt.Sprintf("etl%d", i+1), tid: fmt.Sprintf("etl-%d", i+1)}}
		w.etl = w
		for p := int32(0); p < txnPartitions; p++ {
			if int(p)%etlWorkers == i {
				w.parts = append(w.parts, p)
			}
		}
		t.etl.workers = append(t.etl.workers, w)
	}
}

// startEtl adds and starts w's process.
func (t *txnRun) startEtl(w *etlWorker) {
	h := t.h
	w.rd = &txnReader{name: w.name, parts: map[kclient.TopicPartition]*txnReadState{}}
	t.readers = append(t.readers, w.rd)
	w.proc = h.s.AddProcess(w.name, func(e env.Env) {
		w.restart(e)
		w.assigned, w.fetching, w.buf = false, false, nil
		w.c = t.newClient(e, w.name)
		w.rd.e = e
		w.rd.parts = map[kclient.TopicPartition]*txnReadState{}
		w.rd.cn = kclient.NewConsumer(w.c, kclient.ConsumerConfig{Topics: []string{txnTopic}, Manual: true, ReadCommitted: true,
			MaxWait: 100 * time.Millisecond, OnFetch: func(ev kclient.FetchEvent) { t.etlFetch(w, ev) }})
		w.p = t.newProducer(w.c, &w.txnProducerProc, true)
		t.etlTick(w)
	})
	h.clients = append(h.clients, w.proc)
	w.proc.Start()
}

func (t *txnRun) etlTick(w *etlWorker) {
	inc := w.inc
	gap := drawBetween(t.r, etlGapMin, etlGapMax)
	w.e.AfterFunc(gap, func() {
		if w.inc != inc || !w.up {
			return
		}
		switch {
		case !w.p.Ready():
		case !w.assigned:
			t.etlFetchOffsets(w)
		case len(w.buf) > 0:
			t.etlBegin(w)
		}
		t.etlTick(w)
	})
}

// etlPartitionOf is the txn-out partition of in's transform: FNV-1a of
// its value, as a key partitioner spreads keys, so that a transaction's
// batches go to the partitions in no fixed order.
func etlPartitionOf(in etlIn) int32 {
	h := uint32(2166136261)
	for i := 0; i < len(in.value); i++ {
		h = (h ^ uint32(in.value[i])) * 16777619
	}
	return int32(h % etlPartitions)
}

// etlFetchOffsets asks for the committed offsets of w's partitions and
// assigns them to its consumer from there.
func (t *txnRun) etlFetchOffsets(w *etlWorker) {
	if w.fetching {
		return
	}
	w.fetching = true
	inc := w.inc
	parts := make([]kclient.TopicPartition, len(w.parts))
	for i, p := range w.parts {
		parts[i] = kclient.TopicPartition{Topic: txnTopic, Partition: p}
	}
	kclient.FetchStableOffsets(w.c, etlGroup, parts, func(offsets []int64, err error) {
		if w.inc != inc || !w.up {
			return
		}
		w.fetching = false
		if err != nil || w.assigned {
			return // asked again at a later tick
		}
		w.assigned, w.buf, w.committed = true, nil, offsets
		t.h.s.Trace(fmt.Sprintf("txn:etl-start %s offsets=%v", w.name, offsets))
		for i, p := range w.parts {
			w.rd.cn.Assign(txnTopic, p, offsets[i])
		}
	})
}

// etlFetch is an answer of w's consumer: the reader checks, then the
// records join the buffer.
func (t *txnRun) etlFetch(w *etlWorker, ev kclient.FetchEvent) {
	t.onFetch(w.rd, ev)
	if ev.Kind != kclient.Records || !w.assigned {
		return
	}
	st := w.rd.parts[kclient.TopicPartition{Topic: ev.Topic, Partition: ev.Partition}]
	if st == nil || st.session != ev.Session {
		return
	}
	for _, r := range ev.Records {
		w.buf = append(w.buf, etlIn{partition: ev.Partition, offset: r.Offset, value: string(r.Value)})
	}
}

// etlBegin starts a transaction over the first records of the buffer.
func (t *txnRun) etlBegin(w *etlWorker) {
	w.n++
	n := 1 + t.r.IntN(etlMaxTake)
	if t.healed {
		n = etlHealedTake
	}
	take := w.buf[:min(len(w.buf), n)]
	w.buf = slices.Clone(w.buf[len(take):])
	rec := &txnRecord{key: fmt.Sprintf("%s#%d.%d", w.name, w.inc, w.n), etl: &etlTxn{worker: w, inputs: take}}
	// The transforms in the order they are made, each to the partition
	// of its input's hash (kgo's key partitioner); consecutive ones to a
	// partition share a batch of up to etlBatchRecords.
	made := make([]int, etlPartitions) // transforms per output partition
	for _, in := range take {
		q := etlPartitionOf(in)
		v := fmt.Sprintf("%s/%d/%d", rec.key, q, made[q])
		made[q]++
		t.etl.source[v] = in
		if n := len(rec.writes); n > 0 && rec.writes[n-1].Partition == q && len(rec.writes[n-1].Values) < etlBatchRecords {
			rec.writes[n-1].Values = append(rec.writes[n-1].Values, []byte(v))
			continue
		}
		rec.writes = append(rec.writes, kclient.TxnWrite{Topic: etlTopic, Partition: q, Values: [][]byte{[]byte(v)}})
		rec.offsets = append(rec.offsets, -1)
	}
	for _, p := range w.parts {
		last := int64(-1)
		for _, in := range take {
			if in.partition == p {
				last = in.offset
			}
		}
		if last >= 0 {
			rec.etl.offsets = append(rec.etl.offsets, kclient.TxnOffset{Topic: txnTopic, Partition: p, Offset: last + 1})
		}
	}
	commit := t.r.IntN(etlAbortOneIn) != 0
	t.txns[rec.key] = rec
	t.order = append(t.order, rec)
	w.cur = rec
	t.h.s.Trace(fmt.Sprintf("txn:begin %s inputs=%d offsets=%v commit=%v", rec.key, len(take), rec.etl.offsets, commit))
	w.p.BeginWithOffsets(w.n, rec.writes, &kclient.TxnOffsets{Group: etlGroup, Offsets: rec.etl.offsets}, commit)
}

// etlEvent follows w's transactions after the common handling.
func (t *txnRun) etlEvent(w *etlWorker, ev kclient.TxnEvent, rec *txnRecord) {
	switch ev.Kind {
	case kclient.TxnEnded:
		if !ev.Commit {
			t.etl.aborted++
			w.rewind()
			t.etl.rewinds++
			return
		}
		t.etl.committed++
		for _, o := range rec.etl.offsets {
			if i := slices.Index(w.parts, o.Partition); i >= 0 && i < len(w.committed) {
				w.committed[i] = o.Offset
			}
		}
	case kclient.TxnFenced:
		// The incarnation is over: a new one starts from the committed
		// offsets.
		inc := w.inc
		t.h.s.After(0, "txn:etl-fenced", func() {
			if w.up && w.inc == inc {
				t.etl.restarts++
				t.crash(&w.txnProducerProc, etlFenceRestart)
			}
		})
	}
}

// rewind drops what w read past its committed offsets: it asks for them
// again and reads from there.
func (w *etlWorker) rewind() {
	w.assigned, w.buf = false, nil
	if w.rd != nil && w.rd.cn != nil && w.up {
		w.rd.cn.Unassign()
	}
}

// etlSettled is the ETL part of (s): every worker is up and idle and has
// committed past the last record of its input in the final read.
func (t *txnRun) etlSettled() bool {
	for _, w := range t.etl.workers {
		switch {
		case !w.up || !w.assigned:
			t.why = fmt.Sprintf("%s has not started reading", w.name)
			return false
		case w.cur != nil:
			t.why = fmt.Sprintf("%s still runs transaction %s", w.name, w.cur.key)
			return false
		case len(w.buf) > 0:
			t.why = fmt.Sprintf("%s has %d records to transform", w.name, len(w.buf))
			return false
		}
		for i, p := range w.parts {
			end := t.finalLastRecord(txnTopic, p) + 1
			if max(w.committed[i], 0) < end {
				t.why = fmt.Sprintf("%s committed %s-%d up to %d, its last record is at %d", w.name, txnTopic, p, w.committed[i], end-1)
				return false
			}
		}
	}
	return true
}

// finalLastRecord is the offset of the last record the final reader
// delivered on the partition, -1 for none.
func (t *txnRun) finalLastRecord(topic string, p int32) int64 {
	st := t.final.parts[kclient.TopicPartition{Topic: topic, Partition: p}]
	last := int64(-1)
	for off := range st.delivered { //determinism:unordered a maximum
		last = max(last, off)
	}
	return last
}

// etlOffsetsFetched asks the group's coordinator for the committed
// offsets once the run settled, for (t); it reports whether they came.
func (t *txnRun) etlOffsetsFetched() bool {
	if t.etl.final != nil {
		return true
	}
	if !t.etl.fetching {
		t.etl.fetching = true
		parts := make([]kclient.TopicPartition, txnPartitions)
		for p := range parts {
			parts[p] = kclient.TopicPartition{Topic: txnTopic, Partition: int32(p)}
		}
		kclient.FetchStableOffsets(t.checker, etlGroup, parts, func(offsets []int64, err error) {
			t.etl.fetching = false
			if err != nil {
				t.why = "the final OffsetFetch of group " + etlGroup + ": " + err.Error()
				return
			}
			t.etl.final = offsets
		})
	}
	t.why = "the final OffsetFetch of group " + etlGroup + " is out"
	return false
}

// etlCheck is (t) on the final read.
func (t *txnRun) etlCheck() error {
	// made[place]: the output values that transform the input record
	// there.
	made := map[txnPlace][]string{}
	for q := int32(0); q < etlPartitions; q++ {
		st := t.final.parts[kclient.TopicPartition{Topic: etlTopic, Partition: q}]
		for _, off := range slices.Sorted(maps.Keys(st.delivered)) {
			v := st.delivered[off]
			in, ok := t.etl.source[v]
			if !ok {
				continue // a producer's record
			}
			pl := txnPlace{txnTopic, in.partition, in.offset}
			made[pl] = append(made[pl], fmt.Sprintf("%q at %s-%d offset %d", v, etlTopic, q, off))
			have := t.final.parts[kclient.TopicPartition{Topic: txnTopic, Partition: in.partition}].delivered[in.offset]
			switch {
			case in.offset >= t.etl.final[in.partition]:
				return fmt.Errorf("(t) ETL exactly-once: %s transforms %v, at or past group %s's committed offset %d there (its offsets were not committed with it)",
					made[pl][len(made[pl])-1], pl, etlGroup, t.etl.final[in.partition])
			case have != in.value:
				return fmt.Errorf("(t) ETL exactly-once: %s transforms %q read at %v, where the final read has %q", made[pl][len(made[pl])-1], in.value, pl, have)
			}
		}
	}
	for p := int32(0); p < txnPartitions; p++ {
		st := t.final.parts[kclient.TopicPartition{Topic: txnTopic, Partition: p}]
		for _, off := range slices.Sorted(maps.Keys(st.delivered)) {
			if off >= t.etl.final[p] {
				break
			}
			pl := txnPlace{txnTopic, p, off}
			switch n := len(made[pl]); {
			case n == 0:
				return fmt.Errorf("(t) ETL exactly-once: %q at %v, below group %s's committed offset %d, has no transform in %s", st.delivered[off], pl, etlGroup, t.etl.final[p], etlTopic)
			case n > 1:
				return fmt.Errorf("(t) ETL exactly-once: %q at %v is transformed %d times: %s", st.delivered[off], pl, n, strings.Join(made[pl], ", "))
			}
		}
	}
	t.h.s.Trace(fmt.Sprintf("txn:etl-check ok committed=%v", t.etl.final))
	return nil
}
