package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/coord"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/txn"
)

// # The transaction coordinator
//
// As the group coordinator (groups.go): transactional ids live in
// __transaction_state, a compacted, replicated topic of
// transaction.state.log.num.partitions partitions that the first
// FindCoordinator of key type 1 creates; an id belongs to partition
// coord.PartitionFor(id, partitions); the coordinator runtime (core/coord)
// runs a txn.Shard for each partition led here with its log online. A
// shard gets producer ids from the broker's blocks (initproducerid.go) and
// sends markers through txnMarkers (txnmarkers.go).

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

// txnCoordinator is the broker's transaction state.
type txnCoordinator struct {
	// rt runs a txn.Shard per __transaction_state partition led here.
	rt       *coord.Runtime[*txn.Shard]
	creating bool
	markers  *txnMarkers
}

// newTxnRuntime is the transaction coordinator's runtime.
func (b *Broker) newTxnRuntime() *coord.Runtime[*txn.Shard] {
	return coord.New(b.e, b.log, coordConfig(b, TxnStateTopic, "transaction", b.newTxnShard, b.SyncTxns))
}

// newTxnShard makes the shard of a partition being loaded: its
// coordinator epoch is the partition's leader epoch.
func (b *Broker) newTxnShard(ts *coord.Slot[*txn.Shard]) *txn.Shard {
	if b.txns.markers == nil {
		b.txns.markers = newTxnMarkers(b)
	}
	cfg := b.cfg.Txns.Coordinator
	cfg.CoordinatorEpoch = ts.LeaderEpoch
	cfg.Write = ts.Write
	cfg.AllocateProducerID = func(done func(int64, *kerr.Error)) {
		b.allocateProducerID(func(id int64, err *kerr.Error, _ string) { done(id, err) })
	}
	cfg.Markers = b.txns.markers
	cfg.PartitionExists = b.txnPartitionExists
	return txn.NewShard(b.e, b.log.With("txn_partition", ts.Partition), cfg)
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
	_, ti := b.imageTopic(TxnStateTopic)
	b.txns.rt.Sync(ti)
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

// txnShardFor returns the running shard coordinating id here, or the code
// a request for it gets (shardFor).
func (b *Broker) txnShardFor(id string) (*txn.Shard, *kerr.Error) {
	return shardFor(b, b.txns.rt, TxnStateTopic, id)
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
	b.txns.rt.UnloadAll()
	if pc := b.peerConns; pc != nil {
		pc.closeAll()
	}
}
