package quorum

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Defaults, named after the Kafka settings they mirror.
const (
	// DefaultElectionTimeout is controller.quorum.election.timeout.ms: an
	// unattached voter or a candidate waits a random time in [T, 2T) before
	// (re)starting an election.
	DefaultElectionTimeout = 1 * time.Second
	// DefaultFetchTimeout is controller.quorum.fetch.timeout.ms: a follower
	// that has not had a successful fetch for this long starts a pre-vote;
	// a voter that has heard from its leader within it refuses pre-votes.
	// Both stop waiting for it once the driver reports the leader
	// unreachable (Raft.PeerUnreachable).
	DefaultFetchTimeout = 2 * time.Second
	// DefaultElectionBackoffMax is controller.quorum.election.backoff.max.ms:
	// the cap of the random exponential wait after lost elections, and of
	// the position-based wait of a preferred successor.
	DefaultElectionBackoffMax = 1 * time.Second
	// DefaultRetryBackoff is controller.quorum.retry.backoff.ms: the wait
	// before retrying after an error response, and the step of a preferred
	// successor's election backoff.
	DefaultRetryBackoff = 20 * time.Millisecond
	// DefaultRequestTimeout bounds how long a request waits for its response
	// before it is sent again. Kafka's controller.quorum.request.timeout.ms
	// defaults to 2 s; Strata uses 1 s so that a lost Fetch is retried before
	// the 2 s fetch timeout turns it into an election. It must exceed
	// FetchMaxWait.
	DefaultRequestTimeout = 1 * time.Second
	// DefaultFetchMaxWait is how long the leader parks a Fetch that has
	// nothing new (KafkaRaftClient's fetchMaxWaitMs).
	DefaultFetchMaxWait = 500 * time.Millisecond
	// DefaultMaxFetchBytes bounds the batches in one Fetch response
	// (KafkaRaftClient's MAX_FETCH_SIZE_BYTES); a single batch larger than
	// it is still sent, whole, as Kafka does.
	DefaultMaxFetchBytes = 8 << 20
	// DefaultSnapshotChunkBytes bounds one FetchSnapshot response.
	DefaultSnapshotChunkBytes = 1 << 20
	// DefaultMaxBatchBytes bounds one batch, that is one Propose call, by
	// Batch.Size (KafkaRaftClient's MAX_BATCH_SIZE_BYTES).
	DefaultMaxBatchBytes = 8 << 20
	// DefaultMaxBatchRecords bounds the records of one batch. The
	// controller's own bounds (core/controller's MaxRecordsPerBatch and
	// MaxBatchBytes) must fit within these two.
	DefaultMaxBatchRecords = 10_000
	// DefaultMaxApplyBytes bounds the committed batches handed out by one
	// Ready, so one Ready never holds an unbounded slice of the log; a
	// single batch larger than it is still handed out, whole.
	DefaultMaxApplyBytes = 8 << 20
	// DefaultSnapshotIntervalBytes is
	// metadata.log.max.record.bytes.between.snapshots: once this many bytes
	// were committed after the latest snapshot, Ready sets SnapshotDue.
	DefaultSnapshotIntervalBytes = 20 << 20
	// DefaultMaxObservers bounds how many observers the leader tracks for
	// DescribeQuorum; the least recently seen is forgotten first.
	DefaultMaxObservers = 1024
	// checkQuorumNum/checkQuorumDen: a leader resigns when a majority of
	// voters has not fetched for 1.5 fetch timeouts (KRaft's
	// CHECK_QUORUM_TIMEOUT_FACTOR).
	checkQuorumNum, checkQuorumDen = 3, 2
)

// Config is one node's quorum configuration. Zero durations and sizes take
// the defaults above.
type Config struct {
	// ID is this node's node.id.
	ID NodeID
	// Voters is controller.quorum.voters: the static voter set. A node not
	// in it is an observer.
	Voters []NodeID

	// Timeouts and backoffs; see the Default* constants of the same names.
	ElectionTimeout    time.Duration
	FetchTimeout       time.Duration
	ElectionBackoffMax time.Duration
	RetryBackoff       time.Duration
	RequestTimeout     time.Duration
	FetchMaxWait       time.Duration

	// Bounds, in bytes unless named otherwise; see the Default* constants.
	MaxFetchBytes         int
	SnapshotChunkBytes    int
	MaxBatchBytes         int
	MaxBatchRecords       int
	MaxApplyBytes         int
	SnapshotIntervalBytes int64
	MaxObservers          int
}

