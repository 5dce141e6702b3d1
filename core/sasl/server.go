package sasl

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
)

// Credentials looks SCRAM credentials up; the caller provides it (in the
// broker, over the metadata image's UserScramCredentialRecords). Lookups
// happen inside Step, on the caller's loop.
type Credentials interface {
	// LookupScram returns the credential user has for a SCRAM mechanism,
	// or found false.
	LookupScram(m Mechanism, user string) (c ScramCredential, found bool)
}

// DefaultMaxTokenBytes is Config.MaxTokenBytes's default. A SCRAM
// client message is a user name, a nonce and a proof; PLAIN is two names
// and a password: 8 KiB leaves room for long names and still keeps one
// pre-authentication exchange small (the frame cap before authentication
// is 512 KiB, CVE-2022-34917).
const DefaultMaxTokenBytes = 8 << 10

// serverNonceBytes is how many random bytes make the server's part of a
// SCRAM nonce (base64 encoded on the wire), as xdg-go/scram's default.
const serverNonceBytes = 24

// minSecretBytes is the shortest DecoySecret accepted.
const minSecretBytes = 16

// Config configures a Server.
type Config struct {
	// Enabled is sasl.enabled.mechanisms for one listener, in the order
	// UNSUPPORTED_SASL_MECHANISM lists them. Required, no duplicates.
	Enabled []Mechanism
	// Credentials looks SCRAM credentials up; PLAIN verifies against them
	// too. Required.
	Credentials Credentials
	// Nonce returns n random bytes from the environment's randomness
	// (env in the node, the seeded source in the simulator). Required.
	Nonce func(n int) []byte
	// DecoySecret keys the decoy salt and keys served to an unknown user,
	// so an attacker cannot compute them and they stay the same for the
	// same name. It must be secret and should stay the same across
	// restarts and nodes (a salt that changes on restart shows the user
	// is a decoy). At least 16 bytes. Required.
	DecoySecret []byte
	// MaxTokenBytes bounds each client token; a longer one fails
	// authentication. Zero means DefaultMaxTokenBytes.
	MaxTokenBytes int
}

// Server starts authentication sessions for one listener. It holds no
// per-connection state and may be shared by all connections of a loop.
type Server struct {
	cfg Config
}

// NewServer checks cfg and returns a Server.
func NewServer(cfg Config) (*Server, error) {
	if len(cfg.Enabled) == 0 {
		return nil, errors.New("sasl: no mechanism enabled")
	}
	for i, m := range cfg.Enabled {
		if _, ok := ParseMechanism(string(m)); !ok {
			return nil, fmt.Errorf("sasl: unknown mechanism %q", m)
		}
		if slices.Contains(cfg.Enabled[:i], m) {
			return nil, fmt.Errorf("sasl: mechanism %s enabled twice", m)
		}
	}
	if cfg.Credentials == nil || cfg.Nonce == nil {
		return nil, errors.New("sasl: Credentials and Nonce are required")
	}
	if len(cfg.DecoySecret) < minSecretBytes {
		return nil, fmt.Errorf("sasl: DecoySecret must be at least %d bytes", minSecretBytes)
	}
	if cfg.MaxTokenBytes < 0 {
		return nil, errors.New("sasl: MaxTokenBytes must not be negative")
	}
	if cfg.MaxTokenBytes == 0 {
		cfg.MaxTokenBytes = DefaultMaxTokenBytes
	}
	cfg.Enabled = slices.Clone(cfg.Enabled)
	cfg.DecoySecret = slices.Clone(cfg.DecoySecret)
	return &Server{cfg: cfg}, nil
}

// Enabled returns the enabled mechanisms, in configured order, for
// SaslHandshake's answer.
func (s *Server) Enabled() []Mechanism { return slices.Clone(s.cfg.Enabled) }

// Start begins authenticating one connection with the mechanism the
// client named in SaslHandshake. A mechanism that is unknown or not
// enabled returns *UnsupportedMechanismError.
func (s *Server) Start(mechanism string) (*Session, error) {
	m, ok := ParseMechanism(mechanism)
	if !ok || !slices.Contains(s.cfg.Enabled, m) {
		return nil, &UnsupportedMechanismError{Requested: mechanism, Enabled: s.Enabled()}
	}
	sess := &Session{server: s, mechanism: m}
	if m.IsScram() {
		sess.scram = newScramExchange(s, m)
	}
	return sess, nil
}

// Session is one connection's authentication: a step machine fed the
// client's tokens (SaslAuthenticate's auth_bytes, or the raw tokens after
// SaslHandshake v0) that returns the server's tokens. It is not safe for
// concurrent use; it never blocks.
type Session struct {
	server    *Server
	mechanism Mechanism
	scram     *scramExchange // nil for PLAIN
	finished  bool           // done or failed: no more steps
	user      string         // set on success
}

// Mechanism returns the session's mechanism.
func (s *Session) Mechanism() Mechanism { return s.mechanism }

// Step feeds one client token. It returns the token to send back and
// done when authentication succeeded (User is then the principal's
// name). Any failure is an *AuthenticationError (errors.Is
// ErrAuthenticationFailed), after which the session is over and the
// connection should be closed as Kafka does; a Step after the session is
// over fails the same way. Step never panics on any token.
func (s *Session) Step(clientToken []byte) (serverToken []byte, done bool, err error) {
	if s.finished {
		return nil, false, s.fail("step after the exchange ended")
	}
	if len(clientToken) > s.server.cfg.MaxTokenBytes {
		return nil, false, s.fail(fmt.Sprintf("token of %d bytes exceeds %d", len(clientToken), s.server.cfg.MaxTokenBytes))
	}
	if s.mechanism == Plain {
		user, reason := s.plain(clientToken)
		if reason != "" {
			return nil, false, s.fail(reason)
		}
		s.finished, s.user = true, user
		return []byte{}, true, nil
	}
	out, user, done, reason := s.scram.step(clientToken)
	if reason != "" {
		return nil, false, s.fail(reason)
	}
	if done {
		s.finished, s.user = true, user
	}
	return out, done, nil
}

// User returns the authenticated user name once Step has returned done,
// and "" before.
func (s *Session) User() string { return s.user }

// fail ends the session and returns its error.
func (s *Session) fail(reason string) error {
	s.finished, s.user = true, ""
	return &AuthenticationError{Mechanism: s.mechanism, Reason: reason}
}

// decoy returns the credential served for a user who has none for m: a
// salt and keys derived from DecoySecret and the name, so the exchange
// looks like a real one (same salt length and iteration count as
// strata's own credentials, same salt every time for the same name) and
// can never succeed (the session also refuses a decoy outright).
// Kafka's ScramSaslServer fails unknown users at the first message; this
// follows the RFC 5802 section 9 advice instead.
func (s *Server) decoy(m Mechanism, user string) ScramCredential {
	derive := func(label string, n int) []byte {
		mac := hmac.New(sha256.New, s.cfg.DecoySecret)
		mac.Write([]byte(label))
		mac.Write([]byte{0})
		mac.Write([]byte(m))
		mac.Write([]byte{0})
		mac.Write([]byte(user))
		out := mac.Sum(nil)
		for len(out) < n { // SHA-512 keys: extend by chaining
			mac.Reset()
			mac.Write(out)
			out = append(out, mac.Sum(nil)...)
		}
		return out[:n]
	}
	return ScramCredential{
		Salt:       derive("salt", DefaultSaltBytes),
		Iterations: DefaultIterations,
		StoredKey:  derive("stored key", m.hashSize()),
		ServerKey:  derive("server key", m.hashSize()),
	}
}
