package broker_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/server"
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
