package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/plant"
	"github.com/strata-log/strata/core/producer"
)

// partState is where a partition's log is in its life.
type partState uint8

const (
	// stateOpening: the log is open but what recovery changed is not yet
	// durable (the log is Busy); the partition serves nothing yet.
	stateOpening partState = iota
	// stateOnline: the log serves reads and appends.
	stateOnline
	// stateFailed: the log failed (or could not be opened); it is closed
	// and reopened after Config.ReopenBackoff.
	stateFailed
	// stateClosed: the partition was removed or the manager closed.
	stateClosed
)

func (s partState) String() string {
	return [...]string{"opening", "online", "failed", "closed"}[s]
}

// Partition is one partition this broker hosts: its log, its place in the
// metadata image (leader, leader epoch, ISR) and its effective topic
// configuration. Every method runs on the manager's loop.
//
// # High watermark
//
// With RF=1 the high watermark is the log's durable offset when the topic
// acknowledges after fsync (flush.messages=1, Strata's default): a consumer
// never sees a record a power loss could take back, so no offset is ever
// read with two different records. In Kafka's page-cache mode (a larger
// flush.messages) it is the log end offset, as in Kafka. It never goes
// backwards while the log is open (asserted by core/log), and recovery
// never loses what was durable, so it never goes backwards across a
// reopen either.
type Partition struct {
	m       *Manager
	topic   string
	id      int32
	topicID meta.UUID
	dir     string
	log     *slog.Logger

	cfg topicConfig
	// leader, leaderEpoch and isr are the image's.
	leader      int32
	leaderEpoch int32
	isr         []int32
	replicas    []int32
	// lastKnownELR is the image's: the replicas forgotten as eligible
	// leaders; leading while listed in it, this broker is recovering
	// (recovery.go). elr is the image's eligible leader replicas.
	lastKnownELR []int32
	elr          []int32

	state partState
	l     *log.Log // nil unless opening or online
	// highWatermark is the highest high watermark this partition set on
	// any of its logs: a reopened log starts from it (restoreHighWatermark).
	highWatermark int64
	// openSlot is set while the partition holds one of the manager's
	// open slots, queued while it waits for one (open.go).
	openSlot, queued bool
	// reopen is the timer that reopens a failed log; failures counts the
	// failures since the partition was last online (the backoff grows).
	reopen   env.Timer
	failures uint
	// unmarked is the durable offset of a log failure whose failure
	// marker the log could not create (hasUnmarked): the reopen creates
	// it first (log.UnmarkedFailure).
	unmarked    int64
	hasUnmarked bool
	// failure is why the partition is in stateFailed.
	failure error
	// damage is set while the log holds damage found while running, on
	// its way back (damage.go).
	damage *damageState

	// watchers run once when the partition's readable state changes: the
	// high watermark moves, leadership changes, the log fails or the
	// partition goes (fetches waiting for data re-evaluate).
	watchers []func()

	// unflushedMessages counts the messages appended since the last flush
	// request in page-cache mode; flushTimer is flush.ms's timer.
	unflushedMessages int64
	flushTimer        env.Timer

	// cleaning is set while a cleaner step is in flight.
	cleaning bool

	// held are the produce calls waiting for the log to open.
	held []heldProduce

	// followers is what this broker, leading, knows of the other
	// replicas, sorted by id; acks are the acks=all produces waiting for
	// the high watermark (replication.go).
	followers []follower
	acks      []pendingAck
	// truncating is set while a follower truncates to its leader's log
	// (fetcher.go).
	truncating bool
	// fetchDelayedUntil is, following, the monotonic time before which
	// the fetcher leaves this partition out of its fetches: its last
	// answer was refused or could not be appended (replica.fetch.backoff.ms
	// for this partition alone, fetcher.go).
	fetchDelayedUntil time.Duration
	// partitionEpoch is the image's; pendingISR an ISR change this
	// leader proposed, in flight (pendingEpoch -1) or accepted and
	// waiting for the image to show partition epoch pendingEpoch
	// (isr.go).
	partitionEpoch int32
	pendingISR     []int32
	pendingEpoch   int32
	// resigning is set while this leader, whose reopened log lost
	// batches a follower may hold, waits for a new leader epoch,
	// appending nothing (lostTail).
	resigning bool
	// followerLag is, following, the leader's high watermark at the last
	// fetch minus the log end (the max lag metric).
	followerLag int64

	// producers is the idempotent producer state and snaps its snapshot
	// files (producers.go); segmentBase is the active segment's base
	// offset when the state was last snapshotted, to notice rolls.
	producers   *producer.State
	snaps       *producer.Snapshots
	segmentBase int64

	// tm are the partition's topic's series; partitionSeries is set while
	// its own (per-partition) series are registered.
	tm              *TopicMetrics
	partitionSeries bool
}

