package cli

// --command-config: Kafka's client properties file, read as Kafka's tools
// read it (kafka-topics.sh --command-config, kafka-console-producer.sh
// --producer.config), so that every strata client command reaches a
// cluster secured with SASL, TLS or mTLS.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/node"
)

// CommandConfigFlag registers --command-config on fs.
func CommandConfigFlag(fs *flag.FlagSet) *string {
	return fs.String("command-config", "", "a Kafka client properties `file` (security.protocol, sasl.mechanism, sasl.jaas.config,\n"+
		"ssl.truststore.location, ssl.keystore.location, PEM) for a secured cluster")
}

// ClientSecurity is what a client properties file says about reaching
// the brokers: the kgo options for its TLS and SASL.
type ClientSecurity struct {
	// Protocol is security.protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or
	// SASL_SSL.
	Protocol string
	// TLS is the TLS configuration of SSL and SASL_SSL, nil otherwise.
	TLS *tls.Config
	// SASL is the mechanism of SASL_PLAINTEXT and SASL_SSL, nil otherwise.
	SASL sasl.Mechanism
}

// Opts are the kgo options that make a client use s.
func (s ClientSecurity) Opts() []kgo.Opt {
	var opts []kgo.Opt
	if s.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(s.TLS))
	}
	if s.SASL != nil {
		opts = append(opts, kgo.SASL(s.SASL))
	}
	return opts
}

// LoadClientSecurity reads the client properties file at path (no path:
// PLAINTEXT) and returns its kgo options.
func LoadClientSecurity(path string) ([]kgo.Opt, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	defer f.Close()
	props, err := config.ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	values := map[string]string{}
	for _, p := range props {
		values[p.Key] = p.Value
	}
	s, err := ParseClientSecurity(values)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	return s.Opts(), nil
}

// ParseClientSecurity reads Kafka's client security properties. Keys it
// does not know (client.id, request.timeout.ms, ...) are ignored, as
// Kafka's tools warn and go on; a known key with a value it cannot use
// is an error.
func ParseClientSecurity(values map[string]string) (ClientSecurity, error) {
	s := ClientSecurity{Protocol: strings.ToUpper(values["security.protocol"])}
	if s.Protocol == "" {
		s.Protocol = "PLAINTEXT"
	}
	var useTLS, useSASL bool
	switch s.Protocol {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return s, fmt.Errorf("security.protocol=%s: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", values["security.protocol"])
	}
	var err error
	if useTLS {
		if s.TLS, err = clientTLS(values); err != nil {
			return s, err
		}
	}
	if useSASL {
		if s.SASL, err = clientSASL(values); err != nil {
			return s, err
		}
	}
	return s, nil
}

// clientTLS is the TLS configuration of the ssl.* client keys; stores are
// PEM files (ssl.truststore.type=PEM, ssl.keystore.type=PEM), or inline
// PEM (ssl.truststore.certificates, ssl.keystore.certificate.chain with
// ssl.keystore.key).
func clientTLS(values map[string]string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	for _, key := range []string{node.KeySSLTruststoreType, node.KeySSLKeystoreType} {
		if t := values[key]; t != "" && !strings.EqualFold(t, "PEM") {
			return nil, fmt.Errorf("%s=%s: only PEM stores are supported", key, t)
		}
	}
	if values[node.KeySSLKeyPassword] != "" || values[node.KeySSLKeystorePassword] != "" {
		return nil, errors.New("ssl.key.password and ssl.keystore.password: encrypted client keys are not supported, give an unencrypted PEM key")
	}
	trust, err := pemValue(values, node.KeySSLTruststoreCertificates, node.KeySSLTruststoreLocation)
	if err != nil {
		return nil, err
	}
	if trust != nil {
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(trust) {
			return nil, errors.New("ssl.truststore: no PEM certificate in it")
		}
	}
	keystore, err := pemValue(values, node.KeySSLKeystoreCertificateChain, node.KeySSLKeystoreLocation)
	if err != nil {
		return nil, err
	}
	if key := values[node.KeySSLKeystoreKey]; key != "" {
		keystore = append(keystore, '\n')
		keystore = append(keystore, key...)
	}
	if keystore != nil {
		cert, err := keyPair(keystore)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	// ssl.endpoint.identification.algorithm= (empty) turns off host name
	// checks, as in Kafka; its default is https.
	if alg, set := values[node.KeySSLEndpointIdentAlg]; set && alg == "" {
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = verifyChainOnly(cfg.RootCAs)
	}
	return cfg, nil
}

// pemValue is the PEM of an inline key or, failing that, of the file a
// location key names; nil when neither is set.
func pemValue(values map[string]string, inline, location string) ([]byte, error) {
	if v := values[inline]; v != "" {
		return []byte(v), nil
	}
	path := values[location]
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", location, err)
	}
	return data, nil
}

