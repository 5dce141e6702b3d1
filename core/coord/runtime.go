package coord

import (
	"log/slog"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/replica"
)

// Shard is a coordinator's state machine of one partition: it replays
// the partition's records while loading, serves once Loaded, and stops
// for good at Unload.
type Shard interface {
	// Replay applies one record of the partition, in log order.
	Replay(key, value []byte) error
	// Loaded ends the replay: the shard serves.
	Loaded()
	// Unload stops the shard (its partition is no longer led here).
	Unload()
}

// TxnShard is a Shard that keeps transactions' records apart (the group
// coordinator: a TxnOffsetCommit's offsets are pending until the
// transaction's marker ends them).
type TxnShard interface {
	Shard
	// ReplayTxn applies one record of a transactional batch.
	ReplayTxn(producerID int64, key, value []byte) error
	// TxnEnded applies a transaction marker of the partition.
	TxnEnded(producerID int64, commit bool)
}

// Config is what a Runtime needs from its owner, the broker.
type Config[S Shard] struct {
	// Topic is the coordinator's internal topic (__consumer_offsets,
	// __transaction_state) and Name the coordinator in logs ("group",
	// "transaction").
	Topic, Name string
	// NodeID is this broker's: the shards are of the partitions it leads.
	NodeID int32
	// Partitions are the partitions this broker hosts.
	Partitions *replica.Manager
	// New makes the shard of a slot being loaded (slot.Shard is set to
	// what it returns; the slot's Write is the shard's write path).
	New func(slot *Slot[S]) S
	// Resync is the owner's sync (it calls Sync with the image's topic):
	// run when a watched partition changes and when a shard must load
	// again.
	Resync func()
	// Closed reports whether the owner closed: a load in progress stops.
	Closed func() bool
	// ErrorCode maps a failed append to its Kafka error (the broker's
	// table); WriteErrorCode then maps that to the coordinator's answer.
	ErrorCode func(error) *kerr.Error
	// LoadedAttrs adds to the log line of a loaded shard (optional).
	LoadedAttrs func(S) []any
}

// Runtime runs one shard per partition of a coordinator's topic that
// this broker leads with its log online (Kafka's CoordinatorRuntime):
// it loads each (replays the partition into it, a slice per loop turn,
// and marks it loaded once the high watermark reaches the log end),
// loads it again when its log is reopened or cut under the load, and
// unloads it when the leadership goes. Its methods run on the env's loop.
type Runtime[S Shard] struct {
	e   env.Env
	log *slog.Logger
	cfg Config[S]
	// slots sorted by partition.
	slots []*Slot[S]
	// watching lists partitions led here whose log is not online yet and
	// that have a watcher registered.
	watching []int32
}

// Slot is one shard the runtime runs: the partition it leads in a leader
// epoch.
type Slot[S Shard] struct {
	rt *Runtime[S]
	// Partition is the index in the coordinator's topic, LeaderEpoch the
	// epoch the shard was loaded in, Replica the partition.
	Partition   int32
	LeaderEpoch int32
	Replica     *replica.Partition
	Shard       S
	// waitingHW: replayed to the log end, the shard waits for the high
	// watermark to reach it before it serves (logged once).
	waitingHW bool
}

// New returns a runtime with no shard.
func New[S Shard](e env.Env, log *slog.Logger, cfg Config[S]) *Runtime[S] {
	return &Runtime[S]{e: e, log: log, cfg: cfg}
}

// Slot returns the slot running partition's shard, or nil.
func (rt *Runtime[S]) Slot(partition int32) *Slot[S] {
	i, ok := slices.BinarySearchFunc(rt.slots, partition, comparePartition[S])
	if !ok {
		return nil
	}
	return rt.slots[i]
}

// Slots lists the running shards in partition order.
func (rt *Runtime[S]) Slots() []*Slot[S] { return rt.slots }

func comparePartition[S Shard](s *Slot[S], p int32) int { return int(s.Partition) - int(p) }

// Current reports whether the slot is still the one running its
// partition's shard.
func (s *Slot[S]) Current() bool { return s.rt.Slot(s.Partition) == s }

// Sync brings the shards in line with the partitions of ti, the
// coordinator's topic in the latest image (nil: none): a shard for every
// partition this broker leads with its log online, none for the others.
func (rt *Runtime[S]) Sync(ti *meta.TopicImage) {
	keep := rt.slots[:0]
	for _, s := range rt.slots {
		if ti != nil && rt.stillLeads(ti, s) {
			keep = append(keep, s)
			continue
		}
		rt.log.Info("unloading "+rt.cfg.Name+" shard", "partition", s.Partition, "leader_epoch", s.LeaderEpoch)
		s.Shard.Unload()
	}
	clear(rt.slots[len(keep):])
	rt.slots = keep
	if ti == nil {
		return
	}
	rt.loadLed(ti)
}

// UnloadAll unloads every shard (the owner closes).
func (rt *Runtime[S]) UnloadAll() {
	for _, s := range rt.slots {
		s.Shard.Unload()
	}
	rt.slots = nil
}

// loadLed loads a shard for every partition of ti led here, in the
// image's epoch, with its log online, that has none yet; a partition not
// ready yet is watched (once) and Resync runs when it changes.
func (rt *Runtime[S]) loadLed(ti *meta.TopicImage) {
	for p := range ti.Partitions() {
		if p.Leader != rt.cfg.NodeID || rt.Slot(p.ID) != nil {
			continue
		}
		part, err := rt.cfg.Partitions.Lookup(ti.Name(), p.ID)
		if err != nil {
			continue
		}
		if !part.Online() || !part.IsLeader() || part.LeaderEpoch() != p.LeaderEpoch {
			if !slices.Contains(rt.watching, p.ID) {
				rt.watching = append(rt.watching, p.ID)
				id := p.ID
				part.Watch(func() {
					rt.watching = slices.DeleteFunc(rt.watching, func(x int32) bool { return x == id })
					rt.cfg.Resync()
				})
			}
			continue
		}
		rt.load(p.ID, part)
	}
}

// stillLeads reports whether the slot's partition is still led here in
// its epoch, online.
func (rt *Runtime[S]) stillLeads(ti *meta.TopicImage, s *Slot[S]) bool {
	p, ok := ti.Partition(s.Partition)
	if !ok || p.Leader != rt.cfg.NodeID || p.LeaderEpoch != s.LeaderEpoch {
		return false
	}
	cur, err := rt.cfg.Partitions.Lookup(rt.cfg.Topic, s.Partition)
	return err == nil && cur == s.Replica && cur.Online() && cur.LeaderEpoch() == s.LeaderEpoch
}

// load starts a shard for a partition led here and replays its log into
// it, a slice per loop turn.
func (rt *Runtime[S]) load(partition int32, part *replica.Partition) {
	s := &Slot[S]{rt: rt, Partition: partition, LeaderEpoch: part.LeaderEpoch(), Replica: part}
	s.Shard = rt.cfg.New(s)
	i, _ := slices.BinarySearchFunc(rt.slots, partition, comparePartition[S])
	rt.slots = slices.Insert(rt.slots, i, s)
	rt.log.Info("loading "+rt.cfg.Name+" shard", "partition", partition, "leader_epoch", s.LeaderEpoch, "log_end", part.LogEndOffset())
	l := part.Log()
	if l == nil {
		return
	}
	rt.replay(s, l, l.LogStartOffset(), rt.e.Monotonic())
}

// drop forgets a slot without unloading it.
func (rt *Runtime[S]) drop(s *Slot[S]) {
	rt.slots = slices.DeleteFunc(rt.slots, func(x *Slot[S]) bool { return x == s })
}