// Topic is the partition's topic name.
func (p *Partition) Topic() string { return p.topic }

// ID is the partition's index in its topic.
func (p *Partition) ID() int32 { return p.id }

// TopicID is the topic's id.
func (p *Partition) TopicID() meta.UUID { return p.topicID }

// Dir is the partition's directory on the disk ("<topic>-<partition>").
func (p *Partition) Dir() string { return p.dir }

// LeaderEpoch is the partition's leader epoch as the image says.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch }

// Online reports whether the log is open and serving.
func (p *Partition) Online() bool { return p.state == stateOnline }

// Log is the partition's log, nil unless it is open. For tests and
// inspection; callers must not change it.
func (p *Partition) Log() *log.Log { return p.l }

// IsLeader reports whether this broker leads the partition and can serve
// it now.
func (p *Partition) IsLeader() bool {
	return p.state == stateOnline && p.leader == p.m.cfg.NodeID && p.m.serving
}

// HighWatermark, LogStartOffset and LogEndOffset are the log's, or -1 when
// it is not open.
func (p *Partition) HighWatermark() int64 { return p.ofLog((*log.Log).HighWatermark, -1) }

// LogStartOffset is the first offset a read may ask for, or -1.
func (p *Partition) LogStartOffset() int64 { return p.ofLog((*log.Log).LogStartOffset, -1) }

// LogEndOffset is the offset of the next append, or -1.
func (p *Partition) LogEndOffset() int64 { return p.ofLog((*log.Log).LogEndOffset, -1) }

// Size is the log's size in bytes, 0 when it is not open.
func (p *Partition) Size() int64 { return p.ofLog((*log.Log).Size, 0) }

// ofLog returns f of the log, or closed when it is not open.
func (p *Partition) ofLog(f func(*log.Log) int64, closed int64) int64 {
	if p.l == nil {
		return closed
	}
	return f(p.l)
}

// Watch registers f to run once, later on the loop, when the partition's
// readable state changes (see Partition.watchers).
func (p *Partition) Watch(f func()) { p.watchers = append(p.watchers, f) }

// wake runs and clears the watchers.
func (p *Partition) wake() {
	if len(p.watchers) == 0 {
		return
	}
	ws := p.watchers
	p.watchers = nil
	for _, f := range ws {
		p.m.e.Post(f)
	}
}

// servable returns nil when the partition can serve a client request for
// its data as leader, else why not: a recovering leader serves only its
// followers' claims (recovery.go).
func (p *Partition) servable() error {
	if err := p.servableToReplicas(); err != nil {
		return err
	}
	if p.recovering() {
		return fmt.Errorf("%w: %s is recovering: it compares its log with its last known ELR's before it serves", ErrNotLeader, p.dir)
	}
	return nil
}

// servableToReplicas returns nil when the partition can serve a replica
// fetch as leader, else why not.
func (p *Partition) servableToReplicas() error {
	switch {
	case p.state == stateFailed:
		return fmt.Errorf("%w: %s: %v", ErrStorage, p.dir, p.failure)
	case p.state == stateClosed:
		return fmt.Errorf("%w: %s was removed", ErrUnknownTopicOrPartition, p.dir)
	case !p.m.serving:
		return fmt.Errorf("%w: this broker is not registered and unfenced yet", ErrNotLeader)
	case p.leader != p.m.cfg.NodeID:
		return fmt.Errorf("%w: %s is led by %d", ErrNotLeader, p.dir, p.leader)
	case p.state == stateOpening:
		return fmt.Errorf("%w: %s is still recovering its log", ErrOpening, p.dir)
	case p.truncating:
		// A truncation begun as a follower is still cutting the log a
		// new leadership would serve from (replicated seed 2455): wait
		// for the reopen, as for an opening log.
		return fmt.Errorf("%w: %s is truncating its log", ErrOpening, p.dir)
	}
	return nil
}

