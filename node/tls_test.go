package node

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
)

// testCA is a certificate authority made for a test (ECDSA P-256).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var testSerial atomic.Int64

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(testSerial.Add(1)),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a leaf certificate for cn, valid for servers and clients,
// naming hosts (IP addresses or DNS names); it returns the certificate
// and key PEM.
func (ca *testCA) issue(t testing.TB, cn string, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(testSerial.Add(1)),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
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

// keyPair issues a leaf for cn as a tls.Certificate, for raw TLS
// clients.
func (ca *testCA) keyPair(t *testing.T, cn string) *tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(ca.issue(t, cn))
	require.NoError(t, err)
	return &c
}

// writeTemp writes data to dir/name atomically (a rename, as
// certificate managers do) and returns the path.
func writeTemp(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	require.NoError(t, os.Rename(tmp, path))
	return path
}

// serverTLS writes a CA-issued server certificate for 127.0.0.1 and
// the trust store to a temporary directory and returns the listener
// configuration (keystore form).
func serverTLS(t testing.TB, ca *testCA, auth ClientAuth) TLSConfig {
	t.Helper()
	dir := t.TempDir()
	certPEM, keyPEM := ca.issue(t, "server", "127.0.0.1", "localhost")
	return TLSConfig{
		KeystoreFile:   writeTemp(t, dir, "server.pem", append(keyPEM, certPEM...)),
		TruststoreFile: writeTemp(t, dir, "ca.pem", ca.pem),
		ClientAuth:     auth,
		VerifyHostname: true,
	}
}

func newTLSNet(t *testing.T, l *Loop, cfg NetConfig) *Net {
	t.Helper()
	n := NewNet(l, cfg, slog.New(slog.DiscardHandler))
	t.Cleanup(n.Close)
	return n
}

// tlsEcho listens with TLS as listener and echoes frames; each conn
// accepted is sent on accepted.
func tlsEcho(t *testing.T, n env.SecureNet, l *Loop, listener string) (env.Listener, chan env.Conn) {
	t.Helper()
	accepted := make(chan env.Conn, 16)
	var ln env.Listener
	onLoop(t, l, func() {
		var err error
		ln, err = n.ListenTLS("127.0.0.1:0", listener, func(c env.Conn) {
			c.OnFrame(func(frame []byte) {
				if err := c.Send(frame); err != nil {
					t.Errorf("echo send: %v", err)
				}
			})
			accepted <- c
		})
		require.NoError(t, err)
	})
	return ln, accepted
}

