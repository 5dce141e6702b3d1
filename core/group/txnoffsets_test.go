package group

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/coord"
)

// txnLogEntry is one batch of the txnRig's partition: records (of a
// transactional batch when producerID >= 0) or a transaction marker.
type txnLogEntry struct {
	recs       []Record
	producerID int64
	marker     bool
	commit     bool
}

// txnRig drives group "g" of a shard whose partition log keeps plain
// batches, transactional batches and markers in order.
type txnRig struct {
	*rig
	log    []txnLogEntry
	member string
	gen    int32
}

func newTxnRig(t *testing.T) *txnRig {
	r := &txnRig{rig: newRig(t, testCfg)}
	r.shard.Unload()
	r.shard = r.newTxnShard()
	r.shard.Loaded()
	return r
}

func (r *txnRig) newTxnShard() *Shard {
	cfg := testCfg
	cfg.Write = func(recs []Record, done func(error)) {
		r.write(func() { r.log = append(r.log, txnLogEntry{recs: recs, producerID: -1}) }, done)
	}
	cfg.WriteTxn = func(w TxnWrite, recs []Record, done func(error)) {
		r.write(func() { r.log = append(r.log, txnLogEntry{recs: recs, producerID: w.ProducerID}) }, done)
	}
	return NewShard(r.e, slog.New(slog.DiscardHandler), cfg)
}

// replayedTxn is a new shard loaded from the log, as the broker replays a
// partition: transactional records as ReplayTxn, markers as TxnEnded.
func (r *txnRig) replayedTxn() *Shard {
	sh := r.newTxnShard()
	for _, en := range r.log {
		switch {
		case en.marker:
			sh.TxnEnded(en.producerID, en.commit)
		case en.producerID >= 0:
			for _, rec := range en.recs {
				require.NoError(r.t, sh.ReplayTxn(en.producerID, rec.Key, rec.Value))
			}
		default:
			for _, rec := range en.recs {
				require.NoError(r.t, sh.Replay(rec.Key, rec.Value))
			}
		}
	}
	sh.Loaded()
	return sh
}

// TestTxnOffsetScripts runs testdata/txn_offsets*.txt:
//
//	join                       a classic member joins group g (one rebalance)
//	txn-commit pid=P epoch=E [gen=N] [member=joined|ID] [instance=I] [version=V] offsets=(t-0=5,...)
//	commit [gen=N] [member=joined] offsets=(t-0=5,...)   an OffsetCommit
//	marker pid=P commit|abort  the transaction's marker reaches the partition
//	fetch [stable]             OffsetFetch of t-0..t-2 (require_stable)
//	state                      committed and pending offsets
//	replay                     a new shard replays the log: same state?
//	fail-writes, heal-writes
func TestTxnOffsetScripts(t *testing.T) {
	runScripts(t, "txn_offsets", func(t *testing.T) func(*testing.T, *datadriven.TestData) string { return newTxnRig(t).cmd })
}

