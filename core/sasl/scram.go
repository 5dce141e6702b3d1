package sasl

import (
	"crypto/hmac"
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
	cred        ScramCredential

	// Kept from the first step for librdkafkaFinal.
	gs2Header   string // the client-first message's "n,," or "n,a=...,"
	clientFirst string // the client-first message without its gs2 header
	serverFirst string
	fullNonce   string // the whole nonce: the client's, then the server's
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
	x.cred = c
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
		x.keepFirst(string(token), s1)
		return []byte(s1), "", false, ""
	}
	if out, ok, reason := x.librdkafkaFinal(string(token)); ok {
		if reason != "" {
			return nil, "", false, reason
		}
		return []byte(out), x.conv.Username(), true, ""
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

// keepFirst records what librdkafkaFinal needs of the first exchange
// (xdg-go/scram keeps it unexported).
func (x *scramExchange) keepFirst(clientFirst, serverFirst string) {
	// The gs2 header is the first two fields; the names cannot hold a
	// bare ',' (=2C), so the third ',' ends it.
	i := strings.Index(clientFirst, ",")
	if i < 0 {
		return
	}
	j := strings.Index(clientFirst[i+1:], ",")
	if j < 0 {
		return
	}
	x.gs2Header, x.clientFirst = clientFirst[:i+j+2], clientFirst[i+j+2:]
	x.serverFirst = serverFirst
	if r, ok := strings.CutPrefix(serverFirst, "r="); ok {
		x.fullNonce, _, _ = strings.Cut(r, ",")
	}
}

// librdkafkaFinal verifies a client-final message whose nonce is the
// client's nonce followed by the whole nonce: what librdkafka sent from
// v0.0.99 to v2.6.0 (Debian's 2.0.2 among them; fixed by librdkafka
// #4895). Kafka accepts it since 3.8.1 (its ScramSaslServer checks that
// the nonce ends with the server-first nonce, KAFKA-17389), so Strata
// does too; xdg-go/scram wants the nonces equal. handled is false for
// any other message, which xdg-go/scram verifies. The proof is checked
// over the message as sent, as RFC 5802 computes it. reason is non-empty
// on failure.
func (x *scramExchange) librdkafkaFinal(msg string) (out string, handled bool, reason string) {
	fields := strings.Split(msg, ",")
	if x.fullNonce == "" || len(fields) != 3 || !strings.HasPrefix(fields[0], "c=") ||
		!strings.HasPrefix(fields[2], "p=") {
		return "", false, ""
	}
	r, ok := strings.CutPrefix(fields[1], "r=")
	if !ok || r == x.fullNonce || !strings.HasSuffix(r, x.fullNonce) {
		return "", false, ""
	}
	switch {
	case x.decoyReason != "":
		return "", true, x.decoyReason
	case fields[0] != "c="+base64.StdEncoding.EncodeToString([]byte(x.gs2Header)):
		return "", true, "client-final message: channel binding does not match the client-first message"
	}
	h, _ := x.mech.hashOf()
	proof, err := base64.StdEncoding.DecodeString(fields[2][2:])
	if err != nil || len(proof) != x.mech.hashSize() || len(x.cred.StoredKey) != x.mech.hashSize() {
		return "", true, "client-final message: malformed proof"
	}
	authMessage := x.clientFirst + "," + x.serverFirst + "," + fields[0] + "," + fields[1]
	signature := hmacSum(h, x.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ signature[i]
	}
	sum := h()
	sum.Write(clientKey)
	if !hmac.Equal(sum.Sum(nil), x.cred.StoredKey) {
		return "", true, "client-final message: wrong proof (librdkafka's repeated nonce)"
	}
	return "v=" + base64.StdEncoding.EncodeToString(hmacSum(h, x.cred.ServerKey, authMessage)), true, ""
}
