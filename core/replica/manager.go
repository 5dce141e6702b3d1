package replica

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/record"
)

// Manager owns the partitions this broker hosts: it opens, configures,
// serves and removes their logs as the metadata image says, and runs their
// housekeeping (retention, compaction). Every method runs on the loop of
// its Env.
type Manager struct {
	e   env.Env
	cfg Config
	log *slog.Logger

	img *meta.Image
	// serving is set while this broker is registered in this incarnation
	// and unfenced (the image is caught up): only then does the manager
	// lead partitions or remove directories it does not recognise.
	serving bool
	// swept is set once the data directory was swept for leftovers.
	swept bool

	// parts holds the hosted partitions, sorted by (topic, partition):
	// lookups by binary search, deterministic walks.
	parts []*Partition

	housekeeping env.Timer
	closed       bool

	// fetchers fetch the partitions this broker follows, one per leader
	// broker, sorted by leader (fetcher.go); isrCheck is the timer of
	// the ISR shrink check (isr.go).
	fetchers []*fetcher
	isrCheck env.Timer

	// opens is how many partitions hold an open slot (open.go), and
	// openQueue the partitions waiting for one, in arrival order.
	opens     int
	openQueue []*Partition

	metrics *managerMetrics
	// verifyBuf is the scratch space a leader reads a replica fetch's
	// region into to check it (ReplicaFetch), one per broker.
	verifyBuf []byte

	// records validates the producers' batches Produce validates on the
	// loop (validator); released at each housekeeping round.
	records *record.Validator
}

// validator returns the manager's validator of producers' batches, for
// the loop.
func (m *Manager) validator() *record.Validator {
	if m.records == nil {
		m.records = record.NewValidator()
	}
	return m.records
}

// NewManager returns a manager with no partitions; Apply gives it some.
func NewManager(e env.Env, cfg Config) *Manager {
	m := &Manager{e: e, cfg: cfg.withDefaults(), log: e.Logger().With("component", "replica"), img: meta.Empty()}
	m.initMetrics()
	m.housekeeping = e.AfterFunc(m.cfg.RetentionCheckInterval, m.housekeep)
	m.isrCheck = e.AfterFunc(m.cfg.ReplicaLagTime/2, m.checkISRs)
	return m
}

// Partitions returns the hosted partitions, sorted by topic and partition.
func (m *Manager) Partitions() []*Partition { return slices.Clone(m.parts) }

// Serving reports whether the manager leads partitions now.
func (m *Manager) Serving() bool { return m.serving }

func comparePart(p *Partition, topic string, id int32) int {
	if c := strings.Compare(p.topic, topic); c != 0 {
		return c
	}
	return cmp.Compare(p.id, id)
}

func (m *Manager) find(topic string, id int32) (int, bool) {
	return slices.BinarySearchFunc(m.parts, topic, func(p *Partition, t string) int { return comparePart(p, t, id) })
}

// Lookup returns a hosted partition, or an error the broker answers with:
// UNKNOWN_TOPIC_OR_PARTITION when the image has no such partition,
// NOT_LEADER_OR_FOLLOWER when it exists but is not hosted here.
func (m *Manager) Lookup(topic string, id int32) (*Partition, error) {
	if m.closed {
		return nil, fmt.Errorf("%w: %s-%d", ErrClosed, topic, id)
	}
	if i, ok := m.find(topic, id); ok {
		return m.parts[i], nil
	}
	ti, ok := m.img.TopicByName(topic)
	if !ok {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownTopicOrPartition, topic, id)
	}
	part, ok := ti.Partition(id)
	if !ok {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownTopicOrPartition, topic, id)
	}
	return nil, fmt.Errorf("%w: %s-%d is led by %d and not hosted here", ErrNotLeader, topic, id, part.Leader)
}

// Apply brings the hosted partitions in line with img: partitions whose
// replicas include this broker are opened (or updated: leader, epoch, ISR,
// topic config), the others are closed and their directories deleted.
// serving says whether this broker is registered in this incarnation and
// unfenced; until it first is, the image may be stale (a restarted broker
// replays its local metadata log before catching up), so nothing is
// opened or deleted.
func (m *Manager) Apply(img *meta.Image, serving bool) {
	if m.closed {
		return
	}
	m.img = img
	wasServing := m.serving
	m.serving = serving
	if !serving && !m.swept {
		return
	}
	// What the image says this broker hosts.
	type want struct {
		ti   *meta.TopicImage
		part meta.Partition
	}
	var wanted []want
	for ti := range img.Topics() {
		for part := range ti.Partitions() {
			if slices.Contains(part.Replicas, m.cfg.NodeID) {
				wanted = append(wanted, want{ti, part})
			}
		}
	}
	slices.SortFunc(wanted, func(a, b want) int {
		return cmp.Or(strings.Compare(a.ti.Name(), b.ti.Name()), cmp.Compare(a.part.ID, b.part.ID))
	})
	// Partitions no longer hosted (their topic deleted, or recreated
	// under the same name, or reassigned away) go first, with their
	// directories, so that a recreated topic starts from an empty one.
	kept := m.parts[:0]
	for _, p := range m.parts {
		i, found := slices.BinarySearchFunc(wanted, p, func(w want, p *Partition) int {
			return cmp.Or(strings.Compare(w.ti.Name(), p.topic), cmp.Compare(w.part.ID, p.id))
		})
		if found && wanted[i].ti.ID() == p.topicID {
			kept = append(kept, p)
			continue
		}
		m.removePartition(p)
	}
	clear(m.parts[len(kept):])
	m.parts = kept
	// Then every wanted partition is updated or created.
	hosted := make([]*Partition, 0, len(wanted))
	var cfg topicConfig
	var cfgTopic *meta.TopicImage
	for _, w := range wanted {
		if cfgTopic != w.ti {
			var problems []string
			cfg, _, problems = m.cfg.resolveTopicConfig(img, w.ti.Name(), false)
			for _, pr := range problems {
				m.log.Warn("ignoring an invalid topic config value", "topic", w.ti.Name(), "problem", pr)
			}
			cfgTopic = w.ti
		}
		hosted = append(hosted, m.host(w.ti, w.part, cfg))
	}
	m.parts = hosted
	if !m.swept {
		m.swept = true
		m.sweep()
	}
	if serving != wasServing {
		for _, p := range m.parts {
			p.wake()
		}
	}
	m.syncFetchers()
}

