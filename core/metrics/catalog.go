package metrics

import (
	"slices"
	"strings"
)

// Buckets of the histograms.
var (
	// MillisBuckets are for latencies in milliseconds: 50 µs to 10 s.
	MillisBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}
	// BytesBuckets are for sizes in bytes: 1 KiB to 64 MiB, by 4.
	BytesBuckets = []float64{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}
)

// The catalog: every metric family a Strata server exports, sorted by
// name (a test checks it, and checks docs/operations.md against it).
var (
	// Controller (the active controller's view of the cluster).
	ControllerActive = &Def{Name: "kafka_controller_kafkacontroller_activecontrollercount", Kind: GaugeKind,
		Help: "1 on the node whose controller is active, else 0.", Kafka: "kafka.controller:type=KafkaController,name=ActiveControllerCount"}
	ControllerActiveBrokers = &Def{Name: "kafka_controller_kafkacontroller_activebrokercount", Kind: GaugeKind,
		Help: "Registered, unfenced brokers, on the active controller.", Kafka: "kafka.controller:type=KafkaController,name=ActiveBrokerCount"}
	ControllerEventProcessing = &Def{Name: "kafka_controller_controllereventmanager_eventqueueprocessingtimems", Kind: HistogramKind, Buckets: MillisBuckets,
		Help: "Time from a request reaching the active controller to its answer (its records committed), in ms.", Kafka: "kafka.controller:type=ControllerEventManager,name=EventQueueProcessingTimeMs"}
	ControllerFencedBrokers = &Def{Name: "kafka_controller_kafkacontroller_fencedbrokercount", Kind: GaugeKind,
		Help: "Registered, fenced brokers, on the active controller.", Kafka: "kafka.controller:type=KafkaController,name=FencedBrokerCount"}
	ControllerOfflinePartitions = &Def{Name: "kafka_controller_kafkacontroller_offlinepartitionscount", Kind: GaugeKind,
		Help: "Partitions without a leader, on the active controller.", Kafka: "kafka.controller:type=KafkaController,name=OfflinePartitionsCount"}
	ControllerPartitions = &Def{Name: "kafka_controller_kafkacontroller_globalpartitioncount", Kind: GaugeKind,
		Help: "Partitions in the cluster, on the active controller.", Kafka: "kafka.controller:type=KafkaController,name=GlobalPartitionCount"}
	ControllerUncleanElections = &Def{Name: "kafka_controller_controllerstats_uncleanleaderelections_total", Kind: CounterKind,
		Help: "Leaders this controller elected from outside the ISR (unclean.leader.election.enable).", Kafka: "kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec"}
	ControllerRequests = &Def{Name: "strata_controller_requests_total", Kind: CounterKind, Labels: []string{"request"},
		Help: "Requests the active controller handled, by kind (registrations, heartbeats, topic and config changes, producer id blocks)."}
	ControllerTopics = &Def{Name: "kafka_controller_kafkacontroller_globaltopiccount", Kind: GaugeKind,
		Help: "Topics in the cluster, on the active controller.", Kafka: "kafka.controller:type=KafkaController,name=GlobalTopicCount"}

	// Log.
	LogEndOffset = &Def{Name: "kafka_log_log_logendoffset", Kind: GaugeKind, Labels: []string{"topic", "partition"}, PerPartition: true,
		Help: "The offset of the next record appended.", Kafka: "kafka.log:type=Log,name=LogEndOffset"}
	LogFlushBytes = &Def{Name: "strata_log_flush_bytes", Kind: HistogramKind, Buckets: BytesBuckets,
		Help: "Bytes one flush made durable (a group commit: one fdatasync per file covers every append before it)."}
	LogFlushTime = &Def{Name: "kafka_log_logflushstats_logflushrateandtimems", Kind: HistogramKind, Buckets: MillisBuckets,
		Help:  "Time of a log flush (the fdatasyncs of its files, and the directory and checkpoint syncs it needs), in ms; its count is the flush rate.",
		Kafka: "kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs"}
	LogScrubBytes = &Def{Name: "strata_log_scrub_bytes_total", Kind: CounterKind,
		Help: "Bytes of partition logs the start-up scrub checked (every batch's framing and CRC, before the broker registers)."}
	LogScrubDamaged = &Def{Name: "strata_log_scrub_damaged_total", Kind: CounterKind,
		Help: "Partition logs the start-up scrub found damaged (or could not read): each drops its first damaged batch and what follows, and the broker registers as one whose disk was replaced."}
	LogSegments = &Def{Name: "kafka_log_log_numlogsegments", Kind: GaugeKind, Labels: []string{"topic", "partition"}, PerPartition: true,
		Help: "Segments of the partition's log.", Kafka: "kafka.log:type=Log,name=NumLogSegments"}
	LogSize = &Def{Name: "kafka_log_log_size", Kind: GaugeKind, Labels: []string{"topic", "partition"}, PerPartition: true,
		Help: "Bytes of the partition's log.", Kafka: "kafka.log:type=Log,name=Size"}
	LogStartOffset = &Def{Name: "kafka_log_log_logstartoffset", Kind: GaugeKind, Labels: []string{"topic", "partition"}, PerPartition: true,
		Help: "The first offset a read may ask for.", Kafka: "kafka.log:type=Log,name=LogStartOffset"}

	// Request handling (per API of the broker listener).
	RequestBytes = &Def{Name: "kafka_network_requestmetrics_requestbytes", Kind: HistogramKind, Labels: []string{"request"}, Buckets: BytesBuckets,
		Help: "Size of requests, in bytes.", Kafka: "kafka.network:type=RequestMetrics,name=RequestBytes"}
	RequestErrors = &Def{Name: "kafka_network_requestmetrics_errors_total", Kind: CounterKind, Labels: []string{"request", "error"},
		Help: "Errors in responses, by request and Kafka error name (a partition's error counts once).", Kafka: "kafka.network:type=RequestMetrics,name=ErrorsPerSec"}
	RequestLocalTime = &Def{Name: "kafka_network_requestmetrics_localtimems", Kind: HistogramKind, Labels: []string{"request"}, Buckets: MillisBuckets,
		Help: "Time the broker works on a request itself (validation, appends to the page cache, reads), in ms.", Kafka: "kafka.network:type=RequestMetrics,name=LocalTimeMs"}
	RequestQueueTime = &Def{Name: "kafka_network_requestmetrics_requestqueuetimems", Kind: HistogramKind, Labels: []string{"request"}, Buckets: MillisBuckets,
		Help: "Time from a request's arrival to its handling (behind a barrier request of its connection), in ms.", Kafka: "kafka.network:type=RequestMetrics,name=RequestQueueTimeMs"}
	RequestRemoteTime = &Def{Name: "kafka_network_requestmetrics_remotetimems", Kind: HistogramKind, Labels: []string{"request"}, Buckets: MillisBuckets,
		Help: "Time a request waits on something else: the fsync of its batches, a fetch's long poll, the controller, in ms.", Kafka: "kafka.network:type=RequestMetrics,name=RemoteTimeMs"}
	RequestResponseSendTime = &Def{Name: "kafka_network_requestmetrics_responsesendtimems", Kind: HistogramKind, Labels: []string{"request"}, Buckets: MillisBuckets,
		Help: "Time from a response being ready to its handing to the socket (behind earlier responses of its connection), in ms.", Kafka: "kafka.network:type=RequestMetrics,name=ResponseSendTimeMs"}
	RequestTotalTime = &Def{Name: "kafka_network_requestmetrics_totaltimems", Kind: HistogramKind, Labels: []string{"request"}, Buckets: MillisBuckets,
		Help: "Time from a request's arrival to its response's handing to the socket, in ms.", Kafka: "kafka.network:type=RequestMetrics,name=TotalTimeMs"}
	Requests = &Def{Name: "kafka_network_requestmetrics_requests_total", Kind: CounterKind, Labels: []string{"request"},
		Help: "Requests received, by API.", Kafka: "kafka.network:type=RequestMetrics,name=RequestsPerSec"}

	// Raft (the metadata quorum member).
	RaftCommitLatency = &Def{Name: "kafka_server_raftmetrics_commit_latency_ms", Kind: HistogramKind, Buckets: MillisBuckets,
		Help: "On the leader, time from a batch being proposed to its commit, in ms.", Kafka: "kafka.server:type=raft-metrics,name=commit-latency-avg/max"}
	RaftElections = &Def{Name: "strata_raft_elections_total", Kind: CounterKind,
		Help: "Elections this member started (became a candidate)."}
	RaftEpoch = &Def{Name: "kafka_server_raftmetrics_current_epoch", Kind: GaugeKind,
		Help: "The quorum epoch this member is in.", Kafka: "kafka.server:type=raft-metrics,name=current-epoch"}
	RaftHighWatermark = &Def{Name: "kafka_server_raftmetrics_high_watermark", Kind: GaugeKind,
		Help: "The metadata log's high watermark as this member knows it.", Kafka: "kafka.server:type=raft-metrics,name=high-watermark"}
	RaftLag = &Def{Name: "strata_raft_applied_lag_offsets", Kind: GaugeKind,
		Help: "Committed metadata records this member has not applied to its image yet."}
	RaftLeader = &Def{Name: "kafka_server_raftmetrics_current_leader", Kind: GaugeKind,
		Help: "The quorum leader's id as this member knows it, -1 for none.", Kafka: "kafka.server:type=raft-metrics,name=current-leader"}
	RaftLogEndOffset = &Def{Name: "kafka_server_raftmetrics_log_end_offset", Kind: GaugeKind,
		Help: "The end offset of this member's metadata log.", Kafka: "kafka.server:type=raft-metrics,name=log-end-offset"}
	RaftState = &Def{Name: "kafka_server_raftmetrics_current_state", Kind: GaugeKind, Labels: []string{"state"},
		Help: "1 for this member's role (leader, follower, candidate, prospective, unattached, resigned, observer), 0 for the others.", Kafka: "kafka.server:type=raft-metrics,name=current-state"}

	// Broker: topics.
	TopicBytesIn = &Def{Name: "kafka_server_brokertopicmetrics_bytesin_total", Kind: CounterKind, Labels: []string{"topic"},
		Help: "Bytes of record batches appended from producers.", Kafka: "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec"}
	TopicBytesOut = &Def{Name: "kafka_server_brokertopicmetrics_bytesout_total", Kind: CounterKind, Labels: []string{"topic"},
		Help: "Bytes of record batches sent to consumers.", Kafka: "kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec"}
	TopicFailedFetches = &Def{Name: "kafka_server_brokertopicmetrics_failedfetchrequests_total", Kind: CounterKind, Labels: []string{"topic"},
		Help: "Partition fetches answered with an error.", Kafka: "kafka.server:type=BrokerTopicMetrics,name=FailedFetchRequestsPerSec"}
	TopicFailedProduces = &Def{Name: "kafka_server_brokertopicmetrics_failedproducerequests_total", Kind: CounterKind, Labels: []string{"topic"},
		Help: "Partition produces answered with an error.", Kafka: "kafka.server:type=BrokerTopicMetrics,name=FailedProduceRequestsPerSec"}
	TopicFetches = &Def{Name: "kafka_server_brokertopicmetrics_totalfetchrequests_total", Kind: CounterKind, Labels: []string{"topic"},
		Help: "Partition fetches.", Kafka: "kafka.server:type=BrokerTopicMetrics,name=TotalFetchRequestsPerSec"}
	TopicMessagesIn = &Def{Name: "kafka_server_brokertopicmetrics_messagesin_total", Kind: CounterKind, Labels: []string{"topic"},
		Help: "Records appended from producers.", Kafka: "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec"}
	TopicProduces = &Def{Name: "kafka_server_brokertopicmetrics_totalproducerequests_total", Kind: CounterKind, Labels: []string{"topic"},
		Help: "Partition produces.", Kafka: "kafka.server:type=BrokerTopicMetrics,name=TotalProduceRequestsPerSec"}

	// Broker: partitions, registration, connections.
	BrokerFenced = &Def{Name: "strata_broker_fenced", Kind: GaugeKind,
		Help: "1 while this broker is registered but fenced (or not registered), 0 once unfenced."}
	BrokerRegistrations = &Def{Name: "strata_broker_registrations_total", Kind: CounterKind,
		Help: "Times this broker registered with the controller (one per incarnation, more after a lost session)."}
	Connections = &Def{Name: "kafka_server_socketservermetrics_connection_count", Kind: GaugeKind,
		Help: "Open client connections.", Kafka: "kafka.server:type=socket-server-metrics,name=connection-count"}
	ConnectionsClosed = &Def{Name: "kafka_server_socketservermetrics_connection_close_total", Kind: CounterKind,
		Help: "Client connections closed.", Kafka: "kafka.server:type=socket-server-metrics,name=connection-close-total"}
	ConnectionsCreated = &Def{Name: "kafka_server_socketservermetrics_connection_creation_total", Kind: CounterKind,
		Help: "Client connections accepted.", Kafka: "kafka.server:type=socket-server-metrics,name=connection-creation-total"}
	ConnectionsPaused = &Def{Name: "strata_broker_paused_connections", Kind: GaugeKind,
		Help: "Connections whose reading is paused by a bound (requests in flight, queued.max.request.bytes)."}
	QuotaThrottleTime = &Def{Name: "kafka_server_quota_throttle_time_ms", Kind: HistogramKind, Labels: []string{"quota"}, Buckets: MillisBuckets,
		Help:  "Throttle times given to clients over a quota, by quota type (Produce, Fetch, Request, ControllerMutation, ConnectionCreation), in ms.",
		Kafka: "kafka.server:type={Produce,Fetch,Request,ControllerMutation},name=throttle-time"}
	FetchSessions = &Def{Name: "kafka_server_fetchsessioncache_numincrementalfetchsessions", Kind: GaugeKind,
		Help: "Fetch sessions (KIP-227) in the cache.", Kafka: "kafka.server:type=FetchSessionCache,name=NumIncrementalFetchSessions"}
	InflightRequestBytes = &Def{Name: "strata_broker_inflight_request_bytes", Kind: GaugeKind,
		Help: "Bytes of the request frames received and not yet answered (bounded by queued.max.request.bytes): the broker's request memory."}
	LeaderCount = &Def{Name: "kafka_server_replicamanager_leadercount", Kind: GaugeKind,
		Help: "Partitions this broker leads and serves.", Kafka: "kafka.server:type=ReplicaManager,name=LeaderCount"}
	OfflinePartitions = &Def{Name: "kafka_server_replicamanager_offlinereplicacount", Kind: GaugeKind,
		Help: "Partitions hosted here whose log is failed or still opening.", Kafka: "kafka.server:type=ReplicaManager,name=OfflineReplicaCount"}
	PartitionCount = &Def{Name: "kafka_server_replicamanager_partitioncount", Kind: GaugeKind,
		Help: "Partitions hosted on this broker.", Kafka: "kafka.server:type=ReplicaManager,name=PartitionCount"}
	IsrExpands = &Def{Name: "kafka_server_replicamanager_isrexpands_total", Kind: CounterKind,
		Help: "ISR expansions the controller accepted from this broker's leaders.", Kafka: "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec"}
	IsrShrinks = &Def{Name: "kafka_server_replicamanager_isrshrinks_total", Kind: CounterKind,
		Help: "ISR shrinks the controller accepted from this broker's leaders.", Kafka: "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec"}
	ReplicaMaxLag = &Def{Name: "kafka_server_replicafetchermanager_maxlag", Kind: GaugeKind,
		Help: "The largest lag, in records, of a partition this broker follows: its leader's high watermark at the last fetch minus its log end.", Kafka: "kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica"}
	ReplicaDamagedLogs = &Def{Name: "strata_replica_damaged_logs_total", Kind: CounterKind,
		Help: "Damage found in a partition log while the broker runs (an unreadable page, a batch that fails its checks at a reopen or before a leader serves it): the replica goes offline, gives up its ISR and ELR places, then drops the damaged segment and what follows and fetches them again."}
	RecoveringPartitions = &Def{Name: "strata_replica_recovering_partitions", Kind: GaugeKind,
		Help: "Partitions led here that are recovering: a forgotten last ISR member comparing its log with its last known ELR's, serving no client until every member has fetched (docs/operations.md, \"A replaced disk\")."}
	UnderMinISRPartitions = &Def{Name: "kafka_server_replicamanager_underminisrpartitioncount", Kind: GaugeKind,
		Help: "Partitions led here with fewer in-sync replicas than min.insync.replicas.", Kafka: "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount"}
	UnderReplicatedPartitions = &Def{Name: "kafka_server_replicamanager_underreplicatedpartitions", Kind: GaugeKind,
		Help: "Partitions led here whose in-sync replicas are fewer than their replicas.", Kafka: "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"}

	// The event loop and its workers.
	LoopLag = &Def{Name: "strata_loop_lag_ms", Kind: HistogramKind, Buckets: MillisBuckets,
		Help: "How long the oldest waiting callback (a received frame, a completion, a due timer) had waited when the event loop took it, in ms: latency every client of the node shares. Observed once per turn of the loop."}
	WorkJobs = &Def{Name: "strata_work_jobs_total", Kind: CounterKind, Labels: []string{"where"},
		Help: "CPU-heavy jobs of requests (record validation, large response encoding) by where they ran: worker (off the loop) or inline (small enough to run on the loop)."}
	WorkQueued = &Def{Name: "strata_work_queued_jobs", Kind: GaugeKind,
		Help: "Jobs waiting for a worker now (shared round-robin between connections)."}

	// Transaction verification (KIP-890 part 1).
	TxnVerificationFailures = &Def{Name: "kafka_server_addpartitionstotxnmanager_verificationfailures_total", Kind: CounterKind,
		Help:  "Partitions whose transaction verification failed: not in the producer's transaction, or the coordinator could not answer.",
		Kafka: "kafka.server:type=AddPartitionsToTxnManager,name=VerificationFailureRate"}
	TxnVerificationTime = &Def{Name: "kafka_server_addpartitionstotxnmanager_verificationtimems", Kind: HistogramKind, Buckets: MillisBuckets,
		Help:  "Time from asking the transaction coordinator whether partitions are in a transaction to its answer, in ms.",
		Kafka: "kafka.server:type=AddPartitionsToTxnManager,name=VerificationTimeMs"}
)