// keyPair splits a PEM keystore (the key and the certificate chain, in
// any order) into a certificate.
func keyPair(data []byte) (tls.Certificate, error) {
	var certs, keys []byte
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if strings.Contains(b.Type, "PRIVATE KEY") {
			keys = append(keys, pem.EncodeToMemory(b)...)
		} else {
			certs = append(certs, pem.EncodeToMemory(b)...)
		}
	}
	if len(certs) == 0 || len(keys) == 0 {
		return tls.Certificate{}, errors.New("want a PEM certificate and a PEM private key")
	}
	return tls.X509KeyPair(certs, keys)
}

// verifyChainOnly checks the server's chain against roots without its
// host name.
func verifyChainOnly(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}

// clientSASL is the mechanism of sasl.mechanism with the username and
// password of sasl.jaas.config.
func clientSASL(values map[string]string) (sasl.Mechanism, error) {
	mechanism := values["sasl.mechanism"]
	if mechanism == "" {
		return nil, errors.New("sasl.mechanism is required with a SASL security.protocol (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
	}
	jaas := values[node.KeySASLJAASConfig]
	if jaas == "" {
		return nil, errors.New("sasl.jaas.config is required with a SASL security.protocol")
	}
	module, opts, err := ParseJAAS(jaas)
	if err != nil {
		return nil, fmt.Errorf("sasl.jaas.config: %w", err)
	}
	user, pass := opts["username"], opts["password"]
	if user == "" {
		return nil, errors.New("sasl.jaas.config: username is missing")
	}
	want := "org.apache.kafka.common.security.scram.ScramLoginModule"
	if mechanism == "PLAIN" {
		want = "org.apache.kafka.common.security.plain.PlainLoginModule"
	}
	if module != want {
		return nil, fmt.Errorf("sasl.jaas.config: sasl.mechanism=%s needs %s, got %s", mechanism, want, module)
	}
	switch mechanism {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("sasl.mechanism=%s: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mechanism)
}

// ParseJAAS reads one JAAS login module entry as Kafka's sasl.jaas.config
// holds it:
//
//	org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cret";
//
// and returns the module's class name and its options. Values may be
// quoted (with \" and \\ escapes) or bare.
func ParseJAAS(s string) (module string, opts map[string]string, err error) {
	s = strings.TrimSpace(s)
	if !strings.HasSuffix(s, ";") {
		return "", nil, errors.New("a login module entry ends with ';'")
	}
	s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	fields := strings.Fields(s)
	if len(fields) < 2 {
		return "", nil, errors.New("want '<LoginModule> required key=\"value\" ...;'")
	}
	module, flagWord := fields[0], fields[1]
	switch flagWord {
	case "required", "requisite", "sufficient", "optional":
	default:
		return "", nil, fmt.Errorf("control flag %q: want required, requisite, sufficient or optional", flagWord)
	}
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s[len(module):]), flagWord))
	opts = map[string]string{}
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return "", nil, fmt.Errorf("option %q: want key=value", rest)
		}
		key := strings.TrimSpace(rest[:eq])
		rest = strings.TrimLeft(rest[eq+1:], " \t")
		var value string
		if strings.HasPrefix(rest, `"`) {
			var b strings.Builder
			i, closed := 1, false
			for ; i < len(rest); i++ {
				c := rest[i]
				if c == '\\' && i+1 < len(rest) {
					i++
					b.WriteByte(rest[i])
					continue
				}
				if c == '"' {
					closed = true
					break
				}
				b.WriteByte(c)
			}
			if !closed {
				return "", nil, fmt.Errorf("option %s: unterminated quote", key)
			}
			value, rest = b.String(), rest[i+1:]
		} else {
			end := strings.IndexAny(rest, " \t\n")
			if end < 0 {
				end = len(rest)
			}
			value, rest = rest[:end], rest[end:]
		}
		opts[key] = value
		rest = strings.TrimSpace(rest)
	}
	return module, opts, nil
}
