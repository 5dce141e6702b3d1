package kraft_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/connlimit"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/wire"
)

// certNet is a simulated env.SecureNet for the controller listener's
// authorization: a "TLS" conn it accepts presents a certificate whose
// subject is CN=<the dialing process's name>, so every process has an
// identity of its own (User:CN=c1 by Kafka's DEFAULT mapping rule)
// without real handshakes. DialTLS is Dial.
type certNet struct {
	env.Net
	certs map[string]*x509.Certificate
}

type certEnv struct {
	env.Env
	net *certNet
}

func (e certEnv) Net() env.Net { return e.net }

type certConn struct {
	env.Conn
	cert *x509.Certificate
}

func (c certConn) PeerCertificate() *x509.Certificate { return c.cert }

func (n *certNet) ListenTLS(addr, _ string, accept func(env.Conn)) (env.Listener, error) {
	return n.Listen(addr, func(c env.Conn) {
		accept(certConn{Conn: c, cert: n.cert(connlimit.HostOf(c.RemoteAddr()))})
	})
}

func (n *certNet) DialTLS(addr, _ string, done func(env.Conn, error)) { n.Dial(addr, done) }

// cert is a self-signed certificate with subject CN=host.
func (n *certNet) cert(host string) *x509.Certificate {
	if c, ok := n.certs[host]; ok {
		return c
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host},
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	n.certs[host] = c
	return c
}

// newCertCluster is a three-voter cluster whose controller listeners run
// on certNet, authorizing with policy (nil: no authorizer).
func newCertCluster(t *testing.T, seed uint64, policy *acl.Policy) *cluster {
	rules, err := principal.NewBuilder("DEFAULT")
	require.NoError(t, err)
	c := newClusterStopped(t, seed, 3, 0, func(cfg *kraft.Config) {
		cfg.Security = kraft.Security{Listener: "CONTROLLER", TLS: true, Principals: rules, Authorizer: policy}
	})
	certs := map[string]*x509.Certificate{}
	c.wrapEnv = func(e env.Env) env.Env { return certEnv{Env: e, net: &certNet{Net: e.Net(), certs: certs}} }
	for _, p := range c.procs {
		p.Start()
	}
	return c
}

// requestFrom sends req to a controller listener from a new process named
// host (its certificate's CN) and returns the response.
func (c *cluster) requestFrom(host, addr string, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	var got kmsg.Response
	var failed error
	c.s.AddProcess(host, func(e env.Env) {
		e.Net().Dial(addr, func(conn env.Conn, err error) {
			if err != nil {
				failed = err
				return
			}
			cl := wire.NewClient(conn, wire.ClientConfig{ClientID: "test"})
			if err := cl.Do(req, func(r kmsg.Response, err error) { got, failed = r, err }); err != nil {
				failed = err
			}
		})
	}).Start()
	c.runUntil(commitBound, kmsg.NameForKey(req.Key())+" from "+host, func() bool { return got != nil || failed != nil })
	require.NoError(c.t, failed, "%s from %s", kmsg.NameForKey(req.Key()), host)
	return got
}

// nodeRequest is a request only nodes may send on the controller
// listener, at the highest version the listener serves, and how to read
// the error its response answers.
type nodeRequest struct {
	req  kmsg.Request
	code func(kmsg.Response) int16
}

