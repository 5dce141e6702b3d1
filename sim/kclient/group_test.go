package kclient_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/sim/kclient"
)

// groupRig is a group member in a client process of its own.
type groupRig struct {
	gm     *kclient.GroupMember
	events []kclient.GroupEvent
}

func (cl *cluster) member(name, instance string, cooperative bool, l *log) *groupRig {
	r := &groupRig{}
	p := cl.s.AddProcess(name, func(e env.Env) {
		c := kclient.New(e, kclient.Config{ClientID: name, Bootstrap: []string{"n1:9092", "n2:9092", "n3:9092"}})
		r.gm = kclient.NewGroupMember(c, kclient.GroupConfig{Group: "g", InstanceID: instance, Topics: []string{"t"}, Cooperative: cooperative,
			SessionTimeout: 6 * time.Second, RebalanceTimeout: 5 * time.Second, HeartbeatInterval: time.Second, CommitInterval: 200 * time.Millisecond,
			Consumer: kclient.ConsumerConfig{MaxWait: 100 * time.Millisecond, OnFetch: l.onFetch(cl.t)},
			OnEvent:  func(ev kclient.GroupEvent) { r.events = append(r.events, ev) }})
	})
	p.Start()
	return r
}

func (r *groupRig) committed() map[int32]int64 {
	out := map[int32]int64{}
	for _, ev := range r.events {
		if ev.Kind != kclient.CommitAnswered {
			continue
		}
		for _, c := range ev.Commits {
			if c.Code == 0 {
				out[c.Partition] = max(out[c.Partition], c.Offset)
			}
		}
	}
	return out
}

// TestGroupMembersSplitConsumeAndHandOver: two members split a topic's
// partitions, read everything and commit their positions; when one
// leaves, the other takes over its partitions from their committed
// offsets. Both assignors.
func TestGroupMembersSplitConsumeAndHandOver(t *testing.T) {
	for _, cooperative := range []bool{false, true} {
		t.Run(map[bool]string{false: "range", true: "cooperative-sticky"}[cooperative], func(t *testing.T) {
			cl := newCluster(t, 3, kclient.Config{})
			cl.createTopic(kclient.TopicSpec{Name: "t", Partitions: 4, ReplicationFactor: 1})
			l := newLog()
			p := cl.idempotentProducer(l)
			for i := 0; i < 40; i++ {
				p.Produce("t", int32(i%4), 2)
			}
			cl.awaitAcks(p)
			a, b := cl.member("a", "", cooperative, l), cl.member("b", "", cooperative, l)
			cl.until(20*time.Second, "both stable with two partitions each", func() bool {
				return a.gm != nil && b.gm != nil && a.gm.Stable() && b.gm.Stable() &&
					len(a.gm.Assigned()) == 2 && len(b.gm.Assigned()) == 2 && a.gm.Generation() == b.gm.Generation()
			})
			cl.until(10*time.Second, "everything read and committed", func() bool {
				done := len(l.read) == len(l.acked)
				ca, cb := a.committed(), b.committed()
				for part := int32(0); part < 4; part++ {
					done = done && max(ca[part], cb[part]) == 20
				}
				return done
			})
			var left error
			answered := false
			a.gm.Leave(func(err error) { left, answered = err, true })
			cl.until(20*time.Second, "b owns every partition", func() bool { return b.gm.Stable() && len(b.gm.Assigned()) == 4 })
			require.True(t, answered)
			require.NoError(t, left)
			for _, ev := range b.events {
				if ev.Kind == kclient.OffsetsFetched && ev.Generation == b.gm.Generation() {
					for _, c := range ev.Commits {
						require.Equal(t, int64(20), c.Offset, "b starts %s-%d from its committed offset", c.Topic, c.Partition)
					}
				}
			}
		})
	}
}

// TestStaticMemberRestartKeepsItsAssignment: a static member that comes
// back within its session timeout gets its assignment again without a
// rebalance (KIP-345): the generation does not move.
func TestStaticMemberRestartKeepsItsAssignment(t *testing.T) {
	cl := newCluster(t, 4, kclient.Config{})
	cl.createTopic(kclient.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 1})
	l := newLog()
	a := cl.member("a", "ia", false, l)
	b := cl.member("b", "ib", false, l)
	cl.until(20*time.Second, "both stable", func() bool {
		return a.gm != nil && b.gm != nil && a.gm.Stable() && b.gm.Stable() && a.gm.Generation() == b.gm.Generation() && len(a.gm.Assigned()) == 1
	})
	gen, owned, oldID := a.gm.Generation(), a.gm.Assigned(), a.gm.MemberID()
	a.gm.Close()
	a2 := cl.member("a2", "ia", false, l)
	cl.until(10*time.Second, "the new incarnation stable", func() bool { return a2.gm != nil && a2.gm.Stable() })
	require.Equal(t, gen, a2.gm.Generation())
	require.Equal(t, owned, a2.gm.Assigned())
	require.NotEqual(t, oldID, a2.gm.MemberID())
	cl.run(3 * time.Second)
	require.Equal(t, gen, b.gm.Generation(), "the other member saw no rebalance")
}
