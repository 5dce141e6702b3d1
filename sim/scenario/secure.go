package scenario

// This file is the "secure" scenario (issue 24, item 8): the cluster of
// the log scenario with security on. Clients log in with SASL (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512) on a SASL_PLAINTEXT listener, the
// StandardAuthorizer decides every request by ACLs in the metadata log,
// and the checks judge every answer a client gets against the ACLs the
// run created.
//
// The cluster: Options.Nodes (3) combined broker+controller servers n1,
// n2, ... with three listeners each: INTERNAL (PLAINTEXT, :9092), the
// inter-broker listener the followers fetch on; CLIENT (SASL_PLAINTEXT,
// :9094), where the users connect; and the CONTROLLER listener (:9093).
// Brokers do not authenticate to each other yet (issue 24 item 5), so
// User:ANONYMOUS, the principal of every PLAINTEXT connection, is a super
// user: a client reaching INTERNAL can do anything, which is why the
// users never do, and why the hostile clients aim at CLIENT and
// CONTROLLER.
//
// Setup: the admin client, on INTERNAL as User:ANONYMOUS, creates the
// users' SCRAM credentials (AlterUserScramCredentials, both SCRAM
// mechanisms, salts from the seed), the ACLs of secureACLs (CreateAcls,
// the DENY bindings in a request before the ALLOW ones, so that no image
// ever holds an ALLOW without the DENY that limits it) and the topics.
//
// Fault phase: every user (secureUsers, each with a mechanism drawn per
// seed) runs a kclient.Client logged in as itself (and, in one seed in
// two, re-authenticating within a connections.max.reauth.ms of 1–5 s)
// and sends, at random, produces, fetches, all-topics and named Metadata
// to every topic, idempotent InitProducerIds and attempts to escalate; an intruder process logs
// in with wrong passwords (real users and an unknown one, every
// mechanism), sends requests without logging in, and registers a forged
// node on the CONTROLLER listeners; in one seed in two the hostile peer
// (hostile.go) forges quorum and controller requests there too; the
// nemesis injects the faults of nemesis.DrawMixFor. The checks, on every
// answer as it arrives:
//
//   - (s1) an acknowledged produce was by a principal with WRITE on the
//     topic;
//   - (s2) a Metadata answer lists, or describes without an error, only
//     topics the principal may DESCRIBE;
//   - (s3) a fetch answered without an error was by a principal with READ
//     on the topic;
//   - (s5) the intruder: a wrong password is refused with
//     SASL_AUTHENTICATION_FAILED, not before half of
//     connection.failed.authentication.delay.ms has passed in virtual
//     time since the login started (the broker counts the delay on its
//     own clock, which the nemesis may speed up); a connection whose
//     login failed, or that never logged in, answers nothing but
//     ApiVersions and SASL requests;
//   - (s6) no server's image places a replica of the run's topics on the
//     node id the intruder registers on the CONTROLLER listeners (which
//     accept it today: nodes are not authenticated yet);
//   - (s7) an idempotent InitProducerId is granted only to a principal
//     that may WRITE some topic (KIP-679; no user has IDEMPOTENT_WRITE);
//   - (s8) a user's CreateAcls granting itself everything, or
//     AlterUserScramCredentials resetting the admin's password, is
//     refused CLUSTER_AUTHORIZATION_FAILED (no user has ALTER on the
//     cluster).
//
// After the heal, within the heal phase, (s4): every user gets, for every
// topic, an acknowledged produce if it may WRITE and
// TOPIC_AUTHORIZATION_FAILED if not, a fetch answered without an error if
// it may READ and TOPIC_AUTHORIZATION_FAILED if not, a producer id if it
// may write some topic and CLUSTER_AUTHORIZATION_FAILED if not, and an
// all-topics Metadata that lists exactly the topics it may DESCRIBE:
// authorization is not only safe but right once the cluster is healthy.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/sasl"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/nemesis"
	"github.com/strata-log/strata/nemesis/simworld"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/kclient"
)

// The secure scenario's shape and bounds.
const (
	secureClusterID   = "sim-secure"
	securePlainPort   = ":9092" // INTERNAL, PLAINTEXT: brokers and the admin
	secureControlPort = ":9093"
	secureSASLPort    = ":9094" // CLIENT, SASL_PLAINTEXT: the users
	secureFaultPhase  = 20 * time.Second
	secureHealPhase   = 30 * time.Second
	secureSetup       = 20 * time.Second
	secureStep        = 50 * time.Millisecond
	secureMaxEvents   = 3_000_000
	// secureAuthDelay is connection.failed.authentication.delay.ms.
	secureAuthDelay = 150 * time.Millisecond
	// secureIterations are the SCRAM credentials' iterations (Kafka's
	// minimum, and the cheapest PBKDF2 the server accepts).
	secureIterations = 4096
	// secureAdmin is the super user besides User:ANONYMOUS.
	secureAdmin = "admin"
)

// secureTopics are the run's topics and their partitions (replication
// factor 3).
var secureTopics = []secureTopic{{"events", 1}, {"orders", 2}, {"secret", 1}}

type secureTopic struct {
	name       string
	partitions int32
}

// secureUsers are the users that log in on CLIENT, besides the admin.
var secureUsers = []string{"alice", "bob", "carol", "dave", "erin"}

