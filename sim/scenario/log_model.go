package scenario

import (
	"fmt"
	"io"
	"time"

	"github.com/strata-log/strata/linearizability"
	"github.com/strata-log/strata/sim/kclient"
)

// The log and replicated scenarios' porcupine check (h): every produce and
// every fetch of the run, recorded as operations of
// linearizability.PartitionLogModel (a partition is an append-only log)
// against virtual time, and checked with linearizability.CheckLog once
// the run is over. LogHistory checks (a)–(e) record by record as answers
// arrive; the model checks the same answers as one history in real time:
// a record read before an append that could not precede it was
// acknowledged, a fetch that found nothing at an offset after a record
// there was committed (log), an offset read with two values across
// clients.

// logModelLimits bounds the history CheckLog searches: its operations (a
// busy seed records about 25,000: every record appended, and read by each
// tail consumer and the final reader, one operation each before CheckLog
// folds a fetch's records into one read) and the model steps of each
// partition's search (linearizability.DefaultMaxLogSteps). Past either
// the check gives no verdict, which the trace records; it is never
// truncated, so that a verdict always covers a whole run.
var logModelLimits = linearizability.Limits{MaxOperations: 200_000}

// logModel records the run's operations.
type logModel struct {
	ops linearizability.LogOps
	// clients numbers each (process, partition) pair, porcupine's rows.
	clients map[logModelClient]int
	// builds are the builds whose records were appended, by build name,
	// and in order of their first send (order is what finish walks).
	builds map[string]*logModelBuild
	order  []*logModelBuild
	// finished: finish ran; result is CheckLog's verdict, checked its
	// error (a history too large), both set by check.
	finished bool
	checked  bool
	result   linearizability.Result
	err      error
}

type logModelClient struct {
	process   string
	partition linearizability.LogPartition
}

// logModelBuild is one build of a batch: its records' append operations
// and what its sends told.
type logModelBuild struct {
	ids []linearizability.OpID
	// acked: the records' offsets are known (Appended).
	acked bool
	// maybeWritten: a send reached the broker, or may have (an answer
	// with an error, a timeout, a lost connection, acks=0).
	maybeWritten bool
	// rejected: the last send that reached the broker was answered with
	// an error (a definite answer that still leaves the outcome open:
	// NOT_ENOUGH_REPLICAS_AFTER_APPEND, a request timeout at the broker).
	rejected bool
}

func newLogModel() *logModel {
	return &logModel{clients: map[logModelClient]int{}, builds: map[string]*logModelBuild{}}
}

func (m *logModel) client(process string, p linearizability.LogPartition) int {
	k := logModelClient{process, p}
	id, ok := m.clients[k]
	if !ok {
		id = len(m.clients)
		m.clients[k] = id
	}
	return id
}

// built records a build's records as appends called at now: a build is
// made right before its first send.
func (m *logModel) built(process string, p linearizability.LogPartition, build string, values []string, now time.Duration) {
	b := &logModelBuild{}
	c := m.client(process, p)
	for _, v := range values {
		b.ids = append(b.ids, m.ops.Append(c, p, v, now))
	}
	m.builds[build] = b
	m.order = append(m.order, b)
}

// sent records one send's outcome. counts says whether an acknowledgement
// is an observation of the committed log (not an acks=1 answer with
// replicas: the leader alone had the batch).
func (m *logModel) sent(build string, kind kclient.ProduceEventKind, base int64, counts bool, now time.Duration) {
	b, ok := m.builds[build]
	if !ok || b.acked {
		return
	}
	switch kind {
	case kclient.Acked:
		b.maybeWritten, b.rejected = true, false
		if !counts {
			return
		}
		b.acked = true
		for i, id := range b.ids {
			m.ops.Appended(id, base+int64(i), now)
		}
	case kclient.Rejected:
		b.maybeWritten, b.rejected = true, true
	case kclient.Unknown, kclient.Fired:
		b.maybeWritten, b.rejected = true, false
	}
}

// fetched records the records a consumer read of p from offset, between
// call and ret. A fetch that found nothing is left out: "nothing yet at
// offset" is an observation of the committed log only where a reader's
// high watermark never goes back (with replicas a new leader's lags until
// its followers fetch, as in Kafka), and even in the log scenario it made
// porcupine's search exponential: an empty read concurrent with many
// acks=0 appends of unknown outcome (log seed 2: 10 empty reads among
// 3,278 operations, 2,034 of them unknown, and no verdict within 14 GB)
// had to be placed against every order of them. LogHistory's (a) checks
// that a reader's high watermark never goes back.
func (m *logModel) fetched(process string, p linearizability.LogPartition, offset int64, call, ret time.Duration, recs []linearizability.LogRecord) {
	if len(recs) == 0 {
		return
	}
	m.ops.Fetched(m.client(process, p), p, offset, min(call, ret), ret, recs)
}

// finish gives every append without an acknowledgement its outcome: none
// if no send of its build reached a broker (discarded), failed if the last
// that did was answered with an error, timed out otherwise (a timeout, a
// lost connection, acks=0, acks=1 with replicas, or still pending).
func (m *logModel) finish() {
	if m.finished {
		return
	}
	m.finished = true
	for _, b := range m.order {
		if b.acked {
			continue
		}
		for _, id := range b.ids {
			switch {
			case !b.maybeWritten:
				m.ops.Discard(id)
			case b.rejected:
				m.ops.Fail(id)
			default:
				m.ops.Timeout(id)
			}
		}
	}
}

// check runs CheckLog once and returns the violation of (h), nil if the
// history is linearizable or beyond logModelLimits (the trace says so).
func (m *logModel) check(trace func(string), now time.Duration) error {
	if !m.checked {
		m.finish()
		m.checked = true
		m.result, m.err = linearizability.CheckLog(&m.ops, logModelLimits)
		trace(fmt.Sprintf("log:model %v err=%v", m.result, m.err))
	}
	if m.err != nil || m.result.Ok {
		return nil
	}
	return fmt.Errorf("(h) linearizable: at %v: the produces and fetches are not linearizable as an append-only log per partition (porcupine's PartitionLogModel): %v", now, m.result)
}

// visualize writes porcupine's HTML view of the history: the failing
// check's partial linearizations, or the linearization of a history that
// passed (a run that failed another check).
func (m *logModel) visualize(w io.Writer) error {
	m.finish()
	if m.checked && m.err == nil && !m.result.Ok {
		return linearizability.Visualize(w, m.result)
	}
	return linearizability.VisualizeLog(w, &m.ops, logModelLimits)
}
