package node

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// TLS on the node's listeners and dials (issue 24). A listener's TLS
// configuration is Kafka's ssl.* keys resolved for its name
// (Config.TLSConfig, tlskeys.go), given to the Net with Net.SetTLS before
// the listener starts. Its certificate and trust store come from PEM files
// and are re-read when the files change: the handshakes that follow use
// the new ones, established connections keep theirs.
//
// Reload: every handshake (GetConfigForClient on a listener, each DialTLS)
// asks the listener's tlsStore for its material; at most once per
// TLSConfig.ReloadInterval the store stats its files, and when the inode,
// change or modification time or size of one changed it reads them all
// again. New
// files that do not load (a key that does not match the certificate, a
// half-written file) are refused with an ERROR log line and the previous
// certificate and trust store stay, as Kafka refuses a bad dynamic
// keystore update; they are tried again when the files change again. No
// goroutine watches: a listener no one connects to reads nothing.

// DefaultTLSReloadInterval is how often at most a listener's certificate
// and trust store files are checked for a change.
const DefaultTLSReloadInterval = 5 * time.Second

// DefaultTLSHandshakeTimeout bounds a TLS handshake, accepted or dialed
// (net/http's TLSHandshakeTimeout). An accepted connection that has not
// completed its handshake by then is closed; until then it holds its
// goroutines and socket only, and counts toward no connection limit but
// the listener's bound on handshakes in progress (the core sees it only
// once the handshake completed).
const DefaultTLSHandshakeTimeout = 10 * time.Second

// DefaultMaxTLSHandshakes bounds the handshakes in progress on one TLS
// listener. Kafka counts a connection toward max.connections from its
// accept; here the core counts it once its handshake completed, so this
// bounds what clients that never finish one can hold: at most this many
// goroutine pairs and sockets, each for at most the handshake timeout.
const DefaultMaxTLSHandshakes = 1024

// ClientAuth is ssl.client.auth: whether a TLS listener asks its clients
// for a certificate.
type ClientAuth int

const (
	// ClientAuthNone asks for none (Kafka's default).
	ClientAuthNone ClientAuth = iota
	// ClientAuthRequested asks for one and verifies it if given; a
	// client without one is still served.
	ClientAuthRequested
	// ClientAuthRequired refuses a client without a certificate that the
	// trust store verifies.
	ClientAuthRequired
)

// String is the value of ssl.client.auth.
func (a ClientAuth) String() string {
	switch a {
	case ClientAuthRequested:
		return "requested"
	case ClientAuthRequired:
		return "required"
	}
	return "none"
}

func (a ClientAuth) tlsType() tls.ClientAuthType {
	switch a {
	case ClientAuthRequested:
		return tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		return tls.RequireAndVerifyClientCert
	}
	return tls.NoClientCert
}

// TLSConfig is one listener's TLS configuration: Kafka's ssl.* keys
// (with their listener.name.<name>. overrides) as Config.TLSConfig
// resolves them. The listener presents its certificate when it accepts
// and when it dials (mutual TLS between nodes), and verifies the peer
// by its trust store.
type TLSConfig struct {
	// Listener is the listener's name (for errors and logs).
	Listener string
	// KeystoreFile is ssl.keystore.location with ssl.keystore.type=PEM:
	// one PEM file with the private key and the certificate chain, leaf
	// first.
	KeystoreFile string
	// CertFile and KeyFile are Strata's ssl.certificate.location and
	// ssl.key.location: the chain and the key in two PEM files, instead
	// of KeystoreFile.
	CertFile, KeyFile string
	// KeyPassword is ssl.key.password: it decrypts a private key in
	// encrypted PKCS#8 ("ENCRYPTED PRIVATE KEY", PBES2 with PBKDF2 and
	// AES-CBC, what `openssl pkcs8 -topk8` writes). Never logged.
	KeyPassword string
	// KeystoreKey and KeystoreChain are Kafka's ssl.keystore.key and
	// ssl.keystore.certificate.chain: the private key and the
	// certificate chain as PEM text in the configuration itself, instead
	// of a file (line breaks may be spaces). Never logged.
	KeystoreKey, KeystoreChain string
	// TruststoreCertificates is ssl.truststore.certificates: the trust
	// store as PEM text, instead of TruststoreFile.
	TruststoreCertificates string
	// TruststoreFile is ssl.truststore.location with
	// ssl.truststore.type=PEM: the CA certificates peers are verified
	// by. Empty means the system's roots for servers this node dials,
	// and is refused with ClientAuth other than none.
	TruststoreFile string
	// ClientAuth is ssl.client.auth.
	ClientAuth ClientAuth
	// MinVersion and MaxVersion are ssl.enabled.protocols (TLS 1.2 and
	// 1.3 by default; nothing older is allowed). Zero means those
	// defaults.
	MinVersion, MaxVersion uint16
	// CipherSuites is ssl.cipher.suites (TLS 1.2's; TLS 1.3's are not
	// configurable in Go); empty means Go's defaults.
	CipherSuites []uint16
	// VerifyHostname is ssl.endpoint.identification.algorithm=https
	// (the default): a dialed server's certificate must name the host
	// dialed. False (the key empty) still verifies the chain.
	VerifyHostname bool
	// AllowDNChanges and AllowSANChanges are ssl.allow.dn.changes and
	// ssl.allow.san.changes: whether a reloaded certificate may have
	// another subject, or drop a subject alternative name.
	AllowDNChanges, AllowSANChanges bool
	// ReloadInterval is how often at most the files are checked for a
	// change; zero means DefaultTLSReloadInterval.
	ReloadInterval time.Duration

	// keys names the key each setting came from (a listener's override
	// or the plain key), for errors; a setting missing from it is named
	// by its plain key.
	keys map[string]string
}

