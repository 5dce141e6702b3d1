package kraft

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/quorum"
)

// memberMetrics are the member's series (Config.Metrics); the gauges are
// computed from its state at each snapshot.
type memberMetrics struct {
	elections    *metrics.Counter
	commitTime   *metrics.Histogram
	controllerMs *metrics.Histogram
	// requests holds the controller's request counters by API key; only
	// looked up.
	requests map[int16]*metrics.Counter
	reg      *metrics.Registry
	// proposed are the leader's proposals not yet committed: the last
	// offset of each and when it was proposed, oldest first.
	proposed []proposal
}

type proposal struct {
	last int64
	at   time.Duration
}

// raftStates are the values of the current_state label: the Raft's roles,
// and observer for a member that is not a voter (whatever its role).
var raftStates = []string{"candidate", "follower", "leader", "observer", "prospective", "resigned", "unattached"}

// initMetrics registers the member's series; with metrics off (a nil
// registry) m.metrics stays nil.
func (m *Member) initMetrics() {
	reg := m.cfg.Metrics
	if reg == nil {
		return
	}
	mm := &memberMetrics{reg: reg, requests: map[int16]*metrics.Counter{},
		elections:    reg.Counter(metrics.RaftElections),
		commitTime:   reg.Histogram(metrics.RaftCommitLatency),
		controllerMs: reg.Histogram(metrics.ControllerEventProcessing),
	}
	m.metrics = mm
	for _, st := range raftStates {
		reg.GaugeFunc(metrics.RaftState, func() float64 {
			if m.stateName() == st {
				return 1
			}
			return 0
		}, st)
	}
	reg.GaugeFunc(metrics.RaftEpoch, func() float64 { return float64(m.soft.Epoch) })
	reg.GaugeFunc(metrics.RaftLeader, func() float64 {
		if m.soft.LeaderID == quorum.NoNode {
			return -1
		}
		return float64(m.soft.LeaderID)
	})
	reg.GaugeFunc(metrics.RaftHighWatermark, func() float64 { return float64(m.highWatermark) })
	reg.GaugeFunc(metrics.RaftLogEndOffset, func() float64 { return float64(m.journal.EndOffset().Offset) })
	reg.GaugeFunc(metrics.RaftLag, func() float64 {
		return float64(max(m.highWatermark-(m.image.Position().Offset+1), 0))
	})
	active := func(f func(img *meta.Image) int) func() float64 {
		return func() float64 {
			if !m.ctrl.IsLeader() {
				return 0
			}
			return float64(f(m.image))
		}
	}
	reg.GaugeFunc(metrics.ControllerActive, active(func(*meta.Image) int { return 1 }))
	reg.GaugeFunc(metrics.ControllerTopics, active((*meta.Image).NumTopics))
	reg.GaugeFunc(metrics.ControllerPartitions, active((*meta.Image).NumPartitions))
	brokers := func(fenced bool) func(img *meta.Image) int {
		return func(img *meta.Image) int {
			n := 0
			for b := range img.Brokers() {
				if b.Fenced == fenced {
					n++
				}
			}
			return n
		}
	}
	reg.GaugeFunc(metrics.ControllerActiveBrokers, active(brokers(false)))
	reg.GaugeFunc(metrics.ControllerFencedBrokers, active(brokers(true)))
	reg.GaugeFunc(metrics.ControllerOfflinePartitions, active(func(img *meta.Image) int {
		n := 0
		for t := range img.Topics() {
			for p := range t.Partitions() {
				if !p.HasLeader() {
					n++
				}
			}
		}
		return n
	}))
}

// stateName is the member's current_state label value.
func (m *Member) stateName() string {
	if !m.voter {
		return "observer"
	}
	if m.soft.Role == 0 {
		return "unattached" // not started yet
	}
	return m.soft.Role.String()
}

// roleChanged counts an election started, and forgets the proposals of a
// leadership that ended.
func (mm *memberMetrics) roleChanged(s quorum.SoftState) {
	if mm == nil {
		return
	}
	if s.Role == quorum.RoleCandidate {
		mm.elections.Inc()
	}
	if s.Role != quorum.RoleLeader {
		mm.proposed = mm.proposed[:0]
	}
}

// proposedAt records a proposal of the leader.
func (mm *memberMetrics) proposedAt(last int64, now time.Duration) {
	if mm != nil {
		mm.proposed = append(mm.proposed, proposal{last, now})
	}
}

// committed observes the commit latency of the proposals the high
// watermark now covers.
func (mm *memberMetrics) committed(hw int64, now time.Duration) {
	if mm == nil {
		return
	}
	n := 0
	for n < len(mm.proposed) && mm.proposed[n].last < hw {
		mm.commitTime.Observe(float64(now-mm.proposed[n].at) / float64(time.Millisecond))
		n++
	}
	if n > 0 {
		mm.proposed = append(mm.proposed[:0], mm.proposed[n:]...)
	}
}

// controllerRequest counts a request the active controller takes and
// returns a done that observes its processing time.
func (mm *memberMetrics) controllerRequest(req kmsg.Request, start time.Duration, now func() time.Duration, done func(kmsg.Response, error)) func(kmsg.Response, error) {
	if mm == nil {
		return done
	}
	c, ok := mm.requests[req.Key()]
	if !ok {
		c = mm.reg.Counter(metrics.ControllerRequests, kmsg.NameForKey(req.Key()))
		mm.requests[req.Key()] = c
	}
	c.Inc()
	return func(resp kmsg.Response, err error) {
		mm.controllerMs.Observe(float64(now()-start) / float64(time.Millisecond))
		done(resp, err)
	}
}
