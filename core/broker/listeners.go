package broker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/sasl"
	"github.com/strata-log/strata/core/wire"
)

// Listener is one of the broker's listeners (Kafka's listeners entry, with
// its advertised.listeners address and listener.security.protocol.map
// protocol).
type Listener struct {
	// Name is the listener name (PLAINTEXT, SASL_SSL, INTERNAL, ...),
	// unique among the broker's listeners, upper case as Kafka keeps it.
	Name string
	// Addr is the "host:port" bound through env.Net().Listen (or
	// env.SecureNet's ListenTLS); port 0 picks a free port.
	Addr string
	// AdvertisedHost and AdvertisedPort are where clients are told to
	// connect (advertised.listeners); port 0 means the port bound.
	AdvertisedHost string
	AdvertisedPort int32
	// Protocol is the listener's security protocol. SSL and SASL_SSL
	// need an env.Net that is an env.SecureNet.
	Protocol meta.SecurityProtocol
	// Mechanisms are sasl.enabled.mechanisms for a SASL listener (none
	// is an error there; ignored elsewhere).
	Mechanisms []sasl.Mechanism
	// Principals builds the principals of the listener's connections
	// (ssl.principal.mapping.rules for SSL). The zero Builder has no
	// rules: an SSL client certificate then fails; use
	// principal.NewBuilder("").
	Principals principal.Builder
}

// SecurityConfig is what the broker's SASL listeners share.
type SecurityConfig struct {
	// Credentials looks SCRAM credentials up; nil means the
	// UserScramCredentialRecords of the image the broker has applied at
	// the moment of each lookup, so a credential is usable everywhere as
	// soon as it commits.
	Credentials sasl.Credentials
	// DecoySecret keys the decoy credentials of unknown users
	// (sasl.Config.DecoySecret). Required with a SASL listener.
	DecoySecret []byte
	// FailedAuthenticationDelay is
	// connection.failed.authentication.delay.ms: how long a failed
	// authentication's answer (and the close after it) is held back.
	// Zero answers at once.
	FailedAuthenticationDelay time.Duration
	// MaxReauth is connections.max.reauth.ms (KIP-368): the session
	// lifetime a SASL connection is told and held to; zero means none.
	MaxReauth time.Duration
	// InterBrokerLogin is how this broker logs in to other brokers'
	// SASL inter-broker listener (sasl.mechanism.inter.broker.protocol
	// and the listener's sasl.jaas.config; the node requires one there).
	// Ignored on another listener, or with no Mechanism: the brokers then
	// dial without logging in, and a SASL listener closes their
	// requests. Its Nonce is the broker's.
	InterBrokerLogin sasl.ClientConfig
}

// MaxPreAuthFrameBytes bounds a request frame on a SASL listener before
// the connection authenticated (CVE-2022-34917: Kafka read any size a
// client claimed before authentication). Kafka's SaslServerAuthenticator
// caps it at 512 KiB too (sasl.server.max.receive.size).
const MaxPreAuthFrameBytes = 512 << 10

// listener is a bound Listener.
type listener struct {
	Listener
	ln   env.Listener
	sasl *sasl.Server // nil unless the protocol is SASL
}

// isSASL reports whether p authenticates with SASL.
func isSASL(p meta.SecurityProtocol) bool {
	return p == meta.SecuritySASLPlaintext || p == meta.SecuritySASLSSL
}

// isTLS reports whether p runs over TLS.
func isTLS(p meta.SecurityProtocol) bool {
	return p == meta.SecuritySSL || p == meta.SecuritySASLSSL
}

// listeners returns cfg's listeners: Listeners, or one PLAINTEXT listener
// from ListenAddr and the advertised address when Listeners is empty.
func (cfg Config) listeners() []Listener {
	if len(cfg.Listeners) > 0 {
		return cfg.Listeners
	}
	return []Listener{{Name: DefaultListenerName, Addr: cfg.ListenAddr, AdvertisedHost: cfg.AdvertisedHost,
		AdvertisedPort: cfg.AdvertisedPort, Protocol: meta.SecurityPlaintext}}
}

