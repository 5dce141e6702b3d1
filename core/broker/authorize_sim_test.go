package broker_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/sim/servertest"
)

// clientPrincipal is the test client's principal; the broker's own
// connections (to itself: markers, verifications) are User:broker, a
// super user.
const clientPrincipal = "User:client"

// authServer is a single-node server with an authorizer, whose ACLs the
// test sets (acls) and whose client connects as User:client.
type authServer struct {
	*servertest.Single
	acls acl.Index
}

func newAuthServer(t *testing.T) *authServer {
	t.Helper()
	policy, err := acl.NewPolicy([]string{"User:broker"}, false)
	require.NoError(t, err)
	h := &authServer{}
	h.Single = servertest.Start(t, 1, func(c *server.Config) {
		c.BrokerListener.LogDir = "/var/lib/strata"
		broker.SetTestAuth(&c.BrokerListener, policy, func(host string) principal.Principal {
			if host == "cli" {
				return principal.Principal{Type: principal.UserType, Name: "client"}
			}
			return principal.Principal{Type: principal.UserType, Name: "broker"}
		}, func() acl.Index { return h.acls })
	})
	return h
}

// allow is an ALLOW binding of op on t:name for the client.
func allow(t kmsg.ACLResourceType, name string, op kmsg.ACLOperation) acl.Binding {
	return acl.Binding{Principal: clientPrincipal, Host: acl.Wildcard, ResourceType: t, ResourceName: name,
		PatternType: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

// set makes bs the client's only ACLs.
func (h *authServer) set(bs ...acl.Binding) {
	h.T.Helper()
	ix, err := acl.Index{}.Add(bs...)
	require.NoError(h.T, err)
	h.acls = ix
}

// asAdmin runs f with the client allowed everything.
func (h *authServer) asAdmin(f func()) {
	h.T.Helper()
	var all []acl.Binding
	for _, t := range []kmsg.ACLResourceType{kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup,
		kmsg.ACLResourceTypeTransactionalId, kmsg.ACLResourceTypeCluster} {
		name := acl.Wildcard
		if t == kmsg.ACLResourceTypeCluster {
			name = "kafka-cluster"
		}
		all = append(all, allow(t, name, kmsg.ACLOperationAll))
	}
	h.set(all...)
	f()
	h.set()
}

var (
	topicRes   = kmsg.ACLResourceTypeTopic
	groupRes   = kmsg.ACLResourceTypeGroup
	txnRes     = kmsg.ACLResourceTypeTransactionalId
	clusterRes = kmsg.ACLResourceTypeCluster
)

// authError is the error Kafka answers for a refusal on a resource type
// (AclEntry.authorizationError).
var authError = map[kmsg.ACLResourceType]*kerr.Error{
	topicRes:   kerr.TopicAuthorizationFailed,
	groupRes:   kerr.GroupAuthorizationFailed,
	txnRes:     kerr.TransactionalIDAuthorizationFailed,
	clusterRes: kerr.ClusterAuthorizationFailed,
}

func isAuthError(code int16) bool {
	for _, e := range authError {
		if e.Code == code {
			return true
		}
	}
	return false
}

// names are one matrix row's resources.
type names struct{ topic, group, txn string }

// authCase is one API of the authorization matrix.
type authCase struct {
	key kmsg.Key
	// req builds the request (a new one each time).
	req func(n names) kmsg.Request
	// code is the error code the row looks at, as Kafka's test
	// (requestKeyToError) does.
	code func(kmsg.Response) int16
	// needs are the ACLs that allow the request (by resource type and
	// operation, on the row's resources).
	needs []need
}

type need struct {
	t  kmsg.ACLResourceType
	op kmsg.ACLOperation
}

func (n names) of(t kmsg.ACLResourceType) string {
	switch t {
	case topicRes:
		return n.topic
	case groupRes:
		return n.group
	case txnRes:
		return n.txn
	}
	return "kafka-cluster"
}

// bindings are c's needs on n's resources.
func (c authCase) bindings(n names) []acl.Binding {
	var out []acl.Binding
	for _, nd := range c.needs {
		out = append(out, allow(nd.t, n.of(nd.t), nd.op))
	}
	return out
}

// describes are DESCRIBE on each resource c needs anything on.
func (c authCase) describes(n names) []acl.Binding {
	var out []acl.Binding
	for _, nd := range c.needs {
		b := allow(nd.t, n.of(nd.t), kmsg.ACLOperationDescribe)
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// describeSuffices: the API needs nothing but DESCRIBE.
func (c authCase) describeSuffices() bool {
	for _, nd := range c.needs {
		if nd.op != kmsg.ACLOperationDescribe {
			return false
		}
	}
	return true
}

// topicOnly: the API's only resource is the topic.
func (c authCase) topicOnly() bool {
	for _, nd := range c.needs {
		if nd.t != topicRes {
			return false
		}
	}
	return len(c.needs) > 0
}

// refusals are the errors a refusal of c may answer.
func (c authCase) refusals() []int16 {
	var out []int16
	for _, nd := range c.needs {
		out = append(out, authError[nd.t].Code)
	}
	return out
}

func needs(ns ...any) []need {
	var out []need
	for i := 0; i < len(ns); i += 2 {
		out = append(out, need{ns[i].(kmsg.ACLResourceType), ns[i+1].(kmsg.ACLOperation)})
	}
	return out
}

// authCases is the matrix: every API the broker serves (a test checks),
// with the ACLs Kafka's AuthorizerIntegrationTest gives it.
// batch is the Produce row's records.
func authCases(batch []byte) []authCase {
	first := func(code int16, more ...int16) int16 {
		if code != 0 {
			return code
		}
		for _, c := range more {
			if c != 0 {
				return c
			}
		}
		return 0
	}
	return []authCase{
		{key: kmsg.ApiVersions, req: func(names) kmsg.Request {
			r := kmsg.NewPtrApiVersionsRequest()
			r.Version = 3
			r.ClientSoftwareName, r.ClientSoftwareVersion = "t", "1"
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ApiVersionsResponse).ErrorCode }},
		{key: kmsg.Metadata, needs: needs(topicRes, kmsg.ACLOperationDescribe), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Version = 12
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr(n.topic)
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.MetadataResponse).Topics[0].ErrorCode }},
		{key: kmsg.Produce, needs: needs(topicRes, kmsg.ACLOperationWrite), req: func(n names) kmsg.Request {
			r := servertest.ProduceRequest(n.topic, 0, batch)
			r.Acks = 1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode }},
		{key: kmsg.Fetch, needs: needs(topicRes, kmsg.ACLOperationRead), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.Version, r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.SessionEpoch, r.ReplicaID = 12, 0, 1, 1<<20, -1, -1
			t := kmsg.NewFetchRequestTopic()
			t.Topic = n.topic
			p := kmsg.NewFetchRequestTopicPartition()
			p.PartitionMaxBytes = 1 << 20
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 {
			fr := r.(*kmsg.FetchResponse)
			return first(fr.ErrorCode, fr.Topics[0].Partitions[0].ErrorCode)
		}},
		{key: kmsg.ListOffsets, needs: needs(topicRes, kmsg.ACLOperationDescribe), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			r.Version = 7
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = n.topic
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Timestamp = -1
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode }},
		{key: kmsg.OffsetForLeaderEpoch, needs: needs(topicRes, kmsg.ACLOperationDescribe), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.Version, r.ReplicaID = 4, -1
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = n.topic
			p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			p.CurrentLeaderEpoch, p.LeaderEpoch = -1, 0
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
		}},
		{key: kmsg.DeleteRecords, needs: needs(topicRes, kmsg.ACLOperationDelete), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			r.Version, r.TimeoutMillis = 2, 30_000
			t := kmsg.NewDeleteRecordsRequestTopic()
			t.Topic = n.topic
			p := kmsg.NewDeleteRecordsRequestTopicPartition()
			p.Offset = 0
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode }},
		{key: kmsg.DescribeProducers, needs: needs(topicRes, kmsg.ACLOperationRead), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			t := kmsg.NewDescribeProducersRequestTopic()
			t.Topic, t.Partitions = n.topic, []int32{0}
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
		}},
		{key: kmsg.DescribeTopicPartitions, needs: needs(topicRes, kmsg.ACLOperationDescribe), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			r.ResponsePartitionLimit = 100
			t := kmsg.NewDescribeTopicPartitionsRequestTopic()
			t.Topic = n.topic
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeTopicPartitionsResponse).Topics[0].ErrorCode }},
		{key: kmsg.DescribeCluster, req: func(names) kmsg.Request {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.Version, r.EndpointType = 1, 1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeClusterResponse).ErrorCode }},
		{key: kmsg.CreateTopics, needs: needs(topicRes, kmsg.ACLOperationCreate), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			r.Version, r.TimeoutMillis = 7, 30_000
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = n.topic, 1, 1
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode }},
		{key: kmsg.DeleteTopics, needs: needs(topicRes, kmsg.ACLOperationDelete), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.Version, r.TimeoutMillis = 6, 30_000
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = kmsg.StringPtr(n.topic)
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode }},
		{key: kmsg.CreatePartitions, needs: needs(topicRes, kmsg.ACLOperationAlter), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.Version, r.TimeoutMillis, r.ValidateOnly = 3, 30_000, true
			t := kmsg.NewCreatePartitionsRequestTopic()
			t.Topic, t.Count = n.topic, 2
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }},
		{key: kmsg.DescribeConfigs, needs: needs(topicRes, kmsg.ACLOperationDescribeConfigs), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.Version = 4
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, n.topic
			r.Resources = append(r.Resources, res)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }},
		{key: kmsg.AlterConfigs, needs: needs(topicRes, kmsg.ACLOperationAlterConfigs), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			r.Version = 2
			res := kmsg.NewAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, n.topic
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("3600000")
			res.Configs = append(res.Configs, c)
			r.Resources = append(r.Resources, res)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode }},
		{key: kmsg.IncrementalAlterConfigs, needs: needs(topicRes, kmsg.ACLOperationAlterConfigs), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.Version = 1
			res := kmsg.NewIncrementalAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, n.topic
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = "retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("3600000")
			res.Configs = append(res.Configs, c)
			r.Resources = append(r.Resources, res)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
		}},
		{key: kmsg.ElectLeaders, needs: needs(clusterRes, kmsg.ACLOperationAlter), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			r.Version, r.TimeoutMillis = 2, 30_000
			t := kmsg.NewElectLeadersRequestTopic()
			t.Topic, t.Partitions = n.topic, []int32{0}
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ElectLeadersResponse).ErrorCode }},
		{key: kmsg.AlterPartitionAssignments, needs: needs(clusterRes, kmsg.ACLOperationAlter), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			r.TimeoutMillis = 30_000
			t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			t.Topic = n.topic
			p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			t.Partitions = append(t.Partitions, p) // nil replicas: cancel
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode }},
		{key: kmsg.ListPartitionReassignments, needs: needs(clusterRes, kmsg.ACLOperationDescribe), req: func(names) kmsg.Request {
			r := kmsg.NewPtrListPartitionReassignmentsRequest()
			r.TimeoutMillis = 30_000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode }},
		{key: kmsg.DescribeLogDirs, needs: needs(clusterRes, kmsg.ACLOperationDescribe), req: func(names) kmsg.Request {
			r := kmsg.NewPtrDescribeLogDirsRequest()
			r.Version = 4
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeLogDirsResponse).ErrorCode }},
		{key: kmsg.DescribeQuorum, needs: needs(clusterRes, kmsg.ACLOperationDescribe), req: func(names) kmsg.Request {
			r := kmsg.NewPtrDescribeQuorumRequest()
			r.Version = 1
			t := kmsg.NewDescribeQuorumRequestTopic()
			t.Topic = "__cluster_metadata"
			t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeQuorumResponse).ErrorCode }},
		{key: kmsg.SASLHandshake, req: func(names) kmsg.Request {
			r := kmsg.NewPtrSASLHandshakeRequest()
			r.Version, r.Mechanism = 1, "PLAIN"
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.SASLHandshakeResponse).ErrorCode }},
		{key: kmsg.SASLAuthenticate, req: func(names) kmsg.Request {
			r := kmsg.NewPtrSASLAuthenticateRequest()
			r.Version = 1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.SASLAuthenticateResponse).ErrorCode }},
		{key: kmsg.DescribeACLs, needs: needs(clusterRes, kmsg.ACLOperationDescribe), req: func(names) kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.Version = 2
			r.ResourceType, r.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			r.Operation, r.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeACLsResponse).ErrorCode }},
		{key: kmsg.CreateACLs, needs: needs(clusterRes, kmsg.ACLOperationAlter), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			r.Version = 2
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, n.topic, kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:someone", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			r.Creations = append(r.Creations, c)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.CreateACLsResponse).Results[0].ErrorCode }},
		{key: kmsg.DeleteACLs, needs: needs(clusterRes, kmsg.ACLOperationAlter), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			r.Version = 2
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr(n.topic), kmsg.ACLResourcePatternTypeLiteral
			f.Principal, f.Operation, f.PermissionType = kmsg.StringPtr("User:someone"), kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			r.Filters = append(r.Filters, f)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteACLsResponse).Results[0].ErrorCode }},
		{key: kmsg.DescribeUserSCRAMCredentials, needs: needs(clusterRes, kmsg.ACLOperationDescribe), req: func(names) kmsg.Request {
			return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode }},
		{key: kmsg.AlterUserSCRAMCredentials, needs: needs(clusterRes, kmsg.ACLOperationAlter), req: func(names) kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name, d.Mechanism = "nobody", 2
			r.Deletions = append(r.Deletions, d)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode }},
		{key: kmsg.DescribeClientQuotas, needs: needs(clusterRes, kmsg.ACLOperationDescribeConfigs), req: func(names) kmsg.Request {
			r := kmsg.NewPtrDescribeClientQuotasRequest()
			r.Version = 1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeClientQuotasResponse).ErrorCode }},
		{key: kmsg.AlterClientQuotas, needs: needs(clusterRes, kmsg.ACLOperationAlterConfigs), req: func(names) kmsg.Request {
			r := kmsg.NewPtrAlterClientQuotasRequest()
			r.Version = 1
			e := kmsg.NewAlterClientQuotasRequestEntry()
			ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
			ent.Type, ent.Name = "user", kmsg.StringPtr("someone")
			e.Entity = append(e.Entity, ent)
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key, op.Value = "producer_byte_rate", 1024
			e.Ops = append(e.Ops, op)
			r.Entries = append(r.Entries, e)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode }},
		{key: kmsg.FindCoordinator, needs: needs(groupRes, kmsg.ACLOperationDescribe), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.Version, r.CoordinatorKeys = 4, []string{n.group}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode }},
		{key: kmsg.JoinGroup, needs: needs(groupRes, kmsg.ACLOperationRead), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Version, r.Group, r.ProtocolType = 5, n.group, "consumer"
			r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10_000, 10_000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			r.Protocols = append(r.Protocols, p)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }},
		{key: kmsg.SyncGroup, needs: needs(groupRes, kmsg.ACLOperationRead), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Version, r.Group, r.MemberID, r.Generation = 3, n.group, "m", 1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode }},
		{key: kmsg.Heartbeat, needs: needs(groupRes, kmsg.ACLOperationRead), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Version, r.Group, r.MemberID, r.Generation = 3, n.group, "m", 1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode }},
		{key: kmsg.LeaveGroup, needs: needs(groupRes, kmsg.ACLOperationRead), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Version, r.Group, r.MemberID = 0, n.group, "m"
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.LeaveGroupResponse).ErrorCode }},
		{key: kmsg.OffsetCommit, needs: needs(groupRes, kmsg.ACLOperationRead, topicRes, kmsg.ACLOperationRead), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Version, r.Group, r.Generation = 8, n.group, -1
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = n.topic
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Offset = 0
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode }},
		{key: kmsg.TxnOffsetCommit, needs: needs(txnRes, kmsg.ACLOperationWrite, groupRes, kmsg.ACLOperationRead, topicRes, kmsg.ACLOperationRead),
			req: func(n names) kmsg.Request {
				r := kmsg.NewPtrTxnOffsetCommitRequest()
				r.Version, r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = 3, n.txn, n.group, 1, 0
				r.Generation = -1
				t := kmsg.NewTxnOffsetCommitRequestTopic()
				t.Topic = n.topic
				t.Partitions = append(t.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
				r.Topics = append(r.Topics, t)
				return r
			}, code: func(r kmsg.Response) int16 {
				return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
			}},
		{key: kmsg.OffsetFetch, needs: needs(groupRes, kmsg.ACLOperationDescribe), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Version = 8
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = n.group
			r.Groups = append(r.Groups, g)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode }},
		{key: kmsg.ListGroups, req: func(names) kmsg.Request {
			r := kmsg.NewPtrListGroupsRequest()
			r.Version = 4
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ListGroupsResponse).ErrorCode }},
		{key: kmsg.DescribeGroups, needs: needs(groupRes, kmsg.ACLOperationDescribe), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Version, r.Groups = 5, []string{n.group}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode }},
		{key: kmsg.DeleteGroups, needs: needs(groupRes, kmsg.ACLOperationDelete), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Version, r.Groups = 2, []string{n.group}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode }},
		{key: kmsg.OffsetDelete, needs: needs(groupRes, kmsg.ACLOperationDelete, topicRes, kmsg.ACLOperationRead), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = n.group
			t := kmsg.NewOffsetDeleteRequestTopic()
			t.Topic = n.topic
			t.Partitions = append(t.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 {
			od := r.(*kmsg.OffsetDeleteResponse)
			if od.ErrorCode != 0 || len(od.Topics) == 0 {
				return od.ErrorCode
			}
			return od.Topics[0].Partitions[0].ErrorCode
		}},
		{key: kmsg.ConsumerGroupHeartbeat, needs: needs(groupRes, kmsg.ACLOperationRead, topicRes, kmsg.ACLOperationDescribe),
			req: func(n names) kmsg.Request {
				r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				r.Version, r.Group, r.MemberID, r.MemberEpoch = 1, n.group, "m-"+n.group, 0
				r.RebalanceTimeoutMillis, r.SubscribedTopicNames = 10_000, []string{n.topic}
				r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				return r
			}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode }},
		{key: kmsg.ConsumerGroupDescribe, needs: needs(groupRes, kmsg.ACLOperationDescribe), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.Groups = []string{n.group}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode }},
		{key: kmsg.InitProducerID, needs: needs(txnRes, kmsg.ACLOperationWrite), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.Version, r.TransactionalID, r.TransactionTimeoutMillis = 4, kmsg.StringPtr(n.txn), 60_000
			r.ProducerID, r.ProducerEpoch = -1, -1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }},
		{key: kmsg.AddPartitionsToTxn, needs: needs(txnRes, kmsg.ACLOperationWrite, topicRes, kmsg.ACLOperationWrite), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch = 3, n.txn, 1, 0
			t := kmsg.NewAddPartitionsToTxnRequestTopic()
			t.Topic, t.Partitions = n.topic, []int32{0}
			r.Topics = append(r.Topics, t)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
		}},
		{key: kmsg.AddOffsetsToTxn, needs: needs(txnRes, kmsg.ACLOperationWrite, groupRes, kmsg.ACLOperationRead), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = 3, n.txn, 1, 0, n.group
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }},
		{key: kmsg.EndTxn, needs: needs(txnRes, kmsg.ACLOperationWrite), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch = 3, n.txn, 1, 0
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }},
		{key: kmsg.WriteTxnMarkers, needs: needs(clusterRes, kmsg.ACLOperationClusterAction), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrWriteTxnMarkersRequest()
			r.Version = 1
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed = 1, 0, false
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic, t.Partitions = n.topic, []int32{0}
			m.Topics = append(m.Topics, t)
			r.Markers = append(r.Markers, m)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
		}},
		{key: kmsg.DescribeTransactions, needs: needs(txnRes, kmsg.ACLOperationDescribe), req: func(n names) kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{n.txn}
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
		}},
		{key: kmsg.ListTransactions, req: func(names) kmsg.Request {
			return kmsg.NewPtrListTransactionsRequest()
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ListTransactionsResponse).ErrorCode }},
	}
}

