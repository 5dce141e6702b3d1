package principal

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// UserType is the principal type of every principal Kafka's
// DefaultKafkaPrincipalBuilder makes (KafkaPrincipal.USER_TYPE).
const UserType = "User"

// Anonymous is the principal of an unauthenticated connection (PLAINTEXT
// listeners, or SSL without a client certificate): Kafka's
// KafkaPrincipal.ANONYMOUS, "User:ANONYMOUS".
var Anonymous = Principal{Type: UserType, Name: "ANONYMOUS"}

// ErrInvalidPrincipal is wrapped by every error Parse, User and the
// builders return for a principal they refuse.
var ErrInvalidPrincipal = errors.New("invalid principal")

// Principal is an authenticated identity as ACLs and quotas name it:
// Kafka's KafkaPrincipal. Two principals are the same when their types and
// names are equal (case-sensitive), as in Kafka; the token-authenticated
// flag of Kafka's class belongs to the delegation-token layer, not here.
type Principal struct {
	// Type is the principal type, "User" for every principal the builders
	// here make. It never contains ':'.
	Type string
	// Name is the principal name; it may contain ':'.
	Name string
}

// String renders p as Kafka does, "Type:Name" (for example "User:alice"),
// the form ACL records and kafka-acls.sh use.
func (p Principal) String() string { return p.Type + ":" + p.Name }

// IsAnonymous reports whether p is User:ANONYMOUS.
func (p Principal) IsAnonymous() bool { return p == Anonymous }

// Validate returns an error wrapping ErrInvalidPrincipal unless p has a
// non-empty type without ':' and a non-empty name, both valid UTF-8.
//
// Kafka's SecurityUtils.parseKafkaPrincipal accepts an empty type or name
// ("User:" is User with name ""); Strata refuses them, so that a mapping
// rule that rewrites a name to nothing cannot produce a principal that an
// ACL for "User:" would then match.
func (p Principal) Validate() error {
	switch {
	case p.Type == "":
		return fmt.Errorf("%w: empty principal type in %q", ErrInvalidPrincipal, p.String())
	case strings.Contains(p.Type, ":"):
		return fmt.Errorf("%w: principal type %q contains ':'", ErrInvalidPrincipal, p.Type)
	case p.Name == "":
		return fmt.Errorf("%w: empty principal name in %q", ErrInvalidPrincipal, p.String())
	case !utf8.ValidString(p.Type) || !utf8.ValidString(p.Name):
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidPrincipal, p.String())
	}
	return nil
}

// Parse reads "Type:Name" as Kafka's SecurityUtils.parseKafkaPrincipal
// does: the type is everything before the first ':', the name everything
// after it (so "User:a:b" is User with name "a:b"). Unlike Kafka it
// refuses an empty type or name (see Validate).
func Parse(s string) (Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok {
		return Principal{}, fmt.Errorf("%w: expected a string in format principalType:principalName but got %q", ErrInvalidPrincipal, s)
	}
	p := Principal{Type: typ, Name: name}
	if err := p.Validate(); err != nil {
		return Principal{}, err
	}
	return p, nil
}

// User returns User:name, or an error if name is empty or not UTF-8.
func User(name string) (Principal, error) {
	p := Principal{Type: UserType, Name: name}
	if err := p.Validate(); err != nil {
		return Principal{}, err
	}
	return p, nil
}

// FromSASL is the principal of a connection that completed SASL (PLAIN,
// SCRAM-SHA-256/512, OAUTHBEARER): User:<authorization id>, as Kafka's
// DefaultKafkaPrincipalBuilder builds it for every mechanism but GSSAPI
// (which Strata does not offer). The caller passes the authorization id
// its SASL server settled on (for SCRAM and PLAIN, the authenticated user
// name once an authzid, if any, was checked equal to it).
func FromSASL(authorizationID string) (Principal, error) {
	return User(authorizationID)
}
