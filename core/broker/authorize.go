package broker

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/group"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/txn"
)

// Authorization of requests, with the rules of Kafka's KafkaApis (4.x)
// and AuthorizerIntegrationTest: which operation on which resource each
// API needs, and the error each refusal answers. Without an Authorizer
// every request is allowed, as in Kafka without authorizer.class.name.
//
// A request is decided in two places:
//
//   - apiAuth, one row per API, decides what applies to the whole
//     request before its handler runs (a group's READ for JoinGroup, a
//     transactional id's WRITE for EndTxn, CLUSTER_ACTION for a
//     follower's Fetch): a refusal is answered with the row's error in
//     every error field of the response (protocol.ErrorResponse), as
//     Kafka's getErrorResponse does, and the handler never runs.
//   - the handlers check each resource they serve (each topic of a
//     Produce, each group of DescribeGroups) with the functions below,
//     answering that resource's error inside the response, or dropping
//     the resource where Kafka hides it (Metadata's and OffsetFetch's
//     topics of an all-topics request, ListGroups, ListTransactions).
//
// Every decision goes through Broker.decide (authorized, which logs
// denials, and authorizedOps).

// clusterName is the CLUSTER resource's name in ACL bindings.
const clusterName = acl.ClusterName

// authRule is one API's authorization.
type authRule struct {
	// whole decides the request before its handler: the error to
	// answer every part of it with, or nil to run the handler. Nil for
	// APIs decided by their handler alone.
	whole func(b *Broker, r *request) *kerr.Error
	// needs is what the API requires, as docs/operations.md lists it.
	needs string
}

