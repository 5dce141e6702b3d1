package node

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/sasl"
)

// Listener keys (issue 24) beyond listeners, advertised.listeners and
// controller.listener.names.
const (
	KeyProtocolMap         = "listener.security.protocol.map"
	KeyInterBrokerListener = "inter.broker.listener.name"
	KeySASLMechanisms      = "sasl.enabled.mechanisms"
	KeyPrincipalMapping    = "ssl.principal.mapping.rules"
	KeyInterBrokerSASL     = "sasl.mechanism.inter.broker.protocol"
	KeySASLJAASConfig      = "sasl.jaas.config"
	// ListenerPrefix starts a per-listener override,
	// listener.name.<lower-case listener name>.<key>, of the keys
	// perListenerKeys names.
	ListenerPrefix = "listener.name."
)

// Defaults of the listener keys.
const (
	// DefaultProtocolMap is Kafka's default listener.security.protocol.map:
	// each protocol's name maps to itself. The controller listener, when
	// the map does not name it, is PLAINTEXT, as in Kafka.
	DefaultProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
	// DefaultSASLMechanisms is sasl.enabled.mechanisms's default. Kafka's
	// is GSSAPI (Kerberos), which Strata does not serve; SCRAM never
	// sends the password, where PLAIN does (enable it explicitly, and
	// only over TLS).
	DefaultSASLMechanisms = "SCRAM-SHA-256,SCRAM-SHA-512"
)

// protocolNames are the security protocols by Kafka's names.
var protocolNames = map[string]meta.SecurityProtocol{
	"PLAINTEXT": meta.SecurityPlaintext, "SSL": meta.SecuritySSL,
	"SASL_PLAINTEXT": meta.SecuritySASLPlaintext, "SASL_SSL": meta.SecuritySASLSSL,
}

// listenerKeys are the rows of the listener keys.
func listenerKeys() config.Keys[Config] {
	return config.Keys[Config]{
		{Row: row(KeyProtocolMap, kmsg.ConfigTypeString, DefaultProtocolMap,
			"The security protocol of each listener name, NAME:PROTOCOL,...",
			config.Custom("NAME:PROTOCOL,... (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)", parseProtocolMap)),
			Set: func(c *Config, v config.Value) { c.ProtocolMap = v.Parsed().(map[string]meta.SecurityProtocol) }},
		{Row: row(KeyInterBrokerListener, kmsg.ConfigTypeString, "",
			"The listener brokers reach each other on (replication, transaction markers); empty means PLAINTEXT, or the first client listener without one.",
			config.Custom("a listener name", parseListenerName)),
			Set: func(c *Config, v config.Value) { c.InterBrokerListener = v.Parsed().(string) }},
		{Row: row(KeySASLMechanisms, kmsg.ConfigTypeList, DefaultSASLMechanisms,
			"The SASL mechanisms a SASL listener offers (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).",
			config.Custom("PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, comma separated", parseMechanisms)),
			Set: func(c *Config, v config.Value) { c.SASLMechanisms = v.Parsed().([]sasl.Mechanism) }},
		{Row: row(KeyInterBrokerSASL, kmsg.ConfigTypeString, string(sasl.ScramSHA512),
			"The SASL mechanism brokers log in to each other with on a SASL inter-broker listener (Kafka's default, GSSAPI, is not served).",
			config.Custom("PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", parseMechanism)),
			Set: func(c *Config, v config.Value) { c.InterBrokerMechanism = v.Parsed().(sasl.Mechanism) }},
		{Row: row(KeySASLJAASConfig, kmsg.ConfigTypePassword, "",
			"This node's login as a SASL client of another node: a JAAS line with username and password "+
				`(org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="...";); `+
				"per listener and mechanism with listener.name.<name>.<mechanism>.sasl.jaas.config.",
			config.Custom("a JAAS login line with username and password", parseJAAS)),
			Set: func(c *Config, v config.Value) { c.SASLJAASConfig = v.String() }},
		{Row: row(KeyPrincipalMapping, kmsg.ConfigTypeString, "DEFAULT",
			"How an SSL client certificate becomes a principal (KIP-371 rules, and Strata's SAN: rules).",
			config.Custom("RULE:pattern/replacement/, SAN:TYPE:pattern/replacement/ (each with an optional L or U) or DEFAULT, comma separated", parseMappingRules)),
			Set: func(c *Config, v config.Value) { c.PrincipalMappingRules = v.String() }},
	}
}