// secureACL is one ACL binding on a topic ("*": every topic).
type secureACL struct {
	user  string
	deny  bool
	op    kmsg.ACLOperation
	topic string
}

// secureACLs are the run's bindings, DENY first (the admin creates them
// in that order). alice writes and reads orders; bob reads orders and
// writes events; carol may write every topic but orders (an ALLOW on the
// wildcard and a DENY on orders: what a planted ALLOW-over-DENY breaks);
// dave may only describe events (what a leaking Metadata breaks); erin
// has no ACL at all.
var secureACLs = []secureACL{
	{user: "carol", deny: true, op: kmsg.ACLOperationWrite, topic: "orders"},
	{user: "alice", op: kmsg.ACLOperationWrite, topic: "orders"},
	{user: "alice", op: kmsg.ACLOperationRead, topic: "orders"},
	{user: "bob", op: kmsg.ACLOperationRead, topic: "orders"},
	{user: "bob", op: kmsg.ACLOperationWrite, topic: "events"},
	{user: "carol", op: kmsg.ACLOperationWrite, topic: "*"},
	{user: "dave", op: kmsg.ACLOperationDescribe, topic: "events"},
}

// secureAllowed is the checker's own reading of secureACLs (not
// core/acl's): a DENY of the operation (or ALL) wins; an ALLOW of the
// operation, of ALL, or of an operation implying DESCRIBE allows.
func secureAllowed(user string, op kmsg.ACLOperation, topic string) bool {
	if user == secureAdmin {
		return true
	}
	applies := func(a secureACL) bool { return a.user == user && (a.topic == topic || a.topic == "*") }
	for _, a := range secureACLs {
		if applies(a) && a.deny && (a.op == op || a.op == kmsg.ACLOperationAll) {
			return false
		}
	}
	for _, a := range secureACLs {
		if !applies(a) || a.deny {
			continue
		}
		switch {
		case a.op == op, a.op == kmsg.ACLOperationAll:
			return true
		case op == kmsg.ACLOperationDescribe && slices.Contains([]kmsg.ACLOperation{kmsg.ACLOperationRead,
			kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter}, a.op):
			return true
		}
	}
	return false
}

// secureMechanisms are the mechanisms a login is drawn from.
var secureMechanisms = []sasl.Mechanism{sasl.ScramSHA512, sasl.ScramSHA256, sasl.Plain}

// Secure runs the "secure" scenario.
func Secure(o Options) sim.Summary {
	sum, _ := runSecure(o, secureView{})
	return sum
}

// securePhase is where a run of the secure scenario is.
type securePhase uint8

const (
	secureSetupPhase securePhase = iota
	secureFaults
	secureHealed
	secureDone
)

// secureRun is one run of the secure scenario.
type secureRun struct {
	s         *sim.Sim
	o         Options
	r         *rand.Rand
	names     []string
	procs     []*sim.Process
	servers   []*server.Server
	serverInc []uint64
	restarts  []uint64
	phase     securePhase
	healAt    time.Duration
	// reauth is connections.max.reauth.ms (zero: sessions never end).
	reauth time.Duration
	view   secureView
	err    error

	admin    *secureAdminRun
	users    []*secureUser
	intruder *secureIntruder
	hostile  *hostilePeer
}

// secureView is what the checker believes, changed only by the tests that
// prove the checks fire: the zero view believes the run's ACLs and delay.
type secureView struct {
	// revoked are operations the checker believes a user may not perform
	// on any topic (secureACL's user and op; topic and deny unused).
	revoked []secureACL
	// authDelay, when set, is the failed-authentication delay the
	// checker expects instead of secureAuthDelay.
	authDelay time.Duration
}

// allowed is secureAllowed as the run's view has it.
func (x *secureRun) allowed(user string, op kmsg.ACLOperation, topic string) bool {
	if slices.ContainsFunc(x.view.revoked, func(a secureACL) bool { return a.user == user && a.op == op }) {
		return false
	}
	return secureAllowed(user, op, topic)
}

// writesAny is secureWritesAny as the run's view has it.
func (x *secureRun) writesAny(user string) bool {
	if slices.ContainsFunc(x.view.revoked, func(a secureACL) bool { return a.user == user && a.op == kmsg.ACLOperationWrite }) {
		return false
	}
	return secureWritesAny(user)
}