// withDefaults returns c with zero fields defaulted, its voters sorted, and
// an error when the result is inconsistent.
func (c Config) withDefaults() (Config, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.ElectionTimeout, DefaultElectionTimeout)
	def(&c.FetchTimeout, DefaultFetchTimeout)
	def(&c.ElectionBackoffMax, DefaultElectionBackoffMax)
	def(&c.RetryBackoff, DefaultRetryBackoff)
	def(&c.RequestTimeout, DefaultRequestTimeout)
	def(&c.FetchMaxWait, DefaultFetchMaxWait)
	defInt(&c.MaxFetchBytes, DefaultMaxFetchBytes)
	defInt(&c.SnapshotChunkBytes, DefaultSnapshotChunkBytes)
	defInt(&c.MaxBatchBytes, DefaultMaxBatchBytes)
	defInt(&c.MaxBatchRecords, DefaultMaxBatchRecords)
	defInt(&c.MaxApplyBytes, DefaultMaxApplyBytes)
	defInt(&c.MaxObservers, DefaultMaxObservers)
	if c.SnapshotIntervalBytes == 0 {
		c.SnapshotIntervalBytes = DefaultSnapshotIntervalBytes
	}

	c.Voters = slices.Clone(c.Voters)
	slices.Sort(c.Voters)
	var errs []error
	if c.ID < 0 {
		errs = append(errs, fmt.Errorf("node id %d is negative", c.ID))
	}
	if len(c.Voters) == 0 {
		errs = append(errs, errors.New("no voters"))
	}
	for i, v := range c.Voters {
		if v < 0 {
			errs = append(errs, fmt.Errorf("voter id %d is negative", v))
		}
		if i > 0 && c.Voters[i-1] == v {
			errs = append(errs, fmt.Errorf("voter %d listed twice", v))
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"election timeout", c.ElectionTimeout}, {"fetch timeout", c.FetchTimeout},
		{"election backoff max", c.ElectionBackoffMax}, {"retry backoff", c.RetryBackoff},
		{"request timeout", c.RequestTimeout}, {"fetch max wait", c.FetchMaxWait},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s %v must be positive", d.name, d.v))
		}
	}
	if c.RequestTimeout <= c.FetchMaxWait {
		errs = append(errs, fmt.Errorf("request timeout %v must exceed fetch max wait %v", c.RequestTimeout, c.FetchMaxWait))
	}
	for _, b := range []struct {
		name string
		v    int
	}{
		{"max fetch bytes", c.MaxFetchBytes}, {"snapshot chunk bytes", c.SnapshotChunkBytes},
		{"max batch bytes", c.MaxBatchBytes}, {"max batch records", c.MaxBatchRecords},
		{"max apply bytes", c.MaxApplyBytes},
		{"max observers", c.MaxObservers},
	} {
		if b.v <= 0 {
			errs = append(errs, fmt.Errorf("%s %d must be positive", b.name, b.v))
		}
	}
	if c.MaxBatchBytes > maxWireBatchBytes {
		errs = append(errs, fmt.Errorf("max batch bytes %d exceeds what a RecordBatch can carry (%d)", c.MaxBatchBytes, maxWireBatchBytes))
	}
	if c.SnapshotIntervalBytes <= 0 {
		errs = append(errs, fmt.Errorf("snapshot interval bytes %d must be positive", c.SnapshotIntervalBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("quorum: invalid config: %w", err)
	}
	return c, nil
}

// checkQuorumTimeout is how long a leader tolerates not hearing from a
// majority of voters.
func (c *Config) checkQuorumTimeout() time.Duration {
	return c.FetchTimeout * checkQuorumNum / checkQuorumDen
}
