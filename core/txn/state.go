package txn

// State is a transaction's state, numbered as Kafka stores it.
type State int8

// Kafka's TransactionState values.
const (
	StateEmpty State = iota
	StateOngoing
	StatePrepareCommit
	StatePrepareAbort
	StateCompleteCommit
	StateCompleteAbort
	StateDead
	StatePrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is Kafka's name of the state (DescribeTransactions, ListTransactions).
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "Unknown"
	}
	return stateNames[s]
}

// ParseState reads a state's name.
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

func (s State) preparing() bool { return s == StatePrepareCommit || s == StatePrepareAbort }
func (s State) complete() bool  { return s == StateCompleteCommit || s == StateCompleteAbort }

// txnState is what a record of an id holds: the state memory changes to
// only once its record is committed.
type txnState struct {
	producerID, prevProducerID int64
	// nextProducerID is the id a Prepare state moves to at its Complete
	// state (KIP-890 part 2 with the epoch exhausted), -1 if none.
	nextProducerID int64
	// epoch is the producer epoch; lastEpoch the one before the last bump
	// (-1: none known), which a retried request may carry.
	epoch, lastEpoch int16
	timeoutMs        int32
	state            State
	// partitions sorted, without duplicates.
	partitions        []TopicPartition
	startMs, updateMs int64
	// tv2: the transaction is ended with KIP-890 part 2's epoch bump
	// (EndTxn v5+).
	tv2 bool
}

// Txn is one transactional id of a shard.
type Txn struct {
	id string
	txnState
	// persisted is false for an id whose first record is being written.
	persisted bool
	// pending: a write of this id is in flight.
	pending bool
	// fencing: an InitProducerId is aborting the ongoing transaction with
	// a bumped epoch (Kafka's PrepareEpochFence, never written).
	fencing bool
	// markers is the round of markers in flight, nil if none.
	markers *markerRound
}

// Summary is what DescribeTransactions and ListTransactions tell of an id.
type Summary struct {
	TransactionalID string
	State           State
	ProducerID      int64
	ProducerEpoch   int16
	TimeoutMillis   int32
	StartTimestamp  int64
	Partitions      []TopicPartition
}

func (t *Txn) summary() Summary {
	st := t.state
	if t.fencing {
		st = StatePrepareEpochFence
	}
	start := t.startMs
	if st == StateEmpty {
		start = -1
	}
	return Summary{
		TransactionalID: t.id, State: st, ProducerID: t.producerID, ProducerEpoch: t.epoch,
		TimeoutMillis: t.timeoutMs, StartTimestamp: start, Partitions: append([]TopicPartition(nil), t.partitions...),
	}
}
