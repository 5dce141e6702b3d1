package kclient

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"

	"github.com/strata-log/strata/core/env"
)

// Defaults of Config, scaled down from the Java client's so that a
// simulated run sees many timeouts and refreshes in a few seconds.
const (
	// DefaultRequestTimeout is request.timeout.ms (Kafka: 30 s).
	DefaultRequestTimeout = 3 * time.Second
	// DefaultRetryBackoff and DefaultRetryBackoffMax bound the
	// exponential backoff of retries, reconnects and metadata refreshes
	// (retry.backoff.ms, retry.backoff.max.ms: 100 ms and 1 s).
	DefaultRetryBackoff    = 50 * time.Millisecond
	DefaultRetryBackoffMax = time.Second
	// DefaultMetadataMaxAge is metadata.max.age.ms (Kafka: 5 minutes).
	DefaultMetadataMaxAge = 5 * time.Second
)

// Config configures a Client.
type Config struct {
	// ClientID is sent in every request header.
	ClientID string
	// Bootstrap lists "host:port" addresses to ask for the first
	// metadata (bootstrap.servers).
	Bootstrap []string
	// RequestTimeout bounds each request from its submission to its
	// answer (DefaultRequestTimeout). A Fetch gets its max wait on top.
	RequestTimeout time.Duration
	// RetryBackoff and RetryBackoffMax bound retries' exponential backoff
	// (DefaultRetryBackoff, DefaultRetryBackoffMax); each wait is drawn
	// within ±20% of its nominal value.
	RetryBackoff, RetryBackoffMax time.Duration
	// MetadataMaxAge is how often metadata is refreshed without a reason
	// (DefaultMetadataMaxAge).
	MetadataMaxAge time.Duration
	// MaxVersions caps the version sent per API key (kmsg.Key values);
	// keys not listed go up to what the broker and kmsg support. Only
	// looked up, never iterated.
	MaxVersions map[int16]int16
	// SASL, when set, logs every connection in (SaslHandshake v1 and
	// SaslAuthenticate) before its first request: the brokers' listener
	// is SASL_PLAINTEXT. A refused login fails the connection attempt
	// (the queued requests end ErrNotSent wrapping an *AuthError) and the
	// next attempt waits the backoff.
	SASL *SASL
}

