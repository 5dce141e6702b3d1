package group

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/coord"
)

// Transactional offset commits (TxnOffsetCommit, API 28), as Kafka's
// GroupMetadataManager keeps them:
//
//  T1. A TxnOffsetCommit writes Kafka's OffsetCommit records in a
//      transactional batch of the producer's id and epoch (Config.WriteTxn).
//      Once written, the offsets are *pending* for that producer id, kept
//      beside the group's committed offsets and invisible to OffsetFetch.
//  T2. OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT (and
//      offset -1) for a partition with a pending offset; without it the
//      last committed offset is answered.
//  T3. When the transaction's marker is written to this shard's partition
//      (TxnEnded, after the marker is appended and committed), COMMIT makes
//      the producer's pending offsets committed and ABORT drops them. A
//      pending offset becomes committed only if it was written after the
//      committed offset of its partition (a plain commit written later
//      wins, Kafka's olderThan by log offset; here by apply order, which is
//      log order).
//  T4. Replay applies transactional offset batches as pending and control
//      batches as TxnEnded, so a new coordinator has the same committed
//      and pending offsets.
//  T5. A group with pending offsets is neither expired nor dropped.

// txnPending is one producer's pending offsets in one group.
type txnPending map[topicPartition]*committed

// nextSeq numbers an offset applied to memory, in log order (rule T3).
func (s *Shard) nextSeq() int64 {
	s.appliedSeq++
	return s.appliedSeq
}

// addPending records offsets of producerID as pending in g (rule T1).
func (s *Shard) addPending(g *Group, producerID int64, tp topicPartition, c *committed) {
	if g.txnOffsets == nil {
		g.txnOffsets = map[int64]txnPending{}
	}
	p := g.txnOffsets[producerID]
	if p == nil {
		p = txnPending{}
		g.txnOffsets[producerID] = p
	}
	p[tp] = c
	if s.txnGroups == nil {
		s.txnGroups = map[int64][]string{}
	}
	if !slices.Contains(s.txnGroups[producerID], g.name) {
		s.txnGroups[producerID] = append(s.txnGroups[producerID], g.name)
	}
}

// hasPending reports whether some producer has a pending offset for tp in
// g (rule T2).
func (g *Group) hasPending(tp topicPartition) bool {
	for _, p := range g.txnOffsets { //determinism:unordered only a yes/no answer leaves the loop
		if _, ok := p[tp]; ok {
			return true
		}
	}
	return false
}

// pendingCount is the number of pending offsets of g, all producers.
func (g *Group) pendingCount() int {
	n := 0
	for _, p := range g.txnOffsets { //determinism:unordered a sum
		n += len(p)
	}
	return n
}

// TxnEnded applies the marker of producerID's transaction written to this
// shard's partition: commit makes its pending offsets committed, abort
// drops them (rule T3). Replay calls it for each control batch (T4); the
// broker calls it once a WriteTxnMarkers marker is committed.
func (s *Shard) TxnEnded(producerID int64, commit bool) {
	names := s.txnGroups[producerID]
	delete(s.txnGroups, producerID)
	for _, name := range names {
		g := s.groups[name]
		if g == nil {
			continue
		}
		pending := g.txnOffsets[producerID]
		delete(g.txnOffsets, producerID)
		if !commit {
			continue
		}
		for tp, c := range pending { //determinism:unordered each partition is decided on its own
			cur, ok := g.offsets[tp]
			if ok && cur.seq > c.seq {
				continue
			}
			if !ok {
				g.sortedOffsets = nil
			}
			g.offsets[tp] = c
		}
		s.log.Debug("transactional offsets ended", "group", name, "producer_id", producerID, "commit", commit, "offsets", len(pending))
	}
}

// ReplayTxn applies one record of a transactional batch of producerID
// while loading (rule T4): an offset becomes pending; other records (none
// is written transactionally) replay as Replay does.
func (s *Shard) ReplayTxn(producerID int64, key, value []byte) error {
	d, done, err := s.replayed(key, value)
	if done {
		return err
	}
	if !d.isOffset || d.offset == nil {
		return s.Replay(key, value)
	}
	g := s.group(d.group, true)
	d.offset.seq = s.nextSeq()
	s.addPending(g, producerID, topicPartition{d.topic, d.partition}, d.offset)
	return nil
}

