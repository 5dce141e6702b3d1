package linearizability

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// counterModel is a model with no partitioning, Hash or descriptions: a
// counter with "inc" (returns nothing) and "read" (returns the count).
var counterModel = porcupine.Model{
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		n := state.(int)
		if input == "inc" {
			return true, n + 1
		}
		return IsUnknown(output) || output == n, n
	},
}

func TestCheckGenericModel(t *testing.T) {
	h := NewHistory()
	h.Complete(h.Invoke(0, "inc", 0), nil, 10)
	h.Timeout(h.Invoke(1, "inc", 5))
	h.Complete(h.Invoke(2, "read", 20), 1, 30)
	h.Complete(h.Invoke(2, "read", 40), 2, 50)
	res, err := Check(counterModel, h)
	if err != nil || !res.Ok {
		t.Fatalf("got %v, %v; want linearizable", res, err)
	}
	h.Complete(h.Invoke(2, "read", 60), 1, 70)
	res, err = Check(counterModel, h)
	if err != nil || res.Ok {
		t.Fatalf("got %v, %v; want not linearizable", res, err)
	}
	var buf bytes.Buffer
	if err := Visualize(&buf, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `inc -\u003e ? (timeout)`) {
		t.Errorf("visualisation does not describe the timed-out inc")
	}
}

func TestCheckLimits(t *testing.T) {
	h := NewHistory()
	for i := range 5 {
		h.Timeout(h.Invoke(i, KVPut("a", "v"), time.Duration(i)))
	}
	h.Complete(h.Invoke(0, KVGet("b"), 0), missing, 1)

	if _, err := (Limits{MaxOperations: 5, MaxUnknownPerPartition: 10}).Check(KVModel(), h); !errors.Is(err, ErrHistoryTooLarge) {
		t.Errorf("6 operations, limit 5: got %v, want ErrHistoryTooLarge", err)
	}
	if _, err := (Limits{MaxOperations: 6, MaxUnknownPerPartition: 4}).Check(KVModel(), h); !errors.Is(err, ErrHistoryTooLarge) {
		t.Errorf("5 unknown on key a, limit 4: got %v, want ErrHistoryTooLarge", err)
	}
	res, err := (Limits{MaxOperations: 6, MaxUnknownPerPartition: 5}).Check(KVModel(), h)
	if err != nil || !res.Ok {
		t.Errorf("within limits: got %v, %v", res, err)
	}
	if got, want := res.String(), "linearizable: 6 operations (5 with unknown outcome)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}

	// The pending-effect mask caps the limit whatever the caller asks for.
	big := NewHistory()
	for i := range maxUnknownPerPartition + 1 {
		big.Fail(big.Invoke(0, KVPut("a", "v"), time.Duration(i)))
	}
	if _, err := (Limits{MaxUnknownPerPartition: 1000}).Check(KVModel(), big); !errors.Is(err, ErrHistoryTooLarge) ||
		!strings.Contains(err.Error(), "limit 64") {
		t.Errorf("%d unknown on one key: got %v, want ErrHistoryTooLarge, limit 64", maxUnknownPerPartition+1, err)
	}
	// A zero field stands for its default.
	if _, err := (Limits{MaxOperations: 1000}).Check(KVModel(), big); !errors.Is(err, ErrHistoryTooLarge) ||
		!strings.Contains(err.Error(), fmt.Sprintf("limit %d", DefaultMaxUnknownPerPartition)) {
		t.Errorf("zero MaxUnknownPerPartition: got %v, want the default limit", err)
	}
}

// failingHistory returns a non-linearizable history over several keys. On
// each key, two concurrent reads disagree on the order of two concurrent
// writes, so porcupine finds two partial linearizations of equal length,
// which it returns in map order.
func failingHistory() *History {
	h := NewHistory()
	for k := range 3 {
		key := fmt.Sprintf("topic-%d", k)
		h.Complete(h.Invoke(0, KVCreateIfAbsent(key, "id-1"), 0), done, 10)
		h.Complete(h.Invoke(1, KVPut(key, "id-2"), 20), done, 100)
		h.Complete(h.Invoke(2, KVPut(key, "id-3"), 20), done, 100)
		h.Timeout(h.Invoke(3, KVDelete(key), 25))
		h.Complete(h.Invoke(4, KVGet(key), 110), found("id-2"), 120)
		h.Complete(h.Invoke(5, KVGet(key), 110), found("id-3"), 120)
	}
	return h
}

func TestVisualizeFailingHistory(t *testing.T) {
	res, err := Check(KVModel(), failingHistory())
	if err != nil {
		t.Fatal(err)
	}
	if res.Ok {
		t.Fatal("failing history checked linearizable")
	}
	var buf bytes.Buffer
	if err := Visualize(&buf, res); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{"<html", `Get(\"topic-1\")`, `Delete(\"topic-2\") -\u003e ? (timeout)`} {
		if !strings.Contains(html, want) {
			t.Errorf("visualisation lacks %q", want)
		}
	}
}

func TestVisualizeIsDeterministic(t *testing.T) {
	var first []byte
	for i := range 10 {
		res, err := Check(KVModel(), failingHistory())
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Visualize(&buf, res); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = buf.Bytes()
		} else if !bytes.Equal(first, buf.Bytes()) {
			t.Fatalf("run %d wrote a different visualisation", i)
		}
	}
}

func TestVisualizeNeedsAFailingResult(t *testing.T) {
	h := NewHistory()
	h.Complete(h.Invoke(0, KVGet("a"), 0), missing, 1)
	res, err := Check(KVModel(), h)
	if err != nil || !res.Ok {
		t.Fatalf("got %v, %v", res, err)
	}
	if err := Visualize(&bytes.Buffer{}, res); !errors.Is(err, ErrNothingToVisualize) {
		t.Errorf("Ok result: got %v, want ErrNothingToVisualize", err)
	}
	if err := Visualize(&bytes.Buffer{}, Result{}); !errors.Is(err, ErrNothingToVisualize) {
		t.Errorf("zero result: got %v, want ErrNothingToVisualize", err)
	}
}

func TestVisualizeReportsWriteErrors(t *testing.T) {
	res, err := Check(KVModel(), failingHistory())
	if err != nil {
		t.Fatal(err)
	}
	if err := Visualize(errWriter{}, res); !errors.Is(err, errDiskFull) {
		t.Errorf("got %v, want errDiskFull", err)
	}
}

var errDiskFull = errors.New("disk full")

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestCheckRejectsAModelThatRejectsUnknownOutcomes(t *testing.T) {
	strict := porcupine.Model{
		Init: func() any { return 0 },
		Step: func(state, input, output any) (bool, any) { return output == "ok", state },
	}
	h := NewHistory()
	h.Timeout(h.Invoke(0, "op", 0))
	h.Complete(h.Invoke(1, "op", 10), "ok", 20)
	if _, err := Check(strict, h); !errors.Is(err, ErrModelRejectsUnknown) {
		t.Fatalf("got %v, want ErrModelRejectsUnknown", err)
	}
}

// BenchmarkCheckFailingOneKey measures a worst case: every operation on one
// key, a stale read at the end, and unknown-outcome writes spread through.
func BenchmarkCheckFailingOneKey(b *testing.B) {
	for _, unknown := range []int{0, 8, 32} {
		b.Run(fmt.Sprintf("ops=1000/unknown=%d", unknown), func(b *testing.B) {
			h := oneKeyHistory(1000, unknown, true)
			for b.Loop() {
				if res, err := Check(KVModel(), h); err != nil || res.Ok {
					b.Fatalf("got %v, %v", res, err)
				}
			}
		})
	}
}
