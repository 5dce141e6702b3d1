package servertest

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/replica"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/simtest"
)

// Cluster is n combined servers, nodes 1..n on hosts "n1".."nN" (broker
// listener nI:9092, controller listener nI:9093, every node a voter), and
// a client process "cli".
type Cluster struct {
	T       T
	Sim     *sim.Sim
	Nodes   []*sim.Process
	Servers []*server.Server // the current incarnations', nil while down
	// Metrics are the current incarnations' registries.
	Metrics []*metrics.Registry
	clients []*wire.Client
	cliEnv  env.Env
}

// StartCluster starts n servers (tweak may edit each one's config) and
// waits until a controller is active and every broker leads or follows
// what it is given (registered and unfenced).
func StartCluster(t T, seed uint64, n int, tweak func(*server.Config)) *Cluster {
	t.Helper()
	x := &Cluster{T: t, Sim: sim.New(sim.Config{Seed: seed}), Servers: make([]*server.Server, n),
		Metrics: make([]*metrics.Registry, n), clients: make([]*wire.Client, n)}
	var voters []string
	for i := 1; i <= n; i++ {
		voters = append(voters, strconv.Itoa(i)+"@"+host(i)+":9093")
	}
	for i := 1; i <= n; i++ {
		cfg := parseProperties(i, strings.Join(voters, ","))
		cfg.BrokerListener.ListenAddr, cfg.BrokerListener.AdvertisedHost = host(i)+":9092", host(i)
		if tweak != nil {
			tweak(&cfg)
		}
		x.Nodes = append(x.Nodes, x.Sim.AddProcess(host(i), func(e env.Env) {
			cfg := cfg
			cfg.Metrics = metrics.New()
			x.Metrics[i-1] = cfg.Metrics
			srv, err := server.Start(e, cfg)
			if err != nil {
				t.Fatalf("server %d start: %v", i, err)
				return
			}
			x.Servers[i-1] = srv
		}))
	}
	for _, p := range x.Nodes {
		p.Start()
	}
	x.Sim.AddProcess("cli", func(e env.Env) { x.cliEnv = e }).Start()
	x.WaitReady()
	return x
}

func host(i int) string { return "n" + strconv.Itoa(i) }

// WaitReady waits until some running server runs the active controller
// and every running server's broker is registered and unfenced in its
// image.
func (x *Cluster) WaitReady() {
	x.T.Helper()
	x.RunUntil("an active controller and every broker unfenced", func() bool {
		active := false
		for i, s := range x.Servers {
			if s == nil || !x.Nodes[i].Up() {
				continue
			}
			active = active || s.ActiveController()
			if !s.Registered() {
				return false
			}
			reg, ok := s.Image().Broker(int32(i + 1))
			if !ok || reg.Fenced {
				return false
			}
		}
		return active
	})
}

// RunUntil runs the simulator until cond holds, failing the test past
// Bound.
func (x *Cluster) RunUntil(what string, cond func() bool) {
	x.T.Helper()
	simtest.RunUntil(x.T, x.Sim, what, Bound, step, cond)
}

// Kill ends node i's process (1-based) as kill -9 does, the machine
// staying up; Start starts it again.
func (x *Cluster) Kill(i int) {
	x.Nodes[i-1].Kill()
	x.Servers[i-1], x.clients[i-1] = nil, nil
}

// Stop shuts node i's server down cleanly (Server.Close: a controlled
// shutdown) and, once it is closed, ends its process; it returns the
// virtual time the close took.
func (x *Cluster) Stop(i int) time.Duration {
	x.T.Helper()
	start := x.Sim.Now()
	closed := false
	x.Servers[i-1].Close(func() { closed = true })
	x.RunUntil(fmt.Sprintf("%s closed", host(i)), func() bool { return closed })
	took := x.Sim.Now() - start
	x.Kill(i)
	return took
}

// Start starts node i again.
func (x *Cluster) Start(i int) { x.Nodes[i-1].Start() }

// ClientEnv is the client process's environment.
func (x *Cluster) ClientEnv() env.Env { return x.cliEnv }

// Do sends req to node i's broker and returns the response; err is a
// transport error (the node is down, the connection was lost).
func (x *Cluster) Do(i int, req kmsg.Request) (kmsg.Response, error) {
	x.T.Helper()
	if c := x.clients[i-1]; c == nil || c.Closed() {
		x.clients[i-1] = nil
		var failed error
		dialed := false
		x.cliEnv.Net().Dial(host(i)+":9092", func(c env.Conn, err error) {
			dialed, failed = true, err
			if err == nil {
				x.clients[i-1] = wire.NewClient(c, wire.ClientConfig{ClientID: "servertest"})
			}
		})
		x.RunUntil("a connection to "+host(i), func() bool { return dialed })
		if failed != nil {
			return nil, failed
		}
	}
	var resp kmsg.Response
	var err error
	done := false
	if err := x.clients[i-1].Do(req, func(r kmsg.Response, e error) { resp, err, done = r, e, true }); err != nil {
		return nil, err
	}
	x.RunUntil(fmt.Sprintf("%s v%d answered by %s", kmsg.NameForKey(req.Key()), req.GetVersion(), host(i)), func() bool { return done })
	return resp, err
}

// Leader is the node leading topic's partition per node i's image, or 0.
func (x *Cluster) Leader(i int, topic string, partition int32) int {
	s := x.Servers[i-1]
	if s == nil {
		return 0
	}
	p, err := s.Partitions().Lookup(topic, partition)
	if err != nil {
		return 0
	}
	if p.IsLeader() {
		return i
	}
	return 0
}

// CreateTopic creates a topic through node i and waits until every one of
// its partitions is led by a running node.
func (x *Cluster) CreateTopic(i int, name string, partitions int32, rf int16, configs map[string]string) {
	x.T.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for k, v := range configs { //determinism:unordered the order of a request's configs does not matter
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp, err := x.Do(i, req)
	require.NoError(x.T, err)
	rt := resp.(*kmsg.CreateTopicsResponse).Topics[0]
	require.Zero(x.T, rt.ErrorCode, "create %s: %v", name, kerr.ErrorForCode(rt.ErrorCode))
	for p := range partitions {
		x.RunUntil(fmt.Sprintf("%s-%d led", name, p), func() bool { return x.LeaderOf(name, p) > 0 })
	}
}

// LeaderOf is the running node that leads the partition and is online,
// or 0.
func (x *Cluster) LeaderOf(topic string, partition int32) int {
	for i := range x.Servers {
		if x.Leader(i+1, topic, partition) > 0 {
			p, _ := x.Servers[i].Partitions().Lookup(topic, partition)
			if p.Online() {
				return i + 1
			}
		}
	}
	return 0
}

// Partition is node i's replica of a partition, or nil.
func (x *Cluster) Partition(i int, topic string, id int32) *replica.Partition {
	s := x.Servers[i-1]
	if s == nil {
		return nil
	}
	p, err := s.Partitions().Lookup(topic, id)
	if err != nil {
		return nil
	}
	return p
}
