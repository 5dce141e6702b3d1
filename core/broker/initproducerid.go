package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/protocol"
)

// Producer ids for idempotent producers come from blocks the active
// controller hands out (AllocateProducerIds, as Kafka's
// ProducerIdManager does); the broker gives them out one per
// InitProducerId without a transactional id, with epoch 0, and asks for
// the next block when one is nearly used up, so that a request seldom
// waits for the controller.

// producerIDPrefetchRatio: once this fraction of the current block is
// used, the next block is fetched ahead (Kafka's 90%).
const producerIDPrefetchRatio = 0.9

// producerIDs is the broker's current and prefetched blocks.
type producerIDs struct {
	next, end   int64 // the current block's unused ids: [next, end)
	blockSize   int64
	prefetched  *[2]int64
	fetching    bool
	waiting     []func(id int64, err *kerr.Error, msg string)
	lastFailure string
}

// handleInitProducerID answers an idempotent producer's InitProducerId
// with a new producer id and epoch 0, and passes one with a transactional
// id to the id's transaction coordinator shard (txnapis.go), which gets
// its producer ids from the same blocks. (KIP-360's epoch bump for an
// idempotent producer happens in the client; a broker always gives it a
// fresh id.)
func handleInitProducerID(b *Broker, r *request) {
	req := r.body.(*kmsg.InitProducerIDRequest)
	if req.TransactionalID != nil {
		handleTransactionalInitProducerID(b, r, req)
		return
	}
	b.allocateProducerID(func(id int64, err *kerr.Error, msg string) {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		if err != nil {
			b.log.Debug("InitProducerId failed", "err", err, "detail", msg)
			r.respond(protocol.ErrorResponse(req, err, msg))
			return
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		r.respond(resp)
	})
}

// allocateProducerID hands out the next id, now or once a block arrives.
func (b *Broker) allocateProducerID(done func(int64, *kerr.Error, string)) {
	p := &b.producerIDs
	if p.next >= p.end && p.prefetched != nil {
		p.next, p.end, p.prefetched = p.prefetched[0], p.prefetched[1], nil
	}
	if p.next < p.end {
		id := p.next
		p.next++
		if p.prefetched == nil && float64(p.end-p.next) <= (1-producerIDPrefetchRatio)*float64(p.blockSize) {
			b.fetchProducerIDBlock()
		}
		done(id, nil, "")
		return
	}
	p.waiting = append(p.waiting, done)
	b.fetchProducerIDBlock()
}

// fetchProducerIDBlock asks the active controller for a block.
func (b *Broker) fetchProducerIDBlock() {
	p := &b.producerIDs
	if p.fetching {
		return
	}
	epoch := int64(-1)
	if b.cfg.BrokerEpoch != nil {
		epoch = b.cfg.BrokerEpoch()
	}
	fail := func(code *kerr.Error, msg string) {
		p.lastFailure = msg
		waiting := p.waiting
		p.waiting = nil
		for _, w := range waiting {
			w(-1, code, msg)
		}
	}
	if b.cfg.Metadata == nil || epoch < 0 {
		// Not registered yet: the client retries.
		fail(kerr.CoordinatorLoadInProgress, "This broker is not registered with the controller yet; retry.")
		return
	}
	p.fetching = true
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = b.cfg.NodeID, epoch
	b.cfg.Metadata.Submit(req, func(r kmsg.Response, err error) {
		p.fetching = false
		resp, ok := r.(*kmsg.AllocateProducerIDsResponse)
		switch {
		case err != nil || !ok:
			fail(kerr.CoordinatorNotAvailable, fmt.Sprintf("Allocating producer ids failed: %v.", err))
			return
		case resp.ErrorCode != 0:
			fail(kerr.CoordinatorNotAvailable, fmt.Sprintf("The controller refused to allocate producer ids: %s.", kerr.ErrorForCode(resp.ErrorCode)))
			return
		case resp.ProducerIDLen <= 0 || resp.ProducerIDStart < 0:
			fail(kerr.UnknownServerError, fmt.Sprintf("The controller allocated an empty producer id block (%d, %d).", resp.ProducerIDStart, resp.ProducerIDLen))
			return
		}
		block := [2]int64{resp.ProducerIDStart, resp.ProducerIDStart + int64(resp.ProducerIDLen)}
		p.blockSize = int64(resp.ProducerIDLen)
		if p.next < p.end {
			p.prefetched = &block
		} else {
			p.next, p.end = block[0], block[1]
		}
		waiting := p.waiting
		p.waiting = nil
		for _, w := range waiting {
			b.allocateProducerID(w)
		}
	})
}