// String describes the configuration without its secrets (the key
// password and inline key are shown as set or not), so that a TLSConfig
// printed or logged by mistake leaks nothing.
func (c TLSConfig) String() string {
	secret := func(v string) string {
		if v == "" {
			return ""
		}
		return "(hidden)"
	}
	return fmt.Sprintf("TLSConfig{Listener:%s KeystoreFile:%q CertFile:%q KeyFile:%q KeyPassword:%s KeystoreKey:%s TruststoreFile:%q ClientAuth:%s VerifyHostname:%v}",
		c.Listener, c.KeystoreFile, c.CertFile, c.KeyFile, secret(c.KeyPassword), secret(c.KeystoreKey), c.TruststoreFile, c.ClientAuth, c.VerifyHostname)
}

// LogValue implements slog.LogValuer with String.
func (c TLSConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// key is the name of the key that set the setting plain, for errors.
func (c TLSConfig) key(plain string) string {
	if k, ok := c.keys[plain]; ok {
		return k
	}
	return plain
}

// HasCertificate reports whether the configuration names a certificate,
// which a listener needs to accept TLS connections.
func (c TLSConfig) HasCertificate() bool {
	return c.KeystoreFile != "" || c.CertFile != "" || c.KeystoreChain != ""
}

// check refuses combinations of settings that cannot work, naming the
// keys.
func (c TLSConfig) check() error {
	inline := c.KeystoreKey != "" || c.KeystoreChain != ""
	switch {
	case c.KeystoreFile != "" && (c.CertFile != "" || c.KeyFile != ""):
		return c.invalid(KeySSLKeystoreLocation, "set either it or "+KeySSLCertificateLocation+" and "+KeySSLKeyLocation+", not both")
	case (c.CertFile == "") != (c.KeyFile == ""):
		return c.invalid(KeySSLCertificateLocation, KeySSLCertificateLocation+" and "+KeySSLKeyLocation+" go together")
	case inline && (c.KeystoreKey == "" || c.KeystoreChain == ""):
		return c.invalid(KeySSLKeystoreKey, KeySSLKeystoreKey+" and "+KeySSLKeystoreCertificateChain+" go together")
	case inline && (c.KeystoreFile != "" || c.CertFile != ""):
		return c.invalid(KeySSLKeystoreKey, "set either it or a keystore file, not both")
	case c.TruststoreCertificates != "" && c.TruststoreFile != "":
		return c.invalid(KeySSLTruststoreCertificates, "set either it or "+KeySSLTruststoreLocation+", not both")
	case c.KeyPassword != "" && !c.HasCertificate():
		return c.invalid(KeySSLKeyPassword, "set, but there is no key to decrypt")
	case c.ClientAuth != ClientAuthNone && c.TruststoreFile == "" && c.TruststoreCertificates == "":
		return c.invalid(KeySSLClientAuth, "ssl.client.auth="+c.ClientAuth.String()+" needs "+KeySSLTruststoreLocation+
			" (the CAs client certificates are verified by)")
	case c.MinVersion != 0 && c.MinVersion < tls.VersionTLS12:
		return c.invalid(KeySSLEnabledProtocols, "TLS 1.2 is the oldest protocol allowed")
	}
	return nil
}

func (c TLSConfig) invalid(plain, why string) error {
	return fmt.Errorf("%w: listener %s: %s: %s", ErrInvalidConfig, c.Listener, c.key(plain), why)
}

// tlsMaterial is what a listener's files hold: its certificate (nil
// without a keystore) and its trust store (nil: the system's roots).
type tlsMaterial struct {
	cert  *tls.Certificate
	roots *x509.CertPool
}

// loadTLSMaterial reads and checks the files of c.
func loadTLSMaterial(c TLSConfig) (tlsMaterial, error) {
	var m tlsMaterial
	switch {
	case c.KeystoreFile != "":
		data, err := os.ReadFile(c.KeystoreFile)
		if err != nil {
			return m, c.fileErr(KeySSLKeystoreLocation, err)
		}
		cert, err := keyPair(data, data, c.KeyPassword)
		if err != nil {
			return m, c.fileErr(KeySSLKeystoreLocation, fmt.Errorf("%s: %w", c.KeystoreFile, err))
		}
		m.cert = cert
	case c.CertFile != "":
		certPEM, err := os.ReadFile(c.CertFile)
		if err != nil {
			return m, c.fileErr(KeySSLCertificateLocation, err)
		}
		keyPEM, err := os.ReadFile(c.KeyFile)
		if err != nil {
			return m, c.fileErr(KeySSLKeyLocation, err)
		}
		cert, err := keyPair(certPEM, keyPEM, c.KeyPassword)
		if err != nil {
			return m, c.fileErr(KeySSLCertificateLocation, fmt.Errorf("%s and %s: %w", c.CertFile, c.KeyFile, err))
		}
		m.cert = cert
	case c.KeystoreChain != "":
		cert, err := keyPair(inlinePEM(c.KeystoreChain), inlinePEM(c.KeystoreKey), c.KeyPassword)
		if err != nil {
			return m, c.fileErr(KeySSLKeystoreCertificateChain, err)
		}
		m.cert = cert
	}
	if c.TruststoreCertificates != "" {
		pool, err := certPool(inlinePEM(c.TruststoreCertificates))
		if err != nil {
			return m, c.fileErr(KeySSLTruststoreCertificates, err)
		}
		m.roots = pool
	}
	if c.TruststoreFile != "" {
		data, err := os.ReadFile(c.TruststoreFile)
		if err != nil {
			return m, c.fileErr(KeySSLTruststoreLocation, err)
		}
		pool, err := certPool(data)
		if err != nil {
			return m, c.fileErr(KeySSLTruststoreLocation, fmt.Errorf("%s: %w", c.TruststoreFile, err))
		}
		m.roots = pool
	}
	return m, nil
}

func (c TLSConfig) fileErr(plain string, err error) error {
	return fmt.Errorf("%w: listener %s: %s: %w", ErrInvalidConfig, c.Listener, c.key(plain), err)
}

// pemBlock is one PEM block in text whose line breaks may have become
// spaces (a properties value on one line).
var pemBlock = regexp.MustCompile(`(?s)-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END ([A-Z0-9 ]+)-----`)

// inlinePEM rewrites PEM text from a configuration value into what
// encoding/pem reads: each block's base64 on lines of its own, whatever
// white space separated it, as Kafka's PEM parser accepts it.
func inlinePEM(text string) []byte {
	var out []byte
	for _, m := range pemBlock.FindAllStringSubmatch(text, -1) {
		body := strings.Join(strings.Fields(m[2]), "")
		out = fmt.Appendf(out, "-----BEGIN %s-----\n", m[1])
		for len(body) > 64 {
			out = append(out, body[:64]+"\n"...)
			body = body[64:]
		}
		out = fmt.Appendf(out, "%s\n-----END %s-----\n", body, m[3])
	}
	return out
}

// keyPair parses the certificate chain in certPEM and the private key in
// keyPEM (one file may hold both) and checks that they match.
func keyPair(certPEM, keyPEM []byte, password string) (*tls.Certificate, error) {
	var chain, key []byte
	for rest := certPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			chain = append(chain, pem.EncodeToMemory(b)...)
		}
	}
	if chain == nil {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	for rest := keyPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		k, err := privateKeyPEM(b, password)
		if err != nil {
			return nil, err
		}
		if k != nil {
			if key != nil {
				return nil, errors.New("more than one private key")
			}
			key = k
		}
	}
	if key == nil {
		return nil, errors.New("no PEM private key block (PRIVATE KEY, EC PRIVATE KEY, RSA PRIVATE KEY or ENCRYPTED PRIVATE KEY)")
	}
	cert, err := tls.X509KeyPair(chain, key)
	if err != nil {
		return nil, err // "tls: private key does not match public key"
	}
	return &cert, nil
}

