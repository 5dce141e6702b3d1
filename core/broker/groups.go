package broker

import (
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/coord"
	"github.com/strata-log/strata/core/group"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/txn"
)

// # The group coordinator
//
// Groups live in __consumer_offsets, an ordinary compacted, replicated
// topic of offsets.topic.num.partitions partitions that the first
// FindCoordinator creates. A group belongs to partition
// coord.PartitionFor(group, partitions) (Kafka's, so tools agree on where
// a group is), and its coordinator is that partition's leader: the
// coordinator runtime (core/coord) runs a group.Shard for each partition
// this broker leads with its log online, loads it by replaying the
// partition (requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS), and
// unloads it when the leadership goes (NOT_COORDINATOR); it is the shards'
// write path (acks=all: answers wait for the ISR). The broker syncs the
// runtime after every metadata image (SyncGroups), and writes a
// TxnOffsetCommit's batch itself, verified with the transaction
// coordinator (writeGroupTxnRecords).

// OffsetsTopic is the internal topic of group state.
const OffsetsTopic = "__consumer_offsets"

// Group coordinator defaults (Kafka's).
const (
	DefaultOffsetsPartitions        = 50
	DefaultOffsetsReplicationFactor = 3
)

// GroupConfig is the group coordinator's part of the broker's config.
type GroupConfig struct {
	// OffsetsPartitions is offsets.topic.num.partitions and
	// OffsetsReplicationFactor offsets.topic.replication.factor, used
	// when this broker creates __consumer_offsets (the replication
	// factor is capped at the brokers registered then, so that a single
	// node can run groups). Zero: the defaults.
	OffsetsPartitions        int32
	OffsetsReplicationFactor int16
	// OffsetsMinInsync is the min.insync.replicas __consumer_offsets is
	// created with (capped at its replication factor); zero leaves it to
	// the broker's default, as Kafka does. docs/architecture.md says
	// when 2 is wanted (an acknowledged TxnOffsetCommit must outlive the
	// loss of one replica's log).
	OffsetsMinInsync int16
	// Coordinator configures each shard (its Write and WriteTxn are the
	// broker's, set per shard).
	Coordinator group.Config
}

// groupCoordinator is the broker's group state.
type groupCoordinator struct {
	// rt runs a group.Shard per __consumer_offsets partition led here.
	rt       *coord.Runtime[*group.Shard]
	creating bool
}

// groupSlot is one group shard the runtime runs.
type groupSlot = coord.Slot[*group.Shard]

// coordConfig is a coordinator runtime's config on this broker: the
// shards of topic (name in logs), made by newShard, synced by resync.
func coordConfig[S coord.Shard](b *Broker, topic, name string, newShard func(*coord.Slot[S]) S, resync func()) coord.Config[S] {
	return coord.Config[S]{Topic: topic, Name: name, NodeID: b.cfg.NodeID, Partitions: b.cfg.Partitions,
		New: newShard, Resync: resync, Closed: func() bool { return b.closed }, ErrorCode: b.errorCode}
}

// newGroupRuntime is the group coordinator's runtime.
func (b *Broker) newGroupRuntime() *coord.Runtime[*group.Shard] {
	cfg := coordConfig(b, OffsetsTopic, "group", b.newGroupShard, b.SyncGroups)
	cfg.LoadedAttrs = func(sh *group.Shard) []any { return []any{"groups", len(sh.Groups())} }
	return coord.New(b.e, b.log, cfg)
}

// newGroupShard makes the shard of a partition being loaded.
func (b *Broker) newGroupShard(gs *groupSlot) *group.Shard {
	cfg := b.cfg.Groups.Coordinator
	cfg.Write = gs.Write
	cfg.WriteTxn = func(w group.TxnWrite, recs []group.Record, done func(error)) {
		b.writeGroupTxnRecords(gs, w, recs, done)
	}
	sh := group.NewShard(b.e, b.log.With("group_partition", gs.Partition), cfg)
	if img := b.image(); img != nil {
		sh.SetTopics(groupTopics(img)) // before the load: the replayed groups' subscriptions are checked against them
	}
	return sh
}

// offsetsPartitions is offsets.topic.num.partitions.
func (b *Broker) offsetsPartitions() int32 {
	if n := b.cfg.Groups.OffsetsPartitions; n > 0 {
		return n
	}
	return DefaultOffsetsPartitions
}

