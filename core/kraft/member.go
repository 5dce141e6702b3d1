package kraft

import (
	"errors"
	"fmt"
	"github.com/strata-log/strata/core/metrics"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/controller"
	"github.com/strata-log/strata/core/env"
	corelog "github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/quorum"
)

// Member is one running member of the metadata quorum. All its methods
// must be called on the loop of the Env it was started with.
type Member struct {
	e   env.Env
	cfg Config
	log *slog.Logger

	raft *quorum.Raft // nil until what recovery changed is durable
	// journal is the metadata log the Raft reads and writes: core/log
	// segments and snapshot files behind an in-memory mirror (metalog.go).
	journal *metaLog
	snap    snapshotState
	state   *statePersister
	ctrl    *controller.Controller

	// image is the metadata image of everything applied so far.
	image *meta.Image
	// onImage, if set, learns of every new image (SetOnImage).
	onImage func(*meta.Image)
	// soft is the latest role, epoch and leader the Raft reported.
	soft quorum.SoftState
	// activateEpoch is the epoch this member leads and whose leader-change
	// batch it waits to see committed before activating the controller;
	// 0 when not waiting.
	activateEpoch int32
	highWatermark int64

	// Log syncs run one at a time; waitingSync is the newest request made
	// while one was in flight.
	syncing     bool
	waitingSync *quorum.SyncRequest

	// tickets maps a controller ticket to the callback of its Submit.
	tickets map[controller.Ticket]func(kmsg.Response, error)

	net *network

	timer         env.Timer
	timerDeadline time.Duration
	ctrlTickAt    time.Duration
	err           error

	// voter reports whether this member is one of the voters; an observer
	// never runs the controller.
	voter bool
	// closing is set by Close; closed once the member has shut down.
	closing bool
	closed  bool
	// markPending is set while a failed member retries creating its
	// metadata log's failure marker (markUnmarkedFailure); Status hides
	// the failure until then.
	markPending bool

	// metrics is nil with metrics off.
	metrics *memberMetrics
}

// Status is a member's view of itself, for tests, metrics and debugging.
type Status struct {
	// Quorum is the Raft's status; zero until the member has started.
	Quorum quorum.Status
	// Leader and Epoch are the leader this member follows (itself when
	// leading) and its epoch; quorum.NoNode when none is known.
	Leader quorum.NodeID
	Epoch  int32
	// ActiveController reports whether this member's controller is active.
	ActiveController bool
	// Applied is the position of the image.
	Applied meta.Position
	// Err is the fatal error that stopped the member, if any.
	Err error
}

// Start recovers the member's durable state from e.Disk(), listens on its
// controller address and starts the quorum. It returns an error for what
// fails at once (configuration, recovery, the listener); later fatal
// errors stop the member and show in Status().Err. A recovery error
// wrapping env.ErrIO (log.ErrStorageUnavailable from the metadata log
// among them) means the disk refused I/O, for example a filesystem that a
// failed directory sync left read-only until the machine restarts: the
// supervisor starts the member again later.
func Start(e env.Env, cfg Config) (*Member, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	log := e.Logger().With("component", "kraft", "node", int32(cfg.NodeID))
	unclean := cfg.Metrics.Counter(metrics.ControllerUncleanElections)
	ccfg := cfg.Controller
	ccfg.OnUncleanElection = func(topic string, partition, leader int32) {
		unclean.Inc()
		log.Warn("unclean leader election: a replica outside the ISR leads, and records it lacks that were committed are lost",
			"topic", topic, "partition", partition, "leader", leader)
	}
	m := &Member{
		e:       e,
		cfg:     cfg,
		log:     log,
		ctrl:    controller.New(ccfg, e.Rand()),
		image:   meta.Empty(),
		tickets: map[controller.Ticket]func(kmsg.Response, error){},
		soft:    quorum.SoftState{LeaderID: quorum.NoNode},
	}
	durable, err := loadState(e.Disk())
	if err != nil {
		return nil, err
	}
	var snapImage *meta.Image
	m.journal, snapImage, err = openMetaLog(e, cfg, m.log)
	if err != nil {
		return nil, err
	}
	if snapImage != nil {
		// The Raft asks to load its latest snapshot first thing; the
		// image already is that snapshot's.
		m.image = snapImage
	}
	if err := quorum.CheckState(durable, cfg.NodeID, cfg.Quorum.Voters); err != nil {
		end := m.journal.EndOffset()
		m.journal.close()
		return nil, unusableState(err, end)
	}
	m.journal.onFail = m.fail
	if o := cfg.Observer; o != nil && o.LogChanged != nil {
		m.journal.onChange = o.LogChanged
	}
	m.voter = cfg.isVoter()
	m.initMetrics()
	m.state = &statePersister{disk: e.Disk(), done: m.statePersisted}
	m.net = newNetwork(m)
	if err := m.net.listen(); err != nil {
		return nil, err
	}
	m.log.Info("recovered", "state", durable.String(), "log_start", m.journal.StartOffset(),
		"log_end", m.journal.EndOffset().String(), "image", m.image.Position().String(), "voter", m.voter)
	// What recovery changed (a torn tail cut, a trim, a damaged snapshot
	// deleted) must be durable before the Raft is told anything in it is.
	// durable before the Raft is told anything in it is.
	m.journal.settle(func(err error) {
		if err != nil {
			m.fail(fmt.Errorf("kraft: settle the metadata log: %w", err))
			return
		}
		if m.err != nil || m.closed {
			return
		}
		r, err := quorum.New(cfg.Quorum, m.journal, durable, e.Rand(), e.Monotonic())
		if err != nil {
			m.fail(fmt.Errorf("kraft: start quorum: %w", err))
			return
		}
		m.raft = r
		m.net.dialAll()
		m.step(nil)
	})
	return m, nil
}

