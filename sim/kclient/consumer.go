package kclient

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/record"
)

// Defaults of ConsumerConfig (fetch.max.wait.ms, fetch.max.bytes,
// max.partition.fetch.bytes; Kafka's are 500 ms, 50 MiB and 1 MiB).
const (
	DefaultMaxWait           = 500 * time.Millisecond
	DefaultMaxBytes          = 1 << 20
	DefaultPartitionMaxBytes = 256 << 10
	// maxDecompressedBytes bounds one batch's decompressed records.
	maxDecompressedBytes = 16 << 20
)

// ConsumerConfig configures a Consumer.
type ConsumerConfig struct {
	// Topics are read whole: every partition, from the earliest offset.
	Topics []string
	// Manual reads only the partitions given with Assign, from the
	// offsets given there (a group member's assignment); Topics are
	// then only looked up in the metadata.
	Manual bool
	// Sessions uses fetch sessions (KIP-227) from Fetch v7.
	Sessions bool
	// MaxWait, MaxBytes and PartitionMaxBytes are the Fetch request's
	// (defaults above); MinBytes is 1.
	MaxWait           time.Duration
	MaxBytes          int32
	PartitionMaxBytes int32
	// ReadCommitted fetches with isolation level 1 (read_committed): the
	// broker answers up to the last stable offset with the aborted
	// transactions in range, and the consumer skips their batches (from
	// each one's first offset up to its abort marker) and every control
	// batch, as the Java client's fetcher does.
	ReadCommitted bool
	// OnFetch learns everything the consumer reads. It must not be nil.
	OnFetch func(FetchEvent)
}

// FetchEventKind says what a FetchEvent reports.
type FetchEventKind uint8

const (
	// Records: a fetch answered for the partition without error; Records
	// (possibly none) are delivered in order, HighWatermark is the
	// answer's.
	Records FetchEventKind = iota + 1
	// Reset: the consumer (re)starts the partition at Offset, from
	// ListOffsets; Session is the new consumer session's number.
	Reset
	// OutOfRange: a fetch at Offset was refused with OFFSET_OUT_OF_RANGE
	// (the consumer resets next).
	OutOfRange
	// Corrupt: the batch at Offset failed validation in two reads with
	// the same bytes (Err says why): the broker serves damaged data.
	Corrupt
)

func (k FetchEventKind) String() string {
	return [...]string{"?", "records", "reset", "out-of-range", "corrupt"}[k]
}

// Record is one consumed record.
type Record struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
}

// Marker is one transaction marker (a control batch) a fetch passed.
type Marker struct {
	Offset     int64
	ProducerID int64
	Commit     bool // a COMMIT marker; ABORT otherwise
}

// FetchEvent is what the consumer learned of one partition.
type FetchEvent struct {
	Kind      FetchEventKind
	Topic     string
	Partition int32
	// Session numbers the consumer's sessions of the partition from 1: a
	// session starts at each Reset and delivers increasing offsets.
	Session int
	Records []Record
	// Markers are the transaction markers (control batches) the answer
	// delivered past the position, in offset order (Records), read
	// committed or not.
	Markers       []Marker
	HighWatermark int64
	// LastStableOffset is the answer's (Records).
	LastStableOffset int64
	// Skipped counts the records of aborted transactions and the control
	// records a read_committed answer held and the consumer skipped
	// (Records).
	Skipped int
	Offset  int64
	// Sent is when the fetch that brought the answer was sent, on the
	// consumer's monotonic clock (Records, OutOfRange, Corrupt): with
	// the event's own time it brackets the instant the broker read the
	// partition.
	Sent time.Duration
	Err  error
}

// cpart is the consumer's state of one partition.
type cpart struct {
	topic     string
	partition int32
	pos       int64 // next offset to read; -1 until ListOffsets answered
	session   int
	listing   bool
	// removed is set once Unassign dropped the partition: answers still
	// in flight for it are ignored.
	removed bool
	// suspect is set after a fetch returned suspicious data at pos: the
	// next read of the same bytes is believed.
	suspect suspicion
}

