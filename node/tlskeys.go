package node

import (
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/config"
)

// Kafka's ssl.* keys (and Strata's ssl.certificate.location and
// ssl.key.location), one row each in nodeKeys. Each may also be set for
// one listener with Kafka's prefix, listener.name.<listener name in lower
// case>.ssl.keystore.location=..., which overrides the plain key for that
// listener, key by key, as Kafka's valuesWithPrefixOverride does.
// Config.TLSConfig resolves them for a listener name.
const (
	KeySSLKeystoreType             = "ssl.keystore.type"
	KeySSLKeystoreLocation         = "ssl.keystore.location"
	KeySSLKeystorePassword         = "ssl.keystore.password"
	KeySSLKeyPassword              = "ssl.key.password"
	KeySSLCertificateLocation      = "ssl.certificate.location"
	KeySSLKeyLocation              = "ssl.key.location"
	KeySSLTruststoreType           = "ssl.truststore.type"
	KeySSLTruststoreLocation       = "ssl.truststore.location"
	KeySSLTruststorePassword       = "ssl.truststore.password"
	KeySSLClientAuth               = "ssl.client.auth"
	KeySSLEnabledProtocols         = "ssl.enabled.protocols"
	KeySSLCipherSuites             = "ssl.cipher.suites"
	KeySSLEndpointIdentAlg         = "ssl.endpoint.identification.algorithm"
	KeySSLKeystoreKey              = "ssl.keystore.key"
	KeySSLKeystoreCertificateChain = "ssl.keystore.certificate.chain"
	KeySSLTruststoreCertificates   = "ssl.truststore.certificates"
	KeySSLAllowDNChanges           = "ssl.allow.dn.changes"
	KeySSLAllowSANChanges          = "ssl.allow.san.changes"

	// listenerPrefix starts a per-listener key:
	// listener.name.<name>.<key>.
	listenerPrefix = "listener.name."
)

// sslKeys are node's rows of the ssl.* keys, in docs order.
func sslKeys() config.Keys[Config] {
	return config.Keys[Config]{
		sslKey(KeySSLKeystoreType, kmsg.ConfigTypeString, "PEM",
			"The format of ssl.keystore.location: PEM only (Kafka's JKS and PKCS12 are not read).", pemOnly("keystore")),
		sslKey(KeySSLKeystoreLocation, kmsg.ConfigTypeString, "",
			"A PEM file with the listener's private key and certificate chain (leaf first).", config.AnyString()),
		sslKey(KeySSLKeystorePassword, kmsg.ConfigTypePassword, "",
			"Refused with a PEM keystore, as in Kafka: a PEM key is decrypted with ssl.key.password.", config.AnyString()),
		sslKey(KeySSLKeyPassword, kmsg.ConfigTypePassword, "",
			"The password of an encrypted PKCS#8 private key (PBES2 with PBKDF2 and AES-CBC).", config.AnyString()),
		sslKey(KeySSLCertificateLocation, kmsg.ConfigTypeString, "",
			"Strata's own: a PEM file with the listener's certificate chain (leaf first), with ssl.key.location instead of ssl.keystore.location.", config.AnyString()),
		sslKey(KeySSLKeyLocation, kmsg.ConfigTypeString, "",
			"Strata's own: a PEM file with the private key of ssl.certificate.location.", config.AnyString()),
		sslKey(KeySSLKeystoreKey, kmsg.ConfigTypePassword, "",
			"The listener's private key as PEM text (line breaks may be spaces), with ssl.keystore.certificate.chain, instead of a keystore file.", config.AnyString()),
		sslKey(KeySSLKeystoreCertificateChain, kmsg.ConfigTypePassword, "",
			"The listener's certificate chain as PEM text (leaf first), with ssl.keystore.key.", config.AnyString()),
		sslKey(KeySSLTruststoreType, kmsg.ConfigTypeString, "PEM",
			"The format of ssl.truststore.location: PEM only.", pemOnly("truststore")),
		sslKey(KeySSLTruststoreLocation, kmsg.ConfigTypeString, "",
			"A PEM file of the CA certificates that peers' certificates are verified by.", config.AnyString()),
		sslKey(KeySSLTruststoreCertificates, kmsg.ConfigTypePassword, "",
			"The trust store's CA certificates as PEM text, instead of ssl.truststore.location.", config.AnyString()),
		sslKey(KeySSLTruststorePassword, kmsg.ConfigTypePassword, "",
			"Refused with a PEM trust store, as in Kafka.", config.AnyString()),
		sslKey(KeySSLClientAuth, kmsg.ConfigTypeString, "none",
			"Whether a TLS listener asks clients for a certificate: none, requested (verified if given) or required.",
			config.Custom("none, requested or required", parseClientAuth)),
		sslKey(KeySSLEnabledProtocols, kmsg.ConfigTypeList, "TLSv1.2,TLSv1.3",
			"The TLS versions allowed; TLS 1.2 is the oldest.", config.Custom("TLSv1.2 and/or TLSv1.3", parseProtocols)),
		sslKey(KeySSLCipherSuites, kmsg.ConfigTypeList, "",
			"The TLS 1.2 cipher suites allowed (IANA names); empty means Go's defaults. TLS 1.3's are not configurable.",
			config.Custom("secure IANA cipher suite names, or empty", parseCipherSuites)),
		sslKey(KeySSLEndpointIdentAlg, kmsg.ConfigTypeString, "https",
			"https verifies that a server's certificate names the host dialed; empty verifies its chain only.",
			config.Custom("https or empty", parseEndpointIdentification)),
		sslKey(KeySSLAllowDNChanges, kmsg.ConfigTypeBoolean, "false",
			"Whether a reloaded certificate may have another subject (distinguished name) than the one it replaces.", config.Boolean()),
		sslKey(KeySSLAllowSANChanges, kmsg.ConfigTypeBoolean, "false",
			"Whether a reloaded certificate may drop subject alternative names of the one it replaces.", config.Boolean()),
	}
}