// Image returns the metadata image of every batch this member applied.
func (m *Member) Image() *meta.Image { return m.image }

// SetOnImage registers f to learn of every image the member applies: after
// each committed batch and after a snapshot is loaded. f runs inside the
// member's own processing: it must not call back into the member
// synchronously (post the work instead).
func (m *Member) SetOnImage(f func(*meta.Image)) { m.onImage = f }

// setImage installs a new image and tells the listener.
func (m *Member) setImage(img *meta.Image) {
	m.image = img
	if o := m.cfg.Observer; o != nil && o.Applied != nil {
		o.Applied(img)
	}
	if m.onImage != nil {
		m.onImage(img)
	}
}

// Addr is the address the controller listener bound (with the real port
// when configured with port 0); empty for an observer without a listener.
func (m *Member) Addr() string {
	if m.net.listener == nil {
		return ""
	}
	return m.net.listener.Addr()
}

// ActiveController is the id of the quorum leader, which runs the active
// controller (Kafka's Metadata ControllerID), or -1 when none is known.
func (m *Member) ActiveController() int32 {
	if m.raft == nil {
		return -1
	}
	leader, _ := m.raft.Leader()
	if leader == quorum.NoNode {
		return -1
	}
	return int32(leader)
}

// Status returns the member's current view of itself.
func (m *Member) Status() Status {
	s := Status{Leader: quorum.NoNode, Applied: m.image.Position(), Err: m.err, ActiveController: m.ctrl.IsLeader()}
	if m.markPending {
		s.Err = nil // not yet safe to restart (markUnmarkedFailure)
	}
	if m.raft != nil {
		s.Quorum = m.raft.Status()
		s.Leader, s.Epoch = m.raft.Leader()
	}
	return s
}

// submitLocal hands a controller request (BrokerRegistration,
// BrokerHeartbeat, CreateTopics, ...) to this member's own controller; done
// runs later on the loop with its response once the records it depends on
// are committed. On a member whose controller is not active (an observer's
// never is) the response is NOT_CONTROLLER: submitLocal never forwards
// (Submit does, and the controller listener must not). A request kind the
// controller does not serve gets an error.
func (m *Member) submitLocal(req kmsg.Request, done func(kmsg.Response, error)) {
	if !controller.Supports(req) {
		m.e.Post(func() {
			done(nil, fmt.Errorf("kraft: %w: %s", controller.ErrUnsupportedRequest, kmsg.NameForKey(req.Key())))
		})
		return
	}
	if m.err != nil || m.closing || !m.voter || m.raft == nil || !m.ctrl.IsLeader() {
		m.e.Post(func() { done(controller.NotControllerResponse(req), nil) })
		return
	}
	if m.metrics != nil {
		done = m.metrics.controllerRequest(req, m.e.Monotonic(), m.e.Monotonic, done)
	}
	m.step(func() {
		ticket, err := m.ctrl.Handle(m.e.Monotonic(), req)
		if err != nil {
			m.e.Post(func() { done(nil, err) })
			return
		}
		m.tickets[ticket] = done
	})
}

