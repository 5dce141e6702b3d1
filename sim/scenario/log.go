package scenario

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/linearizability"
	"github.com/strata-log/strata/nemesis"
	"github.com/strata-log/strata/nemesis/simworld"
	"github.com/strata-log/strata/sim"
)

// Log runs the "log" scenario: the Kafka data path under the nemesis.
func Log(o Options) sim.Summary {
	sum, _ := runLog(o, logShape{pageCache: o.PageCache}, logBugs{})
	return sum
}

// Replicated runs the "replicated" scenario: the log scenario's cluster,
// workload and checks with every topic at replication factor 3 and
// min.insync.replicas 2 (ISR replication, durable acks=all).
func Replicated(o Options) sim.Summary {
	sum, _ := runLog(o, logShape{kind: kindReplicated, pageCache: o.PageCache, damageLogs: !o.NoDamageLogs}, logBugs{})
	return sum
}

// Replicated5 runs the "replicated5" scenario: the replicated scenario on
// five combined broker+controller nodes, topic orders at replication
// factor 5 and min.insync.replicas 3, topic events at 3 and 2, and a
// nemesis that may take two nodes down at once.
func Replicated5(o Options) sim.Summary {
	sum, _ := runLog(o, logShape{kind: kindReplicated5, pageCache: o.PageCache, damageLogs: !o.NoDamageLogs}, logBugs{})
	return sum
}

// Groups runs the "groups" scenario: the replicated scenario with a
// consumer group under member faults and coordinator failovers
// (groups.go).
func Groups(o Options) sim.Summary {
	sum, _ := runLog(o, logShape{kind: kindGroups, pageCache: o.PageCache}, logBugs{})
	return sum
}

// Txn runs the "txn" scenario: the replicated scenario with
// transactional producers, read_committed consumers and strikes at the
// transaction coordinator (txn.go).
func Txn(o Options) sim.Summary {
	sum, _ := runLog(o, logShape{kind: kindTxn, pageCache: o.PageCache, damageLogs: !o.NoDamageLogs}, logBugs{})
	return sum
}

// replicatedRF is the replicated scenario's replication factor, and
// replicatedLagTime its replica.lag.time.max.ms. replicated5RF is the
// replicated5 scenario's widest replication factor and its node count.
const (
	replicatedRF      = 3
	replicated5RF     = 5
	replicatedLagTime = 2 * time.Second
)

// logShape is what a run of the log scenarios is: which scenario, and
// the broker modes and knobs a test turns. It changes what runs, never
// what the checkers are told (logBugs). The zero value is the log
// scenario.
type logShape struct {
	// kind is the scenario.
	kind logKind
	// pageCache creates the topics with flush.messages=1000, Kafka's
	// page-cache mode (a real broker mode, not a bug): the broker
	// acknowledges and exposes a batch before it is fsynced, so a power
	// loss takes back acknowledged records (check a).
	pageCache bool
	// damageLogs declares partition .log files survivable (the
	// replicated scenarios' default; Options.NoDamageLogs).
	damageLogs bool
	// noTailConsumers runs no consumers during the run, so that only the
	// acknowledgements and the final read observe the log, and a lost
	// acknowledged record is caught by the final comparison of (a) rather
	// than by a consumer first.
	noTailConsumers bool
}

// logKind is one of the scenarios runLog runs.
type logKind uint8

const (
	// kindLog: topics at replication factor 1.
	kindLog logKind = iota
	// kindReplicated: every topic at replication factor 3 and
	// min.insync.replicas 2.
	kindReplicated
	// kindReplicated5: five nodes, topics at replication factor 5 and 3.
	kindReplicated5
	// kindGroups: the replicated scenario with a consumer group and its
	// checks (groups.go).
	kindGroups
	// kindTxn: the replicated scenario with transactional producers,
	// read_committed readers and their checks (txn.go).
	kindTxn
)

func (k logKind) String() string {
	return [...]string{"log", "replicated", "replicated5", "groups", "txn"}[k]
}

// name is the scenario's name.
func (s logShape) name() string { return s.kind.String() }

// groups and txn say whether the run has the groups or the txn
// scenario's workload and checks.
func (s logShape) groups() bool { return s.kind == kindGroups }
func (s logShape) txn() bool    { return s.kind == kindTxn }

// rf is the topics' widest replication factor.
func (s logShape) rf() int {
	switch s.kind {
	case kindLog:
		return 1
	case kindReplicated5:
		return replicated5RF
	}
	return replicatedRF
}

// nodes is the number of combined broker+controller nodes: three, or one
// per replica of the widest topic.
func (s logShape) nodes() int { return max(3, s.rf()) }