// orDefault is v, or def for a setting left unset (zero or negative).
func orDefault[T ~int | ~int32 | ~int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (c Config) withDefaults() Config {
	c.RequestTimeout = orDefault(c.RequestTimeout, DefaultRequestTimeout)
	c.RetryBackoff = orDefault(c.RetryBackoff, DefaultRetryBackoff)
	if c.RetryBackoffMax < c.RetryBackoff {
		c.RetryBackoffMax = max(DefaultRetryBackoffMax, c.RetryBackoff)
	}
	c.MetadataMaxAge = orDefault(c.MetadataMaxAge, DefaultMetadataMaxAge)
	return c
}

// PartitionMetadata is what the client knows of one partition.
type PartitionMetadata struct {
	Partition   int32
	Leader      int32 // -1: none
	LeaderEpoch int32
	ErrorCode   int16
	// Replicas is the assignment, in preference order.
	Replicas []int32
}

// TopicMetadata is what the client knows of one topic.
type TopicMetadata struct {
	Name       string
	ID         [16]byte
	ErrorCode  int16
	Partitions []PartitionMetadata // sorted by partition
}

// Client is the connection and metadata layer a Producer and a Consumer
// share. All of it runs on the loop of its env.Env.
type Client struct {
	e   env.Env
	cfg Config
	log *slog.Logger

	// brokers: the bootstrap seeds (ids -1, -2, ...) then the nodes
	// Metadata named, sorted by id; nodes are never forgotten.
	brokers []*broker

	topics []TopicMetadata // sorted by name
	wanted []string        // topics to ask Metadata for, sorted

	metaInflight bool
	metaWanted   bool
	metaTimer    env.Timer
	metaLast     time.Duration
	metaFailures int
	metaRefresh  env.Timer
	listeners    []func()
	// notifyPending is set while a run of the listeners is posted.
	notifyPending bool
	// metaBrokers is the number of brokers the last Metadata answer
	// listed.
	metaBrokers int

	closed bool
	// scram is Config.SASL's SCRAM client, made at the first login and
	// kept for its cache of derived keys.
	scram *scram.Client
}

// scramClient is the client's SCRAM client, nil when Config.SASL is not
// SCRAM (or names a user the library refuses: the login then fails).
func (c *Client) scramClient() *scram.Client {
	if c.scram == nil && c.cfg.SASL != nil && c.cfg.SASL.Mechanism.IsScram() {
		c.scram, _ = newScramClient(c.e, *c.cfg.SASL)
	}
	return c.scram
}

// New returns a client; it connects on the first request.
func New(e env.Env, cfg Config) *Client {
	c := &Client{e: e, cfg: cfg.withDefaults()}
	c.log = e.Logger().With("component", "kclient", "client", c.cfg.ClientID)
	for i, addr := range c.cfg.Bootstrap {
		c.brokers = append(c.brokers, &broker{c: c, id: int32(-1 - i), addr: addr})
	}
	c.scheduleRefresh()
	return c
}

// Close closes every connection; queued requests end as not sent, pending
// ones as unknown. Nothing runs after it but those callbacks.
func (c *Client) Close() {
	if c.closed {
		return
	}
	c.closed = true
	for _, t := range []env.Timer{c.metaTimer, c.metaRefresh} {
		if t != nil {
			t.Stop()
		}
	}
	for _, b := range c.brokers {
		b.close()
	}
}

// Env is the client's env.
func (c *Client) Env() env.Env { return c.e }

// Logger is the client's logger.
func (c *Client) Logger() *slog.Logger { return c.log }

// AddTopics makes Metadata ask for topics from now on, and refreshes
// when one is new.
func (c *Client) AddTopics(topics ...string) {
	added := false
	for _, t := range topics {
		if i, found := slices.BinarySearch(c.wanted, t); !found {
			c.wanted = slices.Insert(c.wanted, i, t)
			added = true
		}
	}
	if added {
		c.RefreshMetadata()
	}
}

// OnMetadata registers f to run after every metadata update (a refresh
// or a leader hint).
func (c *Client) OnMetadata(f func()) { c.listeners = append(c.listeners, f) }

// MetadataBrokers is the number of brokers the last Metadata answer
// listed (alive and unfenced, as the answering broker saw them).
func (c *Client) MetadataBrokers() int { return c.metaBrokers }

// Topic returns what the client knows of a topic.
func (c *Client) Topic(name string) (TopicMetadata, bool) {
	i, found := slices.BinarySearchFunc(c.topics, name, func(t TopicMetadata, n string) int { return strings.Compare(t.Name, n) })
	if !found {
		return TopicMetadata{}, false
	}
	return c.topics[i], true
}

// TopicByID returns the topic with id.
func (c *Client) TopicByID(id [16]byte) (TopicMetadata, bool) {
	for _, t := range c.topics {
		if t.ID == id {
			return t, true
		}
	}
	return TopicMetadata{}, false
}

// Leader returns a partition's leader and leader epoch; ok is false when
// the client knows no leader.
func (c *Client) Leader(topic string, partition int32) (leader, epoch int32, ok bool) {
	p := c.partition(topic, partition)
	if p == nil || p.Leader < 0 {
		return -1, -1, false
	}
	return p.Leader, p.LeaderEpoch, true
}

func (c *Client) partition(topic string, partition int32) *PartitionMetadata {
	i, found := slices.BinarySearchFunc(c.topics, topic, func(t TopicMetadata, n string) int { return strings.Compare(t.Name, n) })
	if !found {
		return nil
	}
	ps := c.topics[i].Partitions
	j, found := slices.BinarySearchFunc(ps, partition, func(p PartitionMetadata, id int32) int { return cmp.Compare(p.Partition, id) })
	if !found {
		return nil
	}
	return &ps[j]
}

// Do sends req to broker node (a node id from Metadata) and calls done
// later with the answer or an error (ErrNotSent, ErrTimeout, ErrConnLost;
// see OutcomeUnknown). extra adds to the request timeout (a Fetch's max wait).
func (c *Client) Do(node int32, req kmsg.Request, extra time.Duration, done func(kmsg.Response, error)) {
	c.do(c.broker(node), req, false, extra, done)
}

// DoAny sends req to any broker: a node from Metadata, or a bootstrap
// seed before any is known.
func (c *Client) DoAny(req kmsg.Request, done func(kmsg.Response, error)) {
	c.do(c.anyBroker(), req, false, 0, done)
}

// send is Do for an acks=0 produce: done runs with a nil response once
// the request is handed to the transport.
func (c *Client) sendNoResponse(node int32, req kmsg.Request, done func(error)) {
	c.do(c.broker(node), req, true, 0, func(_ kmsg.Response, err error) { done(err) })
}

func (c *Client) do(b *broker, req kmsg.Request, noResponse bool, extra time.Duration, done func(kmsg.Response, error)) {
	switch {
	case c.closed:
		c.e.Post(func() { done(nil, fmt.Errorf("%w: client closed", ErrNotSent)) })
	case b == nil:
		c.e.Post(func() { done(nil, fmt.Errorf("%w: no known broker for %s", ErrNotSent, kmsg.NameForKey(req.Key()))) })
	default:
		b.submit(&call{req: req, noResponse: noResponse, done: done}, c.cfg.RequestTimeout+extra)
	}
}

// broker returns the broker with node id id, or nil.
func (c *Client) broker(id int32) *broker {
	i, found := slices.BinarySearchFunc(c.brokers, id, func(b *broker, id int32) int { return cmp.Compare(b.id, id) })
	if !found {
		return nil
	}
	return c.brokers[i]
}

// anyBroker picks a broker at random: among the connected nodes when some
// are, else among all nodes, else among the seeds.
func (c *Client) anyBroker() *broker {
	var nodes, ready []*broker
	for _, b := range c.brokers {
		if b.id < 0 {
			continue
		}
		nodes = append(nodes, b)
		if b.state == connReady {
			ready = append(ready, b)
		}
	}
	pool := ready
	if len(pool) == 0 {
		pool = nodes
	}
	if len(pool) == 0 {
		for _, b := range c.brokers {
			if b.id < 0 {
				pool = append(pool, b)
			}
		}
	}
	if len(pool) == 0 {
		return nil
	}
	return pool[c.e.Rand().IntN(len(pool))]
}

// backoff is the wait before attempt n+1 after n failures.
func (c *Client) backoff(n int) time.Duration {
	d := c.cfg.RetryBackoff
	for i := 1; i < n && d < c.cfg.RetryBackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.cfg.RetryBackoffMax)
	return time.Duration(float64(d) * (0.8 + 0.4*c.e.Rand().Float64()))
}

