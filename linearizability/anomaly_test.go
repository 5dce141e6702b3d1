package linearizability

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// logScript writes a LogHistory of one partition step by step, a
// millisecond of virtual time apart. The checks' verdicts are returned
// for tests that want them; Anomalies must not depend on them.
type logScript struct {
	t   *testing.T
	h   *LogHistory
	p   LogPartition
	now time.Duration
}

func newLogScript(t *testing.T) *logScript {
	s := &logScript{t: t, p: tp0}
	s.h = NewLogHistory(func() time.Duration { return s.now })
	return s
}

func (s *logScript) tick() { s.now += time.Millisecond }

func (s *logScript) produce(build string, values ...string) {
	s.tick()
	require.NoError(s.t, s.h.Produced(s.p, build, values))
}

func (s *logScript) ack(producer, build string, offset int64, values ...string) error {
	s.tick()
	return s.h.Attempt(LogAttempt{Producer: producer, Partition: s.p, Build: build, Send: 1, Outcome: LogAcked, Offset: offset}, values)
}

func (s *logScript) start(reader string, session int, offset int64) {
	s.tick()
	s.h.StartSession(reader, session, s.p, offset)
}

// read records a fetch of records at consecutive offsets from offset.
func (s *logScript) read(reader string, session int, offset int64, values ...string) error {
	return s.readRecords(reader, session, recs(offset, values...))
}

func (s *logScript) readRecords(reader string, session int, records []LogRecord) error {
	s.tick()
	return s.h.Read(reader, session, s.p, records)
}

func (s *logScript) readHW(reader string, session int, hw, offset int64, values ...string) error {
	s.tick()
	return s.h.ReadWithHW(reader, session, s.p, recs(offset, values...), hw)
}

func (s *logScript) hw(reader string, hw int64) error {
	s.tick()
	return s.h.HighWatermark(reader, s.p, hw)
}

func (s *logScript) final(start, end int64, values ...string) {
	s.tick()
	s.h.FinalRead(s.p, start, end, recs(start, values...))
}

// plantedAnomalies holds, for every anomaly class, a history with exactly
// one anomaly, of that class.
var plantedAnomalies = map[AnomalyClass]func(s *logScript){
	AnomalyLost: func(s *logScript) {
		s.produce("p1/b1", "a", "b")
		s.ack("p1", "p1/b1", 0, "a", "b")
		s.start("final", 1, 0)
		s.read("final", 1, 0, "a")
		s.hw("final", 2)
		s.final(0, 2, "a") // covers offset 1, where "b" was acknowledged
	},
	AnomalyDuplicate: func(s *logScript) {
		s.produce("p1/b1", "a")
		s.start("c1", 1, 0)
		s.read("c1", 1, 0, "a", "a")
		s.hw("c1", 2)
	},
	AnomalyInconsistentOffsets: func(s *logScript) {
		s.produce("p1/b1", "a")
		s.produce("p2/b1", "b")
		s.start("c1", 1, 0)
		s.readHW("c1", 1, 1, 0, "a")
		s.start("c2", 1, 0)
		s.readHW("c2", 1, 1, 0, "b")
	},
	AnomalyPollSkip: func(s *logScript) {
		s.produce("p1/b1", "a", "b", "c")
		s.start("c1", 1, 0)
		s.readRecords("c1", 1, []LogRecord{{0, "a"}, {2, "c"}})
		s.hw("c1", 3)
		s.start("c2", 1, 1)
		s.read("c2", 1, 1, "b") // so offset 1 exists
	},
	AnomalyNonmonotonicPoll: func(s *logScript) {
		s.produce("p1/b1", "a", "b")
		s.start("c1", 1, 0)
		s.read("c1", 1, 0, "a", "b")
		s.read("c1", 1, 0, "a")
		s.hw("c1", 2)
	},
	AnomalyNonmonotonicSend: func(s *logScript) {
		s.produce("p1/b1", "a")
		s.ack("p1", "p1/b1", 1, "a")
		s.produce("p1/b2", "b") // built after p1/b1 was acknowledged
		s.ack("p1", "p1/b2", 0, "b")
		s.start("c1", 1, 0)
		s.readHW("c1", 1, 2, 0, "b", "a")
	},
	AnomalyUnseen: func(s *logScript) {
		s.produce("p1/b1", "a")
		s.ack("p1", "p1/b1", 0, "a")
		s.final(0, 0) // the final read did not reach offset 0
	},
	AnomalyReadPastHW: func(s *logScript) {
		s.produce("p1/b1", "a")
		s.start("c1", 1, 0)
		s.readHW("c1", 1, 0, 0, "a")
	},
}

