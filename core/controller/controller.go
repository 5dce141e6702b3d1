package controller

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/meta"
)

// ErrUnsupportedRequest is returned by Handle for a request kind the
// controller does not serve (see Supports).
var ErrUnsupportedRequest = errors.New("controller: unsupported request")

// Ticket identifies a request handed to Handle; its response comes back in
// a later (or the same) Ready with the same Ticket. Tickets grow by one per
// request and are never reused by a Controller.
type Ticket uint64

// Proposal is one atomic batch of records to append through the quorum.
// The controller has already placed it: the quorum must append it at
// exactly FirstOffset..LastOffset in Epoch, which it does if the driver
// proposes every Proposal in order and nothing else. A driver whose
// Propose fails or returns another offset must call Resign.
type Proposal struct {
	// Epoch is the quorum epoch the controller leads.
	Epoch int32
	// FirstOffset and LastOffset are the offsets of the first and the last
	// record.
	FirstOffset int64
	LastOffset  int64
	// Records are the metadata records, in order.
	Records []meta.Record
	// Values are the encoded records (meta.EncodeRecord), one quorum entry
	// each: what the driver hands to quorum.Raft.Propose.
	Values [][]byte
}

// Response is the answer to a request, ready to deliver to its requester.
type Response struct {
	// Ticket is what Handle returned for the request.
	Ticket Ticket
	// Msg is the Kafka response, of the request's version.
	Msg kmsg.Response
}

// Ready is the output of the controller since the previous call to Ready.
// Handle it in field order: propose the Proposals, then deliver the
// Responses (each one already waited for the commit it depends on).
type Ready struct {
	Proposals []Proposal
	Responses []Response
}

// Controller is the active controller's logic as a deterministic state
// machine: it takes requests, time and commit notifications, and produces
// proposals and responses (see the package documentation).
type Controller struct {
	cfg Config
	rng *rand.Rand
	// now is the latest monotonic time seen.
	now time.Duration

	leader bool
	// epoch is the quorum epoch this controller leads (when leader).
	epoch int32

	// committed is the image at the last committed batch boundary.
	committed *meta.Image
	// committedOffset is the last committed offset reported; on a leader
	// it may lie inside a pending batch (seenInHead records of it).
	committedOffset int64
	// spec is the speculative image: committed plus every pending batch.
	spec *meta.Image
	// pending are the batches proposed and not yet fully committed, in
	// offset order.
	pending    []*pendingBatch
	seenInHead int
	// pendingRecords counts the records of pending batches.
	pendingRecords int
	// nextOffset is where the next batch goes; firstOwnOffset is where the
	// first batch of this leadership went.
	nextOffset     int64
	firstOwnOffset int64
	// lastWritten is the offset a decision made now depends on: the last
	// record proposed, or the committed offset at BecomeLeader.
	lastWritten int64

	// sessions holds the heartbeat state of registered brokers (leader
	// only).
	sessions map[int32]*session
	// nextRebalance is when the next automatic preferred-leader election
	// pass runs (auto.leader.rebalance.enable).
	nextRebalance time.Duration
	// collisions maps a topic name with '.' or '_' normalized to '_' to the
	// live (speculative) topic of that shape.
	collisions map[string]string

	// waiting are requests whose response waits for a commit, in ticket
	// order (and so in readyAt order).
	waiting    []waitingResponse
	nextTicket Ticket
	out        Ready
}

// pendingBatch is a proposal not yet committed, with the image it yields.
type pendingBatch struct {
	proposal Proposal
	image    *meta.Image
}

// waitingResponse is a response to release once the committed offset
// reaches readyAt.
type waitingResponse struct {
	ticket  Ticket
	readyAt int64
	req     kmsg.Request
	resp    kmsg.Response
}

// New returns an inactive controller on the empty image. rng is the
// controller's seeded randomness (topic ids, replica placement offsets);
// the controller is its only user.
func New(cfg Config, rng *rand.Rand) *Controller {
	assert.That(rng != nil, "controller: nil rand")
	img := meta.Empty()
	return &Controller{
		cfg:             cfg.withDefaults(),
		rng:             rng,
		committed:       img,
		committedOffset: img.Position().Offset,
		spec:            img,
		nextTicket:      1,
	}
}

