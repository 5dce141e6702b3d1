package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Consumer groups with other clients than kgo (node/group_e2e_test.go has
// kgo's): several members share a topic, one leaves, and every record is
// consumed and its offset committed.

// seenSet records consumed (partition, offset) pairs from many goroutines.
type seenSet struct {
	mu   sync.Mutex
	seen map[int32]map[int64]bool
}

func (s *seenSet) add(p int32, o int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[int32]map[int64]bool{}
	}
	if s.seen[p] == nil {
		s.seen[p] = map[int64]bool{}
	}
	s.seen[p][o] = true
}

// covers reports whether every offset below each end was seen.
func (s *seenSet) covers(ends map[int32]int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, end := range ends {
		for o := int64(0); o < end; o++ {
			if !s.seen[p][o] {
				return false
			}
		}
	}
	return true
}

// await waits until every offset below each end was seen.
func (s *seenSet) await(t *testing.T, ends map[int32]int64, msgAndArgs ...any) {
	t.Helper()
	require.Eventually(t, func() bool { return s.covers(ends) }, opTimeout, 50*time.Millisecond, msgAndArgs...)
}

// produceRoundRobin produces n records spread over topic's partitions and
// returns the log ends.
func produceRoundRobin(t *testing.T, addr, topic string, n int) map[int32]int64 {
	t.Helper()
	cl := newClient(t, []string{addr}, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := ctxFor(t, opTimeout)
	for i := 0; i < n; i++ {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr())
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	out := map[int32]int64{}
	ends.Each(func(e kadm.ListedOffset) { out[e.Partition] = e.Offset })
	return out
}

// startGroupTopic starts a node with a topic of partitions partitions and
// produces records records to it round robin; it returns the node's
// address and the topic's end offsets.
func startGroupTopic(t *testing.T, topic string, partitions int32, records int) (string, map[int32]int64) {
	t.Helper()
	addr := startNode(t, t.TempDir()).Addr()
	createTopic(t, newAdmin(t, addr), topic, partitions, nil)
	return addr, produceRoundRobin(t, addr, topic, records)
}

// requireCommitted waits until the group's committed offsets reach ends.
func requireCommitted(t *testing.T, addr, group, topic string, ends map[int32]int64) {
	t.Helper()
	adm := newAdmin(t, addr)
	eventually(t, 100*time.Millisecond, func(ctx context.Context) bool {
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false
		}
		for p, end := range ends {
			o, ok := offs.Lookup(topic, p)
			if end > 0 && (!ok || o.At != end) {
				return false
			}
		}
		return true
	}, "group %s never committed the log ends %v", group, ends)
}

type saramaHandler struct{ seen *seenSet }

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.seen.add(m.Partition, m.Offset)
		sess.MarkMessage(m, "")
	}
	return nil
}

// TestSaramaConsumerGroup: three sarama ConsumerGroup members (range
// assignor) share a topic; one closes; every record is consumed and
// committed.
func TestSaramaConsumerGroup(t *testing.T) {
	saramaLog.logTo(t)
	addr, ends := startGroupTopic(t, "s-orders", 6, 300)

	cfg := saramaConfig(sarama.V3_6_0_0)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	seen := &seenSet{}
	type member struct {
		g      sarama.ConsumerGroup
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func() *member {
		g, err := sarama.NewConsumerGroup([]string{addr}, "s-group", cfg)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		m := &member{g: g, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(m.done)
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{"s-orders"}, saramaHandler{seen}); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
					t.Logf("sarama consume: %v", err)
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
		return m
	}
	stop := func(m *member) {
		m.cancel()
		<-m.done
		require.NoError(t, m.g.Close())
	}
	members := []*member{start(), start(), start()}
	seen.await(t, ends, "the group never consumed every record")
	stop(members[2])
	ends = produceRoundRobin(t, addr, "s-orders", 120)
	seen.await(t, ends, "the two left never consumed every record")
	requireCommitted(t, addr, "s-group", "s-orders", ends)
	stop(members[0])
	stop(members[1])
}

// TestKafkaGoConsumerGroup: two kafka-go readers with a GroupID share a
// topic; one closes; every record is consumed and committed.
func TestKafkaGoConsumerGroup(t *testing.T) {
	addr, ends := startGroupTopic(t, "k-orders", 4, 200)
	seen := &seenSet{}
	type member struct {
		r      *kafka.Reader
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func() *member {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers: []string{addr}, GroupID: "k-group", Topic: "k-orders",
			MaxWait: 200 * time.Millisecond, SessionTimeout: 6 * time.Second, HeartbeatInterval: 500 * time.Millisecond,
			RebalanceTimeout: 5 * time.Second, StartOffset: kafka.FirstOffset, CommitInterval: 0,
		})
		ctx, cancel := context.WithCancel(context.Background())
		m := &member{r: r, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(m.done)
			for {
				msg, err := r.ReadMessage(ctx) // commits synchronously with a GroupID
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					t.Logf("kafka-go read: %v", err)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				seen.add(int32(msg.Partition), msg.Offset)
			}
		}()
		return m
	}
	stop := func(m *member) {
		m.cancel()
		<-m.done
		require.NoError(t, m.r.Close())
	}
	a, b := start(), start()
	seen.await(t, ends, "the group never consumed every record")
	stop(b)
	ends = produceRoundRobin(t, addr, "k-orders", 80)
	seen.await(t, ends, "the one left never consumed every record")
	requireCommitted(t, addr, "k-group", "k-orders", ends)
	stop(a)
}