// TestAuthorizationMatrixCoversEveryAPI: the matrix has a row for each
// API the broker serves, once.
func TestAuthorizationMatrixCoversEveryAPI(t *testing.T) {
	var rows []int16
	for _, c := range authCases(nil) {
		require.NotContains(t, rows, c.key.Int16(), "%s twice", kmsg.NameForKey(c.key.Int16()))
		rows = append(rows, c.key.Int16())
	}
	var served []int16
	for _, a := range broker.APIs().Rows() {
		served = append(served, a.Key)
	}
	slices.Sort(rows)
	slices.Sort(served)
	require.Equal(t, served, rows)
}

// TestAuthorizationMatrix runs Kafka's AuthorizerIntegrationTest steps
// for every API, with its topic present and absent: without ACLs the API
// answers its refusal; with DESCRIBE on its resources only, its refusal
// unless DESCRIBE is all it needs; with the ACLs it needs, no
// authorization error (and, for an API whose only resource is the topic,
// UNKNOWN_TOPIC_OR_PARTITION when the topic is absent, the same answer
// as... an existing one would give had it not been refused: the refusal
// never says whether the topic exists).
func TestAuthorizationMatrix(t *testing.T) {
	h := newAuthServer(t)
	cases := authCases(h.Batch(nil, "v"))
	h.asAdmin(func() {
		for _, c := range cases {
			h.CreateTopic("p-"+kmsg.NameForKey(c.key.Int16()), 1, nil)
		}
	})
	for _, present := range []bool{true, false} {
		for _, c := range cases {
			name := kmsg.NameForKey(c.key.Int16())
			t.Run(fmt.Sprintf("%s/present=%v", name, present), func(t *testing.T) {
				n := names{topic: "a-" + name, group: "g-" + name, txn: "x-" + name}
				if present {
					n.topic = "p-" + name
				}
				send := func() int16 { return c.code(h.Do(c.req(n))) }
				refused := func(step string) {
					code := send()
					require.Contains(t, c.refusals(), code, "%s: %v", step, kerr.ErrorForCode(code))
				}
				allowed := func(step string) {
					code := send()
					require.False(t, isAuthError(code), "%s: %v", step, kerr.ErrorForCode(code))
					if !present && c.topicOnly() && c.key != kmsg.CreateTopics {
						require.Equal(t, kerr.UnknownTopicOrPartition.Code, code, "%s: %v", step, kerr.ErrorForCode(code))
					}
				}
				if len(c.needs) == 0 {
					h.set()
					allowed("no ACL")
					return
				}
				h.set()
				refused("no ACL")
				h.set(c.describes(n)...)
				if c.describeSuffices() {
					allowed("DESCRIBE only")
				} else {
					refused("DESCRIBE only")
				}
				h.set(c.bindings(n)...)
				allowed("the ACLs it needs")
			})
		}
	}
}

