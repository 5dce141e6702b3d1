package kraft

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/connlimit"
	"github.com/strata-log/strata/core/controller"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/wire"
)

// network carries the quorum's messages as Kafka frames. Each member dials
// every other voter and sends its requests on that outbound connection,
// where their responses come back; requests from peers arrive on the
// connections it accepts, and their responses go back on the same one.
type network struct {
	m        *Member
	clientID string
	listener env.Listener
	// guard bounds the listener's connections (nil without a listener).
	guard   *connlimit.Guard
	peers   []*peer // sorted by id, self excluded
	inbound []*inboundConn
	closed  bool
	// fwd forwards controller requests to the leader (forward.go).
	fwd *forwarder
	// lastRef numbers the quorum requests received (quorum.Message.Ref),
	// so that a response goes back on its own request's connection.
	lastRef uint64
}

// peer is the outbound side toward one voter: a kept connection (dialled
// at start, redialled after ReconnectBackoffMin..Max, at most
// maxQueuedMessagesPerPeer requests held while it connects, the oldest
// dropped, and reset at maxInflightPerPeer unanswered requests).
type peer struct {
	id   quorum.NodeID
	conn *wire.Peer
	// endQuorumEpochs counts the EndQuorumEpoch requests queued for the
	// connection or awaiting a response (a resigning leader waits for
	// them).
	endQuorumEpochs int
	// otherCluster: the peer's last answer was INCONSISTENT_CLUSTER_ID
	// (logged once until it answers otherwise).
	otherCluster bool
}

// inboundConn is an accepted connection and the requests received on it
// that the Raft has not answered yet.
type inboundConn struct {
	conn env.Conn
	// principal is the connection's, from its client certificate
	// (Security.Principals), User:ANONYMOUS without one.
	principal principal.Principal
	pending   []pendingRequest
	closed    bool
	// idle closes the conn after connections.max.idle.ms.
	idle *connlimit.Idle
	// controllerRequests counts the controller requests received on the
	// conn and not answered yet (at most maxForwardedInflight).
	controllerRequests int
}

type pendingRequest struct {
	correlationID int32
	version       int16
	msg           quorum.Message // its Ref identifies it (network.nextRef)
}

func newNetwork(m *Member) *network {
	n := &network{m: m, clientID: fmt.Sprintf("kraft-%d", int32(m.cfg.NodeID)), fwd: newForwarder(m)}
	for _, v := range m.cfg.Voters {
		if v.ID != m.cfg.NodeID {
			n.peers = append(n.peers, n.newPeer(v.ID, v.Addr))
		}
	}
	return n
}

func (n *network) newPeer(id quorum.NodeID, addr string) *peer {
	p := &peer{id: id}
	p.conn = wire.NewPeer(n.m.e, wire.PeerConfig{
		Addr:          addr,
		ClientID:      n.clientID,
		TLSListener:   n.m.cfg.Security.tlsListener(),
		MaxInflight:   maxInflightPerPeer,
		ResetWhenFull: true,
		MaxQueued:     maxQueuedMessagesPerPeer,
		Redial:        wire.Backoff{Min: n.m.cfg.ReconnectBackoffMin, Max: n.m.cfg.ReconnectBackoffMax},
		// A refused (or timed-out) dial is what tells a crashed leader's
		// followers to elect a successor now rather than at the fetch
		// timeout. A lost connection alone is not reported: it is
		// redialed after ReconnectBackoffMin, and only a failed redial
		// is, so a reset that a live leader survives does not start an
		// election. Requests in flight on a lost connection are lost;
		// the Raft times them out.
		OnDialFailed: func(error) { n.m.step(func() { n.m.raft.PeerUnreachable(id) }) },
		Logger:       n.m.log,
	})
	return p
}

func (n *network) listen() error {
	if n.m.cfg.ListenAddr == "" {
		return nil // an observer without a listener
	}
	n.guard = connlimit.New(n.m.e, n.m.cfg.ListenerLimits, n.m.log.With("listener", "controller"))
	var l env.Listener
	var err error
	if sec := n.m.cfg.Security; sec.TLS {
		sn, ok := n.m.e.Net().(env.SecureNet)
		if !ok {
			return fmt.Errorf("kraft: controller listener %s is TLS but this environment has no TLS", sec.Listener)
		}
		l, err = sn.ListenTLS(n.m.cfg.ListenAddr, sec.Listener, n.accept)
	} else {
		l, err = n.m.e.Net().Listen(n.m.cfg.ListenAddr, n.accept)
	}
	if err != nil {
		return fmt.Errorf("kraft: listen on %s: %w", n.m.cfg.ListenAddr, err)
	}
	n.listener = l
	return nil
}