// rawTLS opens a crypto/tls client connection to addr (closed at the
// end of the test) and runs its handshake.
func rawTLS(t testing.TB, addr string, roots *x509.CertPool, cert *tls.Certificate) (*tls.Conn, error) {
	t.Helper()
	cfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	if cert != nil {
		// Sent whatever CAs the server names (crypto/tls would keep
		// back a certificate another CA issued).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	tc := tls.Client(dialRaw(t, addr), cfg)
	return tc, tc.Handshake()
}

func pool(ca *testCA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// dialed is a DialTLS result.
type dialed struct {
	conn   env.Conn
	err    error
	frames chan []byte
}

func dialTLS(t *testing.T, n env.SecureNet, addr, listener string) dialed {
	t.Helper()
	ch := make(chan dialed, 1)
	n.DialTLS(addr, listener, func(c env.Conn, err error) {
		d := dialed{conn: c, err: err, frames: make(chan []byte, 16)}
		if c != nil {
			c.OnFrame(func(f []byte) { d.frames <- f })
		}
		ch <- d
	})
	return waitFor(t, ch, "DialTLS")
}

// TestTLSFramesRoundTrip: frames go both ways between a TLS listener and
// a TLS dial of two Nets, through env.SecureNet's interface, and each
// side sees the other's verified certificate (mutual TLS between nodes).
func TestTLSFramesRoundTrip(t *testing.T) {
	ca := newTestCA(t, "ca")
	l := startLoop(t)
	server, client := newTLSNet(t, l, NetConfig{}), newTLSNet(t, l, NetConfig{})
	require.NoError(t, server.SetTLS("CONTROLLER", serverTLS(t, ca, ClientAuthRequired)))
	dir := t.TempDir()
	certPEM, keyPEM := ca.issue(t, "node-2")
	require.NoError(t, client.SetTLS("controller", TLSConfig{
		CertFile:       writeTemp(t, dir, "node.crt", certPEM),
		KeyFile:        writeTemp(t, dir, "node.key", keyPEM),
		TruststoreFile: writeTemp(t, dir, "ca.pem", ca.pem),
		VerifyHostname: true,
	}))

	var secure env.SecureNet = server
	ln, accepted := tlsEcho(t, secure, l, "controller")
	d := dialTLS(t, client, ln.Addr(), "CONTROLLER")
	require.NoError(t, d.err)
	sc := waitFor(t, accepted, "accept")

	require.Equal(t, "server", d.conn.(env.TLSConn).PeerCertificate().Subject.CommonName)
	require.Equal(t, "node-2", sc.(env.TLSConn).PeerCertificate().Subject.CommonName)
	_, isFrameReceiver := sc.(env.FrameReceiver)
	require.True(t, isFrameReceiver)

	for i, size := range []int{0, 1, 100, 20 << 10, 1 << 20} {
		payload := bytes.Repeat([]byte{byte('a' + i)}, size)
		onLoop(t, l, func() { require.NoError(t, d.conn.Send(payload)) })
		require.Equal(t, payload, waitFor(t, d.frames, "echo"), "frame of %d bytes", size)
	}
}

// TestPlaintextConnIsNotTLSConn: the core tells TLS conns by
// env.TLSConn, so a plaintext conn must not be one.
func TestPlaintextConnIsNotTLSConn(t *testing.T) {
	n, l := newTestNet(t, 0)
	ln, _ := echoServer(t, n, l)
	ch := make(chan env.Conn, 1)
	n.Dial(ln.Addr(), func(c env.Conn, err error) {
		require.NoError(t, err)
		ch <- c
	})
	_, ok := waitFor(t, ch, "dial").(env.TLSConn)
	require.False(t, ok)
}

// TestTLSSendPartsFileRegion: a fetch-like answer (bytes, a file region
// larger than the socket buffer and the pread buffer, bytes) arrives
// whole over TLS, with sendfile on for the Net: TLS conns never use it
// (it would send the region in the clear, which the client could not
// decrypt).
func TestTLSSendPartsFileRegion(t *testing.T) {
	ca := newTestCA(t, "ca")
	l := startLoop(t)
	n := newTLSNet(t, l, NetConfig{})
	n.UseSendfile(true)
	require.NoError(t, n.SetTLS("SSL", serverTLS(t, ca, ClientAuthNone)))
	content := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuv"), (3<<20)/32)
	f := testFile(t, l, content)
	off, length := int64(1000), int64(len(content)-5000)
	var addr string
	onLoop(t, l, func() {
		ln, err := n.ListenTLS("127.0.0.1:0", "SSL", func(c env.Conn) {
			c.OnFrame(func([]byte) {
				parts := []env.Part{{Bytes: []byte("head:")}, {File: f, Offset: off, Length: length}, {Bytes: []byte(":tail")}}
				if err := c.SendParts(parts); err != nil {
					t.Errorf("SendParts: %v", err)
				}
			})
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = ln.Close() })
		addr = ln.Addr()
	})
	c, err := rawTLS(t, addr, pool(ca), nil)
	require.NoError(t, err)
	want := append(append([]byte("head:"), content[off:off+length]...), ":tail"...)
	for range 3 {
		writeRawFrame(t, c, []byte("fetch"))
	}
	for i := range 3 {
		require.Equal(t, want, readRawFrame(t, c), "response %d", i)
	}
}

// requireRefused asserts that a client whose handshake the server
// refuses gets no frame back (with TLS 1.3 the client's side of the
// handshake completes before the server checks its certificate, so the
// refusal shows at the first read).
func requireRefused(t *testing.T, c *tls.Conn, handshakeErr error) {
	t.Helper()
	if handshakeErr != nil {
		return
	}
	writeRawFrame(t, c, []byte("hello"))
	_, err := io.ReadFull(c, make([]byte, 4))
	require.Error(t, err)
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded)
}

// TestTLSClientAuth: ssl.client.auth=required refuses a client without a
// certificate and one whose certificate another CA issued, and serves one
// with a good certificate; requested serves clients with and without one,
// and PeerCertificate says which.
func TestTLSClientAuth(t *testing.T) {
	ca, other := newTestCA(t, "ca"), newTestCA(t, "other-ca")
	good := ca.keyPair(t, "alice")
	foreign := other.keyPair(t, "mallory")
	for _, tc := range []struct {
		auth   ClientAuth
		cert   *tls.Certificate
		served bool
		peer   string // the server's PeerCertificate CN; "" for nil
	}{
		{ClientAuthRequired, nil, false, ""},
		{ClientAuthRequired, foreign, false, ""},
		{ClientAuthRequired, good, true, "alice"},
		{ClientAuthRequested, nil, true, ""},
		{ClientAuthRequested, good, true, "alice"},
		{ClientAuthRequested, foreign, false, ""},
		{ClientAuthNone, good, true, ""},
	} {
		name := tc.auth.String() + "/"
		switch tc.cert {
		case nil:
			name += "no-cert"
		case good:
			name += "good-cert"
		default:
			name += "foreign-cert"
		}
		t.Run(name, func(t *testing.T) {
			l := startLoop(t)
			n := newTLSNet(t, l, NetConfig{})
			require.NoError(t, n.SetTLS("SSL", serverTLS(t, ca, tc.auth)))
			ln, accepted := tlsEcho(t, n, l, "SSL")
			c, err := rawTLS(t, ln.Addr(), pool(ca), tc.cert)
			if !tc.served {
				requireRefused(t, c, err)
				require.Empty(t, accepted, "the core saw a refused client")
				return
			}
			require.NoError(t, err)
			requireEcho(t, c, "hello")
			sc := waitFor(t, accepted, "accept")
			peer := sc.(env.TLSConn).PeerCertificate()
			if tc.peer == "" {
				require.Nil(t, peer)
			} else {
				require.NotNil(t, peer)
				require.Equal(t, tc.peer, peer.Subject.CommonName)
			}
		})
	}
}

// TestTLSHandshakeTimeout: a client that connects and never sends its
// ClientHello is closed at the handshake timeout, and meanwhile is no
// conn of the Net's (nothing counts it; the core never sees it).
func TestTLSHandshakeTimeout(t *testing.T) {
	ca := newTestCA(t, "ca")
	l := startLoop(t)
	n := newTLSNet(t, l, NetConfig{TLSHandshakeTimeout: 200 * time.Millisecond})
	require.NoError(t, n.SetTLS("SSL", serverTLS(t, ca, ClientAuthNone)))
	ln, accepted := tlsEcho(t, n, l, "SSL")
	silent := dialRaw(t, ln.Addr())
	time.Sleep(50 * time.Millisecond)
	n.mu.Lock()
	conns := len(n.conns)
	n.mu.Unlock()
	require.Zero(t, conns, "a conn in its handshake is registered")
	start := time.Now()
	expectClosedByPeer(t, silent)
	require.Less(t, time.Since(start), 2*time.Second)
	require.Empty(t, accepted)

	// The listener still serves.
	c, err := rawTLS(t, ln.Addr(), pool(ca), nil)
	require.NoError(t, err)
	requireEcho(t, c, "after")
}

// TestTLSCertificateReload: replacing the certificate files changes the
// certificate new connections see; a corrupt replacement, or a key that
// does not match, keeps the one before; a good one after that is taken.
func TestTLSCertificateReload(t *testing.T) {
	ca := newTestCA(t, "ca")
	l := startLoop(t)
	n := newTLSNet(t, l, NetConfig{})
	dir := t.TempDir()
	write := func(cn string, hosts ...string) {
		certPEM, keyPEM := ca.issue(t, cn, hosts...)
		writeTemp(t, dir, "tls.key", keyPEM)
		writeTemp(t, dir, "tls.crt", certPEM)
	}
	write("one", "127.0.0.1")
	cfg := TLSConfig{
		CertFile:       filepath.Join(dir, "tls.crt"),
		KeyFile:        filepath.Join(dir, "tls.key"),
		ReloadInterval: 10 * time.Millisecond,
		AllowDNChanges: true, // each certificate names itself
	}
	require.NoError(t, n.SetTLS("SSL", cfg))
	ln, _ := tlsEcho(t, n, l, "SSL")
	serverCN := func() string {
		t.Helper()
		time.Sleep(20 * time.Millisecond) // past the reload interval
		c, err := rawTLS(t, ln.Addr(), pool(ca), nil)
		require.NoError(t, err)
		requireEcho(t, c, "x")
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	require.Equal(t, "one", serverCN())

	write("two", "127.0.0.1", "localhost")
	require.Equal(t, "two", serverCN())

	writeTemp(t, dir, "tls.crt", []byte("-----BEGIN CERTIFICATE-----\ngarbage\n"))
	require.Equal(t, "two", serverCN(), "a corrupt certificate replaced the good one")

	_, strayKey := ca.issue(t, "stray")
	threeCert, _ := ca.issue(t, "three", "127.0.0.1")
	writeTemp(t, dir, "tls.crt", threeCert)
	writeTemp(t, dir, "tls.key", strayKey)
	require.Equal(t, "two", serverCN(), "a certificate with a key not its own replaced the good one")

	write("three", "127.0.0.1") // drops localhost
	require.Equal(t, "two", serverCN(), "a certificate that drops a name of the one before replaced it")

	write("four", "127.0.0.1", "localhost", "broker-1.example")
	require.Equal(t, "four", serverCN())
}

// TestTLSReloadKeepsSubject: by default a reloaded certificate must
// have the subject of the one it replaces (Kafka's dynamic keystore
// update), so a certificate for another host swapped in by mistake is
// refused; ssl.allow.dn.changes=true allows it.
func TestTLSReloadKeepsSubject(t *testing.T) {
	for _, allow := range []bool{false, true} {
		ca := newTestCA(t, "ca")
		l := startLoop(t)
		n := newTLSNet(t, l, NetConfig{})
		dir := t.TempDir()
		write := func(cn string) string {
			certPEM, keyPEM := ca.issue(t, cn, "127.0.0.1")
			return writeTemp(t, dir, "ks.pem", append(keyPEM, certPEM...))
		}
		ks := write("broker-1")
		require.NoError(t, n.SetTLS("SSL", TLSConfig{KeystoreFile: ks, ReloadInterval: 10 * time.Millisecond, AllowDNChanges: allow}))
		ln, _ := tlsEcho(t, n, l, "SSL")
		write("broker-2")
		time.Sleep(20 * time.Millisecond)
		c, err := rawTLS(t, ln.Addr(), pool(ca), nil)
		require.NoError(t, err)
		want := "broker-1"
		if allow {
			want = "broker-2"
		}
		require.Equal(t, want, c.ConnectionState().PeerCertificates[0].Subject.CommonName, "ssl.allow.dn.changes=%v", allow)
	}
}

// TestTLSDialVerifiesServer: DialTLS verifies the server's chain by the
// trust store, and its name unless ssl.endpoint.identification.algorithm
// is empty.
func TestTLSDialVerifiesServer(t *testing.T) {
	ca, other := newTestCA(t, "ca"), newTestCA(t, "other-ca")
	for _, tc := range []struct {
		name       string
		trust      *testCA
		verifyHost bool
		ok         bool
	}{
		{"https, name not in certificate", ca, true, false},
		{"no endpoint identification", ca, false, true},
		{"no endpoint identification, other CA", other, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := startLoop(t)
			server, client := newTLSNet(t, l, NetConfig{}), newTLSNet(t, l, NetConfig{})
			dir := t.TempDir()
			certPEM, keyPEM := ca.issue(t, "broker-1", "broker-1.example") // no 127.0.0.1
			require.NoError(t, server.SetTLS("SSL", TLSConfig{KeystoreFile: writeTemp(t, dir, "ks.pem", append(certPEM, keyPEM...))}))
			require.NoError(t, client.SetTLS("SSL", TLSConfig{TruststoreFile: writeTemp(t, dir, "ca.pem", tc.trust.pem), VerifyHostname: tc.verifyHost}))
			ln, _ := tlsEcho(t, server, l, "SSL")
			d := dialTLS(t, client, ln.Addr(), "SSL")
			if !tc.ok {
				require.Error(t, d.err)
				require.Nil(t, d.conn)
				return
			}
			require.NoError(t, d.err)
			require.Equal(t, "broker-1", d.conn.(env.TLSConn).PeerCertificate().Subject.CommonName)
		})
	}
}

// encryptPKCS8 encrypts a PKCS#8 key as `openssl pkcs8 -topk8 -v2
// aes-256-cbc -v2prf hmacWithSHA256` does.
func encryptPKCS8(t *testing.T, der []byte, password string) []byte {
	t.Helper()
	salt, iv := make([]byte, 16), make([]byte, aes.BlockSize)
	_, _ = rand.Read(salt)
	_, _ = rand.Read(iv)
	key, err := pbkdf2.Key(sha256.New, password, salt, 2048, 32)
	require.NoError(t, err)
	pad := aes.BlockSize - len(der)%aes.BlockSize
	plain := append(bytes.Clone(der), bytes.Repeat([]byte{byte(pad)}, pad)...)
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	enc := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(enc, plain)
	raw := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		require.NoError(t, err)
		return asn1.RawValue{FullBytes: b}
	}
	kdf := pbkdf2Params{Salt: salt, Iterations: 2048, PRF: pkix.AlgorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue}}
	params := pbes2Params{
		KeyDerivation: pkix.AlgorithmIdentifier{Algorithm: oidPBKDF2, Parameters: raw(kdf)},
		Encryption:    pkix.AlgorithmIdentifier{Algorithm: oidAES256CBC, Parameters: raw(iv)},
	}
	out, err := asn1.Marshal(encryptedPrivateKeyInfo{
		Algorithm: pkix.AlgorithmIdentifier{Algorithm: oidPBES2, Parameters: raw(params)},
		Data:      enc,
	})
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: out})
}

