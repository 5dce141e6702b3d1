package linearizability

import (
	"fmt"
	"math"
	"time"

	"github.com/anishathalye/porcupine"
)

// UnknownReturn is the return time given to an operation whose outcome is
// unknown. It stands for plus infinity: the operation is concurrent with
// everything invoked after it, so the checker may linearize it at any point
// after its call, including after every other operation (which is how "it
// never took effect" is expressed).
const UnknownReturn int64 = math.MaxInt64

// UnknownReason says why an operation's outcome was not observed.
type UnknownReason uint8

const (
	// Failed means the client got an error that leaves the outcome open,
	// for example a lost connection after the request was sent.
	Failed UnknownReason = iota + 1
	// TimedOut means the client stopped waiting for a response.
	TimedOut
	// Pending means the run ended before the operation completed, failed
	// or timed out.
	Pending
)

// String returns a short lower-case name for r.
func (r UnknownReason) String() string {
	switch r {
	case Failed:
		return "failed"
	case TimedOut:
		return "timeout"
	case Pending:
		return "pending"
	default:
		return fmt.Sprintf("UnknownReason(%d)", uint8(r))
	}
}

// Unknown is the output recorded for an operation whose outcome was not
// observed. Models must accept it as the output of any operation and apply
// the operation's effect, because the checker decides where (if anywhere
// before the end of the history) the operation took effect.
type Unknown struct {
	Reason UnknownReason
}

// String renders u as it appears in descriptions of operations, for
// example "? (timeout)".
func (u Unknown) String() string {
	return "? (" + u.Reason.String() + ")"
}

// IsUnknown reports whether output is the output of an operation whose
// outcome was not observed.
func IsUnknown(output any) bool {
	_, ok := output.(Unknown)
	return ok
}

// OpID identifies one operation within the History that returned it.
type OpID int

// opStatus is where an operation is in its life.
type opStatus uint8

const (
	statusPending opStatus = iota
	statusCompleted
	statusUnknown
	statusDiscarded
)

// record is one invoked operation.
type record struct {
	client int
	input  any
	output any
	call   time.Duration
	ret    time.Duration
	status opStatus
}

// History records client operations against virtual time, in the order they
// were invoked. The zero value is an empty history ready to use.
//
// A History is not safe for concurrent use.
type History struct {
	records []record
}

// NewHistory returns an empty history.
func NewHistory() *History {
	return &History{}
}

// Invoke records that client called an operation with input at virtual time
// at, and returns the handle with which to report its outcome. Clients are
// numbered from zero; porcupine's visualisation draws one row per client.
func (h *History) Invoke(client int, input any, at time.Duration) OpID {
	if client < 0 {
		panic(fmt.Sprintf("linearizability: Invoke: negative client %d", client))
	}
	if at < 0 {
		panic(fmt.Sprintf("linearizability: Invoke: negative time %v", at))
	}
	h.records = append(h.records, record{client: client, input: input, call: at})
	return OpID(len(h.records) - 1)
}

// Complete records that operation id returned output at virtual time at.
func (h *History) Complete(id OpID, output any, at time.Duration) {
	r := h.pending(id, "Complete")
	if at < r.call {
		panic(fmt.Sprintf("linearizability: Complete: op %d returns at %v before its call at %v", id, at, r.call))
	}
	if IsUnknown(output) {
		panic(fmt.Sprintf("linearizability: Complete: op %d given an Unknown output; use Fail or Timeout", id))
	}
	r.output = output
	r.ret = at
	r.status = statusCompleted
}

// Fail records that operation id ended in an error that leaves its outcome
// unknown: it may or may not have taken effect, at any time after its call.
func (h *History) Fail(id OpID) {
	h.unknown(id, Failed, "Fail")
}

// Timeout records that the client stopped waiting for operation id: it may
// or may not have taken effect, at any time after its call.
func (h *History) Timeout(id OpID) {
	h.unknown(id, TimedOut, "Timeout")
}

// Discard removes operation id from the history. Use it only when the
// operation certainly had no effect, for example a request the server
// rejected before acting on it; when in doubt use Fail, which is always
// sound but makes the check slower.
func (h *History) Discard(id OpID) {
	r := h.pending(id, "Discard")
	r.status = statusDiscarded
}

// Len returns the number of operations Operations would export: every
// invoked operation that was not discarded.
func (h *History) Len() int {
	n := 0
	for i := range h.records {
		if h.records[i].status != statusDiscarded {
			n++
		}
	}
	return n
}

// UnknownLen returns how many of the exported operations have an unknown
// outcome, counting operations still pending.
func (h *History) UnknownLen() int {
	n := 0
	for i := range h.records {
		switch h.records[i].status {
		case statusPending, statusUnknown:
			n++
		}
	}
	return n
}

// Operations exports the history in invocation order. Call and return times
// are virtual nanoseconds. An operation with an unknown outcome, including
// one still pending, is exported with an [Unknown] output and a return time
// of [UnknownReturn]. Discarded operations are left out.
func (h *History) Operations() []porcupine.Operation {
	ops := make([]porcupine.Operation, 0, len(h.records))
	for i := range h.records {
		r := &h.records[i]
		op := porcupine.Operation{
			ClientId: r.client,
			Input:    r.input,
			Call:     int64(r.call),
		}
		switch r.status {
		case statusDiscarded:
			continue
		case statusCompleted:
			op.Output = r.output
			op.Return = int64(r.ret)
		case statusUnknown:
			op.Output = r.output
			op.Return = UnknownReturn
		case statusPending:
			op.Output = Unknown{Reason: Pending}
			op.Return = UnknownReturn
		}
		ops = append(ops, op)
	}
	return ops
}

// pending returns the record for id, which must not have an outcome yet.
func (h *History) pending(id OpID, method string) *record {
	if id < 0 || int(id) >= len(h.records) {
		panic(fmt.Sprintf("linearizability: %s: unknown op %d", method, id))
	}
	r := &h.records[id]
	if r.status != statusPending {
		panic(fmt.Sprintf("linearizability: %s: op %d already has an outcome", method, id))
	}
	return r
}

// unknown marks id as having an unknown outcome for reason.
func (h *History) unknown(id OpID, reason UnknownReason, method string) {
	r := h.pending(id, method)
	r.output = Unknown{Reason: reason}
	r.status = statusUnknown
}
