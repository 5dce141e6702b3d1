package quorum

import (
	"container/heap"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestRandomized runs 3- and 5-voter clusters (plus an observer) through a
// seeded storm of message delays, drops, duplicates and reordering, crashes
// and restarts with slow storage, partitions, snapshots and drivers
// reporting peers unreachable (truly or not), checking the
// Raft safety properties after every step; then heals everything and checks
// that a leader emerges and a new record reaches every node.
func TestRandomized(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 20
	}
	if s := os.Getenv("QUORUM_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("QUORUM_SEEDS=%q: %v", s, err)
		}
		seeds = n
	}
	for _, voters := range []int{3, 5} {
		for seed := 1; seed <= seeds; seed++ {
			t.Run(fmt.Sprintf("voters=%d/seed=%d", voters, seed), func(t *testing.T) {
				t.Parallel()
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("replay: QUORUM_SEEDS=%d go test ./core/quorum -run 'TestRandomized/voters=%d/seed=%d$' -v", seed, voters, seed)
					}
				})
				c := newSimCluster(t, uint64(seed)*1000+uint64(voters), voters, 1)
				c.chaos(40 * time.Second)
				c.heal()
				c.checkLiveness(30 * time.Second)
				t.Logf("steps=%d committed=%d epochs=%d proposals=%d snapshots=%d loads=%d", c.steps, len(c.committed), len(c.leaderOf), c.proposals, c.snapshots, c.loads)
			})
		}
	}
}

// TestRandomizedIsDeterministic runs one seed twice: one seed gives one
// trace, which is what makes a failing seed replayable.
func TestRandomizedIsDeterministic(t *testing.T) {
	run := func() (uint64, int) {
		c := newSimCluster(t, 4242, 5, 1)
		c.hashing = true
		c.chaos(10 * time.Second)
		c.heal()
		c.checkLiveness(30 * time.Second)
		return c.traceHash, len(c.committed)
	}
	h1, n1 := run()
	h2, n2 := run()
	if h1 != h2 || n1 != n2 {
		t.Fatalf("same seed, different runs: trace %x/%x, committed %d/%d", h1, h2, n1, n2)
	}
}

// simCluster is an event-driven network and disk around testNodes.
type simCluster struct {
	t      *testing.T
	rng    *rand.Rand
	nodes  map[NodeID]*testNode
	ids    []NodeID
	voters []NodeID
	now    time.Duration
	events eventQueue
	seq    uint64

	// Fault knobs, changed by chaos and heal.
	dropRate, dupRate float64
	maxDelay          time.Duration
	slowDiskRate      float64
	network

	// Invariant state.
	leaderOf    map[int32]NodeID         // epoch -> its leader
	leaderEnd   map[leaderKey]leaderMark // last seen log end of a leader
	committed   []flatRecord             // the committed log, from applies
	commitEpoch []int32                  // an upper bound of each record's commit epoch
	recordAt    map[OffsetAndEpoch]flatRecord
	// proposed tags every record ever proposed with its proposal, for the
	// all-or-nothing checks (record values are unique).
	proposed  map[string]proposalTag
	proposals int
	steps     int
	snapshots int
	loads     int
	trace     bool
	// traceHash folds every delivered message when hashing is on.
	hashing   bool
	traceHash uint64
}

type leaderKey struct {
	id          NodeID
	incarnation uint64
	epoch       int32
}

type leaderMark struct {
	end  int64
	last Batch
}

// flatRecord is one record of the log with the batch that holds it: the
// record-level view the safety checks compare across nodes.
type flatRecord struct {
	Offset    int64
	Epoch     int32
	Kind      BatchKind
	Data      string
	Base, End int64
}

func (f flatRecord) String() string {
	return fmt.Sprintf("%d@%d:%q(batch [%d, %d))", f.Offset, f.Epoch, f.Data, f.Base, f.End)
}

func flatten(batches []Batch) []flatRecord {
	var out []flatRecord
	for _, b := range batches {
		for i, rec := range b.Records {
			out = append(out, flatRecord{Offset: b.BaseOffset + int64(i), Epoch: b.Epoch, Kind: b.Kind, Data: string(rec), Base: b.BaseOffset, End: b.EndOffset()})
		}
	}
	return out
}