func metadataOf(h *authServer, version int16, autoCreate bool, topics ...string) *kmsg.MetadataResponse {
	r := kmsg.NewPtrMetadataRequest()
	r.Version, r.AllowAutoTopicCreation = version, autoCreate
	r.IncludeTopicAuthorizedOperations = true
	r.IncludeClusterAuthorizedOperations = version <= 10
	if topics != nil {
		r.Topics = []kmsg.MetadataRequestTopic{}
	}
	for _, name := range topics {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(name)
		r.Topics = append(r.Topics, t)
	}
	return h.Do(r).(*kmsg.MetadataResponse)
}

func topicNames(resp *kmsg.MetadataResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		out = append(out, *t.Topic)
	}
	slices.Sort(out)
	return out
}

// TestMetadataHidesTopicsWithoutDescribe: an all-topics Metadata lists
// only the topics the principal may DESCRIBE, silently; a named one it may
// not is TOPIC_AUTHORIZATION_FAILED whether it exists or not; authorized
// operations are reported per topic and, to a principal that may
// DESCRIBE the cluster, for the cluster.
func TestMetadataHidesTopicsWithoutDescribe(t *testing.T) {
	h := newAuthServer(t)
	h.asAdmin(func() {
		h.CreateTopic("seen", 1, nil)
		h.CreateTopic("hidden", 1, nil)
	})
	h.set(allow(topicRes, "seen", kmsg.ACLOperationRead))
	for _, v := range []int16{1, 8, 10, 12} {
		all := metadataOf(h, v, false)
		require.Equal(t, []string{"seen"}, topicNames(all), "v%d", v)
		if v >= 8 {
			read, describe := int32(1)<<kmsg.ACLOperationRead, int32(1)<<kmsg.ACLOperationDescribe
			require.Equal(t, read|describe, all.Topics[0].AuthorizedOperations, "v%d", v)
		}
		if v >= 8 && v <= 10 {
			require.Zero(t, all.AuthorizedOperations, "no DESCRIBE on the cluster")
		}
		named := metadataOf(h, v, false, "hidden", "absent", "seen")
		codes := map[string]int16{}
		for _, tp := range named.Topics {
			codes[*tp.Topic] = tp.ErrorCode
		}
		require.Equal(t, map[string]int16{"hidden": kerr.TopicAuthorizationFailed.Code,
			"absent": kerr.TopicAuthorizationFailed.Code, "seen": 0}, codes, "v%d", v)
	}
	h.set(allow(topicRes, "seen", kmsg.ACLOperationRead), allow(clusterRes, "kafka-cluster", kmsg.ACLOperationDescribe))
	require.Equal(t, int32(1)<<kmsg.ACLOperationDescribe, metadataOf(h, 10, false).AuthorizedOperations)

	// Not asked for: Kafka's INT32_MIN.
	r := kmsg.NewPtrMetadataRequest()
	r.Version = 10
	resp := h.Do(r).(*kmsg.MetadataResponse)
	require.Equal(t, int32(math.MinInt32), resp.AuthorizedOperations)
	require.Equal(t, int32(math.MinInt32), resp.Topics[0].AuthorizedOperations)
}

