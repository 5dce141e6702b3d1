package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/meta"
)

// maxReplicasPerPartition bounds a replica list, mirroring the image's
// own bound.
const maxReplicasPerPartition = 1024

// newPartitionRecord builds a new partition: the ISR is its active
// replicas (in assignment order), the first of them leads, both epochs are
// 0. The caller has checked that one replica is active.
func newPartitionRecord(topic meta.UUID, id int32, replicas []int32, acceptable func(int32) bool) *meta.PartitionRecord {
	isr := replicas
	for _, r := range replicas {
		if !acceptable(r) {
			isr = slices.DeleteFunc(slices.Clone(replicas), func(x int32) bool { return !acceptable(x) })
			break
		}
	}
	assert.That(len(isr) > 0, "controller: new partition %d with no active replica", id)
	return &meta.PartitionRecord{TopicID: topic, Partition: id, Replicas: replicas, ISR: isr, Leader: isr[0]}
}

// checkAssignment validates one manual replica list (Kafka's
// validateManualPartitionAssignment): non-empty, no broker twice, every
// broker registered, rf replicas when rf >= 0, and one of them active.
func (c *Controller) checkAssignment(partition int32, replicas []int32, rf int) *apiError {
	if len(replicas) == 0 {
		return errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	if e := c.checkReplicationFactor(len(replicas)); e != nil {
		return e
	}
	if len(replicas) > maxReplicasPerPartition || len(replicas) > c.spec.NumBrokers() {
		return errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment has %d replicas, more than the %d registered brokers (or %d).",
			len(replicas), c.spec.NumBrokers(), maxReplicasPerPartition)
	}
	if r, ok := duplicateID(replicas); ok {
		return errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", r)
	}
	anyActive := false
	for _, r := range replicas {
		b, ok := c.spec.Broker(r)
		if !ok {
			return errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", r)
		}
		anyActive = anyActive || active(&b)
	}
	if rf >= 0 && len(replicas) != rf {
		return errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).",
			len(replicas), rf)
	}
	if !anyActive {
		return errorf(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", partition)
	}
	return nil
}

// checkReplicationFactor refuses a replication factor above
// Config.MaxReplicationFactor (no bound by default but the brokers).
func (c *Controller) checkReplicationFactor(rf int) *apiError {
	if rf > c.cfg.MaxReplicationFactor {
		return errorf(kerr.InvalidReplicationFactor,
			"Replication factor %d is above this controller's bound: a partition has at most %d replica(s).",
			rf, c.cfg.MaxReplicationFactor)
	}
	return nil
}

// createPartitions handles CreatePartitions: a topic's partition count can
// only grow; new partitions keep the topic's replication factor (that of
// partition 0) and are placed like a new topic's, unless assigned by hand.
func (c *Controller) createPartitions(req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	dup := duplicates(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) string { return t.Topic })
	reported := map[string]bool{}
	brokers := c.activeBrokerIDs()
	var b *batch
	if !req.ValidateOnly {
		b = c.openBatch()
	}
	for i := range req.Topics {
		t := &req.Topics[i]
		var e *apiError
		if dup[t.Topic] {
			if reported[t.Topic] {
				continue
			}
			reported[t.Topic] = true
			e = errorf(kerr.InvalidRequest, "Duplicate topic name.")
		} else {
			var recs []meta.Record
			recs, e = c.planPartitions(t, brokers)
			if e == nil && b != nil && !c.add(b, recs...) {
				e = errorf(kerr.PolicyViolation, "Adding partitions to %s would put more than %d records or %d bytes in one controller batch.",
					t.Topic, c.cfg.MaxRecordsPerBatch, c.cfg.MaxBatchBytes)
			}
		}
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, e.code(), e.message()
		resp.Topics = append(resp.Topics, rt)
	}
	if b != nil {
		c.seal(b)
	}
	return resp
}

