package txn

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/sim"
)

// rig runs a shard on a simulated process. Its writes commit after a
// millisecond (or fail, or wait to be released); its markers wait in
// sent until a script answers them.
type rig struct {
	t       *testing.T
	s       *sim.Sim
	e       env.Env
	shard   *Shard
	cfg     Config
	written []Record
	// failWrites fails every write; holdWrites keeps them in held.
	failWrites error
	holdWrites bool
	held       []func(error)
	nextPID    int64
	sent       []*sentMarkers
	known      map[string]int32 // topic -> partitions; nil: all exist
	// late collects the answers of requests a command left waiting;
	// the next command prints them.
	late []string
}

type sentMarkers struct {
	m    Markers
	done func([]MarkerResult)
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, s: sim.New(sim.Config{Seed: 1}), nextPID: 1000}
	p := r.s.AddProcess("b1", func(e env.Env) { r.e = e })
	p.Start()
	r.run(0)
	r.cfg = Config{MaxTimeout: time.Minute, AbortCheckInterval: time.Second, IDExpiration: time.Hour, CoordinatorEpoch: 3}
	r.shard = r.newShard()
	r.shard.Loaded()
	return r
}

func (r *rig) newShard() *Shard {
	cfg := r.cfg
	cfg.Write = func(recs []Record, done func(error)) {
		if err := r.failWrites; err != nil {
			r.e.AfterFunc(time.Millisecond, func() { done(err) })
			return
		}
		commit := func(err error) {
			if err == nil {
				r.written = append(r.written, recs...)
			}
			done(err)
		}
		if r.holdWrites {
			r.held = append(r.held, commit)
			return
		}
		r.e.AfterFunc(time.Millisecond, func() { commit(nil) })
	}
	cfg.AllocateProducerID = func(done func(int64, *kerr.Error)) {
		id := r.nextPID
		r.nextPID++
		r.e.Post(func() { done(id, nil) })
	}
	cfg.Markers = r
	cfg.PartitionExists = func(topic string, p int32) bool {
		if r.known == nil {
			return true
		}
		n, ok := r.known[topic]
		return ok && p >= 0 && p < n
	}
	return NewShard(r.e, slog.New(slog.DiscardHandler), cfg)
}

func (r *rig) SendMarkers(m Markers, done func([]MarkerResult)) {
	r.sent = append(r.sent, &sentMarkers{m: m, done: done})
}

func (r *rig) run(d time.Duration) {
	r.t.Helper()
	require.NoError(r.t, r.s.RunFor(d))
}

// replayed is a new shard loaded from every committed record.
func (r *rig) replayed() *Shard {
	r.t.Helper()
	sh := r.newShard()
	for _, rec := range r.written {
		require.NoError(r.t, sh.Replay(rec.Key, rec.Value))
	}
	return sh
}

func errName(err *kerr.Error) string {
	if err == nil {
		return "NONE"
	}
	return err.Message
}

func parseParts(t *testing.T, s string) []TopicPartition {
	var out []TopicPartition
	for _, f := range strings.Split(s, ",") {
		i := strings.LastIndexByte(f, '-')
		require.Positive(t, i, "partition %q", f)
		p, err := strconv.Atoi(f[i+1:])
		require.NoError(t, err)
		out = append(out, TopicPartition{f[:i], int32(p)})
	}
	return out
}

// dump prints a shard's ids, sorted.
func dump(s *Shard) string {
	var b strings.Builder
	for _, id := range s.ids() {
		t := s.txns[id]
		if !t.persisted {
			continue
		}
		fmt.Fprintf(&b, "%s: %s pid=%d epoch=%d", id, t.summary().State, t.producerID, t.epoch)
		if t.lastEpoch >= 0 {
			fmt.Fprintf(&b, " last=%d", t.lastEpoch)
		}
		if t.prevProducerID >= 0 {
			fmt.Fprintf(&b, " prev_pid=%d", t.prevProducerID)
		}
		if t.nextProducerID >= 0 {
			fmt.Fprintf(&b, " next_pid=%d", t.nextProducerID)
		}
		if t.tv2 {
			b.WriteString(" tv2")
		}
		if len(t.partitions) > 0 {
			fmt.Fprintf(&b, " parts=%v", t.partitions)
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return "no transactional ids\n"
	}
	return b.String()
}

// TestScripts runs testdata/*.txt against a shard.
//
//	init id=T [timeout=ms] [pid=P epoch=E]   InitProducerId
//	add id=T pid=P epoch=E parts=t-0,u-1 [verify]   AddPartitionsToTxn
//	end id=T pid=P epoch=E commit|abort [v=V]   EndTxn (v5+: KIP-890 part 2)
//	state                      the shard's ids
//	markers                    the marker requests sent and unanswered
//	answer [i=N] [err=CODE parts=t-0,...] [only=t-0,...]
//	                           answers sent request N (default 0): NONE,
//	                           or CODE for parts; only: answers just those
//	answer-all                 answers every request sent, NONE
//	tick D                     time passes
//	replay                     a new shard replays the log: same state?
//	failover                   the shard is unloaded and a new one replays
//	                           the log and takes over
//	fail-writes, heal-writes, hold-writes, release-writes
//	topics t=N,...             the image's topics (others are unknown)
//	describe id=T / list [states=S,...] [pids=P,...] [min=D]
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		r := newRig(t)
		datadriven.RunTest(t, path, r.cmd)
	})
}