// SuspectBroker reports that broker id's listener refused a connection
// (its process is gone): the active controller fences it at once
// (controller.SuspectBroker). Elsewhere it does nothing.
func (m *Member) SuspectBroker(id int32) {
	m.step(func() {
		if m.ctrl.SuspectBroker(m.e.Monotonic(), id) {
			m.log.Info("fenced a broker whose listener refuses connections", "broker", id)
		}
	})
}

// step runs one input against the Raft at the current time: Tick first
// (inputs happen at the Raft's clock), then the input, then everything the
// Raft and the controller produced, then the timer for the next deadline.
func (m *Member) step(input func()) {
	if m.err != nil || m.closed || m.raft == nil {
		return
	}
	now := m.e.Monotonic()
	m.raft.Tick(now)
	if m.ctrl.IsLeader() && now >= m.ctrlTickAt {
		m.ctrl.Tick(now)
		m.ctrlTickAt = now + m.cfg.ControllerTickInterval
	}
	if input != nil {
		input()
	}
	m.drain()
	if m.journal.failed != nil {
		m.fail(m.journal.failed)
		return
	}
	m.arm()
}

// arm sets the timer for the Raft's next deadline (and the controller's
// tick while it is active).
func (m *Member) arm() {
	if m.err != nil || m.closed {
		return
	}
	deadline := m.raft.NextDeadline()
	if m.ctrl.IsLeader() {
		deadline = min(deadline, m.ctrlTickAt)
	}
	if m.timer != nil && m.timerDeadline == deadline {
		return
	}
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	if deadline == noDeadline {
		// Nothing is due (an unattached observer with no fetch in flight):
		// the next input re-arms. A timer at "never" would overflow the
		// env's clock arithmetic (kraft seed 364).
		return
	}
	m.timerDeadline = deadline
	wait := deadline - m.e.Monotonic()
	if m.e.Buggify("kraft/early-timer") {
		// A timer that fires early: the Raft and the controller must
		// find nothing due and wait again.
		wait /= 2
	}
	m.timer = m.e.AfterFunc(wait, func() {
		m.timer = nil
		m.step(nil)
	})
}

// drain handles the Raft's and the controller's outputs until neither has
// any: each may produce input for the other.
func (m *Member) drain() {
	for m.err == nil && (m.raft.HasReady() || m.ctrl.HasReady()) {
		if m.raft.HasReady() {
			m.handleReady(m.raft.Ready())
		}
		if m.err == nil && m.ctrl.HasReady() {
			m.handleControllerReady(m.ctrl.Ready())
		}
	}
}

func (m *Member) handleReady(rd quorum.Ready) {
	if rd.SoftState != nil {
		m.softStateChanged(*rd.SoftState)
	}
	if rd.PersistState != nil {
		m.state.persist(*rd.PersistState)
	}
	if rd.SyncLog != nil {
		m.syncLog(*rd.SyncLog)
	}
	for _, msg := range rd.Messages {
		m.net.send(msg)
	}
	if rd.LoadSnapshot != nil {
		if err := m.loadSnapshot(*rd.LoadSnapshot); err != nil {
			m.fail(err)
			return
		}
	}
	for _, b := range rd.Committed {
		m.snap.records += int64(len(b.Records))
		if err := m.apply(b); err != nil {
			m.fail(err)
			return
		}
	}
	m.highWatermark = rd.HighWatermark
	if m.metrics != nil {
		m.metrics.committed(rd.HighWatermark, m.e.Monotonic())
	}
	m.maybeSnapshot(rd.SnapshotDue)
}

func (m *Member) softStateChanged(s quorum.SoftState) {
	m.log.Info("quorum role", "role", s.Role.String(), "epoch", s.Epoch, "leader", int32(s.LeaderID))
	m.soft = s
	m.metrics.roleChanged(s)
	if o := m.cfg.Observer; o != nil && o.RoleChanged != nil {
		o.RoleChanged(s)
	}
	m.net.fwd.leaderChanged(s.LeaderID)
	if s.Role == quorum.RoleLeader && m.voter && !m.closing {
		// Activate once the epoch's leader-change batch is applied: the
		// image then holds everything before the epoch.
		m.activateEpoch = s.Epoch
		return
	}
	m.activateEpoch = 0
	if m.ctrl.IsLeader() {
		m.log.Info("controller resigns", "epoch", m.ctrl.Epoch())
		m.ctrl.Resign()
	}
}