type suspicion struct {
	active bool
	pos    int64
	digest uint64
}

// cnode is the consumer's state of one broker.
type cnode struct {
	id       int32
	fetching bool
	listing  bool
	failures int
	retryAt  time.Duration
	sess     fetchSession
}

// fetchSession is the client side of a KIP-227 session: its id (0: none),
// the epoch of the next incremental fetch, and the partitions and fetch
// offsets the broker holds for it.
type fetchSession struct {
	id    int32
	epoch int32
	parts []sessPart
}

type sessPart struct {
	topic     string
	partition int32
	offset    int64
}

// Consumer reads every partition of its topics from the earliest offset,
// forever (there are no groups: it is a reader, like kgo's direct
// consuming). It runs on its client's loop.
type Consumer struct {
	// aborted and skipped are the read_committed state of the answer
	// being decoded.
	aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction
	skipped int
	// markers: the answer's transaction markers (decode).
	markers []Marker
	c       *Client
	e       env.Env
	cfg     ConsumerConfig
	parts   []*cpart // sorted by (topic, partition)
	nodes   []*cnode // sorted by id
	dec     *record.Decompressor
	rr      *record.RecordReader

	stats ConsumerStats

	drainTimer env.Timer
	drainAt    time.Duration
	closed     bool
	// sessions is, per partition a Manual consumer was ever assigned,
	// its last session number, so that a partition assigned again
	// starts a new session (looked up only).
	sessions map[TopicPartition]int
}

// ConsumerStats counts what a consumer went through.
type ConsumerStats struct {
	// Fetches and Records count Fetch answers and records delivered.
	Fetches, Records int
	// Suspicious counts batches read again before being believed;
	// Confirmed those read twice the same.
	Suspicious, Confirmed int
	// SessionResets counts fetch sessions dropped after an error.
	SessionResets int
}

// Stats returns the consumer's counters.
func (cn *Consumer) Stats() ConsumerStats { return cn.stats }

// NewConsumer returns a consumer on c; it starts at once.
func NewConsumer(c *Client, cfg ConsumerConfig) *Consumer {
	cfg.MaxWait = orDefault(cfg.MaxWait, DefaultMaxWait)
	cfg.MaxBytes = orDefault(cfg.MaxBytes, DefaultMaxBytes)
	cfg.PartitionMaxBytes = orDefault(cfg.PartitionMaxBytes, DefaultPartitionMaxBytes)
	cn := &Consumer{c: c, e: c.e, cfg: cfg, dec: record.NewDecompressor(maxDecompressedBytes), sessions: map[TopicPartition]int{}}
	cn.rr = record.NewRecordReader(cn.dec)
	c.OnMetadata(cn.drain)
	c.AddTopics(cfg.Topics...)
	return cn
}

// Close stops fetching; answers still in flight are ignored.
func (cn *Consumer) Close() {
	cn.closed = true
	if cn.drainTimer != nil {
		cn.drainTimer.Stop()
	}
	cn.dec.Close()
}

// Position returns a partition's next offset (-1 before it is known) and
// its session number.
func (cn *Consumer) Position(topic string, partition int32) (int64, int) {
	if cp := cn.find(topic, partition); cp != nil {
		return cp.pos, cp.session
	}
	return -1, 0
}

func (cn *Consumer) find(topic string, partition int32) *cpart {
	i, found := slices.BinarySearchFunc(cn.parts, topic, func(cp *cpart, t string) int {
		return cmp.Or(strings.Compare(cp.topic, t), cmp.Compare(cp.partition, partition))
	})
	if !found {
		return nil
	}
	return cn.parts[i]
}

func (cn *Consumer) node(id int32) *cnode {
	i, found := slices.BinarySearchFunc(cn.nodes, id, func(n *cnode, id int32) int { return cmp.Compare(n.id, id) })
	if !found {
		cn.nodes = slices.Insert(cn.nodes, i, &cnode{id: id})
	}
	return cn.nodes[i]
}

