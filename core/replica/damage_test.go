package replica

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/internal/coretest"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/sim"
)

// TestDamageScripts runs testdata/damage_*.txt: broker 1 hosts one
// partition of topic t (replicas 1, 2, 3); the other brokers are the
// script's fetches, the controller is the script's image changes and its
// answers to broker 1's AlterPartition requests. Commands:
//
//	create [isr=1,2,3] [leader=N] [min-isr=N]   the topic, online
//	produce [n=N]                               one acks=1 batch of n records
//	fetch replica=N offset=N epoch=N [lse]      a replica fetch from broker N
//	                                            (lse: the first page the leader
//	                                            reads becomes unreadable)
//	read offset=N [lse]                         a consumer's read
//	flip offset=N                               flip a stored bit under the CRC
//	                                            of the batch holding offset N
//	flip-header offset=N                        flip the length of that batch
//	reopen                                      close and reopen the log
//	image [leader=N] [isr=..] [elr=..] [last-known-elr=..]
//	                                            a PartitionChangeRecord
//	answer [code=NAME]                          answer the requests sent, with the
//	                                            epochs the image will show next
//	run [for=D]                                 let time pass (default 2s)
//	state                                       the partition as broker 1 sees it
//
// Every command prints the AlterPartition requests broker 1 sent meanwhile.
func TestDamageScripts(t *testing.T) {
	coretest.RunScripts(t, "damage_*.txt", func(t *testing.T) coretest.Commands {
		ds := &damageScript{}
		ds.r = newAlterRig(t, 21, func(req *kmsg.AlterPartitionRequest, done func(kmsg.Response, error)) {
			ds.sent = append(ds.sent, req)
			ds.pending = append(ds.pending, pendingAlter{req, done})
		})
		ds.r.Proc.Disk().DeclareSurvivable(func(n string) bool { return strings.HasSuffix(n, ".log") })
		return ds.run
	})
}

type pendingAlter struct {
	req  *kmsg.AlterPartitionRequest
	done func(kmsg.Response, error)
}

type damageScript struct {
	r       *rig
	sent    []*kmsg.AlterPartitionRequest
	shown   int
	pending []pendingAlter
}

func (ds *damageScript) part(t *testing.T) *Partition {
	p, err := ds.r.m.Lookup("t", 0)
	require.NoError(t, err)
	return p
}

