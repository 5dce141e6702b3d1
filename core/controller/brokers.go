package controller

import (
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/meta"
)

// Bounds on a registration, mirroring the image's own (core/meta refuses
// larger ones): a request past them gets INVALID_REQUEST, not a crash.
const (
	maxListenersPerBroker = 64
	maxFeaturesPerBroker  = 256
)

// brokerState is a broker's place in its lifecycle as heartbeats drive it
// (Kafka's BrokerControlState).
type brokerState int8

const (
	// stateFenced: registered, may not lead or be in an ISR.
	stateFenced brokerState = iota
	// stateUnfenced: active, may lead and be in ISRs.
	stateUnfenced
	// stateControlledShutdown: asked to shut down; its leaderships and ISR
	// memberships are being moved away.
	stateControlledShutdown
	// stateShutdownNow: may stop; fenced.
	stateShutdownNow
)

var brokerStateNames = [...]string{"FENCED", "UNFENCED", "CONTROLLED_SHUTDOWN", "SHUTDOWN_NOW"}

func (s brokerState) String() string { return brokerStateNames[s] }

// session is the controller's in-memory heartbeat state of one broker
// (Kafka's BrokerHeartbeatState). It is not in the image: a new leader
// starts every broker's session afresh.
type session struct {
	// lastContact is when the broker last registered or heartbeated.
	lastContact time.Duration
	// metadataOffset is the metadata offset its last heartbeat reported.
	metadataOffset int64
	// controlledShutdownOffset is the offset of the last record that moved
	// its leaderships away, -1 when it is not shutting down. It may stop
	// once every active broker has replicated that far.
	controlledShutdownOffset int64
}

// newSession starts a session at now for a broker of an image at offset.
// A broker the image has in controlled shutdown is taken to have moved its
// leaderships by that offset.
func newSession(now time.Duration, b meta.BrokerRegistration, offset int64) *session {
	s := &session{lastContact: now, metadataOffset: -1, controlledShutdownOffset: -1}
	if b.InControlledShutdown {
		s.controlledShutdownOffset = offset
	}
	return s
}

// currentState derives a broker's lifecycle state from its registration.
func currentState(b *meta.BrokerRegistration) brokerState {
	switch {
	case b.Fenced:
		return stateFenced
	case b.InControlledShutdown:
		return stateControlledShutdown
	}
	return stateUnfenced
}

// active reports whether a broker may lead and join ISRs.
func active(b *meta.BrokerRegistration) bool { return !b.Fenced && !b.InControlledShutdown }

// hasValidSession reports whether a broker's current registration is alive:
// unfenced and heard from within the session timeout. Only then does a new
// incarnation of its id get DUPLICATE_BROKER_REGISTRATION.
func (c *Controller) hasValidSession(b *meta.BrokerRegistration) bool {
	if b.Fenced {
		return false
	}
	s := c.sessions[b.ID]
	assert.That(s != nil, "controller: unfenced broker %d has no session", b.ID)
	return c.now <= s.lastContact+c.cfg.SessionTimeout
}