// Assign adds a partition to a Manual consumer, read from offset (from
// the earliest offset when offset is negative): a new session starts
// there (a Reset event) once the offset is known. A partition assigned
// already keeps its position.
func (cn *Consumer) Assign(topic string, partition int32, offset int64) {
	i, found := slices.BinarySearchFunc(cn.parts, topic, func(cp *cpart, t string) int {
		return cmp.Or(strings.Compare(cp.topic, t), cmp.Compare(cp.partition, partition))
	})
	if found {
		return
	}
	cp := &cpart{topic: topic, partition: partition, pos: -1, session: cn.sessions[topicPartitionKey(topic, partition)]}
	cn.parts = slices.Insert(cn.parts, i, cp)
	if offset >= 0 {
		cp.pos = offset
		cp.session++
		cn.sessions[topicPartitionKey(topic, partition)] = cp.session
		cn.cfg.OnFetch(FetchEvent{Kind: Reset, Topic: topic, Partition: partition, Session: cp.session, Offset: offset, HighWatermark: -1})
	}
	cn.e.Post(cn.drain)
}

// Unassign drops every partition of a Manual consumer: nothing more is
// read or reported of them.
func (cn *Consumer) Unassign() {
	for _, cp := range cn.parts {
		cp.removed = true
	}
	cn.parts = nil
}

// UnassignPartition drops one partition of a Manual consumer.
func (cn *Consumer) UnassignPartition(topic string, partition int32) {
	if cp := cn.find(topic, partition); cp != nil {
		cp.removed = true
		cn.parts = slices.DeleteFunc(cn.parts, func(x *cpart) bool { return x == cp })
	}
}

