package interop

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-log/strata/node"
)

// Bounds of every test in this package.
const (
	// opTimeout bounds one client operation: a produce, a consume of
	// the records a test expects, an admin request with its retries.
	opTimeout = 20 * time.Second
	// readyTimeout bounds a node's start: the first election and its
	// broker's registration.
	readyTimeout = 20 * time.Second
	// pollInterval is how often a wait checks its condition.
	pollInterval = 10 * time.Millisecond
)

// ctxFor is a context bounded by d and ended with the test.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// testNode is one in-process Strata node: a combined broker and
// controller, the sole voter of its quorum.
type testNode struct {
	*node.Node
}

// startNode starts a node on free 127.0.0.1 ports with its data in dir,
// waits until its broker is registered and unfenced (ready for
// CreateTopics and Produce), and shuts it down cleanly at the end of the
// test.
func startNode(t *testing.T, dir string) *testNode {
	t.Helper()
	return startNodeWith(t, dir, nil)
}

// startNodeWith is startNode with configure applied to the config.
func startNodeWith(t *testing.T, dir string, configure func(*node.Config)) *testNode {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.Listener = "127.0.0.1:0"
	cfg.ControllerListener = "127.0.0.1:0"
	cfg.MetricsListener = "127.0.0.1:0"
	cfg.LogDir = dir
	cfg.BrokerListener.Groups.Coordinator.InitialRebalanceDelay = 0 // groups rebalance at once, as Kafka's test configs have it
	if configure != nil {
		configure(&cfg)
	}
	n, err := node.Start(cfg, slog.New(slog.NewTextHandler(newTestLog(t), nil)))
	require.NoError(t, err)
	tn := &testNode{Node: n}
	t.Cleanup(func() { tn.stop(t) })
	require.Eventually(t, func() bool { return n.ActiveController() && n.Registered() }, readyTimeout, pollInterval,
		"the node's controller never became active with its broker registered")
	return tn
}

// stop shuts the node down cleanly; it may be called more than once.
func (n *testNode) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	require.NoError(t, n.Shutdown(ctx))
}

// testLog sends a node's log lines to the test's log until the test's
// cleanups have run (a late line must not panic the test binary).
type testLog struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

// newTestLog registers its closing first, so that it runs after the
// cleanups registered later (a node's shutdown among them).
func newTestLog(t *testing.T) *testLog {
	w := &testLog{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = true
	})
	return w
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

// newClient is a kgo client of addrs with bounded dials and retries.
func newClient(t *testing.T, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(addrs...),
		kgo.DialTimeout(5 * time.Second),
		kgo.RetryTimeout(opTimeout),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func newAdmin(t *testing.T, addrs ...string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newClient(t, addrs))
}

// createTopic creates a topic with partitions partitions (replication
// factor 1) and waits until every partition has a leader in Metadata and
// that leader serves it (see waitServed).
func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx := ctxFor(t, opTimeout)
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	require.NoError(t, err, "CreateTopics %s", topic)
	require.NoError(t, resp.Err, "CreateTopics %s", topic)
	waitLeaders(t, adm, topic, partitions)
	waitServed(t, adm, topic)
}

// eventually waits up to opTimeout, checking every tick, until cond holds;
// each call of cond has 2 s for its requests.
func eventually(t *testing.T, tick time.Duration, cond func(ctx context.Context) bool, msgAndArgs ...any) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return cond(ctx)
	}, opTimeout, tick, msgAndArgs...)
}

// waitServed waits until every partition of topic answers ListOffsets
// without an error. A broker lists a new partition's leader in Metadata
// (from the metadata image) a few milliseconds before that leader has
// opened the partition's log; until then Produce, Fetch and ListOffsets
// answer NOT_LEADER_OR_FOLLOWER, which clients retry, except that an
// acks=0 batch is dropped (with its connection closed, as Kafka does).
func waitServed(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	eventually(t, pollInterval, func(ctx context.Context) bool {
		ends, err := adm.ListEndOffsets(ctx, topic)
		return err == nil && ends.Error() == nil
	}, "the partitions of %s never answered ListOffsets", topic)
}

