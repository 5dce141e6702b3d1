// Package servertest runs one whole Strata server (core/server: quorum
// voter, controller, broker and partitions, as a node runs them) in the
// simulator, with a Kafka client on another simulated process, for tests
// of the server's behaviour through the wire. It belongs to sim/, not
// core/, because it drives the simulator; like all of sim it is
// deterministic.
package servertest

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/replica"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/simtest"
)

// T is what the harness needs of a test (a *testing.T, *testing.B or a
// fuzz target's).
type T interface {
	require.TestingT
	Helper()
	Fatalf(format string, args ...any)
}

// Bounds of the harness, in simulated time.
const (
	// Bound is how long one awaited step may take: an election (a 1 s
	// timeout drawn in [1 s, 2 s)), a registration, a commit, a flush.
	Bound = 30 * time.Second
	// step is how far the simulator runs between checks.
	step = 5 * time.Millisecond
	// ClusterID is the server's cluster id.
	ClusterID = "c2ltLWNsdXN0ZXItMDAwMQ"
)

// Single is one combined server, node 1 on host "n1" (broker listener
// n1:9092, controller listener n1:9093), and a client process "cli".
type Single struct {
	T      T
	Sim    *sim.Sim
	Node   *sim.Process
	Server *server.Server // the current incarnation's, nil while down
	// Metrics is the current incarnation's registry (every incarnation
	// counts from zero, as a restarted node does).
	Metrics *metrics.Registry
	client  *wire.Client
	cliEnv  env.Env
}

// Start starts the server (tweak may edit its config) and waits until its
// controller is active and its broker registered.
func Start(t T, seed uint64, tweak func(*server.Config)) *Single {
	t.Helper()
	return start(t, seed, true, tweak)
}

// StartWithoutMetrics is Start with metrics off (a nil registry), for
// measuring what counting costs.
func StartWithoutMetrics(t T, seed uint64, tweak func(*server.Config)) *Single {
	t.Helper()
	return start(t, seed, false, tweak)
}

func start(t T, seed uint64, withMetrics bool, tweak func(*server.Config)) *Single {
	t.Helper()
	x := &Single{T: t, Sim: sim.New(sim.Config{Seed: seed})}
	cfg := parseProperties(1, "1@n1:9093")
	cfg.BrokerListener.ListenAddr, cfg.BrokerListener.AdvertisedHost = "n1:9092", "n1"
	if tweak != nil {
		tweak(&cfg)
	}
	x.Node = x.Sim.AddProcess("n1", func(e env.Env) {
		cfg := cfg
		if withMetrics {
			cfg.Metrics = metrics.New()
		}
		x.Metrics = cfg.Metrics
		srv, err := server.Start(e, cfg)
		if err != nil {
			t.Fatalf("server start: %v", err)
			return
		}
		x.Server = srv
	})
	x.Node.Start()
	x.Sim.AddProcess("cli", func(e env.Env) { x.cliEnv = e }).Start()
	x.WaitReady()
	return x
}

// WaitReady waits until the current incarnation's controller is active
// and its broker registered.
func (x *Single) WaitReady() {
	x.T.Helper()
	x.RunUntil("the server ready", func() bool { return x.Server != nil && x.Server.ActiveController() })
}

// Crash powers the node off (losing what its disk had not made durable)
// and starts it again, and waits until it is ready.
func (x *Single) Crash() {
	x.T.Helper()
	x.Node.Crash()
	x.Server, x.client = nil, nil
	x.Node.Start()
	x.WaitReady()
}

// ClientEnv is the client process's environment.
func (x *Single) ClientEnv() env.Env { return x.cliEnv }

// RunUntil runs the simulator until cond holds, failing the test past
// Bound.
func (x *Single) RunUntil(what string, cond func() bool) {
	x.T.Helper()
	simtest.RunUntil(x.T, x.Sim, what, Bound, step, cond)
}

// Do sends req on the client's connection (dialed again if it was lost)
// and returns the response, which must be of req's version.
func (x *Single) Do(req kmsg.Request) kmsg.Response {
	x.T.Helper()
	if x.client == nil || x.client.Closed() {
		x.client = nil
		var failed error
		x.cliEnv.Net().Dial("n1:9092", func(c env.Conn, err error) {
			if err != nil {
				failed = err
				return
			}
			x.client = wire.NewClient(c, wire.ClientConfig{ClientID: "servertest"})
		})
		x.RunUntil("a connection", func() bool { return x.client != nil || failed != nil })
		require.NoError(x.T, failed)
	}
	var resp kmsg.Response
	var err error
	done := false
	require.NoError(x.T, x.client.Do(req, func(r kmsg.Response, e error) { resp, err, done = r, e, true }))
	x.RunUntil(fmt.Sprintf("%s v%d answered", kmsg.NameForKey(req.Key()), req.GetVersion()), func() bool { return done })
	require.NoError(x.T, err)
	require.Equal(x.T, req.GetVersion(), resp.GetVersion())
	return resp
}

