package server

import (
	"fmt"
	"github.com/twmb/franz-go/pkg/kmsg"
	"log/slog"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/replica"
)

// Server is one running Strata server on one env.Env: the metadata quorum
// member (a voter with the controller role, an observer otherwise) and,
// with the broker role, the broker's client listener, its registration
// with the controller and the partitions it hosts. Every method runs on
// the Env's loop.
type Server struct {
	e      env.Env
	cfg    Config
	log    *slog.Logger
	member *kraft.Member
	broker *broker.Broker   // nil without the broker role
	reg    *registrar       // nil without the broker role
	parts  *replica.Manager // nil without the broker role
	// stopScrub abandons the start-up scrub while it runs (nil after).
	stopScrub func()
	closed    bool
	// applyQueued is set while an Apply of the latest image to the
	// partitions is posted (one per loop turn, whatever the batches).
	applyQueued bool
}

// Start validates cfg, recovers the quorum member from the data directory
// (e.Disk(); the member's files live under __cluster_metadata-0), binds
// the listeners and starts the member, and with the broker role the
// broker and its registration. It returns an error for what fails at once
// (configuration, recovery, a listener); later fatal errors of the member
// show in Status.
func Start(e env.Env, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{e: e, cfg: cfg, log: e.Logger().With("component", "server")}
	if err := e.Disk().MkdirAll(metadataDir); err != nil {
		return nil, fmt.Errorf("server: create %s: %w", metadataDir, err)
	}
	policy, err := cfg.Auth.policy()
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	qcfg := cfg.Quorum
	qcfg.Metrics = cfg.Metrics
	// The controller listener authorizes by the same ACLs and
	// super.users as the client listeners (kraft.Security).
	if policy != nil {
		qcfg.Security.Authorizer = policy
	}
	s.member, err = kraft.Start(subdirEnv{Env: e, disk: newSubDisk(e.Disk(), metadataDir)}, qcfg)
	if err != nil {
		return nil, fmt.Errorf("server: start the metadata quorum member: %w", err)
	}
	if !cfg.Broker {
		return s, nil
	}
	rcfg := cfg.Partitions
	rcfg.NodeID = cfg.NodeID
	rcfg.KeepDirs = append(rcfg.KeepDirs, metadataDir)
	rcfg.Metrics = cfg.Metrics
	rcfg.Listener = cfg.BrokerListener.InterBrokerListenerName()
	rcfg.ListenerTLS = cfg.BrokerListener.InterBrokerTLS()
	if login, ok := cfg.BrokerListener.InterBrokerLogin(); ok {
		rcfg.ListenerLogin = login
	}
	rcfg.AlterPartition = func(req *kmsg.AlterPartitionRequest, done func(kmsg.Response, error)) { s.member.Submit(req, done) }
	rcfg.LeaderRefused = s.member.SuspectBroker
	rcfg.BrokerEpoch = func() int64 {
		if s.reg == nil || !s.Registered() {
			return -1
		}
		return s.reg.epoch
	}
	s.parts = replica.NewManager(e, rcfg)
	bcfg := cfg.BrokerListener
	bcfg.Metadata = s.member
	bcfg.Partitions = s.parts
	bcfg.Metrics = cfg.Metrics
	if policy != nil {
		bcfg.Authorizer = policy
	}
	bcfg.BrokerEpoch = func() int64 {
		if s.reg == nil {
			return -1
		}
		return s.reg.epoch
	}
	s.broker, err = broker.New(e, bcfg)
	if err != nil {
		s.member.Close(nil)
		s.parts.Close(func() {})
		return nil, err
	}
	s.reg = &registrar{e: e, m: s.member, nodeID: cfg.NodeID, clusterID: cfg.ClusterID, epoch: -1,
		endpoints: s.broker.Endpoints(), onChange: s.scheduleApply}
	s.member.SetOnImage(func(*meta.Image) { s.scheduleApply() })
	s.reg.registrations = cfg.Metrics.Counter(metrics.BrokerRegistrations)
	cfg.Metrics.GaugeFunc(metrics.BrokerFenced, func() float64 {
		if s.Registered() {
			return 0
		}
		return 1
	})
	// The partition logs are scrubbed before the broker registers: one
	// that drops damaged records must not register as holding them
	// (replica.Manager.Scrub).
	s.stopScrub = s.parts.Scrub(func(damaged int) {
		s.stopScrub = nil
		s.reg.start(damaged > 0)
	})
	return s, nil
}

