package linearizability

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// AnomalyClass names a kind of anomaly in a produce/consume history, after
// the anomalies Jepsen's Kafka test reports.
type AnomalyClass uint8

const (
	// AnomalyLost: a record acknowledged at an offset is not at that
	// offset in the final read of its partition, which covered the
	// offset (or found the record at another one).
	AnomalyLost AnomalyClass = iota + 1
	// AnomalyDuplicate: one value was seen at two offsets, across every
	// read and acknowledgement.
	AnomalyDuplicate
	// AnomalyInconsistentOffsets: one offset was seen with two values,
	// across every read and acknowledgement.
	AnomalyInconsistentOffsets
	// AnomalyPollSkip: a reader's session read an offset after a lower
	// one, skipping offsets of which at least one holds a record someone
	// saw (offsets no one saw a record at may be gaps of a compacted or
	// transactional log and are not reported).
	AnomalyPollSkip
	// AnomalyNonmonotonicPoll: a reader's session read an offset not
	// greater than the one it read before (or below the session's start).
	AnomalyNonmonotonicPoll
	// AnomalyNonmonotonicSend: a producer's send to a partition, built
	// after an earlier send of it to that partition was acknowledged, was
	// acknowledged at an offset not greater than the earlier one's.
	AnomalyNonmonotonicSend
	// AnomalyUnseen: a record acknowledged at an offset was never read
	// by anyone, and the final read of its partition (if any) did not
	// reach its offset.
	AnomalyUnseen
	// AnomalyReadPastHW: a reader read a record at or past the high
	// watermark the same fetch response reported (see
	// [LogHistory.ReadWithHW]), or at or past every high watermark
	// reported for its partition in the whole history.
	AnomalyReadPastHW

	numAnomalyClasses = iota
)

// AnomalyClasses returns every class, in the order reports list them.
func AnomalyClasses() []AnomalyClass {
	out := make([]AnomalyClass, numAnomalyClasses)
	for i := range out {
		out[i] = AnomalyClass(i + 1)
	}
	return out
}

// String returns the class's name in Jepsen's spelling, for example
// "inconsistent-offsets".
func (c AnomalyClass) String() string {
	switch c {
	case AnomalyLost:
		return "lost"
	case AnomalyDuplicate:
		return "duplicate"
	case AnomalyInconsistentOffsets:
		return "inconsistent-offsets"
	case AnomalyPollSkip:
		return "poll-skip"
	case AnomalyNonmonotonicPoll:
		return "nonmonotonic-poll"
	case AnomalyNonmonotonicSend:
		return "nonmonotonic-send"
	case AnomalyUnseen:
		return "unseen"
	case AnomalyReadPastHW:
		return "read-past-hw"
	default:
		return fmt.Sprintf("AnomalyClass(%d)", uint8(c))
	}
}

// MaxAnomalyExamples is how many examples an AnomalyReport keeps per
// class; it counts every anomaly.
const MaxAnomalyExamples = 3

// Anomaly is one instance of an anomaly.
type Anomaly struct {
	Class     AnomalyClass
	Partition LogPartition
	// At is the virtual time the observation that completes it was
	// recorded.
	At  time.Duration
	Msg string
}

func (a Anomaly) String() string { return fmt.Sprintf("%s at %v: %s", a.Partition, a.At, a.Msg) }

// AnomalyReport counts the anomalies of each class in a history and keeps
// the first MaxAnomalyExamples of each, in a fixed order: by partition,
// then as listed by the class's analysis (by offset, value or the order
// of observations). The zero value is an empty report.
type AnomalyReport struct {
	counts   [numAnomalyClasses]int
	examples [numAnomalyClasses][]Anomaly
}

func (r *AnomalyReport) add(a Anomaly) {
	i := a.Class - 1
	r.counts[i]++
	if len(r.examples[i]) < MaxAnomalyExamples {
		r.examples[i] = append(r.examples[i], a)
	}
}

// Count is the number of anomalies of class c.
func (r AnomalyReport) Count(c AnomalyClass) int { return r.counts[c-1] }

