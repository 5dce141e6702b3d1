package replica

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/sasl"
	"github.com/strata-log/strata/core/wire"
)

// # Replication, follower side
//
// A broker follows every partition it hosts and does not lead. For each
// leader broker it runs one fetcher: one connection, one Fetch at a time
// (Fetch v13, topic ids, the follower's replica id) batching every
// partition it follows there. For each partition the fetch names the
// follower's log end, the epoch of its last batch and the leader epoch it
// knows. The answer's batches are appended as they are
// (log.AppendReplicated) and replayed into the producer state, so that a
// follower that becomes leader goes on deduplicating; the follower's high
// watermark follows the leader's, bounded by its log end. A diverging
// epoch truncates the log there (durably) and reopens it, rebuilding the
// producer state; an offset out of range truncates to the leader's high
// watermark, or empties the log at the leader's log start when the
// follower is behind it.
//
// The next Fetch is sent only once everything the last one appended is
// durable (in durable mode, flush.messages=1): a fetch offset is then a
// durable log end, which is what the leader's high watermark counts. In
// page-cache mode the follower flushes by the topic's flush policy, as
// Kafka does, and its fetch offset is its log end.

// Follower fetch sizes and waits: Kafka's replica.fetch.* defaults.
const (
	replicaFetchMaxBytes         = 1 << 20  // replica.fetch.max.bytes
	replicaFetchResponseMaxBytes = 10 << 20 // replica.fetch.response.max.bytes
	replicaFetchWait             = 500 * time.Millisecond
	replicaFetchBackoff          = time.Second // replica.fetch.backoff.ms
	replicaFetchTimeout          = 30 * time.Second
	// refusedRedialBackoff paces the redials of a leader whose listener
	// refuses connections (until the metadata names another leader).
	refusedRedialBackoff = 100 * time.Millisecond
)

// fetcher fetches from one leader broker.
type fetcher struct {
	m      *Manager
	leader int32
	// conn is the connection to the leader, dialled when a fetch needs
	// it; the fetcher paces its redials itself (later, laterIn).
	conn *wire.Peer
	// parts are the partitions fetched from this leader, sorted by topic
	// and partition.
	parts    []*Partition
	inflight bool
	// flushing counts the flushes of the last answer still running; the
	// next fetch waits for them.
	flushing int
	retry    env.Timer
	closed   bool
	// sess is the fetch session (KIP-227) held with the leader: after a
	// full fetch creates it, each fetch names only the partitions whose
	// fetch state changed (and forgets those no longer fetched); id 0:
	// none yet.
	sess fetcherSession
	// redialed is set once a lost connection was dialed again at once;
	// a successful fetch clears it.
	redialed bool
}

// fetcherSession is a replica fetch session and what it holds.
type fetcherSession struct {
	id, epoch int32
	parts     []sessionPart
}

// sessionPart is what a session holds for one partition: the values the
// last fetch that named it sent.
type sessionPart struct {
	topicID                           meta.UUID
	partition                         int32
	fetchOffset, logStart             int64
	lastFetchedEpoch, currentLeaderEp int32
}

// sessionKey names a partition in a session.
type sessionKey struct {
	topicID   meta.UUID
	partition int32
}

func (sp sessionPart) key() sessionKey { return sessionKey{sp.topicID, sp.partition} }

// fetchingFrom is what one request asked of a partition, to match the
// answer to the leadership it was asked in.
type fetchingFrom struct {
	p     *Partition
	epoch int32
	l     *log.Log
	asked int64
}