// topicRF is the replication factor of the i-th topic: every topic's is
// rf, but in replicated5, whose second topic (events) has 3, so that the
// five brokers hold partitions of both widths and a reassignment moves a
// replica to a broker that had none.
func (s logShape) topicRF(i int) int {
	if s.kind == kindReplicated5 && i == 1 {
		return replicatedRF
	}
	return s.rf()
}

// logBugs plants bugs so that tests can prove the checks catch them. The
// zero value plants none. Every one changes only what a checker is told
// (a view), never a broker, but txnBugs.offsetsDefaultISR, a planted
// misconfiguration.
type logBugs struct {
	// changeRecord makes the final read see a different value at the
	// first offset of every partition (check b).
	changeRecord bool
	// invent makes the final read see one more record, never produced,
	// after the end of every partition (check c).
	invent bool
	// dupBatch makes the final read see the first record of every
	// partition again after its end: a batch written twice (check d).
	dupBatch bool
	// reorder makes consumers see the first two records of every fetch
	// that returns at least two in swapped order (check e).
	reorder bool
	// offlineMetric makes the metrics check (g) read one more offline
	// partition than n1's registry holds.
	offlineMetric bool
	// divergentReplica makes the replicas check (i) read one bit flipped
	// in the first batch of the last replica of every partition.
	divergentReplica bool
	// hostileBlind makes the hostile client judge no answer, so that
	// only the readers can find a batch appended that had to be refused
	// (check x's second half).
	hostileBlind bool
	// groups and txn are the groups and txn scenarios' own.
	groups groupBugs
	txn    txnBugs
}

// groupBugs are the groups scenario's planted bugs.
type groupBugs struct {
	// forgetResets makes the groups harness not tell (k) of the admin's
	// offset resets: the members' next OffsetFetch then looks like a
	// lost commit.
	forgetResets bool
}

// txnBugs are the txn scenario's planted bugs.
type txnBugs struct {
	// dropCommitted makes the txn readers' view drop the first record of
	// every read_committed answer that holds at least two (check n);
	// repeatRecord makes them see an answer's first record again one
	// past its last (check o).
	dropCommitted, repeatRecord bool
	// offsetsDefaultISR creates __consumer_offsets with the broker's
	// default min.insync.replicas (1) instead of 2: an acknowledged
	// TxnOffsetCommit can be lost (check t). reverseEdge makes (u)'s
	// graph hold, for its first wr edge T -> E, also E -> T (a cycle).
	offsetsDefaultISR, reverseEdge bool
}

// minInsync is the min.insync.replicas of a topic at replication factor
// rf: a majority (2 of 3, 3 of 5), so that an acknowledged record survives
// any minority of its replicas.
func minInsync(rf int) int { return rf/2 + 1 }

// Defaults of the log scenario.
const (
	// logFaultPhase is the default fault phase: long enough for several
	// kills, restarts and broker re-registrations (the controller fences
	// a broker 9 s after its last heartbeat), short enough that 300
	// seeds run in a few minutes.
	logFaultPhase = 20 * time.Second
	// logHealPhase bounds the healed phase: producers drain, every
	// partition serves a probe produce and the final read catches up. A
	// power cycle of every node at the heal costs a session timeout
	// before the brokers can register again.
	logHealPhase = 30 * time.Second
	// logSetupTimeout bounds the start: brokers registered, topics
	// created, leaders elected, before the nemesis starts.
	logSetupTimeout = 15 * time.Second
	// logStep is how often the harness advances its phases; the
	// supervisor looks at the members as often.
	logStep          = 50 * time.Millisecond
	logClusterID     = "sim-log"
	logSupervisorDly = 50 * time.Millisecond
	logBrokerPort    = ":9092"
	logControlPort   = ":9093"
	// logMaxEvents bounds the events of one run, about ten times what a
	// busy seed delivers: past it something loops (a client fetching at
	// once, forever, as log seeds 23 and 234 once did) and the run fails
	// instead of crawling.
	logMaxEvents = 300_000
)

// logPhase is where a run is.
type logPhase uint8

const (
	logSetup    logPhase = iota // brokers registering, topics being created
	logFaults                   // workload and nemesis
	logDrain                    // healed; producers deliver what they hold
	logProbe                    // a probe record to every partition
	logVerify                   // the final read catches up
	logChecking                 // the final check is scheduled
	logMetrics                  // waiting for the metrics to say healthy (g)
	logReplicas                 // waiting for the replicas to match (i)
	logGroup                    // waiting for the group to settle (m)
	logTxn                      // waiting for the transactions to settle (s)
	logHostile                  // waiting for the hostile client's connections to close (x)
	logDone
)

