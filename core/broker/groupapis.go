package broker

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/coord"
	"github.com/strata-log/strata/core/group"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/protocol"
)

// Handlers of the group APIs: each finds the group's shard here (or
// answers NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE) and passes the
// request to it (core/group).

// handleFindCoordinator answers FindCoordinator for groups (v0-v3: one
// key; v4+: a batch). The first one creates __consumer_offsets. Key type
// 1 (transactions) is not served yet.
func handleFindCoordinator(b *Broker, r *request) {
	req := r.body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := b.findCoordinatorAuthorized(r, req.CoordinatorType, key)
		if req.Version < 4 {
			resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
			resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
			break
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	r.respond(resp)
}

// findCoordinator finds one key's coordinator.
func (b *Broker) findCoordinator(listener string, typ int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(e *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = e.Code, kmsg.StringPtr(msg)
		return c
	}
	topic, create := OffsetsTopic, b.createOffsetsTopic
	switch {
	case typ == 1 && key == "":
		return fail(kerr.InvalidRequest, "A transactional id must not be empty.")
	case typ == 1:
		topic, create = TxnStateTopic, b.createTxnStateTopic
	case typ != 0:
		return fail(kerr.InvalidRequest, "Unknown coordinator type.")
	case key == "":
		return fail(kerr.InvalidRequest, "A group id must not be empty.")
	}
	img := b.image()
	if img == nil || b.cfg.Partitions == nil {
		return fail(kerr.CoordinatorNotAvailable, "This node has no metadata quorum or partitions.")
	}
	ti, ok := img.TopicByName(topic)
	if !ok {
		create(img)
		return fail(kerr.CoordinatorNotAvailable, "The coordinator's topic "+topic+" is being created.")
	}
	if problem := b.coordinatorTopicProblem(img, topic); problem != "" {
		return fail(kerr.CoordinatorNotAvailable, "The coordinator's topic "+topic+" is not usable: "+problem+".")
	}
	p, ok := ti.Partition(coord.PartitionFor(key, int32(ti.NumPartitions())))
	if !ok || p.Leader == meta.NoLeader {
		return fail(kerr.CoordinatorNotAvailable, "The key's partition of "+topic+" has no leader.")
	}
	reg, ok := img.Broker(p.Leader)
	if !ok || reg.Fenced {
		return fail(kerr.CoordinatorNotAvailable, "The group's coordinator is not available.")
	}
	ep, ok := reg.Endpoint(listener)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "The group's coordinator has no endpoint on listener "+listener+".")
	}
	c.NodeID, c.Host, c.Port = p.Leader, ep.Host, int32(ep.Port)
	return c
}

// groupShard returns the shard of group here, or answers r with why not
// (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) and returns nil.
func (b *Broker) groupShard(r *request, group string) *group.Shard {
	sh, e := b.groupShardFor(group)
	if e != nil {
		r.respond(protocol.ErrorResponse(r.body, e, ""))
		return nil
	}
	return sh
}

func handleJoinGroup(b *Broker, r *request) {
	req := r.body.(*kmsg.JoinGroupRequest)
	if sh := b.groupShard(r, req.Group); sh != nil {
		sh.Join(req, b.groupClient(r), func(resp *kmsg.JoinGroupResponse) { r.respond(resp) })
	}
}

func handleSyncGroup(b *Broker, r *request) {
	req := r.body.(*kmsg.SyncGroupRequest)
	if sh := b.groupShard(r, req.Group); sh != nil {
		sh.Sync(req, func(resp *kmsg.SyncGroupResponse) { r.respond(resp) })
	}
}

func handleHeartbeat(b *Broker, r *request) {
	req := r.body.(*kmsg.HeartbeatRequest)
	if sh := b.groupShard(r, req.Group); sh != nil {
		r.respond(sh.Heartbeat(req))
	}
}

func handleLeaveGroup(b *Broker, r *request) {
	req := r.body.(*kmsg.LeaveGroupRequest)
	if sh := b.groupShard(r, req.Group); sh != nil {
		r.respond(sh.Leave(req))
	}
}

