package linearizability

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// LogHistory records a produce/consume workload against Kafka-style
// partitions and checks it as it goes: every produce attempt and its
// outcome, every record a consumer reads and every high watermark it is
// told. Each observation is checked when it is recorded, so a violation
// is reported at the transition that shows it, with the virtual time.
//
// Record values must be unique per produce build (the producer, the
// batch, its build and the record's index in it): a value then names one
// record anyone may write, and the checks follow:
//
//   - (a) durability: every record acknowledged with acks=1 or all is read
//     at its acknowledged offset by the final read of its partition
//     (CheckDurable), and what a reader was told is committed stays
//     committed: a partition's high watermark never goes back for a
//     reader, and a fetch at a position the reader reached is never out
//     of range;
//   - (b) one record per offset: no offset is ever seen with two values,
//     across every read and every acknowledgement;
//   - (c) no phantom records: every value read was produced to its
//     partition (recorded by Produced before any send of it);
//   - (d) no duplicates: no value is ever seen at two offsets, so no batch
//     was written twice (a retry of the same bytes is deduplicated by the
//     broker; a producer that rebuilds a batch uses new values);
//   - (e) order: within a reader's session of a partition, the offsets
//     read start at the session's start offset and follow each other
//     one by one (the partitions checked are neither compacted nor
//     transactional, so offsets are dense).
//
// The checks of one record run in the order (e), (b), (d), (c), so a
// record that breaks several is reported under the first.
//
// Every observation is also kept as it was recorded, before it is
// checked, so that [LogHistory.Anomalies] can analyse the whole history
// after a check failed.
//
// A LogHistory is bounded by its workload; Records and Attempts say how
// much it holds.
type LogHistory struct {
	parts []*logPart // sorted by partition
	// values maps every produced value to where it was produced.
	values   map[string]*logValue
	attempts []LogAttempt
	now      func() time.Duration
	// seq numbers observations in the order they were recorded; built
	// holds the number of each build's Produced.
	seq   int
	built map[logBuild]int
}

// logBuild names a build of a batch for one partition.
type logBuild struct {
	part  LogPartition
	build string
}

// LogPartition names a partition.
type LogPartition struct {
	Topic     string
	Partition int32
}

func (p LogPartition) String() string { return fmt.Sprintf("%s-%d", p.Topic, p.Partition) }

func (p LogPartition) compare(q LogPartition) int {
	return cmp.Or(strings.Compare(p.Topic, q.Topic), cmp.Compare(p.Partition, q.Partition))
}

// LogRecord is one record read or acknowledged at an offset.
type LogRecord struct {
	Offset int64
	Value  string
}

// LogOutcome is how a produce attempt ended.
type LogOutcome uint8

const (
	// LogAcked: acknowledged at an offset (acks=1 or all).
	LogAcked LogOutcome = iota + 1
	// LogRejected: the broker answered with an error.
	LogRejected
	// LogUnknown: sent, and no answer came (timeout, lost connection, an
	// acks=0 send, or the run ended).
	LogUnknown
	// LogNotSent: never reached the network.
	LogNotSent
)

func (o LogOutcome) String() string {
	return [...]string{"?", "acked", "rejected", "unknown", "not-sent"}[o]
}

// LogAttempt is one send of a produce build and its outcome.
type LogAttempt struct {
	At        time.Duration
	Producer  string
	Partition LogPartition
	// Build names the build (producer, batch, generation) and Send counts
	// its sends from 1.
	Build   string
	Send    int
	Outcome LogOutcome
	// Offset is the first record's offset (LogAcked), Detail the error.
	Offset int64
	Detail string
}

func (a LogAttempt) String() string {
	s := fmt.Sprintf("%v %s %s send %d: %s", a.At, a.Partition, a.Build, a.Send, a.Outcome)
	if a.Outcome == LogAcked {
		s += fmt.Sprintf(" at %d", a.Offset)
	}
	if a.Detail != "" {
		s += " (" + a.Detail + ")"
	}
	return s
}

// LogViolation is a failed check.
type LogViolation struct {
	// Check is "a" to "e".
	Check string
	At    time.Duration
	Msg   string
}

var logCheckNames = map[string]string{
	"a": "durability",
	"b": "one record per offset",
	"c": "no phantom records",
	"d": "no duplicates",
	"e": "order",
}

func (v *LogViolation) Error() string {
	return fmt.Sprintf("(%s) %s: at %v: %s", v.Check, logCheckNames[v.Check], v.At, v.Msg)
}