// TestMetadataAutoCreationNeedsCreate: a missing topic the principal may
// DESCRIBE but not CREATE is TOPIC_AUTHORIZATION_FAILED and not created;
// with CREATE on the topic (or the cluster) it is created.
func TestMetadataAutoCreationNeedsCreate(t *testing.T) {
	h := newAuthServer(t)
	h.set(allow(topicRes, "auto", kmsg.ACLOperationDescribe))
	resp := metadataOf(h, 12, true, "auto")
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.Topics[0].ErrorCode)
	h.RunUntil("a while", func() bool { return h.ClientEnv().Monotonic() > 2*time.Second })
	_, err := h.Server.Partitions().Lookup("auto", 0)
	require.Error(t, err, "not created")

	h.set(allow(topicRes, "auto", kmsg.ACLOperationDescribe), allow(topicRes, "auto", kmsg.ACLOperationCreate))
	require.Equal(t, kerr.LeaderNotAvailable.Code, metadataOf(h, 12, true, "auto").Topics[0].ErrorCode)
	h.WaitServing("auto", 1)
}

// TestCreateTopicsOnAnExistingTopicWithoutCreate: CREATE refused answers
// TOPIC_AUTHORIZATION_FAILED, not TOPIC_ALREADY_EXISTS, so a principal
// cannot learn which topics exist; CREATE on the cluster allows any.
func TestCreateTopicsOnAnExistingTopicWithoutCreate(t *testing.T) {
	h := newAuthServer(t)
	h.asAdmin(func() { h.CreateTopic("exists", 1, nil) })
	create := func(names ...string) map[string]int16 {
		r := kmsg.NewPtrCreateTopicsRequest()
		r.Version, r.TimeoutMillis = 7, 30_000
		for _, name := range names {
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = name, 1, 1
			r.Topics = append(r.Topics, t)
		}
		out := map[string]int16{}
		for _, rt := range h.Do(r).(*kmsg.CreateTopicsResponse).Topics {
			out[rt.Topic] = rt.ErrorCode
			if rt.ErrorCode == 0 {
				// Created, but its configs are DESCRIBE_CONFIGS's.
				require.Equal(t, kerr.TopicAuthorizationFailed.Code, rt.ConfigErrorCode, rt.Topic)
				require.Empty(t, rt.Configs, rt.Topic)
			}
		}
		return out
	}
	h.set(allow(topicRes, "mine", kmsg.ACLOperationCreate))
	require.Equal(t, map[string]int16{"exists": kerr.TopicAuthorizationFailed.Code, "other": kerr.TopicAuthorizationFailed.Code,
		"mine": 0}, create("exists", "other", "mine"))
	h.set(allow(clusterRes, "kafka-cluster", kmsg.ACLOperationCreate))
	require.Equal(t, map[string]int16{"exists": kerr.TopicAlreadyExists.Code, "other": 0}, create("exists", "other"))
}