// privateKeyPEM returns the private key of block as an unencrypted PEM
// block, or nil for a block that holds no key.
func privateKeyPEM(b *pem.Block, password string) ([]byte, error) {
	switch b.Type {
	case "PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY":
		if _, ok := b.Headers["DEK-Info"]; ok {
			return nil, errors.New("the key is encrypted the legacy OpenSSL way (Proc-Type: 4,ENCRYPTED), which is not supported: " +
				"convert it to encrypted PKCS#8 with `openssl pkcs8 -topk8 -v2 aes-256-cbc`")
		}
		if password != "" {
			// Kafka reads a key with a password as encrypted PKCS#8
			// and fails on any other.
			return nil, errors.New(KeySSLKeyPassword + " is set but the key is not encrypted")
		}
		return pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: b.Bytes}), nil
	case "ENCRYPTED PRIVATE KEY":
		if password == "" {
			return nil, errors.New("the key is encrypted: set " + KeySSLKeyPassword)
		}
		der, err := decryptPKCS8(b.Bytes, []byte(password))
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	}
	return nil, nil
}

// certPool parses a PEM bundle of CA certificates.
func certPool(data []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", n+1, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return pool, nil
}

// tlsStore is one listener's TLS material, re-read when its files change
// (the reload rule above). Safe for concurrent use by handshakes.
type tlsStore struct {
	cfg TLSConfig
	log *slog.Logger

	// base is the tls.Config of every accepted connection: its
	// GetConfigForClient gives each handshake the current material,
	// and its session ticket keys, one set for the listener, let
	// clients resume sessions across connections.
	base *tls.Config

	mu      sync.Mutex
	mat     tlsMaterial
	server  *tls.Config // built from mat
	checked time.Time   // the last stat of the files
	tried   []fileStamp // the files' stamps when last read, loaded or not
}

