package replica

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/meta"
)

// violates runs f and requires it to fail an invariant assertion whose
// message contains want.
func violates(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		v, ok := r.(assert.Violation)
		require.True(t, ok, "want an assert.Violation naming %q, got %v", want, r)
		require.Contains(t, v.Msg, want)
	}()
	f()
}

// TestInvariantsAreAsserted breaks each invariant doc.go lists as
// asserted in this package, on a partition this broker leads, and
// requires the assertion to fire: a state the code rules out crashes the
// node rather than corrupting the log.
func TestInvariantsAreAsserted(t *testing.T) {
	r := newRig(t, 1)
	p := r.newTopic("inv", topicID(9))
	require.NoError(t, r.produce(p, batch(t, 3), -1).Err)
	part := meta.Partition{Leader: testNode, LeaderEpoch: p.leaderEpoch, PartitionEpoch: p.partitionEpoch, Replicas: []int32{testNode}, ISR: []int32{testNode}}

	t.Run("leader epoch goes back", func(t *testing.T) {
		old := part
		old.LeaderEpoch--
		violates(t, "leader epoch went back", func() { p.update(old, p.cfg) })
	})
	t.Run("partition epoch goes back", func(t *testing.T) {
		old := part
		old.PartitionEpoch--
		violates(t, "partition epoch went back", func() { p.update(old, p.cfg) })
	})
	t.Run("high watermark past the durable offset", func(t *testing.T) {
		require.True(t, p.cfg.durable())
		// Appended, not yet fsynced: the log end passes the durable offset.
		p.Produce(batch(t, 2), 1, r.Env.Now(), func(ProduceResult) {})
		require.Greater(t, p.l.LogEndOffset(), p.l.DurableOffset())
		violates(t, "past the durable offset", func() { p.setHighWatermark(p.l.LogEndOffset()) })
		r.Run(0)
	})
	t.Run("leader appends while resigning", func(t *testing.T) {
		p.resigning = true
		defer func() { p.resigning = false }()
		violates(t, "appending as leader", p.assertLeaderAppend)
	})
	t.Run("leader proposes an ISR without itself", func(t *testing.T) {
		violates(t, "without itself", func() { p.alterISR([]int32{testNode + 1}) })
	})
}
