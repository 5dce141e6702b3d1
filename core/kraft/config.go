package kraft

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/strata-log/strata/core/connlimit"
	"github.com/strata-log/strata/core/controller"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/quorum"
)

const (
	// DefaultReconnectBackoffMin is the first wait before redialing a peer
	// whose connection failed or closed; it doubles up to
	// DefaultReconnectBackoffMax and resets on a successful dial.
	DefaultReconnectBackoffMin = 50 * time.Millisecond
	// DefaultReconnectBackoffMax caps the redial wait.
	DefaultReconnectBackoffMax = 1 * time.Second
	// DefaultControllerTickInterval is how often the active controller's
	// clock is advanced (it fences brokers whose session expired).
	DefaultControllerTickInterval = 100 * time.Millisecond
	// DefaultLogSegmentBytes is metadata.log.segment.bytes: the metadata
	// log rolls a new segment file past it (1 GiB, Kafka's default).
	DefaultLogSegmentBytes = 1 << 30
	// DefaultForwardRequestTimeout bounds how long a request forwarded to
	// the leader's controller waits for its answer before it gets
	// REQUEST_TIMED_OUT: Kafka's request.timeout.ms default (30 s), which
	// is what clients and brokers wait for a controller request.
	DefaultForwardRequestTimeout = 30 * time.Second
	// DefaultRequestTimeout is controller.quorum.request.timeout.ms: a
	// quorum request unanswered this long (a Fetch: this long beyond the
	// leader's FetchMaxWait) closes its connection, which is redialed, as
	// Kafka's network client does (2 s, Kafka's default).
	DefaultRequestTimeout = 2 * time.Second
	// maxForwardedInflight bounds the requests a member forwards to the
	// controller at once (a broker's client connections each have at
	// most one in flight, plus its own registration and heartbeats), and
	// the controller requests a listener holds per inbound connection;
	// past it a request gets REQUEST_TIMED_OUT at once.
	maxForwardedInflight = 256
	// maxQueuedMessagesPerPeer bounds the quorum messages held for a peer
	// while its connection is being (re)established; older ones are
	// dropped first (the Raft retries on its own timeouts).
	maxQueuedMessagesPerPeer = 64
	// maxInflightPerPeer bounds the requests awaiting a response on one
	// outbound connection; past it the connection is reset.
	maxInflightPerPeer = 256
	// closeResignWait bounds how long Close waits, after resigning
	// leadership, for the voters to acknowledge EndQuorumEpoch before it
	// closes the connections.
	closeResignWait = 500 * time.Millisecond
	// closePollInterval is how often Close checks for those
	// acknowledgements.
	closePollInterval = 5 * time.Millisecond
	// noDeadline is Raft.NextDeadline's "nothing is due" (quorum's never).
	noDeadline = time.Duration(math.MaxInt64)
	// maxPendingPerConn bounds the requests received on one inbound
	// connection that the Raft has not answered yet; past it the oldest is
	// forgotten (its sender times out and retries).
	maxPendingPerConn = 64
)

// Voter is one entry of controller.quorum.voters: id@host:port.
type Voter struct {
	ID   quorum.NodeID
	Addr string
}

// Config is one quorum member's configuration.
type Config struct {
	// NodeID is node.id.
	NodeID quorum.NodeID
	// Voters is controller.quorum.voters, sorted by id (Start sorts a
	// copy). A member whose NodeID is not among them is an observer (a
	// broker): it fetches and applies the metadata log but never votes and
	// never runs the controller.
	Voters []Voter
	// ListenAddr is the controller listener's address; empty means this
	// member's entry in Voters, and for an observer no listener at all
	// (an observer's listener only serves DescribeQuorum).
	ListenAddr string
	// ClusterID is sent in quorum requests and checked by the controller.
	ClusterID string
	// Quorum configures the Raft; ID and Voters are filled in from above.
	Quorum quorum.Config
	// Controller configures the active controller; an empty ClusterID is
	// filled in from above.
	Controller controller.Config

	// ListenerLimits bounds the controller listener's connections as
	// the client listener's are (max.connections,
	// max.connections.per.ip with its overrides,
	// connections.max.idle.ms); each listener counts its own. Zero
	// fields are connlimit's defaults.
	ListenerLimits connlimit.Config

	// Security is the controller listener's TLS, principals and
	// authorization (security.go); the zero Security is plaintext and
	// allows everything.
	Security Security

	// ReconnectBackoffMin and ReconnectBackoffMax bound the redial wait
	// (DefaultReconnectBackoffMin, DefaultReconnectBackoffMax).
	ReconnectBackoffMin time.Duration
	ReconnectBackoffMax time.Duration
	// ControllerTickInterval is DefaultControllerTickInterval when zero.
	ControllerTickInterval time.Duration

	// LogSegmentBytes is metadata.log.segment.bytes
	// (DefaultLogSegmentBytes when zero). A segment is deleted once the
	// log start offset, which follows the snapshots, passes its end; every
	// batch must fit in one segment.
	LogSegmentBytes int64
	// SnapshotIntervalRecords, when positive, also writes a snapshot once
	// this many records were applied since the latest one (Strata's own;
	// Kafka has only the byte interval,
	// metadata.log.max.record.bytes.between.snapshots, which is
	// Quorum.SnapshotIntervalBytes, 20 MiB by default). Zero: off.
	SnapshotIntervalRecords int64
	// ForwardRequestTimeout bounds the wait for the answer to a request
	// Submit forwards to the leader (DefaultForwardRequestTimeout).
	ForwardRequestTimeout time.Duration
	// RequestTimeout bounds the wait for the answer to a quorum request
	// before its connection is closed and redialed (DefaultRequestTimeout).
	RequestTimeout time.Duration

	// Metrics is the registry the member counts into (the quorum's and,
	// while active, the controller's series); nil counts nothing.
	Metrics *metrics.Registry

	// Observer, if set, learns of the member's transitions as they
	// happen (the simulator's checkers, sim/check).
	Observer *Observer
}