// fileStamp is what says a file changed: its inode, change and
// modification times and size (or that it could not be stat'ed). A file
// replaced by a rename (what cert-manager and Kubernetes secrets do)
// has a new inode; one rewritten in place a new ctime, unless rewritten
// with the same size within the file system's timestamp granularity.
type fileStamp struct {
	ino          uint64
	mtime, ctime int64 // nanoseconds
	size         int64
	err          bool
}

// newTLSStore loads c's files; the error names the key whose file is
// missing or bad.
func newTLSStore(c TLSConfig, log *slog.Logger) (*tlsStore, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.ReloadInterval <= 0 {
		c.ReloadInterval = DefaultTLSReloadInterval
	}
	if c.MinVersion == 0 {
		c.MinVersion = tls.VersionTLS12
	}
	if c.MaxVersion == 0 {
		c.MaxVersion = tls.VersionTLS13
	}
	s := &tlsStore{cfg: c, log: log.With("listener", c.Listener)}
	s.tried = s.stamps()
	mat, err := loadTLSMaterial(c)
	if err != nil {
		return nil, err
	}
	s.install(mat)
	s.checked = time.Now()
	s.base = &tls.Config{
		MinVersion: c.MinVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			_, cfg := s.current()
			return cfg, nil
		},
	}
	return s, nil
}

