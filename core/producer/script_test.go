package producer_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/internal/coretest"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
)

// TestScripts runs the scripts in testdata: a partition's producer state
// driven batch by batch, each command followed by what the broker would
// answer. Regenerate with -rewrite and read the diff.
//
// The partition's log is imaginary: every accepted batch takes the next
// offsets.
//
// Commands:
//
//	new [expiration=D]          a fresh state at offset 0
//	produce pid=N epoch=N seq=N [n=N] [ts=MS] [txn]
//	                            a client's batch of n records (default 1):
//	                            Check, and when it passes append and Appended;
//	                            pid=-1 is a producer without idempotence
//	replay pid=N epoch=N seq=N [n=N] [ts=MS] [txn] [control [abort] [coord=N]]
//	                            a stored batch at the log end, as recovery or
//	                            a follower applies it (control: a COMMIT
//	                            marker, or ABORT, of coordinator epoch coord)
//	marker pid=N epoch=N coord=N commit|abort [ts=MS]
//	                            a coordinator's marker: CheckMarker, and when
//	                            it passes append and AppendedMarker
//	produce ... verify[=NAME]   the same with verification required
//	                            (transaction.partition.verification.enable),
//	                            carrying verification NAME if given
//	start-verification pid=N epoch=N seq=N as=NAME [now=MS]
//	                            StartVerification for a client's batch,
//	                            its answer kept as NAME
//	lso hw=N                    the last stable offset at high watermark hw,
//	                            and the ongoing transactions
//	producers                   the state, by producer id
//	expire now=MS               Expire at that wall-clock time
//	restart [now=MS]            encode a snapshot, decode it and restore the
//	                            state from it, as a broker restart would
func TestScripts(t *testing.T) {
	// Fuzz corpora live under testdata/fuzz.
	coretest.RunScripts(t, "*.txt", func(*testing.T) coretest.Commands { return (&script{}).run })
}

type script struct {
	// verifications are StartVerification's answers, by name.
	verifications map[string]*producer.Verification
	cfg           producer.Config
	st            *producer.State
	end           int64 // the imaginary log's end offset
}

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "new" && s.st == nil {
		d.Fatalf(t, "new first")
	}
	var out strings.Builder
	switch d.Cmd {
	case "new":
		s.cfg = producer.DefaultConfig()
		if d.HasArg("expiration") {
			var v string
			d.ScanArgs(t, "expiration", &v)
			exp, err := time.ParseDuration(v)
			require.NoError(t, err)
			s.cfg.ExpirationTime = exp
		}
		s.st, s.end = producer.NewState(s.cfg, 0), 0
		return "ok\n"
	case "produce":
		s.produce(t, d, &out)
	case "replay":
		spec := scanBatch(t, d)
		b := spec.build(t, s.end)
		done, ok, err := s.st.ReplayTxn(b)
		require.NoError(t, err)
		s.end = b.NextOffset()
		fmt.Fprintf(&out, "replayed offsets %d..%d\n", b.BaseOffset(), b.LastOffset())
		if ok {
			writeCompleted(&out, done)
		}
	case "marker":
		s.marker(t, d, &out)
	case "start-verification":
		var pid, epoch, seq int
		var name string
		d.ScanArgs(t, "pid", &pid)
		d.ScanArgs(t, "epoch", &epoch)
		d.ScanArgs(t, "seq", &seq)
		d.ScanArgs(t, "as", &name)
		now := int64(0)
		coretest.ScanOptional(t, d, "now", &now)
		v := s.st.StartVerification(int64(pid), int16(epoch), int32(seq), d.HasArg("tv2"), now)
		if s.verifications == nil {
			s.verifications = map[string]*producer.Verification{}
		}
		s.verifications[name] = v
		if v == nil {
			fmt.Fprintf(&out, "%s: none needed, p%d has a transaction ongoing here at epoch %d\n", name, pid, epoch)
			break
		}
		for _, other := range slices.Sorted(maps.Keys(s.verifications)) {
			if other != name && s.verifications[other] == v {
				fmt.Fprintf(&out, "%s: the same verification as %s\n", name, other)
				return out.String()
			}
		}
		fmt.Fprintf(&out, "%s: a new verification\n", name)
	case "lso":
		var hw int64
		d.ScanArgs(t, "hw", &hw)
		s.st.HighWatermarkMoved(hw)
		fmt.Fprintf(&out, "lso %d, ongoing %v, %d unreplicated\n", s.st.LastStableOffset(hw), s.st.OngoingTxns(), s.st.Unreplicated())
	case "producers":
		writeProducers(&out, s.st)
	case "expire":
		var now int64
		d.ScanArgs(t, "now", &now)
		fmt.Fprintf(&out, "expired %v\n", s.st.Expire(time.UnixMilli(now)))
	case "restart":
		now := int64(0)
		coretest.ScanOptional(t, d, "now", &now)
		data := s.st.EncodeSnapshot()
		ps, err := producer.DecodeSnapshot(data)
		require.NoError(t, err)
		st, err := producer.Restore(s.cfg, s.st.EndOffset(), ps, time.UnixMilli(now))
		require.NoError(t, err)
		s.st = st
		fmt.Fprintf(&out, "snapshot at offset %d: %d bytes, %d producers restored\n", st.EndOffset(), len(data), st.Len())
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	return out.String()
}