// SyncGroups brings the shards in line with the partitions: a shard for
// every __consumer_offsets partition this broker leads with its log
// online, none for the others. The server calls it after each image.
func (b *Broker) SyncGroups() {
	if b.closed || b.cfg.Partitions == nil {
		return
	}
	defer b.SyncTxns()
	img, ti := b.imageTopic(OffsetsTopic)
	b.groups.rt.Sync(ti)
	if ti == nil {
		return
	}
	topics := groupTopics(img)
	for _, gs := range b.groups.rt.Slots() {
		gs.Shard.SetTopics(topics)
	}
}

// imageTopic returns the current image and its topic called name (nil
// without an image or that topic).
func (b *Broker) imageTopic(name string) (*meta.Image, *meta.TopicImage) {
	img := b.image()
	if img == nil {
		return nil, nil
	}
	ti, _ := img.TopicByName(name)
	return img, ti
}

// groupTopics lists the image's topics for the consumer groups'
// subscriptions (names, ids, partition counts).
func groupTopics(img *meta.Image) []group.TopicInfo {
	out := make([]group.TopicInfo, 0, img.NumTopics())
	for t := range img.Topics() {
		out = append(out, group.TopicInfo{Name: t.Name(), ID: t.ID(), Partitions: int32(t.NumPartitions())})
	}
	return out
}

// writeGroupTxnRecords appends a TxnOffsetCommit's records as one
// transactional batch of the producer (Kafka's coordinator writes them so:
// the partition's producer state then holds the transaction, and its
// marker ends it), continuing the producer's sequence on the partition,
// and runs done once the ISR has them. As Kafka's coordinator does, it
// first verifies with the transaction coordinator that the producer added
// the offsets partition to its transaction (AddOffsetsToTxn; KIP-890 part
// 1, txnverify.go), unless the producer's transaction is ongoing there
// already or transaction.partition.verification.enable is off; from
// TxnOffsetCommit v5 under transaction.version 2 it adds the partition
// instead (KIP-890 part 2's implicit AddOffsetsToTxn).
func (b *Broker) writeGroupTxnRecords(gs *groupSlot, w group.TxnWrite, recs []group.Record, done func(error)) {
	if !gs.Current() {
		b.e.Post(func() { done(coord.ErrNotCoordinator) })
		return
	}
	add := b.implicitAdds(w.Version, txnOffsetCommitImplicitAddVersion)
	if b.cfg.Txns.NoPartitionVerification && !add {
		b.appendGroupTxnRecords(gs, w, recs, false, nil, done)
		return
	}
	v, err := gs.Replica.StartTxnVerification(w.ProducerID, w.ProducerEpoch, b.groupTxnSequence(gs, w), add, b.e.Now())
	if err != nil {
		b.e.Post(func() { done(b.errorCode(err)) })
		return
	}
	if v == nil {
		b.appendGroupTxnRecords(gs, w, recs, true, nil, done)
		return
	}
	tp := txn.TopicPartition{Topic: OffsetsTopic, Partition: gs.Partition}
	b.askTxnVerification(w.TransactionalID, w.ProducerID, w.ProducerEpoch, []txn.TopicPartition{tp}, add, func(errs []*kerr.Error) {
		if err := errs[0]; err != nil {
			if err == kerr.TransactionAbortable && w.Version < txnOffsetCommitAbortableVersion {
				err = kerr.InvalidTxnState
			}
			b.log.Debug("transactional offsets not verified", "partition", gs.Partition, "producer_id", w.ProducerID, "err", err)
			done(err)
			return
		}
		if !gs.Current() {
			done(coord.ErrNotCoordinator)
			return
		}
		b.appendGroupTxnRecords(gs, w, recs, true, v, done)
	})
}

// txnOffsetCommitAbortableVersion is the first TxnOffsetCommit version
// whose clients take TRANSACTION_ABORTABLE (KIP-890).
const txnOffsetCommitAbortableVersion = 4

// groupTxnSequence is the sequence the producer's next batch on the
// shard's partition takes.
func (b *Broker) groupTxnSequence(gs *groupSlot, w group.TxnWrite) int32 {
	if st, ok := gs.Replica.Producer(w.ProducerID); ok && st.Epoch == w.ProducerEpoch && st.LastSeq() != record.NoSequence {
		return record.IncrementSequence(st.LastSeq(), 1)
	}
	return 0
}