// files are the files the material comes from.
func (s *tlsStore) files() []string {
	var out []string
	for _, f := range []string{s.cfg.KeystoreFile, s.cfg.CertFile, s.cfg.KeyFile, s.cfg.TruststoreFile} {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (s *tlsStore) stamps() []fileStamp {
	files := s.files()
	out := make([]fileStamp, len(files))
	for i, f := range files {
		var st unix.Stat_t
		if err := unix.Stat(f, &st); err != nil {
			out[i].err = true
			continue
		}
		out[i] = fileStamp{ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), size: st.Size}
	}
	return out
}

// install makes mat the material of the handshakes to come.
func (s *tlsStore) install(mat tlsMaterial) {
	s.mat = mat
	s.server = &tls.Config{
		ClientAuth:   s.cfg.ClientAuth.tlsType(),
		ClientCAs:    mat.roots,
		MinVersion:   s.cfg.MinVersion,
		MaxVersion:   s.cfg.MaxVersion,
		CipherSuites: s.cfg.CipherSuites,
		// A resumed session's client certificate is verified again
		// by these ClientCAs (crypto/tls since Go 1.25.7), so a CA a
		// reload took out lets no session made before back in.
	}
	if mat.cert != nil {
		s.server.Certificates = []tls.Certificate{*mat.cert}
	}
}

// current is the material for a handshake starting now, re-read first if
// the files changed since they were last read.
func (s *tlsStore) current() (tlsMaterial, *tls.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := time.Now(); now.Sub(s.checked) >= s.cfg.ReloadInterval {
		s.checked = now
		s.reload()
	}
	return s.mat, s.server
}

// reload re-reads the files if their stamps changed since last read.
func (s *tlsStore) reload() {
	st := s.stamps()
	if slices.Equal(st, s.tried) {
		return
	}
	s.tried = st
	mat, err := loadTLSMaterial(s.cfg)
	if err == nil {
		err = s.compatible(mat)
	}
	if err != nil {
		s.log.Error("TLS files changed but do not load; keeping the previous certificate and trust store", "err", err)
		return
	}
	s.install(mat)
	attrs := []any{"files", s.files()}
	if mat.cert != nil && mat.cert.Leaf != nil {
		attrs = append(attrs, "subject", mat.cert.Leaf.Subject.String(), "not_after", mat.cert.Leaf.NotAfter)
	}
	s.log.Info("reloaded TLS certificate and trust store", attrs...)
}

// compatible refuses a new certificate whose subject differs from the
// current one's (unless ssl.allow.dn.changes) or that drops one of its
// subject alternative names (unless ssl.allow.san.changes), as Kafka's
// dynamic keystore update does: a certificate for another host swapped
// in by mistake is refused rather than served.
func (s *tlsStore) compatible(mat tlsMaterial) error {
	if s.mat.cert == nil || mat.cert == nil {
		return nil
	}
	old, cur := s.mat.cert.Leaf, mat.cert.Leaf
	key := s.cfg.key(KeySSLKeystoreLocation)
	if s.cfg.KeystoreFile == "" {
		key = s.cfg.key(KeySSLCertificateLocation)
	}
	if !s.cfg.AllowDNChanges && !bytes.Equal(old.RawSubject, cur.RawSubject) && !strings.EqualFold(old.Subject.String(), cur.Subject.String()) {
		return fmt.Errorf("%s: the new certificate's subject %q is not the current one's, %q (set %s=true to allow it)",
			key, cur.Subject, old.Subject, KeySSLAllowDNChanges)
	}
	if !s.cfg.AllowSANChanges {
		have := sans(cur)
		for _, n := range sans(old) {
			if !slices.Contains(have, n) {
				return fmt.Errorf("%s: the new certificate lacks the subject alternative name %s of the current one (set %s=true to allow it)",
					key, n, KeySSLAllowSANChanges)
			}
		}
	}
	return nil
}

// sans lists a certificate's subject alternative names, each with its
// kind.
func sans(c *x509.Certificate) []string {
	var out []string
	for _, n := range c.DNSNames {
		out = append(out, "DNS:"+n)
	}
	for _, ip := range c.IPAddresses {
		out = append(out, "IP:"+ip.String())
	}
	for _, e := range c.EmailAddresses {
		out = append(out, "email:"+e)
	}
	for _, u := range c.URIs {
		out = append(out, "URI:"+u.String())
	}
	return out
}

// clientConfig is the tls.Config of a connection dialed to host: the
// server is verified by the trust store (and its name, with
// VerifyHostname); the listener's certificate is presented if the server
// asks for one its CAs issued.
func (s *tlsStore) clientConfig(host string) *tls.Config {
	mat, _ := s.current()
	cfg := &tls.Config{
		RootCAs:      mat.roots,
		MinVersion:   s.cfg.MinVersion,
		MaxVersion:   s.cfg.MaxVersion,
		CipherSuites: s.cfg.CipherSuites,
		ServerName:   host,
	}
	if mat.cert != nil {
		cfg.Certificates = []tls.Certificate{*mat.cert}
	}
	if !s.cfg.VerifyHostname {
		// Kafka's ssl.endpoint.identification.algorithm="": the chain
		// is verified, the name is not. crypto/tls verifies both or
		// neither, so the chain is verified here.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, mat.roots)
		}
	}
	return cfg
}

// verifyChain verifies a server's chain (leaf first) by roots (nil: the
// system's), without its name.
func verifyChain(certs []*x509.Certificate, roots *x509.CertPool) error {
	if len(certs) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := certs[0].Verify(opts)
	return err
}

// peerCertificate is the verified leaf of a completed handshake, or nil.
// Every certificate a client dialing with VerifyHostname false accepts
// was verified by verifyChain, so there its leaf counts as verified.
func peerCertificate(cs tls.ConnectionState, dialed bool) *x509.Certificate {
	if len(cs.VerifiedChains) > 0 && len(cs.VerifiedChains[0]) > 0 {
		return cs.VerifiedChains[0][0]
	}
	if dialed && len(cs.PeerCertificates) > 0 {
		return cs.PeerCertificates[0]
	}
	return nil
}
