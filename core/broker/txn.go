package broker

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/replica"
	"github.com/strata-log/strata/core/txn"
)

// # The transaction coordinator
//
// As the group coordinator (groups.go): transactional ids live in
// __transaction_state, a compacted, replicated topic of
// transaction.state.log.num.partitions partitions that the first
// FindCoordinator of key type 1 creates; an id belongs to partition
// abs(javaHashCode(id)) % partitions; this broker runs a txn.Shard for each
// partition it leads with its log online, replays the partition into it
// (COORDINATOR_LOAD_IN_PROGRESS meanwhile) and drops it when the leadership
// goes (NOT_COORDINATOR). A shard writes with acks=all, gets producer ids
// from the broker's blocks (initproducerid.go) and sends markers through
// txnMarkers (txnmarkers.go).

// TxnStateTopic is the internal topic of transaction state.
const TxnStateTopic = "__transaction_state"

// Transaction coordinator defaults (Kafka's).
const (
	DefaultTxnStatePartitions        = 50
	DefaultTxnStateReplicationFactor = 3
	// DefaultTxnStateMinISR is transaction.state.log.min.isr: the
	// topic's min.insync.replicas (capped at its replication factor), so
	// that a coordinator record committed with acks=all is on two
	// replicas and survives the loss of any one.
	DefaultTxnStateMinISR = 2
)

// TxnConfig is the transaction coordinator's part of the broker's config.
type TxnConfig struct {
	// StatePartitions is transaction.state.log.num.partitions and
	// StateReplicationFactor transaction.state.log.replication.factor,
	// used when this broker creates __transaction_state (the replication
	// factor capped at the brokers registered then). Zero: the defaults.
	StatePartitions        int32
	StateReplicationFactor int16
	// Coordinator configures each shard (its effects are the broker's).
	Coordinator txn.Config
	// NoPartitionVerification is
	// transaction.partition.verification.enable=false (default true):
	// partition leaders append a producer's first transactional batch
	// without asking the coordinator whether the partition is in its
	// transaction (KIP-890 part 1, txnverify.go).
	NoPartitionVerification bool
	// TransactionVersion is the transaction.version feature this broker
	// finalizes in ApiVersions (strata.transaction.version; zero: the
	// default, DefaultTransactionVersion). At 2 clients may use KIP-890
	// part 2: Produce v12+ and TxnOffsetCommit v5+ add their partition to
	// the transaction themselves, through the partition leader and the
	// group coordinator (txnverify.go), and EndTxn v5 bumps the epoch at
	// every end. At 1 clients stay on explicit AddPartitionsToTxn and
	// AddOffsetsToTxn.
	TransactionVersion int16
}

// DefaultTransactionVersion is the transaction.version a broker
// finalizes unless told otherwise: 1, transactions before KIP-890 part 2's
// implicit adds. Kafka 4.0 formats new clusters at 2; Strata's level 2
// works with kgo's transactional producers and consume-transform-produce
// jobs (the interop tests run both levels, half the txn simulator seeds
// run it), and is opt-in until it has run longer under real clients
// (docs/architecture.md, "KIP-890 part 2's implicit adds").
const DefaultTransactionVersion = 1

// transactionVersion is the finalized transaction.version.
func (c TxnConfig) transactionVersion() int16 {
	if c.TransactionVersion == 0 {
		return DefaultTransactionVersion
	}
	return c.TransactionVersion
}

type txnShard struct {
	partition   int32
	leaderEpoch int32
	p           *replica.Partition
	shard       *txn.Shard
	// waitingHW: replayed to the log end, the shard waits for the high
	// watermark to reach it before it serves (logged once).
	waitingHW bool
}

// txnCoordinator is the broker's transaction state.
type txnCoordinator struct {
	shards   []*txnShard // sorted by partition
	watching []int32
	creating bool
	markers  *txnMarkers
}

func (tc *txnCoordinator) shard(partition int32) *txnShard {
	i, ok := slices.BinarySearchFunc(tc.shards, partition, func(s *txnShard, p int32) int { return int(s.partition) - int(p) })
	if !ok {
		return nil
	}
	return tc.shards[i]
}