func runSecure(o Options, view secureView) (sim.Summary, *secureRun) {
	o = o.withDefaults(3, secureFaultPhase, secureHealPhase)
	s := sim.New(sim.Config{Seed: o.Seed, Log: o.Log, BuggifyRate: o.buggifyRate()})
	x := newSecureRun(s, o)
	x.view = view
	if x.view.authDelay == 0 {
		x.view.authDelay = secureAuthDelay
	}
	sum := func(err error) (sim.Summary, *secureRun) {
		m := s.Summarize("secure")
		m.Err = err
		if x.err != nil {
			m.Err = x.err
		}
		return m, x
	}
	for _, p := range x.procs {
		p.Start()
	}
	x.scheduleSupervisor()
	x.admin = startSecureAdmin(x)
	setupEnd := s.Now() + secureSetup
	for !x.admin.done {
		if s.Now() >= setupEnd {
			return sum(fmt.Errorf("setup: users, ACLs and topics not ready within %v (%s)", secureSetup, x.admin.step))
		}
		if err := kraftRunUntil(s, s.Now()+secureStep); err != nil {
			return sum(err)
		}
	}
	x.phase = secureFaults
	x.healAt = s.Now() + o.FaultPhase
	s.Trace("secure:phase faults")
	mix := nemesis.None()
	if !o.NoFaults {
		mix = nemesis.DrawMixFor(s.Rand("nemesis/mix"), o.Nodes, nemesis.Promises{Outages: true, Voters: o.Nodes})
	}
	nemesis.Start(simworld.New(s, x.procs), mix, o.FaultPhase)
	x.startClients()
	cfg := hostileConfig{clusterID: secureClusterID, topic: "orders", until: x.healAt}
	for i := range x.names {
		cfg.targets = append(cfg.targets, hostileTarget{addr: x.names[i] + secureControlPort, id: int32(i + 1)})
		cfg.brokers = append(cfg.brokers, int32(i+1))
	}
	x.hostile = maybeStartHostilePeer(s, o, cfg)
	deadline := x.healAt + o.HealPhase
	for x.phase != secureDone {
		if s.Now() >= deadline {
			return sum(fmt.Errorf("(s4) after the heal, within %v: %s", o.HealPhase, x.unsettled()))
		}
		if err := kraftRunUntil(s, s.Now()+secureStep); err != nil {
			return sum(err)
		}
		if s.Events() > secureMaxEvents {
			return sum(fmt.Errorf("(s4) liveness: more than %d events by %v, something loops", secureMaxEvents, s.Now()))
		}
		if x.phase == secureFaults && s.Now() >= x.healAt {
			x.phase = secureHealed
			s.Trace("secure:phase healed")
		}
		if x.phase == secureHealed && x.unsettled() == "" {
			x.phase = secureDone
		}
		if err := x.checkPlacement(); err != nil {
			return sum(err)
		}
	}
	if x.err != nil {
		return sum(x.err)
	}
	s.Trace("secure:done " + x.describe())
	return sum(nil)
}

func newSecureRun(s *sim.Sim, o Options) *secureRun {
	x := &secureRun{s: s, o: o, r: s.Rand("secure")}
	// KIP-368 in one seed in two: sessions of 1–5 s, so that every
	// client re-authenticates on its connections many times a run.
	if x.r.IntN(2) == 0 {
		x.reauth = time.Duration(1+x.r.IntN(5)) * time.Second
	}
	n := o.Nodes
	x.servers = make([]*server.Server, n)
	x.serverInc = make([]uint64, n)
	x.restarts = make([]uint64, n)
	var voters []string
	for i := 0; i < n; i++ {
		x.names = append(x.names, fmt.Sprintf("n%d", i+1))
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, x.names[i]+secureControlPort))
	}
	builder, err := principal.NewBuilder("")
	if err != nil {
		panic("secure: " + err.Error())
	}
	for i := 0; i < n; i++ {
		var props serverProperties
		props.set(server.KeyNodeID, i+1)
		props.set(server.KeyProcessRoles, server.RoleBroker+","+server.RoleController)
		props.set(server.KeyControllerVoters, strings.Join(voters, ","))
		props.set(server.KeyAuthorizerClassName, server.StandardAuthorizer)
		props.set(server.KeySuperUsers, principal.Anonymous.String()+";User:"+secureAdmin)
		props.set(server.KeyFailedAuthenticationDelayMs, secureAuthDelay.Milliseconds())
		props.set(server.KeyReplicaLagTimeMaxMs, replicatedLagTime.Milliseconds())
		props.set(server.KeyConnectionsMaxReauthMs, x.reauth.Milliseconds())
		scfg := props.parse(server.Config{ClusterID: secureClusterID})
		host := x.names[i]
		scfg.BrokerListener.Listeners = []broker.Listener{
			{Name: "INTERNAL", Addr: host + securePlainPort, AdvertisedHost: host, Protocol: meta.SecurityPlaintext, Principals: builder},
			{Name: "CLIENT", Addr: host + secureSASLPort, AdvertisedHost: host, Protocol: meta.SecuritySASLPlaintext,
				Principals: builder, Mechanisms: secureMechanisms},
		}
		scfg.BrokerListener.InterBrokerListener = "INTERNAL"
		scfg.BrokerListener.Security.DecoySecret = []byte("the decoy secret of " + host + " in the simulator")
		scfg.Quorum.Controller.MaxReplicationFactor = 3
		x.procs = append(x.procs, s.AddProcess(host, func(e env.Env) {
			x.servers[i] = nil
			// Index files may be damaged at rest (core/log rebuilds
			// them); declared at every start, as a replaced disk
			// forgets it.
			x.procs[i].Disk().DeclareSurvivable(indexFilesSurvivable)
			srv, err := server.Start(e, scfg)
			if err != nil {
				e.Logger().Error("server start failed", "err", err)
				s.Trace(fmt.Sprintf("%s:start-failed:%v", host, err))
				x.superviseRestart(i)
				return
			}
			x.servers[i], x.serverInc[i] = srv, x.procs[i].Incarnation()
		}))
	}
	return x
}

func (x *secureRun) addrs(port string) []string {
	out := make([]string, len(x.names))
	for i, n := range x.names {
		out[i] = n + port
	}
	return out
}

// fail records the first violation and stops the run inside the event
// that observed it.
func (x *secureRun) fail(err error) {
	if x.err == nil {
		x.err = err
	}
	panic(err)
}

