package kclient

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnOffsets are the consumed offsets a transaction commits for a group,
// as the Java client's sendOffsetsToTransaction does: once the
// transaction's writes are acknowledged, AddOffsetsToTxn to the
// transaction coordinator (which adds the group's __consumer_offsets
// partition to the transaction), then TxnOffsetCommit to the group's
// coordinator (found with FindCoordinator, key type 0), then the EndTxn.
// The offsets become the group's committed offsets when, and only when,
// the transaction commits. The producer is not a group member here
// (generation -1, no member id: the pre-KIP-447 model, one transactional
// id per set of input partitions), so the commit is accepted for any
// group.
type TxnOffsets struct {
	Group   string
	Offsets []TxnOffset
}

// TxnOffset is one partition's next offset to consume.
type TxnOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// BeginWithOffsets runs transaction n as Begin does, committing offsets
// for their group inside it (after the writes, before the EndTxn).
func (p *TxnProducer) BeginWithOffsets(n int, writes []TxnWrite, offsets *TxnOffsets, commit bool) {
	if !p.Ready() {
		panic("kclient: TxnProducer.BeginWithOffsets while not ready")
	}
	p.cur = &txnCur{n: n, writes: writes, commit: commit, offsets: offsets, groupCoord: -1}
	p.start()
}

// sendOffsets is AddOffsetsToTxn, then TxnOffsetCommit, then the EndTxn.
func (p *TxnProducer) sendOffsets() {
	p.state = txnOffsetting
	cur := p.cur
	if cur.offsetsAdded || p.cfg.ImplicitAdds {
		// Implicit adds: the TxnOffsetCommit (v5) adds the group's
		// partition.
		p.commitOffsets()
		return
	}
	if p.coordinator < 0 {
		p.findThen(txnOffsetting)
		return
	}
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = p.cfg.TransactionalID, p.pid, p.epoch, cur.offsets.Group
	code := func(resp *kmsg.AddOffsetsToTxnResponse) int16 { return resp.ErrorCode }
	askCoordinator(p, txnOffsetting, req, code, p.sendOffsets, func(*kmsg.AddOffsetsToTxnResponse) {
		cur.offsetsAdded = true
		p.commitOffsets()
	})
}

