package kclient_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/kclient"
	"github.com/strata-log/strata/sim/simtest"
)

// cluster is three combined broker+controller servers in a simulation and
// one client process.
type cluster struct {
	t      *testing.T
	s      *sim.Sim
	procs  []*sim.Process
	client *kclient.Client
}

func newCluster(t *testing.T, seed uint64, cfg kclient.Config) *cluster {
	t.Helper()
	sc := sim.Config{Seed: seed}
	if os.Getenv("KCLIENT_LOG") != "" {
		sc.Log = os.Stderr
	}
	s := sim.New(sc)
	cl := &cluster{t: t, s: s}
	voters := map[quorum.NodeID]string{}
	for i := 1; i <= 3; i++ {
		voters[quorum.NodeID(i)] = fmt.Sprintf("n%d:9093", i)
	}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("n%d", i)
		scfg := server.Config{NodeID: int32(i), ClusterID: "kclient-test", Broker: true, Controller: true,
			Quorum:         kraft.Config{Voters: kraft.ParseVoters(voters)},
			BrokerListener: broker.Config{ListenAddr: name + ":9092", AdvertisedHost: name}}
		p := s.AddProcess(name, func(e env.Env) {
			if _, err := server.Start(e, scfg); err != nil {
				panic(err)
			}
		})
		cl.procs = append(cl.procs, p)
		p.Start()
	}
	cfg.Bootstrap = []string{"n1:9092", "n2:9092", "n3:9092"}
	if cfg.ClientID == "" {
		cfg.ClientID = "test"
	}
	client := s.AddProcess("client", func(e env.Env) { cl.client = kclient.New(e, cfg) })
	client.Start()
	cl.run(time.Millisecond)
	return cl
}

func (cl *cluster) run(d time.Duration) { require.NoError(cl.t, cl.s.RunFor(d)) }

// until runs until cond holds, failing after limit of virtual time.
func (cl *cluster) until(limit time.Duration, what string, cond func() bool) {
	cl.t.Helper()
	simtest.RunUntil(cl.t, cl.s, what, limit, 10*time.Millisecond, cond)
}

// idempotentProducer is an idempotent acks=all producer on the client
// whose events l records.
func (cl *cluster) idempotentProducer(l *log) *kclient.Producer {
	return kclient.NewProducer(cl.client, kclient.ProducerConfig{Acks: -1, Idempotent: true, Values: value, OnEvent: l.onProduce(cl.t)})
}

// awaitAcks runs until p has no batch pending.
func (cl *cluster) awaitAcks(p *kclient.Producer) {
	cl.t.Helper()
	cl.until(10*time.Second, "acks", func() bool { return p.Pending() == 0 })
}

func (cl *cluster) createTopic(spec kclient.TopicSpec) {
	cl.t.Helper()
	cl.until(10*time.Second, "three brokers", func() bool {
		cl.client.RefreshMetadata()
		return cl.brokersUnfenced() == 3
	})
	created := false
	cl.client.CreateTopic(spec, func(ok bool, code int16) {
		require.True(cl.t, ok, "create %s: code %d", spec.Name, code)
		created = true
	})
	cl.until(10*time.Second, "the topic", func() bool {
		if !created {
			return false
		}
		t, ok := cl.client.Topic(spec.Name)
		if !ok || len(t.Partitions) != int(spec.Partitions) {
			cl.client.RefreshMetadata()
			return false
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				cl.client.RefreshMetadata()
				return false
			}
		}
		return true
	})
}

// brokersUnfenced counts the brokers the first server's image has
// unfenced.
func (cl *cluster) brokersUnfenced() int {
	n := 0
	done := false
	req := kmsg.NewPtrMetadataRequest()
	cl.client.DoAny(req, func(r kmsg.Response, err error) {
		done = true
		if resp, ok := r.(*kmsg.MetadataResponse); ok && err == nil {
			n = len(resp.Brokers)
		}
	})
	for !done {
		cl.run(time.Millisecond)
	}
	return n
}

func value(b kclient.BatchInfo, i int) []byte {
	return []byte(fmt.Sprintf("%s-%d/b%d/g%d/e%d/s%d/r%d", b.Topic, b.Partition, b.Number, b.Generation, b.ProducerEpoch, b.BaseSequence, i))
}