// handleOffsetCommit passes the topics the principal may READ to the
// group's shard; the others are answered TOPIC_AUTHORIZATION_FAILED.
func handleOffsetCommit(b *Broker, r *request) {
	req := r.body.(*kmsg.OffsetCommitRequest)
	kept, refused := splitTopics(req.Topics, func(t kmsg.OffsetCommitRequestTopic) string { return t.Topic },
		b.topicAuth(r, kmsg.ACLOperationRead))
	respond := func(resp *kmsg.OffsetCommitResponse) {
		for _, t := range refused {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		r.respond(resp)
	}
	if len(kept) == 0 && len(refused) > 0 {
		respond(req.ResponseKind().(*kmsg.OffsetCommitResponse))
		return
	}
	if len(refused) > 0 {
		rest := *req
		rest.Topics = kept
		req = &rest
	}
	if sh := b.groupShard(r, req.Group); sh != nil {
		sh.Commit(req, b.partitionExists(), respond)
	}
}

// partitionExists answers from the current image whether a partition
// exists: a commit for one that does not gets UNKNOWN_TOPIC_OR_PARTITION.
func (b *Broker) partitionExists() group.PartitionExists {
	img := b.image()
	return func(topic string, partition int32) bool {
		ti, ok := img.TopicByName(topic)
		return ok && partition >= 0 && int(partition) < ti.NumPartitions()
	}
}

// handleTxnOffsetCommit passes a TxnOffsetCommit to the group's shard,
// which writes the offsets as the producer's transactional batch and
// keeps them pending until the transaction's marker (core/group
// txnoffsets.go).
func handleTxnOffsetCommit(b *Broker, r *request) {
	req := r.body.(*kmsg.TxnOffsetCommitRequest)
	kept, refused := splitTopics(req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) string { return t.Topic },
		b.topicAuth(r, kmsg.ACLOperationRead))
	respond := func(resp *kmsg.TxnOffsetCommitResponse) {
		for _, t := range refused {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		r.respond(resp)
	}
	if len(kept) == 0 && len(refused) > 0 {
		respond(req.ResponseKind().(*kmsg.TxnOffsetCommitResponse))
		return
	}
	if len(refused) > 0 {
		rest := *req
		rest.Topics = kept
		req = &rest
	}
	if sh := b.groupShard(r, req.Group); sh != nil {
		sh.TxnCommit(req, b.partitionExists(), respond)
	}
}

// handleOffsetFetch answers OffsetFetch: v0-v7 for one group, v8+ for a
// batch of groups, each from its own shard.
func handleOffsetFetch(b *Broker, r *request) {
	req := r.body.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	canDescribe := b.topicAuth(r, kmsg.ACLOperationDescribe)
	fetch := func(name string, member *string, epoch int32, topics []kmsg.OffsetFetchRequestGroupTopic, all bool) group.OffsetsFetched {
		if e := b.groupAuth(r, kmsg.ACLOperationDescribe, name); e != nil {
			return group.OffsetsFetched{ErrorCode: e.Code}
		}
		sh, e := b.groupShardFor(name)
		if e != nil {
			return group.OffsetsFetched{ErrorCode: e.Code}
		}
		return offsetsFetchedAuthorized(canDescribe, topics, all, func(topics []kmsg.OffsetFetchRequestGroupTopic) group.OffsetsFetched {
			return sh.FetchStable(name, member, epoch, topics, all, req.RequireStable)
		})
	}
	if req.Version >= 8 {
		for _, g := range req.Groups {
			out := fetch(g.Group, g.MemberID, g.MemberEpoch, g.Topics, g.Topics == nil)
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode, rg.Topics = g.Group, out.ErrorCode, out.Topics
			resp.Groups = append(resp.Groups, rg)
		}
		r.respond(resp)
		return
	}
	topics := make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(req.Topics))
	for _, t := range req.Topics {
		topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
	}
	out := fetch(req.Group, nil, -1, topics, req.Topics == nil && req.Version >= 2)
	resp.ErrorCode = out.ErrorCode
	for _, t := range out.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version < 2 && out.ErrorCode != 0 {
		// v0-v1 have no top-level error: each partition carries it.
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = out.ErrorCode
			}
		}
	}
	r.respond(resp)
}

// handleListGroups lists the groups of every shard this broker runs (a
// client asks every broker), in partition order.
func handleListGroups(b *Broker, r *request) {
	req := r.body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	for _, gs := range b.groups.rt.Slots() {
		resp.Groups = append(resp.Groups, gs.Shard.List(req.StatesFilter, req.TypesFilter)...)
	}
	if !b.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, clusterName) {
		// Without DESCRIBE on the cluster, only the groups the
		// principal may DESCRIBE (Kafka's handleListGroupsRequest).
		resp.Groups = slices.DeleteFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
			return b.groupAuth(r, kmsg.ACLOperationDescribe, g.Group) != nil
		})
	}
	r.respond(resp)
}