func (b *Broker) txnStatePartitions() int32 {
	if n := b.cfg.Txns.StatePartitions; n > 0 {
		return n
	}
	return DefaultTxnStatePartitions
}

// SyncTxns brings the transaction shards in line with the partitions of
// __transaction_state, as SyncGroups does for groups (which calls it).
func (b *Broker) SyncTxns() {
	if b.closed || b.cfg.Partitions == nil {
		return
	}
	img := b.image()
	tc := &b.txns
	var ti *meta.TopicImage
	if img != nil {
		ti, _ = img.TopicByName(TxnStateTopic)
	}
	keep := tc.shards[:0]
	for _, ts := range tc.shards {
		if ti != nil && b.stillLeadsTxn(ti, ts) {
			keep = append(keep, ts)
			continue
		}
		b.log.Info("unloading transaction shard", "partition", ts.partition, "leader_epoch", ts.leaderEpoch)
		ts.shard.Unload()
	}
	clear(tc.shards[len(keep):])
	tc.shards = keep
	if ti == nil {
		return
	}
	b.loadLedShards(ti, func(id int32) bool { return tc.shard(id) != nil }, &tc.watching, b.SyncTxns, b.loadTxnShard)
}

func (b *Broker) stillLeadsTxn(ti *meta.TopicImage, ts *txnShard) bool {
	p, ok := ti.Partition(ts.partition)
	if !ok || p.Leader != b.cfg.NodeID || p.LeaderEpoch != ts.leaderEpoch {
		return false
	}
	cur, err := b.cfg.Partitions.Lookup(TxnStateTopic, ts.partition)
	return err == nil && cur == ts.p && cur.Online() && cur.LeaderEpoch() == ts.leaderEpoch
}

func (b *Broker) loadTxnShard(partition int32, part *replica.Partition) {
	ts := &txnShard{partition: partition, leaderEpoch: part.LeaderEpoch(), p: part}
	if b.txns.markers == nil {
		b.txns.markers = newTxnMarkers(b)
	}
	cfg := b.cfg.Txns.Coordinator
	cfg.CoordinatorEpoch = ts.leaderEpoch
	cfg.Write = func(recs []txn.Record, done func(error)) { b.writeTxnRecords(ts, recs, done) }
	cfg.AllocateProducerID = func(done func(int64, *kerr.Error)) {
		b.allocateProducerID(func(id int64, err *kerr.Error, _ string) { done(id, err) })
	}
	cfg.Markers = b.txns.markers
	cfg.PartitionExists = b.txnPartitionExists
	ts.shard = txn.NewShard(b.e, b.log.With("txn_partition", partition), cfg)
	i, _ := slices.BinarySearchFunc(b.txns.shards, partition, func(s *txnShard, p int32) int { return int(s.partition) - int(p) })
	b.txns.shards = slices.Insert(b.txns.shards, i, ts)
	b.log.Info("loading transaction shard", "partition", partition, "leader_epoch", ts.leaderEpoch, "log_end", part.LogEndOffset())
	l := part.Log()
	if l == nil {
		return
	}
	b.replayTxnShard(ts, l, l.LogStartOffset(), b.e.Monotonic())
}

// txnPartitionExists: AddPartitionsToTxn's partitions must be in the
// image; __consumer_offsets (AddOffsetsToTxn) is taken as it is computed.
func (b *Broker) txnPartitionExists(topic string, partition int32) bool {
	if topic == OffsetsTopic {
		return true
	}
	img := b.image()
	if img == nil {
		return false
	}
	ti, ok := img.TopicByName(topic)
	if !ok {
		return false
	}
	_, ok = ti.Partition(partition)
	return ok
}