func (s *script) produce(t *testing.T, d *datadriven.TestData, out *strings.Builder) {
	spec := scanBatch(t, d)
	b := spec.build(t, 0)
	require.NoError(t, b.ValidateForAppend(record.OriginClient))
	info := producer.InfoOf(b)
	for _, a := range d.CmdArgs {
		if a.Key == "verify" {
			info.VerificationRequired = true
			if len(a.Vals) > 0 {
				v, ok := s.verifications[a.Vals[0]]
				require.True(t, ok, "no verification %s", a.Vals[0])
				info.Verification = v
			}
		}
	}
	res, err := s.st.Check(info)
	switch {
	case err != nil:
		fmt.Fprintf(out, "refused %s\n", describeErr(err))
	case res.Duplicate:
		o := res.Original
		fmt.Fprintf(out, "duplicate: answered with offsets %d..%d ts %d, nothing appended\n", o.FirstOffset(), o.LastOffset, o.Timestamp)
	default:
		first := s.end
		s.end = b.AssignOffsets(first, 0)
		s.st.Appended(info, first, b.LastOffset(), b.MaxTimestamp())
		fmt.Fprintf(out, "appended offsets %d..%d\n", first, b.LastOffset())
	}
}

func (s *script) marker(t *testing.T, d *datadriven.TestData, out *strings.Builder) {
	var pid, epoch, coord int
	d.ScanArgs(t, "pid", &pid)
	d.ScanArgs(t, "epoch", &epoch)
	d.ScanArgs(t, "coord", &coord)
	ts := int64(1000)
	coretest.ScanOptional(t, d, "ts", &ts)
	m := producer.Marker{ProducerID: int64(pid), ProducerEpoch: int16(epoch), CoordinatorEpoch: int32(coord), Commit: d.HasArg("commit")}
	require.True(t, m.Commit != d.HasArg("abort"), "commit or abort")
	if err := s.st.CheckMarker(m); err != nil {
		fmt.Fprintf(out, "refused %s\n", describeErr(err))
		return
	}
	offset := s.end
	s.end++
	done, ok := s.st.AppendedMarker(m, offset, ts)
	fmt.Fprintf(out, "appended %s marker at offset %d\n", m.ControlType(), offset)
	if ok {
		writeCompleted(out, done)
	}
}

func writeCompleted(out *strings.Builder, c producer.CompletedTxn) {
	what := "committed"
	if c.Aborted {
		what = "aborted"
	}
	fmt.Fprintf(out, "p%d's transaction %d..%d %s, last stable offset %d\n", c.ProducerID, c.FirstOffset, c.LastOffset, what, c.LastStableOffset)
}

// describeErr names the Kafka error of err and what Check said about it.
func describeErr(err error) string {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return "with an error that has no Kafka code: " + err.Error()
	}
	detail := err.Error()
	if i := strings.LastIndex(detail, ": "); i >= 0 {
		detail = detail[i+2:]
	}
	return ke.Message + ": " + detail
}

func writeProducers(out *strings.Builder, st *producer.State) {
	ps := st.Producers()
	fmt.Fprintf(out, "end offset %d, %d producers\n", st.EndOffset(), len(ps))
	for _, p := range ps {
		fmt.Fprintf(out, "p%d epoch %d last-ts %d:", p.ID, p.Epoch, p.LastTimestamp)
		if p.CoordinatorEpoch >= 0 {
			fmt.Fprintf(out, " coord %d", p.CoordinatorEpoch)
		}
		if p.CurrentTxnFirstOffset >= 0 {
			fmt.Fprintf(out, " txn from %d", p.CurrentTxnFirstOffset)
		}
		for _, m := range p.Batches {
			fmt.Fprintf(out, " [seq %d..%d @ %d..%d ts %d]", m.FirstSeq(), m.LastSeq, m.FirstOffset(), m.LastOffset, m.Timestamp)
		}
		out.WriteByte('\n')
	}
}

// batchSpec is a producer batch to build.
type batchSpec struct {
	pid      int64
	epoch    int16
	seq      int32
	records  int
	ts       int64
	txn      bool
	control  bool
	abort    bool
	coord    int32
	noFields bool // a batch without producer fields
}

func scanBatch(t *testing.T, d *datadriven.TestData) batchSpec {
	var pid, epoch, seq int
	d.ScanArgs(t, "pid", &pid)
	spec := batchSpec{pid: int64(pid), records: 1, ts: 1000}
	if pid >= 0 {
		d.ScanArgs(t, "epoch", &epoch)
		d.ScanArgs(t, "seq", &seq)
		spec.epoch, spec.seq = int16(epoch), int32(seq)
	} else {
		spec.noFields = true
	}
	coretest.ScanOptional(t, d, "n", &spec.records)
	coretest.ScanOptional(t, d, "ts", &spec.ts)
	spec.txn, spec.control, spec.abort = d.HasArg("txn"), d.HasArg("control"), d.HasArg("abort")
	if d.HasArg("coord") {
		var coord int
		d.ScanArgs(t, "coord", &coord)
		spec.coord = int32(coord)
	}
	return spec
}

// build returns the batch at base offset base.
func (spec batchSpec) build(t require.TestingT, base int64) record.Batch {
	opts := []record.BuilderOption{record.WithBaseOffset(base)}
	if !spec.noFields {
		opts = append(opts, record.WithProducer(spec.pid, spec.epoch, spec.seq))
	}
	if spec.txn {
		opts = append(opts, record.WithTransactional())
	}
	if spec.control {
		opts = append(opts, record.WithControl())
	}
	bld := record.NewBuilder(opts...)
	for i := 0; i < spec.records; i++ {
		if spec.control {
			typ := record.ControlCommit
			if spec.abort {
				typ = record.ControlAbort
			}
			bld.AppendControl(spec.ts, typ, record.EndTxnMarkerValue(spec.coord))
			continue
		}
		bld.Append(spec.ts, nil, []byte(fmt.Sprintf("v%d", i)))
	}
	raw, err := bld.AppendTo(nil)
	require.NoError(t, err)
	b, err := record.ReadBatch(raw, len(raw))
	require.NoError(t, err)
	return b
}