func (r *rig) cmd(t *testing.T, d *datadriven.TestData) string {
	r.t = t
	var id string
	var pid int64 = -1
	var epoch int16 = -1
	if d.HasArg("id") {
		d.ScanArgs(t, "id", &id)
	}
	if d.HasArg("pid") {
		d.ScanArgs(t, "pid", &pid)
	}
	if d.HasArg("epoch") {
		d.ScanArgs(t, "epoch", &epoch)
	}
	out := r.cmd1(t, d, id, pid, epoch)
	if len(r.late) > 0 {
		out += "late answers:\n" + strings.Join(r.late, "")
		r.late = nil
	}
	return out
}

// answer returns the setter of a request's answer and the wait for it:
// an answer that comes after the command returned goes to late.
func (r *rig) answer(t *testing.T, cmd string) (set func(string), wait func() string) {
	answered, returned := false, false
	var out string
	set = func(s string) {
		require.False(t, answered, "answered twice")
		answered = true
		if returned {
			r.late = append(r.late, cmd+": "+s)
			return
		}
		out = s
	}
	wait = func() string {
		r.run(10 * time.Millisecond)
		returned = true
		if !answered {
			return "waiting\n"
		}
		return out
	}
	return set, wait
}

func (r *rig) cmd1(t *testing.T, d *datadriven.TestData, id string, pid int64, epoch int16) string {
	switch d.Cmd {
	case "init":
		timeout := int32(30000)
		if d.HasArg("timeout") {
			d.ScanArgs(t, "timeout", &timeout)
		}
		set, wait := r.answer(t, d.Cmd)
		r.shard.InitProducerID(id, timeout, pid, epoch, func(p int64, e int16, err *kerr.Error) {
			if err != nil {
				set(errName(err) + "\n")
				return
			}
			set(fmt.Sprintf("pid=%d epoch=%d\n", p, e))
		})
		return wait()
	case "add":
		var parts string
		d.ScanArgs(t, "parts", &parts)
		tps := parseParts(t, parts)
		set, wait := r.answer(t, d.Cmd)
		r.shard.AddPartitions(id, pid, epoch, tps, d.HasArg("verify"), func(errs []*kerr.Error) {
			require.Len(t, errs, len(tps))
			var out string
			for i, e := range errs {
				out += fmt.Sprintf("%s: %s\n", tps[i], errName(e))
			}
			set(out)
		})
		return wait()
	case "end":
		v := 4
		if d.HasArg("v") {
			d.ScanArgs(t, "v", &v)
		}
		set, wait := r.answer(t, d.Cmd)
		r.shard.EndTxn(id, pid, epoch, d.HasArg("commit"), v >= 5, func(p int64, e int16, err *kerr.Error) {
			switch {
			case err != nil:
				set(errName(err) + "\n")
			case v >= 5:
				set(fmt.Sprintf("NONE pid=%d epoch=%d\n", p, e))
			default:
				set("NONE\n")
			}
		})
		return wait()
	case "state":
		return dump(r.shard)
	case "markers":
		var b strings.Builder
		for i, s := range r.sent {
			kind := "abort"
			if s.m.Commit {
				kind = "commit"
			}
			fmt.Fprintf(&b, "%d: %s %s pid=%d epoch=%d coordinator_epoch=%d tv=%d %v\n", i, s.m.TransactionalID, kind,
				s.m.ProducerID, s.m.ProducerEpoch, s.m.CoordinatorEpoch, s.m.TransactionVersion, s.m.Partitions)
		}
		if b.Len() == 0 {
			return "none\n"
		}
		return b.String()
	case "answer":
		i := 0
		if d.HasArg("i") {
			d.ScanArgs(t, "i", &i)
		}
		require.Less(t, i, len(r.sent))
		s := r.sent[i]
		r.sent = slices.Delete(r.sent, i, i+1)
		failed := map[TopicPartition]*kerr.Error{}
		if d.HasArg("err") {
			var code, parts string
			d.ScanArgs(t, "err", &code)
			d.ScanArgs(t, "parts", &parts)
			e := kerrByName(t, code)
			for _, tp := range parseParts(t, parts) {
				failed[tp] = e
			}
		}
		var only []TopicPartition
		if d.HasArg("only") {
			var parts string
			d.ScanArgs(t, "only", &parts)
			only = parseParts(t, parts)
		}
		var res []MarkerResult
		for _, tp := range s.m.Partitions {
			if only != nil && !slices.Contains(only, tp) {
				continue
			}
			res = append(res, MarkerResult{TopicPartition: tp, Err: failed[tp]})
		}
		s.done(res)
		r.run(10 * time.Millisecond)
		return dump(r.shard)
	case "answer-all":
		for len(r.sent) > 0 {
			s := r.sent[0]
			r.sent = r.sent[1:]
			res := make([]MarkerResult, 0, len(s.m.Partitions))
			for _, tp := range s.m.Partitions {
				res = append(res, MarkerResult{TopicPartition: tp})
			}
			s.done(res)
			r.run(10 * time.Millisecond)
		}
		return dump(r.shard)
	case "tick":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		require.NoError(t, err)
		r.run(dur)
		return dump(r.shard)
	case "replay":
		sh := r.replayed()
		got, want := dump(sh), dump(r.shard)
		if got != want {
			return "replayed differs:\n" + got
		}
		return "same\n"
	case "failover":
		r.shard.Unload()
		held := r.held
		r.held, r.holdWrites = nil, false
		for _, f := range held {
			f(kerr.NotLeaderForPartition) // the new leader truncated it
		}
		r.sent = nil // answers to the old shard's requests are dropped
		r.cfg.CoordinatorEpoch++
		sh := r.replayed()
		r.shard = sh
		sh.Loaded()
		r.run(10 * time.Millisecond)
		return dump(sh)
	case "fail-writes":
		r.failWrites = kerr.NotEnoughReplicas
		return "ok\n"
	case "heal-writes":
		r.failWrites, r.holdWrites = nil, false
		return "ok\n"
	case "hold-writes":
		r.holdWrites = true
		return "ok\n"
	case "release-writes":
		held := r.held
		r.held, r.holdWrites = nil, false
		for _, f := range held {
			f(nil)
		}
		r.run(10 * time.Millisecond)
		return dump(r.shard)
	case "topics":
		r.known = map[string]int32{}
		for _, a := range d.CmdArgs {
			n, err := strconv.Atoi(a.Vals[0])
			require.NoError(t, err)
			r.known[a.Key] = int32(n)
		}
		return "ok\n"
	case "describe":
		s, err := r.shard.Describe(id)
		if err != nil {
			return errName(err) + "\n"
		}
		return fmt.Sprintf("%s pid=%d epoch=%d timeout=%d started=%v parts=%v\n", s.State, s.ProducerID, s.ProducerEpoch, s.TimeoutMillis, s.StartTimestamp >= 0, s.Partitions)
	case "list":
		var f Filter
		if d.HasArg("states") {
			var v string
			d.ScanArgs(t, "states", &v)
			for _, n := range strings.Split(v, ",") {
				st, ok := ParseState(n)
				require.True(t, ok, n)
				f.States = append(f.States, st)
			}
		}
		if d.HasArg("pids") {
			var v string
			d.ScanArgs(t, "pids", &v)
			for _, n := range strings.Split(v, ",") {
				p, err := strconv.ParseInt(n, 10, 64)
				require.NoError(t, err)
				f.ProducerIDs = append(f.ProducerIDs, p)
			}
		}
		if d.HasArg("min") {
			var v string
			d.ScanArgs(t, "min", &v)
			dur, err := time.ParseDuration(v)
			require.NoError(t, err)
			f.MinDuration = dur
		}
		l, err := r.shard.List(f)
		if err != nil {
			return errName(err) + "\n"
		}
		var b strings.Builder
		for _, s := range l {
			fmt.Fprintf(&b, "%s %s pid=%d\n", s.TransactionalID, s.State, s.ProducerID)
		}
		if b.Len() == 0 {
			return "none\n"
		}
		return b.String()
	}
	t.Fatalf("unknown command %q", d.Cmd)
	return ""
}

func kerrByName(t *testing.T, name string) *kerr.Error {
	for code := int16(-1); code < 200; code++ {
		if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && e.Message == name {
			return e
		}
	}
	t.Fatalf("no error %q", name)
	return nil
}