// TxnCommit handles TxnOffsetCommit; reply runs once the offsets are
// written (as pending: rule T1).
//
// The checks are Kafka's (ClassicGroup and ConsumerGroup
// validateOffsetCommit with isTransactional): a request without member
// id, generation and instance id (v0-v2, or a producer outside a group)
// is accepted for any group; otherwise the member must be the group's
// (UNKNOWN_MEMBER_ID; a static member's instance id must be its:
// FENCED_INSTANCE_ID) at the group's generation (ILLEGAL_GENERATION) or,
// in a consumer group, its member epoch (STALE_MEMBER_EPOCH; a classic
// member there: ILLEGAL_GENERATION). A rebalance in progress does not
// refuse a transactional commit.
func (s *Shard) TxnCommit(req *kmsg.TxnOffsetCommitRequest, exists PartitionExists, reply func(*kmsg.TxnOffsetCommitResponse)) {
	oc := &offsetCommit{group: req.Group, topics: readCommit(req.Topics, txnOffsetCommitTopic, txnOffsetCommitPart), hasEpoch: req.Version >= 2}
	oc.member = func(g *Group) (*Group, *kerr.Error) {
		if req.ProducerID < 0 || req.ProducerEpoch < 0 {
			return nil, kerr.InvalidProducerIDMapping
		}
		if e := s.checkTxnMember(g, req); e != nil {
			return nil, e
		}
		if g == nil {
			g = s.group(req.Group, true)
		}
		return g, nil
	}
	oc.answer = func() {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		resp.Topics = answerCommit(oc.topics, txnOffsetCommitAnswer, txnOffsetCommitCode)
		reply(resp)
	}
	w := TxnWrite{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Version: req.Version}
	oc.write = func(recs []Record, done func(error)) { s.writeTxn(w, recs, done) }
	oc.apply = func(g *Group, tp topicPartition, c *committed) { s.addPending(g, w.ProducerID, tp, c) }
	s.commit(oc, exists)
}

// checkTxnMember is TxnCommit's member check (see there).
func (s *Shard) checkTxnMember(g *Group, req *kmsg.TxnOffsetCommitRequest) *kerr.Error {
	anonymous := req.Generation < 0 && req.MemberID == "" && req.InstanceID == nil
	switch {
	case g == nil && anonymous:
		return nil
	case g == nil:
		return kerr.IllegalGeneration
	case g.state == StateDead:
		return kerr.CoordinatorNotAvailable
	case anonymous:
		return nil
	}
	if g.consumer != nil {
		if req.Generation < 0 && len(g.consumer.members) == 0 {
			return nil
		}
		return g.checkConsumerCommit(req.MemberID, req.Generation, 9, false)
	}
	if req.Generation < 0 && g.state == StateEmpty {
		return nil
	}
	if req.InstanceID != nil {
		if e := g.checkInstance(*req.InstanceID, req.MemberID); e != nil {
			return e
		}
	} else if g.member(req.MemberID) == nil {
		return kerr.UnknownMemberID
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	return nil
}

// writeTxn appends recs as a transactional batch of the producer and runs
// done as write does.
func (s *Shard) writeTxn(w TxnWrite, recs []Record, done func(error)) {
	if s.cfg.WriteTxn == nil {
		s.e.Post(func() { done(coord.ErrNotCoordinator) })
		return
	}
	s.cfg.WriteTxn(w, recs, s.status.Guard(done))
}

// PendingOffset returns producerID's pending offset of a partition in the
// group (tests and tools), or -1.
func (g *Group) PendingOffset(producerID int64, topic string, partition int32) int64 {
	if c, ok := g.txnOffsets[producerID][topicPartition{topic, partition}]; ok {
		return c.offset
	}
	return -1
}