// TestTLSEncryptedKey: a PEM keystore with an encrypted PKCS#8 key is
// read with ssl.key.password; without it, or with a wrong one, start-up
// stops with an error saying so.
func TestTLSEncryptedKey(t *testing.T) {
	ca := newTestCA(t, "ca")
	certPEM, keyPEM := ca.issue(t, "server", "127.0.0.1")
	b, _ := pem.Decode(keyPEM)
	dir := t.TempDir()
	ks := writeTemp(t, dir, "ks.pem", append(encryptPKCS8(t, b.Bytes, "s3cret"), certPEM...))
	for _, tc := range []struct {
		password, err string
	}{
		{"s3cret", ""},
		{"", "the key is encrypted: set ssl.key.password"},
		{"wrong", "ssl.key.password does not decrypt the key"},
	} {
		l := startLoop(t)
		n := newTLSNet(t, l, NetConfig{})
		err := n.SetTLS("SSL", TLSConfig{KeystoreFile: ks, KeyPassword: tc.password})
		if tc.err != "" {
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.ErrorContains(t, err, tc.err)
			require.NotContains(t, err.Error(), "s3cret")
			continue
		}
		require.NoError(t, err)
		ln, _ := tlsEcho(t, n, l, "SSL")
		c, err := rawTLS(t, ln.Addr(), pool(ca), nil)
		require.NoError(t, err)
		requireEcho(t, c, "encrypted key")
	}
}