// TestIdempotentProducerAuthorization (KIP-679): InitProducerId without a
// transactional id needs IDEMPOTENT_WRITE on the cluster or WRITE on any
// topic that no DENY covers.
func TestIdempotentProducerAuthorization(t *testing.T) {
	h := newAuthServer(t)
	deny := func(b acl.Binding) acl.Binding {
		b.Permission = kmsg.ACLPermissionTypeDeny
		return b
	}
	prefixed := func(b acl.Binding) acl.Binding {
		b.PatternType = kmsg.ACLResourcePatternTypePrefixed
		return b
	}
	for _, tc := range []struct {
		name string
		acls []acl.Binding
		want *kerr.Error
	}{
		{"no ACL", nil, kerr.ClusterAuthorizationFailed},
		{"IDEMPOTENT_WRITE on the cluster", []acl.Binding{allow(clusterRes, "kafka-cluster", kmsg.ACLOperationIdempotentWrite)}, nil},
		{"WRITE on one topic", []acl.Binding{allow(topicRes, "t", kmsg.ACLOperationWrite)}, nil},
		{"ALL on a prefix", []acl.Binding{prefixed(allow(topicRes, "orders.", kmsg.ACLOperationAll))}, nil},
		{"WRITE on every topic", []acl.Binding{allow(topicRes, acl.Wildcard, kmsg.ACLOperationWrite)}, nil},
		{"READ on a topic", []acl.Binding{allow(topicRes, "t", kmsg.ACLOperationRead)}, kerr.ClusterAuthorizationFailed},
		{"WRITE denied on the same topic", []acl.Binding{allow(topicRes, "t", kmsg.ACLOperationWrite),
			deny(allow(topicRes, "t", kmsg.ACLOperationWrite))}, kerr.ClusterAuthorizationFailed},
		{"WRITE denied by a prefix", []acl.Binding{allow(topicRes, "orders.eu", kmsg.ACLOperationWrite),
			deny(prefixed(allow(topicRes, "orders", kmsg.ACLOperationWrite)))}, kerr.ClusterAuthorizationFailed},
		{"WRITE denied on every topic", []acl.Binding{allow(topicRes, "t", kmsg.ACLOperationWrite),
			deny(allow(topicRes, acl.Wildcard, kmsg.ACLOperationWrite))}, kerr.ClusterAuthorizationFailed},
		{"a denied topic beside an allowed one", []acl.Binding{allow(topicRes, "t", kmsg.ACLOperationWrite),
			allow(topicRes, "u", kmsg.ACLOperationWrite), deny(allow(topicRes, "t", kmsg.ACLOperationWrite))}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.set(tc.acls...)
			r := kmsg.NewPtrInitProducerIDRequest()
			r.Version, r.ProducerID, r.ProducerEpoch = 4, -1, -1
			resp := h.Do(r).(*kmsg.InitProducerIDResponse)
			if tc.want != nil {
				require.Equal(t, tc.want.Code, resp.ErrorCode)
			} else {
				require.Zero(t, resp.ErrorCode, "%v", kerr.ErrorForCode(resp.ErrorCode))
				require.GreaterOrEqual(t, resp.ProducerID, int64(0))
			}
		})
	}
}

