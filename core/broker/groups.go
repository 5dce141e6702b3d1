package broker

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/group"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/replica"
	"github.com/strata-log/strata/core/txn"
)

// # The group coordinator
//
// Groups live in __consumer_offsets, an ordinary compacted, replicated
// topic of offsets.topic.num.partitions partitions that the first
// FindCoordinator creates. A group belongs to partition
// abs(javaHashCode(group)) % partitions (Kafka's, so tools agree on where
// a group is), and its coordinator is that partition's leader: this
// broker runs a group.Shard for each partition it leads and whose log is
// online, replays the partition into it (loading: requests get
// COORDINATOR_LOAD_IN_PROGRESS), and drops it when the leadership goes
// (NOT_COORDINATOR). A shard writes through the partition's Produce with
// acks=all, so its answers wait for the ISR. The shards are synced with
// the partitions after every metadata image and whenever a partition led
// here changes state (Partition.Watch).

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
	// Coordinator configures each shard (its Write is the broker's).
	Coordinator group.Config
}

// groupShard is one shard this broker runs: the partition it leads in a
// leader epoch.
type groupShard struct {
	partition   int32
	leaderEpoch int32
	p           *replica.Partition
	shard       *group.Shard
	// waitingHW: replayed to the log end, the shard waits for the high
	// watermark to reach it before it serves (logged once).
	waitingHW bool
}

// groupCoordinator is the broker's group state.
type groupCoordinator struct {
	// shards sorted by partition.
	shards []*groupShard
	// watching lists partitions led here whose log is not online yet and
	// that have a watcher registered.
	watching []int32
	creating bool
}

func (g *groupCoordinator) shard(partition int32) *groupShard {
	i, ok := slices.BinarySearchFunc(g.shards, partition, func(s *groupShard, p int32) int { return int(s.partition) - int(p) })
	if !ok {
		return nil
	}
	return g.shards[i]
}

// offsetsPartitions is offsets.topic.num.partitions.
func (b *Broker) offsetsPartitions() int32 {
	if n := b.cfg.Groups.OffsetsPartitions; n > 0 {
		return n
	}
	return DefaultOffsetsPartitions
}

// javaHashCode is Java's String.hashCode over the UTF-16 code units.
func javaHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// groupPartition is the __consumer_offsets partition of a group, out of n
// (Kafka's Utils.abs(hashCode) % n; abs of MinInt32 is 0 there).
func groupPartition(group string, n int32) int32 {
	h := javaHashCode(group)
	if h == -1<<31 {
		h = 0
	}
	if h < 0 {
		h = -h
	}
	return h % n
}

// SyncGroups brings the shards in line with the partitions: a shard for
// every __consumer_offsets partition this broker leads with its log
// online, none for the others. The server calls it after each image.
func (b *Broker) SyncGroups() {
	if b.closed || b.cfg.Partitions == nil {
		return
	}
	defer b.SyncTxns()
	img := b.image()
	gc := &b.groups
	var ti *meta.TopicImage
	if img != nil {
		ti, _ = img.TopicByName(OffsetsTopic)
	}
	// Drop the shards whose leadership ended.
	keep := gc.shards[:0]
	for _, gs := range gc.shards {
		if ti != nil && b.stillLeads(ti, gs) {
			keep = append(keep, gs)
			continue
		}
		b.log.Info("unloading group shard", "partition", gs.partition, "leader_epoch", gs.leaderEpoch)
		gs.shard.Unload()
	}
	clear(gc.shards[len(keep):])
	gc.shards = keep
	if ti == nil {
		return
	}
	b.loadLedShards(ti, func(id int32) bool { return gc.shard(id) != nil }, &gc.watching, b.SyncGroups, b.loadShard)
	topics := groupTopics(img)
	for _, gs := range gc.shards {
		gs.shard.SetTopics(topics)
	}
}