// ErrOpening wraps ErrNotLeader for a partition led here whose log is
// still being opened (its high watermark is not known yet): Produce waits
// for it (held produces), and the broker's fetch waits for it too, so that
// a client told by Metadata that this broker leads a partition created a
// moment ago is not turned away (and, with franz-go, made to wait out its
// 5 s metadata refresh interval).
var ErrOpening = fmt.Errorf("%w (opening)", ErrNotLeader)

// maxHeldProduces bounds the produce calls a partition holds while its
// log opens; past it they are answered NOT_LEADER_OR_FOLLOWER.
const maxHeldProduces = 1024

// heldProduce is a Produce call waiting for the partition to go online.
type heldProduce struct {
	in     produceInput
	acks   int16
	now    time.Time
	verify verifyArg
	done   func(ProduceResult)
}

// releaseHeld runs the produce calls held while the log opened, in order,
// now that it is online (or answers them with why it is not).
func (p *Partition) releaseHeld() {
	held := p.held
	p.held = nil
	for _, h := range held {
		p.produce(h.in, h.acks, h.now, h.verify, h.done)
	}
}

// servableAt is servable for a client request that carries the current
// leader epoch it expects, which it then checks (checkEpoch).
func (p *Partition) servableAt(currentLeaderEpoch int32) error {
	if err := p.servable(); err != nil {
		return err
	}
	return p.checkEpoch(currentLeaderEpoch)
}

// checkEpoch applies KIP-320's current leader epoch check (-1 skips it).
func (p *Partition) checkEpoch(current int32) error {
	switch {
	case current < 0 || current == p.leaderEpoch:
		return nil
	case current < p.leaderEpoch:
		return fmt.Errorf("%w: %s request epoch %d, leader epoch %d", ErrFencedLeaderEpoch, p.dir, current, p.leaderEpoch)
	default:
		return fmt.Errorf("%w: %s request epoch %d, known leader epoch %d", ErrUnknownLeaderEpoch, p.dir, current, p.leaderEpoch)
	}
}

// update takes the partition's new state from the image.
func (p *Partition) update(part meta.Partition, cfg topicConfig) {
	leaderChanged := p.leader != part.Leader || p.leaderEpoch != part.LeaderEpoch
	assert.That(part.LeaderEpoch >= p.leaderEpoch, "%s: leader epoch went back from %d to %d", p.dir, p.leaderEpoch, part.LeaderEpoch)
	assert.That(part.PartitionEpoch >= p.partitionEpoch, "%s: partition epoch went back from %d to %d", p.dir, p.partitionEpoch, part.PartitionEpoch)
	replicasChanged := !slices.Equal(p.replicas, part.Replicas)
	if p.leads() && !leaderChanged && p.pendingISR != nil && slices.Equal(part.ISR, p.pendingISR) && !slices.Equal(p.isr, part.ISR) {
		// The image shows this leader's ISR change: count it once, here
		// (its answer may come after the image, or not at all).
		if len(part.ISR) < len(p.isr) {
			p.m.metrics.isrShrinks.Inc()
		} else {
			p.m.metrics.isrExpands.Inc()
		}
	}
	if part.PartitionEpoch != p.partitionEpoch {
		p.voidClaims()
	}
	p.leader, p.leaderEpoch, p.partitionEpoch = part.Leader, part.LeaderEpoch, part.PartitionEpoch
	if leaderChanged {
		p.pendingISR, p.pendingEpoch = nil, -1
		p.resigning = false
		// A new leadership is fetched at once, whatever the last one
		// refused (Kafka re-adds the partition to its fetcher undelayed).
		p.fetchDelayedUntil = 0
	}
	p.settleISR(part.PartitionEpoch)
	p.isr = slices.Clone(part.ISR)
	p.replicas = slices.Clone(part.Replicas)
	p.lastKnownELR = slices.Clone(part.LastKnownELR)
	p.elr = slices.Clone(part.ELR)
	switch {
	case leaderChanged:
		p.resetFollowers()
	case replicasChanged:
		p.syncFollowers() // a reassignment: the followers that stay keep their state
	}
	if leaderChanged && !p.leads() {
		p.failAcks(fmt.Errorf("%w: %s is now led by %d (epoch %d)", ErrNotLeader, p.dir, p.leader, p.leaderEpoch))
	}
	p.cfg = cfg
	p.syncPartitionMetrics()
	if p.damage != nil {
		p.resolveDamage() // the image may now let it drop the damage
	}
	if p.l != nil && p.l.Config() != cfg.log && p.state == stateOnline {
		// core/log takes its configuration at Open: reopen to apply a
		// changed topic config (a config change is rare; reopening
		// recovers from the page cache, which is quick).
		p.restart("topic config changed")
		return
	}
	if p.state == stateOnline {
		// A new ISR (or flush policy) may move the high watermark.
		p.advanceHighWatermark()
		p.finishRecovery() // a member may have left the replicas
	}
	if leaderChanged {
		p.wake()
		if p.leader != p.m.cfg.NodeID {
			p.releaseHeld()
		}
	}
}