// Assigned lists the partitions the consumer reads, sorted.
func (cn *Consumer) Assigned() []TopicPartition {
	out := make([]TopicPartition, len(cn.parts))
	for i, cp := range cn.parts {
		out[i] = TopicPartition{cp.topic, cp.partition}
	}
	return out
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func topicPartitionKey(topic string, partition int32) TopicPartition {
	return TopicPartition{topic, partition}
}

// learnPartitions adds the partitions metadata shows.
func (cn *Consumer) learnPartitions() {
	if cn.cfg.Manual {
		return
	}
	for _, t := range cn.cfg.Topics {
		tm, ok := cn.c.Topic(t)
		if !ok {
			continue
		}
		for _, p := range tm.Partitions {
			i, found := slices.BinarySearchFunc(cn.parts, t, func(cp *cpart, t string) int {
				return cmp.Or(strings.Compare(cp.topic, t), cmp.Compare(cp.partition, p.Partition))
			})
			if !found {
				cn.parts = slices.Insert(cn.parts, i, &cpart{topic: t, partition: p.Partition, pos: -1})
			}
		}
	}
}

func (cn *Consumer) scheduleDrain(at time.Duration) {
	if cn.drainTimer != nil && cn.drainAt <= at {
		return
	}
	if cn.drainTimer != nil {
		cn.drainTimer.Stop()
	}
	cn.drainAt = at
	cn.drainTimer = cn.e.AfterFunc(at-cn.e.Monotonic(), func() {
		cn.drainTimer = nil
		cn.drain()
	})
}

// drain sends what is due: per leader, a ListOffsets for the partitions
// without a position and a Fetch for the others, one of each in flight.
func (cn *Consumer) drain() {
	if cn.closed {
		return
	}
	cn.learnPartitions()
	now := cn.e.Monotonic()
	var leaders []int32
	var groups [][]*cpart
	for _, cp := range cn.parts {
		leader, _, ok := cn.c.Leader(cp.topic, cp.partition)
		if !ok {
			cn.c.RefreshMetadata()
			continue
		}
		i, found := slices.BinarySearch(leaders, leader)
		if !found {
			leaders = slices.Insert(leaders, i, leader)
			groups = slices.Insert(groups, i, nil)
		}
		groups[i] = append(groups[i], cp)
	}
	for i, leader := range leaders {
		nd := cn.node(leader)
		if nd.retryAt > now {
			cn.scheduleDrain(nd.retryAt)
			continue
		}
		var list, fetch []*cpart
		for _, cp := range groups[i] {
			switch {
			case cp.pos < 0 && !cp.listing:
				list = append(list, cp)
			case cp.pos >= 0:
				fetch = append(fetch, cp)
			}
		}
		if len(list) > 0 && !nd.listing {
			cn.listOffsets(nd, list)
		}
		if !nd.fetching && (len(fetch) > 0 || nd.sess.id > 0 && len(nd.sess.parts) > 0) {
			cn.fetch(nd, fetch)
		}
	}
}

// failed backs a broker off after an error.
func (cn *Consumer) failed(nd *cnode) {
	nd.failures++
	nd.retryAt = cn.e.Monotonic() + cn.c.backoff(nd.failures)
	cn.scheduleDrain(nd.retryAt)
}

// listOffsets asks the leader for the earliest offsets of parts.
func (cn *Consumer) listOffsets(nd *cnode, parts []*cpart) {
	nd.listing = true
	req := kmsg.NewPtrListOffsetsRequest()
	for _, cp := range parts {
		cp.listing = true
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != cp.topic {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = cp.topic
			req.Topics = append(req.Topics, rt)
			n++
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = cp.partition, -2 // earliest
		if _, epoch, ok := cn.c.Leader(cp.topic, cp.partition); ok {
			rp.CurrentLeaderEpoch = epoch
		}
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
	}
	cn.c.Do(nd.id, req, 0, func(r kmsg.Response, err error) {
		nd.listing = false
		for _, cp := range parts {
			cp.listing = false
		}
		if cn.closed {
			return
		}
		resp, ok := r.(*kmsg.ListOffsetsResponse)
		if err != nil || !ok {
			cn.failed(nd)
			cn.c.RefreshMetadata()
			return
		}
		clean := true
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				cp := cn.find(rt.Topic, rp.Partition)
				if cp == nil || cp.pos >= 0 || cp.removed {
					continue
				}
				if rp.ErrorCode != 0 || rp.Offset < 0 {
					clean = false
					if refreshesMetadata(rp.ErrorCode) {
						cn.c.RefreshMetadata()
					}
					continue
				}
				cp.pos, cp.suspect = rp.Offset, suspicion{}
				cp.session++
				cn.sessions[topicPartitionKey(cp.topic, cp.partition)] = cp.session
				cn.cfg.OnFetch(FetchEvent{Kind: Reset, Topic: cp.topic, Partition: cp.partition, Session: cp.session, Offset: cp.pos, HighWatermark: -1})
			}
		}
		if clean {
			nd.failures = 0
		} else {
			cn.failed(nd)
		}
		cn.drain()
	})
}

// fetchPos is what a fetch asked of one partition.
type fetchPos struct {
	cp      *cpart
	offset  int64
	session int
	sent    time.Duration
}

