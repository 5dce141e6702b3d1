package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/wire"
)

// apiHandler is one row of the broker's API table: the key, the versions
// served and the handler, which must answer every request it is given
// exactly once (respond, respondParts or noResponse), now or later.
type apiHandler struct {
	protocol.API
	handle func(b *Broker, r *request)
	// barrier holds back the connection's later requests until this one
	// is answered (requests passed to the metadata quorum).
	barrier bool
	// why the version range stops where it does.
	why string
	// countsErrors: the handler counts its response's error codes itself
	// (request.m.countError) as it builds it, instead of the response
	// being walked for them.
	countsErrors bool
}

// apis is the broker's one table of API keys, versions and handlers;
// ApiVersions answers from it, ParseRequest accepts only what it lists,
// and docs/compatibility.md is checked against it by a test. Adding a row
// is a promise that its handler serves every version in the range.
var apis = []apiHandler{
	{API: listedFromV0(api(kmsg.Produce, 3, 13)), handle: handleProduce, countsErrors: true,
		why: "from the KIP-896 baseline (v3, Kafka 2.1: RecordBatch v2 only) to every version kmsg encodes (v13 names topics by id); " +
			"listed from v0 as Kafka 4 does (KAFKA-18659), or librdkafka before 2.8 never compresses with gzip or snappy"},
	{API: api(kmsg.Fetch, 4, 18), handle: handleFetch, countsErrors: true,
		why: "from the KIP-896 baseline (v4) to every version kmsg encodes; sessions from v7 (KIP-227), topic ids from v13"},
	{API: api(kmsg.InitProducerID, 0, 5), handle: handleInitProducerID,
		why: "every version kmsg encodes (v3+: KIP-360's producer id and epoch); transactional ids go to the transaction coordinator"},
	{API: api(kmsg.AddPartitionsToTxn, 0, 5), handle: handleAddPartitionsToTxn,
		why: "every version kmsg encodes (v4+: batched transactions and KIP-890 part 1's verifyOnly, from partition leaders)"},
	{API: api(kmsg.AddOffsetsToTxn, 0, 4), handle: handleAddOffsetsToTxn,
		why: "every version kmsg encodes"},
	{API: api(kmsg.EndTxn, 0, 5), handle: handleEndTxn,
		why: "every version kmsg encodes (v5: KIP-890 part 2, the epoch bumped at every end and returned)"},
	{API: api(kmsg.DescribeTransactions, 0, 0), handle: handleDescribeTransactions,
		why: "every version kmsg encodes (KIP-664)"},
	{API: api(kmsg.DescribeProducers, 0, 0), handle: handleDescribeProducers,
		why: "every version kmsg encodes (KIP-664), answered by the partition leader"},
	{API: api(kmsg.ListTransactions, 0, 2), handle: handleListTransactions,
		why: "every version kmsg encodes (v1: duration filter, v2: transactional id pattern as a Go RE2 expression)"},
	{API: api(kmsg.ListOffsets, 1, 11), handle: handleListOffsets,
		why: "from the KIP-896 baseline (v1) to every version kmsg encodes"},
	{API: api(kmsg.WriteTxnMarkers, 0, 2), handle: handleWriteTxnMarkers,
		why: "the partition side of transactions (v1: flexible); v2 (KIP-1228's transaction version, Kafka 4.2) not yet"},
	{API: api(kmsg.OffsetForLeaderEpoch, 2, 4), handle: handleOffsetForLeaderEpoch,
		why: "from the KIP-896 baseline (v2: KIP-320's current leader epoch) to every version kmsg encodes"},
	{API: api(kmsg.DeleteRecords, 0, 2), handle: handleDeleteRecords,
		why: "every version kmsg encodes"},
	{API: api(kmsg.Metadata, 0, 13), handle: handleMetadata,
		why: "every version kmsg encodes; v13 (KIP-1102) only adds a top-level error code"},
	{API: api(kmsg.ApiVersions, 0, 4), handle: handleApiVersions,
		why: "v4 is Kafka 4's newest stable version; a v5 request (KIP-1242) gets the KIP-511 answer and retries at v4"},
	{API: api(kmsg.CreateTopics, 0, 7), handle: handleCreateTopics, barrier: true,
		why: "passed to the active controller, which answers every version kmsg encodes"},
	{API: api(kmsg.DeleteTopics, 0, 6), handle: handleController, barrier: true,
		why: "as CreateTopics"},
	{API: api(kmsg.CreatePartitions, 0, 3), handle: handleController, barrier: true,
		why: "as CreateTopics"},
	{API: api(kmsg.DescribeConfigs, 1, 4), handle: handleDescribeConfigs,
		why: "from the KIP-896 baseline (v1: config sources and synonyms) to every version kmsg encodes"},
	{API: api(kmsg.AlterConfigs, 0, 2), handle: handleController, barrier: true,
		why: "as CreateTopics (topic resources)"},
	{API: api(kmsg.IncrementalAlterConfigs, 0, 1), handle: handleController, barrier: true,
		why: "as CreateTopics (topic resources)"},
	{API: api(kmsg.ElectLeaders, 0, 2), handle: handleController, barrier: true,
		why: "as CreateTopics: preferred and unclean elections by the active controller"},
	{API: api(kmsg.AlterPartitionAssignments, 0, 0), handle: handleController, barrier: true,
		why: "as CreateTopics: reassignments by the active controller (v1's replication factor change, KIP-1101, is not served)"},
	{API: api(kmsg.ListPartitionReassignments, 0, 0), handle: handleController, barrier: true,
		why: "as CreateTopics"},
	{API: api(kmsg.DescribeLogDirs, 1, 5), handle: handleDescribeLogDirs,
		why: "from the KIP-896 baseline (v1) to every version kmsg encodes"},
	{API: api(kmsg.DescribeQuorum, 0, 2), handle: handleController, barrier: true,
		why: "forwarded to the quorum leader, whose encoder covers every version"},
	{API: api(kmsg.DescribeCluster, 0, 2), handle: handleDescribeCluster,
		why: "every version kmsg encodes (v1: endpoint type, KIP-919; v2: fenced brokers)"},
	{API: api(kmsg.DescribeTopicPartitions, 0, 0), handle: handleDescribeTopicPartitions,
		why: "every version kmsg encodes (KIP-966)"},
	{API: api(kmsg.FindCoordinator, 0, 6), handle: handleFindCoordinator,
		why: "every version kmsg encodes (v4+: batched keys); groups (key type 0) and transactions (key type 1)"},
	{API: api(kmsg.JoinGroup, 0, 9), handle: handleJoinGroup,
		why: "every version kmsg encodes (v4+: KIP-394 member ids, v5+: static members, v9: KIP-814's skip assignment)"},
	{API: api(kmsg.SyncGroup, 0, 5), handle: handleSyncGroup,
		why: "every version kmsg encodes"},
	{API: api(kmsg.Heartbeat, 0, 4), handle: handleHeartbeat,
		why: "every version kmsg encodes"},
	{API: api(kmsg.LeaveGroup, 0, 5), handle: handleLeaveGroup,
		why: "every version kmsg encodes (v3+: batches of members)"},
	{API: api(kmsg.OffsetCommit, 2, 9), handle: handleOffsetCommit,
		why: "from the KIP-896 baseline (v2) to v9; v10 names topics by id (KIP-848's consumers), not served yet"},
	{API: api(kmsg.TxnOffsetCommit, 0, 5), handle: handleTxnOffsetCommit,
		why: "v0-v5 (v3+: the member, KIP-447; v5: KIP-890 part 2's implicit AddOffsetsToTxn under transaction.version 2); v6 names topics by id, not served yet"},
	{API: api(kmsg.OffsetFetch, 1, 9), handle: handleOffsetFetch,
		why: "from the KIP-896 baseline (v1) to v9 (v8+: batched groups); v10 names topics by id, not served yet"},
	{API: api(kmsg.ListGroups, 0, 5), handle: handleListGroups,
		why: "every version kmsg encodes (v4: state filter, v5: type filter)"},
	{API: api(kmsg.DescribeGroups, 0, 5), handle: handleDescribeGroups,
		why: "to v5; v6 (KIP-1043's error messages) not yet"},
	{API: api(kmsg.DeleteGroups, 0, 2), handle: handleDeleteGroups,
		why: "to v2; v3 (KIP-1043) not yet"},
	{API: api(kmsg.OffsetDelete, 0, 0), handle: handleOffsetDelete,
		why: "every version kmsg encodes"},
	{API: api(kmsg.ConsumerGroupHeartbeat, 0, 1), handle: handleConsumerGroupHeartbeat,
		why: "every version kmsg encodes (KIP-848; v1: regex subscriptions, client-chosen member ids)"},
	{API: api(kmsg.ConsumerGroupDescribe, 0, 1), handle: handleConsumerGroupDescribe,
		why: "every version kmsg encodes (v1: member type)"},
	{API: api(kmsg.SASLHandshake, 0, 1), handle: handleSaslHandshake,
		why: "every version kmsg encodes (v0 is followed by raw tokens: kafka-python 2.0 still sends it)"},
	{API: api(kmsg.SASLAuthenticate, 0, 2), handle: handleSaslAuthenticate,
		why: "every version kmsg encodes (v1: KIP-368's session lifetime; v2 adds nothing the broker uses)"},
	{API: api(kmsg.DescribeACLs, 0, 3), handle: handleDescribeACLs,
		why: "every version kmsg encodes (v1: KIP-290 pattern types), answered from the image's ACLs"},
	{API: api(kmsg.CreateACLs, 0, 3), handle: controllerWithClusterOp(kmsg.ACLOperationAlter), barrier: true,
		why: "as CreateTopics, after ALTER on the cluster is authorized here"},
	{API: api(kmsg.DeleteACLs, 0, 3), handle: controllerWithClusterOp(kmsg.ACLOperationAlter), barrier: true,
		why: "as CreateACLs"},
	{API: api(kmsg.DescribeUserSCRAMCredentials, 0, 0), handle: handleDescribeUserSCRAMCredentials,
		why: "every version kmsg encodes (KIP-554), answered from the image"},
	{API: api(kmsg.AlterUserSCRAMCredentials, 0, 0), handle: controllerWithClusterOp(kmsg.ACLOperationAlter), barrier: true,
		why: "as CreateACLs (KIP-554)"},
	{API: api(kmsg.DescribeClientQuotas, 0, 1), handle: handleDescribeClientQuotas,
		why: "every version kmsg encodes (KIP-546), answered from the image"},
	{API: api(kmsg.AlterClientQuotas, 0, 1), handle: controllerWithClusterOp(kmsg.ACLOperationAlterConfigs), barrier: true,
		why: "as CreateTopics, after ALTER_CONFIGS on the cluster is authorized here (KIP-546)"},
}