// replayTxnShard replays the partition into the shard a slice per turn,
// as replayShard does for groups.
func (b *Broker) replayTxnShard(ts *txnShard, l *log.Log, offset int64, started time.Duration) {
	if b.closed || b.txns.shard(ts.partition) != ts {
		return
	}
	end := l.LogEndOffset()
	if ts.p.Log() != l || end < offset {
		// The log was reopened or cut below what was replayed (txn seed
		// 221: a truncation this broker decided as a follower completed
		// after it became the leader, taking a replayed record with it;
		// the shard waited for a high watermark that the shorter log
		// never reaches, and answered COORDINATOR_LOAD_IN_PROGRESS
		// forever): load the shard again from the log there is now.
		b.log.Info("the transaction shard's log changed under its load; loading it again", "partition", ts.partition, "replayed_to", offset, "log_end", end)
		b.txns.shards = slices.DeleteFunc(b.txns.shards, func(s *txnShard) bool { return s == ts })
		ts.shard.Unload()
		b.e.Post(b.SyncTxns)
		return
	}
	if offset >= end {
		if hw := ts.p.HighWatermark(); hw < end {
			// Serve nothing from records the ISR may still lose (txn
			// seed 43: a new leader loaded an Ongoing record above its
			// high watermark, answered a partition's verification from
			// it, and a shorter log elected next dropped the record:
			// no coordinator ever ended the transaction there).
			if !ts.waitingHW {
				ts.waitingHW = true
				b.log.Info("transaction shard replayed; waiting for the high watermark to reach the log end", "partition", ts.partition, "high_watermark", hw, "log_end", end)
			}
			ts.p.Watch(func() { b.replayTxnShard(ts, l, offset, started) })
			return
		}
		ts.shard.Loaded()
		b.log.Info("transaction shard loaded", "partition", ts.partition, "log_end", end, "took", b.e.Monotonic()-started)
		return
	}
	next, err := b.replaySlice(ts.shard, l, offset, end)
	if err != nil {
		b.log.Error("loading transaction shard failed; retrying", "partition", ts.partition, "offset", offset, "err", err)
		ts.p.ReportDamage(l, err) // a damaged log is dropped and fetched again (core/replica damage.go)
		b.e.AfterFunc(time.Second, func() {
			if b.txns.shard(ts.partition) == ts {
				b.txns.shards = slices.DeleteFunc(b.txns.shards, func(s *txnShard) bool { return s == ts })
				b.SyncTxns()
			}
		})
		return
	}
	b.e.Post(func() { b.replayTxnShard(ts, l, next, started) })
}

// writeTxnRecords appends a shard's records (acks=all).
func (b *Broker) writeTxnRecords(ts *txnShard, recs []txn.Record, done func(error)) {
	if b.txns.shard(ts.partition) != ts {
		b.e.Post(func() { done(txn.ErrNotCoordinator) })
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
	ts.p.Produce(payload, -1, b.e.Now(), func(res replica.ProduceResult) {
		if res.Err != nil {
			b.log.Warn("writing transaction records failed", "partition", ts.partition, "records", len(recs), "err", res.Err)
			done(b.errorCode(res.Err))
			return
		}
		done(nil)
	})
}

// txnPartition is the __transaction_state partition of an id.
func txnPartition(id string, n int32) int32 { return groupPartition(id, n) }

// txnShardFor returns the running shard coordinating id here, or the code
// a request for it gets.
func (b *Broker) txnShardFor(id string) (*txn.Shard, *kerr.Error) {
	img := b.image()
	if img == nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	ti, ok := img.TopicByName(TxnStateTopic)
	if !ok || ti.NumPartitions() == 0 || b.coordinatorTopicProblem(img, TxnStateTopic) != "" {
		return nil, kerr.CoordinatorNotAvailable
	}
	ts := b.txns.shard(txnPartition(id, int32(ti.NumPartitions())))
	if ts == nil {
		return nil, kerr.NotCoordinator
	}
	return ts.shard, nil
}

// createTxnStateTopic asks the active controller to create
// __transaction_state (one request in flight), as createOffsetsTopic.
func (b *Broker) createTxnStateTopic(img *meta.Image) {
	b.createCoordinatorTopic(img, TxnStateTopic, b.txnStatePartitions(), b.cfg.Txns.StateReplicationFactor,
		DefaultTxnStateReplicationFactor, DefaultTxnStateMinISR, &b.txns.creating, "transaction")
}

// closeTxns unloads the shards (their timers stop) and closes the marker
// connections when the broker closes.
func (b *Broker) closeTxns() {
	for _, ts := range b.txns.shards {
		ts.shard.Unload()
	}
	b.txns.shards = nil
	if pc := b.peerConns; pc != nil {
		pc.closeAll()
	}
}