func (n *network) close() {
	if n.closed {
		return
	}
	n.closed = true
	n.fwd.close()
	if n.listener != nil {
		_ = n.listener.Close()
	}
	for _, p := range n.peers {
		p.conn.Close()
	}
	for _, ic := range n.inbound {
		ic.conn.Close()
	}
}

func (n *network) peer(id quorum.NodeID) *peer {
	for _, p := range n.peers {
		if p.id == id {
			return p
		}
	}
	return nil
}

func (n *network) dialAll() {
	for _, p := range n.peers {
		p.conn.Dial()
	}
}

// send delivers one message the Raft produced: a request goes out on the
// peer's outbound conn, a response answers a pending inbound request.
func (n *network) send(msg quorum.Message) {
	if n.closed {
		return
	}
	if !quorum.IsRequest(msg.Payload) {
		n.respond(msg)
		return
	}
	p := n.peer(msg.To)
	if p == nil {
		n.m.log.Warn("dropping message to unknown node", "msg", msg.String())
		return
	}
	n.sendTo(p, msg)
}

// sendTo gives the peer's connection one request, queued while it
// connects. A request that goes unanswered closes its connection: after a
// network partition heals, a connection whose segments were lost would
// otherwise wait for TCP's retransmission backoff (up to two minutes), and
// the member would rejoin that late.
func (n *network) sendTo(p *peer, msg quorum.Message) {
	req, err := quorum.EncodeRequest(msg, n.m.cfg.ClusterID, quorum.DefaultWireVersions)
	if err != nil {
		n.m.log.Warn("cannot encode quorum request", "msg", msg.String(), "err", err)
		return
	}
	_, endEpoch := msg.Payload.(quorum.EndQuorumEpochRequest)
	timeout := n.m.cfg.RequestTimeout
	if isFetch(msg.Payload) {
		timeout += n.m.cfg.Quorum.FetchMaxWait
	}
	_, err = p.conn.Do(req, timeout, func(resp kmsg.Response, err error) {
		if endEpoch {
			p.endQuorumEpochs--
		}
		if err != nil {
			return // not sent, or the conn ended: the Raft times the request out
		}
		n.onResponse(p, msg, resp)
	})
	if err == nil && endEpoch {
		p.endQuorumEpochs++
	}
	// A refused Do (too many in flight) reset the conn, which redials.
}

// onResponse steps the Raft with the response to msg.
func (n *network) onResponse(p *peer, msg quorum.Message, resp kmsg.Response) {
	if quorum.TopLevelError(resp) == quorum.ErrInconsistentClusterID {
		if !p.otherCluster {
			p.otherCluster = true
			n.m.log.Error("a voter refuses this member's requests as coming from another cluster (INCONSISTENT_CLUSTER_ID): "+
				"every node of a cluster needs the same cluster id (strata serve --cluster-id, meta.properties' cluster.id)",
				"peer", int32(p.id), "cluster_id", n.m.cfg.ClusterID)
		}
		return
	}
	p.otherCluster = false
	reply, err := quorum.DecodeResponse(resp, msg)
	if err != nil {
		n.m.log.Warn("undecodable quorum response", "peer", int32(p.id), "err", err)
		return
	}
	n.m.step(func() {
		if err := n.m.raft.Step(reply); err != nil {
			n.m.log.Debug("quorum refused response", "msg", reply.String(), "err", err)
		}
	})
}

func (n *network) accept(conn env.Conn) {
	if n.closed || !n.guard.Admit(conn.RemoteAddr()) {
		conn.Close()
		return
	}
	p, err := n.connPrincipal(conn)
	if err != nil {
		n.m.log.Warn("closing connection: client certificate maps to no principal", "remote", conn.RemoteAddr(), "err", err)
		n.guard.Release(conn.RemoteAddr())
		conn.Close()
		return
	}
	ic := &inboundConn{conn: conn, principal: p}
	n.inbound = append(n.inbound, ic)
	// A quorum request the Raft never answers stays pending (a superseded
	// fetch, a dropped vote), so only controller requests, which are
	// always answered, count as in flight; a peer's fetches, answered
	// within the fetch max wait, touch the conn often enough.
	ic.idle = n.guard.Watch(conn, func() bool { return ic.controllerRequests > 0 }, conn.Close)
	conn.OnFrame(func(frame []byte) { n.onRequest(ic, frame) })
	conn.OnClose(func(err error) {
		ic.idle.Stop()
		n.guard.Release(conn.RemoteAddr())
		if errors.Is(err, env.ErrFrameTooLarge) {
			n.m.log.Warn("connection closed: request frame too large", "remote", conn.RemoteAddr(), "err", err)
		}
		ic.closed = true
		for i, other := range n.inbound {
			if other == ic {
				n.inbound = append(n.inbound[:i], n.inbound[i+1:]...)
				break
			}
		}
	})
}