// validateListeners checks the listeners and the inter-broker listener.
func (cfg Config) validateListeners() error {
	ls := cfg.listeners()
	var names []string
	sasls := false
	for _, l := range ls {
		switch {
		case l.Name == "" || strings.ToUpper(l.Name) != l.Name:
			return fmt.Errorf("%w: listener name %q must be upper case and not empty", errInvalidConfig, l.Name)
		case slices.Contains(names, l.Name):
			return fmt.Errorf("%w: listener %s named twice", errInvalidConfig, l.Name)
		case l.Addr == "":
			return fmt.Errorf("%w: listener %s has an empty listen address", errInvalidConfig, l.Name)
		case l.AdvertisedHost == "":
			return fmt.Errorf("%w: listener %s has an empty advertised host", errInvalidConfig, l.Name)
		case l.AdvertisedPort < 0 || l.AdvertisedPort > 65535:
			return fmt.Errorf("%w: listener %s: advertised port %d out of range", errInvalidConfig, l.Name, l.AdvertisedPort)
		case l.Protocol < meta.SecurityPlaintext || l.Protocol > meta.SecuritySASLSSL:
			return fmt.Errorf("%w: listener %s has unknown security protocol %d", errInvalidConfig, l.Name, l.Protocol)
		case isSASL(l.Protocol) && len(l.Mechanisms) == 0:
			return fmt.Errorf("%w: SASL listener %s enables no mechanism (sasl.enabled.mechanisms)", errInvalidConfig, l.Name)
		}
		names = append(names, l.Name)
		sasls = sasls || isSASL(l.Protocol)
	}
	if cfg.InterBrokerListener != "" && !slices.Contains(names, cfg.InterBrokerListener) {
		return fmt.Errorf("%w: inter-broker listener %s is not one of the listeners %v", errInvalidConfig, cfg.InterBrokerListener, names)
	}
	if sasls && len(cfg.Security.DecoySecret) == 0 {
		return fmt.Errorf("%w: a SASL listener needs Security.DecoySecret", errInvalidConfig)
	}
	if cfg.Security.FailedAuthenticationDelay < 0 || cfg.Security.MaxReauth < 0 {
		return fmt.Errorf("%w: negative authentication durations", errInvalidConfig)
	}
	return nil
}

// listen binds every listener; on an error it closes those bound.
func (b *Broker) listen() error {
	for _, l := range b.cfg.listeners() {
		bl := &listener{Listener: l}
		if isSASL(l.Protocol) {
			creds := b.cfg.Security.Credentials
			if creds == nil {
				creds = imageCredentials{b}
			}
			srv, err := sasl.NewServer(sasl.Config{Enabled: l.Mechanisms, Credentials: creds,
				Nonce: b.nonce, DecoySecret: b.cfg.Security.DecoySecret})
			if err != nil {
				b.closeListeners()
				return fmt.Errorf("broker: listener %s: %w", l.Name, err)
			}
			bl.sasl = srv
		}
		accept := func(c env.Conn) { b.accept(bl, c) }
		var err error
		if isTLS(l.Protocol) {
			sn, ok := b.e.Net().(env.SecureNet)
			if !ok {
				b.closeListeners()
				return fmt.Errorf("broker: listener %s is %s but this environment has no TLS", l.Name, protocolName(l.Protocol))
			}
			bl.ln, err = sn.ListenTLS(l.Addr, l.Name, accept)
		} else {
			bl.ln, err = b.e.Net().Listen(l.Addr, accept)
		}
		if err != nil {
			b.closeListeners()
			return fmt.Errorf("broker: listener %s: listen on %s: %w", l.Name, l.Addr, err)
		}
		if bl.AdvertisedPort == 0 {
			port, err := portOf(bl.ln.Addr())
			if err != nil {
				_ = bl.ln.Close()
				b.closeListeners()
				return fmt.Errorf("broker: listener %s: advertised port: %w", l.Name, err)
			}
			bl.AdvertisedPort = port
		}
		b.listeners = append(b.listeners, bl)
		b.log.Info("broker listening", "listener", l.Name, "protocol", protocolName(l.Protocol), "addr", bl.ln.Addr(),
			"advertised", joinHostPort(bl.AdvertisedHost, bl.AdvertisedPort))
	}
	return nil
}