func (p logPhase) String() string {
	return [...]string{"setup", "faults", "drain", "probe", "verify", "checking", "metrics", "replicas", "group", "txn", "hostile", "done"}[p]
}

// runLog runs one seed of the log scenario with planted bugs and returns
// the harness, for tests.
//
// The cluster: Options.Nodes (3) combined broker+controller servers
// (core/server, process.roles=broker,controller) named n1, n2, ...,
// node ids 1, 2, ..., each a voter of the metadata quorum, as the
// README's three-node cluster. Combined nodes keep the run cheap (three
// processes, not six) and make every kill a broker's and a voter's at
// once; at most a minority is down at a time (nemesis.DrawMix), so the
// quorum can elect. Topics have replication factor 1: a partition lives
// on one broker and is unavailable while that broker is down or fenced.
//
// The workload (log_clients.go) runs in client processes the nemesis
// does not touch (they share the network with the servers, so clogs,
// resets and kills of a server reach them): producers of swarm-drawn
// kinds, consumers tailing every partition, then a prober and a final
// reader; one seed in two also resets and clogs the clients' own
// network. Every observation goes to a linearizability.LogHistory, which
// checks (a)–(e) at once; a violation panics inside the event that
// observed it, which stops the run there, and the seed fails with the
// check, the virtual time and the replay command.
//
// Phases: setup (before any fault); the fault phase, in which the
// nemesis injects every kind nemesis.DrawMix enables (kills are power
// losses or process kills, a server stopped by a fatal error is
// restarted by a supervisor as in the kraft scenario); then the heal.
// One seed in two power-cycles every node at once just after the heal
// (nemesis has no such primitive: its kills take a minority). Within
// logHealPhase of the heal, (f) liveness: every producer's batches are
// acknowledged (acks=0: handed to the network), a probe produce to every
// partition is acknowledged, and a final reader reads every partition
// from its start past the probe. Then (a): every acknowledged record is
// in the final read at its offset. Then, also within logHealPhase, (g):
// the servers' metrics (core/metrics, the registry a node exports) say
// the cluster is healthy (checkMetrics), and with replicas (i): every
// partition has a leader and a full ISR, and its replicas hold the same
// bytes below the high watermark (checkReplicas). Last, (h): the run's
// produces and fetches are linearizable as an append-only log per
// partition (porcupine; log_model.go).
func runLog(o Options, shape logShape, bugs logBugs) (sim.Summary, *logHarness) {
	o = o.withDefaults(shape.nodes(), logFaultPhase, logHealPhase)
	s := sim.New(sim.Config{Seed: o.Seed, Log: o.Log, BuggifyRate: o.buggifyRate()})
	h := newLogHarness(s, o, shape, bugs)
	sum := func(err error) (sim.Summary, *logHarness) {
		m := s.Summarize(shape.name())
		m.Err = err
		m.Visualize = h.model.visualize
		if h.err != nil {
			// A failed check: its message names the check and the
			// virtual time; the panic's stack adds nothing.
			m.Err = h.err
		}
		if m.Err != nil {
			// Every anomaly the whole history shows, by Jepsen's classes
			// (the check that failed reported the first).
			if r := h.hist.Anomalies(); !r.Empty() {
				m.Err = fmt.Errorf("%w\n    anomalies: %s", m.Err, anomalySummary(r))
			}
		}
		return m, h
	}
	h.start()
	// Setup: no faults until the topics exist and have leaders.
	setupEnd := s.Now() + logSetupTimeout
	for h.phase == logSetup {
		if s.Now() >= setupEnd {
			return sum(fmt.Errorf("setup: the topics were not ready within %v: %s", logSetupTimeout, h.describe()))
		}
		if err := kraftRunUntil(s, s.Now()+logStep); err != nil {
			return sum(err)
		}
		h.advance()
	}
	healAt := s.Now() + o.FaultPhase
	mix := nemesis.None()
	if !o.NoFaults {
		// Every acks=1/all record is fsynced, so the scenario survives
		// every node losing power at once (it power-cycles them all
		// after the heal in half its seeds, too). No wipes: topics have
		// one replica, and every node is a voter.
		mix = nemesis.DrawMixFor(s.Rand("nemesis/mix"), o.Nodes, nemesis.Promises{Outages: true, Voters: o.Nodes})
	}
	if shape.damageLogs && shape.rf() > 1 && len(mix.Disk.Damaged) > 0 {
		h.logDamage = mix.Disk.Damaged[0]
		h.declareSurvivable(h.logDamage)
	}
	nemesis.Start(simworld.New(s, h.procs), mix, o.FaultPhase)
	h.hostile = maybeStartHostilePeer(s, o, h.hostileConfig(healAt))
	if h.hostilePlan != nil {
		h.hostileClient = startHostileClient(h, healAt)
	}
	if h.swarm.clientFaults > 0 && !o.NoFaults {
		h.scheduleClientFault(s.Rand("log/client-faults"), healAt)
	}
	if h.swarm.powerCycle && !o.NoFaults {
		at := healAt + time.Duration(s.Rand("log/power-cycle").Int64N(int64(time.Second)))
		s.At(at, "log:power-cycle", h.powerCycle)
	}
	deadline := healAt + o.HealPhase
	for h.phase != logDone {
		if s.Now() >= deadline {
			if err := h.finalCheckAtDeadline(); err != nil {
				return sum(err)
			}
			return sum(fmt.Errorf("(f) liveness: stuck in phase %s %v after the heal: %s", h.phase, o.HealPhase, h.describe()))
		}
		if err := kraftRunUntil(s, s.Now()+logStep); err != nil {
			return sum(err)
		}
		if s.Events() > logMaxEvents {
			return sum(fmt.Errorf("(f) liveness: more than %d events by %v, something loops: %s", logMaxEvents, s.Now(), h.describe()))
		}
		if s.Now() >= healAt && h.phase == logFaults {
			h.phase = logDrain
			h.phaseAt = s.Now()
			s.Trace("log:phase drain")
			if h.group != nil {
				h.group.heal()
			}
			if h.txn != nil {
				h.txn.heal()
			}
		}
		h.advance()
	}
	if h.err != nil {
		return sum(h.err)
	}
	// (h): the whole history against the model of a partition.
	if err := h.model.check(s.Trace, s.Now()); err != nil {
		return sum(err)
	}
	s.Trace("log:done " + h.describe())
	return sum(nil)
}

