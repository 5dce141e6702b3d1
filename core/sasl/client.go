package sasl

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"

	"github.com/xdg-go/scram"
)

// clientNonceBytes is how many random bytes make a SCRAM client nonce.
const clientNonceBytes = 24

// ClientConfig is the client side of one SASL login: how a node
// authenticates to another's SASL listener (Kafka's
// sasl.mechanism.inter.broker.protocol and the listener's
// sasl.jaas.config).
type ClientConfig struct {
	Mechanism Mechanism
	User      string
	// Password is sent as its UTF-8 bytes without SASLprep, as the
	// server here and Kafka's ScramFormatter take it.
	Password string
	// Nonce returns n random bytes from the environment's randomness
	// (SCRAM client nonces).
	Nonce func(n int) []byte
}

// String prints the login without its password, so that a logged or
// printed configuration never shows it.
func (c ClientConfig) String() string {
	if c.Mechanism == "" {
		return "no login"
	}
	return fmt.Sprintf("%s login as %q (password redacted)", c.Mechanism, c.User)
}

// LogValue implements slog.LogValuer with String.
func (c ClientConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// GoString is String, for %#v.
func (c ClientConfig) GoString() string { return c.String() }

// ClientSession is one client conversation, a step machine: Step takes
// the server's last token (nil at the start) and returns the next one to
// send; once Done, the server has been verified (SCRAM's server
// signature) or, for PLAIN, the credentials were sent.
type ClientSession struct {
	mech  Mechanism
	plain []byte // PLAIN's one token, nil once sent
	conv  *scram.ClientConversation
	done  bool
}

// NewClient starts a client conversation for cfg.
func NewClient(cfg ClientConfig) (*ClientSession, error) {
	if cfg.User == "" || cfg.Password == "" {
		return nil, errors.New("sasl: a client login needs a user and a password")
	}
	s := &ClientSession{mech: cfg.Mechanism}
	switch {
	case cfg.Mechanism == Plain:
		s.plain = []byte("\x00" + cfg.User + "\x00" + cfg.Password)
	case cfg.Mechanism.IsScram():
		if cfg.Nonce == nil {
			return nil, errors.New("sasl: a SCRAM client needs a nonce source")
		}
		cl, err := cfg.Mechanism.scramHash().NewClientUnprepped(cfg.User, cfg.Password, "")
		if err != nil {
			return nil, fmt.Errorf("sasl: %w", err)
		}
		s.conv = cl.WithMinIterations(MinIterations).WithNonceGenerator(func() string {
			return base64.RawStdEncoding.EncodeToString(cfg.Nonce(clientNonceBytes))
		}).NewConversation()
	default:
		return nil, fmt.Errorf("sasl: unsupported client mechanism %q", cfg.Mechanism)
	}
	return s, nil
}

// Mechanism is the session's mechanism, for SaslHandshake.
func (s *ClientSession) Mechanism() Mechanism { return s.mech }

// Done reports whether the conversation has nothing more to send and,
// for SCRAM, verified the server.
func (s *ClientSession) Done() bool { return s.done }

// Step takes the server's token and returns the client's next one.
func (s *ClientSession) Step(challenge []byte) ([]byte, error) {
	if s.done {
		return nil, errors.New("sasl: the conversation is over")
	}
	if s.conv == nil {
		token := s.plain
		s.plain, s.done = nil, true
		return token, nil
	}
	resp, err := s.conv.Step(string(challenge))
	if err != nil {
		s.done = true
		return nil, fmt.Errorf("sasl: %s: %w", s.mech, err)
	}
	if s.conv.Done() {
		s.done = true
		if !s.conv.Valid() {
			return nil, fmt.Errorf("sasl: %s: the server's signature does not verify", s.mech)
		}
	}
	return []byte(resp), nil
}
