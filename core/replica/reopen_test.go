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
)

// TestFailedReopenIsRetried: a partition whose log failed is reopened
// after a backoff; when that reopen fails too (here the failed log's
// recovery hits a full disk), the partition must try again, and serve
// once the disk is healthy. A failed reopen used to leave the partition
// offline for good, answering KAFKA_STORAGE_ERROR until the process
// restarted (log seed 3828).
func TestFailedReopenIsRetried(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1})
	id := meta.UUID{1, 2, 3}
	d := meta.Empty().NewDelta()
	require.NoError(t, d.Replay(&meta.TopicRecord{Name: "t", TopicID: id}))
	require.NoError(t, d.Replay(&meta.PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}))
	img := d.Apply(meta.Position{Offset: 1, Epoch: 1})
	var m *replica.Manager
	var e env.Env
	proc := s.AddProcess("b1", func(pe env.Env) {
		e = pe
		m = replica.NewManager(pe, replica.Config{NodeID: 1, ReopenBackoff: 100 * time.Millisecond})
		m.Apply(img, true)
	})
	proc.Start()
	require.NoError(t, s.RunFor(time.Second))
	part, err := m.Lookup("t", 0)
	require.NoError(t, err)
	require.True(t, part.Online())

	produce := func() error {
		b := record.NewBuilder()
		b.Append(e.Now().UnixMilli(), nil, make([]byte, 300))
		raw, err := b.AppendTo(nil)
		require.NoError(t, err)
		var res *replica.ProduceResult
		part.Produce(raw, -1, e.Now(), func(r replica.ProduceResult) { res = &r })
		for i := 0; res == nil && i < 1000; i++ {
			require.NoError(t, s.RunFor(10*time.Millisecond))
		}
		require.NotNil(t, res, "no answer")
		return res.Err
	}
	for i := 0; i < 50; i++ {
		require.NoError(t, produce()) // enough for index entries
	}
	// A failed sync fails the log; then the disk is full, and every
	// reopen fails in Open, rewriting the failed log's index files.
	proc.Disk().SetFaults(sim.DiskFaults{SyncFailProbability: 1})
	require.Error(t, produce())
	proc.Disk().SetFaults(sim.DiskFaults{CapacityBytes: 1})
	require.NoError(t, s.RunFor(2*time.Second))
	require.False(t, part.Online())
	proc.Disk().SetFaults(sim.DiskFaults{})
	require.NoError(t, s.RunFor(3*time.Second))
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
	s := sim.New(sim.Config{Seed: 1})
	id := meta.UUID{1, 2, 3}
	d := meta.Empty().NewDelta()
	require.NoError(t, d.Replay(&meta.TopicRecord{Name: "t", TopicID: id}))
	require.NoError(t, d.Replay(&meta.PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}))
	img := d.Apply(meta.Position{Offset: 1, Epoch: 1})
	var m *replica.Manager
	var e env.Env
	proc := s.AddProcess("b1", func(pe env.Env) {
		e = pe
		m = replica.NewManager(pe, replica.Config{NodeID: 1, ReopenBackoff: 100 * time.Millisecond})
		m.Apply(img, true)
	})
	proc.Start()
	require.NoError(t, s.RunFor(time.Second))
	lookup := func() *replica.Partition {
		part, err := m.Lookup("t", 0)
		require.NoError(t, err)
		return part
	}
	produce := func() replica.ProduceResult {
		b := record.NewBuilder()
		b.Append(e.Now().UnixMilli(), nil, make([]byte, 300))
		raw, err := b.AppendTo(nil)
		require.NoError(t, err)
		var res *replica.ProduceResult
		lookup().Produce(raw, -1, e.Now(), func(r replica.ProduceResult) { res = &r })
		for i := 0; res == nil && i < 1000; i++ {
			require.NoError(t, s.RunFor(10*time.Millisecond))
		}
		require.NotNil(t, res, "no answer")
		return *res
	}
	for i := 0; i < 5; i++ {
		require.NoError(t, produce().Err)
	}
	proc.Disk().SetFaults(sim.DiskFaults{SyncNoSpaceProbability: 1, NoSpaceProbability: 1})
	require.Error(t, produce().Err, "the batch whose Sync failed is not acknowledged")
	require.NoError(t, s.RunFor(500*time.Millisecond))
	require.False(t, lookup().Online(), "no reopen while the marker cannot be created")
	proc.Disk().SetFaults(sim.DiskFaults{})
	require.NoError(t, s.RunFor(3*time.Second))
	require.True(t, lookup().Online(), "the partition came back once the marker could be created")
	res := produce()
	require.NoError(t, res.Err)
	require.Equal(t, int64(5), res.BaseOffset, "the lost batch was dropped, not built on")

	// A power loss keeps every acknowledged batch and the log opens.
	proc.Crash()
	proc.Start()
	require.NoError(t, s.RunFor(3*time.Second))
	require.True(t, lookup().Online(), "the log opens after a power loss")
	require.Equal(t, int64(6), lookup().LogEndOffset())
}
