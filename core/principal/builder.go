package principal

import (
	"crypto/x509"
	"fmt"
)

// Mechanism says how a connection authenticated, which decides how its
// principal is built.
type Mechanism int

const (
	// Plaintext is a connection that did not authenticate (a PLAINTEXT
	// listener): User:ANONYMOUS.
	Plaintext Mechanism = iota
	// TLS is an SSL listener: the client certificate through the mapping
	// rules, User:ANONYMOUS without one.
	TLS
	// SASL is a SASL_PLAINTEXT or SASL_SSL listener: User:<authorization
	// id>. On SASL_SSL a client certificate, if any, plays no part, as in
	// Kafka.
	SASL
)

// Authentication is what the connection layer learned while
// authenticating: Kafka's AuthenticationContext.
type Authentication struct {
	Mechanism Mechanism
	// PeerCertificate is the verified client leaf certificate (TLS), or
	// nil if the client sent none.
	PeerCertificate *x509.Certificate
	// AuthorizationID is the SASL server's authorization id (SASL).
	AuthorizationID string
}

// Builder builds the principal of an authenticated connection: Kafka's
// DefaultKafkaPrincipalBuilder, with a listener's parsed
// ssl.principal.mapping.rules. The zero Builder has no rules, so every
// certificate fails with ErrNoMatchingRule; use NewBuilder.
type Builder struct {
	Rules Rules
}

// NewBuilder parses the listener's ssl.principal.mapping.rules value
// (DefaultRules when the config is unset) into a Builder.
func NewBuilder(sslPrincipalMappingRules string) (Builder, error) {
	rules, err := ParseRules(sslPrincipalMappingRules)
	if err != nil {
		return Builder{}, err
	}
	return Builder{Rules: rules}, nil
}

// Build returns the principal of a connection, or an error that must fail
// its authentication.
func (b Builder) Build(a Authentication) (Principal, error) {
	switch a.Mechanism {
	case Plaintext:
		return Anonymous, nil
	case TLS:
		return FromCertificate(a.PeerCertificate, b.Rules)
	case SASL:
		return FromSASL(a.AuthorizationID)
	}
	return Principal{}, fmt.Errorf("%w: unknown authentication mechanism %d", ErrInvalidPrincipal, int(a.Mechanism))
}
