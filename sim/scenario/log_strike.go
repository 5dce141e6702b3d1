package scenario

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Controller failover during ISR changes (the replicated scenarios, one
// seed in two): when a leader hands an ISR change to the active controller
// (replica.Config.AlterPartitionSent), the harness sometimes strikes that
// controller while the change is in flight: a process kill or a power
// loss (restarted 0.2–2 s later), or a partition isolating it from the
// other servers for 0.5–3 s. The nemesis's own faults reach the
// controller only by chance, and an ISR change is in flight for about a
// network round trip and a metadata commit; this makes the overlap
// common. A strike waits until every server is up (the nemesis keeps a
// minority down; a strike adds one more) and at least strikeGapMin since
// the last.

// Bounds of the strikes.
const (
	// strikeDelayMax bounds the delay from the send of the change to the
	// strike: within a round trip, so that the request or its answer is
	// on the wire or the controller is committing it.
	strikeDelayMax = time.Millisecond
	// strikeGapMin is the least time between two strikes.
	strikeGapMin = time.Second
	// strikeDownMin and strikeDownMax bound how long a killed controller
	// stays down; strikeCutMin and strikeCutMax how long an isolated one
	// stays cut off.
	strikeDownMin = 200 * time.Millisecond
	strikeDownMax = 2 * time.Second
	strikeCutMin  = 500 * time.Millisecond
	strikeCutMax  = 3 * time.Second
)

// controllerStrikes is one run's strikes.
type controllerStrikes struct {
	on   bool
	r    *rand.Rand
	next time.Duration // no strike before
	// kills and cuts count the strikes, for the tests' figures.
	kills, cuts int
}

// alterPartitionSent is told that server from sent an ISR change.
func (h *logHarness) alterPartitionSent(from int, topic string, partition int32) {
	st := &h.strikes
	if !st.on || h.phase != logFaults || h.s.Now() < st.next {
		return
	}
	ctrl := -1
	for i, p := range h.procs {
		srv := h.server(i)
		if !p.Up() || srv == nil {
			return // a server is down already
		}
		if srv.ActiveController() {
			ctrl = i
		}
	}
	if ctrl < 0 {
		return
	}
	why := fmt.Sprintf("%s, the active controller, while %s's ISR change of %s-%d is in flight", h.names[ctrl], h.names[from], topic, partition)
	h.strike(st, ctrl, "controller-strike", why)
}

// strike kills, powers off or isolates server target within
// strikeDelayMax, as fault kind; st spaces the strikes out and counts
// them.
func (h *logHarness) strike(st *controllerStrikes, target int, kind, why string) {
	st.next = h.s.Now() + strikeGapMin + time.Duration(st.r.Int64N(int64(strikeGapMin)))
	delay := time.Duration(st.r.Int64N(int64(strikeDelayMax)))
	how := st.r.IntN(3)
	p := h.procs[target]
	h.s.After(delay, "log:strike-"+strings.TrimSuffix(kind, "-strike"), func() {
		if !p.Up() {
			return
		}
		inc := p.Incarnation()
		switch how {
		case 0, 1:
			st.kills++
			h.s.Fault(kind, "kill "+why)
			if how == 0 {
				p.Kill()
			} else {
				p.Crash()
			}
			down := drawBetween(st.r, strikeDownMin, strikeDownMax)
			h.s.After(down, "log:strike-restart", func() {
				if p.Incarnation() == inc && !p.Up() {
					p.Start()
				}
			})
		default:
			st.cuts++
			h.s.Fault(kind, "isolate "+why)
			var others []string
			for i, n := range h.names {
				if i != target {
					others = append(others, n)
				}
			}
			cut := h.s.Network().Partition([]string{h.names[target]}, others)
			h.s.After(drawBetween(st.r, strikeCutMin, strikeCutMax), "log:strike-heal", cut.Heal)
		}
	})
}

// coordinatorStrike decides whether to strike coordinator (a node id)
// now, one time in oneIn, in the fault phase of a seed that strikes, past
// st's spacing, while every node is up and serving; it returns the
// coordinator's index.
func (h *logHarness) coordinatorStrike(st *controllerStrikes, oneIn int, coordinator int32) (int, bool) {
	if !st.on || h.phase != logFaults || h.s.Now() < st.next || st.r.IntN(oneIn) != 0 {
		return 0, false
	}
	target := int(coordinator) - 1
	if target < 0 || target >= len(h.procs) {
		return 0, false
	}
	for i, p := range h.procs {
		if !p.Up() || h.server(i) == nil {
			return 0, false
		}
	}
	return target, true
}
