package protocol

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testTable() Table {
	return NewTable(
		API{Key: kmsg.Metadata.Int16(), MinVersion: 0, MaxVersion: 12},
		API{Key: kmsg.ApiVersions.Int16(), MinVersion: 0, MaxVersion: 4},
	)
}

func TestNewTableRejectsBadRows(t *testing.T) {
	av := API{Key: kmsg.ApiVersions.Int16(), MaxVersion: 4}
	for name, rows := range map[string][]API{
		"duplicate":       {av, av},
		"unknown key":     {av, {Key: 9999}},
		"beyond kmsg":     {av, {Key: kmsg.Metadata.Int16(), MaxVersion: 99}},
		"inverted":        {av, {Key: kmsg.Metadata.Int16(), MinVersion: 3, MaxVersion: 2}},
		"no api versions": {{Key: kmsg.Metadata.Int16(), MaxVersion: 3}},
	} {
		require.Panics(t, func() { NewTable(rows...) }, name)
	}
	tb := testTable()
	rows := tb.Rows()
	require.Equal(t, kmsg.Metadata.Int16(), rows[0].Key, "sorted by key")
	rows[0].MaxVersion = 1
	a, ok := tb.Lookup(kmsg.Metadata.Int16())
	require.True(t, ok)
	require.Equal(t, int16(12), a.MaxVersion, "Rows returns a copy")
	_, ok = tb.Lookup(kmsg.Produce.Int16())
	require.False(t, ok)
}

func TestErrorResponseCoversEveryKind(t *testing.T) {
	reqs := []kmsg.Request{
		kmsg.NewPtrBrokerRegistrationRequest(), kmsg.NewPtrBrokerHeartbeatRequest(),
		&kmsg.CreateTopicsRequest{Topics: []kmsg.CreateTopicsRequestTopic{{Topic: "t"}}},
		&kmsg.DeleteTopicsRequest{Version: 5, TopicNames: []string{"t"}},
		&kmsg.DeleteTopicsRequest{Version: 6, Topics: []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("t")}}},
		&kmsg.CreatePartitionsRequest{Topics: []kmsg.CreatePartitionsRequestTopic{{Topic: "t"}}},
		kmsg.NewPtrAlterPartitionRequest(), kmsg.NewPtrAllocateProducerIDsRequest(),
		&kmsg.IncrementalAlterConfigsRequest{Resources: []kmsg.IncrementalAlterConfigsRequestResource{{ResourceName: "t"}}},
		&kmsg.AlterConfigsRequest{Resources: []kmsg.AlterConfigsRequestResource{{ResourceName: "t"}}},
		kmsg.NewPtrDescribeQuorumRequest(), kmsg.NewPtrInitProducerIDRequest(),
		&kmsg.ProduceRequest{Topics: []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 2}}}}},
		&kmsg.ListOffsetsRequest{Topics: []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 2}}}}},
		&kmsg.DeleteRecordsRequest{Topics: []kmsg.DeleteRecordsRequestTopic{{Topic: "t", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 2}}}}},
		&kmsg.OffsetForLeaderEpochRequest{Topics: []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 2}}}}},
		kmsg.NewPtrJoinGroupRequest(), kmsg.NewPtrSyncGroupRequest(), kmsg.NewPtrHeartbeatRequest(),
		kmsg.NewPtrLeaveGroupRequest(), kmsg.NewPtrOffsetDeleteRequest(), kmsg.NewPtrConsumerGroupHeartbeatRequest(),
		&kmsg.OffsetCommitRequest{Topics: []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 2}}}}},
		kmsg.NewPtrEndTxnRequest(), kmsg.NewPtrAddOffsetsToTxnRequest(), kmsg.NewPtrListTransactionsRequest(),
		&kmsg.AddPartitionsToTxnRequest{Topics: []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{2}}}},
		&kmsg.AddPartitionsToTxnRequest{Version: 4},
		&kmsg.DescribeTransactionsRequest{TransactionalIDs: []string{"t"}},
		&kmsg.TxnOffsetCommitRequest{Topics: []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 2}}}}},
		&kmsg.AlterPartitionAssignmentsRequest{Topics: []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 2}}}}},
		kmsg.NewPtrListPartitionReassignmentsRequest(),
		&kmsg.ElectLeadersRequest{Topics: []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{2}}}},
		&kmsg.CreateACLsRequest{Creations: []kmsg.CreateACLsRequestCreation{{}}},
		&kmsg.DeleteACLsRequest{Filters: []kmsg.DeleteACLsRequestFilter{{}}},
		kmsg.NewPtrDescribeACLsRequest(),
		&kmsg.AlterUserSCRAMCredentialsRequest{Deletions: []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "a"}},
			Upsertions: []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "a"}, {Name: "b"}}},
		kmsg.NewPtrDescribeUserSCRAMCredentialsRequest(),
		&kmsg.AlterClientQuotasRequest{Entries: []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user"}}}}},
		kmsg.NewPtrDescribeClientQuotasRequest(),
	}
	for _, req := range reqs {
		resp := ErrorResponse(req, kerr.NotController, "why")
		require.Equal(t, req.Key(), resp.Key())
		// The error code appears in the encoding, wherever the kind
		// keeps it.
		enc := resp.AppendTo(nil)
		code := kbin.AppendInt16(nil, kerr.NotController.Code)
		require.Contains(t, string(enc), string(code), "%s carries no error code", kmsg.NameForKey(req.Key()))
	}
	require.Panics(t, func() { ErrorResponse(kmsg.NewPtrSASLHandshakeRequest(), kerr.NotController, "") })
}

// A key answered by two families would be answered by the first only.
func TestErrorFamiliesAreDisjoint(t *testing.T) {
	seen := map[kmsg.Key]int{}
	for i, family := range errorFamilies {
		for key := range family {
			prev, dup := seen[key]
			require.False(t, dup, "%s in families %d and %d", kmsg.NameForKey(key.Int16()), prev, i)
			seen[key] = i
		}
	}
}