// registerBroker handles BrokerRegistration.
//
// The same incarnation registering again with the same listeners,
// features and rack is a retry: it gets its current epoch and writes
// nothing. A new incarnation replaces the registration unless the old one
// still has a valid session (DUPLICATE_BROKER_REGISTRATION). A new
// registration is fenced, and its epoch is the offset of its
// RegisterBrokerRecord. Leaderships of an unfenced registration being
// replaced move away first, as if it were fenced: the new process starts
// with none of its predecessor's state.
func (c *Controller) registerBroker(req *kmsg.BrokerRegistrationRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	fail := func(e *apiError) kmsg.Response {
		resp.ErrorCode, resp.BrokerEpoch = e.code(), -1
		return resp
	}
	if c.cfg.ClusterID != "" && req.ClusterID != c.cfg.ClusterID {
		return fail(errorf(kerr.InconsistentClusterID, "Expected cluster id %q, got %q.", c.cfg.ClusterID, req.ClusterID))
	}
	rec, e := registrationRecord(req)
	if e != nil {
		return fail(e)
	}
	if size := len(meta.EncodeRecord(nil, rec)); size > c.cfg.MaxBatchBytes {
		return fail(errorf(kerr.InvalidRequest, "The registration takes %d bytes (at most %d).", size, c.cfg.MaxBatchBytes))
	}
	if e := c.checkFeatures(rec.Features); e != nil {
		return fail(e)
	}
	existing, registered := c.spec.Broker(rec.BrokerID)
	if registered {
		if existing.IncarnationID == rec.IncarnationID && sameListing(&existing, rec) {
			resp.BrokerEpoch = existing.Epoch
			return resp
		}
		if existing.IncarnationID != rec.IncarnationID && c.hasValidSession(&existing) {
			return fail(errorf(kerr.DuplicateBrokerRegistration, "Another broker is registered with broker id %d.", rec.BrokerID))
		}
	}
	b := c.openBatch()
	if registered && !existing.Fenced {
		c.moveAway(&b, existing.ID)
	}
	if registered && req.PreviousBrokerEpoch < 0 {
		// Sealed first, so that forgetReplicas sees what moveAway did.
		c.seal(b)
		b = c.openBatch()
		c.forgetReplicas(&b, existing.ID)
	}
	rec.BrokerEpoch = b.nextOffset()
	if !c.add(b, rec) {
		c.seal(b)
		b = c.openBatch()
		rec.BrokerEpoch = b.nextOffset()
		assert.That(c.add(b, rec), "controller: registration does not fit an empty batch")
	}
	c.seal(b)
	c.sessions[rec.BrokerID] = &session{lastContact: c.now, metadataOffset: -1, controlledShutdownOffset: -1}
	resp.BrokerEpoch = rec.BrokerEpoch
	return resp
}

// registrationRecord validates a registration request and builds its
// record (without the epoch).
func registrationRecord(req *kmsg.BrokerRegistrationRequest) (*meta.RegisterBrokerRecord, *apiError) {
	if req.BrokerID < 0 {
		return nil, errorf(kerr.InvalidRequest, "Invalid broker id %d.", req.BrokerID)
	}
	if len(req.Listeners) > maxListenersPerBroker {
		return nil, errorf(kerr.InvalidRequest, "%d listeners (at most %d).", len(req.Listeners), maxListenersPerBroker)
	}
	if len(req.Features) > maxFeaturesPerBroker {
		return nil, errorf(kerr.InvalidRequest, "%d features (at most %d).", len(req.Features), maxFeaturesPerBroker)
	}
	rec := &meta.RegisterBrokerRecord{BrokerID: req.BrokerID, IncarnationID: req.IncarnationID, Fenced: true}
	if rec.IncarnationID.IsZero() {
		return nil, errorf(kerr.InvalidRequest, "The incarnation id must not be zero.")
	}
	for _, l := range req.Listeners {
		if l.Name == "" {
			return nil, errorf(kerr.InvalidRequest, "A listener has no name.")
		}
		if l.SecurityProtocol < int16(meta.SecurityPlaintext) || l.SecurityProtocol > int16(meta.SecuritySASLSSL) {
			return nil, errorf(kerr.InvalidRequest, "Listener %s has unknown security protocol %d.", l.Name, l.SecurityProtocol)
		}
		for _, prev := range rec.Endpoints {
			if prev.Name == l.Name {
				return nil, errorf(kerr.InvalidRequest, "Listener %s is listed twice.", l.Name)
			}
		}
		rec.Endpoints = append(rec.Endpoints, meta.Endpoint{Name: l.Name, Host: l.Host, Port: l.Port,
			SecurityProtocol: meta.SecurityProtocol(l.SecurityProtocol)})
	}
	for _, f := range req.Features {
		if f.Name == "" || f.MinSupportedVersion > f.MaxSupportedVersion {
			return nil, errorf(kerr.InvalidRequest, "Feature %q has range %d..%d.", f.Name, f.MinSupportedVersion, f.MaxSupportedVersion)
		}
		for _, prev := range rec.Features {
			if prev.Name == f.Name {
				return nil, errorf(kerr.InvalidRequest, "Feature %s is listed twice.", f.Name)
			}
		}
		rec.Features = append(rec.Features, meta.FeatureRange{Name: f.Name, MinVersion: f.MinSupportedVersion, MaxVersion: f.MaxSupportedVersion})
	}
	if req.Rack != nil {
		rec.Rack = *req.Rack
	}
	return rec, nil
}

