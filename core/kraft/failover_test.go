package kraft_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/strata-log/strata/core/quorum"
)

// TestCrashFailoverIsFast kills the active controller of a 3-voter
// cluster, as a SIGKILL does (the process dies, its kernel resets its
// connections at its peers and refuses their redials), over 20 seeds with
// default timeouts, and requires the median time until a new controller is
// active to be well under the 2 s fetch timeout: the survivors learn of the
// kill from a refused redial to the leader (quorum.Raft.PeerUnreachable),
// not from the fetch timeout.
func TestCrashFailoverIsFast(t *testing.T) {
	took := failovers(t, func(c *cluster, i int) { c.procs[i].Kill() })
	if median := medianOf(took); median >= 500*time.Millisecond {
		t.Fatalf("median failover %v, want < 500ms (all: %v)", median, took)
	}
}

// TestPowerLossFailover cuts the active controller's power instead: the
// machine goes silent (no reset, no refused dial), so the survivors notice
// only by their fetch timeout, then elect. Every failover must take at most
// the fetch timeout plus an election timeout and its backoff.
func TestPowerLossFailover(t *testing.T) {
	took := failovers(t, func(c *cluster, i int) { c.procs[i].Crash() })
	bound := quorum.DefaultFetchTimeout + quorum.DefaultElectionTimeout + quorum.DefaultElectionBackoffMax
	if worst := slices.Max(took); worst > bound {
		t.Fatalf("slowest failover %v, want <= %v (all: %v)", worst, bound, took)
	}
}

// failovers stops the active controller with stop in each of 20 seeds
// and returns how long each took until another controller was active and
// served requests.
func failovers(t *testing.T, stop func(c *cluster, i int)) []time.Duration {
	const seeds = 20
	var took []time.Duration
	for seed := uint64(1); seed <= seeds; seed++ {
		c := newCluster(t, seed, 3)
		leader, brokerEpoch := c.leadWithTopic("alpha")
		// Stop it at a different phase of the followers' fetch loop in
		// each seed.
		if err := c.s.RunFor(time.Duration(seed*137%1000) * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		stop(c, leader)
		stoppedAt := c.s.Now()
		next := -1
		c.runUntil(electionBound, fmt.Sprintf("seed %d: elect a successor", seed), func() bool {
			next = c.activeController()
			return next >= 0 && next != leader
		})
		d := c.s.Now() - stoppedAt
		took = append(took, d)
		t.Logf("seed %d: c%d stopped, c%d active after %v", seed, leader+1, next+1, d)
		// The new controller serves requests.
		c.heartbeat(next, brokerEpoch)
		c.createTopic(next, "beta")
	}
	t.Logf("failover over %d seeds: median %v, min %v, max %v", seeds, medianOf(took), slices.Min(took), slices.Max(took))
	return took
}

func medianOf(d []time.Duration) time.Duration {
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	n := len(sorted)
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// TestConnResetDoesNotDisrupt resets every connection of a live leader (as
// a middlebox or a NIC reset would): the followers redial it at once and
// keep following it, in the same epoch, with the same active controller. A
// closed connection alone is not reported to the Raft; only a failed
// redial is.
func TestConnResetDoesNotDisrupt(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			c := newCluster(t, seed, 3)
			leader := c.waitLeader()
			c.converge()
			epoch := c.members[leader].Status().Epoch
			c.s.Network().ResetConns(c.procs[leader].Name())
			if err := c.s.RunFor(3 * time.Second); err != nil {
				t.Fatal(err)
			}
			if now := c.activeController(); now != leader || c.members[leader].Status().Epoch != epoch {
				t.Fatalf("after the reset: active controller c%d in epoch %d, want c%d in epoch %d", now+1, c.members[now].Status().Epoch, leader+1, epoch)
			}
			for i, m := range c.members {
				if st := m.Status(); st.Epoch != epoch || st.Leader != c.members[leader].Status().Leader {
					t.Fatalf("c%d: epoch %d leader %d, want epoch %d leader c%d", i+1, st.Epoch, st.Leader, epoch, leader+1)
				}
			}
		})
	}
}
