package linearizability

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func newTestLog() (*LogHistory, LogPartition) {
	h := NewLogHistory(func() time.Duration { return time.Second })
	return h, LogPartition{Topic: "t", Partition: 0}
}

func check(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		require.NoError(t, err)
		return
	}
	var v *LogViolation
	require.True(t, errors.As(err, &v), "want violation (%s), got %v", want, err)
	require.Equal(t, want, v.Check, "%v", err)
}

func recs(start int64, values ...string) []LogRecord {
	out := make([]LogRecord, len(values))
	for i, v := range values {
		out[i] = LogRecord{Offset: start + int64(i), Value: v}
	}
	return out
}

func TestLogHistoryAcceptsAConsistentRun(t *testing.T) {
	h, p := newTestLog()
	require.NoError(t, h.Produced(p, "p1/b1/g0", []string{"a", "b"}))
	require.NoError(t, h.Produced(p, "p1/b2/g0", []string{"c"}))
	check(t, h.Attempt(LogAttempt{Producer: "p1", Partition: p, Build: "p1/b1/g0", Send: 1, Outcome: LogUnknown}, nil), "")
	check(t, h.Attempt(LogAttempt{Producer: "p1", Partition: p, Build: "p1/b1/g0", Send: 2, Outcome: LogAcked, Offset: 0}, []string{"a", "b"}), "")
	h.StartSession("c1", 1, p, 0)
	check(t, h.Read("c1", 1, p, recs(0, "a")), "")
	check(t, h.HighWatermark("c1", p, 2), "")
	check(t, h.Read("c1", 1, p, recs(1, "b", "c")), "")
	check(t, h.HighWatermark("c1", p, 3), "")
	check(t, h.OutOfRange("c1", p, 4), "")
	h.StartSession("final", 1, p, 0)
	check(t, h.Read("final", 1, p, recs(0, "a", "b", "c")), "")
	h.FinalRead(p, 0, 3, recs(0, "a", "b", "c"))
	check(t, h.CheckDurable(), "")
	require.Equal(t, 3, h.Records())
	require.Equal(t, 2, h.Acked())
	require.Len(t, h.Attempts(), 2)
}

func TestLogHistoryCatchesEachAnomaly(t *testing.T) {
	setup := func() (*LogHistory, LogPartition) {
		h, p := newTestLog()
		require.NoError(t, h.Produced(p, "b1", []string{"a", "b", "c"}))
		h.StartSession("c1", 1, p, 0)
		check(t, h.Read("c1", 1, p, recs(0, "a", "b")), "")
		return h, p
	}
	t.Run("a: lost acknowledged record", func(t *testing.T) {
		h, p := setup()
		check(t, h.Attempt(LogAttempt{Partition: p, Build: "b1", Outcome: LogAcked, Offset: 0}, []string{"a", "b", "c"}), "")
		h.FinalRead(p, 0, 2, recs(0, "a", "b"))
		check(t, h.CheckDurable(), "a")
	})
	t.Run("a: high watermark back", func(t *testing.T) {
		h, p := setup()
		check(t, h.HighWatermark("c1", p, 5), "")
		check(t, h.HighWatermark("c1", p, 4), "a")
	})
	t.Run("a: out of range below the high watermark", func(t *testing.T) {
		h, p := setup()
		check(t, h.HighWatermark("c1", p, 2), "")
		check(t, h.OutOfRange("c1", p, 2), "a")
	})
	t.Run("b: two values at an offset", func(t *testing.T) {
		h, p := setup()
		require.NoError(t, h.Produced(p, "b2", []string{"x"}))
		h.StartSession("c2", 1, p, 1)
		check(t, h.Read("c2", 1, p, recs(1, "x")), "b")
	})
	t.Run("c: from another partition", func(t *testing.T) {
		h, p := setup()
		q := LogPartition{Topic: "t", Partition: 1}
		require.NoError(t, h.Produced(q, "q1", []string{"q"}))
		check(t, h.Read("c1", 1, p, recs(2, "q")), "c")
	})
	// One call after the setup, and the check it must fail.
	for _, tc := range []struct {
		name string
		call func(h *LogHistory, p LogPartition) error
		want string
	}{
		{"b: an ack disagrees with a read", func(h *LogHistory, p LogPartition) error {
			return h.Attempt(LogAttempt{Partition: p, Build: "b1", Outcome: LogAcked, Offset: 1}, []string{"a"})
		}, "b"},
		{"c: phantom", func(h *LogHistory, p LogPartition) error { return h.Read("c1", 1, p, recs(2, "zzz")) }, "c"},
		{"d: a value at two offsets", func(h *LogHistory, p LogPartition) error { return h.Read("c1", 1, p, recs(2, "a")) }, "d"},
		{"e: back", func(h *LogHistory, p LogPartition) error { return h.Read("c1", 1, p, recs(1, "b")) }, "e"},
		{"e: gap", func(h *LogHistory, p LogPartition) error { return h.Read("c1", 1, p, recs(3, "c")) }, "e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, p := setup()
			check(t, tc.call(h, p), tc.want)
		})
	}
	t.Run("e: first record not at the session start", func(t *testing.T) {
		h, p := setup()
		h.StartSession("c1", 2, p, 0)
		check(t, h.Read("c1", 2, p, recs(1, "b")), "e")
	})
	t.Run("produced twice is a harness bug", func(t *testing.T) {
		h, p := setup()
		err := h.Produced(p, "b9", []string{"a"})
		require.Error(t, err)
		var v *LogViolation
		require.False(t, errors.As(err, &v))
	})
}

func TestLogHistoryReadWithHWChecksLikeReadAndHighWatermark(t *testing.T) {
	h, p := newTestLog()
	require.NoError(t, h.Produced(p, "b1", []string{"a", "b", "c"}))
	h.StartSession("c1", 1, p, 0)
	check(t, h.ReadWithHW("c1", 1, p, recs(0, "a"), 3), "")
	check(t, h.ReadWithHW("c1", 1, p, recs(1, "b"), 2), "a")
	check(t, h.ReadWithHW("c1", 1, p, recs(3, "c"), 3), "e")
	// The high watermark was kept though the read was refused: going
	// back from 3 is still reported.
	check(t, h.HighWatermark("c1", p, 2), "a")
}