// log collects what producers acknowledged and consumers read.
type log struct {
	acked  map[string]int64 // value -> offset
	read   map[string]int64
	byOff  map[string]string // "topic-partition@offset" -> value
	events []kclient.ProduceEvent
}

func newLog() *log {
	return &log{acked: map[string]int64{}, read: map[string]int64{}, byOff: map[string]string{}}
}

func (l *log) onProduce(t *testing.T) func(kclient.ProduceEvent) {
	return func(ev kclient.ProduceEvent) {
		l.events = append(l.events, ev)
		if ev.Kind != kclient.Acked {
			return
		}
		for i, v := range ev.Values {
			_, dup := l.acked[string(v)]
			require.False(t, dup, "value %s acked twice", v)
			l.acked[string(v)] = ev.BaseOffset + int64(i)
		}
	}
}

func (l *log) onFetch(t *testing.T) func(kclient.FetchEvent) {
	return func(ev kclient.FetchEvent) {
		require.NotEqual(t, kclient.Corrupt, ev.Kind, "corrupt: %v", ev.Err)
		for _, r := range ev.Records {
			key := fmt.Sprintf("%s-%d@%d", ev.Topic, ev.Partition, r.Offset)
			if prev, ok := l.byOff[key]; ok {
				require.Equal(t, prev, string(r.Value), "offset %s read with two values", key)
			}
			l.byOff[key] = string(r.Value)
			l.read[string(r.Value)] = r.Offset
		}
	}
}

func TestIdempotentProduceAndConsume(t *testing.T) {
	for _, codec := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			cl := newCluster(t, 1, kclient.Config{})
			cl.createTopic(kclient.TopicSpec{Name: "t", Partitions: 3, ReplicationFactor: 1})
			l := newLog()
			p := kclient.NewProducer(cl.client, kclient.ProducerConfig{Acks: -1, Idempotent: true, Codec: codec, Values: value, OnEvent: l.onProduce(t)})
			for i := 0; i < 30; i++ {
				p.Produce("t", int32(i%3), 1+i%4)
			}
			cl.awaitAcks(p)
			kclient.NewConsumer(cl.client, kclient.ConsumerConfig{Topics: []string{"t"}, OnFetch: l.onFetch(t)})
			cl.until(10*time.Second, "reads", func() bool { return len(l.read) == len(l.acked) })
			require.Equal(t, l.acked, l.read)
			id, epoch := p.ProducerID()
			require.GreaterOrEqual(t, id, int64(0))
			require.Equal(t, int16(0), epoch)
		})
	}
}

func TestPlainProducersAndSessions(t *testing.T) {
	for _, acks := range []int16{-1, 1, 0} {
		for _, sessions := range []bool{false, true} {
			t.Run(fmt.Sprintf("acks=%d/sessions=%v", acks, sessions), func(t *testing.T) {
				cl := newCluster(t, 2, kclient.Config{})
				cl.createTopic(kclient.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 1})
				l := newLog()
				fired := 0
				onProduce := l.onProduce(t)
				p := kclient.NewProducer(cl.client, kclient.ProducerConfig{Acks: acks, Values: value, OnEvent: func(ev kclient.ProduceEvent) {
					if ev.Kind == kclient.Fired {
						fired += len(ev.Values)
					}
					onProduce(ev)
				}})
				kclient.NewConsumer(cl.client, kclient.ConsumerConfig{Topics: []string{"t"}, Sessions: sessions, MaxWait: 100 * time.Millisecond, OnFetch: l.onFetch(t)})
				for i := 0; i < 20; i++ {
					p.Produce("t", int32(i%2), 3)
					cl.run(20 * time.Millisecond)
				}
				cl.awaitAcks(p)
				cl.until(10*time.Second, "reads", func() bool { return len(l.read) == 60 })
				if acks == 0 {
					require.Equal(t, 60, fired)
					require.Empty(t, l.acked)
				} else {
					require.Equal(t, l.acked, l.read)
				}
			})
		}
	}
}