// Catalog lists every family, sorted by name.
var Catalog = sortedCatalog(
	ControllerActive, ControllerActiveBrokers, ControllerEventProcessing, ControllerFencedBrokers,
	ControllerOfflinePartitions, ControllerPartitions, ControllerRequests, ControllerTopics,
	ControllerUncleanElections,
	LogEndOffset, LogFlushBytes, LogFlushTime, LogScrubBytes, LogScrubDamaged, LogSegments, LogSize, LogStartOffset,
	RequestBytes, RequestErrors, RequestLocalTime, RequestQueueTime, RequestRemoteTime,
	RequestResponseSendTime, RequestTotalTime, Requests,
	RaftCommitLatency, RaftElections, RaftEpoch, RaftHighWatermark, RaftLag, RaftLeader,
	RaftLogEndOffset, RaftState,
	TopicBytesIn, TopicBytesOut, TopicFailedFetches, TopicFailedProduces, TopicFetches,
	TopicMessagesIn, TopicProduces,
	BrokerFenced, BrokerRegistrations, Connections, ConnectionsClosed, ConnectionsCreated,
	ConnectionsPaused, FetchSessions, InflightRequestBytes, QuotaThrottleTime, LeaderCount, OfflinePartitions,
	PartitionCount, UnderMinISRPartitions, UnderReplicatedPartitions,
	IsrExpands, IsrShrinks, RecoveringPartitions, ReplicaDamagedLogs, ReplicaMaxLag,
	LoopLag, WorkJobs, WorkQueued,
	TxnVerificationFailures, TxnVerificationTime,
)

func sortedCatalog(defs ...*Def) []*Def {
	slices.SortFunc(defs, func(a, b *Def) int { return strings.Compare(a.Name, b.Name) })
	return defs
}