// open opens the partition's log and, once what recovery changed is
// durable, brings it online, within an open slot (open.go).
func (p *Partition) open() {
	if p.state == stateClosed {
		p.releaseOpenSlot()
		return
	}
	if p.l != nil || !p.takeOpenSlot() {
		return
	}
	p.reopen = nil
	if p.hasUnmarked {
		// The failed log could not leave its failure marker: an Open
		// now would trust a page cache that shows the lost writes.
		if err := log.MarkFailed(p.m.e, p.dir, p.unmarked); err != nil && !errors.Is(err, env.ErrIO) {
			p.fail(fmt.Errorf("failure marker: %w", err))
			return
		}
		p.hasUnmarked = false
	}
	if err := p.m.ensurePartitionMetadata(p); err != nil {
		p.fail(fmt.Errorf("partition metadata: %w", err))
		return
	}
	l, err := log.Open(p.m.e, p.dir, p.cfg.log)
	if err != nil {
		p.fail(err)
		return
	}
	p.l, p.state = l, stateOpening
	l.Flush(l.LogEndOffset(), func(err error) {
		if p.l != l || p.state != stateOpening {
			return
		}
		if err != nil {
			p.fail(err)
			return
		}
		p.loadProducers(l)
	})
}

// goOnline serves the partition once its log and producer state are
// recovered.
func (p *Partition) goOnline(l *log.Log) {
	p.releaseOpenSlot()
	p.restoreHighWatermark(l)
	p.state = stateOnline
	p.failures = 0
	if p.damage != nil {
		p.log.Info("the damaged range is dropped; the replica fetches it again", "from_offset", p.damage.from)
		p.damage = nil
	}
	p.log.Info("partition online", "log_start", l.LogStartOffset(), "log_end", l.LogEndOffset(),
		"leader_epoch", p.leaderEpoch, "producers", p.producers.Len())
	p.lostTail(l.LogEndOffset())
	p.advanceHighWatermark()
	p.finishRecovery()
	p.wake()
	p.releaseHeld()
	if p.following() {
		p.m.syncFetchers()
	}
}

