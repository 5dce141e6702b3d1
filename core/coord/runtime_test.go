package coord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/record"
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

const testTopic, testNode = "__coord_test", 1

var testTopicID = meta.UUID{0: 7, 15: 7}

// world is one simulated broker hosting testTopic's partitions, led
// here, driven from the test between simulator runs.
type world struct {
	t     *testing.T
	s     *sim.Sim
	e     env.Env
	parts *replica.Manager
	img   *meta.Image
	pos   int64 // the last image's position
}

// newWorld starts the broker with two partitions of testTopic whose
// replicas are replicas (the ISR too).
func newWorld(t *testing.T, replicas ...int32) *world {
	w := &world{t: t, s: sim.New(sim.Config{Seed: 1}), img: meta.Empty()}
	proc := w.s.AddProcess("b1", func(pe env.Env) {
		w.e = pe
		w.parts = replica.NewManager(pe, replica.Config{NodeID: testNode})
	})
	proc.Start()
	require.NoError(t, w.s.RunFor(0))
	recs := []meta.Record{&meta.TopicRecord{Name: testTopic, TopicID: testTopicID}}
	for p := int32(0); p < 2; p++ {
		recs = append(recs, &meta.PartitionRecord{TopicID: testTopicID, Partition: p, Replicas: replicas, ISR: replicas, Leader: testNode})
	}
	w.apply(recs...)
	return w
}

// apply hands the partitions the image with recs.
func (w *world) apply(recs ...meta.Record) {
	w.pos++
	d := w.img.NewDelta()
	for _, rec := range recs {
		require.NoError(w.t, d.Replay(rec))
	}
	w.img = d.Apply(meta.Position{Offset: w.pos, Epoch: 1})
	w.parts.Apply(w.img, true)
}

func (w *world) topic() *meta.TopicImage {
	ti, _ := w.img.TopicByName(testTopic)
	return ti
}

// runtime returns a runtime of logShards over the world's partitions.
func (w *world) runtime() *Runtime[*logShard] {
	var rt *Runtime[*logShard]
	rt = New(w.e, w.e.Logger(), Config[*logShard]{
		Topic: testTopic, Name: "test", NodeID: testNode, Partitions: w.parts,
		New:       func(*Slot[*logShard]) *logShard { return &logShard{} },
		Resync:    func() { rt.Sync(w.topic()) },
		Closed:    func() bool { return false },
		ErrorCode: func(err error) *kerr.Error { return kerr.UnknownServerError },
	})
	return rt
}

// until runs the simulator until cond holds (what failed if never).
func (w *world) until(what string, cond func() bool) {
	w.t.Helper()
	for i := 0; i < 1000 && !cond(); i++ {
		require.NoError(w.t, w.s.RunFor(10*time.Millisecond))
	}
	require.True(w.t, cond(), what)
}

func loaded(rt *Runtime[*logShard]) bool {
	return len(rt.Slots()) == 2 && rt.Slots()[0].Shard.loaded == 1 && rt.Slots()[1].Shard.loaded == 1
}

// TestRuntimeLoadsWritesReplaysAndUnloads runs a runtime over a simulated
// broker's partitions: the shards load once their partitions are online,
// a write is answered once committed, another runtime's shard replays it
// in order before it serves, and an unloaded slot's write answers
// NOT_COORDINATOR.
func TestRuntimeLoadsWritesReplaysAndUnloads(t *testing.T) {
	w := newWorld(t, testNode)
	rt := w.runtime()
	rt.Sync(w.topic()) // the partitions are not online yet: watched, loaded once they are
	w.until("both shards load", func() bool { return loaded(rt) })
	first := rt.Slot(0)
	require.Empty(t, first.Shard.replayed, "an empty partition")

	var answers []error
	first.Write([]Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}}, func(err error) { answers = append(answers, err) })
	w.until("the write is answered", func() bool { return len(answers) == 1 })
	require.NoError(t, answers[0])

	next := w.runtime()
	next.Sync(w.topic())
	w.until("another runtime's shards load", func() bool { return loaded(next) })
	require.Equal(t, []string{"a=1", "b=2"}, next.Slot(0).Shard.replayed, "replayed in log order")
	require.Empty(t, next.Slot(1).Shard.replayed)

	rt.Sync(nil) // the topic is gone: every shard unloads
	require.Empty(t, rt.Slots())
	require.Equal(t, 1, first.Shard.unloaded)
	require.False(t, first.Current())
	first.Write([]Record{{Key: []byte("c"), Value: []byte("3")}}, func(err error) { answers = append(answers, err) })
	w.until("the unloaded slot's write is answered", func() bool { return len(answers) == 2 })
	require.ErrorIs(t, answers[1], ErrNotCoordinator)
	require.Equal(t, kerr.NotCoordinator, WriteErrorCode(answers[1]))
}

// TestRuntimeServesOnlyWhatTheISRHas is rule L3 (txn seed 43): a shard
// that replayed records above the high watermark does not serve until the
// high watermark reaches them.
func TestRuntimeServesOnlyWhatTheISRHas(t *testing.T) {
	w := newWorld(t, testNode, 2) // node 2 never fetches: nothing commits
	var part *replica.Partition
	w.until("the partition comes online", func() bool {
		p, err := w.parts.Lookup(testTopic, 0)
		part = p
		return err == nil && p.Online()
	})
	bld := record.NewBuilder()
	bld.Append(0, []byte("k"), []byte("v"))
	payload, err := bld.AppendTo(nil)
	require.NoError(t, err)
	var res *replica.ProduceResult
	part.Produce(payload, 1, w.e.Now(), func(r replica.ProduceResult) { res = &r })
	w.until("the leader appends", func() bool { return res != nil })
	require.NoError(t, res.Err)

	rt := w.runtime()
	rt.Sync(w.topic())
	w.until("the shard replays", func() bool { s := rt.Slot(0); return s != nil && len(s.Shard.replayed) == 1 })
	require.NoError(t, w.s.RunFor(time.Second))
	require.Zero(t, rt.Slot(0).Shard.loaded, "the record is above the high watermark")

	w.apply(&meta.PartitionChangeRecord{TopicID: testTopicID, Partition: 0, ISR: []int32{testNode}})
	w.until("the shard serves once the ISR has the record", func() bool { return rt.Slot(0).Shard.loaded == 1 })
	require.Equal(t, []string{"k=v"}, rt.Slot(0).Shard.replayed, "replayed once")
}
