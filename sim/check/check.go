// Package check is the one home of the simulator's transition checkers:
// each observes the events of a run as they happen (a member's role
// change, an image applied), not samples of state, and reports a finding
// with the simulated time and the events that led there. A scenario feeds
// a Set from hooks in the code under test (kraft.Observer) and fails the
// seed on the first finding.
//
// Adding a checker: implement Checker, add its constructor to All, and add
// a planted case to the table in check_test.go — a checker without one
// fails TestEveryCheckerHasAPlantedBug, since a check that cannot fail
// proves nothing.
package check

import (
	"fmt"
	"strings"
	"time"
)

// Kind is an event's kind.
type Kind uint8

const (
	// RoleChange: a quorum member's role, epoch or known leader changed.
	RoleChange Kind = iota + 1
	// Apply: a quorum member's metadata image moved to a new position.
	Apply
)

func (k Kind) String() string {
	switch k {
	case RoleChange:
		return "role"
	case Apply:
		return "apply"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Event is one transition of one process's incarnation.
type Event struct {
	At   time.Duration
	Node string
	// Inc is the process incarnation (sim.Process.Incarnation).
	Inc  uint64
	Kind Kind
	// RoleChange: the role, the epoch and the leader the member follows
	// (-1 for none).
	Role   string
	Epoch  int32
	Leader int32
	// Apply: the image's position and digest.
	Offset   int64
	PosEpoch int32
	Digest   string
}

func (e Event) String() string {
	switch e.Kind {
	case RoleChange:
		return fmt.Sprintf("%v %s#%d role %s epoch %d leader %d", e.At, e.Node, e.Inc, e.Role, e.Epoch, e.Leader)
	case Apply:
		return fmt.Sprintf("%v %s#%d applied %d@%d digest %.12s", e.At, e.Node, e.Inc, e.Offset, e.PosEpoch, e.Digest)
	}
	return fmt.Sprintf("%v %s#%d %s", e.At, e.Node, e.Inc, e.Kind)
}

// Checker observes events; Observe returns a description of a violation
// the event completes, or "".
type Checker interface {
	Name() string
	Observe(e Event) string
}

// Finding is a violation: the check, when, what, and the last events the
// Set saw up to it (the trail).
type Finding struct {
	Check string
	At    time.Duration
	Msg   string
	Trail []Event
}

func (f *Finding) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: at %v: %s; the last events:", f.Check, f.At, f.Msg)
	for _, e := range f.Trail {
		b.WriteString("\n  ")
		b.WriteString(e.String())
	}
	return b.String()
}

// trailLen is how many of the latest events a finding carries.
const trailLen = 16

// Set fans every event out to its checkers.
type Set struct {
	checkers []Checker
	trail    []Event // the latest events, oldest first
	finding  *Finding
	events   uint64
}

// NewSet returns a set of the given checkers (All() for every one).
func NewSet(checkers ...Checker) *Set { return &Set{checkers: checkers} }

// Observe hands e to every checker and returns the first finding it
// completes, or nil. After a finding the set keeps returning it.
func (s *Set) Observe(e Event) *Finding {
	if s.finding != nil {
		return s.finding
	}
	s.events++
	s.trail = append(s.trail, e)
	if len(s.trail) > trailLen {
		s.trail = append(s.trail[:0], s.trail[len(s.trail)-trailLen:]...)
	}
	for _, c := range s.checkers {
		if msg := c.Observe(e); msg != "" {
			s.finding = &Finding{Check: c.Name(), At: e.At, Msg: msg, Trail: append([]Event(nil), s.trail...)}
			return s.finding
		}
	}
	return nil
}

// Events is how many events the set observed.
func (s *Set) Events() uint64 { return s.events }

// All returns a fresh instance of every checker.
func All() []Checker {
	return []Checker{NewElectionSafety(), NewAppliedMonotonic(), NewImageAgreement()}
}