func TestOldVersions(t *testing.T) {
	cl := newCluster(t, 3, kclient.Config{MaxVersions: map[int16]int16{
		kmsg.Produce.Int16(): 3, kmsg.Fetch.Int16(): 4, kmsg.Metadata.Int16(): 1, kmsg.ListOffsets.Int16(): 1,
	}})
	cl.createTopic(kclient.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 1})
	l := newLog()
	p := cl.idempotentProducer(l)
	kclient.NewConsumer(cl.client, kclient.ConsumerConfig{Topics: []string{"t"}, Sessions: true, OnFetch: l.onFetch(t)})
	for i := 0; i < 10; i++ {
		p.Produce("t", int32(i%2), 2)
	}
	cl.awaitAcks(p)
	cl.until(10*time.Second, "reads", func() bool { return len(l.read) == 20 })
	require.Equal(t, l.acked, l.read)
}

// do sends req to node and runs the simulation until it is answered.
func (cl *cluster) do(node int32, req kmsg.Request) kmsg.Response {
	cl.t.Helper()
	var resp kmsg.Response
	var err error
	done := false
	cl.client.Do(node, req, 0, func(r kmsg.Response, e error) { resp, err, done = r, e, true })
	cl.until(10*time.Second, "an answer", func() bool { return done })
	require.NoError(cl.t, err)
	return resp
}

// TestIncrementalFetchRepeatsErrors pins a broker rule (Kafka's
// CachedPartition.maybeUpdateResponseData): an incremental fetch always
// includes a partition with an error, even the same error as last time.
// The broker used to leave it out, answer at once (an error does not
// wait for min.bytes) with nothing, and the consumer fetched again at
// once, forever (log seeds 23 and 234).
func TestIncrementalFetchRepeatsErrors(t *testing.T) {
	cl := newCluster(t, 4, kclient.Config{})
	cl.createTopic(kclient.TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1})
	leader, epoch, ok := cl.client.Leader("t", 0)
	require.True(t, ok)
	tm, _ := cl.client.Topic("t")
	fetch := func(sessionID, sessionEpoch int32, withPartition bool) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes = 500, 1
		req.SessionID, req.SessionEpoch = sessionID, sessionEpoch
		if withPartition {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "t", tm.ID
			rp := kmsg.NewFetchRequestTopicPartition()
			// A leader epoch the broker does not know yet: refused
			// with UNKNOWN_LEADER_EPOCH at every fetch.
			rp.Partition, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = 0, epoch+5, 1<<20
			rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
			req.Topics = []kmsg.FetchRequestTopic{rt}
		}
		return cl.do(leader, req).(*kmsg.FetchResponse)
	}
	codes := func(resp *kmsg.FetchResponse) []int16 {
		var out []int16
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				out = append(out, rp.ErrorCode)
			}
		}
		return out
	}
	full := fetch(0, 0, true)
	require.NotZero(t, full.SessionID, "no session created")
	require.Equal(t, []int16{kerr.UnknownLeaderEpoch.Code}, codes(full))
	for sessionEpoch := int32(1); sessionEpoch <= 3; sessionEpoch++ {
		inc := fetch(full.SessionID, sessionEpoch, false)
		require.Zero(t, inc.ErrorCode)
		require.Equal(t, []int16{kerr.UnknownLeaderEpoch.Code}, codes(inc), "incremental fetch %d left the failing partition out", sessionEpoch)
	}
}

// ackedProducer is a cluster of seed with topic t (one partition), whose
// client (cfg) has an idempotent producer that had n batches of t-0
// acknowledged, and the log of what it saw.
func ackedProducer(t *testing.T, seed uint64, cfg kclient.Config, n int) (*cluster, *log, *kclient.Producer) {
	t.Helper()
	cl := newCluster(t, seed, cfg)
	cl.createTopic(kclient.TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1})
	l := newLog()
	p := cl.idempotentProducer(l)
	p.Produce("t", 0, n)
	cl.awaitAcks(p)
	return cl, l, p
}