func (r *txnRig) cmd(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "join":
		id, resp := r.newMember("g", "c", "meta")
		r.run(10 * time.Millisecond)
		require.NotNil(t, *resp)
		r.member, r.gen = id, (*resp).Generation
		return fmt.Sprintf("joined generation %d\n", r.gen)
	case "txn-commit":
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.Group, req.TransactionalID = 4, "g", "tx"
		d.ScanArgs(t, "pid", &req.ProducerID)
		d.ScanArgs(t, "epoch", &req.ProducerEpoch)
		if d.HasArg("version") {
			d.ScanArgs(t, "version", &req.Version)
		}
		req.Generation, req.MemberID, req.InstanceID = r.memberArgs(t, d)
		for _, a := range r.offsetArgs(t, d) {
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = a.tp.topic
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = a.tp.partition, a.off
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		got := await(r.rig, func(done func(*kmsg.TxnOffsetCommitResponse)) { r.shard.TxnCommit(req, nil, done) })
		var b strings.Builder
		for _, rt := range got.Topics {
			for _, rp := range rt.Partitions {
				fmt.Fprintf(&b, "%s-%d %s\n", rt.Topic, rp.Partition, errName(rp.ErrorCode))
			}
		}
		return b.String()
	case "commit":
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group = 8, "g"
		req.Generation, req.MemberID, req.InstanceID = r.memberArgs(t, d)
		for _, a := range r.offsetArgs(t, d) {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = a.tp.topic
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = a.tp.partition, a.off
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		got := await(r.rig, func(done func(*kmsg.OffsetCommitResponse)) { r.shard.Commit(req, nil, done) })
		var b strings.Builder
		for _, rt := range got.Topics {
			for _, rp := range rt.Partitions {
				fmt.Fprintf(&b, "%s-%d %s\n", rt.Topic, rp.Partition, errName(rp.ErrorCode))
			}
		}
		return b.String()
	case "marker":
		var pid int64
		d.ScanArgs(t, "pid", &pid)
		commit := d.HasArg("commit")
		r.log = append(r.log, txnLogEntry{producerID: pid, marker: true, commit: commit})
		r.shard.TxnEnded(pid, commit)
		return r.state(r.shard)
	case "fetch":
		out := r.shard.FetchStable("g", nil, -1, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0, 1, 2}}}, false, d.HasArg("stable"))
		if out.ErrorCode != 0 {
			return errName(out.ErrorCode) + "\n"
		}
		var b strings.Builder
		for _, rt := range out.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					fmt.Fprintf(&b, "%s-%d %s\n", rt.Topic, rp.Partition, errName(rp.ErrorCode))
					continue
				}
				fmt.Fprintf(&b, "%s-%d offset %d\n", rt.Topic, rp.Partition, rp.Offset)
			}
		}
		return b.String()
	case "state":
		return r.state(r.shard)
	case "replay":
		sh := r.replayedTxn()
		before, after := r.state(r.shard), r.state(sh)
		sh.Unload()
		require.Equal(t, before, after, "the replayed shard differs")
		return "same state\n" + after
	case "fail-writes":
		r.failWrites = errNotEnoughReplicas
		return "writes fail\n"
	case "heal-writes":
		r.failWrites = nil
		return "writes succeed\n"
	}
	t.Fatalf("unknown command %s", d.Cmd)
	return ""
}

var errNotEnoughReplicas = fmt.Errorf("test: %w", coord.ErrNotCoordinator)

// memberArgs reads gen=, member= (joined: the script's member) and
// instance=; absent, the request is anonymous (-1, "", nil).
func (r *txnRig) memberArgs(t *testing.T, d *datadriven.TestData) (int32, string, *string) {
	gen, member := int32(-1), ""
	var instance *string
	if d.HasArg("gen") {
		d.ScanArgs(t, "gen", &gen)
	}
	if d.HasArg("member") {
		d.ScanArgs(t, "member", &member)
		if member == "joined" {
			member = r.member
		}
	}
	if d.HasArg("instance") {
		var s string
		d.ScanArgs(t, "instance", &s)
		instance = &s
	}
	return gen, member, instance
}

type txnArgOffset struct {
	tp  topicPartition
	off int64
}

// offsetArgs reads offsets=(t-0=5,t-1=7).
func (r *txnRig) offsetArgs(t *testing.T, d *datadriven.TestData) []txnArgOffset {
	var out []txnArgOffset
	for _, arg := range d.CmdArgs {
		if arg.Key != "offsets" {
			continue
		}
		for _, v := range arg.Vals {
			name, off, ok := strings.Cut(v, "=")
			require.True(t, ok, "offset %q", v)
			i := strings.LastIndexByte(name, '-')
			require.True(t, i > 0, "partition %q", name)
			p, err := strconv.Atoi(name[i+1:])
			require.NoError(t, err)
			o, err := strconv.ParseInt(off, 10, 64)
			require.NoError(t, err)
			out = append(out, txnArgOffset{topicPartition{name[:i], int32(p)}, o})
		}
	}
	return out
}

// state prints g's committed offsets (sorted) and each producer's pending
// ones (t-0..t-2, producers 0..9).
func (r *txnRig) state(sh *Shard) string {
	g := sh.Group("g")
	if g == nil {
		return "no group\n"
	}
	var b strings.Builder
	var parts []string
	for _, tp := range g.offsetKeys() {
		parts = append(parts, fmt.Sprintf("%s-%d=%d", tp.topic, tp.partition, g.offsets[tp].offset))
	}
	fmt.Fprintf(&b, "committed [%s]\n", strings.Join(parts, " "))
	for pid := int64(0); pid < 10; pid++ {
		parts = parts[:0]
		for p := int32(0); p < 3; p++ {
			if o := g.PendingOffset(pid, "t", p); o >= 0 {
				parts = append(parts, fmt.Sprintf("t-%d=%d", p, o))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, "pending producer %d [%s]\n", pid, strings.Join(parts, " "))
		}
	}
	return b.String()
}