func nodeRequests() []nodeRequest {
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID, reg.IncarnationID = 100, "sim-cluster", [16]byte{0: 9}
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "attacker", 9092
	reg.Listeners = []kmsg.BrokerRegistrationRequestListener{l}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.WantShutdown = 1, 0, true
	create := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "planted", 1, 1
	create.Topics = []kmsg.CreateTopicsRequestTopic{topic}
	return []nodeRequest{
		{forgedVote(1, 2, 1000, 1000, 1<<40), func(r kmsg.Response) int16 { return r.(*kmsg.VoteResponse).ErrorCode }},
		{kmsg.NewPtrBeginQuorumEpochRequest(), func(r kmsg.Response) int16 { return r.(*kmsg.BeginQuorumEpochResponse).ErrorCode }},
		{kmsg.NewPtrEndQuorumEpochRequest(), func(r kmsg.Response) int16 { return r.(*kmsg.EndQuorumEpochResponse).ErrorCode }},
		{kmsg.NewPtrFetchRequest(), func(r kmsg.Response) int16 { return r.(*kmsg.FetchResponse).ErrorCode }},
		{kmsg.NewPtrFetchSnapshotRequest(), func(r kmsg.Response) int16 { return r.(*kmsg.FetchSnapshotResponse).ErrorCode }},
		{reg, func(r kmsg.Response) int16 { return r.(*kmsg.BrokerRegistrationResponse).ErrorCode }},
		{hb, func(r kmsg.Response) int16 { return r.(*kmsg.BrokerHeartbeatResponse).ErrorCode }},
		{kmsg.NewPtrAlterPartitionRequest(), func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionResponse).ErrorCode }},
		{kmsg.NewPtrAllocateProducerIDsRequest(), func(r kmsg.Response) int16 { return r.(*kmsg.AllocateProducerIDsResponse).ErrorCode }},
		{create, func(r kmsg.Response) int16 { return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode }},
		{kmsg.NewPtrDescribeQuorumRequest(), func(r kmsg.Response) int16 { return r.(*kmsg.DescribeQuorumResponse).ErrorCode }},
	}
}

// atMaxVersion sets req's version to the highest the controller
// listener serves.
func atMaxVersion(t *testing.T, req kmsg.Request) kmsg.Request {
	api, ok := kraft.ControllerAPIs().Lookup(req.Key())
	require.True(t, ok, "%s is served", kmsg.NameForKey(req.Key()))
	req.SetVersion(api.MaxVersion)
	return req
}