type logValue struct {
	part  LogPartition
	build string
}

type logPart struct {
	id LogPartition
	// byOffset and byValue hold every (offset, value) seen, with who
	// saw it first.
	byOffset map[int64]logSeen
	byValue  map[string]logSeen
	acked    []LogRecord
	// sessions: per reader session, the next offset it must read.
	sessions map[string]int64
	// hw: per reader, the highest high watermark it was told.
	hw map[string]int64
	// final is the final read's content, from finalStart.
	final      map[int64]string
	finalStart int64
	finalEnd   int64
	finalDone  bool
	// events holds the partition's observations as they were recorded,
	// whatever their checks said.
	events []logEvent
	// finalRecords is the final read's content, in the order given, and
	// finalAt when it was recorded.
	finalRecords []LogRecord
	finalAt      time.Duration
}

// logEventKind says what a logEvent records.
type logEventKind uint8

const (
	logStartEvent logEventKind = iota + 1 // StartSession
	logReadEvent                          // Read or ReadWithHW
	logHWEvent                            // HighWatermark
	logAckEvent                           // Attempt, acknowledged
)

// logEvent is one observation of a partition, as recorded.
type logEvent struct {
	seq  int
	at   time.Duration
	kind logEventKind
	// who is the reader (start, read, high watermark) or the producer
	// (ack); build and send name an acknowledged send.
	who     string
	session int
	build   string
	send    int
	// start is a session's start offset; records what was read or
	// acknowledged.
	start   int64
	records []LogRecord
	// hw is the high watermark reported, or -1 for a read without one.
	hw int64
}

type logSeen struct {
	offset int64
	value  string
	by     string
}

// NewLogHistory returns an empty history; now stamps violations and
// attempts with virtual time.
func NewLogHistory(now func() time.Duration) *LogHistory {
	return &LogHistory{values: map[string]*logValue{}, now: now, built: map[logBuild]int{}}
}

func (h *LogHistory) part(p LogPartition) *logPart {
	i, found := slices.BinarySearchFunc(h.parts, p, func(x *logPart, p LogPartition) int { return x.id.compare(p) })
	if !found {
		h.parts = slices.Insert(h.parts, i, &logPart{id: p, byOffset: map[int64]logSeen{}, byValue: map[string]logSeen{},
			sessions: map[string]int64{}, hw: map[string]int64{}})
	}
	return h.parts[i]
}

// record keeps ev as lp's next observation, numbered and stamped.
func (h *LogHistory) record(lp *logPart, ev logEvent) {
	h.seq++
	ev.seq, ev.at = h.seq, h.now()
	lp.events = append(lp.events, ev)
}

func (h *LogHistory) fail(check, format string, args ...any) error {
	return &LogViolation{Check: check, At: h.now(), Msg: fmt.Sprintf(format, args...)}
}

// Records is the number of distinct values produced.
func (h *LogHistory) Records() int { return len(h.values) }

// Attempts returns the produce attempts recorded, in order.
func (h *LogHistory) Attempts() []LogAttempt { return slices.Clone(h.attempts) }

// Acked is the number of records acknowledged.
func (h *LogHistory) Acked() int {
	n := 0
	for _, p := range h.parts {
		n += len(p.acked)
	}
	return n
}

// Produced records a build of a batch before any send of it: its values
// may be read from p from now on. A value produced twice is a harness bug
// and an error.
func (h *LogHistory) Produced(p LogPartition, build string, values []string) error {
	if _, ok := h.built[logBuild{p, build}]; !ok {
		h.seq++
		h.built[logBuild{p, build}] = h.seq
	}
	for _, v := range values {
		if prev, dup := h.values[v]; dup {
			return fmt.Errorf("linearizability: value %q produced twice (builds %s and %s): values must be unique", v, prev.build, build)
		}
		h.values[v] = &logValue{part: p, build: build}
	}
	h.part(p)
	return nil
}