// proposalTag places a record in the Propose call that carried it.
type proposalTag struct {
	proposal, index, count int
}

type event struct {
	at   time.Duration
	seq  uint64
	fire func()
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func newSimCluster(t *testing.T, seed uint64, voters, observers int) *simCluster {
	c := &simCluster{
		t:         t,
		rng:       rand.New(rand.NewPCG(seed, 0x5eed)),
		nodes:     map[NodeID]*testNode{},
		leaderOf:  map[int32]NodeID{},
		leaderEnd: map[leaderKey]leaderMark{},
		recordAt:  map[OffsetAndEpoch]flatRecord{},
		proposed:  map[string]proposalTag{},
		network:   newNetwork(),
		maxDelay:  5 * time.Millisecond,
	}
	for i := 1; i <= voters; i++ {
		c.voters = append(c.voters, NodeID(i))
	}
	// A fetch of 50 bytes holds one (oversized) batch, of 1000 several.
	maxFetch := []int{50, 300, 1000}[c.rng.IntN(3)]
	cfg := Config{Voters: c.voters, SnapshotChunkBytes: 64, SnapshotIntervalBytes: 1500, MaxFetchBytes: maxFetch}
	for i := 1; i <= voters+observers; i++ {
		id := NodeID(i)
		c.ids = append(c.ids, id)
		c.nodes[id] = newTestNode(id, cfg, seed*100+uint64(i))
	}
	for _, id := range c.ids {
		c.process(id)
	}
	return c
}

func (c *simCluster) at(d time.Duration, f func()) {
	c.seq++
	heap.Push(&c.events, event{at: c.now + d, seq: c.seq, fire: f})
}

// checkDurable verifies the persistence contract on every message a node
// sends: a vote, a candidacy or an acknowledgement of a leader is already
// in the durable quorum state, and a fetch offset acknowledges only
// durable log.
func (c *simCluster) checkDurable(m Message) {
	n := c.nodes[m.From]
	ds := n.durableState
	switch p := m.Payload.(type) {
	case VoteResponse:
		if p.Granted && !p.PreVote && (ds.Epoch != p.Epoch || ds.VotedFor != m.To) {
			c.t.Fatalf("durability: node %s granted its epoch-%d vote to %s before persisting it (durable %s)", m.From, p.Epoch, m.To, ds)
		}
	case VoteRequest:
		if !p.PreVote && (ds.Epoch != p.Epoch || ds.VotedFor != m.From) {
			c.t.Fatalf("durability: node %s asked for votes in epoch %d before persisting its candidacy (durable %s)", m.From, p.Epoch, ds)
		}
	case BeginQuorumEpochResponse:
		if p.Error == ErrNone && (ds.Epoch != p.Epoch || ds.LeaderID != m.To) {
			c.t.Fatalf("durability: node %s acknowledged leader %s of epoch %d before persisting it (durable %s)", m.From, m.To, p.Epoch, ds)
		}
	case FetchRequest:
		if n.durableSnapCovers(p.FetchOffset) {
			return
		}
		dl := n.durableLog
		if end := dl.EndOffset().Offset; end < p.FetchOffset {
			c.t.Fatalf("durability: node %s fetches from %d with its log durable only to %d", m.From, p.FetchOffset, end)
		}
		if p.FetchOffset > dl.StartOffset() {
			b := dl.Batches(dl.FloorBatchBoundary(p.FetchOffset-1), 1)[0]
			if b.EndOffset() != p.FetchOffset {
				c.t.Fatalf("batch atomicity: node %s fetches from %d, inside its batch %s", m.From, p.FetchOffset, b)
			}
			if b.Epoch != p.LastFetchedEpoch {
				c.t.Fatalf("durability: node %s fetches from %d@%d but its durable log holds %s there", m.From, p.FetchOffset, p.LastFetchedEpoch, b)
			}
		}
	}
}

// checkSent checks what a leader ships: a correct fetcher is never refused
// as malformed (its fetch offset is a batch boundary of the leader's log),
// and every batch is one whole proposal.
func (c *simCluster) checkSent(m Message) {
	p, ok := m.Payload.(FetchResponse)
	if !ok {
		return
	}
	if p.Error == ErrInvalidRequest {
		c.t.Fatalf("batch atomicity: node %s refused %s's fetch from %d@%d as invalid", m.From, m.To, p.FetchOffset, p.LastFetchedEpoch)
	}
	for _, b := range p.Batches {
		c.checkWholeProposal(m.From, "sent", b)
	}
}

// checkWholeProposal checks that batch b holds exactly the records of one
// Propose call, in order: a proposal is never split across batches or
// merged with another.
func (c *simCluster) checkWholeProposal(id NodeID, what string, b Batch) {
	if b.Kind == BatchLeaderChange {
		if len(b.Records) != 1 {
			c.t.Fatalf("node %s %s leader-change batch %s with %d records", id, what, b, len(b.Records))
		}
		return
	}
	first, ok := c.proposed[string(b.Records[0])]
	for i, rec := range b.Records {
		tag, known := c.proposed[string(rec)]
		if !ok || !known || tag.proposal != first.proposal || tag.index != i || tag.count != len(b.Records) {
			c.t.Fatalf("proposal atomicity: node %s %s batch %s, which is not one whole proposal (record %q is %+v)", id, what, b, rec, tag)
		}
	}
}

// send puts a message on the wire: maybe lost, maybe duplicated, each copy
// with its own delay (so copies and messages reorder).
func (c *simCluster) send(m Message) {
	c.checkDurable(m)
	c.checkSent(m)
	if to := c.nodes[m.To]; !to.up() && c.rng.IntN(2) == 0 {
		// The driver's dial to a crashed node is refused.
		c.reportUnreachable(m.From, m.To, time.Duration(c.rng.Int64N(int64(c.maxDelay)+1)))
	}
	if !c.reachable(m.From, m.To) || c.rng.Float64() < c.dropRate {
		return
	}
	copies := 1
	if c.rng.Float64() < c.dupRate {
		copies = 2
	}
	for range copies {
		delay := time.Duration(c.rng.Int64N(int64(c.maxDelay) + 1))
		c.at(delay, func() { c.deliver(m) })
	}
}

// reportUnreachable has node id's driver report peer unreachable
// (PeerUnreachable) after delay, unless id crashes first.
func (c *simCluster) reportUnreachable(id, peer NodeID, delay time.Duration) {
	n := c.nodes[id]
	inc := n.incarnation
	c.at(delay, func() {
		if n.up() && n.incarnation == inc {
			if c.trace {
				c.t.Logf("%v n%s: %s unreachable", c.now, id, peer)
			}
			n.raft.Tick(c.now)
			n.raft.PeerUnreachable(peer)
			c.process(id)
		}
	})
}

func (c *simCluster) deliver(m Message) {
	n := c.nodes[m.To]
	if !n.up() || !c.reachable(m.From, m.To) {
		return
	}
	if c.trace {
		c.t.Logf("%v %s", c.now, m)
	}
	if c.hashing {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d %x %v %s", c.traceHash, c.now, m, m.Payload)
		c.traceHash = h.Sum64()
	}
	n.raft.Tick(c.now)
	if err := n.raft.Step(m); err != nil {
		c.t.Fatalf("step %s: %v", m, err)
	}
	c.process(m.To)
}

// process drains a node's Readys; storage completes after a random delay
// (long now and then), each completion acknowledging the oldest request,
// unless the node crashes first.
func (c *simCluster) process(id NodeID) {
	n := c.nodes[id]
	inc := n.incarnation
	persists, syncs := len(n.persists), len(n.syncs)
	n.drain(false, c.send, func(ev readyEvents) {
		if c.trace && ev.soft != nil {
			c.t.Logf("%v n%s: %s epoch=%d leader=%s", c.now, id, ev.soft.Role, ev.soft.Epoch, ev.soft.LeaderID)
		}
		if ev.snapshot != nil {
			c.loads++
			c.checkApplied(n, n.applied)
		} else if len(ev.committed) > 0 {
			c.checkApplied(n, ev.committed)
		}
		if ev.due {
			c.stepLater(time.Millisecond, n, id, inc, func() bool { return true }, func() {
				c.snapshots++
				if _, err := n.takeSnapshot(); err != nil {
					c.t.Fatalf("node %s: snapshot: %v", id, err)
				}
			})
		}
	})
	for range len(n.persists) - persists {
		c.stepLater(c.diskDelay(), n, id, inc, func() bool { return len(n.persists) > 0 }, func() { n.ackPersist(1) })
	}
	for range len(n.syncs) - syncs {
		c.stepLater(c.diskDelay(), n, id, inc, func() bool { return len(n.syncs) > 0 }, func() { n.ackSync(1) })
	}
}

// stepLater runs step on node id after delay, if the node is still up in
// incarnation inc and ready: its Raft ticks first, and what step caused is
// processed after.
func (c *simCluster) stepLater(delay time.Duration, n *testNode, id NodeID, inc uint64, ready func() bool, step func()) {
	c.at(delay, func() {
		if n.up() && n.incarnation == inc && ready() {
			n.raft.Tick(c.now)
			step()
			c.process(id)
		}
	})
}

func (c *simCluster) diskDelay() time.Duration {
	if c.rng.Float64() < c.slowDiskRate {
		return time.Duration(c.rng.Int64N(int64(300 * time.Millisecond)))
	}
	return time.Duration(c.rng.Int64N(int64(2 * time.Millisecond)))
}

// runUntil advances time to end, firing events and node timers in order and
// checking the invariants after each step; it stops early when done
// returns true.
func (c *simCluster) runUntil(end time.Duration, done func() bool) bool {
	for c.now < end {
		next := end
		if len(c.events) > 0 {
			next = min(next, c.events[0].at)
		}
		for _, id := range c.ids {
			if n := c.nodes[id]; n.up() {
				next = min(next, n.raft.NextDeadline())
			}
		}
		c.now = max(c.now, next)
		for _, id := range c.ids {
			n := c.nodes[id]
			n.now = c.now
			if n.up() && n.raft.NextDeadline() <= c.now {
				n.raft.Tick(c.now)
				c.process(id)
			}
		}
		for len(c.events) > 0 && c.events[0].at <= c.now {
			e := heap.Pop(&c.events).(event)
			e.fire()
		}
		c.check()
		if c.t.Failed() {
			return false
		}
		if done != nil && done() {
			return true
		}
	}
	return false
}

// chaos runs the cluster for d with faults: lossy, duplicating, reordering
// links; crashes and restarts; partitions; slow disks; and a workload of
// proposals.
func (c *simCluster) chaos(d time.Duration) {
	// Swarm testing: each seed draws its own mix of faults.
	c.dropRate = []float64{0, 0.02, 0.1}[c.rng.IntN(3)]
	c.dupRate = []float64{0, 0.05}[c.rng.IntN(2)]
	c.slowDiskRate = []float64{0, 0.05, 0.3}[c.rng.IntN(3)]
	c.maxDelay = 40 * time.Millisecond
	crashPct := []int{0, 5, 10}[c.rng.IntN(3)]
	end := c.now + d
	var nemesis func()
	nemesis = func() {
		if c.now >= end {
			return
		}
		switch x := c.rng.IntN(100); {
		case x < 40:
			c.proposeSomewhere()
		case x < 40+crashPct:
			id := c.ids[c.rng.IntN(len(c.ids))]
			// Power loss mid-fsync is the interesting crash: prefer a node
			// with a quorum state write in flight.
			for _, cand := range c.ids {
				if n := c.nodes[cand]; n.up() && len(n.persists) > 0 && c.rng.IntN(2) == 0 {
					id = cand
					break
				}
			}
			if n := c.nodes[id]; n.up() {
				n.crash()
				// Its peers' connections to it close; their drivers'
				// redials are refused.
				for _, peer := range c.ids {
					if peer != id && c.rng.IntN(2) == 0 {
						c.reportUnreachable(peer, id, time.Duration(c.rng.Int64N(int64(60*time.Millisecond))))
					}
				}
				down := time.Duration(c.rng.Int64N(int64(3 * time.Second)))
				if c.rng.IntN(2) == 0 {
					down /= 10
				}
				c.at(down, func() {
					if !n.up() {
						n.now = c.now
						n.start()
						c.process(id)
					}
				})
			}
		case x < 55:
			c.group = map[NodeID]int{}
			for _, id := range c.ids {
				c.group[id] = c.rng.IntN(2)
			}
			c.at(time.Duration(c.rng.Int64N(int64(5*time.Second))), func() { c.group = nil })
		case x < 58:
			if l := c.leader(); l != nil {
				l.raft.Tick(c.now)
				l.raft.Resign()
				c.process(l.id)
			}
		case x < 60:
			c.maxDelay = time.Duration(c.rng.Int64N(int64(400*time.Millisecond))) + time.Millisecond
		case x < 63:
			// An asymmetric fault: one direction of one link goes dark.
			link := [2]NodeID{c.ids[c.rng.IntN(len(c.ids))], c.ids[c.rng.IntN(len(c.ids))]}
			c.cut[link] = true
			c.at(time.Duration(c.rng.Int64N(int64(5*time.Second))), func() { delete(c.cut, link) })
		case x < 68:
			// A driver reports a voter unreachable whether it is or not (a
			// reset connection, a dial that timed out): only a hint.
			if id, peer := c.ids[c.rng.IntN(len(c.ids))], c.voters[c.rng.IntN(len(c.voters))]; id != peer {
				c.reportUnreachable(id, peer, 0)
			}
		}
		c.at(time.Duration(c.rng.Int64N(int64(100*time.Millisecond))), nemesis)
	}
	c.at(0, nemesis)
	c.runUntil(end, nil)
}

// heal ends every fault: all nodes up, links reliable and fast, disks
// quick.
func (c *simCluster) heal() {
	c.dropRate, c.dupRate, c.maxDelay, c.slowDiskRate = 0, 0, 5*time.Millisecond, 0
	c.group = nil
	c.cut = map[[2]NodeID]bool{}
	for _, id := range c.ids {
		if n := c.nodes[id]; !n.up() {
			n.now = c.now
			n.start()
			c.process(id)
		}
	}
}

// checkLiveness requires that, within limit of healthy operation, one leader
// is followed by every voter and a record proposed then reaches every
// node's state machine.
func (c *simCluster) checkLiveness(limit time.Duration) {
	deadline := c.now + limit
	agreed := func() bool {
		l := c.leader()
		if l == nil {
			return false
		}
		for _, id := range c.ids {
			s := c.nodes[id].raft.Status()
			if s.State.Epoch != l.raft.Status().State.Epoch || s.State.LeaderID != l.id {
				return false
			}
		}
		return true
	}
	if !c.runUntil(deadline, agreed) {
		c.dump()
		c.t.Fatalf("no leader followed by all nodes within %v of healing", limit)
	}
	// A record proposed now may still be lost to a leader change; propose
	// again on each new leader until one reaches every state machine.
	marker := fmt.Sprintf("marker-%d", c.now)
	var epoch int32 = -1
	applied := func() bool {
		if l := c.leader(); l != nil && l.raft.Status().State.Epoch != epoch {
			l.raft.Tick(c.now)
			c.proposed[marker] = proposalTag{proposal: -1, count: 1}
			if _, e, err := l.raft.Propose([][]byte{[]byte(marker)}); err == nil {
				epoch = e
				c.process(l.id)
			}
		}
		for _, id := range c.ids {
			if !slices.ContainsFunc(c.nodes[id].applied, func(b Batch) bool {
				return slices.ContainsFunc(b.Records, func(rec []byte) bool { return string(rec) == marker })
			}) {
				return false
			}
		}
		return true
	}
	if !c.runUntil(deadline, applied) {
		c.dump()
		c.t.Fatalf("record %q not applied everywhere within %v of healing", marker, limit)
	}
}

func (c *simCluster) proposeSomewhere() {
	id := c.ids[c.rng.IntN(len(c.ids))]
	if l := c.leader(); l != nil && c.rng.IntN(4) > 0 {
		id = l.id
	}
	n := c.nodes[id]
	if !n.up() {
		return
	}
	c.proposals++
	var recs [][]byte
	count := 1 + c.rng.IntN(5)
	for i := range count {
		rec := fmt.Sprintf("r%d.%d", c.proposals, i)
		c.proposed[rec] = proposalTag{proposal: c.proposals, index: i, count: count}
		recs = append(recs, []byte(rec))
	}
	n.raft.Tick(c.now)
	if _, _, err := n.raft.Propose(recs); err == nil {
		c.process(id)
	}
}

// leader returns the node leading the highest epoch, if any.
func (c *simCluster) leader() *testNode {
	var best *testNode
	for _, id := range c.ids {
		n := c.nodes[id]
		if n.up() && n.raft.Status().Role == RoleLeader {
			if best == nil || n.raft.Status().State.Epoch > best.raft.Status().State.Epoch {
				best = n
			}
		}
	}
	return best
}

// checkApplied checks state machine safety: what a node applies (or loads
// from a snapshot) agrees with everything applied anywhere before, record by
// record and batch by batch; each batch is one whole proposal, so every node
// applies a proposal all or nothing; and the committed prefix never ends
// inside a proposal.
func (c *simCluster) checkApplied(n *testNode, batches []Batch) {
	epoch := n.raft.Status().State.Epoch
	for _, b := range batches {
		c.checkWholeProposal(n.id, "applied", b)
	}
	for _, e := range flatten(batches) {
		o := int(e.Offset)
		switch {
		case o < len(c.committed):
			if got := c.committed[o]; got != e {
				c.t.Fatalf("state machine safety: node %s applied %s at %d, others applied %s", n.id, e, o, got)
			}
			c.commitEpoch[o] = min(c.commitEpoch[o], epoch)
		case o == len(c.committed):
			c.committed = append(c.committed, e)
			c.commitEpoch = append(c.commitEpoch, epoch)
		default:
			c.t.Fatalf("node %s applied %s with a gap after %d", n.id, e, len(c.committed))
		}
	}
	if k := len(c.committed); k > 0 {
		last := c.committed[k-1]
		if tag, ok := c.proposed[last.Data]; last.Kind == BatchData && (!ok || tag.index != tag.count-1) {
			c.t.Fatalf("proposal atomicity: the committed log ends at %s, inside proposal %+v", last, tag)
		}
	}
}

// check verifies, after every step: one leader per epoch; a leader's log
// only grows; every node's high watermark, applied offset and durable end
// sit on batch boundaries; records are unique per (offset, epoch) and logs
// match below any common record; every leader holds every record committed
// in an earlier epoch.
func (c *simCluster) check() {
	c.steps++
	for _, id := range c.ids {
		n := c.nodes[id]
		if !n.up() {
			continue
		}
		s := n.raft.Status()
		for _, pos := range []struct {
			what   string
			offset int64
		}{{"high watermark", s.HighWatermark}, {"applied offset", s.Applied}, {"durable end", s.DurableEnd}} {
			if pos.offset >= s.LogStart && pos.offset <= s.LogEnd.Offset {
				if b := n.log.FloorBatchBoundary(pos.offset); b != pos.offset {
					c.t.Fatalf("batch atomicity: node %s's %s %d is inside the batch at %d", id, pos.what, pos.offset, b)
				}
			}
		}
		if s.Role != RoleLeader {
			continue
		}
		if l, ok := c.leaderOf[s.State.Epoch]; ok && l != id {
			c.t.Fatalf("election safety: epoch %d has leaders %s and %s", s.State.Epoch, l, id)
		}
		c.leaderOf[s.State.Epoch] = id
		key := leaderKey{id: id, incarnation: n.incarnation, epoch: s.State.Epoch}
		if mark, ok := c.leaderEnd[key]; ok {
			if s.LogEnd.Offset < mark.end {
				c.t.Fatalf("leader append-only: leader %s of epoch %d shrank its log from %d to %d", id, s.State.Epoch, mark.end, s.LogEnd.Offset)
			}
			if mark.last.BaseOffset >= n.log.StartOffset() {
				if got := n.log.Batches(mark.last.BaseOffset, 1)[0]; !sameBatch(got, mark.last) {
					c.t.Fatalf("leader append-only: leader %s of epoch %d rewrote %s as %s", id, s.State.Epoch, mark.last, got)
				}
			}
		}
		if end := s.LogEnd.Offset; end > n.log.StartOffset() {
			c.leaderEnd[key] = leaderMark{end: end, last: n.log.Batches(n.log.FloorBatchBoundary(end-1), 1)[0]}
		}
		c.checkLeaderCompleteness(n, s.State.Epoch)
	}
	if c.steps%50 == 0 {
		c.checkLogMatching()
	}
}

func sameBatch(a, b Batch) bool {
	return a.BaseOffset == b.BaseOffset && a.Epoch == b.Epoch && a.Kind == b.Kind &&
		slices.EqualFunc(a.Records, b.Records, func(x, y []byte) bool { return string(x) == string(y) })
}

func (c *simCluster) checkLeaderCompleteness(n *testNode, epoch int32) {
	start, end := n.log.StartOffset(), n.log.EndOffset().Offset
	// Walk the leader's batches alongside the committed records, in place:
	// this runs after every step.
	batches, bi := n.log.batches, 0
	for o := int(start); o < len(c.committed); o++ {
		want := c.committed[o]
		if c.commitEpoch[o] >= epoch {
			continue
		}
		if int64(o) >= end {
			c.t.Fatalf("leader completeness: leader %s of epoch %d ends at %d, missing %s committed by epoch %d", n.id, epoch, end, want, c.commitEpoch[o])
		}
		for batches[bi].EndOffset() <= int64(o) {
			bi++
		}
		b := batches[bi]
		rec := b.Records[int64(o)-b.BaseOffset]
		if b.Epoch != want.Epoch || b.Kind != want.Kind || b.BaseOffset != want.Base || b.EndOffset() != want.End || string(rec) != want.Data {
			c.t.Fatalf("leader completeness: leader %s of epoch %d holds %s where %s was committed", n.id, epoch, flatten([]Batch{b})[int64(o)-b.BaseOffset], want)
		}
	}
}

// checkLogMatching checks that an (offset, epoch) names one record, in one
// batch, across all logs, and that two logs holding the same (offset,
// epoch) agree on every record (and batch) before it that both hold.
func (c *simCluster) checkLogMatching() {
	type view struct {
		id      NodeID
		records []flatRecord
	}
	var views []view
	for _, id := range c.ids {
		n := c.nodes[id]
		start, end := n.log.StartOffset(), n.log.EndOffset().Offset
		if start == end {
			continue
		}
		records := flatten(n.log.Batches(start, 1<<40))
		for _, e := range records {
			key := OffsetAndEpoch{Offset: e.Offset, Epoch: e.Epoch}
			if d, ok := c.recordAt[key]; ok && d != e {
				c.t.Fatalf("log matching: node %s holds %s, another log holds %s at the same offset and epoch", id, e, d)
			}
			c.recordAt[key] = e
		}
		views = append(views, view{id: id, records: records})
	}
	for i := range views {
		for j := i + 1; j < len(views); j++ {
			a, b := views[i].records, views[j].records
			lo := max(a[0].Offset, b[0].Offset)
			hi := min(a[len(a)-1].Offset, b[len(b)-1].Offset)
			// The highest common (offset, epoch).
			for o := hi; o >= lo; o-- {
				ea, eb := a[o-a[0].Offset], b[o-b[0].Offset]
				if ea.Epoch != eb.Epoch {
					continue
				}
				for k := lo; k <= o; k++ {
					x, y := a[k-a[0].Offset], b[k-b[0].Offset]
					if x != y {
						c.t.Fatalf("log matching: nodes %s and %s agree at %d@%d but differ at %d: %s vs %s", views[i].id, views[j].id, o, ea.Epoch, k, x, y)
					}
				}
				break
			}
		}
	}
}
func (c *simCluster) dump() {
	for _, id := range c.ids {
		n := c.nodes[id]
		if !n.up() {
			c.t.Logf("n%s: down", id)
			continue
		}
		s := n.raft.Status()
		c.t.Logf("n%s: %s %s hw=%d applied=%d log=[%d, %d)@%d durable=%d next=%v now=%v", id, s.Role, s.State, s.HighWatermark, s.Applied, s.LogStart, s.LogEnd.Offset, s.LogEnd.Epoch, s.DurableEnd, n.raft.NextDeadline(), c.now)
	}
}