// TestTLSConfigKeys: the ssl.* keys resolve per listener, the
// listener.name.<name>. prefix overriding the plain key for its listener
// only, and bad values and files stop start-up with the key named.
func TestTLSConfigKeys(t *testing.T) {
	ca := newTestCA(t, "ca")
	dir := t.TempDir()
	certPEM, keyPEM := ca.issue(t, "server", "127.0.0.1")
	_, otherKey := ca.issue(t, "other")
	ks := writeTemp(t, dir, "ks.pem", append(keyPEM, certPEM...))
	crt := writeTemp(t, dir, "tls.crt", certPEM)
	key := writeTemp(t, dir, "tls.key", keyPEM)
	wrongKey := writeTemp(t, dir, "wrong.key", otherKey)
	trust := writeTemp(t, dir, "ca.pem", ca.pem)
	missing := filepath.Join(dir, "missing.pem")

	t.Run("overrides", func(t *testing.T) {
		cfg := DefaultConfig()
		for _, kv := range [][2]string{
			{"ssl.keystore.location", ks},
			{"ssl.truststore.location", trust},
			{"listener.name.client.ssl.client.auth", "required"},
			{"listener.name.CLIENT.ssl.enabled.protocols", "TLSv1.3"},
			{"ssl.cipher.suites", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
			{"listener.name.internal.ssl.endpoint.identification.algorithm", ""},
		} {
			known, err := cfg.Set(kv[0], kv[1])
			require.True(t, known, kv[0])
			require.NoError(t, err, kv[0])
		}
		client, err := cfg.TLSConfig("CLIENT", false)
		require.NoError(t, err)
		require.Equal(t, ks, client.KeystoreFile)
		require.Equal(t, trust, client.TruststoreFile)
		require.Equal(t, ClientAuthRequired, client.ClientAuth)
		require.Equal(t, [2]uint16{tls.VersionTLS13, tls.VersionTLS13}, [2]uint16{client.MinVersion, client.MaxVersion})
		require.Equal(t, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, client.CipherSuites)
		require.True(t, client.VerifyHostname)

		internal, err := cfg.TLSConfig("internal", false)
		require.NoError(t, err)
		require.Equal(t, "INTERNAL", internal.Listener)
		require.Equal(t, ClientAuthNone, internal.ClientAuth)
		require.Equal(t, [2]uint16{tls.VersionTLS12, tls.VersionTLS13}, [2]uint16{internal.MinVersion, internal.MaxVersion})
		require.False(t, internal.VerifyHostname)

		// SASL_SSL listeners take ssl.client.auth from their own
		// key only (KIP-684).
		_, err = cfg.Set("ssl.client.auth", "requested")
		require.NoError(t, err)
		for _, tc := range []struct {
			listener string
			saslSSL  bool
			want     ClientAuth
		}{
			{"CLIENT", false, ClientAuthRequired},
			{"CLIENT", true, ClientAuthRequired},
			{"INTERNAL", false, ClientAuthRequested},
			{"INTERNAL", true, ClientAuthNone},
		} {
			got, err := cfg.TLSConfig(tc.listener, tc.saslSSL)
			require.NoError(t, err)
			require.Equal(t, tc.want, got.ClientAuth, "%s saslSSL=%v", tc.listener, tc.saslSSL)
		}

		// Other listener.name. keys are not the TLS configuration's.
		known, err := cfg.Set("listener.name.client.sasl.enabled.mechanisms", "PLAIN")
		require.NoError(t, err)
		require.True(t, known)
		mechs, ok := cfg.listenerValue("CLIENT", "sasl.enabled.mechanisms")
		require.True(t, ok)
		require.Equal(t, "PLAIN", mechs)
		known, err = cfg.Set("listener.name.client.no.such.key", "x")
		require.NoError(t, err)
		require.False(t, known)
	})

	t.Run("bad values", func(t *testing.T) {
		for _, tc := range []struct{ key, value, err string }{
			{"ssl.client.auth", "sometimes", `unknown ssl.client.auth "sometimes": want none, requested or required`},
			{"listener.name.client.ssl.client.auth", "maybe", `listener.name.client.ssl.client.auth="maybe"`},
			{"ssl.keystore.type", "JKS", "only PEM keystores are supported, not JKS"},
			{"ssl.enabled.protocols", "TLSv1.1,TLSv1.2", "TLSv1.1 is not allowed: TLS 1.2 is the oldest protocol"},
			{"ssl.cipher.suites", "TLS_RSA_WITH_RC4_128_SHA", "cipher suite TLS_RSA_WITH_RC4_128_SHA is insecure"},
			{"ssl.endpoint.identification.algorithm", "dns", `unknown algorithm "dns"`},
		} {
			cfg := DefaultConfig()
			known, err := cfg.Set(tc.key, tc.value)
			require.True(t, known, tc.key)
			require.ErrorIs(t, err, ErrInvalidConfig, tc.key)
			require.ErrorContains(t, err, tc.err)
		}
	})

	t.Run("bad combinations and files", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			keys [][2]string
			err  string
		}{
			{"missing keystore", [][2]string{{"ssl.keystore.location", missing}}, "listener SSL: ssl.keystore.location: open " + missing + ": no such file or directory"},
			{"missing override", [][2]string{{"ssl.keystore.location", ks}, {"listener.name.ssl.ssl.truststore.location", missing}},
				"listener.name.ssl.ssl.truststore.location: open " + missing},
			{"key not the certificate's", [][2]string{{"ssl.certificate.location", crt}, {"ssl.key.location", wrongKey}}, "private key does not match public key"},
			{"certificate without key", [][2]string{{"ssl.certificate.location", crt}}, "ssl.certificate.location and ssl.key.location go together"},
			{"both forms", [][2]string{{"ssl.keystore.location", ks}, {"ssl.certificate.location", crt}, {"ssl.key.location", key}}, "not both"},
			{"client auth without trust store", [][2]string{{"ssl.keystore.location", ks}, {"ssl.client.auth", "required"}}, "ssl.client.auth=required needs ssl.truststore.location"},
			{"keystore password", [][2]string{{"ssl.keystore.location", ks}, {"ssl.keystore.password", "hunter2"}}, "a PEM keystore has no password"},
			{"password on a plain key", [][2]string{{"ssl.keystore.location", ks}, {"ssl.key.password", "hunter2"}}, "ssl.key.password is set but the key is not encrypted"},
			{"trust store not PEM", [][2]string{{"ssl.truststore.location", key}}, "ssl.truststore.location: " + key + ": no PEM CERTIFICATE block"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cfg := DefaultConfig()
				for _, kv := range tc.keys {
					_, err := cfg.Set(kv[0], kv[1])
					require.NoError(t, err)
				}
				tcfg, err := cfg.TLSConfig("SSL", false)
				if err == nil {
					n := NewNet(startLoop(t), NetConfig{}, slog.New(slog.DiscardHandler))
					t.Cleanup(n.Close)
					err = n.SetTLS("SSL", tcfg)
				}
				require.ErrorIs(t, err, ErrInvalidConfig)
				require.ErrorContains(t, err, tc.err)
				require.NotContains(t, err.Error(), "hunter2")
			})
		}
	})

	t.Run("listener without certificate or configuration", func(t *testing.T) {
		l := startLoop(t)
		n := newTLSNet(t, l, NetConfig{})
		require.NoError(t, n.SetTLS("CLIENT", TLSConfig{TruststoreFile: trust}))
		onLoop(t, l, func() {
			_, err := n.ListenTLS("127.0.0.1:0", "CLIENT", func(env.Conn) {})
			require.ErrorContains(t, err, "listener CLIENT accepts TLS but has no certificate")
			_, err = n.ListenTLS("127.0.0.1:0", "OTHER", func(env.Conn) {})
			require.ErrorContains(t, err, "listener OTHER has no TLS configuration")
		})
	})
}

