package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
)

// single is one combined server "n1" in the simulator and a client
// process "cli" talking Kafka to its broker listener.
type single struct {
	t      *testing.T
	s      *sim.Sim
	node   *sim.Process
	srv    *Server
	client *protocol.Client
	cliEnv env.Env
}

func startSingle(t *testing.T, seed uint64) *single {
	x := &single{t: t, s: sim.New(sim.Config{Seed: seed})}
	cfg := Config{
		NodeID: 1, ClusterID: "sim-cluster", Broker: true, Controller: true,
		Quorum:         kraft.Config{Voters: kraft.ParseVoters(map[quorum.NodeID]string{1: "n1:9093"})},
		BrokerListener: broker.Config{ListenAddr: "n1:9092", AdvertisedHost: "n1"},
	}
	x.node = x.s.AddProcess("n1", func(e env.Env) {
		srv, err := Start(e, cfg)
		require.NoError(t, err)
		x.srv = srv
	})
	x.node.Start()
	x.s.AddProcess("cli", func(e env.Env) { x.cliEnv = e }).Start()
	x.waitFor("the broker registered and the controller active", func() bool { return x.srv != nil && x.srv.ActiveController() })
	return x
}

func (x *single) waitFor(what string, cond func() bool) {
	x.t.Helper()
	for i := 0; i < 3000; i++ {
		if cond() {
			return
		}
		require.NoError(x.t, x.s.RunFor(10*time.Millisecond))
	}
	x.t.Fatalf("timed out waiting for %s", what)
}

// do sends req on a (re)dialed connection and returns the response.
func (x *single) do(req kmsg.Request) kmsg.Response {
	x.t.Helper()
	if x.client == nil || x.client.Closed() {
		x.client = nil
		x.cliEnv.Net().Dial("n1:9092", func(c env.Conn, err error) {
			require.NoError(x.t, err)
			x.client = protocol.NewClient(c, protocol.ClientConfig{ClientID: "test"})
		})
		x.waitFor("a connection", func() bool { return x.client != nil })
	}
	var resp kmsg.Response
	var rerr error
	require.NoError(x.t, x.client.Do(req, func(r kmsg.Response, err error) { resp, rerr = r, err }))
	x.waitFor(kmsg.NameForKey(req.Key())+" response", func() bool { return resp != nil || rerr != nil })
	require.NoError(x.t, rerr)
	return resp
}

func (x *single) produce(topic string, partition int32, values ...string) *kmsg.ProduceResponse {
	b := record.NewBuilder()
	for _, v := range values {
		b.Append(x.cliEnv.Now().UnixMilli(), nil, []byte(v))
	}
	payload, err := b.AppendTo(nil)
	require.NoError(x.t, err)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, payload
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return x.do(req).(*kmsg.ProduceResponse)
}

func (x *single) fetch(topic string, partition int32, offset int64) (*kmsg.FetchResponseTopicPartition, []string) {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 11, 0, 1, 1<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := x.do(req).(*kmsg.FetchResponse)
	require.Len(x.t, resp.Topics, 1)
	p := &resp.Topics[0].Partitions[0]
	var values []string
	buf := p.RecordBatches
	sp := record.NewSplitter(buf, len(buf)+1, record.CheckStored)
	for sp.Next() {
		rd := record.NewRecordReader(record.NewDecompressor(1 << 20))
		require.NoError(x.t, rd.Reset(sp.Batch()))
		for rd.Next() {
			values = append(values, string(rd.Record().Value))
		}
	}
	require.NoError(x.t, sp.Err())
	return p, values
}