// perListenerKeys are the keys a listener.name.<name>. prefix may
// override, with the row that checks the value.
func perListenerKeys() map[string]*config.Row {
	out := map[string]*config.Row{}
	for _, k := range []string{KeySASLMechanisms, KeyPrincipalMapping} {
		for i := range nodeKeys {
			if nodeKeys[i].Name == k {
				out[k] = &nodeKeys[i].Row
			}
		}
	}
	return out
}

// setListenerOverride applies listener.name.<name>.<key>=value; known is
// false when key is not such an override.
func (c *Config) setListenerOverride(key, value string) (known bool, err error) {
	rest, ok := strings.CutPrefix(key, ListenerPrefix)
	if !ok {
		return false, nil
	}
	name, sub, ok := strings.Cut(rest, ".")
	r := perListenerKeys()[sub]
	if mech, ok := strings.CutSuffix(sub, "."+KeySASLJAASConfig); ok && r == nil {
		// listener.name.<name>.<mechanism>.sasl.jaas.config, Kafka's form.
		if _, known := sasl.ParseMechanism(strings.ToUpper(mech)); known {
			r = jaasRow()
			sub = strings.ToLower(mech) + "." + KeySASLJAASConfig
		}
	}
	if !ok || name == "" || r == nil {
		return false, nil
	}
	if err := r.Validate(value); err != nil {
		return true, fmt.Errorf("%s: %w", key, err)
	}
	overrides := map[string]map[string]string{}
	for n, m := range c.listenerOverrides {
		overrides[n] = m
	}
	m := map[string]string{}
	for k, v := range overrides[strings.ToUpper(name)] {
		m[k] = v
	}
	m[sub] = value
	overrides[strings.ToUpper(name)] = m
	c.listenerOverrides = overrides
	return true, nil
}

// listenerValue is key's value for the named listener: its override, or
// ok false.
func (c Config) listenerValue(name, key string) (string, bool) {
	if v, ok := c.listenerOverrides[name][key]; ok {
		return v, true
	}
	v, ok := c.ssl.listener[strings.ToLower(name)][key] // the ssl.* overrides (tlskeys.go)
	return v, ok
}

func parseProtocolMap(value string) (any, error) {
	out := map[string]meta.SecurityProtocol{}
	for _, entry := range config.SplitListLoose(value) {
		name, proto, ok := strings.Cut(entry, ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("want NAME:PROTOCOL, not %q", entry)
		}
		p, ok := protocolNames[strings.ToUpper(proto)]
		if !ok {
			return nil, fmt.Errorf("unknown security protocol %q (want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", proto)
		}
		name = strings.ToUpper(name)
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener %s mapped twice", name)
		}
		out[name] = p
	}
	return out, nil
}

func parseListenerName(value string) (any, error) {
	if strings.ContainsAny(value, ":/, ") {
		return nil, fmt.Errorf("want a listener name, not %q", value)
	}
	return strings.ToUpper(value), nil
}

func parseMechanisms(value string) (any, error) {
	var out []sasl.Mechanism
	for _, name := range config.SplitListLoose(value) {
		m, ok := sasl.ParseMechanism(strings.ToUpper(name))
		if !ok {
			return nil, fmt.Errorf("unsupported SASL mechanism %q (Strata serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512)", name)
		}
		if slices.Contains(out, m) {
			return nil, fmt.Errorf("mechanism %s given twice", m)
		}
		out = append(out, m)
	}
	return out, nil
}