// TestTLSPasswordsAreSensitive: DescribeConfigs hides the password keys'
// values (StaticConfig.Sensitive: Kafka's PASSWORD keys) and shows the
// others'.
func TestTLSPasswordsAreSensitive(t *testing.T) {
	cfg := DefaultConfig()
	_, err := cfg.Set("ssl.key.password", "hunter2")
	require.NoError(t, err)
	_, err = cfg.Set("ssl.keystore.location", "/etc/strata/ks.pem")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, sc := range cfg.brokerStaticConfigs() {
		if !strings.HasPrefix(sc.Name, "ssl.") {
			continue
		}
		seen[sc.Name] = sc.Sensitive
	}
	require.Equal(t, map[string]bool{
		"ssl.keystore.type": false, "ssl.keystore.location": false, "ssl.keystore.password": true,
		"ssl.key.password": true, "ssl.certificate.location": false, "ssl.key.location": false,
		"ssl.principal.mapping.rules": false,
		"ssl.truststore.type":         false, "ssl.truststore.location": false, "ssl.truststore.password": true,
		"ssl.keystore.key": true, "ssl.keystore.certificate.chain": true, "ssl.truststore.certificates": true,
		"ssl.client.auth": false, "ssl.enabled.protocols": false, "ssl.cipher.suites": false,
		"ssl.endpoint.identification.algorithm": false, "ssl.allow.dn.changes": false, "ssl.allow.san.changes": false,
	}, seen)
}

