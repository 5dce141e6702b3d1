package broker

import (
	"time"

	"github.com/strata-log/strata/core/env"
)

// partsAnswer answers a request whose partitions finish one by one, now
// or later (Produce, WriteTxnMarkers, DeleteRecords): once the last
// pending partition is done, or at its timeout if that comes first, and
// never twice. A partition that finishes after the answer must leave the
// response alone (it checks answered).
type partsAnswer struct {
	pending  int // partitions not done, plus one until every partition is started
	answered bool
	timer    env.Timer
	respond  func()
}

// newPartsAnswer starts a request's answer, respond sending it. Its one
// pending count is released by the last done, after the request's loop
// over its partitions, so that a partition done at once cannot answer
// early.
func newPartsAnswer(respond func()) *partsAnswer {
	return &partsAnswer{pending: 1, respond: respond}
}

// add counts one more partition to wait for.
func (a *partsAnswer) add() { a.pending++ }

// done counts a partition (or the request's loop) done; the last answers.
func (a *partsAnswer) done() {
	a.pending--
	if a.pending == 0 {
		a.answer()
	}
}

// answer answers now, unless answered already.
func (a *partsAnswer) answer() {
	if a.answered {
		return
	}
	a.answered = true
	if a.timer != nil {
		a.timer.Stop()
	}
	a.respond()
}

// timeoutAfter answers after wait unless answered before; expired, if
// not nil, runs first.
func (a *partsAnswer) timeoutAfter(e env.Env, wait time.Duration, expired func()) {
	a.timer = e.AfterFunc(wait, func() {
		a.timer = nil
		if a.answered {
			return
		}
		if expired != nil {
			expired()
		}
		a.answer()
	})
}