// host returns the Partition for part of ti, creating and opening it when
// new, updating it otherwise.
func (m *Manager) host(ti *meta.TopicImage, part meta.Partition, cfg topicConfig) *Partition {
	if i, ok := m.find(ti.Name(), part.ID); ok && m.parts[i].topicID == ti.ID() {
		p := m.parts[i]
		p.update(part, cfg)
		return p
	}
	dir := partitionDir(ti.Name(), part.ID)
	p := &Partition{
		m: m, topic: ti.Name(), id: part.ID, topicID: ti.ID(), dir: dir,
		log: m.log.With("partition", dir),
		cfg: cfg, leader: part.Leader, leaderEpoch: part.LeaderEpoch, partitionEpoch: part.PartitionEpoch, pendingEpoch: -1, isr: slices.Clone(part.ISR),
		replicas: slices.Clone(part.Replicas), lastKnownELR: slices.Clone(part.LastKnownELR), elr: slices.Clone(part.ELR), tm: m.metrics.topicMetrics(ti.Name()),
	}
	p.syncPartitionMetrics()
	p.resetFollowers()
	p.open()
	return p
}

// removePartition closes p at once (its data is being deleted: no final
// flush) and deletes its directory.
func (m *Manager) removePartition(p *Partition) {
	p.log.Info("partition removed; deleting its directory")
	p.drop()
	m.metrics.releaseTopic(p.topic)
	m.deleteDir(p.dir, p.topicID)
}

// Close stops the housekeeping and shuts every log down cleanly (a final
// flush and recovery checkpoint); done runs on the loop once all are
// closed.
func (m *Manager) Close(done func()) {
	if m.closed {
		m.e.Post(done)
		return
	}
	m.closed = true
	if m.housekeeping != nil {
		m.housekeeping.Stop()
	}
	for _, f := range m.fetchers {
		f.close()
	}
	m.fetchers = nil
	if m.isrCheck != nil {
		m.isrCheck.Stop()
	}
	left := len(m.parts) + 1
	finish := func() {
		left--
		if left == 0 {
			done()
		}
	}
	for _, p := range m.parts {
		p.remove(finish)
	}
	m.parts = nil
	m.e.Post(finish)
}

// housekeep applies retention to every online partition, starts a
// cleaning where one is due, and closes the file handles of logs idle
// since the last round, then rearms itself.
func (m *Manager) housekeep() {
	if m.closed {
		return
	}
	now := m.e.Now()
	if m.records != nil {
		m.records.Release() // an idle broker need not hold its largest batch decompressed
	}
	for _, p := range m.parts {
		if p.state != stateOnline {
			continue
		}
		if _, err := p.l.ApplyRetention(now); err != nil {
			if logFailed(err) {
				p.fail(err)
			}
			continue
		}
		p.expireProducers()
		p.l.SetLastStableOffset(p.LastStableOffset())
		if p.l.Config().CleanupPolicy.Compacts() && !p.cleaning && p.l.CleanerInfo(now).Due {
			m.clean(p, p.l)
		}
		if !p.cleaning {
			p.l.ReleaseIdleFiles()
		}
	}
	m.housekeeping = m.e.AfterFunc(m.cfg.RetentionCheckInterval, m.housekeep)
}

// clean runs a cleaning of p's log in bounded steps, one per loop turn.
func (m *Manager) clean(p *Partition, l *log.Log) {
	p.cleaning = true
	l.SetLastStableOffset(p.LastStableOffset())
	l.CleanStep(m.e.Now(), m.cfg.CleanerStepBytes, func(more bool, err error) {
		if p.l != l || p.state != stateOnline {
			p.cleaning = false
			return
		}
		if err != nil {
			p.cleaning = false
			if logFailed(err) {
				p.fail(err)
				return
			}
			p.log.Warn("cleaning stopped", "err", err)
			return
		}
		if more {
			m.clean(p, l)
			return
		}
		p.cleaning = false
	})
}

// partitionDir is Kafka's directory name of a partition.
func partitionDir(topic string, id int32) string {
	return topic + "-" + strconv.Itoa(int(id))
}

// parsePartitionDir splits a directory name into topic and partition, or
// reports that it is not a partition directory.
func parsePartitionDir(name string) (string, int32, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	id, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || id < 0 || strconv.Itoa(int(id)) != name[i+1:] {
		return "", 0, false
	}
	topic := name[:i]
	if !meta.ValidTopicName(topic) {
		return "", 0, false
	}
	return topic, int32(id), true
}

// retentionCheckNow is for tests: run the housekeeping now.
func (m *Manager) retentionCheckNow() time.Time {
	if m.housekeeping != nil {
		m.housekeeping.Stop()
	}
	m.housekeep()
	return m.e.Now()
}