// onRequest parses a request frame: quorum requests are stepped into the
// Raft (the response follows when the Raft produces it), controller
// requests are submitted to this member's controller, never forwarded
// further (a follower answers NOT_CONTROLLER), and DescribeQuorum is
// answered at once. A frame that is malformed, of an unknown key or of a
// version kmsg cannot decode closes the connection.
func (n *network) onRequest(ic *inboundConn, frame []byte) {
	ic.idle.Touch()
	hdr, req, err := wire.ParseRequest(controllerAPIs, frame)
	switch {
	case errors.Is(err, wire.ErrApiVersionsTooNew):
		n.reply(ic, hdr.CorrelationID, controllerAPIs.ApiVersionsUnsupported())
		return
	case err != nil:
		n.m.log.Warn("bad request on the controller listener, closing connection", "remote", ic.conn.RemoteAddr(), "err", err)
		ic.conn.Close()
		return
	}
	corr, version := hdr.CorrelationID, hdr.Version
	if !n.authorized(ic, req) {
		n.refuseUnauthorized(ic, corr, req)
		return
	}
	if av, ok := req.(*kmsg.ApiVersionsRequest); ok {
		n.reply(ic, corr, controllerAPIs.AnswerApiVersions(av))
		return
	}
	if dq, ok := req.(*kmsg.DescribeQuorumRequest); ok {
		n.describeQuorum(ic, corr, dq)
		return
	}
	if controller.Supports(req) {
		n.controllerRequest(ic, corr, req)
		return
	}
	if n.m.raft == nil {
		return // not started yet: the sender times out and retries
	}
	msg, err := quorum.DecodeRequest(req, n.m.cfg.NodeID, n.m.cfg.ClusterID)
	var rerr *quorum.RequestError
	switch {
	case errors.As(err, &rerr):
		// Refused at the boundary (issue 22): answered with Kafka's error,
		// and the Raft never sees it.
		n.m.log.Info("quorum request refused", "api", hdr.APIName(), "remote", ic.conn.RemoteAddr(), "err", err)
		n.refuse(ic, corr, req, rerr)
		return
	case err != nil:
		n.m.log.Warn("not a quorum request, closing connection", "api", hdr.APIName(), "err", err)
		ic.conn.Close()
		return
	}
	if len(ic.pending) == maxPendingPerConn {
		ic.pending = ic.pending[1:]
	}
	n.lastRef++
	msg.Ref = n.lastRef
	pr := pendingRequest{correlationID: corr, version: version, msg: msg}
	ic.pending = append(ic.pending, pr)
	n.m.step(func() {
		if err := n.m.raft.Step(msg); err != nil {
			// DecodeRequest checks what Step does, so this is not
			// expected; answer rather than leave the request hanging.
			n.m.log.Warn("quorum refused request", "msg", msg.String(), "err", err)
			ic.dropPending(pr)
			n.refuse(ic, corr, req, &quorum.RequestError{Code: quorum.ErrInvalidRequest, Reason: err.Error()})
		}
	})
}

// refuse answers a quorum request with the error response for rerr,
// naming the leader and epoch this member knows.
func (n *network) refuse(ic *inboundConn, corr int32, req kmsg.Request, rerr *quorum.RequestError) {
	leader, epoch := quorum.NoNode, int32(-1)
	if n.m.raft != nil {
		leader, epoch = n.m.raft.Leader()
	}
	if resp := quorum.ErrorResponse(req, rerr, leader, epoch); resp != nil {
		n.reply(ic, corr, resp)
	}
}

// dropPending forgets pending request pr, which will not be answered by
// the Raft.
func (ic *inboundConn) dropPending(pr pendingRequest) {
	for i, other := range ic.pending {
		if other.msg.Ref == pr.msg.Ref {
			ic.pending = append(ic.pending[:i], ic.pending[i+1:]...)
			return
		}
	}
}

// controllerRequest submits a controller request received on the listener
// (forwarded by another member, or sent by a tool) to this member's own
// controller: one hop only, so a member whose controller is not active
// answers NOT_CONTROLLER and the sender retries once it learns the leader.
func (n *network) controllerRequest(ic *inboundConn, corr int32, req kmsg.Request) {
	if ic.controllerRequests >= maxForwardedInflight {
		n.reply(ic, corr, controller.ErrorResponse(req, kerr.RequestTimedOut,
			fmt.Sprintf("Too many controller requests (%d) in flight on this connection; retry later.", ic.controllerRequests)))
		return
	}
	ic.controllerRequests++
	n.m.submitLocal(req, func(resp kmsg.Response, err error) {
		ic.controllerRequests--
		if err != nil {
			n.m.log.Warn("controller request failed", "api", kmsg.NameForKey(req.Key()), "err", err)
			resp = controller.ErrorResponse(req, kerr.UnknownServerError, "The controller failed the request.")
		}
		n.reply(ic, corr, resp)
	})
}