func (x *secureRun) scheduleSupervisor() {
	x.s.After(secureStep, "secure:supervise", func() {
		for i, p := range x.procs {
			if p.Up() && x.serverInc[i] == p.Incarnation() && x.servers[i] != nil && x.servers[i].Member().Status().Err != nil {
				x.superviseRestart(i)
			}
		}
		x.scheduleSupervisor()
	})
}

func (x *secureRun) superviseRestart(i int) {
	superviseRestart(x.s, x.procs[i], &x.restarts[i], x.names[i], logSupervisorDly)
}

// unsettled says what (s4) still waits for, "" once every user settled.
func (x *secureRun) unsettled() string {
	var out []string
	for _, u := range x.users {
		if w := u.unsettled(); w != "" {
			out = append(out, u.name+": "+w)
		}
	}
	return strings.Join(out, "; ")
}

func (x *secureRun) describe() string {
	var parts []string
	for _, u := range x.users {
		parts = append(parts, fmt.Sprintf("%s(%s) acked=%d refused=%d", u.name, u.login.Mechanism, u.acked, u.refused))
	}
	parts = append(parts, fmt.Sprintf("reauth=%v", x.reauth), "intruder "+x.intruder.String(), "hostile-peer "+x.hostile.String())
	return strings.Join(parts, " ")
}

func (x *secureRun) startClients() {
	for _, name := range secureUsers {
		u := &secureUser{x: x, name: name, r: x.s.Rand("secure/user/" + name), outcomes: map[string]bool{}}
		u.login = kclient.SASL{Mechanism: secureMechanisms[u.r.IntN(len(secureMechanisms))], User: name, Password: x.admin.passwords[name]}
		x.users = append(x.users, u)
		x.s.AddProcess("u-"+name, u.start).Start()
	}
	x.intruder = &secureIntruder{x: x, r: x.s.Rand("secure/intruder")}
	x.s.AddProcess("intruder", x.intruder.start).Start()
}

// secureAdminRun sets the cluster up through INTERNAL as User:ANONYMOUS.
type secureAdminRun struct {
	x         *secureRun
	c         *kclient.Client
	passwords map[string]string
	step      string
	done      bool
}

func startSecureAdmin(x *secureRun) *secureAdminRun {
	a := &secureAdminRun{x: x, passwords: map[string]string{}, step: "starting"}
	x.s.AddProcess("admin", func(e env.Env) {
		a.c = kclient.New(e, kclient.Config{ClientID: "admin", Bootstrap: x.addrs(securePlainPort)})
		a.users()
	}).Start()
	return a
}

// retry sends the request build makes to any broker until accept takes
// its answer, then runs next.
func (a *secureAdminRun) retry(what string, build func() kmsg.Request, accept func(kmsg.Response) bool, next func()) {
	a.step = what
	var try func(failures int)
	try = func(failures int) {
		a.c.DoAny(build(), func(r kmsg.Response, err error) {
			if err == nil && accept(r) {
				a.x.s.Trace("secure:setup " + what)
				next()
				return
			}
			a.c.Logger().Debug("setup step failed; retrying", "step", what, "err", err, "answer", fmt.Sprintf("%+v", r))
			a.c.Env().AfterFunc(a.c.Backoff(failures+1), func() { try(failures + 1) })
		})
	}
	try(0)
}

// users creates every user's SCRAM credentials: one request per
// mechanism, since a request may name each user once (the controller
// answers DUPLICATE_RESOURCE to a second credential of a user).
func (a *secureAdminRun) users() {
	r := a.x.s.Rand("secure/setup")
	for _, name := range append([]string{secureAdmin}, secureUsers...) {
		a.passwords[name] = fmt.Sprintf("%s-%08x", name, r.Uint32())
	}
	var reqs []*kmsg.AlterUserSCRAMCredentialsRequest
	for _, m := range []sasl.Mechanism{sasl.ScramSHA256, sasl.ScramSHA512} {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		for _, name := range append([]string{secureAdmin}, secureUsers...) {
			salt := make([]byte, 16)
			for i := range salt {
				salt[i] = byte(r.IntN(256))
			}
			salted, err := sasl.SaltedPassword(m, a.passwords[name], salt, secureIterations)
			if err != nil {
				panic("secure: " + err.Error())
			}
			u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
			u.Name, u.Iterations, u.Salt, u.SaltedPassword = name, secureIterations, salt, salted
			u.Mechanism = 1 // SCRAM-SHA-256
			if m == sasl.ScramSHA512 {
				u.Mechanism = 2
			}
			req.Upsertions = append(req.Upsertions, u)
		}
		reqs = append(reqs, req)
	}
	var send func(i int)
	send = func(i int) {
		if i == len(reqs) {
			a.acls(true)
			return
		}
		a.retry(fmt.Sprintf("users-%d", i), func() kmsg.Request { return reqs[i] }, func(r kmsg.Response) bool {
			for _, res := range r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
				if res.ErrorCode != 0 {
					return false
				}
			}
			return true
		}, func() { send(i + 1) })
	}
	send(0)
}

