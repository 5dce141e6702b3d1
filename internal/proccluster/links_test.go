package proccluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testCA issues the certificates of an mTLS cluster.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "strata-links-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a leaf certificate for cn, valid for servers and clients on
// 127.0.0.1, and returns it and its key PEM-encoded.
func (ca *testCA) issue(t *testing.T, serial int64, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
}

// tlsClient is a client trusting ca with a certificate for cn.
func (ca *testCA) tlsClient(t *testing.T, serial int64, cn string) *tls.Config {
	t.Helper()
	cert, err := tls.X509KeyPair(ca.issue(t, serial, cn))
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca.pem))
	return &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", Certificates: []tls.Certificate{cert}}
}

// startMTLSCluster starts three combined nodes whose every link is mutual
// TLS: the client listener (named PLAINTEXT by Start, mapped to SSL here),
// which is also the inter-broker listener, and the controller listener
// require client certificates; each node has its own (CN=node<id>,
// User:node<id> by the mapping rule), the StandardAuthorizer is on, and
// the nodes and User:admin are super users.
func startMTLSCluster(t *testing.T, ca *testCA) *Cluster {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o600))
		return path
	}
	o := Options{Props: []string{
		"listener.security.protocol.map=PLAINTEXT:SSL,CONTROLLER:SSL",
		"inter.broker.listener.name=PLAINTEXT",
		"ssl.keystore.type=PEM",
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + write("ca.pem", ca.pem),
		"ssl.client.auth=required",
		"ssl.principal.mapping.rules=RULE:^CN=([a-z0-9]+)$/$1/,DEFAULT",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:node1;User:node2;User:node3;User:admin",
	}, NodeProps: map[int32][]string{}}
	for id := int32(1); id <= 3; id++ {
		certPEM, keyPEM := ca.issue(t, int64(10+id), fmt.Sprintf("node%d", id))
		o.NodeProps[id] = []string{"ssl.keystore.location=" + write(fmt.Sprintf("node%d.pem", id), append(keyPEM, certPEM...))}
	}
	return Start(t, Combined(3), o)
}

// request sends req on the kept connection of client cl (its one seed).
func request[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	require.NoError(t, err, "%s", kmsg.NameForKey(req.Key()))
	return resp.(R)
}

// quorumLeader is the quorum's leader and epoch from DescribeQuorum on
// the controller listener at addr, asked as admin.
func quorumLeader(t *testing.T, ca *testCA, addr string) (leader, epoch int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(ca.tlsClient(t, 100, "admin")))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	resp := request[*kmsg.DescribeQuorumResponse](t, cl, req)
	require.Zero(t, resp.ErrorCode)
	require.Len(t, resp.Topics, 1)
	p := resp.Topics[0].Partitions[0]
	return p.LeaderID, p.LeaderEpoch
}

// placementOf is the brokers and every partition's leader and replicas.
func placementOf(t *testing.T, adm *kadm.Client) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx)
	require.NoError(t, err)
	out := fmt.Sprint(md.Brokers.NodeIDs())
	for _, td := range md.Topics.Sorted() {
		for _, p := range td.Partitions.Sorted() {
			out += fmt.Sprintf(" %s-%d:%d%v", td.Topic, p.Partition, p.Leader, p.Replicas)
		}
	}
	return out
}

