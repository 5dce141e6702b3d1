package replica

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOpensAreBounded: a topic of many partitions opens them at most
// maxConcurrentOpens at a time, in order, and every one comes online and
// takes produces.
func TestOpensAreBounded(t *testing.T) {
	r := newRig(t, 1)
	const n = 3*maxConcurrentOpens + 5
	r.createTopic("many", topicID(1), n, nil)
	require.Equal(t, maxConcurrentOpens, r.m.opens, "the first slots are taken at once")
	require.Len(t, r.m.openQueue, n-maxConcurrentOpens, "the rest wait")
	peak := 0
	for i := 0; i < 1000 && (r.m.opens > 0 || len(r.m.openQueue) > 0); i++ {
		peak = max(peak, r.m.opens)
		require.LessOrEqual(t, r.m.opens, maxConcurrentOpens)
		r.Run(time.Millisecond)
	}
	require.Zero(t, r.m.opens, "every slot given back")
	require.Empty(t, r.m.openQueue)
	require.Equal(t, maxConcurrentOpens, peak)
	for id := int32(0); id < n; id++ {
		p := r.online("many", id)
		res := r.produce(p, batch(t, 1), -1)
		require.NoError(t, res.Err, "many-%d", id)
	}
}
