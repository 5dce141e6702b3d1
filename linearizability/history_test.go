package linearizability

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func TestHistoryOperations(t *testing.T) {
	h := NewHistory()
	put := h.Invoke(0, "put", 10*time.Millisecond)
	get := h.Invoke(1, "get", 11*time.Millisecond)
	lost := h.Invoke(2, "lost", 12*time.Millisecond)
	gone := h.Invoke(3, "gone", 13*time.Millisecond)
	rejected := h.Invoke(4, "rejected", 14*time.Millisecond)
	open := h.Invoke(5, "open", 15*time.Millisecond)
	h.Complete(get, "got", 20*time.Millisecond)
	h.Complete(put, "put-ok", 30*time.Millisecond)
	h.Timeout(lost)
	h.Fail(gone)
	h.Discard(rejected)
	_ = open

	got := h.Operations()
	want := []porcupine.Operation{
		{ClientId: 0, Input: "put", Call: 10e6, Output: "put-ok", Return: 30e6},
		{ClientId: 1, Input: "get", Call: 11e6, Output: "got", Return: 20e6},
		{ClientId: 2, Input: "lost", Call: 12e6, Output: Unknown{Reason: TimedOut}, Return: UnknownReturn},
		{ClientId: 3, Input: "gone", Call: 13e6, Output: Unknown{Reason: Failed}, Return: UnknownReturn},
		{ClientId: 5, Input: "open", Call: 15e6, Output: Unknown{Reason: Pending}, Return: UnknownReturn},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d operations, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("op %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if h.Len() != 5 || h.UnknownLen() != 3 {
		t.Errorf("Len %d UnknownLen %d, want 5 and 3", h.Len(), h.UnknownLen())
	}
}

func TestHistoryZeroValueIsEmpty(t *testing.T) {
	var h History
	if h.Len() != 0 || len(h.Operations()) != 0 {
		t.Fatal("zero History not empty")
	}
	id := h.Invoke(0, 1, 0)
	h.Complete(id, 2, 0) // an instantaneous operation is allowed
	if h.Len() != 1 {
		t.Fatal("zero History did not record")
	}
}

func TestHistoryMisusePanics(t *testing.T) {
	tests := []struct {
		name string
		f    func(h *History)
		msg  string
	}{
		{"negative client", func(h *History) { h.Invoke(-1, nil, 0) }, "negative client"},
		{"negative time", func(h *History) { h.Invoke(0, nil, -1) }, "negative time"},
		{"unknown op", func(h *History) { h.Complete(7, nil, 0) }, "unknown op 7"},
		{"return before call", func(h *History) {
			h.Complete(h.Invoke(0, nil, 10), nil, 9)
		}, "before its call"},
		{"complete twice", func(h *History) {
			id := h.Invoke(0, nil, 0)
			h.Complete(id, nil, 1)
			h.Complete(id, nil, 2)
		}, "already has an outcome"},
		{"timeout after complete", func(h *History) {
			id := h.Invoke(0, nil, 0)
			h.Complete(id, nil, 1)
			h.Timeout(id)
		}, "already has an outcome"},
		{"complete after fail", func(h *History) {
			id := h.Invoke(0, nil, 0)
			h.Fail(id)
			h.Complete(id, nil, 1)
		}, "already has an outcome"},
		{"discard after discard", func(h *History) {
			id := h.Invoke(0, nil, 0)
			h.Discard(id)
			h.Discard(id)
		}, "already has an outcome"},
		{"complete with an unknown output", func(h *History) {
			h.Complete(h.Invoke(0, nil, 0), Unknown{Reason: TimedOut}, 1)
		}, "use Fail or Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if s, _ := r.(string); !strings.Contains(s, tt.msg) {
					t.Fatalf("panic %q does not mention %q", r, tt.msg)
				}
			}()
			tt.f(NewHistory())
		})
	}
}

func TestUnknown(t *testing.T) {
	if !IsUnknown(Unknown{Reason: Pending}) || IsUnknown(KVOutput{}) || IsUnknown(nil) {
		t.Error("IsUnknown misclassifies")
	}
	for r, want := range map[UnknownReason]string{
		Failed: "failed", TimedOut: "timeout", Pending: "pending", 0: "UnknownReason(0)",
	} {
		if got := r.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", r, got, want)
		}
	}
}