// TestTLSOpenSSLKeys reads keys OpenSSL 3.0 encrypted (testdata/tls,
// password s3cret; a throw-away self-signed certificate and key made for
// these tests):
//
//	openssl ecparam -name prime256v1 -genkey -noout -out ec.key
//	openssl req -new -x509 -key ec.key -subj /CN=openssl-pem -days 36500 -out cert.pem
//	openssl pkcs8 -topk8 -v2 aes-256-cbc -in ec.key -passout pass:s3cret -out key-aes256-sha256.pem
//	openssl pkcs8 -topk8 -v2 aes-128-cbc -v2prf hmacWithSHA1 -in ec.key -passout pass:s3cret -out key-aes128-sha1.pem
//	openssl pkcs8 -topk8 -v1 PBE-SHA1-3DES -in ec.key -passout pass:s3cret -out key-pbes1.pem
//	openssl ec -in ec.key -aes256 -passout pass:s3cret -out key-legacy.pem
func TestTLSOpenSSLKeys(t *testing.T) {
	certPEM, err := os.ReadFile("testdata/tls/cert.pem")
	require.NoError(t, err)
	for _, tc := range []struct{ file, err string }{
		{"key-aes256-sha256.pem", ""},
		{"key-aes128-sha1.pem", ""},
		{"key-pbes1.pem", "not PBES2: re-encrypt it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`"},
		{"key-legacy.pem", "encrypted the legacy OpenSSL way"},
	} {
		keyPEM, err := os.ReadFile(filepath.Join("testdata/tls", tc.file))
		require.NoError(t, err)
		cert, err := keyPair(certPEM, keyPEM, "s3cret")
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.file)
			continue
		}
		require.NoError(t, err, tc.file)
		require.Equal(t, "openssl-pem", cert.Leaf.Subject.CommonName)
		_, err = keyPair(certPEM, keyPEM, "wrong")
		require.ErrorIs(t, err, errBadKeyPassword, tc.file)
	}
}