// acls creates the DENY bindings (deny), then the ALLOW ones.
func (a *secureAdminRun) acls(deny bool) {
	req := kmsg.NewPtrCreateACLsRequest()
	for _, b := range secureACLs {
		if b.deny != deny {
			continue
		}
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, b.topic, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation = "User:"+b.user, "*", b.op
		c.PermissionType = kmsg.ACLPermissionTypeAllow
		if b.deny {
			c.PermissionType = kmsg.ACLPermissionTypeDeny
		}
		req.Creations = append(req.Creations, c)
	}
	what := "allow-acls"
	if deny {
		what = "deny-acls"
	}
	a.retry(what, func() kmsg.Request { return req }, func(r kmsg.Response) bool {
		for _, res := range r.(*kmsg.CreateACLsResponse).Results {
			if res.ErrorCode != 0 {
				return false
			}
		}
		return true
	}, func() {
		if deny {
			a.acls(false)
			return
		}
		a.waitBrokers()
	})
}

// waitBrokers waits until Metadata lists every broker, so that the
// topics' replication factor can be placed.
func (a *secureAdminRun) waitBrokers() {
	a.step = "brokers"
	if a.c.MetadataBrokers() < len(a.x.names) {
		a.c.RefreshMetadata()
		a.c.Env().AfterFunc(secureStep, a.waitBrokers)
		return
	}
	a.topics(0)
}

// topics creates the topics one by one, then waits for their leaders.
func (a *secureAdminRun) topics(i int) {
	if i == len(secureTopics) {
		a.step = "topic leaders"
		a.waitLeaders()
		return
	}
	t := secureTopics[i]
	a.step = "topic " + t.name
	a.c.CreateTopic(kclient.TopicSpec{Name: t.name, Partitions: t.partitions, ReplicationFactor: 3}, func(ok bool, code int16) {
		switch {
		case !ok && code == kerr.InvalidReplicationFactor.Code:
			// A broker listed but not yet unfenced: ask again.
			a.c.Env().AfterFunc(secureStep, func() { a.topics(i) })
		case !ok:
			a.x.fail(fmt.Errorf("setup: topic %s refused: %s", t.name, kerr.ErrorForCode(code)))
		default:
			a.topics(i + 1)
		}
	})
}

func (a *secureAdminRun) waitLeaders() {
	for _, t := range secureTopics {
		for p := range t.partitions {
			if _, _, ok := a.c.Leader(t.name, p); !ok {
				a.c.RefreshMetadata()
				a.c.Env().AfterFunc(secureStep, a.waitLeaders)
				return
			}
		}
	}
	a.x.s.Trace("secure:setup done")
	a.c.Close()
	a.done = true
}

// secureUser is one user's client and what it observed.
type secureUser struct {
	x     *secureRun
	name  string
	r     *rand.Rand
	login kclient.SASL
	c     *kclient.Client
	seq   int
	// outcomes are the (s4) outcomes seen after the heal, by key
	// ("write orders", "read events", "metadata").
	outcomes       map[string]bool
	acked, refused int
	// escalations counts the (s8) attempts answered; takeover is the
	// salted password they offer for the admin (PBKDF2 once).
	escalations int
	takeover    []byte
}

func (u *secureUser) start(e env.Env) {
	login := u.login
	u.c = kclient.New(e, kclient.Config{ClientID: u.name, Bootstrap: u.x.addrs(secureSASLPort), SASL: &login,
		// By topic name: Produce and Fetch by topic id (v13) answer
		// UNKNOWN_TOPIC_ID where the checks want the authorization error.
		MaxVersions: map[int16]int16{kmsg.Produce.Int16(): 11, kmsg.Fetch.Int16(): 12}})
	var names []string
	for _, t := range secureTopics {
		names = append(names, t.name)
	}
	u.c.AddTopics(names...)
	u.next()
}

func (u *secureUser) next() {
	u.c.Env().AfterFunc(time.Duration(10+u.r.IntN(90))*time.Millisecond, func() {
		if u.x.phase == secureDone {
			u.c.Close()
			return
		}
		u.act()
		u.next()
	})
}

// healed reports whether an outcome counts for (s4).
func (u *secureUser) healed() bool { return u.x.phase >= secureHealed }

func (u *secureUser) act() {
	t := secureTopics[u.r.IntN(len(secureTopics))]
	p := u.r.Int32N(t.partitions)
	switch u.r.IntN(20) {
	case 0, 1, 2, 3, 4, 5, 6, 7:
		u.produce(t.name, p)
	case 8, 9, 10, 11:
		u.fetch(t.name, p)
	case 12, 13, 14, 15:
		u.metadata(u.r.IntN(2) == 0, t.name)
	case 16, 17:
		u.initProducerID()
	default:
		u.escalate()
	}
}

// escalate tries to grant the user everything (CreateAcls: ALL on every
// topic) or to take the admin's login (AlterUserScramCredentials): (s8)
// both need ALTER on the cluster, which no user has, so every answer
// must be CLUSTER_AUTHORIZATION_FAILED.
func (u *secureUser) escalate() {
	var req kmsg.Request
	if u.r.IntN(2) == 0 {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "*", kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:"+u.name, "*", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
		cr := kmsg.NewPtrCreateACLsRequest()
		cr.Creations = []kmsg.CreateACLsRequestCreation{c}
		req = cr
	} else {
		salt := []byte("a salt the user chose")
		if u.takeover == nil {
			salted, err := sasl.SaltedPassword(sasl.ScramSHA256, u.name+" owns the admin now", salt, secureIterations)
			if err != nil {
				panic("secure: " + err.Error())
			}
			u.takeover = salted
		}
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = secureAdmin, 1, secureIterations, salt, u.takeover
		ar := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		ar.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up}
		req = ar
	}
	u.c.DoAny(req, func(r kmsg.Response, err error) {
		if err != nil {
			return
		}
		var codes []int16
		switch resp := r.(type) {
		case *kmsg.CreateACLsResponse:
			for _, res := range resp.Results {
				codes = append(codes, res.ErrorCode)
			}
		case *kmsg.AlterUserSCRAMCredentialsResponse:
			for _, res := range resp.Results {
				codes = append(codes, res.ErrorCode)
			}
		}
		for _, code := range codes {
			if code != kerr.ClusterAuthorizationFailed.Code {
				u.x.fail(fmt.Errorf("(s8) %s by User:%s at %v answered %s, want CLUSTER_AUTHORIZATION_FAILED",
					kmsg.NameForKey(req.Key()), u.name, u.x.s.Now(), codeString(code)))
			}
		}
		u.escalations++
	})
}