func TestEveryAnomalyClassHasAPlantedBug(t *testing.T) {
	for _, c := range AnomalyClasses() {
		_, ok := plantedAnomalies[c]
		require.True(t, ok, "anomaly class %q has no planted bug in anomaly_test.go", c)
	}
	require.Len(t, plantedAnomalies, len(AnomalyClasses()))
}

func TestAnomaliesCatchTheirPlantedBugs(t *testing.T) {
	for _, c := range AnomalyClasses() {
		t.Run(c.String(), func(t *testing.T) {
			s := newLogScript(t)
			plantedAnomalies[c](s)
			r := s.h.Anomalies()
			for _, other := range AnomalyClasses() {
				want := 0
				if other == c {
					want = 1
				}
				require.Equal(t, want, r.Count(other), "%s count\n%s", other, r)
			}
			ex := r.Examples(c)
			require.Len(t, ex, 1)
			require.Equal(t, c, ex[0].Class)
			require.Equal(t, tp0, ex[0].Partition)
			require.Contains(t, r.String(), c.String()+": 1 [t-0 at ")
			require.False(t, r.Empty())
			t.Log(ex[0])
		})
	}
}

// cleanRun is a history with every kind of observation and no anomaly.
func cleanRun(s *logScript) {
	s.produce("p1/b1", "a", "b")
	require.NoError(s.t, s.ack("p1", "p1/b1", 0, "a", "b"))
	s.produce("p1/b2", "c")
	require.NoError(s.t, s.ack("p1", "p1/b2", 2, "c"))
	s.produce("p2/b1", "d") // its send's outcome is unknown, and it was written
	s.start("c1", 1, 0)
	require.NoError(s.t, s.readHW("c1", 1, 2, 0, "a", "b"))
	require.NoError(s.t, s.readHW("c1", 1, 4, 2, "c", "d"))
	s.start("c2", 1, 2)
	require.NoError(s.t, s.read("c2", 1, 2, "c"))
	require.NoError(s.t, s.hw("c2", 4))
	s.start("c2", 2, 1) // a new session may go back
	require.NoError(s.t, s.read("c2", 2, 1, "b", "c"))
	s.start("final", 1, 0)
	require.NoError(s.t, s.read("final", 1, 0, "a", "b", "c", "d"))
	require.NoError(s.t, s.hw("final", 4))
	s.final(0, 4, "a", "b", "c", "d")
	require.NoError(s.t, s.h.CheckDurable())
}

func TestAnomaliesOfACleanHistory(t *testing.T) {
	s := newLogScript(t)
	cleanRun(s)
	r := s.h.Anomalies()
	require.True(t, r.Empty(), "%s", r)
	require.Equal(t, "lost: 0\nduplicate: 0\ninconsistent-offsets: 0\npoll-skip: 0\nnonmonotonic-poll: 0\n"+
		"nonmonotonic-send: 0\nunseen: 0\nread-past-hw: 0\n", r.String())
	require.True(t, AnomalyReport{}.Empty())
}

// TestAnomaliesSeeObservationsAfterAViolation: the checks stop at the
// first record that fails them, the analysis goes on.
func TestAnomaliesSeeObservationsAfterAViolation(t *testing.T) {
	s := newLogScript(t)
	s.produce("p1/b1", "a", "b", "c", "d")
	s.start("c1", 1, 0)
	check(t, s.readRecords("c1", 1, []LogRecord{{0, "a"}, {2, "c"}, {1, "b"}, {1, "x"}}), "e")
	check(t, s.read("c1", 1, 3, "d"), "e") // the check still expects offset 1
	check(t, s.ack("p1", "p1/b1", 1, "a", "b", "c", "d"), "d")
	r := s.h.Anomalies()
	require.Equal(t, 2, r.Count(AnomalyPollSkip), "0 to 2 over b, 1 to 3 over c\n%s", r)
	require.Equal(t, 2, r.Count(AnomalyNonmonotonicPoll), "2 to 1, 1 to 1\n%s", r)
	// Offset 1 holds "b", "x" and "a", 2 "c" and "b", 3 "d" and "c".
	require.Equal(t, 3, r.Count(AnomalyInconsistentOffsets), "%s", r)
	// The ack puts "a" to "d" one offset after where c1 read them.
	require.Equal(t, 4, r.Count(AnomalyDuplicate), "%s", r)
	require.Contains(t, r.String(), `inconsistent-offsets: 3 [t-0 at 3ms: offset 1 holds 3 values: "b" at 1 (c1 session 1), "x" at 1 (c1 session 1), "a" at 1 (ack of p1 p1/b1 send 1)`)
}