// sameListing reports whether a registration advertises exactly what rec
// does: a retried request rather than a changed broker.
func sameListing(b *meta.BrokerRegistration, rec *meta.RegisterBrokerRecord) bool {
	return slices.Equal(b.Endpoints, rec.Endpoints) && slices.Equal(b.Features, rec.Features) && b.Rack == rec.Rack
}

// checkFeatures refuses a broker that cannot run at a finalized feature
// level. A feature the broker does not list is supported at level 0 only.
func (c *Controller) checkFeatures(supported []meta.FeatureRange) *apiError {
	for name, level := range c.spec.Features() {
		lo, hi := int16(0), int16(0)
		for _, f := range supported {
			if f.Name == name {
				lo, hi = f.MinVersion, f.MaxVersion
			}
		}
		if level < lo || level > hi {
			return errorf(kerr.UnsupportedVersion, "Unable to register because the broker does not support finalized version %d of %s; it supports %d..%d.",
				level, name, lo, hi)
		}
	}
	return nil
}

// currentBroker returns the registration of broker id when epoch is its
// current epoch; otherwise it sets *code to STALE_BROKER_EPOCH, the error
// of the broker's whole request.
func (c *Controller) currentBroker(id int32, epoch int64, code *int16) (meta.BrokerRegistration, bool) {
	reg, ok := c.spec.Broker(id)
	if !ok || reg.Epoch != epoch {
		*code = kerr.StaleBrokerEpoch.Code
		return reg, false
	}
	return reg, true
}

// heartbeat handles BrokerHeartbeat with Kafka's state transitions:
//
//   - fenced: wants shutdown → shut down now; caught up (its metadata
//     offset reached its registration's) and not wanting fence → unfenced;
//   - unfenced: wants fence → fenced (shut down now if it also wants
//     shutdown); wants shutdown → controlled shutdown if it leads a
//     partition, else shut down now;
//   - controlled shutdown: shut down now once it leads nothing and every
//     active broker has replicated the records that moved its leaderships.
//
// Every heartbeat with the current epoch renews the broker's session.
func (c *Controller) heartbeat(req *kmsg.BrokerHeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	reg, ok := c.currentBroker(req.BrokerID, req.BrokerEpoch, &resp.ErrorCode)
	if !ok {
		return resp
	}
	s := c.sessions[reg.ID]
	assert.That(s != nil, "controller: registered broker %d has no session", reg.ID)
	cur := currentState(&reg)
	next := c.nextState(cur, &reg, s, req)
	if next != cur {
		switch next {
		case stateUnfenced:
			c.unfence(&reg)
		case stateFenced, stateShutdownNow:
			if !reg.Fenced {
				c.fence(&reg)
			}
		case stateControlledShutdown:
			c.enterControlledShutdown(&reg)
			s.controlledShutdownOffset = c.lastWritten
		}
	}
	s.lastContact = c.now
	s.metadataOffset = req.CurrentMetadataOffset
	resp.IsCaughtUp = req.CurrentMetadataOffset >= reg.Epoch
	resp.IsFenced = next == stateFenced || next == stateShutdownNow
	resp.ShouldShutdown = next == stateShutdownNow
	return resp
}

// nextState is Kafka's BrokerHeartbeatManager.calculateNextBrokerState.
func (c *Controller) nextState(cur brokerState, reg *meta.BrokerRegistration, s *session, req *kmsg.BrokerHeartbeatRequest) brokerState {
	switch cur {
	case stateFenced:
		switch {
		case req.WantShutdown:
			return stateShutdownNow
		case !req.WantFence && req.CurrentMetadataOffset >= reg.Epoch:
			return stateUnfenced
		}
		return stateFenced
	case stateUnfenced:
		switch {
		case req.WantFence && req.WantShutdown:
			return stateShutdownNow
		case req.WantFence:
			return stateFenced
		case req.WantShutdown && c.leadsAny(reg.ID):
			return stateControlledShutdown
		case req.WantShutdown:
			return stateShutdownNow
		}
		return stateUnfenced
	case stateControlledShutdown:
		if c.leadsAny(reg.ID) {
			return stateControlledShutdown
		}
		if s.controlledShutdownOffset <= c.lowestActiveOffset() {
			return stateShutdownNow
		}
		return stateControlledShutdown
	}
	return stateShutdownNow
}