// Observer's funcs are called inside the member's processing, on its
// loop; they must not call back into the member. A nil func is skipped.
type Observer struct {
	// RoleChanged: the Raft reported a new role, epoch or leader.
	RoleChanged func(s quorum.SoftState)
	// Applied: the member's image moved (a committed batch applied, a
	// snapshot loaded).
	Applied func(img *meta.Image)
	// LogChanged: the member's metadata log changed as the Raft sees it
	// (batches appended, a truncation, a trim, a snapshot installed),
	// before the change is durable. It runs inside the member's own
	// processing: it must not call back into the member synchronously.
	LogChanged func()
}

// ParseVoters is a convenience for tests and callers holding a map of
// controller.quorum.voters: it returns the voters sorted by id.
func ParseVoters(m map[quorum.NodeID]string) []Voter {
	vs := make([]Voter, 0, len(m))
	for id, addr := range m { //determinism:unordered sorted below
		vs = append(vs, Voter{ID: id, Addr: addr})
	}
	slices.SortFunc(vs, func(a, b Voter) int { return int(a.ID) - int(b.ID) })
	return vs
}

// isVoter reports whether the configured NodeID is one of the voters.
func (c Config) isVoter() bool {
	for _, v := range c.Voters {
		if v.ID == c.NodeID {
			return true
		}
	}
	return false
}

func (c Config) withDefaults() (Config, error) {
	c.Voters = slices.Clone(c.Voters)
	slices.SortFunc(c.Voters, func(a, b Voter) int { return int(a.ID) - int(b.ID) })
	self := -1
	for i, v := range c.Voters {
		if i > 0 && c.Voters[i-1].ID == v.ID {
			return c, fmt.Errorf("kraft: voter %d listed twice", v.ID)
		}
		if v.ID == c.NodeID {
			self = i
		}
	}
	if len(c.Voters) == 0 {
		return c, fmt.Errorf("kraft: no voters configured")
	}
	if c.ListenAddr == "" && self >= 0 {
		c.ListenAddr = c.Voters[self].Addr
	}
	c.Quorum.ID = c.NodeID
	c.Quorum.Voters = c.Quorum.Voters[:0:0]
	for _, v := range c.Voters {
		c.Quorum.Voters = append(c.Quorum.Voters, v.ID)
	}
	if c.Controller.ClusterID == "" {
		c.Controller.ClusterID = c.ClusterID
	}
	if c.ReconnectBackoffMin <= 0 {
		c.ReconnectBackoffMin = DefaultReconnectBackoffMin
	}
	if c.ReconnectBackoffMax <= 0 {
		c.ReconnectBackoffMax = DefaultReconnectBackoffMax
	}
	if c.ControllerTickInterval <= 0 {
		c.ControllerTickInterval = DefaultControllerTickInterval
	}
	if c.LogSegmentBytes == 0 {
		c.LogSegmentBytes = DefaultLogSegmentBytes
	}
	if err := logConfig(c).Validate(); err != nil {
		return c, fmt.Errorf("kraft: metadata log: %w", err)
	}
	if err := c.ListenerLimits.Validate(); err != nil {
		return c, fmt.Errorf("kraft: controller listener: %w", err)
	}
	if c.SnapshotIntervalRecords < 0 {
		return c, fmt.Errorf("kraft: snapshot interval records %d is negative", c.SnapshotIntervalRecords)
	}
	if c.Security.TLS && c.Security.Listener == "" {
		return c, fmt.Errorf("kraft: a TLS controller listener needs its name (Security.Listener)")
	}
	if c.ForwardRequestTimeout <= 0 {
		c.ForwardRequestTimeout = DefaultForwardRequestTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	return c, nil
}