// IsLeader reports whether the controller is active.
func (c *Controller) IsLeader() bool { return c.leader }

// Epoch is the quorum epoch the controller leads, or last led.
func (c *Controller) Epoch() int32 { return c.epoch }

// CommittedImage is the image of everything committed, up to the last
// committed batch boundary.
func (c *Controller) CommittedImage() *meta.Image { return c.committed }

// SpeculativeImage is the image decisions are made against: the committed
// image plus every proposed batch. Off the leader it is the committed image.
func (c *Controller) SpeculativeImage() *meta.Image { return c.spec }

// PendingRecords is the number of records proposed and not yet committed.
func (c *Controller) PendingRecords() int { return c.pendingRecords }

// Config is the configuration in force, defaults filled in.
func (c *Controller) Config() Config { return c.cfg }

// Ready returns the proposals and responses produced since the previous
// call and forgets them.
func (c *Controller) Ready() Ready {
	rd := c.out
	c.out = Ready{}
	return rd
}

// HasReady reports whether Ready would return anything.
func (c *Controller) HasReady() bool {
	return len(c.out.Proposals) > 0 || len(c.out.Responses) > 0
}

// advance moves the controller's clock to now, which must not go backwards
// (it is the process's monotonic clock).
func (c *Controller) advance(now time.Duration) {
	assert.NotDecreasing("controller monotonic time", int64(c.now), int64(now))
	c.now = now
}

// BecomeLeader makes the controller active in a quorum epoch. committed
// must hold every record of the log before the epoch's first offset (KRaft
// notifies a new leader only once its state machine has read up to the
// epoch start), and nextOffset is the log end offset: where the first
// Proposal will be appended. Brokers get a fresh session from now, as a new
// Kafka controller gives them. If the inherited image breaks an election
// invariant (a batch of the previous leader committed only in part), the
// controller proposes the repairing partition changes at once.
func (c *Controller) BecomeLeader(now time.Duration, epoch int32, committed *meta.Image, nextOffset int64) {
	c.advance(now)
	if c.leader {
		c.Resign()
	}
	pos := committed.Position()
	assert.That(nextOffset > pos.Offset, "controller: next offset %d not after committed image %v", nextOffset, pos)
	assert.That(epoch >= pos.Epoch, "controller: epoch %d behind committed image %v", epoch, pos)
	c.leader = true
	c.epoch = epoch
	c.nextRebalance = c.now + c.cfg.LeaderImbalanceCheckInterval
	c.committed, c.spec = committed, committed
	c.committedOffset = pos.Offset
	c.nextOffset, c.firstOwnOffset = nextOffset, nextOffset
	c.lastWritten = pos.Offset
	c.pending, c.seenInHead, c.pendingRecords = nil, 0, 0
	c.sessions = map[int32]*session{}
	for b := range committed.Brokers() {
		c.sessions[b.ID] = newSession(now, b, pos.Offset)
	}
	c.rebuildCollisions()
	c.repair()
	c.bootstrap()
}

// bootstrap proposes the configured bootstrap records when the committed
// image is the empty one, as Kafka's QuorumController writes its
// bootstrap records on an empty log. A leader that lost its leadership
// before they committed leaves an empty log to the next, which writes
// them in turn; once any state is committed they are never written again.
func (c *Controller) bootstrap() {
	if len(c.cfg.BootstrapRecords) == 0 || !holdsNoState(c.committed) {
		return
	}
	b := c.openBatch()
	for _, r := range c.cfg.BootstrapRecords {
		c.addSplit(&b, r)
	}
	c.seal(b)
}

// holdsNoState reports whether img is the empty image at its position:
// the log before it holds leader changes at most.
func holdsNoState(img *meta.Image) bool {
	pos := img.Position()
	return pos == meta.EmptyPosition || img.Digest() == meta.Empty().NewDelta().Apply(pos).Digest()
}