// apply replays one committed batch into the image, whole.
func (m *Member) apply(b quorum.Batch) error {
	pos := meta.Position{Offset: b.EndOffset() - 1, Epoch: b.Epoch}
	var records []meta.Record
	if b.Kind == quorum.BatchData {
		delta := m.image.NewDelta()
		records = make([]meta.Record, 0, len(b.Records))
		for i, v := range b.Records {
			rec, err := meta.DecodeRecord(v)
			if err != nil {
				return fmt.Errorf("kraft: committed record at offset %d: %w", b.BaseOffset+int64(i), err)
			}
			if err := delta.Replay(rec); err != nil {
				return fmt.Errorf("kraft: committed record at offset %d refused: %w", b.BaseOffset+int64(i), err)
			}
			records = append(records, rec)
		}
		m.setImage(delta.Apply(pos))
	} else {
		// A leader-change batch holds no metadata record; it only moves
		// the position.
		m.setImage(m.image.NewDelta().Apply(pos))
	}
	switch {
	case m.ctrl.IsLeader():
		if err := m.ctrl.Committed(pos, records); err != nil {
			return fmt.Errorf("kraft: controller refused committed batch %s: %w", b, err)
		}
	case b.Kind == quorum.BatchLeaderChange && m.activateEpoch != 0 && b.Epoch == m.activateEpoch:
		m.activateEpoch = 0
		next := m.raft.Status().LogEnd.Offset
		assert.That(next == b.EndOffset(), "kraft: log end %d after the leader-change batch ending at %d, before the controller proposed", next, b.EndOffset())
		m.log.Info("controller active", "epoch", b.Epoch, "next_offset", next)
		now := m.e.Monotonic()
		m.ctrl.BecomeLeader(now, b.Epoch, m.image, next)
		m.ctrlTickAt = now + m.cfg.ControllerTickInterval
	}
	return nil
}

func (m *Member) handleControllerReady(rd controller.Ready) {
	for _, p := range rd.Proposals {
		if !m.ctrl.IsLeader() {
			break
		}
		last, epoch, err := m.raft.Propose(p.Values)
		if err != nil || last != p.LastOffset || epoch != p.Epoch {
			m.log.Warn("proposal not placed where the controller expected; resigning",
				"err", err, "offset", last, "epoch", epoch, "want_offset", p.LastOffset, "want_epoch", p.Epoch)
			m.ctrl.Resign()
			break
		}
		m.metrics.proposedAt(last, m.e.Monotonic())
	}
	for _, r := range rd.Responses {
		done, ok := m.tickets[r.Ticket]
		if !ok {
			continue
		}
		delete(m.tickets, r.Ticket)
		done(r.Msg, nil)
	}
}

func (m *Member) statePersisted(seq uint64, err error) {
	if err != nil {
		m.fail(err)
		return
	}
	m.step(func() { m.raft.StatePersisted(seq) })
}

// syncLog makes the metadata log durable for req; one sync runs at a time, and a sync
// started later covers every write before it, so only the newest waiting
// request needs its own.
func (m *Member) syncLog(req quorum.SyncRequest) {
	m.waitingSync = &req
	if m.syncing {
		return
	}
	req = *m.waitingSync
	m.waitingSync = nil
	m.syncing = true
	m.journal.sync(func(err error) {
		m.syncing = false
		if err != nil {
			m.fail(fmt.Errorf("kraft: sync metadata log: %w", err))
			return
		}
		m.step(func() { m.raft.LogSynced(req.Seq) })
		if m.waitingSync != nil && !m.syncing && m.err == nil {
			m.syncLog(*m.waitingSync)
		}
	})
}

// fail stops the member on an error it cannot continue past: the state
// on disk is still safe, and a restart recovers from it.
func (m *Member) fail(err error) {
	if m.err != nil {
		return
	}
	m.err = err
	m.log.Error("kraft member stopped", "err", err)
	m.stopWork()
	m.markUnmarkedFailure()
}

// stopWork stops what a stopped member no longer does, on failure or
// shutdown: its tick timer stops, its controller resigns (answering what
// it still holds) and its network closes.
func (m *Member) stopWork() {
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	if m.ctrl.IsLeader() {
		m.ctrl.Resign()
		m.handleControllerReady(m.ctrl.Ready())
	}
	m.net.close()
}

