package group

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/coord"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/plant"
)

// Config is a shard's configuration: the broker's group settings (Kafka's
// key names in server.properties) and the Writer of its partition.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout bound a member's
	// session.timeout.ms (group.min.session.timeout.ms, 6 s;
	// group.max.session.timeout.ms, 30 min): outside, JoinGroup answers
	// INVALID_SESSION_TIMEOUT.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms (3 s):
	// the first rebalance of an empty group waits this long (and up to
	// the rebalance timeout) for more members to join.
	InitialRebalanceDelay time.Duration
	// MaxSize is group.max.size: members past it get
	// GROUP_MAX_SIZE_REACHED.
	MaxSize int
	// MaxMemberMetadataBytes bounds a member's protocol metadata and
	// assignment (each): past it, INVALID_REQUEST rather than a record
	// too large for the partition.
	MaxMemberMetadataBytes int
	// OffsetsRetention is offsets.retention.minutes (7 days): a group
	// empty this long loses its committed offsets (a group of simple
	// commits, without members ever, loses each offset this long after
	// its commit), checked every RetentionCheckInterval
	// (offsets.retention.check.interval.ms, 10 minutes).
	OffsetsRetention, RetentionCheckInterval time.Duration
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms
	// (45 s): a consumer-protocol member that does not heartbeat this
	// long is removed. ConsumerHeartbeatInterval is
	// group.consumer.heartbeat.interval.ms (5 s), the interval members
	// are told to heartbeat at.
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
	// ConsumerMaxSize is group.consumer.max.size: consumer-protocol
	// members past it get GROUP_MAX_SIZE_REACHED.
	ConsumerMaxSize int
	// ConsumerAssignors is group.consumer.assignors: the server-side
	// assignors members may ask for (others: UNSUPPORTED_ASSIGNOR), the
	// first the default (uniform, range).
	ConsumerAssignors []string
	// MigrationPolicy is group.consumer.migration.policy (bidirectional):
	// whether a non-empty classic group becomes a consumer group when a
	// consumer-protocol member joins (upgrade), and a consumer group whose
	// last consumer-protocol member leaves goes back to classic
	// (downgrade). Empty groups convert either way whatever it says.
	MigrationPolicy MigrationPolicy
	// Write appends records to the shard's __consumer_offsets partition
	// and runs done once they are committed (the high watermark passed
	// them) or with why not. The shard answers a request that changed
	// state only after done(nil).
	Write func(recs []Record, done func(error))
	// WriteTxn is Write for a TxnOffsetCommit's records: one
	// transactional batch of the producer's id and epoch, as Kafka's
	// coordinator writes them (without it TxnOffsetCommit answers
	// NOT_COORDINATOR). The broker verifies the batch with the
	// transaction coordinator first (KIP-890 part 1), as Kafka's does.
	WriteTxn func(w TxnWrite, recs []Record, done func(error))
}

// TxnWrite says whose transactional batch WriteTxn writes.
type TxnWrite struct {
	// TransactionalID, ProducerID and ProducerEpoch are the
	// TxnOffsetCommit's.
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	// Version is the TxnOffsetCommit's version: v4+ clients take
	// TRANSACTION_ABORTABLE (KIP-890), older ones INVALID_TXN_STATE.
	Version int16
}

// Defaults are Kafka's.
const (
	DefaultMinSessionTimeout     = 6 * time.Second
	DefaultMaxSessionTimeout     = 30 * time.Minute
	DefaultInitialRebalanceDelay = 3 * time.Second
	DefaultMaxMemberMetadata     = 1 << 20
	DefaultOffsetsRetention      = 7 * 24 * time.Hour
	DefaultRetentionCheck        = 10 * time.Minute

	DefaultConsumerSessionTimeout    = 45 * time.Second
	DefaultConsumerHeartbeatInterval = 5 * time.Second
)

func (c Config) withDefaults() Config {
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	if c.MaxSize <= 0 {
		c.MaxSize = math.MaxInt32
	}
	if c.MaxMemberMetadataBytes <= 0 {
		c.MaxMemberMetadataBytes = DefaultMaxMemberMetadata
	}
	if c.OffsetsRetention <= 0 {
		c.OffsetsRetention = DefaultOffsetsRetention
	}
	if c.RetentionCheckInterval <= 0 {
		c.RetentionCheckInterval = DefaultRetentionCheck
	}
	if c.ConsumerSessionTimeout <= 0 {
		c.ConsumerSessionTimeout = DefaultConsumerSessionTimeout
	}
	if c.ConsumerHeartbeatInterval <= 0 {
		c.ConsumerHeartbeatInterval = DefaultConsumerHeartbeatInterval
	}
	if c.ConsumerMaxSize <= 0 {
		c.ConsumerMaxSize = math.MaxInt32
	}
	if len(c.ConsumerAssignors) == 0 {
		c.ConsumerAssignors = Assignors()
	}
	if c.MigrationPolicy == "" {
		c.MigrationPolicy = DefaultMigrationPolicy
	}
	return c
}