// fail takes the partition offline after a log failure and schedules a
// reopen, which recovers what is durable (core/log's failure marker drops
// what a failed fsync may have lost).
//
// A reopen that fails (open runs in stateFailed with no reopen pending)
// schedules the next one: returning there, as for a second failure of
// the same incarnation, left the partition offline for good (log seed
// 3828).
//
// The backoff doubles with every failure in a row, up to maxReopenBackoff,
// and is reset once the partition is online again: a disk that stays
// failed (a filesystem gone read-only until a reboot) is retried every
// few seconds rather than hammered, yet a partition is back within
// seconds of the disk recovering.
//
// Damage in the log (log.DamagedSegment: a batch that fails its checks, a
// page the disk cannot read) is not retried: the reopened log would hold
// it again. The partition stays offline and takes damage.go's way back.
func (p *Partition) fail(err error) {
	if from, ok := log.DamagedSegment(err); ok && p.state != stateClosed {
		p.damaged(from, err)
		return
	}
	if p.state == stateClosed || p.state == stateFailed && p.reopen != nil {
		return
	}
	backoff := p.reopenBackoff()
	p.log.Error("partition log failed; it is reopened after a backoff", "err", err, "backoff", backoff, "failures_in_a_row", p.failures)
	p.releaseOpenSlot()
	p.state, p.failure = stateFailed, err
	p.closeLog()
	p.failAcks(fmt.Errorf("%w: %s: %w", ErrStorage, p.dir, err))
	p.wake()
	p.reopen = p.m.e.AfterFunc(backoff, p.open)
	p.releaseHeld()
}

// maxReopenBackoff bounds the wait between reopens of a failed log.
const maxReopenBackoff = 8 * time.Second

// reopenBackoff is the wait before the next reopen of a failed log: it
// doubles with every failure since the partition was last online.
func (p *Partition) reopenBackoff() time.Duration {
	backoff := min(p.m.cfg.ReopenBackoff<<min(p.failures, 16), max(maxReopenBackoff, p.m.cfg.ReopenBackoff))
	p.failures++
	return backoff
}

// restart closes a healthy log and opens it again.
func (p *Partition) restart(why string) { p.reopenLog(why, true) }

// reopenLog closes a healthy log and opens it again; snapshot says whether
// to snapshot the producer state first (not after a truncation, which left
// the state ahead of the log: the reopen rebuilds it).
func (p *Partition) reopenLog(why string, snapshot bool) {
	p.log.Info("reopening partition log", "reason", why)
	l := p.l
	if snapshot {
		p.snapshotProducers(nil)
	}
	p.closeProducers()
	p.state = stateFailed
	p.failure = errors.New(why)
	p.l = nil
	p.stopFlushTimer()
	p.failAcks(fmt.Errorf("%w: %s is reopening its log", ErrNotLeader, p.dir))
	l.Shutdown(func(err error) {
		if err != nil {
			p.log.Warn("shutdown before reopen", "err", err)
		}
		if p.state == stateFailed && p.l == nil && p.reopen == nil {
			p.open()
		}
	})
	p.wake()
}

// closeLog closes the log at once (pending flush callbacks fail), and
// the producer state with it.
func (p *Partition) closeLog() {
	p.stopFlushTimer()
	p.closeProducers()
	if p.l == nil {
		return
	}
	l := p.l
	p.l = nil
	if d, ok := l.UnmarkedFailure(); ok {
		p.unmarked, p.hasUnmarked = d, true
	}
	if err := l.Close(); err != nil {
		p.log.Warn("closing log", "err", err)
	}
}

// stopReopen cancels a pending reopen of the log.
func (p *Partition) stopReopen() {
	if p.reopen != nil {
		p.reopen.Stop()
		p.reopen = nil
	}
}

// drop closes the partition for good at once, without a final flush (its
// data is about to be deleted).
func (p *Partition) drop() {
	if p.state == stateClosed {
		return
	}
	p.releaseOpenSlot()
	p.state = stateClosed
	p.syncPartitionMetrics()
	p.stopReopen()
	p.closeLog()
	p.failAcks(fmt.Errorf("%w: %s was removed", ErrNotLeader, p.dir))
	p.wake()
	p.releaseHeld()
}

// remove closes the partition for good with a final flush (the manager
// shuts down); done runs once the log is closed.
func (p *Partition) remove(done func()) {
	if p.state == stateClosed {
		p.m.e.Post(done)
		return
	}
	p.releaseOpenSlot()
	p.state = stateClosed
	p.stopReopen()
	p.stopFlushTimer()
	p.failAcks(fmt.Errorf("%w: %s is closing", ErrNotLeader, p.dir))
	p.wake()
	p.releaseHeld()
	if p.l == nil {
		p.closeProducers()
		p.m.e.Post(done)
		return
	}
	l := p.l
	// A snapshot as of the log end, so the next start replays nothing.
	p.snapshotProducers(func(error) {
		p.closeProducers()
		p.l = nil
		l.Shutdown(func(error) { done() })
	})
}