// apiAuth is the authorization of every API the broker serves (a test
// checks that each row of apis has one). Looked up only.
var apiAuth = map[kmsg.Key]authRule{
	kmsg.ApiVersions:      {needs: "nothing (always allowed)"},
	kmsg.SASLHandshake:    {needs: "nothing (it is how a connection authenticates)"},
	kmsg.SASLAuthenticate: {needs: "nothing (it is how a connection authenticates)"},
	// The security APIs decide in their handlers (securityapis.go).
	kmsg.DescribeACLs:                 {needs: "DESCRIBE on the cluster"},
	kmsg.CreateACLs:                   {needs: "ALTER on the cluster"},
	kmsg.DeleteACLs:                   {needs: "ALTER on the cluster"},
	kmsg.DescribeUserSCRAMCredentials: {needs: "DESCRIBE on the cluster"},
	kmsg.AlterUserSCRAMCredentials:    {needs: "ALTER on the cluster"},
	kmsg.DescribeClientQuotas:         {needs: "DESCRIBE_CONFIGS on the cluster"},
	kmsg.AlterClientQuotas:            {needs: "ALTER_CONFIGS on the cluster"},
	kmsg.Produce: {whole: produceAuth,
		needs: "WRITE on each topic (TOPIC_AUTHORIZATION_FAILED per partition); with a transactional id, WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)"},
	kmsg.Fetch: {whole: fetchAuth,
		needs: "READ on each topic (by id, v13+: UNKNOWN_TOPIC_ID without it, the answer of an unknown id); a follower's fetch (replica id >= 0): CLUSTER_ACTION on the cluster"},
	kmsg.ListOffsets:          {needs: "DESCRIBE on each topic"},
	kmsg.OffsetForLeaderEpoch: {needs: "DESCRIBE on each topic, or CLUSTER_ACTION on the cluster"},
	kmsg.DeleteRecords:        {needs: "DELETE on each topic"},
	kmsg.DescribeProducers:    {needs: "READ on each topic"},
	kmsg.Metadata: {needs: "DESCRIBE on each topic (an all-topics request lists only those); " +
		"auto-creation: CREATE on the cluster or the topic"},
	kmsg.DescribeTopicPartitions: {needs: "DESCRIBE on each topic (an all-topics request lists only those)"},
	kmsg.DescribeCluster:         {needs: "nothing; its authorized operations need DESCRIBE on the cluster"},
	kmsg.CreateTopics:            {needs: "CREATE on the cluster or on each topic (an existing topic too: TOPIC_AUTHORIZATION_FAILED, not TOPIC_ALREADY_EXISTS); its configs in the answer need DESCRIBE_CONFIGS"},
	kmsg.DeleteTopics:            {needs: "DELETE on the cluster or on each topic (by id: DESCRIBE too, or the name is not returned)"},
	kmsg.CreatePartitions:        {needs: "ALTER on each topic"},
	kmsg.DescribeConfigs:         {needs: "DESCRIBE_CONFIGS on each topic or group, or on the cluster for brokers"},
	kmsg.AlterConfigs:            {needs: "ALTER_CONFIGS on each topic or group, or on the cluster for brokers"},
	kmsg.IncrementalAlterConfigs: {needs: "ALTER_CONFIGS on each topic or group, or on the cluster for brokers"},
	kmsg.ElectLeaders:            {whole: clusterAuth(kmsg.ACLOperationAlter), needs: "ALTER on the cluster"},
	kmsg.AlterPartitionAssignments: {whole: clusterAuth(kmsg.ACLOperationAlter),
		needs: "ALTER on the cluster"},
	kmsg.ListPartitionReassignments: {whole: clusterAuth(kmsg.ACLOperationDescribe),
		needs: "DESCRIBE on the cluster"},
	kmsg.DescribeLogDirs: {whole: clusterAuth(kmsg.ACLOperationDescribe), needs: "DESCRIBE on the cluster"},
	kmsg.DescribeQuorum:  {whole: clusterAuth(kmsg.ACLOperationDescribe), needs: "DESCRIBE on the cluster"},
	kmsg.FindCoordinator: {needs: "DESCRIBE on each group or transactional id"},
	kmsg.JoinGroup: {whole: func(b *Broker, r *request) *kerr.Error {
		return b.groupAuth(r, kmsg.ACLOperationRead, r.body.(*kmsg.JoinGroupRequest).Group)
	}, needs: "READ on the group"},
	kmsg.SyncGroup: {whole: func(b *Broker, r *request) *kerr.Error {
		return b.groupAuth(r, kmsg.ACLOperationRead, r.body.(*kmsg.SyncGroupRequest).Group)
	}, needs: "READ on the group"},
	kmsg.Heartbeat: {whole: func(b *Broker, r *request) *kerr.Error {
		return b.groupAuth(r, kmsg.ACLOperationRead, r.body.(*kmsg.HeartbeatRequest).Group)
	}, needs: "READ on the group"},
	kmsg.LeaveGroup: {whole: func(b *Broker, r *request) *kerr.Error {
		return b.groupAuth(r, kmsg.ACLOperationRead, r.body.(*kmsg.LeaveGroupRequest).Group)
	}, needs: "READ on the group"},
	kmsg.OffsetCommit: {whole: func(b *Broker, r *request) *kerr.Error {
		return b.groupAuth(r, kmsg.ACLOperationRead, r.body.(*kmsg.OffsetCommitRequest).Group)
	}, needs: "READ on the group and on each topic"},
	kmsg.OffsetFetch:    {needs: "DESCRIBE on each group and on each topic (topics without it are hidden from an all-topics request)"},
	kmsg.ListGroups:     {needs: "DESCRIBE on the cluster, or lists the groups with DESCRIBE"},
	kmsg.DescribeGroups: {needs: "DESCRIBE on each group"},
	kmsg.DeleteGroups:   {needs: "DELETE on each group"},
	kmsg.OffsetDelete: {whole: func(b *Broker, r *request) *kerr.Error {
		return b.groupAuth(r, kmsg.ACLOperationDelete, r.body.(*kmsg.OffsetDeleteRequest).Group)
	}, needs: "DELETE on the group, READ on each topic"},
	kmsg.ConsumerGroupHeartbeat: {whole: consumerHeartbeatAuth,
		needs: "READ on the group, DESCRIBE on each subscribed topic"},
	kmsg.ConsumerGroupDescribe: {needs: "DESCRIBE on each group"},
	kmsg.InitProducerID: {whole: initProducerIDAuth,
		needs: "WRITE on the transactional id; without one, IDEMPOTENT_WRITE on the cluster or WRITE on any topic"},
	kmsg.AddPartitionsToTxn: {whole: addPartitionsAuth,
		needs: "WRITE on the transactional id and on each topic; v4+ (from brokers): CLUSTER_ACTION on the cluster"},
	kmsg.AddOffsetsToTxn: {whole: func(b *Broker, r *request) *kerr.Error {
		req := r.body.(*kmsg.AddOffsetsToTxnRequest)
		return firstRefusal(b.txnIDAuth(r, kmsg.ACLOperationWrite, req.TransactionalID),
			b.groupAuth(r, kmsg.ACLOperationRead, req.Group))
	}, needs: "WRITE on the transactional id, READ on the group"},
	kmsg.EndTxn: {whole: func(b *Broker, r *request) *kerr.Error {
		return b.txnIDAuth(r, kmsg.ACLOperationWrite, r.body.(*kmsg.EndTxnRequest).TransactionalID)
	}, needs: "WRITE on the transactional id"},
	kmsg.TxnOffsetCommit: {whole: func(b *Broker, r *request) *kerr.Error {
		req := r.body.(*kmsg.TxnOffsetCommitRequest)
		return firstRefusal(b.txnIDAuth(r, kmsg.ACLOperationWrite, req.TransactionalID),
			b.groupAuth(r, kmsg.ACLOperationRead, req.Group))
	}, needs: "WRITE on the transactional id, READ on the group and on each topic"},
	kmsg.WriteTxnMarkers: {whole: func(b *Broker, r *request) *kerr.Error {
		if b.authorized(r, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, clusterName) {
			return nil
		}
		return clusterAuth(kmsg.ACLOperationClusterAction)(b, r)
	}, needs: "CLUSTER_ACTION (or ALTER) on the cluster"},
	kmsg.DescribeTransactions: {needs: "DESCRIBE on each transactional id (topics without DESCRIBE are left out)"},
	kmsg.ListTransactions:     {needs: "lists the transactional ids with DESCRIBE"},
}

