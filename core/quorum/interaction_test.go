package quorum

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/strata-log/strata/core/internal/coretest"
)

// TestInteraction runs the scripts in testdata: small clusters driven step
// by step, each command followed by what the nodes did. Regenerate the
// expected output with -rewrite and read the diff.
//
// Commands (node ids are bare arguments):
//
//	add-nodes N | voters=1,2,3 [observers=4] [snapshot-chunk=B] [max-fetch-bytes=B]
//	campaign 1                 start a pre-vote now, as on election timeout
//	tick [1 2] by=D            advance those nodes' clocks (default all)
//	deliver [from=] [to=] [type=Fetch]
//	                           deliver the matching messages in flight once
//	drop [from=] [to=] [type=] lose the matching messages in flight
//	stabilize                  deliver until nothing is in flight (no time passes)
//	run for=D [verbose]        time passes on all nodes in 10 ms steps, the
//	                           network delivering instantly; prints what nodes
//	                           did, stamped with their clocks
//	partition 1 | 2 3          split the network; heal ends it; cut from= to=
//	                           drops one direction of one link
//	propose 1 rec...           Propose on node 1: one batch of these records
//	snapshot 1                 node 1's state machine writes a snapshot
//	resign 1                   graceful resignation
//	unreachable 2 3 peer=1     nodes 2 and 3's drivers report node 1
//	                           unreachable (PeerUnreachable); prints their
//	                           next deadlines, after and before
//	crash 1 / restart 1        lose everything not durable / start again
//	hold-storage 1 / release-storage 1
//	                           withhold / complete node 1's fsyncs
//	forge to=2 Vote epoch=E candidate=3 last=O@E ...
//	                           a hand-built request from a hostile peer
//	                           (forge_test.go)
//	status | log 1 | describe 1
//
// Storage completes instantly unless held; every message is printed as it is
// delivered, and after it what the receiver did (role changes, applies).
func TestInteraction(t *testing.T) {
	// The fuzz targets' corpora under testdata/fuzz are not scripts.
	coretest.RunScripts(t, "*.txt", func(*testing.T) coretest.Commands {
		h := &interaction{nodes: map[NodeID]*testNode{}, network: newNetwork(), held: map[NodeID]bool{}}
		return h.run
	})
}

// interaction is the harness of one script: nodes with their own clocks, a
// FIFO of messages in flight, partitions, and instant storage.
type interaction struct {
	nodes   map[NodeID]*testNode
	ids     []NodeID
	pending []Message
	network
	out strings.Builder
	// quiet suppresses message lines (run).
	quiet bool
	// held nodes do not complete storage requests until released.
	held map[NodeID]bool
}

func (h *interaction) printf(format string, args ...any) {
	fmt.Fprintf(&h.out, format, args...)
	h.out.WriteByte('\n')
}