// Resign makes the controller inactive: every request still waiting for a
// commit is answered NOT_CONTROLLER, proposals not yet taken by Ready are
// dropped, and the speculative state falls back to the committed image.
// Proposals already handed out may still commit under the next leader;
// they then arrive through Committed like anyone else's records.
func (c *Controller) Resign() {
	if !c.leader {
		return
	}
	for _, w := range c.waiting {
		c.out.Responses = append(c.out.Responses, Response{Ticket: w.ticket, Msg: NotControllerResponse(w.req)})
	}
	c.waiting = nil
	c.out.Proposals = nil
	// A batch committed in part: its committed prefix is state the
	// followers' replay would have, so rebuild it from our own records.
	if c.seenInHead > 0 {
		head := c.pending[0]
		d := c.committed.NewDelta()
		for _, r := range head.proposal.Records[:c.seenInHead] {
			if err := d.Replay(r); err != nil {
				assert.Never("controller: own committed record does not replay: %v", err)
			}
		}
		c.committed = d.Apply(meta.Position{Offset: c.committedOffset, Epoch: c.epoch})
	}
	c.leader = false
	c.pending, c.seenInHead, c.pendingRecords = nil, 0, 0
	c.spec = c.committed
	c.sessions = nil
	c.collisions = nil
}

// LoadImage replaces the committed image of an inactive controller, after
// the driver installed a snapshot.
func (c *Controller) LoadImage(img *meta.Image) {
	assert.That(!c.leader, "controller: LoadImage on the active controller")
	c.committed, c.spec = img, img
	c.committedOffset = img.Position().Offset
}

// Committed reports that the metadata log is committed up to and including
// pos, and that records are the metadata records at the offsets after the
// previous Committed position, in order. Offsets holding no metadata
// record (the quorum's leader-change entries) contribute nothing to
// records, so Committed(pos, nil) just moves the position.
//
// Off the leader the records are replayed onto the committed image; an
// error means the committed log is invalid and the node must stop. On the
// leader they must be this controller's own proposals, which are already
// in its speculative state: they are checked, not replayed, and the
// responses that waited for them are released.
func (c *Controller) Committed(pos meta.Position, records []meta.Record) error {
	assert.That(pos.Offset >= c.committedOffset, "controller: committed offset moved backwards: %d -> %v", c.committedOffset, pos)
	if c.leader {
		c.commitOwn(pos, records)
	} else {
		d := c.committed.NewDelta()
		for _, r := range records {
			if err := d.Replay(r); err != nil {
				return fmt.Errorf("controller: committed record before %v: %w", pos, err)
			}
		}
		if pos != c.committed.Position() || len(records) > 0 {
			c.committed = d.Apply(pos)
		}
		c.spec = c.committed
	}
	c.committedOffset = pos.Offset
	c.release()
	return nil
}

// commitOwn advances the leader's committed state over its own batches.
func (c *Controller) commitOwn(pos meta.Position, records []meta.Record) {
	from := max(c.committedOffset+1, c.firstOwnOffset)
	want := max(0, pos.Offset-from+1)
	assert.That(int64(len(records)) == want, "controller: %d committed records up to %v, expected %d of our own from offset %d",
		len(records), pos, want, from)
	if want > 0 {
		assert.That(pos.Epoch == c.epoch, "controller: own records committed at %v, leading epoch %d", pos, c.epoch)
	}
	for _, r := range records {
		assert.That(len(c.pending) > 0, "controller: committed record %v beyond every proposal", r)
		head := c.pending[0]
		own := head.proposal.Records[c.seenInHead]
		assert.That(own.Type() == r.Type(), "controller: committed %v where %v was proposed", r, own)
		c.seenInHead++
		if c.seenInHead == len(head.proposal.Records) {
			c.committed = head.image
			c.pendingRecords -= len(head.proposal.Records)
			c.pending[0] = nil
			c.pending = c.pending[1:]
			c.seenInHead = 0
		}
	}
	// Entries between batches (the leader-change entry) move the position.
	if c.seenInHead == 0 && pos.Offset > c.committed.Position().Offset {
		c.committed = c.committed.NewDelta().Apply(pos)
	}
	if len(c.pending) == 0 {
		c.spec = c.committed
	}
}

// release hands out the waiting responses whose commit has come.
func (c *Controller) release() {
	n := 0
	for n < len(c.waiting) && c.waiting[n].readyAt <= c.committedOffset {
		w := c.waiting[n]
		c.out.Responses = append(c.out.Responses, Response{Ticket: w.ticket, Msg: w.resp})
		n++
	}
	if n > 0 {
		clear(c.waiting[:n])
		c.waiting = c.waiting[n:]
	}
}

