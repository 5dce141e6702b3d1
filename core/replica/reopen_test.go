package replica_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/replica"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/simtest"
)

// partitionRig is broker 1 (simtest.Rig, host "b1") leading the one
// partition t-0, with a new Manager every incarnation.
type partitionRig struct {
	*simtest.Rig
	m *replica.Manager
}

// newPartitionRig starts the broker and runs it for a second.
func newPartitionRig(t *testing.T) *partitionRig {
	id := meta.UUID{1, 2, 3}
	d := meta.Empty().NewDelta()
	require.NoError(t, d.Replay(&meta.TopicRecord{Name: "t", TopicID: id}))
	require.NoError(t, d.Replay(&meta.PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}))
	img := d.Apply(meta.Position{Offset: 1, Epoch: 1})
	r := &partitionRig{}
	r.Rig = simtest.NewProcess(t, sim.Config{Seed: 1}, "b1", func(e env.Env) {
		r.m = replica.NewManager(e, replica.Config{NodeID: 1, ReopenBackoff: 100 * time.Millisecond})
		r.m.Apply(img, true)
	})
	r.Run(time.Second)
	return r
}

func (r *partitionRig) lookup() *replica.Partition {
	r.T.Helper()
	part, err := r.m.Lookup("t", 0)
	require.NoError(r.T, err)
	return part
}

// produce appends a batch of one 300-byte record and runs until it is
// answered (10 s at most).
func (r *partitionRig) produce() replica.ProduceResult {
	r.T.Helper()
	b := record.NewBuilder()
	b.Append(r.Env.Now().UnixMilli(), nil, make([]byte, 300))
	raw, err := b.AppendTo(nil)
	require.NoError(r.T, err)
	var res *replica.ProduceResult
	r.lookup().Produce(raw, -1, r.Env.Now(), func(pr replica.ProduceResult) { res = &pr })
	for i := 0; res == nil && i < 1000; i++ {
		r.Run(10 * time.Millisecond)
	}
	require.NotNil(r.T, res, "no answer")
	return *res
}

// TestFailedReopenIsRetried: a partition whose log failed is reopened
// after a backoff; when that reopen fails too (here the failed log's
// recovery hits a full disk), the partition must try again, and serve
// once the disk is healthy. A failed reopen used to leave the partition
// offline for good, answering KAFKA_STORAGE_ERROR until the process
// restarted (log seed 3828).
func TestFailedReopenIsRetried(t *testing.T) {
	r := newPartitionRig(t)
	part := r.lookup()
	require.True(t, part.Online())
	produce := func() error { return r.produce().Err }
	for i := 0; i < 50; i++ {
		require.NoError(t, produce()) // enough for index entries
	}
	// A failed sync fails the log; then the disk is full, and every
	// reopen fails in Open, rewriting the failed log's index files.
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncFailProbability: 1})
	require.Error(t, produce())
	r.Proc.Disk().SetFaults(sim.DiskFaults{CapacityBytes: 1})
	r.Run(2 * time.Second)
	require.False(t, part.Online())
	r.Proc.Disk().SetFaults(sim.DiskFaults{})
	r.Run(3 * time.Second)
	require.True(t, part.Online(), "the partition never came back after the disk healed")
	require.NoError(t, produce())
}

// TestUnmarkedFailureIsMarkedBeforeReopen: a Sync fails for delayed
// allocation (ENOSPC) and the failure marker cannot be created either
// (the directory needs a block the full disk lacks). The reopen must
// create the marker before it opens the log: an Open without it trusted
// the page cache, which still showed the lost batch; the reopened log
// appended after it and acknowledged, and the next power loss left zeros
// below the recovery point, so the log never opened again (log seed 153).
func TestUnmarkedFailureIsMarkedBeforeReopen(t *testing.T) {
	r := newPartitionRig(t)
	lookup, produce := r.lookup, r.produce
	for i := 0; i < 5; i++ {
		require.NoError(t, produce().Err)
	}
	r.Proc.Disk().SetFaults(sim.DiskFaults{SyncNoSpaceProbability: 1, NoSpaceProbability: 1})
	require.Error(t, produce().Err, "the batch whose Sync failed is not acknowledged")
	r.Run(500 * time.Millisecond)
	require.False(t, lookup().Online(), "no reopen while the marker cannot be created")
	r.Proc.Disk().SetFaults(sim.DiskFaults{})
	r.Run(3 * time.Second)
	require.True(t, lookup().Online(), "the partition came back once the marker could be created")
	res := produce()
	require.NoError(t, res.Err)
	require.Equal(t, int64(5), res.BaseOffset, "the lost batch was dropped, not built on")

	// A power loss keeps every acknowledged batch and the log opens.
	r.Proc.Crash()
	r.Proc.Start()
	r.Run(3 * time.Second)
	require.True(t, lookup().Online(), "the log opens after a power loss")
	require.Equal(t, int64(6), lookup().LogEndOffset())
}