// leadsAny reports whether a broker leads a partition in the speculative
// image. It scans the partitions: it runs only for brokers shutting down.
func (c *Controller) leadsAny(id int32) bool {
	for t := range c.spec.Topics() {
		for p := range t.Partitions() {
			if p.Leader == id {
				return true
			}
		}
	}
	return false
}

// lowestActiveOffset is the lowest metadata offset an active broker has
// reported, or MaxInt64 when no broker is active.
func (c *Controller) lowestActiveOffset() int64 {
	lowest := int64(math.MaxInt64)
	for b := range c.spec.Brokers() {
		if active(&b) {
			lowest = min(lowest, c.sessions[b.ID].metadataOffset)
		}
	}
	return lowest
}

// fence writes a broker's fencing: its leaderships and ISR memberships
// move away, then the fence record. A fence record also ends a controlled
// shutdown, so a fenced broker is never in controlled shutdown.
func (c *Controller) fence(reg *meta.BrokerRegistration) {
	b := c.openBatch()
	c.moveAway(&b, reg.ID)
	var rec meta.Record = &meta.FenceBrokerRecord{BrokerID: reg.ID, BrokerEpoch: reg.Epoch}
	if reg.InControlledShutdown {
		rec = &meta.BrokerRegistrationChangeRecord{BrokerID: reg.ID, BrokerEpoch: reg.Epoch,
			Fenced: meta.FlagSet, InControlledShutdown: meta.FlagClear}
	}
	c.addSplit(&b, rec)
	c.seal(b)
}

// SuspectBroker takes a report, at monotonic time now, that broker id's
// listener refuses connections: its process is gone (a live broker never
// refuses them; a restarting one has a new registration coming). The
// active controller fences the broker at once rather than after its
// session timeout, moving its leaderships to in-sync replicas (the
// refused-redial idea that makes the metadata quorum's failover fast,
// applied to partition leaders). Fencing is always safe: a broker fenced
// wrongly heartbeats and is unfenced within its heartbeat interval. It
// returns whether it fenced.
func (c *Controller) SuspectBroker(now time.Duration, id int32) bool {
	c.advance(now)
	if !c.leader || c.pendingRecords >= c.cfg.MaxPendingRecords {
		return false
	}
	reg, ok := c.spec.Broker(id)
	if !ok || reg.Fenced {
		return false
	}
	c.fence(&reg)
	return true
}

// unfence writes a broker's unfencing, then elects leaders for leaderless
// partitions that it can now lead.
func (c *Controller) unfence(reg *meta.BrokerRegistration) {
	b := c.openBatch()
	var rec meta.Record = &meta.UnfenceBrokerRecord{BrokerID: reg.ID, BrokerEpoch: reg.Epoch}
	if reg.InControlledShutdown {
		rec = &meta.BrokerRegistrationChangeRecord{BrokerID: reg.ID, BrokerEpoch: reg.Epoch,
			Fenced: meta.FlagClear, InControlledShutdown: meta.FlagClear}
	}
	base := c.spec
	c.addSplit(&b, rec)
	for _, r := range c.electionRecords(base, addBroker(base, reg.ID), leaderless) {
		c.addSplit(&b, r)
	}
	c.seal(b)
}

// enterControlledShutdown marks a broker as shutting down and moves its
// leaderships and ISR memberships away.
func (c *Controller) enterControlledShutdown(reg *meta.BrokerRegistration) {
	b := c.openBatch()
	c.addSplit(&b, &meta.BrokerRegistrationChangeRecord{BrokerID: reg.ID, BrokerEpoch: reg.Epoch, InControlledShutdown: meta.FlagSet})
	c.moveAway(&b, reg.ID)
	c.seal(b)
}

// moveAway adds the partition changes that take a broker out of every ISR
// (but the last member's place) and every leadership, to *b and, when they
// do not fit, to further batches.
func (c *Controller) moveAway(b **batch, id int32) {
	for _, r := range c.electionRecords(c.spec, removeBroker(c.spec, id), hasInISR(id)) {
		c.addSplit(b, r)
	}
}