// TestMTLSNodeLinksRefuseForgedNodeRequests is issue 24's real-process
// acceptance test of the node links: three `strata serve` processes
// whose every link (controller listener, inter-broker listener, client
// listener) is mutual TLS form a cluster and replicate a topic; a client
// with a valid certificate from the cluster's CA but no node identity
// sends BrokerRegistration, BrokerHeartbeat (asking to fence and shut a
// broker down) and Vote (a far epoch, naming another candidate) to every
// controller listener, and each is refused with
// CLUSTER_AUTHORIZATION_FAILED; the quorum leader and epoch, the brokers
// and every partition's leader and replicas do not change.
func TestMTLSNodeLinksRefuseForgedNodeRequests(t *testing.T) {
	ca := newTestCA(t)
	c := startMTLSCluster(t, ca)
	seeds := c.waitBrokersRegistered()
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(ca.tlsClient(t, 101, "admin")),
		kgo.DialTimeout(time.Second))
	require.NoError(t, err)
	defer admin.Close()
	adm := kadm.NewClient(admin)
	ctx, cancel := context.WithTimeout(context.Background(), clusterStartTimeout)
	defer cancel()
	c.createReplicatedTopic(ctx, adm, "links", 3)
	for i := range 10 {
		require.NoError(t, admin.ProduceSync(ctx, &kgo.Record{Topic: "links", Value: []byte(fmt.Sprint(i))}).FirstErr())
	}
	c.WaitFor(clusterStartTimeout, "every follower in sync over the mTLS inter-broker listener", func() bool {
		md, err := adm.Metadata(ctx, "links")
		if err != nil || len(md.Topics["links"].Partitions) != 3 {
			return false
		}
		for _, p := range md.Topics["links"].Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	leader, epoch := quorumLeader(t, ca, c.Node(1).CtrlAddr)
	before := placementOf(t, adm)

	for _, p := range c.Nodes {
		intruder, err := kgo.NewClient(kgo.SeedBrokers(p.CtrlAddr), kgo.DialTLSConfig(ca.tlsClient(t, 200+int64(p.ID), "intruder")))
		require.NoError(t, err)
		defer intruder.Close()

		reg := kmsg.NewPtrBrokerRegistrationRequest()
		reg.BrokerID, reg.ClusterID, reg.IncarnationID = 9, c.ClusterID, [16]byte{0: 9}
		rl := kmsg.NewBrokerRegistrationRequestListener()
		rl.Name, rl.Host, rl.Port = "PLAINTEXT", "127.0.0.1", 1
		reg.Listeners = []kmsg.BrokerRegistrationRequestListener{rl}
		require.Equal(t, kerr.ClusterAuthorizationFailed.Code, request[*kmsg.BrokerRegistrationResponse](t, intruder, reg).ErrorCode,
			"BrokerRegistration on node %d", p.ID)

		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.WantFence, hb.WantShutdown = (p.ID%3)+1, 0, true, true
		require.Equal(t, kerr.ClusterAuthorizationFailed.Code, request[*kmsg.BrokerHeartbeatResponse](t, intruder, hb).ErrorCode,
			"BrokerHeartbeat on node %d", p.ID)

		vote := kmsg.NewPtrVoteRequest()
		vote.ClusterID, vote.VoterID = &c.ClusterID, p.ID
		vp := kmsg.NewVoteRequestTopicPartition()
		vp.CandidateEpoch, vp.CandidateID, vp.LastOffsetEpoch, vp.LastOffset = epoch+1000, (p.ID%3)+1, epoch+1000, 1<<40
		vt := kmsg.NewVoteRequestTopic()
		vt.Topic, vt.Partitions = "__cluster_metadata", []kmsg.VoteRequestTopicPartition{vp}
		vote.Topics = []kmsg.VoteRequestTopic{vt}
		require.Equal(t, kerr.ClusterAuthorizationFailed.Code, request[*kmsg.VoteResponse](t, intruder, vote).ErrorCode,
			"Vote on node %d", p.ID)
	}

	// Past a broker session timeout (a forged fence or shutdown would
	// have moved the leaderships by then).
	time.Sleep(3 * time.Second)
	gotLeader, gotEpoch := quorumLeader(t, ca, c.Node(1).CtrlAddr)
	require.Equal(t, [2]int32{leader, epoch}, [2]int32{gotLeader, gotEpoch}, "the quorum leader or epoch moved")
	require.Equal(t, before, placementOf(t, adm), "brokers or placement changed")
	c.RequireRunning()
}