// TestKcatConsumerGroup: librdkafka's balanced consumer (kcat -G). Two
// members consume a topic at once, each exiting after its share; their
// commits reach the log ends; a later member of the group gets only the
// records produced since.
func TestKcatConsumerGroup(t *testing.T) {
	kcat := kcatPath(t)
	addr, ends := startGroupTopic(t, "kc-orders", 4, 200)
	// Each member exits at the end of its partitions (-e) after at most
	// 200 records, committing on close; without a commit it starts at
	// the earliest offset (kcat's -o would override the commits).
	member := func() <-chan []byte {
		out := make(chan []byte, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, kcat, "-b", addr, "-G", "kc-group", "-J", "-q", "-e", "-c", "200",
				"-X", "auto.offset.reset=earliest", "-X", "auto.commit.interval.ms=100", "-X", "session.timeout.ms=6000", "kc-orders")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			b, err := cmd.Output()
			if err != nil {
				t.Logf("kcat -G: %v; stderr:\n%s", err, stderr.String())
			}
			out <- b
		}()
		return out
	}
	seen := &seenSet{}
	a, b := member(), member()
	for _, ch := range []<-chan []byte{a, b} {
		for _, m := range kcatMessages(t, <-ch) {
			seen.add(m.Partition, m.Offset)
		}
	}
	require.True(t, seen.covers(ends), "two kcat -G members did not consume every record between them")
	requireCommitted(t, addr, "kc-group", "kc-orders", ends)

	before := ends
	ends = produceRoundRobin(t, addr, "kc-orders", 40)
	got := kcatMessages(t, <-member())
	require.Len(t, got, 40, "a new member starts from the group's commits")
	for _, m := range got {
		require.GreaterOrEqual(t, m.Offset, before[m.Partition])
	}
	requireCommitted(t, addr, "kc-group", "kc-orders", ends)
}

// TestConfluentKafkaPythonConsumerGroup: librdkafka through Debian's
// python3-confluent-kafka, two subscribed members of one group at once;
// between them they read every record, their commits reach the log ends,
// and a later member reads only what was produced since.
func TestConfluentKafkaPythonConsumerGroup(t *testing.T) {
	python := confluentPython(t)
	addr, ends := startGroupTopic(t, "py-orders", 4, 160)
	type pyOffset struct {
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
	}
	member := func(idle float64) <-chan []pyOffset {
		out := make(chan []pyOffset, 1)
		go func() {
			var resp struct{ Records []pyOffset }
			req := map[string]any{"bootstrap": addr, "topic": "py-orders", "group": "py-group", "idle": idle, "timeout": scriptTimeout}
			in, err := json.Marshal(req)
			if err != nil {
				out <- nil
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, python, "testdata/confluent_interop.py", "group")
			cmd.Stdin = bytes.NewReader(in)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			b, err := cmd.Output()
			if err != nil || json.Unmarshal(b, &resp) != nil {
				t.Logf("confluent_interop.py group: %v; stderr:\n%s", err, stderr.String())
			}
			out <- resp.Records
		}()
		return out
	}
	seen := &seenSet{}
	a, b := member(3), member(3)
	for _, ch := range []<-chan []pyOffset{a, b} {
		for _, r := range <-ch {
			seen.add(r.Partition, r.Offset)
		}
	}
	require.True(t, seen.covers(ends), "two members did not read every record between them")
	requireCommitted(t, addr, "py-group", "py-orders", ends)

	before := ends
	ends = produceRoundRobin(t, addr, "py-orders", 40)
	got := <-member(3)
	require.Len(t, got, 40, "a new member starts from the group's commits")
	for _, r := range got {
		require.GreaterOrEqual(t, r.Offset, before[r.Partition])
	}
	requireCommitted(t, addr, "py-group", "py-orders", ends)
}