// Shard coordinates the groups of one __consumer_offsets partition led by
// this broker. Its methods run on the env's loop.
type Shard struct {
	e   env.Env
	cfg Config
	log *slog.Logger
	// groups by name: looked up only, never iterated for a decision
	// (names lists them in creation order for listings).
	groups map[string]*Group
	names  []string
	// status: loading until Loaded, unloaded once the broker stopped
	// leading the partition.
	status coord.Status
	// retention is the offset retention check's timer.
	retention env.Timer
	// topics is the metadata image's topics sorted by name (SetTopics);
	// topicIDs indexes them by id.
	topics   []TopicInfo
	topicIDs map[[16]byte]int
	// lastOffset undoes the last offset record replayed (a planted bug
	// only: plant.GroupReplayDropsLastOffset).
	lastOffset func()
	// appliedSeq numbers the offsets applied to memory (committed.seq);
	// txnGroups lists, by producer id, the groups holding its pending
	// offsets, in the order they got them (txnoffsets.go).
	appliedSeq int64
	txnGroups  map[int64][]string
}

// NewShard returns a shard that is loading: Replay each record of the
// partition up to its high watermark, then call Loaded.
func NewShard(e env.Env, log *slog.Logger, cfg Config) *Shard {
	assert.That(cfg.Write != nil, "group: a shard needs a Writer")
	return &Shard{e: e, cfg: cfg.withDefaults(), log: log, groups: map[string]*Group{}}
}

// group returns the group called name, creating it (empty) if create.
func (s *Shard) group(name string, create bool) *Group {
	if g, ok := s.groups[name]; ok {
		return g
	}
	if !create {
		return nil
	}
	g := &Group{s: s, name: name, state: StateEmpty, byID: map[string]*member{}, offsets: map[topicPartition]*committed{}}
	s.groups[name] = g
	s.names = append(s.names, name)
	return g
}

// dropGroup forgets a group that is empty and has no offsets.
func (s *Shard) dropGroup(g *Group) {
	g.stopTimers()
	delete(s.groups, g.name)
	s.names = slices.DeleteFunc(s.names, func(n string) bool { return n == g.name })
}

// replayed decodes a record being replayed, in log order; done: nothing
// is left to apply (a consumer-protocol record, replayed here; a record
// skipped; an error).
func (s *Shard) replayed(key, value []byte) (d decodedRecord, done bool, err error) {
	assert.That(!s.status.Loaded(), "group: replay after the shard loaded")
	if isConsumerKey(key) {
		return d, true, s.replayConsumer(key, value)
	}
	d, skip, err := decodeRecord(key, value)
	return d, skip || err != nil, err
}

// Replay applies one record of the partition while loading, in log order.
func (s *Shard) Replay(key, value []byte) error {
	d, done, err := s.replayed(key, value)
	if done {
		return err
	}
	if d.isOffset {
		g := s.group(d.group, d.offset != nil)
		if g == nil {
			return nil
		}
		tp := topicPartition{d.topic, d.partition}
		if plant.Is(plant.GroupReplayDropsLastOffset) {
			prev, had := g.offsets[tp]
			s.lastOffset = func() {
				if had {
					g.offsets[tp] = prev
				} else {
					delete(g.offsets, tp)
				}
				g.sortedOffsets = nil
			}
		}
		if d.offset == nil {
			delete(g.offsets, tp)
		} else {
			d.offset.seq = s.nextSeq()
			g.offsets[tp] = d.offset
		}
		g.sortedOffsets = nil
		return nil
	}
	if d.groupTombstoned {
		// A deleted group's offsets were tombstoned before it; a group
		// that became a consumer group keeps them (and its consumer
		// records follow).
		if g := s.group(d.group, false); g != nil && g.consumer == nil {
			g.restore(&kmsg.GroupMetadataValue{})
			g.protocolType = ""
			if len(g.offsets) == 0 && g.pendingCount() == 0 {
				s.dropGroup(g)
			}
		}
		return nil
	}
	g := s.group(d.group, true)
	if g.consumer != nil {
		g.consumer = nil // back to the classic protocol
	}
	return g.restore(d.groupValue)
}

// Loaded ends the replay: the groups' members get their session timers
// (they must heartbeat to this coordinator within their session timeout)
// and the shard serves.
func (s *Shard) Loaded() {
	if s.lastOffset != nil {
		s.lastOffset()
	}
	s.status.SetLoaded()
	for _, name := range s.names {
		g := s.groups[name]
		for _, m := range g.members {
			g.touch(m)
		}
		if g.consumer != nil {
			g.consumerLoaded()
		}
		s.log.Debug("group loaded", "group", g.name, "state", g.state, "generation", g.generation, "members", len(g.members), "offsets", len(g.offsets))
	}
	s.retention = s.e.AfterFunc(s.cfg.RetentionCheckInterval, s.expireOffsets)
}

