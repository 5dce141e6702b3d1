package sasl

import (
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/xdg-go/scram"
)

// Mechanism is a SASL mechanism name as a client sends it in
// SaslHandshake (Kafka's sasl.enabled.mechanisms values).
type Mechanism string

// The mechanisms this package serves.
const (
	// Plain is SASL/PLAIN (RFC 4616), Kafka's PlainSaslServer.
	Plain Mechanism = "PLAIN"
	// ScramSHA256 is SCRAM-SHA-256 (RFC 7677), Kafka's ScramSaslServer.
	ScramSHA256 Mechanism = "SCRAM-SHA-256"
	// ScramSHA512 is SCRAM-SHA-512, Kafka's ScramSaslServer.
	ScramSHA512 Mechanism = "SCRAM-SHA-512"
)

// Bounds on SCRAM credentials, Kafka's ScramMechanism.minIterations and
// maxIterations (the same for both hashes).
const (
	// MinIterations is the fewest PBKDF2 iterations a SCRAM credential may
	// have (Kafka's ScramMechanism min, RFC 7677's recommendation).
	MinIterations = 4096
	// MaxIterations is the most PBKDF2 iterations a SCRAM credential may
	// have (Kafka's ScramMechanism max), which bounds the work one PLAIN
	// attempt costs the server.
	MaxIterations = 16384
	// DefaultIterations is the iteration count of credentials made by
	// strata's own tools, and the one the decoy credential of an unknown
	// user carries.
	DefaultIterations = MinIterations
	// DefaultSaltBytes is the salt length of credentials made by strata's
	// own tools, and of the decoy credential of an unknown user.
	DefaultSaltBytes = 32
	// MaxSaltBytes bounds a stored salt: it is echoed in every
	// server-first message, so it must stay far below a token's bound.
	MaxSaltBytes = 1024
)

// IsScram reports whether m is one of the SCRAM mechanisms.
func (m Mechanism) IsScram() bool { return m == ScramSHA256 || m == ScramSHA512 }

// hashOf returns the hash function of a SCRAM mechanism, or false.
func (m Mechanism) hashOf() (func() hash.Hash, bool) {
	switch m {
	case ScramSHA256:
		return sha256.New, true
	case ScramSHA512:
		return sha512.New, true
	}
	return nil, false
}

// hashSize is the digest length of a SCRAM mechanism's hash (zero for
// others): the length of a salted password, stored key and server key.
func (m Mechanism) hashSize() int {
	switch m {
	case ScramSHA256:
		return sha256.Size
	case ScramSHA512:
		return sha512.Size
	}
	return 0
}

// scramHash returns the xdg-go/scram hash generator of a SCRAM mechanism.
func (m Mechanism) scramHash() scram.HashGeneratorFcn {
	if m == ScramSHA512 {
		return scram.SHA512
	}
	return scram.SHA256
}

// ParseMechanism maps a mechanism name to a Mechanism. Names are matched
// exactly, as Kafka does (its SaslHandshake is case-sensitive).
func ParseMechanism(name string) (Mechanism, bool) {
	switch m := Mechanism(name); m {
	case Plain, ScramSHA256, ScramSHA512:
		return m, true
	}
	return "", false
}

// UnsupportedMechanismError is returned for a mechanism that is unknown
// or not enabled. Enabled is what SaslHandshake answers in its
// mechanisms field with UNSUPPORTED_SASL_MECHANISM; errors.Is matches
// kerr.UnsupportedSaslMechanism.
type UnsupportedMechanismError struct {
	// Requested is the name the client asked for.
	Requested string
	// Enabled is the server's enabled mechanisms, in configured order.
	Enabled []Mechanism
}

// Error implements error, with Kafka's wording.
func (e *UnsupportedMechanismError) Error() string {
	names := make([]string, len(e.Enabled))
	for i, m := range e.Enabled {
		names[i] = string(m)
	}
	return fmt.Sprintf("Unsupported SASL mechanism %s, enabled mechanisms are [%s]",
		e.Requested, strings.Join(names, ", "))
}

// Unwrap makes errors.Is(err, kerr.UnsupportedSaslMechanism) true.
func (e *UnsupportedMechanismError) Unwrap() error { return kerr.UnsupportedSaslMechanism }

// ErrAuthenticationFailed is matched (errors.Is) by every authentication
// failure a Session returns. The failure itself is an
// *AuthenticationError.
var ErrAuthenticationFailed = kerr.SaslAuthenticationFailed

// AuthenticationError is every failed authentication: bad credentials,
// unknown user, malformed or oversized token, authorization id that is
// not the user. Its Error text depends only on the mechanism (Kafka's
// SaslServerAuthenticator text), so it never says whether the user
// exists and can go to the client as SaslAuthenticate's error message.
// errors.Is matches ErrAuthenticationFailed (kerr.SaslAuthenticationFailed).
type AuthenticationError struct {
	// Mechanism is the session's mechanism.
	Mechanism Mechanism
	// Reason says what went wrong, for the server's log only: it may
	// name an unknown user and must never be sent to the client.
	Reason string
}

// Error implements error. The text is the same for every Reason.
func (e *AuthenticationError) Error() string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + string(e.Mechanism)
}

// Unwrap makes errors.Is(err, ErrAuthenticationFailed) true.
func (e *AuthenticationError) Unwrap() error { return ErrAuthenticationFailed }