func (h *interaction) run(t *testing.T, d *datadriven.TestData) string {
	h.out.Reset()
	defer func() {
		if r := recover(); r != nil {
			h.printf("panic: %v", r)
			t.Errorf("%s: panic: %v", d.Pos, r)
		}
	}()
	switch d.Cmd {
	case "add-nodes":
		h.addNodes(t, d)
	case "campaign":
		for _, id := range h.nodeArgs(t, d) {
			if err := h.nodes[id].raft.Campaign(); err != nil {
				h.printf("%s", err)
			}
			h.process(id)
		}
	case "tick":
		h.tick(t, d)
	case "deliver":
		h.deliver(h.matcher(t, d))
	case "drop":
		h.drop(h.matcher(t, d))
	case "stabilize":
		h.stabilize(t)
	case "run":
		h.runFor(t, d)
	case "partition":
		h.partition(t, d)
	case "cut":
		var from, to int
		d.ScanArgs(t, "from", &from)
		d.ScanArgs(t, "to", &to)
		h.cut[[2]NodeID{NodeID(from), NodeID(to)}] = true
	case "heal":
		h.group, h.cut = nil, map[[2]NodeID]bool{}
	case "propose":
		h.propose(t, d)
	case "snapshot":
		for _, id := range h.nodeArgs(t, d) {
			n := h.nodes[id]
			snap, err := n.takeSnapshot()
			if err != nil {
				h.printf("n%s: snapshot failed: %v", id, err)
				continue
			}
			_, data, _ := n.log.SnapshotData()
			h.printf("n%s: snapshot %s written (%d bytes), log now starts at %d", id, snap, len(data), n.log.StartOffset())
			h.process(id)
		}
	case "resign":
		for _, id := range h.nodeArgs(t, d) {
			h.nodes[id].raft.Resign()
			h.process(id)
		}
	case "unreachable":
		var peer int
		d.ScanArgs(t, "peer", &peer)
		for _, id := range h.nodeArgs(t, d) {
			n := h.nodes[id]
			was := n.raft.NextDeadline()
			n.raft.PeerUnreachable(NodeID(peer))
			h.process(id)
			h.printf("n%s: next deadline @%v (was @%v)", id, n.raft.NextDeadline(), was)
		}
	case "crash":
		for _, id := range h.nodeArgs(t, d) {
			h.nodes[id].crash()
			h.printf("n%s: crashed; durable %s, log [%d, %d)", id, h.nodes[id].durableState, h.nodes[id].log.StartOffset(), h.nodes[id].log.EndOffset().Offset)
		}
	case "restart":
		for _, id := range h.nodeArgs(t, d) {
			h.nodes[id].start()
			h.process(id)
		}
	case "hold-storage":
		for _, id := range h.nodeArgs(t, d) {
			h.held[id] = true
		}
	case "release-storage":
		for _, id := range h.nodeArgs(t, d) {
			n := h.nodes[id]
			delete(h.held, id)
			for _, p := range n.persists {
				h.printf("n%s: persisted %s", id, p.State)
			}
			for _, s := range n.syncs {
				h.printf("n%s: synced log to %d", id, s.image.EndOffset().Offset)
			}
			n.ackPersist(len(n.persists))
			n.ackSync(len(n.syncs))
			h.process(id)
		}
	case "forge":
		h.forge(t, d)
	case "status":
		h.status()
	case "log":
		for _, id := range h.nodeArgs(t, d) {
			h.printLog(id)
		}
	case "describe":
		for _, id := range h.nodeArgs(t, d) {
			h.describe(id)
		}
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	if h.out.Len() == 0 {
		return "ok\n"
	}
	return h.out.String()
}

func (h *interaction) addNodes(t *testing.T, d *datadriven.TestData) {
	var voters, observers []NodeID
	for _, arg := range d.CmdArgs {
		switch arg.Key {
		case "voters", "observers":
			for _, v := range splitVals(arg.Vals) {
				id, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("%s: bad id %q", d.Pos, v)
				}
				if arg.Key == "voters" {
					voters = append(voters, NodeID(id))
				} else {
					observers = append(observers, NodeID(id))
				}
			}
		}
	}
	if len(voters) == 0 {
		// add-nodes N: voters 1..N.
		for _, arg := range d.CmdArgs {
			if n, err := strconv.Atoi(arg.Key); err == nil && len(arg.Vals) == 0 {
				for i := 1; i <= n; i++ {
					voters = append(voters, NodeID(i))
				}
			}
		}
	}
	cfg := Config{Voters: voters}
	if arg, ok := d.Arg("snapshot-chunk"); ok {
		v, _ := strconv.Atoi(arg.SingleVal(t))
		cfg.SnapshotChunkBytes = v
	}
	if arg, ok := d.Arg("max-fetch-bytes"); ok {
		v, _ := strconv.Atoi(arg.SingleVal(t))
		cfg.MaxFetchBytes = v
	}
	for _, id := range append(slices.Clone(voters), observers...) {
		h.nodes[id] = newTestNode(id, cfg, uint64(id))
		h.ids = append(h.ids, id)
	}
	slices.Sort(h.ids)
	for _, id := range h.ids {
		h.process(id)
	}
}

// nodeArgs reads the node ids listed as bare arguments.
func (h *interaction) nodeArgs(t *testing.T, d *datadriven.TestData) []NodeID {
	var out []NodeID
	for _, arg := range d.CmdArgs {
		if len(arg.Vals) > 0 {
			continue
		}
		id, err := strconv.Atoi(arg.Key)
		if err != nil || h.nodes[NodeID(id)] == nil {
			t.Fatalf("%s: unknown node %q", d.Pos, arg.Key)
		}
		out = append(out, NodeID(id))
	}
	return out
}