// forgetReplicas adds the partition changes that take a re-registering
// broker whose data directory may have lost records (PreviousBrokerEpoch
// -1: a replaced disk, a wiped directory, or damage the start-up scrub
// found) out of every eligible leader replica set: an ELR member is
// elected on the promise that it holds every committed record. (Kafka,
// KIP-966, does so after any unclean shutdown, since it does not fsync;
// Strata's acknowledged records are fsynced, so only a directory that may
// have lost them counts.) Its other ISR places went when it was fenced or
// replaced (moveAway); as an ISR's last member it is replaced by the
// first eligible leader replica, which holds every committed record and
// leads if it can, since the ISR is never empty.
//
// A forgotten broker joins the partition's LastKnownELR: it held every
// committed record once, and may still (after a power loss the scrub
// cannot tell a torn tail, which loses nothing committed, from damage).
// With no eligible replica left, the ISR's last member stays, and if the
// LastKnownELR holds others it joins it too: a leader listed in its own
// partition's LastKnownELR is recovering (Strata's unclean recovery,
// core/replica recovery.go): it serves nothing until every other member
// has told it its log end (a fetch), then leads on, or hands the
// leadership to the member with the longest log (recoverPartition). With
// no one else to ask it simply stays: an ISR of one at min.insync.replicas
// 1 held the committed records nowhere else.
func (c *Controller) forgetReplicas(b **batch, id int32) {
	acceptable := acceptableLeaders(c.spec, id, meta.NoLeader)
	for t := range c.spec.Topics() {
		for p := range t.Partitions() {
			inELR := slices.Contains(p.ELR, id)
			lastISR := len(p.ISR) == 1 && p.ISR[0] == id
			elr := slices.DeleteFunc(slices.Clone(p.ELR), func(r int32) bool { return r == id })
			others := slices.DeleteFunc(slices.Clone(p.LastKnownELR), func(r int32) bool { return r == id })
			if !inELR && !lastISR && slices.Contains(p.LastKnownELR, id) && recovering(&p) {
				// A member that may have claimed its log end at the
				// recovering leader lost data again: a record that bumps
				// the partition epoch voids every claim made so far, and
				// a hand-off the leader sent before it (core/replica
				// recovery.go).
				c.addSplit(b, &meta.PartitionChangeRecord{TopicID: t.ID(), Partition: p.ID, LastKnownELR: slices.Clone(p.LastKnownELR)})
				continue
			}
			if !inELR && !(lastISR && (len(elr) > 0 || len(others) > 0)) {
				continue
			}
			rec := &meta.PartitionChangeRecord{TopicID: t.ID(), Partition: p.ID}
			if lastISR && len(elr) > 0 {
				rec.ISR, elr = []int32{elr[0]}, elr[1:]
				leader := meta.NoLeader
				if acceptable(rec.ISR[0]) {
					leader = rec.ISR[0]
				}
				if leader != p.Leader {
					rec.Leader = &leader
				}
			}
			if !slices.Equal(elr, p.ELR) {
				rec.ELR = append([]int32{}, elr...) // non-nil: an empty list clears it
			}
			if !slices.Contains(p.LastKnownELR, id) {
				rec.LastKnownELR = append(slices.Clone(p.LastKnownELR), id)
			}
			if rec.ISR == nil && rec.Leader == nil && rec.ELR == nil && rec.LastKnownELR == nil {
				continue
			}
			c.addSplit(b, rec)
		}
	}
}

// fenceExpired fences, one broker at a time, every unfenced broker whose
// session expired, while the pending-record bound allows.
func (c *Controller) fenceExpired() {
	for reg := range c.spec.Brokers() {
		if c.pendingRecords >= c.cfg.MaxPendingRecords {
			return
		}
		if reg.Fenced {
			continue
		}
		s := c.sessions[reg.ID]
		assert.That(s != nil, "controller: unfenced broker %d has no session", reg.ID)
		if c.now > s.lastContact+c.cfg.SessionTimeout {
			c.fence(&reg)
		}
	}
}

// repair restores the election invariants on the image a new leader
// inherits. A batch is meant to commit whole, but if the log kept only a
// prefix of one (an unfence without its elections, a controlled shutdown
// without its moves), inactive brokers may still lead or sit in ISRs, or a
// partition may lack a leader it could have. Normally it writes nothing.
func (c *Controller) repair() {
	rules := repairRules(c.spec)
	want := func(p *meta.Partition) bool {
		return p.Leader == meta.NoLeader || !rules.acceptable(p.Leader) || slices.ContainsFunc(p.ISR, rules.evict)
	}
	b := c.openBatch()
	for _, r := range c.electionRecords(c.spec, rules, want) {
		c.addSplit(&b, r)
	}
	c.seal(b)
}