// fetch sends one Fetch to the leader for parts (all of them on a full
// fetch; the changed ones, plus forgotten ones, on an incremental one).
func (cn *Consumer) fetch(nd *cnode, parts []*cpart) {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = int32(cn.cfg.MaxWait / time.Millisecond)
	req.MinBytes, req.MaxBytes = 1, cn.cfg.MaxBytes
	if cn.cfg.ReadCommitted {
		req.IsolationLevel = 1
	}
	incremental := cn.cfg.Sessions && nd.sess.id > 0
	req.SessionID, req.SessionEpoch = 0, -1
	switch {
	case incremental:
		req.SessionID, req.SessionEpoch = nd.sess.id, nd.sess.epoch
	case cn.cfg.Sessions:
		req.SessionEpoch = 0 // a full fetch that creates a session
		nd.sess = fetchSession{}
	}
	var asked []fetchPos
	var sess []sessPart
	sent := cn.e.Monotonic()
	for _, cp := range parts {
		asked = append(asked, fetchPos{cp, cp.pos, cp.session, sent})
		sess = append(sess, sessPart{cp.topic, cp.partition, cp.pos})
		if incremental {
			if i := slices.IndexFunc(nd.sess.parts, func(sp sessPart) bool { return sp.topic == cp.topic && sp.partition == cp.partition }); i >= 0 && nd.sess.parts[i].offset == cp.pos {
				continue // the session holds it already
			}
		}
		cn.addFetchPartition(req, cp)
	}
	if incremental {
		for _, sp := range nd.sess.parts {
			if !slices.ContainsFunc(sess, func(x sessPart) bool { return x.topic == sp.topic && x.partition == sp.partition }) {
				cn.forget(req, sp)
			}
		}
	}
	nd.fetching = true
	cn.c.Do(nd.id, req, cn.cfg.MaxWait, func(r kmsg.Response, err error) {
		nd.fetching = false
		if cn.closed {
			return
		}
		resp, ok := r.(*kmsg.FetchResponse)
		if err != nil || !ok {
			// The session's state on the broker is unknown now.
			if nd.sess.id > 0 {
				cn.stats.SessionResets++
			}
			nd.sess = fetchSession{}
			cn.failed(nd)
			cn.c.RefreshMetadata()
			return
		}
		cn.stats.Fetches++
		if resp.ErrorCode != 0 {
			cn.c.log.Debug("fetch refused", "broker", nd.id, "code", codeName(resp.ErrorCode))
			cn.stats.SessionResets++
			nd.sess = fetchSession{}
			cn.failed(nd)
			return
		}
		switch {
		case !cn.cfg.Sessions || resp.SessionID == 0:
			nd.sess = fetchSession{}
		case incremental:
			nd.sess.epoch++
			if nd.sess.epoch <= 0 {
				nd.sess.epoch = 1
			}
			nd.sess.parts = sess
		default:
			nd.sess = fetchSession{id: resp.SessionID, epoch: 1, parts: sess}
		}
		if cn.fetched(nd, resp, asked) {
			nd.failures = 0
		} else {
			cn.failed(nd)
		}
		cn.drain()
	})
}

func (cn *Consumer) addFetchPartition(req *kmsg.FetchRequest, cp *cpart) {
	t, _ := cn.c.Topic(cp.topic)
	n := len(req.Topics)
	if n == 0 || req.Topics[n-1].Topic != cp.topic {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = cp.topic, t.ID
		req.Topics = append(req.Topics, rt)
		n++
	}
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset = cp.partition, cp.pos
	rp.PartitionMaxBytes = cn.cfg.PartitionMaxBytes
	rp.CurrentLeaderEpoch = -1
	if _, epoch, ok := cn.c.Leader(cp.topic, cp.partition); ok {
		rp.CurrentLeaderEpoch = epoch
	}
	req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
}

func (cn *Consumer) forget(req *kmsg.FetchRequest, sp sessPart) {
	t, _ := cn.c.Topic(sp.topic)
	n := len(req.ForgottenTopics)
	if n == 0 || req.ForgottenTopics[n-1].Topic != sp.topic {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID = sp.topic, t.ID
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
		n++
	}
	req.ForgottenTopics[n-1].Partitions = append(req.ForgottenTopics[n-1].Partitions, sp.partition)
}

// fetched handles a Fetch answer; it reports false if a partition had an
// error.
func (cn *Consumer) fetched(nd *cnode, resp *kmsg.FetchResponse, asked []fetchPos) bool {
	for _, b := range resp.Brokers {
		cn.c.learnBroker(b.NodeID, b.Host, b.Port)
	}
	clean := true
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		name := rt.Topic
		if resp.Version >= 13 {
			t, ok := cn.c.TopicByID(rt.TopicID)
			if !ok {
				continue
			}
			name = t.Name
		}
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			i := slices.IndexFunc(asked, func(a fetchPos) bool { return a.cp.topic == name && a.cp.partition == rp.Partition })
			if i < 0 {
				continue
			}
			a := asked[i]
			if a.cp.removed || a.cp.pos != a.offset || a.cp.session != a.session {
				continue // reset meanwhile
			}
			if !cn.partitionFetched(a, rp) {
				clean = false
			}
		}
	}
	return clean
}