func api(key kmsg.Key, minVersion, maxVersion int16) protocol.API {
	return protocol.API{Key: key.Int16(), MinVersion: minVersion, MaxVersion: maxVersion}
}

// listedFromV0 marks a row that ApiVersions lists from version 0 (see
// protocol.API.ListedFromV0).
func listedFromV0(a protocol.API) protocol.API {
	a.ListedFromV0 = true
	return a
}

// apiTable builds the protocol table and the handler index from apis.
func apiTable() (protocol.Table, map[int16]*apiHandler) {
	rows := make([]protocol.API, 0, len(apis))
	handlers := make(map[int16]*apiHandler, len(apis))
	for i := range apis {
		rows = append(rows, apis[i].API)
		handlers[apis[i].Key] = &apis[i]
	}
	return protocol.NewTable(rows...), handlers
}

// APIs returns the broker's table (for tests and the compatibility docs).
func APIs() protocol.Table {
	t, _ := apiTable()
	return t
}

// apiVersionsTooNew answers an ApiVersions request newer than the table's
// (KIP-511): a v0 response the client can read, listing what we serve.
var apiVersionsTooNew = apiHandler{
	API: api(kmsg.ApiVersions, 0, 0),
	handle: func(b *Broker, r *request) {
		b.log.Debug("ApiVersions at unsupported version; answered v0 with UNSUPPORTED_VERSION", "requested_version", r.hdr.Version)
		// Encoded directly: the response's version (0) is not the
		// request's.
		r.m.countError(kerr.UnsupportedVersion.Code)
		r.respondFrame(wire.EncodeResponse(r.hdr.CorrelationID, b.table.ApiVersionsUnsupported()))
	},
}