// Supports reports whether Handle serves the request kind.
func Supports(req kmsg.Request) bool {
	switch req.(type) {
	case *kmsg.BrokerRegistrationRequest, *kmsg.BrokerHeartbeatRequest,
		*kmsg.CreateTopicsRequest, *kmsg.DeleteTopicsRequest, *kmsg.CreatePartitionsRequest,
		*kmsg.AlterPartitionRequest, *kmsg.AllocateProducerIDsRequest,
		*kmsg.IncrementalAlterConfigsRequest, *kmsg.AlterConfigsRequest, *kmsg.ElectLeadersRequest,
		*kmsg.AlterPartitionAssignmentsRequest, *kmsg.ListPartitionReassignmentsRequest,
		*kmsg.CreateACLsRequest, *kmsg.DeleteACLsRequest, *kmsg.AlterUserSCRAMCredentialsRequest,
		*kmsg.AlterClientQuotasRequest:
		return true
	}
	return false
}

// Handle takes a request at monotonic time now and returns its ticket. The
// response arrives through Ready once every record the decision depended
// on is committed: the request's own records, or, for a request that wrote
// nothing, the records proposed before it. Off the leader the response is
// NOT_CONTROLLER and ready at once. A request kind the controller does not
// serve gets ErrUnsupportedRequest and no ticket.
func (c *Controller) Handle(now time.Duration, req kmsg.Request) (Ticket, error) {
	if !Supports(req) {
		return 0, fmt.Errorf("%w: %T", ErrUnsupportedRequest, req)
	}
	c.advance(now)
	t := c.nextTicket
	c.nextTicket++
	if !c.leader {
		c.out.Responses = append(c.out.Responses, Response{Ticket: t, Msg: NotControllerResponse(req)})
		return t, nil
	}
	_, heartbeat := req.(*kmsg.BrokerHeartbeatRequest)
	if !heartbeat && c.pendingRecords >= c.cfg.MaxPendingRecords {
		msg := fmt.Sprintf("The controller has %d uncommitted records (at most %d); retry later.", c.pendingRecords, c.cfg.MaxPendingRecords)
		c.out.Responses = append(c.out.Responses, Response{Ticket: t, Msg: ErrorResponse(req, kerr.RequestTimedOut, msg)})
		return t, nil
	}
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		resp = c.registerBroker(r)
	case *kmsg.BrokerHeartbeatRequest:
		resp = c.heartbeat(r)
	case *kmsg.CreateTopicsRequest:
		resp = c.createTopics(r)
	case *kmsg.DeleteTopicsRequest:
		resp = c.deleteTopics(r)
	case *kmsg.CreatePartitionsRequest:
		resp = c.createPartitions(r)
	case *kmsg.AlterPartitionRequest:
		resp = c.alterPartition(r)
	case *kmsg.AllocateProducerIDsRequest:
		resp = c.allocateProducerIDs(r)
	case *kmsg.IncrementalAlterConfigsRequest:
		resp = c.incrementalAlterConfigs(r)
	case *kmsg.AlterConfigsRequest:
		resp = c.alterConfigs(r)
	case *kmsg.ElectLeadersRequest:
		resp = c.electLeaders(r)
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp = c.alterPartitionReassignments(r)
	case *kmsg.ListPartitionReassignmentsRequest:
		resp = c.listPartitionReassignments(r)
	case *kmsg.CreateACLsRequest:
		resp = c.createACLs(r)
	case *kmsg.DeleteACLsRequest:
		resp = c.deleteACLs(r)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		resp = c.alterUserScramCredentials(r)
	case *kmsg.AlterClientQuotasRequest:
		resp = c.alterClientQuotas(r)
	}
	c.waiting = append(c.waiting, waitingResponse{ticket: t, readyAt: c.lastWritten, req: req, resp: resp})
	c.release()
	return t, nil
}

// Tick moves the controller's monotonic clock to now and fences every
// unfenced broker whose session has expired, moving its leaderships away.
func (c *Controller) Tick(now time.Duration) {
	c.advance(now)
	if !c.leader {
		return
	}
	c.fenceExpired()
	if !c.cfg.NoAutoLeaderRebalance && c.now >= c.nextRebalance {
		c.rebalanceLeaders()
		c.nextRebalance = c.now + c.cfg.LeaderImbalanceCheckInterval
	}
}
