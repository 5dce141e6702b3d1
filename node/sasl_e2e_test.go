package node_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-log/strata/node"
)

// securedNode is a node with a PLAINTEXT listener for the admin (whose
// User:ANONYMOUS is a super user: the set-up of a first user before
// KIP-900's format-time credentials), a SASL_SSL listener and an SSL
// listener requiring client certificates (mTLS), with the
// StandardAuthorizer on.
type securedNode struct {
	*node.Node
	ca      *node.TestCA
	dir     string
	roots   *x509.CertPool
	saslSSL string
	mTLS    string
}

func startSecuredNode(t *testing.T) *securedNode {
	t.Helper()
	ca := node.NewTestCA(t, "strata-test-ca")
	dir := t.TempDir()
	certPEM, keyPEM := ca.Issue(t, "broker", "127.0.0.1", "localhost")
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o600))
		return path
	}
	keystore := write("broker.pem", append(keyPEM, certPEM...))
	truststore := write("ca.pem", ca.PEM())
	n := startNodeWithProperties(t, t.TempDir(), `
listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
ssl.keystore.type=PEM
ssl.keystore.location=`+keystore+`
ssl.truststore.type=PEM
ssl.truststore.location=`+truststore+`
listener.name.ssl.ssl.client.auth=required
listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=([a-z]+)$/$1/,DEFAULT
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS;User:admin
connection.failed.authentication.delay.ms=50
`)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca.PEM()))
	return &securedNode{Node: n, ca: ca, dir: dir, roots: roots,
		saslSSL: n.ListenerAddr("SASL_SSL"), mTLS: n.ListenerAddr("SSL")}
}

// tlsClient is a client TLS config trusting the test CA, with a client
// certificate for cn when cn is not empty.
func (s *securedNode) tlsClient(t *testing.T, cn string) *tls.Config {
	cfg := &tls.Config{RootCAs: s.roots, ServerName: "127.0.0.1"}
	if cn != "" {
		c, err := tls.X509KeyPair(s.ca.Issue(t, cn))
		require.NoError(t, err)
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

func (s *securedNode) client(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTimeout(5 * time.Second),
		kgo.RequestRetries(1), kgo.RetryTimeout(3 * time.Second)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func scramAs(user, password string) kgo.Opt {
	return kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism())
}

// TestE2ESASLSSLAndMTLSWithACLs: SCRAM users made with kadm exist
// everywhere once committed; a user produces and consumes over SASL_SSL
// with the ACLs it was granted; a wrong password is
// SASL_AUTHENTICATION_FAILED, a user without ACLs gets
// TOPIC_AUTHORIZATION_FAILED, a removed ACL is refused at once; a client
// certificate mapped by ssl.principal.mapping.rules is the principal on
// the mTLS listener, and a client without a certificate cannot connect.
func TestE2ESASLSSLAndMTLSWithACLs(t *testing.T) {
	s := startSecuredNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := newAdmin(t, s.Addr())

	_, err := adm.CreateTopic(ctx, 1, 1, nil, "orders")
	require.NoError(t, err)
	for _, u := range []string{"alice", "bob"} {
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: u, Mechanism: kadm.ScramSha512,
			Iterations: 4096, Password: u + "-secret"}})
		require.NoError(t, err)
		require.NoError(t, res.Error())
	}
	grant := kadm.NewACLs().Allow("User:alice").Topics("orders").Groups("etl").Operations(kadm.OpRead, kadm.OpWrite, kadm.OpDescribe)
	created, err := adm.CreateACLs(ctx, grant)
	require.NoError(t, err)
	for _, c := range created {
		require.NoError(t, c.Err)
	}

	// alice, over SASL_SSL with SCRAM-SHA-512.
	alice := s.client(t, s.saslSSL, kgo.DialTLSConfig(s.tlsClient(t, "")), scramAs("alice", "alice-secret"),
		kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("etl"), kgo.DisableIdempotentWrite())
	require.NoError(t, alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("o-1")}).FirstErr())
	// The group's coordinator may still be loading the offsets topic
	// (NOT_COORDINATOR, retried by the group as kgo does).
	var records []*kgo.Record
	for len(records) == 0 {
		fetches := alice.PollRecords(ctx, 1)
		for _, fe := range fetches.Errors() {
			require.True(t, kerr.IsRetriable(fe.Err), "%v", fe.Err)
		}
		records = fetches.Records()
	}
	require.Equal(t, "o-1", string(records[0].Value))

	// PLAIN checks the same credential.
	plainAlice := s.client(t, s.saslSSL, kgo.DialTLSConfig(s.tlsClient(t, "")),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.DisableIdempotentWrite())
	require.NoError(t, plainAlice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("o-2")}).FirstErr())

	// A wrong password.
	wrong := s.client(t, s.saslSSL, kgo.DialTLSConfig(s.tlsClient(t, "")), scramAs("alice", "guess"))
	err = wrong.Ping(ctx)
	require.Error(t, err)
	require.True(t, errors.Is(err, kerr.SaslAuthenticationFailed), "%v", err)

	// bob authenticates but has no ACL.
	bob := s.client(t, s.saslSSL, kgo.DialTLSConfig(s.tlsClient(t, "")), scramAs("bob", "bob-secret"), kgo.DisableIdempotentWrite())
	err = bob.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("b")}).FirstErr()
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)

	// Removing alice's WRITE takes effect once it commits.
	_, err = adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpWrite).
		ResourcePatternType(kadm.ACLPatternLiteral).AllowHosts())
	require.NoError(t, err)
	require.ErrorIs(t, alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("o-3")}).FirstErr(),
		kerr.TopicAuthorizationFailed)

	// mTLS: CN=alice maps to User:alice, who may still read orders.
	mtls := s.client(t, s.mTLS, kgo.DialTLSConfig(s.tlsClient(t, "alice")))
	mtlsAdm := kadm.NewClient(mtls)
	offsets, err := mtlsAdm.ListEndOffsets(ctx, "orders")
	require.NoError(t, err)
	end, ok := offsets.Lookup("orders", 0)
	require.True(t, ok)
	require.NoError(t, end.Err)
	require.EqualValues(t, 2, end.Offset)
	// A certificate whose CN maps to a user without ACLs.
	mallory := kadm.NewClient(s.client(t, s.mTLS, kgo.DialTLSConfig(s.tlsClient(t, "mallory"))))
	offsets, err = mallory.ListEndOffsets(ctx, "orders")
	if err == nil { // kadm answers a refused topic's metadata whole or per partition
		end, _ = offsets.Lookup("orders", 0)
		err = end.Err
	}
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	// No client certificate: the handshake fails.
	noCert := s.client(t, s.mTLS, kgo.DialTLSConfig(s.tlsClient(t, "")))
	require.Error(t, noCert.Ping(ctx))
}