func handleDescribeGroups(b *Broker, r *request) {
	req := r.body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.Groups = describeGroups(b, r, req.Groups, (*group.Shard).Describe, func(name string, code int16) kmsg.DescribeGroupsResponseGroup {
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group, g.ErrorCode = name, code
		return g
	})
	for i := range resp.Groups {
		if g := &resp.Groups[i]; req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = b.authorizedOps(r, kmsg.ACLResourceTypeGroup, g.Group)
		}
	}
	r.respond(resp)
}

// describeGroups describes each group named at its shard, or answers
// failed(name, code) for a group the principal may not DESCRIBE
// (GROUP_AUTHORIZATION_FAILED) or no shard here runs: DescribeGroups and
// ConsumerGroupDescribe (and, next, ShareGroupDescribe) in one loop.
func describeGroups[G any](b *Broker, r *request, names []string, describe func(*group.Shard, string) G, failed func(name string, code int16) G) []G {
	out := make([]G, 0, len(names))
	for _, name := range names {
		if e := b.groupAuth(r, kmsg.ACLOperationDescribe, name); e != nil {
			out = append(out, failed(name, e.Code))
			continue
		}
		sh, e := b.groupShardFor(name)
		if e != nil {
			out = append(out, failed(name, e.Code))
			continue
		}
		out = append(out, describe(sh, name))
	}
	return out
}

// handleDeleteGroups deletes each group at its shard and answers once
// every deletion is written.
func handleDeleteGroups(b *Broker, r *request) {
	req := r.body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Groups = make([]kmsg.DeleteGroupsResponseGroup, len(req.Groups))
	pending := len(req.Groups)
	if pending == 0 {
		r.respond(resp)
		return
	}
	for i, name := range req.Groups {
		resp.Groups[i] = kmsg.NewDeleteGroupsResponseGroup()
		resp.Groups[i].Group = name
		finish := func(code int16) {
			resp.Groups[i].ErrorCode = code
			pending--
			if pending == 0 {
				r.respond(resp)
			}
		}
		if e := b.groupAuth(r, kmsg.ACLOperationDelete, name); e != nil {
			finish(e.Code)
			continue
		}
		sh, e := b.groupShardFor(name)
		if e != nil {
			finish(e.Code)
			continue
		}
		sh.Delete(name, finish)
	}
}

// handleOffsetDelete passes the topics the principal may READ to the
// group's shard; the others are answered TOPIC_AUTHORIZATION_FAILED.
func handleOffsetDelete(b *Broker, r *request) {
	req := r.body.(*kmsg.OffsetDeleteRequest)
	kept, refused := splitTopics(req.Topics, func(t kmsg.OffsetDeleteRequestTopic) string { return t.Topic },
		b.topicAuth(r, kmsg.ACLOperationRead))
	respond := func(resp *kmsg.OffsetDeleteResponse) {
		for _, t := range refused {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		r.respond(resp)
	}
	if len(kept) == 0 && len(refused) > 0 {
		respond(req.ResponseKind().(*kmsg.OffsetDeleteResponse))
		return
	}
	if len(refused) > 0 {
		rest := *req
		rest.Topics = kept
		req = &rest
	}
	if sh := b.groupShard(r, req.Group); sh != nil {
		sh.DeleteOffsets(req, respond)
	}
}

// handleConsumerGroupHeartbeat passes a KIP-848 heartbeat to the group's
// shard, which answers once what it changed is written.
func handleConsumerGroupHeartbeat(b *Broker, r *request) {
	req := r.body.(*kmsg.ConsumerGroupHeartbeatRequest)
	if sh := b.groupShard(r, req.Group); sh != nil {
		sh.ConsumerHeartbeat(req, b.groupClient(r), func(resp *kmsg.ConsumerGroupHeartbeatResponse) { r.respond(resp) })
	}
}

// handleConsumerGroupDescribe describes each consumer group at its shard.
func handleConsumerGroupDescribe(b *Broker, r *request) {
	req := r.body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	resp.Groups = describeGroups(b, r, req.Groups, (*group.Shard).DescribeConsumer, func(name string, code int16) kmsg.ConsumerGroupDescribeResponseGroup {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group, g.ErrorCode = name, code
		return g
	})
	for i := range resp.Groups {
		if g := &resp.Groups[i]; req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = b.authorizedOps(r, kmsg.ACLResourceTypeGroup, g.Group)
		}
	}
	r.respond(resp)
}