func (ds *damageScript) run(t *testing.T, d *datadriven.TestData) string {
	r := ds.r
	var out strings.Builder
	switch d.Cmd {
	case "create":
		isr, leader, minISR := []int32{1, 2, 3}, int32(1), "1"
		if d.HasArg("isr") {
			isr = scanIDs(t, d, "isr")
		}
		if d.HasArg("leader") {
			var n int
			d.ScanArgs(t, "leader", &n)
			leader = int32(n)
		}
		coretest.ScanOptional(t, d, "min-isr", &minISR)
		r.createReplicated("t", topicID(1), []int32{1, 2, 3}, isr, leader, map[string]string{"min.insync.replicas": minISR})
		r.online("t", 0)
		fmt.Fprintf(&out, "%s\n", ds.state(t))
	case "produce":
		n := 1
		coretest.ScanOptional(t, d, "n", &n)
		res := r.produce(ds.part(t), batch(t, n), 1)
		if res.Err != nil {
			fmt.Fprintf(&out, "refused: %s\n", errName(res.Err))
		} else {
			fmt.Fprintf(&out, "appended at %d\n", res.BaseOffset)
		}
	case "fetch":
		var replica, offset, epoch int
		d.ScanArgs(t, "replica", &replica)
		d.ScanArgs(t, "offset", &offset)
		d.ScanArgs(t, "epoch", &epoch)
		p := ds.part(t)
		ds.withLSE(d, func() {
			res, err := p.ReplicaFetch(int32(replica), int64(offset), int32(epoch), p.LeaderEpoch(), 1<<20)
			switch {
			case err != nil:
				fmt.Fprintf(&out, "error: %s\n", errName(err))
			case res.Diverging != nil:
				fmt.Fprintf(&out, "diverging: epoch %d ends at %d\n", res.Diverging.Epoch, res.Diverging.EndOffset)
			default:
				fmt.Fprintf(&out, "%d bytes from %d, high watermark %d\n", res.Read.Size, res.Read.FirstOffset, res.HighWatermark)
			}
			res.Read.Release()
		})
	case "read":
		var offset int
		d.ScanArgs(t, "offset", &offset)
		p := ds.part(t)
		ds.withLSE(d, func() {
			res, err := p.Read(int64(offset), 1<<20, -1)
			if err != nil {
				fmt.Fprintf(&out, "error: %s\n", errName(err))
			} else {
				fmt.Fprintf(&out, "%d bytes from %d\n", res.Size, res.FirstOffset)
			}
			res.Release()
		})
	case "flip", "flip-header":
		var offset int
		d.ScanArgs(t, "offset", &offset)
		ds.flip(t, int64(offset), d.Cmd == "flip-header")
		out.WriteString("flipped\n")
	case "reopen":
		ds.part(t).restart("the script reopens it")
		r.Run(100 * time.Millisecond)
		fmt.Fprintf(&out, "%s\n", ds.state(t))
	case "image":
		p := ds.part(t)
		rec := &meta.PartitionChangeRecord{TopicID: topicID(1), Partition: 0}
		if d.HasArg("leader") {
			var n int
			d.ScanArgs(t, "leader", &n)
			rec.Leader = leaderPtr(int32(n))
		}
		for _, f := range []struct {
			key  string
			list *[]int32
		}{{"isr", &rec.ISR}, {"elr", &rec.ELR}, {"last-known-elr", &rec.LastKnownELR}} {
			if d.HasArg(f.key) {
				*f.list = scanIDs(t, d, f.key)
			}
		}
		r.apply(rec)
		r.Run(10 * time.Millisecond)
		fmt.Fprintf(&out, "partition epoch %d: %s\n", p.partitionEpoch, ds.state(t))
	case "answer":
		code := ""
		coretest.ScanOptional(t, d, "code", &code)
		p := ds.part(t)
		pending := ds.pending
		ds.pending = nil
		for _, a := range pending {
			resp := a.req.ResponseKind().(*kmsg.AlterPartitionResponse)
			rt := kmsg.NewAlterPartitionResponseTopic()
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			if code == "NOT_CONTROLLER" {
				rp.ErrorCode = 41
			}
			rp.PartitionEpoch = p.partitionEpoch + 1
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
			a.done(resp, nil)
			fmt.Fprintf(&out, "answered partition epoch %d\n", rp.PartitionEpoch)
		}
		r.Run(10 * time.Millisecond)
		fmt.Fprintf(&out, "%s\n", ds.state(t))
	case "run":
		dur := 2 * time.Second
		if d.HasArg("for") {
			var s string
			d.ScanArgs(t, "for", &s)
			var err error
			dur, err = time.ParseDuration(s)
			require.NoError(t, err)
		}
		r.Run(dur)
		fmt.Fprintf(&out, "%s\n", ds.state(t))
	case "state":
		fmt.Fprintf(&out, "%s\n", ds.state(t))
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	for _, req := range ds.sent[ds.shown:] {
		rp := req.Topics[0].Partitions[0]
		shape := fmt.Sprintf("isr=%v", rp.NewISR)
		if rp.LeaderRecoveryState == leaderRecoveryRecovering {
			shape = "recovering isr=[] (give up its places)"
		}
		fmt.Fprintf(&out, "sent AlterPartition leader-epoch=%d partition-epoch=%d %s\n", rp.LeaderEpoch, rp.PartitionEpoch, shape)
	}
	ds.shown = len(ds.sent)
	return out.String()
}

// withLSE runs f; with the lse argument, the first page of a .log file f
// reads becomes unreadable.
func (ds *damageScript) withLSE(d *datadriven.TestData, f func()) {
	disk := ds.r.Proc.Disk()
	if d.HasArg("lse") {
		disk.SetFaults(sim.DiskFaults{LatentErrorProbability: 1})
		defer disk.SetFaults(sim.DiskFaults{})
	}
	f()
}

// flip flips a stored bit of the batch holding offset, under its CRC (its
// last byte) or in its length field.
func (ds *damageScript) flip(t *testing.T, offset int64, header bool) {
	p := ds.part(t)
	res, err := p.l.Read(offset, 1, -1)
	require.NoError(t, err)
	defer res.Release()
	buf := make([]byte, res.Size)
	_, err = res.File.ReadAt(buf, res.Position)
	require.NoError(t, err)
	pos := res.Position + res.Size - 1
	if header {
		pos = res.Position + 8 // the batch length's first byte
	}
	f, err := ds.r.Env.Disk().Open(res.File.Name(), false)
	require.NoError(t, err)
	coretest.FlipBits(t, f, pos, 0x40)
	require.NoError(t, f.Close())
}

// state describes the partition as broker 1 sees it.
func (ds *damageScript) state(t *testing.T) string {
	p := ds.part(t)
	s := fmt.Sprintf("%s, leader %d epoch %d, isr %v", p.state, p.leader, p.leaderEpoch, p.isr)
	if len(p.elr) > 0 {
		s += fmt.Sprintf(", elr %v", p.elr)
	}
	if len(p.lastKnownELR) > 0 {
		s += fmt.Sprintf(", last known elr %v", p.lastKnownELR)
	}
	if p.recovering() {
		s += ", recovering"
	}
	if p.Online() {
		s += fmt.Sprintf(", log [%d, %d), high watermark %d", p.LogStartOffset(), p.LogEndOffset(), p.HighWatermark())
	}
	if d := p.damage; d != nil {
		s += fmt.Sprintf("; damaged from %d", d.from)
		switch {
		case d.marked:
			s += ", dropping it"
		case d.asking:
			s += ", asking the controller"
		case d.fence >= 0 && p.partitionEpoch < d.fence:
			s += fmt.Sprintf(", waiting for partition epoch %d", d.fence)
		case d.fence >= 0:
			s += ", kept (this replica still counts)"
		}
	}
	return s
}

func scanIDs(t *testing.T, d *datadriven.TestData, key string) []int32 {
	var v string
	d.ScanArgs(t, key, &v)
	ids := []int32{}
	for f := range strings.SplitSeq(v, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		require.NoError(t, err)
		ids = append(ids, int32(n))
	}
	return ids
}

// errName names a partition error by its sentinel.
func errName(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{{ErrStorage, "STORAGE"}, {ErrOpening, "OPENING"}, {ErrNotLeader, "NOT_LEADER"}, {log.ErrOffsetOutOfRange, "OFFSET_OUT_OF_RANGE"}} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return err.Error()
}

// Another component reading a partition's log (a coordinator shard's load)
// reports damage it meets: the partition takes the damage path only for
// damage of the log it holds now, never for another error or a log it has
// since reopened.
func TestReportDamage(t *testing.T) {
	var sent []*kmsg.AlterPartitionRequest
	r := newRecordingRig(t, 22, &sent)
	r.createReplicated("t", topicID(1), []int32{1, 2, 3}, []int32{1, 2, 3}, 1, nil)
	p := r.online("t", 0)
	require.NoError(t, r.produce(p, batch(t, 2), 1).Err)
	l := p.Log()
	damage := &log.CorruptError{File: p.Dir() + "/00000000000000000000.log", Position: 0}

	require.False(t, p.ReportDamage(l, errors.New("a record the shard refuses")))
	require.False(t, p.ReportDamage(nil, damage), "not this partition's log")
	require.True(t, p.Online())
	require.Empty(t, sent)

	require.True(t, p.ReportDamage(l, damage))
	require.False(t, p.Online(), "offline at once")
	require.Len(t, sent, 1)
	require.Equal(t, leaderRecoveryRecovering, sent[0].Topics[0].Partitions[0].LeaderRecoveryState)
	require.Empty(t, sent[0].Topics[0].Partitions[0].NewISR)
	require.False(t, p.ReportDamage(l, damage), "the log is closed")
}
