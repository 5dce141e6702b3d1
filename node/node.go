package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/connlimit"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/replica"
	"github.com/strata-log/strata/core/sasl"
	"github.com/strata-log/strata/core/server"
)

// DefaultShutdownTimeout bounds Run's clean shutdown after its context ends:
// closing sockets and waiting for in-flight fsyncs and object-store calls.
const DefaultShutdownTimeout = 30 * time.Second

// Node is one running Strata process: its loop, its Env and the
// core/server Server on the loop (the metadata quorum member and, with the
// broker role, the broker, its registration and its partitions), composed
// in core exactly as the simulator runs it.
type Node struct {
	cfg  Config
	meta MetaProperties
	log  *slog.Logger
	loop *Loop
	env  *Env
	srv  *server.Server
	addr string
	// listenerAddrs are the client listeners' bound addresses by name.
	listenerAddrs map[string]string
	ctrlAddr      string
	advertised    string

	// metrics is the server's registry, nil with strata.metrics.enable
	// false; ops serves it, nil with metrics.listener empty.
	metrics *metrics.Registry
	ops     *opsServer

	shutdownOnce sync.Once
	shutdownErr  error
}

// Start validates cfg, prepares the data directory (creating
// meta.properties with a new cluster id on first start, checking it on
// later starts), starts the loop, the metadata quorum member and, with the
// broker role, the broker, and returns once the listeners are bound. log
// nil means slog.Default().
func Start(cfg Config, log *slog.Logger) (*Node, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(cfg.LogDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyLogDirs, err)
	}
	if err := mkdirAll(dataDir); err != nil {
		return nil, fmt.Errorf("%s %s: %w", KeyLogDirs, dataDir, err)
	}
	meta, created, err := loadOrCreateMeta(dataDir, cfg.NodeID, cfg.ClusterID)
	if err != nil {
		return nil, err
	}
	bootstrap, err := readBootstrap(dataDir)
	if err != nil {
		return nil, err
	}
	log = log.With("node_id", cfg.NodeID)
	if created {
		log.Info("formatted data directory", "dir", dataDir, "cluster_id", meta.ClusterID)
	} else {
		log.Info("loaded data directory", "dir", dataDir, "cluster_id", meta.ClusterID)
	}

	if warn := controllerPortMismatch(cfg); warn != "" {
		log.Warn(warn)
	}
	var listeners []broker.Listener
	var interBroker string
	var interBrokerLogin sasl.ClientConfig
	if cfg.IsBroker() {
		if listeners, interBroker, err = cfg.brokerListeners(); err != nil {
			return nil, err
		}
		if interBrokerLogin, err = cfg.interBrokerLogin(listeners, interBroker); err != nil {
			return nil, err
		}
	}

	ctrlSec, err := cfg.controllerSecurity()
	if err != nil {
		return nil, err
	}
	if warn := anonymousNodeLinks(cfg, ctrlSec); warn != "" {
		log.Warn(warn, "listener", ctrlSec.Listener)
	}

	limits, err := cfg.connLimits()
	if err != nil {
		return nil, err
	}

	ops, err := listenOps(cfg.MetricsListener)
	if err != nil {
		return nil, err
	}
	loop := NewLoop()
	e, err := NewEnv(loop, EnvConfig{
		DataDir:   dataDir,
		BucketDir: filepath.Join(dataDir, ObjectsDirName),
		Net: NetConfig{
			MaxFrameBytes:       cfg.SocketRequestMaxBytes,
			ReadBudgetBytes:     int64(cfg.BrokerListener.MaxInflightRequestBytes),
			FrameReadTimeout:    time.Duration(cfg.SocketRequestReadTimeoutMs) * time.Millisecond,
			FrameMinBytesPerSec: cfg.SocketRequestMinBytesPerSec,
		},
		WorkWorkers: cfg.requestWorkers() + lightRequestWorkers,
		Logger:      log,
		NoSendfile:  cfg.NoSendfile,
	})
	if err != nil {
		if ops != nil {
			_ = ops.ln.Close()
		}
		return nil, err
	}
	if err := registerTLS(cfg, listeners, ctrlSec, e.net); err != nil {
		_ = e.Close()
		if ops != nil {
			_ = ops.ln.Close()
		}
		return nil, err
	}
	var decoy []byte
	if cfg.IsBroker() {
		if decoy, err = loadOrCreateDecoySecret(dataDir); err != nil {
			_ = e.Close()
			if ops != nil {
				_ = ops.ln.Close()
			}
			return nil, err
		}
	}
	go loop.Run()

	n := &Node{cfg: cfg, meta: meta, log: log, loop: loop, env: e, ops: ops}
	if !cfg.NoMetrics {
		n.metrics = metrics.New()
	}
	var startErr error
	err = loop.Call(func() {
		if n.metrics != nil {
			lag := n.metrics.Histogram(metrics.LoopLag)
			loop.SetLagObserver(func(d time.Duration) { lag.Observe(float64(d) / float64(time.Millisecond)) })
		}
		// The server's configuration is the keys' (cfg.Config), with
		// what only the running process knows: the cluster id from
		// meta.properties, the addresses, the resolved connection bounds,
		// the data directory, the workers and the registry.
		scfg := cfg.Config
		scfg.ClusterID = meta.ClusterID
		scfg.Metrics = n.metrics
		scfg.Quorum.Voters = cfg.voters()
		// The records of `strata storage format`, written by the first
		// active controller of an empty metadata log.
		scfg.Quorum.Controller.BootstrapRecords = bootstrap
		scfg.Quorum.ListenerLimits = limits
		scfg.Quorum.Security = ctrlSec
		// A controller is a voter on its controller listener; a
		// broker-only node is an observer with no listener of its own,
		// fetching the metadata log from the voters.
		if cfg.IsController() {
			scfg.Quorum.ListenAddr = cfg.controllerListen()
		}
		if cfg.IsBroker() {
			bc := &scfg.BrokerListener
			bc.Listeners, bc.InterBrokerListener, bc.LogDir = listeners, interBroker, dataDir
			bc.Security.DecoySecret = decoy
			bc.Security.InterBrokerLogin = interBrokerLogin
			bc.MaxConnectionsPerIP, bc.MaxConnectionsPerIPOverrides, bc.ConnectionsMaxIdle = limits.MaxPerHost, limits.PerHostOverrides, limits.MaxIdle
			bc.Work = cfg.workConfig()
			bc.StaticConfigs = cfg.brokerStaticConfigs()
			n.reportMetricsAddr(bc.StaticConfigs)
		} else {
			scfg.BrokerListener, scfg.Partitions = broker.Config{}, replica.Config{}
		}
		n.srv, startErr = server.Start(e, scfg)
		if startErr != nil {
			return
		}
		n.ctrlAddr = n.srv.ControllerAddr()
		if cfg.IsBroker() {
			n.addr = n.srv.BrokerAddr()
			n.listenerAddrs = map[string]string{}
			for _, l := range listeners {
				n.listenerAddrs[l.Name] = n.srv.Broker().ListenerAddr(l.Name)
			}
			n.advertised = net.JoinHostPort(listeners[0].AdvertisedHost, strconv.Itoa(int(n.srv.Broker().AdvertisedPort())))
		}
	})
	if err = errors.Join(err, startErr); err != nil {
		loop.Stop()
		<-loop.Done()
		_ = e.Close()
		n.closeOps(context.Background())
		return nil, fmt.Errorf("start node: %w", err)
	}
	n.serveOps()
	log.Info("node started", "process_roles", strings.Join(cfg.Roles(), ","), "listener", n.addr,
		"controller_listener", n.ctrlAddr, "advertised", n.advertised, "metrics_listener", n.MetricsAddr(), "cluster_id", meta.ClusterID)
	return n, nil
}