// Send sends req on the client's connection without waiting: done gets
// the response when the simulation delivers it (RunUntil runs it). The
// connection must be open: a Do before.
func (x *Single) Send(req kmsg.Request, done func(kmsg.Response, error)) {
	x.T.Helper()
	require.NotNil(x.T, x.client, "Send before any Do")
	require.NoError(x.T, x.client.Do(req, done))
}

// CreateTopic creates a topic of RF 1 through the broker and waits until
// the broker leads every partition.
func (x *Single) CreateTopic(name string, partitions int32, configs map[string]string) {
	x.T.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, 1
	for k, v := range configs { //determinism:unordered the order of a request's configs does not matter
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	rt := x.Do(req).(*kmsg.CreateTopicsResponse).Topics[0]
	require.Zero(x.T, rt.ErrorCode, "create %s: %v", name, kerr.ErrorForCode(rt.ErrorCode))
	x.WaitServing(name, partitions)
}

// WaitServing waits until the broker leads the topic's first partitions.
func (x *Single) WaitServing(name string, partitions int32) {
	x.T.Helper()
	x.RunUntil("serving "+name, func() bool {
		for p := range partitions {
			if x.Server == nil {
				return false
			}
			part, err := x.Server.Partitions().Lookup(name, p)
			if err != nil || !part.IsLeader() {
				return false
			}
		}
		return true
	})
}

// Partition is a hosted partition.
func (x *Single) Partition(topic string, id int32) *replica.Partition {
	x.T.Helper()
	p, err := x.Server.Partitions().Lookup(topic, id)
	require.NoError(x.T, err)
	return p
}

// Batch builds one batch of values (nil keys) stamped with the client's
// clock.
func (x *Single) Batch(opts []record.BuilderOption, values ...string) []byte {
	x.T.Helper()
	b := record.NewBuilder(opts...)
	for _, v := range values {
		b.Append(x.cliEnv.Now().UnixMilli(), nil, []byte(v))
	}
	out, err := b.AppendTo(nil)
	require.NoError(x.T, err)
	return out
}

// ProduceRequest is an acks=all Produce v9 of one batch to a partition.
func ProduceRequest(topic string, partition int32, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// Produce sends values as one batch, acks=all, and returns the partition's
// answer.
func (x *Single) Produce(topic string, partition int32, values ...string) kmsg.ProduceResponseTopicPartition {
	x.T.Helper()
	return x.Do(ProduceRequest(topic, partition, x.Batch(nil, values...))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// Fetch reads a partition from offset (Fetch v11, no wait) and returns
// the partition's answer and the values read.
func (x *Single) Fetch(topic string, partition int32, offset int64) (kmsg.FetchResponseTopicPartition, []string) {
	x.T.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 11, 0, 1, 1<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := x.Do(req).(*kmsg.FetchResponse)
	require.Len(x.T, resp.Topics, 1)
	p := resp.Topics[0].Partitions[0]
	var values []string
	sp := record.NewSplitter(p.RecordBatches, len(p.RecordBatches)+1, record.CheckStored)
	for sp.Next() {
		rd := record.NewRecordReader(record.NewDecompressor(1 << 20))
		require.NoError(x.T, rd.Reset(sp.Batch()))
		for rd.Next() {
			values = append(values, string(rd.Record().Value))
		}
	}
	require.NoError(x.T, sp.Err())
	return p, values
}

// ListOffset answers ListOffsets v7 for one partition.
func (x *Single) ListOffset(topic string, partition int32, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
	x.T.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return x.Do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
}

// parseProperties is the server config of node id, a combined broker and
// controller among voters, parsed from server.properties text by the
// rows that parse a production node's (core/server keys.go).
func parseProperties(id int, voters string) server.Config {
	text := fmt.Sprintf("%s=%d\n%s=%s,%s\n%s=%s\n", server.KeyNodeID, id,
		server.KeyProcessRoles, server.RoleBroker, server.RoleController, server.KeyControllerVoters, voters)
	cfg, err := server.Config{ClusterID: ClusterID}.ParseProperties(text)
	if err != nil {
		panic("servertest: " + err.Error())
	}
	return cfg
}
