package sasl

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/xdg-go/scram"
)

// scramExchange is one SCRAM exchange: xdg-go/scram's ServerConversation
// does RFC 5802 (parsing, =2C/=3D unescaping of the names, nonce and
// channel-binding checks, the proof and the server signature), and this
// adds what it leaves to callers: the token bound (in Session.Step),
// UTF-8 tokens, the authorization id rule, the iteration bounds, the
// decoy for unknown users and the nonce from the caller's randomness.
type scramExchange struct {
	server *Server
	conv   *scram.ServerConversation
	mech   Mechanism
	first  bool // the client-first message is next

	// Set by the lookup during the first step.
	decoyReason string // non-empty: the user has no usable credential
	nonceShort  int    // bytes the nonce source returned, if too few
}

func newScramExchange(s *Server, m Mechanism) *scramExchange {
	x := &scramExchange{server: s, mech: m, first: true}
	srv, err := m.scramHash().NewServer(x.lookup)
	if err != nil { // xdg-go/scram never fails here; keep the session failing closed
		x.decoyReason = "scram server: " + err.Error()
		return x
	}
	x.conv = srv.WithNonceGenerator(x.nonce).NewConversation()
	return x
}

// lookup is the ServerConversation's CredentialLookup. It never fails: a
// user without a usable credential gets the decoy, so the first answer
// has the same shape either way.
func (x *scramExchange) lookup(user string) (scram.StoredCredentials, error) {
	c, found := x.server.cfg.Credentials.LookupScram(x.mech, user)
	if !found {
		x.decoyReason = fmt.Sprintf("unknown user %q", user)
	} else if why, ok := c.usable(x.mech); !ok {
		x.decoyReason = fmt.Sprintf("user %q: %s", user, why)
	}
	if x.decoyReason != "" {
		c = x.server.decoy(x.mech, user)
	}
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
		StoredKey:  c.StoredKey,
		ServerKey:  c.ServerKey,
	}, nil
}

// nonce is the ServerConversation's nonce generator: base64 of
// serverNonceBytes from the caller's randomness.
func (x *scramExchange) nonce() string {
	b := x.server.cfg.Nonce(serverNonceBytes)
	if len(b) < serverNonceBytes {
		x.nonceShort = len(b) + 1 // +1 so that zero bytes is recorded too
	}
	return base64.StdEncoding.EncodeToString(b)
}

// step feeds one client message. reason is non-empty on failure.
func (x *scramExchange) step(token []byte) (out []byte, user string, done bool, reason string) {
	if x.conv == nil {
		return nil, "", false, x.decoyReason
	}
	if !utf8.Valid(token) {
		return nil, "", false, "client message is not UTF-8"
	}
	if x.first {
		x.first = false
		// gs2 flag, authzid, user, nonce: names escape ',' as =2C, so a
		// fifth field is an extension such as Kafka's tokenauth
		// (delegation tokens), which is not served here. xdg-go/scram
		// would pass it on silently.
		if fields := strings.Count(string(token), ",") + 1; fields > 4 {
			return nil, "", false, fmt.Sprintf("client-first message has %d fields; SCRAM extensions are not supported", fields)
		}
		s1, err := x.conv.Step(string(token))
		switch {
		case err != nil:
			return nil, "", false, "client-first message: " + err.Error()
		case x.nonceShort > 0:
			return nil, "", false, fmt.Sprintf("nonce source returned %d bytes, want %d", x.nonceShort-1, serverNonceBytes)
		case x.conv.AuthzID() != "" && x.conv.AuthzID() != x.conv.Username():
			// Kafka's rule; checked whether or not the user exists.
			return nil, "", false, "authorization id differs from the user name"
		}
		return []byte(s1), "", false, ""
	}
	s2, err := x.conv.Step(string(token))
	switch {
	case x.decoyReason != "":
		return nil, "", false, x.decoyReason
	case err != nil:
		return nil, "", false, "client-final message: " + err.Error()
	case !x.conv.Valid():
		return nil, "", false, "client-final message: not valid"
	}
	return []byte(s2), x.conv.Username(), true, ""
}