// syncFetchers assigns every online partition this broker follows to the
// fetcher of its leader, and stops fetchers left without partitions.
func (m *Manager) syncFetchers() {
	if m.closed || m.img == nil {
		return
	}
	type want struct {
		leader int32
		p      *Partition
	}
	var wants []want
	if m.serving {
		for _, p := range m.parts {
			if p.following() {
				wants = append(wants, want{p.leader, p})
			}
		}
	}
	kept := m.fetchers[:0]
	for _, f := range m.fetchers {
		var parts []*Partition
		for _, w := range wants {
			if w.leader == f.leader {
				parts = append(parts, w.p)
			}
		}
		addr, ok := m.brokerAddr(f.leader)
		if len(parts) == 0 || !ok || addr != f.conn.Addr() {
			f.close()
			continue
		}
		f.parts = parts
		kept = append(kept, f)
	}
	clear(m.fetchers[len(kept):])
	m.fetchers = kept
	for _, w := range wants {
		if slices.ContainsFunc(m.fetchers, func(f *fetcher) bool { return f.leader == w.leader }) {
			continue
		}
		addr, ok := m.brokerAddr(w.leader)
		if !ok {
			continue // not registered yet: the next image
		}
		f := m.newFetcher(w.leader, addr)
		for _, x := range wants {
			if x.leader == w.leader {
				f.parts = append(f.parts, x.p)
			}
		}
		m.fetchers = append(m.fetchers, f)
	}
	slices.SortFunc(m.fetchers, func(a, b *fetcher) int { return cmp.Compare(a.leader, b.leader) })
	for _, f := range m.fetchers {
		f.fetch()
	}
}

// newFetcher makes the fetcher of leader at addr, not connected yet.
func (m *Manager) newFetcher(leader int32, addr string) *fetcher {
	f := &fetcher{m: m, leader: leader}
	tlsListener := ""
	if m.cfg.ListenerTLS {
		tlsListener = m.cfg.listener()
	}
	f.conn = wire.NewPeer(m.e, wire.PeerConfig{
		Addr:         addr,
		ClientID:     "strata-replica-fetcher-" + strconv.Itoa(int(m.cfg.NodeID)),
		TLSListener:  tlsListener,
		Authenticate: m.login(),
		OnConnected: func() {
			f.fetch()
		},
		OnDialFailed: func(err error) {
			f.m.log.Debug("follower cannot reach its leader", "leader", f.leader, "addr", addr, "err", err)
			if errors.Is(err, env.ErrConnRefused) {
				if f.m.cfg.LeaderRefused != nil {
					f.m.cfg.LeaderRefused(f.leader)
				}
				// Report again soon: the report only counts on the
				// active controller, which may be elected meanwhile
				// (the dead broker's node may have been it).
				f.laterIn(refusedRedialBackoff)
				return
			}
			f.later()
		},
	})
	return f
}

// login is the fetchers' wire.PeerConfig.Authenticate: a SASL login with
// ListenerLogin, nil without one.
func (m *Manager) login() func(*wire.Client, func(error)) {
	login := m.cfg.ListenerLogin
	if login.Mechanism == "" {
		return nil
	}
	login.Nonce = func(n int) []byte {
		out := make([]byte, n)
		rng := m.e.Rand()
		for i := range out {
			out[i] = byte(rng.Uint64())
		}
		return out
	}
	return wire.SASLLogin(func() (*sasl.ClientSession, error) { return sasl.NewClient(login) })
}

// brokerAddr is the host:port of broker id's listener in the image.
func (m *Manager) brokerAddr(id int32) (string, bool) {
	reg, ok := m.img.Broker(id)
	if !ok || reg.Fenced {
		return "", false
	}
	ep, ok := reg.Endpoint(m.cfg.listener())
	if !ok {
		return "", false
	}
	return ep.Host + ":" + strconv.Itoa(int(ep.Port)), true
}

// following reports whether the partition fetches from a leader: hosted
// here, online, not led here, with a leader.
func (p *Partition) following() bool {
	return p.state == stateOnline && !p.leads() && p.leader != meta.NoLeader && !p.truncating
}

func (f *fetcher) close() {
	f.closed = true
	if f.retry != nil {
		f.retry.Stop()
		f.retry = nil
	}
	f.conn.Close()
}

// later retries fetch after the backoff.
func (f *fetcher) later() { f.laterIn(replicaFetchBackoff) }

// laterIn retries fetch after d.
func (f *fetcher) laterIn(d time.Duration) {
	if f.closed || f.retry != nil {
		return
	}
	f.retry = f.m.e.AfterFunc(d, func() {
		f.retry = nil
		f.fetch()
	})
}

