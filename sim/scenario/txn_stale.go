package scenario

import (
	"fmt"
	"math/rand/v2"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Late EndTxn deliveries (check v, the shape of KAFKA-17754): in the
// seeds that draw it, the harness keeps a copy of a producer's EndTxn
// of transaction N once N was answered, as a request the network held
// back would be, and delivers it to the coordinator once the producer's
// transaction N+1 has a write acknowledged (so the coordinator holds
// N+1 Ongoing). With KIP-890 part 2, N's end bumped the epoch, so the
// copy carries the epoch before and must be refused (PRODUCER_FENCED);
// one answered without error decided N+1, which its producer never
// asked for.
//
//   - (v) stale EndTxn: no EndTxn of an earlier transaction, delivered
//     late, is answered without error.

// staleEnd is an EndTxn as the producer sent it.
type staleEnd struct {
	rec         *txnRecord // nil: none
	pid         int64
	epoch       int16
	commit      bool
	coordinator int32
}

// staleRun is the late EndTxn part of a txn run.
type staleRun struct {
	r  *rand.Rand
	on bool
	// sent: late EndTxns delivered; fenced: refused with PRODUCER_FENCED
	// (others met a coordinator change or a lost answer).
	sent, fenced int
}

// staleOneIn: one later transaction's first write in this many gets
// the EndTxn before it delivered late.
const staleOneIn = 2

// deliverStale delivers tp's held EndTxn, in the seeds that do, once
// rec, a later transaction, has a write acknowledged.
func (t *txnRun) deliverStale(tp *txnProducerProc, rec *txnRecord) {
	st := tp.stale
	h := t.h
	if st.rec == nil || st.rec == rec || !t.stale.on || h.phase != logFaults {
		return
	}
	tp.stale = staleEnd{}
	if t.stale.r.IntN(staleOneIn) != 0 || t.checker == nil {
		return
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 5
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = tp.tid, st.pid, st.epoch, st.commit
	t.stale.sent++
	h.s.Trace(fmt.Sprintf("txn:stale-end %s of %s (pid=%d epoch=%d commit=%v) during %s to n%d", tp.tid, st.rec.key, st.pid, st.epoch, st.commit, rec.key, st.coordinator))
	t.checker.Do(st.coordinator, req, 0, func(r kmsg.Response, err error) {
		resp, ok := r.(*kmsg.EndTxnResponse)
		if err != nil || !ok {
			return
		}
		h.s.Trace(fmt.Sprintf("txn:stale-end %s of %s answered code=%d", tp.tid, st.rec.key, resp.ErrorCode))
		if resp.ErrorCode == 0 {
			t.fail(fmt.Errorf("(v) stale EndTxn: %s's EndTxn (commit=%v, producer id %d, epoch %d) of transaction %s, delivered late during transaction %s (%s), was answered without error (producer id %d, epoch %d): it decided a transaction it never saw",
				tp.tid, st.commit, st.pid, st.epoch, st.rec.key, rec.key, rec.outcome, resp.ProducerID, resp.ProducerEpoch))
			return
		}
		if resp.ErrorCode == kerr.ProducerFenced.Code || resp.ErrorCode == kerr.InvalidProducerEpoch.Code {
			t.stale.fenced++
		}
	})
}