// closeProducers drops the producer state and closes its snapshots.
func (p *Partition) closeProducers() {
	if p.snaps != nil {
		p.snaps.Close()
	}
	p.producers, p.snaps = nil, nil
}

// advanceHighWatermark moves a leader's high watermark to its durable
// offset (or its log end in page-cache mode), bounded by the ISR's other
// members' log ends (replication.go), wakes the watchers and answers the
// acks=all produces it passed. A follower's comes from its leader.
func (p *Partition) advanceHighWatermark() {
	l := p.l
	if l == nil || p.state != stateOnline || !p.leads() || p.truncating {
		// A log being truncated (as a follower, before this leadership)
		// is about to lose its end: its reopen moves the high
		// watermark (replicated seed 2455).
		return
	}
	hw := l.LogEndOffset()
	if p.cfg.durable() {
		hw = min(l.DurableOffset(), hw)
	}
	hw = p.replicatedHighWatermark(hw)
	if hw > l.HighWatermark() {
		p.setHighWatermark(hw)
		p.wake()
	}
	p.completeAcks()
}

// setHighWatermark moves the log's high watermark to hw and remembers it
// in highWatermark. Where the topic acknowledges after fsync, hw is
// durable on this replica (a leader's and a follower's alike): a record
// a consumer may read is one a power loss here cannot take back.
func (p *Partition) setHighWatermark(hw int64) {
	assert.That(!p.cfg.durable() || hw <= p.l.DurableOffset() || plant.Is(plant.HighWatermarkFromLogEnd),
		"%s: high watermark %d past the durable offset %d", p.dir, hw, p.l.DurableOffset())
	p.l.SetHighWatermark(hw)
	p.highWatermark = max(p.highWatermark, hw)
	if p.producers != nil {
		p.producers.HighWatermarkMoved(hw)
	}
}

// restoreHighWatermark gives a log this partition opened again the high
// watermark it had reached, within the log's end. A log starts with its
// high watermark at its log start; a leader whose log failed and
// reopened in the same leader epoch would otherwise judge a follower
// caught up against that, and let one that is far behind into the ISR
// (replicated seed 3647: a follower at 139 joined an ISR whose committed
// records went to 190, was elected, and offset 139 was reused).
func (p *Partition) restoreHighWatermark(l *log.Log) {
	if hw := min(p.highWatermark, l.LogEndOffset()); hw > l.HighWatermark() {
		l.SetHighWatermark(hw)
	}
	if p.producers != nil {
		p.producers.HighWatermarkMoved(l.HighWatermark())
	}
}

// logFailed reports whether err means the log failed, or holds damage
// (damage.go), so that the partition goes offline and recovers (fail).
func logFailed(err error) bool {
	_, damaged := log.DamagedSegment(err)
	return damaged || errors.Is(err, log.ErrLogFailed)
}

func (p *Partition) stopFlushTimer() {
	if p.flushTimer != nil {
		p.flushTimer.Stop()
		p.flushTimer = nil
	}
}

// pageCacheFlush flushes in page-cache mode once flush.messages messages
// were appended, or flush.ms after the first unflushed append.
func (p *Partition) pageCacheFlush(messages int64) {
	p.unflushedMessages += messages
	if p.unflushedMessages >= p.cfg.flushMessages {
		p.flushNow()
		return
	}
	if p.flushTimer == nil && p.cfg.flushInterval < time.Duration(1<<62) {
		p.flushTimer = p.m.e.AfterFunc(p.cfg.flushInterval, func() {
			p.flushTimer = nil
			p.flushNow()
		})
	}
}

func (p *Partition) flushNow() {
	p.unflushedMessages = 0
	p.stopFlushTimer()
	l := p.l
	if l == nil {
		return
	}
	l.Flush(l.LogEndOffset(), func(err error) {
		if err != nil && p.l == l {
			p.fail(err)
		}
	})
}