// Backoff is the client's backoff after n consecutive failures, for its
// producers and consumers.
func (c *Client) Backoff(n int) time.Duration { return c.backoff(n) }

// connectionFailed runs when a connection attempt to b failed: the
// cluster may have changed, so metadata is refreshed.
func (c *Client) connectionFailed(b *broker) {
	if b.id >= 0 {
		c.RefreshMetadata()
	}
}

// RefreshMetadata asks for a metadata refresh: now, or once the previous
// one is answered and the backoff has passed. Requests coalesce.
func (c *Client) RefreshMetadata() {
	c.metaWanted = true
	c.pumpMetadata()
}

func (c *Client) scheduleRefresh() {
	c.metaRefresh = c.e.AfterFunc(c.cfg.MetadataMaxAge, func() {
		c.RefreshMetadata()
		c.scheduleRefresh()
	})
}

func (c *Client) pumpMetadata() {
	if c.closed || c.metaInflight || !c.metaWanted {
		return
	}
	wait := c.cfg.RetryBackoff
	if c.metaFailures > 0 {
		wait = c.backoff(c.metaFailures)
	}
	if at := c.metaLast + wait; at > c.e.Monotonic() && c.metaLast > 0 {
		if c.metaTimer == nil {
			c.metaTimer = c.e.AfterFunc(at-c.e.Monotonic(), func() {
				c.metaTimer = nil
				c.pumpMetadata()
			})
		}
		return
	}
	c.metaWanted, c.metaInflight = false, true
	c.metaLast = max(c.e.Monotonic(), 1)
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range c.wanted {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	if req.Topics == nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	c.DoAny(req, func(r kmsg.Response, err error) {
		c.metaInflight = false
		resp, ok := r.(*kmsg.MetadataResponse)
		if err != nil || !ok {
			c.metaFailures++
			c.metaWanted = true
			c.log.Debug("metadata refresh failed", "err", err)
			c.pumpMetadata()
			return
		}
		c.metaFailures = 0
		c.applyMetadata(resp)
		c.pumpMetadata()
	})
}

// applyMetadata takes brokers and topics from a Metadata answer. A
// partition whose leader epoch is older than the one known keeps what is
// known (an answer from a broker whose image lags, KIP-320).
func (c *Client) applyMetadata(resp *kmsg.MetadataResponse) {
	c.metaBrokers = len(resp.Brokers)
	for _, rb := range resp.Brokers {
		c.learnBroker(rb.NodeID, rb.Host, rb.Port)
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil {
			continue
		}
		name := *rt.Topic
		if _, wanted := slices.BinarySearch(c.wanted, name); !wanted {
			continue
		}
		t := TopicMetadata{Name: name, ID: rt.TopicID, ErrorCode: rt.ErrorCode}
		old, had := c.Topic(name)
		for _, rp := range rt.Partitions {
			p := PartitionMetadata{Partition: rp.Partition, Leader: rp.Leader, LeaderEpoch: rp.LeaderEpoch, ErrorCode: rp.ErrorCode,
				Replicas: slices.Clone(rp.Replicas)}
			if had && old.ID == t.ID {
				if prev := findPartition(old.Partitions, rp.Partition); prev != nil && prev.LeaderEpoch > p.LeaderEpoch {
					p = *prev
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		slices.SortFunc(t.Partitions, func(a, b PartitionMetadata) int { return cmp.Compare(a.Partition, b.Partition) })
		if t.ErrorCode != 0 && had && old.ErrorCode == 0 && len(old.Partitions) > 0 {
			// A broker that does not know the topic yet (a lagging
			// image) does not erase what another told us.
			continue
		}
		c.setTopic(t)
	}
	c.notify()
}

func findPartition(ps []PartitionMetadata, id int32) *PartitionMetadata {
	j, found := slices.BinarySearchFunc(ps, id, func(p PartitionMetadata, id int32) int { return cmp.Compare(p.Partition, id) })
	if !found {
		return nil
	}
	return &ps[j]
}

func (c *Client) setTopic(t TopicMetadata) {
	i, found := slices.BinarySearchFunc(c.topics, t.Name, func(x TopicMetadata, n string) int { return strings.Compare(x.Name, n) })
	if found {
		c.topics[i] = t
		return
	}
	c.topics = slices.Insert(c.topics, i, t)
}

// notify runs the metadata listeners once, later on the loop, however
// many updates happen meanwhile: never inside a caller's own processing.
func (c *Client) notify() {
	if c.notifyPending {
		return
	}
	c.notifyPending = true
	c.e.Post(func() {
		c.notifyPending = false
		if c.closed {
			return
		}
		for _, f := range c.listeners {
			f()
		}
	})
}

// learnBroker adds or updates a node's address.
func (c *Client) learnBroker(id int32, host string, port int32) {
	if id < 0 {
		return
	}
	addr := host + ":" + strconv.Itoa(int(port))
	i, found := slices.BinarySearchFunc(c.brokers, id, func(b *broker, id int32) int { return cmp.Compare(b.id, id) })
	if found {
		if b := c.brokers[i]; b.addr != addr {
			b.close()
			b.addr = addr
		}
		return
	}
	c.brokers = slices.Insert(c.brokers, i, &broker{c: c, id: id, addr: addr})
}

// leaderHint applies a KIP-951 current-leader hint from a
// NOT_LEADER_OR_FOLLOWER answer: a leader epoch newer than the one known
// moves the partition there without a metadata round trip. It reports
// whether the hint was news.
func (c *Client) leaderHint(topic string, partition, leader, epoch int32) bool {
	p := c.partition(topic, partition)
	if p == nil || leader < 0 || epoch <= p.LeaderEpoch {
		return false
	}
	p.Leader, p.LeaderEpoch, p.ErrorCode = leader, epoch, 0
	c.log.Debug("leader hint", "topic", topic, "partition", partition, "leader", leader, "epoch", epoch)
	c.notify()
	return true
}
