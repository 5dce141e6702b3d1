package kraft

// This file forwards the controller requests (and DescribeQuorum) that a
// member cannot answer itself to the quorum leader's controller listener:
// a follower voter's or an observer's Submit reaches the active controller
// over the network, one hop, as Kafka brokers forward to the controller.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/controller"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/wire"
)

// Submit hands a controller request (BrokerRegistration, BrokerHeartbeat,
// CreateTopics, ..., any kind controller.Supports) or a DescribeQuorum
// request to the active controller; done runs later on the loop with the
// response, at the request's version, once the records it depends on are
// committed.
//
// A member whose controller is active answers itself. Any other member (a
// follower voter, an observer) that knows the quorum leader forwards the
// request to the leader's controller listener and completes done with the
// leader's answer; one that knows no leader (or leads without an active
// controller yet) answers NOT_CONTROLLER at once. A forwarded request that
// finds no answer gets a retriable error instead: NOT_CONTROLLER when the
// connection to the leader is lost or the leader changes, REQUEST_TIMED_OUT
// after Config.ForwardRequestTimeout or when maxForwardedInflight requests
// are already forwarded. For the first two the outcome is unknown: the
// leader may have applied the request, so a retry may find its effect (a
// topic that already exists).
//
// DescribeQuorum is answered by the leader, as the controller answers it in
// Kafka; a member that knows no other leader answers itself
// (NOT_LEADER_OR_FOLLOWER when it does not lead). A request kind neither
// the controller nor DescribeQuorum serves gets an error, and so does a
// stopped member's.
func (m *Member) Submit(req kmsg.Request, done func(kmsg.Response, error)) {
	if dq, ok := req.(*kmsg.DescribeQuorumRequest); ok {
		m.submitDescribeQuorum(dq, done)
		return
	}
	if !controller.Supports(req) || m.ctrl.IsLeader() {
		m.submitLocal(req, done)
		return
	}
	leader := m.forwardTarget()
	if leader == quorum.NoNode {
		m.submitLocal(req, done) // NOT_CONTROLLER
		return
	}
	m.net.fwd.forward(leader, req, done)
}

// submitDescribeQuorum answers DescribeQuorum here when this member leads
// or knows no other leader, and forwards it to the leader otherwise.
func (m *Member) submitDescribeQuorum(req *kmsg.DescribeQuorumRequest, done func(kmsg.Response, error)) {
	if err := quorum.CheckDescribeQuorumRequest(req); err != nil {
		resp := quorum.DescribeQuorumResponse(quorum.QuorumInfo{}, err, req.Version, m.wallMillis)
		m.e.Post(func() { done(resp, nil) })
		return
	}
	leader := m.forwardTarget()
	if leader == quorum.NoNode {
		resp := m.DescribeQuorumResponse(req.Version)
		m.e.Post(func() { done(resp, nil) })
		return
	}
	m.net.fwd.forward(leader, req, done)
}

// forwardTarget is the voter to forward a request to: the quorum leader
// this member knows when it is another node, else quorum.NoNode.
func (m *Member) forwardTarget() quorum.NodeID {
	if m.err != nil || m.closing || m.raft == nil {
		return quorum.NoNode
	}
	leader, _ := m.raft.Leader()
	if leader == m.cfg.NodeID {
		return quorum.NoNode
	}
	return leader
}

// ErrorResponse answers a request that Submit serves (a controller request
// or DescribeQuorum) with err in every place its response carries an error
// code. It answers a forwarded request that got no answer from the leader,
// and a broker's request it cannot pass on.
func ErrorResponse(req kmsg.Request, err *kerr.Error, msg string) kmsg.Response {
	return protocol.ErrorResponse(req, err, msg)
}

// forwarder sends forwarded requests to the leaders' controller listeners.
// It keeps one connection per destination voter, its own rather than the
// quorum's peer connection: an observer's peer connections carry its
// Fetches, the quorum resets a peer connection on its own bounds, and a
// controller request may wait seconds for a commit, so the two traffic
// kinds are kept from failing each other. A connection is dialed when a
// request needs it and not redialed on its own; its requests fail when it
// is lost.
type forwarder struct {
	m        *Member
	clientID string
	dests    []*forwardDest // sorted by id, created on first use
	// inflight counts the forwarded requests not yet answered, across
	// destinations; at maxForwardedInflight new ones are refused.
	inflight int
	closed   bool
}

// forwardDest is the connection to one voter's controller listener (dialled
// on demand, never redialled on its own) and the requests forwarded on it,
// in the order they were forwarded.
type forwardDest struct {
	id      quorum.NodeID
	conn    *wire.Peer
	pending []*forwardedRequest
}

// forwardedRequest is one request awaiting the leader's answer; call is
// its place on the connection (queued while it connects).
type forwardedRequest struct {
	req   kmsg.Request
	done  func(kmsg.Response, error)
	timer env.Timer
	call  *wire.Call
}

func newForwarder(m *Member) *forwarder {
	return &forwarder{m: m, clientID: fmt.Sprintf("kraft-%d-forward", int32(m.cfg.NodeID))}
}

