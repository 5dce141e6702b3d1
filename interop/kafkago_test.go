package interop

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

var kafkagoCodecs = []struct {
	name  string
	codec kafka.Compression
	id    int16
}{
	{"none", 0, 0},
	{"gzip", kafka.Gzip, 1},
	{"snappy", kafka.Snappy, 2},
	{"lz4", kafka.Lz4, 3},
	{"zstd", kafka.Zstd, 4},
}

func toKafkago(r rec, index int) kafka.Message {
	m := kafka.Message{Key: r.Key, Value: r.Value, Time: r.Timestamp, WriterData: index}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	return m
}

func fromKafkago(m kafka.Message) rec {
	r := rec{Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Time}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, header{Key: h.Key, Value: h.Value})
	}
	return r
}

// writeKafkago writes rs with a kafka.Writer (each record to its own
// partition, through a Balancer that reads it from WriterData) and, where
// acks are asked for, records the offsets the Writer's Completion reports.
func writeKafkago(t *testing.T, addr, topic string, rs []rec, codec kafka.Compression, acks kafka.RequiredAcks) {
	t.Helper()
	var mu sync.Mutex
	transport := &kafka.Transport{DialTimeout: 5 * time.Second}
	defer transport.CloseIdleConnections()
	w := &kafka.Writer{
		Addr:  kafka.TCP(addr),
		Topic: topic,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, partitions ...int) int {
			return int(rs[m.WriterData.(int)].Partition)
		}),
		Compression:  codec,
		RequiredAcks: acks,
		BatchSize:    len(rs),
		BatchTimeout: 5 * time.Millisecond,
		ReadTimeout:  opTimeout,
		WriteTimeout: opTimeout,
		MaxAttempts:  3,
		// Its own Transport, as a new application has: the shared
		// default one caches metadata for 6 s and reports a topic
		// created since as unknown.
		Transport: transport,
		Completion: func(ms []kafka.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range ms {
				if err == nil && acks != kafka.RequireNone {
					rs[m.WriterData.(int)].Offset = m.Offset
				}
			}
		},
	}
	msgs := make([]kafka.Message, len(rs))
	for i := range rs {
		msgs[i] = toKafkago(rs[i], i)
	}
	require.NoError(t, w.WriteMessages(ctxFor(t, opTimeout), msgs...), "kafka-go Writer to %s", topic)
	require.NoError(t, w.Close())
}

// readKafkago reads want records of one partition from offset (or from
// the first record at or after at, when set) with a partition Reader.
func readKafkago(t *testing.T, addr, topic string, partition int32, offset int64, at time.Time, want int) []rec {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   []string{addr},
		Topic:     topic,
		Partition: int(partition),
		MinBytes:  1,
		MaxBytes:  4 << 20,
		MaxWait:   200 * time.Millisecond,
	})
	defer func() { require.NoError(t, r.Close()) }()
	ctx := ctxFor(t, opTimeout)
	if at.IsZero() {
		require.NoError(t, r.SetOffset(offset))
	} else {
		require.NoError(t, r.SetOffsetAt(ctx, at))
	}
	var got []rec
	for len(got) < want {
		m, err := r.ReadMessage(ctx)
		require.NoError(t, err, "kafka-go Reader %s[%d]: read %d of %d", topic, partition, len(got), want)
		got = append(got, fromKafkago(m))
	}
	return got
}