// scheduleApply posts one Apply of the member's latest image to the
// partitions: the member calls back inside its own processing, and a burst
// of committed batches needs one Apply.
func (s *Server) scheduleApply() {
	if s.applyQueued || s.parts == nil {
		return
	}
	s.applyQueued = true
	s.e.Post(func() {
		s.applyQueued = false
		if !s.closed {
			s.parts.Apply(s.member.Image(), s.Registered())
			s.broker.SyncGroups()
		}
	})
}

// Partitions is the partition manager, nil without the broker role.
func (s *Server) Partitions() *replica.Manager { return s.parts }

// kraftID is a node id as the quorum names it.
func kraftID(id int32) quorum.NodeID { return quorum.NodeID(id) }

// Member is the metadata quorum member.
func (s *Server) Member() *kraft.Member { return s.member }

// Broker is the client listener, nil without the broker role.
func (s *Server) Broker() *broker.Broker { return s.broker }

// BrokerAddr is the address the client listener bound; empty without the
// broker role.
func (s *Server) BrokerAddr() string {
	if s.broker == nil {
		return ""
	}
	return s.broker.Addr()
}

// ControllerAddr is the address the controller listener bound; empty on a
// broker-only server.
func (s *Server) ControllerAddr() string { return s.member.Addr() }

// Image is the metadata image this server has applied.
func (s *Server) Image() *meta.Image { return s.member.Image() }

// Registered reports whether this server's broker is registered with the
// controller in this incarnation and unfenced, as its own image says. It is
// false without the broker role.
func (s *Server) Registered() bool {
	if s.reg == nil || s.reg.epoch < 0 {
		return false
	}
	b, ok := s.member.Image().Broker(s.cfg.NodeID)
	return ok && !b.Fenced && b.Epoch == s.reg.epoch
}

// NotReady says why the server is not ready to serve, "" when it is (a
// readiness probe's answer): the quorum member has not failed and knows a
// leader, and with the broker role the broker is registered in this
// incarnation and unfenced, which the controller grants only once its
// metadata has caught up.
func (s *Server) NotReady() string {
	st := s.member.Status()
	switch {
	case s.closed:
		return "shutting down"
	case st.Err != nil:
		return "metadata quorum member failed: " + st.Err.Error()
	case s.cfg.Broker && !s.Registered():
		return "broker not registered and unfenced yet (catching up with the metadata log)"
	case st.Leader == quorum.NoNode:
		return "no metadata quorum leader known"
	}
	return ""
}

// ActiveController reports whether this server runs the active controller
// and, with the broker role, is registered: on a combined server, that it
// can serve CreateTopics.
func (s *Server) ActiveController() bool {
	if !s.member.Status().ActiveController {
		return false
	}
	return !s.cfg.Broker || s.Registered()
}

// Close shuts the server down cleanly: a controlled shutdown first (the
// broker goes on serving while the controller moves its leaderships and
// ISR memberships to other brokers, then fences it, so that the next
// incarnation registers at once), then the broker stops accepting and
// closes its connections, the logs are flushed and checkpointed, and the
// quorum member resigns leadership if it leads. done, if not nil, runs on
// the loop once everything is closed. Nothing durable is touched: a
// restart recovers as after a crash.
func (s *Server) Close(done func()) {
	finished := func() {
		if done != nil {
			done()
		}
	}
	if s.closed {
		s.e.Post(finished)
		return
	}
	s.closed = true
	if s.stopScrub != nil {
		s.stopScrub()
		s.stopScrub = nil
	}
	closeMember := func() { s.member.Close(finished) }
	if s.broker == nil {
		closeMember()
		return
	}
	// A controlled shutdown first, serving meanwhile (the leaderships
	// move away), then the broker stops and the logs are flushed and
	// checkpointed, then the quorum member goes.
	s.reg.shutdown(func() {
		s.broker.Close()
		s.parts.Close(closeMember)
	})
}