// codeString names an error code.
func codeString(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).Error()
}

// secureWritesAny is KIP-679's rule for an idempotent producer without
// IDEMPOTENT_WRITE on the cluster (no user has it here): an ALLOW of WRITE
// (or ALL) on some topic that no DENY takes back entirely (no DENY here
// covers a whole ALLOW).
func secureWritesAny(user string) bool {
	if user == secureAdmin {
		return true
	}
	return slices.ContainsFunc(secureACLs, func(a secureACL) bool {
		return a.user == user && !a.deny && (a.op == kmsg.ACLOperationWrite || a.op == kmsg.ACLOperationAll)
	})
}

// initProducerID asks for an idempotent producer id (no transactional
// id): (s7) it is granted only to a principal that may write some topic,
// and refused CLUSTER_AUTHORIZATION_FAILED otherwise.
func (u *secureUser) initProducerID() {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = -1, -1, -1
	u.c.DoAny(req, func(r kmsg.Response, err error) {
		if err != nil {
			return
		}
		code := r.(*kmsg.InitProducerIDResponse).ErrorCode
		allowed := u.x.writesAny(u.name)
		if code == 0 && !allowed {
			u.x.fail(fmt.Errorf("(s7) InitProducerId granted to User:%s at %v, which may write no topic (its ACLs: %s)",
				u.name, u.x.s.Now(), secureACLsOf(u.name)))
		}
		if u.healed() && (code == 0 && allowed || code == kerr.ClusterAuthorizationFailed.Code && !allowed) {
			u.outcomes["init-producer-id"] = true
		}
	})
}

// route sends req to the partition's leader when the client knows it,
// else to any broker (a topic the user may not describe has no leader
// it can know).
func (u *secureUser) route(topic string, p int32, req kmsg.Request, done func(kmsg.Response, error)) {
	if leader, _, ok := u.c.Leader(topic, p); ok {
		u.c.Do(leader, req, 0, done)
		return
	}
	u.c.DoAny(req, done)
}

func (u *secureUser) produce(topic string, p int32) {
	u.seq++
	b := record.NewBuilder()
	b.Append(u.c.Env().Now().UnixMilli(), nil, []byte(fmt.Sprintf("%s-%d", u.name, u.seq)))
	batch, err := b.AppendTo(nil)
	if err != nil {
		panic("secure: " + err.Error())
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 3000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	u.route(topic, p, req, func(r kmsg.Response, err error) {
		if err != nil {
			return
		}
		for _, rt := range r.(*kmsg.ProduceResponse).Topics {
			for _, rp := range rt.Partitions {
				u.judge("write", kmsg.ACLOperationWrite, rt.Topic, rp.ErrorCode, "(s1) a produce was acknowledged")
			}
		}
	})
}

func (u *secureUser) fetch(topic string, p int32) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 0, 1, 1<<16, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, 1<<16, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	u.route(topic, p, req, func(r kmsg.Response, err error) {
		if err != nil {
			return
		}
		resp := r.(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 {
			return
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				u.judge("read", kmsg.ACLOperationRead, rt.Topic, rp.ErrorCode, "(s3) a fetch was served")
			}
		}
	})
}

// judge checks one partition's answer to a produce or fetch: served
// (code 0) only with op allowed; after the heal it records the (s4)
// outcome when the answer is the right one.
func (u *secureUser) judge(verb string, op kmsg.ACLOperation, topic string, code int16, violation string) {
	allowed := u.x.allowed(u.name, op, topic)
	switch {
	case code == 0 && !allowed:
		u.x.fail(fmt.Errorf("%s to User:%s on topic %s at %v, which it may not %s (its ACLs: %s)",
			violation, u.name, topic, u.x.s.Now(), strings.ToUpper(verb), secureACLsOf(u.name)))
	case code == 0:
		u.acked++
	case code == kerr.TopicAuthorizationFailed.Code:
		u.refused++
	}
	if u.healed() && (code == 0 && allowed || code == kerr.TopicAuthorizationFailed.Code && !allowed) {
		u.outcomes[verb+" "+topic] = true
	}
}