// waitLeaders waits until Metadata lists topic with partitions
// partitions, each with a leader.
func waitLeaders(t *testing.T, adm *kadm.Client, topic string, partitions int32) kadm.TopicDetail {
	t.Helper()
	var td kadm.TopicDetail
	eventually(t, pollInterval, func(ctx context.Context) bool {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		td = md.Topics[topic]
		if td.Err != nil || len(td.Partitions) != int(partitions) {
			return false
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
		return true
	}, "topic %s never had %d partitions with leaders", topic, partitions)
	return td
}

// header is one record header.
type header struct {
	Key   string
	Value []byte
}

// rec is one record as a test wrote it or a client read it back, in a
// form every client converts to and from.
type rec struct {
	Partition int32
	Offset    int64 // -1 when the producer did not learn it
	Key       []byte
	Value     []byte
	Headers   []header
	Timestamp time.Time // millisecond precision; zero: the producer's clock
}

func (r rec) String() string {
	return fmt.Sprintf("p%d@%d key=%q value=%d bytes %q… headers=%d ts=%d", r.Partition, r.Offset, r.Key, len(r.Value),
		r.Value[:min(len(r.Value), 16)], len(r.Headers), r.Timestamp.UnixMilli())
}

// genOpts shapes generated records.
type genOpts struct {
	partitions int32
	// nulls adds null keys and values and empty keys, values and header
	// values: only for clients that tell null from empty.
	nulls bool
	// printable keeps keys, values and headers to printable ASCII
	// without separators (for command-line clients).
	printable bool
	// noHeaders leaves headers out.
	noHeaders bool
	// timestamps gives each record an explicit timestamp.
	timestamps bool
	// big adds one record with a value of this many bytes.
	big int
}

// genRecords makes n records, spread round-robin over o.partitions, from
// a seed: random and repetitive values (so that compression has work),
// keys, headers and timestamps, with every edge the options allow.
func genRecords(seed uint64, n int, o genOpts) []rec {
	rng := rand.New(rand.NewPCG(seed, 0x5157a7a))
	bytesOf := func(size int) []byte {
		b := make([]byte, size)
		if o.printable {
			const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+="
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			return b
		}
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	// Timestamps an hour back, a millisecond apart: well inside the
	// default retention, and never in the future.
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	out := make([]rec, 0, n+1)
	for i := range n {
		r := rec{Partition: int32(i) % max(o.partitions, 1), Offset: -1}
		switch {
		case o.nulls && i%7 == 3:
			r.Key = nil
		case o.nulls && i%7 == 5:
			r.Key = []byte{}
		default:
			r.Key = bytesOf(1 + rng.IntN(24))
		}
		switch {
		case o.nulls && i%11 == 4:
			r.Value = nil
		case o.nulls && i%11 == 6:
			r.Value = []byte{}
		case i%3 == 0: // compressible
			r.Value = bytes.Repeat(bytesOf(8), 1+rng.IntN(64))
		default:
			r.Value = bytesOf(1 + rng.IntN(512))
		}
		if !o.noHeaders {
			for h := range rng.IntN(4) {
				v := bytesOf(rng.IntN(16) + 1)
				if o.nulls && h == 1 {
					v = []byte{}
				}
				// Header keys are strings (UTF-8) in Kafka.
				r.Headers = append(r.Headers, header{Key: fmt.Sprintf("h%d-%d", h, rng.IntN(1000)), Value: v})
			}
		}
		if o.timestamps {
			r.Timestamp = base.Add(time.Duration(i) * time.Millisecond)
		}
		out = append(out, r)
	}
	if o.big > 0 {
		out = append(out, rec{Partition: 0, Offset: -1, Key: []byte("big"), Value: bytesOf(o.big),
			Timestamp: func() time.Time {
				if o.timestamps {
					return base.Add(time.Duration(n) * time.Millisecond)
				}
				return time.Time{}
			}()})
	}
	return out
}

// byPartition groups records by partition, keeping their order.
func byPartition(rs []rec) map[int32][]rec {
	out := map[int32][]rec{}
	for _, r := range rs {
		out[r.Partition] = append(out[r.Partition], r)
	}
	return out
}

// checkOpts says what a client can report back.
type checkOpts struct {
	// nullsDistinct: the client tells a null key, value or header value
	// from an empty one, so they must match exactly.
	nullsDistinct bool
	// noHeaders: the client does not read headers.
	noHeaders bool
	// producerTime: records written without timestamps carry the
	// producer's clock, which must fall in [from, to].
	from, to time.Time
	// offsetsKnown: the written records carry the offsets the producer
	// was told, which must be the ones read.
	offsetsKnown bool
}

// requireSameRecords checks that got, read back from each partition in
// order, is exactly want, partition by partition: same offsets (each
// partition read from firstOffset[p], consecutive, as an uncompacted log
// without transactions has them), keys, values, headers and timestamps.
func requireSameRecords(t *testing.T, want, got []rec, firstOffset map[int32]int64, o checkOpts) {
	t.Helper()
	wantBy, gotBy := byPartition(want), byPartition(got)
	parts := make([]int32, 0, len(wantBy))
	for p := range wantBy {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for p := range gotBy {
		require.Contains(t, wantBy, p, "records read from partition %d, which was not written", p)
	}
	for _, p := range parts {
		w, g := wantBy[p], gotBy[p]
		require.Len(t, g, len(w), "partition %d: read %d records, wrote %d", p, len(g), len(w))
		for i := range w {
			wr, gr := w[i], g[i]
			where := fmt.Sprintf("partition %d record %d (wrote %v, read %v)", p, i, wr, gr)
			require.Equal(t, firstOffset[p]+int64(i), gr.Offset, "offset of %s", where)
			if o.offsetsKnown {
				require.Equal(t, wr.Offset, gr.Offset, "acknowledged offset of %s", where)
			}
			requireSameBytes(t, wr.Key, gr.Key, o.nullsDistinct, "key of "+where)
			requireSameBytes(t, wr.Value, gr.Value, o.nullsDistinct, "value of "+where)
			if !o.noHeaders {
				require.Len(t, gr.Headers, len(wr.Headers), "headers of %s", where)
				for h := range wr.Headers {
					require.Equal(t, wr.Headers[h].Key, gr.Headers[h].Key, "header %d key of %s", h, where)
					requireSameBytes(t, wr.Headers[h].Value, gr.Headers[h].Value, o.nullsDistinct, fmt.Sprintf("header %d value of %s", h, where))
				}
			}
			if wr.Timestamp.IsZero() {
				require.False(t, gr.Timestamp.Before(o.from.Truncate(time.Millisecond)) || gr.Timestamp.After(o.to),
					"timestamp %v of %s is not the producer's clock in [%v, %v]", gr.Timestamp, where, o.from, o.to)
			} else {
				require.Equal(t, wr.Timestamp.UnixMilli(), gr.Timestamp.UnixMilli(), "timestamp of %s", where)
			}
		}
	}
}

// requireSameBytes compares byte for byte and, when nullsDistinct, null
// against empty too.
func requireSameBytes(t *testing.T, want, got []byte, nullsDistinct bool, what string) {
	t.Helper()
	if nullsDistinct {
		require.Equal(t, want == nil, got == nil, "%s: null is %v, read null %v", what, want == nil, got == nil)
	}
	if !bytes.Equal(want, got) {
		require.Failf(t, "bytes differ", "%s: wrote %d bytes %q, read %d bytes %q", what, len(want),
			want[:min(len(want), 64)], len(got), got[:min(len(got), 64)])
	}
}

// zeros is firstOffset for partitions read from offset 0.
func zeros(partitions int32) map[int32]int64 {
	m := map[int32]int64{}
	for p := range partitions {
		m[p] = 0
	}
	return m
}

// skipOrFailMissing skips a test whose client is not installed, saying
// why, or fails it when CI=true: CI installs every client this package
// drives (.ci/run), so a missing one there is a broken CI, not a
// developer's machine without it.
func skipOrFailMissing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; CI=true, where .ci/run installs it", why)
	}
	t.Skipf("%s (.ci/run installs it; CI=true makes this a failure)", why)
}