// authorized reports whether the request's principal may perform op on
// the resource t:name, by the ACLs of the image the broker has applied:
// always true without an Authorizer. A denial is logged at DEBUG with
// the rule and binding that decided (Kafka's authorizer log, which logs
// denials at INFO, would be one line per hidden topic of every
// all-topics Metadata here).
func (b *Broker) authorized(r *request, op kmsg.ACLOperation, t kmsg.ACLResourceType, name string) bool {
	d, checked := b.decide(r, op, t, name)
	if checked && !d.Allowed {
		b.log.Debug("authorization denied", "principal", r.cn.principal.String(), "host", r.cn.host,
			"operation", op.String(), "resource_type", t.String(), "resource", name, "decision", d.String())
	}
	return d.Allowed
}

// decide is the one place every decision of the broker is made:
// allowed without an Authorizer (checked false), else by the ACLs.
func (b *Broker) decide(r *request, op kmsg.ACLOperation, t kmsg.ACLResourceType, name string) (d acl.Decision, checked bool) {
	if b.cfg.Authorizer == nil {
		return acl.Decision{Allowed: true}, false
	}
	return b.acls().Authorize(*b.cfg.Authorizer, acl.Request{
		Principal: r.cn.principal.String(), Host: r.cn.host,
		Operation: op, ResourceType: t, ResourceName: name,
	}), true
}

// acls is the ACL index of the image the broker has applied.
func (b *Broker) acls() acl.Index {
	if b.cfg.testACLs != nil {
		return b.cfg.testACLs()
	}
	if b.cfg.Metadata == nil {
		return acl.Index{}
	}
	return b.cfg.Metadata.Image().ACLs()
}

// handle runs r's whole-request authorization (apiAuth) and, unless it
// refused and answered the request, its handler.
func (b *Broker) handle(r *request) {
	if b.cfg.Authorizer != nil {
		rule, ok := apiAuth[kmsg.Key(r.api.Key)]
		var refused *kerr.Error
		switch {
		case !ok:
			// Every served API has a row (a test checks); refuse
			// rather than serve one unchecked.
			refused = kerr.ClusterAuthorizationFailed
		case rule.whole != nil:
			refused = rule.whole(b, r)
		}
		if refused != nil {
			b.log.Debug("request refused", "api_name", r.hdr.APIName(), "principal", r.cn.principal.String(),
				"host", r.cn.host, "err", refused)
			resp := refusalResponse(r.body, refused)
			if r.m != nil && r.api.countsErrors {
				r.m.countResponseErrors(resp) // the handler that counts them did not run
			}
			if p, ok := r.body.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
				// No answer is read: close, as Kafka does when an
				// acks=0 produce fails (ProduceRequest.getErrorResponse
				// is null).
				r.noResponse()
				b.closeConn(r.cn)
				return
			}
			r.respond(resp)
			return
		}
	}
	r.api.handle(b, r)
}