func (u *secureUser) metadata(all bool, topic string) {
	req := kmsg.NewPtrMetadataRequest()
	if !all {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = []kmsg.MetadataRequestTopic{rt}
	}
	u.c.DoAny(req, func(r kmsg.Response, err error) {
		if err != nil {
			return
		}
		var listed []string
		for _, rt := range r.(*kmsg.MetadataResponse).Topics {
			if rt.Topic == nil || (!all && rt.ErrorCode != 0) {
				continue
			}
			if !u.x.allowed(u.name, kmsg.ACLOperationDescribe, *rt.Topic) {
				u.x.fail(fmt.Errorf("(s2) a Metadata answer (all topics: %v) to User:%s at %v lists topic %s, which it may not DESCRIBE (its ACLs: %s)",
					all, u.name, u.x.s.Now(), *rt.Topic, secureACLsOf(u.name)))
			}
			listed = append(listed, *rt.Topic)
		}
		// Only the run's topics count for (s4): a topic someone else
		// created (the hostile peer's, if a controller ever took one)
		// is judged by (s2) alone.
		listed = slices.DeleteFunc(listed, func(n string) bool {
			return !slices.ContainsFunc(secureTopics, func(t secureTopic) bool { return t.name == n })
		})
		if all && u.healed() && slices.Equal(sorted(listed), secureDescribable(u.name)) {
			u.outcomes["metadata"] = true
		}
	})
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// secureDescribable are the topics user may describe, sorted.
func secureDescribable(user string) []string {
	var out []string
	for _, t := range secureTopics {
		if secureAllowed(user, kmsg.ACLOperationDescribe, t.name) {
			out = append(out, t.name)
		}
	}
	return out
}

// secureACLsOf renders user's bindings for a failure message.
func secureACLsOf(user string) string {
	var out []string
	for _, a := range secureACLs {
		if a.user == user {
			perm := "ALLOW"
			if a.deny {
				perm = "DENY"
			}
			out = append(out, fmt.Sprintf("%s %s on %s", perm, a.op, a.topic))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// unsettled says which (s4) outcomes the user has not seen since the
// heal.
func (u *secureUser) unsettled() string {
	var missing []string
	for _, t := range secureTopics {
		for _, verb := range []string{"write", "read"} {
			if !u.outcomes[verb+" "+t.name] {
				missing = append(missing, verb+" "+t.name)
			}
		}
	}
	if !u.outcomes["init-producer-id"] {
		missing = append(missing, "init-producer-id")
	}
	if !u.outcomes["metadata"] {
		missing = append(missing, "metadata listing "+fmt.Sprint(secureDescribable(u.name)))
	}
	return strings.Join(missing, ", ")
}

// secureIntruder logs in with wrong credentials and sends requests
// without logging in, on the CLIENT listeners, until the heal.
type secureIntruder struct {
	x *secureRun
	r *rand.Rand
	e env.Env
	// refused counts wrong logins refused, unanswered requests sent
	// without a login or after a failed one, and connections the broker
	// closed (within a second of that request).
	refused, unanswered, closed int
	// forged counts the forged node registrations sent, registered
	// those the controller accepted, unfenced the forged heartbeats
	// answered without an error (the known gap: the CONTROLLER listener
	// does not authenticate nodes yet).
	forged, registered, unfenced int
}

func (in *secureIntruder) String() string {
	if in == nil {
		return "off"
	}
	return fmt.Sprintf("refused=%d unanswered=%d closed=%d forged=%d registered=%d heartbeats-accepted=%d",
		in.refused, in.unanswered, in.closed, in.forged, in.registered, in.unfenced)
}

func (in *secureIntruder) start(e env.Env) {
	in.e = e
	in.next()
}

func (in *secureIntruder) next() {
	in.e.AfterFunc(time.Duration(50+in.r.IntN(300))*time.Millisecond, func() {
		if in.x.phase != secureFaults {
			return
		}
		if in.r.IntN(4) == 0 {
			in.forgeNode()
		} else {
			in.attempt()
		}
		in.next()
	})
}

// attempt dials a random broker's CLIENT listener and, once ApiVersions
// answered, logs in with a wrong password or sends a request without a
// login.
func (in *secureIntruder) attempt() {
	addr := in.x.names[in.r.IntN(len(in.x.names))] + secureSASLPort
	wrong := in.r.IntN(3) != 0
	users := append([]string{"mallory"}, secureUsers...)
	login := kclient.SASL{Mechanism: secureMechanisms[in.r.IntN(len(secureMechanisms))],
		User: users[in.r.IntN(len(users))], Password: fmt.Sprintf("guess-%d", in.r.IntN(1000))}
	kind := "intruder-no-login"
	if wrong {
		kind = "intruder-wrong-password"
	}
	in.x.s.Fault(kind, fmt.Sprintf("%s %s as %s", addr, login.Mechanism, login.User))
	in.e.Net().Dial(addr, func(conn env.Conn, err error) {
		if err != nil {
			return
		}
		var cl *wire.Client
		mine := false // the intruder closed it (expectNoAnswer's timer)
		cl = wire.NewClient(conn, wire.ClientConfig{ClientID: "intruder", OnClose: func(error) {
			if !mine {
				in.closed++
			}
		}})
		closeMine := func() {
			mine = true
			cl.Close()
		}
		av := kmsg.NewPtrApiVersionsRequest()
		av.Version, av.ClientSoftwareName, av.ClientSoftwareVersion = 3, "intruder", "1"
		if cl.Do(av, func(r kmsg.Response, err error) {
			if err != nil {
				return
			}
			if !wrong {
				in.expectNoAnswer(cl, closeMine, addr, "before any login")
				return
			}
			start := in.x.s.Now()
			kclient.Authenticate(in.e, cl, login, 2, func(_ time.Duration, err error) {
				in.judgeLogin(cl, closeMine, addr, login, start, err)
			})
		}) != nil {
			cl.Close()
		}
	})
}

// judgeLogin checks a wrong login's outcome (s5).
func (in *secureIntruder) judgeLogin(cl *wire.Client, closeMine func(), addr string, login kclient.SASL, start time.Duration, err error) {
	var ae *kclient.AuthError
	switch {
	case err == nil:
		in.x.fail(fmt.Errorf("(s5) %s accepted a wrong %s password for %s at %v", addr, login.Mechanism, login.User, in.x.s.Now()))
	case !errors.As(err, &ae):
		return // the connection was lost: nothing to judge
	case ae.Code != kerr.SaslAuthenticationFailed.Code:
		in.x.fail(fmt.Errorf("(s5) %s refused a wrong %s password for %s with %s, want SASL_AUTHENTICATION_FAILED", addr, login.Mechanism, login.User, err))
	case in.x.s.Now()-start < in.x.view.authDelay/2:
		// Virtual time, and half the delay: the broker counts it on its
		// own clock, which the nemesis may make run fast.
		in.x.fail(fmt.Errorf("(s5) %s refused a wrong %s password for %s %v after the login started, well before connection.failed.authentication.delay.ms (%v)",
			addr, login.Mechanism, login.User, in.x.s.Now()-start, in.x.view.authDelay))
	}
	in.refused++
	in.expectNoAnswer(cl, closeMine, addr, "after a failed login")
}

// expectNoAnswer sends a Metadata request that must never be answered
// (s5): the connection is not authenticated.
func (in *secureIntruder) expectNoAnswer(cl *wire.Client, closeMine func(), addr, when string) {
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	if cl.Do(md, func(r kmsg.Response, err error) {
		if err == nil {
			in.x.fail(fmt.Errorf("(s5) %s answered a Metadata request sent %s at %v", addr, when, in.x.s.Now()))
		}
		in.unanswered++
	}) != nil {
		return
	}
	// Close from this side too, once the broker had time to close: a
	// connection the network lost would otherwise linger.
	in.e.AfterFunc(time.Second, closeMine)
}

// secureForgedNode is the node id the intruder registers on the
// CONTROLLER listeners: no server of the run has it.
const secureForgedNode = 66

// forgeNode sends a well-formed BrokerRegistration for secureForgedNode
// to a random controller listener and, when the controller accepts it,
// heartbeats with the broker epoch it answered, as a broker would: the
// CONTROLLER listener does not authenticate nodes yet (issue 24 item 5),
// so the controller may well register and unfence it. What (s6) asserts
// today is what that cannot change: the run's partitions never list the
// forged node (its topics exist before, and nothing reassigns them).
func (in *secureIntruder) forgeNode() {
	addr := in.x.names[in.r.IntN(len(in.x.names))] + secureControlPort
	in.x.s.Fault("intruder-forged-node", addr)
	in.e.Net().Dial(addr, func(conn env.Conn, err error) {
		if err != nil {
			return
		}
		cl := wire.NewClient(conn, wire.ClientConfig{ClientID: "intruder"})
		in.e.AfterFunc(2*time.Second, func() { cl.Close() })
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.Version = 3
		req.BrokerID, req.ClusterID = secureForgedNode, secureClusterID
		req.IncarnationID = [16]byte{0: 0x66, 15: byte(1 + in.r.IntN(255))}
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port, l.SecurityProtocol = "INTERNAL", "intruder", 9092, int16(meta.SecurityPlaintext)
		req.Listeners = []kmsg.BrokerRegistrationRequestListener{l}
		in.forged++
		if cl.Do(req, func(r kmsg.Response, err error) {
			resp, ok := r.(*kmsg.BrokerRegistrationResponse)
			if err != nil || !ok || resp.ErrorCode != 0 {
				return
			}
			in.registered++
			hb := kmsg.NewPtrBrokerHeartbeatRequest()
			hb.Version = 1
			hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = secureForgedNode, resp.BrokerEpoch, 1<<40
			_ = cl.Do(hb, func(r kmsg.Response, err error) {
				if resp, ok := r.(*kmsg.BrokerHeartbeatResponse); err == nil && ok && resp.ErrorCode == 0 && !resp.IsFenced {
					in.unfenced++
				}
			})
		}) != nil {
			cl.Close()
		}
	})
}

// checkPlacement is (s6): no running server's image places a replica of
// the run's topics on the forged node.
func (x *secureRun) checkPlacement() error {
	for i, srv := range x.servers {
		if srv == nil || !x.procs[i].Up() || x.serverInc[i] != x.procs[i].Incarnation() {
			continue
		}
		img := srv.Image()
		for _, t := range secureTopics {
			ti, ok := img.TopicByName(t.name)
			if !ok {
				continue
			}
			for p := range ti.Partitions() {
				if slices.Contains(p.Replicas, secureForgedNode) || slices.Contains(p.ISR, secureForgedNode) || p.Leader == secureForgedNode {
					return fmt.Errorf("(s6) %s's image places %s-%d on the forged node %d: replicas %v, ISR %v, leader %d",
						x.names[i], t.name, p.ID, secureForgedNode, p.Replicas, p.ISR, p.Leader)
				}
			}
		}
	}
	return nil
}