// rogueWrite appends a batch of one record under another producer's id,
// epoch and sequence, as a zombie of that producer would.
func (cl *cluster) rogueWrite(topic string, partition int32, pid int64, epoch int16, seq int32, value string) int16 {
	cl.t.Helper()
	b := record.NewBuilder(record.WithProducer(pid, epoch, seq))
	b.Append(cl.client.Env().Now().UnixMilli(), nil, []byte(value))
	raw, err := b.AppendTo(nil)
	require.NoError(cl.t, err)
	tm, _ := cl.client.Topic(topic)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, tm.ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, raw
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	leader, _, ok := cl.client.Leader(topic, partition)
	require.True(cl.t, ok)
	resp := cl.do(leader, req).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestIdempotentProducerBumpsEpochOnSequenceGap: a zombie writes the
// sequence the producer was about to send; the producer's next batch is
// refused OUT_OF_ORDER_SEQUENCE_NUMBER, and being the oldest it has, the
// producer bumps its epoch (KIP-360), restarts at sequence 0 and
// rebuilds the batch with new values.
func TestIdempotentProducerBumpsEpochOnSequenceGap(t *testing.T) {
	cl, l, p := ackedProducer(t, 5, kclient.Config{}, 3)
	pid, epoch := p.ProducerID()
	require.Equal(t, int16(0), cl.rogueWrite("t", 0, pid, epoch, 3, "zombie"))
	p.Produce("t", 0, 2)
	cl.awaitAcks(p)
	_, epoch = p.ProducerID()
	require.Equal(t, int16(1), epoch)
	require.Equal(t, 1, p.Stats().EpochBumps)
	var kinds []string
	for _, ev := range l.events {
		if ev.Batch.Number == 2 {
			kinds = append(kinds, fmt.Sprintf("%s g%d e%d s%d", ev.Kind, ev.Batch.Generation, ev.Batch.ProducerEpoch, ev.Batch.BaseSequence))
		}
	}
	require.Equal(t, []string{"built g0 e0 s3", "rejected g0 e0 s3", "built g1 e1 s0", "acked g1 e1 s0"}, kinds)
	// Everything acknowledged is where it was acknowledged, and the
	// refused build's values were never written.
	kclient.NewConsumer(cl.client, kclient.ConsumerConfig{Topics: []string{"t"}, OnFetch: l.onFetch(t)})
	cl.until(10*time.Second, "reads", func() bool { return len(l.read) == len(l.acked)+1 })
	for v, off := range l.acked {
		require.Equal(t, off, l.read[v], v)
	}
	require.Contains(t, l.read, "zombie")
}

// TestIdempotentProducerFencedGetsNewID: a zombie with a newer epoch
// fences the producer; its next batch is refused INVALID_PRODUCER_EPOCH
// and it starts over with a new producer id.
func TestIdempotentProducerFencedGetsNewID(t *testing.T) {
	cl, l, p := ackedProducer(t, 6, kclient.Config{}, 1)
	pid, _ := p.ProducerID()
	require.Equal(t, int16(0), cl.rogueWrite("t", 0, pid, 7, 0, "zombie"))
	p.Produce("t", 0, 1)
	cl.awaitAcks(p)
	newPID, epoch := p.ProducerID()
	require.NotEqual(t, pid, newPID)
	require.Equal(t, int16(0), epoch)
	require.Equal(t, 1, p.Stats().NewIDs)
	require.Len(t, l.acked, 2)
}

// TestTimedOutBatchIsRetriedOnce: a produce held longer than the request
// timeout ends unknown and is sent again with the same bytes; the broker,
// which got both, writes the batch once and acknowledges the retry with
// the original offset.
func TestTimedOutBatchIsRetriedOnce(t *testing.T) {
	cl, l, p := ackedProducer(t, 7, kclient.Config{RequestTimeout: time.Second}, 1)
	leader, _, _ := cl.client.Leader("t", 0)
	cl.s.Network().ClogLink("client", fmt.Sprintf("n%d", leader), 2500*time.Millisecond)
	p.Produce("t", 0, 3)
	cl.awaitAcks(p)
	var kinds []string
	for _, ev := range l.events {
		if ev.Batch.Number == 2 {
			kinds = append(kinds, fmt.Sprintf("%s g%d s%d", ev.Kind, ev.Batch.Generation, ev.Send))
		}
	}
	require.Equal(t, "built g0 s0", kinds[0])
	require.Equal(t, "unknown g0 s1", kinds[1], "%v", kinds)
	require.True(t, strings.HasPrefix(kinds[len(kinds)-1], "acked g0 "), "%v", kinds)
	kclient.NewConsumer(cl.client, kclient.ConsumerConfig{Topics: []string{"t"}, OnFetch: l.onFetch(t)})
	cl.until(10*time.Second, "reads", func() bool { return len(l.read) == 4 })
	cl.run(time.Second)
	require.Equal(t, l.acked, l.read)
	require.Len(t, l.byOff, 4, "a batch was written twice")
}
