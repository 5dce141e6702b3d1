package interop

import (
	"cmp"
	"fmt"
	"io"
	"log"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// saramaVersions are the Kafka versions sarama is told it talks to: a
// recent one, and sarama's default (what an application that sets none
// gets).
var saramaVersions = []struct {
	name    string
	version sarama.KafkaVersion
}{
	{"v3.6", sarama.V3_6_0_0},
	{"default-" + sarama.DefaultVersion.String(), sarama.DefaultVersion},
}

var saramaCodecs = []struct {
	name  string
	codec sarama.CompressionCodec
}{
	{"none", sarama.CompressionNone},
	{"gzip", sarama.CompressionGZIP},
	{"snappy", sarama.CompressionSnappy},
	{"lz4", sarama.CompressionLZ4},
	{"zstd", sarama.CompressionZSTD},
}

// saramaLog is where sarama.Logger, a package global that sarama's
// goroutines read, writes: the running test's log, or nowhere.
var saramaLog = &logSink{}

func init() { sarama.Logger = log.New(saramaLog, "sarama: ", log.Lmicroseconds) }

type logSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *logSink) set(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = w
}

// logTo sends what is written to t's log until t and its cleanups end.
func (s *logSink) logTo(t *testing.T) {
	s.set(newTestLog(t))
	t.Cleanup(func() { s.set(nil) })
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		_, _ = s.w.Write(p)
	}
	return len(p), nil
}

func saramaConfig(version sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "strata-interop"
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.ReadTimeout = opTimeout
	cfg.Net.WriteTimeout = opTimeout
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Timeout = opTimeout
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	return cfg
}

// saramaClient is a sarama client with a connection open to every broker.
// A producer made on a fresh client can send its first request on a
// broker whose connection sarama is still opening ("kafka: broker not
// connected"); sarama then refreshes metadata, which closes that
// connection with the next Produce in flight, and a producer without
// idempotence resends a batch the broker had already appended. That is
// sarama's start-up race, not the broker's doing, so the producers here
// start on a client that has its connections.
func saramaClient(t *testing.T, addr string, cfg *sarama.Config) sarama.Client {
	t.Helper()
	client, err := sarama.NewClient([]string{addr}, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	for _, b := range client.Brokers() {
		_ = b.Open(cfg) // ErrAlreadyConnected is fine
		require.Eventually(t, func() bool {
			ok, _ := b.Connected()
			return ok
		}, opTimeout, pollInterval, "sarama never connected to broker %d", b.ID())
	}
	return client
}

func toSarama(topic string, r rec) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{Topic: topic, Partition: r.Partition, Timestamp: r.Timestamp}
	if r.Key != nil { // a nil Encoder is a null key
		m.Key = sarama.ByteEncoder(r.Key)
	}
	if r.Value != nil {
		m.Value = sarama.ByteEncoder(r.Value)
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
	}
	return m
}

func fromSarama(m *sarama.ConsumerMessage) rec {
	r := rec{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Timestamp}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, header{Key: string(h.Key), Value: h.Value})
	}
	return r
}

// consumeSarama reads want records from each partition of topic, starting
// at start[p], with sarama.NewConsumer and one ConsumePartition each.
func consumeSarama(t *testing.T, addr string, cfg *sarama.Config, topic string, start map[int32]int64, want map[int32]int) []rec {
	t.Helper()
	consumer, err := sarama.NewConsumer([]string{addr}, cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, consumer.Close()) }() // waits for the partition consumers
	parts := make([]int32, 0, len(start))
	for p := range start {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	// Every partition is subscribed before any is read: sarama's broker
	// consumer batches new subscriptions, and one added later waits for
	// the fetch in flight (MaxWaitTime) to come back first.
	pcs := make([]sarama.PartitionConsumer, len(parts))
	for i, p := range parts {
		pc, err := consumer.ConsumePartition(topic, p, start[p])
		require.NoError(t, err, "ConsumePartition %s[%d] at %d", topic, p, start[p])
		// Closed without waiting for its fetch in flight.
		defer pc.AsyncClose()
		pcs[i] = pc
	}
	var got []rec
	deadline := time.After(opTimeout)
	for i, p := range parts {
		for n := 0; n < want[p]; n++ {
			select {
			case m := <-pcs[i].Messages():
				got = append(got, fromSarama(m))
			case cerr := <-pcs[i].Errors():
				require.NoError(t, cerr, "consume %s[%d]", topic, p)
			case <-deadline:
				require.Failf(t, "records missing", "%s[%d]: read %d of %d records within %v", topic, p, n, want[p], opTimeout)
			}
		}
	}
	return got
}