// partitionFetched handles one partition of a Fetch answer.
func (cn *Consumer) partitionFetched(a fetchPos, rp *kmsg.FetchResponseTopicPartition) bool {
	cp := a.cp
	switch code := rp.ErrorCode; {
	case code == 0:
	case code == kerr.OffsetOutOfRange.Code:
		cn.cfg.OnFetch(FetchEvent{Kind: OutOfRange, Topic: cp.topic, Partition: cp.partition, Session: cp.session, Offset: a.offset, HighWatermark: rp.HighWatermark, Sent: a.sent})
		cp.pos = -1
		return true
	case code == kerr.NotLeaderForPartition.Code:
		if !cn.c.leaderHint(cp.topic, cp.partition, rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch) {
			cn.c.RefreshMetadata()
		}
		return false
	default:
		if refreshesMetadata(code) {
			cn.c.RefreshMetadata()
		}
		return false
	}
	cn.aborted = cn.aborted[:0]
	if cn.cfg.ReadCommitted {
		cn.aborted = append(cn.aborted, rp.AbortedTransactions...)
		slices.SortFunc(cn.aborted, func(x, y kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
			return cmp.Or(cmp.Compare(x.FirstOffset, y.FirstOffset), cmp.Compare(x.ProducerID, y.ProducerID))
		})
	}
	cn.skipped = 0
	cn.markers = nil
	recs, next, bad := cn.decode(cp, rp.RecordBatches)
	cp.pos = next
	cn.stats.Records += len(recs)
	if bad == nil && cp.suspect.active && next > cp.suspect.pos {
		cp.suspect = suspicion{}
	}
	cn.cfg.OnFetch(FetchEvent{Kind: Records, Topic: cp.topic, Partition: cp.partition, Session: cp.session, Records: recs, Markers: cn.markers, HighWatermark: rp.HighWatermark,
		LastStableOffset: rp.LastStableOffset, Skipped: cn.skipped, Offset: a.offset, Sent: a.sent})
	if bad != nil {
		cn.cfg.OnFetch(FetchEvent{Kind: Corrupt, Topic: cp.topic, Partition: cp.partition, Session: cp.session, Offset: cp.pos, HighWatermark: rp.HighWatermark, Sent: a.sent, Err: bad})
	}
	return true
}

// decode reads a partition's record bytes from cp.pos: it returns the
// records to deliver, the next position and, when the same damaged batch
// was read twice, what is wrong with it.
//
// A batch is suspicious when it does not frame, fails its CRC or does not
// decode (damaged), or when its offsets do not continue the position (the
// first batch must hold it, each record must follow the previous one).
// The records before a suspicious batch are delivered and the batch is
// read again at the next fetch. If the same bytes come back, a damaged
// batch is reported (bad), and one whose offsets do not fit is delivered
// as it is, for the checkers to judge.
func (cn *Consumer) decode(cp *cpart, data []byte) (recs []Record, next int64, bad error) {
	next = cp.pos
	sp := record.NewSplitter(data, math.MaxInt32, record.CheckFraming)
	abortedPIDs := map[int64]bool{} // read_committed: producers inside an aborted transaction
	for sp.Next() {
		b := sp.Batch()
		batchRecs, expect, damage, misplaced := cn.readBatch(cp, b, next)
		if damage == "" && misplaced == "" {
			cn.noteMarker(b, batchRecs)
		}
		if damage == "" && cn.cfg.ReadCommitted && cn.skipAborted(b, abortedPIDs) {
			cn.skipped += len(batchRecs)
			batchRecs = nil
		}
		if damage == "" && misplaced == "" {
			recs = append(recs, batchRecs...)
			next = expect
			continue
		}
		if !cn.confirm(cp, next, b.Bytes(), damage+misplaced) {
			return recs, next, nil
		}
		if damage != "" {
			return recs, next, fmt.Errorf("the batch at position %d was read twice with the same bytes and is damaged: %s", next, damage)
		}
		recs = append(recs, batchRecs...)
		next = expect
	}
	if err := sp.Err(); err != nil && !errors.Is(err, record.ErrTruncated) {
		rest := data[sp.ValidBytes():]
		if cn.confirm(cp, next, rest[:min(len(rest), record.HeaderSize)], err.Error()) {
			return recs, next, fmt.Errorf("the bytes at position %d were read twice the same and do not frame a batch: %w", next, err)
		}
	}
	return recs, next, nil
}