// closeListeners stops accepting on every bound listener.
func (b *Broker) closeListeners() {
	for _, l := range b.listeners {
		if err := l.ln.Close(); err != nil {
			b.log.Warn("closing listener", "listener", l.Name, "err", err)
		}
	}
	b.listeners = nil
}

// nonce returns n bytes of the environment's randomness (SCRAM nonces).
func (b *Broker) nonce(n int) []byte {
	out := make([]byte, n)
	rng := b.e.Rand()
	for i := range out {
		out[i] = byte(rng.Uint64())
	}
	return out
}

// protocolName is Kafka's name of a security protocol.
func protocolName(p meta.SecurityProtocol) string {
	switch p {
	case meta.SecurityPlaintext:
		return "PLAINTEXT"
	case meta.SecuritySSL:
		return "SSL"
	case meta.SecuritySASLPlaintext:
		return "SASL_PLAINTEXT"
	case meta.SecuritySASLSSL:
		return "SASL_SSL"
	}
	return fmt.Sprintf("SecurityProtocol(%d)", int(p))
}

// Endpoints are the broker's listeners as it registers them: name,
// advertised address and protocol, in configuration order.
func (b *Broker) Endpoints() []meta.Endpoint {
	out := make([]meta.Endpoint, len(b.listeners))
	for i, l := range b.listeners {
		out[i] = meta.Endpoint{Name: l.Name, Host: l.AdvertisedHost, Port: uint16(l.AdvertisedPort), SecurityProtocol: l.Protocol}
	}
	return out
}

// interBrokerListener is the listener name brokers reach each other on.
func (b *Broker) interBrokerListener() string { return b.cfg.InterBrokerListenerName() }

// InterBrokerListenerName is the listener brokers reach each other on:
// InterBrokerListener, or the first listener.
func (cfg Config) InterBrokerListenerName() string {
	if cfg.InterBrokerListener != "" {
		return cfg.InterBrokerListener
	}
	return cfg.listeners()[0].Name
}

// interBrokerTLS is the inter-broker listener's name when it runs over
// TLS (brokers then dial each other with DialTLS as clients of it,
// presenting its certificate), else empty.
func (b *Broker) interBrokerTLS() string {
	if l := b.listenerNamed(b.interBrokerListener()); l != nil && isTLS(l.Protocol) {
		return l.Name
	}
	return ""
}

// InterBrokerTLS reports whether the inter-broker listener runs over TLS.
func (cfg Config) InterBrokerTLS() bool {
	name := cfg.InterBrokerListenerName()
	for _, l := range cfg.listeners() {
		if l.Name == name {
			return isTLS(l.Protocol)
		}
	}
	return false
}

// InterBrokerLogin is the login of the inter-broker listener when it is
// SASL and Security.InterBrokerLogin names a mechanism, else false.
func (cfg Config) InterBrokerLogin() (sasl.ClientConfig, bool) {
	name := cfg.InterBrokerListenerName()
	for _, l := range cfg.listeners() {
		if l.Name == name && isSASL(l.Protocol) && cfg.Security.InterBrokerLogin.Mechanism != "" {
			return cfg.Security.InterBrokerLogin, true
		}
	}
	return sasl.ClientConfig{}, false
}

// interBrokerAuthenticate is the broker peers' wire.PeerConfig.Authenticate:
// a SASL login on a SASL inter-broker listener, else nil.
func (b *Broker) interBrokerAuthenticate() func(*wire.Client, func(error)) {
	login, ok := b.cfg.InterBrokerLogin()
	if !ok {
		return nil
	}
	login.Nonce = b.nonce
	return wire.SASLLogin(func() (*sasl.ClientSession, error) { return sasl.NewClient(login) })
}

// listenerNamed is the bound listener of that name, nil if none.
func (b *Broker) listenerNamed(name string) *listener {
	for _, l := range b.listeners {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// imageCredentials are the SCRAM credentials of the broker's current
// image.
type imageCredentials struct{ b *Broker }

// LookupScram implements sasl.Credentials.
func (c imageCredentials) LookupScram(m sasl.Mechanism, user string) (sasl.ScramCredential, bool) {
	img := c.b.image()
	if img == nil {
		return sasl.ScramCredential{}, false
	}
	return img.LookupScram(m, user)
}