// fetch sends the next Fetch if none is in flight and the last answer's
// appends are durable.
func (f *fetcher) fetch() {
	if f.closed || f.inflight || f.flushing > 0 || f.conn.Dialing() || f.retry != nil || len(f.parts) == 0 {
		return
	}
	if !f.conn.Connected() {
		f.conn.Dial() // OnConnected fetches, OnDialFailed retries later
		return
	}
	incremental := f.sess.id > 0
	req, asked, holds, wake := f.request(incremental, f.m.e.Monotonic())
	if len(asked) == 0 {
		if wake > 0 {
			f.laterIn(wake) // every partition is delayed
		}
		return
	}
	f.inflight = true
	// An answer overdue past the leader's wait is a silent leader: the
	// connection is closed.
	_, err := f.conn.Do(req, replicaFetchWait+replicaFetchTimeout, func(r kmsg.Response, err error) {
		f.inflight = false
		if f.closed {
			return
		}
		resp, ok := r.(*kmsg.FetchResponse)
		switch {
		case err == nil && ok && (resp.ErrorCode == kerr.FetchSessionIDNotFound.Code || resp.ErrorCode == kerr.InvalidFetchSessionEpoch.Code):
			// The leader evicted the session or restarted: a full fetch
			// creates a new one, at once.
			f.sess = fetcherSession{}
			f.m.e.Post(f.fetch)
			return
		case err != nil || !ok || resp.ErrorCode != 0:
			f.sess = fetcherSession{} // unknown on the leader now
			f.conn.Reset()
			if err != nil && !f.redialed {
				// A lost connection: dial again at once, once, so that a
				// leader whose process died is known refused (and its
				// broker reported) within a round trip, not a backoff.
				f.redialed = true
				f.m.e.Post(f.fetch)
				return
			}
			f.later()
			return
		}
		switch {
		case resp.SessionID <= 0:
			f.sess = fetcherSession{} // sessions off at the leader: full fetches
		case incremental:
			f.sess.epoch++
			if f.sess.epoch <= 0 {
				f.sess.epoch = 1
			}
			f.sess.parts = holds
		default:
			f.sess = fetcherSession{id: resp.SessionID, epoch: 1, parts: holds}
		}
		f.redialed = false
		f.answered(resp, asked)
	})
	if err != nil {
		f.inflight = false
		f.conn.Reset()
		f.sess = fetcherSession{}
		f.later()
	}
}

// request builds the next Fetch at monotonic time now: every partition
// followed on this leader but those delayed after a refused answer (wake:
// how long until the first of them is due, 0 if none is delayed). With
// nothing to ask, asked is empty.
func (f *fetcher) request(incremental bool, now time.Duration) (req *kmsg.FetchRequest, asked []fetchingFrom, holds []sessionPart, wake time.Duration) {
	req = kmsg.NewPtrFetchRequest()
	req.Version = 13
	req.ReplicaID = f.m.cfg.NodeID
	req.MaxWaitMillis = int32(replicaFetchWait / time.Millisecond)
	req.MinBytes, req.MaxBytes = 1, replicaFetchResponseMaxBytes
	req.SessionID, req.SessionEpoch = f.sess.id, f.sess.epoch
	if !incremental {
		req.SessionEpoch = 0 // a full fetch that creates a session
	}
	// The session's partitions by key: a fetcher may follow thousands of
	// partitions, and a fetch compares each with the session's view
	// (lookups only; the walks below follow f.parts and f.sess.parts).
	var held, holding map[sessionKey]sessionPart
	if incremental {
		held = make(map[sessionKey]sessionPart, len(f.sess.parts))
		for _, sp := range f.sess.parts {
			held[sp.key()] = sp
		}
		holding = make(map[sessionKey]sessionPart, len(f.parts))
	}
	for _, p := range f.parts {
		if !p.following() || p.leader != f.leader {
			continue
		}
		if p.fetchDelayedUntil > now {
			if d := p.fetchDelayedUntil - now; wake == 0 || d < wake {
				wake = d
			}
			continue
		}
		l := p.l
		sp := sessionPart{topicID: p.topicID, partition: p.id, fetchOffset: l.LogEndOffset(), logStart: l.LogStartOffset(),
			lastFetchedEpoch: l.LatestEpoch(), currentLeaderEp: p.leaderEpoch}
		holds = append(holds, sp)
		asked = append(asked, fetchingFrom{p: p, epoch: p.leaderEpoch, l: l, asked: sp.fetchOffset})
		if incremental {
			holding[sp.key()] = sp
			if old, ok := held[sp.key()]; ok && old == sp {
				continue // the session holds it as it is
			}
		}
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].TopicID != p.topicID {
			rt := kmsg.NewFetchRequestTopic()
			rt.TopicID = p.topicID
			req.Topics = append(req.Topics, rt)
			n++
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.id
		rp.CurrentLeaderEpoch = sp.currentLeaderEp
		rp.FetchOffset = sp.fetchOffset
		rp.LastFetchedEpoch = sp.lastFetchedEpoch
		rp.LogStartOffset = sp.logStart
		rp.PartitionMaxBytes = replicaFetchMaxBytes
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
	}
	if len(asked) == 0 {
		return nil, nil, nil, wake
	}
	if incremental {
		for _, old := range f.sess.parts {
			if _, ok := holding[old.key()]; ok {
				continue
			}
			n := len(req.ForgottenTopics)
			if n == 0 || req.ForgottenTopics[n-1].TopicID != old.topicID {
				ft := kmsg.NewFetchRequestForgottenTopic()
				ft.TopicID = old.topicID
				req.ForgottenTopics = append(req.ForgottenTopics, ft)
				n++
			}
			req.ForgottenTopics[n-1].Partitions = append(req.ForgottenTopics[n-1].Partitions, old.partition)
		}
	}
	return req, asked, holds, wake
}