// appendGroupTxnRecords appends the batch (verified: with the
// verification's guard v, see replica.Partition.ProduceVerified).
func (b *Broker) appendGroupTxnRecords(gs *groupSlot, w group.TxnWrite, recs []group.Record, verified bool, v *producer.Verification, done func(error)) {
	payload, err := gs.Encode(recs, record.WithProducer(w.ProducerID, w.ProducerEpoch, b.groupTxnSequence(gs, w)), record.WithTransactional())
	if err != nil {
		b.e.Post(func() { done(err) })
		return
	}
	answer := gs.Answer("writing transactional offsets failed", len(recs), done, "producer_id", w.ProducerID)
	if verified {
		gs.Replica.ProduceVerified(payload, -1, b.e.Now(), v, answer)
		return
	}
	gs.Replica.Produce(payload, -1, b.e.Now(), answer)
}

// groupShardFor returns the running shard coordinating group here, or
// the error code a request for it gets (shardFor).
func (b *Broker) groupShardFor(name string) (*group.Shard, *kerr.Error) {
	return shardFor(b, b.groups.rt, OffsetsTopic, name)
}

// shardFor returns the shard of rt coordinating key here, or the code a
// request for it gets: COORDINATOR_NOT_AVAILABLE while the coordinator's
// topic is missing or unusable, NOT_COORDINATOR when another broker (or
// none) coordinates key.
func shardFor[S coord.Shard](b *Broker, rt *coord.Runtime[S], topic, key string) (S, *kerr.Error) {
	var none S
	img := b.image()
	if img == nil {
		return none, kerr.CoordinatorNotAvailable
	}
	ti, ok := img.TopicByName(topic)
	if !ok || ti.NumPartitions() == 0 || b.coordinatorTopicProblem(img, topic) != "" {
		return none, kerr.CoordinatorNotAvailable
	}
	s := rt.Slot(coord.PartitionFor(key, int32(ti.NumPartitions())))
	if s == nil {
		return none, kerr.NotCoordinator
	}
	return s.Shard, nil
}

// createOffsetsTopic asks the active controller to create
// __consumer_offsets (one request in flight).
func (b *Broker) createOffsetsTopic(img *meta.Image) {
	b.createCoordinatorTopic(img, OffsetsTopic, b.offsetsPartitions(), b.cfg.Groups.OffsetsReplicationFactor,
		DefaultOffsetsReplicationFactor, b.cfg.Groups.OffsetsMinInsync, &b.groups.creating, "group")
}

// createCoordinatorTopic asks the active controller to create a
// coordinator's compacted internal topic (__consumer_offsets,
// __transaction_state) with partitions partitions and replication factor
// rf (def when unset), capped at the brokers registered, and, when minISR
// is positive, min.insync.replicas of minISR capped at that factor;
// creating marks the one request in flight, and owner names the
// coordinator in logs.
func (b *Broker) createCoordinatorTopic(img *meta.Image, topic string, partitions int32, rf, def, minISR int16, creating *bool, owner string) {
	if *creating || b.cfg.Metadata == nil {
		return
	}
	if rf <= 0 {
		rf = def
	}
	if n := int16(min(img.NumBrokers(), 1<<14)); n < rf {
		rf = max(n, 1)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = autoCreateVersion
	req.TimeoutMillis = 30_000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, partitions, rf
	configs := [][2]string{{"cleanup.policy", "compact"}, {"compression.type", "producer"}, {"segment.bytes", "104857600"}}
	if minISR > 0 {
		configs = append(configs, [2]string{"min.insync.replicas", strconv.Itoa(int(min(minISR, rf)))})
	}
	for _, c := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = c[0], kmsg.StringPtr(c[1])
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = append(req.Topics, t)
	*creating = true
	b.log.Info("creating the "+owner+" coordinator's topic", "topic", topic, "partitions", t.NumPartitions, "replication_factor", rf)
	b.cfg.Metadata.Submit(req, func(r kmsg.Response, err error) {
		*creating = false
		resp, ok := r.(*kmsg.CreateTopicsResponse)
		if err == nil && ok && len(resp.Topics) == 1 {
			if code := resp.Topics[0].ErrorCode; code == 0 || code == kerr.TopicAlreadyExists.Code {
				return
			}
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		b.log.Warn("creating the "+owner+" coordinator's topic failed", "err", err)
	})
}

func (b *Broker) groupClient(r *request) group.Client {
	c := group.Client{Host: "/" + hostOf(r.cn.remote)}
	if r.hdr.ClientID != nil {
		c.ID = *r.hdr.ClientID
	}
	return c
}

// hostOf is the host part of "host:port" (package net is not core's).
func hostOf(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return addr[:i]
	}
	return addr
}