// dest returns the destination for voter id, creating it; nil when id is
// not a voter.
func (f *forwarder) dest(id quorum.NodeID) *forwardDest {
	i, found := slices.BinarySearchFunc(f.dests, id, func(d *forwardDest, id quorum.NodeID) int { return int(d.id) - int(id) })
	if found {
		return f.dests[i]
	}
	for _, v := range f.m.cfg.Voters {
		if v.ID == id {
			d := &forwardDest{id: id}
			d.conn = wire.NewPeer(f.m.e, wire.PeerConfig{
				Addr:        v.Addr,
				ClientID:    f.clientID,
				TLSListener: f.m.cfg.Security.tlsListener(),
				MaxInflight: maxForwardedInflight,
				Logger:      f.m.log,
				OnDialFailed: func(err error) {
					f.m.log.Debug("cannot reach the controller to forward to", "leader", int32(id), "err", err)
					f.drop(d, fmt.Sprintf("Cannot reach the controller %d: %v.", int32(id), err))
				},
				OnLost: func(error) {
					f.drop(d, fmt.Sprintf("The connection to the controller %d was lost; the request may or may not have been applied.", int32(id)))
				},
			})
			f.dests = slices.Insert(f.dests, i, d)
			return d
		}
	}
	return nil
}

// forward sends req to voter leader's controller listener; done runs later
// with the answer or a retriable error.
func (f *forwarder) forward(leader quorum.NodeID, req kmsg.Request, done func(kmsg.Response, error)) {
	d := f.dest(leader)
	var refuse *kerr.Error
	var msg string
	switch {
	case f.closed:
		refuse, msg = kerr.NotController, "This node is shutting down."
	case d == nil:
		refuse, msg = kerr.NotController, fmt.Sprintf("The quorum leader %d is not a configured voter.", int32(leader))
	case f.inflight >= maxForwardedInflight:
		refuse, msg = kerr.RequestTimedOut, fmt.Sprintf("This node already forwards %d requests to the controller; retry later.", f.inflight)
	case f.m.e.Buggify("kraft/forward-refused"):
		// A spurious retriable refusal, as when the leader changed just
		// now: the sender must retry.
		refuse, msg = kerr.NotController, "Buggify: the forward was refused."
	}
	if refuse != nil {
		resp := ErrorResponse(req, refuse, msg)
		f.m.e.Post(func() { done(resp, nil) })
		return
	}
	fr := &forwardedRequest{req: req, done: done}
	f.inflight++
	d.pending = append(d.pending, fr)
	fr.timer = f.m.e.AfterFunc(f.m.cfg.ForwardRequestTimeout, func() {
		fr.timer = nil
		f.m.log.Warn("forwarded request timed out", "api", kmsg.NameForKey(req.Key()), "leader", int32(d.id), "timeout", f.m.cfg.ForwardRequestTimeout)
		f.finish(d, fr, ErrorResponse(req, kerr.RequestTimedOut,
			fmt.Sprintf("The controller did not answer within %v.", f.m.cfg.ForwardRequestTimeout)))
	})
	// A response to a request that already finished (timed out) is
	// dropped by finish; a connection that fails fails every pending
	// request through drop, in order.
	fr.call, _ = d.conn.Do(req, 0, func(resp kmsg.Response, err error) {
		if err == nil {
			f.finish(d, fr, resp)
		}
	})
}

// finish completes fr with resp, once.
func (f *forwarder) finish(d *forwardDest, fr *forwardedRequest, resp kmsg.Response) {
	i := slices.Index(d.pending, fr)
	if i < 0 {
		return
	}
	d.pending = slices.Delete(d.pending, i, i+1)
	f.inflight--
	fr.call.Cancel() // not sent yet: it no longer will be
	if fr.timer != nil {
		fr.timer.Stop()
		fr.timer = nil
	}
	fr.done(resp, nil)
}

// leaderChanged fails the requests forwarded to any voter but leader and
// closes their connections: a former leader answers them NOT_CONTROLLER
// anyway when it resigned, and may never answer when it is cut off.
func (f *forwarder) leaderChanged(leader quorum.NodeID) {
	for _, d := range f.dests {
		if d.id == leader || (len(d.pending) == 0 && !d.conn.Connected()) {
			continue
		}
		if len(d.pending) > 0 {
			f.m.log.Info("quorum leader changed; failing forwarded requests", "to", int32(d.id), "requests", len(d.pending), "leader", int32(leader))
		}
		f.drop(d, fmt.Sprintf("The controller %d lost leadership; the request may or may not have been applied.", int32(d.id)))
	}
}

// close fails every pending request and closes the connections.
func (f *forwarder) close() {
	if f.closed {
		return
	}
	f.closed = true
	for _, d := range f.dests {
		f.drop(d, "This node is shutting down; the request may or may not have been applied.")
		d.conn.Close()
	}
}

// drop closes d's connection and completes every request pending on it
// with NOT_CONTROLLER and msg, in the order they were forwarded. The
// callbacks run later on the loop: drop may run inside the member's step
// (a leader change, a shutdown), and a callback may call back into it.
func (f *forwarder) drop(d *forwardDest, msg string) {
	pending := d.pending
	d.pending = nil
	f.inflight -= len(pending)
	for _, fr := range pending {
		if fr.timer != nil {
			fr.timer.Stop()
			fr.timer = nil
		}
		resp, done := ErrorResponse(fr.req, kerr.NotController, msg), fr.done
		f.m.e.Post(func() { done(resp, nil) })
	}
	d.conn.Reset() // no OnLost: the requests were failed above
}