// logHarness is one run of the log scenario.
// declareSurvivable declares what node i's disk may damage at rest: the
// index files, and on the node logDamage names also the partition .log
// files (latent errors too, which show while the broker runs, unless
// -no-latent-logs), unless -no-damage-logs (docs/simulation.md,
// "Survivable files"). One node only: a topic at replication factor 3 and min.insync.replicas 2 holds
// an acknowledged record on two replicas, so damage on two of its three
// (replicated5's damaged minority may be two nodes) can take it from
// every copy that has it.
func (h *logHarness) declareSurvivable(i int) {
	d := h.procs[i].Disk()
	if i == h.logDamage {
		d.DeclareSurvivable(replicaFilesSurvivable)
		if !h.o.NoLatentLogs {
			d.DeclareLatentSurvivable(nil) // .log files too (core/replica damage.go)
		} else {
			d.DeclareLatentSurvivable(indexFilesSurvivable)
		}
		return
	}
	d.DeclareSurvivable(indexFilesSurvivable)
}

// hostileConfig aims the hostile peer at the nodes' controller listeners
// (every node is a voter and a broker) until the heal.
func (h *logHarness) hostileConfig(until time.Duration) hostileConfig {
	cfg := hostileConfig{clusterID: logClusterID, topic: h.swarm.topics[0].name, until: until}
	for i := 0; i < h.o.Nodes; i++ {
		cfg.targets = append(cfg.targets, hostileTarget{addr: h.names[i] + logControlPort, id: int32(i + 1)})
		cfg.brokers = append(cfg.brokers, int32(i+1))
	}
	return cfg
}

type logHarness struct {
	// hostile is the run's hostile peer (hostile.go), nil when the seed
	// runs without.
	hostile *hostilePeer
	// hostilePlan and hostileClient are the run's hostile client
	// (hostile_client.go), nil when the seed runs without.
	hostilePlan   *hostilePlan
	hostileClient *hostileClient
	// reassigns (the replicated scenario, one seed in two) runs partition
	// reassignments from the admin client (logAdmin.reassignTick), drawn
	// from reassignRand.
	reassigns    bool
	reassignRand *rand.Rand
	// strikes at the active controller during ISR changes (replicated
	// scenarios, one seed in two).
	strikes controllerStrikes
	// logDamage is the node whose partition .log files may get damage at
	// rest (shape.damageLogs): the first of the nemesis's damaged ones, -1
	// before the mix is drawn or without it.
	logDamage int
	s         *sim.Sim
	o         Options
	shape     logShape
	bugs      logBugs
	swarm     logSwarm

	names []string
	procs []*sim.Process
	// clients are the client processes (never killed; their network may
	// be reset or clogged, see scheduleClientFault).
	clients []*sim.Process
	servers []*server.Server
	// registries are the servers' metrics, one per incarnation, as a
	// node's are (counters restart with the process).
	registries []*metrics.Registry
	// serverInc is the incarnation servers[i] belongs to; restarts the
	// incarnation a supervisor restart is scheduled for (+1).
	serverInc []uint64
	restarts  []uint64

	hist *linearizability.LogHistory
	// model records the same produces and fetches for the porcupine
	// check (h) (log_model.go).
	model   *logModel
	phase   logPhase
	phaseAt time.Duration
	err     error

	admin     *logAdmin
	producers []*logProducer
	consumers []*logConsumer
	prober    *logProducer
	verifier  *logConsumer
	// probes are the offsets the probe records were acknowledged at.
	probes map[linearizability.LogPartition]int64
	// supervisor restarts and power cycles, for the summary; maxDown is
	// the most servers the supervisor saw down at once (sampled at its
	// steps), for the tests' figures.
	supervised  int
	powerCycled bool
	maxDown     int
	// group is the groups scenario's consumer group (groups.go).
	group *groupRun
	// txn is the txn scenario's transactions (txn.go).
	txn *txnRun
}