func TestAnomalyReportKeepsAFewExamples(t *testing.T) {
	run := func() AnomalyReport {
		s := newLogScript(t)
		for i := range 5 {
			build := fmt.Sprintf("p1/b%d", i)
			s.produce(build, build+"/0")
			s.ack("p1", build, int64(i), build+"/0")
		}
		return s.h.Anomalies()
	}
	r := run()
	require.Equal(t, 5, r.Count(AnomalyUnseen))
	require.Len(t, r.Examples(AnomalyUnseen), MaxAnomalyExamples)
	require.Equal(t, `"p1/b0/0"`, strings.Fields(r.Examples(AnomalyUnseen)[0].Msg)[1], "in the order acknowledged")
	require.Contains(t, r.String(), "; +2 more]\n")
	require.Equal(t, r.String(), run().String())
}

// TestReadPastEveryHighWatermark: without the high watermark of the fetch
// itself, a record at or past every high watermark reported is still
// caught; one below the highest is not.
func TestReadPastEveryHighWatermark(t *testing.T) {
	s := newLogScript(t)
	s.produce("p1/b1", "a", "b", "c")
	s.start("c1", 1, 0)
	s.read("c1", 1, 0, "a", "b", "c")
	s.hw("c1", 1)
	s.start("c2", 1, 1)
	s.read("c2", 1, 1, "b")
	s.hw("c2", 2)
	r := s.h.Anomalies()
	require.Equal(t, 1, r.Count(AnomalyReadPastHW), "c1's b is below c2's high watermark; c1's c is not\n%s", r)
	require.Contains(t, r.Examples(AnomalyReadPastHW)[0].Msg, `c1 session 1 read offset 2 ("c"), and no high watermark above 2 was ever reported`)

	none := newLogScript(t)
	none.produce("p1/b1", "a")
	none.start("c1", 1, 0)
	none.read("c1", 1, 0, "a")
	require.True(t, none.h.Anomalies().Empty(), "no high watermark was reported at all")
}

// TestNonmonotonicSendNeedsSequentialSends: decreasing offsets of sends
// in flight together, or of two producers, are no anomaly.
func TestNonmonotonicSendNeedsSequentialSends(t *testing.T) {
	s := newLogScript(t)
	s.produce("p1/b1", "a")
	s.produce("p1/b2", "b") // built before p1/b1 was acknowledged
	s.ack("p1", "p1/b1", 1, "a")
	s.ack("p1", "p1/b2", 0, "b")
	s.produce("p2/b1", "c")
	s.ack("p2", "p2/b1", 2, "c")
	s.produce("p3/b1", "d") // after p2's ack, but another producer
	s.ack("p3", "p3/b1", 3, "d")
	s.start("c1", 1, 0)
	s.readHW("c1", 1, 4, 0, "b", "a", "c", "d")
	r := s.h.Anomalies()
	require.True(t, r.Empty(), "%s", r)

	// A later send is compared with the highest earlier offset, not the
	// last one.
	s.produce("p2/b2", "e")
	s.ack("p2", "p2/b2", 10, "e")
	s.produce("p2/b3", "f")
	s.ack("p2", "p2/b3", 5, "f")
	s.produce("p2/b4", "g")
	s.ack("p2", "p2/b4", 7, "g")
	r = s.h.Anomalies()
	require.Equal(t, 2, r.Count(AnomalyNonmonotonicSend), "p2/b3 and p2/b4 are below p2/b2\n%s", r)
	require.Contains(t, r.Examples(AnomalyNonmonotonicSend)[1].Msg, "after p2/b2 was acknowledged at offset 10")
}

func TestAnomalyClassNames(t *testing.T) {
	var names []string
	for _, c := range AnomalyClasses() {
		names = append(names, c.String())
	}
	require.Equal(t, []string{"lost", "duplicate", "inconsistent-offsets", "poll-skip", "nonmonotonic-poll",
		"nonmonotonic-send", "unseen", "read-past-hw"}, names)
	require.Equal(t, "AnomalyClass(99)", AnomalyClass(99).String())
}