// firstRefusal is the first non-nil error.
func firstRefusal(errs ...*kerr.Error) *kerr.Error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// clusterAuth is the rule requiring op on the cluster
// (CLUSTER_AUTHORIZATION_FAILED).
func clusterAuth(op kmsg.ACLOperation) func(*Broker, *request) *kerr.Error {
	return func(b *Broker, r *request) *kerr.Error {
		if b.authorized(r, op, kmsg.ACLResourceTypeCluster, clusterName) {
			return nil
		}
		return kerr.ClusterAuthorizationFailed
	}
}

// groupAuth is GROUP_AUTHORIZATION_FAILED unless op on group is allowed.
func (b *Broker) groupAuth(r *request, op kmsg.ACLOperation, group string) *kerr.Error {
	if b.authorized(r, op, kmsg.ACLResourceTypeGroup, group) {
		return nil
	}
	return kerr.GroupAuthorizationFailed
}

// txnIDAuth is TRANSACTIONAL_ID_AUTHORIZATION_FAILED unless op on the
// transactional id is allowed.
func (b *Broker) txnIDAuth(r *request, op kmsg.ACLOperation, id string) *kerr.Error {
	if b.authorized(r, op, kmsg.ACLResourceTypeTransactionalId, id) {
		return nil
	}
	return kerr.TransactionalIDAuthorizationFailed
}

// produceAuth: a transactional producer needs WRITE on its id, or the
// whole request is refused (its topics are checked by handleProduce).
func produceAuth(b *Broker, r *request) *kerr.Error {
	req := r.body.(*kmsg.ProduceRequest)
	if req.TransactionID == nil {
		return nil
	}
	return b.txnIDAuth(r, kmsg.ACLOperationWrite, *req.TransactionID)
}

// fetchAuth: a follower's fetch needs CLUSTER_ACTION, or every partition
// is answered TOPIC_AUTHORIZATION_FAILED (a consumer's topics are checked
// by the fetch, each against READ). Replicas fetch over the client
// listener as User:ANONYMOUS until brokers authenticate to each other,
// so with an Authorizer they need that principal to be allowed.
func fetchAuth(b *Broker, r *request) *kerr.Error {
	if fetchReplica(r.body.(*kmsg.FetchRequest)) < 0 {
		return nil
	}
	if b.authorized(r, kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, clusterName) {
		return nil
	}
	return kerr.TopicAuthorizationFailed
}

// initProducerIDAuth: WRITE on the transactional id; an idempotent
// producer (no id) needs IDEMPOTENT_WRITE on the cluster or WRITE on any
// topic (KIP-679).
func initProducerIDAuth(b *Broker, r *request) *kerr.Error {
	req := r.body.(*kmsg.InitProducerIDRequest)
	if req.TransactionalID != nil {
		return b.txnIDAuth(r, kmsg.ACLOperationWrite, *req.TransactionalID)
	}
	if b.authorized(r, kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, clusterName) ||
		b.authorizedOnAny(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		return nil
	}
	return kerr.ClusterAuthorizationFailed
}

// addPartitionsAuth: v0-v3 (producers) need WRITE on the transactional
// id (topics are checked by the handler); v4+ (brokers verifying, KIP-890)
// need CLUSTER_ACTION on the cluster.
func addPartitionsAuth(b *Broker, r *request) *kerr.Error {
	req := r.body.(*kmsg.AddPartitionsToTxnRequest)
	if req.Version >= 4 {
		return clusterAuth(kmsg.ACLOperationClusterAction)(b, r)
	}
	return b.txnIDAuth(r, kmsg.ACLOperationWrite, req.TransactionalID)
}