func newLogHarness(s *sim.Sim, o Options, shape logShape, bugs logBugs) *logHarness {
	h := &logHarness{s: s, o: o, shape: shape, bugs: bugs, swarm: drawLogSwarm(s, shape), logDamage: -1,
		probes: map[linearizability.LogPartition]int64{}}
	// The hostile client in one seed in two, from its own stream; it
	// sets the brokers' connection bounds, so it is drawn first.
	h.hostilePlan = drawHostilePlan(s, o, shape)
	h.hist = linearizability.NewLogHistory(s.Now)
	h.model = newLogModel()
	if shape.rf() > 1 {
		// Reassignments in one seed of two, from a stream of their own so
		// that the rest of the seed's draws do not move.
		h.reassignRand = s.Rand("log/reassign")
		h.reassigns = h.reassignRand.IntN(2) == 0
		// Strikes at the controller during ISR changes in one seed of
		// two (log_strike.go), from a stream of their own.
		h.strikes.r = s.Rand("log/controller-strike")
		h.strikes.on = h.strikes.r.IntN(2) == 0 && !o.NoFaults
	}
	if shape.groups() {
		h.group = newGroupRun(h)
	}
	if shape.txn() {
		h.txn = newTxnRun(h)
	}
	n := o.Nodes
	h.servers = make([]*server.Server, n)
	h.registries = make([]*metrics.Registry, n)
	h.serverInc = make([]uint64, n)
	h.restarts = make([]uint64, n)
	var voters []string
	for i := 0; i < n; i++ {
		h.names = append(h.names, fmt.Sprintf("n%d", i+1))
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, h.names[i]+logControlPort))
	}
	votersText := strings.Join(voters, ",")
	for i := 0; i < n; i++ {
		i := i
		// The broker keys go through server.properties text and the
		// rows that parse it in production (core/server keys.go); the
		// addresses and what has no key are set directly.
		var props serverProperties
		props.set(server.KeyNodeID, i+1)
		props.set(server.KeyProcessRoles, server.RoleBroker+","+server.RoleController)
		props.set(server.KeyControllerVoters, votersText)
		if hp := h.hostilePlan; hp != nil {
			props.set(server.KeyConnectionsMaxIdleMs, hp.idle.Milliseconds())
			props.set(server.KeyMaxConnectionsPerIPOverrides, fmt.Sprintf("%s:%d,%s:%d", hostileClientHost, hp.perIP, hostileSlowHost, hp.slowPerIP))
		}
		if shape.groups() {
			props.set(server.KeyOffsetsTopicPartitions, groupOffsetsPartitions)
			props.set(server.KeyGroupMinSessionTimeoutMs, groupMinSession.Milliseconds())
			props.set(server.KeyGroupInitialRebalanceDelayMs, groupInitialDelay.Milliseconds())
		}
		if shape.txn() {
			props.set(server.KeyTxnStatePartitions, txnStatePartitions)
			props.set(server.KeyOffsetsTopicPartitions, txnOffsetsPartitions)
			props.set(server.KeyTxnAbortCheckIntervalMs, txnAbortCheckInterval.Milliseconds())
			if h.txn != nil && h.txn.tv2 {
				props.set(server.KeyTransactionVersion, 2)
			}
		}
		if shape.rf() > 1 {
			// A short replica.lag.time.max.ms, so that within the fault
			// phase followers fall out of the ISR (a partition, a pause,
			// a slow disk) and come back, and elections meet ISRs of
			// every size.
			props.set(server.KeyReplicaLagTimeMaxMs, replicatedLagTime.Milliseconds())
		}
		scfg := props.parse(server.Config{ClusterID: logClusterID})
		scfg.BrokerListener.ListenAddr, scfg.BrokerListener.AdvertisedHost = h.names[i]+logBrokerPort, h.names[i]
		scfg.Quorum.Controller.MaxReplicationFactor = shape.rf()
		if shape.txn() && !bugs.txn.offsetsDefaultISR {
			scfg.BrokerListener.Groups.OffsetsMinInsync = txnOffsetsMinInsync
		}
		if shape.rf() > 1 {
			scfg.Partitions.AlterPartitionSent = func(topic string, partition int32) { h.alterPartitionSent(i, topic, partition) }
		}
		p := s.AddProcess(h.names[i], func(e env.Env) {
			h.servers[i] = nil
			h.declareSurvivable(i) // at every start: a replaced disk forgets it
			scfg := scfg
			scfg.Metrics = metrics.New()
			h.registries[i] = scfg.Metrics
			srv, err := server.Start(e, scfg)
			if err != nil {
				e.Logger().Error("server start failed", "err", err)
				s.Trace(fmt.Sprintf("%s:start-failed:%v", h.names[i], err))
				h.superviseRestart(i)
				return
			}
			h.servers[i], h.serverInc[i] = srv, h.procs[i].Incarnation()
		})
		h.procs = append(h.procs, p)
	}
	return h
}