// Attempt records a send's outcome; for LogAcked it checks the records at
// their acknowledged offsets as Read does (the acknowledgement is an
// observation of the log), except for order.
func (h *LogHistory) Attempt(a LogAttempt, values []string) error {
	a.At = h.now()
	h.attempts = append(h.attempts, a)
	if a.Outcome != LogAcked {
		return nil
	}
	lp := h.part(a.Partition)
	h.record(lp, logEvent{kind: logAckEvent, who: a.Producer, build: a.Build, send: a.Send, records: offsetsFrom(a.Offset, values), hw: -1})
	who := "ack of " + a.Producer + " " + a.Build
	for i, v := range values {
		r := LogRecord{Offset: a.Offset + int64(i), Value: v}
		if err := h.observe(lp, who, r); err != nil {
			return err
		}
		lp.acked = append(lp.acked, r)
	}
	return nil
}

// StartSession begins a reader's session of p at offset start: the
// session's first record must be at start.
func (h *LogHistory) StartSession(reader string, session int, p LogPartition, start int64) {
	lp := h.part(p)
	h.record(lp, logEvent{kind: logStartEvent, who: reader, session: session, start: start, hw: -1})
	lp.sessions[sessionKey(reader, session)] = start
}

// offsetsFrom returns values as records at consecutive offsets from
// first.
func offsetsFrom(first int64, values []string) []LogRecord {
	out := make([]LogRecord, len(values))
	for i, v := range values {
		out[i] = LogRecord{Offset: first + int64(i), Value: v}
	}
	return out
}

func sessionKey(reader string, session int) string { return fmt.Sprintf("%s#%d", reader, session) }

// Read records records a reader read from p in session, in the order it
// read them, and checks (e), (b), (d) and (c) for each.
func (h *LogHistory) Read(reader string, session int, p LogPartition, records []LogRecord) error {
	lp := h.part(p)
	h.record(lp, logEvent{kind: logReadEvent, who: reader, session: session, records: slices.Clone(records), hw: -1})
	return h.checkRead(lp, reader, session, records)
}

// ReadWithHW records one fetch response: the records a reader read from
// p in session and the high watermark the same response reported. It
// checks what Read and then HighWatermark check (both run; the first
// violation is returned), and lets Anomalies judge each record against
// that high watermark.
func (h *LogHistory) ReadWithHW(reader string, session int, p LogPartition, records []LogRecord, hw int64) error {
	lp := h.part(p)
	h.record(lp, logEvent{kind: logReadEvent, who: reader, session: session, records: slices.Clone(records), hw: hw})
	readErr := h.checkRead(lp, reader, session, records)
	hwErr := h.checkHighWatermark(lp, reader, hw)
	if readErr != nil {
		return readErr
	}
	return hwErr
}

// checkRead checks what Read checks.
func (h *LogHistory) checkRead(lp *logPart, reader string, session int, records []LogRecord) error {
	p := lp.id
	key := sessionKey(reader, session)
	next, ok := lp.sessions[key]
	if !ok && len(records) > 0 {
		return h.fail("e", "%s read %s in session %d, which never started", reader, p, session)
	}
	for _, r := range records {
		if r.Offset != next {
			what := "skipped"
			if r.Offset < next {
				what = "went back"
			}
			return h.fail("e", "%s read %s offset %d (value %q) after offset %d in session %d: the offsets %s",
				reader, p, r.Offset, r.Value, next-1, session, what)
		}
		next = r.Offset + 1
		if err := h.observe(lp, reader, r); err != nil {
			return err
		}
	}
	lp.sessions[key] = next
	return nil
}

// observe checks one (offset, value) observation: (b), (d), (c).
func (h *LogHistory) observe(lp *logPart, who string, r LogRecord) error {
	if prev, ok := lp.byOffset[r.Offset]; ok && prev.value != r.Value {
		return h.fail("b", "%s offset %d holds %q for %s but %q for %s%s", lp.id, r.Offset, r.Value, who, prev.value, prev.by, h.origin(r.Value, prev.value))
	}
	if prev, ok := lp.byValue[r.Value]; ok && prev.offset != r.Offset {
		return h.fail("d", "%s value %q is at offset %d for %s and at offset %d for %s: written twice%s", lp.id, r.Value, r.Offset, who, prev.offset, prev.by, h.origin(r.Value))
	}
	if v, ok := h.values[r.Value]; !ok || v.part != lp.id {
		where := "never produced"
		if ok {
			where = "produced to " + v.part.String()
		}
		return h.fail("c", "%s read %q at %s offset %d: %s", who, r.Value, lp.id, r.Offset, where)
	}
	seen := logSeen{offset: r.Offset, value: r.Value, by: who}
	if _, ok := lp.byOffset[r.Offset]; !ok {
		lp.byOffset[r.Offset] = seen
	}
	if _, ok := lp.byValue[r.Value]; !ok {
		lp.byValue[r.Value] = seen
	}
	return nil
}