// expireOffsets deletes the offsets past offsets.retention.minutes (Kafka's
// rules since KIP-211): all of a group that has members' protocol and has
// been empty that long, and, of a group of simple commits (never any
// member), each offset committed that long ago. A group left empty with no
// offsets is deleted too.
func (s *Shard) expireOffsets() {
	if s.status.Unloaded() {
		return
	}
	defer func() { s.retention = s.e.AfterFunc(s.cfg.RetentionCheckInterval, s.expireOffsets) }()
	now, nowMs := s.e.Monotonic(), s.e.Now().UnixMilli()
	for _, g := range s.Groups() {
		if g.state != StateEmpty || g.writing || g.deleted || g.pendingCount() > 0 {
			continue
		}
		if cg := g.consumer; cg != nil && len(g.offsets) == 0 && len(cg.members) == 0 && cg.issued == cg.completed {
			s.dropEmptyConsumerGroup(g)
			continue
		}
		var expired []topicPartition
		for _, tp := range g.offsetKeys() {
			c := g.offsets[tp]
			if g.protocolType != "" && now-g.emptySince >= s.cfg.OffsetsRetention ||
				g.protocolType == "" && nowMs-c.timestamp >= s.cfg.OffsetsRetention.Milliseconds() {
				expired = append(expired, tp)
			}
		}
		if len(expired) == 0 {
			continue
		}
		recs := make([]Record, 0, len(expired)+1)
		for _, tp := range expired {
			recs = append(recs, offsetRecord(g.name, tp.topic, tp.partition, nil))
		}
		drop := len(expired) == len(g.offsets)
		if drop {
			g.deleted, g.state = true, StateDead // joins meanwhile: COORDINATOR_NOT_AVAILABLE
			recs = append(recs, g.deletionRecords(nowMs)...)
		}
		g.writing = true
		s.write(recs, func(err error) {
			defer g.writeDone()
			if err != nil {
				if drop {
					g.deleted, g.state = false, StateEmpty
				}
				s.log.Warn("expiring offsets failed", "group", g.name, "err", err)
				return
			}
			for _, tp := range expired {
				delete(g.offsets, tp)
			}
			g.sortedOffsets = nil
			s.log.Info("expired committed offsets", "group", g.name, "offsets", len(expired), "group_deleted", drop)
			if drop && s.groups[g.name] == g {
				s.dropGroup(g)
			}
		})
	}
}

// Unload stops the shard (the broker no longer leads its partition):
// requests waiting get NOT_COORDINATOR, timers stop, and every later call
// answers NOT_COORDINATOR.
func (s *Shard) Unload() {
	if !s.status.SetUnloaded() {
		return
	}
	if s.retention != nil {
		s.retention.Stop()
	}
	for _, name := range s.names {
		g := s.groups[name]
		g.stopTimers()
		g.failWaiting(kerr.NotCoordinator)
		g.failConsumerWaiting()
	}
}

// Groups lists the shard's groups in creation order.
func (s *Shard) Groups() []*Group {
	out := make([]*Group, 0, len(s.names))
	for _, n := range s.names {
		out = append(out, s.groups[n])
	}
	return out
}

// Group returns the group called name, or nil.
func (s *Shard) Group(name string) *Group { return s.groups[name] }

// write appends recs and runs done on the loop with the error (nil once
// committed), unless the shard was unloaded meanwhile, in which case done
// gets coord.ErrNotCoordinator.
func (s *Shard) write(recs []Record, done func(error)) {
	s.cfg.Write(recs, s.status.Guard(done))
}

// writeErrorCode maps a failed write to the code Kafka's coordinator
// answers: coord.WriteErrorCode's, but for a transactional offset batch's
// own errors.
func writeErrorCode(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.InvalidProducerEpoch, kerr.ProducerFenced, kerr.InvalidTxnState, kerr.InvalidProducerIDMapping:
			// A transactional offset batch the partition's producer
			// state refused (a fenced producer): the client's error, as
			// Kafka's coordinator passes it through.
			return ke
		case kerr.NetworkException:
			// The transaction verification (KIP-890 part 1) could not
			// reach the transaction coordinator: Kafka's
			// maybeConvertOffsetCommitError makes it a code that older
			// clients retry without a coordinator lookup.
			return kerr.CoordinatorLoadInProgress
		case kerr.TransactionAbortable, kerr.ConcurrentTransactions, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable:
			// The transaction coordinator's answer to the verification.
			return ke
		}
	}
	return coord.WriteErrorCode(err)
}

func (s *Shard) String() string { return fmt.Sprintf("group shard (%d groups)", len(s.names)) }