// TestTLSSessionResumption: a listener's connections share session
// ticket keys, so a client resumes its session on its next connection
// (a reconnecting client skips the certificate exchange).
func TestTLSSessionResumption(t *testing.T) {
	ca := newTestCA(t, "ca")
	l := startLoop(t)
	n := newTLSNet(t, l, NetConfig{})
	require.NoError(t, n.SetTLS("SSL", serverTLS(t, ca, ClientAuthNone)))
	ln, _ := tlsEcho(t, n, l, "SSL")
	cache := tls.NewLRUClientSessionCache(4)
	var resumed []bool
	for range 2 {
		c := tls.Client(dialRaw(t, ln.Addr()), &tls.Config{RootCAs: pool(ca), ServerName: "127.0.0.1", ClientSessionCache: cache})
		require.NoError(t, c.Handshake())
		requireEcho(t, c, "x") // reads the session ticket too
		resumed = append(resumed, c.ConnectionState().DidResume)
	}
	require.Equal(t, []bool{false, true}, resumed)
}

// TestTLSResumptionAfterTrustStoreReload: a client whose CA a reload
// took out of the trust store cannot come back by resuming a session made
// before (crypto/tls checks a resumed session's client certificate
// against the ClientCAs of the handshake's config, the reloaded one).
func TestTLSResumptionAfterTrustStoreReload(t *testing.T) {
	ca, other := newTestCA(t, "ca"), newTestCA(t, "other-ca")
	l := startLoop(t)
	n := newTLSNet(t, l, NetConfig{})
	cfg := serverTLS(t, ca, ClientAuthRequired)
	cfg.ReloadInterval = 10 * time.Millisecond
	require.NoError(t, n.SetTLS("SSL", cfg))
	ln, accepted := tlsEcho(t, n, l, "SSL")
	cache := tls.NewLRUClientSessionCache(4)
	alice := ca.keyPair(t, "alice")
	connect := func() (*tls.Conn, error) {
		c := tls.Client(dialRaw(t, ln.Addr()), &tls.Config{
			RootCAs: pool(ca), ServerName: "127.0.0.1", ClientSessionCache: cache,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return alice, nil },
		})
		return c, c.Handshake()
	}
	c, err := connect()
	require.NoError(t, err)
	requireEcho(t, c, "x")
	c, err = connect()
	require.NoError(t, err)
	requireEcho(t, c, "x")
	require.True(t, c.ConnectionState().DidResume)
	require.Equal(t, "alice", waitFor(t, accepted, "accept").(env.TLSConn).PeerCertificate().Subject.CommonName)
	require.Equal(t, "alice", waitFor(t, accepted, "accept").(env.TLSConn).PeerCertificate().Subject.CommonName)

	writeTemp(t, filepath.Dir(cfg.TruststoreFile), filepath.Base(cfg.TruststoreFile), other.pem)
	time.Sleep(20 * time.Millisecond)
	c, err = connect()
	requireRefused(t, c, err)
	require.Empty(t, accepted)
}

// TestTLSSetTLSAgain: registering a listener's configuration again
// applies to the handshakes that follow on the running listener.
func TestTLSSetTLSAgain(t *testing.T) {
	ca := newTestCA(t, "ca")
	l := startLoop(t)
	n := newTLSNet(t, l, NetConfig{})
	require.NoError(t, n.SetTLS("SSL", serverTLS(t, ca, ClientAuthNone)))
	ln, _ := tlsEcho(t, n, l, "SSL")
	c, err := rawTLS(t, ln.Addr(), pool(ca), nil)
	require.NoError(t, err)
	requireEcho(t, c, "before")

	require.NoError(t, n.SetTLS("ssl", serverTLS(t, ca, ClientAuthRequired)))
	c, err = rawTLS(t, ln.Addr(), pool(ca), nil)
	requireRefused(t, c, err)
	c, err = rawTLS(t, ln.Addr(), pool(ca), ca.keyPair(t, "alice"))
	require.NoError(t, err)
	requireEcho(t, c, "after")
}