// consumerHeartbeatAuth: READ on the group and DESCRIBE on every topic
// the member subscribes to by name.
func consumerHeartbeatAuth(b *Broker, r *request) *kerr.Error {
	req := r.body.(*kmsg.ConsumerGroupHeartbeatRequest)
	if e := b.groupAuth(r, kmsg.ACLOperationRead, req.Group); e != nil {
		return e
	}
	can := b.topicAuth(r, kmsg.ACLOperationDescribe)
	for _, t := range req.SubscribedTopicNames {
		if can(t) != nil {
			return kerr.TopicAuthorizationFailed
		}
	}
	return nil
}

// authorizedOnAny reports whether op is allowed on at least one resource
// of type t: Kafka's Authorizer.authorizeByResourceType, which KIP-679's
// idempotent producers rely on. A super user (or a principal allowed on
// every name, as a name no binding mentions shows) is; otherwise one
// ALLOW binding for the principal (or User:*), from its host (or *), of
// op or ALL, must not be covered by a DENY of the same: a literal DENY of
// "*" denies all, a literal ALLOW is covered by a literal DENY of its
// name, and any ALLOW by a PREFIXED DENY of a prefix of its name.
func (b *Broker) authorizedOnAny(r *request, op kmsg.ACLOperation, t kmsg.ACLResourceType) bool {
	if b.authorized(r, op, t, "hardcode") { // Kafka's own probe name
		return true
	}
	all, err := b.acls().Matching(acl.Filter{ResourceType: t, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny})
	if err != nil {
		return false
	}
	principal := r.cn.principal.String()
	var allows []acl.Binding
	denyLiteral, denyPrefix := map[string]bool{}, map[string]bool{} // looked up only
	for _, bd := range all {
		if bd.Host != r.cn.host && bd.Host != acl.Wildcard ||
			bd.Principal != principal && bd.Principal != acl.WildcardPrincipal ||
			bd.Operation != op && bd.Operation != kmsg.ACLOperationAll {
			continue
		}
		if bd.Permission == kmsg.ACLPermissionTypeDeny {
			if bd.PatternType == kmsg.ACLResourcePatternTypeLiteral && bd.ResourceName == acl.Wildcard {
				return false
			}
			if bd.PatternType == kmsg.ACLResourcePatternTypeLiteral {
				denyLiteral[bd.ResourceName] = true
			} else {
				denyPrefix[bd.ResourceName] = true
			}
			continue
		}
		if bd.PatternType == kmsg.ACLResourcePatternTypeLiteral && bd.ResourceName == acl.Wildcard {
			return true
		}
		allows = append(allows, bd)
	}
	for _, a := range allows {
		if a.PatternType == kmsg.ACLResourcePatternTypeLiteral && denyLiteral[a.ResourceName] {
			continue
		}
		covered := false
		for i := 1; i <= len(a.ResourceName) && !covered; i++ {
			covered = denyPrefix[a.ResourceName[:i]]
		}
		if !covered {
			return true
		}
	}
	return false
}

// topicAuth returns the check of op on topics for r: nil when allowed,
// else kerr.TopicAuthorizationFailed. Each name is decided once per
// request (Kafka's filterByAuthorized).
func (b *Broker) topicAuth(r *request, op kmsg.ACLOperation) func(topic string) error {
	if b.cfg.Authorizer == nil {
		return func(string) error { return nil }
	}
	decided := map[string]bool{} // looked up only
	return func(topic string) error {
		ok, seen := decided[topic]
		if !seen {
			ok = b.authorized(r, op, kmsg.ACLResourceTypeTopic, topic)
			decided[topic] = ok
		}
		if ok {
			return nil
		}
		return kerr.TopicAuthorizationFailed
	}
}

// authorizedOps is the KIP-430 bit field of what r's principal may do on
// t:name (every operation of the type without an Authorizer, as Kafka
// reports without one).
func (b *Broker) authorizedOps(r *request, t kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range acl.Operations(t) {
		if d, _ := b.decide(r, op, t, name); d.Allowed {
			bits |= 1 << uint(op)
		}
	}
	return bits
}

// notRequestedOps is an authorized-operations field not asked for
// (Kafka's INT32_MIN).
const notRequestedOps = -2147483648