// sslKey is the row of an ssl.* key (sensitive when typ is
// ConfigTypePassword). Its value is kept as given (per
// listener or not) and parsed again by Config.TLSConfig.
func sslKey(name string, typ kmsg.ConfigType, def, doc string, check config.Check) config.Key[Config] {
	r := row(name, typ, def, doc, check)
	return config.Key[Config]{Row: r, Set: func(c *Config, v config.Value) { c.setSSL("", name, v.String()) }}
}

// sslSettings are the ssl.* values given, plain and per listener; a
// Config is a value, so they are copied on write.
type sslSettings struct {
	plain    map[string]string            // key -> value
	listener map[string]map[string]string // lower-case listener name -> key -> value
}

// setSSL records key=value for listener (lower case; "" for the plain
// key).
func (c *Config) setSSL(listener, key, value string) {
	if listener == "" {
		c.ssl.plain = maps.Clone(c.ssl.plain)
		if c.ssl.plain == nil {
			c.ssl.plain = map[string]string{}
		}
		c.ssl.plain[key] = value
		return
	}
	per := maps.Clone(c.ssl.listener)
	if per == nil {
		per = map[string]map[string]string{}
	}
	m := maps.Clone(per[listener])
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	per[listener] = m
	c.ssl.listener = per
}

// setListenerKey applies a listener.name.<name>.ssl.* key; known is
// false for any other key. The error never shows a sensitive value.
func (c *Config) setListenerKey(key, value string) (known bool, err error) {
	rest, ok := strings.CutPrefix(key, listenerPrefix)
	if !ok {
		return false, nil
	}
	listener, plain, ok := strings.Cut(rest, ".")
	if !ok || listener == "" {
		return false, nil
	}
	k, ok := nodeKeys.Find(plain)
	if !ok || !strings.HasPrefix(plain, "ssl.") {
		return false, nil
	}
	if _, err := k.Parse(value); err != nil {
		shown := value
		if sensitive(&k.Row) {
			shown = "(hidden)"
		}
		return true, fmt.Errorf("%w: %s=%q: %w", ErrInvalidConfig, key, shown, err)
	}
	c.setSSL(strings.ToLower(listener), plain, strings.TrimSpace(value))
	return true, nil
}