// TestTLSHandshakeBound: at MaxTLSHandshakes handshakes in progress a
// TLS listener accepts no more (the kernel's backlog holds them), so
// clients that never finish one hold at most that many; once one ends,
// the next client is served.
func TestTLSHandshakeBound(t *testing.T) {
	ca := newTestCA(t, "ca")
	l := startLoop(t)
	n := newTLSNet(t, l, NetConfig{MaxTLSHandshakes: 2, TLSHandshakeTimeout: time.Minute})
	require.NoError(t, n.SetTLS("SSL", serverTLS(t, ca, ClientAuthNone)))
	ln, _ := tlsEcho(t, n, l, "SSL")
	slots := ln.(*tcpListener).handshakes
	silent := []net.Conn{dialRaw(t, ln.Addr()), dialRaw(t, ln.Addr())}
	require.Eventually(t, func() bool { return len(slots) == 2 }, testTimeout, time.Millisecond)

	blocked := dialRawWithin(t, ln.Addr(), 300*time.Millisecond)
	c := tls.Client(blocked, &tls.Config{RootCAs: pool(ca), ServerName: "127.0.0.1"})
	require.ErrorIs(t, c.Handshake(), os.ErrDeadlineExceeded, "a handshake past the bound was served")
	require.NoError(t, blocked.Close()) // the server finds it closed once it takes it

	require.NoError(t, silent[0].Close())
	c, err := rawTLS(t, ln.Addr(), pool(ca), nil)
	require.NoError(t, err)
	requireEcho(t, c, "served")
}

// TestTLSInlinePEM: Kafka's ssl.keystore.key, ssl.keystore.certificate.chain
// and ssl.truststore.certificates carry the PEM text in the configuration
// itself, on one line of a properties file (line breaks as spaces).
func TestTLSInlinePEM(t *testing.T) {
	ca := newTestCA(t, "ca")
	certPEM, keyPEM := ca.issue(t, "inline", "127.0.0.1")
	oneLine := func(b []byte) string { return strings.Join(strings.Fields(string(b)), " ") }
	cfg := DefaultConfig()
	for _, kv := range [][2]string{
		{"listener.name.ssl.ssl.keystore.key", oneLine(keyPEM)},
		{"listener.name.ssl.ssl.keystore.certificate.chain", oneLine(certPEM)},
		{"ssl.truststore.certificates", oneLine(ca.pem)},
		{"ssl.client.auth", "required"},
	} {
		_, err := cfg.Set(kv[0], kv[1])
		require.NoError(t, err)
	}
	tcfg, err := cfg.TLSConfig("SSL", false)
	require.NoError(t, err)
	l := startLoop(t)
	n := newTLSNet(t, l, NetConfig{})
	require.NoError(t, n.SetTLS("SSL", tcfg))
	ln, accepted := tlsEcho(t, n, l, "SSL")
	c, err := rawTLS(t, ln.Addr(), pool(ca), ca.keyPair(t, "alice"))
	require.NoError(t, err)
	requireEcho(t, c, "inline")
	require.Equal(t, "inline", c.ConnectionState().PeerCertificates[0].Subject.CommonName)
	require.Equal(t, "alice", waitFor(t, accepted, "accept").(env.TLSConn).PeerCertificate().Subject.CommonName)

	// The key without its chain, or beside a keystore file, is refused,
	// and the error does not show the key.
	for _, extra := range [][2]string{{"ssl.keystore.certificate.chain", ""}, {"ssl.keystore.location", "/etc/ks.pem"}} {
		bad := DefaultConfig()
		_, err := bad.Set("ssl.keystore.key", oneLine(keyPEM))
		require.NoError(t, err)
		_, err = bad.Set(extra[0], extra[1])
		require.NoError(t, err)
		_, err = bad.TLSConfig("SSL", false)
		require.ErrorIs(t, err, ErrInvalidConfig)
		require.ErrorContains(t, err, "ssl.keystore.key")
		require.NotContains(t, err.Error(), "PRIVATE KEY")
	}
}

// TestTLSConfigHidesSecrets: a TLSConfig printed or logged shows no
// password or inline key.
func TestTLSConfigHidesSecrets(t *testing.T) {
	c := TLSConfig{Listener: "SSL", KeystoreFile: "/etc/ks.pem", KeyPassword: "hunter2", KeystoreKey: "-----BEGIN PRIVATE KEY----- c2VjcmV0 -----END PRIVATE KEY-----"}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("tls", "cfg", c)
	for _, out := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), logged.String()} {
		require.Contains(t, out, "/etc/ks.pem")
		require.NotContains(t, out, "hunter2")
		require.NotContains(t, out, "c2VjcmV0")
	}
}