// bootstrap is the brokers' addresses.
func (h *logHarness) bootstrap() []string {
	out := make([]string, len(h.names))
	for i, n := range h.names {
		out[i] = n + logBrokerPort
	}
	return out
}

func (h *logHarness) start() {
	for _, p := range h.procs {
		p.Start()
	}
	h.admin = startLogAdmin(h)
	h.scheduleSupervisor()
}

// fail records the first violation and stops the run by panicking inside
// the current event (RunUntil reports it with the event and the time).
func (h *logHarness) fail(err error) {
	if err == nil {
		return
	}
	if h.err == nil {
		h.err = err
	}
	panic(err)
}

// server returns the running, started server i, or nil.
func (h *logHarness) server(i int) *server.Server {
	if !h.procs[i].Up() || h.serverInc[i] != h.procs[i].Incarnation() {
		return nil
	}
	return h.servers[i]
}

func (h *logHarness) scheduleSupervisor() {
	h.s.After(logStep, "log:supervise", func() {
		down := 0
		for _, p := range h.procs {
			if !p.Up() {
				down++
			}
		}
		h.maxDown = max(h.maxDown, down)
		for i := range h.procs {
			if srv := h.server(i); srv != nil && srv.Member().Status().Err != nil {
				h.superviseRestart(i)
			}
		}
		h.scheduleSupervisor()
	})
}

// superviseRestart restarts server i's process a little later unless it
// restarted meanwhile: a process supervisor (systemd) restarting a node
// that stopped on a fatal error, with the machine's page cache intact.
func (h *logHarness) superviseRestart(i int) {
	if superviseRestart(h.s, h.procs[i], &h.restarts[i], h.names[i], logSupervisorDly) {
		h.supervised++
	}
}

// powerCycle cuts the power of every node at once and starts them again:
// what every acks=all record must survive.
func (h *logHarness) powerCycle() {
	h.powerCycled = true
	h.s.Trace("log:power-cycle")
	for _, p := range h.procs {
		p.Crash()
	}
	for _, p := range h.procs {
		p.Start()
	}
}

// advance moves the run through its phases as their conditions hold; it
// runs between steps, and starts what a new phase needs inside an event.
func (h *logHarness) advance() {
	switch h.phase {
	case logSetup:
		if h.admin.ready() {
			h.enter(logFaults, h.startWorkload)
		}
	case logDrain:
		if h.drained() {
			h.enter(logProbe, h.startProbe)
		}
	case logProbe:
		if h.prober != nil && h.prober.p.Pending() == 0 && len(h.probes) == len(h.partitions()) {
			h.enter(logVerify, h.startVerify)
		}
	case logVerify:
		if h.verified() {
			h.phase, h.phaseAt = logChecking, h.s.Now()
			h.s.At(h.s.Now(), "log:final-check", func() {
				h.verifier.tamperTail()
				h.fail(h.finalCheck())
				h.phase = logMetrics
			})
		}
	case logMetrics:
		// A broker restarted late in the heal may still wait out its
		// previous registration's session (it is fenced until then): the
		// metrics must say healthy by the deadline, not at once.
		if err := h.checkMetrics(); err == nil {
			h.s.Trace("log:metrics healthy")
			h.phase, h.phaseAt = logReplicas, h.s.Now()
		}
	case logReplicas:
		// (i) waits for the same deadline: a follower that was fenced
		// until late may still be fetching its last batches.
		if h.shape.rf() == 1 {
			h.lastPhase()
			break
		}
		if err := h.checkReplicas(); err == nil {
			h.s.Trace("log:replicas identical")
			h.lastPhase()
			if h.group != nil {
				h.phase, h.phaseAt = logGroup, h.s.Now()
			}
			if h.txn != nil {
				h.phase, h.phaseAt = logTxn, h.s.Now()
			}
		}
	case logGroup:
		// (m): the group settles within the same deadline.
		err := h.group.settle()
		var v *groupViolation
		if errors.As(err, &v) {
			h.err = err
		}
		if err == nil || h.err != nil {
			h.lastPhase()
		}
	case logTxn:
		// (s): the transactions settle within the same deadline.
		if h.txn.settle() {
			h.lastPhase()
		}
	case logHostile:
		// (x): the hostile client's connections close within the same
		// deadline.
		if h.hostileClient.settle() {
			h.s.Trace("log:hostile settled")
			h.phase = logDone
		}
	}
}