// TestControllerListenerRefusesClientPrincipals is issue 24's node links
// on the controller listener: with an authorizer, a connection whose
// certificate names no node (not a super user, no CLUSTER_ACTION) gets
// CLUSTER_AUTHORIZATION_FAILED for every quorum, broker and forwarded
// request, and ApiVersions only; the quorum keeps its leader and epoch
// and no broker is registered. A node's certificate is served.
func TestControllerListenerRefusesClientPrincipals(t *testing.T) {
	policy, err := acl.NewPolicy([]string{"User:CN=c1", "User:CN=c2", "User:CN=c3", "User:CN=b7"}, false)
	require.NoError(t, err)
	c := newCertCluster(t, 21, &policy)
	leader := c.waitLeader()
	epoch := c.members[leader].Status().Epoch
	addr := c.members[leader].Addr()

	for i, nr := range nodeRequests() {
		req := atMaxVersion(t, nr.req)
		resp := c.requestFrom(fmt.Sprintf("intruder-%d", i), addr, req)
		require.Equal(t, kerr.ClusterAuthorizationFailed.Code, nr.code(resp), "%s from a client", kmsg.NameForKey(req.Key()))
	}
	av := atMaxVersion(t, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsRequest)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "intruder", "1"
	require.Equal(t, int16(0), c.requestFrom("intruder-av", addr, av).(*kmsg.ApiVersionsResponse).ErrorCode)

	require.NoError(t, c.s.RunFor(5*time.Second))
	require.Equal(t, leader, c.waitLeader(), "the quorum leader moved")
	require.Equal(t, epoch, c.members[leader].Status().Epoch, "the quorum epoch moved")
	_, registered := c.members[leader].Image().Broker(100)
	require.False(t, registered, "a client registered a broker")

	// A node's certificate (a super user) registers a broker.
	reg := atMaxVersion(t, nodeRequests()[5].req)
	resp := c.requestFrom("b7", addr, reg).(*kmsg.BrokerRegistrationResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
}

// TestControllerListenerClusterActionACL: a principal that is no super
// user but has ALLOW CLUSTER_ACTION on the cluster in the image's ACLs is
// served on the controller listener, another principal is not.
func TestControllerListenerClusterActionACL(t *testing.T) {
	policy, err := acl.NewPolicy([]string{"User:CN=c1", "User:CN=c2", "User:CN=c3"}, false)
	require.NoError(t, err)
	c := newCertCluster(t, 22, &policy)
	leader := c.waitLeader()
	create := kmsg.NewPtrCreateACLsRequest()
	create.Version = 3
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral
	cr.Principal, cr.Host = "User:CN=b8", "*"
	cr.Operation, cr.PermissionType = kmsg.ACLOperationClusterAction, kmsg.ACLPermissionTypeAllow
	create.Creations = []kmsg.CreateACLsRequestCreation{cr}
	got := c.do(leader, create).(*kmsg.CreateACLsResponse)
	require.Equal(t, int16(0), got.Results[0].ErrorCode)
	c.runUntil(commitBound, "the ACL applied", func() bool { return c.members[leader].Image().ACLs().Len() == 1 })

	addr := c.members[leader].Addr()
	reg := atMaxVersion(t, nodeRequests()[5].req)
	require.Equal(t, int16(0), c.requestFrom("b8", addr, reg).(*kmsg.BrokerRegistrationResponse).ErrorCode)
	reg = atMaxVersion(t, nodeRequests()[5].req)
	require.Equal(t, kerr.ClusterAuthorizationFailed.Code, c.requestFrom("b9", addr, reg).(*kmsg.BrokerRegistrationResponse).ErrorCode)
}

// TestControllerListenerWithoutAuthorizer: without an authorizer the
// controller listener serves every principal, as before issue 24.
func TestControllerListenerWithoutAuthorizer(t *testing.T) {
	c := newCertCluster(t, 23, nil)
	leader := c.waitLeader()
	reg := atMaxVersion(t, nodeRequests()[5].req)
	require.Equal(t, int16(0), c.requestFrom("anyone", c.members[leader].Addr(), reg).(*kmsg.BrokerRegistrationResponse).ErrorCode)
}

// TestControllerListenerClosesUnmappedCertificates: a client certificate
// no ssl.principal.mapping.rules rule maps closes its connection before
// any request is read, as Kafka fails its authentication; the nodes'
// certificates map and the quorum runs.
func TestControllerListenerClosesUnmappedCertificates(t *testing.T) {
	rules, err := principal.NewBuilder("RULE:^CN=(c[0-9])$/$1/")
	require.NoError(t, err)
	policy, err := acl.NewPolicy([]string{"User:c1", "User:c2", "User:c3"}, false)
	require.NoError(t, err)
	c := newClusterStopped(t, 24, 3, 0, func(cfg *kraft.Config) {
		cfg.Security = kraft.Security{Listener: "CONTROLLER", TLS: true, Principals: rules, Authorizer: &policy}
	})
	certs := map[string]*x509.Certificate{}
	c.wrapEnv = func(e env.Env) env.Env { return certEnv{Env: e, net: &certNet{Net: e.Net(), certs: certs}} }
	for _, p := range c.procs {
		p.Start()
	}
	leader := c.waitLeader()

	var failed error
	var answered bool
	c.s.AddProcess("intruder", func(e env.Env) {
		e.Net().Dial(c.members[leader].Addr(), func(conn env.Conn, err error) {
			if err != nil {
				failed = err
				return
			}
			cl := wire.NewClient(conn, wire.ClientConfig{ClientID: "test"})
			req := atMaxVersion(t, kmsg.NewPtrApiVersionsRequest())
			if err := cl.Do(req, func(_ kmsg.Response, err error) { answered, failed = err == nil, err }); err != nil {
				failed = err
			}
		})
	}).Start()
	c.runUntil(commitBound, "the unmapped certificate's connection closed", func() bool { return answered || failed != nil })
	require.False(t, answered, "a request on a connection whose certificate maps to no principal was answered")
	require.ErrorIs(t, failed, wire.ErrConnClosed)
}