func fetchByID(h *authServer, id [16]byte, replica int32) kmsg.FetchResponseTopicPartition {
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.SessionEpoch = 13, 0, 1, 1<<20, -1
	r.ReplicaID = replica
	t := kmsg.NewFetchRequestTopic()
	t.TopicID = id
	p := kmsg.NewFetchRequestTopicPartition()
	p.PartitionMaxBytes, p.CurrentLeaderEpoch, p.LastFetchedEpoch = 1<<20, -1, -1
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	resp := h.Do(r).(*kmsg.FetchResponse)
	require.Zero(h.T, resp.ErrorCode)
	require.Equal(h.T, id, resp.Topics[0].TopicID)
	return resp.Topics[0].Partitions[0]
}

// TestFetchByTopicIDAuthorization: Fetch v13+ answers an unknown topic id
// UNKNOWN_TOPIC_ID whether or not the principal may READ it (the id
// cannot be resolved to a name, so nothing is decided or leaked); a known
// id without READ is TOPIC_AUTHORIZATION_FAILED, as Kafka (ids are not
// secret, names are). A follower's fetch (replica id >= 0) needs
// CLUSTER_ACTION, or every partition is TOPIC_AUTHORIZATION_FAILED.
func TestFetchByTopicIDAuthorization(t *testing.T) {
	h := newAuthServer(t)
	h.asAdmin(func() { h.CreateTopic("t", 1, nil) })
	img := h.Server.Image()
	ti, ok := img.TopicByName("t")
	require.True(t, ok)
	known, unknown := [16]byte(ti.ID()), [16]byte{1, 2, 3}

	// Without READ, a known id is answered as an unknown one: the answer
	// never tells whether the id's topic exists.
	h.set()
	require.Equal(t, kerr.UnknownTopicID.Code, fetchByID(h, unknown, -1).ErrorCode)
	require.Equal(t, kerr.UnknownTopicID.Code, fetchByID(h, known, -1).ErrorCode)
	h.set(allow(topicRes, acl.Wildcard, kmsg.ACLOperationRead))
	require.Equal(t, kerr.UnknownTopicID.Code, fetchByID(h, unknown, -1).ErrorCode)
	require.Zero(t, fetchByID(h, known, -1).ErrorCode)

	// A follower's fetch, from a principal without CLUSTER_ACTION.
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, fetchByID(h, known, 2).ErrorCode)
	h.set(allow(clusterRes, "kafka-cluster", kmsg.ACLOperationClusterAction))
	require.False(t, isAuthError(fetchByID(h, known, 2).ErrorCode))
}