// lastPhase ends the run's checks, but for the hostile client's (x) when
// the seed runs it.
func (h *logHarness) lastPhase() {
	h.phase = logDone
	if h.hostileClient != nil && h.err == nil {
		h.phase, h.phaseAt = logHostile, h.s.Now()
	}
}

func (h *logHarness) enter(p logPhase, start func()) {
	h.phase, h.phaseAt = p, h.s.Now()
	h.s.Trace("log:phase " + p.String())
	h.s.At(h.s.Now(), "log:start-"+p.String(), start)
}

// topicRF is topic's replication factor.
func (h *logHarness) topicRF(topic string) int {
	for _, t := range h.swarm.topics {
		if t.name == topic {
			return t.rf
		}
	}
	panic("log: unknown topic " + topic)
}

// partitions lists every partition of the run's topics.
func (h *logHarness) partitions() []linearizability.LogPartition {
	var out []linearizability.LogPartition
	for _, t := range h.swarm.topics {
		for p := int32(0); p < t.partitions; p++ {
			out = append(out, linearizability.LogPartition{Topic: t.name, Partition: p})
		}
	}
	return out
}

// offsetsPartitions is how many __consumer_offsets partitions the run
// has (the groups scenario's).
func (h *logHarness) offsetsPartitions() int {
	switch {
	case h.group != nil:
		return groupOffsetsPartitions
	case h.txn != nil:
		// the txn and txn-out topics, __transaction_state, __consumer_offsets
		return txnPartitions + etlPartitions + txnStatePartitions + txnOffsetsPartitions
	}
	return 0
}

// drained reports whether every producer delivered everything.
func (h *logHarness) drained() bool {
	for _, p := range h.producers {
		if p.p.Pending() > 0 {
			return false
		}
	}
	return true
}

// verified reports whether the final reader caught up with every
// partition's high watermark, past its probe record.
func (h *logHarness) verified() bool {
	if h.verifier == nil {
		return false
	}
	for _, p := range h.partitions() {
		if !h.verifier.caughtUp(p, h.probes[p]+1) {
			return false
		}
	}
	return true
}

// finalCheck hands the final read to the history and checks (a).
func (h *logHarness) finalCheck() error {
	for _, p := range h.partitions() {
		st := h.verifier.state(p)
		h.hist.FinalRead(p, st.start, st.hw, st.records)
	}
	err := h.hist.CheckDurable()
	h.s.Trace(fmt.Sprintf("log:durable err=%v", err))
	return err
}