// answered applies a Fetch answer, then fetches again once its appends
// are durable. A partition whose answer is refused or cannot be appended
// is left out of the fetches for the backoff, alone: the others go on at
// once (Kafka's delayed partitions), so that one broken partition does not
// slow every partition this broker follows on that leader to a fetch a
// second (and the acks=all produces waiting on them).
func (f *fetcher) answered(resp *kmsg.FetchResponse, asked []fetchingFrom) {
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			i := slices.IndexFunc(asked, func(a fetchingFrom) bool { return a.p.topicID == rt.TopicID && a.p.id == rp.Partition })
			if i < 0 {
				continue
			}
			a := asked[i]
			p := a.p
			if p.l != a.l || p.leaderEpoch != a.epoch || !p.following() || p.leader != f.leader {
				continue // the partition moved on meanwhile
			}
			if !f.apply(a, rp) {
				p.fetchDelayedUntil = f.m.e.Monotonic() + replicaFetchBackoff
			}
		}
	}
	f.fetch()
}

// apply applies one partition's answer; it reports false when the
// fetcher should back off (an error the next image may resolve).
func (f *fetcher) apply(a fetchingFrom, rp *kmsg.FetchResponseTopicPartition) bool {
	p, l := a.p, a.l
	switch code := rp.ErrorCode; {
	case code == 0:
	case code == kerr.OffsetOutOfRange.Code:
		if a.asked < rp.LogStartOffset {
			p.truncateAndReopen("the leader's log starts after ours ends", func(done func(error)) {
				l.TruncateFullyAndStartAt(rp.LogStartOffset, done)
			})
		} else {
			to := max(rp.HighWatermark, l.HighWatermark())
			p.truncateAndReopen("our log end is out of the leader's range", func(done func(error)) { l.Truncate(to, done) })
		}
		return true
	default:
		p.log.Debug("follower fetch refused", "leader", f.leader, "code", kerr.ErrorForCode(code))
		return false
	}
	if d := rp.DivergingEpoch; d.EndOffset >= 0 {
		// Our last epoch does not end where the leader's does: keep what
		// both logs hold in that epoch (or the last one before it).
		to := min(d.EndOffset, l.LogEndOffset())
		if epoch, end := l.EndOffsetForEpoch(d.Epoch); d.Epoch >= 0 && epoch >= 0 {
			to = min(to, end)
		}
		p.log.Info("truncating to the leader's log (diverging epoch)", "leader", f.leader, "epoch", d.Epoch, "end_offset", d.EndOffset, "to", to)
		p.truncateAndReopen("diverged from the leader", func(done func(error)) { l.Truncate(to, done) })
		return true
	}
	if e, past := epochPast(rp.RecordBatches, a.epoch); past {
		// The leader answers only a fetch in its own epoch, and no batch
		// it wrote or copied is of a later one: the leader's log is
		// damaged (a leader epoch flipped at rest, outside the CRC). Copy
		// nothing; the scrub at its next start drops the batch.
		p.log.Warn("refusing fetched batches of a leader epoch past the leader's (damage on the leader)",
			"leader", f.leader, "leader_epoch", a.epoch, "batch_epoch", e)
		return false
	}
	if len(rp.RecordBatches) > 0 {
		assert.That(p.following() && !p.leads() && p.leader == f.leader && p.leaderEpoch == a.epoch && p.l == l,
			"%s: copying batches from %d in epoch %d while led by %d in epoch %d", p.dir, f.leader, a.epoch, p.leader, p.leaderEpoch)
		info, err := l.AppendReplicated(rp.RecordBatches)
		if info.Batches > 0 {
			p.replayAppended(rp.RecordBatches, info)
		}
		if err != nil {
			if errors.Is(err, log.ErrLogFailed) {
				p.fail(err)
			} else {
				p.log.Warn("follower append failed", "leader", f.leader, "err", err)
			}
			return false
		}
		if p.cfg.durable() {
			f.flushing++
			l.Flush(l.LogEndOffset(), func(err error) {
				f.flushing--
				if err != nil && p.l == l {
					p.fail(err)
				}
				if err == nil && p.l == l {
					p.followHighWatermark(rp.HighWatermark)
				}
				f.fetch()
			})
		} else {
			p.pageCacheFlush(info.LastOffset - info.FirstOffset + 1)
		}
	}
	p.followHighWatermark(rp.HighWatermark)
	p.followerLag = max(rp.HighWatermark-l.LogEndOffset(), 0)
	return true
}