// TestKafkaGo drives segmentio/kafka-go against one node: the Writer with
// every compression and acks setting (kafka-go has no idempotent
// producer), the partition Reader from the first offset, an offset and a
// time, and Conn for metadata, offsets and CreateTopics.
func TestKafkaGo(t *testing.T) {
	n := startNode(t, t.TempDir())
	adm := newAdmin(t, n.Addr())
	const partitions = 2
	seed := uint64(400)

	t.Run("writer-reader", func(t *testing.T) {
		for _, codec := range kafkagoCodecs {
			for _, acks := range []struct {
				name string
				acks kafka.RequiredAcks
			}{{"acks0", kafka.RequireNone}, {"acks1", kafka.RequireOne}, {"acksall", kafka.RequireAll}} {
				seed++
				t.Run(codec.name+"/"+acks.name, func(t *testing.T) {
					topic := fmt.Sprintf("kafkago-%s-%s", codec.name, acks.name)
					createTopic(t, adm, topic, partitions, nil)
					rs := genRecords(seed, 40, genOpts{partitions: partitions, nulls: true, timestamps: seed%2 == 0})
					from := time.Now()
					writeKafkago(t, n.Addr(), topic, rs, codec.codec, acks.acks)
					to := time.Now()
					var got []rec
					for p, c := range intCounts(rs) {
						got = append(got, readKafkago(t, n.Addr(), topic, p, kafka.FirstOffset, time.Time{}, c)...)
					}
					// kafka-go's Reader reads an empty key, value or header
					// value as null; kgo, which does not, checks that the
					// Writer's nulls and empties are stored as written.
					check := checkOpts{offsetsKnown: acks.acks != kafka.RequireNone, from: from, to: to}
					requireSameRecords(t, rs, got, zeros(partitions), check)
					check.nullsDistinct = true
					requireSameRecords(t, rs, consumeKgo(t, []string{n.Addr()}, topic, atStart(partitions), len(rs)), zeros(partitions), check)
					requireCodec(t, n.Addr(), topic, partitions, codec.id, false)
				})
			}
		}
	})

	t.Run("reader-offset-and-time", func(t *testing.T) {
		const topic = "kafkago-reader"
		createTopic(t, adm, topic, 1, nil)
		rs := genRecords(seed+100, 50, genOpts{partitions: 1, nulls: true, timestamps: true})
		writeKafkago(t, n.Addr(), topic, rs, kafka.Snappy, kafka.RequireAll)
		got := readKafkago(t, n.Addr(), topic, 0, 23, time.Time{}, len(rs)-23)
		requireSameRecords(t, rs[23:], got, map[int32]int64{0: 23}, checkOpts{offsetsKnown: true})
		got = readKafkago(t, n.Addr(), topic, 0, 0, rs[31].Timestamp, len(rs)-31)
		requireSameRecords(t, rs[31:], got, map[int32]int64{0: 31}, checkOpts{offsetsKnown: true})
	})

	t.Run("conn", func(t *testing.T) {
		ctx := ctxFor(t, opTimeout)
		conn, err := kafka.DialContext(ctx, "tcp", n.Addr())
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(opTimeout)))
		host, port := splitAddr(t, n.Addr())

		brokers, err := conn.Brokers()
		require.NoError(t, err)
		require.Equal(t, []kafka.Broker{{Host: host, Port: port, ID: int(n.NodeID())}}, brokers)
		controller, err := conn.Controller()
		require.NoError(t, err)
		require.Equal(t, int(n.NodeID()), controller.ID)

		// CreateTopics through the controller's connection, then
		// Metadata through ReadPartitions.
		cconn, err := kafka.DialContext(ctx, "tcp", fmt.Sprintf("%s:%d", controller.Host, controller.Port))
		require.NoError(t, err)
		defer cconn.Close()
		require.NoError(t, cconn.SetDeadline(time.Now().Add(opTimeout)))
		require.NoError(t, cconn.CreateTopics(kafka.TopicConfig{Topic: "kafkago-conn", NumPartitions: 3, ReplicationFactor: 1}))
		waitLeaders(t, adm, "kafkago-conn", 3)
		waitServed(t, adm, "kafkago-conn")
		parts, err := conn.ReadPartitions("kafkago-conn")
		require.NoError(t, err)
		require.Len(t, parts, 3)
		slices.SortFunc(parts, func(a, b kafka.Partition) int { return a.ID - b.ID })
		me := kafka.Broker{Host: host, Port: port, ID: int(n.NodeID())}
		for i, p := range parts {
			require.NoError(t, p.Error)
			require.Equal(t, "kafkago-conn", p.Topic)
			require.Equal(t, i, p.ID)
			require.Equal(t, me, p.Leader)
			require.Equal(t, []kafka.Broker{me}, p.Replicas)
			require.Equal(t, []kafka.Broker{me}, p.Isr)
		}

		// ListOffsets through a leader's connection.
		rs := genRecords(seed+200, 30, genOpts{partitions: 1, timestamps: true})
		writeKafkago(t, n.Addr(), "kafkago-conn", rs, kafka.Lz4, kafka.RequireAll)
		lconn, err := kafka.DialLeader(ctx, "tcp", n.Addr(), "kafkago-conn", 0)
		require.NoError(t, err)
		defer lconn.Close()
		require.NoError(t, lconn.SetDeadline(time.Now().Add(opTimeout)))
		first, last, err := lconn.ReadOffsets()
		require.NoError(t, err)
		require.Equal(t, int64(0), first)
		require.Equal(t, int64(len(rs)), last)
		off, err := lconn.ReadOffset(rs[12].Timestamp)
		require.NoError(t, err)
		require.Equal(t, int64(12), off)
	})
}

func splitAddr(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, portStr, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(portStr)
	require.NoError(t, err)
	return host, port
}
