package quorum

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// testNode is one node of an in-test cluster: its Raft, its log with the
// durable image a crash falls back to, its durable quorum state, and a
// state machine that records what it applied.
type testNode struct {
	id          NodeID
	cfg         Config
	seed        uint64
	incarnation uint64
	raft        *Raft // nil while crashed
	now         time.Duration

	log          *MemoryLog
	durableLog   *MemoryLog
	durableState QuorumState
	// durableSnap is the newest snapshot the state machine wrote; snapshot
	// files live beside the log and survive a crash on their own.
	durableSnap *memSnapshot

	// Storage requests not yet acknowledged (when acks are delayed): a
	// sync carries the image of the log at the time it was requested.
	persists []PersistRequest
	syncs    []pendingImage

	// applied is the state machine: every batch applied, from offset 0.
	applied []Batch
}

type pendingImage struct {
	seq   uint64
	image *MemoryLog
}

func newTestNode(id NodeID, cfg Config, seed uint64) *testNode {
	cfg.ID = id
	n := &testNode{id: id, cfg: cfg, seed: seed, log: NewMemoryLog(), durableState: InitialState()}
	n.durableLog = n.log.Clone()
	n.start()
	return n
}

// start creates the Raft of a new incarnation over the durable state.
func (n *testNode) start() {
	n.incarnation++
	rng := rand.New(rand.NewPCG(n.seed, n.incarnation))
	r, err := New(n.cfg, n.log, n.durableState, rng, n.now)
	if err != nil {
		panic(fmt.Sprintf("node %s: %v", n.id, err))
	}
	n.raft = r
	n.applied = nil
}

// crash loses everything volatile: the Raft, unsynced log writes, state
// not yet persisted, the state machine.
func (n *testNode) crash() {
	n.raft = nil
	n.log = n.durableLog.Clone()
	if s := n.durableSnap; s != nil {
		if id, ok := n.log.LatestSnapshot(); !ok || id.EndOffset < s.id.EndOffset {
			n.log.SaveSnapshot(s.id, s.data)
			if err := n.log.InstallSnapshot(s.id); err != nil {
				panic(fmt.Sprintf("node %s: restoring snapshot %s: %v", n.id, s.id, err))
			}
		}
	}
	n.persists, n.syncs = nil, nil
	n.applied = nil
}

func (n *testNode) up() bool { return n.raft != nil }

// durableSnapCovers reports whether the snapshot the state machine wrote
// durably reaches offset.
func (n *testNode) durableSnapCovers(offset int64) bool {
	return n.durableSnap != nil && n.durableSnap.id.EndOffset >= offset
}

// readyEvents are the observable effects of one Ready, for the scripts.
type readyEvents struct {
	soft      *SoftState
	snapshot  *SnapshotID
	committed []Batch
	due       bool
}

// drain processes Readys until there are none, sending messages through
// emit. With ackNow, storage completes at once (an instant fsync);
// otherwise requests queue until ackPersist/ackSync.
func (n *testNode) drain(ackNow bool, emit func(Message), observe func(readyEvents)) {
	for n.raft != nil && n.raft.HasReady() {
		rd := n.raft.Ready()
		if rd.PersistState != nil {
			n.persists = append(n.persists, *rd.PersistState)
		}
		if rd.SyncLog != nil {
			n.syncs = append(n.syncs, pendingImage{seq: rd.SyncLog.Seq, image: n.log.Clone()})
		}
		for _, m := range rd.Messages {
			emit(m)
		}
		ev := readyEvents{soft: rd.SoftState, snapshot: rd.LoadSnapshot, committed: rd.Committed, due: rd.SnapshotDue}
		if rd.LoadSnapshot != nil {
			id, data, ok := n.log.SnapshotData()
			if !ok || id != *rd.LoadSnapshot {
				panic(fmt.Sprintf("node %s: snapshot %s to load is not the log's", n.id, rd.LoadSnapshot))
			}
			batches, err := DecodeBatches(data)
			if err != nil {
				panic(fmt.Sprintf("node %s: snapshot %s: %v", n.id, id, err))
			}
			n.applied = batches
		}
		for _, b := range rd.Committed {
			if end := n.appliedEnd(); end != b.BaseOffset {
				panic(fmt.Sprintf("node %s: applying %s after offset %d", n.id, b, end))
			}
			n.applied = append(n.applied, b)
		}
		if observe != nil {
			observe(ev)
		}
		if ackNow {
			n.ackPersist(len(n.persists))
			n.ackSync(len(n.syncs))
		}
	}
}

// network is what a test cluster's network drops: messages between the
// sides of a partition (group maps a node to its side; a node absent from
// it reaches everyone) and on cut one-way links.
type network struct {
	group map[NodeID]int
	cut   map[[2]NodeID]bool
}

func newNetwork() network { return network{cut: map[[2]NodeID]bool{}} }

// reachable reports whether a message from a to b gets through.
func (nw *network) reachable(a, b NodeID) bool {
	if nw.cut[[2]NodeID{a, b}] {
		return false
	}
	ga, oka := nw.group[a]
	gb, okb := nw.group[b]
	return !oka || !okb || ga == gb
}

// ackPersist completes the first k persist requests.
func (n *testNode) ackPersist(k int) {
	if last, ok := takeFirst(n, &n.persists, k); ok {
		n.durableState = last.State
		n.raft.StatePersisted(last.Seq)
	}
}

// ackSync completes the first k sync requests: the log image of the last
// becomes the durable one.
func (n *testNode) ackSync(k int) {
	if last, ok := takeFirst(n, &n.syncs, k); ok {
		n.durableLog = last.image
		n.raft.LogSynced(last.seq)
	}
}

// takeFirst removes the first k of a running node's pending requests and
// returns the last of them; false when there is nothing to complete.
func takeFirst[T any](n *testNode, pending *[]T, k int) (T, bool) {
	var last T
	if k == 0 || n.raft == nil {
		return last, false
	}
	last = (*pending)[k-1]
	*pending = (*pending)[k:]
	return last, true
}

// appliedEnd is the offset after the state machine's last applied record.
func (n *testNode) appliedEnd() int64 {
	if len(n.applied) == 0 {
		return 0
	}
	return n.applied[len(n.applied)-1].EndOffset()
}

// takeSnapshot has the state machine write a snapshot of what it applied
// and report it.
func (n *testNode) takeSnapshot() (SnapshotID, error) {
	if len(n.applied) == 0 {
		return SnapshotID{}, fmt.Errorf("nothing applied")
	}
	last := n.applied[len(n.applied)-1]
	id := SnapshotID{EndOffset: last.EndOffset(), Epoch: last.Epoch}
	data, err := EncodeBatches(n.applied)
	if err != nil {
		return id, err
	}
	n.log.SaveSnapshot(id, data)
	if err := n.raft.SnapshotTaken(id); err != nil {
		n.log.staged = nil
		return id, err
	}
	n.durableSnap = &memSnapshot{id: id, data: data}
	return id, nil
}
