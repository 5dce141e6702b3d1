package controller

import (
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/protocol"
)

const (
	// maxTopicNameBytes is Kafka's limit on a topic name.
	maxTopicNameBytes = 249
	// metadataTopicName is the metadata log's name, which no topic may take.
	metadataTopicName = "__cluster_metadata"
)

// validateTopicName applies Kafka's Topic.validate: 1 to 249 characters of
// [a-zA-Z0-9._-], neither "." nor "..".
func validateTopicName(name string) *apiError {
	switch {
	case name == "":
		return errorf(kerr.InvalidTopicException, "Topic name is illegal, it can't be empty.")
	case name == "." || name == "..":
		return errorf(kerr.InvalidTopicException, "Topic name cannot be \".\" or \"..\".")
	case len(name) > maxTopicNameBytes:
		return errorf(kerr.InvalidTopicException, "Topic name is illegal, it can't be longer than %d characters, topic name: %s", maxTopicNameBytes, name)
	case name == metadataTopicName:
		return errorf(kerr.InvalidTopicException, "Topic name %s is reserved for the metadata log.", name)
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
			return errorf(kerr.InvalidTopicException, "Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// collisionKey is the shape two topic names must not share, because
// metric names replace '.' with '_' (Kafka's Topic.hasCollision). Names
// without either character cannot collide and have no key.
func collisionKey(name string) (string, bool) {
	if !strings.ContainsAny(name, "._") {
		return "", false
	}
	return strings.ReplaceAll(name, ".", "_"), true
}

// rebuildCollisions indexes the speculative image's topic names by their
// collision key.
func (c *Controller) rebuildCollisions() {
	c.collisions = map[string]string{}
	for t := range c.spec.Topics() {
		if k, ok := collisionKey(t.Name()); ok {
			c.collisions[k] = t.Name()
		}
	}
}

// newTopicID draws a random (version 4) topic id that no topic uses and
// whose text form does not start with '-' (Kafka's Uuid.randomUuid rule,
// so that ids never look like command-line flags).
func (c *Controller) newTopicID(taken map[meta.UUID]bool) meta.UUID {
	for {
		u := c.randomUUID()
		if _, exists := c.spec.TopicByID(u); exists || taken[u] || strings.HasPrefix(u.String(), "-") {
			continue
		}
		return u
	}
}

// randomUUID draws a version 4 UUID from the controller's randomness.
func (c *Controller) randomUUID() meta.UUID {
	var u meta.UUID
	hi, lo := c.rng.Uint64(), c.rng.Uint64()
	for i := range 8 {
		u[i], u[8+i] = byte(hi>>(56-8*i)), byte(lo>>(56-8*i))
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// activeBrokerIDs lists the active brokers of the speculative image in
// ascending id order: the brokers new replicas go to.
func (c *Controller) activeBrokerIDs() []int32 {
	var ids []int32
	for b := range c.spec.Brokers() {
		if active(&b) {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

// createTopics handles CreateTopics. Every topic is validated on its own
// and gets its own error; the topics that pass share the request's batch.
// A name listed twice fails as INVALID_REQUEST (reported once). With
// validate_only nothing is written but the response is what creating would
// have answered (including a fresh topic id).
func (c *Controller) createTopics(req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	dup := duplicates(req.Topics, func(t kmsg.CreateTopicsRequestTopic) string { return t.Topic })
	reported := map[string]bool{}
	plan := topicPlanner{c: c, brokers: c.activeBrokerIDs(), created: map[string]string{}, ids: map[meta.UUID]bool{}}
	var b *batch
	if !req.ValidateOnly {
		b = c.openBatch()
	}
	for i := range req.Topics {
		t := &req.Topics[i]
		if dup[t.Topic] {
			if !reported[t.Topic] {
				reported[t.Topic] = true
				resp.Topics = append(resp.Topics, createTopicError(t.Topic, errorf(kerr.InvalidRequest, "Duplicate topic name.")))
			}
			continue
		}
		rt, recs, e := plan.topic(t)
		if e == nil && b != nil && !c.add(b, recs...) {
			e = errorf(kerr.PolicyViolation, "Creating topic %s would put more than %d records or %d bytes in one controller batch; create fewer topics or partitions per request.",
				t.Topic, c.cfg.MaxRecordsPerBatch, c.cfg.MaxBatchBytes)
		}
		if e != nil {
			resp.Topics = append(resp.Topics, createTopicError(t.Topic, e))
			continue
		}
		plan.accept(t.Topic, meta.UUID(rt.TopicID))
		resp.Topics = append(resp.Topics, rt)
	}
	if b != nil {
		c.seal(b)
		for _, k := range slices.Sorted(maps.Keys(plan.created)) {
			c.collisions[k] = plan.created[k]
		}
	}
	return resp
}

// topicPlanner validates the topics of one CreateTopics request and builds
// their records, remembering what earlier topics of the request took.
type topicPlanner struct {
	c *Controller
	// brokers are the active brokers, ascending.
	brokers []int32
	// created indexes the request's accepted names by collision key.
	created map[string]string
	// ids are the topic ids the request's accepted topics took.
	ids map[meta.UUID]bool
}

// accept records that a topic of the request was accepted.
func (p *topicPlanner) accept(name string, id meta.UUID) {
	if k, ok := collisionKey(name); ok {
		p.created[k] = name
	}
	p.ids[id] = true
}

// topic validates one topic and returns its response entry and records:
// a TopicRecord, its ConfigRecords (by key) and its PartitionRecords.
func (p *topicPlanner) topic(t *kmsg.CreateTopicsRequestTopic) (kmsg.CreateTopicsResponseTopic, []meta.Record, *apiError) {
	c := p.c
	var rt kmsg.CreateTopicsResponseTopic
	if e := validateTopicName(t.Topic); e != nil {
		return rt, nil, e
	}
	if _, exists := c.spec.TopicByName(t.Topic); exists {
		return rt, nil, errorf(kerr.TopicAlreadyExists, "Topic '%s' already exists.", t.Topic)
	}
	if k, ok := collisionKey(t.Topic); ok {
		other, found := c.collisions[k]
		if !found {
			other, found = p.created[k]
		}
		if found {
			return rt, nil, errorf(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", t.Topic, other)
		}
	}
	var assignment [][]int32
	if len(t.ReplicaAssignment) > 0 {
		if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
			return rt, nil, errorf(kerr.InvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
		}
		var e *apiError
		if assignment, e = p.manualAssignment(t.ReplicaAssignment); e != nil {
			return rt, nil, e
		}
	} else {
		n, rf := t.NumPartitions, t.ReplicationFactor
		if n == -1 {
			n = c.cfg.DefaultNumPartitions
		}
		if rf == -1 {
			rf = c.cfg.DefaultReplicationFactor
		}
		if n <= 0 {
			return rt, nil, errorf(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
		}
		if rf <= 0 {
			return rt, nil, errorf(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
		}
		if e := c.checkReplicationFactor(int(rf)); e != nil {
			return rt, nil, e
		}
		if int(rf) > len(p.brokers) {
			return rt, nil, errorf(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered and unfenced.",
				rf, rf, len(p.brokers))
		}
		if int(n) > c.cfg.MaxRecordsPerBatch {
			return rt, nil, errorf(kerr.PolicyViolation, "Creating %d partitions at once exceeds the controller's batch of %d records.", n, c.cfg.MaxRecordsPerBatch)
		}
		assignment = drawPlacement(c.rng, len(p.brokers)).place(p.brokers, 0, n, int(rf))
	}
	set, configRecs, e := topicConfigRecords(t.Topic, t.Configs)
	if e != nil {
		return rt, nil, e
	}
	id := c.newTopicID(p.ids)
	recs := make([]meta.Record, 0, 1+len(configRecs)+len(assignment))
	recs = append(recs, &meta.TopicRecord{Name: t.Topic, TopicID: id})
	recs = append(recs, configRecs...)
	acceptable := acceptableLeaders(c.spec, meta.NoLeader, meta.NoLeader)
	for i, replicas := range assignment {
		recs = append(recs, newPartitionRecord(id, int32(i), replicas, acceptable))
	}
	rt = kmsg.NewCreateTopicsResponseTopic()
	rt.Topic, rt.TopicID = t.Topic, id
	rt.NumPartitions, rt.ReplicationFactor = int32(len(assignment)), int16(len(assignment[0]))
	rt.Configs = describeTopicConfigs(c.spec, set)
	return rt, recs, nil
}

// manualAssignment validates a CreateTopics replica assignment: one entry
// per partition, partitions 0..n-1, every list valid and of one length.
func (p *topicPlanner) manualAssignment(as []kmsg.CreateTopicsRequestTopicReplicaAssignment) ([][]int32, *apiError) {
	if len(as) > p.c.cfg.MaxRecordsPerBatch {
		return nil, errorf(kerr.PolicyViolation, "Creating %d partitions at once exceeds the controller's batch of %d records.", len(as), p.c.cfg.MaxRecordsPerBatch)
	}
	out := make([][]int32, len(as))
	rf := -1
	for _, a := range as {
		if a.Partition < 0 || int(a.Partition) >= len(as) {
			return nil, errorf(kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence")
		}
		if out[a.Partition] != nil {
			return nil, errorf(kerr.InvalidReplicaAssignment, "Found multiple manual partition assignments for partition %d", a.Partition)
		}
		if e := p.c.checkAssignment(a.Partition, a.Replicas, rf); e != nil {
			return nil, e
		}
		rf = len(a.Replicas)
		out[a.Partition] = slices.Clone(a.Replicas)
	}
	return out, nil
}

// topicConfigRecords validates a new topic's configs and returns them as a
// map and as ConfigRecords sorted by key.
func topicConfigRecords(topic string, cfgs []kmsg.CreateTopicsRequestTopicConfig) (map[string]string, []meta.Record, *apiError) {
	set := make(map[string]string, len(cfgs))
	for _, cfg := range cfgs {
		if _, ok := set[cfg.Name]; ok {
			return nil, nil, errorf(kerr.InvalidRequest, "Duplicate config key %s.", cfg.Name)
		}
		if _, e := checkTopicConfig(cfg.Name, cfg.Value); e != nil {
			return nil, nil, e
		}
		set[cfg.Name] = *cfg.Value
	}
	policy, ok := set[config.TopicCleanupPolicy]
	if e := checkCoordinatorTopicPolicy(topic, policy, ok); e != nil {
		return nil, nil, e
	}
	keys := slices.Sorted(maps.Keys(set))
	recs := make([]meta.Record, len(keys))
	for i, k := range keys {
		v := set[k]
		recs[i] = configRecord(topic, k, &v)
	}
	return set, recs, nil
}

// deleteTopics handles DeleteTopics by name (every version) or by id
// (version 6+). All deletions share the request's batch.
func (c *Controller) deleteTopics(req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	entries := protocol.DeleteTopicsEntries(req)
	names := duplicates(entries, func(t kmsg.DeleteTopicsRequestTopic) string {
		if t.Topic == nil {
			return ""
		}
		return *t.Topic
	})
	ids := duplicates(entries, func(t kmsg.DeleteTopicsRequestTopic) meta.UUID { return t.TopicID })
	removed := map[meta.UUID]bool{}
	b := c.openBatch()
	for _, t := range entries {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		topic, e := c.topicToDelete(t, names, ids, removed)
		if e == nil && !c.add(b, &meta.RemoveTopicRecord{TopicID: topic.ID()}) {
			e = errorf(kerr.PolicyViolation, "The deletions do not fit in one controller batch.")
		}
		if e == nil {
			removed[topic.ID()] = true
			name := topic.Name()
			rt.Topic, rt.TopicID = &name, topic.ID()
			if k, ok := collisionKey(name); ok {
				delete(c.collisions, k)
			}
		}
		rt.ErrorCode, rt.ErrorMessage = e.code(), e.message()
		resp.Topics = append(resp.Topics, rt)
	}
	c.seal(b)
	return resp
}

// topicToDelete resolves one DeleteTopics entry.
func (c *Controller) topicToDelete(t kmsg.DeleteTopicsRequestTopic, names map[string]bool, ids map[meta.UUID]bool, removed map[meta.UUID]bool) (*meta.TopicImage, *apiError) {
	byID := meta.UUID(t.TopicID)
	switch {
	case t.Topic != nil && !byID.IsZero():
		return nil, errorf(kerr.InvalidRequest, "You may not specify both topic name and topic id.")
	case t.Topic == nil && byID.IsZero():
		return nil, errorf(kerr.InvalidRequest, "Neither topic name nor id was specified.")
	case t.Topic != nil && names[*t.Topic]:
		return nil, errorf(kerr.InvalidRequest, "Duplicate topic name.")
	case t.Topic == nil && ids[byID]:
		return nil, errorf(kerr.InvalidRequest, "Duplicate topic id.")
	case c.cfg.TopicDeletionDisabled:
		return nil, errorf(kerr.TopicDeletionDisabled, "Topic deletion is disabled.")
	}
	var topic *meta.TopicImage
	var ok bool
	if t.Topic != nil {
		if topic, ok = c.spec.TopicByName(*t.Topic); !ok || removed[topic.ID()] {
			return nil, errorf(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
		}
	} else if topic, ok = c.spec.TopicByID(byID); !ok || removed[byID] {
		return nil, errorf(kerr.UnknownTopicID, "This server does not host this topic ID.")
	}
	return topic, nil
}
