package controller

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// allocateProducerIDs handles AllocateProducerIDs: the requesting broker
// (at its current epoch) gets the next ProducerIDBlockSize ids, and a
// ProducerIdsRecord moves the next free id past them. Ids start at 0.
func (c *Controller) allocateProducerIDs(req *kmsg.AllocateProducerIDsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	if _, ok := c.currentBroker(req.BrokerID, req.BrokerEpoch, &resp.ErrorCode); !ok {
		return resp
	}
	first := c.spec.ProducerIDs().NextProducerID
	if first > math.MaxInt64-ProducerIDBlockSize {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp
	}
	b := c.openBatch()
	if !c.add(b, &meta.ProducerIDsRecord{BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch, NextProducerID: first + ProducerIDBlockSize}) {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp
	}
	c.seal(b)
	resp.ProducerIDStart, resp.ProducerIDLen = first, ProducerIDBlockSize
	return resp
}