// origin describes where values came from: their builds and the
// attempts of those builds.
func (h *LogHistory) origin(values ...string) string {
	var out []string
	for _, v := range values {
		lv, ok := h.values[v]
		if !ok {
			continue
		}
		var sends []string
		for _, a := range h.attempts {
			if a.Build == lv.build && a.Partition == lv.part {
				sends = append(sends, a.String())
			}
		}
		out = append(out, fmt.Sprintf("%q is from %s, sent: [%s]", v, lv.build, strings.Join(sends, "; ")))
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, "; ")
}

// HighWatermark records a high watermark a reader was told for p: it must
// not go back for that reader (a).
func (h *LogHistory) HighWatermark(reader string, p LogPartition, hw int64) error {
	lp := h.part(p)
	h.record(lp, logEvent{kind: logHWEvent, who: reader, hw: hw})
	return h.checkHighWatermark(lp, reader, hw)
}

// checkHighWatermark checks what HighWatermark checks.
func (h *LogHistory) checkHighWatermark(lp *logPart, reader string, hw int64) error {
	p := lp.id
	if prev, ok := lp.hw[reader]; ok && hw < prev {
		return h.fail("a", "%s was told high watermark %d for %s after %d: committed records were lost", reader, hw, p, prev)
	}
	if prev, ok := lp.hw[reader]; !ok || hw > prev {
		lp.hw[reader] = hw
	}
	return nil
}

// OutOfRange records that a fetch of reader at offset was refused as out
// of range: a position the reader reached below a high watermark it was
// told must stay in range (a).
func (h *LogHistory) OutOfRange(reader string, p LogPartition, offset int64) error {
	lp := h.part(p)
	if hw, ok := lp.hw[reader]; ok && offset <= hw {
		return h.fail("a", "%s fetch of %s at offset %d is out of range, below high watermark %d it was told: committed records were lost", reader, p, offset, hw)
	}
	return nil
}

// FinalRead records the content of the final read of p: the records a
// reader read (and Read checked) in one session from start, up to end
// (the partition's high watermark when the final read began). CheckDurable
// judges the acknowledged records against it.
func (h *LogHistory) FinalRead(p LogPartition, start, end int64, records []LogRecord) {
	lp := h.part(p)
	lp.final = make(map[int64]string, len(records))
	for _, r := range records {
		lp.final[r.Offset] = r.Value
	}
	lp.finalStart, lp.finalEnd, lp.finalDone = start, end, true
	lp.finalRecords, lp.finalAt = slices.Clone(records), h.now()
}

// CheckDurable checks (a) for every partition with a final read: every
// acknowledged record is in it at its acknowledged offset.
func (h *LogHistory) CheckDurable() error {
	for _, lp := range h.parts {
		if !lp.finalDone {
			if len(lp.acked) > 0 {
				return h.fail("a", "%s has %d acknowledged records and no final read", lp.id, len(lp.acked))
			}
			continue
		}
		for _, r := range lp.acked {
			got, ok := lp.final[r.Offset]
			switch {
			case ok && got == r.Value:
				continue
			case ok:
				return h.fail("a", "acknowledged %q at %s offset %d, the final read found %q there%s", r.Value, lp.id, r.Offset, got, h.origin(r.Value, got))
			case r.Offset < lp.finalStart:
				return h.fail("a", "acknowledged %q at %s offset %d is below the log start %d of the final read%s", r.Value, lp.id, r.Offset, lp.finalStart, h.origin(r.Value))
			default:
				return h.fail("a", "acknowledged %q at %s offset %d is missing: the final read ended at %d%s", r.Value, lp.id, r.Offset, lp.finalEnd, h.origin(r.Value))
			}
		}
	}
	return nil
}

// Partitions lists the partitions seen, sorted.
func (h *LogHistory) Partitions() []LogPartition {
	out := make([]LogPartition, len(h.parts))
	for i, p := range h.parts {
		out[i] = p.id
	}
	return out
}

// AckedIn is the number of records acknowledged in p and the highest
// acknowledged offset (-1 without any).
func (h *LogHistory) AckedIn(p LogPartition) (n int, last int64) {
	lp := h.part(p)
	last = -1
	for _, r := range lp.acked {
		last = max(last, r.Offset)
	}
	return len(lp.acked), last
}