// TestTransactionalProduceNeedsTheTransactionalID: a produce with a
// transactional id the principal may not WRITE is refused whole,
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, even on topics it may write.
func TestTransactionalProduceNeedsTheTransactionalID(t *testing.T) {
	h := newAuthServer(t)
	h.asAdmin(func() { h.CreateTopic("t", 1, nil) })
	h.set(allow(topicRes, "t", kmsg.ACLOperationWrite))
	r := servertest.ProduceRequest("t", 0, h.Batch(nil, "v"))
	r.TransactionID = kmsg.StringPtr("tx")
	got := h.Do(r).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	require.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, got.ErrorCode)
	// And a plain produce is answered per topic.
	h.set()
	got = h.Produce("t", 0, "v")
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, got.ErrorCode)

	// An acks=0 one, refused whole, closes its connection (no answer is
	// read), as Kafka does.
	h.set(allow(topicRes, "t", kmsg.ACLOperationWrite))
	var c env.Conn
	closed, answers := false, 0
	h.ClientEnv().Net().Dial("n1:9092", func(conn env.Conn, err error) {
		require.NoError(t, err)
		c = conn
		c.OnFrame(func([]byte) { answers++ })
		c.OnClose(func(error) { closed = true })
	})
	h.RunUntil("a connection", func() bool { return c != nil })
	r.Acks = 0
	require.NoError(t, c.Send(wire.EncodeRequest(kmsg.NewRequestFormatter(kmsg.FormatterClientID("acks0")), r, 1)))
	h.RunUntil("the connection closed", func() bool { return closed })
	require.Zero(t, answers)
}

// TestListsShowOnlyWhatThePrincipalMayDescribe: ListGroups without
// DESCRIBE on the cluster lists the groups the principal may DESCRIBE;
// OffsetFetch of all a group's topics leaves out those it may not
// DESCRIBE, and answers a named one TOPIC_AUTHORIZATION_FAILED.
func TestListsShowOnlyWhatThePrincipalMayDescribe(t *testing.T) {
	h := newAuthServer(t)
	h.asAdmin(func() {
		h.CreateTopic("a", 1, nil)
		h.CreateTopic("b", 1, nil)
		for _, g := range []string{"g1", "g2"} {
			h.RunUntil("the coordinator of "+g, func() bool {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.Version, r.CoordinatorKeys = 4, []string{g}
				return h.Do(r).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode == 0
			})
			h.RunUntil("offsets committed for "+g, func() bool {
				r := kmsg.NewPtrOffsetCommitRequest()
				r.Version, r.Group, r.Generation = 8, g, -1
				for _, topic := range []string{"a", "b"} {
					rt := kmsg.NewOffsetCommitRequestTopic()
					rt.Topic = topic
					rp := kmsg.NewOffsetCommitRequestTopicPartition()
					rp.Offset = 5
					rt.Partitions = append(rt.Partitions, rp)
					r.Topics = append(r.Topics, rt)
				}
				resp := h.Do(r).(*kmsg.OffsetCommitResponse)
				return resp.Topics[0].Partitions[0].ErrorCode == 0 && resp.Topics[1].Partitions[0].ErrorCode == 0
			})
		}
	})
	listed := func() []string {
		r := kmsg.NewPtrListGroupsRequest()
		r.Version = 4
		var out []string
		for _, g := range h.Do(r).(*kmsg.ListGroupsResponse).Groups {
			out = append(out, g.Group)
		}
		slices.Sort(out)
		return out
	}
	h.set(allow(groupRes, "g1", kmsg.ACLOperationDescribe), allow(topicRes, "a", kmsg.ACLOperationDescribe))
	require.Equal(t, []string{"g1"}, listed())
	h.set(allow(clusterRes, "kafka-cluster", kmsg.ACLOperationDescribe))
	require.Equal(t, []string{"g1", "g2"}, listed())

	h.set(allow(groupRes, "g1", kmsg.ACLOperationDescribe), allow(topicRes, "a", kmsg.ACLOperationDescribe))
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups, dg.IncludeAuthorizedOperations = 5, []string{"g1", "g2"}, true
	described := h.Do(dg).(*kmsg.DescribeGroupsResponse).Groups
	require.Zero(t, described[0].ErrorCode)
	require.Equal(t, int32(1)<<kmsg.ACLOperationDescribe, described[0].AuthorizedOperations)
	require.Equal(t, kerr.GroupAuthorizationFailed.Code, described[1].ErrorCode)

	fetch := func(topics ...string) kmsg.OffsetFetchResponseGroup {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = 8
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "g1"
		for _, topic := range topics {
			g.Topics = append(g.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: topic, Partitions: []int32{0}})
		}
		r.Groups = append(r.Groups, g)
		return h.Do(r).(*kmsg.OffsetFetchResponse).Groups[0]
	}
	all := fetch()
	require.Zero(t, all.ErrorCode)
	require.Len(t, all.Topics, 1)
	require.Equal(t, "a", all.Topics[0].Topic)
	require.Equal(t, int64(5), all.Topics[0].Partitions[0].Offset)
	named := fetch("a", "b")
	require.Len(t, named.Topics, 2)
	for _, rt := range named.Topics {
		if rt.Topic == "b" {
			require.Equal(t, kerr.TopicAuthorizationFailed.Code, rt.Partitions[0].ErrorCode)
			require.Equal(t, int64(-1), rt.Partitions[0].Offset)
		} else {
			require.Equal(t, int64(5), rt.Partitions[0].Offset)
		}
	}
}