// findCoordinatorAuthorized is findCoordinator after DESCRIBE on the key:
// a group (GROUP_AUTHORIZATION_FAILED) or a transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
func (b *Broker) findCoordinatorAuthorized(r *request, typ int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	var e *kerr.Error
	switch typ {
	case 0:
		e = b.groupAuth(r, kmsg.ACLOperationDescribe, key)
	case 1:
		e = b.txnIDAuth(r, kmsg.ACLOperationDescribe, key)
	}
	if e == nil {
		return b.findCoordinator(r.cn.l.Name, typ, key)
	}
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port, c.ErrorCode = key, -1, -1, e.Code
	return c
}

// splitTopics splits a request's topics into those can allows and those
// it refuses, each in request order.
func splitTopics[T any](ts []T, name func(T) string, can func(string) error) (kept, refused []T) {
	kept, refused, _ = splitBy(ts, func(t T) error { return can(name(t)) })
	return kept, refused
}

// splitBy splits items into those refusal allows (its zero value) and
// those it refuses, with the refusals, each in request order. With none
// refused, kept is items itself.
func splitBy[T any, E comparable](items []T, refusal func(T) E) (kept, refused []T, errs []E) {
	var allowed E
	for i, it := range items {
		e := refusal(it)
		if e == allowed {
			if refused != nil {
				kept = append(kept, it)
			}
			continue
		}
		if refused == nil {
			kept = append(make([]T, 0, len(items)), items[:i]...)
		}
		refused, errs = append(refused, it), append(errs, e)
	}
	if refused == nil {
		return items, nil, nil
	}
	return kept, refused, errs
}

// offsetsFetchedAuthorized is one group's OffsetFetch (fetch) with the
// topics the principal may not DESCRIBE taken out, as Kafka does: left out
// of an all-topics answer, answered TOPIC_AUTHORIZATION_FAILED (offset -1)
// when named.
func offsetsFetchedAuthorized(can func(string) error, topics []kmsg.OffsetFetchRequestGroupTopic, all bool,
	fetch func([]kmsg.OffsetFetchRequestGroupTopic) group.OffsetsFetched) group.OffsetsFetched {
	if all {
		out := fetch(topics)
		out.Topics = slices.DeleteFunc(out.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool { return can(t.Topic) != nil })
		return out
	}
	kept, refused := splitTopics(topics, func(t kmsg.OffsetFetchRequestGroupTopic) string { return t.Topic }, can)
	out := fetch(kept)
	if out.ErrorCode != 0 {
		return out
	}
	for _, t := range refused {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
			rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

// topicsRefusedToTxn is, when a topic of an AddPartitionsToTxn (v0-v3)
// may not be written, every partition's error: TOPIC_AUTHORIZATION_FAILED
// for those topics' partitions, OPERATION_NOT_ATTEMPTED for the others
// (none is added, as in Kafka); nil when every topic may be.
func topicsRefusedToTxn(can func(string) error, parts []txn.TopicPartition) []*kerr.Error {
	var errs []*kerr.Error
	for i, tp := range parts {
		if can(tp.Topic) == nil {
			continue
		}
		if errs == nil {
			errs = make([]*kerr.Error, len(parts))
			for j := range errs {
				errs[j] = kerr.OperationNotAttempted
			}
		}
		errs[i] = kerr.TopicAuthorizationFailed
	}
	return errs
}

// createTopicAuth is the check of CREATE for CreateTopics: on the
// cluster, or else on each topic.
func (b *Broker) createTopicAuth(r *request) func(topic string) error {
	if b.authorized(r, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, clusterName) {
		return func(string) error { return nil }
	}
	return b.topicAuth(r, kmsg.ACLOperationCreate)
}

// refusalResponse answers a request refused whole: e in every error field
// (protocol.ErrorResponse), and for the kinds it does not build, as
// KafkaApis answers them: every partition of a Fetch or WriteTxnMarkers
// (Kafka's follower fetch refusal answers each partition), and
// DescribeLogDirs' top-level error with no directories.
func refusalResponse(req kmsg.Request, e *kerr.Error) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.FetchRequest:
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, e.Code
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.WriteTxnMarkersRequest:
		resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		for _, m := range req.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition, rp.ErrorCode = p, e.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		return resp
	case *kmsg.DescribeLogDirsRequest:
		resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
		resp.ErrorCode = e.Code // v3+; older versions only see no directories
		return resp
	}
	return protocol.ErrorResponse(req, e, "")
}
