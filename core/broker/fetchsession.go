package broker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch sessions (KIP-227): a consumer's full fetch creates a session that
// remembers its partitions and fetch offsets; later, incremental fetches
// name only the partitions that changed (new offsets, added, forgotten),
// and their responses carry only the partitions with something to say
// (records, an error, or a changed high watermark, last stable offset or
// log start offset). Epochs order a session's requests: each incremental
// fetch must carry the epoch after the previous one.

// DefaultMaxFetchSessions is max.incremental.fetch.session.cache.slots,
// Kafka's default: the sessions the broker keeps; past it the least
// recently used is evicted (its client gets FETCH_SESSION_ID_NOT_FOUND
// and starts a new one).
const DefaultMaxFetchSessions = 1000

// Session epochs as KIP-227 defines them.
const (
	initialSessionEpoch = 0  // a full fetch that creates a session
	finalSessionEpoch   = -1 // a full fetch that uses (or closes) none
)

// fetchKey names a partition in a session: by topic id from Fetch v13, by
// name before.
type fetchKey struct {
	topic     string
	topicID   [16]byte
	partition int32
}

// fetchPart is one partition of a fetch: what the client asks, and in a
// session what the last response told it.
type fetchPart struct {
	key                fetchKey
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
	// lastFetchedEpoch is a follower's (Fetch v12+; -1 otherwise).
	lastFetchedEpoch int32
	// sent holds the values of the last response that included the
	// partition; sentOnce is false until one did.
	sent     sentValues
	sentOnce bool
}

type sentValues struct {
	highWatermark, lastStableOffset, logStartOffset int64
	errorCode                                       int16
}

// fetchSession is one session of the cache.
type fetchSession struct {
	id    int32
	epoch int32 // the epoch the next incremental fetch must carry
	parts []*fetchPart
	// byTopicID: the session was created by Fetch v13+ and names topics
	// by id; a request of the other kind cannot continue it.
	byTopicID bool
	lastUsed  time.Duration
}

func (s *fetchSession) find(k fetchKey) int {
	return slices.IndexFunc(s.parts, func(p *fetchPart) bool { return p.key == k })
}

// fetchSessions is the broker's session cache.
type fetchSessions struct {
	max      int
	sessions []*fetchSession // sorted by id
	// rng draws the session ids. They are random, as Kafka's are, and not
	// a counter: a counter starts over when the broker restarts, and a
	// client still holding an id of the previous incarnation would
	// continue another client's session with the same id and epoch,
	// fetching from that client's offsets (log seed 4545: a consumer at
	// offset 43 was served offset 226).
	rng *rand.Rand
}

func (c *fetchSessions) get(id int32) *fetchSession {
	i, ok := slices.BinarySearchFunc(c.sessions, id, func(s *fetchSession, id int32) int { return int(s.id) - int(id) })
	if !ok {
		return nil
	}
	return c.sessions[i]
}

func (c *fetchSessions) remove(id int32) {
	i, ok := slices.BinarySearchFunc(c.sessions, id, func(s *fetchSession, id int32) int { return int(s.id) - int(id) })
	if ok {
		c.sessions = slices.Delete(c.sessions, i, i+1)
	}
}

// create adds a session, evicting the least recently used one when the
// cache is full; it returns nil when sessions are disabled (max 0).
func (c *fetchSessions) create(now time.Duration, byTopicID bool) *fetchSession {
	if c.max <= 0 {
		return nil
	}
	if len(c.sessions) >= c.max {
		lru := 0
		for i, s := range c.sessions {
			if s.lastUsed < c.sessions[lru].lastUsed {
				lru = i
			}
		}
		c.sessions = slices.Delete(c.sessions, lru, lru+1)
	}
	// Ids are positive, random and unused.
	var id int32
	for id == 0 || c.get(id) != nil {
		id = int32(c.rng.Uint32() >> 1)
	}
	s := &fetchSession{id: id, epoch: 1, byTopicID: byTopicID, lastUsed: now}
	i, _ := slices.BinarySearchFunc(c.sessions, s.id, func(s *fetchSession, id int32) int { return int(s.id) - int(id) })
	c.sessions = slices.Insert(c.sessions, i, s)
	return s
}

// sessionError is a fetch refused at the session level.
type sessionError struct {
	code *kerr.Error
	msg  string
}

// openFetch resolves a Fetch request's session (KIP-227) and returns the
// partitions to consider, the session (nil for a sessionless fetch) and
// whether the response is incremental.
func (b *Broker) openFetch(req *kmsg.FetchRequest) (parts []*fetchPart, s *fetchSession, incremental bool, serr *sessionError) {
	byID := req.Version >= 13
	now := b.e.Monotonic()
	reqParts := func() []*fetchPart {
		var out []*fetchPart
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				out = append(out, &fetchPart{
					key:                fetchKey{topic: t.Topic, topicID: t.TopicID, partition: p.Partition},
					fetchOffset:        p.FetchOffset,
					maxBytes:           p.PartitionMaxBytes,
					currentLeaderEpoch: p.CurrentLeaderEpoch,
					lastFetchedEpoch:   p.LastFetchedEpoch,
				})
			}
		}
		if byID {
			for _, p := range out {
				p.key.topic = "" // named by id; resolved per fetch
			}
		}
		return out
	}
	if req.Version < 7 {
		return reqParts(), nil, false, nil
	}
	switch {
	case req.SessionEpoch == finalSessionEpoch:
		// A full fetch without a session; a session id given is closed.
		if req.SessionID > 0 {
			b.sessions.remove(req.SessionID)
		}
		return reqParts(), nil, false, nil
	case req.SessionEpoch == initialSessionEpoch:
		// A full fetch that creates a session (closing one named).
		if req.SessionID > 0 {
			b.sessions.remove(req.SessionID)
		}
		parts := reqParts()
		s := b.sessions.create(now, byID)
		if s != nil {
			s.parts = parts
		}
		return parts, s, false, nil
	}
	s = b.sessions.get(req.SessionID)
	switch {
	case req.SessionID <= 0 || s == nil:
		return nil, nil, false, &sessionError{kerr.FetchSessionIDNotFound, fmt.Sprintf("Fetch session %d not found.", req.SessionID)}
	case s.byTopicID != byID:
		return nil, nil, false, &sessionError{kerr.FetchSessionTopicIDError, "The fetch session names topics the other way (by id or by name) than this request."}
	case req.SessionEpoch != s.epoch:
		return nil, nil, false, &sessionError{kerr.InvalidFetchSessionEpoch, fmt.Sprintf("Fetch session %d expects epoch %d, got %d.", s.id, s.epoch, req.SessionEpoch)}
	}
	s.epoch++
	if s.epoch <= 0 {
		s.epoch = 1
	}
	s.lastUsed = now
	for _, f := range req.ForgottenTopics {
		for _, p := range f.Partitions {
			k := fetchKey{topic: f.Topic, topicID: f.TopicID, partition: p}
			if byID {
				k.topic = ""
			}
			if i := s.find(k); i >= 0 {
				s.parts = slices.Delete(s.parts, i, i+1)
			}
		}
	}
	for _, np := range reqParts() {
		if i := s.find(np.key); i >= 0 {
			p := s.parts[i]
			p.fetchOffset, p.maxBytes, p.currentLeaderEpoch, p.lastFetchedEpoch = np.fetchOffset, np.maxBytes, np.currentLeaderEpoch, np.lastFetchedEpoch
			continue
		}
		s.parts = append(s.parts, np)
	}
	return s.parts, s, true, nil
}