// connLimits is the listeners' connection bounds, with the host names of
// max.connections.per.ip.overrides resolved to the addresses RemoteAddr
// reports (Kafka resolves them at start too, and fails on an unknown
// host).
func (c Config) connLimits() (connlimit.Config, error) {
	bc := c.BrokerListener
	limits := connlimit.Config{MaxConnections: bc.MaxConnections, MaxIdle: bc.ConnectionsMaxIdle, MaxPerHost: bc.MaxConnectionsPerIP}
	if len(bc.MaxConnectionsPerIPOverrides) == 0 {
		return limits, nil
	}
	limits.PerHostOverrides = map[string]int{}
	for _, host := range slices.Sorted(maps.Keys(bc.MaxConnectionsPerIPOverrides)) {
		n := bc.MaxConnectionsPerIPOverrides[host]
		addrs := []string{host}
		if net.ParseIP(host) == nil {
			ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
			var err error
			addrs, err = net.DefaultResolver.LookupHost(ctx, host)
			cancel()
			if err != nil {
				return limits, invalid(server.KeyMaxConnectionsPerIPOverrides, host, fmt.Sprintf("cannot resolve %s: %v", host, err))
			}
		}
		for _, a := range addrs {
			limits.PerHostOverrides[net.ParseIP(a).String()] = n
		}
	}
	return limits, nil
}

// resolveTimeout bounds the resolution of one host name at start.
const resolveTimeout = 5 * time.Second

// controllerPortMismatch warns of a controller listener whose port is not
// the one controller.quorum.voters gives for this node: the other voters
// would dial a port nobody listens on. It is not an error, as in Kafka
// (a port may be forwarded), but it is almost always a typo.
// anonymousNodeLinks warns when an authorizer is on and the nodes reach
// the controller listener as User:ANONYMOUS: it is PLAINTEXT, or SSL
// without ssl.client.auth=required.
func anonymousNodeLinks(cfg Config, ctrl kraft.Security) string {
	if !cfg.Auth.Enabled {
		return ""
	}
	if !ctrl.TLS {
		return "the controller listener is PLAINTEXT while an authorizer is on: every node connects to it as User:ANONYMOUS, " +
			"which needs to be in super.users (as in Kafka); run it over SSL with client certificates instead"
	}
	// An invalid TLS configuration fails the start later, naming its key.
	if tcfg, _ := cfg.TLSConfig(ctrl.Listener, false); tcfg.ClientAuth != ClientAuthRequired {
		return "the controller listener does not require client certificates (ssl.client.auth=required) while an authorizer is on: " +
			"a node without one connects as User:ANONYMOUS, which needs to be in super.users"
	}
	return ""
}

