package coord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/replica"
	"github.com/strata-log/strata/sim"
)

// logShard is a Shard that notes what the runtime does to it.
type logShard struct {
	replayed         []string
	loaded, unloaded int
}

func (s *logShard) Replay(key, value []byte) error {
	s.replayed = append(s.replayed, string(key)+"="+string(value))
	return nil
}
func (s *logShard) Loaded() { s.loaded++ }
func (s *logShard) Unload() { s.unloaded++ }

// TestRuntimeLoadsWritesReplaysAndUnloads runs a runtime over a simulated
// broker's partitions: the shards load once their partitions are online,
// a write is answered once committed, another runtime's shard replays it
// in order before it serves, and an unloaded slot's write answers
// NOT_COORDINATOR.
func TestRuntimeLoadsWritesReplaysAndUnloads(t *testing.T) {
	const topic, node = "__coord_test", 1
	s := sim.New(sim.Config{Seed: 1})
	var e env.Env
	var parts *replica.Manager
	proc := s.AddProcess("b1", func(pe env.Env) {
		e = pe
		parts = replica.NewManager(pe, replica.Config{NodeID: node})
	})
	proc.Start()
	require.NoError(t, s.RunFor(0))

	id := meta.UUID{0: 7, 15: 7}
	d := meta.Empty().NewDelta()
	require.NoError(t, d.Replay(&meta.TopicRecord{Name: topic, TopicID: id}))
	for p := int32(0); p < 2; p++ {
		require.NoError(t, d.Replay(&meta.PartitionRecord{TopicID: id, Partition: p, Replicas: []int32{node}, ISR: []int32{node}, Leader: node}))
	}
	img := d.Apply(meta.Position{Offset: 0, Epoch: 1})
	parts.Apply(img, true)
	ti, _ := img.TopicByName(topic)

	newRuntime := func() *Runtime[*logShard] {
		var rt *Runtime[*logShard]
		rt = New(e, e.Logger(), Config[*logShard]{
			Topic: topic, Name: "test", NodeID: node, Partitions: parts,
			New:       func(*Slot[*logShard]) *logShard { return &logShard{} },
			Resync:    func() { rt.Sync(ti) },
			Closed:    func() bool { return false },
			ErrorCode: func(err error) *kerr.Error { return kerr.UnknownServerError },
		})
		return rt
	}
	loaded := func(rt *Runtime[*logShard]) bool {
		return len(rt.Slots()) == 2 && rt.Slots()[0].Shard.loaded == 1 && rt.Slots()[1].Shard.loaded == 1
	}
	runUntil := func(what string, cond func() bool) {
		t.Helper()
		for i := 0; i < 1000 && !cond(); i++ {
			require.NoError(t, s.RunFor(10*time.Millisecond))
		}
		require.True(t, cond(), what)
	}

	rt := newRuntime()
	rt.Sync(ti) // the partitions are not online yet: watched, loaded once they are
	runUntil("both shards load", func() bool { return loaded(rt) })
	first := rt.Slot(0)
	require.Empty(t, first.Shard.replayed, "an empty partition")

	var answers []error
	first.Write([]Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}}, func(err error) { answers = append(answers, err) })
	runUntil("the write is answered", func() bool { return len(answers) == 1 })
	require.NoError(t, answers[0])

	next := newRuntime()
	next.Sync(ti)
	runUntil("another runtime's shards load", func() bool { return loaded(next) })
	require.Equal(t, []string{"a=1", "b=2"}, next.Slot(0).Shard.replayed, "replayed in log order")
	require.Empty(t, next.Slot(1).Shard.replayed)

	rt.Sync(nil) // the topic is gone: every shard unloads
	require.Empty(t, rt.Slots())
	require.Equal(t, 1, first.Shard.unloaded)
	require.False(t, first.Current())
	first.Write([]Record{{Key: []byte("c"), Value: []byte("3")}}, func(err error) { answers = append(answers, err) })
	runUntil("the unloaded slot's write is answered", func() bool { return len(answers) == 2 })
	require.ErrorIs(t, answers[1], ErrNotCoordinator)
	require.Equal(t, kerr.NotCoordinator, WriteErrorCode(answers[1]))
}