// epochPast finds a batch in batches whose partition leader epoch passes
// epoch, and returns that epoch. Malformed framing is AppendReplicated's to
// report.
func epochPast(batches []byte, epoch int32) (int32, bool) {
	sp := record.NewSplitter(batches, len(batches)+1, record.CheckFraming)
	for sp.Next() {
		if e := sp.Batch().PartitionLeaderEpoch(); e > epoch {
			return e, true
		}
	}
	return 0, false
}

// replayAppended records replicated batches in the producer state and
// snapshots it when the append rolled the log.
func (p *Partition) replayAppended(batches []byte, info log.AppendInfo) {
	sp := record.NewSplitter(batches, len(batches)+1, record.CheckFraming)
	for sp.Next() {
		b := sp.Batch()
		if b.LastOffset() > info.LastOffset {
			break // not appended (a full disk stopped the append)
		}
		t, ended, err := p.producers.ReplayTxn(b)
		if err != nil {
			p.log.Warn("producer state replay of a replicated batch", "err", err)
		}
		if ended {
			if p.noteAborted(t); p.l == nil {
				return // the index refused it: the partition failed and reopens
			}
		}
	}
	if base := p.l.ActiveSegmentBase(); base != p.segmentBase {
		p.segmentBase = base
		p.snapshotProducers(nil)
	}
}

// followHighWatermark moves a follower's high watermark to the leader's,
// bounded by its own log end (in durable mode, by what it has durably).
func (p *Partition) followHighWatermark(leaderHW int64) {
	l := p.l
	if l == nil || p.leads() {
		return
	}
	hw := min(leaderHW, l.LogEndOffset())
	if p.cfg.durable() {
		hw = min(hw, l.DurableOffset())
	}
	if hw > l.HighWatermark() {
		p.setHighWatermark(hw)
		p.wake()
	}
}

// truncateAndReopen runs truncate on the follower's log, then reopens it so
// that the producer state is rebuilt from what is left. The partition
// fetches nothing meanwhile.
func (p *Partition) truncateAndReopen(why string, truncate func(done func(error))) {
	l := p.l
	p.truncating = true
	truncate(func(err error) {
		p.truncating = false
		if p.l != l {
			return
		}
		if err != nil {
			p.fail(fmt.Errorf("truncate (%s): %w", why, err))
			return
		}
		p.reopenLog("truncated: "+why, false)
	})
}