// planPartitions validates one CreatePartitions topic and returns the
// PartitionRecords of its new partitions.
func (c *Controller) planPartitions(t *kmsg.CreatePartitionsRequestTopic, brokers []int32) ([]meta.Record, *apiError) {
	topic, ok := c.spec.TopicByName(t.Topic)
	if !ok {
		return nil, errorf(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", t.Topic)
	}
	if isCoordinatorTopic(t.Topic) {
		return nil, errorf(kerr.InvalidRequest, "The internal topic %s keeps its partitions: a group or transactional id would move to another partition and lose its state.", t.Topic)
	}
	cur := int32(topic.NumPartitions())
	switch {
	case t.Count < cur:
		return nil, errorf(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", t.Topic, cur, t.Count)
	case t.Count == cur:
		return nil, errorf(kerr.InvalidPartitions, "Topic already has %d partition(s).", cur)
	case int64(t.Count)-int64(cur) > int64(c.cfg.MaxRecordsPerBatch):
		return nil, errorf(kerr.PolicyViolation, "Adding %d partitions at once exceeds the controller's batch of %d records.", t.Count-cur, c.cfg.MaxRecordsPerBatch)
	}
	add := t.Count - cur
	// New partitions keep partition 0's replication factor; a topic left
	// without partitions (a creation batch committed in part) gets the
	// default one.
	rf := int(c.cfg.DefaultReplicationFactor)
	if p0, ok := topic.Partition(0); ok {
		rf = len(p0.Replicas)
	}
	var assignment [][]int32
	if t.Assignment != nil {
		if int32(len(t.Assignment)) != add {
			return nil, errorf(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", add, len(t.Assignment))
		}
		for i, a := range t.Assignment {
			if e := c.checkAssignment(cur+int32(i), a.Replicas, rf); e != nil {
				return nil, e
			}
			assignment = append(assignment, slices.Clone(a.Replicas))
		}
	} else {
		if e := c.checkReplicationFactor(rf); e != nil {
			return nil, e
		}
		if rf > len(brokers) {
			return nil, errorf(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered and unfenced.",
				rf, rf, len(brokers))
		}
		assignment = drawPlacement(c.rng, len(brokers)).place(brokers, cur, add, rf)
	}
	acceptable := acceptableLeaders(c.spec, meta.NoLeader, meta.NoLeader)
	recs := make([]meta.Record, len(assignment))
	for i, replicas := range assignment {
		recs[i] = newPartitionRecord(topic.ID(), cur+int32(i), replicas, acceptable)
	}
	return recs, nil
}

// partitionKey identifies a partition of a request.
type partitionKey struct {
	topic     meta.UUID
	partition int32
}

// alterPartition handles AlterPartition: a partition leader's ISR change.
// The broker's epoch must be current (else STALE_BROKER_EPOCH for the whole
// request); per partition, the request's leader and partition epochs must
// be the current ones, the new ISR a subset of the replicas that keeps the
// leader, and every member registered, unfenced, not shutting down and (from
// version 3) at the epoch the leader saw. An accepted change writes a
// PartitionChangeRecord and answers the new state: the partition epoch
// grows by one, the leader epoch does not.
func (c *Controller) alterPartition(req *kmsg.AlterPartitionRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	if _, ok := c.currentBroker(req.BrokerID, req.BrokerEpoch, &resp.ErrorCode); !ok {
		return resp
	}
	seen := map[partitionKey]bool{}
	b := c.openBatch()
	for _, td := range req.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.Topic, rt.TopidID = td.Topic, td.TopicID
		var topic *meta.TopicImage
		var ok bool
		if req.Version >= 2 {
			topic, ok = c.spec.TopicByID(td.TopicID)
		} else {
			topic, ok = c.spec.TopicByName(td.Topic)
		}
		for _, pd := range td.Partitions {
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition = pd.Partition
			switch {
			case !ok && req.Version >= 2:
				rp.ErrorCode = kerr.UnknownTopicID.Code
			case !ok:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case seen[partitionKey{topic.ID(), pd.Partition}]:
				rp.ErrorCode = kerr.InvalidRequest.Code
			default:
				seen[partitionKey{topic.ID(), pd.Partition}] = true
				rp = c.alterOnePartition(&b, req, topic, &pd)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	c.seal(b)
	return resp
}

// alterOnePartition validates and applies one partition's ISR change.
func (c *Controller) alterOnePartition(b **batch, req *kmsg.AlterPartitionRequest, topic *meta.TopicImage, pd *kmsg.AlterPartitionRequestTopicPartition) kmsg.AlterPartitionResponseTopicPartition {
	rp := kmsg.NewAlterPartitionResponseTopicPartition()
	rp.Partition = pd.Partition
	part, ok := topic.Partition(pd.Partition)
	if !ok {
		rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return rp
	}
	newISR := pd.NewISR
	epochs := make([]int64, len(pd.NewISR))
	if req.Version >= 3 {
		newISR, epochs = make([]int32, len(pd.NewEpochISR)), make([]int64, len(pd.NewEpochISR))
		for i, m := range pd.NewEpochISR {
			newISR[i], epochs[i] = m.BrokerID, m.BrokerEpoch
		}
	} else {
		for i := range epochs {
			epochs[i] = -1
		}
	}
	if pd.LeaderRecoveryState == leaderRecoveryRecovering {
		return c.forgetDamagedReplica(b, req, topic, &part, pd, newISR) // damage.go
	}
	if !slices.Contains(newISR, part.Leader) {
		// The leader resigns or hands off: fenced as any ISR change.
		if e := checkAlterFencing(req, &part, pd); e != nil {
			rp.ErrorCode = e.Code
			return rp
		}
		if recovering(&part) {
			return c.handOffRecovery(b, topic, &part, pd, newISR)
		}
		return c.resignLeader(b, topic, &part, pd, newISR)
	}
	if e := c.checkAlterPartition(req, &part, pd, newISR, epochs); e != nil {
		rp.ErrorCode = e.Code
		return rp
	}
	if recovering(&part) {
		// The recovering leader holds the longest log of its last known
		// ELR: it leads on, no longer recovering. It proposes its ISR of
		// one unchanged; anything else is refused.
		if !slices.Equal(newISR, part.ISR) {
			rp.ErrorCode = kerr.InvalidRequest.Code
			return rp
		}
		c.addSplit(b, &meta.PartitionChangeRecord{TopicID: topic.ID(), Partition: part.ID, LastKnownELR: []int32{}})
		rp.LeaderID, rp.LeaderEpoch, rp.PartitionEpoch = part.Leader, part.LeaderEpoch, part.PartitionEpoch+1
		rp.ISR = slices.Clone(part.ISR)
		return rp
	}
	if !slices.Equal(newISR, part.ISR) {
		rec := &meta.PartitionChangeRecord{TopicID: topic.ID(), Partition: part.ID, ISR: slices.Clone(newISR)}
		minISR := c.minInsyncReplicas(c.spec, topic.Name())
		if elr := nextELR(&part, newISR, minISR); !slices.Equal(elr, part.ELR) {
			rec.ELR = append([]int32{}, elr...)
		}
		if len(newISR) >= minISR && len(part.LastKnownELR) > 0 {
			// Back at min.insync.replicas: the ISR's members hold every
			// committed record, and no one recovers from the forgotten.
			rec.LastKnownELR = []int32{}
		}
		c.addSplit(b, rec)
		if done := c.maybeCompleteReassignment(topic, &part, newISR); done != nil {
			c.addSplit(b, done) // every target replica is in sync
			part.PartitionEpoch++
			if done.Leader != nil {
				part.Leader, part.LeaderEpoch = *done.Leader, part.LeaderEpoch+1
			}
			newISR = done.ISR
		}
		part.ISR, part.PartitionEpoch = newISR, part.PartitionEpoch+1
	}
	rp.LeaderID, rp.LeaderEpoch, rp.PartitionEpoch = part.Leader, part.LeaderEpoch, part.PartitionEpoch
	rp.ISR = slices.Clone(part.ISR)
	return rp
}

// checkAlterPartition is Kafka's validateAlterPartitionData. Epochs ahead
// of the controller's mean the requester heard from a newer controller:
// NOT_CONTROLLER, so that it looks for it.
func (c *Controller) checkAlterPartition(req *kmsg.AlterPartitionRequest, part *meta.Partition, pd *kmsg.AlterPartitionRequestTopicPartition, newISR []int32, epochs []int64) *kerr.Error {
	if e := checkAlterFencing(req, part, pd); e != nil {
		return e
	}
	if !slices.Contains(newISR, part.Leader) {
		return kerr.InvalidRequest
	}
	if len(newISR) > len(part.Replicas) {
		return kerr.InvalidRequest
	}
	if _, dup := duplicateID(newISR); dup {
		return kerr.InvalidRequest
	}
	for _, id := range newISR {
		if !slices.Contains(part.Replicas, id) {
			return kerr.InvalidRequest
		}
	}
	for i, id := range newISR {
		b, ok := c.spec.Broker(id)
		if !ok || !active(&b) || (epochs[i] != -1 && epochs[i] != b.Epoch) {
			if req.Version >= 1 {
				return kerr.IneligibleReplica
			}
			return kerr.OperationNotAttempted
		}
	}
	return nil
}

// checkAlterFencing checks that an AlterPartition comes from the
// partition's leader at its leader and partition epochs.
func checkAlterFencing(req *kmsg.AlterPartitionRequest, part *meta.Partition, pd *kmsg.AlterPartitionRequestTopicPartition) *kerr.Error {
	switch {
	case pd.LeaderEpoch > part.LeaderEpoch || pd.PartitionEpoch > part.PartitionEpoch:
		return kerr.NotController
	case req.BrokerID != part.Leader:
		return kerr.InvalidRequest
	case pd.LeaderEpoch < part.LeaderEpoch:
		return kerr.FencedLeaderEpoch
	case pd.PartitionEpoch < part.PartitionEpoch:
		return kerr.InvalidUpdateVersion
	case pd.LeaderRecoveryState != 0:
		// Strata never elects a leader that must recover (RECOVERING).
		return kerr.InvalidRequest
	}
	return nil
}

// resignLeader handles an AlterPartition whose new ISR is the ISR without
// the leader: a Strata leader resigns its leader epoch so (its log lost
// batches a follower may hold: core/replica's lostTail). The first replica
// of the remaining ISR that is active leads, in the next epoch, with that
// ISR (and the ELR follows, KIP-966); when none is, the ISR stays (an ISR
// never becomes empty) and the same leader leads again in the next epoch.
// Kafka answers such a request INVALID_REQUEST; its brokers never send it.
func (c *Controller) resignLeader(b **batch, topic *meta.TopicImage, part *meta.Partition, pd *kmsg.AlterPartitionRequestTopicPartition, newISR []int32) kmsg.AlterPartitionResponseTopicPartition {
	rp := kmsg.NewAlterPartitionResponseTopicPartition()
	rp.Partition = pd.Partition
	rest := slices.DeleteFunc(slices.Clone(part.ISR), func(id int32) bool { return id == part.Leader })
	if !slices.Equal(newISR, rest) {
		rp.ErrorCode = kerr.InvalidRequest.Code
		return rp
	}
	leader, isr := part.Leader, part.ISR
	for _, r := range part.Replicas {
		if b, ok := c.spec.Broker(r); ok && active(&b) && slices.Contains(rest, r) {
			leader, isr = r, rest
			break
		}
	}
	rec := &meta.PartitionChangeRecord{TopicID: topic.ID(), Partition: part.ID, Leader: &leader}
	if !slices.Equal(isr, part.ISR) {
		rec.ISR = slices.Clone(isr)
		if elr := nextELR(part, isr, c.minInsyncReplicas(c.spec, topic.Name())); !slices.Equal(elr, part.ELR) {
			rec.ELR = append([]int32{}, elr...)
		}
	}
	c.addSplit(b, rec)
	rp.LeaderID, rp.LeaderEpoch, rp.PartitionEpoch = leader, part.LeaderEpoch+1, part.PartitionEpoch+1
	rp.ISR = slices.Clone(isr)
	return rp
}

// recovering reports whether a partition's leader is recovering: it is
// listed in the partition's LastKnownELR, as a forgotten replica (its
// disk may have lost records) that stayed the ISR's last member
// (forgetReplicas).
func recovering(p *meta.Partition) bool {
	return p.Leader != meta.NoLeader && slices.Contains(p.LastKnownELR, p.Leader)
}

// handOffRecovery handles a recovering leader's AlterPartition whose new
// ISR is one other member of the LastKnownELR: that member told the
// leader of a longer log (by last epoch, then log end; core/replica
// recovery.go), so it holds every committed record the others held, and
// leads in the next epoch with an ISR of itself, the recovery done.
// Strata's own request shape, as resignLeader's: Kafka's unclean recovery
// (KIP-966) asks the replicas from the controller instead.
func (c *Controller) handOffRecovery(b **batch, topic *meta.TopicImage, part *meta.Partition, pd *kmsg.AlterPartitionRequestTopicPartition, newISR []int32) kmsg.AlterPartitionResponseTopicPartition {
	rp := kmsg.NewAlterPartitionResponseTopicPartition()
	rp.Partition = pd.Partition
	if len(newISR) != 1 || !slices.Contains(part.LastKnownELR, newISR[0]) || !slices.Contains(part.Replicas, newISR[0]) {
		rp.ErrorCode = kerr.InvalidRequest.Code
		return rp
	}
	if br, ok := c.spec.Broker(newISR[0]); !ok || !active(&br) {
		rp.ErrorCode = kerr.IneligibleReplica.Code
		return rp
	}
	leader := newISR[0]
	rec := &meta.PartitionChangeRecord{TopicID: topic.ID(), Partition: part.ID, Leader: &leader,
		ISR: []int32{leader}, LastKnownELR: []int32{}}
	if len(part.ELR) > 0 {
		rec.ELR = []int32{}
	}
	c.addSplit(b, rec)
	rp.LeaderID, rp.LeaderEpoch, rp.PartitionEpoch = leader, part.LeaderEpoch+1, part.PartitionEpoch+1
	rp.ISR = []int32{leader}
	return rp
}

// duplicateID returns an id listed twice, comparing pairwise for short
// lists and sorting a copy for long ones, so a hostile list costs
// O(n log n).
func duplicateID(ids []int32) (int32, bool) {
	const pairwiseMax = 16
	if len(ids) <= pairwiseMax {
		for i, id := range ids {
			if slices.Contains(ids[:i], id) {
				return id, true
			}
		}
		return 0, false
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return sorted[i], true
		}
	}
	return 0, false
}