func controllerPortMismatch(cfg Config) string {
	if !cfg.IsController() {
		return ""
	}
	_, listenPort, err := net.SplitHostPort(cfg.controllerListen())
	if err != nil || listenPort == "0" {
		return ""
	}
	for _, v := range cfg.Quorum.Voters {
		if v.ID != quorum.NodeID(cfg.NodeID) {
			continue
		}
		if _, voterPort, err := net.SplitHostPort(v.Addr); err == nil && voterPort != listenPort {
			return fmt.Sprintf("the controller listener %s is not on this node's port in %s (%s): the other voters will not reach it",
				cfg.controllerListen(), KeyControllerVoters, v.Addr)
		}
	}
	return ""
}

// ListenerAddr is the address the named client listener bound (with the
// real port when configured with port 0); empty if there is none.
func (n *Node) ListenerAddr(name string) string { return n.listenerAddrs[name] }

// Addr is the address the client listener bound (with the real port when
// configured with port 0); empty on a controller-only node.
func (n *Node) Addr() string { return n.addr }

// AdvertisedAddr is the address clients are told to use; empty on a
// controller-only node.
func (n *Node) AdvertisedAddr() string { return n.advertised }

// ControllerAddr is the address the controller listener bound; empty on a
// broker-only node, which has none.
func (n *Node) ControllerAddr() string { return n.ctrlAddr }

// Roles is process.roles: "broker", "controller" or both, in that order.
func (n *Node) Roles() []string { return n.cfg.Roles() }

// ActiveController reports whether this node's controller is active and,
// on a node with the broker role, this node's broker is registered and
// unfenced: on a combined node, that it is ready for CreateTopics.
func (n *Node) ActiveController() bool {
	ready := false
	_ = n.loop.Call(func() { ready = n.srv.ActiveController() })
	return ready
}

// Registered reports whether this node's broker is registered with the
// controller and unfenced, as this node's copy of the metadata image says.
// It is false on a controller-only node.
func (n *Node) Registered() bool {
	ready := false
	_ = n.loop.Call(func() { ready = n.srv.Registered() })
	return ready
}

// QuorumLeader is the metadata quorum's leader as this node knows it (the
// active controller's id), or -1 when none is known.
func (n *Node) QuorumLeader() int32 {
	leader := int32(-1)
	_ = n.loop.Call(func() { leader = n.srv.Member().ActiveController() })
	return leader
}

// DiskStats is what the node's data directory did since it started:
// fdatasyncs, directory fsyncs and bytes written. Bytes written per
// fdatasync is the size of its group commits.
func (n *Node) DiskStats() DiskStats { return n.env.disk.Stats() }

// ClusterID is the cluster id from meta.properties.
func (n *Node) ClusterID() string { return n.meta.ClusterID }

// NodeID is this node's id.
func (n *Node) NodeID() int32 { return n.cfg.NodeID }

// Shutdown stops the node cleanly: the broker stops accepting and closes
// its connections on the loop, the loop stops (dropping pending callbacks,
// as a stopped incarnation must), then sockets are closed and in-flight
// fsyncs and object-store calls are waited for. ctx bounds the wait. It is
// safe to call more than once; later calls return the first result.
func (n *Node) Shutdown(ctx context.Context) error {
	n.shutdownOnce.Do(func() {
		n.log.Info("node shutting down")
		n.shutdownErr = n.shutdown(ctx)
		if n.shutdownErr != nil {
			n.log.Error("node shutdown incomplete", "err", n.shutdownErr)
			return
		}
		n.log.Info("node stopped")
	})
	return n.shutdownErr
}

func (n *Node) shutdown(ctx context.Context) error {
	n.closeOps(ctx)
	closed := make(chan error, 1)
	go func() {
		memberClosed := make(chan struct{})
		err := n.loop.Call(func() { n.srv.Close(func() { close(memberClosed) }) })
		if err == nil {
			select {
			case <-memberClosed:
			case <-ctx.Done():
			}
		}
		closed <- err
	}()
	select {
	case err := <-closed:
		if err != nil && !errors.Is(err, ErrLoopStopped) {
			return err
		}
	case <-ctx.Done():
		// The loop is stuck in a callback; stop it anyway.
	}
	n.loop.Stop()
	select {
	case <-n.loop.Done():
	case <-ctx.Done():
		return fmt.Errorf("waiting for the loop to stop: %w", ctx.Err())
	}
	envClosed := make(chan error, 1)
	go func() { envClosed <- n.env.Close() }()
	select {
	case err := <-envClosed:
		return err
	case <-ctx.Done():
		return fmt.Errorf("waiting for sockets, syncs and object-store calls: %w", ctx.Err())
	}
}

// Run starts a node, serves until ctx is done, then shuts it down within
// DefaultShutdownTimeout.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	n, err := Start(cfg, log)
	if err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), DefaultShutdownTimeout)
	defer cancel()
	return n.Shutdown(sctx)
}