func TestServerProducesFetchesAndSurvivesPowerLoss(t *testing.T) {
	x := startSingle(t, 1)
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 7
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "events", 2, 1
	create.Topics = append(create.Topics, ct)
	cresp := x.do(create).(*kmsg.CreateTopicsResponse)
	require.Equal(t, int16(0), cresp.Topics[0].ErrorCode)
	x.waitFor("the partitions online", func() bool {
		p, err := x.srv.Partitions().Lookup("events", 1)
		return err == nil && p.IsLeader()
	})

	resp := x.produce("events", 1, "a", "b", "c")
	require.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(0), resp.Topics[0].Partitions[0].BaseOffset)
	resp = x.produce("events", 1, "d")
	require.Equal(t, int64(3), resp.Topics[0].Partitions[0].BaseOffset)
	p, values := x.fetch("events", 1, 0)
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(4), p.HighWatermark)
	require.Equal(t, []string{"a", "b", "c", "d"}, values)

	unknown := x.produce("nope", 0, "x")
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, unknown.Topics[0].Partitions[0].ErrorCode)

	// Power loss: every acknowledged record was fsynced.
	x.node.Crash()
	x.client, x.srv = nil, nil
	x.node.Start()
	x.waitFor("the server back", func() bool {
		if x.srv == nil || !x.srv.Registered() {
			return false
		}
		p, err := x.srv.Partitions().Lookup("events", 1)
		return err == nil && p.IsLeader()
	})
	p, values = x.fetch("events", 1, 0)
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, []string{"a", "b", "c", "d"}, values)
	resp = x.produce("events", 1, "e")
	require.Equal(t, int64(4), resp.Topics[0].Partitions[0].BaseOffset)
}

func TestProduceTimesOutWhileTheDiskStalls(t *testing.T) {
	x := startSingle(t, 3)
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "slow", 1, 1
	create.Topics = append(create.Topics, ct)
	x.do(create)
	x.waitFor("the partition", func() bool {
		p, err := x.srv.Partitions().Lookup("slow", 0)
		return err == nil && p.IsLeader()
	})
	x.node.Disk().SetFaults(sim.DiskFaults{SyncLatencyMin: 3 * time.Second, SyncLatencyMax: 3 * time.Second})
	b := record.NewBuilder(record.WithProducer(11, 0, 0))
	b.Append(x.cliEnv.Now().UnixMilli(), nil, []byte("v"))
	payload, err := b.AppendTo(nil)
	require.NoError(t, err)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 500
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "slow"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = payload
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := x.do(req).(*kmsg.ProduceResponse)
	require.Equal(t, kerr.RequestTimedOut.Code, resp.Topics[0].Partitions[0].ErrorCode, "not durable within the timeout")
	x.node.Disk().SetFaults(sim.DiskFaults{})
	require.NoError(t, x.s.RunFor(5*time.Second))
	// The idempotent retry of the same batch is a duplicate of the one
	// that became durable meanwhile.
	rp.Records = append([]byte(nil), payload...)
	resp = x.do(req).(*kmsg.ProduceResponse)
	require.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(0), resp.Topics[0].Partitions[0].BaseOffset)
	_, values := x.fetch("slow", 0, 0)
	require.Equal(t, []string{"v"}, values, "written once")
}

func TestMetadataSaysLeaderNotAvailableUntilThePartitionIsOpen(t *testing.T) {
	x := startSingle(t, 4)
	x.node.Disk().SetFaults(sim.DiskFaults{SyncLatencyMin: time.Second, SyncLatencyMax: time.Second})
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "fresh", 1, 1
	create.Topics = append(create.Topics, ct)
	x.do(create)
	x.waitFor("the topic in the image", func() bool { _, ok := x.srv.Image().TopicByName("fresh"); return ok })
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("fresh")}}
	resp := x.do(md).(*kmsg.MetadataResponse)
	p := resp.Topics[0].Partitions[0]
	require.Equal(t, kerr.LeaderNotAvailable.Code, p.ErrorCode, "led here but its log is still being opened")
	require.Equal(t, int32(-1), p.Leader)
	x.node.Disk().SetFaults(sim.DiskFaults{})
	x.waitFor("the partition open", func() bool {
		part, err := x.srv.Partitions().Lookup("fresh", 0)
		return err == nil && part.IsLeader()
	})
	resp = x.do(md).(*kmsg.MetadataResponse)
	require.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int32(1), resp.Topics[0].Partitions[0].Leader)
}