// Examples returns the examples kept of class c.
func (r AnomalyReport) Examples(c AnomalyClass) []Anomaly { return slices.Clone(r.examples[c-1]) }

// Empty reports whether the report holds no anomaly.
func (r AnomalyReport) Empty() bool { return r.counts == [numAnomalyClasses]int{} }

// String returns one line per class, with its count and examples, for
// example `lost: 4 [t-0 at 2s: …; t-0 at 2s: …; t-1 at 3s: …; +1 more]`.
func (r AnomalyReport) String() string {
	var b strings.Builder
	for _, c := range AnomalyClasses() {
		fmt.Fprintf(&b, "%s: %d", c, r.Count(c))
		if ex := r.examples[c-1]; len(ex) > 0 {
			parts := make([]string, len(ex))
			for i, a := range ex {
				parts[i] = a.String()
			}
			if more := r.Count(c) - len(ex); more > 0 {
				parts = append(parts, fmt.Sprintf("+%d more", more))
			}
			fmt.Fprintf(&b, " [%s]", strings.Join(parts, "; "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Anomalies analyses every observation recorded, including those after a
// check failed, and reports each class of anomaly separately. It is
// deterministic, and it may be called at any time; the lost and unseen
// classes are meaningful once the final reads were recorded.
func (h *LogHistory) Anomalies() AnomalyReport {
	var r AnomalyReport
	for _, lp := range h.parts {
		a := h.analyse(lp)
		a.inconsistentOffsets(&r)
		a.duplicates(&r)
		a.polls(&r)
		a.nonmonotonicSends(&r)
		a.acknowledged(&r)
		a.readsPastHW(&r)
	}
	return r
}

// logSighting is the first observation of a value at an offset.
type logSighting struct {
	offset int64
	value  string
	by     string
	at     time.Duration
}

func (s logSighting) String() string { return fmt.Sprintf("%q at %d (%s)", s.value, s.offset, s.by) }

// partAnalysis is what Anomalies learns about one partition.
type partAnalysis struct {
	h  *LogHistory
	lp *logPart
	// atOffset lists the distinct values seen at each offset, and
	// ofValue the distinct offsets each value was seen at, in the order
	// first seen; offsets holds the keys of atOffset, sorted.
	atOffset map[int64][]logSighting
	ofValue  map[string][]logSighting
	offsets  []int64
	// read holds every value a read returned, at any offset.
	read map[string]bool
	// maxHW is the highest high watermark reported for the partition,
	// -1 if none was.
	maxHW int64
}

func (h *LogHistory) analyse(lp *logPart) *partAnalysis {
	a := &partAnalysis{h: h, lp: lp, atOffset: map[int64][]logSighting{}, ofValue: map[string][]logSighting{},
		read: map[string]bool{}, maxHW: -1}
	for _, ev := range lp.events {
		switch ev.kind {
		case logAckEvent:
			for _, r := range ev.records {
				a.sight(r, ev.ackName(), ev.at)
			}
		case logReadEvent:
			for _, r := range ev.records {
				a.sight(r, ev.readerName(), ev.at)
				a.read[r.Value] = true
			}
			a.maxHW = max(a.maxHW, ev.hw)
		case logHWEvent:
			a.maxHW = max(a.maxHW, ev.hw)
		}
	}
	if lp.finalDone {
		for _, r := range lp.finalRecords {
			a.sight(r, "the final read", lp.finalAt)
			a.read[r.Value] = true
		}
		a.maxHW = max(a.maxHW, lp.finalEnd)
	}
	a.offsets = slices.Sorted(maps.Keys(a.atOffset))
	return a
}

func (ev logEvent) ackName() string {
	return fmt.Sprintf("ack of %s %s send %d", ev.who, ev.build, ev.send)
}

func (ev logEvent) readerName() string { return fmt.Sprintf("%s session %d", ev.who, ev.session) }

// sight notes that by saw r at time at.
func (a *partAnalysis) sight(r LogRecord, by string, at time.Duration) {
	s := logSighting{offset: r.Offset, value: r.Value, by: by, at: at}
	if !slices.ContainsFunc(a.atOffset[r.Offset], func(x logSighting) bool { return x.value == r.Value }) {
		a.atOffset[r.Offset] = append(a.atOffset[r.Offset], s)
	}
	if !slices.ContainsFunc(a.ofValue[r.Value], func(x logSighting) bool { return x.offset == r.Offset }) {
		a.ofValue[r.Value] = append(a.ofValue[r.Value], s)
	}
}

func (a *partAnalysis) anomaly(c AnomalyClass, at time.Duration, format string, args ...any) Anomaly {
	return Anomaly{Class: c, Partition: a.lp.id, At: at, Msg: fmt.Sprintf(format, args...)}
}

func joinSightings(ss []logSighting) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}

// inconsistentOffsets reports each offset seen with two values, by
// offset.
func (a *partAnalysis) inconsistentOffsets(r *AnomalyReport) {
	for _, o := range a.offsets {
		if ss := a.atOffset[o]; len(ss) > 1 {
			r.add(a.anomaly(AnomalyInconsistentOffsets, ss[1].at, "offset %d holds %d values: %s", o, len(ss), joinSightings(ss)))
		}
	}
}

// duplicates reports each value seen at two offsets, by the first offset
// it was seen at.
func (a *partAnalysis) duplicates(r *AnomalyReport) {
	var dups [][]logSighting
	for _, v := range slices.Sorted(maps.Keys(a.ofValue)) {
		if ss := a.ofValue[v]; len(ss) > 1 {
			dups = append(dups, ss)
		}
	}
	slices.SortStableFunc(dups, func(x, y []logSighting) int { return cmp.Compare(x[0].offset, y[0].offset) })
	for _, ss := range dups {
		r.add(a.anomaly(AnomalyDuplicate, ss[1].at, "%q is at %d offsets: %s", ss[0].value, len(ss), joinSightings(ss)))
	}
}

// logSession is where a reader's session of a partition is.
type logSession struct {
	// last is the offset read last, or the session's start minus one;
	// known is false until one of them is.
	last  int64
	known bool
}

// polls follows each reader session's records in the order read,
// reporting each step back (nonmonotonic-poll) and each step over
// offsets someone saw a record at (poll-skip).
func (a *partAnalysis) polls(r *AnomalyReport) {
	sessions := map[string]*logSession{}
	for _, ev := range a.lp.events {
		key := sessionKey(ev.who, ev.session)
		switch ev.kind {
		case logStartEvent:
			sessions[key] = &logSession{last: ev.start - 1, known: true}
		case logReadEvent:
			s, ok := sessions[key]
			if !ok {
				s = &logSession{}
				sessions[key] = s
			}
			for _, rec := range ev.records {
				if s.known {
					a.poll(r, ev, s.last, rec)
				}
				s.last, s.known = rec.Offset, true
			}
		}
	}
}

// poll judges one step of a session, from last to rec.
func (a *partAnalysis) poll(r *AnomalyReport, ev logEvent, last int64, rec LogRecord) {
	if rec.Offset <= last {
		r.add(a.anomaly(AnomalyNonmonotonicPoll, ev.at, "%s read offset %d (%q) after offset %d",
			ev.readerName(), rec.Offset, rec.Value, last))
		return
	}
	if rec.Offset == last+1 {
		return
	}
	i, _ := slices.BinarySearch(a.offsets, last+1)
	if i == len(a.offsets) || a.offsets[i] >= rec.Offset {
		return
	}
	skipped := a.atOffset[a.offsets[i]][0]
	r.add(a.anomaly(AnomalyPollSkip, ev.at, "%s read offset %d (%q) after offset %d, skipping %d..%d, where %s was seen",
		ev.readerName(), rec.Offset, rec.Value, last, last+1, rec.Offset-1, skipped))
}

// logAck is one acknowledged send of a producer, in the order
// acknowledged, with the highest offset acknowledged to the producer so
// far (this one included) and the build acknowledged there.
type logAck struct {
	seq          int
	highest      int64
	highestBuild string
}

// nonmonotonicSends reports each acknowledged send of a producer whose
// build was made after an earlier send of the producer was acknowledged
// at an offset not below it: that send came after the earlier one in
// every sense, so its offset must be higher.
func (a *partAnalysis) nonmonotonicSends(r *AnomalyReport) {
	acks := map[string][]logAck{}
	for _, ev := range a.lp.events {
		if ev.kind != logAckEvent || len(ev.records) == 0 {
			continue
		}
		offset := ev.records[0].Offset
		prev := acks[ev.who]
		if built, ok := a.h.built[logBuild{a.lp.id, ev.build}]; ok {
			// prev[:i] were acknowledged before the build was made.
			i, _ := slices.BinarySearchFunc(prev, built, func(x logAck, seq int) int { return cmp.Compare(x.seq, seq) })
			if i > 0 && prev[i-1].highest >= offset {
				r.add(a.anomaly(AnomalyNonmonotonicSend, ev.at, "%s is at offset %d, though its build was made after %s was acknowledged at offset %d",
					ev.ackName(), offset, prev[i-1].highestBuild, prev[i-1].highest))
			}
		}
		next := logAck{seq: ev.seq, highest: offset, highestBuild: ev.build}
		if n := len(prev); n > 0 && prev[n-1].highest > offset {
			next.highest, next.highestBuild = prev[n-1].highest, prev[n-1].highestBuild
		}
		acks[ev.who] = append(prev, next)
	}
}

// acknowledged judges each acknowledged record, in the order first
// acknowledged, against the final read and every read: lost or unseen.
func (a *partAnalysis) acknowledged(r *AnomalyReport) {
	lp := a.lp
	finalAt := map[string]int64{}
	for _, rec := range lp.finalRecords {
		if _, ok := finalAt[rec.Value]; !ok {
			finalAt[rec.Value] = rec.Offset
		}
	}
	judged := map[string]bool{}
	for _, ev := range lp.events {
		if ev.kind != logAckEvent {
			continue
		}
		for _, rec := range ev.records {
			if judged[rec.Value] {
				continue
			}
			judged[rec.Value] = true
			what := fmt.Sprintf("acknowledged %q at %d (%s)", rec.Value, rec.Offset, ev.ackName())
			if !lp.finalDone {
				if !a.read[rec.Value] {
					r.add(a.anomaly(AnomalyUnseen, ev.at, "%s was never read, and the partition has no final read", what))
				}
				continue
			}
			got, found := lp.final[rec.Offset]
			elsewhere, moved := finalAt[rec.Value]
			switch {
			case found && got == rec.Value:
			case found:
				r.add(a.anomaly(AnomalyLost, ev.at, "%s: the final read found %q there", what, got))
			case moved:
				r.add(a.anomaly(AnomalyLost, ev.at, "%s: the final read found it at %d", what, elsewhere))
			case rec.Offset < lp.finalStart:
				r.add(a.anomaly(AnomalyLost, ev.at, "%s: below the start %d of the final read", what, lp.finalStart))
			case rec.Offset < lp.finalEnd:
				r.add(a.anomaly(AnomalyLost, ev.at, "%s: missing from the final read of %d..%d", what, lp.finalStart, lp.finalEnd-1))
			case !a.read[rec.Value]:
				r.add(a.anomaly(AnomalyUnseen, ev.at, "%s was never read; the final read ended at %d", what, lp.finalEnd))
			}
		}
	}
}

// readsPastHW reports each record read at or past the high watermark of
// its fetch response, or at or past every high watermark reported.
func (a *partAnalysis) readsPastHW(r *AnomalyReport) {
	for _, ev := range a.lp.events {
		if ev.kind != logReadEvent {
			continue
		}
		for _, rec := range ev.records {
			switch {
			case ev.hw >= 0 && rec.Offset >= ev.hw:
				r.add(a.anomaly(AnomalyReadPastHW, ev.at, "%s read offset %d (%q) in a fetch response reporting high watermark %d",
					ev.readerName(), rec.Offset, rec.Value, ev.hw))
			case a.maxHW >= 0 && rec.Offset >= a.maxHW:
				r.add(a.anomaly(AnomalyReadPastHW, ev.at, "%s read offset %d (%q), and no high watermark above %d was ever reported",
					ev.readerName(), rec.Offset, rec.Value, a.maxHW))
			}
		}
	}
}