// noteMarker records b if it is a transaction marker holding a record
// past the position (recs: its records there, before any skipping).
func (cn *Consumer) noteMarker(b record.Batch, recs []Record) {
	attrs := b.Attributes()
	if !attrs.IsControl() || !attrs.IsTransactional() || len(recs) == 0 {
		return
	}
	// The control record's key: version (int16), type (int16: 0 abort,
	// 1 commit).
	k := recs[0].Key
	cn.markers = append(cn.markers, Marker{Offset: recs[0].Offset, ProducerID: b.ProducerID(), Commit: len(k) >= 4 && k[2] == 0 && k[3] == 1})
}

// skipAborted reports whether a read_committed consumer skips batch b:
// a control batch, or a transactional batch of a producer whose aborted
// transaction (listed in the answer) began at or before it and whose
// abort marker has not been passed. aborted tracks those producers
// through the answer's batches (the Java client's abortedProducerIds).
func (cn *Consumer) skipAborted(b record.Batch, aborted map[int64]bool) bool {
	for len(cn.aborted) > 0 && cn.aborted[0].FirstOffset <= b.LastOffset() {
		aborted[cn.aborted[0].ProducerID] = true
		cn.aborted = cn.aborted[1:]
	}
	attrs := b.Attributes()
	if attrs.IsControl() {
		if attrs.IsTransactional() {
			delete(aborted, b.ProducerID()) // a marker ends the producer's transaction
		}
		return true
	}
	return attrs.IsTransactional() && aborted[b.ProducerID()]
}

// readBatch decodes b, whose records should start at next (or hold it,
// for the first batch). damage says why b is invalid; misplaced why its
// offsets do not continue the position.
func (cn *Consumer) readBatch(cp *cpart, b record.Batch, next int64) (recs []Record, expect int64, damage, misplaced string) {
	expect = next
	if err := b.ValidateStored(); err != nil {
		return nil, next, err.Error(), ""
	}
	if b.LastOffset() < next {
		misplaced = fmt.Sprintf("batch %d..%d ends before the position %d", b.BaseOffset(), b.LastOffset(), next)
	}
	if err := cn.rr.Reset(b); err != nil {
		return nil, next, err.Error(), ""
	}
	first := next == cp.pos && b.BaseOffset() <= next
	for cn.rr.Next() {
		r := cn.rr.Record()
		if first && r.Offset < next {
			continue // before the position, in the batch that holds it
		}
		if r.Offset != expect && misplaced == "" {
			misplaced = fmt.Sprintf("record at offset %d where %d was expected", r.Offset, expect)
		}
		recs = append(recs, Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: slices.Clone(r.Key), Value: slices.Clone(r.Value)})
		expect = r.Offset + 1
	}
	if err := cn.rr.Err(); err != nil {
		return nil, next, err.Error(), ""
	}
	return recs, expect, "", misplaced
}

// confirm reports whether the suspicious bytes at pos were read before
// (then they are believed); otherwise it remembers them for the next
// read.
func (cn *Consumer) confirm(cp *cpart, pos int64, bytes []byte, problem string) bool {
	digest := digestOf(bytes)
	if cp.suspect.active && cp.suspect.pos == pos && cp.suspect.digest == digest {
		cp.suspect = suspicion{}
		cn.stats.Confirmed++
		return true
	}
	cn.stats.Suspicious++
	cn.c.log.Debug("suspicious batch; reading it again", "topic", cp.topic, "partition", cp.partition, "position", pos, "problem", problem)
	cp.suspect = suspicion{active: true, pos: pos, digest: digest}
	return false
}

func digestOf(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}