// reply sends a response on an inbound conn that is still open.
func (n *network) reply(ic *inboundConn, corr int32, resp kmsg.Response) {
	if !ic.closed {
		ic.idle.Touch()
		_ = ic.conn.Send(wire.EncodeResponse(corr, resp))
	}
}

// describeQuorum answers a DescribeQuorum request at once: the leader
// with its view of the quorum, any other member NOT_LEADER_OR_FOLLOWER
// naming the leader it knows (as Kafka does).
func (n *network) describeQuorum(ic *inboundConn, corr int32, req *kmsg.DescribeQuorumRequest) {
	var resp *kmsg.DescribeQuorumResponse
	if err := quorum.CheckDescribeQuorumRequest(req); err != nil {
		n.m.log.Warn("invalid DescribeQuorum request", "err", err)
		resp = quorum.DescribeQuorumResponse(quorum.QuorumInfo{}, err, req.Version, n.m.wallMillis)
	} else {
		resp = n.m.DescribeQuorumResponse(req.Version)
	}
	n.reply(ic, corr, resp)
}

// awaitingEndQuorumEpoch reports whether an EndQuorumEpoch request is
// still queued for, or awaiting the response of, a connected or
// connecting voter.
func (n *network) awaitingEndQuorumEpoch() bool {
	if n.closed {
		return false
	}
	for _, p := range n.peers {
		if p.endQuorumEpochs > 0 {
			return true
		}
	}
	return false
}

// respond sends a response the Raft produced back on the connection its
// request came in on: the pending request whose Ref it echoes. (Matching
// by sender and kind, as this did before issue 22, gave a request forged
// in a voter's name that voter's answer, and the voter the forgery's.) A
// fetch the Raft parked and then superseded by a newer one from the same
// replica is never answered: the answer to the newer one drops the older
// ones from the same replica on that connection.
func (n *network) respond(msg quorum.Message) {
	var best *inboundConn
	bestIdx := -1
search:
	for _, ic := range n.inbound {
		for i, pr := range ic.pending {
			if msg.Ref != 0 && pr.msg.Ref == msg.Ref {
				best, bestIdx = ic, i
				break search
			}
		}
	}
	if best == nil {
		n.m.log.Debug("response with no pending request", "msg", msg.String())
		return
	}
	pr := best.pending[bestIdx]
	if !answers(msg.Payload, pr.msg.Payload) {
		n.m.log.Warn("quorum response does not answer its request", "msg", msg.String(), "request", pr.msg.String())
		return
	}
	best.pending = append(best.pending[:bestIdx], best.pending[bestIdx+1:]...)
	if isFetch(msg.Payload) {
		kept := best.pending[:0]
		for i, other := range best.pending {
			if i < bestIdx && other.msg.From == msg.To && isFetch(other.msg.Payload) {
				continue
			}
			kept = append(kept, other)
		}
		best.pending = kept
	}
	resp, err := quorum.EncodeResponse(msg, pr.version)
	if err != nil {
		n.m.log.Warn("cannot encode quorum response", "msg", msg.String(), "err", err)
		return
	}
	n.reply(best, pr.correlationID, resp)
}

func isFetch(p quorum.Payload) bool {
	switch p.(type) {
	case quorum.FetchRequest, quorum.FetchResponse:
		return true
	}
	return false
}

// answers reports whether resp is the response kind of req (and, for a
// fetch, answers that fetch's position).
func answers(resp, req quorum.Payload) bool {
	switch r := resp.(type) {
	case quorum.VoteResponse:
		q, ok := req.(quorum.VoteRequest)
		return ok && q.PreVote == r.PreVote
	case quorum.BeginQuorumEpochResponse:
		_, ok := req.(quorum.BeginQuorumEpochRequest)
		return ok
	case quorum.EndQuorumEpochResponse:
		_, ok := req.(quorum.EndQuorumEpochRequest)
		return ok
	case quorum.FetchResponse:
		q, ok := req.(quorum.FetchRequest)
		return ok && q.Epoch == r.FetchEpoch && q.FetchOffset == r.FetchOffset && q.LastFetchedEpoch == r.LastFetchedEpoch
	case quorum.FetchSnapshotResponse:
		_, ok := req.(quorum.FetchSnapshotRequest)
		return ok
	}
	return false
}