// TLSConfig is the TLS configuration of the listener named listener
// (any case): each ssl.* key's value from
// listener.name.<listener in lower case>.<key> if set, else from the
// plain key, else the key's default. saslSSL says the listener's
// security protocol is SASL_SSL, whose clients authenticate with SASL:
// as in Kafka (KIP-684), it asks for client certificates only by its own
// listener.name.<listener>.ssl.client.auth, never by the plain key,
// which is for SSL listeners. Give the result to Net.SetTLS before the
// listener starts. The error (wrapping ErrInvalidConfig) names the key
// at fault; files are read by SetTLS, not here.
func (c Config) TLSConfig(listener string, saslSSL bool) (TLSConfig, error) {
	name := strings.ToLower(listener)
	out := TLSConfig{Listener: strings.ToUpper(listener), keys: map[string]string{}}
	get := func(key string) (config.Value, error) {
		k, _ := nodeKeys.Find(key)
		raw := k.Default
		if v, ok := c.ssl.plain[key]; ok && !(saslSSL && key == KeySSLClientAuth) {
			raw = v
		}
		if v, ok := c.ssl.listener[name][key]; ok {
			raw = v
			out.keys[key] = listenerPrefix + name + "." + key
		}
		v, err := k.Parse(raw)
		if err != nil {
			return v, fmt.Errorf("%w: %s: %w", ErrInvalidConfig, out.key(key), err)
		}
		return v, nil
	}
	var errs []error
	str := func(key string) string {
		v, err := get(key)
		errs = append(errs, err)
		return v.String()
	}
	parsed := func(key string) any {
		v, err := get(key)
		errs = append(errs, err)
		return v.Parsed()
	}
	str(KeySSLKeystoreType)
	str(KeySSLTruststoreType)
	out.KeystoreFile = str(KeySSLKeystoreLocation)
	out.CertFile = str(KeySSLCertificateLocation)
	out.KeyFile = str(KeySSLKeyLocation)
	out.KeyPassword = str(KeySSLKeyPassword)
	out.TruststoreFile = str(KeySSLTruststoreLocation)
	out.KeystoreKey = str(KeySSLKeystoreKey)
	out.KeystoreChain = str(KeySSLKeystoreCertificateChain)
	out.TruststoreCertificates = str(KeySSLTruststoreCertificates)
	keystorePassword, truststorePassword := str(KeySSLKeystorePassword), str(KeySSLTruststorePassword)
	if ca, ok := parsed(KeySSLClientAuth).(ClientAuth); ok {
		out.ClientAuth = ca
	}
	if p, ok := parsed(KeySSLEnabledProtocols).([2]uint16); ok {
		out.MinVersion, out.MaxVersion = p[0], p[1]
	}
	if cs, ok := parsed(KeySSLCipherSuites).([]uint16); ok {
		out.CipherSuites = cs
	}
	if v, ok := parsed(KeySSLEndpointIdentAlg).(bool); ok {
		out.VerifyHostname = v
	}
	boolean := func(key string) bool {
		v, err := get(key)
		errs = append(errs, err)
		return v.Bool()
	}
	out.AllowDNChanges = boolean(KeySSLAllowDNChanges)
	out.AllowSANChanges = boolean(KeySSLAllowSANChanges)
	if err := errors.Join(errs...); err != nil {
		return TLSConfig{}, err
	}
	// Kafka: "SSL key store password cannot be specified with PEM
	// format, only key password may be specified", and no trust store
	// password either.
	switch {
	case keystorePassword != "":
		return TLSConfig{}, out.invalid(KeySSLKeystorePassword, "a PEM keystore has no password; set "+KeySSLKeyPassword+" for an encrypted key")
	case truststorePassword != "":
		return TLSConfig{}, out.invalid(KeySSLTruststorePassword, "a PEM trust store has no password")
	}
	return out, out.check()
}

func pemOnly(what string) config.Check {
	return config.Custom("PEM", func(v string) (any, error) {
		if !strings.EqualFold(v, "PEM") {
			return nil, fmt.Errorf("only PEM %ss are supported, not %s (convert with openssl, or `keytool -exportcert -rfc`)", what, v)
		}
		return "PEM", nil
	})
}

func parseClientAuth(v string) (any, error) {
	switch strings.ToLower(v) {
	case "none":
		return ClientAuthNone, nil
	case "requested":
		return ClientAuthRequested, nil
	case "required":
		return ClientAuthRequired, nil
	}
	return nil, fmt.Errorf("unknown ssl.client.auth %q: want none, requested or required", v)
}

// parseProtocols parses ssl.enabled.protocols into the [min, max]
// versions.
func parseProtocols(v string) (any, error) {
	items, err := config.SplitList(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, errors.New("want TLSv1.2 and/or TLSv1.3")
	}
	var lo, hi uint16
	for _, it := range items {
		var ver uint16
		switch it {
		case "TLSv1.2":
			ver = tls.VersionTLS12
		case "TLSv1.3":
			ver = tls.VersionTLS13
		case "TLSv1", "TLSv1.1", "SSLv3":
			return nil, fmt.Errorf("%s is not allowed: TLS 1.2 is the oldest protocol", it)
		default:
			return nil, fmt.Errorf("unknown protocol %q: want TLSv1.2 and/or TLSv1.3", it)
		}
		if lo == 0 || ver < lo {
			lo = ver
		}
		hi = max(hi, ver)
	}
	return [2]uint16{lo, hi}, nil
}

// parseCipherSuites parses ssl.cipher.suites: names of the cipher suites
// crypto/tls deems secure (tls.CipherSuites; IANA's names, which Java's
// are too).
func parseCipherSuites(v string) (any, error) {
	items, err := config.SplitList(v)
	if err != nil {
		return nil, err
	}
	var out []uint16
	for _, it := range items {
		i := slices.IndexFunc(tls.CipherSuites(), func(s *tls.CipherSuite) bool { return s.Name == it })
		if i < 0 {
			if slices.ContainsFunc(tls.InsecureCipherSuites(), func(s *tls.CipherSuite) bool { return s.Name == it }) {
				return nil, fmt.Errorf("cipher suite %s is insecure", it)
			}
			return nil, fmt.Errorf("unknown cipher suite %q", it)
		}
		out = append(out, tls.CipherSuites()[i].ID)
	}
	return out, nil
}

func parseEndpointIdentification(v string) (any, error) {
	switch strings.ToLower(v) {
	case "https":
		return true, nil
	case "":
		return false, nil
	}
	return nil, fmt.Errorf("unknown algorithm %q: want https or empty", v)
}