// markRetryInterval is how often a stopped member retries creating its
// metadata log's failure marker.
const markRetryInterval = 100 * time.Millisecond

// markUnmarkedFailure creates the metadata log's failure marker when the
// log failed without one (a double fault: its Sync and the marker's
// creation both failed, a full disk): until it exists, a restart of this
// process would trust a page cache showing what the failed Sync lost
// (kraft seeds 375, 394, 1224, 1347). Status reports the failure only
// once the marker exists, so that a supervisor restarts the process only
// then; meanwhile it retries.
func (m *Member) markUnmarkedFailure() {
	if m.journal == nil || m.journal.data == nil {
		return
	}
	d, ok := m.journal.data.UnmarkedFailure()
	if !ok {
		return
	}
	if err := corelog.MarkFailed(m.e, m.journal.data.Dir(), d); err != nil && !errors.Is(err, env.ErrIO) {
		if !m.markPending {
			m.log.Warn("cannot create the metadata log's failure marker; retrying before reporting the failure", "err", err, "durable_offset", d)
		}
		m.markPending = true
		m.e.AfterFunc(markRetryInterval, m.markUnmarkedFailure)
		return
	}
	m.markPending = false
}

// DescribeQuorum reports the quorum as this member sees it when it leads
// (leader, epoch, high watermark, voters and observers with their log end
// offsets and monotonic fetch times). Any other member returns a
// *quorum.NotLeaderError naming the leader it knows, as does a member
// that has not started its quorum yet or has stopped.
func (m *Member) DescribeQuorum() (quorum.QuorumInfo, error) {
	var info quorum.QuorumInfo
	var err error = &quorum.NotLeaderError{LeaderID: quorum.NoNode, Epoch: m.soft.Epoch}
	m.step(func() { info, err = m.raft.DescribeQuorum() })
	return info, err
}

// DescribeQuorumResponse is DescribeQuorum encoded as Kafka's response at
// version, with the monotonic times converted to wall-clock milliseconds;
// a member that does not lead answers NOT_LEADER_OR_FOLLOWER.
func (m *Member) DescribeQuorumResponse(version int16) *kmsg.DescribeQuorumResponse {
	info, err := m.DescribeQuorum()
	return quorum.DescribeQuorumResponse(info, err, version, m.wallMillis)
}

// wallMillis converts a monotonic time of this member's env to wall-clock
// milliseconds.
func (m *Member) wallMillis(t time.Duration) int64 {
	return m.e.Now().Add(-(m.e.Monotonic() - t)).UnixMilli()
}

// Close shuts the member down gracefully. A leader first resigns
// (Raft.Resign: EndQuorumEpoch asks the other voters to elect the most
// up-to-date of them at once, rather than after the fetch timeout) and
// waits until every voter acknowledged it, or closeResignWait of env time;
// then the member stops its timer, its controller and its connections.
// done, if not nil, runs on the loop once the member is closed. Calling
// Close again only runs done once that close completes.
func (m *Member) Close(done func()) {
	finished := func() {
		if done != nil {
			done()
		}
	}
	if m.closing {
		m.whenClosed(finished)
		return
	}
	m.closing = true
	if m.err != nil || m.raft == nil || m.soft.Role != quorum.RoleLeader {
		m.shutdown()
		m.e.Post(finished)
		return
	}
	m.log.Info("closing: resigning leadership", "epoch", m.soft.Epoch)
	m.step(func() { m.raft.Resign() })
	deadline := m.e.Monotonic() + closeResignWait
	var poll func()
	poll = func() {
		if m.err != nil || m.closed || !m.net.awaitingEndQuorumEpoch() || m.e.Monotonic() >= deadline {
			m.shutdown()
			finished()
			return
		}
		m.e.AfterFunc(closePollInterval, poll)
	}
	poll()
}

// whenClosed runs f once the member has shut down.
func (m *Member) whenClosed(f func()) {
	if m.closed || m.err != nil {
		m.e.Post(f)
		return
	}
	m.e.AfterFunc(closePollInterval, func() { m.whenClosed(f) })
}

// shutdown stops the member for good: no more inputs reach the Raft, the
// controller resigns (answering what it still holds) and the network
// closes. The durable state stays as it is; a restart recovers from it.
func (m *Member) shutdown() {
	if m.closed {
		return
	}
	m.closed = true
	m.closing = true
	m.log.Info("kraft member closed")
	m.stopWork()
	m.journal.close()
}
