package interop

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-log/strata/node"
)

// The secured node's users: alice may read and write the topics and
// groups named sec-* (prefixed ACLs); bob authenticates with the same
// mechanisms but has no ACL. Both have SCRAM-SHA-256 and SCRAM-SHA-512
// credentials (PLAIN checks them too). On the mTLS listener a
// certificate's CN is the user name (ssl.principal.mapping.rules).
const (
	secAlice, secAlicePassword = "alice", "alice-secret"
	secBob, secBobPassword     = "bob", "bob-secret"
	secPrefix                  = "sec-"
	// secWrongPassword is alice's name with a password that is not hers.
	secWrongPassword = "not-alice-secret"
)

// secureNode is an in-process node with the listeners of a secured
// cluster and the StandardAuthorizer on:
//   - PLAINTEXT, whose User:ANONYMOUS is a super user: the tests' admin
//     (the set-up of first users and ACLs before KIP-900's format-time
//     credentials);
//   - SASL_SSL and SASL_PLAINTEXT with SCRAM-SHA-512, SCRAM-SHA-256 and
//     PLAIN;
//   - SSL requiring a client certificate (mTLS), the certificate's CN
//     mapped to the user name.
//
// Its certificates (a CA, the server's for 127.0.0.1 and localhost, and
// client certificates for alice and bob) are PEM files in dir, for the
// command-line and Python clients.
type secureNode struct {
	*testNode
	adm *kadm.Client
	dir string
	ca  *testCA
	// saslSSL, saslPlaintext and mTLS are the listeners' addresses.
	saslSSL, saslPlaintext, mTLS string
	// caFile is the CA certificate's PEM file (clientCert writes a
	// user's certificate and key).
	caFile string
}

// startSecureNode starts a secureNode with alice, bob and alice's ACLs
// committed.
func startSecureNode(t *testing.T) *secureNode {
	t.Helper()
	dir := t.TempDir()
	ca := newTestCA(t, "strata-interop-ca")
	s := &secureNode{dir: dir, ca: ca}
	s.caFile = writePEM(t, dir, "ca.pem", ca.pem)
	certPEM, keyPEM := ca.issue(t, "strata-broker", "127.0.0.1", "localhost")
	keystore := writePEM(t, dir, "broker-keystore.pem", append(keyPEM, certPEM...))

	props := `
listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN
ssl.keystore.type=PEM
ssl.keystore.location=` + keystore + `
ssl.truststore.type=PEM
ssl.truststore.location=` + s.caFile + `
listener.name.ssl.ssl.client.auth=required
listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=([a-z]+)$/$1/,DEFAULT
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS
connection.failed.authentication.delay.ms=20
group.initial.rebalance.delay.ms=0
`
	cfg := node.DefaultConfig()
	path := filepath.Join(dir, "server.properties")
	require.NoError(t, os.WriteFile(path, []byte(props), 0o600))
	ignored, err := node.LoadConfigFile(&cfg, path)
	require.NoError(t, err)
	require.Empty(t, ignored)
	cfg.Listener, cfg.ControllerListener, cfg.MetricsListener = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.LogDir = filepath.Join(dir, "data")
	n, err := node.Start(cfg, slog.New(slog.NewTextHandler(newTestLog(t), &slog.HandlerOptions{Level: slog.LevelInfo})))
	require.NoError(t, err)
	s.testNode = &testNode{Node: n}
	t.Cleanup(func() { s.stop(t) })
	require.Eventually(t, func() bool { return n.ActiveController() && n.Registered() }, readyTimeout, pollInterval,
		"the node's controller never became active with its broker registered")
	s.saslSSL, s.saslPlaintext, s.mTLS = n.ListenerAddr("SASL_SSL"), n.ListenerAddr("SASL_PLAINTEXT"), n.ListenerAddr("SSL")
	require.NotEmpty(t, s.saslSSL)
	require.NotEmpty(t, s.saslPlaintext)
	require.NotEmpty(t, s.mTLS)

	s.adm = newAdmin(t, n.Addr())
	ctx := ctxFor(t, opTimeout)
	for _, u := range []struct{ user, password string }{{secAlice, secAlicePassword}, {secBob, secBobPassword}} {
		for _, m := range []kadm.ScramMechanism{kadm.ScramSha512, kadm.ScramSha256} {
			res, err := s.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: u.user, Mechanism: m, Iterations: 4096, Password: u.password}})
			require.NoError(t, err)
			require.NoError(t, res.Error())
		}
	}
	grant := kadm.NewACLs().Allow("User:"+secAlice).ResourcePatternType(kadm.ACLPatternPrefixed).
		Topics(secPrefix).Groups(secPrefix).Operations(kadm.OpRead, kadm.OpWrite, kadm.OpDescribe)
	created, err := s.adm.CreateACLs(ctx, grant)
	require.NoError(t, err)
	for _, c := range created {
		require.NoError(t, c.Err)
	}
	return s
}

// createTopic creates a topic of one partition (which alice may use
// when it starts with secPrefix) over the admin listener.
func (s *secureNode) createTopic(t *testing.T, topic string) {
	t.Helper()
	createTopic(t, s.adm, topic, 1, nil)
}

// clientCert writes a client certificate and key whose CN is user and
// returns their paths.
func (s *secureNode) clientCert(t *testing.T, user string) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM := s.ca.issue(t, user)
	return writePEM(t, s.dir, user+"-cert.pem", certPEM), writePEM(t, s.dir, user+"-key.pem", keyPEM)
}

// tlsConfig is a client TLS configuration trusting the node's CA, with a
// client certificate for user when user is not empty.
func (s *secureNode) tlsConfig(t *testing.T, user string) *tls.Config {
	t.Helper()
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(s.ca.pem))
	cfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if user != "" {
		c, err := tls.X509KeyPair(s.ca.issue(t, user))
		require.NoError(t, err)
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

// endOffset is the end offset of topic's partition 0, read over the
// admin listener.
func (s *secureNode) endOffset(t *testing.T, topic string) int64 {
	t.Helper()
	ends, err := s.adm.ListEndOffsets(ctxFor(t, opTimeout), topic)
	require.NoError(t, err)
	o, ok := ends.Lookup(topic, 0)
	require.True(t, ok)
	require.NoError(t, o.Err)
	return o.Offset
}

// committed is group's committed offset of topic's partition 0 (-1 for
// none), read over the admin listener.
func (s *secureNode) committed(t *testing.T, group, topic string) int64 {
	t.Helper()
	offs, err := s.adm.FetchOffsets(ctxFor(t, opTimeout), group)
	require.NoError(t, err)
	o, ok := offs.Lookup(topic, 0)
	if !ok {
		return -1
	}
	require.NoError(t, o.Err)
	return o.At
}

// testCA is a certificate authority made for a test (ECDSA P-256).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a leaf certificate whose subject is CN=cn, for servers and
// clients, naming hosts (IP addresses or DNS names); it returns the
// certificate and its PKCS#8 key as PEM.
func (ca *testCA) issue(t *testing.T, cn string, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
}

// serial is a random certificate serial number.
func serial(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	require.NoError(t, err)
	return n
}

func writePEM(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// secCtx is a context for one secured-client step.
func secCtx(t *testing.T) context.Context { return ctxFor(t, opTimeout) }