// process drains node id's Readys, queueing its messages and printing what
// it did.
func (h *interaction) process(id NodeID) {
	n := h.nodes[id]
	held := h.held[id]
	persists, syncs := len(n.persists), len(n.syncs)
	defer func() {
		if held {
			for _, p := range n.persists[persists:] {
				h.printf("n%s: persisting %s (held)", id, p.State)
			}
			for _, s := range n.syncs[syncs:] {
				h.printf("n%s: syncing log to %d (held)", id, s.image.EndOffset().Offset)
			}
		}
	}()
	n.drain(!held, func(m Message) { h.pending = append(h.pending, m) }, func(ev readyEvents) {
		prefix := ""
		if h.quiet {
			prefix = fmt.Sprintf("@%v ", n.now)
		}
		if ev.soft != nil {
			h.printf("%sn%s: %s epoch=%d leader=%s", prefix, id, ev.soft.Role, ev.soft.Epoch, ev.soft.LeaderID)
		}
		if ev.snapshot != nil {
			h.printf("%sn%s: loaded snapshot %s", prefix, id, *ev.snapshot)
		}
		if len(ev.committed) > 0 {
			h.printf("%sn%s: applied %s", prefix, id, batchList(ev.committed))
		}
		if ev.due {
			h.printf("%sn%s: snapshot due", prefix, id)
		}
	})
}