func handleApiVersions(b *Broker, r *request) {
	resp := b.table.AnswerApiVersions(r.body.(*kmsg.ApiVersionsRequest))
	if resp.ErrorCode == 0 && resp.Version >= 3 {
		b.answerFeatures(resp)
	}
	r.respond(resp)
}

// transactionVersionFeature is the feature clients read KIP-890 part 2
// from (Kafka's TransactionVersion).
const transactionVersionFeature = "transaction.version"

// answerFeatures lists the features of ApiVersions v3+ (KIP-584): the
// one Strata finalizes, transaction.version, supported from 0 to 2 and
// finalized at the broker's configured level. Its epoch is 0 and never
// changes: the level is configuration, the same on every broker, not a
// metadata record (Kafka's epoch is the metadata offset of the last
// feature change).
func (b *Broker) answerFeatures(resp *kmsg.ApiVersionsResponse) {
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = transactionVersionFeature, 0, 2
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	ff := kmsg.NewApiVersionsResponseFinalizedFeature()
	level := b.cfg.Txns.transactionVersion()
	ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = transactionVersionFeature, level, level
	resp.FinalizedFeaturesEpoch = 0
	resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
}

// handleController passes a request to the metadata quorum member, which
// answers it with its active controller or forwards it to the quorum
// leader's, and answers with the controller's response. The entries the
// principal may not change are taken out first and answered with their
// authorization errors (authorizeForward).
func handleController(b *Broker, r *request) {
	body, refused := r.body, b.authorizeForward(r)
	if refused != nil && refused.rest == nil {
		resp := r.body.ResponseKind()
		refused.add(resp)
		r.respond(resp)
		return
	}
	if refused != nil {
		body = refused.rest
	}
	if b.cfg.Metadata == nil {
		r.respond(protocol.ErrorResponse(r.body, kerr.NotController, "This node has no metadata quorum."))
		return
	}
	version := r.hdr.Version
	b.cfg.Metadata.Submit(body, func(resp kmsg.Response, err error) {
		if err != nil || resp == nil || resp.GetVersion() != version {
			b.log.Warn("controller request failed", "api_name", r.hdr.APIName(), "err", err)
			r.respond(protocol.ErrorResponse(r.body, kerr.UnknownServerError, "The controller failed the request."))
			return
		}
		if refused != nil {
			refused.add(resp)
		}
		r.respond(resp)
	})
}