// TestDeleteTopicsByIDAuthorization: an unknown id is UNKNOWN_TOPIC_ID;
// a known one without DESCRIBE is TOPIC_AUTHORIZATION_FAILED without its
// name; with DESCRIBE but not DELETE, with its name.
func TestDeleteTopicsByIDAuthorization(t *testing.T) {
	h := newAuthServer(t)
	h.asAdmin(func() { h.CreateTopic("t", 1, nil) })
	ti, ok := h.Server.Image().TopicByName("t")
	require.True(t, ok)
	del := func(id [16]byte) kmsg.DeleteTopicsResponseTopic {
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.Version, r.TimeoutMillis = 6, 30_000
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.TopicID = id
		r.Topics = append(r.Topics, rt)
		return h.Do(r).(*kmsg.DeleteTopicsResponse).Topics[0]
	}
	h.set()
	require.Equal(t, kerr.UnknownTopicID.Code, del([16]byte{9}).ErrorCode)
	got := del([16]byte(ti.ID()))
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, got.ErrorCode)
	require.Nil(t, got.Topic)
	h.set(allow(topicRes, "t", kmsg.ACLOperationDescribe))
	got = del([16]byte(ti.ID()))
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, got.ErrorCode)
	require.Equal(t, "t", *got.Topic)
	h.set(allow(topicRes, "t", kmsg.ACLOperationDelete))
	require.Zero(t, del([16]byte(ti.ID())).ErrorCode)
}

// TestPerTopicRefusalsInOneRequest: a request naming topics the principal
// may and may not use answers each its own error: Produce appends to the
// allowed one; AddPartitionsToTxn (v3) refuses the unwritable topic and
// attempts none (OPERATION_NOT_ATTEMPTED for the rest), as Kafka.
func TestPerTopicRefusalsInOneRequest(t *testing.T) {
	h := newAuthServer(t)
	h.asAdmin(func() {
		h.CreateTopic("yes", 1, nil)
		h.CreateTopic("no", 1, nil)
	})
	h.set(allow(topicRes, "yes", kmsg.ACLOperationWrite), allow(txnRes, "tx", kmsg.ACLOperationWrite))
	batch := h.Batch(nil, "v")
	r := servertest.ProduceRequest("yes", 0, batch)
	other := servertest.ProduceRequest("no", 0, batch).Topics[0]
	r.Topics = append(r.Topics, other)
	resp := h.Do(r).(*kmsg.ProduceResponse)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.Topics[1].Partitions[0].ErrorCode)

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, "tx", 1, 0
	for _, topic := range []string{"yes", "no"} {
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		add.Topics = append(add.Topics, rt)
	}
	codes := map[string]int16{}
	for _, rt := range h.Do(add).(*kmsg.AddPartitionsToTxnResponse).Topics {
		codes[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	require.Equal(t, map[string]int16{"yes": kerr.OperationNotAttempted.Code, "no": kerr.TopicAuthorizationFailed.Code}, codes)
}

// TestDescribeClusterAuthorizedOperations: asked for, the cluster's
// operations go only to a principal that may DESCRIBE the cluster (0 to
// others, as Kafka); not asked for, INT32_MIN.
func TestDescribeClusterAuthorizedOperations(t *testing.T) {
	h := newAuthServer(t)
	describe := func(include bool) int32 {
		r := kmsg.NewPtrDescribeClusterRequest()
		r.Version, r.EndpointType, r.IncludeClusterAuthorizedOperations = 1, 1, include
		resp := h.Do(r).(*kmsg.DescribeClusterResponse)
		require.Zero(t, resp.ErrorCode)
		return resp.ClusterAuthorizedOperations
	}
	h.set(allow(clusterRes, "kafka-cluster", kmsg.ACLOperationClusterAction))
	require.Zero(t, describe(true))
	require.Equal(t, int32(math.MinInt32), describe(false))
	// ALTER implies DESCRIBE.
	h.set(allow(clusterRes, "kafka-cluster", kmsg.ACLOperationClusterAction), allow(clusterRes, "kafka-cluster", kmsg.ACLOperationAlter))
	require.Equal(t, int32(1)<<kmsg.ACLOperationClusterAction|int32(1)<<kmsg.ACLOperationAlter|int32(1)<<kmsg.ACLOperationDescribe,
		describe(true))
}