// sortByOffset orders records by partition and acknowledged offset: the
// order they are stored in, whatever order a producer sent them.
func sortByOffset(rs []rec) {
	slices.SortStableFunc(rs, func(a, b rec) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
}

func intCounts(rs []rec) map[int32]int {
	m := map[int32]int{}
	for _, r := range rs {
		m[r.Partition]++
	}
	return m
}

// TestSarama drives IBM/sarama against one node, at a recent Kafka version
// and at sarama's default: the sync producer (idempotent with acks=all,
// and acks=1 with gzip), the async producer with every compression, and
// the partition consumer from the oldest offset, an offset and the newest.
func TestSarama(t *testing.T) {
	// sarama's log (connections, retries) goes to the test's log.
	saramaLog.logTo(t)
	n := startNode(t, t.TempDir())
	adm := newAdmin(t, n.Addr())
	const partitions = 2
	seed := uint64(300)
	for _, v := range saramaVersions {
		t.Run(v.name, func(t *testing.T) {
			t.Run("sync", func(t *testing.T) {
				for _, mode := range []struct {
					name  string
					setup func(*sarama.Config)
				}{
					{"idempotent-acksall", func(c *sarama.Config) {
						c.Producer.Idempotent = true
						c.Producer.RequiredAcks = sarama.WaitForAll
						c.Net.MaxOpenRequests = 1
					}},
					{"acks1-gzip", func(c *sarama.Config) {
						c.Producer.RequiredAcks = sarama.WaitForLocal
						c.Producer.Compression = sarama.CompressionGZIP
					}},
				} {
					seed++
					t.Run(mode.name, func(t *testing.T) {
						topic := fmt.Sprintf("sarama-%s-sync-%s", v.name, mode.name)
						createTopic(t, adm, topic, partitions, nil)
						cfg := saramaConfig(v.version)
						mode.setup(cfg)
						rs := genRecords(seed, 40, genOpts{partitions: partitions, nulls: true, timestamps: seed%2 == 0})
						from := time.Now()
						producer, err := sarama.NewSyncProducerFromClient(saramaClient(t, n.Addr(), cfg))
						require.NoError(t, err)
						msgs := make([]*sarama.ProducerMessage, len(rs))
						for i := range rs {
							msgs[i] = toSarama(topic, rs[i])
						}
						require.NoError(t, producer.SendMessages(msgs))
						// One more through SendMessage, which reports its
						// partition and offset.
						last := genRecords(seed+1000, 1, genOpts{partitions: 1, timestamps: true})[0]
						last.Partition = 1
						p, off, err := producer.SendMessage(toSarama(topic, last))
						require.NoError(t, err)
						require.NoError(t, producer.Close())
						for i := range rs {
							rs[i].Offset = msgs[i].Offset
						}
						require.Equal(t, int32(1), p)
						last.Offset = off
						rs = append(rs, last)

						got := consumeSarama(t, n.Addr(), saramaConfig(v.version), topic,
							map[int32]int64{0: sarama.OffsetOldest, 1: sarama.OffsetOldest}, intCounts(rs))
						requireEndOffsets(t, adm, topic, counts(rs))
						requireSameRecords(t, rs, got, zeros(partitions), checkOpts{
							nullsDistinct: true, offsetsKnown: true, from: from, to: time.Now(),
						})
						requireCodec(t, n.Addr(), topic, partitions, int16(cfg.Producer.Compression), false)
						for p := range int32(partitions) {
							for _, batch := range rawBatches(t, n.Addr(), topic, p) {
								require.Equal(t, cfg.Producer.Idempotent, batch.ProducerID >= 0, "producer id %d of a stored batch", batch.ProducerID)
							}
						}
					})
				}
			})

			t.Run("async", func(t *testing.T) {
				for _, codec := range saramaCodecs {
					seed++
					t.Run(codec.name, func(t *testing.T) {
						topic := fmt.Sprintf("sarama-%s-async-%s", v.name, codec.name)
						createTopic(t, adm, topic, partitions, nil)
						cfg := saramaConfig(v.version)
						cfg.Producer.Compression = codec.codec
						cfg.Producer.RequiredAcks = sarama.WaitForAll
						cfg.Producer.Flush.Messages = 10
						cfg.Producer.Flush.Frequency = 10 * time.Millisecond
						rs := genRecords(seed, 60, genOpts{partitions: partitions, nulls: true, timestamps: true})
						producer, err := sarama.NewAsyncProducerFromClient(saramaClient(t, n.Addr(), cfg))
						require.NoError(t, err)
						go func() {
							for i := range rs {
								m := toSarama(topic, rs[i])
								m.Metadata = i
								producer.Input() <- m
							}
						}()
						deadline := time.After(opTimeout)
						for range rs {
							select {
							case m := <-producer.Successes():
								rs[m.Metadata.(int)].Offset = m.Offset
							case perr := <-producer.Errors():
								require.NoError(t, perr, "async produce to %s", topic)
							case <-deadline:
								require.FailNow(t, "async produce not acknowledged", "within %v", opTimeout)
							}
						}
						require.NoError(t, producer.Close())
						sortByOffset(rs)

						got := consumeSarama(t, n.Addr(), saramaConfig(v.version), topic,
							map[int32]int64{0: sarama.OffsetOldest, 1: sarama.OffsetOldest}, intCounts(rs))
						requireEndOffsets(t, adm, topic, counts(rs))
						requireSameRecords(t, rs, got, zeros(partitions), checkOpts{nullsDistinct: true, offsetsKnown: true})
						requireCodec(t, n.Addr(), topic, partitions, int16(codec.codec), false)

						// From an offset in each partition.
						by := byPartition(rs)
						got = consumeSarama(t, n.Addr(), saramaConfig(v.version), topic,
							map[int32]int64{0: 17, 1: 29}, map[int32]int{0: len(by[0]) - 17, 1: len(by[1]) - 29})
						requireSameRecords(t, append(slices.Clone(by[0][17:]), by[1][29:]...), got,
							map[int32]int64{0: 17, 1: 29}, checkOpts{nullsDistinct: true, offsetsKnown: true})
					})
				}
			})

			t.Run("consume-newest", func(t *testing.T) {
				topic := fmt.Sprintf("sarama-%s-newest", v.name)
				createTopic(t, adm, topic, 1, nil)
				before := genRecords(seed+2000, 5, genOpts{partitions: 1, nulls: true, timestamps: true})
				produceKgo(t, []string{n.Addr()}, topic, before)
				cfg := saramaConfig(v.version)
				consumer, err := sarama.NewConsumer([]string{n.Addr()}, cfg)
				require.NoError(t, err)
				defer consumer.Close()
				pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetNewest)
				require.NoError(t, err) // the newest offset is resolved here
				defer pc.Close()
				after := genRecords(seed+2001, 5, genOpts{partitions: 1, nulls: true, timestamps: true})
				produceKgo(t, []string{n.Addr()}, topic, after)
				var got []rec
				deadline := time.After(opTimeout)
				for len(got) < len(after) {
					select {
					case m := <-pc.Messages():
						got = append(got, fromSarama(m))
					case cerr := <-pc.Errors():
						require.NoError(t, cerr)
					case <-deadline:
						require.FailNow(t, "records missing", "read %d of %d", len(got), len(after))
					}
				}
				requireSameRecords(t, after, got, map[int32]int64{0: int64(len(before))}, checkOpts{nullsDistinct: true, offsetsKnown: true})
			})
		})
	}
}
