package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cliTestCA is a certificate authority for the TLS command tests.
type cliTestCA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	pem    []byte
	serial int64
}

func newCLITestCA(t *testing.T) *cliTestCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cli-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &cliTestCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), serial: 1}
}

// issue is a PEM keystore (key, then certificate) for cn, for servers
// and clients, naming hosts.
func (ca *cliTestCA) issue(t *testing.T, cn string, hosts ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
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
	return append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
}

// TestCLICommandConfigTLS: --command-config reaches a SASL_SSL listener
// (SCRAM over TLS, the CA from ssl.truststore.location) and an mTLS
// listener (the client's key and certificate from ssl.keystore.location,
// mapped to User:admin, a super user); a client that does not trust the
// broker's CA fails.
func TestCLICommandConfigTLS(t *testing.T) {
	ca := newCLITestCA(t)
	keystore := writeFile(t, "broker.pem", string(ca.issue(t, "broker", "127.0.0.1", "localhost")))
	truststore := writeFile(t, "ca.pem", string(ca.pem))
	n := startSecuredCLINode(t, t.TempDir(), `
listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512
ssl.keystore.type=PEM
ssl.keystore.location=`+keystore+`
ssl.truststore.type=PEM
ssl.truststore.location=`+truststore+`
listener.name.ssl.ssl.client.auth=required
listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=([a-z]+)$/$1/,DEFAULT
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS;User:admin
`)
	admin := cliRunner{t: t, addr: n.Addr()}
	saslSSL := cliRunner{t: t, addr: n.ListenerAddr("SASL_SSL")}
	mTLS := cliRunner{t: t, addr: n.ListenerAddr("SSL")}

	// mTLS as CN=admin: a super user, so it may create topics and users.
	adminConfig := writeFile(t, "admin.properties", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location="+truststore+
		"\nssl.keystore.type=PEM\nssl.keystore.location="+writeFile(t, "admin.pem", string(ca.issue(t, "admin")))+"\n")
	topic := topicName(t, "tls")
	mTLS.ok("", "topic", "create", topic, "--command-config", adminConfig)
	mTLS.ok("alice-secret\n", "user", "create", "alice", "--mechanism", "SCRAM-SHA-512", "--command-config", adminConfig)
	mTLS.ok("", "acl", "add", "--allow-principal", "User:alice", "--operation", "Describe", "--topic", topic, "--command-config", adminConfig)

	// SCRAM over TLS as alice: she sees the topic she may describe.
	aliceConfig := writeFile(t, "alice.properties", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";`+
		"\nssl.truststore.location="+truststore+"\n")
	require.Contains(t, saslSSL.ok("", "topic", "list", "--command-config", aliceConfig), topic)

	// Without the CA, or without a client certificate on the mTLS
	// listener, no connection.
	untrusting := writeFile(t, "untrusting.properties", strings.Replace(mustRead(t, aliceConfig), "ssl.truststore.location="+truststore, "", 1))
	code, _, errOut := saslSSL.run("topic", "list", "--command-config", untrusting, "--timeout", "3s")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "certificate")
	noCert := writeFile(t, "nocert.properties", "security.protocol=SSL\nssl.truststore.location="+truststore+"\n")
	code, _, _ = mTLS.run("topic", "list", "--command-config", noCert, "--timeout", "3s")
	require.Equal(t, exitError, code)
	admin.ok("", "topic", "list") // the plaintext listener is unaffected
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}