func parseMechanism(value string) (any, error) {
	m, ok := sasl.ParseMechanism(strings.ToUpper(value))
	if !ok {
		return nil, fmt.Errorf("unsupported SASL mechanism %q (Strata serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512)", value)
	}
	return m, nil
}

// jaasRow is sasl.jaas.config's row.
func jaasRow() *config.Row {
	for i := range nodeKeys {
		if nodeKeys[i].Name == KeySASLJAASConfig {
			return &nodeKeys[i].Row
		}
	}
	return nil
}

func parseMappingRules(value string) (any, error) {
	return principal.ParseRules(value)
}

// clientListener is one client listener of the node, resolved.
type clientListener struct {
	name, addr string
	protocol   meta.SecurityProtocol
}

// protocolOf is the named listener's security protocol.
func (c Config) protocolOf(name string) (meta.SecurityProtocol, error) {
	if p, ok := c.ProtocolMap[name]; ok {
		return p, nil
	}
	if name == c.ControllerListenerName {
		return meta.SecurityPlaintext, nil
	}
	if p, ok := protocolNames[name]; ok && c.ProtocolMap == nil {
		return p, nil
	}
	return 0, invalid(KeyProtocolMap, c.protocolMapString(), "names no security protocol for listener "+name)
}

func (c Config) protocolMapString() string {
	var parts []string
	for n, p := range c.ProtocolMap {
		parts = append(parts, n+":"+protocolNameOf(p))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func protocolNameOf(p meta.SecurityProtocol) string {
	for n, q := range protocolNames {
		if q == p {
			return n
		}
	}
	return strconv.Itoa(int(p))
}

// clientListeners are the node's client listeners in listeners order:
// PLAINTEXT (Listener) and every other entry but the controller's.
func (c Config) clientListeners() ([]clientListener, error) {
	var out []clientListener
	if c.Listener != "" {
		p, err := c.protocolOf("PLAINTEXT")
		if err != nil {
			return nil, err
		}
		out = append(out, clientListener{name: "PLAINTEXT", addr: c.Listener, protocol: p})
	}
	for _, name := range c.listenerNames {
		if name == c.ControllerListenerName {
			continue
		}
		p, err := c.protocolOf(name)
		if err != nil {
			return nil, err
		}
		out = append(out, clientListener{name: name, addr: c.controllerListeners[name], protocol: p})
	}
	return out, nil
}

// interBrokerListener is inter.broker.listener.name resolved against ls:
// over SSL brokers authenticate each other by their certificates, over
// SASL by the login interBrokerLogin resolves.
func (c Config) interBrokerListener(ls []clientListener) (string, error) {
	if c.InterBrokerListener != "" {
		for _, l := range ls {
			if l.name == c.InterBrokerListener {
				return l.name, nil
			}
		}
		return "", invalid(KeyInterBrokerListener, c.InterBrokerListener, "not one of the client listeners in listeners")
	}
	for _, l := range ls {
		if l.protocol == meta.SecurityPlaintext {
			return l.name, nil
		}
	}
	if len(ls) > 1 {
		return "", invalid(KeyInterBrokerListener, "", "no PLAINTEXT client listener for brokers to reach each other on: "+
			"add one (it may be bound to a private address), or an SSL one, and name it here")
	}
	return ls[0].name, nil
}

// interBrokerLogin is how this broker logs in to the SASL inter-broker
// listener inter of ls (sasl.mechanism.inter.broker.protocol, which the
// listener must enable, and the listener's
// listener.name.<name>.<mechanism>.sasl.jaas.config, else
// sasl.jaas.config); the zero ClientConfig when inter is not SASL.
func (c Config) interBrokerLogin(ls []broker.Listener, inter string) (sasl.ClientConfig, error) {
	i := slices.IndexFunc(ls, func(l broker.Listener) bool { return l.Name == inter })
	if i < 0 || (ls[i].Protocol != meta.SecuritySASLPlaintext && ls[i].Protocol != meta.SecuritySASLSSL) {
		return sasl.ClientConfig{}, nil
	}
	mech := c.InterBrokerMechanism
	if !slices.Contains(ls[i].Mechanisms, mech) {
		return sasl.ClientConfig{}, invalid(KeyInterBrokerSASL, string(mech),
			"the inter-broker listener "+inter+" does not enable it ("+KeySASLMechanisms+")")
	}
	key := strings.ToLower(string(mech)) + "." + KeySASLJAASConfig
	jaas, ok := c.listenerValue(inter, key)
	if !ok {
		jaas, key = c.SASLJAASConfig, KeySASLJAASConfig
	} else {
		key = ListenerPrefix + strings.ToLower(inter) + "." + key
	}
	if jaas == "" {
		return sasl.ClientConfig{}, invalid(key, "", "the inter-broker listener "+inter+" is SASL: set this node's login, "+
			`org.apache.kafka.common.security.scram.ScramLoginModule required username="..." password="...";`)
	}
	user, password, err := jaasLogin(jaas)
	if err != nil {
		return sasl.ClientConfig{}, fmt.Errorf("%w: %s: %w", ErrInvalidConfig, key, err)
	}
	return sasl.ClientConfig{Mechanism: mech, User: user, Password: password}, nil
}

// controllerSecurity is the controller listener's security for
// kraft.Config: PLAINTEXT, or SSL (every node, broker-only ones too,
// then dials the controllers over TLS with the controller listener's
// ssl.* keys, presenting its certificate, and the controllers map
// certificates to principals with its ssl.principal.mapping.rules). SASL
// on the controller listener is not served yet.
func (c Config) controllerSecurity() (kraft.Security, error) {
	name := c.ControllerListenerName
	p, err := c.protocolOf(name)
	if err != nil {
		return kraft.Security{}, err
	}
	if p != meta.SecurityPlaintext && p != meta.SecuritySSL {
		return kraft.Security{}, invalid(KeyProtocolMap, c.protocolMapString(),
			"the controller listener "+name+" is "+protocolNameOf(p)+", which is not served yet: map it to PLAINTEXT or SSL")
	}
	rules := c.PrincipalMappingRules
	if v, ok := c.listenerValue(name, KeyPrincipalMapping); ok {
		rules = v
	}
	b, err := principal.NewBuilder(rules)
	if err != nil {
		return kraft.Security{}, invalid(KeyPrincipalMapping, rules, err.Error())
	}
	return kraft.Security{Listener: name, TLS: p == meta.SecuritySSL, Principals: b}, nil
}

// brokerListeners resolves the broker's listeners for broker.Config:
// advertised addresses, mechanisms and principal builders.
func (c Config) brokerListeners() ([]broker.Listener, string, error) {
	ls, err := c.clientListeners()
	if err != nil {
		return nil, "", err
	}
	if len(ls) == 0 {
		return nil, "", invalid(KeyListeners, c.listenersString(), "a broker needs a client listener, e.g. PLAINTEXT://host:port")
	}
	inter, err := c.interBrokerListener(ls)
	if err != nil {
		return nil, "", err
	}
	out := make([]broker.Listener, 0, len(ls))
	for _, l := range ls {
		adv := l.addr
		if a, ok := c.advertisedByName[l.name]; ok {
			adv = a
		} else if l.name == "PLAINTEXT" && c.AdvertisedListener != "" {
			adv = c.AdvertisedListener
		}
		host, port, err := resolveAdvertised(adv)
		if err != nil {
			return nil, "", err
		}
		bl := broker.Listener{Name: l.name, Addr: l.addr, AdvertisedHost: host, AdvertisedPort: port, Protocol: l.protocol}
		mechs := c.SASLMechanisms
		if v, ok := c.listenerValue(l.name, KeySASLMechanisms); ok {
			parsed, _ := parseMechanisms(v) // checked by Set
			mechs = parsed.([]sasl.Mechanism)
		}
		if l.protocol == meta.SecuritySASLPlaintext || l.protocol == meta.SecuritySASLSSL {
			if len(mechs) == 0 {
				return nil, "", invalid(ListenerPrefix+strings.ToLower(l.name)+"."+KeySASLMechanisms, "", "a SASL listener needs a mechanism")
			}
			bl.Mechanisms = mechs
		}
		rules := c.PrincipalMappingRules
		if v, ok := c.listenerValue(l.name, KeyPrincipalMapping); ok {
			rules = v
		}
		if bl.Principals, err = principal.NewBuilder(rules); err != nil {
			return nil, "", invalid(KeyPrincipalMapping, rules, err.Error())
		}
		out = append(out, bl)
	}
	return out, inter, nil
}

// resolveAdvertised resolves an advertised "host:port": an empty host is
// this machine's hostname, as in Kafka; port 0 means the bound port.
func resolveAdvertised(addr string) (string, int32, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %s: %w", ErrInvalidConfig, KeyAdvertisedListeners, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return "", 0, invalid(KeyAdvertisedListeners, addr, "bad port")
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return "", 0, invalid(KeyAdvertisedListeners, addr,
			"cannot advertise the non-routable meta-address "+host+"; set advertised.listeners to a routable address")
	}
	if host == "" {
		if host, err = os.Hostname(); err != nil {
			return "", 0, fmt.Errorf("advertised host: %w", err)
		}
	}
	return host, int32(port), nil
}

// parseAdvertisedListeners parses advertised.listeners: NAME://host:port
// entries (a bare host:port is PLAINTEXT), each name once.
func parseAdvertisedListeners(value string) (any, error) {
	list, err := parseListenerList(value)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, nl := range list.([]namedListener) {
		out[nl.name] = nl.addr
	}
	return out, nil
}

// registerTLS gives the node's transport the TLS configuration of every
// TLS client listener and of an SSL controller listener (its ssl.*
// keys), reading and checking its files.
func registerTLS(cfg Config, listeners []broker.Listener, ctrl kraft.Security, n *Net) error {
	type tlsListener struct {
		name     string
		protocol meta.SecurityProtocol
	}
	var ls []tlsListener
	for _, l := range listeners {
		if l.Protocol == meta.SecuritySSL || l.Protocol == meta.SecuritySASLSSL {
			ls = append(ls, tlsListener{l.Name, l.Protocol})
		}
	}
	if ctrl.TLS {
		ls = append(ls, tlsListener{ctrl.Listener, meta.SecuritySSL})
	}
	for _, l := range ls {
		tcfg, err := cfg.TLSConfig(l.name, l.protocol == meta.SecuritySASLSSL)
		if err != nil {
			return err
		}
		if !tcfg.HasCertificate() {
			return invalid(ListenerPrefix+strings.ToLower(l.name)+"."+KeySSLKeystoreLocation, "",
				"listener "+l.name+" is "+protocolNameOf(l.protocol)+" and needs a certificate and key (ssl.keystore.location, or ssl.certificate.location and ssl.key.location)")
		}
		if err := n.SetTLS(l.name, tcfg); err != nil {
			return err
		}
	}
	return nil
}

// decoySecretFile holds the secret that keys SCRAM's decoy credentials
// for unknown users (sasl.Config.DecoySecret), so that they stay the same
// across restarts.
const decoySecretFile = "sasl-decoy.secret"

// loadOrCreateDecoySecret reads the data directory's decoy secret,
// creating it (32 random bytes, mode 0600) on first use.
func loadOrCreateDecoySecret(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, decoySecretFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil && len(b) >= 32:
		return b, nil
	case err == nil:
		return nil, fmt.Errorf("%s: %d bytes, want at least 32 (delete it to make a new one)", path, len(b))
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("read the SASL decoy secret: %w", err)
	}
	b = make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return nil, fmt.Errorf("write the SASL decoy secret: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("write the SASL decoy secret: %w", err)
	}
	return b, nil
}