// loadLedShards loads a coordinator shard (load) for every partition of
// the coordinator's topic ti led here, in the image's epoch, with its log
// online, that has none yet (loaded); a partition not ready yet is
// watched (once: watching) and resync runs when it changes.
func (b *Broker) loadLedShards(ti *meta.TopicImage, loaded func(int32) bool, watching *[]int32, resync func(), load func(int32, *replica.Partition)) {
	for p := range ti.Partitions() {
		if p.Leader != b.cfg.NodeID || loaded(p.ID) {
			continue
		}
		part, err := b.cfg.Partitions.Lookup(ti.Name(), p.ID)
		if err != nil {
			continue
		}
		if !part.Online() || !part.IsLeader() || part.LeaderEpoch() != p.LeaderEpoch {
			if !slices.Contains(*watching, p.ID) {
				*watching = append(*watching, p.ID)
				id := p.ID
				part.Watch(func() {
					*watching = slices.DeleteFunc(*watching, func(x int32) bool { return x == id })
					resync()
				})
			}
			continue
		}
		load(p.ID, part)
	}
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

// stillLeads reports whether the shard's partition is still led here in
// its epoch, online.
func (b *Broker) stillLeads(ti *meta.TopicImage, gs *groupShard) bool {
	p, ok := ti.Partition(gs.partition)
	if !ok || p.Leader != b.cfg.NodeID || p.LeaderEpoch != gs.leaderEpoch {
		return false
	}
	cur, err := b.cfg.Partitions.Lookup(OffsetsTopic, gs.partition)
	return err == nil && cur == gs.p && cur.Online() && cur.LeaderEpoch() == gs.leaderEpoch
}

// loadShard starts a shard for a partition led here and replays its log
// into it, a slice per loop turn.
func (b *Broker) loadShard(partition int32, part *replica.Partition) {
	gs := &groupShard{partition: partition, leaderEpoch: part.LeaderEpoch(), p: part}
	cfg := b.cfg.Groups.Coordinator
	cfg.Write = func(recs []group.Record, done func(error)) { b.writeGroupRecords(gs, recs, done) }
	cfg.WriteTxn = func(w group.TxnWrite, recs []group.Record, done func(error)) {
		b.writeGroupTxnRecords(gs, w, recs, done)
	}
	gs.shard = group.NewShard(b.e, b.log.With("group_partition", partition), cfg)
	if img := b.image(); img != nil {
		gs.shard.SetTopics(groupTopics(img)) // before the load: the replayed groups' subscriptions are checked against them
	}
	i, _ := slices.BinarySearchFunc(b.groups.shards, partition, func(s *groupShard, p int32) int { return int(s.partition) - int(p) })
	b.groups.shards = slices.Insert(b.groups.shards, i, gs)
	b.log.Info("loading group shard", "partition", partition, "leader_epoch", gs.leaderEpoch, "log_end", part.LogEndOffset())
	l := part.Log()
	if l == nil {
		return
	}
	b.replayShard(gs, l, l.LogStartOffset(), b.e.Monotonic())
}

// groupLoadSliceBytes bounds what one loop turn of a shard's load reads.
const groupLoadSliceBytes = 1 << 20

// replayShard replays the partition's log from offset into the shard, one
// slice per turn, then marks it loaded. A read or a record that fails
// stops the load: the shard stays loading (COORDINATOR_LOAD_IN_PROGRESS)
// and the load starts over after a pause, on a new shard.
func (b *Broker) replayShard(gs *groupShard, l *log.Log, offset int64, started time.Duration) {
	if b.closed || b.groups.shard(gs.partition) != gs {
		return
	}
	end := l.LogEndOffset()
	if gs.p.Log() != l || end < offset {
		// The log was reopened or cut below what was replayed: load the
		// shard again (as replayTxnShard, txn seed 221).
		b.log.Info("the group shard's log changed under its load; loading it again", "partition", gs.partition, "replayed_to", offset, "log_end", end)
		b.groups.shards = slices.DeleteFunc(b.groups.shards, func(s *groupShard) bool { return s == gs })
		gs.shard.Unload()
		b.e.Post(b.SyncGroups)
		return
	}
	if offset >= end {
		if hw := gs.p.HighWatermark(); hw < end {
			// Serve nothing from records the ISR may still lose (as the
			// transaction shards, replayTxnShard).
			if !gs.waitingHW {
				gs.waitingHW = true
				b.log.Info("group shard replayed; waiting for the high watermark to reach the log end", "partition", gs.partition, "high_watermark", hw, "log_end", end)
			}
			gs.p.Watch(func() { b.replayShard(gs, l, offset, started) })
			return
		}
		gs.shard.Loaded()
		b.log.Info("group shard loaded", "partition", gs.partition, "groups", len(gs.shard.Groups()),
			"log_end", end, "took", b.e.Monotonic()-started)
		return
	}
	next, err := b.replaySlice(gs.shard, l, offset, end)
	if err != nil {
		b.log.Error("loading group shard failed; retrying", "partition", gs.partition, "offset", offset, "err", err)
		gs.p.ReportDamage(l, err) // a damaged log is dropped and fetched again (core/replica damage.go)
		b.e.AfterFunc(time.Second, func() {
			if b.groups.shard(gs.partition) == gs {
				b.groups.shards = slices.DeleteFunc(b.groups.shards, func(s *groupShard) bool { return s == gs })
				b.SyncGroups()
			}
		})
		return
	}
	b.e.Post(func() { b.replayShard(gs, l, next, started) })
}

// replayer is a coordinator shard loading its partition.
type replayer interface {
	Replay(key, value []byte) error
}

// txnReplayer is a replayer that keeps transactions' records apart (the
// group shard: pending offsets, then the markers that end them).
type txnReplayer interface {
	ReplayTxn(producerID int64, key, value []byte) error
	TxnEnded(producerID int64, commit bool)
}

// replaySlice replays the batches of one read from offset and returns the
// offset after them.
func (b *Broker) replaySlice(sh replayer, l *log.Log, offset, end int64) (int64, error) {
	res, err := l.Read(offset, groupLoadSliceBytes, end)
	if err != nil {
		return offset, err
	}
	defer res.Release()
	if res.Size == 0 {
		return end, nil
	}
	buf, again := make([]byte, res.Size), make([]byte, res.Size)
	if err := log.ReadStable(res.File, buf, again, res.Position); err != nil {
		return offset, err
	}
	sp := record.NewSplitter(buf, len(buf), record.CheckStored)
	rr := record.NewRecordReader(record.NewDecompressor(l.MaxReadDecompressedBytes()))
	tr, _ := sh.(txnReplayer)
	for sp.Next() {
		batch := sp.Batch()
		if batch.NextOffset() <= offset {
			continue
		}
		if tr != nil && batch.Attributes().IsControl() && batch.ProducerID() >= 0 {
			if m, ok, err := record.ReadEndTxnMarker(batch); err == nil && ok {
				tr.TxnEnded(batch.ProducerID(), m.Type == record.ControlCommit)
			}
		}
		if !batch.Attributes().IsControl() {
			txn := tr != nil && batch.Attributes().IsTransactional() && batch.ProducerID() >= 0
			if err := rr.Reset(batch); err != nil {
				return offset, err
			}
			for rr.Next() {
				rec := rr.Record()
				if batch.BaseOffset()+int64(rec.OffsetDelta) < offset {
					continue
				}
				var err error
				if txn {
					err = tr.ReplayTxn(batch.ProducerID(), rec.Key, rec.Value)
				} else {
					err = sh.Replay(rec.Key, rec.Value)
				}
				if err != nil {
					return offset, err
				}
			}
			if err := rr.Err(); err != nil {
				return offset, err
			}
		}
		offset = batch.NextOffset()
	}
	if err := sp.Err(); err != nil {
		// A stored batch that fails its checks: damage of this log, named
		// as core/log names it (log.DamagedSegment).
		return offset, &log.CorruptError{File: res.File.Name(), Position: res.Position + int64(sp.ValidBytes()),
			Detail: "a coordinator shard's load", Err: err}
	}
	return offset, nil
}

// writeGroupRecords appends a shard's records to its partition (acks=all)
// and runs done once the ISR has them, or with why not.
func (b *Broker) writeGroupRecords(gs *groupShard, recs []group.Record, done func(error)) {
	if b.groups.shard(gs.partition) != gs {
		b.e.Post(func() { done(group.ErrNotCoordinator) })
		return
	}
	bld := record.NewBuilder()
	now := b.e.Now().UnixMilli()
	for _, r := range recs {
		bld.Append(now, r.Key, r.Value)
	}
	payload, err := bld.AppendTo(nil)
	if err != nil {
		b.e.Post(func() { done(err) })
		return
	}
	gs.p.Produce(payload, -1, b.e.Now(), func(res replica.ProduceResult) {
		if res.Err != nil {
			b.log.Warn("writing group records failed", "partition", gs.partition, "records", len(recs), "err", res.Err)
			done(b.errorCode(res.Err))
			return
		}
		done(nil)
	})
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
func (b *Broker) writeGroupTxnRecords(gs *groupShard, w group.TxnWrite, recs []group.Record, done func(error)) {
	if b.groups.shard(gs.partition) != gs {
		b.e.Post(func() { done(group.ErrNotCoordinator) })
		return
	}
	add := b.implicitAdds(w.Version, txnOffsetCommitImplicitAddVersion)
	if b.cfg.Txns.NoPartitionVerification && !add {
		b.appendGroupTxnRecords(gs, w, recs, false, nil, done)
		return
	}
	v, err := gs.p.StartTxnVerification(w.ProducerID, w.ProducerEpoch, b.groupTxnSequence(gs, w), add, b.e.Now())
	if err != nil {
		b.e.Post(func() { done(b.errorCode(err)) })
		return
	}
	if v == nil {
		b.appendGroupTxnRecords(gs, w, recs, true, nil, done)
		return
	}
	tp := txn.TopicPartition{Topic: OffsetsTopic, Partition: gs.partition}
	b.askTxnVerification(w.TransactionalID, w.ProducerID, w.ProducerEpoch, []txn.TopicPartition{tp}, add, func(errs []*kerr.Error) {
		if err := errs[0]; err != nil {
			if err == kerr.TransactionAbortable && w.Version < txnOffsetCommitAbortableVersion {
				err = kerr.InvalidTxnState
			}
			b.log.Debug("transactional offsets not verified", "partition", gs.partition, "producer_id", w.ProducerID, "err", err)
			done(err)
			return
		}
		if b.groups.shard(gs.partition) != gs {
			done(group.ErrNotCoordinator)
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
func (b *Broker) groupTxnSequence(gs *groupShard, w group.TxnWrite) int32 {
	if st, ok := gs.p.Producer(w.ProducerID); ok && st.Epoch == w.ProducerEpoch && st.LastSeq() != record.NoSequence {
		return record.IncrementSequence(st.LastSeq(), 1)
	}
	return 0
}

// appendGroupTxnRecords appends the batch (verified: with the
// verification's guard v, see replica.Partition.ProduceVerified).
func (b *Broker) appendGroupTxnRecords(gs *groupShard, w group.TxnWrite, recs []group.Record, verified bool, v *producer.Verification, done func(error)) {
	bld := record.NewBuilder(record.WithProducer(w.ProducerID, w.ProducerEpoch, b.groupTxnSequence(gs, w)), record.WithTransactional())
	now := b.e.Now().UnixMilli()
	for _, r := range recs {
		bld.Append(now, r.Key, r.Value)
	}
	payload, err := bld.AppendTo(nil)
	if err != nil {
		b.e.Post(func() { done(err) })
		return
	}
	answer := func(res replica.ProduceResult) {
		if res.Err != nil {
			b.log.Warn("writing transactional offsets failed", "partition", gs.partition, "producer_id", w.ProducerID, "records", len(recs), "err", res.Err)
			done(b.errorCode(res.Err))
			return
		}
		done(nil)
	}
	if verified {
		gs.p.ProduceVerified(payload, -1, b.e.Now(), v, answer)
		return
	}
	gs.p.Produce(payload, -1, b.e.Now(), answer)
}

// groupShardFor returns the running shard coordinating group here, or
// the error code a request for it gets: NOT_COORDINATOR when another
// broker (or none) is its coordinator.
func (b *Broker) groupShardFor(name string) (*group.Shard, *kerr.Error) {
	img := b.image()
	if img == nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	ti, ok := img.TopicByName(OffsetsTopic)
	if !ok || ti.NumPartitions() == 0 || b.coordinatorTopicProblem(img, OffsetsTopic) != "" {
		return nil, kerr.CoordinatorNotAvailable
	}
	gs := b.groups.shard(groupPartition(name, int32(ti.NumPartitions())))
	if gs == nil {
		return nil, kerr.NotCoordinator
	}
	return gs.shard, nil
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