// commitOffsets sends the TxnOffsetCommit to the group's coordinator.
func (p *TxnProducer) commitOffsets() {
	cur := p.cur
	if cur.groupCoord < 0 {
		FindCoordinator(p.c, 0, cur.offsets.Group, func(node int32, err error) {
			if p.state != txnOffsetting || p.cur != cur {
				return
			}
			if err != nil {
				p.again(p.commitOffsets)
				return
			}
			cur.groupCoord = node
			p.commitOffsets()
		})
		return
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = p.cfg.TransactionalID, cur.offsets.Group, p.pid, p.epoch
	req.Generation, req.MemberID = -1, ""
	for _, o := range cur.offsets.Offsets {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != o.Topic {
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = o.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = o.Partition, o.Offset, -1
		req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, rp)
	}
	p.c.Do(cur.groupCoord, req, 0, func(r kmsg.Response, err error) {
		if p.state != txnOffsetting || p.cur != cur {
			return
		}
		resp, ok := r.(*kmsg.TxnOffsetCommitResponse)
		if err != nil || !ok {
			cur.groupCoord = -1
			p.again(p.commitOffsets)
			return
		}
		var code int16
		for _, t := range resp.Topics {
			for _, pr := range t.Partitions {
				if pr.ErrorCode != 0 && code == 0 {
					code = pr.ErrorCode
				}
			}
		}
		switch code {
		case 0:
			p.failures = 0
			p.event(TxnEvent{Kind: TxnOffsetsCommitted, Coordinator: cur.groupCoord})
			p.startEnd()
		case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
			cur.groupCoord = -1
			p.again(p.commitOffsets)
		case kerr.CoordinatorLoadInProgress.Code, kerr.UnknownTopicOrPartition.Code, kerr.RequestTimedOut.Code,
			kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code:
			p.again(p.commitOffsets)
		case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code, kerr.TransactionalIDAuthorizationFailed.Code:
			p.fence(fmt.Errorf("TxnOffsetCommit: %s", codeName(code)))
		default:
			// INVALID_TXN_STATE, TRANSACTION_ABORTABLE, ...: abortable.
			p.c.log.Debug("transactional offset commit refused", "code", codeName(code))
			cur.abort = true
			p.startEnd()
		}
	})
}

// FindCoordinator asks any broker for the coordinator of key (keyType 0:
// a group, 1: a transactional id) once; done gets its node id, or an
// error for a lost answer or an error code (the caller retries).
func FindCoordinator(c *Client, keyType int8, key string, done func(node int32, err error)) {
	c.DoAny(findCoordinatorRequest(keyType, key), func(r kmsg.Response, err error) {
		resp, ok := r.(*kmsg.FindCoordinatorResponse)
		if err != nil || !ok {
			done(-1, fmt.Errorf("FindCoordinator: %v", err))
			return
		}
		x, ok := coordinatorIn(resp, nil)
		if !ok {
			done(-1, fmt.Errorf("FindCoordinator: %d coordinators answered", len(resp.Coordinators)))
			return
		}
		if x.ErrorCode != 0 || x.NodeID < 0 {
			done(-1, fmt.Errorf("FindCoordinator: %s", codeName(x.ErrorCode)))
			return
		}
		c.learnBroker(x.NodeID, x.Host, x.Port)
		done(x.NodeID, nil)
	})
}

// findCoordinatorRequest asks for the coordinator of key, of keyType (0:
// a group, 1: a transactional id), in the v4+ batched form and the older
// one.
func findCoordinatorRequest(keyType int8, key string) *kmsg.FindCoordinatorRequest {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = keyType
	req.CoordinatorKey = key
	req.CoordinatorKeys = []string{key}
	return req
}

// coordinatorIn is the coordinator a FindCoordinator answer (r, or the
// request's error err) names: its top-level fields, or from v4 its one
// entry; false for a lost answer or a v4+ one with other than one.
func coordinatorIn(r kmsg.Response, err error) (kmsg.FindCoordinatorResponseCoordinator, bool) {
	resp, ok := r.(*kmsg.FindCoordinatorResponse)
	if err != nil || !ok {
		return kmsg.FindCoordinatorResponseCoordinator{}, false
	}
	if resp.Version < 4 {
		x := kmsg.NewFindCoordinatorResponseCoordinator()
		x.ErrorCode, x.NodeID, x.Host, x.Port = resp.ErrorCode, resp.NodeID, resp.Host, resp.Port
		return x, true
	}
	if len(resp.Coordinators) != 1 {
		return kmsg.FindCoordinatorResponseCoordinator{}, false
	}
	return resp.Coordinators[0], true
}

// FetchStableOffsets asks the coordinator of group for its committed
// offsets of parts once, with require_stable (OffsetFetch v7+): a
// partition with a transactional commit pending answers
// UNSTABLE_OFFSET_COMMIT, an error here (the caller asks again later).
// done gets the offsets in parts' order (-1: none committed), or an
// error.
func FetchStableOffsets(c *Client, group string, parts []TopicPartition, done func(offsets []int64, err error)) {
	FindCoordinator(c, 0, group, func(node int32, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		req := offsetFetchRequest(group, parts)
		req.RequireStable = true
		c.Do(node, req, 0, func(r kmsg.Response, err error) {
			resp, ok := r.(*kmsg.OffsetFetchResponse)
			if err != nil || !ok {
				done(nil, fmt.Errorf("OffsetFetch: %v", err))
				return
			}
			code := resp.ErrorCode
			type got struct {
				tp     TopicPartition
				offset int64
			}
			var all []got
			add := func(topic string, partition int32, offset int64, pc int16) {
				if pc != 0 && code == 0 {
					code = pc
				}
				all = append(all, got{TopicPartition{topic, partition}, offset})
			}
			if resp.Version >= 8 {
				code = 0
				if len(resp.Groups) != 1 {
					done(nil, fmt.Errorf("OffsetFetch: %d groups answered", len(resp.Groups)))
					return
				}
				code = resp.Groups[0].ErrorCode
				for _, t := range resp.Groups[0].Topics {
					for _, p := range t.Partitions {
						add(t.Topic, p.Partition, p.Offset, p.ErrorCode)
					}
				}
			} else {
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						add(t.Topic, p.Partition, p.Offset, p.ErrorCode)
					}
				}
			}
			if code != 0 {
				done(nil, fmt.Errorf("OffsetFetch: %s", codeName(code)))
				return
			}
			out := make([]int64, len(parts))
			for i, tp := range parts {
				out[i] = -1
				for _, g := range all {
					if g.tp == tp {
						out[i] = g.offset
					}
				}
			}
			done(out, nil)
		})
	})
}