// checkMetrics is check (g): once healed and verified, the servers'
// metrics say what an operator's dashboard must say of a healthy cluster:
// no offline, under-replicated or under-min-ISR partition, no fenced
// broker, one active controller, every partition led once, each
// partition's log end offset gauge at the final read's high watermark
// (every record is durable and read). (Request counters are not checked:
// a power cycle just after the heal may restart every server, and its
// counters, after the last request.)
func (h *logHarness) checkMetrics() error {
	value := func(i int, d *metrics.Def, labels ...string) float64 {
		v, _ := h.registries[i].Value(d, labels...)
		if d == metrics.OfflinePartitions && i == 0 && h.bugs.offlineMetric {
			v++
		}
		return v
	}
	var active, leaders float64
	for i := range h.procs {
		if h.server(i) == nil {
			return fmt.Errorf("(g) metrics: %s is not running after the heal", h.names[i])
		}
		for _, d := range []*metrics.Def{metrics.OfflinePartitions, metrics.UnderReplicatedPartitions, metrics.UnderMinISRPartitions, metrics.BrokerFenced} {
			if v := value(i, d); v != 0 {
				return fmt.Errorf("(g) metrics: %s reports %s %v after the heal", h.names[i], d.Name, v)
			}
		}
		active += value(i, metrics.ControllerActive)
		leaders += value(i, metrics.LeaderCount)
	}
	switch {
	case active != 1:
		return fmt.Errorf("(g) metrics: %v active controllers after the heal", active)
	case leaders != float64(len(h.partitions())+h.offsetsPartitions()):
		return fmt.Errorf("(g) metrics: the brokers lead %v partitions, the run has %d", leaders, len(h.partitions())+h.offsetsPartitions())
	}
	for _, p := range h.partitions() {
		// Every replica reports its log end offset, and after the heal
		// every one holds everything the final read saw.
		var leos []float64
		for i := range h.procs {
			if v, ok := h.registries[i].Value(metrics.LogEndOffset, p.Topic, strconv.Itoa(int(p.Partition))); ok {
				leos = append(leos, v)
			}
		}
		hw := h.verifier.state(p).hw
		rf := h.topicRF(p.Topic)
		if len(leos) != rf || slices.ContainsFunc(leos, func(v float64) bool { return v != float64(hw) }) {
			return fmt.Errorf("(g) metrics: %s-%d has %d log end offset series (replication factor %d), at %v; the final read's high watermark is %d",
				p.Topic, p.Partition, len(leos), rf, leos, hw)
		}
	}
	return nil
}

// finalCheckAtDeadline judges a run stuck in verify: if the final reader
// caught up with every partition's high watermark and only the probe
// records are missing, acknowledged records were lost (a), which is a
// more precise verdict than liveness.
func (h *logHarness) finalCheckAtDeadline() error {
	if h.phase == logMetrics {
		return h.checkMetrics()
	}
	if h.phase == logReplicas {
		return h.checkReplicas()
	}
	if h.phase == logGroup {
		return fmt.Errorf("(m) group liveness: the group did not settle %v after the heal: %s", h.o.HealPhase, h.group.why)
	}
	if h.phase == logTxn {
		return fmt.Errorf("(s) txn liveness: the transactions did not settle %v after the heal: %s", h.o.HealPhase, h.txn.why)
	}
	if h.phase == logHostile {
		return fmt.Errorf("(x) hostile input: %v after the heal: %s", h.o.HealPhase, h.hostileClient.why)
	}
	if h.phase != logVerify || h.verifier == nil {
		return nil
	}
	for _, p := range h.partitions() {
		if !h.verifier.caughtUp(p, 0) {
			return nil
		}
	}
	if err := h.finalCheck(); err != nil {
		return err
	}
	return nil
}

func (h *logHarness) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s since %v", h.phase, h.phaseAt)
	for i := range h.procs {
		srv := h.server(i)
		if srv == nil {
			fmt.Fprintf(&b, " %s=down", h.names[i])
			continue
		}
		st := srv.Member().Status()
		fmt.Fprintf(&b, " %s={leader=%d epoch=%d active=%v registered=%v err=%v}", h.names[i], st.Leader, st.Epoch, st.ActiveController, srv.Registered(), st.Err)
	}
	fmt.Fprintf(&b, " swarm={%s}", h.swarm)
	if h.hostile != nil {
		fmt.Fprintf(&b, " hostile={%s}", h.hostile)
	}
	if h.hostileClient != nil {
		fmt.Fprintf(&b, " hostile-client={%s}", h.hostileClient)
	}
	fmt.Fprintf(&b, " records=%d acked=%d attempts=%d supervised=%d power-cycled=%v", h.hist.Records(), h.hist.Acked(), len(h.hist.Attempts()), h.supervised, h.powerCycled)
	for _, p := range h.producers {
		fmt.Fprintf(&b, " %s={pending=%d %s}", p.name, p.p.Pending(), p.counts())
	}
	if h.prober != nil {
		fmt.Fprintf(&b, " probe={pending=%d acked=%d}", h.prober.p.Pending(), len(h.probes))
	}
	if h.verifier != nil {
		for _, p := range h.partitions() {
			st := h.verifier.state(p)
			fmt.Fprintf(&b, " final[%s]={pos=%d hw=%d probe=%d}", p, st.pos, st.hw, h.probes[p])
		}
	}
	if h.group != nil {
		b.WriteString(" " + h.group.summary())
	}
	if h.txn != nil {
		b.WriteString(" " + h.txn.summary())
	}
	return b.String()
}

// anomalySummary is the classes of r that occurred, with their examples.
func anomalySummary(r linearizability.AnomalyReport) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(r.String()), "\n") {
		if !strings.HasSuffix(line, ": 0") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "; ")
}