func batchList(batches []Batch) string {
	parts := make([]string, len(batches))
	for i, b := range batches {
		parts[i] = b.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func (h *interaction) tick(t *testing.T, d *datadriven.TestData) {
	var by time.Duration
	var byStr string
	d.ScanArgs(t, "by", &byStr)
	by, err := time.ParseDuration(byStr)
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	ids := h.ids
	if bare := h.nodeArgs(t, d); len(bare) > 0 {
		ids = bare
	}
	if arg, ok := d.Arg("nodes"); ok {
		ids = nil
		for _, v := range splitVals(arg.Vals) {
			id, _ := strconv.Atoi(v)
			ids = append(ids, NodeID(id))
		}
	}
	for _, id := range ids {
		n := h.nodes[id]
		n.now += by
		if n.up() {
			n.raft.Tick(n.now)
			h.process(id)
		}
	}
}

type matchFunc func(Message) bool

func (h *interaction) matcher(t *testing.T, d *datadriven.TestData) matchFunc {
	from, to := -1, -1
	d.MaybeScanArgs(t, "from", &from)
	d.MaybeScanArgs(t, "to", &to)
	var kind string
	d.MaybeScanArgs(t, "type", &kind)
	return func(m Message) bool {
		return (from < 0 || m.From == NodeID(from)) && (to < 0 || m.To == NodeID(to)) &&
			(kind == "" || strings.HasPrefix(m.Payload.String(), kind+" "))
	}
}

// deliver delivers the messages in flight that match, in order; messages
// they cause wait for the next round.
func (h *interaction) deliver(match matchFunc) int {
	batch := h.pending
	h.pending = nil
	delivered := 0
	for _, m := range batch {
		if !match(m) {
			h.pending = append(h.pending, m)
			continue
		}
		delivered++
		to := h.nodes[m.To]
		switch {
		case !h.reachable(m.From, m.To):
			if !h.quiet {
				h.printf("%s (dropped: partition)", m)
			}
			continue
		case to == nil || !to.up():
			if !h.quiet {
				h.printf("%s (dropped: %s is down)", m, m.To)
			}
			continue
		}
		if !h.quiet {
			h.printf("%s", m)
		}
		if err := to.raft.Step(m); err != nil {
			h.printf("n%s: step: %v", m.To, err)
		}
		h.process(m.To)
	}
	return delivered
}

func (h *interaction) drop(match matchFunc) {
	kept := h.pending[:0]
	for _, m := range h.pending {
		if match(m) {
			h.printf("%s (dropped)", m)
		} else {
			kept = append(kept, m)
		}
	}
	h.pending = kept
}

// stabilize delivers until nothing is in flight. Time stands still, so a
// fetch the leader parks stays parked.
func (h *interaction) stabilize(t *testing.T) {
	for round := 0; len(h.pending) > 0; round++ {
		if round > 1000 {
			t.Fatalf("stabilize: no quiescence after %d rounds", round)
		}
		h.deliver(func(Message) bool { return true })
	}
}

// runFor lets time pass on every node in steps, the network delivering
// instantly between steps; it prints only what nodes did, not messages.
func (h *interaction) runFor(t *testing.T, d *datadriven.TestData) {
	var forStr string
	d.ScanArgs(t, "for", &forStr)
	total, err := time.ParseDuration(forStr)
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	h.quiet = !d.HasArg("verbose")
	defer func() { h.quiet = false }()
	h.runDuration(t, total)
}

// runDuration lets total time pass on all nodes in 10 ms steps, the
// network delivering instantly between steps.
func (h *interaction) runDuration(t *testing.T, total time.Duration) {
	step := 10 * time.Millisecond
	h.stabilize(t)
	for elapsed := time.Duration(0); elapsed < total; elapsed += step {
		for _, id := range h.ids {
			n := h.nodes[id]
			n.now += step
			if n.up() {
				n.raft.Tick(n.now)
				h.process(id)
			}
		}
		h.stabilize(t)
	}
}

func (h *interaction) partition(t *testing.T, d *datadriven.TestData) {
	h.group = map[NodeID]int{}
	side := 0
	for _, arg := range d.CmdArgs {
		if arg.Key == "|" {
			side++
			continue
		}
		id, err := strconv.Atoi(arg.Key)
		if err != nil {
			t.Fatalf("%s: bad partition %q", d.Pos, arg.Key)
		}
		h.group[NodeID(id)] = side
	}
}

func (h *interaction) propose(t *testing.T, d *datadriven.TestData) {
	if len(d.CmdArgs) < 2 {
		t.Fatalf("%s: propose <node> <record>...", d.Pos)
	}
	id, err := strconv.Atoi(d.CmdArgs[0].Key)
	if err != nil || h.nodes[NodeID(id)] == nil {
		t.Fatalf("%s: unknown node %q", d.Pos, d.CmdArgs[0].Key)
	}
	var records [][]byte
	for _, arg := range d.CmdArgs[1:] {
		records = append(records, []byte(arg.Key))
	}
	n := h.nodes[NodeID(id)]
	last, epoch, err := n.raft.Propose(records)
	if err != nil {
		h.printf("n%d: propose: %v", id, err)
		return
	}
	h.printf("n%d: proposed [%d, %d] in epoch %d", id, last-int64(len(records))+1, last, epoch)
	h.process(NodeID(id))
}

func (h *interaction) status() {
	for _, id := range h.ids {
		n := h.nodes[id]
		if !n.up() {
			h.printf("n%s: down", id)
			continue
		}
		s := n.raft.Status()
		kind := "voter"
		if !s.Voter {
			kind = "observer"
		}
		h.printf("n%s: %s %s %s hw=%d applied=%d log=[%d, %d) last-epoch=%d",
			id, kind, s.Role, s.State, s.HighWatermark, s.Applied, s.LogStart, s.LogEnd.Offset, s.LogEnd.Epoch)
	}
}

func (h *interaction) printLog(id NodeID) {
	n := h.nodes[id]
	var b strings.Builder
	fmt.Fprintf(&b, "n%s:", id)
	if snap, ok := n.log.LatestSnapshot(); ok {
		fmt.Fprintf(&b, " snapshot=%s", snap)
	}
	end := n.log.EndOffset().Offset
	if start := n.log.StartOffset(); start < end {
		fmt.Fprintf(&b, " %s", batchList(n.log.Batches(start, 1<<30)))
	} else {
		b.WriteString(" []")
	}
	h.printf("%s", b.String())
}

func (h *interaction) describe(id NodeID) {
	info, err := h.nodes[id].raft.DescribeQuorum()
	if err != nil {
		h.printf("n%s: %v", id, err)
		return
	}
	h.printf("n%s: leader=%s epoch=%d hw=%d", id, info.LeaderID, info.Epoch, info.HighWatermark)
	line := func(kind string, r ReplicaInfo) {
		h.printf("  %s %s: end=%d last-fetch=%v last-caught-up=%v", kind, r.ID, r.LogEndOffset, r.LastFetch, r.LastCaughtUp)
	}
	for _, r := range info.Voters {
		line("voter", r)
	}
	for _, r := range info.Observers {
		line("observer", r)
	}
}

// splitVals accepts both key=(1,2,3) and key=1,2,3.
func splitVals(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}
